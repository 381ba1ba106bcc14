//! Reading the client's answers (already checked against their questions by the library):
//! what the user gave, what a model said, which roots a client has.

use mcp_tasks_server::Exit;
use mcp_tasks_server::mcp_tasks::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The accepted `content` of an elicitation answer, if the user accepted.
pub(crate) fn accepted(answer: &Value) -> Option<&JsonObject> {
    (answer.get("action").and_then(Value::as_str) == Some("accept"))
        .then(|| answer.get("content")?.as_object())
        .flatten()
}

/// The accepted content read as `T`; `None` when the user declined or cancelled.
///
/// # Errors
/// `-32602` when the content does not read as `T`.
pub(crate) fn form<T: DeserializeOwned>(key: &str, answer: &Value) -> Result<Option<T>, Exit> {
    accepted(answer)
        .map(|content| {
            T::deserialize(Value::Object(content.clone())).map_err(|err| {
                Exit::invalid_params(format!("the answer to `{key}` does not read: {err}"))
            })
        })
        .transpose()
}

/// The string the user gave for `field`, or what they did instead.
pub(crate) fn given(answer: &Value, field: &str) -> String {
    match accepted(answer).and_then(|content| content.get(field)) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => format!(
            "(no {field}: {})",
            answer
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("none")
        ),
    }
}

/// The text a `CreateMessageResult` carries: its content block's, or the first text block
/// of a list of them.
pub(crate) fn sampled(answer: &Value) -> String {
    let block = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .find(|block| block.get("type").and_then(Value::as_str) == Some("text")),
        other => other,
    };
    block
        .and_then(|block| block.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("(no text)")
        .to_owned()
}

/// The URIs of a `ListRootsResult`, comma-separated.
pub(crate) fn roots(answer: &Value) -> String {
    let uris: Vec<&str> = answer
        .get("roots")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .collect();
    if uris.is_empty() {
        "(none)".to_owned()
    } else {
        uris.join(", ")
    }
}
