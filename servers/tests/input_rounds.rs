//! Input before (or without) a task on the 2026-07-28 wire (SEP-2322), through the stdio
//! server and the HTTP server (`mcp_http`): a tool answers an `InputRequiredResult`, the
//! retry with `inputResponses` and the `requestState` answers it; a tampered, expired,
//! misdirected or foreign state is refused with `-32602`; rounds then a task; 2025-11-25
//! unchanged.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Http, HttpAnswer, Stdio, WAIT, routing_headers};

/// The `_meta` of a 2026-07-28 request declaring these client capabilities.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "input-rounds-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// A 2026-07-28 `tools/call` of `confirm` from a client that can elicit but did not declare
/// the tasks extension.
fn confirm(question: &str) -> Value {
    json!({
        "name": "confirm",
        "arguments": {"question": question},
        "_meta": meta(json!({"elicitation": {}}))
    })
}

/// `call` retried with `responses` and the state `asked` gave.
fn retry(call: &Value, asked: &Value, responses: Value) -> Value {
    let mut retry = call.clone();
    retry["inputResponses"] = responses;
    retry["requestState"] = asked["requestState"].clone();
    retry
}

fn said(answer: &str) -> Value {
    json!({"confirm": {"action": "accept", "content": {"answer": answer}}})
}

fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "an error: {answer}");
    &answer["result"]
}

fn error(answer: &Value) -> (i64, &str) {
    let code = answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"));
    (
        code,
        answer["error"]["message"].as_str().unwrap_or_default(),
    )
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Checks an `InputRequiredResult` asking `confirm` and returns it.
fn asked_confirm(answer: &Value, question: &str) -> Value {
    let asked = result(answer).clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        asked["inputRequests"]["confirm"]["params"]["message"],
        question
    );
    assert!(asked["requestState"].is_string(), "{asked}");
    assert!(asked.get("taskId").is_none(), "no task: {asked}");
    asked
}

#[test]
fn confirm_asks_without_the_extension_and_the_retry_answers() {
    let mut server = Stdio::start();
    let call = confirm("Deploy?");
    let asked = asked_confirm(&server.request("tools/call", call.clone()), "Deploy?");

    let done = server.request("tools/call", retry(&call, &asked, said("yes")));
    let done = result(&done);
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(text(done), "the user answered: yes");

    // The state is the request's: another question, another tool, a changed byte, all
    // refused alike.
    let other = retry(&confirm("Delete?"), &asked, said("yes"));
    let mut echo = retry(&call, &asked, said("yes"));
    echo["name"] = json!("echo");
    echo["arguments"] = json!({"text": "hi"});
    let mut tampered = retry(&call, &asked, said("yes"));
    tampered["requestState"] = json!(format!(
        "{}-TAMPERED",
        asked["requestState"].as_str().unwrap_or_default()
    ));
    for refused in [other, echo, tampered] {
        let answer = server.request("tools/call", refused);
        let (code, message) = error(&answer);
        assert_eq!(code, -32602, "{answer}");
        assert!(message.contains("requestState"), "{message}");
    }

    // An answer that does not fit the form is refused, naming it.
    let wrong = json!({"confirm": {"action": "accept", "content": {"answer": 3}}});
    let answer = server.request("tools/call", retry(&call, &asked, wrong));
    let (code, message) = error(&answer);
    assert_eq!(code, -32602);
    assert!(message.contains("inputResponses.confirm"), "{message}");

    // A missing answer: asked again, under a new state.
    let again = server.request("tools/call", retry(&call, &asked, json!({})));
    let again = asked_confirm(&again, "Deploy?");
    assert_ne!(again["requestState"], asked["requestState"]);

    // A client that cannot elicit is told what it lacks.
    let mut mute = call.clone();
    mute["_meta"] = meta(json!({}));
    let answer = server.request("tools/call", mute);
    assert_eq!(error(&answer).0, -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {}}})
    );

    // With the extension declared, confirm is a task as before (it asks from inside).
    let mut tasked = call.clone();
    tasked["_meta"] = meta(json!({
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }));
    let created = server.request("tools/call", tasked);
    assert_eq!(result(&created)["resultType"], "task", "{created}");
}

