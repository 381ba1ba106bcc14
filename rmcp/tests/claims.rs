//! The claim path of `mcp-tasks-rmcp` without Redis: two managers, each over its own
//! server, on one store that claims what is handed over to it
//! (`mcp_tasks_test_support::handing`: the registry, with the core's `Update::claim`
//! deciding each claim). What one manager hands over on shutdown, the other's claim loop
//! runs as attempt 2 from the last checkpoint; a claimed task whose tool the claiming
//! server does not serve fails, saying so.

mod support;

use std::time::Duration;

use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::{Context, Exit, Server, TaskSupport, Tool};
use mcp_tasks_test_support::handing::HandingRegistry;
use rmcp::model::{TaskPayload, TaskStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::*;

#[derive(Deserialize, JsonSchema)]
struct Count {
    to: u64,
}

#[derive(Serialize, Deserialize)]
struct At {
    at: u64,
}

/// Counts to `to` in steps of 50 ms, checkpointing and saying where it is at each step.
async fn count(ctx: Context, Count { to }: Count) -> Result<String, Exit> {
    let from = ctx.checkpoint::<At>()?.map_or(0, |at| at.at);
    for at in from + 1..=to {
        ctx.sleep(Duration::from_millis(50)).await?;
        ctx.save_checkpoint(&At { at })?;
        ctx.set_status(format!("at {at}"))?;
    }
    Ok(format!("counted {from}..{to} on attempt {}", ctx.attempt()))
}

/// A manager over `store` whose server serves `count` (redeliverable), or not.
fn counting(store: &HandingRegistry, serves_count: bool) -> TaskManager {
    let mut builder = Server::builder().shared_store(store.clone());
    if serves_count {
        builder = builder.tool(
            Tool::new("count")
                .task_support(TaskSupport::Optional)
                .redelivery(3)
                .run(count),
        );
    } else {
        builder = builder.tool(
            Tool::new("something_else")
                .task_support(TaskSupport::Optional)
                .redelivery(3)
                .run(count),
        );
    }
    TaskManager::new(builder.build().expect("the server builds"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_handed_over_on_shutdown_runs_on_as_attempt_2_from_its_checkpoint() {
    let store = HandingRegistry::default();
    let first = counting(&store, true);
    let _second = counting(&store, true);
    let client = connect(first.clone()).await;
    let id = start_task(&client, "count", json!({"to": 20}))
        .await
        .task
        .task_id;
    // Let the first manager count a little.
    poll_until(&client, &id, |payload| {
        assert!(!payload.status().is_terminal(), "{payload:?}");
        Some(())
    })
    .await;
    poll_until_message(&client, &id, |message| {
        message
            .strip_prefix("at ")
            .and_then(|at| at.parse::<u64>().ok())
            .is_some_and(|at| at >= 3)
    })
    .await;

    assert_eq!(
        first.hand_over_running(),
        [mcp_tasks::TaskId::from(id.as_str())]
    );
    match terminal(&client, &id).await {
        TaskPayload::Completed { result } => {
            let (text, _) = text_of(&result);
            assert!(text.ends_with("..20 on attempt 2"), "{text}");
            assert!(
                !text.starts_with("counted 0.."),
                "attempt 2 resumes from the checkpoint: {text}"
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }
    // The first handler was superseded: nothing writes over the one result.
    let done = client
        .get_task(rmcp::model::GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get answers");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = client
        .get_task(rmcp::model::GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get answers");
    assert_eq!(later.task.payload, done.task.payload);
    assert_eq!(
        later.task.task.last_updated_at,
        done.task.task.last_updated_at
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_task_whose_tool_is_not_served_there_fails_saying_so() {
    let store = HandingRegistry::default();
    let first = counting(&store, true);
    let _other = counting(&store, false);
    let client = connect(first.clone()).await;
    let id = start_task(&client, "count", json!({"to": 100}))
        .await
        .task
        .task_id;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(first.hand_over_running().len(), 1);
    match terminal(&client, &id).await {
        TaskPayload::Failed { error } => {
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("does not serve the tool `count`"),
                "{message}"
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_fails_what_cannot_be_handed_over_and_answers_what_it_did() {
    let store = HandingRegistry::default();
    let first = counting(&store, true);
    let client = connect(first.clone()).await;
    let id = start_task(&client, "count", json!({"to": 100}))
        .await
        .task
        .task_id;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Nobody claims it here, but the store takes it: handed over, not failed.
    let ended = first.shut_down(Duration::ZERO).await;
    assert_eq!(ended.handed_over.len(), 1, "{ended:?}");
    assert!(ended.failed.is_empty(), "{ended:?}");
    let seen = client
        .get_task(rmcp::model::GetTaskParams::new(id))
        .await
        .expect("tasks/get answers");
    assert_eq!(seen.task.status(), TaskStatus::Working);
}
