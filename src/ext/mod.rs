//! The tasks extension `io.modelcontextprotocol/tasks` (MCP 2026-07-28): the second wire
//! dialect, over the same core and registry as [`protocol`](crate::protocol).
//!
//! | | 2025-11-25 ([`protocol`](crate::protocol)) | extension (this module) |
//! |---|---|---|
//! | negotiation | `initialize`: `capabilities.tasks` | per request: `_meta[clientCapabilities].extensions[io.modelcontextprotocol/tasks] = {}` |
//! | who makes a task | the requestor asks (`params.task`) | the server decides |
//! | creation reply | `{task: {...}}` | flat, `resultType: "task"` |
//! | timing keys | `ttl`, `pollInterval` | `ttlMs`, `pollIntervalMs` |
//! | the outcome | `tasks/result` (blocks) | inlined in `tasks/get` (`result` / `error`) |
//! | a tool result with `isError` | status `failed` | status `completed` |
//! | input | server→client requests with related-task `_meta` | `inputRequests` in `tasks/get`, answered by `tasks/update` |
//! | cancel | a transition; a terminal task is `-32602` | a request the handler may honour; always acknowledged |
//! | listing | `tasks/list` | none (`-32601`) |
//! | notification | `notifications/tasks/status` (Task) | `notifications/tasks` (DetailedTask), on a `subscriptions/listen` stream ([`ListenRequest`]) |
//!
//! The core stores each outcome neutrally and this module computes its wire status
//! ([`wire_status`]); nothing here lives in the typed core.

mod dispatch;
mod listen;
mod messages;
mod task;

pub use dispatch::ExtDispatcher;
pub use listen::{
    AcknowledgedFilter, AcknowledgedParams, ListenNotification, ListenNotificationParams,
    ListenRequest, SubscriptionMeta, SubscriptionsAcknowledged, SubscriptionsListenResult,
};
pub use messages::{
    Acknowledgement, CancelTaskResult, CreateTaskResult, GetTaskResult, TaskNotification,
    TaskNotificationParams, TasksExtensionCapability, UpdateTaskParams, UpdateTaskResult,
    declares_extension, missing_capability, request_protocol_version,
};
pub use task::{DetailedTask, MissingPayload, TaskFields, wire_status};

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The first protocol revision that carries the extension.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The request `_meta` key with the protocol version of a 2026-07-28 request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The request `_meta` key with the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key naming the `subscriptions/listen` stream a message belongs to (the listen
/// request's JSON-RPC id).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The request `_meta` key with the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The JSON-RPC code for a request that lacks a capability the server needs (`-32021`).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// The JSON-RPC code for an HTTP request whose `Mcp-Method` or `Mcp-Name` header disagrees
/// with its body (`-32020`, core SEP-2243; answered with HTTP 400).
pub const HEADER_MISMATCH: i64 = -32020;

/// The method names of the extension.
pub mod methods {
    /// `tasks/get`: the task with its payload.
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/update`: answers to input requests.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// `tasks/cancel`: a cooperative cancellation request.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `tasks/result`: removed by the extension (answered `-32601`).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list`: removed by the extension (answered `-32601`).
    pub const TASKS_LIST: &str = "tasks/list";
    /// `notifications/tasks`: a task changed.
    pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
    /// `subscriptions/listen`: the 2026-07-28 core's notification stream; with
    /// `notifications.taskIds`, it carries `notifications/tasks` ([`ListenRequest`](super::ListenRequest)).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// `notifications/subscriptions/acknowledged`: the first message of a listen stream.
    pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// `server/discover`: the 2026-07-28 replacement for `initialize`.
    pub const SERVER_DISCOVER: &str = "server/discover";
}
