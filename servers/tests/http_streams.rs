//! 2025-11-25 over Streamable HTTP with `mcp_http`, what JSON-only responses could not
//! carry: a `confirm` task's `elicitation/create` on the `tasks/result` event stream, the
//! client's answer POSTed back, then the result on the same stream; the session's `GET`
//! stream, ended by `DELETE`; and a request without a token refused `401` on a connection
//! the server then closes.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};
use support::{Http, WAIT};

/// An HTTP response whose head was read; its body (de-chunked) is read on demand.
struct Streamed {
    status: u16,
    headers: Vec<(String, String)>,
    body: BufReader<Box<dyn Read>>,
}

/// The payload of a `Transfer-Encoding: chunked` body.
struct Chunked {
    inner: BufReader<TcpStream>,
    /// Bytes left in the current chunk.
    left: usize,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                self.done = true;
                return Ok(0);
            }
            let size = size.trim();
            let size = size.split(';').next().unwrap_or(size);
            self.left = usize::from_str_radix(size, 16).map_err(|err| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("chunk size {size:?}: {err}"),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let read = self.inner.read(&mut buf[..want])?;
        if read == 0 {
            self.done = true;
            return Ok(0);
        }
        self.left -= read;
        if self.left == 0 {
            let mut crlf = String::new();
            self.inner.read_line(&mut crlf)?;
        }
        Ok(read)
    }
}

impl Streamed {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The next SSE event's `data` (its lines joined), skipping comments and events
    /// without data (the priming event); `None` once the stream ends.
    fn next_data(&mut self) -> Option<String> {
        let mut data: Vec<String> = Vec::new();
        loop {
            let mut line = String::new();
            let read = self
                .body
                .read_line(&mut line)
                .expect("the stream is readable");
            if read == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                let joined = data.join("\n");
                if !joined.trim().is_empty() {
                    return Some(joined);
                }
                data.clear();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
    }

    /// The raw lines of the stream until `want` holds for one, or the stream ends.
    fn lines_until(&mut self, want: impl Fn(&str) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.body.read_line(&mut line).expect("readable") == 0 {
                return lines;
            }
            let done = want(&line);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }
}

/// Sends `head` (the request line and headers, without the blank line) and `body`, and
/// reads the response's head.
fn send(addr: &str, head: &str, body: &str) -> Streamed {
    let mut stream = TcpStream::connect(addr).expect("the server accepts");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    write!(
        stream,
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("the server reads");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    let body: Box<dyn Read> = if chunked {
        Box::new(Chunked {
            inner: reader,
            left: 0,
            done: false,
        })
    } else {
        Box::new(reader)
    };
    Streamed {
        status,
        headers,
        body: BufReader::new(body),
    }
}

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
    let asked = loop {
        let data = stream
            .next_data()
            .unwrap_or_else(|| panic!("the stream ended before the question: {seen:?}"));
        let message: Value = serde_json::from_str(&data).expect("JSON data");
        if message["method"] == "elicitation/create" {
            break message;
        }
        seen.push(message);
    };
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
    let answer = loop {
        let data = stream
            .next_data()
            .unwrap_or_else(|| panic!("the stream ended without the answer: {seen:?}"));
        let message: Value = serde_json::from_str(&data).expect("JSON data");
        if message.get("method").is_none() {
            break message;
        }
        seen.push(message);
    };
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
