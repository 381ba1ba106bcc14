//! Every 2026-07-28 message the example servers send validates against the official
//! schemas: the 2026-07-28 core (`schema/mcp-schema-2026-07-28.json`, as whole JSON-RPC
//! responses) and, for the task results, the tasks extension (`schema/ext-tasks-schema.json`).
//!
//! Both real binaries are driven, over both transports: `stdio_server` through its pipes
//! and `mcp_http` (the `http/` crate) over HTTP/1.1 with a bearer token and the
//! `MCP-Protocol-Version: 2026-07-28` header. The scenario covers `server/discover`,
//! `tools/list`, `tools/call` (inline and as a task), `tasks/get` in every status,
//! `tasks/update`, `tasks/cancel`, and error answers (-32700, -32600, -32601, -32602,
//! -32603, -32021); `ping` does not exist in 2026-07-28 (`-32601`). Over HTTP the stateless
//! rules (SEP-2575) apply too: a request without the `_meta` framing is `-32602`, and each
//! answer's HTTP status is checked.

#[path = "../../servers/tests/support/mcp_http.rs"]
mod mcp_http_build;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_tasks_servers::child::LineChild;
use mcp_tasks_suites::{EXT_TASKS, MCP_2026_07_28, errors, server_binary};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// One way to send a message and read its answer.
trait Transport {
    /// Sends `body` (one JSON-RPC message) and returns the response, skipping
    /// notifications, with the HTTP status if the transport has one.
    fn exchange(&mut self, body: &str) -> (Option<u16>, Value);

    /// Whether the 2026-07-28 stateless rules of Streamable HTTP apply (SEP-2575): every
    /// request carries the `_meta` framing, and there is no `ping`.
    fn stateless_http(&self) -> bool {
        false
    }
}

struct StdioServer {
    child: LineChild,
}

impl StdioServer {
    fn start() -> Self {
        StdioServer {
            child: LineChild::spawn(server_binary("stdio_server")),
        }
    }
}

impl Transport for StdioServer {
    fn exchange(&mut self, body: &str) -> (Option<u16>, Value) {
        self.child.send_line(body.as_bytes());
        loop {
            let line = self
                .child
                .line_within(WAIT)
                .unwrap_or_else(|| panic!("no answer to {body} within 20 s"));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            if message.get("method").is_none() {
                return (None, message);
            }
        }
    }
}

struct HttpServer {
    child: Child,
    addr: String,
}

impl HttpServer {
    fn start() -> Self {
        let mut child = Command::new(mcp_http())
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the HTTP server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server says where it listens");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        HttpServer { child, addr }
    }
}

impl Transport for HttpServer {
    fn exchange(&mut self, body: &str) -> (Option<u16>, Value) {
        let routing = mcp_http_build::routing_headers(body);
        let mut stream = TcpStream::connect(&self.addr).expect("the server accepts");
        stream.set_read_timeout(Some(WAIT)).expect("a timeout");
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer token-a\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\n{routing}\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .expect("the server reads");
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .expect("the server answers");
        let (head, payload) = answer
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("not HTTP: {answer:?}"));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head:?}"));
        let message = serde_json::from_str(payload)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {payload}"));
        (Some(status), message)
    }

    fn stateless_http(&self) -> bool {
        true
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `_meta` of a 2026-07-28 request, declaring the tasks extension or not.
fn meta(declare: bool) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "servers_2026", "version": "0"}
    });
    if declare {
        meta["io.modelcontextprotocol/clientCapabilities"] =
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    } else {
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    meta
}

/// What a scenario expects of one answer: a result of this kind, or an error code.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Discover,
    ListTools,
    CallInline,
    /// An `InputRequiredResult` (SEP-2322), answering a `tools/call`.
    InputRequired,
    CreateTask,
    GetTask,
    UpdateTask,
    CancelTask,
    Error(i64),
}

/// The core and extension `$defs` an answer of `kind` must satisfy (whole message, then
/// its `result` or `error`).
fn defs(kind: Kind) -> (&'static str, Option<&'static str>) {
    match kind {
        Kind::Discover => ("DiscoverResultResponse", None),
        Kind::ListTools => ("ListToolsResultResponse", None),
        Kind::CallInline | Kind::InputRequired => ("CallToolResultResponse", None),
        Kind::CreateTask => ("JSONRPCResultResponse", Some("CreateTaskResult")),
        Kind::GetTask => ("JSONRPCResultResponse", Some("GetTaskResult")),
        Kind::UpdateTask => ("JSONRPCResultResponse", Some("UpdateTaskResult")),
        Kind::CancelTask => ("JSONRPCResultResponse", Some("CancelTaskResult")),
        Kind::Error(-32021) => ("MissingRequiredClientCapabilityError", Some("Error")),
        Kind::Error(_) => ("JSONRPCErrorResponse", Some("Error")),
    }
}

