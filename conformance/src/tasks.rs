//! The fixture tools of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, its `tasks-*` server scenarios), served beside
//! the example tools by both transports. `interop/conformance/README.md` gives each one's
//! contract as the scenarios read it. The fixtures of the suite's `tools-call-*`,
//! `elicitation-*` and `json-schema-2020-12` scenarios, which any tools server is expected
//! to have, are [`core_fixtures`] ([`Fixture::Core`]), listed after
//! these.
//!
//! | tool | task support | does |
//! |---|---|---|
//! | `greet {name}` | never a task | `Hello, {name}!` at once |
//! | `slow_compute {seconds, label?}` | optional | sleeps, then answers; a cancel request stops it as `cancelled` |
//! | `failing_job {}` | required | a tool error (`isError: true`) after about a second |
//! | `protocol_error_job {}` | optional | fails with a JSON-RPC error (`-32603`) |
//! | `confirm_delete {filename}` | required | asks one yes/no question (`confirm`) |
//! | `multi_input {}` | required | asks two questions at once (`name`, `confirm`) |
//! | `test_tool_with_task {}` | required | asks `user_name` first, then runs as a task |
//!
//!
//! The transport and lifecycle scenarios (`server-sse-polling`, `server-stateless`,
//! `http-header-validation`, `http-custom-header-server-validation`) call diagnostic
//! fixtures ([`Diagnostic`]), none of them ever a task:
//!
//! | tool | does |
//! |---|---|
//! | `test_simple_text {}` | one fixed text, at once; listed first (the suite calls the first listed tool with `{}`) |
//! | `test_reconnection {}` | one fixed text; an HTTP front closes the POST's SSE stream before it and replays it on a GET with `Last-Event-ID` |
//! | `test_missing_capability {}` | needs the client's `sampling` capability: `-32021` naming it when a 2026-07-28 request does not declare it |
//! | `test_streaming_elicitation {}` | asks the user's name through an `InputRequiredResult` (never a server→client request), then greets them |
//! | `test_logging_tool {}` | one fixed text; sends no log notification |
//! | `test_custom_header {region}` | echoes `region`, which a client mirrors into `Mcp-Param-Region` (`x-mcp-header`, SEP-2243) |
//!
//! `test_tool_with_task` composes the two ways of asking for input of 2026-07-28: its
//! first `tools/call` is answered with an `InputRequiredResult` (no task yet), and the
//! retry that carries the answer in `inputResponses` creates the task, whose result greets
//! the name given. Under 2025-11-25 (which has no such round) the task asks for the name
//! itself, like the other tools that ask.

use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::ext::Ask;
use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{
    Error, InputRequest, InputRequests, InputRequired, InputResponses, JsonObject, JsonRpcError,
    Outcome, TaskHandle, TaskStatus, TaskStore, Working, ext, jsonrpc,
};
use serde_json::{Value, json};

use crate::core_fixtures::{self, CoreFixture};
use crate::mrtr::Before;
use crate::peer::Caller;
use crate::tools::{check_answer, text_result};

/// The fixtures' names, in the order `tools/list` shows them.
pub const NAMES: [&str; 13] = [
    "test_simple_text",
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
    "test_reconnection",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_custom_header",
];

/// The text of `test_simple_text`, as the suite's `tools-call-simple-text` expects it.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";

/// The tool whose result an HTTP front sends only after closing the POST's SSE stream, so
/// that the client gets it by resuming with `Last-Event-ID` (SEP-1699, `server-sse-polling`).
pub const RECONNECTION_TOOL: &str = "test_reconnection";

/// The longest `slow_compute` sleeps (s): an hour, the longest a task of the examples
/// lives.
pub const MAX_SECONDS: f64 = 3600.0;

/// How long `failing_job` works before it reports its error.
const FAILING_JOB_DELAY: Duration = Duration::from_secs(1);

/// How long a task waits for the requestor's answers.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a sleeping task looks for a cancel request.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// The key under which `test_tool_with_task` asks for the user's name.
const USER_NAME: &str = "user_name";

/// The fixtures, as `tools/list` shows them: these, then the
/// [`core_fixtures`].
pub fn list() -> Vec<Value> {
    let mut tools = own();
    tools.extend(core_fixtures::list());
    tools
}

