//! The fixtures of the `tasks-*` scenarios and the diagnostic ones, driven as the suite
//! drives them: on 2026-07-28 (tasks when the extension is declared, input rounds) and on
//! 2025-11-25 (tasks when asked for, input through `elicitation/create`).

mod support;

use std::time::Duration;

use mcp_tasks_conformance::tasks::{SIMPLE_TEXT, USER_NAME};
use serde_json::{Value, json};
use support::{
    error_code, ext, framed, input_required, next_request, reply, result, start, start_task,
    start_v2025, task_id, terminal, text, undeclared, update,
};

#[test]
fn test_simple_text_answers_its_text_to_an_empty_call_on_both_wires() {
    let mut client = start_v2025(json!({}));
    let legacy = client.request(
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {}}),
    );
    assert_eq!(text(result(&legacy)), SIMPLE_TEXT);
    assert_eq!(result(&legacy)["isError"], false);
    for params in [
        undeclared(json!({"name": "test_simple_text", "arguments": {}})),
        // Declaring the extension changes nothing for a tool that is never a task.
        ext(json!({"name": "test_simple_text"})),
    ] {
        let answer = client.request("tools/call", params);
        let answer = result(&answer);
        assert_eq!(answer["resultType"], "complete", "{answer}");
        assert_eq!(text(answer), SIMPLE_TEXT);
    }
}

#[test]
fn greet_answers_at_once_and_never_becomes_a_task() {
    let mut client = start();
    // Declared, and with a legacy `task` hint: still a plain result.
    let answer = client.request(
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
    let mut client = start();
    let quick = start_task(
        &mut client,
        "slow_compute",
        json!({"seconds": 0.05, "label": "quick"}),
    );
    let done = terminal(&mut client, &quick);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        text(&done["result"]),
        "slow_compute `quick` done after 50 ms"
    );
    // A client that does not declare the extension gets the result at once.
    let inline = client.request(
        "tools/call",
        undeclared(json!({"name": "slow_compute", "arguments": {"seconds": 0}})),
    );
    let inline = result(&inline);
    assert_eq!(inline["resultType"], "complete", "{inline}");
    assert_eq!(text(inline), "slow_compute done after 0 ms");
    // A declared client gets a task even for no time at all.
    let zero = start_task(&mut client, "slow_compute", json!({"seconds": 0}));
    assert_eq!(terminal(&mut client, &zero)["status"], "completed");
    // A cancel stops it as cancelled, neither completed nor failed.
    let long = start_task(&mut client, "slow_compute", json!({"seconds": 60}));
    let ack = client.request("tasks/cancel", ext(json!({"taskId": long})));
    assert_eq!(result(&ack), &json!({"resultType": "complete"}));
    let cancelled = terminal(&mut client, &long);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
}

#[test]
fn failing_job_reports_a_tool_error_and_protocol_error_job_a_json_rpc_error() {
    let mut client = start_v2025(json!({}));
    let failing = start_task(&mut client, "failing_job", json!({}));
    let failed = terminal(&mut client, &failing);
    // The extension's view of a tool error: completed, with `isError`.
    assert_eq!(failed["status"], "completed", "{failed}");
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_eq!(text(&failed["result"]), "failing_job always fails");
    // 2025-11-25's view of the same task: failed.
    let legacy = client.request("tasks/get", json!({"taskId": failing}));
    assert_eq!(result(&legacy)["status"], "failed", "{legacy}");

    let protocol = start_task(&mut client, "protocol_error_job", json!({}));
    let failed = terminal(&mut client, &protocol);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(
        failed["error"]["message"],
        "protocol_error_job always fails with a protocol error"
    );
    assert!(failed.get("result").is_none(), "{failed}");
    // At once, the error itself.
    let inline = client.request("tools/call", json!({"name": "protocol_error_job"}));
    assert_eq!(error_code(&inline), -32603, "{inline}");
}

