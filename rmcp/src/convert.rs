//! Between rmcp's typed messages and the JSON the server library routes: both are the
//! spec's wire shape, so each side is read as the other through `serde_json`.

use mcp_tasks_server::mcp_tasks::ext::{self, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use mcp_tasks_server::mcp_tasks::{JsonObject, JsonRpcError, RequestId, jsonrpc};
use rmcp::ErrorData;
use rmcp::model::{ErrorCode, NumberOrString, ProtocolVersion, ResultType};
use rmcp::service::{RequestContext, RoleServer};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The library's JSON-RPC error as rmcp's (same code, message and data).
pub(crate) fn error(error: JsonRpcError) -> ErrorData {
    let code = i32::try_from(error.code).unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    ErrorData::new(ErrorCode(code), error.message, error.data)
}

/// rmcp's error as the library's.
pub(crate) fn jsonrpc_error(error: &ErrorData) -> JsonRpcError {
    let mut out = JsonRpcError::new(i64::from(error.code.0), error.message.to_string());
    if let Some(data) = &error.data {
        out = out.with_data(data.clone());
    }
    out
}

/// A conversion that failed: the server's fault, `-32603`.
pub(crate) fn internal(why: impl std::fmt::Display) -> JsonRpcError {
    JsonRpcError::new(jsonrpc::INTERNAL_ERROR, why.to_string())
}

/// rmcp's request id as the library's.
pub(crate) fn request_id(id: &NumberOrString) -> RequestId {
    match id {
        NumberOrString::Number(n) => RequestId::Number(*n),
        NumberOrString::String(s) => RequestId::String(s.to_string()),
    }
}

/// An answer of the library as rmcp's type of it.
pub(crate) fn read<T: DeserializeOwned>(answer: Value) -> Result<T, ErrorData> {
    serde_json::from_value(answer).map_err(|err| error(internal(err)))
}

/// Whether rmcp sees `context`'s request as 2026-07-28 (or later): its `_meta` names the
/// version, or its session negotiated it.
pub(crate) fn is_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The params the library routes for `typed` (rmcp's params of the request): the typed
/// params as JSON, with the request's `_meta` (rmcp keeps it in the context). A request
/// rmcp reads as 2026-07-28, or one of the extension's own methods (`extension`), is
/// framed as the library reads 2026-07-28: its `_meta` names the version and the client's
/// capabilities (from `initialize`, for a session, when the request does not).
pub(crate) fn params(
    typed: &impl Serialize,
    context: &RequestContext<RoleServer>,
    extension: bool,
) -> Result<Value, ErrorData> {
    let mut params = match serde_json::to_value(typed).map_err(|err| error(internal(err)))? {
        Value::Object(params) => params,
        _ => JsonObject::new(),
    };
    let mut meta = match serde_json::to_value(&context.meta) {
        Ok(Value::Object(meta)) => meta,
        _ => JsonObject::new(),
    };
    if let Some(Value::Object(own)) = params.remove("_meta") {
        meta.extend(own);
    }
    if extension || is_2026(context) {
        meta.entry(META_PROTOCOL_VERSION)
            .or_insert_with(|| Value::String(ext::PROTOCOL_VERSION.to_owned()));
        if !meta.contains_key(META_CLIENT_CAPABILITIES)
            && let Some(capabilities) = context.client_capabilities()
            && let Ok(capabilities) = serde_json::to_value(capabilities)
        {
            meta.insert(META_CLIENT_CAPABILITIES.to_owned(), capabilities);
        }
    }
    if !meta.is_empty() {
        params.insert("_meta".to_owned(), Value::Object(meta));
    }
    Ok(Value::Object(params))
}

/// What kind of result an answer is, by its `resultType` (2026-07-28).
pub(crate) enum Kind {
    /// A task was created (`task`).
    Task,
    /// Input is needed first (`input_required`).
    InputRequired,
    /// The final result (`complete`, or no `resultType`: 2025-11-25).
    Complete,
}

/// The kind of `answer`.
pub(crate) fn kind(answer: &Value) -> Kind {
    match answer.get("resultType").and_then(Value::as_str) {
        Some(kind) if kind == ResultType::TASK.as_str() => Kind::Task,
        Some(kind) if kind == ResultType::INPUT_REQUIRED.as_str() => Kind::InputRequired,
        _ => Kind::Complete,
    }
}
