//! The example tools and their handlers, written once for every transport and for both
//! generations of MCP tasks.
//!
//! A handler gets a typed [`TaskHandle<Working>`] and may only do what the spec allows from
//! `working`; asking for input moves it to `input_required` and hands back a
//! `TaskHandle<InputRequired>`, whose only ways on are `resume`, `complete`, `fail` or
//! `cancel`. The input itself arrives through the registry, whichever dialect carried it:
//! a 2025-11-25 transport forwards the requests as `elicitation/create` and hands the
//! answers back; an extension client reads them in `tasks/get` and answers with
//! `tasks/update`. A handler also honours the extension's cooperative cancel.
//!
//! On the 2026-07-28 wire a tool can also ask *before* it runs, task or not (SEP-2322):
//! [`Call::gather`] looks at the answers the request carries ([`Before`]) and returns an
//! [`Ask`] for what is still missing, which the server sends as an `InputRequiredResult`;
//! the client's retry brings the answers back. `confirm` asks this way for a client that
//! did not declare the tasks extension, and runs at once once answered.

use std::io::Write;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::ext::Ask;
use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{
    Error, InputRequest, InputRequests, JsonObject, JsonRpcError, Outcome, TaskHandle, TaskId,
    TaskState, TaskStatus, TaskStore, Working, jsonrpc,
};

use serde_json::{Value, json};

use crate::fixtures::{self, Fixture};
use crate::input_fixtures::{self, InputFixture};
use crate::mrtr::Before;
use crate::peer::Caller;
use crate::work::{Work, within};

/// What the example tells a client it is about (`initialize` and `server/discover`).
const INSTRUCTIONS: &str = "An example of MCP tasks. Tools: sleep {ms} (task optional: \
     sleeps, then answers), fail (task optional: ends with a tool error), crash (task \
     optional: ends with a JSON-RPC error), confirm {question} (asks the user and reports the \
     answer: a task, or on 2026-07-28 without the tasks extension an InputRequiredResult \
     first), echo {text} (never a task).";

/// The same, when the conformance suite's fixtures are served too.
const CONFORMANCE_INSTRUCTIONS: &str = "An example of MCP tasks, serving the conformance \
     suite's fixture tools too. Tools: sleep, fail, crash (task optional), confirm (task \
     only; asks the user for input), echo (never a task). Fixtures: greet (never a task), \
     slow_compute, protocol_error_job (task optional), failing_job, confirm_delete, \
     multi_input, test_tool_with_task (task only); test_simple_text, test_reconnection, \
     test_missing_capability, test_streaming_elicitation, test_logging_tool, \
     test_custom_header, test_input_required_result_* (never a task); prompt \
     test_input_required_result_prompt.";

/// How long a handler waits for the requestor's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The command-line flag that serves the conformance suite's fixtures too.
pub const CONFORMANCE_FLAG: &str = "--conformance";

/// The environment variable that does the same (`1`).
pub const CONFORMANCE_ENV: &str = "MCP_TASKS_CONFORMANCE";

/// The environment variable that serves the test-only tools too (`1`): `abort {}`, which
/// aborts the process running it (a poison task), and `steps {n, ms?}`, which runs `n`
/// steps of `ms` milliseconds, checkpointing after each. Both are redeliverable; never set
/// it in production.
pub const TEST_TOOLS_ENV: &str = "MCP_TASKS_TEST_TOOLS";

/// The file `steps` appends one line to as each step starts (`<task id> <step> <attempt>`),
/// if set: how a test sees which steps ran twice.
pub const STEPS_FILE_ENV: &str = "MCP_TASKS_TEST_STEPS_FILE";

/// How many attempts a redeliverable tool's task may take ([`Call::redelivery`]).
pub const ATTEMPTS: u32 = 3;

/// How often `sleep` and `steps` save their progress at most: a re-run repeats at most
/// this much of the work.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Whether the test-only tools are served ([`TEST_TOOLS_ENV`]), read once.
#[must_use]
pub fn test_tools() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(TEST_TOOLS_ENV).is_ok_and(|value| value.trim() == "1"))
}

/// The tools a server lists and runs: the five example tools, and with the conformance
/// flag the official conformance suite's fixture tools too ([`fixtures`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Catalog {
    /// `sleep`, `fail`, `crash`, `confirm`, `echo`: what a user came to see.
    #[default]
    Examples,
    /// The fixtures first, then the examples (for the conformance suite).
    WithConformance,
}

impl Catalog {
    /// The catalog a process was started for: [`Catalog::WithConformance`] if `flag` (the
    /// command line's [`CONFORMANCE_FLAG`]) or [`CONFORMANCE_ENV`] is `1`.
    #[must_use]
    pub fn chosen(flag: bool) -> Self {
        let env = std::env::var(CONFORMANCE_ENV).is_ok_and(|value| value.trim() == "1");
        if flag || env {
            Catalog::WithConformance
        } else {
            Catalog::Examples
        }
    }

    /// Whether the conformance fixtures are served.
    #[must_use]
    pub fn conformance(self) -> bool {
        self == Catalog::WithConformance
    }

