//! The crate's spans and metrics on its own (feature `testing`): a request span is the
//! child of the client's trace and says what the conventions ask; a task's work is its
//! child and ends with the task's status; the store's calls are timed; listens are counted.

use std::sync::Arc;

use mcp_tasks::{JsonObject, Owner, RequestId, TaskRegistry, TaskRequest, TaskStore};
use mcp_tasks_otel::testing::{Recorder, attr};
use mcp_tasks_otel::{Ending, Request};
use serde_json::json;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn meta() -> JsonObject {
    json!({"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01")})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_tool_call_span_continues_the_clients_trace_and_its_task_runs_in_it() {
    let recorder = Recorder::new("tcp");
    let telemetry = recorder.telemetry();
    let store: Arc<dyn TaskStore> = Arc::new(telemetry.observe(TaskRegistry::default()));
    let owner = Owner::new("alice");
    let id = RequestId::from(7);
    let meta = meta();
    let span = telemetry.request(&Request {
        method: "tools/call",
        id: Some(&id),
        meta: Some(&meta),
        version: "2026-07-28",
        session: None,
        tool: Some(("sleep", true)),
    });
    let (handle, task) = span.in_scope(|| {
        let request =
            TaskRequest::new(7, "tools/call").with_trace_context(span.trace_context(Some(&meta)));
        store.create(&owner, request).expect("a task")
    });
    let run = span.created(task.id(), &owner, Arc::clone(&store));
    span.end(Ending::Done);
    run.run(move || {
        let _done = handle.complete(JsonObject::new());
    });

    let call = recorder.span("tools/call sleep");
    assert_eq!(call.span_context.trace_id().to_string(), TRACE);
    assert_eq!(call.parent_span_id.to_string(), CLIENT_SPAN);
    assert_eq!(
        attr(&call, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attr(&call, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(attr(&call, "gen_ai.tool.name").as_deref(), Some("sleep"));
    assert_eq!(attr(&call, "jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(
        attr(&call, "mcp.task.id").as_deref(),
        Some(task.id().to_string().as_str())
    );
    let work = recorder.span("execute_tool sleep");
    assert_eq!(work.span_context.trace_id().to_string(), TRACE);
    assert_eq!(work.parent_span_id, call.span_context.span_id());
    assert_eq!(attr(&work, "mcp.task.status").as_deref(), Some("completed"));
    assert_eq!(attr(&work, "mcp.task.attempt").as_deref(), Some("1"));
    assert!(
        recorder.value(
            "mcp.task.store.operation.duration",
            &[
                ("mcp.task.store.backend", "TaskRegistry"),
                ("mcp.task.store.operation", "update"),
            ],
        ) >= 1.0,
        "the store's update (the result) is timed"
    );
}

#[test]
fn an_error_answer_marks_the_span_and_listens_are_counted_while_they_live() {
    let recorder = Recorder::new("pipe");
    let telemetry = recorder.telemetry();
    let id = RequestId::from("a");
    let span = telemetry.request(&Request {
        method: "tasks/get",
        id: Some(&id),
        meta: None,
        version: "2025-11-25",
        session: Some("s-1"),
        tool: None,
    });
    span.end(Ending::Error {
        code: -32602,
        message: "invalid params: unknown task",
    });
    let get = recorder.span("tasks/get");
    assert_eq!(attr(&get, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attr(&get, "mcp.session.id").as_deref(), Some("s-1"));
    assert_eq!(attr(&get, "network.transport").as_deref(), Some("pipe"));

    let first = telemetry.listen_opened();
    let second = telemetry.listen_opened();
    assert_eq!(recorder.value("mcp.task.listen.subscriptions", &[]), 2.0);
    drop(first);
    drop(second);
    assert_eq!(recorder.value("mcp.task.listen.subscriptions", &[]), 0.0);
}

#[test]
fn telemetry_that_records_nothing_costs_nothing_and_says_so() {
    let telemetry = mcp_tasks_otel::Telemetry::default();
    assert!(!telemetry.is_enabled());
    let id = RequestId::from(1);
    let span = telemetry.request(&Request {
        method: "ping",
        id: Some(&id),
        meta: None,
        version: "2025-11-25",
        session: None,
        tool: None,
    });
    assert_eq!(span.in_scope(|| 3), 3);
    span.end(Ending::Done);
}
