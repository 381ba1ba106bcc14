//! The fixtures of the conformance suite's `input-required-result-*` scenarios (SEP-2322,
//! 2026-07-28): tools, and one prompt, that ask for input through an
//! `InputRequiredResult` and answer once the retry brings the answers back. Never tasks;
//! served only with the conformance flag, beside the other [`fixtures`](crate::fixtures).
//!
//! | fixture | asks (keys) | answers |
//! |---|---|---|
//! | `test_input_required_result_elicitation` | `user_name` (elicitation) | `Hello, {name}!` |
//! | `test_input_required_result_sampling` | `capital_question` (sampling) | the sampled text |
//! | `test_input_required_result_list_roots` | `client_roots` (roots) | the roots' URIs |
//! | `test_input_required_result_request_state` | `confirm` (elicitation), with a state | `state-ok`, once the state came back verified |
//! | `test_input_required_result_tampered_state` | the same | the same; a changed state is `-32602` |
//! | `test_input_required_result_multiple_inputs` | `user_name`, `greeting`, `client_roots` at once | all three; what is missing is asked again, the rest remembered |
//! | `test_input_required_result_multi_round` | `step1` (name), then `step2` (colour) | both, the name remembered in the state |
//! | `test_input_required_result_capabilities` | only what the client declared (`preference` by elicitation, `suggestion` by sampling) | what was answered |
//! | prompt `test_input_required_result_prompt` | `user_context` (elicitation) | a `GetPromptResult` using it |
//!
//! Every answer is checked against its question ([`check_answer`](crate::tools::check_answer)): a mismatch is
//! `-32602`. An answer to a key the fixture did not ask is ignored; a missing one is asked
//! again. The rounds are read and sealed by [`mrtr::round_trip`](crate::mrtr::round_trip).

use mcp_tasks::ext::Ask;
use mcp_tasks::{InputRequest, InputRequests, JsonObject, JsonRpcError};
use serde_json::{Value, json};

use crate::mrtr::{Before, checked};
use crate::tools::text_result;

/// The tools, in the order `tools/list` shows them.
pub const NAMES: [&str; 8] = [
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
];

/// The prompt of `input-required-result-non-tool-request`.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// Which fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Elicitation,
    Sampling,
    ListRoots,
    RequestState,
    MultipleInputs,
    MultiRound,
    TamperedState,
    Capabilities,
}

const KINDS: [Kind; 8] = [
    Kind::Elicitation,
    Kind::Sampling,
    Kind::ListRoots,
    Kind::RequestState,
    Kind::MultipleInputs,
    Kind::MultiRound,
    Kind::TamperedState,
    Kind::Capabilities,
];

/// A call of one of the tools, with what its rounds gathered.
#[derive(Debug, Clone, PartialEq)]
pub struct InputFixture {
    kind: Kind,
    /// The result's text, once every answer is in.
    answered: Option<String>,
}

/// The tools, as `tools/list` shows them (no arguments; never tasks).
pub fn list() -> Vec<Value> {
    let describe = |asks: &str| {
        format!("Asks {asks} through an InputRequiredResult, then answers (conformance fixture).")
    };
    let descriptions = [
        describe("the user's name (elicitation)"),
        describe("a model (sampling)"),
        describe("the client's roots (roots/list)"),
        describe("a confirmation, with a requestState it checks"),
        describe("a name, a greeting and the roots at once"),
        describe("a name, then a colour, in two rounds"),
        describe("a confirmation, refusing a requestState that was changed"),
        describe("only what the client declared it can answer"),
    ];
    NAMES
        .iter()
        .zip(descriptions)
        .map(|(name, description)| {
            json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": {}}
            })
        })
        .collect()
}

/// The prompts, as `prompts/list` shows them.
pub fn prompts() -> Vec<Value> {
    vec![json!({
        "name": PROMPT,
        "description": "Asks what context to use through an InputRequiredResult, then gives a \
                        prompt using it (conformance fixture)."
    })]
}

