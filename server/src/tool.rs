//! A tool is a value: its name and description, its input schema (derived from the
//! arguments' type), whether it runs as a task, whether its task may run again elsewhere,
//! and its handler.
//!
//! ```
//! use mcp_tasks_server::{Context, Exit, TaskSupport, Tool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Whom to greet.
//!     name: String,
//! }
//!
//! async fn greet(_ctx: Context, Greet { name }: Greet) -> Result<String, Exit> {
//!     Ok(format!("Hello, {name}!"))
//! }
//!
//! let tool = Tool::new("greet")
//!     .description("Greets someone")
//!     .task_support(TaskSupport::Optional)
//!     .run(greet);
//! assert_eq!(tool.name(), "greet");
//! assert_eq!(tool.input_schema()["required"][0], "name");
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::{InputRequests, JsonObject};
use serde_json::Value;

pub use mcp_tasks::protocol::TaskSupport;

use crate::handler::{self, Arguments, BlockingHandler, Erased, Handler};
use crate::result::IntoToolResult;

/// The most attempts a redeliverable tool may declare ([`ToolBuilder::redelivery`]).
pub const MAX_ATTEMPTS: u32 = 100;

/// How long a handler waits for the requestor's answers to what it asks
/// ([`Context::ask`](crate::Context::ask)) unless its tool says otherwise.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// What a tool asks before it runs, given its arguments (see [`ToolBuilder::ask_first`]).
pub(crate) type AskFirst = Arc<dyn Fn(&JsonObject) -> InputRequests + Send + Sync>;

/// A tool a server serves: what `tools/list` shows of it, how it runs, and its handler.
/// Built with [`Tool::new`]; cheap to clone (every clone is the same tool).
#[derive(Clone)]
pub struct Tool {
    pub(crate) inner: Arc<ToolInner>,
}

pub(crate) struct ToolInner {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: JsonObject,
    pub(crate) output_schema: Option<JsonObject>,
    pub(crate) annotations: Option<JsonObject>,
    pub(crate) task_support: TaskSupport,
    pub(crate) redelivery: Option<u32>,
    pub(crate) asks_for_input: bool,
    pub(crate) rounds_without_task: bool,
    pub(crate) ask_first: Option<AskFirst>,
    pub(crate) answer_timeout: Duration,
    pub(crate) handler: Arc<dyn Erased>,
}