#[test]
fn a_task_only_fixture_needs_the_extension() {
    let mut client = start();
    for name in ["failing_job", "confirm_delete", "multi_input"] {
        let refused = client.request(
            "tools/call",
            undeclared(json!({"name": name, "arguments": {"filename": "f"}})),
        );
        assert_eq!(error_code(&refused), -32021, "{name}: {refused}");
        assert!(
            refused["error"]["data"]["requiredCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object(),
            "{refused}"
        );
    }
}

#[test]
fn confirm_delete_asks_once_and_reports_the_answer() {
    let mut client = start();
    let task = start_task(&mut client, "confirm_delete", json!({"filename": "a.txt"}));
    let waiting = input_required(&mut client, &task);
    let asked = &waiting["inputRequests"]["confirm"];
    assert_eq!(asked["method"], "elicitation/create", "{waiting}");
    assert_eq!(asked["params"]["mode"], "form");
    assert_eq!(asked["params"]["message"], "Delete a.txt?");
    assert_eq!(
        asked["params"]["requestedSchema"],
        json!({"type": "object",
               "properties": {"confirm": {"type": "boolean", "description": "Yes or no"}},
               "required": ["confirm"]})
    );
    // A wrong type is refused and the task keeps waiting; an unknown key is ignored.
    let wrong = update(
        &mut client,
        &task,
        json!({"confirm": {"action": "accept", "content": {"confirm": "yes"}}}),
    );
    assert_eq!(error_code(&wrong), -32602, "{wrong}");
    let unknown = update(
        &mut client,
        &task,
        json!({"unknown-key": {"action": "accept", "content": {}}}),
    );
    assert_eq!(result(&unknown), &json!({"resultType": "complete"}));
    assert_eq!(
        input_required(&mut client, &task)["status"],
        "input_required"
    );
    let ack = update(
        &mut client,
        &task,
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
    );
    assert_eq!(result(&ack), &json!({"resultType": "complete"}));
    let done = terminal(&mut client, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        text(&done["result"]),
        "the user confirmed deleting a.txt (nothing was deleted: a fixture)"
    );

    for answer in [
        json!({"action": "decline"}),
        json!({"action": "accept", "content": {"confirm": false}}),
    ] {
        let kept = start_task(&mut client, "confirm_delete", json!({"filename": "b.txt"}));
        input_required(&mut client, &kept);
        update(&mut client, &kept, json!({"confirm": answer}));
        let done = terminal(&mut client, &kept);
        assert_eq!(text(&done["result"]), "the user kept b.txt", "{done}");
    }

    // A cancel while it waits ends it cancelled.
    let cancelled = start_task(&mut client, "confirm_delete", json!({"filename": "c.txt"}));
    input_required(&mut client, &cancelled);
    client.request("tasks/cancel", ext(json!({"taskId": cancelled})));
    assert_eq!(terminal(&mut client, &cancelled)["status"], "cancelled");
}

#[test]
fn confirm_delete_asks_a_2025_client_through_elicitation_and_needs_it_declared() {
    let mut client = start_v2025(json!({"elicitation": {}}));
    let created = client.request(
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "d.txt"}, "task": {}}),
    );
    let task = task_id(&created);
    let asked = next_request(&mut client);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Delete d.txt?");
    reply(
        &mut client,
        &asked,
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let answer = client.request("tasks/result", json!({"taskId": task}));
    assert!(
        text(result(&answer)).contains("confirmed deleting d.txt"),
        "{answer}"
    );

    let mut plain = start_v2025(json!({}));
    let refused = plain.request(
        "tools/call",
        json!({"name": "confirm_delete", "arguments": {"filename": "d.txt"}, "task": {}}),
    );
    assert_eq!(error_code(&refused), -32602, "{refused}");
}

#[test]
fn multi_input_waits_for_both_answers_one_at_a_time() {
    let mut client = start();
    let task = start_task(&mut client, "multi_input", json!({}));
    let waiting = input_required(&mut client, &task);
    let requests = waiting["inputRequests"].as_object().expect("inputRequests");
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, ["confirm", "name"], "{waiting}");
    assert_eq!(requests["name"]["params"]["message"], "Your name?");
    assert_eq!(
        requests["name"]["params"]["requestedSchema"]["properties"],
        json!({"name": {"type": "string"}})
    );
    assert_eq!(requests["confirm"]["params"]["message"], "Go ahead?");

    // Each answer the suite sends fits either question.
    let answer = json!({"action": "accept", "content": {"name": "partial-1", "confirm": true}});
    update(&mut client, &task, json!({"name": answer}));
    let still = client.request("tasks/get", ext(json!({"taskId": task})));
    let still = result(&still);
    assert_eq!(still["status"], "input_required", "{still}");
    let left: Vec<&String> = still["inputRequests"]
        .as_object()
        .expect("left")
        .keys()
        .collect();
    assert_eq!(left, ["confirm"], "{still}");

    update(&mut client, &task, json!({"confirm": answer}));
    let done = terminal(&mut client, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "name: partial-1, confirmed: true");

    // Declined: said so.
    let task = start_task(&mut client, "multi_input", json!({}));
    input_required(&mut client, &task);
    update(
        &mut client,
        &task,
        json!({"name": {"action": "decline"}, "confirm": {"action": "cancel"}}),
    );
    let done = terminal(&mut client, &task);
    assert_eq!(text(&done["result"]), "name: (not given), confirmed: false");
}

