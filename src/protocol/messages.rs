//! Params and results of the task methods, the status notification and the `_meta` keys.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::any::AnyTask;
use crate::id::TaskId;
use crate::jsonrpc::JsonObject;
use crate::status::Working;
use crate::task::Task;

/// The `_meta` key that ties a message to a task: `{"taskId": "..."}`.
pub const RELATED_TASK_META_KEY: &str = "io.modelcontextprotocol/related-task";

/// The optional `_meta` key of a `CreateTaskResult` with text a host may hand to the model
/// at once.
pub const MODEL_IMMEDIATE_RESPONSE_META_KEY: &str =
    "io.modelcontextprotocol/model-immediate-response";

/// The `task` request param that asks for a task: `{ttl?}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// Requested retention in milliseconds from creation; the receiver may override it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::millis::deserialize"
    )]
    pub ttl: Option<u64>,
}

/// The value of the related-task `_meta` key: `{"taskId": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedTaskMetadata {
    /// The related task.
    #[serde(rename = "taskId")]
    pub task_id: TaskId,
}

/// A `_meta` object that ties a message to `task_id`.
#[must_use]
pub fn related_task_meta(task_id: &TaskId) -> JsonObject {
    let mut meta = JsonObject::new();
    insert_related_task(&mut meta, task_id);
    meta
}

/// Adds the related-task key for `task_id` to `meta`, replacing any earlier one.
pub fn insert_related_task(meta: &mut JsonObject, task_id: &TaskId) {
    let mut related = JsonObject::new();
    related.insert("taskId".to_owned(), Value::String(task_id.to_string()));
    meta.insert(RELATED_TASK_META_KEY.to_owned(), Value::Object(related));
}

/// Ties a message's params or result to `task_id`: adds the related-task key to its
/// `_meta` (created if absent or not an object), keeping the other `_meta` keys.
pub fn tag_related_task(object: &mut JsonObject, task_id: &TaskId) {
    match object.get_mut("_meta") {
        Some(Value::Object(meta)) => insert_related_task(meta, task_id),
        _ => {
            object.insert(
                "_meta".to_owned(),
                Value::Object(related_task_meta(task_id)),
            );
        }
    }
}

/// The task a `_meta` object names under the related-task key, if any.
#[must_use]
pub fn related_task(meta: &JsonObject) -> Option<TaskId> {
    meta.get(RELATED_TASK_META_KEY)?
        .get("taskId")?
        .as_str()
        .map(TaskId::from)
}

/// The result of a task-augmented request: `{task, _meta?}`, the task nested under `task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The new task (status `working`).
    pub task: AnyTask,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CreateTaskResult {
    /// The result announcing a new task, which the spec requires to be `working`.
    #[must_use]
    pub fn new(task: Task<Working>) -> Self {
        Self {
            task: task.into_any(),
            meta: None,
        }
    }

    /// The same result with a provisional text for the model under
    /// `io.modelcontextprotocol/model-immediate-response`.
    #[must_use]
    pub fn with_model_immediate_response(mut self, text: impl Into<String>) -> Self {
        self.meta.get_or_insert_with(JsonObject::new).insert(
            MODEL_IMMEDIATE_RESPONSE_META_KEY.to_owned(),
            Value::String(text.into()),
        );
        self
    }

    /// The provisional text for the model, if any.
    #[must_use]
    pub fn model_immediate_response(&self) -> Option<&str> {
        self.meta
            .as_ref()?
            .get(MODEL_IMMEDIATE_RESPONSE_META_KEY)?
            .as_str()
    }
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`: `{taskId}`. Unknown
/// members (a stray `task`, a `_meta`) are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIdParams {
    /// The task asked about.
    #[serde(rename = "taskId")]
    pub task_id: TaskId,
}

/// The params of `tasks/get`.
pub type GetTaskParams = TaskIdParams;
/// The params of `tasks/result`.
pub type GetTaskPayloadParams = TaskIdParams;
/// The params of `tasks/cancel`.
pub type CancelTaskParams = TaskIdParams;

/// A result that is a task: the `Task` fields at the top level plus an optional `_meta`.
/// The result of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task.
    #[serde(flatten)]
    pub task: AnyTask,
    /// Result metadata (never the related-task key: the spec says these results should not
    /// carry it).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl TaskResult {
    /// The result showing `task`.
    #[must_use]
    pub fn new(task: impl Into<AnyTask>) -> Self {
        Self {
            task: task.into(),
            meta: None,
        }
    }
}

/// The result of `tasks/get`.
pub type GetTaskResult = TaskResult;
/// The result of `tasks/cancel` (the task after cancellation).
pub type CancelTaskResult = TaskResult;

/// The params of `tasks/list`: `{cursor?, _meta?}`; the params object itself is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListTasksParams {
    /// Where to continue: the `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `tasks/list`: `{tasks, nextCursor?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// One page of tasks.
    pub tasks: Vec<AnyTask>,
    /// Present if and only if more tasks follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `tasks/result`: the original request's result (e.g. a `CallToolResult`)
/// with the related-task key added to its `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GetTaskPayloadResult(JsonObject);

impl GetTaskPayloadResult {
    /// The stored `result` of `task_id`, tagged with the related-task `_meta` (other `_meta`
    /// keys of the result are kept).
    #[must_use]
    pub fn new(mut result: JsonObject, task_id: &TaskId) -> Self {
        tag_related_task(&mut result, task_id);
        Self(result)
    }

    /// The task this result belongs to, read from its `_meta`.
    #[must_use]
    pub fn task_id(&self) -> Option<TaskId> {
        match self.0.get("_meta") {
            Some(Value::Object(meta)) => related_task(meta),
            _ => None,
        }
    }

    /// The result object, `_meta` included.
    #[must_use]
    pub fn as_object(&self) -> &JsonObject {
        &self.0
    }

    /// The result object, `_meta` included.
    #[must_use]
    pub fn into_object(self) -> JsonObject {
        self.0
    }
}

/// The params of `notifications/tasks/status`: the full task at the top level, plus an
/// optional `_meta` (never the related-task key).
pub type TaskStatusNotificationParams = TaskResult;

/// The notification `notifications/tasks/status`, serialized as a whole JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotification {
    jsonrpc: crate::wire::JsonRpcVersion,
    method: StatusMethod,
    /// The task as it is now.
    pub params: TaskStatusNotificationParams,
}

impl TaskStatusNotification {
    /// The notification announcing `task`'s current state.
    #[must_use]
    pub fn new(task: impl Into<AnyTask>) -> Self {
        Self {
            jsonrpc: crate::wire::JsonRpcVersion,
            method: StatusMethod,
            params: TaskResult::new(task),
        }
    }
}

crate::wire::constant_string!(
    /// The string `"notifications/tasks/status"`.
    StatusMethod = super::methods::TASKS_STATUS
);
