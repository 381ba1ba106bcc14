//! Shared by the hostile-input and load suites: the `mcp_http` binary as a child process
//! (killed on drop), and a tiny HTTP/1.1 client on plain `TcpStream`s that can also send
//! malformed or stalled requests.
//!
//! Every read and write has a timeout, so no test can hang on a server that stops
//! answering: a missing answer is an `Err` naming what was waited for.

#![allow(dead_code)]

pub mod v2026;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The principals of every test server: alice (the legitimate client) and bob (the staller).
pub const TOKENS: &str = "alice=token-a,bob=token-b";
/// Alice's bearer token.
pub const ALICE: &str = "token-a";
/// Bob's bearer token.
pub const BOB: &str = "token-b";
/// The 2025-11-25 protocol version.
pub const VERSION: &str = "2025-11-25";

/// Tests that measure timing run one at a time: each starts its own server, but the
/// machine is small and a neighbour's 300 connections would blur the bounds.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit; returns the soft limit
/// now in force.
pub fn raise_own_nofile() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; raising soft up to hard needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return raised.rlim_cur;
        }
    }
    limit.rlim_cur
}

/// How the test server is started.
#[derive(Default)]
pub struct Launch {
    env: Vec<(String, String)>,
    nofile: Option<u64>,
}

impl Launch {
    /// The defaults: tokens `alice=token-a,bob=token-b`, a free loopback port.
    pub fn new() -> Self {
        Launch::default()
    }

    /// Sets one more environment variable for the server.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Starts the server with both its soft and hard `RLIMIT_NOFILE` at `limit` (the server
    /// raises soft to hard at start, so both are set).
    pub fn nofile(mut self, limit: u64) -> Self {
        self.nofile = Some(limit);
        self
    }

