//! The neutral outcome of a finished request: a result object or a JSON-RPC error.
//!
//! A terminal task stores its outcome in this form; each wire dialect decides how to show
//! it. In 2025-11-25 a result whose `isError` is `true` belongs to a `failed` task, and
//! `tasks/result` returns it as a successful response, while a JSON-RPC error is returned
//! as an error response.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::jsonrpc::{JsonObject, JsonRpcError};

/// What the underlying request produced: its result, or the JSON-RPC error it failed with.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The request returned a result (for `tools/call`, a `CallToolResult`).
    Result(JsonObject),
    /// The request failed with a JSON-RPC error.
    Error(JsonRpcError),
}

impl Outcome {
    /// An error outcome with a code and a message.
    #[must_use]
    pub fn error(code: i64, message: impl Into<String>) -> Self {
        Outcome::Error(JsonRpcError::new(code, message))
    }

    /// Whether this is a result whose `isError` member is `true` (a tool that reported an
    /// error in its `CallToolResult`).
    #[must_use]
    pub fn is_error_result(&self) -> bool {
        match self {
            Outcome::Result(result) => is_error_result(result),
            Outcome::Error(_) => false,
        }
    }

    /// The result object, if this is a result.
    #[must_use]
    pub fn as_result(&self) -> Option<&JsonObject> {
        match self {
            Outcome::Result(result) => Some(result),
            Outcome::Error(_) => None,
        }
    }

    /// The JSON-RPC error, if this is an error.
    #[must_use]
    pub fn as_error(&self) -> Option<&JsonRpcError> {
        match self {
            Outcome::Result(_) => None,
            Outcome::Error(error) => Some(error),
        }
    }

    /// A one-line diagnostic for a failed task's `statusMessage`: the error's message, or
    /// the first text content of a failing result.
    pub(crate) fn diagnostic(&self) -> Option<String> {
        match self {
            Outcome::Error(error) => Some(error.message.clone()),
            Outcome::Result(result) => result
                .get("content")
                .and_then(Value::as_array)
                .and_then(|content| {
                    content
                        .iter()
                        .find_map(|block| block.get("text").and_then(Value::as_str))
                })
                .map(str::to_owned),
        }
    }
}

/// Whether `result` has `"isError": true`.
pub(crate) fn is_error_result(result: &JsonObject) -> bool {
    matches!(result.get("isError"), Some(Value::Bool(true)))
}

impl From<JsonRpcError> for Outcome {
    fn from(error: JsonRpcError) -> Self {
        Outcome::Error(error)
    }
}

/// The outcome a finished task carries: as it was given, or, in the copy a store keeps,
/// a result as its JSON text, read back on first use by each copy that asks for it.
///
/// A result object is a tree of maps: about 1.3 KB of memory for a one-line tool result
/// whose text is some 60 bytes. A store keeps every finished task until its TTL ends, and
/// most of those results are read once, if ever; so the registry keeps the text
/// ([`compact`](Kept::compact)) and each copy it hands out reads it back when asked.
/// Nothing is lost on the way: every JSON value prints as text that reads back as the same
/// value (the crate reads floats with `float_roundtrip`), and a result nested deeper than
/// a reader accepts stays as it is.
///
/// Boxed, so that a task is no larger for it than with a plain pointer to its outcome.
#[doc(hidden)]
#[derive(Clone)]
pub struct Kept(Box<Parts>);

#[derive(Clone)]
struct Parts {
    /// The outcome as given or as read back; unset in a compacted copy until first asked
    /// for. Set whenever `text` is not.
    read: OnceLock<Arc<Outcome>>,
    /// The result as JSON text, once compacted.
    text: Option<Arc<str>>,
}

/// The deepest result kept as text: `serde_json` reads at most 128 levels of nesting.
const MAX_TEXT_DEPTH: usize = 100;

impl Kept {
    /// `outcome`, as given.
    pub(crate) fn new(outcome: Outcome) -> Kept {
        Kept(Box::new(Parts {
            read: OnceLock::from(Arc::new(outcome)),
            text: None,
        }))
    }

    /// The outcome, read back from its text on this copy's first use.
    pub(crate) fn get(&self) -> &Outcome {
        self.0.read.get_or_init(|| Arc::new(self.read_back()))
    }

    /// A result as JSON text: the kept text itself, or, for an outcome as given, printed
    /// (the same text either way: the kept text was printed so). `None` for an error.
    pub(crate) fn result_json(&self) -> Option<Cow<'_, str>> {
        if let Some(text) = self.0.text.as_deref() {
            return Some(Cow::Borrowed(text));
        }
        match self.get() {
            Outcome::Result(result) => serde_json::to_string(result).ok().map(Cow::Owned),
            Outcome::Error(_) => None,
        }
    }

    /// The result its text holds.
    fn read_back(&self) -> Outcome {
        match self
            .0
            .text
            .as_deref()
            .map(serde_json::from_str::<JsonObject>)
        {
            Some(Ok(result)) => Outcome::Result(result),
            // Unreachable: the text is printed from a result no deeper than
            // `MAX_TEXT_DEPTH`, which reads back, and `read` is set while there is none.
            _ => Outcome::error(-32603, "the task's stored result could not be read back"),
        }
    }

    /// Keeps a result as its JSON text only (an error outcome, small, stays as it is):
    /// the copy's first use reads it back.
    pub(crate) fn compact(&mut self) {
        let parts = &mut *self.0;
        if parts.text.is_none() {
            let Some(Outcome::Result(result)) = parts.read.get().map(|read| &**read) else {
                return;
            };
            if depth(result) > MAX_TEXT_DEPTH {
                return;
            }
            let Ok(text) = serde_json::to_string(result) else {
                return;
            };
            parts.text = Some(text.into());
        }
        parts.read.take();
    }
}

