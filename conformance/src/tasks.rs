//! The fixture tools of the suite's `tasks-*` scenarios, and the diagnostic fixtures of its
//! transport and lifecycle scenarios. Listed first, `test_simple_text` leading: the suite's
//! `http-header-validation` calls the first listed tool with `{}` and wants a result.
//!
//! | tool | task support | does |
//! |---|---|---|
//! | `greet {name}` | never a task | `Hello, {name}!` at once |
//! | `slow_compute {seconds, label?}` | optional | sleeps, then answers; a cancel request stops it as `cancelled` |
//! | `failing_job {}` | required | a tool error (`isError: true`) after about a second |
//! | `protocol_error_job {}` | optional | fails with a JSON-RPC error (`-32603`) |
//! | `confirm_delete {filename}` | required | asks one yes/no question (`confirm`) |
//! | `multi_input {}` | required | asks two questions at once (`name`, `confirm`) |
//! | `test_tool_with_task {}` | required | asks `user_name` first (2026-07-28: in a round before its task), then greets from its task |
//!
//! The diagnostic fixtures, never tasks:
//!
//! | tool | does |
//! |---|---|
//! | `test_simple_text {}` | one fixed text ([`SIMPLE_TEXT`]) |
//! | `test_reconnection {}` | one fixed text, after closing the call's event stream (Streamable HTTP, SEP-1699: the client resumes with `Last-Event-ID`) |
//! | `test_missing_capability {}` | needs the client's `sampling` capability: `-32021` naming it when a 2026-07-28 request does not declare it |
//! | `test_streaming_elicitation {}` | asks the user's name in an input round (2026-07-28; never a server→client request), then greets them |
//! | `test_logging_tool {}` | one fixed text; sends no log notification |
//! | `test_custom_header {region}` | echoes `region`, which a client mirrors into `Mcp-Param-Region` (`x-mcp-header`, SEP-2243) |
//!
//! The 2025-11-25 wire has no input rounds: there `test_tool_with_task`'s task asks for
//! the name itself (`elicitation/create`), and `test_streaming_elicitation` answers a tool
//! error saying so.

use std::time::Duration;

use mcp_tasks_server::answers::form;
use mcp_tasks_server::context::capability_required;
use mcp_tasks_server::mcp_tasks::{InputRequests, JsonObject};
use mcp_tasks_server::{
    Context, Elicited, Exit, Generation, NoArguments, TaskSupport, Tool, ToolResult,
};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::read;

/// The tools' names, in the order `tools/list` shows them.
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

/// The tool that closes its call's event stream before it answers (SEP-1699,
/// `server-sse-polling`).
pub const RECONNECTION_TOOL: &str = "test_reconnection";

/// The longest `slow_compute` sleeps (s): an hour, the longest a task of the examples
/// lives.
pub const MAX_SECONDS: f64 = 3600.0;

/// How long `failing_job` works before it reports its error.
const FAILING_JOB_DELAY: Duration = Duration::from_secs(1);

/// The key under which `test_tool_with_task` and `test_streaming_elicitation` ask for the
/// user's name.
pub const USER_NAME: &str = "user_name";

/// The question asked under [`USER_NAME`].
const WHAT_IS_YOUR_NAME: &str = "What is your name?";

