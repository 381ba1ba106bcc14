#!/usr/bin/env python3
"""The wire benchmark's report.

    python3 bench/wire/report.py bench/wire/results.jsonl > bench/wire/results.md
    python3 bench/wire/report.py --meta "COMMAND" [--baseline COMMIT]  # one {"meta": ...} line

Reads the JSON lines `wire_load` wrote (one per cell and run; the median over runs is
shown), and prints Markdown: the machine and versions, then one table per wire, each row a
(clients, task length, implementation), with the ratios of this project's servers to the
best peer of that wire at the same clients and task length; then, when the run has the
reference server or a baseline `mcp_http`, `mcp_http` side by side with them: its
tasks/s over the baseline's, and its CPU per task over the reference's.
"""

import json
import os
import platform
import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The peers of each wire (everything else is this project's).
PEERS = {"TS SDK 1.32.2", "rmcp 3.11 own TaskManager"}
# The floor of the stack (bench/wire/src/bin/reference_server.rs): neither ours nor a peer.
REFERENCE = "reference"
OURS = "mcp_http"
BASELINE = "mcp_http@baseline"
ORDER = [
    "mcp_http",
    "mcp_http@baseline",
    "reference",
    "mcp_http (listen)",
    "rmcp_http (mcp-tasks-rmcp)",
    "TS SDK 1.32.2",
    "rmcp 3.11 own TaskManager",
]
FIELDS = [
    "tasks_per_s", "get_p50_ms", "get_p99_ms", "task_p50_ms", "task_p99_ms",
    "call_p50_ms", "call_p99_ms", "cpu_s_per_1k_tasks", "peak_rss_mib",
    "rss_mib_per_1k_created", "threads_end", "requests_per_task", "errors", "tasks",
    "others_pct", "server_cpu_s", "load_cpu_s",
]


def run(*cmd, cwd=ROOT):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def meta(command, baseline=""):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    ram = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(next(l for l in f if l.startswith("MemTotal")).split()[1])
            ram = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    sdk = ""
    try:
        with open(os.path.join(HERE, "ts/node_modules/@modelcontextprotocol/sdk/package.json")) as f:
            sdk = json.load(f)["version"]
    except (OSError, KeyError, ValueError):
        pass
    rmcp = ""
    try:
        with open(os.path.join(ROOT, "Cargo.lock")) as f:
            m = re.search(r'name = "rmcp"\nversion = "(3\.[^"]+)"', f.read())
            rmcp = m.group(1) if m else ""
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram": ram,
        "kernel": platform.release(),
        "rustc": run("rustc", "--version"),
        "node": run("node", "--version"),
        "ts_sdk": sdk,
        "rmcp": rmcp,
        "commit": run("git", "rev-parse", "--short", "HEAD"),
        "dirty": bool(run("git", "status", "--porcelain", "--untracked-files=no")),
        "baseline": baseline[:10] if baseline else "",
    }


def fmt(value, places=1):
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{places}f}"
    return f"{value:,}"


def ratio(ours, theirs, places=2):
    if ours is None or theirs in (None, 0):
        return "–"
    return f"{ours / theirs:.{places}f}×"


def median(lines, field):
    values = [l.get(field) for l in lines if l.get(field) is not None]
    if not values:
        return None
    m = statistics.median(values)
    return max(values) if field == "errors" else m