/// The fixtures of this module, as `tools/list` shows them.
fn own() -> Vec<Value> {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    vec![
        json!({
            "name": "test_simple_text",
            "description": "Answers one fixed text at once. Never a task (conformance fixture).",
            "inputSchema": object(json!({}), &[])
        }),
        json!({
            "name": "greet",
            "description": "Answers `Hello, {name}!` at once. Never a task (conformance fixture).",
            "inputSchema": object(json!({"name": {"type": "string"}}), &["name"])
        }),
        json!({
            "name": "slow_compute",
            "description": "Sleeps `seconds` (at most 3600), then answers; a cancel request \
                            stops it as cancelled (conformance fixture).",
            "inputSchema": object(
                json!({
                    "seconds": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
                    "label": {"type": "string"}
                }),
                &["seconds"]
            ),
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": "failing_job",
            "description": "Ends with a tool error (isError: true) after about a second. \
                            Runs only as a task (conformance fixture).",
            "inputSchema": object(json!({}), &[]),
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "protocol_error_job",
            "description": "Fails with a JSON-RPC error (-32603), not a tool error \
                            (conformance fixture).",
            "inputSchema": object(json!({}), &[]),
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": "confirm_delete",
            "description": "Asks the user to confirm deleting `filename` (one elicitation) and \
                            reports the answer; deletes nothing. Runs only as a task \
                            (conformance fixture).",
            "inputSchema": object(json!({"filename": {"type": "string"}}), &["filename"]),
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "multi_input",
            "description": "Asks two questions at once (a name and a confirmation) and reports \
                            both answers. Runs only as a task (conformance fixture).",
            "inputSchema": object(json!({}), &[]),
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "test_tool_with_task",
            "description": "Asks the user's name (under 2026-07-28 as an InputRequiredResult \
                            before any task exists), then greets them from a task. Runs only \
                            as a task (conformance fixture).",
            "inputSchema": object(json!({}), &[]),
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "test_reconnection",
            "description": "Answers one fixed text; over HTTP the POST's SSE stream closes \
                            before the result, which the client gets by resuming with \
                            Last-Event-ID. Never a task (conformance fixture).",
            "inputSchema": object(json!({}), &[])
        }),
        json!({
            "name": "test_missing_capability",
            "description": "Needs the client's `sampling` capability: refused with -32021 \
                            when a request does not declare it. Never a task (conformance \
                            fixture).",
            "inputSchema": object(json!({}), &[])
        }),
        json!({
            "name": "test_streaming_elicitation",
            "description": "Asks the user's name through an InputRequiredResult (no \
                            server-to-client request), then greets them. Never a task \
                            (conformance fixture).",
            "inputSchema": object(json!({}), &[])
        }),
        json!({
            "name": "test_logging_tool",
            "description": "Answers one fixed text and sends no log notification. Never a \
                            task (conformance fixture).",
            "inputSchema": object(json!({}), &[])
        }),
        json!({
            "name": "test_custom_header",
            "description": "Echoes `region`, which clients mirror into the Mcp-Param-Region \
                            header. Never a task (conformance fixture).",
            "inputSchema": object(
                json!({"region": {"type": "string", "x-mcp-header": "Region"}}),
                &["region"]
            )
        }),
    ]
}

/// The task support of a fixture, or `None` for any other name.
pub fn task_support(name: &str) -> Option<TaskSupport> {
    match name {
        "greet"
        | "test_simple_text"
        | "test_reconnection"
        | "test_missing_capability"
        | "test_streaming_elicitation"
        | "test_logging_tool"
        | "test_custom_header" => Some(TaskSupport::Forbidden),
        "slow_compute" | "protocol_error_job" => Some(TaskSupport::Optional),
        "failing_job" | "confirm_delete" | "multi_input" | "test_tool_with_task" => {
            Some(TaskSupport::Required)
        }
        other => core_fixtures::task_support(other),
    }
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INVALID_PARAMS,
        format!("invalid params: {message}"),
    )
}

/// What `test_tool_with_task` learnt before its task was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gathered {
    /// Nothing yet: the task asks for the name itself (2025-11-25).
    Nothing,
    /// The name the user gave.
    Name(String),
    /// The user declined or cancelled the question.
    Refused,
}

/// A call of a fixture, its arguments checked before any work starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Fixture {
    /// `greet {name}`.
    Greet(String),
    /// `slow_compute {seconds, label?}`, the sleep in milliseconds.
    SlowCompute {
        /// How long to sleep (ms).
        ms: u64,
        /// The caller's label, echoed in the result.
        label: Option<String>,
    },
    /// `failing_job {}`.
    FailingJob,
    /// `protocol_error_job {}`.
    ProtocolErrorJob,
    /// `confirm_delete {filename}`.
    ConfirmDelete(String),
    /// `multi_input {}`.
    MultiInput,
    /// `test_tool_with_task {}`, with what the first round gathered.
    TestToolWithTask(Gathered),
    /// A diagnostic fixture of the transport and lifecycle scenarios.
    Diagnostic(Diagnostic),
    /// A fixture any tools server is expected to have ([`core_fixtures`]).
    Core(CoreFixture),
}

