//! The fixtures of the suite's `input-required-result-*` scenarios (SEP-2322, 2026-07-28):
//! tools, and one prompt, that ask for input through an `InputRequiredResult` and answer
//! once the retry brings the answers back. Never tasks. Each asks with the context
//! ([`Context::ask`]), which reads the answers of the rounds so far, checks each against
//! its question (a mismatch is `-32602`), asks what is missing again remembering the rest,
//! and refuses (`-32021`) a question whose capability the client did not declare.
//!
//! | fixture | asks (keys) | answers |
//! |---|---|---|
//! | `test_input_required_result_elicitation` | `user_name` (elicitation) | `Hello, {name}!` |
//! | `test_input_required_result_sampling` | `capital_question` (sampling) | the sampled text |
//! | `test_input_required_result_list_roots` | `client_roots` (roots) | the roots' URIs |
//! | `test_input_required_result_request_state` | `confirm` (elicitation), always in round 0 | `state-ok`, once the state came back verified |
//! | `test_input_required_result_tampered_state` | the same | the same; a changed state is `-32602` |
//! | `test_input_required_result_multiple_inputs` | `user_name`, `greeting`, `client_roots` at once | all three |
//! | `test_input_required_result_multi_round` | `step1` (name), then `step2` (colour) | both, the name remembered in the state |
//! | `test_input_required_result_capabilities` | only what the client declared (`preference` by elicitation, `suggestion` by sampling) | what was answered |
//! | prompt `test_input_required_result_prompt` | `user_context` (elicitation) | a `GetPromptResult` using it |
//!
//! The 2025-11-25 wire has no input rounds: there each tool answers a tool error saying so
//! (the prompt asks its client with `elicitation/create`, as the context does at once).

use std::future::Future;

use mcp_tasks_server::answers::form;
use mcp_tasks_server::context::capability_required;
use mcp_tasks_server::mcp_tasks::{InputRequest, InputRequests};
use mcp_tasks_server::{Context, Exit, Generation, NoArguments, ServerBuilder, Tool, ToolResult};
use serde_json::{Value, json};

use self::forms::{Color, Confirmation, Name, PromptContext};
use crate::read::{accepted, given, roots, sampled};

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

/// What each tool asks, for its description, in [`NAMES`] order.
const ASKS: [&str; 8] = [
    "the user's name (elicitation)",
    "a model (sampling)",
    "the client's roots (roots/list)",
    "a confirmation, with a requestState it checks",
    "a name, a greeting and the roots at once",
    "a name, then a colour, in two rounds",
    "a confirmation, refusing a requestState that was changed",
    "only what the client declared it can answer",
];

/// The tools, in [`NAMES`] order.
#[must_use]
pub fn tools() -> Vec<Tool> {
    vec![
        fixture(0, elicitation),
        fixture(1, sampling),
        fixture(2, list_roots),
        fixture(3, request_state),
        fixture(4, multiple_inputs),
        fixture(5, multi_round),
        fixture(6, request_state),
        fixture(7, capabilities),
    ]
}

/// The tool [`NAMES`]`[at]`, never a task, taking no arguments: `asks` answers it on
/// 2026-07-28; on 2025-11-25, which has no input rounds, it is a tool error saying so.
fn fixture<F, Fut>(at: usize, asks: F) -> Tool
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, Exit>> + Send + 'static,
{
    Tool::new(NAMES[at])
        .description(format!(
            "Asks {} through an InputRequiredResult, then answers (conformance fixture).",
            ASKS[at]
        ))
        .run(move |ctx: Context, _: NoArguments| {
            let asking = match ctx.generation() {
                Generation::Extension => Ok(asks(ctx)),
                Generation::V2025 => Err(ToolResult::error(format!(
                    "`{}` asks through a 2026-07-28 InputRequiredResult; this request had no \
                     such round",
                    NAMES[at]
                ))),
            };
            async move {
                match asking {
                    Ok(asking) => asking.await.map(ToolResult::text),
                    Err(no_round) => Ok(no_round),
                }
            }
        })
}

/// The forms the fixtures ask to fill: only their schemas are used (the answers are read
/// as JSON, a decline too).
#[allow(
    dead_code,
    reason = "the fields are never read as such: only the schemas are"
)]
mod forms {
    use schemars::JsonSchema;

    #[derive(JsonSchema)]
    pub(super) struct Name {
        name: String,
    }

    #[derive(JsonSchema)]
    pub(super) struct Confirmation {
        ok: bool,
    }

    #[derive(JsonSchema)]
    pub(super) struct Color {
        color: String,
    }

    #[derive(JsonSchema)]
    pub(super) struct PromptContext {
        context: String,
    }
}

/// A `sampling/createMessage` of one user message.
fn sampling_request(text: &str, max_tokens: u32) -> InputRequest {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    });
    InputRequest::sampling(params.as_object().cloned().unwrap_or_default())
}