    /// Starts `mcp_http` and waits for its `listening on` line.
    pub fn start(self) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp_http"));
        for name in [
            // The default log level (info) shows the back-off and shutdown messages.
            "RUST_LOG",
            "MCP_TASKS_REDIS_URL",
            "MCP_TASKS_TOKENS_FILE",
            "MCP_TASKS_ANONYMOUS",
            "MCP_TASKS_TRACE_DIR",
            "MCP_TASKS_ALLOWED_ORIGINS",
        ] {
            command.env_remove(name);
        }
        if !self
            .env
            .iter()
            .any(|(name, _)| name == "MCP_TASKS_TOKENS_FILE")
        {
            command.env("MCP_TASKS_TOKENS", TOKENS);
        } else {
            command.env_remove("MCP_TASKS_TOKENS");
        }
        command.env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0");
        for (name, value) in &self.env {
            command.env(name, value);
        }
        if let Some(limit) = self.nofile {
            let limit = limit as libc::rlim_t;
            // SAFETY: the closure only calls `setrlimit`, which is async-signal-safe, on a
            // stack value; it allocates nothing between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let wanted = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcp_http starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let errors = child.stderr.take().expect("stderr");
        let collected = Arc::clone(&stderr);
        thread::spawn(move || {
            // Kept draining so the server never blocks (or fails) writing its log.
            for line in BufReader::new(errors).lines() {
                let Ok(line) = line else { break };
                let mut text = collected.lock().unwrap_or_else(|p| p.into_inner());
                // Bounded: a chatty server cannot fill the test's memory.
                if text.len() < 4 << 20 {
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .map(str::to_owned);
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            thread::sleep(Duration::from_millis(100));
            panic!(
                "mcp_http did not print its address ({read:?}, first line {line:?}); stderr:\n{}",
                stderr.lock().unwrap_or_else(|p| p.into_inner())
            );
        };
        thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stdout.read_to_end(&mut sink);
        });
        Server {
            pid: child.id(),
            child,
            addr: addr.parse().expect("a socket address"),
            stderr,
            exited: None,
        }
    }
}

/// A running `mcp_http`; killed and reaped on drop.
pub struct Server {
    child: Child,
    /// Its process id.
    pub pid: u32,
    /// Where it listens.
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
    exited: Option<ExitStatus>,
}

impl Server {
    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether the process is still running (and, if not, how it ended).
    pub fn alive(&mut self) -> Result<(), String> {
        if let Some(status) = self.exited {
            return Err(format!("mcp_http exited: {status}"));
        }
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                self.exited = Some(status);
                thread::sleep(Duration::from_millis(100));
                Err(format!(
                    "mcp_http exited: {status}; stderr:\n{}",
                    self.stderr()
                ))
            }
            Err(err) => Err(format!("cannot wait for mcp_http: {err}")),
        }
    }

    /// The server's resident set size in KiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_kib(&self) -> u64 {
        self.status_field("VmRSS:")
    }

    /// The server's threads (`Threads` of `/proc/PID/status`).
    pub fn threads(&self) -> u64 {
        self.status_field("Threads:")
    }

    /// The number of the line `field` of `/proc/PID/status` (a unit after it ignored).
    fn status_field(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .expect("/proc/PID/status of a running server");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status:\n{status}"))
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the server.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: plain kill(2) on our own child's pid.
        let sent = unsafe { libc::kill(self.pid as libc::pid_t, signal) };
        assert_eq!(sent, 0, "kill({}, {signal})", self.pid);
    }

    /// Waits up to `within` for the process to exit; its status, or `None` if still running.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.exited {
                return Some(status);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = Some(status);
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Fails with the server's stderr if it wrote a Rust panic message.
    pub fn assert_no_panic(&self) {
        let stderr = self.stderr();
        assert!(
            !stderr.contains("panicked"),
            "mcp_http panicked; stderr:\n{stderr}"
        );
    }

    /// Asserts the server runs and serves alice (initialize, then ping in that session)
    /// within `bound`; returns how long it took.
    pub fn assert_serves_alice(&mut self, bound: Duration, when: &str) -> Duration {
        if let Err(err) = self.alive() {
            panic!("{when}: {err}");
        }
        match alice_ping(self.addr, bound) {
            Ok(took) => took,
            Err(err) => panic!(
                "{when}: alice's ping was not answered within {bound:?}: {err}; stderr:\n{}",
                tail(&self.stderr(), 40)
            ),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC response message: the body itself for `application/json`, or the
    /// first SSE event that is a response (has `id`, no `method`) for `text/event-stream`.
    pub fn message(&self) -> Result<Value, String> {
        let event_stream = self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !event_stream {
            return serde_json::from_slice(&self.body).map_err(|err| {
                format!(
                    "HTTP {}: body is not JSON ({err}): {}",
                    self.status,
                    self.text()
                )
            });
        }
        for event in self.text().replace("\r\n", "\n").split("\n\n") {
            let Some(data) = event_data(event) else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if message.get("id").is_some() && message.get("method").is_none() {
                return Ok(message);
            }
        }
        Err(format!(
            "HTTP {}: no response in the event stream: {}",
            self.status,
            self.text()
        ))
    }

    /// Whether the server will close the connection after this answer.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// The `data` of one SSE event (its `data:` lines joined), if it has any.
pub fn event_data(event: &str) -> Option<String> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!data.is_empty()).then(|| data.join("\n"))
}

