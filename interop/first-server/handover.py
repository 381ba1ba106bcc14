"""Redelivery of the first task server's `deploy`, with the official Python SDK (mcp 1.30).

Two instances of first_server share one Redis (MCP_URL_A, MCP_URL_B; MCP_TOKEN). The
client starts `deploy` through A and approves it; A is stopped with SIGTERM
(FIRST_SERVER_A_PID) while the task runs, hands it over, and B claims it and resumes at the
last checkpoint: `tasks/result` through B reads "checkout deployed". Prints one PASS/FAIL
line per check, then "N passed, N failed"; exits 1 if any failed.
"""

import os
import signal
import sys
import warnings

import anyio
import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

warnings.filterwarnings("ignore", category=DeprecationWarning)

URL_A, URL_B = os.environ["MCP_URL_A"], os.environ["MCP_URL_B"]
AUTH = {"Authorization": f"Bearer {os.environ['MCP_TOKEN']}"}
A_PID = int(os.environ["FIRST_SERVER_A_PID"])
results = {"passed": 0, "failed": 0}


def verdict(name: str, ok: bool, why: str = "") -> None:
    results["passed" if ok else "failed"] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}{'' if ok else ': ' + why}", flush=True)


approved = anyio.Event()


async def approve(context, params: types.ElicitRequestParams) -> types.ElicitResult:
    approved.set()
    return types.ElicitResult(action="accept", content={"approve": True})


async def main() -> None:
    # Through A: create the task, approve it, wait until it runs its steps.
    async with httpx.AsyncClient(headers=AUTH, timeout=60) as http:
        async with streamable_http_client(URL_A, http_client=http) as (read, write, _):
            async with ClientSession(read, write, elicitation_callback=approve) as session:
                await session.initialize()
                created = await session.experimental.call_tool_as_task("deploy", {"service": "checkout"})
                task_id = created.task.taskId
                with anyio.fail_after(30):
                    await approved.wait()
                await anyio.sleep(0.5)  # into its steps (2 s in all): a checkpoint is saved
                task = await session.experimental.get_task(task_id)
                verdict("deploy through A asked for approval and runs", task.status == "working",
                        f"status {task.status}")
    # A stops while the task runs: it hands the task over (MCP_TASKS_SHUTDOWN_MS is short).
    os.kill(A_PID, signal.SIGTERM)
    for _ in range(200):
        try:
            os.kill(A_PID, 0)
        except ProcessLookupError:
            break
        await anyio.sleep(0.05)
    # Through B: the task is claimed there, resumes at its checkpoint, and finishes.
    async with httpx.AsyncClient(headers=AUTH, timeout=60) as http:
        async with streamable_http_client(URL_B, http_client=http) as (read, write, _):
            async with ClientSession(read, write, elicitation_callback=approve) as session:
                await session.initialize()
                with anyio.fail_after(30):
                    result = await session.experimental.get_task_result(task_id, types.CallToolResult)
                text = result.content[0].text if result.content else None
                verdict("after A's shutdown, tasks/result through B reads the result",
                        text == "checkout deployed", f"got {text!r}")
                task = await session.experimental.get_task(task_id)
                verdict("the task is completed", task.status == "completed", f"status {task.status}")


try:
    anyio.run(main)
except Exception as err:  # noqa: BLE001
    verdict("handover client", False, repr(err))
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
