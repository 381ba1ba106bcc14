//! 2025-11-25 over Streamable HTTP with `mcp_http`, what JSON-only responses could not
//! carry: a `confirm` task's `elicitation/create` on the `tasks/result` event stream, the
//! client's answer POSTed back, then the result on the same stream; the session's `GET`
//! stream, ended by `DELETE`; and a request without a token refused `401` on a connection
//! the server then closes.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};
use support::streamed::{Streamed, send};
use support::{Http, WAIT};

/// POSTs one message as alice in `session`, accepting JSON and SSE.
fn post(addr: &str, session: &str, message: &Value) -> Streamed {
    send(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nAuthorization: Bearer token-a\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close"
        ),
        &message.to_string(),
    )
}

/// A 2025-11-25 session of alice's that declares `elicitation`.
fn session(server: &Http) -> String {
    let answer = server.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "http-streams", "version": "0"}
        }})
        .to_string(),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.session.expect("initialize issues a session");
    let initialized = server.post_in(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        Some(&session),
    );
    assert_eq!(initialized.status, 202, "{}", initialized.body);
    session
}

#[test]
fn a_confirm_task_asks_on_the_tasks_result_stream_and_answers_there() {
    let server = Http::start();
    let addr = server.addr().to_owned();
    let session = session(&server);
    let created = server.post_in(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "confirm", "arguments": {"question": "go?"}, "task": {"ttl": 60_000}
        }})
        .to_string(),
        Some(&session),
    );
    assert_eq!(created.status, 200, "{}", created.body);
    let created: Value = serde_json::from_str(&created.body).expect("JSON");
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();

    let mut stream = post(
        &addr,
        &session,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task}}),
    );
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    // The question comes on this stream, tagged with the task.
    let mut seen = Vec::new();
    let asked = stream.next_message(&mut seen, "the question", |message| {
        message["method"] == "elicitation/create"
    });
    assert!(
        asked["id"].is_string() || asked["id"].is_number(),
        "{asked}"
    );
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str(),
        "{asked}"
    );
    // Every message before it was about the task (its status), none the answer.
    for message in &seen {
        assert_eq!(message["method"], "notifications/tasks/status", "{message}");
        assert_eq!(message["params"]["taskId"], task.as_str(), "{message}");
    }

    // The client's answer is a POST of its own, accepted with 202.
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"answer": "yes"}}});
    let mut accepted = post(&addr, &session, &reply);
    assert_eq!(accepted.status, 202);
    let mut rest = String::new();
    accepted.body.read_to_string(&mut rest).expect("readable");

    // The result ends the stream.
    let answer = stream.next_message(&mut seen, "the answer", |message| {
        message.get("method").is_none()
    });
    assert_eq!(answer["id"], 3, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a CallToolResult: {answer}"));
    assert!(text.contains("yes"), "{answer}");
    assert!(
        stream.next_data().is_none(),
        "the stream ends after its answer"
    );

    let got = server.post_in(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task}})
            .to_string(),
        Some(&session),
    );
    let got: Value = serde_json::from_str(&got.body).expect("JSON");
    assert_eq!(got["result"]["status"], "completed", "{got}");
}

#[test]
fn get_opens_the_session_stream_and_delete_ends_it() {
    let server = Http::start();
    let addr = server.addr().to_owned();
    let session = session(&server);
    let mut general = send(
        &addr,
        &format!(
            "GET /mcp HTTP/1.1\r\nAuthorization: Bearer token-a\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25"
        ),
        "",
    );
    assert_eq!(general.status, 200);
    assert_eq!(general.header("content-type"), Some("text/event-stream"));
    // The priming event: an id to resume from and a reconnection delay.
    let priming = general.lines_until(|line| line.trim().is_empty());
    assert!(
        priming.iter().any(|line| line.starts_with("id:"))
            && priming.iter().any(|line| line.starts_with("retry:")),
        "{priming:?}"
    );

    let mut deleted = send(
        &addr,
        &format!(
            "DELETE /mcp HTTP/1.1\r\nAuthorization: Bearer token-a\r\n\
             Mcp-Session-Id: {session}\r\nConnection: close"
        ),
        "",
    );
    assert_eq!(deleted.status, 204);
    let mut rest = String::new();
    deleted.body.read_to_string(&mut rest).expect("readable");
    // The session's stream ends with it (keep-alive comments aside); were it to outlive
    // the session, reading it would time out (`WAIT`) and fail.
    let leftover = general.lines_until(|_| false);
    assert!(
        leftover
            .iter()
            .all(|line| line.trim().is_empty() || line.starts_with(':')),
        "{leftover:?}"
    );
    let after = server.post_in(
        r#"{"jsonrpc":"2.0","id":9,"method":"tasks/list"}"#,
        Some(&session),
    );
    assert_eq!(after.status, 404, "{}", after.body);
}

#[test]
fn a_request_without_a_token_is_refused_and_its_connection_closed() {
    // Timeouts far beyond `WAIT`: only the refusal itself can close the connection in time.
    let server = Http::start_with(&[
        ("MCP_TASKS_HEADER_TIMEOUT_MS", "600000"),
        ("MCP_TASKS_BODY_TIMEOUT_MS", "600000"),
    ]);
    let addr = server.addr().to_owned();
    // A keep-alive request: the server closes the connection anyway, without reading the
    // body it announced (only part of which is sent).
    let mut stream = TcpStream::connect(&addr).expect("the server accepts");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
    )
    .expect("the server reads");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("the server answers, then closes (within WAIT)");
    let (head, _) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        head.lines().any(|line| line
            .to_ascii_lowercase()
            .starts_with("www-authenticate: bearer")),
        "{head}"
    );
}
