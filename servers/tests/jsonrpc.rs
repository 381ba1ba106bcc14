//! Both example servers speak exact JSON-RPC 2.0: `"jsonrpc": "2.0"` is required, invalid
//! messages are answered `-32600` / `-32700`, every id MCP allows comes back byte for byte,
//! and an id that cannot be read is left out (never `null`) — over stdio and HTTP
//! (`mcp_http`) alike.

mod support;

use serde_json::Value;
use support::{Http, Stdio, ext_meta, raw_id};

/// What one message must be answered with.
enum Expect {
    /// An error with this code; `Some(id)` echoed as written, `None` for no `id` member.
    Error(i64, Option<&'static str>),
    /// A result, echoing this id as written.
    Result(&'static str),
}

/// A framed 2026-07-28 `tools/list` with the id `id` written as given (needs no session
/// over HTTP; 2026-07-28 has no `ping`).
fn framed(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{}}}}}"#,
        ext_meta()
    )
}

fn cases() -> Vec<(&'static str, String, Expect)> {
    use Expect::{Error, Result};
    let mut cases = vec![
        (
            "no jsonrpc",
            r#"{"id":"a7","method":"ping"}"#.to_owned(),
            Error(-32600, Some(r#""a7""#)),
        ),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_owned(),
            Error(-32600, Some("1")),
        ),
        (
            "jsonrpc a number",
            r#"{"jsonrpc":2.0,"id":2,"method":"ping"}"#.to_owned(),
            Error(-32600, Some("2")),
        ),
        (
            "jsonrpc null",
            r#"{"jsonrpc":null,"id":"x","method":"ping"}"#.to_owned(),
            Error(-32600, Some(r#""x""#)),
        ),
        (
            "a notification without jsonrpc",
            r#"{"method":"notifications/initialized"}"#.to_owned(),
            Error(-32600, None),
        ),
        (
            "params a string",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}"#.to_owned(),
            Error(-32600, Some("3")),
        ),
        (
            "method a number",
            r#"{"jsonrpc":"2.0","id":4,"method":4}"#.to_owned(),
            Error(-32600, Some("4")),
        ),
        (
            "id null",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_owned(),
            Error(-32600, None),
        ),
        (
            "id a fraction",
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_owned(),
            Error(-32600, None),
        ),
        (
            "id an object",
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#.to_owned(),
            Error(-32600, None),
        ),
        (
            "id true",
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.to_owned(),
            Error(-32600, None),
        ),
        ("not JSON", "{nope".to_owned(), Error(-32700, None)),
        ("a batch", "[]".to_owned(), Error(-32600, None)),
        (
            "an unknown method",
            format!(
                r#"{{"jsonrpc":"2.0","id":"m 1","method":"nope/nope","params":{{"_meta":{}}}}}"#,
                ext_meta()
            ),
            Error(-32601, Some(r#""m 1""#)),
        ),
    ];
    for id in [
        "-0",
        "0",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551616",
        "-9223372036854775809",
        "-123456789012345678901234567890",
        "1e3",
        "2.0",
        r#""a7""#,
        r#""\u00e9t\u00e9""#,
        r#""""#,
    ] {
        cases.push(("a valid id", framed(id), Result(id)));
    }
    cases
}

fn check(name: &str, sent: &str, line: &str, expect: &Expect) -> Option<String> {
    let message: Value = serde_json::from_str(line).ok()?;
    let id = raw_id(line);
    let ok = message["jsonrpc"] == "2.0"
        && match expect {
            Expect::Error(code, want) => {
                message["error"]["code"] == *code
                    && message["error"]["message"].is_string()
                    && message.get("result").is_none()
                    && id.as_deref() == *want
            }
            Expect::Result(want) => {
                message.get("error").is_none()
                    && message["result"].is_object()
                    && id.as_deref() == Some(*want)
            }
        };
    (!ok).then(|| format!("{name}: sent {sent}, got {line}"))
}

#[test]
fn the_stdio_server_answers_exact_json_rpc() {
    let mut server = Stdio::start();
    let mut failures = Vec::new();
    for (name, sent, expect) in cases() {
        let line = server.exchange_raw(&sent);
        failures.extend(check(name, &sent, &line, &expect));
    }
    // A response to no request of the server's is not answered; the next ping is.
    server.send_raw(r#"{"jsonrpc":"2.0","id":"nobody","result":{}}"#);
    let line = server.exchange_raw(&framed("7"));
    failures.extend(check(
        "after a stray response",
        "ping",
        &line,
        &Expect::Result("7"),
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_http_server_answers_exact_json_rpc() {
    let server = Http::start();
    let mut failures = Vec::new();
    // Every case is sent as the 2026-07-28 wire asks (with its version header): those
    // requests need no session. An unknown method there is `404`, an invalid message `400`.
    for (name, sent, expect) in cases() {
        let answer = server.post_2026(&sent);
        let status = match expect {
            Expect::Error(-32600 | -32700, _) => 400,
            Expect::Error(-32601, _) => 404,
            _ => 200,
        };
        if answer.status != status {
            failures.push(format!(
                "{name}: HTTP {} (expected {status})",
                answer.status
            ));
        }
        failures.extend(check(name, &sent, &answer.body, &expect));
    }
    // A 2026-07-28 request without the version header is refused with its id echoed.
    let answer = server.post(&framed(r#""no header""#));
    assert_eq!(answer.status, 400, "{}", answer.body);
    failures.extend(check(
        "no MCP-Protocol-Version header",
        "tools/list",
        &answer.body,
        &Expect::Error(-32020, Some(r#""no header""#)),
    ));
    // HTTP-level refusals carry no `id` either (here: no session for a 2025-11-25 ping).
    let answer = server.post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(answer.status, 400, "{}", answer.body);
    failures.extend(check(
        "no session",
        "ping",
        &answer.body,
        &Expect::Error(-32600, None),
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
