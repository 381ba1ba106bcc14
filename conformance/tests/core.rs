//! The fixtures any tools server is expected to have: content blocks, a tool error,
//! progress and log messages (to a call at once only, never from a task), and the requests
//! a call at once sends its 2025-11-25 client (sampling, elicitation).

mod support;

use std::time::Duration;

use mcp_tasks_conformance::core::{LOGGER, PNG, WAV};
use mcp_tasks_server::testing::LineClient;
use serde_json::{Value, json};
use support::{
    drain, ext, framed, next_request, reply, result, sent, start, start_v2025, task_id, terminal,
    text, undeclared,
};

/// The `progress` values of the `notifications/progress` in `seen` for `token`.
fn progress(seen: &[Value], token: &Value) -> Vec<Value> {
    sent(seen, "notifications/progress")
        .into_iter()
        .filter(|params| &params["progressToken"] == token)
        .map(|params| params["progress"].clone())
        .collect()
}

#[test]
fn the_content_fixtures_answer_their_blocks_on_both_wires() {
    let mut client = start_v2025(json!({}));
    let types = |client: &mut LineClient, name: &str, framing: bool| -> Vec<Value> {
        let call = json!({"name": name, "arguments": {}});
        let answer = client.request("tools/call", if framing { undeclared(call) } else { call });
        let answer = result(&answer);
        assert_eq!(answer["isError"], false, "{answer}");
        answer["content"]
            .as_array()
            .expect("content")
            .iter()
            .map(|block| block["type"].clone())
            .collect()
    };
    for framing in [false, true] {
        assert_eq!(
            types(&mut client, "test_image_content", framing),
            [json!("image")]
        );
        assert_eq!(
            types(&mut client, "test_audio_content", framing),
            [json!("audio")]
        );
        assert_eq!(
            types(&mut client, "test_embedded_resource", framing),
            [json!("resource")]
        );
        assert_eq!(
            types(&mut client, "test_multiple_content_types", framing),
            [json!("text"), json!("image"), json!("resource")]
        );
    }
    let image = client.request("tools/call", json!({"name": "test_image_content"}));
    assert_eq!(
        result(&image)["content"][0],
        json!({"type": "image", "data": PNG, "mimeType": "image/png"})
    );
    let audio = client.request("tools/call", json!({"name": "test_audio_content"}));
    assert_eq!(result(&audio)["content"][0]["data"], WAV);
    assert_eq!(result(&audio)["content"][0]["mimeType"], "audio/wav");
    let embedded = client.request("tools/call", json!({"name": "test_embedded_resource"}));
    assert_eq!(
        result(&embedded)["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let mixed = client.request("tools/call", json!({"name": "test_multiple_content_types"}));
    let resource = &result(&mixed)["content"][2]["resource"];
    assert_eq!(resource["uri"], "test://mixed-content-resource");
    let data: Value = serde_json::from_str(resource["text"].as_str().unwrap_or_default())
        .expect("the resource's text is JSON");
    assert_eq!(data, json!({"test": "data", "value": 123}));

    let error = client.request("tools/call", json!({"name": "test_error_handling"}));
    let error = result(&error);
    assert_eq!(error["isError"], true, "{error}");
    assert_eq!(
        text(error),
        "This tool intentionally returns an error for testing"
    );
}

#[test]
fn json_schema_2020_12_tool_echoes_its_arguments() {
    let mut client = start();
    let arguments = json!({"name": "n", "contactMethod": "email", "email": "e@x"});
    let answer = client.request(
        "tools/call",
        undeclared(json!({"name": "json_schema_2020_12_tool", "arguments": arguments})),
    );
    assert_eq!(
        text(result(&answer)),
        format!("json_schema_2020_12_tool received {arguments}")
    );
}

#[test]
fn progress_goes_out_in_steps_to_a_call_at_once_with_a_token_only() {
    let mut client = start_v2025(json!({}));
    // 2025-11-25: progress with the request's token, in steps.
    let token = json!("p-1");
    let called = client.request(
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": token}}),
    );
    assert_eq!(text(result(&called)), "test_tool_with_progress done");
    let seen = drain(&mut client, Duration::from_millis(50));
    assert_eq!(progress(&seen, &token), [json!(0), json!(50), json!(100)]);
    assert!(
        sent(&seen, "notifications/progress")
            .iter()
            .all(|params| params["total"] == 100),
        "{seen:?}"
    );
    // Without a token, none.
    client.request("tools/call", json!({"name": "test_tool_with_progress"}));
    let seen = drain(&mut client, Duration::from_millis(100));
    assert!(sent(&seen, "notifications/progress").is_empty(), "{seen:?}");
    // 2026-07-28, at once: the same, with the request's token.
    let mut asked = undeclared(json!({"name": "test_tool_with_progress"}));
    asked["_meta"]["progressToken"] = json!(7);
    let called = client.request("tools/call", asked);
    assert_eq!(result(&called)["resultType"], "complete", "{called}");
    let seen = drain(&mut client, Duration::from_millis(50));
    assert_eq!(
        progress(&seen, &json!(7)),
        [json!(0), json!(50), json!(100)]
    );
}

#[test]
fn log_messages_go_out_to_a_call_at_once_at_the_level_asked_for() {
    let mut client = start_v2025(json!({}));
    // All of them until the session sets a level.
    let logged = client.request("tools/call", json!({"name": "test_tool_with_logging"}));
    assert_eq!(text(result(&logged)), "test_tool_with_logging done");
    let messages = sent(
        &drain(&mut client, Duration::from_millis(50)),
        "notifications/message",
    );
    let data: Vec<&Value> = messages.iter().map(|message| &message["data"]).collect();
    assert_eq!(
        data,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );
    assert!(
        messages
            .iter()
            .all(|message| message["level"] == "info" && message["logger"] == LOGGER),
        "{messages:?}"
    );
    // Above the level set: none.
    let set = client.request("logging/setLevel", json!({"level": "warning"}));
    assert_eq!(result(&set), &json!({}));
    client.request("tools/call", json!({"name": "test_tool_with_logging"}));
    let seen = drain(&mut client, Duration::from_millis(100));
    assert!(sent(&seen, "notifications/message").is_empty(), "{seen:?}");
    let bad = client.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(support::error_code(&bad), -32602, "{bad}");
    // 2026-07-28: at or above the request's `_meta` level, none without one.
    let mut asked = undeclared(json!({"name": "test_tool_with_logging"}));
    asked["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let logged = client.request("tools/call", asked);
    assert_eq!(result(&logged)["resultType"], "complete", "{logged}");
    let seen = drain(&mut client, Duration::from_millis(50));
    assert_eq!(sent(&seen, "notifications/message").len(), 3, "{seen:?}");
    let mut above = undeclared(json!({"name": "test_tool_with_logging"}));
    above["_meta"]["io.modelcontextprotocol/logLevel"] = json!("error");
    client.request("tools/call", above);
    client.request(
        "tools/call",
        undeclared(json!({"name": "test_tool_with_logging"})),
    );
    let seen = drain(&mut client, Duration::from_millis(100));
    assert!(seen.is_empty(), "no level asked, no log: {seen:?}");
}

#[test]
fn as_tasks_progress_and_logging_send_nothing_and_complete_with_the_same_result() {
    let mut client = start_v2025(json!({}));
    for name in ["test_tool_with_progress", "test_tool_with_logging"] {
        for (generation, mut params) in [
            ("2026-07-28", ext(json!({"name": name, "arguments": {}}))),
            (
                "2025-11-25",
                json!({"name": name, "arguments": {}, "task": {"ttl": 60_000}}),
            ),
        ] {
            params["_meta"]["progressToken"] = json!("as-task");
            params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
            drain(&mut client, Duration::ZERO);
            let created = client.request("tools/call", params);
            let done = terminal(&mut client, &task_id(&created));
            assert_eq!(done["status"], "completed", "{generation}: {done}");
            assert_eq!(text(&done["result"]), format!("{name} done"));
            // Only the task's own status notifications (2025-11-25).
            let seen = drain(&mut client, Duration::from_millis(100));
            assert!(
                progress(&seen, &json!("as-task")).is_empty()
                    && sent(&seen, "notifications/message").is_empty(),
                "{generation}: a task of {name} reported: {seen:?}"
            );
        }
    }
}

#[test]
fn sampling_asks_the_client_at_once_and_reports_its_answer_or_its_absence() {
    let mut client = start_v2025(json!({"sampling": {}}));
    client.send(&json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call",
                        "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}}));
    let asked = next_request(&mut client);
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert_eq!(
        asked["params"]["messages"][0],
        json!({"role": "user", "content": {"type": "text", "text": "Say hi"}})
    );
    assert_eq!(asked["params"]["maxTokens"], 100);
    reply(
        &mut client,
        &asked,
        json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
    );
    let answer = client.answer(&json!("s")).expect("the call's answer");
    assert_eq!(text(result(&answer)), "LLM response: hi", "{answer}");

    // The client answers an error: a tool error saying so.
    client.send(&json!({"jsonrpc": "2.0", "id": "e", "method": "tools/call",
                        "params": {"name": "test_sampling", "arguments": {"prompt": "p"}}}));
    let asked = next_request(&mut client);
    client.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
                        "error": {"code": -1, "message": "user rejected sampling"}}));
    let answer = client.answer(&json!("e")).expect("the call's answer");
    assert_eq!(result(&answer)["isError"], true, "{answer}");
    assert!(
        text(result(&answer)).contains("`test_sampling` got no answer from the client"),
        "{answer}"
    );

    // 2026-07-28 has no requests from server to client: a tool error, nothing sent.
    let answer = client.request(
        "tools/call",
        framed(
            json!({"name": "test_sampling", "arguments": {"prompt": "p"}}),
            json!({"sampling": {}}),
        ),
    );
    assert_eq!(result(&answer)["isError"], true, "{answer}");
    assert!(text(result(&answer)).contains("got no answer from the client"));
    assert!(client.next(Duration::from_millis(100)).is_none());
}

#[test]
fn the_elicitation_fixtures_ask_their_forms_and_report_the_answer() {
    let mut client = start_v2025(json!({"elicitation": {"form": {}}}));
    let mut schemas = Vec::new();
    for (name, arguments, answer, expected) in [
        (
            "test_elicitation",
            json!({"message": "Who?"}),
            json!({"action": "accept", "content": {"username": "u", "email": "e"}}),
            r#"User response: action=accept, content={"email":"e","username":"u"}"#,
        ),
        (
            "test_elicitation_sep1034_defaults",
            json!({}),
            json!({"action": "decline"}),
            "Elicitation completed: action=decline, content=null",
        ),
        (
            "test_elicitation_sep1330_enums",
            json!({}),
            json!({"action": "accept", "content": {"untitledMulti": ["option1"]}}),
            r#"Elicitation completed: action=accept, content={"untitledMulti":["option1"]}"#,
        ),
    ] {
        client.send(
            &json!({"jsonrpc": "2.0", "id": name, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}}),
        );
        let asked = next_request(&mut client);
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        assert_eq!(asked["params"]["mode"], "form");
        schemas.push(asked["params"]["requestedSchema"].clone());
        reply(&mut client, &asked, answer);
        let answered = client.answer(&json!(name)).expect("the call's answer");
        assert_eq!(text(result(&answered)), expected, "{answered}");
    }
    assert_eq!(schemas[0]["required"], json!(["username", "email"]));
    assert_eq!(
        schemas[0]["properties"]["email"]["description"],
        "User's email address"
    );
    let defaults = &schemas[1]["properties"];
    assert_eq!(defaults["name"]["default"], "John Doe");
    assert_eq!(defaults["age"]["default"], 30);
    assert_eq!(defaults["score"]["default"], 95.5);
    assert_eq!(defaults["status"]["default"], "active");
    assert_eq!(
        defaults["status"]["enum"],
        json!(["active", "inactive", "pending"])
    );
    assert_eq!(defaults["verified"]["default"], true);
    let enums = &schemas[2]["properties"];
    assert_eq!(
        enums["untitledSingle"]["enum"],
        json!(["option1", "option2", "option3"])
    );
    assert_eq!(enums["titledSingle"]["oneOf"][0]["title"], "First Option");
    assert_eq!(enums["legacyEnum"]["enumNames"][0], "Option One");
    assert_eq!(enums["untitledMulti"]["items"]["enum"][2], "option3");
    assert_eq!(enums["titledMulti"]["items"]["anyOf"][2]["const"], "value3");

    // A client that did not declare elicitation is not asked: a tool error.
    let mut plain = start_v2025(json!({}));
    let refused = plain.request(
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who?"}}),
    );
    assert_eq!(result(&refused)["isError"], true, "{refused}");
    assert!(plain.next(Duration::from_millis(100)).is_none());
}