/// How deeply `object` nests: 1 for an object of scalars.
fn depth(object: &JsonObject) -> usize {
    fn of(value: &Value) -> usize {
        match value {
            Value::Object(object) => depth(object),
            Value::Array(items) => 1 + items.iter().map(of).max().unwrap_or(0),
            _ => 0,
        }
    }
    1 + object.values().map(of).max().unwrap_or(0)
}

#[cfg(test)]
impl Kept {
    /// Whether this copy holds its result as text only (not read back yet).
    pub(crate) fn is_text(&self) -> bool {
        self.0.text.is_some() && self.0.read.get().is_none()
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> Outcome {
        match value {
            Value::Object(object) => Outcome::Result(object),
            other => panic!("not an object: {other}"),
        }
    }

    /// `{"r": [[…[0]…]]}` with `levels` levels of nesting in all.
    fn nested(levels: usize) -> Outcome {
        let mut value = json!(0);
        for _ in 1..levels {
            value = json!([value]);
        }
        result(json!({ "r": value }))
    }

    #[test]
    fn a_compacted_result_reads_back_as_given() {
        let given = result(json!({
            "content": [{"type": "text", "text": "tab\t, quote \", é, 𝄞, \u{0}"}],
            "structuredContent": {
                "floats": [0.1, 0.30000000000000004, 1e-7, -2.5e300, 5e-324],
                "ints": [u64::MAX, i64::MIN, 0],
                "nothing": null,
                "empty": {}
            },
            "isError": false
        }));
        let mut kept = Kept::new(given.clone());
        kept.compact();
        assert!(kept.is_text());
        let copy = kept.clone();
        assert_eq!(copy.get(), &given);
        assert!(!copy.is_text(), "the copy read it back");
        assert!(kept.is_text(), "the original still holds only the text");
        assert_eq!(kept.get(), &given);
        // Compacting again drops what was read, and prints nothing twice.
        let text = kept.0.text.clone();
        kept.compact();
        assert!(kept.is_text());
        assert!(Arc::ptr_eq(
            text.as_ref().unwrap(),
            kept.0.text.as_ref().unwrap()
        ));
        assert_eq!(kept, Kept::new(given));
    }

    #[test]
    fn only_results_a_reader_takes_back_are_compacted() {
        let mut deepest = Kept::new(nested(MAX_TEXT_DEPTH));
        deepest.compact();
        assert!(deepest.is_text());
        assert_eq!(deepest.get(), &nested(MAX_TEXT_DEPTH));

        // Deeper than a reader goes (serde_json stops at 128): kept as given.
        let mut deeper = Kept::new(nested(200));
        deeper.compact();
        assert!(!deeper.is_text());
        assert_eq!(deeper.get(), &nested(200));

        // An error is small: kept as given.
        let error = Outcome::error(-32603, "broken");
        let mut kept = Kept::new(error.clone());
        kept.compact();
        assert!(!kept.is_text());
        assert_eq!(kept.get(), &error);
    }

    #[test]
    fn copies_compare_and_print_by_their_outcome() {
        let mut one = Kept::new(result(json!({"content": [], "n": 1})));
        one.compact();
        let mut two = Kept::new(result(json!({"content": [], "n": 2})));
        two.compact();
        assert_ne!(one, two);
        assert_eq!(one, Kept::new(result(json!({"n": 1, "content": []}))));
        assert_ne!(one, Kept::new(Outcome::error(-32603, "broken")));
        assert_eq!(format!("{two:?}"), format!("{:?}", two.get()));
        assert!(format!("{two:?}").contains("\"n\""));
    }

    #[test]
    fn a_text_that_does_not_read_back_is_an_internal_error_not_a_panic() {
        // Not made by `compact`, which keeps only what reads back; a copy that somehow
        // held such a text still answers.
        let broken = Kept(Box::new(Parts {
            read: OnceLock::new(),
            text: Some("{\"unclosed\": [".into()),
        }));
        let Outcome::Error(error) = broken.get() else {
            panic!("read back as a result: {broken:?}");
        };
        assert_eq!(error.code, -32603);
    }

    #[test]
    fn depth_counts_objects_and_arrays() {
        let depth_of = |value: Value| match result(value) {
            Outcome::Result(object) => depth(&object),
            Outcome::Error(_) => unreachable!(),
        };
        assert_eq!(depth_of(json!({})), 1);
        assert_eq!(depth_of(json!({"a": 1, "b": "x"})), 1);
        assert_eq!(depth_of(json!({"a": []})), 2);
        assert_eq!(depth_of(json!({"a": [1, [2]], "b": {"c": {}}})), 3);
        assert_eq!(depth_of(json!({"a": [{"b": [3]}]})), 4);
        match nested(7) {
            Outcome::Result(object) => assert_eq!(depth(&object), 7),
            Outcome::Error(_) => unreachable!(),
        }
    }
}
