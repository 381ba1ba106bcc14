//! The fixtures of the `input-required-result-*` scenarios (SEP-2322, 2026-07-28): each
//! asks in rounds then answers; only what the client declared is asked; missing, extra and
//! malformed answers; the state fixtures need their state back; the prompt; the resources.

mod support;

use std::time::Duration;

use mcp_tasks_conformance::input::{NAMES, PROMPT};
use mcp_tasks_conformance::resources::RESOURCE_NOT_FOUND;
use mcp_tasks_server::mcp_tasks::JsonObject;
use mcp_tasks_server::testing::LineClient;
use serde_json::{Value, json};
use support::{error_code, framed, next_request, reply, result, start, start_v2025, text};

/// Every capability the fixtures ask through.
fn everything() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

fn call(name: &str, capabilities: Value) -> Value {
    framed(json!({"name": name, "arguments": {}}), capabilities)
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// Answers every request of `asked` as the suite does, echoing the state.
fn retry(call: &Value, asked: &Value) -> Value {
    let mut responses = JsonObject::new();
    for (key, request) in asked["inputRequests"].as_object().into_iter().flatten() {
        let answer = match request["method"].as_str() {
            Some("sampling/createMessage") => json!({"role": "assistant",
                "content": {"type": "text", "text": "Hello there!"}, "model": "m",
                "stopReason": "endTurn"}),
            Some("roots/list") => {
                json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
            }
            _ => match request["params"]["requestedSchema"]["required"][0].as_str() {
                Some("ok") => accept(json!({"ok": true})),
                Some(field) => accept(json!({field: "Alice"})),
                None => accept(json!({})),
            },
        };
        responses.insert(key.clone(), answer);
    }
    let mut retry = call.clone();
    retry["inputResponses"] = Value::Object(responses);
    if let Some(state) = asked.get("requestState") {
        retry["requestState"] = state.clone();
    }
    retry
}

/// Runs `name` to its end as the suite's happy path does: each round's
/// `InputRequiredResult`, and the final result.
fn run_through(client: &mut LineClient, name: &str) -> (Vec<Value>, Value) {
    let call = call(name, everything());
    let mut rounds = Vec::new();
    let mut params = call.clone();
    loop {
        let answer = client.request("tools/call", params);
        let answer = result(&answer).clone();
        if answer["resultType"] != "input_required" {
            return (rounds, answer);
        }
        assert!(answer["requestState"].is_string(), "{answer}");
        assert!(answer.get("taskId").is_none(), "{answer}");
        params = retry(&call, &answer);
        rounds.push(answer);
        assert!(rounds.len() < 5, "too many rounds");
    }
}

#[test]
fn every_fixture_asks_then_answers() {
    let mut client = start();
    let expected = [
        ("test_input_required_result_elicitation", 1, "Hello, Alice!"),
        (
            "test_input_required_result_sampling",
            1,
            "The model answered: Hello there!",
        ),
        (
            "test_input_required_result_list_roots",
            1,
            "roots: file:///test/root",
        ),
        (
            "test_input_required_result_request_state",
            1,
            "state-ok: confirmed true",
        ),
        (
            "test_input_required_result_multiple_inputs",
            1,
            "Hello, Alice! The model said: Hello there!; roots: file:///test/root",
        ),
        (
            "test_input_required_result_multi_round",
            2,
            "Alice's favorite color is Alice",
        ),
        (
            "test_input_required_result_tampered_state",
            1,
            "state-ok: confirmed true",
        ),
        (
            "test_input_required_result_capabilities",
            1,
            "answered: preference, suggestion",
        ),
    ];
    assert_eq!(expected.map(|(name, _, _)| name), NAMES);
    for (name, rounds, said) in expected {
        let (asked, answered) = run_through(&mut client, name);
        assert_eq!(asked.len(), rounds, "{name}: {asked:?}");
        assert_eq!(answered["resultType"], "complete", "{name}: {answered}");
        assert_eq!(answered["isError"], false, "{name}: {answered}");
        assert_eq!(text(&answered), said, "{name}");
    }
    let (asked, _) = run_through(&mut client, "test_input_required_result_multiple_inputs");
    let mut methods: Vec<&str> = asked[0]["inputRequests"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, request)| request["method"].as_str())
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    let (asked, _) = run_through(&mut client, "test_input_required_result_multi_round");
    assert!(asked[0]["inputRequests"]["step1"].is_object(), "{asked:?}");
    assert!(asked[1]["inputRequests"]["step2"].is_object(), "{asked:?}");
    assert!(
        asked[1]["inputRequests"].get("step1").is_none(),
        "{asked:?}"
    );
    assert_ne!(asked[0]["requestState"], asked[1]["requestState"]);
    let (asked, _) = run_through(&mut client, "test_input_required_result_sampling");
    let question = &asked[0]["inputRequests"]["capital_question"]["params"];
    assert_eq!(
        question["messages"][0]["content"]["text"],
        "What is the capital of France?"
    );
    assert_eq!(question["maxTokens"], 100);
}