    /// Whether tools of this catalog send log messages, so that the server serves
    /// `logging/setLevel` and declares `logging` (2025-11-25): with the fixtures only
    /// (`test_tool_with_logging`).
    #[must_use]
    pub fn logs(self) -> bool {
        self.conformance()
    }

    /// The capabilities of a 2025-11-25 `initialize` answer: `capabilities`, and `logging`
    /// when this catalog [`logs`](Self::logs).
    #[must_use]
    pub fn capabilities_v1(self, mut capabilities: Value) -> Value {
        if self.logs()
            && let Some(capabilities) = capabilities.as_object_mut()
        {
            capabilities.insert("logging".into(), json!({}));
        }
        capabilities
    }

    /// What the server tells a client it is about.
    #[must_use]
    pub fn instructions(self) -> &'static str {
        match self {
            Catalog::Examples => INSTRUCTIONS,
            Catalog::WithConformance => CONFORMANCE_INSTRUCTIONS,
        }
    }

    /// The tools, as `tools/list` shows them: the examples; with the fixtures, the
    /// fixtures first. A fixture that takes no arguments comes first then
    /// (`test_simple_text`): the suite's `http-header-validation` calls the first listed
    /// tool with `{}` and expects a result.
    #[must_use]
    pub fn list(self) -> Value {
        let mut tools = match self {
            Catalog::Examples => examples(),
            Catalog::WithConformance => {
                let mut tools = fixtures::list();
                tools.extend(input_fixtures::list());
                if let Value::Array(examples) = examples() {
                    tools.extend(examples);
                }
                Value::Array(tools)
            }
        };
        if test_tools()
            && let (Value::Array(tools), Value::Array(extra)) = (&mut tools, test_only())
        {
            tools.extend(extra);
        }
        tools
    }

    /// The task support of a tool of this catalog (`None`: no such tool).
    #[must_use]
    pub fn task_support(self, name: &str) -> Option<TaskSupport> {
        match name {
            "sleep" | "fail" | "crash" => Some(TaskSupport::Optional),
            "confirm" => Some(TaskSupport::Required),
            "echo" => Some(TaskSupport::Forbidden),
            "abort" | "steps" if test_tools() => Some(TaskSupport::Optional),
            other if self.conformance() && InputFixture::parse(other).is_some() => {
                Some(TaskSupport::Forbidden)
            }
            other if self.conformance() => fixtures::task_support(other),
            _ => None,
        }
    }

    /// Reads a call of `name` with `arguments`.
    ///
    /// # Errors
    /// `-32602` for a tool this catalog does not have, or missing or mistyped arguments.
    pub fn parse(self, name: &str, arguments: &JsonObject) -> Result<Call, JsonRpcError> {
        match name {
            "sleep" | "fail" | "crash" | "confirm" | "echo" => Call::parse_example(name, arguments),
            other if self.conformance() && InputFixture::parse(other).is_some() => {
                InputFixture::parse(other)
                    .map(Call::Input)
                    .ok_or_else(|| unknown_tool(other))
            }
            other if self.conformance() => Fixture::parse(other, arguments)
                .map(|fixture| fixture.map(Call::Fixture))
                .unwrap_or_else(|| Err(unknown_tool(other))),
            other => Err(unknown_tool(other)),
        }
    }

    /// Reads a call of `name` with `arguments`, test-only tools included when they are
    /// served ([`TEST_TOOLS_ENV`]): what a server runs.
    ///
    /// # Errors
    /// As for [`parse`](Self::parse).
    pub fn invocation(
        self,
        name: &str,
        arguments: &JsonObject,
    ) -> Result<Invocation, JsonRpcError> {
        match name {
            "abort" | "steps" if test_tools() => {
                TestCall::parse(name, arguments).map(Invocation::Test)
            }
            _ => self.parse(name, arguments).map(Invocation::Tool),
        }
    }

    /// The input schema of tool `name`, if this catalog has it (for the `Mcp-Param-*`
    /// headers its annotated arguments need).
    #[must_use]
    pub fn input_schema(self, name: &str) -> Option<Value> {
        let tools = self.list();
        tools
            .as_array()?
            .iter()
            .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))?
            .get("inputSchema")
            .cloned()
    }

    /// The arguments of `tool` that a 2026-07-28 client mirrors into `Mcp-Param-{Name}`
    /// headers (SEP-2243), read from the `x-mcp-header` annotations of its `inputSchema`:
    /// `(argument, Name)` pairs, in schema order. Empty for a tool without any, or unknown.
    #[must_use]
    pub fn header_params(self, tool: &str) -> Vec<(String, String)> {
        let Some(schema) = self.input_schema(tool) else {
            return Vec::new();
        };
        let Some(properties) = schema["properties"].as_object() else {
            return Vec::new();
        };
        properties
            .iter()
            .filter_map(|(argument, property)| {
                property["x-mcp-header"]
                    .as_str()
                    .map(|name| (argument.clone(), name.to_owned()))
            })
            .collect()
    }
}

/// The test-only tools ([`TEST_TOOLS_ENV`]).
fn test_only() -> Value {
    json!([
        {
            "name": "abort",
            "description": "Aborts the process running it (test only: a poison task, redeliverable).",
            "inputSchema": {"type": "object", "properties": {}},
            "execution": {"taskSupport": "optional"}
        },
        {
            "name": "steps",
            "description": "Runs `n` steps of `ms` milliseconds (default 200), checkpointing after each (test only, redeliverable).",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}, "ms": {"type": "integer", "minimum": 0}}, "required": ["n"]},
            "execution": {"taskSupport": "optional"}
        }
    ])
}