impl InputFixture {
    /// The call of tool `name`, if it is one of these fixtures (they take no arguments).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        let kind = NAMES
            .iter()
            .position(|known| *known == name)
            .map(|at| KINDS[at])?;
        Some(Self {
            kind,
            answered: None,
        })
    }

    /// The tool's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        KINDS
            .iter()
            .position(|kind| *kind == self.kind)
            .map_or("test_input_required_result_elicitation", |at| NAMES[at])
    }

    /// The input round ([`Call::gather`](crate::tools::Call::gather)): what to ask, or
    /// `None` once every answer is in.
    ///
    /// # Errors
    /// `-32602` for an answer that does not match its question; `-32021` from
    /// `test_input_required_result_capabilities` for a client that declares neither
    /// `elicitation` nor `sampling`.
    pub fn gather(&mut self, before: &Before<'_>) -> Result<Option<Ask>, JsonRpcError> {
        let round = before.round();
        let one = |key: &str, request: InputRequest| before.answer_or_ask(key, request);
        let text = match self.kind {
            Kind::Elicitation => match one("user_name", name_form("What is your name?"))? {
                Ok(answer) => format!("Hello, {}!", given(&answer, "name")),
                Err(ask) => return Ok(Some(ask)),
            },
            Kind::Sampling => match one("capital_question", capital_question())? {
                Ok(answer) => format!("The model answered: {}", sampled(&answer)),
                Err(ask) => return Ok(Some(ask)),
            },
            Kind::ListRoots => match one("client_roots", InputRequest::roots())? {
                Ok(answer) => format!("roots: {}", roots(&answer)),
                Err(ask) => return Ok(Some(ask)),
            },
            Kind::RequestState | Kind::TamperedState => {
                let question = form("Please confirm", json!({"ok": {"type": "boolean"}}));
                // Only a state this server issued (and the client sent back unchanged)
                // proves the question was asked: round 0 asks, whatever it carries.
                if round.is_first() {
                    return Ok(Some(Ask::new(
                        InputRequests::new().with("confirm", question),
                    )));
                }
                match one("confirm", question)? {
                    Ok(answer) => {
                        let ok = accepted(&answer).and_then(|content| content.get("ok"));
                        format!("state-ok: confirmed {}", ok.unwrap_or(&Value::Bool(false)))
                    }
                    Err(ask) => return Ok(Some(ask)),
                }
            }
            Kind::MultipleInputs => {
                let questions = InputRequests::new()
                    .with("user_name", name_form("What is your name?"))
                    .with("greeting", sampling("Generate a greeting", 50))
                    .with("client_roots", InputRequest::roots());
                match gather_all(before, &questions)? {
                    Ok(answers) => format!(
                        "Hello, {}! The model said: {}; roots: {}",
                        given(&answers["user_name"], "name"),
                        sampled(&answers["greeting"]),
                        roots(&answers["client_roots"])
                    ),
                    Err(ask) => return Ok(Some(ask)),
                }
            }
            Kind::MultiRound => match round.data().get("name").and_then(Value::as_str) {
                // Round 2's state remembers the name: now the colour.
                Some(name) => {
                    let question = form(
                        "Step 2: What is your favorite color?",
                        json!({"color": {"type": "string"}}),
                    );
                    match one("step2", question)? {
                        Ok(answer) => {
                            format!("{name}'s favorite color is {}", given(&answer, "color"))
                        }
                        Err(ask) => return Ok(Some(ask.remembering(round.data().clone()))),
                    }
                }
                None => match one("step1", name_form("Step 1: What is your name?"))? {
                    Ok(answer) => {
                        let name = given(&answer, "name");
                        let question = form(
                            "Step 2: What is your favorite color?",
                            json!({"color": {"type": "string"}}),
                        );
                        return Ok(Some(
                            Ask::new(InputRequests::new().with("step2", question))
                                .remembering(json!({"name": name})),
                        ));
                    }
                    Err(ask) => return Ok(Some(ask)),
                },
            },
            Kind::Capabilities => {
                let mut questions = InputRequests::new();
                if before.declares("elicitation") {
                    questions = questions.with("preference", name_form("What should we call you?"));
                }
                if before.declares("sampling") {
                    questions = questions.with("suggestion", sampling("Suggest a name", 20));
                }
                if questions.is_empty() {
                    return Err(mcp_tasks::ext::capability_required(
                        "sampling",
                        "`test_input_required_result_capabilities` asks through \
                         `elicitation/create` or `sampling/createMessage`: declare \
                         `elicitation` or `sampling`",
                    ));
                }
                match gather_all(before, &questions)? {
                    Ok(answers) => format!("answered: {}", keys(&answers)),
                    Err(ask) => return Ok(Some(ask)),
                }
            }
        };
        self.answered = Some(text);
        Ok(None)
    }

    /// The `CallToolResult`, once the rounds gathered every answer; a request that had no
    /// round (2025-11-25, where this server asks only inside tasks) gets a tool error
    /// saying so.
    #[must_use]
    pub fn run(self) -> JsonObject {
        match self.answered {
            Some(text) => text_result(text, false),
            None => text_result(
                format!(
                    "`{}` asks through a 2026-07-28 InputRequiredResult; this request had no \
                     such round",
                    self.name()
                ),
                true,
            ),
        }
    }
}