#[test]
fn what_is_missing_is_asked_again_and_what_was_answered_remembered() {
    let mut client = start();
    let name = "test_input_required_result_multiple_inputs";
    let call = call(name, everything());
    let asked = client.request("tools/call", call.clone());
    let asked = result(&asked).clone();
    // Only the name answered: the two others asked again, the name remembered.
    let mut partial = call.clone();
    partial["inputResponses"] = json!({"user_name": accept(json!({"name": "Ann"}))});
    partial["requestState"] = asked["requestState"].clone();
    let again = client.request("tools/call", partial);
    let again = result(&again).clone();
    let mut keys: Vec<&String> = again["inputRequests"]
        .as_object()
        .expect("asked")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["client_roots", "greeting"], "{again}");
    let done = client.request("tools/call", retry(&call, &again));
    assert_eq!(
        text(result(&done)),
        "Hello, Ann! The model said: Hello there!; roots: file:///test/root"
    );
}

#[test]
fn only_declared_capabilities_are_asked() {
    let mut client = start();
    let name = "test_input_required_result_capabilities";
    let asked = client.request("tools/call", call(name, json!({"sampling": {}})));
    let keys: Vec<&String> = result(&asked)["inputRequests"]
        .as_object()
        .expect("asked")
        .keys()
        .collect();
    assert_eq!(keys, ["suggestion"]);
    let asked = client.request("tools/call", call(name, json!({"elicitation": {}})));
    let keys: Vec<&String> = result(&asked)["inputRequests"]
        .as_object()
        .expect("asked")
        .keys()
        .collect();
    assert_eq!(keys, ["preference"]);
    let refused = client.request("tools/call", call(name, json!({})));
    assert_eq!(error_code(&refused), -32021, "{refused}");
    // A question whose capability is not declared is never asked.
    let refused = client.request(
        "tools/call",
        call(
            "test_input_required_result_list_roots",
            json!({"elicitation": {}}),
        ),
    );
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
}

#[test]
fn missing_extra_and_malformed_answers() {
    let mut client = start();
    let name = "test_input_required_result_elicitation";
    // A wrong key: asked again.
    let mut params = call(name, everything());
    params["inputResponses"] = json!({"wrong_key": accept(json!({"data": "x"}))});
    let asked = client.request("tools/call", params.clone());
    assert!(
        result(&asked)["inputRequests"]["user_name"].is_object(),
        "{asked}"
    );
    // Extra keys beside the answer: ignored.
    params["inputResponses"] =
        json!({"user_name": accept(json!({"name": "Alice"})), "x": {"a": 1}});
    let answered = client.request("tools/call", params.clone());
    assert_eq!(text(result(&answered)), "Hello, Alice!");
    // Declined: said so.
    params["inputResponses"] = json!({"user_name": {"action": "decline"}});
    let declined = client.request("tools/call", params.clone());
    assert_eq!(text(result(&declined)), "Hello, (no name: decline)!");
    // Not an answer, or not an object: -32602.
    for responses in [
        json!({"user_name": 12345}),
        json!(null),
        json!({"user_name": {"action": "maybe"}}),
        json!({"user_name": accept(json!({"name": 7}))}),
    ] {
        params["inputResponses"] = responses.clone();
        let refused = client.request("tools/call", params.clone());
        assert_eq!(error_code(&refused), -32602, "{responses}: {refused}");
    }
}

#[test]
fn the_state_fixtures_need_their_state_back() {
    let mut client = start();
    for name in [
        "test_input_required_result_request_state",
        "test_input_required_result_tampered_state",
    ] {
        let call = call(name, everything());
        let asked = client.request("tools/call", call.clone());
        let asked = result(&asked).clone();
        assert_eq!(
            asked["inputRequests"]["confirm"]["params"]["message"],
            "Please confirm"
        );
        // The answer without the state: asked again, whatever it carries.
        let mut stateless = retry(&call, &asked);
        stateless
            .as_object_mut()
            .expect("params")
            .remove("requestState");
        let again = client.request("tools/call", stateless);
        assert_eq!(result(&again)["resultType"], "input_required", "{again}");
        // Changed: refused.
        let mut tampered = retry(&call, &asked);
        tampered["requestState"] = json!(format!(
            "{}-TAMPERED",
            asked["requestState"].as_str().unwrap_or_default()
        ));
        let refused = client.request("tools/call", tampered);
        assert_eq!(error_code(&refused), -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("requestState"), "{message}");
        // Sent back unchanged: answered.
        let answered = client.request("tools/call", retry(&call, &asked));
        assert_eq!(text(result(&answered)), "state-ok: confirmed true");
    }
}

