"""HTTP interop client for mcp_http (the Streamable HTTP server of http/), written against
the official Python SDK (mcp==1.30.0, installed in interop/.venv). Both principals'
sessions declare the elicitation capability (an elicitation callback): `confirm` tasks
ask them through `elicitation/create` (on the tasks/result SSE stream or the standalone
GET stream), and `notifications/tasks/status` reach them the same way.

Usage: python py_client.py

Environment: MCP_TASKS_URL (the server's /mcp endpoint), MCP_TASKS_ALICE_TOKEN and
MCP_TASKS_BOB_TOKEN (two principals' bearer tokens), MCP_TASKS_PAGE_SIZE (the server's
tasks/list page size). Each scenario prints one PASS/FAIL line; the last line is
"N passed, N failed" and the exit code is 1 if any failed.
"""

from __future__ import annotations

import contextlib
import math
import os
import pathlib
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.context import RequestContext

# The checks shared with the other interop clients live in interop/harness.py.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from harness import (  # noqa: E402
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RELATED_TASK,
    BaseExceptionGroup,
    CheckFailure,
    Scenarios,
    check,
    describe,
    eq,
    expect_error,
    foreign_like_unknown,
    http_client,
    list_all,
    related_task_id,
    required,
    run_main,
    settle,
    text_of,
    until_settled,
)

URL = required("MCP_TASKS_URL")
ALICE = required("MCP_TASKS_ALICE_TOKEN")
BOB = required("MCP_TASKS_BOB_TOKEN")
PAGE_SIZE = int(os.environ.get("MCP_TASKS_PAGE_SIZE", "50"))


