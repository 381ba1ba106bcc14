//! What a tool that runs inline (not as a task) may send the client while it runs:
//! notifications about the request (`notifications/progress`, `notifications/message`) and,
//! where the wire allows it, requests (`sampling/createMessage`, `elicitation/create`)
//! whose answers it waits for. Each transport implements [`Peer`] for the stream or
//! connection a request came on; a tool sees it through a [`Caller`], which knows the
//! request's progress token and which log messages the client asked for.
//!
//! A task gets no `Caller`: the tasks extension (2026-07-28) does not support progress or
//! log notifications on tasks, and 2025-11-25 makes them optional, so a tool running as a
//! task sends neither, in both generations.

use mcp_tasks::{JsonRpcError, jsonrpc};
use serde_json::{Value, json};

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

/// The client end of one request, as a transport offers it to a tool that runs inline.
pub trait Peer: Send + Sync {
    /// Sends a notification about the request being answered (on its stream, where the
    /// transport has one). A transport that cannot deliver it drops it.
    fn notify(&self, method: &str, params: Value);

    /// Sends a request to the client and blocks until the client answers.
    ///
    /// # Errors
    /// The client's error answer; or the transport's own when it cannot ask (the
    /// 2026-07-28 wire has no server-to-client requests: `-32603`), when the client did
    /// not declare the capability the request needs, or when no answer came in time.
    fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError>;

    /// The least severe log level the client asked for on this connection with
    /// `logging/setLevel` (2025-11-25), if it did.
    fn log_level(&self) -> Option<LogLevel>;

    /// Records the level a `logging/setLevel` asked for, for the rest of the connection.
    fn set_log_level(&self, level: LogLevel);
}

/// Work that answers a request and may talk to the client meanwhile: the transport runs it
/// on a thread that may block, with the request's [`Peer`], and sends what it returns.
pub type Talk = Box<dyn FnOnce(&dyn Peer) -> Result<Value, JsonRpcError> + Send>;

/// Answers `logging/setLevel` (2025-11-25): the level is recorded on the connection, and
/// the answer is the empty result.
pub fn set_level(params: Option<Value>) -> Talk {
    Box::new(move |peer| {
        let level = LogLevel::requested(params.as_ref())?;
        peer.set_log_level(level);
        Ok(json!({}))
    })
}

/// What a tool running inline sees of its caller: the [`Peer`], the request's progress
/// token, and the least severe log level the client wants for this request.
pub struct Caller<'p> {
    peer: &'p dyn Peer,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

impl<'p> Caller<'p> {
    /// The caller of a 2025-11-25 request with `params`: its `_meta.progressToken`, and log
    /// messages at or above the level the connection set (all of them while it set none:
    /// the server decides then).
    #[must_use]
    pub fn v1(peer: &'p dyn Peer, params: Option<&Value>) -> Self {
        Self {
            peer,
            progress_token: progress_token(params),
            log_level: Some(peer.log_level().unwrap_or(LogLevel::Debug)),
        }
    }

    /// The caller of a 2026-07-28 request with `params`: its `_meta.progressToken`, and log
    /// messages at or above its `_meta["io.modelcontextprotocol/logLevel"]`, none without it.
    #[must_use]
    pub fn ext(peer: &'p dyn Peer, params: Option<&Value>) -> Self {
        let log_level = params
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get(META_LOG_LEVEL))
            .and_then(Value::as_str)
            .and_then(LogLevel::named);
        Self {
            peer,
            progress_token: progress_token(params),
            log_level,
        }
    }

    /// Whether the request asked for progress notifications (it has a progress token).
    #[must_use]
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Sends `notifications/progress` with the request's token, if it has one.
    pub fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.peer.notify("notifications/progress", params);
    }

    /// Sends `notifications/message` at `level` from `logger`, if the client wants that
    /// level for this request.
    pub fn log(&self, level: LogLevel, logger: &str, data: Value) {
        if self.log_level.is_some_and(|least| level >= least) {
            self.peer.notify(
                "notifications/message",
                json!({"level": level.as_str(), "logger": logger, "data": data}),
            );
        }
    }

    /// Sends a request to the client and waits for the answer ([`Peer::request`]).
    ///
    /// # Errors
    /// As for [`Peer::request`].
    pub fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
        self.peer.request(method, params)
    }
}

/// The request's `_meta.progressToken` (a string or a number), if any.
fn progress_token(params: Option<&Value>) -> Option<Value> {
    params?
        .get("_meta")?
        .get("progressToken")
        .filter(|token| token.is_string() || token.is_number())
        .cloned()
}

