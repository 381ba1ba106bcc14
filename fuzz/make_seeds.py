#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the fuzz targets into fuzz/seeds/<target>/.

Run from anywhere: python3 fuzz/make_seeds.py. The files are committed; this script only
documents how they were made (and remakes them after a format change).
"""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ID = "786512e2-9e0d-44bd-8f29-789f320fe840"

def task(status, **extra):
    t = {"taskId": ID, "status": status, "createdAt": "2025-11-25T10:30:00Z",
         "lastUpdatedAt": "2025-11-25T10:40:00Z", "ttl": 60000}
    t.update(extra)
    return t

def write(target, seeds):
    out = os.path.join(HERE, "seeds", target)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for i, seed in enumerate(seeds):
        data = seed if isinstance(seed, bytes) else json.dumps(seed, separators=(",", ":")).encode()
        with open(os.path.join(out, f"seed-{i:03}"), "wb") as f:
            f.write(data)

tasks = [task(s) for s in ["working", "input_required", "completed", "failed", "cancelled"]] + [
    task("working", statusMessage="half way", pollInterval=500),
    task("failed", statusMessage="tool exploded", ttl=None),
    task("completed", ttl=60000.0, pollInterval=1e3),
    task("working", ttl=18446744073709551614),
    task("working", taskId="task-1"),
    task("working", taskId=""),
    task("working", taskId=ID.upper()),
    task("working", createdAt="2025-11-25T12:30:00+02:00", lastUpdatedAt="2025-11-25T10:30:00.123456789Z"),
    task("working", createdAt="1677-09-21T00:12:43.145224192Z", lastUpdatedAt="2262-04-11T23:47:16.854775807Z"),
    task("working", createdAt="2016-12-31T23:59:60Z"),
    task("working", extra={"nested": [1, {"a": None}]}, _meta={"k": "v"}),
    task("working", ttl=-1),
    task("working", ttl=1.5),
    task("working", ttl=1e30),
    task("done"),
]
write("any_task", tasks)

messages = tasks[:6] + [
    {"ttl": 60000}, {}, {"ttl": None}, {"ttl": 6e4},
    {"task": task("working")},
    {"task": task("working"), "_meta": {"io.modelcontextprotocol/model-immediate-response": "working on it"}},
    {"taskId": ID}, {"taskId": ID, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": ID}}},
    {"cursor": "00000000000000010123456789abcdef"}, {"_meta": {}},
    {"tasks": [task("working"), task("completed")], "nextCursor": "abc"}, {"tasks": []},
    {"content": [{"type": "text", "text": "done"}], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": ID}}},
    {"content": [], "isError": True, "_meta": 5},
    {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("failed", statusMessage="x")},
    {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
    {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {"x": 1}}}},
    {"taskSupport": "optional"}, {"taskSupport": "required"}, {}, "forbidden",
    {"code": -32602, "message": "task not found", "data": {"taskId": ID, "status": "cancelled"}},
    {"code": -32000, "message": "x"},
    {"method": "elicitation/create", "params": {"message": "ok?"}},
    {"ask": {"method": "sampling/createMessage"}},
    1, "1", ID, "working", "input_required", "2025-11-25T10:30:00Z",
]
write("messages", messages)

def d(selector, options, blob):
    if not isinstance(blob, bytes):
        blob = json.dumps(blob, separators=(",", ":")).encode()
    return bytes([selector, options]) + blob

dispatch = []
for owner in range(4):
    for i in range(10):
        dispatch.append(d((i + owner) % 4, owner, {"taskId": f"${i}"}))
dispatch += [
    d(0, 0, {"taskId": "$n"}), d(0, 0, {"taskId": "$U"}), d(0, 0, {"taskId": "$L"}),
    d(0, 1, {"taskId": "$a"}), d(0, 3, {"taskId": "$b"}), d(0, 0, {"taskId": 5}),
    d(0, 0, {"taskId": None}), d(0, 0, [ "$0" ]), d(0, 0, "$0"), d(0, 0, {}),
    d(0, 0, {"taskId": "$0", "task": {"ttl": 5}, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "$1"}}}),
    d(3, 0x80, {"taskId": "$0"}), d(3, 0x80, {"taskId": "$1"}),
]
for size in range(8):
    dispatch += [d(1, size << 2, {}), d(1, size << 2, {"cursor": "$c0"}), d(7, (size << 2) | (1 << 5), b"")]
dispatch += [
    d(1, 0, {"cursor": "$c1"}), d(1, 0, {"cursor": "$c2"}), d(1, 1, {"cursor": "$c2"}),
    d(1, 0, {"cursor": ""}), d(1, 0, {"cursor": 5}), d(1, 0, {"cursor": None}), d(1, 0, {"cursor": "$L"}),
    d(1, 0, {"cursor": "00000000000000010123456789abcdef"}), d(1, 0, None),
    d(4, 0, b"tasks/get\n" + json.dumps({"taskId": "$0"}).encode()),
    d(4, 0, b"tasks/list\n"), d(4, 0, b"tools/call\n{}"), d(4, 0, b"\xff\xfe\n{}"),
]
for i in range(8):
    dispatch.append(d(6, i << 5, {"taskId": "$0"}))
for support in range(3):
    for declared in (0, 0x20):
        for owner in (0, 1):
            o = owner | (support << 2) | declared
            dispatch += [
                d(5, o, {"name": "sleep", "arguments": {"ms": 10}, "task": {"ttl": 60000}}),
                d(5, o, {"name": "sleep", "task": {}}),
                d(5, o, {"name": "sleep"}),
            ]
for ttl in [None, 0, 1, -1, 1.5, 60000.0, 1e30, 18446744073709551615, 18446744073709551616, 18446744073709551614, "5", [], {}]:
    dispatch.append(d(5, 0x20 | (1 << 2) | 1, {"name": "x", "task": {"ttl": ttl}}))
dispatch += [d(5, 0x24, {"name": "x", "task": 5}), d(5, 0x24, {"name": "x", "task": None}), d(5, 0x24, {"task": []})]
# The tasks extension's dispatcher (selector bit 3; options bit 6 declares the extension).
declare = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
for i in range(10):
    for method in range(3):
        dispatch.append(d(8 | method, (i % 4) | 0x40, {"taskId": f"${i}", "inputResponses": {"ask": {"action": "accept"}}}))
dispatch += [
    d(8, 0, {"taskId": "$0"}), d(8, 0, {"taskId": "$0", "_meta": declare}),
    d(9, 0x40, {"taskId": "$1", "inputResponses": {"ask": {"action": "accept", "content": {"answer": "y"}}, "other": 5}}),
    d(9, 0x40, {"taskId": "$1"}), d(9, 0x40, {"taskId": "$1", "inputResponses": []}),
    d(10, 0x40, {"taskId": "$5"}), d(11, 0x40, {}), d(15, 0x40, b""), d(15, 0x60, b""), d(15, 0x80, b""),
    d(12, 0x40, b"tasks/update\n" + json.dumps({"taskId": "$1", "inputResponses": {"ask": {}}}).encode()),
]
write("dispatch", dispatch)
print({t: len(os.listdir(os.path.join(HERE, "seeds", t))) for t in ["any_task", "messages", "dispatch"]})
