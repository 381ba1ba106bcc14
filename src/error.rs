//! The crate's error type: every refusal, with its JSON-RPC code.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::any::{AnyTask, TransitionError, describe_illegal_move};
use crate::jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JsonRpcError, METHOD_NOT_FOUND,
};
use crate::status::TaskStatus;

/// Longest task id or value echoed back in an error message.
const MAX_ECHO: usize = 80;

/// `text` (a task id, a caller's value) cut to a length fit for an error message: at most
/// 80 bytes, then `…`.
#[must_use]
pub fn shorten(text: &str) -> String {
    if text.len() <= MAX_ECHO {
        return text.to_owned();
    }
    let mut end = MAX_ECHO;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Everything that can go wrong with a task, each with the JSON-RPC code a receiver
/// answers with ([`Error::code`]) and an error object ready for the wire
/// ([`Error::to_jsonrpc`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No task with this id is visible to the caller: it never existed, expired, was
    /// removed, or belongs to another requestor (all four answer the same). `-32602`.
    #[error(
        "task not found: no task `{}` exists for this requestor (it may have expired)",
        shorten(task_id)
    )]
    TaskNotFound {
        /// The id that was asked for.
        task_id: String,
    },

    /// `tasks/cancel` of a task that is already terminal. `-32602`. Holds the task, so a
    /// caller that wants idempotent cancellation can answer with it instead.
    #[error(
        "cannot cancel task `{}`: it is already in terminal status `{}`",
        shorten(&task.id().to_string()),
        task.status()
    )]
    AlreadyTerminal {
        /// The task, unchanged.
        task: Box<AnyTask>,
    },

    /// A move the spec's transition table forbids, e.g. a second result for a finished
    /// task. `-32602`.
    #[error("{message}")]
    IllegalTransition {
        /// The task id.
        task_id: String,
        /// The status the task has and keeps.
        from: TaskStatus,
        /// The status the move would have led to.
        to: TaskStatus,
        /// The explanation.
        message: String,
    },

    /// The task was cancelled: a late result is not stored, and `tasks/result` has no
    /// result to return. `-32602`.
    #[error(
        "task `{}` was cancelled: it has no result, and nothing more can be stored in it",
        shorten(task_id)
    )]
    TaskCancelled {
        /// The task id.
        task_id: String,
    },

    /// The result of a task that has not finished was asked for without waiting. `-32602`.
    #[error(
        "task `{}` is still `{status}`: its result is not ready yet; wait for it instead",
        shorten(task_id)
    )]
    NotFinished {
        /// The task id.
        task_id: String,
        /// Its current status.
        status: TaskStatus,
    },

    /// A `tasks/list` cursor this receiver did not issue to this requestor. `-32602`.
    #[error(
        "invalid cursor: {reason}; pass back a nextCursor from an earlier tasks/list unchanged, or omit it to start over"
    )]
    InvalidCursor {
        /// Why it was refused.
        reason: &'static str,
    },

    /// Params that do not match the method (a missing or mistyped field). `-32602`.
    #[error("invalid params: {message}")]
    InvalidParams {
        /// What is wrong, naming the field.
        message: String,
    },

    /// A tool whose `execution.taskSupport` is `required` was called without `task`.
    /// `-32601`, as the spec requires.
    #[error(
        "tool `{}` must be called as a task: add a `task` object to the tools/call params",
        shorten(tool)
    )]
    TaskRequired {
        /// The tool name.
        tool: String,
    },

    /// A tool without task support was called with `task`. `-32601`, as the spec advises.
    #[error(
        "tool `{}` does not support tasks: call it without the `task` param",
        shorten(tool)
    )]
    TaskNotSupported {
        /// The tool name.
        tool: String,
    },

    /// A request type that the receiver only accepts as a task came without `task`.
    /// `-32600`.
    #[error(
        "task augmentation required for {} requests: add a `task` object to the params",
        shorten(method)
    )]
    TaskAugmentationRequired {
        /// The request method.
        method: String,
    },

    /// A method this receiver does not serve. `-32601`.
    #[error("method not found: `{}`", shorten(method))]
    MethodNotFound {
        /// The method name.
        method: String,
    },

    /// Creating the task would exceed a limit on stored tasks. `-32603` (the receiver
    /// cannot take more work now; the request itself is valid).
    #[error(
        "too many tasks: the limit of {limit} stored tasks {scope} is reached; wait for tasks to expire, or cancel some"
    )]
    LimitExceeded {
        /// The limit.
        limit: usize,
        /// Which limit.
        scope: LimitScope,
    },

    /// The requestor asked to cancel the task while its handler waited for input (the
    /// tasks extension's cooperative cancel); the handler decides whether to cancel.
    /// `-32603` (it is meant for the handler, not for the wire).
    #[error("the requestor asked to cancel task `{}`", shorten(task_id))]
    CancelRequested {
        /// The task id.
        task_id: String,
    },

    /// A handler waited for input on an `input_required` task that has no input request
    /// outstanding and no answer to take (it asked for nothing, or took its answers
    /// already): there is nothing to wait for. `-32603` (meant for the handler).
    #[error(
        "task `{}` has no input request outstanding: there is nothing to wait for",
        shorten(task_id)
    )]
    NothingToWaitFor {
        /// The task id.
        task_id: String,
    },

    /// A handler's write to a redeliverable task that another instance has claimed since
    /// (its lease lapsed, or it was handed over): the attempt this handler runs is no longer
    /// the task's, so nothing it writes is stored. `-32603`.
    ///
    /// The handler should stop: the task runs again elsewhere.
    #[error(
        "task `{}` runs as attempt {current} now: attempt {attempt} no longer owns it",
        shorten(task_id)
    )]
    Superseded {
        /// The task id.
        task_id: String,
        /// The attempt the writer runs.
        attempt: u32,
        /// The task's attempt now.
        current: u32,
    },

    /// A wait for a result ended before the task finished. `-32603`.
    #[error("task `{}` did not finish within {waited:?}", shorten(task_id))]
    Timeout {
        /// The task id.
        task_id: String,
        /// How long the caller waited.
        waited: Duration,
    },

    /// A configuration that cannot work (for example a TTL policy whose default exceeds its
    /// maximum). `-32603`.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// The task store's backend failed (a shared store unreachable, or holding data this
    /// crate cannot read). Nothing was changed, or the change cannot be confirmed: read
    /// the task again before retrying. `-32603`.
    #[error("task store unavailable: {message}; retry when the store is reachable again")]
    Store {
        /// What failed, in task words.
        message: String,
        /// The backend's error behind it, if any ([`std::error::Error::source`]).
        #[source]
        cause: Option<StoreCause>,
    },

    /// Anything else that went wrong inside the receiver. `-32603`.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The backend's error behind an [`Error::Store`] (for example the Redis client's), kept
