//! Requests the server sends to the client for a 2025-11-25 task (its input requests, as
//! `elicitation/create`): reading the client's answer and turning it into the response the
//! task's handler reads. Shared by every transport.

use mcp_tasks::{JsonObject, JsonRpcError, jsonrpc};
use serde_json::{Value, json};

/// The id and the answer of a JSON-RPC response the client sent: `result`, or its `error`
/// (a malformed error, or neither member, is an internal error). `None` without an id.
#[must_use]
pub fn client_answer(message: &JsonObject) -> Option<(String, Result<Value, JsonRpcError>)> {
    let id = match message.get("id")? {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };
    let answer = match (message.get("result"), message.get("error")) {
        (Some(result), _) => Ok(result.clone()),
        (None, Some(error)) => Err(serde_json::from_value::<JsonRpcError>(error.clone())
            .unwrap_or_else(|_| {
                JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the client sent a malformed error")
            })),
        (None, None) => Err(JsonRpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "the client's answer had neither result nor error",
        )),
    };
    Some((id, answer))
}

/// The response a task's handler reads for one forwarded input request: the client's
/// result object; an empty object for a result that is not one (the handler refuses it:
/// it matches no requested schema); and `{"action": "cancel"}` when there is no usable
/// answer (an error, no answer in time, or the task stopped waiting): a dismissed request.
#[must_use]
pub fn input_response(answer: Result<Value, JsonRpcError>) -> JsonObject {
    match answer {
        Ok(Value::Object(answer)) => answer,
        Ok(_) => JsonObject::new(),
        Err(_) => match json!({"action": "cancel"}) {
            Value::Object(dismissed) => dismissed,
            _ => JsonObject::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(message: Value) -> Option<(String, Result<Value, JsonRpcError>)> {
        client_answer(message.as_object()?)
    }

    #[test]
    fn an_error_answer_is_an_error_never_a_result() {
        let refused = answer(json!({"jsonrpc": "2.0", "id": 7,
            "error": {"code": -1, "message": "user rejected sampling"}}));
        assert_eq!(
            refused,
            Some((
                "7".to_owned(),
                Err(JsonRpcError::new(-1, "user rejected sampling"))
            ))
        );
        let malformed = answer(json!({"id": "a", "error": {"message": 3}}));
        assert_eq!(
            malformed.map(|(_, answer)| answer.map_err(|error| error.code)),
            Some(Err(jsonrpc::INTERNAL_ERROR))
        );
        let result = answer(json!({"id": "b", "result": {"action": "decline"}}));
        assert_eq!(
            result,
            Some(("b".to_owned(), Ok(json!({"action": "decline"}))))
        );
        assert_eq!(answer(json!({"result": {}})), None);
        let dismissed = input_response(Err(JsonRpcError::new(-1, "no")));
        assert_eq!(Value::Object(dismissed), json!({"action": "cancel"}));
    }
}
