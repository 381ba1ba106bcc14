//! Golden JSON of the 2025-11-25 tasks utility, written by hand from the spec
//! (`tasks-digest.md` §1-§6, SCHEMA.TS), never produced by the code under test.
//!
//! Shared by `tests/golden.rs` (our serde form must produce and accept exactly these strings)
//! and `tests/schema.rs` (every string must validate against the official JSON schema and
//! deserialize into the independent `rust-mcp-schema` types).
//!
//! Strings are compact. Members of a struct appear in the order the spec's examples use
//! (`taskId`, `status`, `statusMessage`, `createdAt`, `lastUpdatedAt`, `ttl`,
//! `pollInterval`); members of free-form JSON objects (a tool result, a `_meta`, error
//! `data`) appear in sorted order, because `serde_json::Map` without `preserve_order` (the
//! configuration of this crate) is a `BTreeMap`.

#![allow(dead_code)]

/// The task id of the spec's examples (a canonical UUID).
pub const ID: &str = "786512e2-9e0d-44bd-8f29-789f320fe840";
/// A second canonical UUID.
pub const ID2: &str = "3f9c0a7e-5b1d-4c2e-9a8f-0d6b7e1c2a34";
/// A task id that is not a UUID (ids are opaque strings).
pub const TEXT_ID: &str = "task-42";

// ---------------------------------------------------------------------------------------
// Task objects, one per status (§1, §2)
// ---------------------------------------------------------------------------------------

/// A fresh task: `working`, no message, unlimited retention (`"ttl": null` present).
pub const TASK_WORKING_MINIMAL: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":null}"#;

/// The spec's own example (TASKS L156-164), every field present.
pub const TASK_WORKING_SPEC_EXAMPLE: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":60000,"pollInterval":5000}"#;

/// `working` → `input_required`, with a message.
pub const TASK_INPUT_REQUIRED: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"input_required","statusMessage":"Waiting for the user to confirm the deletion.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:35:00Z","ttl":60000,"pollInterval":5000}"#;

/// `working` → `input_required` → `working` → `completed`; text id, fractional
/// timestamps (milliseconds and nanoseconds), no poll interval.
pub const TASK_COMPLETED: &str = r#"{"taskId":"task-42","status":"completed","statusMessage":"Found 3 matching files.","createdAt":"2025-11-25T10:30:00.123Z","lastUpdatedAt":"2025-11-25T10:31:02.123456789Z","ttl":3600000}"#;

/// `working` → `input_required` → `completed` directly (allowed by the table), no message,
/// unlimited retention.
pub const TASK_COMPLETED_FROM_INPUT_REQUIRED: &str = r#"{"taskId":"3f9c0a7e-5b1d-4c2e-9a8f-0d6b7e1c2a34","status":"completed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:45:00Z","ttl":null,"pollInterval":2000}"#;

/// `working` → `failed` with a JSON-RPC error; the status message is the error's message.
pub const TASK_FAILED_WITH_ERROR: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"failed","statusMessage":"Upstream service unavailable","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z","ttl":60000,"pollInterval":5000}"#;

/// `working` → `failed` by a `CallToolResult` with `isError: true`; the status message is
/// the result's text.
pub const TASK_FAILED_WITH_IS_ERROR: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"failed","statusMessage":"File not found: report.pdf","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z","ttl":60000,"pollInterval":5000}"#;

/// `input_required` → `cancelled`, with a reason.
pub const TASK_CANCELLED: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"cancelled","statusMessage":"Cancelled by the user.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:36:00Z","ttl":60000,"pollInterval":5000}"#;

/// `working` → `cancelled`, bare.
pub const TASK_CANCELLED_BARE: &str = r#"{"taskId":"task-42","status":"cancelled","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:31:00Z","ttl":null}"#;

/// Input only: unknown members (a vendor field, a `_meta`) must be tolerated.
pub const TASK_WITH_UNKNOWN_FIELDS: &str = r#"{"taskId":"task-7","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":30000,"x-vendor-priority":"high","_meta":{"com.example/trace":"abc"}}"#;
/// What [`TASK_WITH_UNKNOWN_FIELDS`] reads as.
pub const TASK_WITH_UNKNOWN_FIELDS_NORMALIZED: &str = r#"{"taskId":"task-7","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":30000}"#;

/// Input only: RFC 3339 with a numeric offset, the same instants as 10:30Z and 10:40Z.
pub const TASK_WITH_OFFSET_TIMESTAMPS: &str = r#"{"taskId":"task-7","status":"working","createdAt":"2025-11-25T12:30:00+02:00","lastUpdatedAt":"2025-11-25T05:40:00-05:00","ttl":null}"#;
/// What [`TASK_WITH_OFFSET_TIMESTAMPS`] reads as.
pub const TASK_WITH_OFFSET_TIMESTAMPS_NORMALIZED: &str = r#"{"taskId":"task-7","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":null}"#;