/// as the error's [`source`](std::error::Error::source). Shared, so that [`Error`] stays
/// `Clone`; two causes are equal when they read the same.
#[derive(Debug, Clone)]
pub struct StoreCause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl StoreCause {
    /// Wraps a backend's error (for a [`TaskStore`](crate::TaskStore) of your own).
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreCause(Arc::new(cause))
    }

    /// The backend's error.
    #[must_use]
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::fmt::Display for StoreCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StoreCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for StoreCause {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// Which limit [`Error::LimitExceeded`] hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitScope {
    /// The limit per owner (requestor).
    PerOwner,
    /// The limit over all owners.
    Total,
}

impl std::fmt::Display for LimitScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitScope::PerOwner => "for this requestor",
            LimitScope::Total => "for this server",
        })
    }
}

impl Error {
    /// The JSON-RPC error code for this error.
    #[must_use]
    pub fn code(&self) -> i64 {
        match self {
            Error::TaskNotFound { .. }
            | Error::AlreadyTerminal { .. }
            | Error::IllegalTransition { .. }
            | Error::TaskCancelled { .. }
            | Error::NotFinished { .. }
            | Error::InvalidCursor { .. }
            | Error::InvalidParams { .. } => INVALID_PARAMS,
            Error::TaskRequired { .. }
            | Error::TaskNotSupported { .. }
            | Error::MethodNotFound { .. } => METHOD_NOT_FOUND,
            Error::TaskAugmentationRequired { .. } => INVALID_REQUEST,
            Error::LimitExceeded { .. }
            | Error::CancelRequested { .. }
            | Error::NothingToWaitFor { .. }
            | Error::Superseded { .. }
            | Error::Timeout { .. }
            | Error::InvalidConfig(_)
            | Error::Store { .. }
            | Error::Internal(_) => INTERNAL_ERROR,
        }
    }