fn examples() -> Value {
    json!([
        {
            "name": "sleep",
            "description": "Sleeps for `ms` milliseconds, then answers.",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"]},
            "execution": {"taskSupport": "optional"}
        },
        {
            "name": "fail",
            "description": "Always ends with a tool error (isError: true).",
            "inputSchema": {"type": "object", "properties": {}},
            "execution": {"taskSupport": "optional"}
        },
        {
            "name": "crash",
            "description": "Always fails with a JSON-RPC error (not a tool error).",
            "inputSchema": {"type": "object", "properties": {}},
            "execution": {"taskSupport": "optional"}
        },
        {
            "name": "confirm",
            "description": "Asks the user a question (elicitation) and reports the answer. Runs only as a task.",
            "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
            "execution": {"taskSupport": "required"}
        },
        {
            "name": "echo",
            "description": "Answers with its text at once. Never a task.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        }
    ])
}

/// A `CallToolResult` with one text block.
pub fn text_result(text: impl Into<String>, is_error: bool) -> JsonObject {
    let mut result = JsonObject::new();
    result.insert(
        "content".into(),
        json!([{"type": "text", "text": text.into()}]),
    );
    result.insert("isError".into(), Value::Bool(is_error));
    result
}

/// `-32602` for a tool this server does not have, echoing at most 80 bytes of its name.
pub fn unknown_tool(name: &str) -> JsonRpcError {
    let mut end = name.len().min(80);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let more = if end < name.len() { "…" } else { "" };
    invalid(&format!("unknown tool `{}{more}`", &name[..end]))
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INVALID_PARAMS,
        format!("invalid params: {message}"),
    )
}

/// The arguments a tool needs, checked before any work starts.
pub enum Call {
    /// `sleep {ms}`: sleeps, then answers.
    Sleep(u64),
    /// `fail {}`: a tool error (`isError: true`).
    Fail,
    /// `crash {}`: a JSON-RPC error.
    Crash,
    /// `confirm {question}`: asks the user (a task; on 2026-07-28 without the tasks
    /// extension, an input round first: [`Call::gather`]).
    Confirm(String),
    /// `confirm {question}` answered in an earlier round (2026-07-28, no task): reports the
    /// answer at once.
    Confirmed {
        /// The question asked.
        question: String,
        /// The answer (an `ElicitResult`, checked against the form).
        answer: Value,
    },
    /// `echo {text}`: answers at once (never a task).
    Echo(String),
    /// A fixture of the conformance suite ([`fixtures`]).
    Fixture(Fixture),
    /// A fixture of the suite's `input-required-result-*` scenarios ([`input_fixtures`]).
    Input(InputFixture),
}

/// A call of a test-only tool ([`TEST_TOOLS_ENV`]), apart from [`Call`] so that code
/// matching on the example tools (the rmcp examples) never sees them.
pub enum TestCall {
    /// `abort {}`: aborts the process running it (a poison task).
    Abort,
    /// `steps {n, ms?}`: `n` steps of `ms` milliseconds, checkpointed after each.
    Steps {
        /// How many steps.
        n: u64,
        /// How long each step takes (ms).
        ms: u64,
    },
}

/// A call of any tool a server runs: one of its catalog ([`Catalog::parse`]), or a
/// test-only one ([`Catalog::invocation`]).
pub enum Invocation {
    /// An example tool or a conformance fixture.
    Tool(Call),
    /// A test-only tool.
    Test(TestCall),
}

/// The most steps `steps` runs.
const MAX_STEPS: u64 = 1_000;
/// How long a step of `steps` takes unless told (ms).
const DEFAULT_STEP_MS: u64 = 200;
/// The longest step (ms).
const MAX_STEP_MS: u64 = 60_000;

impl Call {
    /// Reads a call of the example tool `name` with `arguments`.
    fn parse_example(name: &str, arguments: &JsonObject) -> Result<Call, JsonRpcError> {
        match name {
            "sleep" => arguments
                .get("ms")
                .and_then(Value::as_u64)
                .map(Call::Sleep)
                .ok_or_else(|| invalid("`sleep` needs a non-negative integer `ms`")),
            "fail" => Ok(Call::Fail),
            "crash" => Ok(Call::Crash),
            "confirm" => arguments
                .get("question")
                .and_then(Value::as_str)
                .map(|q| Call::Confirm(q.to_owned()))
                .ok_or_else(|| invalid("`confirm` needs a string `question`")),
            "echo" => arguments
                .get("text")
                .and_then(Value::as_str)
                .map(|t| Call::Echo(t.to_owned()))
                .ok_or_else(|| invalid("`echo` needs a string `text`")),
            other => Err(unknown_tool(other)),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Sleep(_) => "sleep",
            Call::Fail => "fail",
            Call::Crash => "crash",
            Call::Confirm(_) | Call::Confirmed { .. } => "confirm",
            Call::Echo(_) => "echo",
            Call::Fixture(fixture) => fixture.name(),
            Call::Input(fixture) => fixture.name(),
        }
    }

