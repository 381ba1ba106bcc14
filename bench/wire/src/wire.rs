//! The two wires' framing of the benchmark's requests: the JSON-RPC body and the HTTP
//! headers each server needs.
//!
//! - **2025-11-25** (sessions): `initialize` opens a session (`Mcp-Session-Id`), answered
//!   with `notifications/initialized`; every later request carries the session and
//!   `MCP-Protocol-Version`. `tools/call` asks for a task with `params.task.ttl`; the
//!   terminal task's result comes from `tasks/result`.
//! - **2026-07-28** (stateless, the tasks extension `io.modelcontextprotocol/tasks`):
//!   every request carries `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (the tool's
//!   name, or the task id) and, in `params._meta`, the protocol version and the client's
//!   capabilities declaring the extension; the server answers `tools/call` with a task
//!   when it chooses to, and the terminal `tasks/get` (or `notifications/tasks`) carries
//!   the result (`tasks/result` is gone).

use serde_json::{Value, json};

/// MCP 2025-11-25.
pub const V2025: &str = "2025-11-25";
/// MCP 2026-07-28.
pub const V2026: &str = "2026-07-28";
/// The tasks extension's id.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Which wire a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// MCP 2025-11-25 with sessions.
    V2025,
    /// MCP 2026-07-28, stateless, with the tasks extension.
    V2026,
}

impl Wire {
    /// `2025-11-25` or `2026-07-28`.
    ///
    /// # Errors
    /// Any other text.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            V2025 | "2025" => Ok(Self::V2025),
            V2026 | "2026" => Ok(Self::V2026),
            other => Err(format!("unknown wire {other}: 2025-11-25 or 2026-07-28")),
        }
    }

    /// The protocol version it sends.
    #[must_use]
    pub fn version(self) -> &'static str {
        match self {
            Self::V2025 => V2025,
            Self::V2026 => V2026,
        }
    }
}

/// The `_meta` of a 2026-07-28 request: the version and the capabilities declaring the
/// tasks extension.
#[must_use]
pub fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {TASKS_EXTENSION: {}}
        },
        "io.modelcontextprotocol/clientInfo": {"name": "wire_load", "version": "0"}
    })
}

/// One request to send: its body and its extra headers (beside `Content-Type`, `Accept`,
/// `Host`, `Authorization` and the session, which the connection adds).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The JSON-RPC message.
    pub body: Value,
    /// Header name and value pairs.
    pub headers: Vec<(&'static str, String)>,
}

/// Request `id` of `method` with `params` on `wire` (for 2026-07-28 the `_meta` and the
/// routing headers are added).
#[must_use]
pub fn request(wire: Wire, id: u64, method: &str, mut params: Value) -> Request {
    let mut headers = vec![("mcp-protocol-version", wire.version().to_owned())];
    if wire == Wire::V2026 {
        headers.push(("mcp-method", method.to_owned()));
        if let Some(name) = ["name", "taskId"]
            .iter()
            .find_map(|member| params.get(member)?.as_str())
        {
            headers.push(("mcp-name", name.to_owned()));
        }
        params["_meta"] = meta_2026();
    }
    Request {
        body: json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        headers,
    }
}

/// The params of `tools/call` for `sleep {ms}` as a task (2025-11-25 asks with
/// `task.ttl`; 2026-07-28 leaves it to the server, the extension being declared).
#[must_use]
pub fn sleep_call(wire: Wire, ms: u64, ttl_ms: u64) -> Value {
    match wire {
        Wire::V2025 => json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": ttl_ms}}),
        Wire::V2026 => json!({"name": "sleep", "arguments": {"ms": ms}}),
    }
}

/// The params of `initialize` (2025-11-25).
#[must_use]
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": V2025,
        "capabilities": {},
        "clientInfo": {"name": "wire_load", "version": "0"}
    })
}

/// The task id of a `tools/call` result that created a task (2025-11-25:
/// `result.task.taskId`; 2026-07-28: `result.taskId`, or `result.task.taskId`).
#[must_use]
pub fn created_task_id(result: &Value) -> Option<&str> {
    result
        .get("taskId")
        .or_else(|| result.get("task")?.get("taskId"))
        .and_then(Value::as_str)
}

/// The status of a task as `tasks/get` or `notifications/tasks` shows it (the task
/// itself, or under `task`).
#[must_use]
pub fn status_of(task: &Value) -> Option<&str> {
    task.get("status")
        .or_else(|| task.get("task")?.get("status"))
        .and_then(Value::as_str)
}

/// Whether `status` is terminal.
#[must_use]
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2026_request_carries_its_routing_headers_and_meta() {
        let sent = request(Wire::V2026, 4, "tasks/get", json!({"taskId": "t-1"}));
        assert_eq!(
            sent.headers,
            vec![
                ("mcp-protocol-version", "2026-07-28".to_owned()),
                ("mcp-method", "tasks/get".to_owned()),
                ("mcp-name", "t-1".to_owned()),
            ]
        );
        assert_eq!(sent.body["params"]["taskId"], "t-1");
        assert_eq!(
            sent.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                [TASKS_EXTENSION],
            json!({})
        );
        let call = request(Wire::V2026, 5, "tools/call", sleep_call(Wire::V2026, 0, 1));
        assert!(call.headers.contains(&("mcp-name", "sleep".to_owned())));
    }

    #[test]
    fn a_2025_request_is_plain() {
        let sent = request(
            Wire::V2025,
            2,
            "tools/call",
            sleep_call(Wire::V2025, 200, 60_000),
        );
        assert_eq!(
            sent.headers,
            vec![("mcp-protocol-version", "2025-11-25".to_owned())]
        );
        assert_eq!(sent.body["params"]["task"]["ttl"], 60_000);
        assert!(sent.body["params"].get("_meta").is_none());
    }

    #[test]
    fn task_ids_and_statuses_in_either_shape() {
        assert_eq!(
            created_task_id(&json!({"task": {"taskId": "a"}})),
            Some("a")
        );
        assert_eq!(
            created_task_id(&json!({"taskId": "b", "status": "working"})),
            Some("b")
        );
        assert_eq!(created_task_id(&json!({"content": []})), None);
        assert_eq!(
            status_of(&json!({"status": "completed"})),
            Some("completed")
        );
        assert_eq!(
            status_of(&json!({"task": {"status": "working"}})),
            Some("working")
        );
        assert!(is_terminal("failed") && !is_terminal("input_required"));
        assert_eq!(Wire::parse("2026-07-28"), Ok(Wire::V2026));
        assert!(Wire::parse("2024").is_err());
    }
}