async fn elicitation(ctx: Context) -> Result<String, Exit> {
    let answer = ctx
        .ask("user_name", form::<Name>("What is your name?"))
        .await?;
    Ok(format!("Hello, {}!", given(&answer, "name")))
}

async fn sampling(ctx: Context) -> Result<String, Exit> {
    let question = sampling_request("What is the capital of France?", 100);
    let answer = ctx.ask("capital_question", question).await?;
    Ok(format!("The model answered: {}", sampled(&answer)))
}

async fn list_roots(ctx: Context) -> Result<String, Exit> {
    let answer = ctx.ask("client_roots", InputRequest::roots()).await?;
    Ok(format!("roots: {}", roots(&answer)))
}

/// Only a state this server issued (and the client sent back unchanged) proves the
/// question was asked: round 0 asks, whatever answers it carries; a later round reads the
/// answer (a changed state never gets here: the server refuses it, `-32602`).
async fn request_state(ctx: Context) -> Result<String, Exit> {
    let question = form::<Confirmation>("Please confirm");
    if ctx.input_round() == Some(0) {
        return Err(Exit::input_required(
            InputRequests::new().with("confirm", question),
        ));
    }
    let answer = ctx.ask("confirm", question).await?;
    let ok = accepted(&answer)
        .and_then(|content| content.get("ok"))
        .cloned()
        .unwrap_or(Value::Bool(false));
    Ok(format!("state-ok: confirmed {ok}"))
}

async fn multiple_inputs(ctx: Context) -> Result<String, Exit> {
    let answers = ctx
        .ask_all(
            InputRequests::new()
                .with("user_name", form::<Name>("What is your name?"))
                .with("greeting", sampling_request("Generate a greeting", 50))
                .with("client_roots", InputRequest::roots()),
        )
        .await?;
    let answer = |key: &str| answers.get(key).cloned().unwrap_or_default();
    Ok(format!(
        "Hello, {}! The model said: {}; roots: {}",
        given(&answer("user_name"), "name"),
        sampled(&answer("greeting")),
        roots(&answer("client_roots"))
    ))
}

/// Two rounds: the name, then (the name remembered in the state) the colour.
async fn multi_round(ctx: Context) -> Result<String, Exit> {
    let step1 = ctx
        .ask("step1", form::<Name>("Step 1: What is your name?"))
        .await?;
    let step2 = ctx
        .ask(
            "step2",
            form::<Color>("Step 2: What is your favorite color?"),
        )
        .await?;
    Ok(format!(
        "{}'s favorite color is {}",
        given(&step1, "name"),
        given(&step2, "color")
    ))
}

/// Asks only what the client declared it can answer; `-32021` when it can answer nothing.
async fn capabilities(ctx: Context) -> Result<String, Exit> {
    let mut questions = InputRequests::new();
    if ctx.client_declares("elicitation") {
        questions = questions.with("preference", form::<Name>("What should we call you?"));
    }
    if ctx.client_declares("sampling") {
        questions = questions.with("suggestion", sampling_request("Suggest a name", 20));
    }
    if questions.is_empty() {
        return Err(Exit::error(capability_required(
            "sampling",
            "`test_input_required_result_capabilities` asks through `elicitation/create` or \
             `sampling/createMessage`: declare `elicitation` or `sampling`",
        )));
    }
    let answers = ctx.ask_all(questions).await?;
    let keys: Vec<&str> = answers.keys().map(String::as_str).collect();
    Ok(format!("answered: {}", keys.join(", ")))
}

/// Serves [`PROMPT`] (`prompts/list`, `prompts/get`) and declares `prompts`.
pub fn register_prompt(builder: ServerBuilder) -> ServerBuilder {
    builder
        .capability("prompts", json!({}))
        .method("prompts/list", |_ctx, _params| async {
            Ok(json!({"prompts": [{
                "name": PROMPT,
                "description": "Asks what context to use through an InputRequiredResult, then \
                                gives a prompt using it (conformance fixture)."
            }]}))
        })
        .method("prompts/get", get_prompt)
}

/// `prompts/get` of [`PROMPT`]: asks the context to use under `user_context` (in an input
/// round on 2026-07-28), then gives a prompt using it. Any other name is `-32602`.
async fn get_prompt(ctx: Context, params: Option<Value>) -> Result<Value, Exit> {
    let name = params
        .as_ref()
        .and_then(|params| params.get("name"))
        .and_then(Value::as_str);
    if name != Some(PROMPT) {
        let name: String = name.unwrap_or_default().chars().take(80).collect();
        return Err(Exit::invalid_params(format!("unknown prompt `{name}`")));
    }
    let answer = ctx
        .ask(
            "user_context",
            form::<PromptContext>("What context should the prompt use?"),
        )
        .await?;
    Ok(json!({
        "description": "A prompt built from the context the user gave",
        "messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!("Use this context: {}", given(&answer, "context"))}
        }]
    }))
}
