//! The fixture tools the official conformance suite expects of any tools server (its
//! `tools-call-*`, `elicitation-*` and `json-schema-2020-12` scenarios), served with the
//! conformance flag only, beside the fixtures of [`fixtures`].
//! `interop/conformance/README.md` gives each one's contract as the scenarios read it.
//!
//! | tool | task support | does |
//! |---|---|---|
//! | `test_image_content {}` | never | one PNG image block (a red pixel) |
//! | `test_audio_content {}` | never | one WAV audio block (a few silent samples) |
//! | `test_embedded_resource {}` | never | one embedded text resource |
//! | `test_multiple_content_types {}` | never | a text, an image and an embedded resource |
//! | `test_error_handling {}` | never | a tool error (`isError: true`) |
//! | `test_tool_with_progress {}` | optional | `notifications/progress` 0, 50, 100 of 100, ~50 ms apart |
//! | `test_tool_with_logging {}` | optional | three `notifications/message` at `info`, ~50 ms apart |
//! | `test_sampling {prompt}` | never | asks the client `sampling/createMessage`, reports the answer |
//! | `test_elicitation {message}` | never | asks `elicitation/create` (username, email), reports the answer |
//! | `test_elicitation_sep1034_defaults {}` | never | asks with a default for every primitive type (SEP-1034) |
//! | `test_elicitation_sep1330_enums {}` | never | asks with the five enum shapes of SEP-1330 |
//! | `json_schema_2020_12_tool {..}` | never | lists a JSON Schema 2020-12 input schema (`$defs`, `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`); echoes its arguments |
//!
//! The tools that talk to the client while they run ([`CoreFixture::talks`]) do it through
//! a [`Caller`]. The two that may run as tasks, `test_tool_with_progress` and
//! `test_tool_with_logging`, send nothing then: the tasks extension does not support
//! progress or log notifications on a task, and 2025-11-25 makes them optional, so a task
//! of either runs the same steps silently and completes with the same result.
//!
//! What each one sends and answers is data here ([`steps`](CoreFixture::steps),
//! [`question`](CoreFixture::question), [`answered`](CoreFixture::answered),
//! [`result`](CoreFixture::result)), so that an asynchronous server (the rmcp examples) runs
//! the same fixtures with its own peer; [`run`](CoreFixture::run) is the blocking runner.

use std::thread;
use std::time::Duration;

use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{Error, JsonObject, JsonRpcError, TaskHandle, TaskStore, Working, jsonrpc};
use serde_json::{Value, json};

use crate::fixtures;
use crate::peer::{Caller, LogLevel};
use crate::tools::text_result;

/// The fixtures' names, in the order `tools/list` shows them.
pub const NAMES: [&str; 12] = [
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_progress",
    "test_tool_with_logging",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
];

/// A 1x1 red PNG, base64.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// Eight silent samples of 8 kHz mono 8-bit PCM, as a WAV file, base64.
pub const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The pause between two steps of `test_tool_with_progress` and `test_tool_with_logging`.
pub const STEP_PAUSE: Duration = Duration::from_millis(50);

/// The logger `test_tool_with_logging` names in its messages.
pub const LOGGER: &str = "test_tool_with_logging";

/// The `$schema` of `json_schema_2020_12_tool`'s input schema.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// One step of a fixture that reports while it runs; steps are [`STEP_PAUSE`] apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `notifications/progress` at this much of 100.
    Progress(u64),
    /// `notifications/message` at `info`, with this text.
    Log(&'static str),
}

/// The progress steps: 0, 50 and 100 of 100.
const PROGRESS: [Step; 3] = [Step::Progress(0), Step::Progress(50), Step::Progress(100)];

/// The log steps.
const LOGS: [Step; 3] = [
    Step::Log("Tool execution started"),
    Step::Log("Tool processing data"),
    Step::Log("Tool execution completed"),
];

/// A call of a core fixture, its arguments checked before any work starts.
#[derive(Debug, Clone, PartialEq)]
pub enum CoreFixture {
    /// `test_image_content {}`.
    Image,
    /// `test_audio_content {}`.
    Audio,
    /// `test_embedded_resource {}`.
    EmbeddedResource,
    /// `test_multiple_content_types {}`.
    MixedContent,
    /// `test_error_handling {}`.
    Error,
    /// `test_tool_with_progress {}`.
    Progress,
    /// `test_tool_with_logging {}`.
    Logging,
    /// `test_sampling {prompt}`.
    Sampling(String),
    /// `test_elicitation {message}`.
    Elicitation(String),
    /// `test_elicitation_sep1034_defaults {}`.
    ElicitationDefaults,
    /// `test_elicitation_sep1330_enums {}`.
    ElicitationEnums,
    /// `json_schema_2020_12_tool {..}`, with its arguments.
    JsonSchema(JsonObject),
}

