//! What the full conformance run found missing in `rmcp_http`, checked over plain HTTP:
//! its 2025-11-25 `initialize` does not declare the tasks extension (which belongs to
//! 2026-07-28) but declares `logging` (with the fixtures); a 2026-07-28 inline result
//! carries `resultType`; a 2026-07-28 `tools/call` whose `Mcp-Param-*` header is missing,
//! undecodable or different is refused with 400 and `-32020`.

mod spawned;
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};
use spawned::start_http;
use support::LIMIT;

/// POSTs `body` to `url` with `headers` (lines ending in `\r\n`); returns the status and
/// the JSON-RPC message answered (the last `data:` of an event stream, or the JSON body).
fn post(url: &str, headers: &str, body: &Value) -> (u16, Value) {
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("not an /mcp URL: {url}"));
    let body = body.to_string();
    let mut stream = TcpStream::connect(addr).expect("the example accepts");
    stream.set_read_timeout(Some(LIMIT)).expect("a timeout");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("the example reads");
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .expect("the example answers");
    let answer = String::from_utf8_lossy(&answer);
    let (head, rest) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    // An event stream's last message with an id, else the whole body.
    let message = rest
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .or_else(|| serde_json::from_str(rest.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {answer}"));
    (status, message)
}

/// A 2026-07-28 `tools/call` of `name` with `arguments` (no tasks extension), and its
/// routing headers.
fn call_2026(name: &str, arguments: Value) -> (String, Value) {
    let headers = format!(
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "conformance-gaps", "version": "0"}
        }
    }});
    (headers, body)
}

#[tokio::test]
async fn the_gaps_the_full_conformance_run_found_are_closed() {
    let server = start_http(&["--anonymous", "--conformance"]).await;
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || {
        let (status, initialized) = post(
            &url,
            "",
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "conformance-gaps", "version": "0"}
            }}),
        );
        assert_eq!(status, 200, "{initialized}");
        let capabilities = &initialized["result"]["capabilities"];
        assert!(
            capabilities["extensions"]["io.modelcontextprotocol/tasks"].is_null(),
            "initialize declares the tasks extension: {initialized}"
        );
        assert_eq!(capabilities["logging"], json!({}), "{initialized}");
        assert!(capabilities["tools"].is_object(), "{initialized}");

        let (headers, body) = call_2026("test_simple_text", json!({}));
        let (status, answer) = post(&url, &headers, &body);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["resultType"], "complete", "{answer}");

        let (headers, body) = call_2026("test_custom_header", json!({"region": "eu-west"}));
        let (status, answer) = post(
            &url,
            &format!("{headers}Mcp-Param-Region: eu-west\r\n"),
            &body,
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "region: eu-west");
        let encoded = "=?base64?ZXUtd2VzdA==?=";
        let (status, answer) = post(
            &url,
            &format!("{headers}Mcp-Param-Region: {encoded}\r\n"),
            &body,
        );
        assert_eq!(status, 200, "{answer}");
        for bad in [
            "",
            "Mcp-Param-Region: eu-east\r\n",
            "Mcp-Param-Region: =?base64?ZXU*?=\r\n",
        ] {
            let (status, refused) = post(&url, &format!("{headers}{bad}"), &body);
            assert_eq!(status, 400, "{bad:?}: {refused}");
            assert_eq!(refused["error"]["code"], -32020, "{bad:?}: {refused}");
            assert_eq!(refused["id"], 1, "{refused}");
        }
    })
    .await
    .expect("the checks ran");
}
