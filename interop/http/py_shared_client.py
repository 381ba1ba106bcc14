"""Two mcp_http instances sharing one store (Redis or PostgreSQL), driven with the
official Python SDK (mcp==1.30.0, installed in interop/.venv): a task created through
instance A is read, awaited, listed and cancelled through instance B, and stays invisible
to another principal there.

Usage: python py_shared_client.py

Environment: MCP_TASKS_URL_A and MCP_TASKS_URL_B (the two instances' /mcp endpoints),
MCP_TASKS_ALICE_TOKEN and MCP_TASKS_BOB_TOKEN (two principals' bearer tokens, known to
both instances), MCP_TASKS_TRACE_DIR_A and MCP_TASKS_TRACE_DIR_B (the instances'
MCP_TASKS_TRACE_DIR, to show which instance answered what). Each scenario prints one
PASS/FAIL line; the last line is "N passed, N failed" and the exit code is 1 if any failed.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx

import mcp.types as types
from mcp import ClientSession

# The checks shared with the other interop clients live in interop/harness.py.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from harness import (  # noqa: E402
    INVALID_PARAMS,
    Scenarios,
    check,
    describe,
    eq,
    expect_error,
    foreign_like_unknown,
    http_session,
    list_all,
    related_task_id,
    required,
    run_main,
    settle,
    text_of,
    until_settled,
)

SLEEP_MS = 1200

URL_A = required("MCP_TASKS_URL_A")
URL_B = required("MCP_TASKS_URL_B")
ALICE = required("MCP_TASKS_ALICE_TOKEN")
BOB = required("MCP_TASKS_BOB_TOKEN")
TRACES_A = pathlib.Path(required("MCP_TASKS_TRACE_DIR_A"))
TRACES_B = pathlib.Path(required("MCP_TASKS_TRACE_DIR_B"))


class Peer:
    """One MCP session with one instance."""

    def __init__(self, session: ClientSession, url: str, get_session_id: Callable[[], str | None]) -> None:
        self.s = session
        self.url = url
        self.session_id = get_session_id


@contextlib.asynccontextmanager
async def connect(url: str, token: str, name: str) -> AsyncIterator[Peer]:
    async with http_session(url, token, name, f"negotiated protocolVersion with {url}") as (session, get_session_id):
        yield Peer(session, url, get_session_id)


def traced(directory: pathlib.Path, session_id: str | None) -> list[dict]:
    """The messages an instance traced for one session: {"dir", "msg"} entries."""
    check(session_id, "no session id")
    path = directory / f"{session_id}.jsonl"
    check(path.is_file(), f"no trace {path}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def all_traced(directory: pathlib.Path) -> list[dict]:
    out: list[dict] = []
    for path in sorted(directory.glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def requests_for(entries: list[dict], method: str, task_id: str) -> list[dict]:
    return [
        e["msg"]
        for e in entries
        if e.get("dir") == "in"
        and e["msg"].get("method") == method
        and (e["msg"].get("params") or {}).get("taskId") == task_id
    ]


class Suite(Scenarios):
    def __init__(self) -> None:
        super().__init__()
        self.alice_a: Peer
        self.alice_b: Peer
        self.bob_b: Peer
        self.sleep_task: str | None = None
        self.long_task: str | None = None
        self.cancelled_task: str | None = None
        self.b_task: str | None = None

    # -- scenarios ---------------------------------------------------------

    async def r0_sessions(self) -> str:
        ids = {self.alice_a.session_id(), self.alice_b.session_id(), self.bob_b.session_id()}
        check(None not in ids and len(ids) == 3, f"sessions not issued or shared: {ids}")
        # A session belongs to the instance that issued it: B does not know A's.
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.post(
                URL_B,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={
                    "Authorization": f"Bearer {ALICE}",
                    "Accept": "application/json, text/event-stream",
                    "Mcp-Session-Id": self.alice_a.session_id() or "",
                    "MCP-Protocol-Version": "2025-11-25",
                },
            )
            eq(r.status_code, 404, "A's session id sent to B")
        await self.alice_a.s.send_ping()
        await self.alice_b.s.send_ping()
        return "alice on A and on B, bob on B; sessions are per instance"

    async def r1_result_through_b(self) -> str:
        a, b = self.alice_a.s, self.alice_b.s
        created = await a.experimental.call_tool_as_task("sleep", {"ms": SLEEP_MS})
        task_id = created.task.taskId
        self.sleep_task = task_id
        started = time.monotonic()
        eq(created.task.status, "working", "CreateTaskResult task.status (through A)")
        got = await b.experimental.get_task(task_id)
        eq(got.status, "working", "tasks/get through B")
        eq(got.taskId, task_id, "tasks/get taskId through B")
        settled: dict[str, Any] = {}

        async def wait_result() -> None:
            settled["result"] = await b.experimental.get_task_result(task_id, types.CallToolResult)
            settled["at"] = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_result)
            await anyio.sleep(0.3)
            for peer in (a, b):
                eq((await peer.experimental.get_task(task_id)).status, "working", "status while B's tasks/result blocks")
            check("result" not in settled, "B's tasks/result answered before A's handler could finish")
        elapsed = settled["at"] - started
        check(elapsed >= (SLEEP_MS - 100) / 1000, f"B's tasks/result answered after {elapsed * 1000:.0f} ms")
        check(elapsed < (SLEEP_MS + 3000) / 1000, f"B's tasks/result answered only after {elapsed * 1000:.0f} ms")
        result = settled["result"]
        eq(text_of(result), f"slept {SLEEP_MS} ms", "tasks/result text through B")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        eq((await a.experimental.get_task(task_id)).status, "completed", "tasks/get through A afterwards")
        return f"B's tasks/result answered {elapsed * 1000:.0f} ms after A created the task"

    async def r2_traces(self) -> str:
        """The traces show who did what: A created the task, B answered tasks/result."""
        task_id = self.sleep_task
        check(task_id, "no task from r1")
        a_session = traced(TRACES_A, self.alice_a.session_id())
        b_session = traced(TRACES_B, self.alice_b.session_id())
        created = [
            e["msg"]
            for e in a_session
            if e["dir"] == "out" and ((e["msg"].get("result") or {}).get("task") or {}).get("taskId") == task_id
        ]
        eq(len(created), 1, "CreateTaskResult for the task in A's trace")
        b_results = [
            e["msg"]
            for e in b_session
            if e["dir"] == "out"
            and related_task_id((e["msg"].get("result") or {}).get("_meta")) == task_id
        ]
        eq(len(b_results), 1, "tasks/result answer for the task in B's trace")
        eq(len(requests_for(b_session, "tasks/result", task_id)), 1, "tasks/result requests in B's trace")
        eq(len(requests_for(all_traced(TRACES_A), "tasks/result", task_id)), 0, "tasks/result requests in A's traces")
        tool_calls_b = [e for e in all_traced(TRACES_B) if e["dir"] == "in" and e["msg"].get("method") == "tools/call"]
        eq(len(tool_calls_b), 0, "tools/call requests B read so far")
        return "tools/call only in A's trace, tasks/result only in B's"

    async def r3_list_through_b(self) -> str:
        a, b = self.alice_a.s, self.alice_b.s
        self.long_task = (await a.experimental.call_tool_as_task("sleep", {"ms": 25000})).task.taskId
        self.b_task = (await b.experimental.call_tool_as_task("fail", {})).task.taskId
        through_b, _ = await list_all(self.alice_b.s)
        through_a, _ = await list_all(self.alice_a.s)
        for task_id in (self.sleep_task, self.long_task, self.b_task):
            eq(through_b.count(task_id), 1, f"{task_id} in tasks/list through B")
            eq(through_a.count(task_id), 1, f"{task_id} in tasks/list through A")
        eq(sorted(through_a), sorted(through_b), "alice's tasks/list through A and through B")
        return f"{len(through_b)} tasks listed alike through both"

    async def r4_cross_result_of_b_task(self) -> str:
        """The other way round: a task created (and run) on B, its outcome read through A."""
        task_id = self.b_task
        check(task_id, "no task from r3")
        result = await self.alice_a.s.experimental.get_task_result(task_id, types.CallToolResult)
        eq(result.isError, True, "tasks/result isError through A")
        eq(related_task_id(result.meta), task_id, "tasks/result _meta related-task taskId")
        eq((await self.alice_a.s.experimental.get_task(task_id)).status, "failed", "status through A")
        return None

    async def r5_cancel_through_b(self) -> str:
        a, b = self.alice_a.s, self.alice_b.s
        task_id = (await a.experimental.call_tool_as_task("sleep", {"ms": 30000})).task.taskId
        self.cancelled_task = task_id
        settled: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, settled, a.experimental.get_task_result(task_id, types.CallToolResult))
            await anyio.sleep(0.3)
            check(not settled, "A's tasks/result answered before the cancel")
            cancelled_at = time.monotonic()
            cancelled = await b.experimental.cancel_task(task_id)
            eq(cancelled.status, "cancelled", "tasks/cancel through B: status")
            eq(cancelled.taskId, task_id, "tasks/cancel through B: taskId")
            await until_settled(settled, tg, "A's tasks/result still pending 10 s after the cancel through B")
        woke = settled["at"] - cancelled_at
        eq((await a.experimental.get_task(task_id)).status, "cancelled", "tasks/get through A after B's cancel")
        await expect_error(a.experimental.cancel_task(task_id), INVALID_PARAMS, "second tasks/cancel, through A")
        # A's handler notices and stops; the task stays cancelled.
        await anyio.sleep(0.3)
        eq((await b.experimental.get_task(task_id)).status, "cancelled", "tasks/get through B later")
        check(self.sleep_task, "no completed task from r1")
        await expect_error(b.experimental.cancel_task(self.sleep_task), INVALID_PARAMS, "cancel of A's completed task through B")
        how = describe(settled["error"]) if "error" in settled else "a result"
        return f"A's pending tasks/result answered {woke * 1000:.0f} ms after B's cancel with {how}"

    async def r6_isolation_on_b(self) -> str:
        b = self.bob_b.s
        check(self.long_task and self.sleep_task, "no tasks from earlier scenarios")
        await foreign_like_unknown(b, (self.long_task, self.sleep_task), " through B")
        eq((await self.alice_a.s.experimental.get_task(self.long_task)).status, "working", "alice's task after bob's cancel")
        bob_own = (await b.experimental.call_tool_as_task("sleep", {"ms": 10})).task.taskId
        bob_ids, _ = await list_all(self.bob_b.s)
        for task_id in (self.long_task, self.sleep_task, self.cancelled_task, self.b_task):
            check(task_id not in bob_ids, f"bob's tasks/list through B shows alice's task {task_id}")
        check(bob_own in bob_ids, "bob's tasks/list through B lacks his own task")
        alice_ids, _ = await list_all(self.alice_a.s)
        check(bob_own not in alice_ids, "alice's tasks/list through A shows bob's task")
        # Clean up alice's long task (through B).
        eq((await self.alice_b.s.experimental.cancel_task(self.long_task)).status, "cancelled", "cancel of the long task")
        return f"bob lists {len(bob_ids)} task(s) through B, none of alice's"

    async def run(self) -> None:
        peers = {
            "alice_a": connect(URL_A, ALICE, "mcp-tasks-shared-alice-a"),
            "alice_b": connect(URL_B, ALICE, "mcp-tasks-shared-alice-b"),
            "bob_b": connect(URL_B, BOB, "mcp-tasks-shared-bob-b"),
        }
        await self.connected("r0. initialize with both instances", peers, [
            ("r0. sessions with instance A (alice) and B (alice, bob); A's session unknown to B (404)", self.r0_sessions),
            (f"r1. sleep {SLEEP_MS} ms created through A: tasks/get through B, B's tasks/result blocks until A's handler completes", self.r1_result_through_b),
            ("r2. the traces: A read the tools/call, B the tasks/result", self.r2_traces),
            ("r3. tasks/list through B and through A: the same tasks, created on either", self.r3_list_through_b),
            ("r4. a task created on B (fail): tasks/result and tasks/get through A", self.r4_cross_result_of_b_task),
            ("r5. tasks/cancel through B of a task running on A: A's pending tasks/result answered, second cancel -32602", self.r5_cancel_through_b),
            ("r6. bob on B cannot get, wait on, cancel or list alice's tasks; errors equal an unknown id's", self.r6_isolation_on_b),
        ])


if __name__ == "__main__":
    sys.exit(run_main(Suite()))