impl Tool {
    /// Starts a tool named `name`: set what it is and how it runs on the builder, then give
    /// it its handler with [`run`](ToolBuilder::run) (an async function) or
    /// [`run_blocking`](ToolBuilder::run_blocking) (a blocking one).
    ///
    /// The name is how clients call the tool and how every instance of a shared store finds
    /// it to run a redelivered task again: keep it stable across deployments. The server
    /// checks it when it is built ([`ServerBuilder::build`](crate::ServerBuilder::build)):
    /// 1 to 128 characters among ASCII letters, digits, `_`, `-` and `.`, unique within the
    /// server.
    #[allow(
        clippy::new_ret_no_self,
        reason = "a tool is declared on its builder and made by `run`: `Tool::new(name).run(handler)`"
    )]
    pub fn new(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            title: None,
            description: None,
            input_schema: None,
            annotations: None,
            task_support: TaskSupport::Forbidden,
            redelivery: None,
            asks_for_input: false,
            rounds_without_task: false,
            ask_first: None,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
        }
    }

    /// The tool's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether (and how) it runs as a task.
    #[must_use]
    pub fn task_support(&self) -> TaskSupport {
        self.inner.task_support
    }

    /// How many attempts its task may take, if it may run again on another instance when
    /// the one running it stops ([`ToolBuilder::redelivery`]); `None`: it runs once.
    #[must_use]
    pub fn redelivery(&self) -> Option<u32> {
        self.inner.redelivery
    }

    /// Whether it asks the requestor for input while it runs ([`ToolBuilder::asks_for_input`]).
    #[must_use]
    pub fn asks_for_input(&self) -> bool {
        self.inner.asks_for_input
    }

    /// Its input schema, as `tools/list` shows it.
    #[must_use]
    pub fn input_schema(&self) -> &JsonObject {
        &self.inner.input_schema
    }

    /// Its output schema, if it declares one (a handler returning
    /// [`Structured<T>`](crate::Structured) declares `T`'s).
    #[must_use]
    pub fn output_schema(&self) -> Option<&JsonObject> {
        self.inner.output_schema.as_ref()
    }

    /// The tool as `tools/list` shows it: with `execution.taskSupport` for 2025-11-25
    /// (`with_execution`), without for the 2026-07-28 wire, where running as a task is the
    /// server's decision.
    #[must_use]
    pub fn definition(&self, with_execution: bool) -> Value {
        let tool = &self.inner;
        let mut definition = JsonObject::new();
        definition.insert("name".into(), Value::String(tool.name.clone()));
        if let Some(title) = &tool.title {
            definition.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &tool.description {
            definition.insert("description".into(), Value::String(description.clone()));
        }
        definition.insert(
            "inputSchema".into(),
            Value::Object(tool.input_schema.clone()),
        );
        if let Some(output) = &tool.output_schema {
            definition.insert("outputSchema".into(), Value::Object(output.clone()));
        }
        if let Some(annotations) = &tool.annotations {
            definition.insert("annotations".into(), Value::Object(annotations.clone()));
        }
        if with_execution && tool.task_support != TaskSupport::Forbidden {
            let support = match tool.task_support {
                TaskSupport::Required => "required",
                _ => "optional",
            };
            definition.insert(
                "execution".into(),
                serde_json::json!({ "taskSupport": support }),
            );
        }
        Value::Object(definition)
    }

    /// The arguments a 2026-07-28 client mirrors into `Mcp-Param-{Name}` headers (SEP-2243),
    /// read from the `x-mcp-header` annotations of the input schema's properties:
    /// `(argument, Name)` pairs, in schema order.
    #[must_use]
    pub fn header_params(&self) -> Vec<(String, String)> {
        let Some(properties) = self
            .inner
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return Vec::new();
        };
        properties
            .iter()
            .filter_map(|(argument, property)| {
                property
                    .get("x-mcp-header")
                    .and_then(Value::as_str)
                    .map(|name| (argument.clone(), name.to_owned()))
            })
            .collect()
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tool = &self.inner;
        f.debug_struct("Tool")
            .field("name", &tool.name)
            .field("task_support", &tool.task_support)
            .field("redelivery", &tool.redelivery)
            .finish_non_exhaustive()
    }
}

/// A tool being declared ([`Tool::new`]): set what it is, then give it its handler.
#[must_use = "a tool needs its handler: finish it with `run` or `run_blocking`"]
pub struct ToolBuilder {
    name: String,
    title: Option<String>,
    description: Option<String>,
    input_schema: Option<JsonObject>,
    annotations: Option<JsonObject>,
    task_support: TaskSupport,
    redelivery: Option<u32>,
    asks_for_input: bool,
    rounds_without_task: bool,
    ask_first: Option<AskFirst>,
    answer_timeout: Duration,
}

impl ToolBuilder {
    /// A human-readable name for user interfaces.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether the tool runs as a task: [`Forbidden`](TaskSupport::Forbidden) (the
    /// default: it answers at once), [`Optional`](TaskSupport::Optional) or
    /// [`Required`](TaskSupport::Required). On 2025-11-25 the client asks for a task when the
    /// tool allows it; on 2026-07-28 the server runs the call as a task whenever the tool
    /// allows it and the client declared the tasks extension.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// The tool's task may run again, on another instance of a shared store, when the
    /// instance running it stops (its lease lapses, or it hands the task over at shutdown):
    /// at most `attempts` runs in all. Declare it only for work that is safe to run again
    /// from the start or from its last checkpoint ([`Context::save_checkpoint`](crate::Context::save_checkpoint)):
    /// the work runs at least once per attempt, and the task has exactly one final result.
    /// The server checks it when built: from 1 to [`MAX_ATTEMPTS`].
    pub fn redelivery(mut self, attempts: u32) -> Self {
        self.redelivery = Some(attempts);
        self
    }

