//! Between rmcp's model types and mcp-tasks's: through JSON where both sides are the
//! spec's shape (the core's `ext` dialect builds and parses the messages), field by field
//! where they are plain values.

use mcp_tasks::{JsonObject, JsonRpcError};
use rmcp::ErrorData;
use rmcp::model::{ErrorCode, NumberOrString};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Re-reads a value of one side as the other side's type of the same wire shape.
pub(crate) fn rewire<A: Serialize, B: DeserializeOwned>(value: &A) -> Result<B, ErrorData> {
    let json = serde_json::to_value(value).map_err(internal)?;
    serde_json::from_value(json).map_err(internal)
}

/// A value as a JSON object (a `CallToolResult` to store).
pub(crate) fn object(value: &impl Serialize) -> Result<JsonObject, ErrorData> {
    match serde_json::to_value(value).map_err(internal)? {
        serde_json::Value::Object(object) => Ok(object),
        other => Err(ErrorData::internal_error(
            format!("expected a json object, got {other}"),
            None,
        )),
    }
}

/// The core's JSON-RPC error as rmcp's.
pub(crate) fn error(error: JsonRpcError) -> ErrorData {
    let code = i32::try_from(error.code).unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    ErrorData::new(ErrorCode(code), error.message, error.data)
}

/// rmcp's error as the core's JSON-RPC error (a failed task's outcome).
pub(crate) fn jsonrpc_error(error: &ErrorData) -> JsonRpcError {
    let mut out = JsonRpcError::new(i64::from(error.code.0), error.message.to_string());
    if let Some(data) = &error.data {
        out = out.with_data(data.clone());
    }
    out
}

/// rmcp's request id as the core's.
pub(crate) fn request_id(id: &NumberOrString) -> mcp_tasks::RequestId {
    match id {
        NumberOrString::Number(n) => mcp_tasks::RequestId::Number(*n),
        NumberOrString::String(s) => mcp_tasks::RequestId::String(s.to_string()),
    }
}

/// Any store or serde failure that is the server's fault: `-32603`.
pub(crate) fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

/// A store refusal with its own JSON-RPC code (`-32602` for an unknown or foreign task).
pub(crate) fn store_error(error: mcp_tasks::Error) -> ErrorData {
    self::error(error.to_jsonrpc())
}