// ---------------------------------------------------------------------------------------
// Task-augmented requests (§3)
// ---------------------------------------------------------------------------------------

/// `params.task` asking for a task with the receiver's default retention.
pub const TASK_METADATA_EMPTY: &str = r#"{}"#;
/// `params.task` asking for one minute of retention.
pub const TASK_METADATA_TTL: &str = r#"{"ttl":60000}"#;

/// The immediate answer to an accepted task-augmented request: the task nested under `task`.
pub const CREATE_TASK_RESULT: &str = r#"{"task":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":60000,"pollInterval":5000}}"#;

/// The same, with the provisional text for the model (TASKS L171-180).
pub const CREATE_TASK_RESULT_WITH_IMMEDIATE_RESPONSE: &str = r#"{"task":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":null},"_meta":{"io.modelcontextprotocol/model-immediate-response":"The analysis has started and will take a few minutes."}}"#;

// ---------------------------------------------------------------------------------------
// Methods (§4)
// ---------------------------------------------------------------------------------------

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`.
pub const TASK_ID_PARAMS: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}"#;

/// Input only: a stray `task` and a related-task `_meta` naming another task; the `taskId`
/// param wins (TASKS L472).
pub const TASK_ID_PARAMS_WITH_NOISE: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","task":{"ttl":1000},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"3f9c0a7e-5b1d-4c2e-9a8f-0d6b7e1c2a34"}}}"#;

/// `tasks/get` result: the Task fields at the top level of `result`.
pub const GET_TASK_RESULT: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"input_required","statusMessage":"Waiting for the user to confirm the deletion.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:35:00Z","ttl":60000,"pollInterval":5000}"#;

/// `tasks/get` result with a result `_meta` after the Task fields.
pub const GET_TASK_RESULT_WITH_META: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":null,"_meta":{"com.example/served-by":"node-3"}}"#;

/// `tasks/cancel` result: the task after cancellation, fields at the top level.
pub const CANCEL_TASK_RESULT: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"cancelled","statusMessage":"Cancelled by the user.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:36:00Z","ttl":60000,"pollInterval":5000}"#;

/// `tasks/list` params: first page.
pub const LIST_TASKS_PARAMS_EMPTY: &str = r#"{}"#;
/// `tasks/list` params: a later page.
pub const LIST_TASKS_PARAMS_CURSOR: &str = r#"{"cursor":"eyJwYWdlIjoyfQ"}"#;
/// `tasks/list` params: a later page, with a progress token in `_meta`.
pub const LIST_TASKS_PARAMS_CURSOR_META: &str =
    r#"{"cursor":"eyJwYWdlIjoyfQ","_meta":{"progressToken":7}}"#;

/// `tasks/list` result with more pages to come.
pub const LIST_TASKS_RESULT: &str = r#"{"tasks":[{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":60000,"pollInterval":5000},{"taskId":"3f9c0a7e-5b1d-4c2e-9a8f-0d6b7e1c2a34","status":"completed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:45:00Z","ttl":null,"pollInterval":2000}],"nextCursor":"eyJwYWdlIjozfQ"}"#;

/// `tasks/list` result, last page.
pub const LIST_TASKS_RESULT_LAST_PAGE: &str = r#"{"tasks":[{"taskId":"task-42","status":"cancelled","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:31:00Z","ttl":null}]}"#;

/// `tasks/list` result, nothing to list.
pub const LIST_TASKS_RESULT_EMPTY: &str = r#"{"tasks":[]}"#;

/// `tasks/result` of a completed `tools/call`: the `CallToolResult` plus the related-task
/// `_meta` (MUST, TASKS L755).
pub const PAYLOAD_RESULT: &str = r#"{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"task-42"}},"content":[{"text":"Found 3 matching files.","type":"text"}],"isError":false}"#;

/// `tasks/result` of a result that already had a `_meta`: its keys are kept.
pub const PAYLOAD_RESULT_KEEPS_META: &str = r#"{"_meta":{"com.example/trace":"abc","io.modelcontextprotocol/related-task":{"taskId":"task-42"}},"content":[{"text":"Found 3 matching files.","type":"text"}],"structuredContent":{"count":3}}"#;

/// `tasks/result` of a task that failed by `isError: true`: a successful response
/// carrying that `CallToolResult` (TASKS L860-863).
pub const PAYLOAD_RESULT_IS_ERROR: &str = r#"{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}},"content":[{"text":"File not found: report.pdf","type":"text"}],"isError":true}"#;

/// The whole `notifications/tasks/status` message (TASKS L286-298).
pub const STATUS_NOTIFICATION: &str = r#"{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"completed","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:50:00Z","ttl":60000,"pollInterval":5000}}"#;

/// The value of `_meta["io.modelcontextprotocol/related-task"]`.
pub const RELATED_TASK: &str = r#"{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}"#;
/// A whole `_meta` object carrying only the related-task key.
pub const RELATED_TASK_META: &str =
    r#"{"io.modelcontextprotocol/related-task":{"taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}}"#;

// ---------------------------------------------------------------------------------------
// Capabilities (§5)
// ---------------------------------------------------------------------------------------

/// `ServerCapabilities.tasks` declaring everything.
pub const SERVER_TASKS_ALL: &str = r#"{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}"#;
/// `ServerCapabilities.tasks` declaring nothing.
pub const SERVER_TASKS_EMPTY: &str = r#"{}"#;
/// Input only: leaves with members read as present.
pub const SERVER_TASKS_LEAVES_WITH_MEMBERS: &str =
    r#"{"list":{"x-page-size":50},"requests":{"tools":{"call":{"x-max-ttl":86400000}}}}"#;
/// What [`SERVER_TASKS_LEAVES_WITH_MEMBERS`] reads as.
pub const SERVER_TASKS_LEAVES_WITH_MEMBERS_NORMALIZED: &str =
    r#"{"list":{},"requests":{"tools":{"call":{}}}}"#;

/// `ClientCapabilities.tasks` declaring everything (TASKS lifecycle example).
pub const CLIENT_TASKS_ALL: &str = r#"{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}"#;
/// `ClientCapabilities.tasks` declaring only task-augmented elicitation.
pub const CLIENT_TASKS_ELICITATION_ONLY: &str = r#"{"requests":{"elicitation":{"create":{}}}}"#;

/// `Tool.execution` without `taskSupport` (means `forbidden`).
pub const TOOL_EXECUTION_ABSENT: &str = r#"{}"#;
/// `Tool.execution` forbidding tasks explicitly.
pub const TOOL_EXECUTION_FORBIDDEN: &str = r#"{"taskSupport":"forbidden"}"#;
/// `Tool.execution` allowing tasks.
pub const TOOL_EXECUTION_OPTIONAL: &str = r#"{"taskSupport":"optional"}"#;
/// `Tool.execution` requiring tasks.
pub const TOOL_EXECUTION_REQUIRED: &str = r#"{"taskSupport":"required"}"#;

// ---------------------------------------------------------------------------------------
// Errors (§6)
// ---------------------------------------------------------------------------------------

/// A JSON-RPC error object without `data` (spec example message, TASKS L779-835).
pub const JSONRPC_ERROR: &str =
    r#"{"code":-32602,"message":"Failed to retrieve task: Task not found"}"#;
/// A JSON-RPC error object with `data`.
pub const JSONRPC_ERROR_WITH_DATA: &str = r#"{"code":-32602,"message":"Cannot cancel task: already in terminal status 'completed'","data":{"status":"completed","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}}"#;

/// `code` and `data` of the error for cancelling a completed task (message checked apart).
pub const ALREADY_TERMINAL_DATA: &str =
    r#"{"status":"completed","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840"}"#;
/// `data` of the error for a cancelled task's result.
pub const TASK_CANCELLED_DATA: &str = r#"{"status":"cancelled","taskId":"task-42"}"#;

// ---------------------------------------------------------------------------------------
// The table `tests/schema.rs` walks
// ---------------------------------------------------------------------------------------

/// What a golden string is, in the official schema's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `$defs/Task`.
    Task,
    /// `$defs/TaskStatus`.
    TaskStatus,
    /// `$defs/TaskMetadata`.
    TaskMetadata,
    /// `$defs/CreateTaskResult`.
    CreateTaskResult,
    /// The inline `params` of `$defs/GetTaskRequest`, `GetTaskPayloadRequest`,
    /// `CancelTaskRequest`.
    TaskIdParams,
    /// `$defs/GetTaskResult`.
    GetTaskResult,
    /// `$defs/CancelTaskResult`.
    CancelTaskResult,
    /// `$defs/PaginatedRequestParams` (the params of `ListTasksRequest`).
    ListTasksParams,
    /// `$defs/ListTasksResult`.
    ListTasksResult,
    /// `$defs/GetTaskPayloadResult`, here always a `CallToolResult`.
    GetTaskPayloadResult,
    /// `$defs/TaskStatusNotification`.
    TaskStatusNotification,
    /// `$defs/RelatedTaskMetadata`.
    RelatedTaskMetadata,
    /// `$defs/ServerCapabilities/properties/tasks`.
    ServerTasks,
    /// `$defs/ClientCapabilities/properties/tasks`.
    ClientTasks,
    /// `$defs/ToolExecution`.
    ToolExecution,
    /// `$defs/Error`.
    Error,
}

/// One golden string.
#[derive(Debug, Clone, Copy)]
pub struct Golden {
    /// The constant's name.
    pub name: &'static str,
    /// What it is.
    pub kind: Kind,
    /// The JSON.
    pub json: &'static str,
    /// Whether our serializer is expected to reproduce it (`false` for inputs with members
    /// that are read and dropped, or non-canonical spellings).
    pub canonical: bool,
}

macro_rules! goldens {
    ($($kind:ident $canonical:literal $name:ident),* $(,)?) => {
        /// Every golden string, with its kind.
        pub const ALL: &[Golden] = &[
            $(Golden { name: stringify!($name), kind: Kind::$kind, json: $name, canonical: $canonical },)*
        ];
    };
}

pub const STATUS_WORKING: &str = r#""working""#;
pub const STATUS_INPUT_REQUIRED: &str = r#""input_required""#;
pub const STATUS_COMPLETED: &str = r#""completed""#;
pub const STATUS_FAILED: &str = r#""failed""#;
pub const STATUS_CANCELLED: &str = r#""cancelled""#;

goldens![
    TaskStatus true STATUS_WORKING,
    TaskStatus true STATUS_INPUT_REQUIRED,
    TaskStatus true STATUS_COMPLETED,
    TaskStatus true STATUS_FAILED,
    TaskStatus true STATUS_CANCELLED,
    Task true TASK_WORKING_MINIMAL,
    Task true TASK_WORKING_SPEC_EXAMPLE,
    Task true TASK_INPUT_REQUIRED,
    Task true TASK_COMPLETED,
    Task true TASK_COMPLETED_FROM_INPUT_REQUIRED,
    Task true TASK_FAILED_WITH_ERROR,
    Task true TASK_FAILED_WITH_IS_ERROR,
    Task true TASK_CANCELLED,
    Task true TASK_CANCELLED_BARE,
    Task false TASK_WITH_UNKNOWN_FIELDS,
    Task true TASK_WITH_UNKNOWN_FIELDS_NORMALIZED,
    Task false TASK_WITH_OFFSET_TIMESTAMPS,
    Task true TASK_WITH_OFFSET_TIMESTAMPS_NORMALIZED,
    TaskMetadata true TASK_METADATA_EMPTY,
    TaskMetadata true TASK_METADATA_TTL,
    CreateTaskResult true CREATE_TASK_RESULT,
    CreateTaskResult true CREATE_TASK_RESULT_WITH_IMMEDIATE_RESPONSE,
    TaskIdParams true TASK_ID_PARAMS,
    TaskIdParams false TASK_ID_PARAMS_WITH_NOISE,
    GetTaskResult true GET_TASK_RESULT,
    GetTaskResult true GET_TASK_RESULT_WITH_META,
    CancelTaskResult true CANCEL_TASK_RESULT,
    ListTasksParams true LIST_TASKS_PARAMS_EMPTY,
    ListTasksParams true LIST_TASKS_PARAMS_CURSOR,
    ListTasksParams true LIST_TASKS_PARAMS_CURSOR_META,
    ListTasksResult true LIST_TASKS_RESULT,
    ListTasksResult true LIST_TASKS_RESULT_LAST_PAGE,
    ListTasksResult true LIST_TASKS_RESULT_EMPTY,
    GetTaskPayloadResult true PAYLOAD_RESULT,
    GetTaskPayloadResult true PAYLOAD_RESULT_KEEPS_META,
    GetTaskPayloadResult true PAYLOAD_RESULT_IS_ERROR,
    TaskStatusNotification true STATUS_NOTIFICATION,
    RelatedTaskMetadata true RELATED_TASK,
    ServerTasks true SERVER_TASKS_ALL,
    ServerTasks true SERVER_TASKS_EMPTY,
    ServerTasks false SERVER_TASKS_LEAVES_WITH_MEMBERS,
    ServerTasks true SERVER_TASKS_LEAVES_WITH_MEMBERS_NORMALIZED,
    ClientTasks true CLIENT_TASKS_ALL,
    ClientTasks true CLIENT_TASKS_ELICITATION_ONLY,
    ToolExecution true TOOL_EXECUTION_ABSENT,
    ToolExecution true TOOL_EXECUTION_FORBIDDEN,
    ToolExecution true TOOL_EXECUTION_OPTIONAL,
    ToolExecution true TOOL_EXECUTION_REQUIRED,
    Error true JSONRPC_ERROR,
    Error true JSONRPC_ERROR_WITH_DATA,
];
