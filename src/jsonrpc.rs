//! JSON-RPC 2.0 building blocks shared by every wire dialect: request ids and error objects.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON object: the shape of every MCP result and of request params.
pub type JsonObject = serde_json::Map<String, Value>;

/// The JSON-RPC error code for invalid params (`-32602`).
pub const INVALID_PARAMS: i64 = -32602;
/// The JSON-RPC error code for an unknown method (`-32601`).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The JSON-RPC error code for an invalid request (`-32600`).
pub const INVALID_REQUEST: i64 = -32600;
/// The JSON-RPC error code for an internal error (`-32603`).
pub const INTERNAL_ERROR: i64 = -32603;
/// The JSON-RPC error code for a message that is not valid JSON (`-32700`).
pub const PARSE_ERROR: i64 = -32700;

/// A JSON-RPC request id: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

/// The `error` member of a JSON-RPC error response: `{code, message, data?}`.
///
/// This is both what a failed request produced (stored in a failed task) and what a task
/// method answers when it refuses a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// The error code, e.g. `-32602` for invalid params.
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Additional information about the error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// An error object with a code and a message and no `data`.
    #[must_use]
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` attached.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (JSON-RPC error {})", self.message, self.code)
    }
}

impl std::error::Error for JsonRpcError {}