/// The input round of `prompts/get` for [`PROMPT`]: what to ask, or the `GetPromptResult`
/// once the context is given.
///
/// # Errors
/// `-32602` for an answer that does not match the question.
pub fn prompt(before: &Before<'_>) -> Result<Result<Value, Ask>, JsonRpcError> {
    let question = form(
        "What context should the prompt use?",
        json!({"context": {"type": "string"}}),
    );
    let Some(answer) = before.round().response("user_context") else {
        return Ok(Err(Ask::new(
            InputRequests::new().with("user_context", question),
        )));
    };
    let answer = checked("user_context", &question, answer)?;
    Ok(Ok(json!({
        "description": "A prompt built from the context the user gave",
        "messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!("Use this context: {}", given(&answer, "context"))}
        }]
    })))
}

/// The answers to every question of `questions`, from this round and those the earlier
/// rounds remembered; or what is still missing, asked again, remembering the rest.
fn gather_all(
    before: &Before<'_>,
    questions: &InputRequests,
) -> Result<Result<JsonObject, Ask>, JsonRpcError> {
    let round = before.round();
    let mut answers = round.data().as_object().cloned().unwrap_or_default();
    let mut missing = InputRequests::new();
    for (key, request) in questions.iter() {
        if answers.contains_key(key) {
            continue;
        }
        match round.response(key) {
            Some(answer) => {
                answers.insert(key.to_owned(), checked(key, request, answer)?);
            }
            None => missing = missing.with(key, request.clone()),
        }
    }
    if missing.is_empty() {
        Ok(Ok(answers))
    } else {
        Ok(Err(Ask::new(missing).remembering(Value::Object(answers))))
    }
}

/// A form-mode `elicitation/create` asking `message`, every field of `properties`
/// required.
fn form(message: &str, properties: Value) -> InputRequest {
    let required: Vec<String> = properties
        .as_object()
        .map(|fields| fields.keys().cloned().collect())
        .unwrap_or_default();
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}
    });
    InputRequest::elicitation(params.as_object().cloned().unwrap_or_default())
}

fn name_form(message: &str) -> InputRequest {
    form(message, json!({"name": {"type": "string"}}))
}

/// A `sampling/createMessage` of one user message.
fn sampling(text: &str, max_tokens: u32) -> InputRequest {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    });
    InputRequest::sampling(params.as_object().cloned().unwrap_or_default())
}

fn capital_question() -> InputRequest {
    sampling("What is the capital of France?", 100)
}

/// The accepted `content` of an elicitation answer.
fn accepted(answer: &Value) -> Option<&JsonObject> {
    (answer.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| answer.get("content")?.as_object())
        .flatten()
}

/// The string the user gave for `field`, or what they did instead.
fn given(answer: &Value, field: &str) -> String {
    match accepted(answer).and_then(|content| content.get(field)) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => format!(
            "(no {field}: {})",
            answer
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("none")
        ),
    }
}