class Peer:
    """One MCP session over HTTP, with the elicitation callback and the notifications it got.

    The callback answers decline for a question with "[decline]", cancel for "[cancel]",
    otherwise accept with {answer: "yes from <who>"}; for "[hold]" it first awaits `hold`
    (with the related task id), while the task waits for the answer. The SDK runs the
    callback inline in this session's receive loop, so neither it nor `hold` may await a
    response in this session (another session's requests are fine)."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.s: ClientSession
        self.session_id: Callable[[], str | None] = lambda: None
        self.notifications: list[Any] = []
        self.elicitations: list[dict[str, Any]] = []
        self.hold: Callable[[str | None], Awaitable[None]] | None = None

    def statuses(self) -> list[types.TaskStatusNotificationParams]:
        return [n.params for n in self.notifications if isinstance(n, types.TaskStatusNotification)]

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            self.notifications.append(message.root)

    async def on_elicit(
        self, context: RequestContext[ClientSession, Any], params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        task_id = related_task_id(params.meta)
        e: dict[str, Any] = {
            "params": params,
            "task_id": task_id,
            "ctx_task_id": related_task_id(context.meta),
        }
        self.elicitations.append(e)
        if "[hold]" in params.message and self.hold is not None:
            try:
                with anyio.fail_after(15):
                    await self.hold(task_id)
                e["held"] = True
            except Exception as err:  # noqa: BLE001 - reported by the scenario
                e["hold_error"] = err
        meta = {RELATED_TASK: {"taskId": task_id}} if task_id else None
        if "[decline]" in params.message:
            return types.ElicitResult(action="decline", _meta=meta)
        if "[cancel]" in params.message:
            return types.ElicitResult(action="cancel", _meta=meta)
        return types.ElicitResult(action="accept", content={"answer": f"yes from {self.who}"}, _meta=meta)

    async def notified(self, task_id: str | None, wanted: tuple[str, ...]) -> list[str]:
        """Waits (at most 5 s) until each status in `wanted` was notified for `task_id`;
        returns the statuses notified for it, in order."""
        check(task_id, "no task id")
        with anyio.move_on_after(5):
            while True:
                got = [n.status for n in self.statuses() if n.taskId == task_id]
                if all(w in got for w in wanted):
                    return got
                await anyio.sleep(0.05)
        got = [n.status for n in self.statuses() if n.taskId == task_id]
        raise CheckFailure(f"{self.who} was not notified {' and '.join(wanted)} for task {task_id} (got {got or 'none'})")


class NoStandaloneStream(httpx.AsyncBaseTransport):
    """An httpx transport that answers every GET itself with 405, as a server without the
    standalone SSE stream would: the session then gets the server's messages only on the
    SSE responses to its POSTs."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.refused = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.refused += 1
            return httpx.Response(405, request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def connect(
    token: str | None, name: str, who: str = "anonymous", transport: httpx.AsyncBaseTransport | None = None
) -> AsyncIterator[Peer]:
    """An initialized 2025-11-25 session over Streamable HTTP with `token`, declaring
    elicitation (the SDK does when given an elicitation callback)."""
    peer = Peer(who)
    http = http_client(token)
    if transport is not None:
        http = httpx.AsyncClient(headers=http.headers, timeout=http.timeout, transport=transport)
    async with http:
        async with streamable_http_client(URL, http_client=http) as (read, write, get_session_id):
            async with ClientSession(
                read,
                write,
                message_handler=peer.on_message,
                elicitation_callback=peer.on_elicit,
                client_info=types.Implementation(name=name, version="0.1.0"),
            ) as session:
                init = await session.initialize()
                eq(init.protocolVersion, "2025-11-25", "negotiated protocolVersion")
                peer.s = session
                peer.session_id = get_session_id
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


class Suite(Scenarios):
    def __init__(self) -> None:
        super().__init__()
        self.alice: Peer
        self.bob: Peer
        self.sleep_task_id: str | None = None
        self.fail_task_id: str | None = None
        self.alice_long_id: str | None = None

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
            eq(r.status_code, 400, "GET without Mcp-Session-Id")
            r = await http.get(URL, headers={"Accept": "text/event-stream", "Mcp-Session-Id": "x"})
            eq(r.status_code, 401, "GET without a token")
            r = await http.delete(URL, headers={"Authorization": f"Bearer {ALICE}"})
            eq(r.status_code, 400, "DELETE without Mcp-Session-Id")
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
        ids, pages = await list_all(self.alice.s)
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
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, settled, s.experimental.get_task_result(task_id, types.CallToolResult))
            await anyio.sleep(0.2)
            cancelled = await s.experimental.cancel_task(task_id)
            eq(cancelled.status, "cancelled", "tasks/cancel result status")
            await until_settled(settled, tg, "tasks/result still pending 10 s after the cancel")
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

    async def confirm_round_trip(self, peer: Peer, question: str, expected_text: str) -> str:
        """`confirm` as a task; tasks/result waits while the elicitation/create (on its SSE
        stream or the GET stream) is answered by the callback, then gives the outcome."""
        s = peer.s
        before = len(peer.elicitations)
        created = await s.experimental.call_tool_as_task("confirm", {"question": question})
        task_id = created.task.taskId
        eq(created.task.status, "working", "CreateTaskResult task.status")
        result = await s.experimental.get_task_result(task_id, types.CallToolResult)
        mine = peer.elicitations[before:]
        eq(len(mine), 1, "elicitation/create requests received")
        e = mine[0]
        params = e["params"]
        check(isinstance(params, types.ElicitRequestFormParams), f"elicitation is not form mode: {params!r}")
        eq(params.message, question, "elicitation message")
        answer = (params.requestedSchema.get("properties") or {}).get("answer") or {}
        eq(answer.get("type"), "string", "requestedSchema answer type")
        eq(e["task_id"], task_id, "elicitation _meta related-task taskId")
        eq(e["ctx_task_id"], task_id, "RequestContext.meta related-task taskId")
        eq(text_of(result), expected_text, "tasks/result text")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        eq((await s.experimental.get_task(task_id)).status, "completed", "tasks/get after the round trip")
        notified = await peer.notified(task_id, ("input_required", "completed"))
        return f"task {task_id}; notified {','.join(notified)}"

    async def sg4_no_get_stream(self) -> str:
        """A session whose GET is refused (client-side 405) gets the elicitation and the
        status notifications on the tasks/result SSE stream."""
        transport = NoStandaloneStream()
        async with connect(ALICE, "mcp-tasks-interop-py-alice-no-get", "alice", transport) as peer:
            detail = await self.confirm_round_trip(peer, "No GET stream: proceed?", "the user answered: yes from alice")
        check(transport.refused >= 1, "the SDK never tried to open the GET stream")
        return f"{detail}; {transport.refused} GET refused client-side"

    async def sg3_hold(self) -> str:
        """While alice's elicitation waits for her answer (her callback runs bob's checks
        before it answers), bob cannot reach her task."""
        a, b = self.alice, self.bob

        async def bob_checks(task_id: str | None) -> None:
            check(task_id, "the elicitation carries no related-task id")
            assert task_id is not None
            await foreign_like_unknown(b.s, (task_id,), " (alice's task waiting for input)")
            bob_ids, _ = await list_all(b.s)
            check(task_id not in bob_ids, "bob's tasks/list shows alice's waiting task")
            check(not any(x["task_id"] == task_id for x in b.elicitations), "bob received alice's elicitation")
            check(not any(n.taskId == task_id for n in b.statuses()), "bob was notified of alice's task")

        before = len(a.elicitations)
        a.hold = bob_checks
        try:
            task_id = (await a.s.experimental.call_tool_as_task("confirm", {"question": "Hold on [hold]"})).task.taskId
            result = await a.s.experimental.get_task_result(task_id, types.CallToolResult)
        finally:
            a.hold = None
        mine = a.elicitations[before:]
        eq(len(mine), 1, "elicitation/create requests received")
        e = mine[0]
        eq(e["task_id"], task_id, "elicitation _meta related-task taskId")
        if "hold_error" in e:
            err = e["hold_error"]
            raise err if isinstance(err, CheckFailure) else CheckFailure(f"bob's checks failed: {describe(err)}")
        check(e.get("held"), "bob's checks did not run while the elicitation was pending")
        eq(text_of(result), "the user answered: yes from alice", "tasks/result text")
        eq((await a.s.experimental.get_task(task_id)).status, "completed", "tasks/get after the answer")
        notified = await a.notified(task_id, ("input_required", "completed"))
        return f"task {task_id}; notified {','.join(notified)}"

    async def si1_isolation(self) -> str:
        a, b = self.alice.s, self.bob.s
        self.alice_long_id = (await a.experimental.call_tool_as_task("sleep", {"ms": 25000})).task.taskId
        bob_own = (await b.experimental.call_tool_as_task("sleep", {"ms": 50})).task.taskId
        await foreign_like_unknown(b, (self.alice_long_id, self.fail_task_id))
        eq((await a.experimental.get_task(self.alice_long_id)).status, "working", "alice's task after bob's cancel")
        bob_ids, _ = await list_all(self.bob.s)
        alice_ids, alice_pages = await list_all(self.alice.s)
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
        async with connect(ALICE, "mcp-tasks-interop-py-alice-again", "alice") as again:
            check(again.session_id() != self.alice.session_id(), "the new connection reused the old session id")
            eq((await again.s.experimental.get_task(self.alice_long_id)).status, "working", "status from the new session")
            eq((await again.s.experimental.get_task(self.fail_task_id)).status, "failed", "finished task from the new session")
            ids, _ = await list_all(again.s)
            check(self.alice_long_id in ids and self.fail_task_id in ids, "the new session does not list the old tasks")
            eq((await again.s.experimental.cancel_task(self.alice_long_id)).status, "cancelled", "cancel from the new session")
        eq((await self.alice.s.experimental.get_task(self.alice_long_id)).status, "cancelled", "old session sees the cancel")
        return f"{len(ids)} tasks seen from a second session"

    async def sh_notifications(self) -> str:
        for peer in (self.alice, self.bob):
            ns = peer.statuses()
            check(ns, f"{peer.who} received no notifications/tasks/status")
            for n in ns:
                check(n.createdAt and n.lastUpdatedAt, f"notification params are not a full Task: {n!r}")
                check(not related_task_id(n.meta), f"a notification carries related-task _meta (spec: SHOULD NOT): {n!r}")
        await self.alice.notified(self.sleep_task_id, ("completed",))
        await self.alice.notified(self.fail_task_id, ("failed",))
        alice_ids = {n.taskId for n in self.alice.statuses()}
        bob_ids = {n.taskId for n in self.bob.statuses()}
        check(not alice_ids & bob_ids, f"tasks notified to both alice and bob: {alice_ids & bob_ids}")

        def counts(ns: list[types.TaskStatusNotificationParams]) -> dict[str, int]:
            c: dict[str, int] = {}
            for n in ns:
                c[n.status] = c.get(n.status, 0) + 1
            return c

        a, b = self.alice.statuses(), self.bob.statuses()
        return f"alice {len(a)} {counts(a)}, bob {len(b)} {counts(b)}"

    async def run(self) -> None:
        await self.scenario(
            "t1. requests without a valid token are refused (401 + WWW-Authenticate), foreign Origin 403, GET/DELETE without a session 400",
            self.t1_refused,
        )
        peers = {
            "alice": connect(ALICE, "mcp-tasks-interop-py-alice", "alice"),
            "bob": connect(BOB, "mcp-tasks-interop-py-bob", "bob"),
        }
        await self.connected("0. initialize over HTTP", peers, [
            ("0. initialize over HTTP (alice and bob): sessions issued, tools listed", self.s0_sessions),
            ("a. task-augmented sleep: polling to completed, tasks/result with related-task _meta", self.sa_sleep),
            ("a2. a blocking tasks/result does not stall other requests", self.sa2_concurrent),
            ("b. fail as a task: failed, tasks/result isError", self.sb_fail),
            (f"c. tasks/list through nextCursor (page size {PAGE_SIZE}); invalid cursor -32602", self.sc_list),
            ("d. cancel: pending tasks/result answered, second cancel -32602, cancel of completed -32602", self.sd_cancel),
            ("e. unknown id -> -32602 on tasks/get, tasks/result, tasks/cancel", self.se_unknown),
            ("f. taskSupport errors: confirm without task, echo with task -> -32601", self.sf_task_support),
            (
                "g. alice: confirm as a task over HTTP: elicitation/create (related task) accepted {answer} -> completed with the answer; input_required and completed notified",
                lambda: self.confirm_round_trip(self.alice, "Proceed over HTTP?", "the user answered: yes from alice"),
            ),
            (
                "g1. bob: the same round trip in his own session",
                lambda: self.confirm_round_trip(self.bob, "Bob, proceed over HTTP?", "the user answered: yes from bob"),
            ),
            (
                'g2. alice: elicitation declined -> the task completes saying "the user declined"',
                lambda: self.confirm_round_trip(self.alice, "Shall we stop? [decline]", "the user declined"),
            ),
            (
                "g4. without the standalone GET stream (GET answered 405 client-side), the elicitation and the status notifications come on the tasks/result SSE stream",
                self.sg4_no_get_stream,
            ),
            ("g3. while alice's confirm waits for her answer, bob cannot see, wait on, cancel or list it", self.sg3_hold),
            ("i1. owner isolation: bob cannot get, wait on, cancel or list alice's tasks; errors equal an unknown id's", self.si1_isolation),
            ("i2. reconnect with the same token: a new session sees and cancels the tasks", self.si2_reconnect),
            ("h. notifications/tasks/status over HTTP: full Task params, no related-task _meta, each principal only of its own tasks", self.sh_notifications),
        ])


if __name__ == "__main__":
    sys.exit(run_main(Suite()))
