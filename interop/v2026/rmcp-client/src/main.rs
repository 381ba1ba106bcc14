//! The official Rust SDK's 2026-07-28 client (rmcp 3.11.0) against the stdio example.
//!
//! ```text
//! cargo build -p mcp-tasks-rmcp-client
//! interop/v2026/rmcp-client/target/debug/mcp-tasks-rmcp-client target/debug/stdio_server
//! ```
//!
//! It spawns the server binary named by its argument (rmcp's `TokioChildProcess`),
//! starts with `serve_with_lifecycle` in `ClientLifecycleMode::Discover` (a
//! `server/discover`, no `initialize`), declaring the tasks extension
//! `io.modelcontextprotocol/tasks` and form elicitation in its capabilities, which rmcp
//! then sends in every request's `_meta`. Then it runs the task flows through rmcp's own
//! task methods (`call_tool_once`, `get_task`, `update_task`, `cancel_task`):
//!
//! - `sleep` becomes a task that completes with its result inlined in `tasks/get`;
//! - `fail` (a tool error) completes with `isError: true`;
//! - `crash` (a JSON-RPC error) fails with the error inlined;
//! - `confirm` asks for input: the elicitation is read from `tasks/get`, answered with
//!   `tasks/update` from its requested schema, and the task completes with the answer;
//! - a long `sleep` is cancelled with `tasks/cancel` and settles `cancelled`;
//! - `echo`, which never runs as a task, answers at once.
//!
//! Each check prints one `PASS`/`FAIL` line; the last line is `N passed, N failed`, and
//! the exit status is 1 if any check failed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    CreateTaskResult, ElicitationCapability, ExtensionCapabilities, FormElicitationCapability,
    GetTaskParams, Implementation, JsonObject, ProtocolVersion, TASKS_EXTENSION_ID, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceError};
use serde_json::{Value, json};
use tokio::process::Command;

/// The longest one flow may take.
const FLOW_LIMIT: Duration = Duration::from_secs(30);
/// The shortest and longest pause between two `tasks/get` polls.
const MIN_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_millis(500);
/// How long a cancelled task may take to settle.
const CANCEL_SETTLE: Duration = Duration::from_secs(5);

type Client = RunningService<RoleClient, ClientConfig>;
type Outcome = Result<String, String>;

#[derive(Default)]
struct Tally {
    passed: u32,
    failed: u32,
}

impl Tally {
    fn record(&mut self, name: &str, outcome: Outcome) {
        match outcome {
            Ok(detail) => {
                self.passed += 1;
                println!("PASS {name}: {detail}");
            }
            Err(reason) => {
                self.failed += 1;
                println!("FAIL {name}: {reason}");
            }
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(server) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-tasks-rmcp-client <stdio server binary>");
        return ExitCode::from(2);
    };
    let mut tally = Tally::default();
    let client = match connect(&server).await {
        Ok(client) => client,
        Err(reason) => {
            tally.record("discover", Err(reason));
            return finish(&tally);
        }
    };
    tally.record("discover", check_discover(&client));

    let flows: [(&str, Flow); 7] = [
        ("tools/list", |c| Box::pin(tools_list(c))),
        ("sleep", |c| Box::pin(sleep(c))),
        ("fail", |c| Box::pin(fail(c))),
        ("crash", |c| Box::pin(crash(c))),
        ("confirm", |c| Box::pin(confirm(c))),
        ("cancel", |c| Box::pin(cancel(c))),
        ("echo", |c| Box::pin(echo(c))),
    ];
    for (name, flow) in flows {
        let outcome = match tokio::time::timeout(FLOW_LIMIT, flow(&client)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no outcome within {} s", FLOW_LIMIT.as_secs())),
        };
        tally.record(name, outcome);
    }

    // Closing the transport ends the child: rmcp closes its stdin, then signals and kills
    // it if it does not exit.
    if let Err(err) = client.cancel().await {
        eprintln!("closing the client: {err}");
    }
    finish(&tally)
}

type Flow = for<'a> fn(&'a Client) -> std::pin::Pin<Box<dyn Future<Output = Outcome> + 'a>>;

fn finish(tally: &Tally) -> ExitCode {
    println!("{} passed, {} failed", tally.passed, tally.failed);
    if tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Spawns the server and runs rmcp's discover lifecycle, declaring the tasks extension.
async fn connect(server: &str) -> Result<Client, String> {
    let transport = TokioChildProcess::new(Command::new(server))
        .map_err(|err| format!("cannot start the server {server}: {err}"))?;
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::default()));
    let info = ClientConfig::new(
        capabilities,
        Implementation::new("mcp-tasks-rmcp-client", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2026_07_28);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    tokio::time::timeout(FLOW_LIMIT, info.serve_with_lifecycle(transport, lifecycle))
        .await
        .map_err(|_| format!("no discover answer within {} s", FLOW_LIMIT.as_secs()))?
        .map_err(|err| format!("rmcp refused the discover lifecycle: {err}"))
}