/// The diagnostic fixtures: never tasks, each answered by one request (or, for
/// `test_streaming_elicitation` under 2026-07-28, by the retry that carries the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diagnostic {
    /// `test_simple_text {}`: [`SIMPLE_TEXT`].
    SimpleText,
    /// `test_reconnection {}` ([`RECONNECTION_TOOL`]).
    Reconnection,
    /// `test_missing_capability {}`: needs `sampling`.
    MissingCapability,
    /// `test_streaming_elicitation {}`, with the name the input round gathered.
    StreamingElicitation(Gathered),
    /// `test_logging_tool {}`.
    Logging,
    /// `test_custom_header {region}`.
    CustomHeader(String),
}

impl Fixture {
    /// Reads a call of `name` with `arguments`; `None` if `name` is not a fixture.
    ///
    /// # Errors
    /// `-32602` for missing or mistyped arguments.
    pub fn parse(name: &str, arguments: &JsonObject) -> Option<Result<Fixture, JsonRpcError>> {
        let string = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let fixture = match name {
            "greet" => string("name")
                .map(Fixture::Greet)
                .ok_or_else(|| invalid("`greet` needs a string `name`")),
            "slow_compute" => slow_compute(arguments),
            "failing_job" => Ok(Fixture::FailingJob),
            "protocol_error_job" => Ok(Fixture::ProtocolErrorJob),
            "confirm_delete" => string("filename")
                .map(Fixture::ConfirmDelete)
                .ok_or_else(|| invalid("`confirm_delete` needs a string `filename`")),
            "multi_input" => Ok(Fixture::MultiInput),
            "test_tool_with_task" => Ok(Fixture::TestToolWithTask(Gathered::Nothing)),
            "test_simple_text" => Ok(Fixture::Diagnostic(Diagnostic::SimpleText)),
            "test_reconnection" => Ok(Fixture::Diagnostic(Diagnostic::Reconnection)),
            "test_missing_capability" => Ok(Fixture::Diagnostic(Diagnostic::MissingCapability)),
            "test_streaming_elicitation" => Ok(Fixture::Diagnostic(
                Diagnostic::StreamingElicitation(Gathered::Nothing),
            )),
            "test_logging_tool" => Ok(Fixture::Diagnostic(Diagnostic::Logging)),
            "test_custom_header" => string("region")
                .map(|region| Fixture::Diagnostic(Diagnostic::CustomHeader(region)))
                .ok_or_else(|| invalid("`test_custom_header` needs a string `region`")),
            other => {
                return CoreFixture::parse(other, arguments).map(|core| core.map(Fixture::Core));
            }
        };
        Some(fixture)
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        match self {
            Fixture::Greet(_) => "greet",
            Fixture::SlowCompute { .. } => "slow_compute",
            Fixture::FailingJob => "failing_job",
            Fixture::ProtocolErrorJob => "protocol_error_job",
            Fixture::ConfirmDelete(_) => "confirm_delete",
            Fixture::MultiInput => "multi_input",
            Fixture::TestToolWithTask(_) => "test_tool_with_task",
            Fixture::Diagnostic(diagnostic) => diagnostic.name(),
            Fixture::Core(core) => core.name(),
        }
    }

    /// Whether the call talks to the client while it runs inline
    /// ([`CoreFixture::talks`]): it runs with a [`Caller`] ([`run_talking`](Self::run_talking)).
    pub fn talks(&self) -> bool {
        matches!(self, Fixture::Core(core) if core.talks())
    }

    /// Runs the call as a normal request, talking to the client through `caller`.
    ///
    /// # Errors
    /// As for [`run`](Self::run).
    pub fn run_talking(self, caller: &Caller<'_>) -> Result<JsonObject, JsonRpcError> {
        match self {
            Fixture::Core(core) => core.run(Some(caller)),
            other => other.run(),
        }
    }

    /// Whether the call asks the requestor for input while it runs as a task.
    pub fn asks_for_input(&self) -> bool {
        matches!(
            self,
            Fixture::ConfirmDelete(_)
                | Fixture::MultiInput
                | Fixture::TestToolWithTask(Gathered::Nothing)
        )
    }

