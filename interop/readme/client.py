# The Python client of docs/clients.md (mcp 1.30): `sleep` as a task, and `confirm`,
# whose input the server asks for with elicitation/create.
import os

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def answer(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    # The answer must fit the requestedSchema `confirm` sends: {answer: string}.
    return types.ElicitResult(action="accept", content={"answer": "yes"})


async def main() -> None:
    server = StdioServerParameters(command=os.environ.get("STDIO_SERVER", "target/debug/stdio_server"))
    async with stdio_client(server) as (read, write):
        # Passing an elicitation callback declares `elicitation`: `confirm` needs it.
        async with ClientSession(read, write, elicitation_callback=answer) as session:
            await session.initialize()
            for name, args in [("sleep", {"ms": 500}), ("confirm", {"question": "Proceed?"})]:
                created = await session.experimental.call_tool_as_task(name, args)
                task_id = created.task.taskId
                result = await session.experimental.get_task_result(task_id, types.CallToolResult)
                print(f"{name}: task {task_id}")
                print(f"{name}: {result.content[0].text}")


anyio.run(main)