/// What rmcp made of the `server/discover` answer.
fn check_discover(client: &Client) -> Outcome {
    let info = client
        .peer_info()
        .ok_or("rmcp kept no server info after server/discover")?;
    if info.protocol_version != ProtocolVersion::V_2026_07_28 {
        return Err(format!(
            "negotiated {} instead of 2026-07-28",
            info.protocol_version
        ));
    }
    if !info.capabilities.supports_tasks() {
        return Err("the server does not advertise io.modelcontextprotocol/tasks".into());
    }
    let name = info
        .server_info
        .as_ref()
        .map(|server| server.name.clone())
        .ok_or("no serverInfo under _meta[\"io.modelcontextprotocol/serverInfo\"]")?;
    Ok(format!(
        "2026-07-28 with the tasks extension, server {name}"
    ))
}

/// `tools/list` parses (with its cache hints) and names the example tools.
async fn tools_list(client: &Client) -> Outcome {
    let tools = client.list_all_tools().await.map_err(describe)?;
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for wanted in ["sleep", "fail", "crash", "confirm", "echo"] {
        if !names.contains(&wanted) {
            return Err(format!("no `{wanted}` tool among {names:?}"));
        }
    }
    Ok(format!("{} tools: {}", names.len(), names.join(", ")))
}

/// `sleep {ms: 200}` as a task, polled to `completed` with the tool's result inlined.
async fn sleep(client: &Client) -> Outcome {
    let created = start_task(client, "sleep", json!({"ms": 200})).await?;
    if created.task.status != TaskStatus::Working {
        return Err(format!(
            "created in {:?}, expected working",
            created.task.status
        ));
    }
    let payload = poll_until_terminal(client, &created.task.task_id).await?;
    let result = completed(payload)?;
    expect_tool_result(&result, "slept 200 ms", false)?;
    Ok(format!(
        "task {} completed: slept 200 ms",
        created.task.task_id
    ))
}

/// `fail` (a tool error): the extension says `completed`, with `isError: true` inlined.
async fn fail(client: &Client) -> Outcome {
    let created = start_task(client, "fail", json!({})).await?;
    let payload = poll_until_terminal(client, &created.task.task_id).await?;
    let result = completed(payload)?;
    expect_tool_result(&result, "the fail tool always fails", true)?;
    Ok("completed with isError: true".into())
}

/// `crash` (a JSON-RPC error): `failed`, with the error object inlined.
async fn crash(client: &Client) -> Outcome {
    let created = start_task(client, "crash", json!({})).await?;
    match poll_until_terminal(client, &created.task.task_id).await? {
        TaskPayload::Failed { error } => {
            let code = error.get("code").and_then(Value::as_i64);
            let message = error.get("message").and_then(Value::as_str);
            match (code, message) {
                (Some(-32603), Some("the crash tool always crashes")) => {
                    Ok("failed with error -32603".into())
                }
                _ => Err(format!(
                    "failed with an unexpected error {}",
                    Value::Object(error)
                )),
            }
        }
        other => Err(format!("ended {:?}, expected failed", other.status())),
    }
}

/// `confirm`: the input request is read from `tasks/get`, answered with `tasks/update`,
/// and the task completes with the answer.
async fn confirm(client: &Client) -> Outcome {
    let created = start_task(client, "confirm", json!({"question": "proceed?"})).await?;
    let task_id = created.task.task_id;
    let requests = poll_until(client, &task_id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => Some(Ok(input_requests.clone())),
        TaskPayload::Working => None,
        other => Some(Err(format!(
            "ended {:?} before asking for input",
            other.status()
        ))),
    })
    .await??;
    if requests.len() != 1 {
        return Err(format!("{} input requests, expected one", requests.len()));
    }
    let mut responses = rmcp::model::InputResponses::new();
    for (key, request) in &requests {
        let request = serde_json::to_value(request).map_err(|err| err.to_string())?;
        if request["method"] != "elicitation/create" {
            return Err(format!(
                "input request {key} is not an elicitation: {request}"
            ));
        }
        if request["params"]["message"] != "proceed?" {
            return Err(format!(
                "the elicitation does not ask the question: {request}"
            ));
        }
        responses.insert(key.clone(), accept(&request["params"]["requestedSchema"])?);
    }
    client
        .update_task(UpdateTaskParams::new(task_id.clone(), responses))
        .await
        .map_err(|err| format!("tasks/update: {}", describe(err)))?;
    let payload = poll_until_terminal(client, &task_id).await?;
    let result = completed(payload)?;
    expect_tool_result(&result, "the user answered: yes", false)?;
    Ok("input_required, answered with tasks/update, completed with the answer".into())
}

