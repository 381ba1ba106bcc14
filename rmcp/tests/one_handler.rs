//! One handler function, two hosts: the tools below are written once against the server
//! library and served both by the library's own stdio transport (driven in process by
//! `mcp_tasks_server::testing::LineClient`) and by rmcp through `TaskManager`, with the
//! same results. At once, what a handler sends its client (progress, a log message, an
//! elicitation on 2025-11-25) goes through rmcp's peer, before the answer.
#![allow(
    deprecated,
    reason = "the client reads log messages, which SEP-2577 deprecates for 2026-07-28"
)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::peer::LogLevel;
use mcp_tasks_server::testing::LineClient;
use mcp_tasks_server::{Context, Elicited, Exit, NoArguments, Server, TaskSupport, Tool};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation,
    LoggingMessageNotificationParam, ProgressNotificationParam, TaskPayload,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::*;

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// How far to count.
    to: u32,
}

#[derive(Serialize, Deserialize)]
struct Counted {
    done: u32,
}

/// Counts, a few milliseconds a number, saving how far it got.
async fn count(ctx: Context, Count { to }: Count) -> Result<String, Exit> {
    let from = ctx
        .checkpoint::<Counted>()?
        .map_or(0, |counted| counted.done);
    for done in from..to {
        ctx.sleep(Duration::from_millis(5)).await?;
        ctx.save_checkpoint(&Counted { done: done + 1 })?;
    }
    Ok(format!("counted to {to} on attempt {}", ctx.attempt()))
}

/// Reports its progress and logs, then answers.
async fn report(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    ctx.progress(1, Some(2), Some("half way"));
    ctx.log(LogLevel::Info, "report", json!("hello"));
    ctx.progress(2, Some(2), None);
    Ok("reported".into())
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Asks for a name and greets it.
async fn greet(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    match ctx.elicit::<Name>("name", "Your name?").await? {
        Elicited::Accept(Name { name }) => Ok(format!("Hello, {name}!")),
        Elicited::Decline | Elicited::Cancel => Ok("Hello, stranger!".into()),
    }
}

fn server() -> Server {
    Server::builder()
        .tool(
            Tool::new("count")
                .task_support(TaskSupport::Optional)
                .run(count),
        )
        .tool(Tool::new("report").run(report))
        .tool(Tool::new("greet").run(greet))
        .logging()
        .build()
        .expect("the server builds")
}

/// The first text of a `CallToolResult` in JSON.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_handler_answers_the_same_under_the_library_and_under_rmcp() {
    // The library's own stdio transport, 2025-11-25 tasks and 2026-07-28 tasks.
    let own = tokio::task::spawn_blocking(|| {
        let mut client = LineClient::start(server());
        let at_once = client.request(
            "tools/call",
            json!({"name": "count", "arguments": {"to": 3}}),
        );
        let created = client.request(
            "tools/call",
            json!({"name": "count", "arguments": {"to": 3}, "task": {}}),
        );
        let id = created["result"]["task"]["taskId"].clone();
        let result = client.request("tasks/result", json!({"taskId": id}));
        (
            text(&at_once["result"]).to_owned(),
            text(&result["result"]).to_owned(),
        )
    })
    .await
    .expect("the stdio client ran");
    assert_eq!(own.0, "counted to 3 on attempt 1");
    assert_eq!(own.1, "counted to 3 on attempt 1");

    // rmcp, 2026-07-28: a task, and at once for a client without the extension.
    let rmcp = connect(TaskManager::new(server())).await;
    let created = start_task(&rmcp, "count", json!({"to": 3})).await;
    match terminal(&rmcp, &created.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result).0, own.1);
        }
        other => panic!("expected completed, got {other:?}"),
    }
    let mut plain = tasks_client();
    plain.capabilities.extensions = None;
    let plain = connect_to(TaskManager::new(server()), plain, discover()).await;
    assert_eq!(
        call_at_once(&plain, "count", json!({"to": 3})).await.0,
        own.0
    );
}

/// A client that records what the server sends it and answers elicitations.
#[derive(Clone, Default)]
struct Recorder {
    heard: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
        ClientConfig::new(capabilities, Implementation::new("recorder", "1.0.0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard
            .lock()
            .unwrap()
            .push(format!("progress {}", params.progress));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.heard
            .lock()
            .unwrap()
            .push(format!("log {}", params.data));
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.heard.lock().unwrap().push("asked".into());
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }
}

#[tokio::test]
async fn at_once_a_handler_reports_and_asks_through_rmcps_peer() {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    let tasks = TaskManager::new(server());
    tokio::spawn(async move {
        if let Ok(running) = tasks.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let recorder = Recorder::default();
    // A 2025-11-25 session (`initialize`): requests to the client exist there.
    let client = recorder
        .clone()
        .serve(client_side)
        .await
        .expect("the client connects");
    let (text, is_error) = call_at_once(&client, "report", json!({})).await;
    assert_eq!((text.as_str(), is_error), ("reported", false));
    let heard = tokio::time::timeout(LIMIT, async {
        loop {
            let heard = recorder.heard();
            if heard.len() >= 3 {
                return heard;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the notifications arrive");
    assert_eq!(heard, ["progress 1", "log \"hello\"", "progress 2"]);

    let (text, _) = call_at_once(&client, "greet", json!({})).await;
    assert_eq!(text, "Hello, Ada!");
    assert_eq!(recorder.heard().last().map(String::as_str), Some("asked"));
}