    /// The 2026-07-28 round before the call runs or a task exists (SEP-2322), given what
    /// the request carries ([`Before`]). `test_tool_with_task` and
    /// `test_streaming_elicitation` need the user's name first: without an answer, returns
    /// what to ask ([`mrtr::round_trip`](crate::mrtr::round_trip) sends it as an
    /// `InputRequiredResult`, and refuses it with `-32021` if the client did not declare
    /// `elicitation`); with one, keeps it and returns `None` (go on).
    /// `test_missing_capability` checks the declared client capabilities. Every other
    /// fixture returns `None` at once.
    ///
    /// # Errors
    /// `-32602` for an answer that does not match the question; `-32021` (with
    /// `data.requiredCapabilities`) when the request does not declare `sampling` for
    /// `test_missing_capability`.
    pub fn gather(&mut self, before: &Before<'_>) -> Result<Option<Ask>, JsonRpcError> {
        let gathered = match self {
            Fixture::TestToolWithTask(gathered)
            | Fixture::Diagnostic(Diagnostic::StreamingElicitation(gathered))
                if *gathered == Gathered::Nothing =>
            {
                gathered
            }
            Fixture::Diagnostic(Diagnostic::MissingCapability) if !before.declares("sampling") => {
                return Err(ext::capability_required(
                    "sampling",
                    "`test_missing_capability` needs the `sampling` client capability: \
                     declare it in `_meta[\"io.modelcontextprotocol/clientCapabilities\"]`",
                ));
            }
            _ => return Ok(None),
        };
        match name_round(before)? {
            NameRound::Ask(ask) => Ok(Some(ask)),
            NameRound::Got(got) => {
                *gathered = got;
                Ok(None)
            }
        }
    }

    /// Runs the call as a normal request and returns its `CallToolResult`.
    ///
    /// # Errors
    /// `protocol_error_job`'s `-32603`, and the task-required error for the fixtures that
    /// only run as tasks.
    pub fn run(self) -> Result<JsonObject, JsonRpcError> {
        match self {
            Fixture::Greet(name) => Ok(text_result(format!("Hello, {name}!"), false)),
            Fixture::SlowCompute { ms, label } => {
                thread::sleep(Duration::from_millis(ms));
                Ok(computed(ms, label.as_deref()))
            }
            Fixture::ProtocolErrorJob => Err(protocol_error()),
            Fixture::Diagnostic(diagnostic) => Ok(diagnostic.run()),
            Fixture::Core(core) => core.run(None),
            only_tasks => Err(Error::TaskRequired {
                tool: only_tasks.name().into(),
            }
            .to_jsonrpc()),
        }
    }

    /// Runs the call as the task behind `handle`, to its end.
    ///
    /// # Errors
    /// A transition the store refused (the task was cancelled, expired or removed
    /// meanwhile); the caller logs it.
    pub fn run_task<T: TaskStore>(self, handle: TaskHandle<Working, T>) -> Result<(), Error> {
        match self {
            Fixture::Greet(name) => handle
                .complete(text_result(format!("Hello, {name}!"), false))
                .map(drop),
            Fixture::SlowCompute { ms, label } => {
                let Some(handle) = pause(handle, Duration::from_millis(ms))? else {
                    return Ok(());
                };
                handle.complete(computed(ms, label.as_deref())).map(drop)
            }
            Fixture::FailingJob => {
                let Some(handle) = pause(handle, FAILING_JOB_DELAY)? else {
                    return Ok(());
                };
                // A tool error: `failed` under 2025-11-25, `completed` with `isError` in
                // the extension's view.
                handle
                    .finish(text_result("failing_job always fails", true))
                    .map(drop)
            }
            Fixture::ProtocolErrorJob => handle.fail(Outcome::Error(protocol_error())).map(drop),
            Fixture::ConfirmDelete(filename) => confirm_delete(handle, &filename),
            Fixture::MultiInput => multi_input(handle),
            Fixture::TestToolWithTask(gathered) => test_tool_with_task(handle, gathered),
            // Never tasks ([`task_support`]); a transport that runs one anyway gets the
            // same result as a task's.
            Fixture::Diagnostic(diagnostic) => handle.complete(diagnostic.run()).map(drop),
            Fixture::Core(core) => core.run_task(handle),
        }
    }
}

