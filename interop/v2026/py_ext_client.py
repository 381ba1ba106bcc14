#!/usr/bin/env python3
"""The Python extension client (fastmcp-tasks 4.1.4 on mcp 2.3.0) against the stdio example.

Usage: python py_ext_client.py SERVER_BINARY

A FastMCP `Client` in its DEFAULT mode ("auto": probe `server/discover`, fall back to
the 2025-11-25 `initialize` unless the answer is a conformant 2026-07-28 result) spawns
the server over stdio. fastmcp-tasks registers its `TasksClientExtension` on every
client, so each request's `_meta` declares `io.modelcontextprotocol/tasks`. The flows:

- discover: the client stayed on 2026-07-28 (no fallback), the server advertises the
  extension and identifies itself;
- tools/list passes the SDK's 2026-07-28 result validation;
- sleep through `call_tool_task` (a task handle, `tasks/get` until completed) and
  through the plain `call_tool` (the extension polls the task transparently);
- fail (a tool error) completes with `isError: true`;
- crash (a JSON-RPC error) fails with the error inlined; `result()` raises `ToolError`;
- confirm: the task's elicitation reaches the client's `elicitation_handler`, whose
  answer goes back with `tasks/update`;
- cancel: `ToolTask.cancel()` on a long sleep, then `cancelled`;
- echo answers at once (never a task).

Each check prints one PASS/FAIL line; the last line is "N passed, N failed" and the exit
status is 1 if any check failed. MCP_TASKS_TRACE, if set, is passed on to the server.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import fastmcp_tasks.client as tasks_client
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp_tasks import call_tool_task

EXTENSION_ID = "io.modelcontextprotocol/tasks"
PROTOCOL_VERSION = "2026-07-28"
FLOW_LIMIT = 30.0  # seconds one flow may take
CANCEL_SETTLE = 5.0  # seconds a cancelled task may take to settle

passed = 0
failed = 0


def record(name: str, ok: bool, detail: str) -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}: {detail}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", flush=True)


class Check(Exception):
    """A check that did not hold; its message says why."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Check(message)


def text_of(result: Any) -> str | None:
    content = getattr(result, "content", None) or []
    return getattr(content[0], "text", None) if content else None


# What the elicitation handler was asked, for the confirm flow to check.
asked: list[tuple[str, Any]] = []

# The task requests the extension sent, by method. `call_tool` hides whether the server
# ran the call as a task; these counts show it. The extension's poll loop looks its
# senders up in its module at each call, so wrapping them there sees every request.
sent: dict[str, int] = {"tasks/get": 0, "tasks/update": 0, "tasks/cancel": 0}


