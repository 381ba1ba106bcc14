//! The stdio example asks for input only from a client that declared `elicitation`,
//! refuses answers of the wrong shape, and notifies each status change once.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Stdio, ext};

/// Polls `tasks/get` (2025-11-25) until the task is terminal, and returns it.
fn settle(server: &mut Stdio, task_id: &str) -> Value {
    let start = Instant::now();
    loop {
        let got = server.request("tasks/get", json!({"taskId": task_id}));
        let status = got["result"]["status"].as_str().unwrap_or("?").to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return got["result"].clone();
        }
        assert!(
            start.elapsed() < support::WAIT,
            "task {task_id} stuck in {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status notifications of `task_id` seen so far, as (status, message).
fn notified(server: &Stdio, task_id: &str) -> Vec<(String, Option<String>)> {
    server
        .seen
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == task_id)
        .map(|m| {
            (
                m["params"]["status"].as_str().unwrap_or("?").to_owned(),
                m["params"]["statusMessage"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Starts `confirm` as a 2025-11-25 task and answers its `elicitation/create` with
/// `answer`; returns the task id and the elicitation request.
fn confirm_answered(server: &mut Stdio, answer: Value) -> (String, Value) {
    let created = server.request(
        "tools/call",
        json!({"name": "confirm", "arguments": {"question": "go?"}, "task": {}}),
    );
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let asked = server.next_server_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer});
    server.send_raw(&reply.to_string());
    (task_id, asked)
}

#[test]
fn instructions_name_every_tool() {
    let mut server = Stdio::start();
    let init = server.initialize(json!({}));
    let discovered = server.request("server/discover", json!({}));
    let tools = server.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(names.len() >= 5, "{tools}");
    for instructions in [
        &init["result"]["instructions"],
        &discovered["result"]["instructions"],
    ] {
        let text = instructions.as_str().expect("instructions");
        for name in &names {
            assert!(text.contains(name), "`{name}` missing from {text:?}");
        }
    }
}

#[test]
fn confirm_is_refused_for_a_client_without_elicitation() {
    let mut server = Stdio::start();
    server.initialize(json!({"sampling": {}}));
    let refused = server.request(
        "tools/call",
        json!({"name": "confirm", "arguments": {"question": "go?"}, "task": {}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`elicitation`"), "{message}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{refused}"
    );
    // No task was made, and nothing was sent to the client.
    let listed = server.request("tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    assert!(server.line_within(Duration::from_millis(300)).is_none());
    assert!(server.seen.is_empty(), "{:?}", server.seen);
    // Other tools still run as tasks for this client.
    let created = server.request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
    );
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
}

#[test]
fn a_url_only_client_has_no_form_elicitation() {
    let mut server = Stdio::start();
    server.initialize(json!({"elicitation": {"url": {}}}));
    let refused = server.request(
        "tools/call",
        json!({"name": "confirm", "arguments": {"question": "go?"}, "task": {}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[test]
fn an_answer_of_the_wrong_shape_fails_the_task() {
    for (case, answer) in [
        (
            "a number",
            json!({"action": "accept", "content": {"answer": 42}}),
        ),
        ("no content", json!({"action": "accept"})),
        (
            "no answer",
            json!({"action": "accept", "content": {"other": "x"}}),
        ),
        ("an unknown action", json!({"action": "maybe"})),
        ("not an object", json!("yes")),
    ] {
        let mut server = Stdio::start();
        server.initialize(json!({"elicitation": {}}));
        let (task_id, _) = confirm_answered(&mut server, answer);
        let task = settle(&mut server, &task_id);
        assert_eq!(task["status"], "failed", "{case}: {task}");
        let result = server.request("tasks/result", json!({"taskId": task_id}));
        assert_eq!(result["error"]["code"], -32602, "{case}: {result}");
        let message = result["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("requested schema"), "{case}: {message}");
    }
}

#[test]
fn a_good_answer_completes_with_one_notification_per_change() {
    let mut server = Stdio::start();
    server.initialize(json!({"elicitation": {"form": {}}}));
    let (task_id, asked) = confirm_answered(
        &mut server,
        json!({"action": "accept", "content": {"answer": "yes"}}),
    );
    assert_eq!(asked["params"]["mode"], "form", "{asked}");
    assert_eq!(
        asked["params"]["requestedSchema"]["properties"]["answer"]["type"],
        "string"
    );
    let task = settle(&mut server, &task_id);
    assert_eq!(task["status"], "completed", "{task}");
    let result = server.request("tasks/result", json!({"taskId": task_id}));
    assert_eq!(
        result["result"]["content"][0]["text"], "the user answered: yes",
        "{result}"
    );
    // Every notification differs from the one before, and input_required came once.
    let changes = notified(&server, &task_id);
    assert!(
        changes.windows(2).all(|pair| pair[0] != pair[1]),
        "{changes:?}"
    );
    let asking = changes
        .iter()
        .filter(|(status, _)| status == "input_required");
    assert_eq!(asking.count(), 1, "{changes:?}");
    assert_eq!(changes.last().map(|(s, _)| s.as_str()), Some("completed"));
}

#[test]
fn the_extension_refuses_an_answer_of_the_wrong_shape_and_keeps_waiting() {
    let mut server = Stdio::start();
    let created = server.request(
        "tools/call",
        ext(json!({"name": "confirm", "arguments": {"question": "go?"}})),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let get = |server: &mut Stdio| server.request("tasks/get", ext(json!({"taskId": task_id})));
    let start = Instant::now();
    let mut got = get(&mut server);
    while got["result"]["status"] != "input_required" {
        assert!(start.elapsed() < support::WAIT, "{got}");
        std::thread::sleep(Duration::from_millis(20));
        got = get(&mut server);
    }
    let key = got["result"]["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one input request");
    for wrong in [
        json!({"action": "accept", "content": {"answer": true}}),
        json!({"action": "accept"}),
        json!({"action": "nod"}),
    ] {
        let refused = server.request(
            "tasks/update",
            ext(json!({"taskId": task_id, "inputResponses": {key.clone(): wrong}})),
        );
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(get(&mut server)["result"]["status"], "input_required");
    }
    let accepted = server.request(
        "tasks/update",
        ext(json!({"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {"answer": "ok"}}}})),
    );
    assert_eq!(accepted["result"]["resultType"], "complete", "{accepted}");
    let start = Instant::now();
    let mut got = get(&mut server);
    while got["result"]["status"] != "completed" {
        assert!(start.elapsed() < support::WAIT, "{got}");
        std::thread::sleep(Duration::from_millis(20));
        got = get(&mut server);
    }
    assert_eq!(
        got["result"]["result"]["content"][0]["text"],
        "the user answered: ok"
    );
}