/// The fixtures, as `tools/list` shows them.
pub fn list() -> Vec<Value> {
    let none = || json!({"type": "object", "properties": {}});
    let string = |name: &str, about: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": about}}, "required": [name]});
    let optional = json!({"taskSupport": "optional"});
    vec![
        json!({"name": "test_image_content", "description": "Answers one PNG image (conformance fixture).", "inputSchema": none()}),
        json!({"name": "test_audio_content", "description": "Answers one WAV audio clip (conformance fixture).", "inputSchema": none()}),
        json!({"name": "test_embedded_resource", "description": "Answers one embedded text resource (conformance fixture).", "inputSchema": none()}),
        json!({"name": "test_multiple_content_types", "description": "Answers a text, an image and an embedded resource (conformance fixture).", "inputSchema": none()}),
        json!({"name": "test_error_handling", "description": "Always answers a tool error, isError: true (conformance fixture).", "inputSchema": none()}),
        json!({
            "name": "test_tool_with_progress",
            "description": "Reports progress 0, 50 and 100 of 100 about 50 ms apart when the request has a progress token; as a task it reports none (conformance fixture).",
            "inputSchema": none(),
            "execution": optional.clone()
        }),
        json!({
            "name": "test_tool_with_logging",
            "description": "Sends three info log messages about 50 ms apart; as a task it sends none (conformance fixture).",
            "inputSchema": none(),
            "execution": optional
        }),
        json!({"name": "test_sampling", "description": "Asks the client to sample an answer to `prompt` (sampling/createMessage) and reports it (conformance fixture).", "inputSchema": string("prompt", "The prompt to send to the LLM")}),
        json!({"name": "test_elicitation", "description": "Asks the user for a username and an email (elicitation/create) and reports the answer (conformance fixture).", "inputSchema": string("message", "The message to show the user")}),
        json!({"name": "test_elicitation_sep1034_defaults", "description": "Asks the user with a default for every primitive type (SEP-1034) and reports the answer (conformance fixture).", "inputSchema": none()}),
        json!({"name": "test_elicitation_sep1330_enums", "description": "Asks the user with the five enum shapes of SEP-1330 and reports the answer (conformance fixture).", "inputSchema": none()}),
        json!({"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features; echoes its arguments (conformance fixture).", "inputSchema": json_schema_2020_12()}),
    ]
}

/// The input schema of `json_schema_2020_12_tool`, as the suite's `json-schema-2020-12`
/// expects it back from `tools/list`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": DRAFT_2020_12,
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// The task support of a core fixture, or `None` for any other name.
pub fn task_support(name: &str) -> Option<TaskSupport> {
    match name {
        "test_tool_with_progress" | "test_tool_with_logging" => Some(TaskSupport::Optional),
        other if NAMES.contains(&other) => Some(TaskSupport::Forbidden),
        _ => None,
    }
}

