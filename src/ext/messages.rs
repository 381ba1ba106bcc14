//! The extension's results, params, notification and capability.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::any::AnyTask;
use crate::ext::task::{DetailedTask, TaskFields};
use crate::ext::{EXTENSION_ID, MISSING_REQUIRED_CLIENT_CAPABILITY};
use crate::id::TaskId;
use crate::jsonrpc::{JsonObject, JsonRpcError};
use crate::status::Working;
use crate::task::Task;

crate::wire::constant_string!(
    /// `"task"`: the `resultType` of a `CreateTaskResult`.
    ResultTypeTask = "task"
);
crate::wire::constant_string!(
    /// `"complete"`: the `resultType` of every other result.
    ResultTypeComplete = "complete"
);
crate::wire::constant_string!(
    /// The string `"notifications/tasks"`.
    TasksNotificationMethod = super::methods::NOTIFICATIONS_TASKS
);

/// The answer to a `tools/call` the server runs as a task: flat task fields with
/// `resultType: "task"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    #[serde(rename = "resultType")]
    result_type: ResultTypeTask,
    /// The new task.
    #[serde(flatten)]
    pub task: TaskFields,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CreateTaskResult {
    /// The result announcing a new task (which starts `working`).
    #[must_use]
    pub fn new(task: &Task<Working>) -> Self {
        Self {
            result_type: ResultTypeTask,
            task: TaskFields::from(&task.clone().into_any()),
            meta: None,
        }
    }
}

/// The result of `tasks/get`: the detailed task with `resultType: "complete"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetTaskResult {
    #[serde(rename = "resultType")]
    result_type: ResultTypeComplete,
    /// The task with the payload of its status.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl GetTaskResult {
    /// The result showing `task`.
    #[must_use]
    pub fn new(task: &AnyTask) -> Self {
        Self {
            result_type: ResultTypeComplete,
            task: DetailedTask::from(task),
            meta: None,
        }
    }
}

/// The empty acknowledgement `{"resultType": "complete"}` of `tasks/update` and
/// `tasks/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Acknowledgement {
    #[serde(rename = "resultType")]
    result_type: ResultTypeComplete,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of `tasks/update`.
pub type UpdateTaskResult = Acknowledgement;
/// The result of `tasks/cancel` (no task: cancellation is cooperative).
pub type CancelTaskResult = Acknowledgement;

/// The params of `tasks/update`: answers to a task's input requests, by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: TaskId,
    /// The answers (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`), by key.
    pub input_responses: JsonObject,
}

/// The params of `notifications/tasks`: the detailed task (no `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskNotificationParams {
    /// The task with the payload of its status.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Notification metadata (on a `subscriptions/listen` stream, its subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The notification `notifications/tasks`, as a whole JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskNotification {
    jsonrpc: crate::wire::JsonRpcVersion,
    method: TasksNotificationMethod,
    /// The task as it is now.
    pub params: TaskNotificationParams,
}

impl TaskNotification {
    /// The notification announcing `task`'s current state.
    #[must_use]
    pub fn new(task: &AnyTask) -> Self {
        Self {
            jsonrpc: crate::wire::JsonRpcVersion,
            method: TasksNotificationMethod,
            params: TaskNotificationParams {
                task: DetailedTask::from(task),
                meta: None,
            },
        }
    }
}

/// The extension's capability object: exactly `{}` (the schema admits no member).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TasksExtensionCapability;

impl Serialize for TasksExtensionCapability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::protocol::Supported.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TasksExtensionCapability {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::protocol::Supported::deserialize(deserializer).map(|_| TasksExtensionCapability)
    }
}

/// The `-32021` error for a request that needs the extension but did not declare it, with
/// `data.requiredCapabilities` naming it.
#[must_use]
pub fn missing_capability(message: impl Into<String>) -> JsonRpcError {
    JsonRpcError::new(MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data(json!({
        "requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}
    }))
}

/// The `-32021` error for a request that needs the client `capability` (`elicitation`,
/// `sampling`, `roots`) but did not declare it, with `data.requiredCapabilities` naming it
/// (a `ClientCapabilities` object: `{"sampling": {}}`).
#[must_use]
pub fn capability_required(capability: &str, message: impl Into<String>) -> JsonRpcError {
    JsonRpcError::new(MISSING_REQUIRED_CLIENT_CAPABILITY, message)
        .with_data(json!({"requiredCapabilities": {capability: {}}}))
}

/// Whether a 2026-07-28 request's `_meta` declares the client `capability` (`elicitation`,
/// `sampling`, `roots`): `_meta["io.modelcontextprotocol/clientCapabilities"][capability]`
/// is an object.
#[must_use]
pub fn declares_capability(params: Option<&Value>, capability: &str) -> bool {
    params
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(super::META_CLIENT_CAPABILITIES))
        .and_then(|capabilities| capabilities.get(capability))
        .is_some_and(Value::is_object)
}

/// Whether a request's `_meta` declares the extension:
/// `_meta["io.modelcontextprotocol/clientCapabilities"].extensions["io.modelcontextprotocol/tasks"]`.
#[must_use]
pub fn declares_extension(params: Option<&Value>) -> bool {
    params
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(super::META_CLIENT_CAPABILITIES))
        .and_then(|capabilities| capabilities.get("extensions"))
        .and_then(|extensions| extensions.get(EXTENSION_ID))
        .is_some_and(Value::is_object)
}

/// The protocol version a 2026-07-28-framed request names in its `_meta`, if any.
#[must_use]
pub fn request_protocol_version(params: Option<&Value>) -> Option<&str> {
    params?
        .get("_meta")?
        .get(super::META_PROTOCOL_VERSION)?
        .as_str()
}
