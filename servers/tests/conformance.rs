//! The fixture tools of the official conformance suite, driven through the stdio example in
//! both generations, and the HTTP server's (`mcp_http`, the `http/` crate) anonymous
//! single-owner mode, which serves only loopback.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio as Pipe};
use std::time::{Duration, Instant};

use mcp_tasks_conformance::{core, tasks};
use serde_json::{Value, json};
use support::{Stdio, WAIT, ext, ext_meta, routing_headers};

/// `params` framed for 2026-07-28, declaring the tasks extension and `elicitation`.
fn ext_eliciting(mut params: Value) -> Value {
    let mut meta = ext_meta();
    meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({});
    params["_meta"] = meta;
    params
}

/// `params` framed for 2026-07-28 without declaring the tasks extension.
fn undeclared(mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    params
}

/// The result of a request, or a panic naming what came instead.
fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "an error: {answer}");
    &answer["result"]
}

/// The error code of an answer, or a panic naming the result that came instead.
fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"))
}

/// The first text block of a `CallToolResult`.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Starts `name` as an extension task and returns its id.
fn start_task(server: &mut Stdio, name: &str, arguments: Value) -> String {
    let created = server.request(
        "tools/call",
        ext(json!({"name": name, "arguments": arguments})),
    );
    let created = result(&created);
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task id: {created}"))
        .to_owned()
}

/// Polls the extension's `tasks/get` until `done` holds for the task, and returns it.
fn poll_until(server: &mut Stdio, task_id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let got = server.request("tasks/get", ext(json!({"taskId": task_id})));
        let task = result(&got).clone();
        if done(&task) {
            return task;
        }
        assert!(start.elapsed() < WAIT, "task {task_id} stuck: {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn terminal(server: &mut Stdio, task_id: &str) -> Value {
    poll_until(server, task_id, |task| {
        ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or(""))
    })
}

fn input_required(server: &mut Stdio, task_id: &str) -> Value {
    poll_until(server, task_id, |task| task["status"] == "input_required")
}

fn update(server: &mut Stdio, task_id: &str, responses: Value) -> Value {
    server.request(
        "tasks/update",
        ext(json!({"taskId": task_id, "inputResponses": responses})),
    )
}

#[test]
fn without_the_flag_the_server_shows_the_five_example_tools_only() {
    let mut server = Stdio::start();
    let initialized = server.initialize(json!({}));
    let instructions = result(&initialized)["instructions"].as_str().unwrap_or("");
    assert!(!instructions.contains("greet"), "{instructions}");
    let listed = server.request("tools/list", json!({}));
    let names: Vec<&str> = result(&listed)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["sleep", "fail", "crash", "confirm", "echo"],
        "{listed}"
    );
    let refused = server.request(
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {}}),
    );
    assert_eq!(error_code(&refused), -32602, "{refused}");
}

