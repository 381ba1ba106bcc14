//! The routing headers of Streamable HTTP (core SEP-2243): `Mcp-Method` names the request's
//! method and `Mcp-Name` the object it is about, so that a load balancer can route it
//! without reading the body. A server must refuse a request whose headers disagree with
//! its body (HTTP 400, JSON-RPC `-32020`): otherwise a proxy would route one request and
//! the server run another.

use serde_json::Value;

/// The body member that `Mcp-Name` repeats for `method`, if the method has one: the tool
/// or prompt name, the resource URI, or the task id.
#[must_use]
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" => Some("taskId"),
        _ => None,
    }
}

/// Checks the routing headers a request carries (each is checked only when present)
/// against its body; `Err` says what disagrees.
///
/// # Errors
/// The message of the `-32020` error: which header disagrees with which member.
pub fn check(
    method: &str,
    params: Option<&Value>,
    mcp_method: Option<&str>,
    mcp_name: Option<&str>,
) -> Result<(), String> {
    // Field values are compared without the optional whitespace around them (RFC 9110).
    let (mcp_method, mcp_name) = (mcp_method.map(str::trim), mcp_name.map(str::trim));
    if let Some(header) = mcp_method
        && header != method
    {
        return Err(format!(
            "header mismatch: Mcp-Method `{}` but the body's method is `{}`",
            clip(header),
            clip(method)
        ));
    }
    let Some(header) = mcp_name else {
        return Ok(());
    };
    let member = name_member(method);
    let body = member.and_then(|member| params?.get(member)?.as_str());
    match body {
        Some(body) if body == header => Ok(()),
        Some(body) => Err(format!(
            "header mismatch: Mcp-Name `{}` but the body's `{}` is `{}`",
            clip(header),
            member.unwrap_or_default(),
            clip(body)
        )),
        None => Err(format!(
            "header mismatch: Mcp-Name `{}` but `{}` names nothing",
            clip(header),
            clip(method)
        )),
    }
}

/// Checks that the routing headers the 2026-07-28 wire requires are present: `Mcp-Method`
/// always, and `Mcp-Name` when the body has the member it repeats ([`name_member`]).
/// Their values are checked by [`check`].
///
/// # Errors
/// The message of the `-32020` error: which header is missing.
pub fn require(
    method: &str,
    params: Option<&Value>,
    mcp_method: Option<&str>,
    mcp_name: Option<&str>,
) -> Result<(), String> {
    if mcp_method.is_none() {
        return Err(format!(
            "header mismatch: the Mcp-Method header is missing (the body's method is `{}`)",
            clip(method)
        ));
    }
    let named = name_member(method).and_then(|member| params?.get(member)?.as_str());
    if mcp_name.is_none()
        && let Some(name) = named
    {
        return Err(format!(
            "header mismatch: the Mcp-Name header is missing (the body names `{}`)",
            clip(name)
        ));
    }
    Ok(())
}

/// The prefix of the headers that repeat a tool argument (`Mcp-Param-<Name>`), for the
/// arguments whose input schema property carries `x-mcp-header: "<Name>"`.
pub const PARAM_PREFIX: &str = "mcp-param-";

/// Checks the `Mcp-Param-*` headers of a `tools/call` of a tool with `input_schema`: each
/// string argument annotated with `x-mcp-header` must arrive in its header too, equal to
/// the argument. A header value `=?base64?<text>?=` carries the value base64-encoded
/// (standard alphabet, padded); anything else is the value as written. `header` looks a
/// header up by its lower-case name.
///
/// # Errors
/// The message of the `-32020` error: a missing header, one that does not decode, or one
/// that disagrees with the argument.
pub fn check_params<'h>(
    input_schema: &Value,
    arguments: Option<&Value>,
    header: impl Fn(&str) -> Option<&'h str>,
) -> Result<(), String> {
    match input_schema.as_object() {
        Some(schema) => check_schema_params(schema, arguments, header),
        None => Ok(()),
    }
}

