#!/usr/bin/env python3
"""Shares of a `perf record -g` profile of mcp_http by thread and by cost.

    perf record -e cpu-clock -F 999 -g -p SERVER_PID -o mcp.data -- sleep 8
    python3 bench/wire/profile/categories.py mcp.data

Inclusive: the share of samples with the pattern anywhere in the stack (a sample may count
in several rows); leaf: the share whose sampled frame matches. The function names are
those of d44b3ed (servers/ and http/ before their restructuring): adapt the patterns to
the new names. Symbols need a build with frame pointers, e.g.
`RUSTFLAGS="-C force-frame-pointers=yes" CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`.
"""

import collections
import re
import subprocess
import sys

INCLUSIVE = [
    ("token scan (access::Access::authenticate)", r"access..Access..authenticate|Tokens..principal"),
    ("futures-timer (its thread, Delay::new and drop)", r"futures_timer"),
    ("store wait alarms (mcp-tasks-timer, Alarm)", r"store..wait..(Timer|Alarm)"),
    ("untyped serde_json::Value (parse, build, print, drop)",
     r"serde_json..value|serde_json..map|ValueVisitor|drop_in_place<serde_json|Value as core..fmt..Display"),
    ("framing::parse", r"framing..parse"),
    ("framing::response", r"framing..response"),
    ("Catalog::input_schema and list (2026 tools/call)", r"Catalog..input_schema|Catalog..list"),
    ("store create (registry insert)", r"TaskStore..create|store_new"),
    ("store get (registry)", r"TaskRegistry as mcp_tasks..store..TaskStore>..get"),
    ("dispatch (tasks/get, tasks/result)", r"ExtDispatcher<T>..dispatch|protocol..dispatch..Dispatcher<T>..dispatch"),
    ("task work (the sleep handler's future)", r"Work..then|task_work"),
    ("Tasks::watch and on_change", r"tasks..Tasks..watch|on_change|Tasks..finished"),
    ("Slots take and drop", r"limits..Slots..take|limits..Slot"),
    ("hyper h1 parse and encode", r"h1..role..Server as hyper..proto..h1..Http1Transaction>..(parse|encode)"),
    ("format!", r"alloc..fmt..format"),
    ("system calls", r"entry_SYSCALL_64"),
]
LEAF = [
    ("malloc and free (glibc)",
     r"^(sysmalloc|_int_malloc|_int_free|malloc|cfree|free|realloc|_int_realloc|unlink_chunk|malloc_consolidate|calloc)$"),
    ("memcpy, memmove, memcmp", r"^__mem(move|cpy|cmp|set)"),
    ("kernel", r"^\[k\]"),
]


def samples(path):
    out = subprocess.run(
        ["perf", "script", "-i", path, "-F", "comm,tid,ip,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    current = None
    for line in out.splitlines():
        if not line.strip():
            if current:
                yield current
            current = None
        elif not line[0].isspace():
            if current:
                yield current
            current = {"comm": line.rsplit(None, 1)[0], "stack": []}
        elif current is not None:
            ip, _, sym = line.strip().partition(" ")
            current["stack"].append(("[k] " if ip.startswith("ffffffff") else "") + sym)
    if current:
        yield current


def main():
    every = list(samples(sys.argv[1]))
    n = len(every) or 1
    print(f"{len(every)} samples")
    for comm, k in collections.Counter(s["comm"] for s in every).most_common(6):
        print(f"  thread {comm:<20} {100 * k / n:5.1f}%")
    print("inclusive:")
    for name, pattern in INCLUSIVE:
        r = re.compile(pattern)
        k = sum(1 for s in every if any(r.search(f) for f in s["stack"]))
        print(f"  {100 * k / n:5.1f}%  {name}")
    print("leaf:")
    for name, pattern in LEAF:
        r = re.compile(pattern)
        k = sum(1 for s in every if s["stack"] and r.search(s["stack"][0]))
        print(f"  {100 * k / n:5.1f}%  {name}")


if __name__ == "__main__":
    main()
