//! The two wires' framing of the benchmark's requests: the JSON-RPC body and the HTTP
//! headers each server needs, and what the benchmark reads of an answer.
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
//!
//! The load generator must not be the bottleneck of a cell (10,000 clients on two cores
//! share them with the server), so requests are written from typed, borrowed params with
//! the `_meta` rendered once, and answers are read into [`Reading`] without building a
//! `serde_json::Value` tree.

use std::borrow::Cow;
use std::sync::OnceLock;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// MCP 2025-11-25.
pub const V2025: &str = "2025-11-25";
/// MCP 2026-07-28.
pub const V2026: &str = "2026-07-28";
/// The tasks extension's id.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28).
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28).
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Mcp-Session-Id` (2025-11-25).
pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

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

/// [`meta_2026`] as JSON text, rendered once.
fn meta_2026_raw() -> &'static RawValue {
    static RAW: OnceLock<Box<RawValue>> = OnceLock::new();
    RAW.get_or_init(|| {
        serde_json::value::to_raw_value(&meta_2026()).unwrap_or_else(|_| {
            // A `Value` always serializes; keep the request valid all the same.
            RawValue::from_string("{}".to_owned()).unwrap_or_default()
        })
    })
}

/// The params of a request. Absent members are left out; 2026-07-28 adds `_meta`
/// ([`request`]).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Params<'a> {
    /// The tool's name (`tools/call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    /// `sleep`'s arguments (`tools/call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<SleepArguments>,
    /// The 2025-11-25 task augmentation (`tools/call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskAugmentation>,
    /// The task (`tasks/get`, `tasks/result`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    /// Any other members (`initialize`, `subscriptions/listen`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub other: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'static RawValue>,
}

impl<'a> Params<'a> {
    /// Params of these members (`initialize`, `subscriptions/listen`).
    #[must_use]
    pub fn members(other: &'a Map<String, Value>) -> Self {
        Self {
            other: Some(other),
            ..Self::default()
        }
    }
}

/// `sleep`'s arguments.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SleepArguments {
    /// How long it sleeps.
    pub ms: u64,
}

/// `params.task` of a 2025-11-25 `tools/call`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TaskAugmentation {
    /// The TTL asked for.
    pub ttl: u64,
}

#[derive(Serialize)]
struct Body<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Params<'a>>,
}

/// One request to send: its method, its JSON-RPC text and its extra headers (beside
/// `Content-Type`, `Accept`, `Host`, `Authorization` and the session, which the
/// connection adds).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The JSON-RPC message.
    pub body: Bytes,
    /// Header name and value pairs.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Request `id` of `method` with `params` on `wire` (for 2026-07-28 the `_meta` and the
/// routing headers are added).
///
/// # Errors
/// A name or task id that cannot be a header value.
pub fn request(
    wire: Wire,
    id: u64,
    method: &'static str,
    mut params: Params<'_>,
) -> Result<Request, String> {
    let mut headers = vec![(PROTOCOL_VERSION, HeaderValue::from_static(wire.version()))];
    if wire == Wire::V2026 {
        headers.push((MCP_METHOD, HeaderValue::from_static(method)));
        if let Some(name) = params.name.or(params.task_id) {
            let value = HeaderValue::from_str(name)
                .map_err(|err| format!("{method}: Mcp-Name {name:?}: {err}"))?;
            headers.push((MCP_NAME, value));
        }
        params.meta = Some(meta_2026_raw());
    }
    let body = Body {
        jsonrpc: "2.0",
        id: Some(id),
        method,
        params: Some(params),
    };
    let body = serde_json::to_vec(&body).map_err(|err| format!("{method}: {err}"))?;
    Ok(Request {
        method,
        body: Bytes::from(body),
        headers,
    })
}

/// A notification of `method` without params on `wire` (2025-11-25:
/// `notifications/initialized`).
#[must_use]
pub fn notification(wire: Wire, method: &'static str) -> Request {
    let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#);
    Request {
        method,
        body: Bytes::from(body),
        headers: vec![(PROTOCOL_VERSION, HeaderValue::from_static(wire.version()))],
    }
}

