//! The fixture tools of the official conformance suite's `tasks-*` scenarios
//! (`mcp_tasks_servers::fixtures`: their list, argument parsing and the SEP-2322 round of
//! `test_tool_with_task` are reused from there), run here as async operations with a
//! `TaskContext`. `interop/conformance/README.md` gives each one's contract.

use std::time::Duration;

use mcp_tasks_rmcp::{TaskContext, TaskExit, text_result};
use mcp_tasks_servers::core_fixtures::STEP_PAUSE;
use mcp_tasks_servers::fixtures::{Fixture, Gathered};
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, InputRequest};
use serde_json::{Value, json};

use super::Store;

/// How long `failing_job` works before it reports its error.
const FAILING_JOB_DELAY: Duration = Duration::from_secs(1);

/// How long a fixture waits for the user's answers.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// A form-mode `elicitation/create` asking `message`, with one required field.
fn form(message: &str, field: &str, kind: &str) -> Result<InputRequest, TaskExit> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
        }
    }))
    .map_err(|err| TaskExit::Error(ErrorData::internal_error(err.to_string(), None)))
}

fn accepted(answer: &Value) -> Option<&Value> {
    (answer.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| answer.get("content"))
        .flatten()
}

fn confirmed(answer: &Value) -> bool {
    accepted(answer)
        .and_then(|content| content.get("confirm"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Sleeps `duration`, or ends `cancelled` when cancellation is requested first.
async fn pause(ctx: Option<&TaskContext<Store>>, duration: Duration) -> Result<(), TaskExit> {
    let sleep = tokio::time::sleep(duration);
    match ctx {
        Some(ctx) => tokio::select! {
            () = ctx.cancelled() => Err(TaskExit::Cancelled),
            () = sleep => Ok(()),
        },
        None => {
            sleep.await;
            Ok(())
        }
    }
}

/// Asks, waiting at most [`ANSWER_TIMEOUT`].
async fn ask(
    ctx: &TaskContext<Store>,
    requests: Vec<(String, InputRequest)>,
) -> Result<std::collections::BTreeMap<String, Value>, TaskExit> {
    tokio::select! {
        answers = ctx.request_inputs(requests) => answers,
        () = tokio::time::sleep(ANSWER_TIMEOUT) => Err(TaskExit::Error(
            ErrorData::internal_error("the user did not answer in time", None),
        )),
    }
}

/// A fixture's operation (`ctx` is `None` only for `greet` and the diagnostic fixtures,
/// which never are tasks).
pub async fn run(
    fixture: Fixture,
    ctx: Option<TaskContext<Store>>,
) -> Result<CallToolResult, TaskExit> {
    match fixture {
        Fixture::Greet(name) => Ok(text_result(format!("Hello, {name}!"), false)),
        Fixture::SlowCompute { ms, label } => {
            pause(ctx.as_ref(), Duration::from_millis(ms)).await?;
            let text = match label {
                Some(label) => format!("slow_compute `{label}` done after {ms} ms"),
                None => format!("slow_compute done after {ms} ms"),
            };
            Ok(text_result(text, false))
        }
        Fixture::FailingJob => {
            pause(ctx.as_ref(), FAILING_JOB_DELAY).await?;
            Ok(text_result("failing_job always fails", true))
        }
        Fixture::ProtocolErrorJob => Err(TaskExit::Error(ErrorData::internal_error(
            "protocol_error_job always fails with a protocol error",
            None,
        ))),
        Fixture::ConfirmDelete(filename) => {
            let ctx = needs(ctx)?;
            ctx.set_status_message(format!(
                "waiting for the user to confirm deleting {filename}"
            ));
            let question = form(&format!("Delete {filename}?"), "confirm", "boolean")?;
            let answers = ask(&ctx, vec![("confirm".into(), question)]).await?;
            let text = if answers.get("confirm").is_some_and(confirmed) {
                format!("the user confirmed deleting {filename} (nothing was deleted: a fixture)")
            } else {
                format!("the user kept {filename}")
            };
            Ok(text_result(text, false))
        }
        Fixture::MultiInput => {
            let ctx = needs(ctx)?;
            let answers = ask(
                &ctx,
                vec![
                    ("name".into(), form("What is your name?", "name", "string")?),
                    (
                        "confirm".into(),
                        form("Do you confirm?", "confirm", "boolean")?,
                    ),
                ],
            )
            .await?;
            let name = answers
                .get("name")
                .and_then(accepted)
                .and_then(|content| content.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let confirmed = answers.get("confirm").is_some_and(confirmed);
            Ok(text_result(
                format!("name: {name}, confirmed: {confirmed}"),
                false,
            ))
        }
        Fixture::TestToolWithTask(gathered) => {
            let name = match gathered {
                Gathered::Name(name) => Some(name),
                Gathered::Refused => None,
                // No SEP-2322 round happened: the task asks itself.
                Gathered::Nothing => {
                    let ctx = needs(ctx)?;
                    let question = form("What is your name?", "name", "string")?;
                    let answers = ask(&ctx, vec![("user_name".into(), question)]).await?;
                    answers
                        .get("user_name")
                        .and_then(accepted)
                        .and_then(|content| content.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                }
            };
            Ok(text_result(
                match name {
                    Some(name) => format!("Hello, {name}!"),
                    None => "the user gave no name".to_owned(),
                },
                false,
            ))
        }
        // Answered at once, never tasks: the shared result as rmcp's type.
        Fixture::Diagnostic(diagnostic) => Ok(mcp_tasks_rmcp::tool_result(diagnostic.run())?),
        // Content blocks at once; as a task (`test_tool_with_progress`,
        // `test_tool_with_logging`) the same steps, silently: no progress or log
        // notifications on a task. The inline calls that talk run in `talk`.
        Fixture::Core(core) => {
            let pauses = u32::try_from(core.steps().len().saturating_sub(1)).unwrap_or(0);
            pause(ctx.as_ref(), STEP_PAUSE * pauses).await?;
            let result = match core.question() {
                Some((method, _)) => core.answered(Err(mcp_tasks::JsonRpcError::new(
                    mcp_tasks::jsonrpc::INTERNAL_ERROR,
                    format!("`{method}` cannot reach the client from here"),
                ))),
                None => core.result().map_err(super::error)?,
            };
            Ok(mcp_tasks_rmcp::tool_result(result)?)
        }
    }
}

/// The context of a fixture that only runs as a task.
fn needs(ctx: Option<TaskContext<Store>>) -> Result<TaskContext<Store>, TaskExit> {
    ctx.ok_or_else(|| {
        TaskExit::Error(ErrorData::missing_required_client_capability(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
        ))
    })
}