impl CoreFixture {
    /// Reads a call of `name` with `arguments`; `None` if `name` is not a core fixture.
    ///
    /// # Errors
    /// `-32602` for a missing or mistyped argument.
    pub fn parse(name: &str, arguments: &JsonObject) -> Option<Result<Self, JsonRpcError>> {
        let string = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    JsonRpcError::new(
                        jsonrpc::INVALID_PARAMS,
                        format!("invalid params: `{name}` needs a string `{key}`"),
                    )
                })
        };
        let fixture = match name {
            "test_image_content" => Ok(CoreFixture::Image),
            "test_audio_content" => Ok(CoreFixture::Audio),
            "test_embedded_resource" => Ok(CoreFixture::EmbeddedResource),
            "test_multiple_content_types" => Ok(CoreFixture::MixedContent),
            "test_error_handling" => Ok(CoreFixture::Error),
            "test_tool_with_progress" => Ok(CoreFixture::Progress),
            "test_tool_with_logging" => Ok(CoreFixture::Logging),
            "test_sampling" => string("prompt").map(CoreFixture::Sampling),
            "test_elicitation" => string("message").map(CoreFixture::Elicitation),
            "test_elicitation_sep1034_defaults" => Ok(CoreFixture::ElicitationDefaults),
            "test_elicitation_sep1330_enums" => Ok(CoreFixture::ElicitationEnums),
            "json_schema_2020_12_tool" => Ok(CoreFixture::JsonSchema(arguments.clone())),
            _ => return None,
        };
        Some(fixture)
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        match self {
            CoreFixture::Image => "test_image_content",
            CoreFixture::Audio => "test_audio_content",
            CoreFixture::EmbeddedResource => "test_embedded_resource",
            CoreFixture::MixedContent => "test_multiple_content_types",
            CoreFixture::Error => "test_error_handling",
            CoreFixture::Progress => "test_tool_with_progress",
            CoreFixture::Logging => "test_tool_with_logging",
            CoreFixture::Sampling(_) => "test_sampling",
            CoreFixture::Elicitation(_) => "test_elicitation",
            CoreFixture::ElicitationDefaults => "test_elicitation_sep1034_defaults",
            CoreFixture::ElicitationEnums => "test_elicitation_sep1330_enums",
            CoreFixture::JsonSchema(_) => "json_schema_2020_12_tool",
        }
    }

    /// Whether the call talks to the client while it runs inline: notifications
    /// ([`steps`](Self::steps)) or a request ([`question`](Self::question)).
    pub fn talks(&self) -> bool {
        !self.steps().is_empty() || self.question().is_some()
    }

    /// What the call reports while it runs, [`STEP_PAUSE`] apart.
    pub fn steps(&self) -> &'static [Step] {
        match self {
            CoreFixture::Progress => &PROGRESS,
            CoreFixture::Logging => &LOGS,
            _ => &[],
        }
    }

    /// The request the call sends the client, `(method, params)`, if it asks one.
    pub fn question(&self) -> Option<(&'static str, Value)> {
        let elicit = |message: &str, properties: Value, required: &[&str]| {
            json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {"type": "object", "properties": properties, "required": required}
            })
        };
        let params = match self {
            CoreFixture::Sampling(prompt) => {
                return Some((
                    "sampling/createMessage",
                    json!({
                        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                        "maxTokens": 100
                    }),
                ));
            }
            CoreFixture::Elicitation(message) => elicit(
                message,
                json!({
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                }),
                &["username", "email"],
            ),
            CoreFixture::ElicitationDefaults => elicit(
                "Please review and update the form fields with defaults",
                json!({
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                }),
                &[],
            ),
            CoreFixture::ElicitationEnums => elicit(
                "Please select options from the enum fields",
                json!({
                    "untitledSingle": {
                        "type": "string",
                        "description": "Untitled single-select",
                        "enum": ["option1", "option2", "option3"]
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Titled single-select",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Legacy titled enum (deprecated enumNames)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Untitled multi-select",
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Titled multi-select",
                        "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}
                    }
                }),
                &[],
            ),
            _ => return None,
        };
        Some(("elicitation/create", params))
    }

    /// The call's `CallToolResult` from the client's answer to its
    /// [`question`](Self::question): what the client said, or a tool error saying why
    /// there is no answer.
    pub fn answered(&self, answer: Result<Value, JsonRpcError>) -> JsonObject {
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => {
                return text_result(
                    format!(
                        "`{}` got no answer from the client: {} ({})",
                        self.name(),
                        error.message,
                        error.code
                    ),
                    true,
                );
            }
        };
        let action = answer
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        let content = answer.get("content").cloned().unwrap_or(Value::Null);
        let text = match self {
            CoreFixture::Sampling(_) => format!("LLM response: {}", sampled_text(&answer)),
            CoreFixture::ElicitationDefaults | CoreFixture::ElicitationEnums => {
                format!("Elicitation completed: action={action}, content={content}")
            }
            _ => format!("User response: action={action}, content={content}"),
        };
        text_result(text, false)
    }

    /// The call's `CallToolResult` once its steps are done (for a call that asks, the
    /// result without an answer: use [`answered`](Self::answered)).
    ///
    /// # Errors
    /// None today; the signature matches the other fixtures'.
    pub fn result(&self) -> Result<JsonObject, JsonRpcError> {
        let content = |blocks: Value| {
            let mut result = JsonObject::new();
            result.insert("content".into(), blocks);
            result.insert("isError".into(), Value::Bool(false));
            result
        };
        let image = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
        Ok(match self {
            CoreFixture::Image => content(json!([image])),
            CoreFixture::Audio => {
                content(json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]))
            }
            CoreFixture::EmbeddedResource => content(json!([{
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }
            }])),
            CoreFixture::MixedContent => content(json!([
                {"type": "text", "text": "Multiple content types test:"},
                image,
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json!({"test": "data", "value": 123}).to_string()
                    }
                }
            ])),
            CoreFixture::Error => {
                text_result("This tool intentionally returns an error for testing", true)
            }
            CoreFixture::JsonSchema(arguments) => text_result(
                format!(
                    "json_schema_2020_12_tool received {}",
                    Value::Object(arguments.clone())
                ),
                false,
            ),
            other => text_result(format!("{} done", other.name()), false),
        })
    }

    /// Runs the call inline, talking to the client through `caller` (`None`: a transport
    /// that cannot reach it; a call that asks then answers a tool error).
    ///
    /// # Errors
    /// As for [`result`](Self::result).
    pub fn run(self, caller: Option<&Caller<'_>>) -> Result<JsonObject, JsonRpcError> {
        for (index, step) in self.steps().iter().enumerate() {
            if index > 0 {
                thread::sleep(STEP_PAUSE);
            }
            let Some(caller) = caller else { continue };
            match *step {
                Step::Progress(done) => caller.progress(done, Some(100), None),
                Step::Log(text) => caller.log(LogLevel::Info, LOGGER, json!(text)),
            }
        }
        if let Some((method, params)) = self.question() {
            let answer = match caller {
                Some(caller) => caller.request(method, params),
                None => Err(JsonRpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!("`{method}` cannot reach the client of this request"),
                )),
            };
            return Ok(self.answered(answer));
        }
        self.result()
    }

    /// Runs the call as the task behind `handle`: the same steps, sending nothing (no
    /// progress or log notifications on a task), then the same result. A cancel request
    /// stops it as `cancelled`.
    ///
    /// # Errors
    /// A transition the store refused (the task was cancelled, expired or removed
    /// meanwhile).
    pub fn run_task<T: TaskStore>(self, handle: TaskHandle<Working, T>) -> Result<(), Error> {
        let pause = STEP_PAUSE * u32::try_from(self.steps().len().saturating_sub(1)).unwrap_or(0);
        let Some(handle) = fixtures::pause(handle, pause)? else {
            return Ok(());
        };
        match self.result() {
            Ok(result) => handle.finish(result).map(drop),
            Err(error) => handle.fail(mcp_tasks::Outcome::Error(error)).map(drop),
        }
    }
}