/// The error type of the 2026-07-28 schema for a standard JSON-RPC code.
fn error_def(code: i64) -> Option<&'static str> {
    match code {
        -32700 => Some("ParseError"),
        -32600 => Some("InvalidRequestError"),
        -32601 => Some("MethodNotFoundError"),
        -32602 => Some("InvalidParamsError"),
        -32603 => Some("InternalError"),
        _ => None,
    }
}

/// The HTTP status of an answer of `kind` on the 2026-07-28 wire, where one kind has one
/// status: a result `200`, an invalid message or a missing capability `400`, an unknown
/// method `404` (`-32602` is `400` for the `_meta` framing but `200` for a tool's
/// arguments; `-32603` is not fixed).
fn http_status(kind: Kind) -> Option<u16> {
    match kind {
        Kind::Error(-32700 | -32600 | -32021) => Some(400),
        Kind::Error(-32601) => Some(404),
        Kind::Error(_) => None,
        _ => Some(200),
    }
}

/// Sends messages, checks each answer against the schemas, and keeps the tally.
struct Session<'t> {
    transport: &'t mut dyn Transport,
    next_id: i64,
    failures: Vec<String>,
    validated: BTreeMap<String, usize>,
}

impl Session<'_> {
    fn validate(&mut self, what: &str, kind: Kind, answer: &Value) {
        let (core, extension) = defs(kind);
        let mut problems = errors(MCP_2026_07_28, core, answer);
        problems.extend(errors(MCP_2026_07_28, "JSONRPCResponse", answer));
        let member = match kind {
            Kind::Error(code) => {
                if answer["error"]["code"] != code {
                    problems.push(format!("expected error {code}"));
                }
                if let Some(def) = error_def(code) {
                    problems.extend(errors(MCP_2026_07_28, def, &answer["error"]));
                }
                &answer["error"]
            }
            Kind::InputRequired => {
                problems.extend(errors(
                    MCP_2026_07_28,
                    "InputRequiredResult",
                    &answer["result"],
                ));
                if answer["result"]["resultType"] != "input_required" {
                    problems.push("expected an InputRequiredResult".into());
                }
                &answer["result"]
            }
            _ => {
                if answer.get("result").is_none() {
                    problems.push("expected a result".into());
                }
                &answer["result"]
            }
        };
        if let Some(def) = extension {
            problems.extend(
                errors(EXT_TASKS, def, member)
                    .into_iter()
                    .map(|p| format!("{EXT_TASKS} {def}: {p}")),
            );
        }
        if problems.is_empty() {
            *self.validated.entry(format!("{kind:?}")).or_default() += 1;
        } else {
            let shown: String = answer.to_string().chars().take(600).collect();
            self.failures.push(format!(
                "{what} ({kind:?}): {} -- {shown}",
                problems.join("; ")
            ));
        }
    }

    /// Checks an HTTP status against the one `kind` comes with (`expected` if given).
    fn status(&mut self, what: &str, kind: Kind, got: Option<u16>, expected: Option<u16>) {
        if let (Some(got), Some(expected)) = (got, expected.or_else(|| http_status(kind)))
            && got != expected
        {
            self.failures.push(format!(
                "{what} ({kind:?}): HTTP {got}, expected {expected}"
            ));
        }
    }

    /// Sends a raw body and validates its answer (and its HTTP status, if `status` is given
    /// or fixed for `kind`).
    fn raw_status(&mut self, what: &str, body: &str, kind: Kind, status: Option<u16>) -> Value {
        let (got, answer) = self.transport.exchange(body);
        self.status(what, kind, got, status);
        self.validate(what, kind, &answer);
        answer
    }

    /// Sends a raw body and validates its answer.
    fn raw(&mut self, what: &str, body: &str, kind: Kind) -> Value {
        self.raw_status(what, body, kind, None)
    }

    /// Sends a 2026-07-28 request and validates its answer.
    fn call(&mut self, method: &str, params: Value, declare: bool, kind: Kind) -> Value {
        self.call_meta(method, params, meta(declare), kind)
    }

    /// Sends a 2026-07-28 request with this `_meta` and validates its answer.
    fn call_meta(&mut self, method: &str, mut params: Value, meta: Value, kind: Kind) -> Value {
        self.next_id += 1;
        params["_meta"] = meta;
        let request =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let (status, answer) = self.transport.exchange(&request.to_string());
        assert_eq!(
            answer["id"], self.next_id,
            "{method} answered in order: {answer}"
        );
        self.status(method, kind, status, None);
        self.validate(method, kind, &answer);
        answer
    }

    /// Starts `tool` as a task and returns its id.
    fn task(&mut self, tool: &str, arguments: Value) -> String {
        let created = self.call(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            true,
            Kind::CreateTask,
        );
        created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: a CreateTaskResult: {created}"))
            .to_owned()
    }

    /// Polls `tasks/get` (each answer validated) until the task reaches `status`.
    fn until(&mut self, task: &str, status: &str) -> Value {
        let start = Instant::now();
        loop {
            let got = self.call("tasks/get", json!({"taskId": task}), true, Kind::GetTask);
            if got["result"]["status"] == status {
                return got["result"].clone();
            }
            assert!(
                start.elapsed() < WAIT,
                "task {task} never reached {status}: {got}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn scenario(&mut self) {
        // Discovery, with and without the request `_meta` (which HTTP requires: SEP-2575).
        let stateless_http = self.transport.stateless_http();
        let bare = r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}}"#;
        if stateless_http {
            let refused = self.raw_status(
                "server/discover (bare)",
                bare,
                Kind::Error(-32602),
                Some(400),
            );
            assert_eq!(refused["id"], "d", "{refused}");
        } else {
            let discovered = self.raw("server/discover (bare)", bare, Kind::Discover);
            assert_eq!(
                discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "mcp-tasks-example",
                "{discovered}"
            );
        }
        let discovered = self.call("server/discover", json!({}), false, Kind::Discover);
        assert_eq!(
            discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcp-tasks-example",
            "{discovered}"
        );
        self.call("tools/list", json!({}), false, Kind::ListTools);
        self.call("tools/list", json!({}), true, Kind::ListTools);
        // 2026-07-28 has no `ping` (nor `initialize`): unknown methods on that wire.
        self.call("ping", json!({}), false, Kind::Error(-32601));
        self.call(
            "initialize",
            json!({"protocolVersion": "2026-07-28", "capabilities": {},
                   "clientInfo": {"name": "servers_2026", "version": "0"}}),
            true,
            Kind::Error(-32601),
        );

        // Inline tool calls.
        self.call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
            true,
            Kind::CallInline,
        );
        self.call(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}}),
            false,
            Kind::CallInline,
        );
        self.call(
            "tools/call",
            json!({"name": "fail", "arguments": {}}),
            false,
            Kind::CallInline,
        );

        // Tasks in every status.
        let slept = self.task("sleep", json!({"ms": 50}));
        self.until(&slept, "completed");
        let failed = self.task("fail", json!({}));
        self.until(&failed, "completed");
        let crashed = self.task("crash", json!({}));
        self.until(&crashed, "failed");
        let asking = self.task("confirm", json!({"question": "go?"}));
        let waiting = self.until(&asking, "input_required");
        let key = waiting["inputRequests"]
            .as_object()
            .and_then(|requests| requests.keys().next().cloned())
            .expect("an input request");
        self.call(
            "tasks/update",
            json!({"taskId": asking, "inputResponses": {key.clone(): {"action": "accept", "content": {"answer": 7}}}}),
            true,
            Kind::Error(-32602),
        );
        self.until(&asking, "input_required");
        self.call(
            "tasks/update",
            json!({"taskId": asking, "inputResponses": {key: {"action": "accept", "content": {"answer": "yes"}}}}),
            true,
            Kind::UpdateTask,
        );
        self.until(&asking, "completed");
        let long = self.task("sleep", json!({"ms": 30_000}));
        self.call(
            "tasks/cancel",
            json!({"taskId": long}),
            true,
            Kind::CancelTask,
        );
        self.until(&long, "cancelled");
        self.call(
            "tasks/cancel",
            json!({"taskId": long}),
            true,
            Kind::CancelTask,
        );

        // Input before a task (SEP-2322): `confirm`, for a client that can elicit but did
        // not declare the tasks extension, asks through an InputRequiredResult; the retry
        // with the answer and the state is answered inline; a changed state is -32602.
        let mut eliciting = meta(false);
        eliciting["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({});
        let confirm = json!({"name": "confirm", "arguments": {"question": "Go on?"}});
        let asked = self.call_meta(
            "tools/call",
            confirm.clone(),
            eliciting.clone(),
            Kind::InputRequired,
        );
        let mut retry = confirm;
        retry["inputResponses"] =
            json!({"confirm": {"action": "accept", "content": {"answer": "yes"}}});
        retry["requestState"] = asked["result"]["requestState"].clone();
        let done = self.call_meta(
            "tools/call",
            retry.clone(),
            eliciting.clone(),
            Kind::CallInline,
        );
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        retry["requestState"] = json!("changed.state");
        self.call_meta("tools/call", retry, eliciting, Kind::Error(-32602));

        // Errors.
        self.raw("not JSON", "{nope", Kind::Error(-32700));
        self.raw(
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":"v","method":"ping","params":{}}"#,
            Kind::Error(-32600),
        );
        self.raw(
            "id null",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Kind::Error(-32600),
        );
        self.call("nope/nope", json!({}), true, Kind::Error(-32601));
        self.call(
            "tasks/result",
            json!({"taskId": slept}),
            true,
            Kind::Error(-32601),
        );
        self.call("tasks/list", json!({}), true, Kind::Error(-32601));
        self.call(
            "tasks/get",
            json!({"taskId": slept}),
            false,
            Kind::Error(-32021),
        );
        self.call(
            "tasks/get",
            json!({"taskId": "nope"}),
            true,
            Kind::Error(-32602),
        );
        self.call(
            "tasks/update",
            json!({"taskId": slept}),
            true,
            Kind::Error(-32602),
        );
        self.call(
            "tools/call",
            json!({"name": "confirm", "arguments": {"question": "q"}}),
            false,
            Kind::Error(-32021),
        );
        self.call(
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
            true,
            Kind::Error(-32602),
        );
        self.call(
            "tools/call",
            json!({"name": "crash", "arguments": {}}),
            false,
            Kind::Error(-32603),
        );
    }
}

