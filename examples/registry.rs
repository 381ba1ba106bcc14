//! The task registry in one story: a worker thread runs a task while the main thread
//! blocks on its result, and a second task is cancelled mid-flight, so that its worker's
//! late completion is refused.
//!
//! Run with `cargo run --example registry`. The narrative goes to stderr; every outcome is
//! asserted, so the example exits 0 only if the registry behaved as described.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::{
    Error, InputRequest, InputRequests, JsonObject, Outcome, Owner, StatusChange, TaskRegistry,
    TaskRequest, TaskStatus,
};
use serde_json::json;

fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn main() -> Result<(), Error> {
    let registry = TaskRegistry::new();
    // The requestor's authorization context: tasks are visible to it alone.
    let alice = Owner::new("alice");

    // Where a server would send `notifications/tasks/status`.
    registry.subscribe(|change: &StatusChange| {
        eprintln!(
            "  [notification] task {} is now {}{}",
            &change.task.id().to_string()[..8],
            change.task.status(),
            change
                .task
                .status_message()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        );
    });

    // --- 1. A task that runs to completion while the main thread waits for it. ---
    eprintln!("1. alice calls a tool as a task; a worker thread runs it");
    let (handle, task) = registry.create(&alice, TaskRequest::new(1, "tools/call"))?;
    let id = task.id().to_string();
    eprintln!(
        "   created task {id}: {}, ttl {:?} ms",
        task.status(),
        task.ttl()
    );
    let worker = thread::spawn(move || -> Result<(), Error> {
        thread::sleep(Duration::from_millis(20));
        handle.set_status_message(Some("reading the files".into()))?;
        let question = InputRequests::new().with(
            "overwrite",
            InputRequest::elicitation(object(json!({"message": "Overwrite report.txt?"}))),
        );
        let waiting = handle
            .with_message("asking before overwriting")
            .require_input(question)?;
        thread::sleep(Duration::from_millis(20));
        let working = waiting.resume()?;
        let summary = object(json!({
            "content": [{"type": "text", "text": "3 files summarised"}]
        }));
        let done = working.complete(summary.clone())?;
        assert_eq!(done.result(), Some(&summary));
        Ok(())
    });

    eprintln!("   main thread: tasks/result blocks until the task is terminal");
    let finished = registry.wait(&alice, &id, Some(Duration::from_secs(10)))?;
    worker.join().expect("the worker does not panic")?;
    assert_eq!(finished.status(), TaskStatus::Completed);
    let expected = Outcome::Result(object(json!({
        "content": [{"type": "text", "text": "3 files summarised"}]
    })));
    assert_eq!(finished.outcome(), Some(&expected));
    assert_eq!(registry.result(&alice, &id)?, finished);
    let shown = serde_json::to_string(expected.as_result().expect("a result")).expect("JSON");
    eprintln!("   main thread woke up with the stored result: {shown}");

    // Another requestor cannot tell the task exists.
    let mallory = Owner::new("mallory");
    let theirs = registry.get(&mallory, &id).unwrap_err();
    assert!(matches!(theirs, Error::TaskNotFound { .. }));
    assert_eq!(theirs.code(), -32602);
    eprintln!("   mallory asking for it gets: {theirs}");

    // --- 2. A task cancelled mid-flight: the late completion is refused. ---
    eprintln!("2. alice starts a second task, then cancels it while it runs");
    let (handle, task) = registry.create(&alice, TaskRequest::new(2, "tools/call"))?;
    let id = task.id().to_string();
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let worker = thread::spawn(move || {
        handle
            .set_status_message(Some("crunching".into()))
            .expect("the task is still running");
        started_tx.send(()).expect("main is listening");
        // The long computation; the task is cancelled meanwhile.
        go_rx.recv().expect("main says when");
        handle.complete(object(json!({
            "content": [{"type": "text", "text": "too late"}]
        })))
    });
    started_rx.recv().expect("the worker started");
    let cancelled = registry.cancel(&alice, &id, Some("cancelled by alice".into()))?;
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    eprintln!("   tasks/cancel answered: {}", cancelled.status());
    go_tx.send(()).expect("the worker is waiting");
    let late = worker.join().expect("the worker does not panic");
    let refused = late.unwrap_err();
    assert_eq!(
        refused,
        Error::TaskCancelled {
            task_id: id.clone()
        }
    );
    eprintln!("   the worker's late completion was refused: {refused}");

    let stored = registry.get(&alice, &id)?;
    assert_eq!(stored.status(), TaskStatus::Cancelled);
    assert_eq!(stored.outcome(), None, "no result was stored");
    assert_eq!(stored.status_message(), Some("cancelled by alice"));
    assert_eq!(
        registry.wait(&alice, &id, Some(Duration::from_secs(1)))?,
        stored
    );
    let again = registry.cancel(&alice, &id, None).unwrap_err();
    assert!(matches!(again, Error::AlreadyTerminal { .. }));
    assert_eq!(again.code(), -32602);
    eprintln!("   the task stays cancelled; cancelling again is refused: {again}");

    let page = registry.list(&alice, None, 10)?;
    assert_eq!(page.tasks.len(), 2);
    assert_eq!(page.next_cursor, None);
    assert!(registry.list(&mallory, None, 10)?.tasks.is_empty());
    eprintln!("done: alice lists 2 tasks, mallory none");
    Ok(())
}
