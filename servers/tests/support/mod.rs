//! Drives the example servers' binaries as a client would: the stdio server over its pipes,
//! the HTTP server (`mcp_http`, the `http/` crate) over plain HTTP/1.1 on a socket.

#![allow(dead_code)]

mod mcp_http;
pub mod stores;
pub mod streamed;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::Duration;

pub use mcp_http::routing_headers;
use mcp_tasks_servers::child::LineChild;
use serde_json::{Value, json};

/// How long any single answer may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// The `_meta` of a 2026-07-28 request that declares the tasks extension.
pub fn ext_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    })
}

/// `params` with the 2026-07-28 `_meta` added.
pub fn ext(mut params: Value) -> Value {
    params["_meta"] = ext_meta();
    params
}

/// The `id` member of a response exactly as written, if any.
pub fn raw_id(line: &str) -> Option<String> {
    let members: std::collections::HashMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(line)
            .unwrap_or_else(|err| panic!("not a JSON object ({err}): {line}"));
    members.get("id").map(|raw| raw.get().to_owned())
}

/// The stdio server, running.
pub struct Stdio {
    child: LineChild,
    next_id: u64,
    /// Messages read while waiting for an answer: notifications and server requests.
    pub seen: Vec<Value>,
}

impl Stdio {
    /// The stdio server with the example tools.
    pub fn start() -> Self {
        Self::start_args(&[])
    }

    /// The stdio server with the conformance suite's fixtures too (`--conformance`).
    pub fn start_conformance() -> Self {
        Self::start_args(&["--conformance"])
    }

    fn start_args(args: &[&str]) -> Self {
        Self::start_with(args, &[])
    }

    /// The stdio server with these arguments and extra environment variables.
    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stdio_server"));
        command.args(args).env_remove("MCP_TASKS_CONFORMANCE");
        for (name, value) in env {
            command.env(name, value);
        }
        Stdio {
            child: LineChild::spawn_command(command),
            next_id: 0,
            seen: Vec::new(),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one line.
    pub fn send_raw(&mut self, line: &str) {
        self.child.send_line(line.as_bytes());
    }

    /// The next line the server writes.
    pub fn next_line(&mut self) -> String {
        self.child
            .line_within(WAIT)
            .expect("the server writes a line within 20 s")
    }

    /// The next line, or `None` if none comes within `wait`.
    pub fn line_within(&mut self, wait: Duration) -> Option<String> {
        self.child.line_within(wait)
    }

    /// Sends `raw` and returns the answer to it: the next message that is a response (with
    /// `result` or `error`, no `method`); anything else read meanwhile goes to `seen`.
    pub fn exchange_raw(&mut self, raw: &str) -> String {
        self.send_raw(raw);
        self.next_response()
    }

    /// The next response line; notifications and server requests go to `seen`.
    pub fn next_response(&mut self) -> String {
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| {
                panic!("the server wrote a line that is not JSON ({err}): {line}")
            });
            if message.get("method").is_some() {
                self.seen.push(message);
            } else {
                return line;
            }
        }
    }

    /// Sends a request with a fresh integer id and returns its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let line = self.exchange_raw(&request.to_string());
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(
            answer["id"], id,
            "the answer to {method} answers it: {answer}"
        );
        answer
    }

    /// Waits for the server's next request to the client (skipping notifications into
    /// `seen`).
    pub fn next_server_request(&mut self) -> Value {
        loop {
            let line = self.next_line();
            let message: Value = serde_json::from_str(&line).expect("JSON");
            if message.get("method").is_some() && message.get("id").is_some() {
                return message;
            }
            self.seen.push(message);
        }
    }

    /// `initialize` with these client capabilities, then `notifications/initialized`.
    pub fn initialize(&mut self, capabilities: Value) -> Value {
        let answer = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "servers-tests", "version": "0"}
            }),
        );
        self.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer
    }
}

/// The `mcp_http` binary, found or built once per test process ([`mcp_http::build`]: the
/// `mcp-tasks-http` package is not a dependency of these tests, so `cargo test` here does
/// not build it unless they run).
pub fn mcp_http() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| mcp_http::build("tests"))
}

/// The HTTP server, running on a free port, with principal `alice` (token `token-a`).
pub struct Http {
    child: Child,
    addr: String,
}

/// An HTTP answer: status, body and the `Mcp-Session-Id` header, if any.
pub struct HttpAnswer {
    pub status: u16,
    pub body: String,
    pub session: Option<String>,
}

impl Http {
    pub fn start() -> Self {
        Self::start_with::<&str, &str>(&[])
    }

    /// The HTTP server with these extra environment variables (e.g. a shared store's,
    /// [`stores::Db::env`]).
    pub fn start_with<K: AsRef<OsStr>, V: AsRef<OsStr>>(env: &[(K, V)]) -> Self {
        let mut command = Command::new(mcp_http());
        stores::clear_store_env(&mut command)
            .env_remove("MCP_TASKS_CONFORMANCE")
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the HTTP server starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints where it listens");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        Http { child, addr }
    }

    /// Where the server listens (`HOST:PORT`).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// POSTs `body` to `/mcp` with alice's token and returns the answer.
    pub fn post(&self, body: &str) -> HttpAnswer {
        self.post_in(body, None)
    }

    /// POSTs `body` to `/mcp` with alice's token, in `session` if given.
    pub fn post_in(&self, body: &str, session: Option<&str>) -> HttpAnswer {
        let header = session.map(|id| format!("Mcp-Session-Id: {id}\r\n"));
        self.post_with(body, header.as_deref().unwrap_or_default())
    }

    /// POSTs a 2026-07-28 `body` to `/mcp` with alice's token and the headers that wire
    /// requires: `MCP-Protocol-Version: 2026-07-28` and the routing headers of the body.
    pub fn post_2026(&self, body: &str) -> HttpAnswer {
        let headers = format!(
            "MCP-Protocol-Version: 2026-07-28\r\n{}",
            routing_headers(body)
        );
        self.post_with(body, &headers)
    }

    /// POSTs `body` to `/mcp` with alice's token and these extra header lines (each ending
    /// in CRLF).
    pub fn post_with(&self, body: &str, extra_headers: &str) -> HttpAnswer {
        self.post_as("token-a", body, extra_headers)
    }

    /// POSTs `body` to `/mcp` with bearer `token` and these extra header lines.
    pub fn post_as(&self, token: &str, body: &str, extra_headers: &str) -> HttpAnswer {
        let mut stream = TcpStream::connect(&self.addr).expect("the server accepts");
        stream.set_read_timeout(Some(WAIT)).expect("a timeout");
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n{extra_headers}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .expect("the server reads");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("the server answers");
        let answer = String::from_utf8(answer).expect("UTF-8");
        let (head, body) = answer
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head:?}"));
        let session = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        });
        HttpAnswer {
            status,
            body: body.to_owned(),
            session,
        }
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
