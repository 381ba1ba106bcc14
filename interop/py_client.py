"""Interop client for the mcp-tasks stdio server example, written against the
official Python SDK (mcp==1.30.0).

Usage: python py_client.py <path-to-stdio_server> [server args...]

Environment passed on to the server: MCP_TASKS_PAGE_SIZE, MCP_TASKS_TRACE,
RUST_LOG, RUST_BACKTRACE (when set). Each scenario prints one PASS/FAIL line;
the last line is "N passed, N failed" and the exit code is 1 if any failed.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
import time
from typing import Any

import anyio

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.context import RequestContext

# The checks shared with the other interop clients live in interop/harness.py.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RELATED_TASK,
    TERMINAL,
    BaseExceptionGroup,
    Scenarios,
    check,
    describe,
    eq,
    expect_error,
    related_task_id,
    run_main,
    settle,
    text_of,
    until_settled,
)

PAGE_SIZE = int(os.environ.get("MCP_TASKS_PAGE_SIZE", "50"))


def only_stream_teardown_errors(err: BaseException) -> bool:
    """True if err is (a group of) anyio stream errors only.

    mcp's stdio_client can raise BrokenResourceError on exit when the server
    writes a line while the session is being torn down (a race in the SDK's
    stdout reader, not a protocol error)."""
    if isinstance(err, BaseExceptionGroup):
        return all(only_stream_teardown_errors(e) for e in err.exceptions)
    return isinstance(err, (anyio.BrokenResourceError, anyio.ClosedResourceError))


class Suite(Scenarios):
    def __init__(self) -> None:
        super().__init__()
        self.status_notifications: list[types.TaskStatusNotificationParams] = []
        self.elicitations: list[dict[str, Any]] = []
        self.session: ClientSession | None = None
        self.sleep_task_id: str | None = None
        self.finished = False
        self.fail_task_id: str | None = None

    # -- callbacks handed to ClientSession ---------------------------------

    async def on_message(self, message: Any) -> None:
        # h. every notifications/tasks/status
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.TaskStatusNotification):
            self.status_notifications.append(message.root.params)

    async def on_elicit(
        self, context: RequestContext[ClientSession, Any], params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        # The session runs this inline in its receive loop, so it must not
        # await another response from the server here (no tasks/get).
        task_id = related_task_id(params.meta)
        notified = [n.status for n in self.status_notifications if n.taskId == task_id]
        self.elicitations.append(
            {"params": params, "task_id": task_id, "ctx_task_id": related_task_id(context.meta), "notified": notified}
        )
        meta = {RELATED_TASK: {"taskId": task_id}} if task_id else None
        if "[decline]" in params.message:
            return types.ElicitResult(action="decline", _meta=meta)
        if "[cancel]" in params.message:
            return types.ElicitResult(action="cancel", _meta=meta)
        return types.ElicitResult(action="accept", content={"answer": "yes"}, _meta=meta)

    # -- helpers -----------------------------------------------------------

    @property
    def s(self) -> ClientSession:
        assert self.session is not None
        return self.session

    async def poll_terminal(self, task_id: str) -> list[str]:
        statuses = []
        async for status in self.s.experimental.poll_task(task_id):
            statuses.append(status.status)
        return statuses

    # -- scenarios ---------------------------------------------------------

    async def s0_initialize(self) -> str:
        init = await self.s.initialize()
        eq(init.protocolVersion, "2025-11-25", "negotiated protocolVersion")
        caps = init.capabilities
        check(caps.tools is not None, f"server capabilities lack tools: {caps!r}")
        check(caps.tasks is not None, f"server capabilities lack tasks: {caps!r}")
        check(caps.tasks.list is not None, f"server capabilities lack tasks.list: {caps.tasks!r}")
        check(caps.tasks.cancel is not None, f"server capabilities lack tasks.cancel: {caps.tasks!r}")
        check(
            caps.tasks.requests is not None
            and caps.tasks.requests.tools is not None
            and caps.tasks.requests.tools.call is not None,
            f"server capabilities lack tasks.requests.tools.call: {caps.tasks!r}",
        )
        tools = (await self.s.list_tools()).tools
        support = {t.name: (t.execution.taskSupport if t.execution and t.execution.taskSupport else "forbidden") for t in tools}
        eq(support.get("sleep"), "optional", "sleep taskSupport")
        eq(support.get("fail"), "optional", "fail taskSupport")
        eq(support.get("confirm"), "required", "confirm taskSupport")
        eq(support.get("echo"), "forbidden", "echo taskSupport (absent or forbidden)")
        await self.s.send_ping()
        return f"server {init.serverInfo.name}; tools {','.join(t.name for t in tools)}"

    async def sa_sleep(self) -> str:
        created = await self.s.experimental.call_tool_as_task("sleep", {"ms": 300})
        task_id = created.task.taskId
        self.sleep_task_id = task_id
        eq(created.task.status, "working", "CreateTaskResult task.status")
        statuses = await self.poll_terminal(task_id)
        eq(statuses[-1], "completed", "terminal status")
        result = await self.s.experimental.get_task_result(task_id, types.CallToolResult)
        eq(text_of(result), "slept 300 ms", "tasks/result text")
        check(not result.isError, "tasks/result isError is true")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        again = await self.s.experimental.get_task(task_id)
        eq(again.status, "completed", "tasks/get after completion")
        eq(again.taskId, task_id, "tasks/get taskId")
        return f"task {task_id}; polled {','.join(statuses)}"

    async def sb_fail(self) -> str:
        created = await self.s.experimental.call_tool_as_task("fail", {})
        task_id = created.task.taskId
        self.fail_task_id = task_id
        eq(created.task.status, "working", "CreateTaskResult task.status")
        statuses = await self.poll_terminal(task_id)
        eq(statuses[-1], "failed", "terminal status")
        result = await self.s.experimental.get_task_result(task_id, types.CallToolResult)
        eq(result.isError, True, "tasks/result isError")
        eq(text_of(result), "the fail tool always fails", "tasks/result text")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        status = await self.s.experimental.get_task(task_id)
        return f"task {task_id}; polled {','.join(statuses)}; statusMessage {status.statusMessage!r}"

    async def sa2_blocking_result(self) -> str:
        started = time.monotonic()
        created = await self.s.experimental.call_tool_as_task("sleep", {"ms": 300})
        task_id = created.task.taskId
        result = await self.s.experimental.get_task_result(task_id, types.CallToolResult)
        elapsed_ms = int((time.monotonic() - started) * 1000)
        eq(text_of(result), "slept 300 ms", "tasks/result text")
        check(elapsed_ms >= 250, f"tasks/result answered after {elapsed_ms} ms, before the 300 ms sleep could end")
        got = await self.s.experimental.get_task(task_id)
        eq(got.status, "completed", "tasks/get after tasks/result returned")
        return f"answered after {elapsed_ms} ms"

    async def sc2_bad_cursor(self) -> str:
        err = await expect_error(
            self.s.experimental.list_tasks("not-a-cursor-from-this-server"), INVALID_PARAMS, "tasks/list"
        )
        return f"message {err.error.message!r}"

    async def sd3_pending_result_on_cancel(self) -> str:
        created = await self.s.experimental.call_tool_as_task("sleep", {"ms": 30000})
        task_id = created.task.taskId
        settled: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, settled, self.s.experimental.get_task_result(task_id, types.CallToolResult))
            await anyio.sleep(0.2)
            cancelled = await self.s.experimental.cancel_task(task_id)
            eq(cancelled.status, "cancelled", "tasks/cancel result status")
            await until_settled(settled, tg, "tasks/result was still pending 10 s after the task was cancelled")
        if "error" in settled:
            return f"tasks/result answered {describe(settled['error'])}"
        return "tasks/result answered a result"

    async def sc_list(self) -> str:
        created = []
        for i in range(5):
            r = await self.s.experimental.call_tool_as_task("sleep", {"ms": 50 + i})
            created.append(r.task.taskId)
        check(len(set(created)) == 5, f"server returned duplicate task ids: {created}")
        seen: dict[str, int] = {}
        pages: list[int] = []
        cursor: str | None = None
        while True:
            check(len(pages) < 200, "more than 200 pages; cursor loop?")
            page = await self.s.experimental.list_tasks(cursor)
            pages.append(len(page.tasks))
            check(len(page.tasks) <= PAGE_SIZE, f"page {len(pages) - 1} has {len(page.tasks)} tasks, page size is {PAGE_SIZE}")
            for t in page.tasks:
                seen[t.taskId] = seen.get(t.taskId, 0) + 1
            if page.nextCursor is None:
                break
            cursor = page.nextCursor
        for task_id in created:
            eq(seen.get(task_id, 0), 1, f"occurrences of task {task_id} across pages")
        for task_id, count in seen.items():
            eq(count, 1, f"occurrences of task {task_id} across pages")
        for task_id in filter(None, [self.sleep_task_id, self.fail_task_id]):
            eq(seen.get(task_id, 0), 1, f"earlier task {task_id} in the listing")
        min_pages = math.ceil(len(seen) / PAGE_SIZE)
        check(len(pages) >= min_pages, f"{len(seen)} tasks came in {len(pages)} pages (page size {PAGE_SIZE})")
        return f"{len(seen)} tasks in {len(pages)} pages {pages}, last page without nextCursor"

    async def sd_cancel(self) -> str:
        created = await self.s.experimental.call_tool_as_task("sleep", {"ms": 30000})
        task_id = created.task.taskId
        cancelled = await self.s.experimental.cancel_task(task_id)
        eq(cancelled.status, "cancelled", "tasks/cancel result status")
        eq(cancelled.taskId, task_id, "tasks/cancel result taskId")
        await expect_error(self.s.experimental.cancel_task(task_id), INVALID_PARAMS, "second tasks/cancel")
        got = await self.s.experimental.get_task(task_id)
        eq(got.status, "cancelled", "tasks/get after cancel")
        return f"task {task_id}"

    async def sd2_cancel_completed(self) -> None:
        check(self.sleep_task_id, "no completed task from scenario a")
        await expect_error(
            self.s.experimental.cancel_task(self.sleep_task_id), INVALID_PARAMS, "tasks/cancel of completed task"
        )

    async def se_unknown(self) -> str:
        bogus = "no-such-task-00000000"
        err = await expect_error(self.s.experimental.get_task(bogus), INVALID_PARAMS, "tasks/get")
        with anyio.fail_after(5):
            await expect_error(
                self.s.experimental.get_task_result(bogus, types.CallToolResult), INVALID_PARAMS, "tasks/result"
            )
        await expect_error(self.s.experimental.cancel_task(bogus), INVALID_PARAMS, "tasks/cancel")
        return f"message {err.error.message!r}"

    async def sf_confirm_without_task(self) -> str:
        # The Python SDK does not guard task-required tools client-side, so
        # ClientSession.call_tool sends the plain tools/call to the server.
        with anyio.fail_after(5):
            err = await expect_error(
                self.s.call_tool("confirm", {"question": "no task?"}), METHOD_NOT_FOUND, "tools/call confirm without task"
            )
        return f"message {err.error.message!r}"

    async def sf2_echo(self) -> None:
        plain = await self.s.call_tool("echo", {"text": "hello interop"})
        eq(text_of(plain), "hello interop", "echo text")
        check(not plain.isError, "echo isError")
        await expect_error(
            self.s.experimental.call_tool_as_task("echo", {"text": "as a task"}),
            METHOD_NOT_FOUND,
            "tools/call echo with task",
        )

    async def confirm_round_trip(self, question: str, expected_text: str) -> str:
        before = len(self.elicitations)
        created = await self.s.experimental.call_tool_as_task("confirm", {"question": question})
        task_id = created.task.taskId
        eq(created.task.status, "working", "CreateTaskResult task.status")
        # Poll until terminal or input_required (spec: on input_required the
        # requestor calls tasks/result, which blocks until the task is terminal).
        statuses: list[str] = []
        async for status in self.s.experimental.poll_task(task_id):
            statuses.append(status.status)
            if status.status == "input_required":
                break
        result = await self.s.experimental.get_task_result(task_id, types.CallToolResult)
        mine = self.elicitations[before:]
        eq(len(mine), 1, "elicitation/create requests received")
        e = mine[0]
        params = e["params"]
        check(isinstance(params, types.ElicitRequestFormParams), f"elicitation is not form mode: {params!r}")
        eq(params.message, question, "elicitation message")
        answer = (params.requestedSchema.get("properties") or {}).get("answer") or {}
        eq(answer.get("type"), "string", "requestedSchema answer type")
        eq(e["task_id"], task_id, "elicitation _meta related-task taskId")
        eq(e["ctx_task_id"], task_id, "RequestContext.meta related-task taskId")
        notified = [n.status for n in self.status_notifications if n.taskId == task_id]
        check(
            "input_required" in statuses or "input_required" in notified,
            f"input_required never observed (polled {statuses}, notified {notified})",
        )
        eq(text_of(result), expected_text, "tasks/result text")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        final = await self.s.experimental.get_task(task_id)
        eq(final.status, "completed", "tasks/get after the round trip")
        return f"task {task_id}; polled {','.join(statuses)}; notified {','.join(notified)}"

    async def sh_notifications(self) -> str:
        ns = self.status_notifications
        check(ns, "no notifications/tasks/status received during the run")
        for n in ns:
            check(n.createdAt and n.lastUpdatedAt, f"notification params are not a full Task: {n!r}")
        for task_id, expected in ((self.sleep_task_id, "completed"), (self.fail_task_id, "failed")):
            if task_id:
                got = [n.status for n in ns if n.taskId == task_id]
                check(expected in got, f"no {expected!r} notification for task {task_id} (got {got or 'none'})")
        with_meta = [n for n in ns if related_task_id(n.meta)]
        eq(len(with_meta), 0, "notifications carrying related-task _meta (spec: SHOULD NOT)")
        counts: dict[str, int] = {}
        for n in ns:
            counts[n.status] = counts.get(n.status, 0) + 1
        return f"{len(ns)} notifications {counts}"

    async def run(self, command: str, args: list[str]) -> None:
        env = {k: os.environ[k] for k in ("MCP_TASKS_PAGE_SIZE", "MCP_TASKS_TRACE", "RUST_LOG", "RUST_BACKTRACE") if k in os.environ}
        params = StdioServerParameters(command=command, args=args, env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(
                read,
                write,
                elicitation_callback=self.on_elicit,
                message_handler=self.on_message,
                client_info=types.Implementation(name="mcp-tasks-interop-py", version="0.1.0"),
            ) as session:
                self.session = session
                if not await self.scenario("0. initialize: tasks capabilities and tool list", self.s0_initialize):
                    return
                await self.scenario(
                    "a. task-augmented sleep: working -> completed, tasks/result text and related-task _meta", self.sa_sleep
                )
                await self.scenario(
                    "a2. tasks/result on a working task blocks until the task completes", self.sa2_blocking_result
                )
                await self.scenario(
                    "b. fail as a task: status failed, tasks/result is a success response with isError", self.sb_fail
                )
                await self.scenario(
                    f"c. tasks/list pagination (page size {PAGE_SIZE}) lists 5 new tasks exactly once", self.sc_list
                )
                await self.scenario("c2. tasks/list with an invalid cursor -> -32602", self.sc2_bad_cursor)
                await self.scenario(
                    "d. cancel a running sleep(30000): cancelled, second cancel -32602, tasks/get cancelled",
                    self.sd_cancel,
                )
                await self.scenario("d2. cancel a completed task -> -32602", self.sd2_cancel_completed)
                await self.scenario(
                    "d3. a pending tasks/result is answered when the task is cancelled", self.sd3_pending_result_on_cancel
                )
                await self.scenario(
                    "e. unknown task id -> -32602 on tasks/get, tasks/result, tasks/cancel", self.se_unknown
                )
                await self.scenario(
                    "f. confirm (taskSupport required) without a task -> -32601", self.sf_confirm_without_task
                )
                await self.scenario("f2. echo: plain call works, task-augmented call -> -32601", self.sf2_echo)
                await self.scenario(
                    'g. confirm as a task: input_required, elicitation accept {answer:"yes"} -> completed',
                    lambda: self.confirm_round_trip("Proceed with the interop test?", "the user answered: yes"),
                )
                await self.scenario(
                    'g2. confirm as a task: elicitation decline -> "the user declined"',
                    lambda: self.confirm_round_trip("Shall we stop? [decline]", "the user declined"),
                )
                await self.scenario(
                    'g3. confirm as a task: elicitation cancel -> "the user cancelled"',
                    lambda: self.confirm_round_trip("Dismiss this? [cancel]", "the user cancelled"),
                )
                await self.scenario("h. notifications/tasks/status received (full Task params)", self.sh_notifications)
                await self.quiesce()
                self.finished = True

    async def quiesce(self) -> None:
        """Before closing, wait (at most 5 s) until no listed task is still running,
        so that the server has nothing left to send while the session closes."""
        with anyio.move_on_after(5):
            while True:
                running, cursor = 0, None
                for _ in range(200):
                    page = await self.s.experimental.list_tasks(cursor)
                    running += sum(1 for t in page.tasks if t.status not in TERMINAL)
                    cursor = page.nextCursor
                    if cursor is None:
                        break
                if running == 0:
                    return
                await anyio.sleep(0.2)

    def ignored_error(self, err: BaseException) -> str | None:
        if self.finished and only_stream_teardown_errors(err):
            return f"note: ignored an SDK stdio teardown error after all scenarios ran: {describe(err)}"
        return None


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python py_client.py <path-to-stdio_server> [args...]", file=sys.stderr)
        return 2
    return run_main(Suite(), sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