/// An accepted elicitation answering every property of the requested schema: strings
/// with "yes", booleans with true, numbers with 1.
fn accept(schema: &Value) -> Result<Value, String> {
    let properties = schema["properties"]
        .as_object()
        .ok_or_else(|| format!("the requested schema has no properties: {schema}"))?;
    let mut content = JsonObject::new();
    for (name, property) in properties {
        let value = match property["type"].as_str() {
            Some("string") => json!("yes"),
            Some("boolean") => json!(true),
            Some("integer" | "number") => json!(1),
            other => return Err(format!("cannot answer property {name} of type {other:?}")),
        };
        content.insert(name.clone(), value);
    }
    if !content.contains_key("answer") {
        return Err(format!("the requested schema asks no `answer`: {schema}"));
    }
    Ok(json!({"action": "accept", "content": content}))
}

/// A long `sleep` cancelled with `tasks/cancel`: acknowledged, then `cancelled` long
/// before the sleep would have ended.
async fn cancel(client: &Client) -> Outcome {
    let created = start_task(client, "sleep", json!({"ms": 30000})).await?;
    let task_id = created.task.task_id;
    let asked = Instant::now();
    client
        .cancel_task(CancelTaskParams::new(task_id.clone()))
        .await
        .map_err(|err| format!("tasks/cancel: {}", describe(err)))?;
    let payload = tokio::time::timeout(CANCEL_SETTLE, poll_until_terminal(client, &task_id))
        .await
        .map_err(|_| {
            format!(
                "not terminal {} s after the acknowledgement",
                CANCEL_SETTLE.as_secs()
            )
        })??;
    match payload {
        TaskPayload::Cancelled => Ok(format!(
            "acknowledged, cancelled after {} ms",
            asked.elapsed().as_millis()
        )),
        other => Err(format!("ended {:?}, expected cancelled", other.status())),
    }
}

/// `echo` never runs as a task: the call answers at once.
async fn echo(client: &Client) -> Outcome {
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = Some(object(json!({"text": "hello"}))?);
    match client.call_tool_once(params).await.map_err(describe)? {
        CallToolResponse::Complete(result) => {
            let result = serde_json::to_value(result).map_err(|err| err.to_string())?;
            let result = object(result)?;
            expect_tool_result(&result, "hello", false)?;
            Ok("answered at once".into())
        }
        CallToolResponse::Task(created) => Err(format!(
            "became task {}, but echo never runs as a task",
            created.task.task_id
        )),
        other => Err(format!("unexpected answer {other:?}")),
    }
}

/// Calls `name` and expects the server to run it as a task.
async fn start_task(
    client: &Client,
    name: &'static str,
    arguments: Value,
) -> Result<CreateTaskResult, String> {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = Some(object(arguments)?);
    match client.call_tool_once(params).await.map_err(describe)? {
        CallToolResponse::Task(created) => Ok(created),
        CallToolResponse::Complete(result) => Err(format!(
            "{name} answered at once instead of as a task: {result:?}"
        )),
        other => Err(format!("{name}: unexpected answer {other:?}")),
    }
}

/// Polls `tasks/get` until the task is terminal, and returns its payload.
async fn poll_until_terminal(client: &Client, task_id: &str) -> Result<TaskPayload, String> {
    poll_until(client, task_id, |payload| {
        payload.status().is_terminal().then(|| payload.clone())
    })
    .await
}

/// Polls `tasks/get`, honouring `pollIntervalMs` within [MIN_POLL, MAX_POLL], until
/// `done` returns something. Every answer must be for the task asked about.
async fn poll_until<T>(
    client: &Client,
    task_id: &str,
    done: impl Fn(&TaskPayload) -> Option<T>,
) -> Result<T, String> {
    loop {
        let got = client
            .get_task(GetTaskParams::new(task_id))
            .await
            .map_err(|err| format!("tasks/get: {}", describe(err)))?;
        if got.task.task.task_id != task_id {
            return Err(format!(
                "tasks/get for {task_id} answered for {}",
                got.task.task.task_id
            ));
        }
        if let Some(found) = done(&got.task.payload) {
            return Ok(found);
        }
        let pause = got
            .task
            .task
            .poll_interval_ms
            .map_or(MIN_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tokio::time::sleep(pause).await;
    }
}

fn completed(payload: TaskPayload) -> Result<JsonObject, String> {
    match payload {
        TaskPayload::Completed { result } => Ok(result),
        other => Err(format!("ended {:?}, expected completed", other.status())),
    }
}

/// A `CallToolResult` with one text block `text` and `isError` as given (absent = false).
fn expect_tool_result(result: &JsonObject, text: &str, is_error: bool) -> Result<(), String> {
    let got_text = result
        .get("content")
        .and_then(|content| content.get(0))
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str);
    let got_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if got_text == Some(text) && got_error == is_error {
        Ok(())
    } else {
        Err(format!(
            "result {} is not the text {text:?} with isError {is_error}",
            Value::Object(result.clone())
        ))
    }
}

fn object(value: Value) -> Result<JsonObject, String> {
    match value {
        Value::Object(object) => Ok(object),
        other => Err(format!("not a JSON object: {other}")),
    }
}

/// A request error in a line: the JSON-RPC error's code and message when there is one.
fn describe(err: ServiceError) -> String {
    match err {
        ServiceError::McpError(error) => format!("error {}: {}", error.code.0, error.message),
        other => other.to_string(),
    }
}
