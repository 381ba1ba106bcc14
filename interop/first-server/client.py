# Calls the README's first task server (server/examples/first_server.rs) with the official
# Python SDK (mcp 1.30): `deploy` as a task, its approval answered, its result read.
import os

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def approve(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    print(f"asked: {params.message}")  # Deploy checkout?
    return types.ElicitResult(action="accept", content={"approve": True})


async def deploy(read, write) -> None:
    # An elicitation callback declares `elicitation`: the server may ask for approval.
    async with ClientSession(read, write, elicitation_callback=approve) as session:
        await session.initialize()
        created = await session.experimental.call_tool_as_task("deploy", {"service": "checkout"})
        task_id = created.task.taskId
        result = await session.experimental.get_task_result(task_id, types.CallToolResult)
        print(result.content[0].text)  # checkout deployed


async def main() -> None:
    if url := os.environ.get("MCP_URL"):  # http://127.0.0.1:8808/mcp, with MCP_TOKEN
        auth = {"Authorization": f"Bearer {os.environ['MCP_TOKEN']}"}
        async with httpx.AsyncClient(headers=auth, timeout=60) as http:
            async with streamable_http_client(url, http_client=http) as (read, write, _):
                await deploy(read, write)
    else:
        command = os.environ.get("FIRST_SERVER", "target/debug/examples/first_server")
        # The SDK passes the server only a few variables unless told: pass MCP_TASKS_STORE on.
        server = StdioServerParameters(command=command, env=dict(os.environ))
        async with stdio_client(server) as (read, write):
            await deploy(read, write)


anyio.run(main)
