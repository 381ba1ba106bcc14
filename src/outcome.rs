//! The neutral outcome of a finished request: a result object or a JSON-RPC error.
//!
//! A terminal task stores its outcome in this form; each wire dialect decides how to show
//! it. In 2025-11-25 a result whose `isError` is `true` belongs to a `failed` task, and
//! `tasks/result` returns it as a successful response, while a JSON-RPC error is returned
//! as an error response.

use serde_json::Value;

use crate::jsonrpc::{JsonObject, JsonRpcError};

/// What the underlying request produced: its result, or the JSON-RPC error it failed with.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The request returned a result (for `tools/call`, a `CallToolResult`).
    Result(JsonObject),
    /// The request failed with a JSON-RPC error.
    Error(JsonRpcError),
}

impl Outcome {
    /// An error outcome with a code and a message.
    #[must_use]
    pub fn error(code: i64, message: impl Into<String>) -> Self {
        Outcome::Error(JsonRpcError::new(code, message))
    }

    /// Whether this is a result whose `isError` member is `true` (a tool that reported an
    /// error in its `CallToolResult`).
    #[must_use]
    pub fn is_error_result(&self) -> bool {
        match self {
            Outcome::Result(result) => is_error_result(result),
            Outcome::Error(_) => false,
        }
    }

    /// The result object, if this is a result.
    #[must_use]
    pub fn as_result(&self) -> Option<&JsonObject> {
        match self {
            Outcome::Result(result) => Some(result),
            Outcome::Error(_) => None,
        }
    }

    /// The JSON-RPC error, if this is an error.
    #[must_use]
    pub fn as_error(&self) -> Option<&JsonRpcError> {
        match self {
            Outcome::Result(_) => None,
            Outcome::Error(error) => Some(error),
        }
    }

    /// A one-line diagnostic for a failed task's `statusMessage`: the error's message, or
    /// the first text content of a failing result.
    pub(crate) fn diagnostic(&self) -> Option<String> {
        match self {
            Outcome::Error(error) => Some(error.message.clone()),
            Outcome::Result(result) => result
                .get("content")
                .and_then(Value::as_array)
                .and_then(|content| {
                    content
                        .iter()
                        .find_map(|block| block.get("text").and_then(Value::as_str))
                })
                .map(str::to_owned),
        }
    }
}

/// Whether `result` has `"isError": true`.
pub(crate) fn is_error_result(result: &JsonObject) -> bool {
    matches!(result.get("isError"), Some(Value::Bool(true)))
}

impl From<JsonRpcError> for Outcome {
    fn from(error: JsonRpcError) -> Self {
        Outcome::Error(error)
    }
}