/// A [`Peer`] that delivers nothing: notifications are dropped and requests refused
/// (`-32603`). For a transport that cannot stream an answer (a client that does not take
/// `text/event-stream`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Mute;

impl Peer for Mute {
    fn notify(&self, _method: &str, _params: Value) {}

    fn request(&self, method: &str, _params: Value) -> Result<Value, JsonRpcError> {
        Err(JsonRpcError::new(
            jsonrpc::INTERNAL_ERROR,
            format!("`{method}` cannot reach this client: its request takes no event stream"),
        ))
    }

    fn log_level(&self) -> Option<LogLevel> {
        None
    }

    fn set_log_level(&self, _level: LogLevel) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records what it is sent.
    #[derive(Default)]
    struct Recorder {
        sent: Mutex<Vec<(String, Value)>>,
        level: Mutex<Option<LogLevel>>,
    }

    impl Peer for Recorder {
        fn notify(&self, method: &str, params: Value) {
            self.sent.lock().unwrap().push((method.to_owned(), params));
        }
        fn request(&self, _method: &str, params: Value) -> Result<Value, JsonRpcError> {
            Ok(params)
        }
        fn log_level(&self) -> Option<LogLevel> {
            *self.level.lock().unwrap()
        }
        fn set_log_level(&self, level: LogLevel) {
            *self.level.lock().unwrap() = Some(level);
        }
    }

    #[test]
    fn levels_read_back_by_name_in_order_of_severity() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::named(level.as_str()), Some(level));
        }
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        assert_eq!(LogLevel::named("verbose"), None);
        let error = LogLevel::requested(Some(&json!({"level": "loud"}))).unwrap_err();
        assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        assert!(LogLevel::requested(None).is_err());
    }

    #[test]
    fn set_level_records_the_level_on_the_connection() {
        let peer = Recorder::default();
        let answer = set_level(Some(json!({"level": "warning"})))(&peer);
        assert_eq!(answer, Ok(json!({})));
        assert_eq!(peer.log_level(), Some(LogLevel::Warning));
        let refused = set_level(Some(json!({"level": 3})))(&peer);
        assert_eq!(refused.unwrap_err().code, jsonrpc::INVALID_PARAMS);
        assert_eq!(peer.log_level(), Some(LogLevel::Warning));
    }

    #[test]
    fn progress_needs_a_token_and_logs_follow_the_level_asked_for() {
        let peer = Recorder::default();
        // 2025-11-25: everything until a level is set, then that level and above.
        let with_token = json!({"_meta": {"progressToken": "p-1"}});
        let caller = Caller::v1(&peer, Some(&with_token));
        caller.progress(50, Some(100), None);
        caller.log(LogLevel::Debug, "t", json!("debug"));
        peer.set_log_level(LogLevel::Error);
        let caller = Caller::v1(&peer, None);
        assert!(!caller.wants_progress());
        caller.progress(1, None, None);
        caller.log(LogLevel::Info, "t", json!("dropped"));
        caller.log(LogLevel::Critical, "t", json!("kept"));
        // 2026-07-28: none without `_meta` logLevel.
        Caller::ext(&peer, Some(&with_token)).log(LogLevel::Emergency, "t", json!("dropped"));
        let asked = json!({"_meta": {META_LOG_LEVEL: "notice"}});
        Caller::ext(&peer, Some(&asked)).log(LogLevel::Notice, "t", json!("asked"));
        let sent = peer.sent.lock().unwrap().clone();
        assert_eq!(
            sent,
            vec![
                (
                    "notifications/progress".to_owned(),
                    json!({"progressToken": "p-1", "progress": 50, "total": 100})
                ),
                (
                    "notifications/message".to_owned(),
                    json!({"level": "debug", "logger": "t", "data": "debug"})
                ),
                (
                    "notifications/message".to_owned(),
                    json!({"level": "critical", "logger": "t", "data": "kept"})
                ),
                (
                    "notifications/message".to_owned(),
                    json!({"level": "notice", "logger": "t", "data": "asked"})
                ),
            ]
        );
    }

    #[test]
    fn the_mute_peer_refuses_requests() {
        let error = Mute
            .request("sampling/createMessage", json!({}))
            .unwrap_err();
        assert_eq!(error.code, jsonrpc::INTERNAL_ERROR);
        assert_eq!(Mute.log_level(), None);
    }
}
