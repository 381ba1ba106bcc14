//! A task server holds many running tasks at once: `sleep` waits as a future, so 2,000
//! tasks sleeping at the same time (four times tokio's blocking pool of 512) run together
//! on a bounded number of threads, and every one completes. A 2025-11-25 `tasks/result`
//! for a running task streams its wait (SSE) and, once the task ended, answers JSON at once.
//!
//! `RUNNING_TASKS` and `RUNNING_SLEEP_MS` change the count and the sleep, for a larger
//! measurement (the server's threads and resident memory are printed on the line starting
//! `running:`, visible with `--nocapture`):
//!
//! ```text
//! RUNNING_TASKS=10000 RUNNING_SLEEP_MS=30000 \
//!     cargo test --release -p mcp-tasks-http --test running -- --nocapture
//! ```

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{ALICE, Conn, Launch, Session, event_data, post_head, rpc};

/// Tasks running at once (`RUNNING_TASKS`).
const TASKS: usize = 2_000;
/// How long each sleeps (`RUNNING_SLEEP_MS`): longer than creating them all takes.
const SLEEP_MS: u64 = 8_000;
/// The most threads the server may hold meanwhile: its runtime's workers, the timer, the
/// store's, and what the blocking pool keeps from the requests (not one per task).
const MAX_THREADS: u64 = 100;
/// The whole run, beyond the sleep.
const BOUND: Duration = Duration::from_secs(120);

/// The number in the environment variable `name`, else `default`.
fn knob<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn two_thousand_sleeping_tasks_run_at_once_on_a_bounded_number_of_threads() {
    let tasks: usize = knob("RUNNING_TASKS", TASKS);
    let sleep_ms: u64 = knob("RUNNING_SLEEP_MS", SLEEP_MS);
    let server = Launch::new()
        .env("MCP_TASKS_MAX_TASKS_PER_OWNER", "none")
        .env("MCP_TASKS_MAX_TASKS", "none")
        .start();
    let rss_before = server.rss_kib();
    let started = Instant::now();
    let mut session =
        Session::open(server.addr, ALICE, Duration::from_secs(30)).expect("a session");
    let mut ids = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let created = session
            .request(
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": sleep_ms}, "task": {"ttl": 300_000}}),
            )
            .expect("a task");
        ids.push(
            created["task"]["taskId"]
                .as_str()
                .expect("a task id")
                .to_owned(),
        );
    }
    let created_in = started.elapsed();
    assert!(
        created_in < Duration::from_millis(sleep_ms / 2),
        "creating {tasks} tasks took {created_in:?}: too slow for them to overlap"
    );
    // All of them sleep now, on a few threads.
    let threads = server.threads();
    let rss_running = server.rss_kib();
    let mut working = 0;
    for id in &ids {
        let task = session
            .request("tasks/get", json!({"taskId": id}))
            .expect("tasks/get");
        if task["status"] == "working" {
            working += 1;
        }
    }
    let checked_in = started.elapsed();
    if checked_in < Duration::from_millis(sleep_ms) {
        assert_eq!(working, tasks, "every task still sleeps");
    }
    assert!(
        threads <= MAX_THREADS,
        "{tasks} sleeping tasks hold {threads} threads (at most {MAX_THREADS})"
    );
    // And every one completes.
    for id in &ids {
        loop {
            let task = session
                .request("tasks/get", json!({"taskId": id}))
                .expect("tasks/get");
            match task["status"].as_str() {
                Some("completed") => break,
                Some("working") => {
                    assert!(
                        started.elapsed() < BOUND + Duration::from_millis(sleep_ms),
                        "task {id} still sleeps: {task}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => panic!("task {id} did not complete: {task}"),
            }
        }
    }
    eprintln!(
        "running: {tasks} tasks created in {created_in:?}, {working} working at once with \
         {threads} threads in the server, RSS {rss_before} -> {rss_running} KiB \
         ({} bytes per running task), all completed after {:?}",
        (rss_running.saturating_sub(rss_before) * 1024) / tasks as u64,
        started.elapsed()
    );
}

/// A 2025-11-25 `tasks/result` from a client that takes SSE: while its task runs, the
/// answer comes on an event stream (where the task's own requests could come first); once
/// the task is terminal, it is plain JSON at once, carrying the task's result.
#[test]
fn tasks_result_streams_while_the_task_runs_and_answers_json_once_it_ended() {
    let server = Launch::new().start();
    let bound = Duration::from_secs(30);
    let mut session = Session::open(server.addr, ALICE, bound).expect("a session");
    let created = session
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 400}, "task": {"ttl": 60_000}}),
        )
        .expect("a task");
    let id = created["task"]["taskId"].as_str().expect("a task id");
    let ask = |request_id: u64| {
        let mut conn = Conn::open(server.addr, bound).expect("a connection");
        let body = rpc(request_id, "tasks/result", json!({"taskId": id}));
        let mut bytes = post_head(
            server.addr,
            Some(ALICE),
            Some(&session.id),
            Some(body.len() as u64),
        )
        .into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        conn.write_raw(&bytes).expect("tasks/result sent");
        conn
    };

    // Running: an event stream, whose last event is the answer.
    let mut running = ask(90);
    let head = running.read_stream_head().expect("an answer");
    assert!(
        matches!(head, Ok(200)),
        "a running task's tasks/result answers an event stream: {head:?}"
    );
    let mut streamed = Vec::new();
    while let Some(chunk) = running.read_chunk().expect("the stream") {
        streamed.extend_from_slice(&chunk);
    }
    let streamed = String::from_utf8(streamed).expect("UTF-8 events");
    let answer = streamed
        .split("\n\n")
        .filter_map(event_data)
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(&data).ok())
        .find(|message| message["id"] == 90)
        .unwrap_or_else(|| panic!("no answer to tasks/result on the stream: {streamed}"));
    assert!(answer["result"]["content"].is_array(), "{answer}");

    // Terminal: JSON at once, the same result.
    let mut ended = ask(91);
    let response = match ended.read_stream_head().expect("an answer") {
        Err(response) => response,
        Ok(status) => panic!("a terminal task's tasks/result streamed (HTTP {status})"),
    };
    assert!(
        response
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "a terminal task's tasks/result is JSON"
    );
    let message = response.message().expect("a JSON-RPC answer");
    assert_eq!(message["id"], 91);
    assert_eq!(message["result"]["content"], answer["result"]["content"]);
}
