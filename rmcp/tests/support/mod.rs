//! What the tests share: rmcp's own client, started the 2026-07-28 way or the legacy way,
//! and `tasks/get` polling.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, CreateTaskResult,
    ElicitationCapability, ExtensionCapabilities, FormElicitationCapability, GetTaskParams,
    Implementation, JsonObject, ProtocolVersion, ServerCapabilities, ServerConfig,
    TASKS_EXTENSION_ID, TaskPayload,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceError};
use serde_json::Value;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::process::Command;

pub type Client = RunningService<RoleClient, ClientConfig>;

/// The longest a flow may take before the test fails.
pub const LIMIT: Duration = Duration::from_secs(20);

/// The example binary `name`, built by `cargo test` with the examples.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p mcp-tasks-rmcp --examples` \
         (plain `cargo test` does)",
        path.display()
    );
    path
}

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

/// What a test server's `get_info` says: tools and tasks.
pub fn tasks_server_config() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build(),
    )
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

/// Spawns the stdio example (with `--conformance`: the tests call the fixtures too) and
/// connects `config` to it with `lifecycle`.
pub async fn spawn_stdio(config: ClientConfig, lifecycle: ClientLifecycleMode) -> Client {
    spawn_stdio_with(&["--conformance"], config, lifecycle).await
}

/// Spawns the stdio example with `args` and connects `config` to it with `lifecycle`.
pub async fn spawn_stdio_with(
    args: &[&str],
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> Client {
    let mut command = Command::new(example("rmcp_stdio"));
    command.args(args).env_remove("MCP_TASKS_CONFORMANCE");
    let transport = TokioChildProcess::new(command).expect("the stdio example starts");
    tokio::time::timeout(LIMIT, config.serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the lifecycle answers in time")
        .expect("rmcp accepts the example's lifecycle answer")
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

/// A running `rmcp_http` example and its endpoint; killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    /// Kills the instance at once (`SIGKILL`: no hand-over, its leases lapse) and reaps it.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("the example can be killed");
    }

    /// Asks the instance to stop (`SIGTERM`: it hands its redeliverable tasks over) and
    /// waits until it exited.
    pub async fn terminate(&mut self) {
        let pid = self.child.id().expect("the example is running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("`kill` runs");
        assert!(sent.success(), "SIGTERM was not sent");
        tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("the example exits in time")
            .expect("the example is reaped");
    }
}

pub async fn start_http(args: &[&str]) -> Server {
    let mut child = Command::new(example("rmcp_http"))
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the http example starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(LIMIT, BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("the example announces its address in time")
        .expect("its stdout is readable");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| {
            panic!(
                "rmcp_http did not start (first line {line:?}; its stderr is above): an \
                 example built without this test's features? `cargo test` builds the \
                 examples with the same features, `cargo test --test NAME` does not"
            )
        })
        .to_owned();
    Server { child, url }
}

pub async fn connect(
    server: &Server,
    token: Option<&str>,
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, String> {
    let mut transport = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    if let Some(token) = token {
        transport = transport.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(transport);
    tokio::time::timeout(LIMIT, config.serve_with_lifecycle(transport, lifecycle))
        .await
        .map_err(|_| "no lifecycle answer in time".to_owned())?
        .map_err(|err| err.to_string())
}

pub async fn tasks(server: &Server, token: &str) -> Client {
    connect(server, Some(token), tasks_client(), discover())
        .await
        .expect("a client with a valid token connects")
}
