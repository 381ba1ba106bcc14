//! Registered handlers and `TaskOptions::redeliver` on the in-process registry, without
//! Redis: the registry never claims, so a redeliverable call behaves as any other (one
//! run, one result), a checkpoint is one quiet write, and a shutdown's hand-over hands
//! nothing over and leaves the task running to its end.

use std::time::Duration;

use mcp_tasks::{AnyTask, Owner, TaskRegistry, TaskStatus, TaskStore};
use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions, text_result};
use rmcp::model::{CallToolRequestParams, NumberOrString};
use serde_json::{Value, json};

/// A manager on a fresh registry with one registered tool, `count`: it checkpoints and
/// reports its arguments and what it knows of earlier attempts; with `{"ms": N}` it first
/// sleeps N ms.
fn manager() -> TaskManager {
    let tasks = TaskManager::new(TaskRegistry::new());
    tasks.register("count", |ctx| {
        Box::pin(async move {
            let ms = ctx
                .arguments()
                .get("ms")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            tokio::select! {
                () = ctx.cancelled() => return Err(TaskExit::Cancelled),
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            }
            ctx.save_checkpoint(json!({"step": 1}))?;
            let text = format!(
                "to {} on attempt {}, resumed from {:?}",
                ctx.arguments().get("to").unwrap_or(&Value::Null),
                ctx.attempt(),
                ctx.checkpoint(),
            );
            Ok(text_result(text, false))
        })
    });
    tasks
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let mut request = CallToolRequestParams::new(name);
    request.arguments = arguments.as_object().cloned();
    request
}

/// Polls the store until the task is terminal.
async fn finished(tasks: &TaskManager, owner: &Owner, id: &str) -> AnyTask {
    let wait = async {
        loop {
            let task = tasks.store().get(owner, id).expect("the task is stored");
            if task.is_terminal() {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the task finishes in time")
}

fn text(task: &AnyTask) -> String {
    let AnyTask::Completed(task) = task else {
        panic!("expected a completed task, got {task:?}");
    };
    task.result()
        .and_then(|result| result.get("content"))
        .and_then(|content| content.get(0))
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_redeliverable_call_on_the_registry_runs_once_with_its_arguments() {
    let tasks = manager();
    tasks.run_claims().expect("a handler is registered");
    tasks.run_claims().expect("a second start does nothing");
    let owner = Owner::new("alice");
    let created = tasks
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &call("count", json!({"to": 3, "ms": 200})),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let id = created.task.task_id;
    let running = tasks.store().get(&owner, &id).unwrap();
    assert_eq!(
        running.attempts().map(|a| (a.attempt(), a.max())),
        Some((1, 3)),
        "the registry keeps the attempts of a running task"
    );
    let done = finished(&tasks, &owner, &id).await;
    assert_eq!(text(&done), "to 3 on attempt 1, resumed from None");
    // Nothing is ever claimable on the registry.
    assert!(
        tasks
            .store()
            .claim()
            .expect("the registry answers")
            .is_none()
    );
}

#[tokio::test]
async fn a_task_that_runs_once_is_unchanged_by_a_registered_handler() {
    let tasks = manager();
    let owner = Owner::new("alice");
    let created = tasks
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &call("count", json!({"to": 1})),
            TaskOptions::new(),
        )
        .expect("the task is created");
    let done = finished(&tasks, &owner, &created.task.task_id).await;
    assert_eq!(text(&done), "to 1 on attempt 1, resumed from None");
    assert_eq!(done.attempts(), None);
}

#[tokio::test]
async fn a_hand_over_on_the_registry_hands_nothing_over_and_the_task_runs_on() {
    let tasks = manager();
    let owner = Owner::new("alice");
    let created = tasks
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &call("count", json!({"to": 2, "ms": 200})),
            TaskOptions::new().redeliver(2),
        )
        .expect("the task is created");
    assert_eq!(
        tasks.hand_over_running(),
        0,
        "the registry has no other instance"
    );
    let id = created.task.task_id;
    assert_eq!(
        tasks.store().get(&owner, &id).unwrap().status(),
        TaskStatus::Working
    );
    let done = finished(&tasks, &owner, &id).await;
    assert_eq!(text(&done), "to 2 on attempt 1, resumed from None");
}

#[tokio::test]
async fn redelivery_needs_a_registered_handler() {
    let tasks = TaskManager::new(TaskRegistry::new());
    assert!(matches!(
        tasks.run_claims(),
        Err(mcp_tasks::Error::InvalidConfig(_))
    ));
    let owner = Owner::new("alice");
    let id = NumberOrString::Number(1);
    let closure = tasks
        .spawn(&owner, &id, TaskOptions::new().redeliver(2), |_ctx| {
            Box::pin(async { Ok(text_result("never", false)) })
        })
        .expect_err("a closure cannot be redelivered");
    assert_eq!(closure.code.0, -32603);
    let unknown = tasks
        .spawn_registered(&owner, &id, &call("nope", json!({})), TaskOptions::new())
        .expect_err("no handler for `nope`");
    assert_eq!(unknown.code.0, -32602);
    let page = tasks.store().list(&owner, None, 10).unwrap();
    assert!(page.tasks.is_empty(), "nothing was created");
}