/// The tools, in [`NAMES`] order.
#[must_use]
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new("test_simple_text")
            .description("Answers one fixed text at once. Never a task (conformance fixture).")
            .run(|_ctx: Context, _: NoArguments| async { Ok(SIMPLE_TEXT) }),
        Tool::new("greet")
            .description("Answers `Hello, {name}!` at once. Never a task (conformance fixture).")
            .run(
                |_ctx: Context, Greet { name }: Greet| async move { Ok(format!("Hello, {name}!")) },
            ),
        Tool::new("slow_compute")
            .description(
                "Sleeps `seconds` (at most 3600), then answers; a cancel request stops it as \
                 cancelled (conformance fixture).",
            )
            .task_support(TaskSupport::Optional)
            .run(slow_compute),
        Tool::new("failing_job")
            .description(
                "Ends with a tool error (isError: true) after about a second. Runs only as a \
                 task (conformance fixture).",
            )
            .task_support(TaskSupport::Required)
            .run(failing_job),
        Tool::new("protocol_error_job")
            .description(
                "Fails with a JSON-RPC error (-32603), not a tool error (conformance fixture).",
            )
            .task_support(TaskSupport::Optional)
            .run(|_ctx: Context, _: NoArguments| async {
                Err::<String, _>(Exit::internal(
                    "protocol_error_job always fails with a protocol error",
                ))
            }),
        Tool::new("confirm_delete")
            .description(
                "Asks the user to confirm deleting `filename` (one elicitation) and reports the \
                 answer; deletes nothing. Runs only as a task (conformance fixture).",
            )
            .task_support(TaskSupport::Required)
            .asks_for_input()
            .run(confirm_delete),
        Tool::new("multi_input")
            .description(
                "Asks two questions at once (a name and a confirmation) and reports both \
                 answers. Runs only as a task (conformance fixture).",
            )
            .task_support(TaskSupport::Required)
            .asks_for_input()
            .run(multi_input),
        Tool::new("test_tool_with_task")
            .description(
                "Asks the user's name (under 2026-07-28 as an InputRequiredResult before any \
                 task exists), then greets them from a task. Runs only as a task (conformance \
                 fixture).",
            )
            .task_support(TaskSupport::Required)
            .ask_first(|_arguments: &JsonObject| {
                InputRequests::new().with(USER_NAME, form::<UserName>(WHAT_IS_YOUR_NAME))
            })
            .run(test_tool_with_task),
        Tool::new(RECONNECTION_TOOL)
            .description(
                "Answers one fixed text; over HTTP the POST's SSE stream closes before the \
                 result, which the client gets by resuming with Last-Event-ID. Never a task \
                 (conformance fixture).",
            )
            .run(|ctx: Context, _: NoArguments| async move {
                ctx.close_stream();
                Ok("test_reconnection done")
            }),
        Tool::new("test_missing_capability")
            .description(
                "Needs the client's `sampling` capability: refused with -32021 when a request \
                 does not declare it. Never a task (conformance fixture).",
            )
            .run(test_missing_capability),
        Tool::new("test_streaming_elicitation")
            .description(
                "Asks the user's name through an InputRequiredResult (no server-to-client \
                 request), then greets them. Never a task (conformance fixture).",
            )
            .run(test_streaming_elicitation),
        Tool::new("test_logging_tool")
            .description(
                "Answers one fixed text and sends no log notification. Never a task \
                 (conformance fixture).",
            )
            .run(|_ctx: Context, _: NoArguments| async {
                Ok("test_logging_tool done (no log sent)")
            }),
        Tool::new("test_custom_header")
            .description(
                "Echoes `region`, which clients mirror into the Mcp-Param-Region header. Never \
                 a task (conformance fixture).",
            )
            .run(
                |_ctx: Context, CustomHeader { region }: CustomHeader| async move {
                    Ok(format!("region: {region}"))
                },
            ),
    ]
}

/// The arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: String,
}

/// The arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
struct SlowCompute {
    #[serde(deserialize_with = "seconds")]
    #[schemars(range(min = 0, max = 3600))]
    seconds: f64,
    label: Option<String>,
}

/// A number of seconds from 0 to [`MAX_SECONDS`] (fractions allowed).
fn seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let seconds = f64::deserialize(deserializer)?;
    if (0.0..=MAX_SECONDS).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(serde::de::Error::custom(format!(
            "{seconds} is not a number of seconds from 0 to 3600"
        )))
    }
}

/// Sleeps `seconds`, then reports it; a cancel ends it as `cancelled` (the context's sleep).
async fn slow_compute(ctx: Context, arguments: SlowCompute) -> Result<String, Exit> {
    // In range, so the product is finite and below 3.6e6.
    let ms = (arguments.seconds * 1000.0).round() as u64;
    ctx.sleep(Duration::from_millis(ms)).await?;
    Ok(match arguments.label {
        Some(label) => format!("slow_compute `{label}` done after {ms} ms"),
        None => format!("slow_compute done after {ms} ms"),
    })
}