    /// The tool asks the requestor for input while it runs (an elicitation): on
    /// 2025-11-25 a client that did not declare the `elicitation` capability is refused at
    /// `tools/call` (`-32602`, naming the capability) instead of getting a task that can
    /// never finish.
    pub fn asks_for_input(mut self) -> Self {
        self.asks_for_input = true;
        self
    }

    /// A tool that needs a task only to ask for input ([`TaskSupport::Required`]) still
    /// runs for a 2026-07-28 client that did not declare the tasks extension: at once,
    /// asking its input in rounds (SEP-2322: an `InputRequiredResult`, then the client's
    /// retry with the answers) instead of from a task.
    pub fn rounds_without_task(mut self) -> Self {
        self.rounds_without_task = true;
        self
    }

    /// What the tool asks before it runs, given its arguments: on 2026-07-28 these are asked
    /// in input rounds before the call runs or its task is created (the task then starts
    /// with the answers); on 2025-11-25, which has no such rounds, the handler asks them
    /// itself when it runs. Either way the handler reads them the same way, with
    /// [`Context::ask`](crate::Context::ask) under the same keys.
    pub fn ask_first(
        mut self,
        requests: impl Fn(&JsonObject) -> InputRequests + Send + Sync + 'static,
    ) -> Self {
        self.ask_first = Some(Arc::new(requests));
        self.asks_for_input = true;
        self
    }

    /// How long the handler waits for the requestor's answers to what it asks; then
    /// [`Context::ask`](crate::Context::ask) exits with `-32603` ("did not answer in
    /// time"). Default: ten minutes ([`DEFAULT_ANSWER_TIMEOUT`]).
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// The tool's annotations (`readOnlyHint`, `destructiveHint`, ...), as MCP defines
    /// them; ignored unless a JSON object.
    pub fn annotations(mut self, annotations: Value) -> Self {
        if let Value::Object(annotations) = annotations {
            self.annotations = Some(annotations);
        }
        self
    }

    /// The input schema `tools/list` shows, instead of the one derived from the arguments'
    /// type: for a schema that type cannot say (a JSON Schema feature the derive does not
    /// write). The arguments are still read as the handler's type. Ignored unless a JSON
    /// object.
    pub fn input_schema(mut self, schema: Value) -> Self {
        if let Value::Object(schema) = schema {
            self.input_schema = Some(schema);
        }
        self
    }

    /// The tool, with `handler`: an async function (or closure) of the task's
    /// [`Context`](crate::Context) and the typed arguments, answering `Result<R, Exit>`
    /// where `R` is a [`ToolResult`](crate::ToolResult), a `String`,
    /// [`Structured<T>`](crate::Structured) or [`Settled`](crate::Settled). Its input
    /// schema is derived from the arguments' type.
    pub fn run<A, H>(self, handler: H) -> Tool
    where
        A: Arguments,
        H: Handler<A>,
    {
        let output = <H::Output as IntoToolResult>::output_schema();
        self.finish::<A>(handler::erase_async(handler), output)
    }

    /// The tool, with a blocking `handler`: a function of the [`Context`](crate::Context)
    /// and the typed arguments that runs on a thread of its own, answering as for
    /// [`run`](Self::run). To wait on one of the context's futures from it, use
    /// [`block_on`](crate::block_on).
    pub fn run_blocking<A, H>(self, handler: H) -> Tool
    where
        A: Arguments,
        H: BlockingHandler<A>,
    {
        let output = <H::Output as IntoToolResult>::output_schema();
        self.finish::<A>(handler::erase_blocking(handler), output)
    }

