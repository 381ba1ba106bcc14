//! A server with the fixtures, driven in process as a client would over stdio
//! (`LineClient`), on either wire.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use mcp_tasks_server::Server;
use mcp_tasks_server::testing::LineClient;
use serde_json::{Value, json};

/// How long a task may take to get where a test waits for it.
pub const WAIT: Duration = Duration::from_secs(20);

/// A server serving the fixtures only.
pub fn start() -> LineClient {
    let server = mcp_tasks_conformance::register(Server::builder().name("fixtures", "0"))
        .build()
        .expect("the fixtures build a server");
    LineClient::start(server)
}

/// A server serving the fixtures, initialized on 2025-11-25 with `capabilities`.
pub fn start_v2025(capabilities: Value) -> LineClient {
    let mut client = start();
    let initialized = client.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "conformance-tests", "version": "0"}}),
    );
    assert!(initialized.get("result").is_some(), "{initialized}");
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client
}

/// The `_meta` of a 2026-07-28 request whose client declares `capabilities`.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// `params` framed for 2026-07-28, its client declaring `capabilities`.
pub fn framed(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = meta(capabilities);
    params
}

/// `params` framed for 2026-07-28, declaring the tasks extension (and `elicitation`).
pub fn ext(params: Value) -> Value {
    framed(
        params,
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
}

/// `params` framed for 2026-07-28, declaring nothing.
pub fn undeclared(params: Value) -> Value {
    framed(params, json!({}))
}

/// The result of an answer, or a panic naming the error that came instead.
pub fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "an error: {answer}");
    &answer["result"]
}

/// The error code of an answer, or a panic naming the result that came instead.
pub fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"))
}

/// The first text block of a `CallToolResult`.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The id of the task a `tools/call` created, on either wire.
pub fn task_id(created: &Value) -> String {
    let created = result(created);
    created["taskId"]
        .as_str()
        .or_else(|| created["task"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// Starts `name` as a 2026-07-28 task and returns its id.
pub fn start_task(client: &mut LineClient, name: &str, arguments: Value) -> String {
    let created = client.request(
        "tools/call",
        ext(json!({"name": name, "arguments": arguments})),
    );
    assert_eq!(result(&created)["resultType"], "task", "{created}");
    task_id(&created)
}

/// Polls the 2026-07-28 `tasks/get` until `done` holds for the task, and returns it.
pub fn poll_until(client: &mut LineClient, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let got = client.request("tasks/get", ext(json!({"taskId": id})));
        let task = result(&got).clone();
        if done(&task) {
            return task;
        }
        assert!(started.elapsed() < WAIT, "task {id} stuck: {task}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The task once it is finished (2026-07-28's view).
pub fn terminal(client: &mut LineClient, id: &str) -> Value {
    poll_until(client, id, |task| {
        ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or(""))
    })
}

/// The task once it waits for input (2026-07-28's view).
pub fn input_required(client: &mut LineClient, id: &str) -> Value {
    poll_until(client, id, |task| task["status"] == "input_required")
}

/// Answers the task's input requests (`tasks/update`).
pub fn update(client: &mut LineClient, id: &str, responses: Value) -> Value {
    client.request(
        "tasks/update",
        ext(json!({"taskId": id, "inputResponses": responses})),
    )
}

/// Every message the server sent that no request took, waiting `within` for the first.
pub fn drain(client: &mut LineClient, within: Duration) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut wait = within;
    while let Some(message) = client.next(wait) {
        seen.push(message);
        wait = Duration::ZERO;
    }
    seen
}

/// The `params` of the messages in `seen` with `method`.
pub fn sent(seen: &[Value], method: &str) -> Vec<Value> {
    seen.iter()
        .filter(|message| message["method"] == method)
        .map(|message| message["params"].clone())
        .collect()
}

/// The next request the server sends the client (skipping notifications).
pub fn next_request(client: &mut LineClient) -> Value {
    loop {
        let message = client
            .next(WAIT)
            .expect("a request from the server in time");
        if message.get("id").is_some() && message.get("method").is_some() {
            return message;
        }
    }
}

/// Sends the client's `result` to the server's request `asked`.
pub fn reply(client: &mut LineClient, asked: &Value, result: Value) {
    client.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": result}));
}