def report(path):
    metas, cells = [], {}
    with open(path) as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            line = json.loads(raw)
            if "meta" in line:
                metas.append(line["meta"])
                continue
            key = (line["wire"], line["clients"], line["ms"], line["impl"])
            cells.setdefault(key, []).append(line)
    out = ["# On-the-wire peer comparison", ""]
    if metas:
        m = metas[-1]
        out += [
            f"Run {m.get('date', '')} on {m.get('nproc')} CPUs ({m.get('cpu', '')}), "
            f"{m.get('ram', '')} RAM, Linux {m.get('kernel', '')}; {m.get('rustc', '')}, "
            f"node {m.get('node', '')}; TypeScript SDK {m.get('ts_sdk', '')}, rmcp {m.get('rmcp', '')}; "
            f"commit {m.get('commit', '')}{' (with local changes)' if m.get('dirty') else ''}"
            + (f"; `mcp_http@baseline` is commit {m['baseline']}" if m.get("baseline") else "")
            + ".",
            "",
            f"Command: `{m.get('command', '')}`",
            "",
        ]
    first = next(iter(cells.values()), [{}])[0]
    runs = max((len(v) for v in cells.values()), default=0)
    out += [
        f"Each cell: a fresh server process, {first.get('warmup_s', '?')} s warm-up, then "
        f"{first.get('duration_s', '?')} s measured; clients poll `tasks/get` every "
        f"{first.get('poll_ms', '?')} ms. {runs} run(s) per cell, median shown. "
        "The load generator runs on the same machine as the server.",
        "",
        "Columns: tasks completed per second; `tasks/get` p50/p99 and whole task (call → "
        "result in hand) p50/p99 in ms; server CPU seconds (user + system) per 1,000 tasks "
        "completed; the server's and the load generator's CPU seconds in the window; peak RSS "
        "(VmHWM) MiB; RSS growth MiB per 1,000 tasks created; server "
        "threads at the end; HTTP requests per task; errors; the share of the machine's CPU "
        "taken by other processes in the window (another tenant's work: a noisy cell). "
        "`reference` is the floor of the stack (`src/bin/reference_server.rs`), neither ours "
        "nor a peer. Ratios: ours ÷ the best peer "
        "of the wire at the same clients and task length (throughput: higher is better; "
        "p99, CPU and memory: lower is better).",
        "",
    ]
    for wire in ("2025-11-25", "2026-07-28"):
        keys = sorted(
            {k[1:3] for k in cells if k[0] == wire},
        )
        if not keys:
            continue
        out += [f"## {wire}", ""]
        out += [
            "| clients | ms | server | tasks/s | get p50 | get p99 | task p50 | task p99 | "
            "CPU s/1k | CPU s | load CPU s | peak RSS | RSS/1k created | threads | req/task | "
            "errors | others % | × tasks/s | × get p99 | × CPU | × RSS/1k |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for clients, ms in keys:
            impls = [i for (w, c, t, i) in cells if (w, c, t) == (wire, clients, ms)]
            impls.sort(key=lambda i: (ORDER.index(i) if i in ORDER else len(ORDER), i))
            med = {i: {f: median(cells[(wire, clients, ms, i)], f) for f in FIELDS} for i in impls}
            peers = [i for i in impls if i in PEERS]
            best = max(peers, key=lambda i: med[i]["tasks_per_s"] or 0) if peers else None
            for i in impls:
                d = med[i]
                mine = i not in PEERS and i != REFERENCE and best is not None
                b = med[best] if best else {}
                errors = d["errors"] or 0
                name = i + (" **FAILED**" if errors else "")
                out.append(
                    "| " + " | ".join([
                        fmt(clients), fmt(ms), name, fmt(d["tasks_per_s"]),
                        fmt(d["get_p50_ms"]), fmt(d["get_p99_ms"]),
                        fmt(d["task_p50_ms"]), fmt(d["task_p99_ms"]),
                        fmt(d["cpu_s_per_1k_tasks"], 3), fmt(d["server_cpu_s"], 2),
                        fmt(d["load_cpu_s"], 2), fmt(d["peak_rss_mib"]),
                        fmt(d["rss_mib_per_1k_created"], 2), fmt(d["threads_end"], 0),
                        fmt(d["requests_per_task"], 2), fmt(errors), fmt(d["others_pct"]),
                        ratio(d["tasks_per_s"], b.get("tasks_per_s")) if mine else "",
                        ratio(d["get_p99_ms"], b.get("get_p99_ms")) if mine else "",
                        ratio(d["cpu_s_per_1k_tasks"], b.get("cpu_s_per_1k_tasks")) if mine else "",
                        ratio(d["rss_mib_per_1k_created"], b.get("rss_mib_per_1k_created")) if mine else "",
                    ]) + " |"
                )
        out.append("")
        if wire == "2026-07-28":
            out += [
                "On 2026-07-28 the terminal `tasks/get` carries the result (`tasks/result` is "
                "gone). `mcp_http (listen)`: per task, a `subscriptions/listen` stream on its own "
                "connection, one `tasks/get` after the acknowledgement, then the terminal "
                "`notifications/tasks`; its get columns are that one read.",
                "",
            ]
    out += side_by_side(cells)
    failed = [k for k, v in cells.items() if median(v, "errors")]
    if failed:
        out += ["**Failed cells** (any error makes a cell invalid):", ""]
        for k in failed:
            samples = cells[k][-1].get("error_samples") or []
            out.append(f"- {k[3]}, {k[0]}, {k[1]} clients, ms={k[2]}: {samples[:2]}")
        out.append("")
    return "\n".join(out)


def side_by_side(cells):
    """`mcp_http` beside the baseline and the reference in every cell that has them."""
    keys = sorted({(w, c, t) for (w, c, t, i) in cells if i == OURS})
    has = lambda impl: any(i == impl for (_, _, _, i) in cells)
    if not keys or not (has(BASELINE) or has(REFERENCE)):
        return []
    out = [
        "## Side by side: mcp_http, its baseline and the reference",
        "",
        "Per cell, the median of each: tasks/s, `tasks/get` p99 (ms) and server CPU seconds "
        "per 1,000 tasks for today's `mcp_http` (ours), `mcp_http@baseline` (base) and the "
        "reference server (ref); **× base** is ours ÷ base tasks/s (the target is ≥ 0.95×), "
        "**× ref CPU** is ours ÷ ref CPU per task (the target is ≤ 1.5×). A cell with errors "
        "is marked FAILED.",
        "",
        "| wire | clients | ms | tasks/s ours | base | ref | × base | get p99 ours | base | ref "
        "| CPU s/1k ours | base | ref | × ref CPU | base × ref CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for wire, clients, ms in keys:
        def get(impl, field):
            lines = cells.get((wire, clients, ms, impl))
            return median(lines, field) if lines else None

        def cell(impl, field, places=1):
            value = get(impl, field)
            failed = (get(impl, "errors") or 0) > 0
            return fmt(value, places) + (" FAILED" if failed and value is not None else "")

        out.append(
            "| " + " | ".join([
                wire, fmt(clients), fmt(ms),
                cell(OURS, "tasks_per_s"), cell(BASELINE, "tasks_per_s"),
                cell(REFERENCE, "tasks_per_s"),
                ratio(get(OURS, "tasks_per_s"), get(BASELINE, "tasks_per_s")),
                cell(OURS, "get_p99_ms"), cell(BASELINE, "get_p99_ms"),
                cell(REFERENCE, "get_p99_ms"),
                cell(OURS, "cpu_s_per_1k_tasks", 3), cell(BASELINE, "cpu_s_per_1k_tasks", 3),
                cell(REFERENCE, "cpu_s_per_1k_tasks", 3),
                ratio(get(OURS, "cpu_s_per_1k_tasks"), get(REFERENCE, "cpu_s_per_1k_tasks")),
                ratio(get(BASELINE, "cpu_s_per_1k_tasks"), get(REFERENCE, "cpu_s_per_1k_tasks")),
            ]) + " |"
        )
    out.append("")
    return out


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--meta":
        args = sys.argv[2:]
        baseline = ""
        if "--baseline" in args:
            at = args.index("--baseline")
            baseline = args[at + 1] if at + 1 < len(args) else ""
            del args[at:at + 2]
        print(json.dumps({"meta": meta(args[0] if args else "", baseline)}))
        return
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results.jsonl")
    print(report(path))


if __name__ == "__main__":
    main()
