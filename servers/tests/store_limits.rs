//! The limits on stored tasks are the operator's: `MCP_TASKS_MAX_TASKS_PER_OWNER` and
//! `MCP_TASKS_MAX_TASKS` (a positive number, or `none`) set them for the servers' store,
//! the in-process one included; a task over a limit is refused with `-32603` and the
//! limit's words, and a value that is neither refuses to start.

mod support;

use std::process::{Command, Stdio as Piped};

use serde_json::{Value, json};
use support::{Http, Stdio};

/// Creates `sleep` tasks (2025-11-25) until one is refused or `at_most` were created:
/// how many were created, and the refusal.
fn create_until_refused(server: &mut Stdio, at_most: usize) -> (usize, Option<Value>) {
    for created in 0..at_most {
        let answer = server.request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
        );
        if let Some(error) = answer.get("error") {
            return (created, Some(error.clone()));
        }
        assert!(
            answer["result"]["task"]["taskId"].is_string(),
            "a task: {answer}"
        );
    }
    (at_most, None)
}

fn started(env: &[(&str, &str)]) -> Stdio {
    let mut server = Stdio::start_with(&[], env);
    server.initialize(json!({}));
    server
}

#[test]
fn an_owner_is_refused_at_the_per_owner_limit_the_environment_sets() {
    let mut server = started(&[("MCP_TASKS_MAX_TASKS_PER_OWNER", "3")]);
    let (created, refused) = create_until_refused(&mut server, 10);
    assert_eq!(created, 3, "three tasks, then the limit");
    let refused = refused.expect("the fourth is refused");
    assert_eq!(refused["code"], -32603, "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("too many tasks") && message.contains('3'),
        "the limit in the task's words: {message}"
    );
}

#[test]
fn none_lifts_the_per_owner_limit_and_the_total_still_holds() {
    // Over the default of 1,000 per owner, under a total of 1,005.
    let mut server = started(&[
        ("MCP_TASKS_MAX_TASKS_PER_OWNER", "none"),
        ("MCP_TASKS_MAX_TASKS", "1005"),
    ]);
    let (created, refused) = create_until_refused(&mut server, 1_100);
    assert_eq!(
        created, 1_005,
        "past 1,000 for one owner, stopped at the total"
    );
    let refused = refused.expect("the total is a limit");
    assert_eq!(refused["code"], -32603, "{refused}");
}

#[test]
fn the_http_server_takes_the_same_limit() {
    let server = Http::start_with(&[("MCP_TASKS_MAX_TASKS_PER_OWNER", "2")]);
    // 2026-07-28, the extension declared: a task each.
    let call = |id: u32| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 0}, "_meta": support::ext_meta()}
        })
        .to_string()
    };
    let answers: Vec<Value> = (1..=3)
        .map(|id| {
            let answer = server.post_2026(&call(id));
            serde_json::from_str(&answer.body).expect("a JSON answer")
        })
        .collect();
    assert_eq!(answers[0]["result"]["resultType"], "task", "{}", answers[0]);
    assert_eq!(answers[1]["result"]["resultType"], "task", "{}", answers[1]);
    assert_eq!(answers[2]["error"]["code"], -32603, "{}", answers[2]);
}

#[test]
fn a_limit_that_is_not_a_number_stops_the_server_with_one_line() {
    for bad in ["0", "-1", "lots"] {
        let output = Command::new(env!("CARGO_BIN_EXE_stdio_server"))
            .env("MCP_TASKS_MAX_TASKS", bad)
            .stdin(Piped::null())
            .output()
            .expect("the server runs");
        assert!(!output.status.success(), "`{bad}` refused");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("MCP_TASKS_MAX_TASKS") && stderr.contains("none"),
            "says which variable and what it takes: {stderr}"
        );
    }
}
