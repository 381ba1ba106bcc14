//! The 2025-11-25 wire dialect: the tasks utility as MCP revision 2025-11-25 speaks it.
//!
//! Serde types exact to the official schema: the [`Task`](crate::Task) object (the serde
//! form of [`AnyTask`](crate::AnyTask)), the `task` request param ([`TaskMetadata`]),
//! [`CreateTaskResult`], the params and results of `tasks/get`, `tasks/list`,
//! `tasks/cancel` and `tasks/result`, `notifications/tasks/status`, the `_meta` keys, the
//! `tasks` capabilities and `execution.taskSupport`.
//!
//! The typed core is dialect-free: a task stores its outcome neutrally
//! ([`Outcome`](crate::Outcome)), and this module decides how it looks on the wire.
//!
//! # What `tasks/result` returns
//! - `completed`: the stored result, with the related-task `_meta` ([`GetTaskPayloadResult`]).
//! - `failed` by a result (a `CallToolResult` with `isError: true`): that result, as a
//!   successful response, with the related-task `_meta`.
//! - `failed` by a JSON-RPC error: that error, as an error response.
//! - `cancelled`: the spec defines no payload (upstream issue #1956). This crate answers
//!   with a JSON-RPC error `-32602` whose message says the task was cancelled and whose
//!   `data` is `{"taskId": ..., "status": "cancelled"}` ([`Error::TaskCancelled`](crate::Error::TaskCancelled)):
//!   a cancelled request never produced a result, and clients already treat `-32602` from
//!   a task method as "no usable task".

mod capabilities;
mod dispatch;
mod messages;
mod task;

pub use capabilities::{
    ClientTaskRequests, ClientTasksCapability, ElicitationTaskRequests, SamplingTaskRequests,
    ServerTaskRequests, ServerTasksCapability, Supported, TaskSupport, ToolExecution,
    ToolsTaskRequests,
};
pub use dispatch::{
    Augmentation, CANCELLED_BY_REQUEST, DEFAULT_PAGE_SIZE, Dispatcher, augmentation,
};
pub use messages::{
    CancelTaskParams, CancelTaskResult, CreateTaskResult, GetTaskParams, GetTaskPayloadParams,
    GetTaskPayloadResult, GetTaskResult, ListTasksParams, ListTasksResult,
    MODEL_IMMEDIATE_RESPONSE_META_KEY, RELATED_TASK_META_KEY, RelatedTaskMetadata, TaskIdParams,
    TaskMetadata, TaskResult, TaskStatusNotification, TaskStatusNotificationParams,
    insert_related_task, related_task, related_task_meta, tag_related_task,
};

/// The protocol revision this dialect implements.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The method names of the tasks utility.
pub mod methods {
    /// `tasks/get`: poll a task.
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/result`: wait for a task's outcome.
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list`: list the requestor's tasks.
    pub const TASKS_LIST: &str = "tasks/list";
    /// `tasks/cancel`: cancel a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `notifications/tasks/status`: a task changed.
    pub const TASKS_STATUS: &str = "notifications/tasks/status";
}