impl Diagnostic {
    /// The tool's name.
    pub fn name(&self) -> &'static str {
        match self {
            Diagnostic::SimpleText => "test_simple_text",
            Diagnostic::Reconnection => RECONNECTION_TOOL,
            Diagnostic::MissingCapability => "test_missing_capability",
            Diagnostic::StreamingElicitation(_) => "test_streaming_elicitation",
            Diagnostic::Logging => "test_logging_tool",
            Diagnostic::CustomHeader(_) => "test_custom_header",
        }
    }

    /// The call's `CallToolResult`, at once. `test_streaming_elicitation` without a
    /// gathered answer (a request that had no SEP-2322 round: 2025-11-25, where this
    /// server asks for input only inside tasks) is a tool error saying so.
    pub fn run(self) -> JsonObject {
        match self {
            Diagnostic::SimpleText => text_result(SIMPLE_TEXT, false),
            Diagnostic::Reconnection => text_result("test_reconnection done", false),
            Diagnostic::MissingCapability => text_result(
                "test_missing_capability ran: the client declared `sampling`",
                false,
            ),
            Diagnostic::StreamingElicitation(Gathered::Name(name)) => {
                text_result(format!("Hello, {name}!"), false)
            }
            Diagnostic::StreamingElicitation(Gathered::Refused) => {
                text_result("the user did not give a name", false)
            }
            Diagnostic::StreamingElicitation(Gathered::Nothing) => text_result(
                "test_streaming_elicitation asks through a 2026-07-28 InputRequiredResult; \
                 this request had no such round",
                true,
            ),
            Diagnostic::Logging => text_result("test_logging_tool done (no log sent)", false),
            Diagnostic::CustomHeader(region) => text_result(format!("region: {region}"), false),
        }
    }
}

/// The outcome of the name-asking round of 2026-07-28.
enum NameRound {
    /// No answer yet: what to ask.
    Ask(Ask),
    /// The answer, checked.
    Got(Gathered),
}

/// The SEP-2322 round that asks the user's name: asks (when the round carries no answer)
/// or reads the checked answer.
fn name_round(before: &Before<'_>) -> Result<NameRound, JsonRpcError> {
    let answer = match before.answer_or_ask(USER_NAME, user_name_request())? {
        Ok(answer) => answer,
        Err(ask) => return Ok(NameRound::Ask(ask)),
    };
    Ok(NameRound::Got(match given_text(&answer, "name") {
        Some(name) => Gathered::Name(name),
        None => Gathered::Refused,
    }))
}

fn slow_compute(arguments: &JsonObject) -> Result<Fixture, JsonRpcError> {
    let seconds = arguments
        .get("seconds")
        .and_then(Value::as_f64)
        .filter(|seconds| (0.0..=MAX_SECONDS).contains(seconds))
        .ok_or_else(|| invalid("`slow_compute` needs a number `seconds` from 0 to 3600"))?;
    let label = match arguments.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(label)) => Some(label.clone()),
        Some(_) => return Err(invalid("`slow_compute`'s `label` must be a string")),
    };
    // In range, so the product is finite and below 3.6e6.
    let ms = (seconds * 1000.0).round() as u64;
    Ok(Fixture::SlowCompute { ms, label })
}

fn computed(ms: u64, label: Option<&str>) -> JsonObject {
    let text = match label {
        Some(label) => format!("slow_compute `{label}` done after {ms} ms"),
        None => format!("slow_compute done after {ms} ms"),
    };
    text_result(text, false)
}

/// The JSON-RPC error `protocol_error_job` fails with.
fn protocol_error() -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INTERNAL_ERROR,
        "protocol_error_job always fails with a protocol error",
    )
}

/// A form-mode `elicitation/create` asking `message`, for the fields of `properties` (all
/// required).
fn form(message: &str, properties: Value) -> InputRequest {
    let required: Vec<&String> = properties
        .as_object()
        .map(|fields| fields.keys().collect())
        .unwrap_or_default();
    let mut params = JsonObject::new();
    params.insert("mode".into(), json!("form"));
    params.insert("message".into(), json!(message));
    params.insert(
        "requestedSchema".into(),
        json!({"type": "object", "properties": properties, "required": required}),
    );
    InputRequest::elicitation(params)
}

fn user_name_request() -> InputRequest {
    form(
        "What is your name?",
        json!({"name": {"type": "string", "description": "Your name"}}),
    )
}

fn confirm_request(message: &str) -> InputRequest {
    form(
        message,
        json!({"confirm": {"type": "boolean", "description": "Yes or no"}}),
    )
}