    /// How many attempts the call's task may take, if it is redeliverable: its work may run
    /// again from the start (or from its last checkpoint) on another instance of a shared
    /// store when the instance running it stops. `sleep` (checkpointing its progress) and
    /// `confirm` (checkpointing the answer it read, so a re-run does not ask again) are;
    /// `fail`, `crash` and `echo` have nothing worth running again, and the conformance
    /// fixtures keep the behaviour the suite checks (they run once).
    #[must_use]
    pub fn redelivery(&self) -> Option<u32> {
        match self {
            Call::Sleep(_) | Call::Confirm(_) => Some(ATTEMPTS),
            Call::Fail
            | Call::Crash
            | Call::Echo(_)
            | Call::Confirmed { .. }
            | Call::Fixture(_)
            | Call::Input(_) => None,
        }
    }

    /// Whether the call asks the requestor for input while it runs (`confirm`: one
    /// form-mode `elicitation/create`).
    pub fn asks_for_input(&self) -> bool {
        match self {
            Call::Fixture(fixture) => fixture.asks_for_input(),
            call => matches!(call, Call::Confirm(_)),
        }
    }

    /// Whether the call can get its input in rounds before it runs, instead of only from
    /// inside a task: on 2026-07-28 a client without the tasks extension can still call it
    /// (`confirm`).
    #[must_use]
    pub fn asks_inline(&self) -> bool {
        matches!(self, Call::Confirm(_))
    }

    /// The 2026-07-28 input round before the call runs or its task is created (SEP-2322),
    /// given what the request carries ([`Before`]): what to ask now, or `None` to go on.
    /// What was answered is kept in the call (`confirm` becomes [`Call::Confirmed`]).
    /// `confirm` asks here only when no task follows (a task asks from inside); the
    /// fixtures that need input first ask here always.
    ///
    /// # Errors
    /// `-32602` for an answer that does not match its question, `-32021` for a capability
    /// the call needs and the client did not declare.
    pub fn gather(&mut self, before: &Before<'_>) -> Result<Option<Ask>, JsonRpcError> {
        match self {
            Call::Confirm(question) if !before.as_task() => {
                let answer = match before.answer_or_ask(CONFIRM_KEY, confirm_request(question))? {
                    Ok(answer) => answer,
                    Err(ask) => return Ok(Some(ask)),
                };
                *self = Call::Confirmed {
                    question: std::mem::take(question),
                    answer,
                };
                Ok(None)
            }
            Call::Fixture(fixture) => fixture.gather(before),
            Call::Input(fixture) => fixture.gather(before),
            _ => Ok(None),
        }
    }

    /// Whether the call talks to the client while it runs inline (progress, log messages,
    /// requests: [`Fixture::talks`]); it then runs with a [`Caller`]
    /// ([`run_talking`](Self::run_talking)).
    #[must_use]
    pub fn talks(&self) -> bool {
        matches!(self, Call::Fixture(fixture) if fixture.talks())
    }

    /// Runs the call as a normal request, talking to the client through `caller`.
    ///
    /// # Errors
    /// As for [`run`](Self::run).
    pub fn run_talking(self, caller: &Caller<'_>) -> Result<JsonObject, JsonRpcError> {
        match self {
            Call::Fixture(fixture) => fixture.run_talking(caller),
            other => other.run(),
        }
    }

    /// Runs the call as a normal request and returns its `CallToolResult`.
    ///
    /// # Errors
    /// The `crash` tool's `-32603`, and the task-required error for `confirm`.
    pub fn run(self) -> Result<JsonObject, JsonRpcError> {
        match self {
            Call::Sleep(ms) => {
                thread::sleep(Duration::from_millis(ms));
                Ok(text_result(format!("slept {ms} ms"), false))
            }
            Call::Fail => Ok(text_result("the fail tool always fails", true)),
            Call::Crash => Err(crash()),
            Call::Echo(text) => Ok(text_result(text, false)),
            Call::Fixture(fixture) => fixture.run(),
            Call::Input(fixture) => Ok(fixture.run()),
            Call::Confirmed { answer, .. } => Ok(text_result(confirmed(&answer), false)),
            Call::Confirm(_) => Err(Error::TaskRequired {
                tool: "confirm".into(),
            }
            .to_jsonrpc()),
        }
    }

