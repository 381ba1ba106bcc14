//! rmcp 3.11's own `task_manager` against `mcp_tasks_rmcp::TaskManager` (a server of the
//! server library, on its in-process registry), each as an rmcp server, driven through an
//! in-memory pipe by the same rmcp client on the same workload, phase by phase, in one
//! tokio runtime with two worker threads. Not a test: it prints times and ratios.
//!
//! ```text
//! cargo bench -p mcp-tasks-rmcp --bench vs_rmcp [-- N]
//! ```
//!
//! Phases, each over N tasks (default 1000):
//! - `create`: N `tools/call` whose task asks for one input;
//! - `get`: one `tasks/get` per task (once all are `input_required`);
//! - `update+finish`: one `tasks/update` per task, until every task is `completed`;
//! - `cancel+settle`: N more tasks waiting for a cancel, one `tasks/cancel` each, until
//!   every one is `cancelled`.
//!
//! Settling is observed by polling `tasks/get` over the tasks still open, as a client
//! would, and counts in the phase; rmcp's manager sweeps every stored task on each call,
//! so its cost grows with the number of tasks.

use std::time::{Duration, Instant};

use mcp_tasks::Limits;
use mcp_tasks_server::{Context, Elicited, Exit, NoArguments, Server, TaskSupport, Tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, ContentBlock, CreateTaskResult, ExtensionCapabilities, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, InputResponses, JsonObject, ProtocolVersion,
    ServerCapabilities, ServerConfig, TASKS_EXTENSION_ID, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, ErrorData, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

type Client = RunningService<RoleClient, ClientConfig>;

/// rmcp's own task manager behind an rmcp server: `ask` asks for one input, `wait` waits
/// for a cancel.
#[derive(Clone, Default)]
struct Theirs {
    tasks: rmcp::task_manager::TaskManager,
}

impl ServerHandler for Theirs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        use rmcp::task_manager::{TaskExit, TaskOptions};
        let asks = request.name == "ask";
        let task = self.tasks.spawn(TaskOptions::default(), move |ctx| {
            Box::pin(async move {
                if asks {
                    let request: InputRequest = serde_json::from_value(json!({
                        "method": "elicitation/create",
                        "params": {"mode": "form", "message": "go?",
                                   "requestedSchema": {"type": "object", "properties": {}}}
                    }))
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                    ctx.request_input("k", request).await?;
                    Ok::<_, TaskExit>(CallToolResult::success(vec![ContentBlock::text("done")]))
                } else {
                    ctx.cancelled().await;
                    Err(TaskExit::Cancelled)
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// The form `ask` fills: nothing.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// The same tools written for the server library.
fn ours() -> mcp_tasks_rmcp::TaskManager {
    async fn ask(ctx: Context, _: NoArguments) -> Result<String, Exit> {
        match ctx.elicit::<Nothing>("k", "go?").await? {
            Elicited::Accept(Nothing {}) | Elicited::Decline | Elicited::Cancel => {
                Ok("done".into())
            }
        }
    }
    async fn wait(ctx: Context, _: NoArguments) -> Result<String, Exit> {
        ctx.cancelled().await;
        Err(Exit::cancelled())
    }
    let server = Server::builder()
        .limits(Limits::none())
        .tool(
            Tool::new("ask")
                .task_support(TaskSupport::Optional)
                .run(ask),
        )
        .tool(
            Tool::new("wait")
                .task_support(TaskSupport::Optional)
                .run(wait),
        )
        .build()
        .expect("the server builds");
    mcp_tasks_rmcp::TaskManager::new(server)
}

/// A 2026-07-28 client declaring the extension, connected to `server` through a pipe.
async fn connect(server: impl ServerHandler) -> Client {
    let (server_side, client_side) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    ClientConfig::new(capabilities, Implementation::new("vs_rmcp", "0"))
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
        .serve_with_lifecycle(
            client_side,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client connects")
}

#[derive(Default, Debug)]
struct Phases {
    create: Duration,
    get: Duration,
    update: Duration,
    cancel: Duration,
}

async fn create(client: &Client, tool: &'static str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        match client
            .call_tool_once(CallToolRequestParams::new(tool))
            .await
        {
            Ok(CallToolResponse::Task(created)) => ids.push(created.task.task_id),
            other => panic!("{tool} did not become a task: {other:?}"),
        }
    }
    ids
}

/// Polls `tasks/get` until every task is `want`; the time is part of the phase.
async fn until_all(client: &Client, ids: &[String], want: TaskStatus) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut left: Vec<&String> = ids.iter().collect();
    while !left.is_empty() {
        let mut still = Vec::new();
        for id in left {
            let got = client.get_task(GetTaskParams::new(id.clone())).await;
            if got.map(|got| got.task.status()).ok() != Some(want) {
                still.push(id);
            }
        }
        left = still;
        assert!(
            Instant::now() < deadline,
            "{} tasks never reached {want:?}",
            left.len()
        );
        if !left.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

async fn run(client: Client, n: usize) -> Phases {
    let mut phases = Phases::default();
    let started = Instant::now();
    let ids = create(&client, "ask", n).await;
    phases.create = started.elapsed();
    until_all(&client, &ids, TaskStatus::InputRequired).await;

    let started = Instant::now();
    let mut keys = Vec::with_capacity(n);
    for id in &ids {
        let got = client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        match got.task.payload {
            TaskPayload::InputRequired { input_requests } => {
                keys.push(input_requests.into_keys().next().expect("one request"));
            }
            other => panic!("not waiting for input: {other:?}"),
        }
    }
    phases.get = started.elapsed();

    let started = Instant::now();
    for (id, key) in ids.iter().zip(keys) {
        let mut answer = InputResponses::new();
        answer.insert(key, json!({"action": "accept", "content": {}}));
        client
            .update_task(UpdateTaskParams::new(id.clone(), answer))
            .await
            .expect("tasks/update");
    }
    until_all(&client, &ids, TaskStatus::Completed).await;
    phases.update = started.elapsed();

    let waiting = create(&client, "wait", n).await;
    let started = Instant::now();
    for id in &waiting {
        client
            .cancel_task(CancelTaskParams::new(id.clone()))
            .await
            .expect("tasks/cancel");
    }
    until_all(&client, &waiting, TaskStatus::Cancelled).await;
    phases.cancel = started.elapsed();
    let _ = client.cancel().await;
    phases
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let theirs = runtime.block_on(async { run(connect(Theirs::default()).await, n).await });
    let mine = runtime.block_on(async { run(connect(ours()).await, n).await });
    println!("{n} tasks per phase, rmcp's client over an in-memory pipe, tokio with 2 workers");
    println!(
        "{:<15} {:>14} {:>16} {:>8}",
        "phase", "rmcp (ms)", "mcp-tasks (ms)", "ratio"
    );
    for (name, a, b) in [
        ("create", theirs.create, mine.create),
        ("get", theirs.get, mine.get),
        ("update+finish", theirs.update, mine.update),
        ("cancel+settle", theirs.cancel, mine.cancel),
    ] {
        println!(
            "{name:<15} {:>14.2} {:>16.2} {:>8.2}",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64().max(1e-9)
        );
    }
}
