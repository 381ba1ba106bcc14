//! The fixture tools the suite expects of any tools server (its `tools-call-*`,
//! `elicitation-*` and `json-schema-2020-12` scenarios), listed after [`tasks`](crate::tasks).
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
//! Progress and log messages go only to a call running at once (the context sends none
//! from a task: the tasks extension has no progress or log notifications on a task, and
//! 2025-11-25 makes them optional), so a task of `test_tool_with_progress` or
//! `test_tool_with_logging` runs the same steps silently and completes with the same
//! result. The asking tools send their request as it is (`Context::request`, 2025-11-25):
//! on 2026-07-28, which has no requests from server to client, and to a client that did not
//! declare `elicitation`, they answer a tool error saying what the client did not answer.

use std::time::Duration;

use mcp_tasks_server::mcp_tasks::JsonObject;
use mcp_tasks_server::peer::LogLevel;
use mcp_tasks_server::{Context, Exit, NoArguments, TaskSupport, Tool, ToolResult};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::read;

/// The tools' names, in the order `tools/list` shows them.
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
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// What `test_tool_with_logging` logs, one message a step.
const LOGS: [&str; 3] = [
    "Tool execution started",
    "Tool processing data",
    "Tool execution completed",
];

/// The tools, in [`NAMES`] order.
#[must_use]
pub fn tools() -> Vec<Tool> {
    let image = || json!({"type": "image", "data": PNG, "mimeType": "image/png"});
    vec![
        content(
            "test_image_content",
            "Answers one PNG image (conformance fixture).",
            vec![image()],
        ),
        content(
            "test_audio_content",
            "Answers one WAV audio clip (conformance fixture).",
            vec![json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"})],
        ),
        content(
            "test_embedded_resource",
            "Answers one embedded text resource (conformance fixture).",
            vec![json!({"type": "resource", "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content."
            }})],
        ),
        content(
            "test_multiple_content_types",
            "Answers a text, an image and an embedded resource (conformance fixture).",
            vec![
                json!({"type": "text", "text": "Multiple content types test:"}),
                image(),
                json!({"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": json!({"test": "data", "value": 123}).to_string()
                }}),
            ],
        ),
        Tool::new("test_error_handling")
            .description("Always answers a tool error, isError: true (conformance fixture).")
            .run(|_ctx: Context, _: NoArguments| async {
                Ok::<_, Exit>(ToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            }),
        Tool::new("test_tool_with_progress")
            .description(
                "Reports progress 0, 50 and 100 of 100 about 50 ms apart when the request has \
                 a progress token; as a task it reports none (conformance fixture).",
            )
            .task_support(TaskSupport::Optional)
            .run(with_progress),
        Tool::new("test_tool_with_logging")
            .description(
                "Sends three info log messages about 50 ms apart; as a task it sends none \
                 (conformance fixture).",
            )
            .task_support(TaskSupport::Optional)
            .run(with_logging),
        Tool::new("test_sampling")
            .description(
                "Asks the client to sample an answer to `prompt` (sampling/createMessage) and \
                 reports it (conformance fixture).",
            )
            .run(sampling),
        Tool::new("test_elicitation")
            .description(
                "Asks the user for a username and an email (elicitation/create) and reports \
                 the answer (conformance fixture).",
            )
            .run(elicitation),
        Tool::new("test_elicitation_sep1034_defaults")
            .description(
                "Asks the user with a default for every primitive type (SEP-1034) and reports \
                 the answer (conformance fixture).",
            )
            .run(elicitation_defaults),
        Tool::new("test_elicitation_sep1330_enums")
            .description(
                "Asks the user with the five enum shapes of SEP-1330 and reports the answer \
                 (conformance fixture).",
            )
            .run(elicitation_enums),
        Tool::new("json_schema_2020_12_tool")
            .description(
                "Tool with JSON Schema 2020-12 features; echoes its arguments (conformance \
                 fixture).",
            )
            .input_schema(json_schema_2020_12())
            .run(|_ctx: Context, arguments: JsonObject| async move {
                Ok::<_, Exit>(format!(
                    "json_schema_2020_12_tool received {}",
                    Value::Object(arguments)
                ))
            }),
    ]
}

