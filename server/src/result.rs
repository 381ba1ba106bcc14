//! What a handler answers: a [`ToolResult`] (MCP's `CallToolResult`), or anything that
//! becomes one ([`IntoToolResult`]): a `String`, [`Structured<T>`] (structured content,
//! whose type declares the tool's output schema), or [`Settled`] for a handler that
//! finished its task itself through the typed handle.

use mcp_tasks::{Cancelled, Completed, Failed, JsonObject, Task, TaskState};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use crate::context::Exit;

/// A tool's result: MCP's `CallToolResult` (`content` blocks, optional
/// `structuredContent`, `isError`).
///
/// A result with `isError: true` is the tool's own failure, which the model should see
/// (a task of it is `failed` on 2025-11-25 and `completed` on 2026-07-28); a failure of
/// the call itself is an [`Exit`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    object: JsonObject,
}

impl ToolResult {
    /// One text block.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self::blocks(vec![json!({"type": "text", "text": text.into()})], false)
    }

    /// One text block reporting the tool's failure (`isError: true`).
    #[must_use]
    pub fn error(text: impl Into<String>) -> Self {
        Self::blocks(vec![json!({"type": "text", "text": text.into()})], true)
    }

    /// These content blocks (text, image, audio, resource, ...), as MCP defines them.
    #[must_use]
    pub fn content(blocks: Vec<Value>) -> Self {
        Self::blocks(blocks, false)
    }

    /// A `CallToolResult` written by hand, taken as it is.
    #[must_use]
    pub fn from_object(object: JsonObject) -> Self {
        Self { object }
    }

    fn blocks(blocks: Vec<Value>, is_error: bool) -> Self {
        let mut object = JsonObject::new();
        object.insert("content".into(), Value::Array(blocks));
        object.insert("isError".into(), Value::Bool(is_error));
        Self { object }
    }

    /// The same result reporting the tool's failure (`isError: true`).
    #[must_use]
    pub fn with_error(mut self) -> Self {
        self.object.insert("isError".into(), Value::Bool(true));
        self
    }

    /// The same result with `structuredContent`.
    #[must_use]
    pub fn with_structured_content(mut self, content: Value) -> Self {
        self.object.insert("structuredContent".into(), content);
        self
    }

    /// Whether it reports the tool's failure (`isError: true`).
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.object.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// The result as JSON.
    #[must_use]
    pub fn as_object(&self) -> &JsonObject {
        &self.object
    }

    /// The result as JSON, taken.
    #[must_use]
    pub fn into_object(self) -> JsonObject {
        self.object
    }
}

impl From<String> for ToolResult {
    fn from(text: String) -> Self {
        ToolResult::text(text)
    }
}

impl From<&str> for ToolResult {
    fn from(text: &str) -> Self {
        ToolResult::text(text)
    }
}

/// Structured content of type `T`: the result carries it as `structuredContent` (and, for
/// clients that read only `content`, as JSON text), and the tool declares `T`'s schema as
/// its output schema. `T` must serialize to a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured<T>(pub T);

/// What a handler produced: a result to store, or nothing (it settled its task itself).
#[doc(hidden)]
#[derive(Debug)]
pub enum Produced {
    /// The `CallToolResult`.
    Result(JsonObject),
    /// The handler finished its task through the typed handle.
    Settled,
}

mod sealed {
    pub trait Sealed {}
}

/// What a handler may answer: a [`ToolResult`], a `String` or `&'static str` (one text
/// block), [`Structured<T>`], or [`Settled`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what a tool answers",
    label = "a handler answers `Result<R, Exit>` where `R` is a `ToolResult`, a `String`, `Structured<T>` or `Settled`"
)]
pub trait IntoToolResult: sealed::Sealed + Send + 'static {
    /// The result, or the exit that replaces it (a value that does not serialize).
    #[doc(hidden)]
    fn produce(self) -> Result<Produced, Exit>;

    /// The output schema this kind of result declares (`Structured<T>`: `T`'s).
    #[doc(hidden)]
    fn output_schema() -> Option<JsonObject> {
        None
    }
}

impl sealed::Sealed for ToolResult {}
impl IntoToolResult for ToolResult {
    fn produce(self) -> Result<Produced, Exit> {
        Ok(Produced::Result(self.object))
    }
}

impl sealed::Sealed for String {}
impl IntoToolResult for String {
    fn produce(self) -> Result<Produced, Exit> {
        Ok(Produced::Result(ToolResult::text(self).object))
    }
}

impl sealed::Sealed for &'static str {}
impl IntoToolResult for &'static str {
    fn produce(self) -> Result<Produced, Exit> {
        Ok(Produced::Result(ToolResult::text(self).object))
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> sealed::Sealed for Structured<T> {}
impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Structured<T> {
    fn produce(self) -> Result<Produced, Exit> {
        let content = serde_json::to_value(&self.0).map_err(|err| {
            Exit::internal(format!(
                "the tool's structured result does not serialize: {err}"
            ))
        })?;
        if !content.is_object() {
            return Err(Exit::internal(
                "the tool's structured result must be a JSON object",
            ));
        }
        let text = content.to_string();
        Ok(Produced::Result(
            ToolResult::text(text)
                .with_structured_content(content)
                .object,
        ))
    }

    fn output_schema() -> Option<JsonObject> {
        Some(crate::handler::schema_object::<T>())
    }
}

/// A handler finished its task itself, through the typed handle it took with
/// [`Context::take_handle`](crate::Context::take_handle): nothing is left for the context to
/// store. Only a finished task makes one ([`Settled::new`]), so a handler cannot claim to
/// have settled a task that still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    _finished: (),
}

/// A terminal status: `Completed`, `Failed` or `Cancelled`.
#[diagnostic::on_unimplemented(
    message = "the task is still `{Self}`: a handler settles a task by finishing it",
    label = "complete, fail or cancel the task first: `Settled` needs a `Completed`, `Failed` or `Cancelled` task"
)]
pub trait Finished: TaskState {}
impl Finished for Completed {}
impl Finished for Failed {}
impl Finished for Cancelled {}

impl Settled {
    /// The handler finished `task` (completed, failed or cancelled it).
    #[must_use]
    pub fn new<S>(task: Task<S>) -> Self
    where
        S: Finished,
    {
        let _ = task;
        Settled { _finished: () }
    }
}

impl From<mcp_tasks::Finished> for Settled {
    fn from(_finished: mcp_tasks::Finished) -> Self {
        Settled { _finished: () }
    }
}

impl sealed::Sealed for Settled {}
impl IntoToolResult for Settled {
    fn produce(self) -> Result<Produced, Exit> {
        Ok(Produced::Settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, JsonSchema)]
    struct Weather {
        celsius: f64,
    }

    #[test]
    fn each_kind_of_answer_becomes_a_call_tool_result() {
        let Ok(Produced::Result(text)) = "done".produce() else {
            panic!("a text result")
        };
        assert_eq!(text["content"][0]["text"], "done");
        assert_eq!(text["isError"], false);
        assert!(ToolResult::error("no").is_error());
        let Ok(Produced::Result(structured)) = Structured(Weather { celsius: 21.5 }).produce()
        else {
            panic!("a structured result")
        };
        assert_eq!(structured["structuredContent"]["celsius"], 21.5);
        assert_eq!(structured["content"][0]["text"], "{\"celsius\":21.5}");
        let schema = <Structured<Weather>>::output_schema().expect("a schema");
        assert_eq!(schema["type"], "object");
        assert!(<String as IntoToolResult>::output_schema().is_none());
        assert!(Structured(7).produce().is_err(), "not an object");
    }
}