    /// This error as a JSON-RPC error object: its code, its message, and for errors about
    /// a known task, `data` with the `taskId` and `status`.
    #[must_use]
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        let error = JsonRpcError::new(self.code(), self.to_string());
        match self {
            Error::AlreadyTerminal { task } => error.with_data(json!({
                "taskId": task.id(),
                "status": task.status(),
            })),
            Error::TaskCancelled { task_id } => error.with_data(json!({
                "taskId": task_id,
                "status": TaskStatus::Cancelled,
            })),
            _ => error,
        }
    }

    /// A store error with this explanation and no underlying error.
    pub fn store(message: impl Into<String>) -> Self {
        Error::Store {
            message: message.into(),
            cause: None,
        }
    }

    /// A store error with this explanation, caused by the backend's `cause` (kept as its
    /// [`source`](std::error::Error::source)).
    pub fn store_caused(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Store {
            message: message.into(),
            cause: Some(StoreCause::new(cause)),
        }
    }

    /// An invalid-params error with this explanation.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Error::InvalidParams {
            message: message.into(),
        }
    }
}

impl From<TransitionError> for Error {
    fn from(err: TransitionError) -> Self {
        Error::from(&err)
    }
}

impl From<&TransitionError> for Error {
    fn from(err: &TransitionError) -> Self {
        if err.from() == TaskStatus::Cancelled {
            return Error::TaskCancelled {
                task_id: err.task.id().to_string(),
            };
        }
        Error::IllegalTransition {
            task_id: err.task.id().to_string(),
            from: err.from(),
            to: err.to,
            message: describe_illegal_move(&err.task, err.to),
        }
    }
}

impl From<Error> for JsonRpcError {
    fn from(err: Error) -> Self {
        err.to_jsonrpc()
    }
}

const _: () = {
    const fn assert_send_sync_static<T: Send + Sync + 'static>() {}
    assert_send_sync_static::<Error>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_spec() {
        let not_found = Error::TaskNotFound {
            task_id: "x".into(),
        };
        assert_eq!(not_found.code(), -32602);
        assert_eq!(Error::InvalidCursor { reason: "r" }.code(), -32602);
        assert_eq!(Error::TaskRequired { tool: "t".into() }.code(), -32601);
        assert_eq!(Error::TaskNotSupported { tool: "t".into() }.code(), -32601);
        assert_eq!(
            Error::TaskAugmentationRequired { method: "m".into() }.code(),
            -32600
        );
        assert_eq!(Error::Internal("x".into()).code(), -32603);
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe");
        let store = Error::store_caused("the request to the shared store failed", io);
        assert_eq!(store.code(), -32603);
        let cause = std::error::Error::source(&store).expect("the backend's error");
        assert_eq!(cause.to_string(), "broken pipe");
        assert!(
            !store.to_string().contains("broken pipe"),
            "the cause is a source, not repeated in the message: {store}"
        );
        assert_eq!(store.clone(), store);
        let rpc = not_found.to_jsonrpc();
        assert_eq!(rpc.code, -32602);
        assert!(rpc.message.starts_with("task not found"));
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let id = "x".repeat(10_000);
        let message = Error::TaskNotFound { task_id: id }.to_string();
        assert!(message.len() < 200, "{}", message.len());
        assert_eq!(shorten("ééééé"), "ééééé");
        let long = "é".repeat(100);
        assert!(shorten(&long).ends_with('…'));
    }
}
