//! The example servers on an SQLite file (`--store sqlite:PATH`, `MCP_TASKS_STORE`):
//! `mcp_http` (the `http/` crate, built with `--features sqlite`) killed with `SIGKILL`
//! and started again on the same file answers the results it had acknowledged, and claims
//! and finishes the redeliverable `sleep` that was running when it was killed; two
//! instances on one file serve the same tasks; an instance killed mid-task that runs once
//! fails it on the other; a file that is not a database stops both servers with one line.
//!
//! Each test keeps its file in a fresh directory (removed when the test ends). Every
//! server process is killed when its test ends, also when it fails.
#![cfg(feature = "sqlite")]

mod support;

use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::stores::{self, Backend, Db, Down, Instance, text};

/// Short leases and back-off: a killed instance's task is claimed within about 1.5 s.
fn leased() -> Vec<(&'static str, String)> {
    vec![
        ("MCP_TASKS_LEASE_MS", "1000".to_owned()),
        ("MCP_TASKS_CLAIM_BACKOFF_MS", "200".to_owned()),
    ]
}

#[test]
fn a_restart_after_sigkill_answers_the_results_and_finishes_the_running_sleep() {
    const SLEEP_MS: u64 = 2_500;
    let db = Db::start(Backend::Sqlite).expect("an SQLite file");
    let first = Instance::start_with(&db, &leased());
    let done = first.create(1, "sleep", &json!({"ms": 10}));
    let result = first
        .call(2, "tasks/result", &json!({"taskId": done}))
        .expect("the short sleep's result");
    let said = text(&result).expect("a text result").to_owned();
    let running = first.create(3, "sleep", &json!({"ms": SLEEP_MS}));
    thread::sleep(Duration::from_millis(300));
    let Instance { http, .. } = first;
    let killed = Instant::now();
    drop(http); // SIGKILL, then reaped

    let second = Instance::start_with(&db, &leased());
    let again = second
        .call(4, "tasks/result", &json!({"taskId": done}))
        .expect("the acknowledged result, after the restart");
    assert_eq!(text(&again), Some(said.as_str()), "{again}");
    let task = second
        .call(5, "tasks/get", &json!({"taskId": running}))
        .unwrap();
    assert_eq!(task["status"], "working", "still running: {task}");
    let finished = second
        .call(6, "tasks/result", &json!({"taskId": running}))
        .expect("the redelivered sleep's result");
    let took = killed.elapsed();
    eprintln!(
        "SQLite: mcp_http killed with SIGKILL mid-sleep ({SLEEP_MS} ms, 1 s leases, 200 ms \
         back-off) and started again: the sleep finished {took:?} after the kill"
    );
    assert!(text(&finished).is_some(), "{finished}");
    assert_eq!(finished["isError"], json!(false), "{finished}");
    let task = second
        .call(7, "tasks/get", &json!({"taskId": running}))
        .unwrap();
    assert_eq!(task["status"], "completed", "{task}");
    assert!(
        took < Duration::from_secs(20),
        "finished {took:?} after the kill"
    );
}

#[test]
fn two_instances_on_one_file_serve_the_same_tasks() {
    let db = Db::start(Backend::Sqlite).expect("an SQLite file");
    let (a, b) = (Instance::start(&db), Instance::start(&db));
    let sleep = a.create(1, "sleep", &json!({"ms": 800}));
    let task = b.call(2, "tasks/get", &json!({"taskId": sleep})).unwrap();
    assert_eq!(task["status"], "working", "B reads A's task: {task}");
    let started = Instant::now();
    let result = b
        .call(3, "tasks/result", &json!({"taskId": sleep}))
        .expect("B answers A's result");
    assert!(text(&result).is_some(), "{result}");
    eprintln!(
        "SQLite: B's tasks/result of A's 800 ms sleep answered {:?} after it was asked",
        started.elapsed()
    );
    let failed = b.create(4, "fail", &json!({}));
    let answer = b
        .call(5, "tasks/result", &json!({"taskId": failed}))
        .unwrap();
    assert_eq!(answer["isError"], json!(true), "{answer}");
    let task = a.call(6, "tasks/get", &json!({"taskId": failed})).unwrap();
    assert_eq!(task["status"], "failed", "A reads B's task: {task}");
}

#[test]
fn a_killed_instance_fails_its_task_on_the_other() {
    let db = Db::start(Backend::Sqlite).expect("an SQLite file");
    stores::a_killed_instance_fails_its_task_on_the_other(&db);
}

/// A file that is not a database: both example servers exit 1 with one line naming it.
#[test]
fn the_servers_exit_with_one_clear_line_on_a_corrupt_file() {
    let dir = std::env::temp_dir().join(format!(
        "mcpt-sqlite-corrupt-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("corrupt.db");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    stores::servers_exit_with_one_clear_line(
        Backend::Sqlite,
        &[Down {
            url: path.display().to_string(),
            cause: "the file is not an SQLite database".to_owned(),
        }],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
