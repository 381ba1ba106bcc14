#!/usr/bin/env python3
"""Markdown report of the peer comparison.

    report.py RESULTS.jsonl   median over runs per (impl, phase), as Markdown tables
    report.py --meta          print one {"meta": {...}} JSON line: machine and tool versions
    report.py --carry PREV.jsonl PEER...
                              print PREV's lines of the peers (impl prefix, e.g. ts py)
                              with "carried": true, for a run that skipped them

Input lines (any other line is ignored):
    {"impl": "...", "n": 100000, "run": 1, "phase": "create", "ns_per_op": 123.4, ...}
    {"impl": "...", "n": 2000, "run": 1, "phase": "bytes_per_task", "bytes_per_task": 880.0}
    {"impl": "...", "n": 200, "run": 1, "phase": "wake_latency", "median_us": 20.1, "p99_us": 80.2, ...}
    {"meta": {...}}
Optional fields on the list phase: "pages", "listed", "partial": true, "pages_total".
Rows of impl "mcp-tasks-redis[@N]" (RedisTaskStore) get their own section, against
"mcp-tasks@N" (the in-memory registry at the same n, from the same run).
Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

PHASES = ["create", "get", "update", "store", "result", "list"]
PHASE_UNIT = {
    "update": "ns per single status update",
    "list": "ns per task listed",
}
DASH = "–"


# ---------------------------------------------------------------- meta

def _cmd(*argv: str) -> str | None:
    if not shutil.which(argv[0]) and not Path(argv[0]).exists():
        return None
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    out = (p.stdout or p.stderr).strip()
    return out.splitlines()[0] if p.returncode == 0 and out else None


def machine_meta() -> dict:
    cpu, virtual, loadavg = None, None, None
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.lower().startswith("model name") and cpu is None:
                cpu = ln.split(":", 1)[1].strip()
            if ln.lower().startswith("flags") and virtual is None:
                virtual = "hypervisor" in ln.split(":", 1)[1].split()
    except OSError:
        pass
    try:
        loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        pass
    venv_py = HERE / "py" / ".venv" / "bin" / "python"
    redis = _cmd(os.environ.get("REDIS_SERVER", "redis-server"), "--version")
    if redis:
        # "Redis server v=7.0.15 sha=... malloc=jemalloc-5.3.0 bits=64 build=..."
        fields = dict(f.split("=", 1) for f in redis.split() if "=" in f)
        redis = f"redis-server {fields.get('v', '?')}" + (f" ({fields['malloc']})" if "malloc" in fields else "")
    return {
        "nproc": _cmd("nproc") or str(os.cpu_count()),
        "cpu": cpu,
        "kernel": _cmd("uname", "-sr"),
        "node": _cmd("node", "--version"),
        "python": _cmd(str(venv_py), "--version") if venv_py.exists() else _cmd(sys.executable, "--version"),
        "rustc": _cmd("rustc", "--version"),
        "redis": redis,
        "virtual": virtual,
        "loadavg": loadavg,
    }


# ---------------------------------------------------------------- report

def fmt(x: float | None) -> str:
    if x is None:
        return DASH
    if x < 10:
        return f"{x:.2f}"
    if x < 1000:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return DASH
    r = a / b
    return f"{r:.2f}×" if r < 100 else f"{r:,.0f}×"


def load(path: str) -> tuple[list[dict], dict | None]:
    rows, meta = [], None
    with open(path, encoding="utf-8") as f:
        for ln in f:
            ln = ln.strip()
            if not ln.startswith("{"):
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError:
                print(f"report.py: skipping bad line: {ln[:80]}", file=sys.stderr)
                continue
            if "meta" in obj:
                meta = obj["meta"]
            elif "impl" in obj and "phase" in obj:
                rows.append(obj)
    return rows, meta


def order_impls(impls: list[str]) -> list[str]:
    def key(name: str) -> tuple[int, str]:
        if name == "rust-floor":
            return (0, name)
        if name == "mcp-tasks":
            return (1, name)
        if name.startswith("ts"):
            return (2, name)
        if name.startswith("py"):
            return (3, name)
        return (4, name)
    return sorted(impls, key=key)


def find(impls: list[str], prefix: str) -> str | None:
    return next((i for i in impls if i == prefix or i.startswith(prefix + "-")), None)


def value(row: dict) -> float | None:
    if row["phase"] == "bytes_per_task":
        # the peers write it as "bytes_per_task", the Rust example as "ns_per_op" + "unit"
        v = row.get("bytes_per_task", row.get("value", row.get("ns_per_op")))
    else:
        v = row.get("ns_per_op")
    return float(v) if isinstance(v, (int, float)) else None


def report(path: str) -> str:
    rows, meta = load(path)
    meta = meta or machine_meta()
    out: list[str] = []
    out.append("# Task store peer comparison\n")
    out.append(
        f"Machine: {meta.get('nproc')} {'vCPU(s) (virtual machine)' if meta.get('virtual') else 'CPU(s)'}, "
        f"{meta.get('cpu') or 'unknown CPU'}"
        + (f", {meta['kernel']}" if meta.get("kernel") else "")
    )
    if meta.get("loadavg"):
        out.append(f"Load average when the run ended (1/5/15 min): {meta['loadavg']}: the CPUs were shared "
                   "with other work as far as it exceeds 1 (the benchmark itself keeps about one busy).")
    # python and rustc print their own name with the version; node does not
    tools = [("node " if k == "node" else "") + meta[k]
             for k in ("node", "python", "rustc", "redis") if meta.get(k)]
    if tools:
        out.append("Tools: " + "; ".join(tools))
    out.append("")
    out.append("All figures come from one run of `run.sh`, and every ratio compares figures of that same "
               "run (rows marked as carried over excepted). Absolute ns vary between runs on a small "
               "shared VM; the ratios are steadier.")
    out.append("")
    all_rows = rows
    wake_rows = [r for r in rows if r["phase"] == "wake_latency"]
    redis_rows = [r for r in rows if r["phase"] != "wake_latency" and is_redis(r["impl"])]
    rows = [r for r in rows if r["phase"] != "wake_latency" and not is_redis(r["impl"])]
    carried = sorted({r["impl"] for r in rows if r.get("carried")})
    if carried:
        out.append("**Carried over from an earlier run** (skipped this time): " + ", ".join(carried)
                   + ". Their ratios against mcp-tasks mix two runs.\n")
    if not all_rows:
        out.append("No results.")
        return "\n".join(out) + "\n"
    if not rows:
        out.append("No in-memory results.\n")
        out.extend(redis_section(all_rows, redis_rows, meta))
        out.extend(wake_section(wake_rows))
        return "\n".join(out) + "\n"

    # "mcp-tasks@N" rows are this crate's registry run at the Python store's n, for a
    # like-for-like Python ratio; they get no column of their own.
    all_impls = sorted({r["impl"] for r in rows})
    impls = order_impls([i for i in all_impls if "@" not in i])
    # (impl, phase) -> values over runs; extra info from the list rows
    vals: dict[tuple[str, str], list[float]] = {}
    ns: dict[tuple[str, str], set[int]] = {}
    runs: dict[str, set] = {}
    listinfo: dict[str, dict] = {}
    for r in rows:
        v = value(r)
        if v is None:
            continue
        k = (r["impl"], r["phase"])
        vals.setdefault(k, []).append(v)
        if r["phase"] == "bytes_per_task" and isinstance(r.get("bytes_per_task_with_result"), (int, float)):
            vals.setdefault((r["impl"], "with_result"), []).append(float(r["bytes_per_task_with_result"]))
        ns.setdefault(k, set()).add(int(r.get("n", 0)))
        if r["phase"] in PHASES:
            runs.setdefault(r["impl"], set()).add(r.get("run"))
        if r["phase"] == "list":
            info = listinfo.setdefault(r["impl"], {"pages": set(), "partial": False, "pages_total": None})
            if "pages" in r:
                info["pages"].add(r["pages"])
            if r.get("partial"):
                info["partial"] = True
                info["pages_total"] = r.get("pages_total")

    med = {k: statistics.median(v) for k, v in vals.items()}

    def timing_n(impl: str) -> str:
        s = set().union(*(ns.get((impl, p), set()) for p in PHASES))
        return "/".join(str(x) for x in sorted(s)) if s else "?"

    n_of = {i: timing_n(i) for i in impls}
    same_n = len(set(n_of.values())) == 1

    floor, ours = find(impls, "rust-floor"), find(impls, "mcp-tasks")
    ts, py = find(impls, "ts"), find(impls, "py")
    ours_at_py = ours
    if py and f"mcp-tasks@{n_of[py]}" in all_impls:
        ours_at_py = f"mcp-tasks@{n_of[py]}"
    ratio_cols = [
        ("mcp-tasks / rust-floor", ours, floor),
        (f"{ts or 'ts'} / mcp-tasks", ts, ours),
        (f"{py or 'py'} / {ours_at_py or 'mcp-tasks'}", py, ours_at_py),
    ]

    def head(label: str) -> list[str]:
        cols = [label]
        for i in impls:
            cols.append(i if same_n else f"{i} (n={n_of[i]})")
        cols += [c[0] for c in ratio_cols]
        return ["| " + " | ".join(cols) + " |", "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|"]

    if same_n:
        out.append(f"n = {next(iter(n_of.values()))} tasks per run.")
    else:
        out.append("n differs between implementations (see column headers): "
                   "costs that grow with n are not comparable one to one.")
    out.append("Runs per implementation: " + ", ".join(f"{i} {len(runs.get(i, ()))}" for i in impls)
               + "; each cell is the median over runs.\n")

    out.append("## Time (ns per operation, median)\n")
    out.extend(head("phase"))
    for p in PHASES:
        label = p + (f" ({PHASE_UNIT[p]})" if p in PHASE_UNIT else "")
        cells = [label] + [fmt(med.get((i, p))) for i in impls]
        cells += [ratio(med.get((a, p)) if a else None, med.get((b, p)) if b else None)
                  for _, a, b in ratio_cols]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("Ratios: mcp-tasks / rust-floor is the overhead of ours over the floor (1.00× = at the floor, "
               "lower is better); the peer / mcp-tasks columns are how many times faster mcp-tasks is.")

    notes = []
    for i in impls:
        info = listinfo.get(i)
        if not info:
            continue
        pages = "/".join(str(x) for x in sorted(info["pages"]))
        if not pages and not info["partial"]:
            continue
        if info["partial"]:
            notes.append(f"- {i}: list phase **partial**: {pages} of {info['pages_total']} pages walked "
                         "(cost per page is O(n) in this store); ns per task listed is over the walked pages.")
        else:
            notes.append(f"- {i}: list walked all {pages} pages.")
    if notes:
        out.append("")
        out.append("List phase:")
        out.extend(notes)

    if any(p == "bytes_per_task" for _, p in med):
        out.append("")
        out.append("## Memory (bytes held per task, median)\n")
        mem_n = {i: "/".join(str(x) for x in sorted(ns.get((i, "bytes_per_task"), set()))) or DASH
                 for i in impls}
        cells = ["bytes/task"] + [fmt(med.get((i, "bytes_per_task"))) for i in impls]
        cells += [ratio(med.get((a, "bytes_per_task")) if a else None,
                        med.get((b, "bytes_per_task")) if b else None)
                  for _, a, b in ratio_cols]
        cols = ["", *impls, *(c[0] for c in ratio_cols)]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|")
        out.append("| " + " | ".join(cells) + " |")
        out.append("| " + " | ".join(["measured at n", *(mem_n[i] for i in impls), *[""] * len(ratio_cols)])
                   + " |")
        out.append("")
        out.append("Memory ratios: peer / mcp-tasks is how many times more memory the peer holds per task.")
        methods = {}
        for r in rows:
            if r["phase"] == "bytes_per_task":
                m = r.get("method") or ""
                with_result = vals.get((r["impl"], "with_result"))
                if with_result:
                    m += f"; with the result stored: {fmt(statistics.median(with_result))} bytes/task"
                if m:
                    methods[r["impl"]] = m
        for i in impls:
            if i in methods:
                out.append(f"- {i}: {methods[i]}")
    out.append("")
    out.extend(redis_section(all_rows, redis_rows, meta))
    out.extend(wake_section(wake_rows))
    return "\n".join(out) + "\n"


def is_redis(impl: str) -> bool:
    return impl == "mcp-tasks-redis" or impl.startswith("mcp-tasks-redis@")


def ops_per_s(ns: float | None) -> str:
    if ns is None or ns <= 0:
        return DASH
    return f"{1e9 / ns:,.0f}"


def redis_section(all_rows: list[dict], redis_rows: list[dict], meta: dict) -> list[str]:
    """RedisTaskStore against the in-memory registry at the same n, from the same run."""
    if not redis_rows:
        return []
    out: list[str] = []
    by_impl: dict[tuple[str, str], list[float]] = {}
    ns: dict[str, set[int]] = {}
    runs: dict[str, set] = {}
    methods: dict[str, str] = {}
    for r in all_rows:
        v = value(r)
        if v is None or r["phase"] == "wake_latency":
            continue
        by_impl.setdefault((r["impl"], r["phase"]), []).append(v)
        if r["phase"] in PHASES:
            ns.setdefault(r["impl"], set()).add(int(r.get("n", 0)))
            runs.setdefault(r["impl"], set()).add(r.get("run"))
        if r["phase"] == "bytes_per_task" and r.get("method"):
            methods[r["impl"]] = r["method"]
    med = {k: statistics.median(v) for k, v in by_impl.items()}
    for red in sorted({r["impl"] for r in redis_rows}):
        n_red = sorted(ns.get(red, set()))
        n = n_red[0] if len(n_red) == 1 else None
        base = next((b for b in (f"mcp-tasks@{n}", "mcp-tasks")
                     if n is not None and ns.get(b) == {n}), None)
        out.append(f"## Shared store: Redis (`{red}`)\n")
        out.append(
            f"`RedisTaskStore` on a private {meta.get('redis') or 'redis-server'} over a unix socket "
            "(no persistence), the same workload and the same code path (`TaskStore`) as the "
            f"in-memory registry; n = {'/'.join(map(str, n_red)) or '?'}, runs: {red} "
            f"{len(runs.get(red, ()))}" + (f", {base} {len(runs.get(base, ()))}" if base else "")
            + "; each cell is the median over runs. Every Redis operation is at least one round trip, "
            "so the absolute figures are mostly the server's and the socket's.\n")
        if base is None:
            out.append(f"(no in-memory registry rows at n = {n} in these results: no ratio)\n")
        b = base or "mcp-tasks"
        out.append(f"| phase | {b} ns/op | {red} ns/op | redis / in-memory | {b} ops/s | {red} ops/s |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for p in PHASES:
            label = p + (f" ({PHASE_UNIT[p]})" if p in PHASE_UNIT else "")
            a, r_ = (med.get((base, p)) if base else None), med.get((red, p))
            out.append(f"| {label} | {fmt(a)} | {fmt(r_)} | {ratio(r_, a)} | {ops_per_s(a)} | {ops_per_s(r_)} |")
        if (red, "bytes_per_task") in med:
            a = med.get((base, "bytes_per_task")) if base else None
            out.append(f"| bytes/task (memory, not time) | {fmt(a)} | {fmt(med[(red, 'bytes_per_task')])} | "
                       f"{ratio(med[(red, 'bytes_per_task')], a)} |  |  |")
        out.append("")
        out.append("ops/s = 10⁹ / (ns/op) for one client thread issuing calls back to back (update: single "
                   "status updates; list: tasks listed). The ratio is how many times slower the shared store is.")
        if red in methods:
            out.append(f"- {red} bytes/task: {methods[red]}; {b}: live heap of this process per task.")
        out.append("")
    return out


def wake_section(wake_rows: list[dict]) -> list[str]:
    if not wake_rows:
        return []
    latest: dict[str, dict] = {}
    for r in wake_rows:
        latest[r["impl"]] = r  # one line per impl; the last one wins
    impls = sorted(latest, key=lambda i: (is_redis(i), i))
    out = ["## Wake latency (µs)\n",
           "A thread blocked in `wait(owner, id)`; the task is completed by `store_result` from "
           "another thread, timed from just before that call to the waiter's return. "
           "In-memory: waiter and completer on one `TaskRegistry`. Redis: two `RedisTaskStore` "
           "instances on one server (instance A waits, instance B stores the result; A learns of "
           "it through its pub/sub subscription). The `store_result` column is how long the "
           "completing call itself took.\n",
           "| store | samples | median | p90 | p99 | min | max | store_result call (median) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def us(r: dict, k: str) -> str:
        v = r.get(k)
        return fmt(float(v)) if isinstance(v, (int, float)) else DASH

    for i in impls:
        r = latest[i]
        out.append(f"| {i} | {r.get('n', '?')} | {us(r, 'median_us')} | {us(r, 'p90_us')} | {us(r, 'p99_us')} "
                   f"| {us(r, 'min_us')} | {us(r, 'max_us')} | {us(r, 'store_result_median_us')} |")
    mem = next((latest[i] for i in impls if not is_redis(i)), None)
    red = next((latest[i] for i in impls if is_redis(i)), None)
    if mem and red:
        out.append("")
        out.append(f"Redis / in-memory: median {ratio(red.get('median_us'), mem.get('median_us'))}, "
                   f"p99 {ratio(red.get('p99_us'), mem.get('p99_us'))}.")
    out.append("")
    return out


def carry(prev: str, peers: list[str]) -> int:
    """Print the lines of `peers` (impl prefixes) from an earlier results file, marked."""
    rows, _ = load(prev)
    for r in rows:
        if any(r["impl"] == p or r["impl"].startswith(p + "-") for p in peers):
            print(json.dumps({**r, "carried": True}))
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--meta"]:
        print(json.dumps({"meta": machine_meta()}))
        return 0
    if len(argv) >= 3 and argv[0] == "--carry":
        return carry(argv[1], argv[2:])
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(report(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
