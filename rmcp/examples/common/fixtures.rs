//! The fixture tools the `tasks-*` scenarios of the official conformance suite
//! (`@modelcontextprotocol/conformance` 0.2.0-alpha.12) call, with the contracts read from
//! the scenarios: `greet`, `slow_compute`, `failing_job`, `protocol_error_job`,
//! `confirm_delete`, `multi_input` and `test_tool_with_task`.

use std::time::{Duration, Instant};

use mcp_tasks_rmcp::{
    TaskContext, TaskExit, TaskManager, TaskOptions, declares_tasks, text_result,
};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ElicitationCapability, InputRequest, InputRequests, InputRequiredResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::Store;

/// How often a client is asked to poll a fixture's task.
const POLL_INTERVAL_MS: u64 = 100;

/// How long `confirm_delete` waits for its answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The fixture tools, as `tools/list` shows them.
pub fn list() -> Vec<Value> {
    let none = json!({"type": "object", "properties": {}});
    vec![
        json!({
            "name": "greet",
            "description": "Greets `name` at once. Never a task.",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "execution": {"taskSupport": "forbidden"}
        }),
        json!({
            "name": "slow_compute",
            "description": "Sleeps `seconds` (0 to 3600), then reports. A task when the client declares the tasks extension.",
            "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 3600}, "label": {"type": "string"}}, "required": ["seconds"]},
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": "failing_job",
            "description": "Works about a second, then ends with a tool error (isError: true). Only as a task.",
            "inputSchema": none,
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "protocol_error_job",
            "description": "Fails at once with the JSON-RPC error -32603.",
            "inputSchema": none,
            "execution": {"taskSupport": "optional"}
        }),
        json!({
            "name": "confirm_delete",
            "description": "Asks whether to delete `filename` (deletes nothing). Only as a task.",
            "inputSchema": {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "multi_input",
            "description": "Asks a name and a confirmation at once. Only as a task.",
            "inputSchema": none,
            "execution": {"taskSupport": "required"}
        }),
        json!({
            "name": "test_tool_with_task",
            "description": "Asks the user's name in the call itself (an input_required result), then greets it as a task.",
            "inputSchema": none,
            "execution": {"taskSupport": "required"}
        }),
    ]
}

fn options() -> TaskOptions {
    TaskOptions::new().with_poll_interval_ms(POLL_INTERVAL_MS)
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(format!("invalid params: {}", message.into()), None)
}

fn tasks_required() -> ErrorData {
    ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

/// A form-mode `elicitation/create` asking `message` with one field `field` of `kind`.
fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
        }
    })
}

fn input_request(wire: Value) -> Result<InputRequest, ErrorData> {
    serde_json::from_value(wire).map_err(|err| ErrorData::internal_error(err.to_string(), None))
}

fn accepted(answer: &Value) -> Option<&Value> {
    (answer.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| answer.get("content"))
        .flatten()
}

/// Answers a fixture call, or `None` for a tool that is not a fixture.
pub async fn call(
    tasks: &TaskManager<Store>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let arguments = request.arguments.clone().unwrap_or_default();
    let answer = match request.name.as_ref() {
        "greet" => greet(&arguments),
        "slow_compute" => slow_compute(tasks, &arguments, context).await,
        "failing_job" => failing_job(tasks, context).await,
        "protocol_error_job" => {
            tasks
                .call_tool(context, options(), |_ctx| {
                    Box::pin(async {
                        Err(TaskExit::Error(ErrorData::internal_error(
                            "protocol_error_job always fails with a protocol error",
                            None,
                        )))
                    })
                })
                .await
        }
        "confirm_delete" => confirm_delete(tasks, &arguments, context).await,
        "multi_input" => multi_input(tasks, context).await,
        "test_tool_with_task" => test_tool_with_task(tasks, request, context),
        _ => return None,
    };
    Some(answer)
}

fn greet(arguments: &rmcp::model::JsonObject) -> Result<CallToolResponse, ErrorData> {
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("`greet` needs a string `name`"))?;
    Ok(CallToolResponse::Complete(text_result(
        format!("Hello, {name}!"),
        false,
    )))
}

async fn slow_compute(
    tasks: &TaskManager<Store>,
    arguments: &rmcp::model::JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let seconds = arguments
        .get("seconds")
        .and_then(Value::as_f64)
        .filter(|seconds| (0.0..=3600.0).contains(seconds))
        .ok_or_else(|| invalid("`slow_compute` needs a number `seconds` from 0 to 3600"))?;
    let label = arguments
        .get("label")
        .and_then(Value::as_str)
        .unwrap_or("unlabelled")
        .to_owned();
    let duration = Duration::from_secs_f64(seconds);
    tasks
        .call_tool(context, options(), move |ctx| {
            Box::pin(async move {
                let started = Instant::now();
                tokio::select! {
                    () = ctx.cancelled() => Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(duration) => Ok(text_result(
                        format!(
                            "slow_compute `{label}` done after {} ms",
                            started.elapsed().as_millis()
                        ),
                        false,
                    )),
                }
            })
        })
        .await
}

