//! What the tests share: rmcp's own client, started the 2026-07-28 way or the legacy way,
//! connected in process to a `TaskManager`, and `tasks/get` polling.
#![allow(dead_code)]

use std::time::Duration;

use mcp_tasks_rmcp::TaskManager;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, CreateTaskResult,
    ElicitationCapability, ExtensionCapabilities, FormElicitationCapability, GetTaskParams,
    Implementation, JsonObject, ProtocolVersion, TASKS_EXTENSION_ID, TaskPayload,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceError, ServiceExt};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ClientConfig>;

/// The longest a flow may take before the test fails.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A client declaring the tasks extension and form elicitation.
pub fn tasks_client() -> ClientConfig {
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
    ClientConfig::new(
        capabilities,
        Implementation::new("mcp-tasks-rmcp-tests", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2026_07_28)
}

/// A client that declares nothing (no tasks extension).
pub fn plain_client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcp-tasks-rmcp-tests-plain", env!("CARGO_PKG_VERSION")),
    )
}

/// rmcp's 2026-07-28 lifecycle: `server/discover`, capabilities in every request's `_meta`.
pub fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// `config` connected with `lifecycle` through an in-memory pipe to `tasks`, served by
/// rmcp on this runtime.
pub async fn connect_to(
    tasks: TaskManager,
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> Client {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = tasks.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    tokio::time::timeout(LIMIT, config.serve_with_lifecycle(client_side, lifecycle))
        .await
        .expect("the lifecycle answers in time")
        .expect("rmcp accepts the lifecycle answer")
}

/// A 2026-07-28 client declaring the extension, connected in process to `tasks`.
pub async fn connect(tasks: TaskManager) -> Client {
    connect_to(tasks, tasks_client(), discover()).await
}

/// `name` with `arguments`, as rmcp's client sends it.
pub fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = match arguments {
        Value::Object(object) => Some(object),
        other => panic!("arguments must be an object, not {other}"),
    };
    params
}

/// Calls a tool and expects a task.
pub async fn start_task(client: &Client, name: &'static str, arguments: Value) -> CreateTaskResult {
    match client.call_tool_once(call(name, arguments)).await {
        Ok(CallToolResponse::Task(created)) => created,
        other => panic!("{name} did not become a task: {other:?}"),
    }
}

/// Calls a tool and expects its result at once: its first text and `isError`.
pub async fn call_at_once(
    client: &rmcp::Peer<RoleClient>,
    name: &'static str,
    arguments: Value,
) -> (String, bool) {
    match client.call_tool_once(call(name, arguments)).await {
        Ok(CallToolResponse::Complete(result)) => {
            let result = serde_json::to_value(result).expect("serializes");
            text_of(result.as_object().expect("a result is an object"))
        }
        other => panic!("{name} did not answer at once: {other:?}"),
    }
}

/// Polls `tasks/get` until `done` says so.
pub async fn poll_until<T>(
    client: &Client,
    task_id: &str,
    done: impl Fn(&TaskPayload) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let got = client
                .get_task(GetTaskParams::new(task_id))
                .await
                .expect("tasks/get answers");
            assert_eq!(
                got.task.task.task_id, task_id,
                "tasks/get answered for another task"
            );
            if let Some(found) = done(&got.task.payload) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .expect("the task reached the awaited state in time")
}

/// Polls until the task is terminal and returns its payload.
pub async fn terminal(client: &Client, task_id: &str) -> TaskPayload {
    poll_until(client, task_id, |payload| {
        payload.status().is_terminal().then(|| payload.clone())
    })
    .await
}

/// The first text block and `isError` of a tool result.
pub fn text_of(result: &JsonObject) -> (String, bool) {
    let text = result
        .get("content")
        .and_then(|content| content.get(0))
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (text, is_error)
}

/// The JSON-RPC code of a refused request.
pub fn code(err: ServiceError) -> i32 {
    match err {
        ServiceError::McpError(error) => error.code.0,
        other => panic!("expected a JSON-RPC error, got {other}"),
    }
}

/// Polls `tasks/get` until the task's status message satisfies `wanted`.
pub async fn poll_until_message(client: &Client, task_id: &str, wanted: impl Fn(&str) -> bool) {
    let wait = async {
        loop {
            let got = client
                .get_task(GetTaskParams::new(task_id))
                .await
                .expect("tasks/get answers");
            if got.task.task.status_message.as_deref().is_some_and(&wanted) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .expect("the task said it in time");
}
