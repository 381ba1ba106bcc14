"""Peer workload: the official Python MCP SDK's InMemoryTaskStore.

Usage: python workload.py [--n N] [--runs R] [--list-max-pages K] [--mem-n M]
(env PY_N, RUNS, PY_LIST_MAX_PAGES and PY_MEM_N are read as defaults).

Prints one JSON line per phase per run on stdout; everything else goes to stderr.
See ../README.md for what is measured and the caveats.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from importlib.metadata import version

from mcp.shared.experimental.tasks.in_memory_task_store import InMemoryTaskStore
from mcp.types import CallToolResult, TaskMetadata, TextContent

IMPL = f"py-sdk-{version('mcp')}"
TTL_MS = 60000


def log(msg: str) -> None:
    print(f"[{IMPL}] {msg}", file=sys.stderr, flush=True)


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def fail(msg: str) -> None:
    raise SystemExit(f"[{IMPL}] self-check failed: {msg}")


def make_result() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="done")], isError=False)


async def run_once(n: int, run: int, list_max_pages: int) -> None:
    store = InMemoryTaskStore()
    ids: list[str] = [""] * n
    now = time.perf_counter_ns

    def line(phase: str, ns_per_op: float, **extra) -> None:
        emit({"impl": IMPL, "n": n, "run": run, "phase": phase,
              "ns_per_op": round(ns_per_op, 1), **extra})
        # The store's ttl is real (lazy expiry on access): once a run outlasts it, the first
        # tasks vanish and the later phases fail. Say so plainly.
        elapsed_ms = (now() - run_start) / 1e6
        if elapsed_ms > TTL_MS * 0.9:
            fail(f"run {run} has taken {elapsed_ms / 1000:.0f} s, near the {TTL_MS // 1000} s ttl "
                 "after which the store drops the tasks: lower --n / PY_N")

    try:
        # 1. create. The Python store takes only the task metadata (ttl) and an optional id:
        # it keeps neither the originating request id nor the request itself.
        gc.collect()
        run_start = t0 = now()
        for i in range(n):
            task = await store.create_task(TaskMetadata(ttl=TTL_MS))
            ids[i] = task.taskId
        line("create", (now() - t0) / n)
        if len(set(ids)) != n:
            fail("task ids not unique")

        # 2. get
        gc.collect()
        ok = 0
        t0 = now()
        for tid in ids:
            t = await store.get_task(tid)
            if t is not None and t.status == "working":
                ok += 1
        line("get", (now() - t0) / n)
        if ok != n:
            fail(f"get: {ok}/{n} tasks found in status working")

        # 3. update: working -> input_required -> working (ns per single update)
        gc.collect()
        t0 = now()
        for tid in ids:
            await store.update_task(tid, status="input_required")
            await store.update_task(tid, status="working")
        line("update", (now() - t0) / (2 * n))

        # 4. store the completed result. The Python store keeps result and status apart;
        # the SDK's own TaskContext.complete() does store_result() then
        # update_task(status="completed"), and so does this phase.
        gc.collect()
        t0 = now()
        for tid in ids:
            await store.store_result(tid, make_result())
            await store.update_task(tid, status="completed")
        line("store", (now() - t0) / n)

        # 5. result
        gc.collect()
        ok = 0
        t0 = now()
        for tid in ids:
            r = await store.get_result(tid)
            if r is not None and r.content[0].text == "done":
                ok += 1
        line("result", (now() - t0) / n)
        if ok != n:
            fail(f"result: {ok}/{n} results present")
        for i in (0, n // 2, n - 1):
            t = await store.get_task(ids[i])
            if t is None or t.status != "completed":
                fail(f"task {i} is {t and t.status}, expected completed")

        # 6. list: follow the cursor until absent, or stop after list_max_pages pages (0 = no cap).
        gc.collect()
        listed = 0
        pages = 0
        cursor = None
        partial = False
        t0 = now()
        while True:
            tasks, cursor = await store.list_tasks(cursor)
            pages += 1
            listed += len(tasks)
            if cursor is None:
                break
            if list_max_pages > 0 and pages >= list_max_pages:
                partial = True
                break
        dt = now() - t0
        page_size = getattr(store, "_page_size", 10)  # the store's default page size
        if listed == 0:
            fail("list: no task listed")
        if not partial and listed != n:
            fail(f"list: {listed} tasks listed, expected {n}")
        if partial and listed != pages * page_size:
            fail(f"list: {listed} tasks in {pages} full pages")
        extra = {"pages": pages, "listed": listed}
        if partial:
            extra.update(partial=True, pages_total=-(-n // page_size))
            if run == 1:
                log(f"list phase partial: walked {pages} of {-(-n // page_size)} pages; "
                    "set PY_LIST_MAX_PAGES=0 for the full walk")
        line("list", dt / listed, **extra)
    finally:
        store.cleanup()


async def measure_memory(n: int, run: int) -> None:
    """Bytes held per task: N tasks with a ttl, before and after storing their results.

    tracemalloc slows every allocation down, so this is a separate, untimed pass
    (with its own store) after the timed runs.
    """
    store = InMemoryTaskStore()
    ids = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(n):
            task = await store.create_task(TaskMetadata(ttl=TTL_MS))
            ids.append(task.taskId)
        gc.collect()
        created = tracemalloc.get_traced_memory()[0]
        for tid in ids:
            await store.store_result(tid, make_result())
            await store.update_task(tid, status="completed")
        gc.collect()
        stored = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    if len(store._tasks) != n:
        fail(f"memory pass: {len(store._tasks)} tasks held, expected {n}")
    # The ids list is the harness's, not the store's: subtract it (the id strings
    # themselves are shared with the store's dict keys and stay counted).
    ids_list = sys.getsizeof(ids)
    emit({"impl": IMPL, "n": n, "run": run, "phase": "bytes_per_task",
          "bytes_per_task": round((created - before - ids_list) / n, 1),
          "bytes_per_task_with_result": round((stored - before - ids_list) / n, 1),
          "method": "tracemalloc growth after gc: tasks with ttl, no result"})
    store.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=int(os.environ.get("PY_N", 5000)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", 3)))
    ap.add_argument("--list-max-pages", type=int, default=int(os.environ.get("PY_LIST_MAX_PAGES", 0)),
                    help="stop the list walk after this many pages; 0 = walk all")
    ap.add_argument("--mem-n", type=int, default=int(os.environ.get("PY_MEM_N", 2000)),
                    help="tasks in the (untimed, tracemalloc) memory pass; 0 skips it")
    a = ap.parse_args()
    if a.n < 1 or a.runs < 1 or a.list_max_pages < 0 or a.mem_n < 0:
        ap.error("n, runs must be >= 1; list-max-pages, mem-n >= 0")
    log(f"python {sys.version.split()[0]}, n={a.n}, runs={a.runs}, list_max_pages={a.list_max_pages}")

    async def all_runs() -> None:
        for run in range(1, a.runs + 1):
            t = time.monotonic()
            await run_once(a.n, run, a.list_max_pages)
            log(f"run {run} done in {time.monotonic() - t:.1f} s")
        if a.mem_n:
            await measure_memory(min(a.mem_n, a.n), 1)

    asyncio.run(all_runs())


if __name__ == "__main__":
    main()