async fn failing_job(
    tasks: &TaskManager<Store>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if !declares_tasks(context) {
        return Err(tasks_required());
    }
    tasks
        .call_tool(context, options(), |ctx| {
            Box::pin(async move {
                tokio::select! {
                    () = ctx.cancelled() => Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(Duration::from_secs(1)) => {
                        Ok(text_result("failing_job failed after about a second", true))
                    }
                }
            })
        })
        .await
}

async fn confirm_delete(
    tasks: &TaskManager<Store>,
    arguments: &rmcp::model::JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let filename = arguments
        .get("filename")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("`confirm_delete` needs a string `filename`"))?
        .to_owned();
    if !declares_tasks(context) {
        return Err(tasks_required());
    }
    let request = input_request(form(&format!("Delete {filename}?"), "confirm", "boolean"))?;
    tasks
        .call_tool(context, options(), move |ctx| {
            Box::pin(async move {
                ctx.set_status_message(format!(
                    "waiting for the user to confirm deleting {filename}"
                ));
                let answer = tokio::select! {
                    answer = ctx.request_input("confirm", request) => answer?,
                    () = tokio::time::sleep(ANSWER_TIMEOUT) => {
                        return Err(TaskExit::Error(ErrorData::internal_error(
                            "the user did not answer in time",
                            None,
                        )));
                    }
                };
                let confirmed = accepted(&answer)
                    .and_then(|content| content.get("confirm"))
                    .and_then(Value::as_bool)
                    == Some(true);
                let text = if confirmed {
                    format!(
                        "the user confirmed deleting {filename} (nothing was deleted: a fixture)"
                    )
                } else {
                    format!("the user kept {filename}")
                };
                Ok(text_result(text, false))
            })
        })
        .await
}

async fn multi_input(
    tasks: &TaskManager<Store>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if !declares_tasks(context) {
        return Err(tasks_required());
    }
    let name = input_request(form("What is your name?", "name", "string"))?;
    let confirm = input_request(form("Do you confirm?", "confirm", "boolean"))?;
    tasks
        .call_tool(context, options(), move |ctx| {
            Box::pin(async move {
                let answers = ctx
                    .request_inputs([("name".to_owned(), name), ("confirm".to_owned(), confirm)])
                    .await?;
                let content = |key: &str| answers.get(key).and_then(accepted).cloned();
                let name = content("name")
                    .and_then(|content| {
                        content
                            .get("name")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
                let confirmed = content("confirm")
                    .and_then(|content| content.get("confirm").and_then(Value::as_bool))
                    .unwrap_or(false);
                Ok(text_result(
                    format!("name: {name}, confirmed: {confirmed}"),
                    false,
                ))
            })
        })
        .await
}

/// SEP-2322 then SEP-2663: the first call answers `input_required` with the question;
/// the retry carrying the answer becomes a task that greets the name.
fn test_tool_with_task(
    tasks: &TaskManager<Store>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if !declares_tasks(context) {
        return Err(tasks_required());
    }
    let declares_elicitation = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.elicitation.is_some());
    if !declares_elicitation {
        let mut required = ClientCapabilities::default();
        required.elicitation = Some(ElicitationCapability::new());
        return Err(ErrorData::missing_required_client_capability(required));
    }
    let wire = form("What is your name?", "name", "string");
    let Some(answer) = request
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get("user_name"))
    else {
        let mut requests = InputRequests::new();
        requests.insert("user_name".to_owned(), input_request(wire)?);
        return Ok(CallToolResponse::InputRequired(
            InputRequiredResult::from_input_requests(requests),
        ));
    };
    let asked: mcp_tasks::InputRequest = serde_json::from_value(wire)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    mcp_tasks_servers::tools::check_answer(&asked, answer).map_err(|why| {
        invalid(format!(
            "the answer to `user_name` does not fit its request: {why}"
        ))
    })?;
    let name = accepted(answer)
        .and_then(|content| content.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("stranger")
        .to_owned();
    let owner = tasks.owner(context);
    let created = tasks.spawn(
        &owner,
        &context.id,
        options(),
        move |_ctx: TaskContext<Store>| {
            Box::pin(async move {
                Ok::<CallToolResult, TaskExit>(text_result(format!("Hello, {name}!"), false))
            })
        },
    )?;
    Ok(CallToolResponse::Task(created))
}
