//! The 2026-07-28 wire on the same endpoint (SEP-2575, stateless): every request names its
//! protocol version in the `MCP-Protocol-Version` header and again in its `_meta`, with the
//! client's capabilities; there is no handshake and no session.
//!
//! A request is on the 2026-07-28 wire when its header names a version newer than
//! 2025-11-25, or when it has no header but its `_meta` names a protocol version (or it is
//! `server/discover`). Such a request is refused, HTTP `400`, with the request's id:
//! - `-32020` (header mismatch) without the header, or when the header and `_meta`
//!   disagree;
//! - `-32602` when `_meta` lacks `io.modelcontextprotocol/protocolVersion` or
//!   `io.modelcontextprotocol/clientCapabilities`;
//! - `-32022` (unsupported protocol version, `data.supported` and `data.requested`) for a
//!   version this server does not speak.
//!
//! `initialize` does not exist on that wire (it is `-32601`, as any unknown method).

use mcp_tasks::{JsonRpcError, ext, jsonrpc};
use serde_json::{Value, json};

/// The JSON-RPC code of a request whose protocol version the server does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The versions of the session-based wire (2025-11-25 and before); anything else a client
/// sends in `MCP-Protocol-Version` is a stateless (2026-07-28 or later) version.
const SESSION_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The versions this server speaks on the stateless wire.
pub const SUPPORTED: [&str; 1] = [ext::PROTOCOL_VERSION];

/// The requests this server serves on the stateless wire; any other method is answered
/// `-32601` before its routing headers are looked at (`tasks/result`, say, is removed).
pub const METHODS: [&str; 12] = [
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// Which wire a request is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// 2025-11-25 (or earlier): sessions, `initialize` first.
    Session,
    /// 2026-07-28: stateless.
    Stateless,
}

/// The wire of a request with `method`, `params` and the `MCP-Protocol-Version` header.
pub fn wire(header: Option<&str>, method: &str, params: Option<&Value>) -> Wire {
    match header {
        Some(version) if SESSION_VERSIONS.contains(&version) => {
            // A body framed for 2026-07-28 under a 2025 header is a mismatch, refused on
            // the stateless wire.
            if ext::request_protocol_version(params).is_some() {
                Wire::Stateless
            } else {
                Wire::Session
            }
        }
        Some(_) => Wire::Stateless,
        None if method == ext::methods::SERVER_DISCOVER
            || ext::request_protocol_version(params).is_some() =>
        {
            Wire::Stateless
        }
        None => Wire::Session,
    }
}

/// Checks a stateless request's version framing; `Err` is the error to answer (HTTP 400).
///
/// # Errors
/// See the module documentation.
pub fn check(header: Option<&str>, params: Option<&Value>) -> Result<(), JsonRpcError> {
    let Some(header) = header else {
        return Err(JsonRpcError::new(
            ext::HEADER_MISMATCH,
            "header mismatch: a 2026-07-28 request must carry the MCP-Protocol-Version header",
        ));
    };
    let meta = params.and_then(|params| params.get("_meta"));
    let missing: Vec<&str> = [ext::META_PROTOCOL_VERSION, ext::META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| meta.and_then(|meta| meta.get(key)).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(JsonRpcError::new(
            jsonrpc::INVALID_PARAMS,
            format!("invalid params: missing _meta keys: {}", missing.join(", ")),
        ));
    }
    let body = ext::request_protocol_version(params);
    if body != Some(header) {
        return Err(JsonRpcError::new(
            ext::HEADER_MISMATCH,
            format!(
                "header mismatch: MCP-Protocol-Version `{}` but _meta names `{}`",
                clip(header),
                clip(body.unwrap_or("(not a string)"))
            ),
        ));
    }
    if !SUPPORTED.contains(&header) {
        return Err(JsonRpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!("unsupported protocol version `{}`", clip(header)),
        )
        .with_data(json!({"supported": SUPPORTED, "requested": header})));
    }
    Ok(())
}

/// The HTTP status of a stateless request's JSON-RPC error: `404` for an unknown method
/// (`initialize` and `ping` included), `400` for the framing errors the schema binds to it
/// (`-32020`, `-32021`, `-32022`), `200` for the rest.
pub fn status_of(code: i64) -> hyper::StatusCode {
    match code {
        jsonrpc::METHOD_NOT_FOUND => hyper::StatusCode::NOT_FOUND,
        ext::HEADER_MISMATCH
        | ext::MISSING_REQUIRED_CLIENT_CAPABILITY
        | UNSUPPORTED_PROTOCOL_VERSION => hyper::StatusCode::BAD_REQUEST,
        _ => hyper::StatusCode::OK,
    }
}

fn clip(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn framed(version: &str) -> Value {
        json!({"_meta": {ext::META_PROTOCOL_VERSION: version, ext::META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn the_wire_follows_the_header_then_the_body() {
        let framed = framed("2026-07-28");
        assert_eq!(wire(None, "initialize", None), Wire::Session);
        assert_eq!(wire(Some("2025-11-25"), "tools/list", None), Wire::Session);
        assert_eq!(
            wire(Some("2026-07-28"), "initialize", None),
            Wire::Stateless
        );
        assert_eq!(wire(None, "tools/list", Some(&framed)), Wire::Stateless);
        assert_eq!(
            wire(Some("2025-11-25"), "tools/list", Some(&framed)),
            Wire::Stateless
        );
        assert_eq!(wire(None, "server/discover", None), Wire::Stateless);
    }

    #[test]
    fn framing_errors_carry_the_suites_codes_in_its_order() {
        let code =
            |header: Option<&str>, params: &Value| check(header, Some(params)).map_err(|e| e.code);
        assert_eq!(code(Some("2026-07-28"), &framed("2026-07-28")), Ok(()));
        assert_eq!(code(None, &framed("2026-07-28")), Err(ext::HEADER_MISMATCH));
        assert_eq!(
            code(Some("2026-07-28"), &json!({})),
            Err(jsonrpc::INVALID_PARAMS)
        );
        let no_capabilities = json!({"_meta": {ext::META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(
            code(Some("2026-07-28"), &no_capabilities),
            Err(jsonrpc::INVALID_PARAMS)
        );
        // A mismatch beats an unsupported version.
        assert_eq!(
            code(Some("2026-07-28"), &framed("v999")),
            Err(ext::HEADER_MISMATCH)
        );
        let unsupported = check(Some("v999"), Some(&framed("v999"))).expect_err("unsupported");
        assert_eq!(unsupported.code, UNSUPPORTED_PROTOCOL_VERSION);
        let data = unsupported.data.expect("data");
        assert_eq!(data["requested"], "v999");
        assert_eq!(data["supported"], json!(SUPPORTED));
    }

    #[test]
    fn unknown_methods_are_404_and_framing_errors_400() {
        assert_eq!(
            status_of(jsonrpc::METHOD_NOT_FOUND),
            hyper::StatusCode::NOT_FOUND
        );
        for code in [
            ext::HEADER_MISMATCH,
            ext::MISSING_REQUIRED_CLIENT_CAPABILITY,
            UNSUPPORTED_PROTOCOL_VERSION,
        ] {
            assert_eq!(status_of(code), hyper::StatusCode::BAD_REQUEST);
        }
        assert_eq!(status_of(jsonrpc::INTERNAL_ERROR), hyper::StatusCode::OK);
    }
}