/// The params of `tools/call` for `sleep {ms}` as a task (2025-11-25 asks with
/// `task.ttl`; 2026-07-28 leaves it to the server, the extension being declared).
#[must_use]
pub fn sleep_call(wire: Wire, ms: u64, ttl_ms: u64) -> Params<'static> {
    Params {
        name: Some("sleep"),
        arguments: Some(SleepArguments { ms }),
        task: (wire == Wire::V2025).then_some(TaskAugmentation { ttl: ttl_ms }),
        ..Params::default()
    }
}

/// The params of `tasks/get` or `tasks/result`.
#[must_use]
pub fn task_params(task_id: &str) -> Params<'_> {
    Params {
        task_id: Some(task_id),
        ..Params::default()
    }
}

/// The params of `initialize` (2025-11-25).
#[must_use]
pub fn initialize_params() -> Map<String, Value> {
    let params = json!({
        "protocolVersion": V2025,
        "capabilities": {},
        "clientInfo": {"name": "wire_load", "version": "0"}
    });
    match params {
        Value::Object(members) => members,
        _ => Map::new(),
    }
}

/// A JSON-RPC message as the benchmark reads it: borrowed from its text, the members it
/// does not need skipped.
#[derive(Debug, Deserialize)]
pub struct Message<'a> {
    /// The id (raw: a server's own requests may have string ids).
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    /// The method of a request or notification.
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    /// The error of an answer, as its JSON text.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
    /// The result of an answer.
    #[serde(default, borrow)]
    pub result: Option<Shown<'a>>,
    /// The params of a notification (`notifications/tasks`: the task).
    #[serde(default, borrow)]
    pub params: Option<Shown<'a>>,
}

impl Message<'_> {
    /// Whether it is the answer to request `id`.
    #[must_use]
    pub fn answers(&self, id: u64) -> bool {
        self.method.is_none() && self.id.is_some_and(|raw| raw.get().parse() == Ok(id))
    }
}

/// What a result (or a `notifications/tasks`) shows of a task or a tool result: the task
/// at the top or under `task`, a tool result at the top or under `result`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown<'a> {
    #[serde(default, borrow)]
    task_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    task: Option<TaskShown<'a>>,
    #[serde(default)]
    content: Option<IgnoredAny>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    result: Option<ToolShown>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskShown<'a> {
    #[serde(default, borrow)]
    task_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolShown {
    #[serde(default)]
    content: Option<IgnoredAny>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// What the benchmark keeps of a result.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The task's id (`result.taskId`, or `result.task.taskId`).
    pub task_id: Option<String>,
    /// The task's status (`result.status`, or `result.task.status`).
    pub status: Option<String>,
    /// A tool result at the top of the result (`tasks/result`), or the one a terminal
    /// 2026-07-28 task carries (`result.result`): whether it is a success (it has
    /// `content` and no `isError: true`).
    pub tool_ok: Option<bool>,
    /// Whether the task carries a tool result (`result.result`).
    pub carries_result: bool,
}

impl From<Shown<'_>> for Reading {
    fn from(shown: Shown<'_>) -> Self {
        let ok = |content: &Option<IgnoredAny>, is_error: Option<bool>| {
            content.is_some() && is_error != Some(true)
        };
        let top = shown
            .content
            .is_some()
            .then(|| ok(&shown.content, shown.is_error));
        let carried = shown
            .result
            .as_ref()
            .map(|result| ok(&result.content, result.is_error));
        let (task_id, status) = match shown.task {
            Some(task) if shown.task_id.is_none() => (task.task_id, task.status),
            _ => (shown.task_id, shown.status),
        };
        Self {
            task_id: task_id.map(Cow::into_owned),
            status: status.map(Cow::into_owned),
            tool_ok: top.or(carried),
            carries_result: carried.is_some(),
        }
    }
}

impl Reading {
    /// Whether the task it shows is terminal.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        self.status.as_deref().is_some_and(is_terminal)
    }
}

