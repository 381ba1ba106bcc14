//! What a call running at once (not as a task) may send its client while it runs:
//! notifications about the request (`notifications/progress`, `notifications/message`) and,
//! where the wire allows it, requests (`sampling/createMessage`, `elicitation/create`)
//! whose answers it waits for. Each transport implements [`Peer`] for the stream or
//! connection a request came on; a handler reaches it through its
//! [`Context`](crate::Context), which knows the request's progress token and which log
//! messages the client asked for.
//!
//! A task has no peer: the tasks extension (2026-07-28) does not support progress or log
//! notifications on tasks, and 2025-11-25 makes them optional, so a handler running as a
//! task sends neither, in both generations.

use std::future::Future;
use std::pin::Pin;

use mcp_tasks::{JsonRpcError, jsonrpc};
use serde_json::Value;

/// Where a 2026-07-28 request asks for log messages (`RequestMetaObject`): the least
/// severe level it wants; without it the server sends none for the request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The severity of a log message (RFC 5424's levels, as MCP names them), least severe
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name` on the wire, if any.
    #[must_use]
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }

    /// The level a `logging/setLevel` request (2025-11-25) asks for.
    ///
    /// # Errors
    /// `-32602` when `params.level` is missing or not a level.
    pub fn requested(params: Option<&Value>) -> Result<Self, JsonRpcError> {
        params
            .and_then(|params| params.get("level"))
            .and_then(Value::as_str)
            .and_then(Self::named)
            .ok_or_else(|| {
                JsonRpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    "invalid params: `level` must be one of debug, info, notice, warning, \
                     error, critical, alert, emergency",
                )
            })
    }
}

/// The future of a request to the client: its answer.
pub type Answer = Pin<Box<dyn Future<Output = Result<Value, JsonRpcError>> + Send>>;

/// The client end of one request, as a transport offers it to a call running at once.
pub trait Peer: Send + Sync {
    /// Sends a notification about the request being answered (on its stream, where the
    /// transport has one). A transport that cannot deliver it drops it.
    fn notify(&self, method: &str, params: Value);

    /// Sends a request to the client; the future resolves with the client's answer.
    ///
    /// # Errors
    /// The client's error answer; or the transport's own when it cannot ask (the
    /// 2026-07-28 wire has no server-to-client requests: `-32603`), when the client did
    /// not declare the capability the request needs, or when no answer came in time.
    fn request(&self, method: &str, params: Value) -> Answer;

    /// The least severe log level the client asked for on this connection with
    /// `logging/setLevel` (2025-11-25), if it did.
    fn log_level(&self) -> Option<LogLevel>;

    /// Records the level a `logging/setLevel` asked for, for the rest of the connection.
    fn set_log_level(&self, level: LogLevel);

    /// Closes the request's event stream now, if it has one (Streamable HTTP, SEP-1699):
    /// the client resumes it with `Last-Event-ID` and gets what follows. By default
    /// nothing happens.
    fn close_stream(&self) {}
}

/// The request's `_meta.progressToken` (a string or a number), if any.
pub(crate) fn progress_token(params: Option<&Value>) -> Option<Value> {
    params?
        .get("_meta")?
        .get("progressToken")
        .filter(|token| token.is_string() || token.is_number())
        .cloned()
}

/// The least severe log level a call's client wants for it: on 2025-11-25 what the
/// connection set (everything while it set none: the server decides then); on 2026-07-28
/// the request's `_meta["io.modelcontextprotocol/logLevel"]`, none without it.
pub(crate) fn log_level(
    peer: Option<&dyn Peer>,
    params: Option<&Value>,
    extension: bool,
) -> Option<LogLevel> {
    if extension {
        params
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get(META_LOG_LEVEL))
            .and_then(Value::as_str)
            .and_then(LogLevel::named)
    } else {
        peer.map(|peer| peer.log_level().unwrap_or(LogLevel::Debug))
    }
}

/// A [`Peer`] that delivers nothing: notifications are dropped and requests refused
/// (`-32603`). For a transport that cannot stream an answer (a client that does not take
/// `text/event-stream`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Mute;

impl Peer for Mute {
    fn notify(&self, _method: &str, _params: Value) {}

    fn request(&self, method: &str, _params: Value) -> Answer {
        let error = JsonRpcError::new(
            jsonrpc::INTERNAL_ERROR,
            format!("`{method}` cannot reach this client: its request takes no event stream"),
        );
        Box::pin(std::future::ready(Err(error)))
    }

    fn log_level(&self) -> Option<LogLevel> {
        None
    }

    fn set_log_level(&self, _level: LogLevel) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_back_by_name_in_order_of_severity() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::named(level.as_str()), Some(level));
        }
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        assert_eq!(LogLevel::named("verbose"), None);
        let error = LogLevel::requested(Some(&serde_json::json!({"level": "loud"}))).unwrap_err();
        assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        assert!(LogLevel::requested(None).is_err());
    }

    #[test]
    fn the_mute_peer_refuses_requests() {
        let error =
            crate::work::block_on(Mute.request("sampling/createMessage", Value::Null)).unwrap_err();
        assert_eq!(error.code, jsonrpc::INTERNAL_ERROR);
        assert_eq!(Mute.log_level(), None);
    }

    #[test]
    fn the_log_level_comes_from_the_connection_or_the_request() {
        let asked = serde_json::json!({"_meta": {META_LOG_LEVEL: "notice"}});
        assert_eq!(log_level(None, Some(&asked), true), Some(LogLevel::Notice));
        assert_eq!(log_level(None, None, true), None);
        assert_eq!(log_level(Some(&Mute), None, false), Some(LogLevel::Debug));
        let token = serde_json::json!({"_meta": {"progressToken": "p-1"}});
        assert_eq!(progress_token(Some(&token)), Some(serde_json::json!("p-1")));
        assert_eq!(progress_token(Some(&asked)), None);
    }
}
