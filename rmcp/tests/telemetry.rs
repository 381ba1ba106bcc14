//! What the library records (feature `otel`) when rmcp serves it, in memory: rmcp's
//! client calls a tool as a task over an in-memory pipe with its `traceparent` in
//! `_meta`; the `tools/call` span is the client's child, the work is its child, `tasks/get`
//! links to it; and a task handed over by one manager and claimed by another (two servers
//! over one store that claims what is handed over) stays in the caller's trace on the
//! second.
#![cfg(feature = "otel")]

mod support;

use std::time::Duration;

use mcp_tasks_otel::opentelemetry::trace::SpanKind;
use mcp_tasks_otel::testing::{Recorder, attr};
use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::{Context, Exit, Server, TaskSupport, Tool};
use mcp_tasks_test_support::handing::HandingRegistry;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CreateTaskResult, GetTaskParams, JsonObject,
    MetaObject, RequestMetaObject,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::{Client, LIMIT, connect};

const TRACE: &str = "5b8efff798038103d269b633813fc60c";
const CLIENT_SPAN: &str = "eee19b7ec3c1b174";

#[derive(Deserialize, JsonSchema)]
struct Nap {
    ms: u64,
}

/// Sleeps `ms` in 20 ms steps, cancellable.
async fn nap(ctx: Context, Nap { ms }: Nap) -> Result<String, Exit> {
    for _ in 0..ms.div_ceil(20) {
        ctx.sleep(Duration::from_millis(20)).await?;
    }
    Ok(format!("napped on attempt {}", ctx.attempt()))
}

/// A manager on `store` recording into `recorder`, whose server serves `nap`
/// (redeliverable).
fn manager(store: &HandingRegistry, recorder: &Recorder) -> TaskManager {
    let server = Server::builder()
        .shared_store(store.clone())
        .telemetry(recorder.telemetry())
        .tool(
            Tool::new("nap")
                .task_support(TaskSupport::Optional)
                .redelivery(3)
                .run(nap),
        )
        .build()
        .expect("the server builds");
    TaskManager::new(server)
}

/// `nap {ms}` as a task, with the client's trace context in `_meta`.
async fn traced_nap(client: &Client, ms: u64) -> CreateTaskResult {
    let mut request = CallToolRequestParams::new("nap");
    request.arguments = json!({"ms": ms}).as_object().cloned();
    let mut meta = JsonObject::new();
    meta.insert(
        "traceparent".into(),
        format!("00-{TRACE}-{CLIENT_SPAN}-01").into(),
    );
    request.meta = Some(RequestMetaObject(MetaObject(meta)));
    match client.call_tool_once(request).await {
        Ok(CallToolResponse::Task(created)) => created,
        other => panic!("nap did not become a task: {other:?}"),
    }
}

/// Polls `tasks/get` until the task is terminal; its status.
async fn finished(client: &Client, id: &str) -> rmcp::model::TaskStatus {
    let wait = async {
        loop {
            let got = client
                .get_task(GetTaskParams::new(id.to_owned()))
                .await
                .expect("tasks/get answers");
            if got.task.task.status.is_terminal() {
                return got.task.task.status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .expect("the task finishes in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_call_its_work_and_a_poll_are_one_story() {
    let store = HandingRegistry::default();
    let recorder = Recorder::new("pipe");
    let tasks = manager(&store, &recorder);
    let client = connect(tasks.clone()).await;
    let created = traced_nap(&client, 20).await;
    let id = created.task.task_id.clone();
    assert_eq!(
        finished(&client, &id).await,
        rmcp::model::TaskStatus::Completed
    );

    let call = recorder.span("tools/call nap");
    assert_eq!(call.span_kind, SpanKind::Server);
    assert_eq!(call.span_context.trace_id().to_string(), TRACE);
    assert_eq!(call.parent_span_id.to_string(), CLIENT_SPAN);
    assert_eq!(
        attr(&call, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr(&call, "gen_ai.tool.name").as_deref(), Some("nap"));
    assert_eq!(attr(&call, "mcp.task.id").as_deref(), Some(id.as_str()));
    assert_eq!(attr(&call, "mcp.session.id"), None);
    let work = recorder.span("execute_tool nap");
    assert_eq!(work.span_context.trace_id().to_string(), TRACE);
    assert_eq!(work.parent_span_id, call.span_context.span_id());
    assert_eq!(attr(&work, "mcp.task.status").as_deref(), Some("completed"));
    let poll = recorder
        .spans()
        .into_iter()
        .rev()
        .find(|span| span.name == "tasks/get")
        .expect("a tasks/get span");
    assert_eq!(attr(&poll, "mcp.task.status").as_deref(), Some("completed"));
    let links: Vec<String> = poll
        .links
        .iter()
        .map(|link| link.span_context.trace_id().to_string())
        .collect();
    assert_eq!(links, [TRACE]);
    assert_eq!(
        recorder.value("mcp.task.created", &[("gen_ai.tool.name", "nap")]),
        1.0
    );
    assert!(
        recorder.value(
            "mcp.task.store.operation.duration",
            &[
                ("mcp.task.store.backend", "HandingRegistry"),
                ("mcp.task.store.operation", "insert_leased")
            ]
        ) >= 1.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_claimed_by_another_manager_stays_in_the_callers_trace() {
    let store = HandingRegistry::default();
    let (a, b) = (Recorder::new("tcp"), Recorder::new("tcp"));
    let first = manager(&store, &a);
    let _second = manager(&store, &b);
    let client = connect(first.clone()).await;
    let created = traced_nap(&client, 400).await;
    let id = created.task.task_id.clone();
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(first.hand_over_running().len(), 1, "the nap is handed over");

    // The first manager still answers its connection's tasks/get, from the store.
    assert_eq!(
        finished(&client, &id).await,
        rmcp::model::TaskStatus::Completed
    );
    let call = a.span("tools/call nap");
    let claimed = b.span("execute_tool nap");
    assert_eq!(
        claimed.span_context.trace_id().to_string(),
        TRACE,
        "one trace"
    );
    assert_eq!(
        claimed.parent_span_id,
        call.span_context.span_id(),
        "B continues A's call"
    );
    assert_eq!(attr(&claimed, "mcp.task.attempt").as_deref(), Some("2"));
    assert_eq!(
        attr(&claimed, "mcp.task.status").as_deref(),
        Some("completed")
    );
    let handed = a.span("execute_tool nap");
    assert_eq!(attr(&handed, "mcp.task.attempt").as_deref(), Some("1"));
    assert_eq!(
        b.value("mcp.task.redeliveries", &[("gen_ai.tool.name", "nap")]),
        1.0
    );
    assert_eq!(
        a.value("mcp.task.running", &[]),
        0.0,
        "the aborted attempt is not running"
    );
}
