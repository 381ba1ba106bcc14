//! Reading request params liberally, with `-32602` naming the field that is wrong.

use serde_json::Value;

use crate::error::Error;
use crate::jsonrpc::JsonObject;

/// The params object; absent or `null` params read as none.
pub(crate) fn object(params: Option<&Value>) -> Result<Option<&JsonObject>, Error> {
    match params {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object)),
        Some(_) => Err(Error::invalid_params("`params` must be an object")),
    }
}

/// The required string `taskId`; other members are ignored.
pub(crate) fn task_id(params: Option<&Value>) -> Result<&str, Error> {
    match object(params)?.and_then(|params| params.get("taskId")) {
        Some(Value::String(task_id)) => Ok(task_id),
        None => Err(Error::invalid_params(
            "missing `taskId`: name the task with a string `taskId` param",
        )),
        Some(_) => Err(Error::invalid_params("`taskId` must be a string")),
    }
}

/// The optional string member `name`; `null` reads as absent.
pub(crate) fn optional_string<'a>(
    params: Option<&'a Value>,
    name: &str,
) -> Result<Option<&'a str>, Error> {
    match object(params)?.and_then(|params| params.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(Error::invalid_params(format!("`{name}` must be a string"))),
    }
}

/// The required object member `name`.
pub(crate) fn required_object<'a>(
    params: Option<&'a Value>,
    name: &str,
) -> Result<&'a JsonObject, Error> {
    match object(params)?.and_then(|params| params.get(name)) {
        Some(Value::Object(value)) => Ok(value),
        None => Err(Error::invalid_params(format!("missing `{name}`"))),
        Some(_) => Err(Error::invalid_params(format!("`{name}` must be an object"))),
    }
}
