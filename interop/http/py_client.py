"""HTTP interop client for the mcp-tasks http_server example, written against the
official Python SDK (mcp==1.30.0, installed in interop/.venv).

Usage: python py_client.py

Environment: MCP_TASKS_URL (the server's /mcp endpoint), MCP_TASKS_ALICE_TOKEN and
MCP_TASKS_BOB_TOKEN (two principals' bearer tokens), MCP_TASKS_PAGE_SIZE (the server's
tasks/list page size). Each scenario prints one PASS/FAIL line; the last line is
"N passed, N failed" and the exit code is 1 if any failed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pathlib
import sys
import time
import traceback
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

# The checks shared with the other interop clients live in interop/harness.py.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from harness import (  # noqa: E402
    RELATED_TASK,
    CheckFailure,
    check,
    describe,
    eq,
    expect_error,
    related_task_id,
    text_of,
)

if sys.version_info < (3, 11):  # pragma: no cover - anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup

# session.experimental is marked deprecated in mcp 1.30 (tasks leave the core spec after
# 2025-11-25); it is still the SDK's API for this revision.
warnings.filterwarnings("ignore", category=DeprecationWarning)

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
TERMINAL = {"completed", "failed", "cancelled"}
SCENARIO_TIMEOUT_S = 30


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        print(f"py_client.py: set {name}", file=sys.stderr)
        sys.exit(2)
    return value


URL = required("MCP_TASKS_URL")
ALICE = required("MCP_TASKS_ALICE_TOKEN")
BOB = required("MCP_TASKS_BOB_TOKEN")
PAGE_SIZE = int(os.environ.get("MCP_TASKS_PAGE_SIZE", "50"))


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


def http_client(token: str | None) -> httpx.AsyncClient:
    """An httpx client carrying the bearer token, with timeouts for a blocking tasks/result."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120))


class Peer:
    """One MCP session over HTTP."""

    def __init__(self, session: ClientSession, get_session_id: Callable[[], str | None]) -> None:
        self.s = session
        self.session_id = get_session_id
        self.notifications: list[Any] = []


@contextlib.asynccontextmanager
async def connect(token: str | None, name: str) -> AsyncIterator[Peer]:
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(message.root)

    async with http_client(token) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write, get_session_id):
            async with ClientSession(
                read,
                write,
                message_handler=on_message,
                client_info=types.Implementation(name=name, version="0.1.0"),
            ) as session:
                init = await session.initialize()
                eq(init.protocolVersion, "2025-11-25", "negotiated protocolVersion")
                peer = Peer(session, get_session_id)
                peer.notifications = notifications
                yield peer


def find_http_status(err: BaseException) -> int | None:
    if isinstance(err, httpx.HTTPStatusError):
        return err.response.status_code
    if isinstance(err, BaseExceptionGroup):
        for inner in err.exceptions:
            status = find_http_status(inner)
            if status is not None:
                return status
    cause = err.__cause__ or err.__context__
    return find_http_status(cause) if cause is not None and cause is not err else None