#[test]
fn on_2025_11_25_confirm_is_unchanged() {
    let mut server = Stdio::start();
    server.initialize(json!({"elicitation": {}}));
    let answer = server.request(
        "tools/call",
        json!({"name": "confirm", "arguments": {"question": "Deploy?"}}),
    );
    // Still a tool that only runs as a task there, and never an InputRequiredResult.
    assert!(answer.get("result").is_none(), "{answer}");
    assert_eq!(error(&answer).0, -32601, "{answer}");
}

#[test]
fn an_expired_state_is_refused() {
    let mut server = Stdio::start_with(&[], &[("MCP_TASKS_REQUEST_STATE_TTL_MS", "150")]);
    let call = confirm("Deploy?");
    let asked = asked_confirm(&server.request("tools/call", call.clone()), "Deploy?");
    std::thread::sleep(Duration::from_millis(300));
    let answer = server.request("tools/call", retry(&call, &asked, said("yes")));
    let (code, message) = error(&answer);
    assert_eq!(code, -32602, "{answer}");
    assert!(message.contains("expired"), "{message}");
    // Starting over works.
    asked_confirm(&server.request("tools/call", call), "Deploy?");
}

#[test]
fn rounds_then_a_task() {
    let mut server = Stdio::start_conformance();
    let call = json!({
        "name": "test_tool_with_task",
        "arguments": {},
        "_meta": meta(json!({
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }))
    });
    let asked = result(&server.request("tools/call", call.clone())).clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("taskId").is_none(), "{asked}");
    let responses = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});

    // A changed state creates no task.
    let mut tampered = retry(&call, &asked, responses.clone());
    tampered["requestState"] = json!("forged.state");
    assert_eq!(error(&server.request("tools/call", tampered)).0, -32602);

    let created = server.request("tools/call", retry(&call, &asked, responses));
    let created = result(&created);
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none(), "{created}");
    assert!(created.get("inputRequests").is_none(), "{created}");
    let task_id = created["taskId"].as_str().unwrap_or_default().to_owned();
    let start = Instant::now();
    let task = loop {
        let got = server.request(
            "tasks/get",
            json!({"taskId": task_id, "_meta": meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))}),
        );
        let task = result(&got).clone();
        if task["status"] == "completed" {
            break task;
        }
        assert!(start.elapsed() < WAIT, "stuck: {task}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(text(&task["result"]), "Hello, Ada!");
}

/// POSTs a 2026-07-28 `tools/call` with bearer `token` and returns the JSON-RPC answer.
fn call_as(server: &Http, token: &str, params: &Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let headers = format!(
        "MCP-Protocol-Version: 2026-07-28\r\n{}",
        routing_headers(&body)
    );
    let HttpAnswer { body, .. } = server.post_as(token, &body, &headers);
    serde_json::from_str(&body).unwrap_or_else(|err| panic!("not JSON ({err}): {body}"))
}

#[test]
fn over_http_a_state_is_bound_to_its_caller_and_shared_by_instances_with_one_key() {
    let key = "a shared secret of at least thirty-two bytes";
    let env = [
        ("MCP_TASKS_TOKENS", "alice=token-a,bob=token-b"),
        ("MCP_TASKS_REQUEST_STATE_KEY", key),
    ];
    let first = Http::start_with(&env);
    let call = confirm("Deploy?");
    let asked = asked_confirm(&call_as(&first, "token-a", &call), "Deploy?");
    let answered = retry(&call, &asked, said("yes"));

    // Bob cannot use Alice's state.
    let answer = call_as(&first, "token-b", &answered);
    let (code, message) = error(&answer);
    assert_eq!(code, -32602, "{answer}");
    assert!(message.contains("requestState"), "{message}");

    // Another instance with the same key (behind one load balancer) accepts it.
    let second = Http::start_with(&env);
    let done = call_as(&second, "token-a", &answered);
    assert_eq!(text(result(&done)), "the user answered: yes");

    // One with its own key does not.
    let elsewhere = Http::start_with(&[("MCP_TASKS_TOKENS", "alice=token-a")]);
    assert_eq!(error(&call_as(&elsewhere, "token-a", &answered)).0, -32602);

    // A key too short to trust stops the server at start.
    let status = std::process::Command::new(support::mcp_http())
        .env("MCP_TASKS_TOKENS", "alice=token-a")
        .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0")
        .env("MCP_TASKS_REQUEST_STATE_KEY", "short")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("mcp_http runs");
    assert!(!status.success());
}