/// What an HTTP exchange can end in besides an answer.
pub fn is_closed(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

/// One client connection with a read buffer, kept alive across requests.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    /// Connects within `timeout`; reads and writes then time out after `timeout` too.
    pub fn open(addr: SocketAddr, timeout: Duration) -> io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::new(stream),
        })
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    /// Sets the read timeout for what follows.
    pub fn set_read_timeout(&self, timeout: Duration) {
        let _ = self
            .stream()
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))));
    }

    /// Writes `bytes` as they are.
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stream = self.reader.get_mut();
        stream.write_all(bytes)?;
        stream.flush()
    }

    fn read_line(&mut self) -> io::Result<String> {
        let mut line = Vec::new();
        let n = (&mut self.reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        Ok(String::from_utf8_lossy(&line)
            .trim_end_matches(['\r', '\n'])
            .to_owned())
    }

    /// Reads one answer (skipping `1xx` interim answers): `Content-Length`, chunked, or
    /// until the server closes. An `Err` of kind `UnexpectedEof`/reset means the server
    /// closed the connection without (completing) an answer.
    pub fn read_response(&mut self) -> io::Result<Response> {
        self.read_response_inner().map_err(|err| {
            if matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) {
                let waited = self.stream().read_timeout().ok().flatten();
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no (complete) answer within {waited:?}"),
                )
            } else {
                err
            }
        })
    }

    /// Reads header lines up to the blank line: names lower-cased, values trimmed.
    fn read_headers(&mut self) -> io::Result<Vec<(String, String)>> {
        let mut headers = Vec::new();
        loop {
            let line = self.read_line()?;
            if line.is_empty() {
                return Ok(headers);
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
    }

    fn read_response_inner(&mut self) -> io::Result<Response> {
        loop {
            let status = self.read_status()?;
            let headers = self.read_headers()?;
            if (100..200).contains(&status) {
                continue;
            }
            let mut response = Response {
                status,
                headers,
                body: Vec::new(),
            };
            let chunked = response
                .header("transfer-encoding")
                .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
            let length = response
                .header("content-length")
                .and_then(|l| l.parse::<usize>().ok());
            if status == 204 || status == 304 {
            } else if chunked {
                while let Some(chunk) = self.read_chunk()? {
                    response.body.extend_from_slice(&chunk);
                }
            } else if let Some(length) = length {
                response.body.resize(length.min(64 << 20), 0);
                self.reader.read_exact(&mut response.body)?;
            } else {
                (&mut self.reader)
                    .take(64 << 20)
                    .read_to_end(&mut response.body)?;
            }
            return Ok(response);
        }
    }

    /// Reads an answer's head. An event stream's status comes back `Ok`, its body left to
    /// read chunk by chunk ([`read_chunk`](Self::read_chunk)); any other answer is read
    /// whole (by its `Content-Length`) and comes back `Err`.
    pub fn read_stream_head(&mut self) -> io::Result<Result<u16, Response>> {
        let status = self.read_status()?;
        let headers = self.read_headers()?;
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if response
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
        {
            return Ok(Ok(status));
        }
        let length = response
            .header("content-length")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(0);
        response.body.resize(length.min(64 << 20), 0);
        self.reader.read_exact(&mut response.body)?;
        Ok(Err(response))
    }

    /// Reads one chunk of a chunked body (a stream's next bytes); `None` at its end.
    pub fn read_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let size_line = self.read_line()?;
        let hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad chunk size {size_line:?}"),
            )
        })?;
        if size == 0 {
            while !self.read_line()?.is_empty() {}
            return Ok(None);
        }
        let mut chunk = vec![0; size];
        self.reader.read_exact(&mut chunk)?;
        self.read_line()?;
        Ok(Some(chunk))
    }

    /// Reads only an answer's status line and headers (for a stream that stays open);
    /// returns the status.
    pub fn read_head(&mut self) -> io::Result<u16> {
        let status = self.read_status()?;
        while !self.read_line()?.is_empty() {}
        Ok(status)
    }

    /// Reads an answer's status line and returns its status code.
    fn read_status(&mut self) -> io::Result<u16> {
        let status_line = self.read_line()?;
        status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a status line: {status_line:?}"),
                )
            })
    }

    /// POSTs `body` to `/mcp` with these bearer token and session (if any) and reads the
    /// answer.
    pub fn post(
        &mut self,
        token: Option<&str>,
        session: Option<&str>,
        body: &str,
    ) -> io::Result<Response> {
        let request = post_head(
            self.stream().peer_addr()?,
            token,
            session,
            Some(body.len() as u64),
        );
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        self.write_raw(&bytes)?;
        self.read_response()
    }
}

/// The head of a `POST /mcp` (ending with the blank line), with `Content-Length: length`
/// if given.
pub fn post_head(
    addr: SocketAddr,
    token: Option<&str>,
    session: Option<&str>,
    length: Option<u64>,
) -> String {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n"
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(session) = session {
        head.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {VERSION}\r\n"
        ));
    }
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// A JSON-RPC request with `id`.
pub fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The `params` of a 2025-11-25 `initialize`.
pub fn initialize_params(client: &str) -> Value {
    json!({
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": client, "version": "0"}
    })
}

/// A 2025-11-25 client session over one keep-alive connection (reopened only if the server
/// says `Connection: close`).
pub struct Session {
    addr: SocketAddr,
    timeout: Duration,
    conn: Conn,
    token: String,
    /// The `Mcp-Session-Id` issued by `initialize`.
    pub id: String,
    /// How long opening took: connect, `initialize`, `notifications/initialized`.
    pub opening: [Duration; 3],
    next_id: u64,
}