class Suite:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.alice: Peer
        self.bob: Peer
        self.sleep_task_id: str | None = None
        self.fail_task_id: str | None = None
        self.alice_long_id: str | None = None

    async def scenario(self, name: str, fn: Callable[[], Awaitable[str | None]]) -> bool:
        try:
            with anyio.fail_after(SCENARIO_TIMEOUT_S):
                detail = await fn()
        except CheckFailure as err:
            self.failed += 1
            print(f"FAIL {name}: {err}", flush=True)
            return False
        except TimeoutError:
            self.failed += 1
            print(f"FAIL {name}: timed out after {SCENARIO_TIMEOUT_S} s", flush=True)
            return False
        except Exception as err:  # noqa: BLE001
            self.failed += 1
            print(f"FAIL {name}: unexpected {describe(err)}", flush=True)
            traceback.print_exc(file=sys.stderr)
            return False
        self.passed += 1
        print(f"PASS {name}" + (f" ({detail})" if detail else ""), flush=True)
        return True

    # -- helpers -----------------------------------------------------------

    @staticmethod
    async def list_all(peer: Peer) -> tuple[list[str], list[types.ListTasksResult]]:
        ids: list[str] = []
        pages: list[types.ListTasksResult] = []
        cursor: str | None = None
        while True:
            check(len(pages) < 500, "more than 500 pages; cursor loop?")
            page = await peer.s.experimental.list_tasks(cursor)
            pages.append(page)
            ids += [t.taskId for t in page.tasks]
            if page.nextCursor is None:
                return ids, pages
            cursor = page.nextCursor

    # -- scenarios ---------------------------------------------------------

    async def t1_refused(self) -> str:
        async with http_client(None) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            }
            headers = {"Accept": "application/json, text/event-stream"}
            r = await http.post(URL, json=init, headers=headers)
            eq(r.status_code, 401, "initialize without a token")
            check(r.headers.get("www-authenticate", "").lower().startswith("bearer"), f"WWW-Authenticate {r.headers.get('www-authenticate')!r}")
            r = await http.post(URL, json=init, headers={**headers, "Authorization": "Bearer nobody-has-this-token"})
            eq(r.status_code, 401, "initialize with an unknown token")
            r = await http.post(URL, json=init, headers={**headers, "Authorization": f"Bearer {ALICE}", "Origin": "http://evil.example"})
            eq(r.status_code, 403, "initialize from a foreign Origin")
            r = await http.get(URL, headers={"Authorization": f"Bearer {ALICE}", "Accept": "text/event-stream"})
            eq(r.status_code, 405, "GET")
        # The SDK's transport without a token: the session cannot start.
        refused: BaseException | None = None
        try:
            with anyio.fail_after(10):
                async with connect(None, "mcp-tasks-interop-py-anonymous"):
                    pass
        except BaseException as err:  # noqa: BLE001 - the SDK raises an exception group
            refused = err
        check(refused is not None, "an SDK session without a token was opened")
        eq(find_http_status(refused), 401, f"HTTP status in the SDK's error ({describe(refused)})")
        return "SDK session refused with HTTP 401"

    async def s0_sessions(self) -> str:
        a, b = self.alice, self.bob
        check(a.session_id() and b.session_id() and a.session_id() != b.session_id(), "sessions not issued")
        caps = (await a.s.list_tools()).tools
        support = {t.name: (t.execution.taskSupport if t.execution and t.execution.taskSupport else "forbidden") for t in caps}
        eq(support.get("confirm"), "required", "confirm taskSupport")
        eq(support.get("sleep"), "optional", "sleep taskSupport")
        await a.s.send_ping()
        await b.s.send_ping()
        return f"alice session {a.session_id()[:8]}…, bob session {b.session_id()[:8]}…"

    async def sa_sleep(self) -> str:
        s = self.alice.s
        created = await s.experimental.call_tool_as_task("sleep", {"ms": 300})
        task_id = created.task.taskId
        self.sleep_task_id = task_id
        eq(created.task.status, "working", "CreateTaskResult task.status")
        statuses = [t.status async for t in s.experimental.poll_task(task_id)]
        eq(statuses[-1], "completed", "terminal status")
        result = await s.experimental.get_task_result(task_id, types.CallToolResult)
        eq(text_of(result), "slept 300 ms", "tasks/result text")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        return f"polled {','.join(statuses)}"

    async def sa2_concurrent(self) -> str:
        s = self.alice.s
        created = await s.experimental.call_tool_as_task("sleep", {"ms": 1500})
        task_id = created.task.taskId
        started = time.monotonic()
        settled: dict[str, Any] = {}

        async def wait_result() -> None:
            settled["result"] = await s.experimental.get_task_result(task_id, types.CallToolResult)
            settled["at"] = time.monotonic()

        worst = 0.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_result)
            await anyio.sleep(0.1)
            for _ in range(5):
                t0 = time.monotonic()
                await s.send_ping()
                got = await s.experimental.get_task(task_id)
                await self.bob.s.experimental.list_tasks()
                worst = max(worst, time.monotonic() - t0)
                eq(got.status, "working", "status while tasks/result is pending")
            check("result" not in settled, "tasks/result answered before the task could finish")
        check(worst < 0.5, f"requests took up to {worst * 1000:.0f} ms while a tasks/result was pending")
        eq(text_of(settled["result"]), "slept 1500 ms", "tasks/result text")
        elapsed = settled["at"] - started
        check(elapsed >= 1.3, f"tasks/result answered after {elapsed * 1000:.0f} ms")
        return f"worst {worst * 1000:.0f} ms; tasks/result after {elapsed * 1000:.0f} ms"

    async def sb_fail(self) -> str:
        s = self.alice.s
        created = await s.experimental.call_tool_as_task("fail", {})
        task_id = created.task.taskId
        self.fail_task_id = task_id
        statuses = [t.status async for t in s.experimental.poll_task(task_id)]
        eq(statuses[-1], "failed", "terminal status")
        result = await s.experimental.get_task_result(task_id, types.CallToolResult)
        eq(result.isError, True, "tasks/result isError")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        return None

    async def sc_list(self) -> str:
        created = [(await self.alice.s.experimental.call_tool_as_task("sleep", {"ms": 50 + i})).task.taskId for i in range(5)]
        ids, pages = await self.list_all(self.alice)
        for page in pages:
            check(len(page.tasks) <= PAGE_SIZE, f"a page has {len(page.tasks)} tasks")
        for task_id in [*created, self.sleep_task_id, self.fail_task_id]:
            eq(ids.count(task_id), 1, f"occurrences of {task_id}")
        eq(len(ids), len(set(ids)), "tasks listed twice")
        check(len(pages) >= math.ceil(len(ids) / PAGE_SIZE), f"{len(ids)} tasks in {len(pages)} pages")
        await expect_error(self.alice.s.experimental.list_tasks("not-a-cursor-from-this-server"), INVALID_PARAMS, "bad cursor")
        return f"{len(ids)} tasks in {len(pages)} pages"

    async def sd_cancel(self) -> str:
        s = self.alice.s
        created = await s.experimental.call_tool_as_task("sleep", {"ms": 30000})
        task_id = created.task.taskId
        settled: dict[str, Any] = {}

        async def wait_result() -> None:
            try:
                settled["result"] = await s.experimental.get_task_result(task_id, types.CallToolResult)
            except McpError as err:
                settled["error"] = err

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_result)
            await anyio.sleep(0.2)
            cancelled = await s.experimental.cancel_task(task_id)
            eq(cancelled.status, "cancelled", "tasks/cancel result status")
            with anyio.move_on_after(10) as scope:
                while not settled:
                    await anyio.sleep(0.05)
            if scope.cancelled_caught:
                tg.cancel_scope.cancel()
                raise CheckFailure("tasks/result still pending 10 s after the cancel")
        await expect_error(s.experimental.cancel_task(task_id), INVALID_PARAMS, "second tasks/cancel")
        eq((await s.experimental.get_task(task_id)).status, "cancelled", "tasks/get after cancel")
        check(self.sleep_task_id, "no completed task from scenario a")
        await expect_error(s.experimental.cancel_task(self.sleep_task_id), INVALID_PARAMS, "cancel of a completed task")
        return f"tasks/result answered {describe(settled['error'])}" if "error" in settled else "tasks/result answered a result"

    async def se_unknown(self) -> None:
        s = self.alice.s
        bogus = str(uuid.uuid4())
        await expect_error(s.experimental.get_task(bogus), INVALID_PARAMS, "tasks/get")
        await expect_error(s.experimental.get_task_result(bogus, types.CallToolResult), INVALID_PARAMS, "tasks/result")
        await expect_error(s.experimental.cancel_task(bogus), INVALID_PARAMS, "tasks/cancel")

    async def sf_task_support(self) -> None:
        s = self.alice.s
        await expect_error(s.call_tool("confirm", {"question": "no task?"}), METHOD_NOT_FOUND, "confirm without task")
        await expect_error(s.experimental.call_tool_as_task("echo", {"text": "x"}), METHOD_NOT_FOUND, "echo with task")
        eq(text_of(await s.call_tool("echo", {"text": "hello over http"})), "hello over http", "echo text")

    async def sg_confirm(self) -> str:
        s = self.alice.s
        created = await s.experimental.call_tool_as_task("confirm", {"question": "Proceed?"})
        task_id = created.task.taskId
        err = await expect_error(
            s.experimental.get_task_result(task_id, types.CallToolResult), INTERNAL_ERROR, "tasks/result of confirm"
        )
        check("stdio" in err.error.message and "elicitation" in err.error.message, f"unclear error {err.error.message!r}")
        task = await s.experimental.get_task(task_id)
        eq(task.status, "failed", "confirm task status")
        check("stdio" in (task.statusMessage or ""), f"statusMessage {task.statusMessage!r}")
        return repr(err.error.message)

    async def si1_isolation(self) -> str:
        a, b = self.alice.s, self.bob.s
        self.alice_long_id = (await a.experimental.call_tool_as_task("sleep", {"ms": 25000})).task.taskId
        bob_own = (await b.experimental.call_tool_as_task("sleep", {"ms": 50})).task.taskId
        unknown = str(uuid.uuid4())
        cases: list[tuple[str, Callable[[str], Awaitable[Any]]]] = [
            ("tasks/get", b.experimental.get_task),
            ("tasks/result", lambda i: b.experimental.get_task_result(i, types.CallToolResult)),
            ("tasks/cancel", b.experimental.cancel_task),
        ]
        for what, call in cases:
            for target in (self.alice_long_id, self.fail_task_id):
                assert target is not None
                t0 = time.monotonic()
                with anyio.fail_after(5):
                    foreign = await error_of(call(target), f"bob {what} on alice's task")
                took = time.monotonic() - t0
                missing = await error_of(call(unknown), f"bob {what} on an unknown id")
                same_as_unknown(foreign, target, missing, unknown, f"bob {what}")
                check(took < 2, f"bob's {what} on alice's task took {took:.1f} s")
        eq((await a.experimental.get_task(self.alice_long_id)).status, "working", "alice's task after bob's cancel")
        bob_ids, _ = await self.list_all(self.bob)
        alice_ids, alice_pages = await self.list_all(self.alice)
        for task_id in (self.alice_long_id, self.fail_task_id, self.sleep_task_id):
            check(task_id not in bob_ids, f"bob's tasks/list shows alice's task {task_id}")
        check(bob_own in bob_ids, "bob's tasks/list lacks his own task")
        check(bob_own not in alice_ids, "alice's tasks/list shows bob's task")
        alice_cursor = alice_pages[0].nextCursor
        check(alice_cursor, "alice has a single page; cannot test cursor binding")
        await expect_error(b.experimental.list_tasks(alice_cursor), INVALID_PARAMS, "bob's tasks/list with alice's cursor")
        return f"bob lists {len(bob_ids)} task(s), alice {len(alice_ids)}"

    async def si2_reconnect(self) -> str:
        check(self.alice_long_id and self.fail_task_id, "no tasks from earlier scenarios")
        async with connect(ALICE, "mcp-tasks-interop-py-alice-again") as again:
            check(again.session_id() != self.alice.session_id(), "the new connection reused the old session id")
            eq((await again.s.experimental.get_task(self.alice_long_id)).status, "working", "status from the new session")
            eq((await again.s.experimental.get_task(self.fail_task_id)).status, "failed", "finished task from the new session")
            ids, _ = await self.list_all(again)
            check(self.alice_long_id in ids and self.fail_task_id in ids, "the new session does not list the old tasks")
            eq((await again.s.experimental.cancel_task(self.alice_long_id)).status, "cancelled", "cancel from the new session")
        eq((await self.alice.s.experimental.get_task(self.alice_long_id)).status, "cancelled", "old session sees the cancel")
        return f"{len(ids)} tasks seen from a second session"

    async def sh_no_notifications(self) -> None:
        got = [n for n in self.alice.notifications + self.bob.notifications if isinstance(n, types.TaskStatusNotification)]
        eq(len(got), 0, "notifications/tasks/status received in JSON-only mode")

    async def run(self) -> None:
        await self.scenario("t1. requests without a valid token are refused (401 + WWW-Authenticate), foreign Origin 403, GET 405", self.t1_refused)
        async with contextlib.AsyncExitStack() as stack:
            try:
                self.alice = await stack.enter_async_context(connect(ALICE, "mcp-tasks-interop-py-alice"))
                self.bob = await stack.enter_async_context(connect(BOB, "mcp-tasks-interop-py-bob"))
            except BaseException as err:  # noqa: BLE001
                self.failed += 1
                print(f"FAIL 0. initialize over HTTP: {describe(err)}", flush=True)
                return
            steps: list[tuple[str, Callable[[], Awaitable[str | None]]]] = [
                ("0. initialize over HTTP (alice and bob): sessions issued, tools listed", self.s0_sessions),
                ("a. task-augmented sleep: polling to completed, tasks/result with related-task _meta", self.sa_sleep),
                ("a2. a blocking tasks/result does not stall other requests", self.sa2_concurrent),
                ("b. fail as a task: failed, tasks/result isError", self.sb_fail),
                (f"c. tasks/list through nextCursor (page size {PAGE_SIZE}); invalid cursor -32602", self.sc_list),
                ("d. cancel: pending tasks/result answered, second cancel -32602, cancel of completed -32602", self.sd_cancel),
                ("e. unknown id -> -32602 on tasks/get, tasks/result, tasks/cancel", self.se_unknown),
                ("f. taskSupport errors: confirm without task, echo with task -> -32601", self.sf_task_support),
                ("g. confirm over JSON-only HTTP: the task fails with a clear error", self.sg_confirm),
                ("i1. owner isolation: bob cannot get, wait on, cancel or list alice's tasks; errors equal an unknown id's", self.si1_isolation),
                ("i2. reconnect with the same token: a new session sees and cancels the tasks", self.si2_reconnect),
                ("h. JSON-only mode: no status notifications", self.sh_no_notifications),
            ]
            for name, fn in steps:
                await self.scenario(name, fn)


def main() -> int:
    suite = Suite()
    try:
        anyio.run(suite.run)
    except BaseException as err:  # noqa: BLE001 - connection-level failure
        suite.failed += 1
        print(f"FAIL session: {describe(err)}", flush=True)
        traceback.print_exc(file=sys.stderr)
    print(f"{suite.passed} passed, {suite.failed} failed", flush=True)
    return 0 if suite.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
