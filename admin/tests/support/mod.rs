//! What the command line's tests share: running `mcp-tasks-admin` and reading what it
//! printed.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the console with `args` against `store` (a store URL or a server's admin API),
/// with `env` set and no other store or token source.
pub fn admin(store: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-admin"));
    command
        .env_remove("MCP_TASKS_STORE")
        .env_remove("MCP_TASKS_ADMIN_TOKEN")
        .env_remove("MCP_TASKS_ADMIN_TOKEN_FILE")
        .arg("--store")
        .arg(store)
        .args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("the console runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON the console printed, after checking it succeeded.
pub fn ok_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "failed: {}{}",
        stdout(output),
        stderr(output)
    );
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

/// The ids of a listed page, in order.
pub fn task_ids(listed: &Value) -> Vec<String> {
    listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|task| task["taskId"].as_str().unwrap().to_owned())
        .collect()
}