/// A tool that answers `blocks` at once.
fn content(name: &str, description: &str, blocks: Vec<Value>) -> Tool {
    Tool::new(name)
        .description(description)
        .run(move |_ctx: Context, _: NoArguments| {
            let result = ToolResult::content(blocks.clone());
            async move { Ok::<_, Exit>(result) }
        })
}

/// The input schema of `json_schema_2020_12_tool`, as the suite's `json-schema-2020-12`
/// expects it back from `tools/list` (more than a derived schema says: `$schema`, `$defs`
/// with an `$anchor`, `if`/`then`/`else`).
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

/// Progress 0, 50 and 100 of 100, [`STEP_PAUSE`] apart (to a call at once with a progress
/// token only).
async fn with_progress(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    for (step, done) in [0, 50, 100].into_iter().enumerate() {
        if step > 0 {
            ctx.sleep(STEP_PAUSE).await?;
        }
        ctx.progress(done, Some(100), None);
    }
    Ok("test_tool_with_progress done".to_owned())
}

/// Three `info` messages, [`STEP_PAUSE`] apart (to a call at once whose client wants them).
async fn with_logging(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    for (step, text) in LOGS.into_iter().enumerate() {
        if step > 0 {
            ctx.sleep(STEP_PAUSE).await?;
        }
        ctx.log(LogLevel::Info, LOGGER, json!(text));
    }
    Ok("test_tool_with_logging done".to_owned())
}

/// The arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
struct Sampling {
    /// The prompt to send to the LLM
    prompt: String,
}

/// Asks the client to sample an answer to the prompt.
async fn sampling(ctx: Context, Sampling { prompt }: Sampling) -> Result<ToolResult, Exit> {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    });
    Ok(match asked(&ctx, "sampling/createMessage", params).await {
        Ok(answer) => ToolResult::text(format!("LLM response: {}", read::sampled(&answer))),
        Err(no_answer) => no_answer,
    })
}

/// The arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
struct Elicitation {
    /// The message to show the user
    message: String,
}

async fn elicitation(
    ctx: Context,
    Elicitation { message }: Elicitation,
) -> Result<ToolResult, Exit> {
    let properties = json!({
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}
    });
    let params = elicit(&message, properties, &["username", "email"]);
    Ok(report(&ctx, params, "User response").await)
}

async fn elicitation_defaults(ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    let properties = json!({
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
    });
    let message = "Please review and update the form fields with defaults";
    Ok(report(
        &ctx,
        elicit(message, properties, &[]),
        "Elicitation completed",
    )
    .await)
}

async fn elicitation_enums(ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    let titled = |titles: [&str; 3]| -> Vec<Value> {
        titles
            .iter()
            .enumerate()
            .map(|(at, title)| json!({"const": format!("value{}", at + 1), "title": title}))
            .collect()
    };
    let properties = json!({
        "untitledSingle": {
            "type": "string",
            "description": "Untitled single-select",
            "enum": ["option1", "option2", "option3"]
        },
        "titledSingle": {
            "type": "string",
            "description": "Titled single-select",
            "oneOf": titled(["First Option", "Second Option", "Third Option"])
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
            "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])}
        }
    });
    let message = "Please select options from the enum fields";
    Ok(report(
        &ctx,
        elicit(message, properties, &[]),
        "Elicitation completed",
    )
    .await)
}

/// The params of a form-mode `elicitation/create`.
fn elicit(message: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}
    })
}

/// Asks `elicitation/create` with `params` and reports the action and content the client
/// answered after `what`.
async fn report(ctx: &Context, params: Value, what: &str) -> ToolResult {
    let answer = match asked(ctx, "elicitation/create", params).await {
        Ok(answer) => answer,
        Err(no_answer) => return no_answer,
    };
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("(none)");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    ToolResult::text(format!("{what}: action={action}, content={content}"))
}

/// The client's answer to `method`, or the tool error saying why there is none.
async fn asked(ctx: &Context, method: &str, params: Value) -> Result<Value, ToolResult> {
    ctx.request(method, params).await.map_err(|error| {
        ToolResult::error(format!(
            "`{}` got no answer from the client: {} ({})",
            ctx.tool(),
            error.message,
            error.code
        ))
    })
}
