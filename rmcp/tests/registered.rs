//! Redeliverable tools on the in-process registry, without Redis: the registry never
//! claims, so a redeliverable call behaves as any other (one run, one result), a
//! checkpoint is one quiet write, a hand-over hands nothing over and leaves the task
//! running to its end, and a shutdown fails what it cannot hand over. Calls the server
//! cannot take are refused before any handler runs.

mod support;

use std::time::Duration;

use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::{Context, Exit, Server, TaskSupport, Tool};
use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::*;

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// Where to count to.
    to: u64,
    /// How long to wait first, in milliseconds.
    #[serde(default)]
    ms: u64,
}

#[derive(Serialize, Deserialize, Debug)]
struct Step {
    step: u64,
}

/// Waits, checkpoints, and says what it knows of its attempts.
async fn count(ctx: Context, Count { to, ms }: Count) -> Result<String, Exit> {
    let resumed = ctx.checkpoint::<Step>()?;
    ctx.sleep(Duration::from_millis(ms)).await?;
    ctx.save_checkpoint(&Step { step: 1 })?;
    Ok(format!(
        "to {to} on attempt {}, resumed from {resumed:?}",
        ctx.attempt()
    ))
}

fn manager(attempts: Option<u32>) -> TaskManager {
    let tool = Tool::new("count").task_support(TaskSupport::Optional);
    let tool = match attempts {
        Some(attempts) => tool.redelivery(attempts),
        None => tool,
    };
    let server = Server::builder()
        .tool(tool.run(count))
        .build()
        .expect("the server builds");
    TaskManager::new(server)
}

async fn completed_text(client: &Client, id: &str) -> String {
    match terminal(client, id).await {
        TaskPayload::Completed { result } => text_of(&result).0,
        other => panic!("expected completed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_redeliverable_call_on_the_registry_runs_once_with_its_arguments() {
    let tasks = manager(Some(3));
    let client = connect(tasks.clone()).await;
    let id = start_task(&client, "count", json!({"to": 3, "ms": 200}))
        .await
        .task
        .task_id;
    assert_eq!(
        completed_text(&client, &id).await,
        "to 3 on attempt 1, resumed from None"
    );
    // Nothing is ever claimable on the registry.
    assert!(
        tasks
            .server()
            .store()
            .claim()
            .expect("the registry answers")
            .is_none()
    );
    assert!(!tasks.server().is_shared());
}

#[tokio::test]
async fn a_task_that_runs_once_runs_the_same_handler() {
    let client = connect(manager(None)).await;
    let id = start_task(&client, "count", json!({"to": 1}))
        .await
        .task
        .task_id;
    assert_eq!(
        completed_text(&client, &id).await,
        "to 1 on attempt 1, resumed from None"
    );
}

#[tokio::test]
async fn a_hand_over_on_the_registry_hands_nothing_over_and_the_task_runs_on() {
    let tasks = manager(Some(2));
    let client = connect(tasks.clone()).await;
    let id = start_task(&client, "count", json!({"to": 2, "ms": 200}))
        .await
        .task
        .task_id;
    assert!(
        tasks.hand_over_running().is_empty(),
        "the registry has no other instance"
    );
    let seen = client
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get answers");
    assert_eq!(seen.task.status(), TaskStatus::Working);
    assert_eq!(
        completed_text(&client, &id).await,
        "to 2 on attempt 1, resumed from None"
    );
}

#[tokio::test]
async fn a_shutdown_on_the_registry_fails_the_running_tasks_after_the_grace() {
    let tasks = manager(Some(2));
    let client = connect(tasks.clone()).await;
    let quick = start_task(&client, "count", json!({"to": 1, "ms": 10}))
        .await
        .task
        .task_id;
    let slow = start_task(&client, "count", json!({"to": 1, "ms": 30_000}))
        .await
        .task
        .task_id;
    let ended = tasks.shut_down(Duration::from_millis(300)).await;
    assert!(ended.handed_over.is_empty(), "{ended:?}");
    assert_eq!(ended.failed, [mcp_tasks::TaskId::from(slow.as_str())]);
    assert_eq!(
        completed_text(&client, &quick).await,
        "to 1 on attempt 1, resumed from None"
    );
    match terminal(&client, &slow).await {
        TaskPayload::Failed { error } => assert_eq!(error["code"], json!(-32603)),
        other => panic!("expected failed, got {other:?}"),
    }
    assert_eq!(tasks.running(), 0, "the failed handler returned");
}

#[tokio::test]
async fn calls_the_server_cannot_take_are_refused_before_any_handler_runs() {
    let client = connect(manager(Some(2))).await;
    let unknown = client
        .call_tool_once(call("nope", json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), -32602);
    let refused = client
        .call_tool_once(call("count", json!({"to": "three"})))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(error) = refused else {
        panic!("expected a JSON-RPC error, got {refused}");
    };
    assert_eq!(error.code.0, -32602);
    assert!(
        error.message.contains("to"),
        "names the field: {}",
        error.message
    );
    let _ = Value::Null;
}
