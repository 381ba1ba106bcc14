//! The extension's task objects: `Task` (the base fields) and `DetailedTask` (plus the
//! payload of the status), and their mapping from and to [`AnyTask`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::id::TaskId;
use crate::input::InputRequests;
use crate::jsonrpc::{INTERNAL_ERROR, JsonObject, JsonRpcError};
use crate::outcome::Outcome;
use crate::status::TaskStatus;

/// The member every 2026-07-28 result carries, and its value for a finished result.
const RESULT_TYPE: &str = "resultType";
const COMPLETE: &str = "complete";

/// The largest integer the extension's schema allows (JavaScript's safe integers).
const MAX_SAFE: u64 = (1 << 53) - 1;

/// The base fields of an extension task (`Task` in its schema): `ttlMs` and
/// `pollIntervalMs` instead of 2025-11-25's `ttl` and `pollInterval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFields {
    /// The task id.
    pub task_id: TaskId,
    /// The status as this dialect shows it ([`wire_status`]).
    pub status: TaskStatus,
    /// A human-readable status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When the task was created.
    pub created_at: Timestamp,
    /// When the task last changed.
    pub last_updated_at: Timestamp,
    /// Retention in milliseconds from creation; `null` is unlimited. Always present.
    #[serde(deserialize_with = "crate::millis::deserialize")]
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::millis::deserialize"
    )]
    pub poll_interval_ms: Option<u64>,
}

/// A task with the payload of its status (`DetailedTask`): the outstanding
/// `inputRequests` of an `input_required` task, the `result` of a completed one, the
/// `error` of a failed one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The base fields.
    #[serde(flatten)]
    pub task: TaskFields,
    /// Every outstanding input request, by key (`input_required` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The result of the underlying request (`completed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
    /// The JSON-RPC error the underlying request failed with (`failed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

/// The status this dialect shows for `task`.
///
/// It differs from the task's own (2025-11-25) status in two places: a result with
/// `isError: true` is `completed` here (the extension keeps `failed` for JSON-RPC
/// errors), and an `input_required` task whose requests are all answered shows `working`
/// until its handler resumes (the extension's `input_required` means "something is
/// outstanding").
#[must_use]
pub fn wire_status(task: &AnyTask) -> TaskStatus {
    match task {
        AnyTask::InputRequired(waiting) if waiting.input_requests().is_empty() => {
            TaskStatus::Working
        }
        AnyTask::Failed(failed) if matches!(failed.outcome(), Some(Outcome::Result(_))) => {
            TaskStatus::Completed
        }
        other => other.status(),
    }
}

fn safe(millis: Option<u64>) -> Option<u64> {
    millis.map(|millis| millis.min(MAX_SAFE))
}

impl From<&AnyTask> for TaskFields {
    fn from(task: &AnyTask) -> Self {
        TaskFields {
            task_id: task.id().clone(),
            status: wire_status(task),
            status_message: task.status_message().map(str::to_owned),
            created_at: task.created_at(),
            last_updated_at: task.last_updated_at(),
            ttl_ms: safe(task.ttl()),
            poll_interval_ms: safe(task.poll_interval()),
        }
    }
}

/// The payload-free failure of a task read from a 2025-11-25 peer, which never carries
/// its outcome.
fn unknown_failure(task: &AnyTask) -> JsonRpcError {
    JsonRpcError::new(
        INTERNAL_ERROR,
        task.status_message().unwrap_or("the task failed"),
    )
}

impl From<&AnyTask> for DetailedTask {
    fn from(task: &AnyTask) -> Self {
        let fields = TaskFields::from(task);
        let mut detailed = DetailedTask {
            task: fields,
            input_requests: None,
            result: None,
            error: None,
        };
        match detailed.task.status {
            TaskStatus::InputRequired => {
                detailed.input_requests = task.input_requests().cloned();
            }
            TaskStatus::Completed => {
                let mut result = match task.outcome() {
                    Some(Outcome::Result(result)) => result.clone(),
                    _ => JsonObject::new(),
                };
                // The inlined result is a 2026-07-28 result of the original request, and
                // every such result names its type.
                result
                    .entry(RESULT_TYPE)
                    .or_insert_with(|| Value::String(COMPLETE.to_owned()));
                detailed.result = Some(result);
            }
            TaskStatus::Failed => {
                detailed.error = Some(match task.outcome() {
                    Some(Outcome::Error(error)) => error.clone(),
                    _ => unknown_failure(task),
                });
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        detailed
    }
}

/// The payload a [`DetailedTask`] is missing for its status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a `{status}` task in the tasks extension must carry `{field}`")]
pub struct MissingPayload {
    /// The status.
    pub status: TaskStatus,
    /// The missing member.
    pub field: &'static str,
}

impl TryFrom<DetailedTask> for AnyTask {
    type Error = MissingPayload;

    /// Reads an extension task into the neutral core: a completed task whose result has
    /// `isError: true` becomes a failed task with that result, as the core (and
    /// 2025-11-25) sees it. `lastUpdatedAt` is kept (never earlier than `createdAt`).
    fn try_from(detailed: DetailedTask) -> Result<Self, Self::Error> {
        let DetailedTask {
            task: fields,
            input_requests,
            result,
            error,
        } = detailed;
        let missing = |field| MissingPayload {
            status: fields.status,
            field,
        };
        let base = crate::task::Task::new(fields.task_id.clone(), fields.created_at)
            .with_ttl(fields.ttl_ms)
            .with_poll_interval(fields.poll_interval_ms);
        let change = crate::task::Change::at(fields.last_updated_at)
            .with_optional_message(fields.status_message.clone());
        let task = match fields.status {
            TaskStatus::Working => {
                let mut task = base;
                task.set_status_message(fields.status_message.clone(), fields.last_updated_at);
                task.into_any()
            }
            TaskStatus::InputRequired => {
                let requests = input_requests.ok_or_else(|| missing("inputRequests"))?;
                base.require_input(requests, change).into_any()
            }
            TaskStatus::Completed => {
                let mut result = result.ok_or_else(|| missing("result"))?;
                // The wire's result type is this dialect's; the core keeps the outcome
                // neutral.
                if result.get(RESULT_TYPE).and_then(Value::as_str) == Some(COMPLETE) {
                    result.remove(RESULT_TYPE);
                }
                AnyTask::from(base.finish(result, change))
            }
            TaskStatus::Failed => {
                let error = error.ok_or_else(|| missing("error"))?;
                let mut failed = base.fail(Outcome::Error(error), change);
                // Keep the peer's status message (or its absence): no diagnostic invented.
                failed.status_message = fields.status_message.clone().map(Into::into);
                failed.into_any()
            }
            TaskStatus::Cancelled => base.cancel(change).into_any(),
        };
        Ok(task)
    }
}
