//! The claim path of `mcp-tasks-rmcp` without Redis: two managers over one store that
//! claims what is handed over to it (`mcp_tasks_test_support::handing`: the registry, with
//! the core's `Update::claim` deciding each claim). What one manager hands
//! over on shutdown, the other's claim loop runs as attempt 2 from the last checkpoint;
//! a claimed task whose tool has no handler there fails, saying so.

use std::time::Duration;

use mcp_tasks::{AnyTask, Owner, TaskStatus, TaskStore};
use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions, text_result};
use mcp_tasks_test_support::handing::HandingRegistry;
use rmcp::model::{CallToolRequestParams, NumberOrString};
use serde_json::{Value, json};

/// A manager on `store` with `count` registered: it counts to `to` in steps of 50 ms,
/// checkpointing each step, resuming from the last checkpoint.
fn counting(store: &HandingRegistry) -> TaskManager<HandingRegistry> {
    let tasks = TaskManager::new(store.clone());
    tasks.register("count", |ctx| {
        Box::pin(async move {
            let to = ctx
                .arguments()
                .get("to")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let from = ctx
                .checkpoint()
                .and_then(|checkpoint| checkpoint.get("at"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            for at in from + 1..=to {
                tokio::select! {
                    () = ctx.cancelled() => return Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
                ctx.save_checkpoint(json!({"at": at}))?;
            }
            let text = format!("counted {from}..{to} on attempt {}", ctx.attempt());
            Ok(text_result(text, false))
        })
    });
    tasks
}

fn count_to(to: u64) -> CallToolRequestParams {
    let mut request = CallToolRequestParams::new("count");
    request.arguments = json!({"to": to}).as_object().cloned();
    request
}

/// Polls the store until `found` picks something out of the task.
async fn poll<T>(
    store: &HandingRegistry,
    owner: &Owner,
    id: &str,
    found: impl Fn(&AnyTask) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let task = store.get(owner, id).expect("the task is stored");
            if let Some(found) = found(&task) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the task reached the awaited state in time")
}

/// The task's result or error, as text to search.
fn outcome_text(task: &AnyTask) -> String {
    format!("{:?}", task.outcome())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_handed_over_on_shutdown_runs_on_as_attempt_2_from_its_checkpoint() {
    let store = HandingRegistry::default();
    let first = counting(&store);
    let second = counting(&store);
    second.run_claims().expect("a handler is registered");
    let owner = Owner::new("alice");
    let created = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &count_to(20),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let id = created.task.task_id;
    // Let the first manager count a little.
    poll(&store, &owner, &id, |task| {
        task.checkpoint()
            .and_then(|checkpoint| checkpoint.get("at"))
            .and_then(Value::as_u64)
            .filter(|at| *at >= 3)
    })
    .await;

    assert_eq!(first.hand_over_running(), 1);
    let message = poll(&store, &owner, &id, |task| {
        assert!(!task.is_terminal(), "ended before its redelivery: {task:?}");
        task.status_message()
            .filter(|message| message.contains("attempt 2"))
            .map(str::to_owned)
    })
    .await;
    assert!(message.contains("attempt 2 of 3"), "{message}");

    let done = poll(&store, &owner, &id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    let text = outcome_text(&done);
    assert!(text.contains("on attempt 2"), "{text}");
    assert!(
        !text.contains("counted 0.."),
        "attempt 2 resumes from the checkpoint: {text}"
    );
    // The first manager's handler was stopped: nothing writes over the one result.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.get(&owner, &id).unwrap(), done);
    // A stopped manager hands a new redeliverable call over at once.
    let late = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(2),
            &count_to(2),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let late = poll(&store, &owner, &late.task.task_id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert!(
        outcome_text(&late).contains("counted 0..2 on attempt 2"),
        "{late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_task_whose_tool_has_no_handler_here_fails_saying_so() {
    let store = HandingRegistry::default();
    let first = counting(&store);
    let other = TaskManager::new(store.clone());
    other.register("something-else", |_ctx| {
        Box::pin(async { Ok(text_result("never", false)) })
    });
    other.run_claims().expect("a handler is registered");
    let owner = Owner::new("alice");
    let created = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &count_to(100),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let id = created.task.task_id;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(first.hand_over_running(), 1);
    let done = poll(&store, &owner, &id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Failed);
    let text = outcome_text(&done);
    assert!(text.contains("no handler for its tool `count`"), "{text}");
}