#[test]
fn under_2025_11_25_the_input_fixtures_say_there_is_no_round() {
    let mut client = start_v2025(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
    for name in NAMES {
        let answer = client.request("tools/call", json!({"name": name, "arguments": {}}));
        let answer = result(&answer);
        assert_eq!(answer["isError"], true, "{name}: {answer}");
        assert_eq!(
            text(answer),
            format!(
                "`{name}` asks through a 2026-07-28 InputRequiredResult; this request had no \
                 such round"
            )
        );
    }
    assert!(
        client.next(Duration::from_millis(100)).is_none(),
        "nothing asked"
    );
}

#[test]
fn the_prompt_asks_then_gives_its_messages() {
    let mut client = start();
    let capabilities = json!({"elicitation": {}});
    let listed = client.request("prompts/list", framed(json!({}), capabilities.clone()));
    let listed = result(&listed);
    assert_eq!(listed["resultType"], "complete", "{listed}");
    assert!(
        listed["ttlMs"].is_number(),
        "a list a client may cache: {listed}"
    );
    assert_eq!(listed["prompts"][0]["name"], PROMPT);
    assert_eq!(listed["prompts"].as_array().map(Vec::len), Some(1));

    let get = framed(json!({"name": PROMPT}), capabilities.clone());
    let asked = client.request("prompts/get", get.clone());
    let asked = result(&asked).clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["user_context"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["requestedSchema"]["properties"],
        json!({"context": {"type": "string"}})
    );
    let mut retry = get.clone();
    retry["inputResponses"] = json!({"user_context": accept(json!({"context": "test context"}))});
    retry["requestState"] = asked["requestState"].clone();
    let got = client.request("prompts/get", retry);
    let got = result(&got);
    assert_eq!(got["resultType"], "complete", "{got}");
    assert_eq!(
        got["messages"][0],
        json!({"role": "user", "content": {"type": "text", "text": "Use this context: test context"}})
    );
    // A mismatched answer, an unknown prompt, an undeclared capability.
    let mut wrong = get.clone();
    wrong["inputResponses"] = json!({"user_context": accept(json!({"context": 1}))});
    assert_eq!(error_code(&client.request("prompts/get", wrong)), -32602);
    let unknown = client.request(
        "prompts/get",
        framed(json!({"name": "no_such_prompt"}), capabilities),
    );
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    let undeclared = client.request("prompts/get", framed(json!({"name": PROMPT}), json!({})));
    assert_eq!(error_code(&undeclared), -32021, "{undeclared}");
}

#[test]
fn under_2025_11_25_the_prompt_asks_its_client() {
    let mut client = start_v2025(json!({"elicitation": {}}));
    let listed = client.request("prompts/list", json!({}));
    assert_eq!(result(&listed)["prompts"][0]["name"], PROMPT);
    client.send(
        &json!({"jsonrpc": "2.0", "id": "p", "method": "prompts/get",
                        "params": {"name": PROMPT}}),
    );
    let asked = next_request(&mut client);
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    reply(&mut client, &asked, accept(json!({"context": "legacy"})));
    let got = client.answer(&json!("p")).expect("the prompt");
    assert_eq!(
        result(&got)["messages"][0]["content"]["text"],
        "Use this context: legacy"
    );
}

#[test]
fn there_are_no_resources() {
    let mut client = start();
    let listed = client.request("resources/list", framed(json!({}), json!({})));
    let listed = result(&listed);
    assert_eq!(listed["resources"], json!([]), "{listed}");
    assert_eq!(listed["resultType"], "complete");
    assert!(
        listed["ttlMs"].is_number() && listed["cacheScope"].is_string(),
        "{listed}"
    );
    let templates = client.request("resources/templates/list", framed(json!({}), json!({})));
    assert_eq!(result(&templates)["resourceTemplates"], json!([]));
    let read = client.request(
        "resources/read",
        framed(json!({"uri": "test://nowhere"}), json!({})),
    );
    assert_eq!(error_code(&read), RESOURCE_NOT_FOUND, "{read}");
    assert_eq!(RESOURCE_NOT_FOUND, -32002);
}
