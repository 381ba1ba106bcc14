"""What the Python interop clients share: failures with a message, error descriptions,
expected JSON-RPC errors, reading tool results and the related-task _meta, the
scenario runner (one PASS/FAIL line per scenario, "N passed, N failed" at the end) and
the checks more than one client makes."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys
import time
import traceback
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import anyio
import httpx

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

if sys.version_info < (3, 11):  # pragma: no cover - anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup
else:
    BaseExceptionGroup = BaseExceptionGroup  # noqa: PLW0127 - re-exported for the clients

# session.experimental is marked deprecated in mcp 1.30 (tasks leave the core spec after
# 2025-11-25); it is still the SDK's API for this revision, so every client uses it.
warnings.filterwarnings("ignore", category=DeprecationWarning)

RELATED_TASK = "io.modelcontextprotocol/related-task"
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
TERMINAL = {"completed", "failed", "cancelled"}
SCENARIO_TIMEOUT_S = 30


class CheckFailure(Exception):
    pass


def check(cond: Any, message: str) -> None:
    if not cond:
        raise CheckFailure(message)


def eq(actual: Any, expected: Any, what: str) -> None:
    check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def describe(err: BaseException) -> str:
    if isinstance(err, McpError):
        text = f"McpError code={err.error.code} message={err.error.message!r}"
    else:
        text = f"{type(err).__name__}: {err}"
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:400] + "..."


def required(name: str) -> str:
    """The environment variable `name`; exits with status 2 if it is unset or empty."""
    value = os.environ.get(name)
    if not value:
        print(f"{pathlib.Path(sys.argv[0]).name}: set {name}", file=sys.stderr)
        sys.exit(2)
    return value


async def expect_error(awaitable: Awaitable[Any], code: int, what: str) -> McpError:
    try:
        result = await awaitable
    except McpError as err:
        eq(err.error.code, code, f"{what}: error code")
        return err
    except Exception as err:  # noqa: BLE001
        raise CheckFailure(f"{what}: expected McpError {code}, got {describe(err)}") from err
    raise CheckFailure(f"{what}: expected JSON-RPC error {code}, got result {result!r}")


async def error_of(awaitable: Awaitable[Any], what: str) -> types.ErrorData:
    try:
        result = await awaitable
    except McpError as err:
        return err.error
    except Exception as err:  # noqa: BLE001
        raise CheckFailure(f"{what}: expected a JSON-RPC error, got {describe(err)}") from err
    raise CheckFailure(f"{what}: expected a JSON-RPC error, got result {result!r}")


def same_as_unknown(foreign: types.ErrorData, owned_id: str, unknown: types.ErrorData, unknown_id: str, what: str) -> None:
    """The error for another principal's task, with its id replaced, equals an unknown id's."""

    def norm(e: types.ErrorData, task_id: str) -> str:
        return json.dumps({"code": e.code, "message": e.message.replace(task_id, "<id>"), "data": e.data})

    a, b = norm(foreign, owned_id), norm(unknown, unknown_id)
    check(a == b, f"{what}: the error for another principal's task differs from an unknown id's:\n    {a}\n    {b}")
    eq(foreign.code, INVALID_PARAMS, f"{what}: error code")


async def foreign_like_unknown(s: ClientSession, targets: Iterable[str | None], where: str = "") -> None:
    """Through session `s` (bob's), tasks/get, tasks/result and tasks/cancel on each of
    alice's `targets` fail at once, with the error an unknown id gets."""
    unknown = str(uuid.uuid4())
    cases: list[tuple[str, Callable[[str], Awaitable[Any]]]] = [
        ("tasks/get", s.experimental.get_task),
        ("tasks/result", lambda i: s.experimental.get_task_result(i, types.CallToolResult)),
        ("tasks/cancel", s.experimental.cancel_task),
    ]
    for what, call in cases:
        for target in targets:
            assert target is not None
            t0 = time.monotonic()
            with anyio.fail_after(5):
                foreign = await error_of(call(target), f"bob {what} on alice's task{where}")
            took = time.monotonic() - t0
            missing = await error_of(call(unknown), f"bob {what} on an unknown id{where}")
            same_as_unknown(foreign, target, missing, unknown, f"bob {what}{where}")
            check(took < 2, f"bob's {what} on alice's task took {took:.1f} s")


async def list_all(s: ClientSession) -> tuple[list[str], list[types.ListTasksResult]]:
    """Every task id tasks/list gives through nextCursor, and the pages."""
    ids: list[str] = []
    pages: list[types.ListTasksResult] = []
    cursor: str | None = None
    while True:
        check(len(pages) < 500, "more than 500 pages; cursor loop?")
        page = await s.experimental.list_tasks(cursor)
        pages.append(page)
        ids += [t.taskId for t in page.tasks]
        if page.nextCursor is None:
            return ids, pages
        cursor = page.nextCursor


async def settle(settled: dict[str, Any], awaitable: Awaitable[Any]) -> None:
    """Awaits a pending request, keeping its result or McpError and when it came in settled."""
    try:
        settled["result"] = await awaitable
    except McpError as err:
        settled["error"] = err
    settled["at"] = time.monotonic()


async def until_settled(settled: dict[str, Any], tg: anyio.abc.TaskGroup, message: str) -> None:
    """Waits (at most 10 s) until settle() has stored an outcome; otherwise cancels the
    task group and fails with `message`."""
    with anyio.move_on_after(10) as scope:
        while not settled:
            await anyio.sleep(0.05)
    if scope.cancelled_caught:
        tg.cancel_scope.cancel()
        raise CheckFailure(message)


def http_client(token: str | None) -> httpx.AsyncClient:
    """An httpx client carrying the bearer token, with timeouts for a blocking tasks/result."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120))


@contextlib.asynccontextmanager
async def http_session(
    url: str, token: str | None, name: str, what: str, message_handler: Any = None
) -> AsyncIterator[tuple[ClientSession, Callable[[], str | None]]]:
    """An initialized MCP session over Streamable HTTP (2025-11-25 checked as `what`),
    with the function giving its Mcp-Session-Id."""
    async with http_client(token) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, get_session_id):
            async with ClientSession(
                read,
                write,
                message_handler=message_handler,
                client_info=types.Implementation(name=name, version="0.1.0"),
            ) as session:
                init = await session.initialize()
                eq(init.protocolVersion, "2025-11-25", what)
                yield session, get_session_id


def text_of(result: types.CallToolResult) -> str | None:
    for block in result.content:
        if isinstance(block, types.TextContent):
            return block.text
    return None


def related_task_id(meta: Any) -> str | None:
    """taskId under _meta["io.modelcontextprotocol/related-task"] (dict or pydantic Meta)."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    value = meta.get(RELATED_TASK)
    return value.get("taskId") if isinstance(value, dict) else None


Scenario = Callable[[], Awaitable[str | None]]


class Scenarios:
    """Counts the scenarios a client runs; each prints one PASS or FAIL line. Subclasses
    define `async def run(self, *args)`, which run_main() drives."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def fail(self, name: str, reason: str) -> None:
        self.failed += 1
        print(f"FAIL {name}: {reason}", flush=True)

    async def scenario(self, name: str, fn: Scenario) -> bool:
        try:
            with anyio.fail_after(SCENARIO_TIMEOUT_S):
                detail = await fn()
        except CheckFailure as err:
            self.fail(name, str(err))
            return False
        except TimeoutError:
            self.fail(name, f"timed out after {SCENARIO_TIMEOUT_S} s")
            return False
        except Exception as err:  # noqa: BLE001
            self.fail(name, f"unexpected {describe(err)}")
            traceback.print_exc(file=sys.stderr)
            return False
        self.passed += 1
        print(f"PASS {name}" + (f" ({detail})" if detail else ""), flush=True)
        return True

    async def scenarios(self, steps: Iterable[tuple[str, Scenario]]) -> None:
        for name, fn in steps:
            await self.scenario(name, fn)

    async def connected(
        self, setup: str, peers: dict[str, contextlib.AbstractAsyncContextManager[Any]], steps: Iterable[tuple[str, Scenario]]
    ) -> None:
        """Runs the steps with the peers open, each kept as the attribute of self its key
        names; if one cannot be opened, "FAIL {setup}" instead of the steps."""
        async with contextlib.AsyncExitStack() as stack:
            try:
                for attr, peer in peers.items():
                    setattr(self, attr, await stack.enter_async_context(peer))
            except BaseException as err:  # noqa: BLE001
                self.fail(setup, describe(err))
                return
            await self.scenarios(steps)

    def ignored_error(self, err: BaseException) -> str | None:
        """A note to print instead of failing when run() raised err; None fails the session."""
        return None

    async def run(self, *args: Any) -> None:
        raise NotImplementedError


def run_main(suite: Scenarios, *args: Any) -> int:
    """Runs suite.run(*args), counts an error it raises as a failed "session", prints the
    closing "N passed, N failed" line and returns the exit status."""
    try:
        anyio.run(suite.run, *args)
    except BaseException as err:  # noqa: BLE001 - connection-level failure
        note = suite.ignored_error(err)
        if note is not None:
            print(note, flush=True)
        else:
            suite.fail("session", describe(err))
            traceback.print_exc(file=sys.stderr)
    print(f"{suite.passed} passed, {suite.failed} failed", flush=True)
    return 0 if suite.failed == 0 else 1