/// The accepted `content` of an elicitation answer, if the user accepted.
fn accepted(answer: &Value) -> Option<&Value> {
    (answer.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| answer.get("content"))
        .flatten()
}

/// The string the user gave for `field`, if they accepted.
fn given_text(answer: &Value, field: &str) -> Option<String> {
    accepted(answer)?.get(field)?.as_str().map(str::to_owned)
}

/// Whether the user accepted and said yes to `confirm`.
fn confirmed(answer: &Value) -> bool {
    accepted(answer)
        .and_then(|content| content.get("confirm"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Sleeps `total` in small steps. Returns the handle to carry on with, or `None` when the
/// task is done with: cancelled here because the requestor asked (the extension's
/// cooperative cancel), or cancelled, expired or removed by someone else. A store that
/// cannot be reached for a while says nothing about the task: the sleep goes on.
pub(crate) fn pause<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    total: Duration,
) -> Result<Option<TaskHandle<Working, T>>, Error> {
    let end = Instant::now() + total;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            break;
        }
        thread::sleep(left.min(CANCEL_POLL));
        let cancel_requested = match handle.snapshot() {
            Ok(task) if task.status() == TaskStatus::Working => task.cancel_requested(),
            Err(Error::Store { .. }) => false,
            Ok(_) | Err(_) => {
                handle.detach();
                return Ok(None);
            }
        };
        if cancel_requested {
            let _cancelled = handle
                .with_message("cancelled at the requestor's request")
                .cancel()?;
            return Ok(None);
        }
    }
    Ok(Some(handle))
}

/// A task back at work with the answers it asked for.
type Answered<T> = (TaskHandle<Working, T>, InputResponses);

/// Asks `requests` (by name) and waits for every answer. Returns the working handle and
/// the answers, each checked against its question; or `None` when the task is done with:
/// cancelled at the requestor's request, failed (no answer in time, or an answer that does
/// not match its question: `-32602`), or cancelled, expired or removed meanwhile.
fn ask<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    message: &str,
    requests: InputRequests,
) -> Result<Option<Answered<T>>, Error> {
    let waiting = handle
        .with_message(message)
        .require_input(requests.clone())?;
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let answers = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match waiting.wait_for_input(Some(left)) {
            Ok(answers) => break answers,
            Err(Error::CancelRequested { .. }) => {
                let _cancelled = waiting
                    .with_message("cancelled at the requestor's request")
                    .cancel()?;
                return Ok(None);
            }
            Err(Error::Store { .. }) if !left.is_zero() => {
                thread::sleep(Duration::from_millis(200))
            }
            Err(Error::Timeout { .. } | Error::Store { .. }) => {
                let _failed = waiting.fail(Outcome::error(
                    jsonrpc::INTERNAL_ERROR,
                    "the user did not answer in time",
                ))?;
                return Ok(None);
            }
            Err(_) => {
                waiting.detach();
                return Ok(None);
            }
        }
    };
    if let Some(failed) = mismatch(&requests, &answers) {
        return give_up(waiting, failed);
    }
    Ok(Some((waiting.resume()?, answers)))
}

/// The `-32602` for the first answer that does not match its question, if any.
fn mismatch(requests: &InputRequests, answers: &InputResponses) -> Option<JsonRpcError> {
    requests.iter().find_map(|(name, request)| {
        let answer = Value::Object(answers.get(name).cloned().unwrap_or_default());
        check_answer(request, &answer).err().map(|why| {
            invalid(&format!(
                "the answer to `{name}` does not match the requested schema: {why}"
            ))
        })
    })
}

fn give_up<T: TaskStore, R>(
    waiting: TaskHandle<InputRequired, T>,
    error: JsonRpcError,
) -> Result<Option<R>, Error> {
    let _failed = waiting.fail(Outcome::Error(error))?;
    Ok(None)
}

fn answer(answers: &InputResponses, name: &str) -> Value {
    Value::Object(answers.get(name).cloned().unwrap_or_default())
}

/// `working` → `input_required` (one yes/no question) → `working` → `completed`.
fn confirm_delete<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    filename: &str,
) -> Result<(), Error> {
    let requests =
        InputRequests::new().with("confirm", confirm_request(&format!("Delete {filename}?")));
    let Some((working, answers)) = ask(handle, "waiting for the user to confirm", requests)? else {
        return Ok(());
    };
    let text = if confirmed(&answer(&answers, "confirm")) {
        format!("the user confirmed deleting {filename} (nothing was deleted: a fixture)")
    } else {
        format!("the user kept {filename}")
    };
    working.complete(text_result(text, false)).map(drop)
}

