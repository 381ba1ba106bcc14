#!/usr/bin/env python3
"""Per-thread CPU and scheduler states of a process, sampled from /proc.

    python3 bench/wire/profile/threads.py SERVER_PID SECONDS [INTERVAL]

For each thread: its share of one core over the interval, and how often it was seen
running or runnable (R), sleeping (S) or in uninterruptible wait (D). A thread at ~100%
is a serial bottleneck; threads mostly R but below their share of the cores are waiting
for a CPU (another process, or more threads than cores); threads mostly S while the
clients wait point at a lock or a single thread elsewhere.
"""

import collections
import os
import sys
import time


def read(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[tid] = (name, fields[0], int(fields[11]) + int(fields[12]))
    return out


def main():
    pid, secs = int(sys.argv[1]), float(sys.argv[2])
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    hz = os.sysconf("SC_CLK_TCK")
    first, states, n = read(pid), collections.defaultdict(collections.Counter), 0
    end = time.time() + secs
    while time.time() < end:
        for tid, (_, state, _) in read(pid).items():
            states[tid][state] += 1
        n += 1
        time.sleep(interval)
    rows = []
    for tid, (name, _, cpu) in read(pid).items():
        before = first.get(tid, (name, "", cpu))[2]
        rows.append(((cpu - before) / hz / secs * 100, tid, name, dict(states[tid])))
    rows.sort(reverse=True)
    print(f"{len(rows)} threads, {sum(r[0] for r in rows):.0f}% of one core in all, {n} samples")
    for cpu, tid, name, seen in rows[:12]:
        print(f"  {tid:>7} {name:<16} {cpu:5.1f}%  {seen}")


if __name__ == "__main__":
    main()
