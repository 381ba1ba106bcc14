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

use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{
    Error, InputRequest, InputRequests, JsonObject, JsonRpcError, Outcome, TaskHandle, TaskStatus,
    TaskStore, Working, jsonrpc,
};
use serde_json::{Value, json};

/// How long a handler waits for the requestor's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The tools, as `tools/list` shows them.
pub fn list() -> Value {
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

/// The task support of a known tool.
pub fn task_support(name: &str) -> Option<TaskSupport> {
    match name {
        "sleep" | "fail" | "crash" => Some(TaskSupport::Optional),
        "confirm" => Some(TaskSupport::Required),
        "echo" => Some(TaskSupport::Forbidden),
        _ => None,
    }
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
    Sleep(u64),
    Fail,
    Crash,
    Confirm(String),
    Echo(String),
}

impl Call {
    /// Reads a call of `name` with `arguments`.
    ///
    /// # Errors
    /// `-32602` for an unknown tool or missing or mistyped arguments.
    pub fn parse(name: &str, arguments: &JsonObject) -> Result<Call, JsonRpcError> {
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

    /// Runs the call as a normal request and returns its `CallToolResult`.
    pub fn run(self) -> Result<JsonObject, JsonRpcError> {
        match self {
            Call::Sleep(ms) => {
                thread::sleep(Duration::from_millis(ms));
                Ok(text_result(format!("slept {ms} ms"), false))
            }
            Call::Fail => Ok(text_result("the fail tool always fails", true)),
            Call::Crash => Err(crash()),
            Call::Echo(text) => Ok(text_result(text, false)),
            Call::Confirm(_) => Err(Error::TaskRequired {
                tool: "confirm".into(),
            }
            .to_jsonrpc()),
        }
    }

    /// Runs the call as the task behind `handle`, to its end. Errors are logged: the task
    /// records the outcome, and a refused transition means the task was cancelled or
    /// expired meanwhile.
    pub fn run_task<T: TaskStore>(self, handle: TaskHandle<Working, T>) {
        let id = handle.id().clone();
        let outcome = match self {
            Call::Sleep(ms) => sleep_task(handle, ms),
            Call::Fail => handle
                .finish(text_result("the fail tool always fails", true))
                .map(drop),
            Call::Crash => handle.fail(Outcome::Error(crash())).map(drop),
            Call::Echo(text) => handle.complete(text_result(text, false)).map(drop),
            Call::Confirm(question) => confirm_task(handle, &question),
        };
        if let Err(err) = outcome {
            eprintln!("task {id}: {err}");
        }
    }
}

/// The JSON-RPC error the `crash` tool fails with.
fn crash() -> JsonRpcError {
    JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the crash tool always crashes")
}

/// Sleeps in small steps so a cancelled task stops early.
fn sleep_task<T: TaskStore>(handle: TaskHandle<Working, T>, ms: u64) -> Result<(), Error> {
    let end = Instant::now() + Duration::from_millis(ms);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            break;
        }
        thread::sleep(left.min(Duration::from_millis(50)));
        if handle.current_status() != Some(TaskStatus::Working) {
            // Cancelled, expired or removed: nothing more to do.
            handle.detach();
            return Ok(());
        }
        if handle.cancel_requested() {
            // The extension's cooperative cancel: honour it.
            let _cancelled = handle
                .with_message("cancelled at the requestor's request")
                .cancel()?;
            return Ok(());
        }
    }
    let _done = handle.complete(text_result(format!("slept {ms} ms"), false))?;
    Ok(())
}

/// `working` → `input_required` (one elicitation) → `working` → `completed`.
fn confirm_task<T: TaskStore>(handle: TaskHandle<Working, T>, question: &str) -> Result<(), Error> {
    let mut params = JsonObject::new();
    params.insert("mode".into(), json!("form"));
    params.insert("message".into(), json!(question));
    params.insert(
        "requestedSchema".into(),
        json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
    );
    let waiting = handle
        .with_message("waiting for the user's answer")
        .require_input(InputRequests::new().with("confirm", InputRequest::elicitation(params)))?;
    let mut answers = match waiting.wait_for_input(Some(ANSWER_TIMEOUT)) {
        Ok(answers) => answers,
        Err(Error::CancelRequested { .. }) => {
            let _cancelled = waiting
                .with_message("cancelled at the requestor's request")
                .cancel()?;
            return Ok(());
        }
        Err(Error::Timeout { .. }) => {
            let _failed = waiting.fail(Outcome::error(
                jsonrpc::INTERNAL_ERROR,
                "the user did not answer in time",
            ))?;
            return Ok(());
        }
        // Cancelled, expired or removed meanwhile: nothing more to do.
        Err(_) => return Ok(()),
    };
    let answer = answers.remove("confirm").unwrap_or_default();
    let working = waiting.resume()?;
    let text = match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let said = answer
                .get("content")
                .and_then(|c| c.get("answer"))
                .map_or_else(
                    || "(nothing)".to_owned(),
                    |a| a.as_str().map_or_else(|| a.to_string(), str::to_owned),
                );
            format!("the user answered: {said}")
        }
        Some("decline") => "the user declined".to_owned(),
        Some("cancel") => "the user cancelled".to_owned(),
        _ => {
            let _failed = working.fail(Outcome::error(
                jsonrpc::INTERNAL_ERROR,
                "the elicitation answer had no valid `action`",
            ))?;
            return Ok(());
        }
    };
    let _done = working.complete(text_result(text, false))?;
    Ok(())
}