/// `working` → `input_required` with two questions at once → `working` → `completed`
/// once both are answered (one at a time is fine).
fn multi_input<T: TaskStore>(handle: TaskHandle<Working, T>) -> Result<(), Error> {
    let requests = InputRequests::new()
        .with(
            "name",
            form("Your name?", json!({"name": {"type": "string"}})),
        )
        .with("confirm", confirm_request("Go ahead?"));
    let Some((working, answers)) = ask(handle, "waiting for two answers", requests)? else {
        return Ok(());
    };
    let name = given_text(&answer(&answers, "name"), "name");
    let text = format!(
        "name: {}, confirmed: {}",
        name.as_deref().unwrap_or("(not given)"),
        confirmed(&answer(&answers, "confirm"))
    );
    working.complete(text_result(text, false)).map(drop)
}

/// Greets the name gathered before the task existed, or asks for it now (2025-11-25).
fn test_tool_with_task<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    gathered: Gathered,
) -> Result<(), Error> {
    let (working, name) = match gathered {
        Gathered::Name(name) => (handle, Some(name)),
        Gathered::Refused => (handle, None),
        Gathered::Nothing => {
            let requests = InputRequests::new().with(USER_NAME, user_name_request());
            let Some((working, answers)) = ask(handle, "waiting for the user's name", requests)?
            else {
                return Ok(());
            };
            let name = given_text(&answer(&answers, USER_NAME), "name");
            (working, name)
        }
    };
    let text = match name {
        Some(name) => format!("Hello, {name}!"),
        None => "the user did not give a name".to_owned(),
    };
    working.complete(text_result(text, false)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Catalog;

    fn meta(capabilities: Value) -> Value {
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            ext::META_CLIENT_CAPABILITIES: capabilities
        }})
    }

    /// The fixture's input round for a request with `params`, through the servers' round
    /// trip (which also checks the capabilities the questions need).
    fn gather(call: &mut Fixture, params: Option<&Value>) -> Result<Option<Value>, JsonRpcError> {
        static STATES: std::sync::OnceLock<crate::mrtr::States> = std::sync::OnceLock::new();
        let states = STATES.get_or_init(crate::mrtr::random_states);
        crate::mrtr::round_trip(
            states,
            &mcp_tasks::Owner::anonymous(),
            "tools/call",
            params,
            false,
            |before| call.gather(before),
        )
    }

    fn parse(name: &str, arguments: Value) -> Result<Fixture, JsonRpcError> {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        Fixture::parse(name, &arguments).unwrap_or_else(|| panic!("{name} is not a fixture"))
    }

    fn first_text(result: &JsonObject) -> &str {
        result["content"][0]["text"].as_str().unwrap_or_default()
    }

    #[test]
    fn every_name_is_listed_parses_and_has_its_task_support() {
        let listed: Vec<Value> = own().iter().map(|tool| tool["name"].clone()).collect();
        assert_eq!(listed, NAMES.map(Value::from).to_vec());
        assert_eq!(list().len(), NAMES.len() + core_fixtures::NAMES.len());
        for tool in list() {
            let description = tool["description"].as_str().unwrap_or_default();
            assert!(!description.is_empty(), "{tool}");
        }
        for name in NAMES {
            assert!(task_support(name).is_some(), "{name}");
        }
        for name in [
            "test_simple_text",
            "test_reconnection",
            "test_missing_capability",
            "test_streaming_elicitation",
            "test_logging_tool",
        ] {
            let fixture = parse(name, json!({})).expect("no arguments needed");
            assert_eq!(fixture.name(), name);
            assert!(!fixture.asks_for_input(), "{name}");
            assert_eq!(task_support(name), Some(TaskSupport::Forbidden), "{name}");
        }
        assert_eq!(
            task_support("test_custom_header"),
            Some(TaskSupport::Forbidden)
        );
        assert!(Fixture::parse("no_such_tool", &JsonObject::new()).is_none());
    }

    #[test]
    fn test_simple_text_leads_tools_list_and_needs_no_arguments() {
        let tools = Catalog::WithConformance.list();
        assert_eq!(tools[0]["name"], "test_simple_text", "{tools}");
        let result = parse("test_simple_text", json!({}))
            .and_then(Fixture::run)
            .expect("a result");
        assert_eq!(first_text(&result), SIMPLE_TEXT);
        assert_eq!(result["isError"], false);
    }

    #[test]
    fn test_missing_capability_needs_sampling() {
        let mut call = parse("test_missing_capability", json!({})).expect("parsed");
        for params in [
            None,
            Some(meta(json!({}))),
            Some(meta(json!({"sampling": true}))),
        ] {
            let error = gather(&mut call, params.as_ref()).expect_err("sampling is not declared");
            assert_eq!(error.code, ext::MISSING_REQUIRED_CLIENT_CAPABILITY);
            assert_eq!(
                error.data,
                Some(json!({"requiredCapabilities": {"sampling": {}}}))
            );
        }
        let declared = meta(json!({"sampling": {}}));
        assert_eq!(gather(&mut call, Some(&declared)), Ok(None));
        let result = call.run().expect("a result");
        assert_eq!(result["isError"], false);
    }

    #[test]
    fn test_streaming_elicitation_asks_then_greets() {
        let mut call = parse("test_streaming_elicitation", json!({})).expect("parsed");
        let error =
            gather(&mut call, Some(&meta(json!({})))).expect_err("elicitation is not declared");
        assert_eq!(error.code, ext::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"elicitation": {}}}))
        );

        let eliciting = meta(json!({"elicitation": {}}));
        let asked = gather(&mut call, Some(&eliciting))
            .expect("asks")
            .expect("an InputRequiredResult");
        assert_eq!(asked["resultType"], "input_required");
        assert_eq!(
            asked["inputRequests"][USER_NAME]["method"],
            "elicitation/create"
        );
        assert!(asked.get("taskId").is_none());

        let mut bad = eliciting.clone();
        bad["inputResponses"] = json!({USER_NAME: {"action": "accept", "content": {"name": 3}}});
        let error = gather(&mut call, Some(&bad)).expect_err("a wrong answer");
        assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        let mut not_object = eliciting.clone();
        not_object["inputResponses"] = json!([1]);
        assert!(gather(&mut call, Some(&not_object)).is_err());

        let mut answered = eliciting.clone();
        answered["inputResponses"] =
            json!({USER_NAME: {"action": "accept", "content": {"name": "Ada"}}});
        assert_eq!(gather(&mut call, Some(&answered)), Ok(None));
        let result = call.clone().run().expect("a result");
        assert_eq!(first_text(&result), "Hello, Ada!");
        // Once gathered, no second round.
        assert_eq!(gather(&mut call, Some(&eliciting)), Ok(None));

        let mut declined = eliciting;
        declined["inputResponses"] = json!({USER_NAME: {"action": "decline"}});
        let mut refused = parse("test_streaming_elicitation", json!({})).expect("parsed");
        assert_eq!(gather(&mut refused, Some(&declined)), Ok(None));
        let result = refused.run().expect("a result");
        assert_eq!(first_text(&result), "the user did not give a name");

        // No round at all (2025-11-25): a tool error that says so.
        let result = parse("test_streaming_elicitation", json!({}))
            .and_then(Fixture::run)
            .expect("a result");
        assert_eq!(result["isError"], true);
    }

    #[test]
    fn test_custom_header_echoes_its_mirrored_region() {
        let result = parse("test_custom_header", json!({"region": "eu-west"}))
            .and_then(Fixture::run)
            .expect("a result");
        assert_eq!(first_text(&result), "region: eu-west");
        for arguments in [json!({}), json!({"region": 7})] {
            let error = parse("test_custom_header", arguments).expect_err("no string region");
            assert_eq!(error.code, jsonrpc::INVALID_PARAMS);
        }
        assert_eq!(
            Catalog::WithConformance.header_params("test_custom_header"),
            vec![("region".to_owned(), "Region".to_owned())]
        );
        assert!(Catalog::WithConformance.header_params("greet").is_empty());
        assert!(
            Catalog::WithConformance
                .header_params("no_such_tool")
                .is_empty()
        );
    }

    #[test]
    fn the_plain_diagnostics_answer_fixed_texts() {
        for (name, expected) in [
            ("test_reconnection", "test_reconnection done"),
            ("test_logging_tool", "test_logging_tool done (no log sent)"),
        ] {
            let mut call = parse(name, json!({})).expect("parsed");
            assert_eq!(gather(&mut call, None), Ok(None), "{name}");
            let result = call.run().expect("a result");
            assert_eq!(first_text(&result), expected);
            assert_eq!(result["isError"], false);
        }
        assert_eq!(RECONNECTION_TOOL, "test_reconnection");
    }
}