    /// The work of the task behind `handle`, from `checkpoint`: the last progress an
    /// earlier attempt saved ([`TaskHandle::checkpoint`]), for a task claimed for its next
    /// attempt (`None`: from the start). `sleep` and `confirm` are futures (they hold no
    /// thread while they sleep or wait for the answer); the other tools block. Start it
    /// where its kind belongs, or run it here with [`Work::run_here`]. Errors are logged:
    /// the task records the outcome, and a refused transition means the task was
    /// cancelled or expired meanwhile. A handler that finds the task runs elsewhere now
    /// ([`Error::Superseded`]) stops.
    pub fn task_work<T: TaskStore + 'static>(
        self,
        handle: TaskHandle<Working, T>,
        checkpoint: Option<Value>,
    ) -> Work {
        let id = handle.id().clone();
        match self {
            Call::Sleep(ms) => Work::future(async move {
                logged(&id, sleep_task(handle, ms, checkpoint.as_ref()).await);
            }),
            Call::Confirm(question) => Work::future(async move {
                logged(
                    &id,
                    confirm_task(handle, &question, checkpoint.as_ref()).await,
                );
            }),
            Call::Fail => blocking(id, move || {
                handle
                    .finish(text_result("the fail tool always fails", true))
                    .map(drop)
            }),
            Call::Crash => blocking(id, move || handle.fail(Outcome::Error(crash())).map(drop)),
            Call::Echo(text) => blocking(id, move || {
                handle.complete(text_result(text, false)).map(drop)
            }),
            Call::Confirmed { answer, .. } => blocking(id, move || {
                handle
                    .complete(text_result(confirmed(&answer), false))
                    .map(drop)
            }),
            Call::Fixture(fixture) => blocking(id, move || fixture.run_task(handle)),
            Call::Input(fixture) => blocking(id, move || handle.complete(fixture.run()).map(drop)),
        }
    }
}

/// A handler that blocks, as work whose error is [`logged`].
fn blocking(task: TaskId, handler: impl FnOnce() -> Result<(), Error> + Send + 'static) -> Work {
    Work::blocking(move || logged(&task, handler()))
}

/// Logs a handler's error: the task has recorded its outcome already, or was cancelled,
/// expired or superseded meanwhile.
fn logged(task: &TaskId, outcome: Result<(), Error>) {
    if let Err(err) = outcome {
        eprintln!("task {task}: {err}");
    }
}

impl TestCall {
    /// Reads a call of the test tool `name` with `arguments`.
    fn parse(name: &str, arguments: &JsonObject) -> Result<TestCall, JsonRpcError> {
        match name {
            "abort" => Ok(TestCall::Abort),
            "steps" => {
                let n = arguments
                    .get("n")
                    .and_then(Value::as_u64)
                    .filter(|n| *n <= MAX_STEPS)
                    .ok_or_else(|| invalid("`steps` needs an integer `n` (at most 1000)"))?;
                let ms = match arguments.get("ms") {
                    None => DEFAULT_STEP_MS,
                    Some(ms) => ms
                        .as_u64()
                        .filter(|ms| *ms <= MAX_STEP_MS)
                        .ok_or_else(|| invalid("`steps` takes an integer `ms` (at most 60000)"))?,
                };
                Ok(TestCall::Steps { n, ms })
            }
            other => Err(unknown_tool(other)),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            TestCall::Abort => "abort",
            TestCall::Steps { .. } => "steps",
        }
    }

    fn run(self) -> Result<JsonObject, JsonRpcError> {
        match self {
            TestCall::Abort => std::process::abort(),
            TestCall::Steps { n, ms } => {
                thread::sleep(Duration::from_millis(n.saturating_mul(ms)));
                Ok(text_result(format!("ran {n} steps"), false))
            }
        }
    }

    fn task_work<T: TaskStore + 'static>(
        self,
        handle: TaskHandle<Working, T>,
        checkpoint: Option<Value>,
    ) -> Work {
        blocking(handle.id().clone(), move || match self {
            TestCall::Abort => std::process::abort(),
            TestCall::Steps { n, ms } => steps_task(handle, n, ms, checkpoint.as_ref()),
        })
    }
}

impl Invocation {
    /// The tool's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Invocation::Tool(call) => call.name(),
            Invocation::Test(test) => test.name(),
        }
    }

    /// How many attempts the call's task may take, if it is redeliverable
    /// ([`Call::redelivery`]; both test tools are, with [`ATTEMPTS`]).
    #[must_use]
    pub fn redelivery(&self) -> Option<u32> {
        match self {
            Invocation::Tool(call) => call.redelivery(),
            Invocation::Test(_) => Some(ATTEMPTS),
        }
    }

    /// Whether the call asks the requestor for input while it runs ([`Call::asks_for_input`]).
    #[must_use]
    pub fn asks_for_input(&self) -> bool {
        matches!(self, Invocation::Tool(call) if call.asks_for_input())
    }

    /// Whether the call can get its input in rounds instead of only as a task
    /// ([`Call::asks_inline`]).
    #[must_use]
    pub fn asks_inline(&self) -> bool {
        matches!(self, Invocation::Tool(call) if call.asks_inline())
    }

    /// The 2026-07-28 input round before the call runs or its task is created
    /// ([`Call::gather`]).
    ///
    /// # Errors
    /// As for [`Call::gather`].
    pub fn gather(&mut self, before: &Before<'_>) -> Result<Option<Ask>, JsonRpcError> {
        match self {
            Invocation::Tool(call) => call.gather(before),
            Invocation::Test(_) => Ok(None),
        }
    }

    /// Whether the call talks to the client while it runs inline ([`Call::talks`]).
    #[must_use]
    pub fn talks(&self) -> bool {
        matches!(self, Invocation::Tool(call) if call.talks())
    }

    /// Runs the call as a normal request, talking to the client through `caller`
    /// ([`Call::run_talking`]).
    ///
    /// # Errors
    /// As for [`Call::run`].
    pub fn run_talking(self, caller: &Caller<'_>) -> Result<JsonObject, JsonRpcError> {
        match self {
            Invocation::Tool(call) => call.run_talking(caller),
            Invocation::Test(test) => test.run(),
        }
    }

    /// Runs the call as a normal request ([`Call::run`]).
    ///
    /// # Errors
    /// As for [`Call::run`].
    pub fn run(self) -> Result<JsonObject, JsonRpcError> {
        match self {
            Invocation::Tool(call) => call.run(),
            Invocation::Test(test) => test.run(),
        }
    }

    /// The work of the task behind `handle` from `checkpoint` ([`Call::task_work`]).
    pub fn task_work<T: TaskStore + 'static>(
        self,
        handle: TaskHandle<Working, T>,
        checkpoint: Option<Value>,
    ) -> Work {
        match self {
            Invocation::Tool(call) => call.task_work(handle, checkpoint),
            Invocation::Test(test) => test.task_work(handle, checkpoint),
        }
    }
}

