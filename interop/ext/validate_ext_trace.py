#!/usr/bin/env python3
"""Validate the messages the stdio server wrote for the tasks extension against its schema.

Usage: python validate_ext_trace.py [--schema PATH] TRACE [TRACE ...]

A trace is the file named by MCP_TASKS_TRACE: one JSON object per line,
{"dir": "in" | "out", "msg": <JSON-RPC message>}, where "in" is what the server read and
"out" what it wrote. Request ids must be unique within one trace file.

Each "out" message is classified by the request it answers (paired by id with the "in"
request). A request speaks the extension (2026-07-28) when it is `server/discover` or its
`_meta["io.modelcontextprotocol/protocolVersion"]` is 2026-07-28 or later; anything else
is 2025-11-25 and is skipped here (interop/validate_trace.py covers that generation).
Against the `$defs` of the extension's schema (ext-tasks-schema.json, Draft 2020-12):
  * tasks/get -> GetTaskResult, tasks/update -> UpdateTaskResult,
    tasks/cancel -> CancelTaskResult, tools/call answered with resultType "task" ->
    CreateTaskResult;
  * an error response's `error` -> Error (the schema has no JSON-RPC response types);
  * notifications/tasks -> TaskStatusNotification.
Results the extension's schema does not define (server/discover, tools/list, ping,
tools/call answered at once) are skipped with a count, as are 2025-11-25 messages.
Besides the schema, the checks the schema cannot express (protocol_checks()):
every 2026-07-28 result carries `resultType`, "task" only on a tools/call that declared
the extension, "complete" otherwise (an inlined `result` of a completed task as well,
being the original request's 2026-07-28 CallToolResult); a tasks/get answer is for the
requested task with exactly the payload of its status; no 2025-11-25 keys on extension
tasks; non-negative integer ttlMs/pollIntervalMs; tasks/update and tasks/cancel answers
are the bare acknowledgement.

The schema defaults to $REPO/schema/ext-tasks-schema.json, $REPO being two levels
above this file. Prints "N passed, N failed" (one per validated message); exits 1 if any
message is invalid or none was validated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

HERE = Path(__file__).resolve().parent
DEFAULT_SCHEMA = HERE.parent.parent / "schema" / "ext-tasks-schema.json"
PROTOCOL_VERSION = "2026-07-28"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
EXTENSION_ID = "io.modelcontextprotocol/tasks"
LEGACY_TASK_KEYS = ("ttl", "pollInterval", "task", "requestState")
PAYLOAD = {"input_required": "inputRequests", "completed": "result", "failed": "error"}

RESULT_DEFS = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}
NOTIFICATION_DEFS = {"notifications/tasks": "TaskStatusNotification"}


class Schema:
    def __init__(self, path: Path) -> None:
        self.root = json.loads(path.read_text())
        self.path = path
        self._validators: dict[str, Draft202012Validator] = {}

    def errors(self, name: str, instance: Any) -> list[str]:
        if name not in self.root["$defs"]:
            raise KeyError(f"{self.path.name} has no $defs/{name}")
        validator = self._validators.get(name)
        if validator is None:
            wrapper = {
                "$schema": self.root.get("$schema"),
                "$defs": self.root["$defs"],
                "$ref": f"#/$defs/{name}",
            }
            Draft202012Validator.check_schema(wrapper)
            validator = Draft202012Validator(wrapper)
            self._validators[name] = validator
        found = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        out = []
        for error in found:
            # For an anyOf (GetTaskResult's five statuses) name the deepest problem: the
            # branch of the task's own status gets furthest before it fails.
            while error.context:
                error = max(error.context, key=lambda e: len(e.absolute_path))
            out.append(f"at /{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}")
        return out


def speaks_extension(method: str | None, params: Any) -> bool:
    if method == "server/discover":
        return True
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return isinstance(version, str) and version >= PROTOCOL_VERSION


def declares_extension(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    caps = meta.get(META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION_ID), dict)


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def task_checks(task: dict, what: str) -> list[str]:
    out = []
    if "ttlMs" not in task:
        out.append(f"{what}: ttlMs missing (required, null for unlimited)")
    for key in ("ttlMs", "pollIntervalMs"):
        value = task.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            out.append(f"{what}: {key} {value!r} is not a non-negative integer")
    for key in LEGACY_TASK_KEYS:
        if key in task:
            out.append(f"{what}: 2025-11-25 key {key!r} on an extension task")
    return out


def protocol_checks(method: str, params: Any, result: Any) -> list[str]:
    """What the extension requires of a 2026-07-28 result beyond its JSON schema."""
    if not isinstance(result, dict):
        return [f"{method}: result is not an object"]
    out: list[str] = []
    params = params if isinstance(params, dict) else {}
    result_type = result.get("resultType")
    if result_type is None:
        out.append(f"{method}: 2026-07-28 result without resultType")
    elif result_type == "task":
        if method != "tools/call":
            out.append(f"{method}: resultType 'task' on a result other than tools/call")
        elif not declares_extension(params):
            out.append("tools/call: CreateTaskResult for a request that did not declare the extension")
        else:
            out += task_checks(result, "CreateTaskResult")
            for key in ("result", "error", "inputRequests"):
                if key in result:
                    out.append(f"CreateTaskResult carries {key!r}")
    elif method in RESULT_DEFS and result_type != "complete":
        out.append(f"{method}: resultType {result_type!r}, MUST be 'complete'")
    if method == "tasks/get":
        if result.get("taskId") != params.get("taskId"):
            out.append(f"tasks/get: taskId {result.get('taskId')!r} != requested {params.get('taskId')!r}")
        out += task_checks(result, "tasks/get")
        status = result.get("status")
        for state, key in PAYLOAD.items():
            if (key in result) != (status == state):
                out.append(f"tasks/get: status {status!r} with{'' if key in result else 'out'} {key!r}")
        inlined = result.get("result")
        if status == "completed" and isinstance(inlined, dict) and inlined.get("resultType") != "complete":
            out.append(
                "tasks/get: the inlined result (the original tools/call's 2026-07-28 CallToolResult) "
                f"has resultType {inlined.get('resultType')!r}, expected 'complete' "
                "(@modelcontextprotocol/ext-tasks 0.2.2 rejects it otherwise)"
            )
    elif method in ("tasks/update", "tasks/cancel"):
        extra = sorted(set(result) - {"resultType", "_meta"})
        if extra:
            out.append(f"{method}: the acknowledgement carries {extra}")
    return out


class TraceChecker:
    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.passed = 0
        self.failed = 0
        self.schema_failed = 0
        self.validated: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()

    def check_file(self, path: Path) -> int:
        requests_in: dict[str, dict] = {}
        count = 0
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as err:
                self.fail(f"{path.name}:{lineno}", f"trace line is not JSON: {err}")
                continue
            msg = entry.get("msg")
            if entry.get("dir") == "in":
                if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                    requests_in[_key(msg["id"])] = msg
                continue
            if entry.get("dir") != "out":
                self.fail(f"{path.name}:{lineno}", f"unknown dir {entry.get('dir')!r}")
                continue
            count += 1
            self.check_message(f"{path.name}:{lineno}", msg, requests_in)
        return count

    def fail(self, where: str, why: str) -> None:
        self.failed += 1
        print(f"INVALID {where}: {why}")

    def skip(self, why: str) -> None:
        self.skipped[why] += 1

    def check_message(self, where: str, msg: Any, requests_in: dict[str, dict]) -> None:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self.fail(where, f"not a JSON-RPC 2.0 object: {json.dumps(msg)[:200]}")
            return
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg:
                self.skip(f"server request {method} (2025-11-25 only)")
                return
            name = NOTIFICATION_DEFS.get(method)
            if name is None:
                self.skip(f"notification {method} (not an extension message)")
                return
            self.validate(where, name, msg, [])
            return
        if "id" not in msg:
            self.fail(where, "neither request, notification nor response")
            return
        request = requests_in.get(_key(msg["id"]))
        if request is None:
            if "error" in msg and msg.get("id") is None:
                self.skip("error answering no identifiable request")
            else:
                self.fail(where, f"response to id {msg['id']!r}, which the server never read")
            return
        req_method = request["method"]
        params = request.get("params")
        if not speaks_extension(req_method, params):
            self.skip(f"2025-11-25 {req_method} {'error' if 'error' in msg else 'result'}")
            return
        if ("result" in msg) == ("error" in msg):
            self.fail(where, f"{req_method}: a response needs exactly one of result and error")
            return
        if "error" in msg:
            self.validate(where, "Error", msg["error"], [], f"{req_method} error")
            return
        result = msg["result"]
        extra = protocol_checks(req_method, params, result)
        if req_method in RESULT_DEFS:
            name = RESULT_DEFS[req_method]
        elif req_method == "tools/call" and isinstance(result, dict) and result.get("resultType") == "task":
            name = "CreateTaskResult"
        else:
            if extra:
                self.fail(where, f"{req_method}: beyond the schema: {'; '.join(extra)}")
            else:
                self.skip(f"2026-07-28 {req_method} result (no type in the extension schema)")
            return
        self.validate(where, name, result, extra, f"{req_method} -> {name}")

    def validate(self, where: str, name: str, instance: Any, extra: list[str], label: str | None = None) -> None:
        schema_problems = self.schema.errors(name, instance)
        problems = [f"schema {p}" for p in schema_problems] + [f"beyond the schema: {e}" for e in extra]
        label = label or name
        if schema_problems:
            self.schema_failed += 1
        if problems:
            self.fail(where, f"{label}: {'; '.join(problems)}")
        else:
            self.passed += 1
            self.validated[label] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    ap.add_argument("traces", type=Path, nargs="+")
    args = ap.parse_args()

    schema = Schema(args.schema)
    checker = TraceChecker(schema)
    total = 0
    for path in args.traces:
        if not path.exists():
            checker.fail(str(path), "trace file does not exist")
            continue
        n = checker.check_file(path)
        print(f"{path}: {n} server messages")
        total += n
    print(f"schema {args.schema.name}; validated by type:")
    for label, count in sorted(checker.validated.items()):
        print(f"  {count:5d}  {label}")
    print(f"skipped ({sum(checker.skipped.values())}):")
    for why, count in sorted(checker.skipped.items()):
        print(f"  {count:5d}  {why}")
    print(
        f"of {checker.passed + checker.failed} messages checked, {checker.schema_failed} fail the schema "
        f"and {checker.failed - checker.schema_failed} only the checks beyond it"
    )
    if checker.passed + checker.failed == 0:
        checker.fail("traces", "no server message was validated")
    print(f"{checker.passed} passed, {checker.failed} failed")
    return 0 if checker.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