impl Session {
    /// Connects, sends `initialize` and `notifications/initialized`.
    pub fn open(addr: SocketAddr, token: &str, timeout: Duration) -> Result<Session, String> {
        let start = Instant::now();
        let mut conn = Conn::open(addr, timeout).map_err(|err| format!("connect: {err}"))?;
        let connect = start.elapsed();
        let start = Instant::now();
        let answer = conn
            .post(
                Some(token),
                None,
                &rpc(1, "initialize", initialize_params("hostile-suite")),
            )
            .map_err(|err| format!("initialize: {err}"))?;
        let message = answer
            .message()
            .map_err(|err| format!("initialize: {err}"))?;
        if answer.status != 200 || message.get("result").is_none() {
            return Err(format!("initialize: HTTP {}: {message}", answer.status));
        }
        let id = answer
            .header("mcp-session-id")
            .ok_or("initialize: no Mcp-Session-Id")?
            .to_owned();
        let initialize = start.elapsed();
        let mut session = Session {
            addr,
            timeout,
            conn,
            token: token.to_owned(),
            id,
            opening: [connect, initialize, Duration::ZERO],
            next_id: 1,
        };
        if answer.closes() {
            session.reconnect()?;
        }
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let start = Instant::now();
        let answer = session
            .conn
            .post(Some(token), Some(&session.id), initialized)
            .map_err(|err| format!("notifications/initialized: {err}"))?;
        if answer.status != 202 {
            return Err(format!(
                "notifications/initialized: HTTP {} (expected 202): {}",
                answer.status,
                answer.text()
            ));
        }
        session.opening[2] = start.elapsed();
        if answer.closes() {
            session.reconnect()?;
        }
        Ok(session)
    }

    fn reconnect(&mut self) -> Result<(), String> {
        self.conn =
            Conn::open(self.addr, self.timeout).map_err(|err| format!("reconnect: {err}"))?;
        Ok(())
    }

    /// Sends a request; its `result`, or what went wrong (no answer, HTTP status, JSON-RPC
    /// error).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let answer = self
            .conn
            .post(Some(&self.token), Some(&self.id), &rpc(id, method, params))
            .map_err(|err| format!("{method}: {err}"))?;
        if answer.closes() {
            self.reconnect()?;
        }
        let message = answer.message().map_err(|err| format!("{method}: {err}"))?;
        if answer.status != 200 {
            return Err(format!("{method}: HTTP {}: {message}", answer.status));
        }
        if message["id"] != id {
            return Err(format!("{method}: answered another id: {message}"));
        }
        message
            .get("result")
            .cloned()
            .ok_or_else(|| format!("{method}: no result: {message}"))
    }
}

/// Alice opens a fresh session and pings in it; how long the whole took, or why it failed
/// (also when it took longer than `bound`).
pub fn alice_ping(addr: SocketAddr, bound: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    let mut session = Session::open(addr, ALICE, bound)?;
    let pong = session.request("ping", json!({}))?;
    let took = start.elapsed();
    if !pong.is_object() {
        return Err(format!("ping answered {pong}"));
    }
    if took > bound {
        return Err(format!("answered after {took:?}"));
    }
    Ok(took)
}

/// A task-augmented `tools/call` of `sleep {ms}`, then `tasks/get` and `tasks/result`, in
/// `session`; the time each of the three took, or what went wrong.
pub fn sleep_task_round(session: &mut Session, ms: u64) -> Result<[Duration; 3], String> {
    let start = Instant::now();
    let created = session.request(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": ms}, "task": {}}),
    )?;
    let call = start.elapsed();
    let task_id = created["task"]["taskId"]
        .as_str()
        .ok_or_else(|| format!("tools/call: not a CreateTaskResult: {created}"))?
        .to_owned();
    let start = Instant::now();
    let got = session.request("tasks/get", json!({"taskId": task_id}))?;
    let get = start.elapsed();
    if got["taskId"] != task_id.as_str() {
        return Err(format!("tasks/get: another task: {got}"));
    }
    let start = Instant::now();
    let result = session.request("tasks/result", json!({"taskId": task_id}))?;
    let wait = start.elapsed();
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if text != format!("slept {ms} ms") {
        return Err(format!("tasks/result: unexpected result {result}"));
    }
    Ok([call, get, wait])
}

/// The `q`-quantile (0..=1) of sorted `samples`.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
