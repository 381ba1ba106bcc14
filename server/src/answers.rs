//! Answers to what a server asks its client (an elicitation, a sampling, a roots
//! request), checked before a handler reads them: an answer of another shape is refused
//! (`-32602`), never read as empty. And the form of a typed elicitation
//! ([`Context::elicit`](crate::Context::elicit)).

use mcp_tasks::{InputRequest, JsonObject, JsonRpcError, jsonrpc};
use schemars::JsonSchema;
use serde_json::{Value, json};

/// A form-mode `elicitation/create` asking `message`, its requested schema `T`'s. The
/// schema always names its `properties`, as MCP's `ElicitRequest` requires: a form of no
/// field (a confirmation) says `properties: {}`.
pub fn form<T: JsonSchema>(message: &str) -> InputRequest {
    let mut schema = crate::handler::input_schema::<T>();
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    let mut params = JsonObject::new();
    params.insert("mode".into(), json!("form"));
    params.insert("message".into(), json!(message));
    params.insert("requestedSchema".into(), Value::Object(schema));
    InputRequest::elicitation(params)
}

/// `answer`, the answer a retry carried in `inputResponses` under `key` to `request`,
/// checked against it ([`check`]).
///
/// # Errors
/// `-32602` naming `inputResponses.<key>` and what does not match.
pub fn checked_response(
    key: &str,
    request: &InputRequest,
    answer: &Value,
) -> Result<Value, JsonRpcError> {
    check(request, answer).map_err(|why| {
        JsonRpcError::new(
            jsonrpc::INVALID_PARAMS,
            format!(
                "invalid params: `inputResponses.{key}` does not match the request it answers: {why}"
            ),
        )
    })?;
    Ok(answer.clone())
}

/// `answer`, the answer under `key` to `request`, checked against it ([`check`]).
///
/// # Errors
/// `-32602` naming the key and what does not match.
pub fn checked(key: &str, request: &InputRequest, answer: &Value) -> Result<Value, JsonRpcError> {
    check(request, answer).map_err(|why| {
        JsonRpcError::new(
            jsonrpc::INVALID_PARAMS,
            format!(
                "invalid params: the answer to `{key}` does not match the request it answers: {why}"
            ),
        )
    })?;
    Ok(answer.clone())
}

/// Checks a requestor's answer to an input request of this server before it is used, in a
/// task (`tasks/update`, a 2025-11-25 response) or an input round (`inputResponses`) alike:
/// the answer to a form-mode `elicitation/create` is an `ElicitResult` (`action` `accept`,
/// `decline` or `cancel`) whose `content`, when accepted, holds every required field of
/// the requested schema with the requested type (and one of its `enum` values, if any); to
/// a `sampling/createMessage`, a `CreateMessageResult` (`role`, `model`, `content`); to a
/// `roots/list`, a `ListRootsResult` (`roots`, each with a string `uri`). Answers to other
/// requests are not checked here.
///
/// # Errors
/// What does not match, in a short sentence naming the field.
pub fn check(request: &InputRequest, answer: &Value) -> Result<(), String> {
    match request.method.as_str() {
        "elicitation/create" => {}
        "sampling/createMessage" => return check_sampled(answer),
        "roots/list" => return check_roots(answer),
        _ => return Ok(()),
    }
    let Some(answer) = answer.as_object() else {
        return Err("an elicitation answer is an object".into());
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {}
        Some("decline" | "cancel") => return Ok(()),
        _ => return Err("`action` must be \"accept\", \"decline\" or \"cancel\"".into()),
    }
    let Some(schema) = request.params.get("requestedSchema") else {
        // URL mode: no content is expected.
        return Ok(());
    };
    let Some(content) = answer.get("content").and_then(Value::as_object) else {
        return Err("an accepted answer needs an object `content`".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !content.contains_key(name) {
            return Err(format!("`content.{name}` is required"));
        }
    }
    for (name, value) in content {
        let Some(property) = properties.and_then(|properties| properties.get(name)) else {
            continue;
        };
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        let fits = match kind {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "array" => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
            _ => true,
        };
        if !fits {
            return Err(format!("`content.{name}` must be of type {kind}"));
        }
        if let Some(allowed) = property.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            return Err(format!("`content.{name}` is not one of the offered values"));
        }
    }
    Ok(())
}

/// A `CreateMessageResult`: string `role` and `model`, and a `content` block (or blocks).
fn check_sampled(answer: &Value) -> Result<(), String> {
    for field in ["role", "model"] {
        if !answer.get(field).is_some_and(Value::is_string) {
            return Err(format!("a sampling answer needs a string `{field}`"));
        }
    }
    match answer.get("content") {
        Some(Value::Object(_) | Value::Array(_)) => Ok(()),
        _ => Err("a sampling answer needs a `content` block".into()),
    }
}

/// A `ListRootsResult`: `roots`, each an object with a string `uri`.
fn check_roots(answer: &Value) -> Result<(), String> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or("a roots answer needs an array `roots`")?;
    if roots
        .iter()
        .all(|root| root.get("uri").is_some_and(Value::is_string))
    {
        Ok(())
    } else {
        Err("each of `roots` needs a string `uri`".into())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    struct Nothing {}

    #[derive(Deserialize, JsonSchema)]
    struct Answer {
        #[allow(dead_code)]
        answer: String,
    }

    #[test]
    fn a_form_names_its_properties_even_when_it_has_none() {
        let empty = form::<Nothing>("go?");
        assert_eq!(
            empty.params["requestedSchema"],
            json!({"type": "object", "properties": {}})
        );
        let one = form::<Answer>("yours?");
        assert_eq!(
            one.params["requestedSchema"]["properties"],
            json!({"answer": {"type": "string"}})
        );
        assert_eq!(one.params["mode"], "form");
        assert!(check(&empty, &json!({"action": "accept", "content": {}})).is_ok());
    }
}
