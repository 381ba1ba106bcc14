//! The five example tools, written with the server library's public API only: `sleep` and
//! `confirm` (redeliverable tasks that checkpoint), `fail`, `crash` and `echo`; and two
//! test-only tools, `abort` and `steps`, served when [`TEST_TOOLS_ENV`] is `1`.

use std::io::Write;
use std::time::Duration;

use mcp_tasks_server::mcp_tasks::{JsonRpcError, jsonrpc};
use mcp_tasks_server::{Context, Elicited, Exit, NoArguments, TaskSupport, Tool, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the example tells a client it is about.
pub const INSTRUCTIONS: &str = "An example of MCP tasks. Tools: sleep {ms} (task optional: \
     sleeps, then answers), fail (task optional: ends with a tool error), crash (task \
     optional: ends with a JSON-RPC error), confirm {question} (asks the user and reports the \
     answer: a task, or on 2026-07-28 without the tasks extension an InputRequiredResult \
     first), echo {text} (never a task).";

/// How many attempts a redeliverable example tool's task may take.
pub const ATTEMPTS: u32 = 3;

/// How often `sleep` and `steps` save their progress at most: a re-run repeats at most
/// this much of the work.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The key under which `confirm` asks, in a task and in an input round alike.
pub const CONFIRM_KEY: &str = "confirm";

/// The environment variable that serves the test-only tools too (`1`): `abort {}`, which
/// aborts the process running it (a poison task), and `steps {n, ms?}`, which runs `n`
/// steps of `ms` milliseconds, checkpointing after each. Both are redeliverable; never set
/// it in production.
pub const TEST_TOOLS_ENV: &str = "MCP_TASKS_TEST_TOOLS";

/// The file `steps` appends one line to as each step starts (`<task id> <step> <attempt>`),
/// if set: how a test sees which steps ran twice.
pub const STEPS_FILE_ENV: &str = "MCP_TASKS_TEST_STEPS_FILE";

/// The example tools: `sleep`, `fail`, `crash`, `confirm`, `echo`.
#[must_use]
pub fn examples() -> Vec<Tool> {
    vec![
        Tool::new("sleep")
            .description("Sleeps for `ms` milliseconds, then answers.")
            .task_support(TaskSupport::Optional)
            .redelivery(ATTEMPTS)
            .run(sleep),
        Tool::new("fail")
            .description("Always ends with a tool error (isError: true).")
            .task_support(TaskSupport::Optional)
            .run(fail),
        Tool::new("crash")
            .description("Always fails with a JSON-RPC error (not a tool error).")
            .task_support(TaskSupport::Optional)
            .run(crash),
        Tool::new("confirm")
            .description(
                "Asks the user a question (elicitation) and reports the answer. Runs only as a task.",
            )
            .task_support(TaskSupport::Required)
            .redelivery(ATTEMPTS)
            .asks_for_input()
            .rounds_without_task()
            .run(confirm),
        Tool::new("echo")
            .description("Answers with its text at once. Never a task.")
            .run(echo),
    ]
}

/// The arguments of `sleep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Sleep {
    /// How long to sleep, in milliseconds.
    pub ms: u64,
}

/// What `sleep` saves: how long it has slept.
#[derive(Debug, Serialize, Deserialize)]
struct Slept {
    elapsed_ms: u64,
}

/// Sleeps `ms` without holding a thread, saving the time slept about every second: a re-run
/// on another instance sleeps only the rest. A cancel ends it at once.
pub async fn sleep(ctx: Context, Sleep { ms }: Sleep) -> Result<String, Exit> {
    let step = u64::try_from(CHECKPOINT_EVERY.as_millis()).unwrap_or(u64::MAX);
    let mut slept = ctx
        .checkpoint::<Slept>()?
        .map_or(0, |s| s.elapsed_ms)
        .min(ms);
    while slept < ms {
        let next = (ms - slept).min(step);
        ctx.sleep(Duration::from_millis(next)).await?;
        slept += next;
        if slept < ms {
            ctx.save_checkpoint(&Slept { elapsed_ms: slept })?;
        }
    }
    Ok(format!("slept {ms} ms"))
}

/// The arguments of `confirm`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Confirm {
    /// The question to ask the user.
    pub question: String,
}

/// The form `confirm` asks the user to fill.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Answer {
    /// The user's answer.
    pub answer: String,
}