fn run(transport: &mut dyn Transport, name: &str) {
    let mut session = Session {
        transport,
        next_id: 0,
        failures: Vec::new(),
        validated: BTreeMap::new(),
    };
    session.scenario();
    assert!(
        session.failures.is_empty(),
        "{name}: {} answers fail the schemas:\n{}",
        session.failures.len(),
        session.failures.join("\n")
    );
    // Every kind of answer was seen and validated.
    for kind in [
        "Discover",
        "ListTools",
        "CallInline",
        "CreateTask",
        "GetTask",
        "UpdateTask",
        "CancelTask",
        "Error(-32700)",
        "Error(-32600)",
        "Error(-32601)",
        "Error(-32602)",
        "Error(-32603)",
        "Error(-32021)",
    ] {
        assert!(
            session.validated.contains_key(kind),
            "{name}: no {kind} validated: {:?}",
            session.validated
        );
    }
}

#[test]
fn the_stdio_server_sends_schema_valid_2026_07_28_messages() {
    run(&mut StdioServer::start(), "stdio_server");
}

#[test]
fn the_http_server_sends_schema_valid_2026_07_28_messages() {
    run(&mut HttpServer::start(), "mcp_http");
}

/// The `mcp_http` binary, found or built once per test process, under a name of its own
/// (`mcp_http.suites`).
fn mcp_http() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| mcp_http_build::build("suites"))
}

