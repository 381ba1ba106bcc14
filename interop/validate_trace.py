#!/usr/bin/env python3
"""Validate every message the stdio server wrote against the official MCP schema.

Usage: python validate_trace.py [--schema PATH] TRACE [TRACE ...]

A trace is the file named by MCP_TASKS_TRACE: one JSON object per line,
{"dir": "in" | "out", "msg": <JSON-RPC message>}, where "in" is what the server
read and "out" what it wrote. Several connections may be appended to one file
one after the other (request ids are matched from the latest "initialize" on),
but not interleaved.

Every "out" message is checked against JSONRPCMessage and against the precise
$defs type of the 2025-11-25 schema:
  * a success response is paired by id with the request the server read, and its
    `result` is checked against that method's result type (tools/call -> CallToolResult,
    or CreateTaskResult when the request carried `task`; tasks/result -> the result
    type of the request that created the task, i.e. CallToolResult; ...);
  * an error response against JSONRPCErrorResponse;
  * a notification against its own type (notifications/tasks/status ->
    TaskStatusNotification) or ServerNotification;
  * a server->client request against its own type (elicitation/create ->
    ElicitRequest) or ServerRequest.
Besides the schema, a few MUSTs of the tasks utility that the schema cannot
express are checked on the same messages (see protocol_checks()).

The schema defaults to $REPO/schema/mcp-schema-2025-11-25.json, $REPO being
the parent of this file's directory. Exit status is 1 if any message is invalid or
if there are no server messages at all.
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
DEFAULT_SCHEMA = HERE.parent / "schema" / "mcp-schema-2025-11-25.json"
RELATED_TASK = "io.modelcontextprotocol/related-task"

# Result type of each client->server request method.
RESULT_DEFS = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "tasks/get": "GetTaskResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "logging/setLevel": "EmptyResult",
}
NOTIFICATION_DEFS = {
    "notifications/tasks/status": "TaskStatusNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/elicitation/complete": "ElicitationCompleteNotification",
}
SERVER_REQUEST_DEFS = {
    "elicitation/create": "ElicitRequest",
    "sampling/createMessage": "CreateMessageRequest",
    "roots/list": "ListRootsRequest",
    "ping": "PingRequest",
    "tasks/get": "GetTaskRequest",
    "tasks/result": "GetTaskPayloadRequest",
    "tasks/list": "ListTasksRequest",
    "tasks/cancel": "CancelTaskRequest",
}


class Schema:
    def __init__(self, path: Path) -> None:
        self.root = json.loads(path.read_text())
        Draft202012Validator.check_schema(self.root)
        self.defs = self.root["$defs"]
        self._validators: dict[str, Draft202012Validator] = {}

    def validator(self, name: str) -> Draft202012Validator:
        if name not in self.defs:
            raise KeyError(f"schema has no $defs/{name}")
        if name not in self._validators:
            # The whole document with a root $ref, so "#/$defs/..." refs resolve in the file.
            schema = dict(self.root)
            schema["$ref"] = f"#/$defs/{name}"
            self._validators[name] = Draft202012Validator(schema)
        return self._validators[name]

    def errors(self, name: str, instance: Any) -> list[str]:
        errs = sorted(self.validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
        return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errs]


class TraceChecker:
    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.passed = 0
        self.failed = 0
        self.by_type: Counter[str] = Counter()

    def fail(self, where: str, what: str, msg: Any) -> None:
        self.failed += 1
        text = json.dumps(msg)
        if len(text) > 600:
            text = text[:600] + "..."
        print(f"INVALID {where}: {what}\n    message: {text}")

    def check_file(self, path: Path) -> int:
        requests_in: dict[Any, dict] = {}  # id -> client request read by the server
        task_origin: dict[str, dict] = {}  # taskId -> request that created the task
        out_count = 0
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as err:
                self.fail(where, f"trace line is not JSON ({err})", line)
                continue
            direction, msg = entry.get("dir"), entry.get("msg")
            if isinstance(msg, str):  # tolerate a raw line stored as a string
                try:
                    msg = json.loads(msg)
                except json.JSONDecodeError:
                    pass
            if direction == "in":
                if isinstance(msg, dict) and msg.get("method") == "initialize":
                    # a new connection appended to the same file: ids start over
                    requests_in.clear()
                    task_origin.clear()
                if isinstance(msg, dict) and "method" in msg and "id" in msg:
                    requests_in[_key(msg["id"])] = msg
                continue
            if direction != "out":
                self.fail(where, f"trace entry has dir={direction!r}", entry)
                continue
            out_count += 1
            self.check_out(where, msg, requests_in, task_origin)
        return out_count

    def check_out(self, where: str, msg: Any, requests_in: dict, task_origin: dict) -> None:
        if not isinstance(msg, dict):
            self.fail(where, "server wrote a non-object message", msg)
            return
        problems = [f"JSONRPCMessage {e}" for e in self.schema.errors("JSONRPCMessage", msg)]
        kind, def_name, target = self.classify(msg, requests_in, task_origin)
        if def_name is None:
            problems.append(kind)
        else:
            problems += [f"{def_name} {e}" for e in self.schema.errors(def_name, target)]
            problems += protocol_checks(msg, requests_in, task_origin)
        self.by_type[def_name or "unclassified"] += 1
        if problems:
            self.fail(where, f"{kind} -> " + "; ".join(problems), msg)
        else:
            self.passed += 1

    def classify(self, msg: dict, requests_in: dict, task_origin: dict) -> tuple[str, str | None, Any]:
        """(description, $defs name or None, instance to validate against it)."""
        if "method" in msg:
            method = msg["method"]
            if "id" in msg:
                return f"server request {method}", SERVER_REQUEST_DEFS.get(method, "ServerRequest"), msg
            return f"notification {method}", NOTIFICATION_DEFS.get(method, "ServerNotification"), msg
        if "error" in msg:
            req = requests_in.get(_key(msg.get("id")))
            what = f"error response to {req['method'] if req else 'unknown request'} (id {msg.get('id')!r})"
            return what, "JSONRPCErrorResponse", msg
        if "result" in msg:
            req = requests_in.get(_key(msg.get("id")))
            if req is None:
                return f"response id {msg.get('id')!r} matches no request the server read", None, msg
            method = req["method"]
            params = req.get("params") or {}
            what = f"result of {method} (id {msg['id']!r})"
            if method == "tools/call" and "task" in params:
                name = "CreateTaskResult"
                task_id = (msg["result"].get("task") or {}).get("taskId") if isinstance(msg["result"], dict) else None
                if isinstance(task_id, str):
                    task_origin[task_id] = req
            elif method == "tasks/result":
                origin = task_origin.get(params.get("taskId"))
                if origin is None:
                    return f"{what}: no task-creating request seen for taskId {params.get('taskId')!r}", None, msg
                name = RESULT_DEFS.get(origin["method"], "GetTaskPayloadResult")
                what += f" (task created by {origin['method']})"
            else:
                name = RESULT_DEFS.get(method, "Result")
            # envelope first, then the payload type
            env = self.schema.errors("JSONRPCResultResponse", msg)
            if env:
                return f"{what}: JSONRPCResultResponse {'; '.join(env)}", None, msg
            return what, name, msg["result"]
        return "neither request, notification nor response", None, msg

    def summary(self) -> None:
        for name, count in sorted(self.by_type.items()):
            print(f"  {count:5d}  {name}")


def protocol_checks(msg: dict, requests_in: dict, task_origin: dict) -> list[str]:
    """MUSTs of the 2025-11-25 tasks utility that the JSON schema cannot express."""
    out: list[str] = []
    if "result" in msg and isinstance(msg["result"], dict):
        req = requests_in.get(_key(msg.get("id")))
        params = (req or {}).get("params") or {}
        result = msg["result"]
        method = (req or {}).get("method")
        if method == "tools/call" and "task" in params:
            status = (result.get("task") or {}).get("status")
            if status != "working":
                out.append(f"CreateTaskResult task.status is {status!r}, tasks MUST begin in 'working'")
        elif method == "tasks/result":
            related = ((result.get("_meta") or {}).get(RELATED_TASK) or {}).get("taskId")
            if related != params.get("taskId"):
                out.append(
                    f"tasks/result _meta[{RELATED_TASK}].taskId is {related!r}, MUST be {params.get('taskId')!r}"
                )
        elif method in ("tasks/get", "tasks/cancel"):
            if result.get("taskId") != params.get("taskId"):
                out.append(f"{method} result taskId {result.get('taskId')!r} != requested {params.get('taskId')!r}")
            if method == "tasks/cancel" and result.get("status") != "cancelled":
                out.append(f"tasks/cancel result status {result.get('status')!r}, MUST be 'cancelled'")
    elif msg.get("method") == "elicitation/create" and "id" in msg:
        meta = (msg.get("params") or {}).get("_meta") or {}
        if not isinstance((meta.get(RELATED_TASK) or {}).get("taskId"), str):
            out.append(f"elicitation/create issued for a task MUST carry _meta[{RELATED_TASK}]")
    return out


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


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
            print(f"INVALID {path}: trace file does not exist")
            checker.failed += 1
            continue
        n = checker.check_file(path)
        print(f"{path}: {n} server messages")
        if n == 0:
            print(f"INVALID {path}: no server messages in the trace")
            checker.failed += 1
        total += n
    print(f"schema {args.schema.name}; {total} server messages by type:")
    checker.summary()
    print(f"{checker.passed} passed, {checker.failed} failed")
    return 0 if checker.failed == 0 and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
