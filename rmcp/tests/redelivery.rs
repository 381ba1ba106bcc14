//! Redelivery over one Redis store (feature `redis`): a redeliverable task started on one
//! `rmcp_http` instance is finished by another once the first stops (killed, or handed
//! over on `SIGTERM`), under the same task id, as its attempt 2, resuming from its last
//! checkpoint, with one final result. The task is the test-only `steps` tool
//! (`MCP_TASKS_TEST_TOOLS=1`), which records each step it starts, with its attempt, in
//! `MCP_TASKS_TEST_STEPS_FILE`. Needs `redis-server` on `PATH` (the test says `SKIPPED`
//! without it).
#![cfg(feature = "redis")]

mod spawned;
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{GetTaskParams, TaskPayload, TaskStatus};
use serde_json::json;
use spawned::*;
use support::*;

/// The steps of the redelivered task, and how long each takes.
const STEPS: u64 = 10;
const STEP_MS: u64 = 300;

/// Two instances on `url` with short leases (a dead instance's task is claimable within a
/// second or so), recording steps in `file`.
async fn instances(url: &str, file: &str) -> (Server, Server) {
    let args = ["--store", url, "--token", "t-alice=alice"];
    let env = [
        ("MCP_TASKS_TEST_TOOLS", "1"),
        ("MCP_TASKS_TEST_STEPS_FILE", file),
        ("MCP_TASKS_LEASE_MS", "600"),
        ("MCP_TASKS_LEASE_RENEW_MS", "100"),
        ("MCP_TASKS_CLAIM_BACKOFF_MS", "200"),
    ];
    (
        start_http_with(&args, &env).await,
        start_http_with(&args, &env).await,
    )
}

/// A file for the steps, removed when dropped.
struct Steps(PathBuf);

impl Steps {
    fn new() -> Self {
        Self(std::env::temp_dir().join(format!(
            "mcpt-rmcp-steps-{}.txt",
            mcp_tasks::TaskId::random()
        )))
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }

    /// The attempts that started each step of `task`.
    fn of(&self, task: &str) -> BTreeMap<u64, Vec<u64>> {
        let text = std::fs::read_to_string(&self.0).unwrap_or_default();
        let mut starts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for line in text.lines().filter(|line| line.starts_with(task)) {
            let mut words = line.split_whitespace().skip(1);
            let (Some(step), Some(attempt)) = (
                words.next().and_then(|w| w.parse().ok()),
                words.next().and_then(|w| w.parse().ok()),
            ) else {
                panic!("a step line: {line}");
            };
            starts.entry(step).or_default().push(attempt);
        }
        starts
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Through `client`: the task completes with its one result, every step ran, the re-run
/// was attempt 2 and started past the first step (from the checkpoint), and nothing runs
/// it again or writes over its result.
async fn finished_by_attempt_2(client: &Client, task_id: &str, steps: &Steps) {
    let done = poll_until(client, task_id, |payload| {
        payload.status().is_terminal().then(|| payload.clone())
    })
    .await;
    match &done {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(result), (format!("ran {STEPS} steps"), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
    let starts = steps.of(task_id);
    assert_eq!(
        starts.keys().copied().collect::<Vec<_>>(),
        (0..STEPS).collect::<Vec<_>>(),
        "every step ran: {starts:?}"
    );
    let rerun_from = starts
        .iter()
        .find(|(_, attempts)| attempts.contains(&2))
        .map(|(step, _)| *step);
    assert!(
        rerun_from.is_some_and(|step| step > 0),
        "attempt 2 ran, from the checkpoint: {starts:?}"
    );
    let twice = starts
        .values()
        .filter(|attempts| attempts.len() > 1)
        .count();
    assert!(twice <= 1, "at most one step ran twice: {starts:?}");

    let first = client
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("tasks/get answers");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let later = client
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("tasks/get answers");
    assert_eq!(later.task.payload, done);
    assert_eq!(
        later.task.task.last_updated_at,
        first.task.task.last_updated_at
    );
}

#[tokio::test]
async fn a_task_whose_instance_is_killed_is_finished_by_another_as_attempt_2() {
    let Some(redis) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let steps = Steps::new();
    let (mut first, second) = instances(&redis.url(), &steps.path()).await;
    let alice_first = tasks(&first, "t-alice").await;
    let alice_second = tasks(&second, "t-alice").await;

    let created = start_task(&alice_first, "steps", json!({"n": STEPS, "ms": STEP_MS})).await;
    let id = created.task.task_id;
    // Long enough for a few checkpoints on the first instance.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let seen = alice_second
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("the owner sees it on the other instance");
    assert_eq!(seen.task.task.status, TaskStatus::Working);
    first.kill().await;
    drop(alice_first);

    finished_by_attempt_2(&alice_second, &id, &steps).await;
}

#[tokio::test]
async fn a_task_whose_instance_stops_is_handed_over_and_finished_by_another() {
    let Some(redis) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let steps = Steps::new();
    let (mut first, second) = instances(&redis.url(), &steps.path()).await;
    let alice_first = tasks(&first, "t-alice").await;
    let alice_second = tasks(&second, "t-alice").await;

    let created = start_task(&alice_first, "steps", json!({"n": STEPS, "ms": STEP_MS})).await;
    let id = created.task.task_id;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    drop(alice_first);
    // SIGTERM: the first instance hands the task over (no lease to wait for) and exits.
    first.terminate().await;

    finished_by_attempt_2(&alice_second, &id, &steps).await;
}