/// The JSON-RPC error the `crash` tool fails with.
fn crash() -> JsonRpcError {
    JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the crash tool always crashes")
}

/// Sleeps without holding a thread, waking early once the requestor cancels, and saves
/// the time slept as a checkpoint about every second (`{"elapsed_ms": n}`): a re-run
/// after the instance stopped sleeps only the rest. A store that cannot be reached for a
/// while (a shared store restarting) says nothing about the task: the sleep goes on, and
/// the result is written once the store is back.
async fn sleep_task<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    ms: u64,
    checkpoint: Option<&Value>,
) -> Result<(), Error> {
    let done = checkpoint
        .and_then(|checkpoint| checkpoint.get("elapsed_ms"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(ms);
    let started = Instant::now();
    let end = started + Duration::from_millis(ms - done);
    let mut saved = started;
    loop {
        let now = Instant::now();
        let left = end.saturating_duration_since(now);
        if left.is_zero() {
            break;
        }
        // Until the end, or the next checkpoint, whichever comes first.
        let step = left.min((saved + CHECKPOINT_EVERY).saturating_duration_since(now));
        match sleep_unless_cancelled(&handle, step).await {
            Woke::Slept => {}
            Woke::Cancel(Ok(())) => match handle.snapshot() {
                Ok(task) if task.status() == TaskStatus::Working => {
                    if task.cancel_requested() {
                        // The extension's cooperative cancel: honour it.
                        let _cancelled = handle
                            .with_message("cancelled at the requestor's request")
                            .cancel()?;
                        return Ok(());
                    }
                }
                // Unreachable for now: keep working (the step on the timer alone, so an
                // outage is not read in a loop).
                Err(Error::Store { .. }) => futures_timer::Delay::new(step).await,
                // Cancelled (by the requestor) or moved on, expired or removed: nothing
                // more to do.
                Ok(_) | Err(_) => {
                    handle.detach();
                    return Ok(());
                }
            },
            // Unreachable for now: the step is slept without watching for a cancel.
            Woke::Cancel(Err(Error::Store { .. })) => futures_timer::Delay::new(step).await,
            // Finished (failed at a shutdown, a lease that lapsed), expired or removed.
            Woke::Cancel(Err(_)) => {
                handle.detach();
                return Ok(());
            }
        }
        if saved.elapsed() >= CHECKPOINT_EVERY && Instant::now() < end {
            saved = Instant::now();
            let elapsed = done.saturating_add(millis(started.elapsed())).min(ms);
            // Another instance runs the task now: stop (dropping the handle changes
            // nothing: its writes are refused). Anything else (cancelled, unreachable) is
            // seen by the next wait: the work goes on.
            if let Err(superseded @ Error::Superseded { .. }) =
                handle.checkpoint(json!({ "elapsed_ms": elapsed }))
            {
                return Err(superseded);
            }
        }
    }
    let _done = handle.complete(text_result(format!("slept {ms} ms"), false))?;
    Ok(())
}

/// What ended one of `sleep`'s waits.
enum Woke {
    /// The time was up.
    Slept,
    /// The task's cancel wait resolved first ([`TaskHandle::cancelled`]): a cancel was
    /// requested or the task was cancelled (`Ok`), or it cannot be cancelled any more, or
    /// the store could not be read (`Err`).
    Cancel(Result<(), Error>),
}

/// Waits `duration`, or less if the task's cancel wait resolves first.
async fn sleep_unless_cancelled<T: TaskStore>(
    handle: &TaskHandle<Working, T>,
    duration: Duration,
) -> Woke {
    match within(duration, handle.cancelled()).await {
        Some(result) => Woke::Cancel(result),
        None => Woke::Slept,
    }
}

/// A duration in whole milliseconds.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `steps {n, ms}` (test only): `n` steps of `ms` each, the number of steps done saved as a
/// checkpoint (`{"done": k}`) after each, so a re-run starts at the first step not done: at
/// most one step (the one running when the instance stopped) runs twice. Each step's start
/// is appended to [`STEPS_FILE_ENV`]'s file, if set.
fn steps_task<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    n: u64,
    ms: u64,
    checkpoint: Option<&Value>,
) -> Result<(), Error> {
    let first = checkpoint
        .and_then(|checkpoint| checkpoint.get("done"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(n);
    let record = std::env::var_os(STEPS_FILE_ENV);
    for step in first..n {
        if let Some(path) = &record {
            let line = format!("{} {step} {}\n", handle.id(), handle.attempt().unwrap_or(1));
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(line.as_bytes()));
            if let Err(err) = written {
                eprintln!("task {}: cannot record step {step}: {err}", handle.id());
            }
        }
        thread::sleep(Duration::from_millis(ms));
        match handle.checkpoint(json!({ "done": step + 1 })) {
            Err(superseded @ Error::Superseded { .. }) => return Err(superseded),
            Ok(()) | Err(Error::Store { .. }) => {}
            // Cancelled, expired or removed: nothing more to do.
            Err(_) => {
                handle.detach();
                return Ok(());
            }
        }
    }
    let _done = handle.complete(text_result(format!("ran {n} steps"), false))?;
    Ok(())
}

/// The form `confirm` asks: one string, `answer`.
pub fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
}

/// The key under which `confirm` asks, in a task and in an input round alike.
pub const CONFIRM_KEY: &str = "confirm";

/// The form-mode `elicitation/create` that `confirm` asks.
pub fn confirm_request(question: &str) -> InputRequest {
    let mut params = JsonObject::new();
    params.insert("mode".into(), json!("form"));
    params.insert("message".into(), json!(question));
    params.insert("requestedSchema".into(), confirm_schema());
    InputRequest::elicitation(params)
}

/// Checks a requestor's answer to an input request of this server before it is used, in a
/// task (`tasks/update`, a 2025-11-25 response) or an input round (`inputResponses`) alike:
/// the answer to a form-mode `elicitation/create` is an `ElicitResult` (`action` `accept`,
/// `decline` or `cancel`) whose `content`, when accepted, holds every required field of
/// the requested schema with the requested type (and one of its `enum` values, if any); to
/// a `sampling/createMessage`, a `CreateMessageResult` (`role`, `model`, `content`); to a
/// `roots/list`, a `ListRootsResult` (`roots`, each with a string `uri`). Answers to other
/// requests are not checked here.
///
/// # Errors
/// What does not match, in a short sentence naming the field.
pub fn check_answer(request: &InputRequest, answer: &Value) -> Result<(), String> {
    match request.method.as_str() {
        "elicitation/create" => {}
        "sampling/createMessage" => return check_sampled(answer),
        "roots/list" => return check_roots(answer),
        _ => return Ok(()),
    }
    let Some(answer) = answer.as_object() else {
        return Err("an elicitation answer is an object".into());
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {}
        Some("decline" | "cancel") => return Ok(()),
        _ => return Err("`action` must be \"accept\", \"decline\" or \"cancel\"".into()),
    }
    let Some(schema) = request.params.get("requestedSchema") else {
        // URL mode: no content is expected.
        return Ok(());
    };
    let Some(content) = answer.get("content").and_then(Value::as_object) else {
        return Err("an accepted answer needs an object `content`".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !content.contains_key(name) {
            return Err(format!("`content.{name}` is required"));
        }
    }
    for (name, value) in content {
        let Some(property) = properties.and_then(|properties| properties.get(name)) else {
            continue;
        };
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        let fits = match kind {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "array" => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
            _ => true,
        };
        if !fits {
            return Err(format!("`content.{name}` must be of type {kind}"));
        }
        if let Some(allowed) = property.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            return Err(format!("`content.{name}` is not one of the offered values"));
        }
    }
    Ok(())
}

/// A `CreateMessageResult`: string `role` and `model`, and a `content` block (or blocks).
fn check_sampled(answer: &Value) -> Result<(), String> {
    for field in ["role", "model"] {
        if !answer.get(field).is_some_and(Value::is_string) {
            return Err(format!("a sampling answer needs a string `{field}`"));
        }
    }
    match answer.get("content") {
        Some(Value::Object(_) | Value::Array(_)) => Ok(()),
        _ => Err("a sampling answer needs a `content` block".into()),
    }
}

/// A `ListRootsResult`: `roots`, each an object with a string `uri`.
fn check_roots(answer: &Value) -> Result<(), String> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or("a roots answer needs an array `roots`")?;
    if roots
        .iter()
        .all(|root| root.get("uri").is_some_and(Value::is_string))
    {
        Ok(())
    } else {
        Err("each of `roots` needs a string `uri`".into())
    }
}