/// A `subscriptions/listen` stream of each server, every message checked against the
/// schemas: the acknowledgement (`SubscriptionsAcknowledgedNotification`), the task's
/// notification (the extension's `TaskStatusNotification`, the core's
/// `JSONRPCNotification`), the result that ends the stream at shutdown
/// (`SubscriptionsListenResultResponse`), and the refusal of a listen that does not
/// declare the extension (`MissingRequiredClientCapabilityError`).
mod listen {
    use super::*;

    fn listen_body(id: u64, task_ids: &[&str], declare: bool) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
            "notifications": {"taskIds": task_ids},
            "_meta": meta(declare)
        }})
        .to_string()
    }

    /// A `sleep {ms}` task created through `transport`; its id.
    fn task(transport: &mut dyn Transport, ms: u64) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "sleep", "arguments": {"ms": ms}, "_meta": meta(true)
        }})
        .to_string();
        let (_, answer) = transport.exchange(&body);
        answer["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("not a task: {answer}"))
            .to_owned()
    }

    /// The problems of a listen stream's messages: the acknowledgement, one notification
    /// of `task`, and the result, all of listen `id`.
    fn problems(messages: &[Value], id: u64, task: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let [ack, note, result] = messages else {
            return vec![format!("expected three messages: {messages:?}")];
        };
        for (def, value) in [
            ("SubscriptionsAcknowledgedNotification", ack),
            ("ServerNotification", ack),
            ("JSONRPCNotification", note),
            ("SubscriptionsListenResultResponse", result),
            ("JSONRPCResponse", result),
        ] {
            problems.extend(
                errors(MCP_2026_07_28, def, value)
                    .into_iter()
                    .map(|e| format!("{def}: {e}")),
            );
        }
        problems.extend(
            errors(EXT_TASKS, "TaskStatusNotification", note)
                .into_iter()
                .map(|e| format!("TaskStatusNotification: {e}")),
        );
        for (what, value) in [
            ("acknowledgement", &ack["params"]["_meta"]),
            ("notification", &note["params"]["_meta"]),
            ("result", &result["result"]["_meta"]),
        ] {
            if value["io.modelcontextprotocol/subscriptionId"] != id {
                problems.push(format!("the {what} does not carry the subscription id"));
            }
        }
        if ack["params"]["notifications"]["taskIds"] != json!([task]) {
            problems.push(format!("acknowledged {ack}, not only {task}"));
        }
        if note["params"]["taskId"] != task || note["params"]["status"] != "completed" {
            problems.push(format!("not the task's end: {note}"));
        }
        problems
    }

    /// The refusal of a listen that names `taskIds` without declaring the extension.
    fn refusal_problems(answer: &Value) -> Vec<String> {
        let mut problems = errors(
            MCP_2026_07_28,
            "MissingRequiredClientCapabilityError",
            answer,
        );
        problems.extend(errors(MCP_2026_07_28, "JSONRPCErrorResponse", answer));
        problems
    }

    #[test]
    fn the_stdio_servers_listen_stream_is_schema_valid() {
        let mut server = StdioServer::start();
        let (_, refused) = server.exchange(&listen_body(3, &["t"], false));
        let mut found = refusal_problems(&refused);
        let task = task(&mut server, 300);
        server
            .child
            .send_line(listen_body(4, &[&task, "unknown"], true).as_bytes());
        let line = |child: &LineChild| {
            let line = child.line_within(WAIT).expect("a line within 20 s");
            serde_json::from_str::<Value>(&line).expect("JSON")
        };
        let mut messages = vec![line(&server.child), line(&server.child)];
        server.child.close_stdin();
        messages.push(line(&server.child));
        found.extend(problems(&messages, 4, &task));
        assert!(found.is_empty(), "stdio_server: {found:#?}\n{messages:#?}");
    }

    #[test]
    fn the_http_servers_listen_stream_is_schema_valid() {
        let mut server = HttpServer::start();
        let (status, refused) = server.exchange(&listen_body(3, &["t"], false));
        let mut found = refusal_problems(&refused);
        if status != Some(400) {
            found.push(format!("the refusal is HTTP {status:?}, not 400"));
        }
        let task = task(&mut server, 300);
        let body = listen_body(4, &[&task, "unknown"], true);
        let mut stream = TcpStream::connect(&server.addr).expect("the server accepts");
        stream.set_read_timeout(Some(WAIT)).expect("a timeout");
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer token-a\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\n{}\
             Content-Length: {}\r\n\r\n{body}",
            server.addr,
            mcp_http_build::routing_headers(&body),
            body.len()
        )
        .expect("the server reads");
        // The event stream's `data:` lines (the chunks' sizes and the blank lines apart);
        // the stream ends at shutdown, after its result.
        let mut lines = BufReader::new(stream).lines();
        let mut messages = Vec::new();
        let mut next = || loop {
            let line = lines.next().expect("the stream goes on").expect("readable");
            if let Some(data) = line.strip_prefix("data: ") {
                return serde_json::from_str::<Value>(data).expect("JSON");
            }
        };
        messages.push(next());
        messages.push(next());
        let stopped = Command::new("kill")
            .args(["-TERM", &server.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(stopped.success());
        messages.push(next());
        found.extend(problems(&messages, 4, &task));
        assert!(found.is_empty(), "mcp_http: {found:#?}\n{messages:#?}");
    }
}