/// The text a model answered (the first text block).
fn sampled(answer: &Value) -> String {
    let content = answer.get("content");
    let block = match content {
        Some(Value::Array(blocks)) => blocks.first(),
        other => other,
    };
    block
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("(no text)")
        .to_owned()
}

/// The URIs of a `ListRootsResult`, comma-separated.
fn roots(answer: &Value) -> String {
    let uris: Vec<&str> = answer
        .get("roots")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .collect();
    if uris.is_empty() {
        "(none)".to_owned()
    } else {
        uris.join(", ")
    }
}

fn keys(answers: &JsonObject) -> String {
    answers.keys().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use mcp_tasks::{Owner, jsonrpc};

    use super::*;
    use crate::mrtr::{States, random_states, round_trip};

    const EVERYTHING: &str =
        r#"{"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}}"#;

    fn call(name: &str, capabilities: &str) -> Value {
        let capabilities: Value = serde_json::from_str(capabilities).unwrap_or_default();
        json!({"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities
        }})
    }

    fn step(
        states: &States,
        fixture: &mut InputFixture,
        params: &Value,
    ) -> Result<Option<Value>, JsonRpcError> {
        round_trip(
            states,
            &Owner::anonymous(),
            "tools/call",
            Some(params),
            false,
            |before| fixture.gather(before),
        )
    }

    fn accept(content: Value) -> Value {
        json!({"action": "accept", "content": content})
    }

    fn sampled_answer(text: &str) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m", "stopReason": "endTurn"})
    }

    fn roots_answer() -> Value {
        json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
    }

    /// Answers every request of `asked` as the suite does, echoing the state.
    fn retry(call: &Value, asked: &Value) -> Value {
        let mut responses = JsonObject::new();
        for (key, request) in asked["inputRequests"].as_object().into_iter().flatten() {
            let answer = match request["method"].as_str() {
                Some("sampling/createMessage") => sampled_answer("Hello there!"),
                Some("roots/list") => roots_answer(),
                _ => {
                    let field = request["params"]["requestedSchema"]["required"][0]
                        .as_str()
                        .unwrap_or("name");
                    if field == "ok" {
                        accept(json!({"ok": true}))
                    } else {
                        accept(json!({field: "Alice"}))
                    }
                }
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

    /// Runs `name` to its end as the suite's happy path does; returns each round's
    /// `InputRequiredResult` and the final text.
    fn run_through(name: &str) -> (Vec<Value>, String) {
        let states = random_states();
        let call = call(name, EVERYTHING);
        let mut fixture = InputFixture::parse(name).expect("a fixture");
        let mut rounds = Vec::new();
        let mut params = call.clone();
        while let Some(asked) = step(&states, &mut fixture, &params).expect("no error") {
            assert_eq!(asked["resultType"], "input_required", "{asked}");
            assert!(asked["requestState"].is_string(), "{asked}");
            params = retry(&call, &asked);
            rounds.push(asked);
            assert!(rounds.len() < 5, "too many rounds");
        }
        let result = fixture.run();
        assert_eq!(result["isError"], false, "{result:?}");
        (
            rounds,
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }

    #[test]
    fn every_fixture_asks_then_answers() {
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
                "test_input_required_result_tampered_state",
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
                "test_input_required_result_capabilities",
                1,
                "answered: preference, suggestion",
            ),
        ];
        for (name, rounds, text) in expected {
            let (asked, said) = run_through(name);
            assert_eq!(asked.len(), rounds, "{name}: {asked:?}");
            assert_eq!(said, text, "{name}");
        }
        let (asked, _) = run_through("test_input_required_result_multiple_inputs");
        let methods: Vec<&str> = asked[0]["inputRequests"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, request)| request["method"].as_str())
            .collect();
        assert_eq!(methods.len(), 3);
        let (asked, _) = run_through("test_input_required_result_multi_round");
        assert_ne!(asked[0]["requestState"], asked[1]["requestState"]);
        assert!(asked[1]["inputRequests"]["step2"].is_object());
    }

    #[test]
    fn only_declared_capabilities_are_asked() {
        let states = random_states();
        let name = "test_input_required_result_capabilities";
        let mut fixture = InputFixture::parse(name).unwrap();
        let asked = step(&states, &mut fixture, &call(name, r#"{"sampling": {}}"#))
            .unwrap()
            .unwrap();
        let keys: Vec<&String> = asked["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["suggestion"]);
        let error = step(&states, &mut fixture, &call(name, "{}")).unwrap_err();
        assert_eq!(
            error.code,
            mcp_tasks::ext::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
    }

    #[test]
    fn missing_extra_and_malformed_answers() {
        let states = random_states();
        let name = "test_input_required_result_elicitation";
        let mut fixture = InputFixture::parse(name).unwrap();
        // A wrong key: asked again.
        let mut params = call(name, EVERYTHING);
        params["inputResponses"] = json!({"wrong_key": accept(json!({"data": "x"}))});
        let asked = step(&states, &mut fixture, &params).unwrap().unwrap();
        assert!(asked["inputRequests"]["user_name"].is_object());
        // Extra keys beside the answer: ignored.
        params["inputResponses"] =
            json!({"user_name": accept(json!({"name": "Alice"})), "x": {"a": 1}});
        assert_eq!(step(&states, &mut fixture, &params), Ok(None));
        assert_eq!(fixture.clone().run()["content"][0]["text"], "Hello, Alice!");
        // Not an answer, or not an object: -32602.
        for responses in [
            json!({"user_name": 12345}),
            json!(null),
            json!({"user_name": {"action": "maybe"}}),
        ] {
            params["inputResponses"] = responses;
            let error =
                step(&states, &mut InputFixture::parse(name).unwrap(), &params).unwrap_err();
            assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        }
        // No round at all: a tool error.
        assert_eq!(InputFixture::parse(name).unwrap().run()["isError"], true);
    }

    #[test]
    fn the_state_fixtures_need_their_state_back() {
        let states = random_states();
        let name = "test_input_required_result_tampered_state";
        let call = call(name, EVERYTHING);
        let mut fixture = InputFixture::parse(name).unwrap();
        let asked = step(&states, &mut fixture, &call).unwrap().unwrap();
        // The answer without the state: asked again.
        let mut stateless = retry(&call, &asked);
        stateless.as_object_mut().unwrap().remove("requestState");
        assert!(step(&states, &mut fixture, &stateless).unwrap().is_some());
        // Changed: refused.
        let mut tampered = retry(&call, &asked);
        tampered["requestState"] = json!(format!(
            "{}-TAMPERED",
            asked["requestState"].as_str().unwrap()
        ));
        let error = step(&states, &mut fixture, &tampered).unwrap_err();
        assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        assert!(error.message.contains("requestState"), "{}", error.message);
    }

    #[test]
    fn the_prompt_asks_then_gives_its_messages() {
        let states = random_states();
        let mut params = json!({"name": PROMPT, "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        let owner = Owner::anonymous();
        let mut answered = None;
        let asked = round_trip(
            &states,
            &owner,
            "prompts/get",
            Some(&params),
            false,
            |before| Ok(prompt(before)?.err()),
        )
        .unwrap()
        .unwrap();
        params["inputResponses"] =
            json!({"user_context": accept(json!({"context": "test context"}))});
        params["requestState"] = asked["requestState"].clone();
        let done = round_trip(
            &states,
            &owner,
            "prompts/get",
            Some(&params),
            false,
            |before| {
                Ok(match prompt(before)? {
                    Ok(result) => {
                        answered = Some(result);
                        None
                    }
                    Err(ask) => Some(ask),
                })
            },
        )
        .unwrap();
        assert_eq!(done, None);
        let result = answered.expect("the prompt");
        assert_eq!(
            result["messages"][0]["content"]["text"],
            "Use this context: test context"
        );
        assert_eq!(prompts()[0]["name"], PROMPT);
        assert_eq!(list().len(), NAMES.len());
        for name in NAMES {
            assert_eq!(
                InputFixture::parse(name).map(|fixture| fixture.name()),
                Some(name)
            );
        }
        assert!(InputFixture::parse("greet").is_none());
    }
}
