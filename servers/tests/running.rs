//! The stdio server holds many running tasks at once: `sleep` is a future on a small
//! pool of executor threads, so 1,000 tasks sleeping together hold no thread each, and
//! every one completes.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::Stdio;

const TASKS: usize = 1_000;
const SLEEP_MS: u64 = 5_000;
/// The most threads the server may hold meanwhile (not one per task).
const MAX_THREADS: u64 = 32;

fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("a thread count")
}

#[test]
fn a_thousand_sleeping_tasks_share_a_few_threads_and_all_complete() {
    let mut server = Stdio::start_with(&[], &[("MCP_TASKS_MAX_TASKS_PER_OWNER", "none")]);
    server.initialize(json!({}));
    let started = Instant::now();
    let ids: Vec<String> = (0..TASKS)
        .map(|_| {
            let created = server.request(
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": SLEEP_MS}, "task": {"ttl": 120_000}}),
            );
            created["result"]["task"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a task: {created}"))
                .to_owned()
        })
        .collect();
    let held = threads(server.pid());
    let working = ids
        .iter()
        .filter(|id| {
            server.request("tasks/get", json!({"taskId": id}))["result"]["status"] == "working"
        })
        .count();
    if started.elapsed() < Duration::from_millis(SLEEP_MS) {
        assert_eq!(working, TASKS, "all of them sleep at once");
    }
    assert!(
        held <= MAX_THREADS,
        "{TASKS} sleeping tasks hold {held} threads (at most {MAX_THREADS})"
    );
    for id in &ids {
        let result = server.request("tasks/result", json!({"taskId": id}));
        assert_eq!(
            result["result"]["content"][0]["text"],
            format!("slept {SLEEP_MS} ms"),
            "{result}"
        );
    }
}