/// [`check_params`] for an input schema held as a JSON object (a tool's own: nothing is
/// copied).
///
/// # Errors
/// As for [`check_params`].
pub fn check_schema_params<'h>(
    input_schema: &serde_json::Map<String, Value>,
    arguments: Option<&Value>,
    header: impl Fn(&str) -> Option<&'h str>,
) -> Result<(), String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let Some(argument) = arguments
            .and_then(|arguments| arguments.get(property))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let header_name = format!("{PARAM_PREFIX}{}", name.to_ascii_lowercase());
        let Some(value) = header(&header_name) else {
            return Err(format!(
                "header mismatch: the Mcp-Param-{} header is missing (argument `{}`)",
                clip(name),
                clip(property)
            ));
        };
        let value = decode_param(value.trim()).ok_or_else(|| {
            format!(
                "header mismatch: Mcp-Param-{} is not valid `=?base64?...?=`",
                clip(name)
            )
        })?;
        if value != argument {
            return Err(format!(
                "header mismatch: Mcp-Param-{} `{}` but the argument `{}` is `{}`",
                clip(name),
                clip(&value),
                clip(property),
                clip(argument)
            ));
        }
    }
    Ok(())
}

/// The value a `Mcp-Param-*` header carries: base64-decoded inside `=?base64?...?=` (strict:
/// standard alphabet, padding required, UTF-8), else as written.
fn decode_param(value: &str) -> Option<String> {
    use base64::Engine as _;
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// At most 80 characters of a caller's text, for an error message.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn matching_or_absent_headers_pass() {
        let params = json!({"taskId": "t-1"});
        assert_eq!(check("tasks/get", Some(&params), None, None), Ok(()));
        assert_eq!(
            check("tasks/get", Some(&params), Some("tasks/get"), Some("t-1")),
            Ok(())
        );
        let call = json!({"name": "greet", "arguments": {}});
        assert_eq!(
            check("tools/call", Some(&call), Some("tools/call"), Some("greet")),
            Ok(())
        );
    }

    #[test]
    fn a_header_that_disagrees_with_the_body_is_named() {
        let params = json!({"taskId": "t-1"});
        let wrong_method = check("tools/call", Some(&params), Some("tasks/get"), None);
        assert!(wrong_method.is_err_and(|message| message.contains("Mcp-Method `tasks/get`")));
        let wrong_name = check("tasks/get", Some(&params), None, Some("t-2"));
        assert!(wrong_name.is_err_and(|message| message.contains("`taskId` is `t-1`")));
        let nameless = check("ping", None, None, Some("x"));
        assert!(nameless.is_err_and(|message| message.contains("names nothing")));
    }

    #[test]
    fn whitespace_around_a_value_is_not_part_of_it() {
        let call = json!({"name": "greet", "arguments": {}});
        assert_eq!(
            check(
                "tools/call",
                Some(&call),
                Some(" tools/call "),
                Some("  greet  ")
            ),
            Ok(())
        );
        assert!(check("tools/list", None, Some("TOOLS/LIST"), None).is_err());
    }

    #[test]
    fn the_stateless_wire_requires_the_routing_headers() {
        let call = json!({"name": "greet", "arguments": {}});
        assert!(require("tools/list", None, None, None).is_err());
        assert_eq!(
            require("tools/list", None, Some("tools/list"), None),
            Ok(())
        );
        let missing_name = require("tools/call", Some(&call), Some("tools/call"), None);
        assert!(missing_name.is_err_and(|message| message.contains("Mcp-Name")));
        assert_eq!(
            require("tools/call", Some(&call), Some("tools/call"), Some("greet")),
            Ok(())
        );
    }

    #[test]
    fn param_headers_repeat_annotated_arguments() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "other": {"type": "string"}
        }});
        let arguments = json!({"region": "Hello", "other": "x"});
        let with =
            |value: &'static str| move |name: &str| (name == "mcp-param-region").then_some(value);
        assert_eq!(
            check_params(&schema, Some(&arguments), with("Hello")),
            Ok(())
        );
        assert_eq!(
            check_params(&schema, Some(&arguments), with("=?base64?SGVsbG8=?=")),
            Ok(())
        );
        assert!(check_params(&schema, Some(&arguments), with("=?base64?SGVsbG8?=")).is_err());
        assert!(check_params(&schema, Some(&arguments), with("=?base64?SGVs!!!bG8=?=")).is_err());
        assert!(check_params(&schema, Some(&arguments), with("Bye")).is_err());
        assert!(check_params(&schema, Some(&arguments), |_| None).is_err());
        let literal = json!({"region": "=?base64?SGVsbG8="});
        assert_eq!(
            check_params(&schema, Some(&literal), with("=?base64?SGVsbG8=")),
            Ok(())
        );
    }
}