/// The text a `CreateMessageResult` carries: its content block's, or the first text block
/// of a list of them.
fn sampled_text(answer: &Value) -> String {
    let content = answer.get("content");
    let block = match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .find(|block| block.get("type").and_then(Value::as_str) == Some("text")),
        other => other,
    };
    block
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("(no text)")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::{Mute, Peer};
    use std::sync::Mutex;

    fn parse(name: &str, arguments: Value) -> Result<CoreFixture, JsonRpcError> {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        CoreFixture::parse(name, &arguments).unwrap_or_else(|| panic!("{name} is not a fixture"))
    }

    /// Records notifications; answers every request with `answer`.
    struct Client {
        sent: Mutex<Vec<Value>>,
        answer: Value,
    }

    impl Peer for Client {
        fn notify(&self, method: &str, params: Value) {
            self.sent
                .lock()
                .unwrap()
                .push(json!({"method": method, "params": params}));
        }
        fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
            self.notify(method, params);
            Ok(self.answer.clone())
        }
        fn log_level(&self) -> Option<LogLevel> {
            None
        }
        fn set_log_level(&self, _level: LogLevel) {}
    }

    fn client(answer: Value) -> Client {
        Client {
            sent: Mutex::new(Vec::new()),
            answer,
        }
    }

    #[test]
    fn every_name_is_listed_parses_and_has_its_task_support() {
        let listed: Vec<Value> = list().iter().map(|tool| tool["name"].clone()).collect();
        assert_eq!(listed, NAMES.map(Value::from).to_vec());
        for name in NAMES {
            let arguments = json!({"prompt": "p", "message": "m"});
            let fixture = parse(name, arguments).expect("parsed");
            assert_eq!(fixture.name(), name);
            let optional = task_support(name) == Some(TaskSupport::Optional);
            assert_eq!(optional, !fixture.steps().is_empty(), "{name}");
        }
        assert!(CoreFixture::parse("greet", &JsonObject::new()).is_none());
        assert_eq!(task_support("greet"), None);
        for name in ["test_sampling", "test_elicitation"] {
            let error = parse(name, json!({})).expect_err("a string argument is needed");
            assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        }
    }

    #[test]
    fn the_content_fixtures_answer_their_blocks() {
        let types = |name: &str| -> Vec<Value> {
            let result = parse(name, json!({}))
                .and_then(|f| f.run(None))
                .expect("a result");
            result["content"]
                .as_array()
                .expect("content")
                .iter()
                .map(|block| block["type"].clone())
                .collect()
        };
        assert_eq!(types("test_image_content"), [json!("image")]);
        assert_eq!(types("test_audio_content"), [json!("audio")]);
        assert_eq!(types("test_embedded_resource"), [json!("resource")]);
        assert_eq!(
            types("test_multiple_content_types"),
            [json!("text"), json!("image"), json!("resource")]
        );
        let error = parse("test_error_handling", json!({}))
            .and_then(|f| f.run(None))
            .expect("a result");
        assert_eq!(error["isError"], true);
        let schema = &list()[11]["inputSchema"];
        assert_eq!(schema["$schema"], DRAFT_2020_12);
        assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
        assert_eq!(schema["additionalProperties"], false);
    }

    #[test]
    fn progress_and_logging_report_in_steps_only_to_a_caller() {
        let peer = client(Value::Null);
        let with_token = json!({"_meta": {"progressToken": 7}});
        let caller = Caller::v1(&peer, Some(&with_token));
        let result = CoreFixture::Progress.run(Some(&caller)).expect("a result");
        assert_eq!(result["isError"], false);
        CoreFixture::Logging.run(Some(&caller)).expect("a result");
        let sent = peer.sent.lock().unwrap().clone();
        let progress: Vec<&Value> = sent
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .map(|n| &n["params"]["progress"])
            .collect();
        assert_eq!(progress, [&json!(0), &json!(50), &json!(100)]);
        assert!(sent[..3].iter().all(|n| n["params"]["progressToken"] == 7));
        let logs: Vec<&Value> = sent[3..].iter().map(|n| &n["params"]["data"]).collect();
        assert_eq!(logs.len(), 3, "{sent:?}");
        assert!(sent[3..].iter().all(|n| n["params"]["level"] == "info"));
    }

    #[test]
    fn the_asking_fixtures_report_the_answer_or_its_absence() {
        let sampled = client(
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
        );
        let caller = Caller::v1(&sampled, None);
        let result = parse("test_sampling", json!({"prompt": "Say hi"}))
            .and_then(|f| f.run(Some(&caller)))
            .expect("a result");
        assert_eq!(result["content"][0]["text"], "LLM response: hi");
        let asked = sampled.sent.lock().unwrap()[0].clone();
        assert_eq!(asked["method"], "sampling/createMessage");
        assert_eq!(asked["params"]["messages"][0]["content"]["text"], "Say hi");

        let elicited =
            client(json!({"action": "accept", "content": {"username": "u", "email": "e"}}));
        let caller = Caller::v1(&elicited, None);
        for name in [
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
        ] {
            let result = parse(name, json!({"message": "Who?"}))
                .and_then(|f| f.run(Some(&caller)))
                .expect("a result");
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("action=accept"), "{text}");
        }
        let schemas: Vec<Value> = elicited
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|asked| asked["params"]["requestedSchema"]["properties"].clone())
            .collect();
        assert_eq!(schemas[1]["age"]["default"], 30);
        assert_eq!(schemas[1]["score"]["default"], 95.5);
        assert_eq!(schemas[2]["legacyEnum"]["enumNames"][0], "Option One");
        assert_eq!(
            schemas[2]["titledMulti"]["items"]["anyOf"][2]["const"],
            "value3"
        );

        let mute = Caller::v1(&Mute, None);
        let result = parse("test_sampling", json!({"prompt": "p"}))
            .and_then(|f| f.run(Some(&mute)))
            .expect("a result");
        assert_eq!(result["isError"], true);
    }
}
