#!/usr/bin/env python3
"""Validate the messages the stdio server wrote for the tasks extension against its schema.

Usage: python validate_ext_trace.py [--schema PATH] [--core-schema PATH] TRACE [TRACE ...]

A trace is the file named by MCP_TASKS_TRACE: one JSON object per line,
{"dir": "in" | "out", "msg": <JSON-RPC message>}, where "in" is what the server read and
"out" what it wrote. Request ids must be unique within one trace file.

Each "out" message is classified by the request it answers (paired by id with the "in"
request). A request speaks the extension (2026-07-28) when it is `server/discover` or its
`_meta["io.modelcontextprotocol/protocolVersion"]` is 2026-07-28 or later; anything else
is 2025-11-25 and is skipped here (interop/validate_trace.py covers that generation).

Every 2026-07-28 response is validated, as a whole JSON-RPC message, against the `$defs`
of the 2026-07-28 core schema (mcp-schema-2026-07-28.json, Draft 2020-12):
  * server/discover -> DiscoverResultResponse, tools/list -> ListToolsResultResponse,
    tools/call answered at once -> CallToolResultResponse, ping -> JSONRPCResultResponse
    with an EmptyResult, every other result (tasks/*, CreateTaskResult) ->
    JSONRPCResultResponse;
  * an error -> JSONRPCErrorResponse (MissingRequiredClientCapabilityError for -32021),
    and its `error` against the code's own type (ParseError, InvalidRequestError,
    MethodNotFoundError, InvalidParamsError, InternalError);
  * an error that answers no identifiable request (no `id`, as the servers send it when
    the id cannot be read) -> JSONRPCErrorResponse, whatever the generation.
Task results are also validated against the `$defs` of the extension's schema
(ext-tasks-schema.json):
  * tasks/get -> GetTaskResult, tasks/update -> UpdateTaskResult,
    tasks/cancel -> CancelTaskResult, tools/call answered with resultType "task" ->
    CreateTaskResult;
  * an error response's `error` -> Error;
  * notifications/tasks -> TaskStatusNotification.
Besides the schemas, the checks they cannot express (protocol_checks()):
every 2026-07-28 result carries `resultType`, "task" only on a tools/call that declared
the extension, "complete" otherwise (an inlined `result` of a completed task as well,
being the original request's 2026-07-28 CallToolResult); a tasks/get answer is for the
requested task with exactly the payload of its status; no 2025-11-25 keys on extension
tasks; non-negative integer ttlMs/pollIntervalMs; tasks/update and tasks/cancel answers
are the bare acknowledgement.

The schemas default to $REPO/schema/ext-tasks-schema.json and
$REPO/schema/mcp-schema-2026-07-28.json, $REPO being two levels above this file. Prints
"N passed, N failed" (one per validated message); exits 1 if any message is invalid or
none was validated.
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
DEFAULT_CORE_SCHEMA = HERE.parent.parent / "schema" / "mcp-schema-2026-07-28.json"
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

# 2026-07-28 core: the response type of each method's result (others: JSONRPCResultResponse).
CORE_RESPONSE_DEFS = {
    "server/discover": "DiscoverResultResponse",
    "tools/list": "ListToolsResultResponse",
}
# 2026-07-28 core: the error type of each code.
CORE_ERROR_DEFS = {
    -32700: "ParseError",
    -32600: "InvalidRequestError",
    -32601: "MethodNotFoundError",
    -32602: "InvalidParamsError",
    -32603: "InternalError",
}
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021


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
    def __init__(self, schema: Schema, core: Schema) -> None:
        self.schema = schema
        self.core = core
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
            if "error" in msg and "result" not in msg:
                # An error answering no identifiable request: no `id` member, the same
                # shape in both generations.
                self.validate_all(where, "error without id -> JSONRPCErrorResponse", self.core_error_checks(msg), [])
            else:
                self.fail(where, "neither request, notification nor response")
            return
        request = requests_in.get(_key(msg["id"]))
        if request is None:
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
            checks = self.core_error_checks(msg) + [(self.schema, "Error", msg["error"])]
            self.validate_all(where, f"{req_method} error", checks, [])
            return
        result = msg["result"]
        extra = protocol_checks(req_method, params, result)
        is_task = req_method == "tools/call" and isinstance(result, dict) and result.get("resultType") == "task"
        if req_method in CORE_RESPONSE_DEFS:
            core_def = CORE_RESPONSE_DEFS[req_method]
        elif req_method == "tools/call" and not is_task:
            core_def = "CallToolResultResponse"
        else:
            core_def = "JSONRPCResultResponse"
        checks = [(self.core, core_def, msg)]
        if req_method == "ping":
            checks.append((self.core, "EmptyResult", result))
        label = f"{req_method} -> {core_def}"
        if req_method in RESULT_DEFS:
            name = RESULT_DEFS[req_method]
        elif is_task:
            name = "CreateTaskResult"
        else:
            name = None
        if name is not None:
            checks.append((self.schema, name, result))
            label += f" + {name}"
        self.validate_all(where, label, checks, extra)

    def core_error_checks(self, msg: dict) -> list[tuple[Schema, str, Any]]:
        error = msg.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if code == MISSING_REQUIRED_CLIENT_CAPABILITY:
            checks = [(self.core, "MissingRequiredClientCapabilityError", msg)]
        else:
            checks = [(self.core, "JSONRPCErrorResponse", msg)]
        if code in CORE_ERROR_DEFS:
            checks.append((self.core, CORE_ERROR_DEFS[code], error))
        return checks

    def validate_all(self, where: str, label: str, checks: list[tuple[Schema, str, Any]], extra: list[str]) -> None:
        schema_problems = [
            f"{schema.path.name} {name} {problem}"
            for schema, name, instance in checks
            for problem in schema.errors(name, instance)
        ]
        problems = [f"schema {p}" for p in schema_problems] + [f"beyond the schema: {e}" for e in extra]
        if schema_problems:
            self.schema_failed += 1
        if problems:
            self.fail(where, f"{label}: {'; '.join(problems)}")
        else:
            self.passed += 1
            self.validated[label] += 1

    def validate(self, where: str, name: str, instance: Any, extra: list[str], label: str | None = None) -> None:
        """Against the extension's schema alone (see validate_all)."""
        self.validate_all(where, label or name, [(self.schema, name, instance)], extra)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    ap.add_argument("--core-schema", type=Path, default=DEFAULT_CORE_SCHEMA)
    ap.add_argument("traces", type=Path, nargs="+")
    args = ap.parse_args()

    schema = Schema(args.schema)
    core = Schema(args.core_schema)
    checker = TraceChecker(schema, core)
    total = 0
    for path in args.traces:
        if not path.exists():
            checker.fail(str(path), "trace file does not exist")
            continue
        n = checker.check_file(path)
        print(f"{path}: {n} server messages")
        total += n
    print(f"schemas {args.core_schema.name} and {args.schema.name}; validated by type:")
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