/// `working` → `input_required` (one elicitation) → `working` → `completed`. An answer
/// that does not match the requested form fails the task with `-32602`; it is never
/// read as an empty answer. The answer read is saved as a checkpoint (`{"answer": ...}`)
/// before the task resumes: a re-run on another instance finishes with it instead of
/// asking again; a re-run of a task that had no answer yet asks again (under new keys).
async fn confirm_task<T: TaskStore>(
    handle: TaskHandle<Working, T>,
    question: &str,
    checkpoint: Option<&Value>,
) -> Result<(), Error> {
    if let Some(answer) = checkpoint.and_then(|checkpoint| checkpoint.get("answer")) {
        let _done = handle.complete(text_result(confirmed(answer), false))?;
        return Ok(());
    }
    let request = confirm_request(question);
    let waiting = handle
        .with_message("waiting for the user's answer")
        .require_input(InputRequests::new().with(CONFIRM_KEY, request.clone()))?;
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut answers = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // In short waits: a handler whose task was claimed by another instance (it runs
        // there now and asks again) must stop before it takes the answers meant for the
        // re-run.
        match within(left.min(SUPERSEDED_CHECK), waiting.wait_for_input_async()).await {
            Some(Ok(answers)) => break answers,
            Some(Err(Error::CancelRequested { .. })) => {
                let _cancelled = waiting
                    .with_message("cancelled at the requestor's request")
                    .cancel()?;
                return Ok(());
            }
            _ if superseded(&waiting) => return Ok(()),
            None if left > SUPERSEDED_CHECK => {}
            // The store cannot be reached right now: that says nothing about the answer.
            Some(Err(Error::Store { .. })) if !left.is_zero() => {
                futures_timer::Delay::new(Duration::from_millis(200)).await;
            }
            None | Some(Err(Error::Store { .. })) => {
                let _failed = waiting.fail(Outcome::error(
                    jsonrpc::INTERNAL_ERROR,
                    "the user did not answer in time",
                ))?;
                return Ok(());
            }
            // Cancelled, expired or removed meanwhile: nothing more to do.
            Some(Err(_)) => {
                waiting.detach();
                return Ok(());
            }
        }
    };
    let answer = Value::Object(answers.remove(CONFIRM_KEY).unwrap_or_default());
    if let Err(why) = check_answer(&request, &answer) {
        let _failed = waiting.fail(Outcome::error(
            jsonrpc::INVALID_PARAMS,
            format!(
                "invalid params: the answer to `confirm` does not match the requested schema: {why}"
            ),
        ))?;
        return Ok(());
    }
    // Consumed: a re-run must not ask again. A checkpoint that cannot be written now only
    // means a re-run would ask again; one refused because the task runs elsewhere stops.
    if let Err(superseded @ Error::Superseded { .. }) =
        waiting.checkpoint(json!({ "answer": answer }))
    {
        return Err(superseded);
    }
    let working = waiting.resume()?;
    let _done = working.complete(text_result(confirmed(&answer), false))?;
    Ok(())
}