/// Asks the user `question` and reports the answer. The answer is saved as soon as it is
/// read: a re-run on another instance reports it instead of asking again.
pub async fn confirm(ctx: Context, Confirm { question }: Confirm) -> Result<String, Exit> {
    let answer = match ctx.checkpoint::<Elicited<Answer>>()? {
        Some(answer) => answer,
        None => {
            let answer = ctx.elicit::<Answer>(CONFIRM_KEY, question).await?;
            ctx.save_checkpoint(&answer)?;
            answer
        }
    };
    Ok(match answer {
        Elicited::Accept(Answer { answer }) => format!("the user answered: {answer}"),
        Elicited::Decline => "the user declined".to_owned(),
        Elicited::Cancel => "the user cancelled".to_owned(),
    })
}

/// `fail {}`: a tool error.
async fn fail(_ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    Ok(ToolResult::error("the fail tool always fails"))
}

/// `crash {}`: a JSON-RPC error.
async fn crash(_ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    Err(Exit::error(JsonRpcError::new(
        jsonrpc::INTERNAL_ERROR,
        "the crash tool always crashes",
    )))
}

/// The arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Echo {
    /// What to answer.
    pub text: String,
}

/// `echo {text}`: the text, at once.
async fn echo(_ctx: Context, Echo { text }: Echo) -> Result<String, Exit> {
    Ok(text)
}

/// Whether the test-only tools are asked for ([`TEST_TOOLS_ENV`]).
#[must_use]
pub fn test_tools_wanted() -> bool {
    std::env::var(TEST_TOOLS_ENV).is_ok_and(|value| value.trim() == "1")
}

/// The test-only tools: `abort` and `steps`, both redeliverable.
#[must_use]
pub fn test_tools() -> Vec<Tool> {
    vec![
        Tool::new("abort")
            .description(
                "Aborts the process running it a moment after it starts, once the task's \
                 creation is answered (test only: a poison task, redeliverable).",
            )
            .task_support(TaskSupport::Optional)
            .redelivery(ATTEMPTS)
            .run_blocking(|_ctx: Context, _: NoArguments| -> Result<String, Exit> {
                // The handler starts beside the answer to the call: without the pause, a
                // fast store let the process die before the answer was written, and the
                // client created the poison again elsewhere.
                std::thread::sleep(std::time::Duration::from_millis(200));
                std::process::abort()
            }),
        Tool::new("steps")
            .description(
                "Runs `n` steps of `ms` milliseconds (default 200), checkpointing after each \
                 (test only, redeliverable).",
            )
            .task_support(TaskSupport::Optional)
            .redelivery(ATTEMPTS)
            .run_blocking(steps),
    ]
}

/// The arguments of `steps`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Steps {
    /// How many steps (at most 1000).
    #[serde(deserialize_with = "at_most::<1000, _>")]
    #[schemars(range(max = 1000))]
    pub n: u64,
    /// How long each step takes, in milliseconds (default 200, at most 60000).
    #[serde(default = "default_step_ms", deserialize_with = "at_most::<60000, _>")]
    #[schemars(range(max = 60000))]
    pub ms: u64,
}

fn default_step_ms() -> u64 {
    200
}

/// A whole number of at most `MAX`, refused (naming the field) otherwise.
fn at_most<'de, const MAX: u64, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<u64, D::Error> {
    let value = u64::deserialize(deserializer)?;
    if value > MAX {
        return Err(serde::de::Error::custom(format!(
            "{value} is more than {MAX}"
        )));
    }
    Ok(value)
}

/// What `steps` saves: how many steps are done.
#[derive(Debug, Serialize, Deserialize)]
struct Done {
    done: u64,
}

/// `steps {n, ms}`: `n` blocking steps of `ms` each, the number done saved after each, so a
/// re-run starts at the first step not done. Each step's start is appended to
/// [`STEPS_FILE_ENV`]'s file, if set.
fn steps(ctx: Context, Steps { n, ms }: Steps) -> Result<String, Exit> {
    let first = ctx.checkpoint::<Done>()?.map_or(0, |done| done.done).min(n);
    let record = std::env::var_os(STEPS_FILE_ENV);
    let task = ctx.task_id().map(ToString::to_string).unwrap_or_default();
    for step in first..n {
        if let Some(path) = &record {
            let line = format!("{task} {step} {}\n", ctx.attempt());
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(line.as_bytes()));
            if let Err(err) = written {
                eprintln!("task {task}: cannot record step {step}: {err}");
            }
        }
        std::thread::sleep(Duration::from_millis(ms));
        ctx.save_checkpoint(&Done { done: step + 1 })?;
    }
    Ok(format!("ran {n} steps"))
}