/// Whether `status` is terminal.
#[must_use]
pub fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(request: &Request) -> Value {
        serde_json::from_slice(&request.body).unwrap()
    }

    fn read(text: &str) -> Reading {
        let message: Message = serde_json::from_str(text).unwrap();
        message.result.map(Reading::from).unwrap_or_default()
    }

    #[test]
    fn a_2026_request_carries_its_routing_headers_and_meta() {
        let sent = request(Wire::V2026, 4, "tasks/get", task_params("t-1")).unwrap();
        let names: Vec<(&str, &str)> = sent
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tasks/get"),
                ("mcp-name", "t-1"),
            ]
        );
        let sent = body(&sent);
        assert_eq!(sent["id"], 4);
        assert_eq!(sent["params"]["taskId"], "t-1");
        assert_eq!(sent["params"]["_meta"], meta_2026());
        let call = request(Wire::V2026, 5, "tools/call", sleep_call(Wire::V2026, 0, 1)).unwrap();
        assert!(
            call.headers
                .contains(&(MCP_NAME, HeaderValue::from_static("sleep")))
        );
        assert_eq!(
            body(&call)["params"]["arguments"],
            json!({"ms": 0}),
            "no task augmentation on 2026-07-28"
        );
        assert!(body(&call)["params"].get("task").is_none());
    }

    #[test]
    fn a_2025_request_is_plain() {
        let sent = request(
            Wire::V2025,
            2,
            "tools/call",
            sleep_call(Wire::V2025, 200, 60_000),
        )
        .unwrap();
        assert_eq!(
            sent.headers,
            vec![(PROTOCOL_VERSION, HeaderValue::from_static("2025-11-25"))]
        );
        let sent = body(&sent);
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "sleep", "arguments": {"ms": 200}, "task": {"ttl": 60_000}
            }})
        );
        let init = initialize_params();
        let init = request(Wire::V2025, 1, "initialize", Params::members(&init)).unwrap();
        assert_eq!(body(&init)["params"]["protocolVersion"], V2025);
        let note = notification(Wire::V2025, "notifications/initialized");
        assert_eq!(
            body(&note),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
    }

    #[test]
    fn task_ids_statuses_and_results_in_either_shape() {
        let created = read(r#"{"id":1,"result":{"task":{"taskId":"a","status":"working"}}}"#);
        assert_eq!(created.task_id.as_deref(), Some("a"));
        assert_eq!(created.status.as_deref(), Some("working"));
        assert!(!created.is_terminal() && created.tool_ok.is_none());
        let flat = read(
            r#"{"id":1,"result":{"taskId":"b","status":"completed","resultType":"complete","result":{"content":[],"isError":false}}}"#,
        );
        assert_eq!(flat.task_id.as_deref(), Some("b"));
        assert!(flat.is_terminal() && flat.carries_result);
        assert_eq!(flat.tool_ok, Some(true));
        let tool = read(r#"{"id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#);
        assert_eq!((tool.task_id, tool.tool_ok), (None, Some(true)));
        let failed = read(r#"{"id":1,"result":{"content":[],"isError":true}}"#);
        assert_eq!(failed.tool_ok, Some(false));
        let bare = read(r#"{"id":1,"result":{"taskId":"c","status":"completed"}}"#);
        assert!(!bare.carries_result && bare.tool_ok.is_none());
        assert!(is_terminal("failed") && !is_terminal("input_required"));
        assert_eq!(Wire::parse("2026-07-28"), Ok(Wire::V2026));
        assert!(Wire::parse("2024").is_err());
    }

    #[test]
    fn an_answer_is_told_from_requests_and_other_ids() {
        let answer: Message = serde_json::from_str(r#"{"id":7,"result":{}}"#).unwrap();
        assert!(answer.answers(7) && !answer.answers(8));
        let request: Message =
            serde_json::from_str(r#"{"id":7,"method":"elicitation/create","params":{}}"#).unwrap();
        assert!(!request.answers(7));
        let string_id: Message = serde_json::from_str(r#"{"id":"server-1","result":{}}"#).unwrap();
        assert!(!string_id.answers(1));
        let error: Message =
            serde_json::from_str(r#"{"id":3,"error":{"code":-32602,"message":"no"}}"#).unwrap();
        assert!(error.answers(3) && error.error.is_some());
    }
}