/// Works about a second, then answers a tool error: `failed` on 2025-11-25, `completed`
/// with `isError` on 2026-07-28.
async fn failing_job(ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    ctx.sleep(FAILING_JOB_DELAY).await?;
    Ok(ToolResult::error("failing_job always fails"))
}

/// The arguments of `confirm_delete`.
#[derive(Deserialize, JsonSchema)]
struct ConfirmDelete {
    filename: String,
}

/// A yes/no form.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Yes or no
    confirm: bool,
}

/// Asks one yes/no question, then reports the answer.
async fn confirm_delete(
    ctx: Context,
    ConfirmDelete { filename }: ConfirmDelete,
) -> Result<String, Exit> {
    ctx.set_status("waiting for the user to confirm")?;
    let answer = ctx
        .elicit::<Confirm>("confirm", format!("Delete {filename}?"))
        .await?;
    Ok(match answer {
        Elicited::Accept(Confirm { confirm: true }) => {
            format!("the user confirmed deleting {filename} (nothing was deleted: a fixture)")
        }
        _ => format!("the user kept {filename}"),
    })
}

/// A form asking a name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// Asks two questions at once and reports both answers once both came (one at a time is
/// fine).
async fn multi_input(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    ctx.set_status("waiting for two answers")?;
    let answers = ctx
        .ask_all(
            InputRequests::new()
                .with("name", form::<Name>("Your name?"))
                .with("confirm", form::<Confirm>("Go ahead?")),
        )
        .await?;
    let answer = |key: &str| answers.get(key).cloned().unwrap_or_default();
    let name = read::form::<Name>("name", &answer("name"))?;
    let confirmed = read::form::<Confirm>("confirm", &answer("confirm"))?;
    Ok(format!(
        "name: {}, confirmed: {}",
        name.map_or_else(|| "(not given)".to_owned(), |name| name.name),
        confirmed.is_some_and(|confirmed| confirmed.confirm)
    ))
}

/// The form asking the user's name.
#[derive(Deserialize, JsonSchema)]
struct UserName {
    /// Your name
    name: String,
}

/// Greets the user by the name asked under [`USER_NAME`]: on 2026-07-28 the answer came in
/// a round before the task existed ([`ToolBuilder::ask_first`](mcp_tasks_server::ToolBuilder::ask_first)),
/// and is read here without asking again; on 2025-11-25 the task asks now.
async fn test_tool_with_task(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    ctx.set_status("waiting for the user's name")?;
    greeting(ctx.elicit::<UserName>(USER_NAME, WHAT_IS_YOUR_NAME).await?)
}

fn greeting(answer: Elicited<UserName>) -> Result<String, Exit> {
    Ok(match answer {
        Elicited::Accept(UserName { name }) => format!("Hello, {name}!"),
        Elicited::Decline | Elicited::Cancel => "the user did not give a name".to_owned(),
    })
}

/// Refuses a 2026-07-28 request that does not declare `sampling` (`-32021` naming it).
/// 2025-11-25 tells no capability but `elicitation` per request: not checked there.
async fn test_missing_capability(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    if ctx.generation() == Generation::Extension && !ctx.client_declares("sampling") {
        return Err(Exit::error(capability_required(
            "sampling",
            "`test_missing_capability` needs the `sampling` client capability: declare it in \
             `_meta[\"io.modelcontextprotocol/clientCapabilities\"]`",
        )));
    }
    Ok("test_missing_capability ran: the client declared `sampling`".to_owned())
}

/// Asks the user's name in an input round (2026-07-28), then greets them; never a request
/// from server to client, so 2025-11-25 gets a tool error saying there is no round.
async fn test_streaming_elicitation(ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    if ctx.generation() == Generation::V2025 {
        return Ok(ToolResult::error(
            "test_streaming_elicitation asks through a 2026-07-28 InputRequiredResult; this \
             request had no such round",
        ));
    }
    let answer = ctx.elicit::<UserName>(USER_NAME, WHAT_IS_YOUR_NAME).await?;
    greeting(answer).map(ToolResult::text)
}

/// The arguments of `test_custom_header`: `region` is mirrored into `Mcp-Param-Region`.
#[derive(Deserialize, JsonSchema)]
struct CustomHeader {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}
