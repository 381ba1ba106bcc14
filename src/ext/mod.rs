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
//! | input before (or without) a task | none | an `InputRequiredResult`, retried with `inputResponses` and `requestState` (below) |
//! | cancel | a transition; a terminal task is `-32602` | a request the handler may honour; always acknowledged |
//! | listing | `tasks/list` | none (`-32601`) |
//! | notification | `notifications/tasks/status` (Task) | `notifications/tasks` (DetailedTask), on a `subscriptions/listen` stream ([`ListenRequest`]) |
//!
//! The core stores each outcome neutrally and this module computes its wire status
//! ([`wire_status`]); nothing here lives in the typed core.
//!
//! # Input before a task
//! A 2026-07-28 request can ask for input without being a task (SEP-2322, multi
//! round-trip requests): the tool answers an [`InputRequiredResult`] (`resultType:
//! "input_required"`, `inputRequests`, `requestState`), and the client calls again with
//! `inputResponses` and the `requestState` unchanged. The requests and answers are the
//! tasks' own ([`InputRequests`](crate::InputRequests),
//! [`InputResponses`](crate::InputResponses)). [`RequestStates`] reads each retry as a
//! [`Round`] and answers each [`Ask`], sealing a `requestState` the server can trust
//! (authenticated by a keyed [`StateMac`], bound to the caller and the request, expiring).
//! Rounds compose with tasks as the extension describes: a tool may run rounds first and
//! then answer the last retry with a `CreateTaskResult`.
//!
//! ```
//! use mcp_tasks::ext::{Ask, RequestStates, StateMac, StateScope, TAG_LEN};
//! use mcp_tasks::{InputRequest, InputRequests, Owner};
//! use serde_json::json;
//!
//! # struct Hmac; // HMAC-SHA256 under the server's key, in a real server
//! # impl StateMac for Hmac {
//! #     fn tag(&self, message: &[u8]) -> [u8; TAG_LEN] {
//! #         let mut tag = [0; TAG_LEN];
//! #         for (n, byte) in message.iter().enumerate() { tag[n % TAG_LEN] ^= byte.rotate_left(n as u32); }
//! #         tag
//! #     }
//! # }
//! let states = RequestStates::new(Hmac);
//! let alice = Owner::new("alice");
//! let call = json!({"name": "confirm", "arguments": {"question": "Go?"}});
//! let scope = StateScope::of_request(&alice, "tools/call", Some(&call));
//!
//! // Round 0 asks.
//! let round = states.round(&scope, Some(&call))?;
//! let form = json!({"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}});
//! let ask = Ask::new(InputRequests::new().with("go", InputRequest::elicitation(
//!     form.as_object().cloned().unwrap_or_default(),
//! )));
//! let asked = states.ask(&scope, &round, ask);
//! assert_eq!(serde_json::to_value(&asked)?["resultType"], "input_required");
//!
//! // The retry carries the answer and the state back.
//! let mut retry = call.clone();
//! retry["inputResponses"] = json!({"go": {"action": "accept", "content": {}}});
//! retry["requestState"] = json!(asked.request_state());
//! let round = states.round(&scope, Some(&retry))?;
//! assert_eq!(round.number(), 1);
//! assert_eq!(round.response("go").map(|answer| &answer["action"]), Some(&json!("accept")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod dispatch;
mod listen;
mod messages;
mod mrtr;
mod request_state;
mod task;

pub use dispatch::ExtDispatcher;
pub use listen::{
    AcknowledgedFilter, AcknowledgedParams, ListenNotification, ListenNotificationParams,
    ListenRequest, SubscriptionMeta, SubscriptionsAcknowledged, SubscriptionsListenResult,
};
pub use messages::{
    Acknowledgement, CancelTaskResult, CreateTaskResult, GetTaskResult, TaskNotification,
    TaskNotificationParams, TasksExtensionCapability, UpdateTaskParams, UpdateTaskResult,
    capability_required, declares_capability, declares_extension, missing_capability,
    request_protocol_version,
};
pub use mrtr::{Ask, InputRequiredResult, NothingAsked, Round};
pub use request_state::{
    DEFAULT_LIFETIME, MAX_STATE_LEN, RequestStates, RoundError, StateMac, StateScope, TAG_LEN,
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
