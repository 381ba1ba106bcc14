//! Redelivery over one Redis store (feature `redis`): a redeliverable `sleep` started on
//! one `rmcp_http` instance is finished by another once the first stops, under the same
//! task id, as its attempt 2, resuming from its checkpoint, with one final result. Needs
//! `redis-server` on `PATH` (the test says `SKIPPED` without it).
#![cfg(feature = "redis")]

mod support;

use std::time::Duration;

use rmcp::model::{GetTaskParams, GetTaskResult, TaskPayload, TaskStatus};
use serde_json::json;
use support::*;

/// How long the redelivered `sleep` sleeps in all.
const SLEEP_MS: u64 = 4_000;

/// Two instances with short leases: a dead instance's task is claimable within a second
/// or so.
fn instance_args(url: &str) -> Vec<String> {
    [
        "--redis",
        url,
        "--token",
        "t-alice=alice",
        "--lease-ms",
        "600",
        "--lease-renew-ms",
        "100",
        "--claim-backoff-ms",
        "200",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Polls `tasks/get` until `found` picks something out of the answer.
async fn poll_get<T>(
    client: &Client,
    task_id: &str,
    found: impl Fn(&GetTaskResult) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let got = client
                .get_task(GetTaskParams::new(task_id))
                .await
                .expect("tasks/get answers");
            if let Some(found) = found(&got) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, wait)
        .await
        .expect("the task reached the awaited state in time")
}

/// Through `client`: the task runs again as attempt 2 (its status message says so while
/// it works), completes with the second attempt's result, and keeps that one result.
async fn finished_by_attempt_2(client: &Client, task_id: &str) {
    let message = poll_get(client, task_id, |got| {
        let task = &got.task.task;
        assert!(
            !task.status.is_terminal(),
            "the task ended before its redelivery: {:?}",
            got.task.payload
        );
        task.status_message
            .clone()
            .filter(|message| task.status == TaskStatus::Working && message.contains("attempt 2"))
    })
    .await;
    assert!(message.contains("attempt 2 of 3"), "{message}");

    let done = poll_get(client, task_id, |got| {
        got.task.task.status.is_terminal().then(|| got.clone())
    })
    .await;
    match &done.task.payload {
        TaskPayload::Completed { result } => assert_eq!(
            text_of(result),
            (format!("slept {SLEEP_MS} ms, finished by attempt 2"), false)
        ),
        other => panic!("expected completed, got {other:?}"),
    }
    // One final result: nothing runs it again or writes over it.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let later = client
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("tasks/get answers");
    assert_eq!(later.task.payload, done.task.payload);
    assert_eq!(
        later.task.task.last_updated_at,
        done.task.task.last_updated_at
    );
}

#[tokio::test]
async fn a_sleep_whose_instance_is_killed_is_finished_by_another_as_attempt_2() {
    let Some(redis) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let args = instance_args(&redis.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut first = start_http(&args).await;
    let second = start_http(&args).await;
    let alice_first = tasks(&first, "t-alice").await;
    let alice_second = tasks(&second, "t-alice").await;

    let created = start_task(&alice_first, "sleep", json!({"ms": SLEEP_MS})).await;
    let id = created.task.task_id;
    // Long enough for a few checkpoints on the first instance.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let seen = alice_second
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("the owner sees it on the other instance");
    assert_eq!(seen.task.task.status, TaskStatus::Working);
    first.kill().await;
    drop(alice_first);

    finished_by_attempt_2(&alice_second, &id).await;
}

#[tokio::test]
async fn a_sleep_whose_instance_stops_is_handed_over_and_finished_by_another() {
    let Some(redis) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let args = instance_args(&redis.url());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut first = start_http(&args).await;
    let second = start_http(&args).await;
    let alice_first = tasks(&first, "t-alice").await;
    let alice_second = tasks(&second, "t-alice").await;

    let created = start_task(&alice_first, "sleep", json!({"ms": SLEEP_MS})).await;
    let id = created.task.task_id;
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(alice_first);
    // SIGTERM: the first instance hands the task over (no lease to wait for) and exits.
    first.terminate().await;

    finished_by_attempt_2(&alice_second, &id).await;
}