/// `test_tool_with_task`'s call with `extra` members, declaring the extension and
/// `elicitation`.
fn with_task_call(extra: Value) -> Value {
    let mut params = json!({"name": "test_tool_with_task", "arguments": {}});
    for (key, value) in extra.as_object().expect("object") {
        params[key] = value.clone();
    }
    ext(params)
}

#[test]
fn test_tool_with_task_asks_before_the_task_exists() {
    let mut client = start();
    let round1 = client.request("tools/call", with_task_call(json!({})));
    let round1 = result(&round1).clone();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1.get("taskId").is_none(), "{round1}");
    let asked = &round1["inputRequests"][USER_NAME];
    assert_eq!(asked["method"], "elicitation/create", "{round1}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    assert_eq!(
        asked["params"]["requestedSchema"],
        json!({"type": "object",
               "properties": {"name": {"type": "string", "description": "Your name"}},
               "required": ["name"]})
    );

    // An answer of the wrong shape is refused, and no task is created.
    let wrong = client.request(
        "tools/call",
        with_task_call(
            json!({"inputResponses": {USER_NAME: {"action": "accept", "content": {"name": 5}}}}),
        ),
    );
    assert_eq!(error_code(&wrong), -32602, "{wrong}");

    let round2 = client.request(
        "tools/call",
        with_task_call(json!({
            "inputResponses": {USER_NAME: {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": round1["requestState"]
        })),
    );
    let round2 = result(&round2);
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert!(round2.get("requestState").is_none() && round2.get("inputRequests").is_none());
    let task = round2["taskId"].as_str().expect("a task id").to_owned();
    let done = terminal(&mut client, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done["result"]), "Hello, Alice!");

    // Declined before the task: the task says so, without asking again.
    let declined = client.request(
        "tools/call",
        with_task_call(json!({"inputResponses": {USER_NAME: {"action": "decline"}}})),
    );
    let done = terminal(&mut client, &task_id(&declined));
    assert_eq!(text(&done["result"]), "the user did not give a name");

    // Without the `elicitation` capability the question cannot be asked.
    let refused = client.request(
        "tools/call",
        framed(
            json!({"name": "test_tool_with_task"}),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
}

#[test]
fn under_2025_11_25_test_tool_with_task_asks_from_its_task() {
    let mut client = start_v2025(json!({"elicitation": {"form": {}}}));
    let created = client.request(
        "tools/call",
        json!({"name": "test_tool_with_task", "arguments": {}, "task": {}}),
    );
    let task = task_id(&created);
    let asked = next_request(&mut client);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    reply(
        &mut client,
        &asked,
        json!({"action": "accept", "content": {"name": "Bob"}}),
    );
    let answer = client.request("tasks/result", json!({"taskId": task}));
    assert_eq!(text(result(&answer)), "Hello, Bob!", "{answer}");
}

#[test]
fn the_plain_diagnostics_answer_fixed_texts_in_both_generations() {
    let mut client = start_v2025(json!({}));
    for (name, arguments, expected) in [
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
        let call = json!({"name": name, "arguments": arguments});
        let legacy = client.request("tools/call", call.clone());
        assert_eq!(text(result(&legacy)), expected, "{legacy}");
        let mut framed = undeclared(call);
        // A level asked for: test_logging_tool still sends nothing.
        framed["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        let answer = client.request("tools/call", framed);
        let answer = result(&answer);
        assert_eq!(answer["resultType"], "complete", "{answer}");
        assert_eq!(text(answer), expected, "{answer}");
        assert_eq!(answer["isError"], false, "{answer}");
    }
    let seen = support::drain(&mut client, Duration::from_millis(100));
    assert!(
        support::sent(&seen, "notifications/message").is_empty(),
        "{seen:?}"
    );
    for arguments in [json!({}), json!({"region": 7})] {
        let refused = client.request(
            "tools/call",
            json!({"name": "test_custom_header", "arguments": arguments}),
        );
        assert_eq!(error_code(&refused), -32602, "{refused}");
    }
}

#[test]
fn test_missing_capability_needs_sampling_on_2026_07_28() {
    let mut client = start();
    for capabilities in [
        json!({}),
        json!({"sampling": true}),
        json!({"elicitation": {}}),
    ] {
        let refused = client.request(
            "tools/call",
            framed(
                json!({"name": "test_missing_capability"}),
                capabilities.clone(),
            ),
        );
        assert_eq!(error_code(&refused), -32021, "{capabilities}: {refused}");
        assert_eq!(
            refused["error"]["data"],
            json!({"requiredCapabilities": {"sampling": {}}}),
            "{refused}"
        );
    }
    let ran = client.request(
        "tools/call",
        framed(
            json!({"name": "test_missing_capability"}),
            json!({"sampling": {}}),
        ),
    );
    assert_eq!(result(&ran)["isError"], false, "{ran}");
    // 2025-11-25 tells no capability per request: not checked.
    let mut legacy = start_v2025(json!({}));
    let ran = legacy.request("tools/call", json!({"name": "test_missing_capability"}));
    assert_eq!(
        text(result(&ran)),
        "test_missing_capability ran: the client declared `sampling`"
    );
}

/// `test_streaming_elicitation`'s call with `extra` members, declaring `elicitation`.
fn streaming_call(extra: Value) -> Value {
    let mut params = json!({"name": "test_streaming_elicitation", "arguments": {}});
    for (key, value) in extra.as_object().expect("object") {
        params[key] = value.clone();
    }
    framed(params, json!({"elicitation": {}}))
}

#[test]
fn test_streaming_elicitation_asks_in_the_result_then_greets() {
    let mut client = start();
    let asked = client.request("tools/call", streaming_call(json!({})));
    let asked = result(&asked).clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"][USER_NAME]["method"], "elicitation/create",
        "{asked}"
    );
    assert!(asked.get("taskId").is_none(), "{asked}");
    // Never a request from server to client.
    assert!(client.next(Duration::from_millis(100)).is_none());

    let answered = client.request(
        "tools/call",
        streaming_call(json!({
            "inputResponses": {USER_NAME: {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": asked["requestState"]
        })),
    );
    let answered = result(&answered);
    assert_eq!(answered["resultType"], "complete", "{answered}");
    assert_eq!(text(answered), "Hello, Ada!");

    let declined = client.request(
        "tools/call",
        streaming_call(json!({"inputResponses": {USER_NAME: {"action": "decline"}}})),
    );
    assert_eq!(text(result(&declined)), "the user did not give a name");

    for responses in [
        json!({USER_NAME: {"action": "accept", "content": {"name": 1}}}),
        json!([1]),
    ] {
        let wrong = client.request(
            "tools/call",
            streaming_call(json!({"inputResponses": responses})),
        );
        assert_eq!(error_code(&wrong), -32602, "{wrong}");
    }
    // Without `elicitation` the question cannot be asked.
    let refused = client.request(
        "tools/call",
        undeclared(json!({"name": "test_streaming_elicitation"})),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    // 2025-11-25 has no such round: a tool error that says so, and nothing asked.
    let mut legacy = start_v2025(json!({"elicitation": {}}));
    let answer = legacy.request("tools/call", json!({"name": "test_streaming_elicitation"}));
    assert_eq!(result(&answer)["isError"], true, "{answer}");
    assert!(text(result(&answer)).contains("no such round"), "{answer}");
    assert!(legacy.next(Duration::from_millis(100)).is_none());
}

#[test]
fn bad_fixture_arguments_are_invalid_params() {
    let mut client = start();
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
        let answer = client.request(
            "tools/call",
            ext(json!({"name": name, "arguments": arguments})),
        );
        assert_eq!(error_code(&answer), -32602, "{name} {arguments}: {answer}");
    }
    // A null label is no label.
    let answer = client.request(
        "tools/call",
        undeclared(json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": null}})),
    );
    assert_eq!(text(result(&answer)), "slow_compute done after 0 ms");
}