def count(method: str, send: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        sent[method] += 1
        return await send(*args, **kwargs)

    return counted


tasks_client._send_get = count("tasks/get", tasks_client._send_get)
tasks_client._send_update = count("tasks/update", tasks_client._send_update)
tasks_client._send_cancel = count("tasks/cancel", tasks_client._send_cancel)


async def elicitation_handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
    """Answers every property of the requested schema ("yes" for strings)."""
    asked.append((message, params))
    schema = getattr(params, "requested_schema", None) or {}
    answer: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if kind == "string":
            answer[name] = "yes"
        elif kind == "boolean":
            answer[name] = True
        elif kind in ("integer", "number"):
            answer[name] = 1
        else:
            raise ValueError(f"cannot answer property {name} of type {kind!r}")
    return answer


def check_discover(client: Client) -> str:
    version = client.protocol_version
    expect(
        version == PROTOCOL_VERSION,
        f"negotiated {version!r}: the client fell back instead of adopting {PROTOCOL_VERSION}",
    )
    expect(client.initialize_result is None, "an initialize handshake took place")
    session = client.session
    expect(session.discover_result is not None, "no DiscoverResult was adopted")
    caps = client.server_capabilities
    extensions = (caps.extensions if caps is not None else None) or {}
    expect(
        EXTENSION_ID in extensions,
        f"the server capabilities name no {EXTENSION_ID}: {caps!r}",
    )
    info = client.server_info
    expect(info is not None and bool(info.name), "no serverInfo in the discover answer's _meta")
    return f"{version} with the tasks extension, server {info.name}"


async def tools_list(client: Client) -> str:
    tools = await client.list_tools()
    names = [tool.name for tool in tools]
    for wanted in ("sleep", "fail", "crash", "confirm", "echo"):
        expect(wanted in names, f"no `{wanted}` tool among {names}")
    return f"{len(names)} tools: {', '.join(names)}"


async def sleep_task(client: Client) -> str:
    task = await call_tool_task(client, "sleep", {"ms": 200})
    expect(
        task.create_result.status == "working",
        f"created in {task.create_result.status!r}, expected working",
    )
    result = await task.result()
    expect(text_of(result) == "slept 200 ms", f"unexpected result {result!r}")
    expect(not result.is_error, "isError on a successful sleep")
    final = await task.status()
    expect(final.status == "completed", f"tasks/get says {final.status!r} after the result")
    return f"task {task.task_id} completed: slept 200 ms"


async def sleep_transparent(client: Client) -> str:
    polls = sent["tasks/get"]
    result = await client.call_tool("sleep", {"ms": 100})
    expect(text_of(result) == "slept 100 ms", f"unexpected result {result!r}")
    polls = sent["tasks/get"] - polls
    expect(polls > 0, "no tasks/get was sent: the call did not run as a task")
    return f"call_tool polled the task ({polls} tasks/get) to its result: slept 100 ms"


async def fail(client: Client) -> str:
    task = await call_tool_task(client, "fail", {}, raise_on_error=False)
    result = await task.result()
    expect(result.is_error, f"no isError on the fail tool's result {result!r}")
    expect(
        text_of(result) == "the fail tool always fails", f"unexpected result {result!r}"
    )
    final = await task.status()
    expect(
        final.status == "completed",
        f"a tool error must complete the task, tasks/get says {final.status!r}",
    )
    expect(
        isinstance(final.result, dict) and final.result.get("isError") is True,
        f"the inlined result has no isError: {final.result!r}",
    )
    return "completed with isError: true"


async def crash(client: Client) -> str:
    task = await call_tool_task(client, "crash", {})
    try:
        result = await task.result()
    except ToolError as err:
        expect(
            "the crash tool always crashes" in str(err),
            f"ToolError without the server's message: {err}",
        )
    else:
        raise Check(f"result() returned {result!r} instead of raising ToolError")
    final = await task.status()
    expect(final.status == "failed", f"tasks/get says {final.status!r}, expected failed")
    error = final.error or {}
    expect(error.get("code") == -32603, f"unexpected inlined error {error!r}")
    return "failed with error -32603, ToolError raised"


async def confirm(client: Client) -> str:
    asked.clear()
    updates = sent["tasks/update"]
    result = await client.call_tool("confirm", {"question": "proceed?"})
    expect(sent["tasks/update"] - updates == 1, "the answer did not go back with one tasks/update")
    expect(len(asked) == 1, f"the elicitation handler was asked {len(asked)} times")
    message, params = asked[0]
    expect(message == "proceed?", f"the elicitation asked {message!r}")
    schema = getattr(params, "requested_schema", None) or {}
    expect("answer" in (schema.get("properties") or {}), f"no `answer` in {schema!r}")
    expect(
        text_of(result) == "the user answered: yes", f"unexpected result {result!r}"
    )
    return "elicitation answered through tasks/update, completed with the answer"


async def cancel(client: Client) -> str:
    task = await call_tool_task(client, "sleep", {"ms": 30000})
    start = time.monotonic()
    cancels = sent["tasks/cancel"]
    await task.cancel()
    expect(sent["tasks/cancel"] - cancels == 1, "ToolTask.cancel() sent no tasks/cancel")
    final = await task.wait(timeout=CANCEL_SETTLE)
    expect(final.status == "cancelled", f"ended {final.status!r}, expected cancelled")
    return f"acknowledged, cancelled after {int((time.monotonic() - start) * 1000)} ms"


async def echo(client: Client) -> str:
    result = await client.call_tool("echo", {"text": "hello"})
    expect(text_of(result) == "hello", f"unexpected result {result!r}")
    return "answered at once"


FLOWS: list[tuple[str, Callable[[Client], Awaitable[str]]]] = [
    ("tools/list", tools_list),
    ("sleep", sleep_task),
    ("sleep (call_tool)", sleep_transparent),
    ("fail", fail),
    ("crash", crash),
    ("confirm", confirm),
    ("cancel", cancel),
    ("echo", echo),
]


async def main(server: str) -> None:
    env = {"RUST_BACKTRACE": "1"}
    if os.environ.get("MCP_TASKS_TRACE"):
        env["MCP_TASKS_TRACE"] = os.environ["MCP_TASKS_TRACE"]
    transport = StdioTransport(command=server, args=[], env=env, keep_alive=False)
    # The default mode ("auto"), deliberately not pinned.
    client = Client(transport, elicitation_handler=elicitation_handler)
    try:
        async with asyncio.timeout(FLOW_LIMIT):
            await client.__aenter__()
    except Exception as err:  # noqa: BLE001 - any failure to connect is one FAIL line
        record("discover", False, f"could not connect: {type(err).__name__}: {err}")
        return
    try:
        try:
            record("discover", True, check_discover(client))
        except Check as err:
            record("discover", False, str(err))
        for name, flow in FLOWS:
            try:
                async with asyncio.timeout(FLOW_LIMIT):
                    record(name, True, await flow(client))
            except Check as err:
                record(name, False, str(err))
            except TimeoutError:
                record(name, False, f"no outcome within {FLOW_LIMIT:.0f} s")
            except Exception as err:  # noqa: BLE001 - report and go on with the next flow
                record(name, False, f"{type(err).__name__}: {err}")
    finally:
        await client.__aexit__(None, None, None)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: py_ext_client.py SERVER_BINARY", file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1]))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