#[test]
fn every_fixture_is_listed_with_its_task_support() {
    let mut server = Stdio::start_conformance();
    server.initialize(json!({}));
    let listed = server.request("tools/list", json!({}));
    let tools = result(&listed)["tools"].as_array().expect("tools").clone();
    let expected = [
        ("test_simple_text", None),
        ("greet", None),
        ("slow_compute", Some("optional")),
        ("failing_job", Some("required")),
        ("protocol_error_job", Some("optional")),
        ("confirm_delete", Some("required")),
        ("multi_input", Some("required")),
        ("test_tool_with_task", Some("required")),
        ("test_reconnection", None),
        ("test_missing_capability", None),
        ("test_streaming_elicitation", None),
        ("test_logging_tool", None),
        ("test_custom_header", None),
        ("test_image_content", None),
        ("test_audio_content", None),
        ("test_embedded_resource", None),
        ("test_multiple_content_types", None),
        ("test_error_handling", None),
        ("test_tool_with_progress", Some("optional")),
        ("test_tool_with_logging", Some("optional")),
        ("test_sampling", None),
        ("test_elicitation", None),
        ("test_elicitation_sep1034_defaults", None),
        ("test_elicitation_sep1330_enums", None),
        ("json_schema_2020_12_tool", None),
    ];
    assert_eq!(expected.len(), tasks::NAMES.len() + core::NAMES.len());
    // The suite calls the first listed tool with `{}`: a fixture that needs nothing.
    assert_eq!(tools[0]["name"], "test_simple_text", "{listed}");
    for (name, support) in expected {
        let tool = tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` missing from {listed}"));
        assert_eq!(
            tool["execution"]["taskSupport"].as_str(),
            support,
            "{name}: {tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    // The example tools are still there.
    for name in ["sleep", "fail", "crash", "confirm", "echo"] {
        assert!(tools.iter().any(|tool| tool["name"] == name), "{name}");
    }
}

#[test]
fn greet_answers_at_once_and_never_becomes_a_task() {
    let mut server = Stdio::start_conformance();
    // Declared, and with a legacy `task` hint: still a plain result.
    let answer = server.request(
        "tools/call",
        ext(json!({"name": "greet", "arguments": {"name": "World"}, "task": {"ttl": 1000}})),
    );
    let greeted = result(&answer);
    assert_eq!(greeted["resultType"], "complete", "{greeted}");
    assert_eq!(text(greeted), "Hello, World!");
    assert!(greeted.get("taskId").is_none(), "{greeted}");
}

#[test]
fn slow_compute_completes_runs_inline_for_undeclared_clients_and_stops_on_cancel() {
    let mut server = Stdio::start_conformance();
    let quick = start_task(
        &mut server,
        "slow_compute",
        json!({"seconds": 0.05, "label": "quick"}),
    );
    let done = terminal(&mut server, &quick);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(text(&done["result"]).contains("`quick`"), "{done}");

    // A client that does not declare the extension gets the result inline.
    let inline = server.request(
        "tools/call",
        undeclared(json!({"name": "slow_compute", "arguments": {"seconds": 0}})),
    );
    let inline = result(&inline);
    assert_eq!(inline["resultType"], "complete", "{inline}");
    assert!(
        inline.get("taskId").is_none() && inline["content"].is_array(),
        "{inline}"
    );

    let long = start_task(&mut server, "slow_compute", json!({"seconds": 60}));
    let ack = server.request("tasks/cancel", ext(json!({"taskId": long})));
    assert_eq!(result(&ack), &json!({"resultType": "complete"}));
    let cancelled = terminal(&mut server, &long);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

#[test]
fn failing_job_reports_a_tool_error_and_protocol_error_job_a_json_rpc_error() {
    let mut server = Stdio::start_conformance();
    server.initialize(json!({}));
    let failing = start_task(&mut server, "failing_job", json!({}));
    let failed = terminal(&mut server, &failing);
    // The extension's view of a tool error: completed, with `isError`.
    assert_eq!(failed["status"], "completed", "{failed}");
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    // 2025-11-25's view of the same task: failed.
    let legacy = server.request("tasks/get", json!({"taskId": failing}));
    assert_eq!(result(&legacy)["status"], "failed", "{legacy}");

    let protocol = start_task(&mut server, "protocol_error_job", json!({}));
    let failed = terminal(&mut server, &protocol);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
}

#[test]
fn a_task_only_fixture_needs_the_extension() {
    let mut server = Stdio::start_conformance();
    let refused = server.request(
        "tools/call",
        undeclared(json!({"name": "failing_job", "arguments": {}})),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{refused}"
    );
}

#[test]
fn confirm_delete_asks_once_and_reports_the_answer() {
    let mut server = Stdio::start_conformance();
    let task = start_task(&mut server, "confirm_delete", json!({"filename": "a.txt"}));
    let waiting = input_required(&mut server, &task);
    let asked = &waiting["inputRequests"]["confirm"];
    assert_eq!(asked["method"], "elicitation/create", "{waiting}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("a.txt")),
        "{asked}"
    );
    // A wrong type is refused and the task keeps waiting.
    let wrong = update(
        &mut server,
        &task,
        json!({"confirm": {"action": "accept", "content": {"confirm": "yes"}}}),
    );
    assert_eq!(error_code(&wrong), -32602, "{wrong}");
    let ack = update(
        &mut server,
        &task,
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
    );
    assert_eq!(result(&ack), &json!({"resultType": "complete"}));
    let done = terminal(&mut server, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        text(&done["result"]).contains("confirmed deleting a.txt"),
        "{done}"
    );

    let kept = start_task(&mut server, "confirm_delete", json!({"filename": "b.txt"}));
    input_required(&mut server, &kept);
    update(
        &mut server,
        &kept,
        json!({"confirm": {"action": "decline"}}),
    );
    let done = terminal(&mut server, &kept);
    assert!(text(&done["result"]).contains("kept b.txt"), "{done}");
}

#[test]
fn multi_input_waits_for_both_answers_one_at_a_time() {
    let mut server = Stdio::start_conformance();
    let task = start_task(&mut server, "multi_input", json!({}));
    let waiting = input_required(&mut server, &task);
    let mut keys: Vec<&String> = waiting["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["confirm", "name"], "{waiting}");

    let answer = json!({"action": "accept", "content": {"name": "partial-1", "confirm": true}});
    update(&mut server, &task, json!({"name": answer}));
    let still = server.request("tasks/get", ext(json!({"taskId": task})));
    let still = result(&still);
    assert_eq!(still["status"], "input_required", "{still}");
    let left: Vec<&String> = still["inputRequests"]
        .as_object()
        .expect("left")
        .keys()
        .collect();
    assert_eq!(left, ["confirm"], "{still}");

    update(&mut server, &task, json!({"confirm": answer}));
    let done = terminal(&mut server, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "name: partial-1, confirmed: true");
}

#[test]
fn test_tool_with_task_asks_before_the_task_exists() {
    let mut server = Stdio::start_conformance();
    let call = |extra: Value| {
        let mut params = json!({"name": "test_tool_with_task", "arguments": {}});
        for (key, value) in extra.as_object().expect("object") {
            params[key] = value.clone();
        }
        ext_eliciting(params)
    };
    let round1 = server.request("tools/call", call(json!({})));
    let round1 = result(&round1).clone();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1.get("taskId").is_none(), "{round1}");
    let asked = &round1["inputRequests"]["user_name"];
    assert_eq!(asked["method"], "elicitation/create", "{round1}");

    // An answer of the wrong shape is refused, and no task is created.
    let wrong = server.request(
        "tools/call",
        call(
            json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": 5}}}}),
        ),
    );
    assert_eq!(error_code(&wrong), -32602, "{wrong}");

    let round2 = server.request(
        "tools/call",
        call(json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}})),
    );
    let round2 = result(&round2);
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert!(round2.get("requestState").is_none() && round2.get("inputRequests").is_none());
    let task = round2["taskId"].as_str().expect("a task id").to_owned();
    let done = terminal(&mut server, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "Hello, Alice!");

    // Without the `elicitation` capability the question cannot be asked.
    let refused = server.request(
        "tools/call",
        ext(json!({"name": "test_tool_with_task", "arguments": {}})),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
}

#[test]
fn the_diagnostic_fixtures_answer_at_once_in_both_generations() {
    let mut server = Stdio::start_conformance();
    // 2026-07-28, not declaring the extension: never a task.
    for (name, arguments, expected) in [
        ("test_simple_text", json!({}), tasks::SIMPLE_TEXT),
        ("test_reconnection", json!({}), "test_reconnection done"),
        (
            "test_logging_tool",
            json!({}),
            "test_logging_tool done (no log sent)",
        ),
        (
            "test_custom_header",
            json!({"region": "eu-west"}),
            "region: eu-west",
        ),
    ] {
        let answer = server.request(
            "tools/call",
            undeclared(json!({"name": name, "arguments": arguments})),
        );
        let answer = result(&answer);
        assert_eq!(answer["resultType"], "complete", "{answer}");
        assert_eq!(text(answer), expected, "{answer}");
        assert_eq!(answer["isError"], false, "{answer}");
    }
    // Declaring the extension changes nothing for a tool that is never a task.
    let answer = server.request(
        "tools/call",
        ext(json!({"name": "test_simple_text", "arguments": {}})),
    );
    assert_eq!(result(&answer)["resultType"], "complete", "{answer}");
    // 2025-11-25.
    let mut legacy = Stdio::start_conformance();
    legacy.initialize(json!({}));
    let answer = legacy.request(
        "tools/call",
        json!({"name": "test_custom_header", "arguments": {"region": "x"}}),
    );
    assert_eq!(text(result(&answer)), "region: x");
}

#[test]
fn test_missing_capability_names_sampling_in_its_minus_32021() {
    let mut server = Stdio::start_conformance();
    let refused = server.request(
        "tools/call",
        undeclared(json!({"name": "test_missing_capability", "arguments": {}})),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{refused}"
    );
    let mut params = json!({"name": "test_missing_capability", "arguments": {}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
    });
    let ran = server.request("tools/call", params);
    assert_eq!(result(&ran)["isError"], false, "{ran}");
}

#[test]
fn test_streaming_elicitation_asks_in_the_result_then_greets() {
    let mut server = Stdio::start_conformance();
    let call = |extra: Value| {
        let mut params = json!({"name": "test_streaming_elicitation", "arguments": {}});
        for (key, value) in extra.as_object().expect("object") {
            params[key] = value.clone();
        }
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        });
        params
    };
    let asked = server.request("tools/call", call(json!({})));
    let asked = result(&asked).clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{asked}"
    );
    let answered = server.request(
        "tools/call",
        call(json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}})),
    );
    let answered = result(&answered);
    assert_eq!(answered["resultType"], "complete", "{answered}");
    assert_eq!(text(answered), "Hello, Ada!");
    let wrong = server.request(
        "tools/call",
        call(
            json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": 1}}}}),
        ),
    );
    assert_eq!(error_code(&wrong), -32602, "{wrong}");
    // Without `elicitation` the question cannot be asked.
    let refused = server.request(
        "tools/call",
        undeclared(json!({"name": "test_streaming_elicitation", "arguments": {}})),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn under_2025_11_25_the_input_fixtures_ask_through_elicitation() {
    let mut server = Stdio::start_conformance();
    server.initialize(json!({"elicitation": {"form": {}}}));
    let created = server.request(
        "tools/call",
        json!({"name": "test_tool_with_task", "arguments": {}, "task": {}}),
    );
    let task = result(&created)["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let asked = server.next_server_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"name": "Bob"}}});
    server.send_raw(&reply.to_string());
    let answer = server.request("tasks/result", json!({"taskId": task}));
    assert_eq!(text(result(&answer)), "Hello, Bob!", "{answer}");
}

#[test]
fn bad_fixture_arguments_are_invalid_params() {
    let mut server = Stdio::start_conformance();
    for (name, arguments) in [
        ("greet", json!({})),
        ("greet", json!({"name": 7})),
        ("slow_compute", json!({})),
        ("slow_compute", json!({"seconds": -1})),
        ("slow_compute", json!({"seconds": "1"})),
        ("slow_compute", json!({"seconds": 3601})),
        ("slow_compute", json!({"seconds": 1, "label": 3})),
        ("confirm_delete", json!({"filename": null})),
    ] {
        let answer = server.request(
            "tools/call",
            ext(json!({"name": name, "arguments": arguments})),
        );
        assert_eq!(error_code(&answer), -32602, "{name} {arguments}: {answer}");
    }
}

/// The `params` of the messages in `seen` with `method`.
fn sent(seen: &[Value], method: &str) -> Vec<Value> {
    seen.iter()
        .filter(|message| message["method"] == method)
        .map(|message| message["params"].clone())
        .collect()
}

/// The `progress` values of the `notifications/progress` in `seen` for `token`.
fn progress(seen: &[Value], token: &Value) -> Vec<Value> {
    sent(seen, "notifications/progress")
        .into_iter()
        .filter(|params| &params["progressToken"] == token)
        .map(|params| params["progress"].clone())
        .collect()
}

#[test]
fn progress_and_log_messages_go_out_inline_at_the_level_asked_for_and_never_for_a_task() {
    let mut server = Stdio::start_conformance();
    let initialized = server.initialize(json!({}));
    assert_eq!(
        result(&initialized)["capabilities"]["logging"],
        json!({}),
        "{initialized}"
    );
    // 2025-11-25: progress with the request's token, in steps.
    let token = json!("p-1");
    let called = server.request(
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": token}}),
    );
    assert_eq!(result(&called)["isError"], false, "{called}");
    assert_eq!(
        progress(&server.seen, &token),
        [json!(0), json!(50), json!(100)]
    );
    // Log messages at or above the level set; all of them until one is set.
    let logged = server.request("tools/call", json!({"name": "test_tool_with_logging"}));
    assert_eq!(result(&logged)["isError"], false, "{logged}");
    assert_eq!(sent(&server.seen, "notifications/message").len(), 3);
    let set = server.request("logging/setLevel", json!({"level": "warning"}));
    assert_eq!(result(&set), &json!({}));
    server.seen.clear();
    server.request("tools/call", json!({"name": "test_tool_with_logging"}));
    assert!(
        sent(&server.seen, "notifications/message").is_empty(),
        "{:?}",
        server.seen
    );
    let bad = server.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(error_code(&bad), -32602, "{bad}");
    // 2026-07-28: no logging/setLevel; a request asks for its level in `_meta`.
    let gone = server.request("logging/setLevel", undeclared(json!({"level": "debug"})));
    assert_eq!(error_code(&gone), -32601, "{gone}");
    let mut asked = undeclared(json!({"name": "test_tool_with_logging"}));
    asked["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    asked["_meta"]["progressToken"] = json!(7);
    let logged = server.request("tools/call", asked);
    assert_eq!(result(&logged)["resultType"], "complete", "{logged}");
    let messages = sent(&server.seen, "notifications/message");
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0]["data"], "Tool execution started");
    server.seen.clear();
    server.request(
        "tools/call",
        undeclared(json!({"name": "test_tool_with_logging"})),
    );
    assert!(
        server.seen.is_empty(),
        "no logLevel, no log: {:?}",
        server.seen
    );
    // As tasks, in both generations: nothing but the task's own status notifications.
    for (generation, params) in [
        (
            "2026-07-28",
            ext(json!({"name": "test_tool_with_progress", "arguments": {}})),
        ),
        (
            "2025-11-25",
            json!({"name": "test_tool_with_progress", "arguments": {}, "task": {"ttl": 60_000}}),
        ),
    ] {
        let mut params = params;
        params["_meta"]["progressToken"] = json!("as-task");
        params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        server.seen.clear();
        let created = server.request("tools/call", params);
        let task_id = result(&created)["taskId"]
            .as_str()
            .or_else(|| result(&created)["task"]["taskId"].as_str())
            .unwrap_or_else(|| panic!("{generation}: a task: {created}"))
            .to_owned();
        let done = terminal(&mut server, &task_id);
        assert_eq!(done["status"], "completed", "{generation}: {done}");
        let logged = ext(json!({"name": "test_tool_with_logging", "arguments": {}}));
        let created = server.request("tools/call", logged);
        let logging_task = result(&created)["taskId"]
            .as_str()
            .expect("a task")
            .to_owned();
        assert_eq!(terminal(&mut server, &logging_task)["status"], "completed");
        assert!(
            progress(&server.seen, &json!("as-task")).is_empty()
                && sent(&server.seen, "notifications/message").is_empty(),
            "{generation}: a task reported: {:?}",
            server.seen
        );
    }
}

#[test]
fn sampling_and_elicitation_ask_the_client_inline_and_report_its_answer() {
    let mut server = Stdio::start_conformance();
    server.initialize(json!({"sampling": {}, "elicitation": {"form": {}}}));
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    server.send_raw(&call(100, "test_sampling", json!({"prompt": "Say hi"})));
    let asked = server.next_server_request();
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert_eq!(asked["params"]["messages"][0]["content"]["text"], "Say hi");
    assert_eq!(asked["params"]["maxTokens"], 100);
    server.send_raw(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"
        }})
        .to_string(),
    );
    let answer: Value = serde_json::from_str(&server.next_response()).expect("JSON");
    assert_eq!(text(result(&answer)), "LLM response: hi", "{answer}");

    server.send_raw(&call(101, "test_elicitation_sep1034_defaults", json!({})));
    let asked = server.next_server_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let schema = &asked["params"]["requestedSchema"]["properties"];
    assert_eq!(schema["name"]["default"], "John Doe", "{asked}");
    assert_eq!(schema["verified"]["default"], true, "{asked}");
    server.send_raw(
        &json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}).to_string(),
    );
    let answer: Value = serde_json::from_str(&server.next_response()).expect("JSON");
    assert!(text(result(&answer)).contains("action=decline"), "{answer}");

    // A client that did not declare elicitation is not asked: a tool error.
    let mut plain = Stdio::start_conformance();
    plain.initialize(json!({}));
    let refused = plain.request(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who?"}}),
    );
    assert_eq!(result(&refused)["isError"], true, "{refused}");
    assert!(plain.seen.is_empty(), "{:?}", plain.seen);
}

/// Starts the HTTP server (`mcp_http`) with `env`; returns the child and, if it started, the address
/// it listens on (else its stderr, once it exited).
fn http_server(env: &[(&str, &str)]) -> (Child, Result<String, String>) {
    let mut command = Command::new(support::mcp_http());
    command
        .env_remove("MCP_TASKS_TOKENS")
        .env_remove("MCP_TASKS_TOKENS_FILE")
        .env_remove("MCP_TASKS_ANONYMOUS")
        .env_remove("MCP_TASKS_REDIS_URL")
        .stdin(Pipe::null())
        .stdout(Pipe::piped())
        .stderr(Pipe::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("the HTTP server runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("stdout is readable");
    match line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
    {
        Some(addr) => (child, Ok(addr.to_owned())),
        None => {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .expect("stderr")
                .read_to_string(&mut stderr)
                .expect("stderr is readable");
            (child, Err(stderr))
        }
    }
}

/// Waits for a child that should exit by itself; returns whether it succeeded.
fn exit_success(mut child: Child) -> bool {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("a status") {
            return status.success();
        }
        if start.elapsed() > WAIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_anonymous_mode_is_refused_off_loopback_and_beside_tokens() {
    for (addr, extra, why) in [
        ("0.0.0.0:0", None, "loopback"),
        ("[::]:0", None, "loopback"),
        ("localhost:0", None, "loopback"),
        (
            "127.0.0.1:0",
            Some(("MCP_TASKS_TOKENS", "alice=token-a")),
            "unset MCP_TASKS_TOKENS",
        ),
    ] {
        let mut env = vec![("MCP_TASKS_ANONYMOUS", "1"), ("MCP_TASKS_HTTP_ADDR", addr)];
        env.extend(extra);
        let (mut child, started) = http_server(&env);
        let stderr = match started {
            Ok(listening) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{addr} {extra:?}: the server started on {listening}")
            }
            Err(stderr) => stderr,
        };
        assert!(!exit_success(child), "{addr}: exit status 0");
        assert!(stderr.contains(why), "{addr} {extra:?}: {stderr}");
        assert!(stderr.contains("anonymous"), "{stderr}");
    }
    let (mut child, started) = http_server(&[
        ("MCP_TASKS_ANONYMOUS", "yes"),
        ("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0"),
    ]);
    let Err(stderr) = started else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("`yes` is not a mode, yet the server started");
    };
    assert!(!exit_success(child));
    assert!(stderr.contains("must be `1`"), "{stderr}");
}

/// POSTs a 2026-07-28 request without any `Authorization` header.
fn post_anonymously(addr: &str, method: &str, params: Value) -> (u16, Value) {
    post_from(addr, None, method, params)
}

/// POSTs a 2026-07-28 request (with its `MCP-Protocol-Version` header) without
/// `Authorization`, with an `Origin` if given.
fn post_from(addr: &str, origin: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let origin = origin.map_or_else(String::new, |origin| format!("Origin: {origin}\r\n"));
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": ext(params)}).to_string();
    let routing = routing_headers(&body);
    let mut stream = TcpStream::connect(addr).expect("the server accepts");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{origin}{routing}Content-Type: application/json\r\n\
         Accept: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .expect("the server reads");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("the server answers");
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    (status, serde_json::from_str(body).expect("a JSON body"))
}

#[test]
fn the_anonymous_mode_serves_one_owner_on_loopback() {
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let (mut child, started) = http_server(&[
            ("MCP_TASKS_ANONYMOUS", "1"),
            ("MCP_TASKS_CONFORMANCE", "1"),
            ("MCP_TASKS_HTTP_ADDR", addr),
        ]);
        let _stop = Stop(&mut child);
        let listening = match started {
            Ok(listening) => listening,
            // A machine without IPv6 cannot bind [::1]: that says nothing about the mode.
            Err(stderr) if addr.starts_with('[') && stderr.contains("cannot listen") => continue,
            Err(stderr) => panic!("{addr}: {stderr}"),
        };
        let (status, created) = post_anonymously(
            &listening,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        );
        assert_eq!(status, 200, "{created}");
        let task = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_owned();
        // A second request, on another connection, is the same owner: it sees the task.
        let (status, got) = post_anonymously(&listening, "tasks/get", json!({"taskId": task}));
        assert_eq!(status, 200, "{got}");
        assert_eq!(got["result"]["taskId"], task.as_str(), "{got}");
        // No token, but a foreign web page is still refused.
        let (status, refused) = post_from(
            &listening,
            Some("http://rebound.example"),
            "tasks/get",
            json!({"taskId": task}),
        );
        assert_eq!(status, 403, "{refused}");
    }
}

/// POSTs a 2026-07-28 `tools/call` of `name` (anonymous, accepting SSE) with `meta` as its
/// `_meta`, and returns the response as it streams.
fn call_streamed(addr: &str, name: &str, meta: Value) -> support::streamed::Streamed {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": name, "arguments": {}, "_meta": meta}})
    .to_string();
    support::streamed::send(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Connection: close",
            routing_headers(&body)
        ),
        &body,
    )
}

#[test]
fn mcp_http_streams_progress_ahead_of_the_answer_and_answers_a_task_in_json() {
    let (mut child, started) = http_server(&[
        ("MCP_TASKS_ANONYMOUS", "1"),
        ("MCP_TASKS_CONFORMANCE", "1"),
        ("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0"),
    ]);
    let _stop = Stop(&mut child);
    let addr = started.unwrap_or_else(|stderr| panic!("{stderr}"));
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "p-http"
    });
    let mut streamed = call_streamed(&addr, "test_tool_with_progress", meta.clone());
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    let mut seen = Vec::new();
    let answer = streamed.next_message(&mut seen, "the answer", |m| m.get("id").is_some());
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        progress(&seen, &json!("p-http")),
        [json!(0), json!(50), json!(100)]
    );

    // Work that sends nothing is answered with plain JSON.
    let mut plain = call_streamed(&addr, "test_simple_text", meta.clone());
    assert_eq!(plain.header("content-type"), Some("application/json"));
    let mut body = String::new();
    plain.body.read_to_string(&mut body).expect("a body");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");

    // As a task: the CreateTaskResult, in JSON, and no progress at all.
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut task = call_streamed(&addr, "test_tool_with_progress", meta);
    assert_eq!(task.header("content-type"), Some("application/json"));
    let mut body = String::new();
    task.body.read_to_string(&mut body).expect("a body");
    let created: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
}

/// Stops a server when dropped, also when a test fails.
struct Stop<'c>(&'c mut Child);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
