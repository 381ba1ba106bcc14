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
}