    fn finish<A: Arguments>(self, handler: Arc<dyn Erased>, output: Option<JsonObject>) -> Tool {
        let input_schema = self.input_schema.unwrap_or_else(handler::input_schema::<A>);
        Tool {
            inner: Arc::new(ToolInner {
                name: self.name,
                title: self.title,
                description: self.description,
                input_schema,
                output_schema: output,
                annotations: self.annotations,
                task_support: self.task_support,
                redelivery: self.redelivery,
                asks_for_input: self.asks_for_input,
                rounds_without_task: self.rounds_without_task,
                ask_first: self.ask_first,
                answer_timeout: self.answer_timeout,
                handler,
            }),
        }
    }
}

impl fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Why a tool cannot be served, found when the server is built
/// ([`ServerBuilder::build`](crate::ServerBuilder::build)). Each names the tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Two tools have one name.
    #[error("two tools are named `{name}`: a tool's name is unique within a server")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A name the MCP specification does not allow.
    #[error(
        "the tool name `{name}` is not allowed: 1 to 128 characters among ASCII letters, \
         digits, `_`, `-` and `.`"
    )]
    InvalidName {
        /// The name (at most 80 characters of it).
        name: String,
    },
    /// A redeliverable tool whose attempts are out of bounds.
    #[error(
        "the redeliverable tool `{name}` declares {attempts} attempts: from 1 to {max}",
        max = MAX_ATTEMPTS
    )]
    Attempts {
        /// The tool's name.
        name: String,
        /// What it declared.
        attempts: u32,
    },
    /// A redeliverable tool that runs only inline: it never has a task to redeliver.
    #[error(
        "the tool `{name}` is redeliverable but never runs as a task: give it a task \
         support, or drop `redelivery`"
    )]
    RedeliveryWithoutTask {
        /// The tool's name.
        name: String,
    },
}

/// Whether `name` is a tool name MCP allows: 1 to 128 characters among ASCII letters,
/// digits, `_`, `-` and `.`.
#[must_use]
pub fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
}

/// Checks one tool on its own (its name, its redelivery).
pub(crate) fn check(tool: &Tool) -> Result<(), ToolError> {
    let inner = &tool.inner;
    if !valid_name(&inner.name) {
        return Err(ToolError::InvalidName {
            name: inner.name.chars().take(80).collect(),
        });
    }
    if let Some(attempts) = inner.redelivery {
        if !(1..=MAX_ATTEMPTS).contains(&attempts) {
            return Err(ToolError::Attempts {
                name: inner.name.clone(),
                attempts,
            });
        }
        if inner.task_support == TaskSupport::Forbidden {
            return Err(ToolError::RedeliveryWithoutTask {
                name: inner.name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_specification() {
        for good in ["a", "get_weather", "Tool-1.v2", &"x".repeat(128)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "two words", "comma,", "é", "slash/", &"x".repeat(129)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}

/// The tools a server serves, by name, in the order they were given.
#[derive(Clone, Default)]
pub(crate) struct Tools {
    order: Vec<Tool>,
    by_name: std::collections::HashMap<String, Tool>,
}

impl Tools {
    /// The tools, each checked ([`check`]) and their names unique.
    pub(crate) fn new(tools: Vec<Tool>) -> Result<Self, ToolError> {
        let mut by_name = std::collections::HashMap::with_capacity(tools.len());
        for tool in &tools {
            check(tool)?;
            if by_name
                .insert(tool.name().to_owned(), tool.clone())
                .is_some()
            {
                return Err(ToolError::Duplicate {
                    name: tool.name().to_owned(),
                });
            }
        }
        Ok(Self {
            order: tools,
            by_name,
        })
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name)
    }

    /// The tools as `tools/list` shows them (`with_execution`: on 2025-11-25).
    pub(crate) fn list(&self, with_execution: bool) -> Vec<Value> {
        self.order
            .iter()
            .map(|tool| tool.definition(with_execution))
            .collect()
    }

    /// The tools, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.order.iter()
    }
}
