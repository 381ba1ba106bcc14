//! Two `rmcp_http` instances sharing one Redis store (`--redis URL`, feature `redis`): a
//! task made on one is read, answered and cancelled through the other, for its owner
//! only. Needs `redis-server` on `PATH` (the test says `SKIPPED` without it).
#![cfg(feature = "redis")]

mod spawned;
mod support;

use rmcp::model::{
    CancelTaskParams, GetTaskParams, InputResponses, TaskPayload, TaskStatus, UpdateTaskParams,
};
use serde_json::json;
use spawned::*;
use support::*;

#[tokio::test]
async fn a_task_made_on_one_instance_is_answered_and_cancelled_on_another() {
    let Some(redis) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let url = redis.url();
    let args = [
        "--redis",
        url.as_str(),
        "--token",
        "t-alice=alice",
        "--token",
        "t-bob=bob",
    ];
    let first = start_http(&args).await;
    let second = start_http(&args).await;
    let alice_first = tasks(&first, "t-alice").await;
    let alice_second = tasks(&second, "t-alice").await;
    let bob_second = tasks(&second, "t-bob").await;

    // Input asked on the first instance, answered through the second.
    let confirm = start_task(&alice_first, "confirm", json!({"question": "shared?"})).await;
    let id = confirm.task.task_id;
    let key = poll_until(&alice_second, &id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    })
    .await;
    let foreign = bob_second
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert_eq!(code(foreign), -32602);
    let mut responses = InputResponses::new();
    responses.insert(
        key,
        json!({"action": "accept", "content": {"answer": "yes"}}),
    );
    alice_second
        .update_task(UpdateTaskParams::new(id.clone(), responses))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&alice_first, &id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(
                text_of(&result),
                ("the user answered: yes".to_owned(), false)
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }

    // A long sleep on the first instance, cancelled through the second.
    let long = start_task(&alice_first, "sleep", json!({"ms": 30_000})).await;
    let cancel = bob_second
        .cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
        .await
        .unwrap_err();
    assert_eq!(code(cancel), -32602);
    let seen = alice_second
        .get_task(GetTaskParams::new(long.task.task_id.clone()))
        .await
        .expect("the owner sees it on the other instance");
    assert_eq!(seen.task.status(), TaskStatus::Working);
    alice_second
        .cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
        .await
        .expect("tasks/cancel acknowledges");
    assert_eq!(
        terminal(&alice_first, &long.task.task_id).await,
        TaskPayload::Cancelled
    );
}