/// How often a handler waiting for input looks whether another instance runs its task
/// now.
const SUPERSEDED_CHECK: Duration = Duration::from_secs(1);

/// Whether another attempt runs the task behind `handle` now (it was claimed elsewhere):
/// the handle's writes are refused, and it must neither take the task's answers nor give
/// up the lease (which the new attempt holds). Dropping the handle is all that is left.
fn superseded<S: TaskState, T: TaskStore>(handle: &TaskHandle<S, T>) -> bool {
    let Some(mine) = handle.attempt() else {
        return false;
    };
    handle.snapshot().is_ok_and(|task| {
        task.attempts()
            .is_some_and(|attempts| attempts.attempt() != mine)
    })
}

/// What `confirm` reports for a (checked) answer.
fn confirmed(answer: &Value) -> String {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let said = answer
                .get("content")
                .and_then(|content| content.get("answer"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!("the user answered: {said}")
        }
        Some("decline") => "the user declined".to_owned(),
        _ => "the user cancelled".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(catalog: Catalog) -> Vec<String> {
        catalog
            .list()
            .as_array()
            .expect("a list")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect()
    }

    #[test]
    fn the_examples_alone_by_default_and_the_fixtures_only_with_the_flag() {
        let examples = ["sleep", "fail", "crash", "confirm", "echo"];
        assert_eq!(names(Catalog::Examples), examples);
        assert!(!Catalog::Examples.instructions().contains("greet"));
        let all = names(Catalog::WithConformance);
        assert_eq!(
            all.len(),
            examples.len()
                + fixtures::NAMES.len()
                + input_fixtures::NAMES.len()
                + crate::core_fixtures::NAMES.len()
        );
        assert_eq!(
            all[0], "test_simple_text",
            "the first listed tool takes no arguments"
        );
        assert!(all.ends_with(&examples.map(str::to_owned)));
        for fixture in fixtures::NAMES
            .into_iter()
            .chain(input_fixtures::NAMES)
            .chain(crate::core_fixtures::NAMES)
        {
            assert!(all.iter().any(|name| name == fixture), "{fixture} listed");
            assert_eq!(Catalog::Examples.task_support(fixture), None, "{fixture}");
            let error = Catalog::Examples
                .parse(fixture, &JsonObject::new())
                .err()
                .expect("not a tool of the examples");
            assert_eq!(error.code, jsonrpc::INVALID_PARAMS, "{fixture}");
            assert!(error.message.contains("unknown tool"), "{}", error.message);
            assert!(
                Catalog::WithConformance.task_support(fixture).is_some(),
                "{fixture}"
            );
        }
        for example in examples {
            assert_eq!(
                Catalog::Examples.task_support(example),
                Catalog::WithConformance.task_support(example)
            );
        }
        assert!(
            Catalog::Examples
                .header_params("test_custom_header")
                .is_empty()
        );
        assert!(
            Catalog::Examples
                .input_schema("test_custom_header")
                .is_none()
        );
        assert!(Catalog::Examples.input_schema("sleep").is_some());
    }
}
