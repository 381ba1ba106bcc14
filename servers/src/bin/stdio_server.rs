//! A real MCP server over stdio (newline-delimited JSON-RPC 2.0) that runs tools as tasks.
//!
//! ```text
//! cargo run --bin stdio_server
//! ```
//!
//! Tools: `sleep` {ms}, `fail` {} (a tool error) and `crash` {} (a JSON-RPC error), task
//! optional; `confirm` {question} (task required; asks the user for input); `echo` {text}
//! (never a task). With `--conformance` (or `MCP_TASKS_CONFORMANCE=1`), the official
//! conformance suite's fixture tools too, and `logging/setLevel` (2025-11-25): the fixtures
//! that report progress, log or ask for sampling or elicitation while they run inline write
//! those notifications and requests on the one channel, ahead of their answer.
//!
//! It speaks both generations of MCP tasks from one registry and one set of handlers:
//! - 2025-11-25 after `initialize`: `ping`, `tools/list`, `tools/call` (with `task`),
//!   `tasks/get|list|cancel|result`, one `notifications/tasks/status` per change of status
//!   or status message, and a task's input requests sent as `elicitation/create` with the
//!   related-task `_meta`, only to a client that declared the `elicitation` capability
//!   (form mode) at `initialize`. Without it, a task-augmented `confirm` is refused at
//!   `tools/call` with `-32602`, naming the missing capability (`data.requiredCapabilities`
//!   is `{"elicitation": {"form": {}}}`). An answer must be an `ElicitResult`: `action`
//!   `accept`, `decline` or `cancel`, and when accepted `content: {"answer": "<string>"}`;
//!   any other shape fails the task with `-32602` (it is never read as an empty answer);
//! - 2026-07-28 requests (`server/discover`, or a `_meta` naming
//!   `io.modelcontextprotocol/protocolVersion`): the tasks extension, where the server
//!   decides which calls run as tasks and `tasks/get` / `tasks/update` / `tasks/cancel`
//!   carry results, input and cancellation; `subscriptions/listen` with
//!   `notifications.taskIds` pushes their changes (`mcp_tasks_servers::listen`): the
//!   acknowledgement, then one `notifications/tasks` per change on this one channel, until
//!   the client sends `notifications/cancelled` naming the listen request (nothing more
//!   follows) or stdin closes (each open listen then gets its `SubscriptionsListenResult`).
//!
//! Messages follow JSON-RPC 2.0 exactly (`mcp_tasks_servers::framing`, shared with
//! `mcp_http`): `"jsonrpc": "2.0"` is required, invalid messages get `-32600` (or
//! `-32700`), ids are echoed byte for byte, and an error whose request id cannot be read
//! has no `id` member.
//!
//! Logs go to stderr.
//!
//! Built with the `otel` feature (`cargo run -p mcp-tasks-servers --features otel --bin
//! stdio_server`), it exports spans and metrics over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`mcp_tasks_servers::telemetry`: the MCP semantic
//! conventions, and the tasks' additions).
//!
//! Environment: `MCP_TASKS_PAGE_SIZE` (tasks per `tasks/list` page, default 50);
//! `MCP_TASKS_LISTEN_MAX_TASK_IDS` (task ids per listen, default 1000) and
//! `MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL` (listens open at once, default 16);
//! `MCP_TASKS_TRACE=<file>` appends every message read and written, one JSON line each,
//! `{"dir": "in" | "out", "msg": ...}`.
//!
//! # A shared store
//! The tasks live in this process unless a shared store's URL is given: a Redis one as
//! `--redis URL` or in `MCP_TASKS_REDIS_URL` (`RedisTaskStore`, cargo feature `redis`), a
//! PostgreSQL one as `--postgres URL` or in `MCP_TASKS_POSTGRES_URL` (`PostgresTaskStore`,
//! cargo feature `postgres`; `MCP_TASKS_POSTGRES_SCHEMA` names the schema, default
//! `mcp_tasks`). The argument wins over the environment; two stores named on either is a
//! usage error. The tasks are then shared by every server started with the same URL (and
//! schema), and `MCP_TASKS_LEASE_MS` sets the lease of a running task (see the HTTP
//! example for the knobs, the same for both stores):
//!
//! ```text
//! cargo run -p mcp-tasks-servers --features redis --bin stdio_server -- --redis redis://127.0.0.1:6379
//! MCP_TASKS_REDIS_URL=redis+unix:///run/redis/redis.sock cargo run -p mcp-tasks-servers --features redis --bin stdio_server
//! cargo run -p mcp-tasks-servers --features postgres --bin stdio_server -- --postgres postgres://mcp@127.0.0.1/mcp
//! MCP_TASKS_POSTGRES_URL='postgresql:///mcp?host=/run/postgresql' cargo run -p mcp-tasks-servers --features postgres --bin stdio_server
//! ```
//!
//! A store that cannot be reached at start-up is one line on stderr naming its URL (a
//! password hidden) and the cause, and exit status 1.
//!
//! Over a shared store the server runs a claim loop too: the redeliverable tasks (`sleep`,
//! `confirm`) of instances that stopped run again here from their last checkpoint (see
//! the HTTP example for the knobs). Nothing of them is sent to this server's client, which
//! may not have created them: their requestors poll or wait with `tasks/result`.
//!
//! A stdio server's requestor is the owner `stdio`, so servers sharing a store see each
//! other's tasks; give each requestor its own `MCP_TASKS_OWNER` (for example the user
//! name) to keep them apart. Built without a store's feature, its URL is a startup error.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks::TaskStore;
use mcp_tasks::protocol::{TaskStatusNotification, tag_related_task};
use mcp_tasks::{
    AnyTask, InputRequired, JsonObject, JsonRpcError, Owner, Task, TaskId, TaskStatus, jsonrpc,
};
use mcp_tasks_servers::claims::ClaimLoop;
use mcp_tasks_servers::framing::{self, Id, Incoming, Refusal};
use mcp_tasks_servers::listen::{LineListens, Listens};
use mcp_tasks_servers::outbound;
use mcp_tasks_servers::peer::{LogLevel, Peer};
use mcp_tasks_servers::server::{Elicitation, Reply, Server, Store};
use mcp_tasks_servers::telemetry::{self, Transport};
use serde_json::{Value, json};

/// How long a task waits for the client to answer an elicitation.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest message (one line) the server reads: 4 MiB.
const MAX_MESSAGE: usize = 4 << 20;

/// How long the claim loop may take to end once stdin closed.
const CLAIM_LOOP_END: Duration = Duration::from_millis(1_500);

/// How long the open listens may take to send their last messages once stdin closed.
const LISTENS_END: Duration = Duration::from_millis(1_500);

/// How often a task waiting for an answer checks whether it was cancelled meanwhile.
const STATUS_CHECK: Duration = Duration::from_millis(100);

/// The client end: writes whole lines, and matches the client's answers to the requests
/// the server sent.
struct Connection {
    stdout: Mutex<io::Stdout>,
    trace: Option<Mutex<File>>,
    pending: Mutex<HashMap<String, Sender<Result<Value, JsonRpcError>>>>,
    next_id: AtomicU64,
    /// Input requests already forwarded to the client: (task, key).
    forwarded: Mutex<HashSet<(TaskId, String)>>,
    /// Whether the client opened a 2025-11-25 session (`initialize`): only then does it get
    /// `notifications/tasks/status`.
    initialized: AtomicBool,
    /// Whether that client declared the `elicitation` capability (form mode).
    elicitation: AtomicBool,
    /// The status and message last notified per task: a change that leaves both as they
    /// were (an answer delivered, a TTL changed) is not notified again.
    notified: Mutex<HashMap<TaskId, (TaskStatus, Option<String>)>>,
    /// The log level the client set with `logging/setLevel`, if it did.
    log_level: Mutex<Option<LogLevel>>,
}

impl Connection {
    fn new() -> io::Result<Self> {
        let trace = match std::env::var_os("MCP_TASKS_TRACE") {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Self {
            stdout: Mutex::new(io::stdout()),
            trace,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            forwarded: Mutex::new(HashSet::new()),
            initialized: AtomicBool::new(false),
            elicitation: AtomicBool::new(false),
            notified: Mutex::new(HashMap::new()),
            log_level: Mutex::new(None),
        })
    }

    fn trace(&self, entry: Value) {
        if let Some(trace) = &self.trace {
            let mut file = trace.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(err) = writeln!(file, "{entry}") {
                eprintln!("stdio_server: cannot write the trace: {err}");
            }
        }
    }

    /// Writes one message as one line.
    fn send(&self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes one message, already serialized, as one line.
    fn send_line(&self, line: &str) {
        {
            let mut out = self.stdout.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(err) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                eprintln!("stdio_server: cannot write to stdout: {err}");
            }
        }
        self.trace_raw("out", line);
    }

    /// Traces a message as the JSON text it is (ids stay as written).
    fn trace_raw(&self, dir: &str, message: &str) {
        if let Some(trace) = &self.trace {
            let mut file = trace.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(err) = writeln!(file, "{{\"dir\":\"{dir}\",\"msg\":{message}}}") {
                eprintln!("stdio_server: cannot write the trace: {err}");
            }
        }
    }

    /// Traces a line read: as the JSON it is (ids stay as written), or as `raw` text.
    fn trace_in(&self, line: &[u8]) {
        if self.trace.is_none() {
            return;
        }
        match std::str::from_utf8(line) {
            Ok(text)
                if !text.contains('\r')
                    && serde_json::from_str::<&serde_json::value::RawValue>(text).is_ok() =>
            {
                self.trace_raw("in", text);
            }
            _ => self.trace(json!({"dir": "in", "raw": String::from_utf8_lossy(line)})),
        }
    }

    fn respond(&self, id: &Id, answer: Result<Value, JsonRpcError>) {
        self.send_line(&framing::response(Some(id), &answer));
    }

    /// Answers a message that is not JSON-RPC 2.0.
    fn refuse(&self, refusal: &Refusal) {
        self.send_line(&refusal.to_json());
    }

    /// Whether `task`'s change is news: its status or message differ from the last one
    /// notified. A terminal task is forgotten.
    fn is_news(&self, task: &AnyTask) -> bool {
        let mut notified = self.notified.lock().unwrap_or_else(PoisonError::into_inner);
        let now = (task.status(), task.status_message().map(str::to_owned));
        if task.is_terminal() {
            return notified.remove(task.id()).is_none_or(|last| last != now);
        }
        notified.insert(task.id().clone(), now.clone()) != Some(now)
    }

    /// Sends a request to the client for `task` and blocks until the client answers, the
    /// task stops waiting (cancelled or expired: the request is then withdrawn with
    /// `notifications/cancelled`), or `ANSWER_TIMEOUT` passes.
    fn request(
        &self,
        method: &str,
        params: JsonObject,
        registry: &Store,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Value, JsonRpcError> {
        let (id, answered) = self.send_request(method, &Value::Object(params));
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let answer = loop {
            match answered.recv_timeout(STATUS_CHECK) {
                Ok(answer) => break answer,
                Err(RecvTimeoutError::Disconnected) => {
                    break Err(JsonRpcError::new(
                        jsonrpc::INTERNAL_ERROR,
                        "the connection to the client closed",
                    ));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let waiting = registry
                        .get(owner, task_id)
                        .is_ok_and(|task| task.status() == TaskStatus::InputRequired);
                    if !waiting {
                        self.send(&json!({
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "the task no longer waits for this input"},
                        }));
                        break Err(JsonRpcError::new(
                            jsonrpc::INTERNAL_ERROR,
                            "the task stopped waiting for the client's answer",
                        ));
                    }
                    if Instant::now() >= deadline {
                        break Err(JsonRpcError::new(
                            jsonrpc::INTERNAL_ERROR,
                            format!("the client did not answer `{method}`"),
                        ));
                    }
                }
            }
        };
        self.forget_request(&id);
        answer
    }

    /// Sends a request to the client: its id, and where its answer arrives.
    fn send_request(
        &self,
        method: &str,
        params: &Value,
    ) -> (String, mpsc::Receiver<Result<Value, JsonRpcError>>) {
        let id = format!("server-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let (answer, answered) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), answer);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, answered)
    }

    /// Stops waiting for the answer to request `id`.
    fn forget_request(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Hands the client's answer to the thread waiting for it.
    fn resolve(&self, message: &JsonObject) {
        let Some((id, answer)) = outbound::client_answer(message) else {
            return;
        };
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        let Some(waiting) = waiting else {
            eprintln!("stdio_server: an answer to unknown request {id} was ignored");
            return;
        };
        // The waiting thread may have timed out and gone; nothing to do then.
        let _ = waiting.send(answer);
    }
}

/// The client end of a request answered inline: notifications go out at once, and
/// requests wait for the client's answer (at most `ANSWER_TIMEOUT`).
struct StdioPeer(Arc<Connection>);

impl Peer for StdioPeer {
    fn notify(&self, method: &str, params: Value) {
        self.0
            .send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
        if method == "elicitation/create" && !self.0.elicitation.load(Ordering::SeqCst) {
            return Err(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                "invalid params: this client did not declare the `elicitation` capability",
            ));
        }
        let (id, answered) = self.0.send_request(method, &params);
        let answer = answered.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
            Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("the client did not answer `{method}`"),
            ))
        });
        self.0.forget_request(&id);
        answer
    }

    fn log_level(&self) -> Option<LogLevel> {
        *self
            .0
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn set_log_level(&self, level: LogLevel) {
        *self
            .0
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }
}

/// In 2025-11-25 a task's input requests travel as ordinary server→client requests tagged
/// with the related-task `_meta`; the answers go back into the registry, where the handler
/// waits for them. Each outstanding key is forwarded once.
fn forward_input(
    connection: &Arc<Connection>,
    registry: &Store,
    owner: &Owner,
    task: &Task<InputRequired>,
) {
    for (key, request) in task.input_requests().iter() {
        let forwarded = (task.id().clone(), key.to_owned());
        let fresh = connection
            .forwarded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(forwarded.clone());
        if !fresh {
            continue;
        }
        let mut params = request.params.clone();
        tag_related_task(&mut params, task.id());
        let (connection, registry, owner) =
            (Arc::clone(connection), registry.clone(), owner.clone());
        let (method, id, key) = (
            request.method.clone(),
            task.id().to_string(),
            key.to_owned(),
        );
        std::thread::spawn(move || {
            let answer = outbound::input_response(
                connection.request(&method, params, &registry, &owner, &id),
            );
            let mut responses = JsonObject::new();
            responses.insert(key, Value::Object(answer));
            if let Err(err) = registry.respond(&owner, &id, responses) {
                eprintln!("stdio_server: task {id}: {err}");
            }
            connection
                .forwarded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&forwarded);
        });
    }
}

/// Reads one request, notification or response and acts on it.
fn handle_line(
    server: &Server,
    connection: &Arc<Connection>,
    listens: &Arc<LineListens>,
    owner: &Owner,
    line: &[u8],
) {
    connection.trace_in(line);
    let (id, method, params) = match framing::parse(line) {
        Incoming::Request { id, method, params } => (id, method, params),
        // Notifications need no answer; `notifications/cancelled` naming a listen ends it.
        Incoming::Notification { method, params } => {
            if method == "notifications/cancelled"
                && let Some(request) = params
                    .as_ref()
                    .and_then(|params| params.get("requestId"))
                    .and_then(|id| Id::parse(&id.to_string()))
            {
                listens.cancel(request.request_id());
            }
            return;
        }
        Incoming::Response(message) => return connection.resolve(&message),
        Incoming::Invalid(refusal) => return connection.refuse(&refusal),
    };
    if method == "initialize" {
        let declared = Elicitation::declared_in(params.as_ref()) == Elicitation::Declared;
        connection.elicitation.store(declared, Ordering::SeqCst);
        connection.initialized.store(true, Ordering::SeqCst);
    }
    if Listens::handles(&method, params.as_ref()) {
        if let Err(error) = listens.listen(owner, &id, params.as_ref()) {
            connection.respond(&id, Err(error));
        }
        return;
    }
    let elicitation = if connection.elicitation.load(Ordering::SeqCst) {
        Elicitation::Declared
    } else {
        Elicitation::Undeclared
    };
    match server.request(owner, id.request_id(), &method, params, elicitation) {
        Reply::Now(answer) => connection.respond(&id, answer),
        Reply::Later(work) => {
            let connection = Arc::clone(connection);
            std::thread::spawn(move || connection.respond(&id, work()));
        }
        Reply::ThenRun(answer, work) => {
            connection.respond(&id, Ok(answer));
            work.start();
        }
        Reply::Talk(work) => {
            let connection = Arc::clone(connection);
            std::thread::spawn(move || {
                let answer = work(&StdioPeer(Arc::clone(&connection)));
                connection.respond(&id, answer);
            });
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Spans and metrics over OTLP when the OTEL_EXPORTER_OTLP_* variables ask for it
    // (feature `otel`), flushed when main returns.
    let telemetry = telemetry::init(Transport::Stdio);
    // Said only when something is exported: stderr stays quiet otherwise (a store that
    // cannot be reached at start-up is one line there).
    if telemetry.exporting() {
        eprintln!("stdio_server: {}", telemetry.describe());
    }
    let server = Arc::new(Server::from_env()?);
    let connection = Arc::new(Connection::new()?);
    // Over stdio there is one requestor: the process that started this server. On a shared
    // store, MCP_TASKS_OWNER tells requestors apart.
    let owner = Owner::new(
        std::env::var("MCP_TASKS_OWNER")
            .ok()
            .filter(|owner| !owner.is_empty())
            .unwrap_or_else(|| "stdio".to_owned()),
    );

    let writer = Arc::clone(&connection);
    let listens = LineListens::new(
        Listens::from_env(server.store().clone())?.counted_by(server.telemetry().clone()),
        Arc::new(move |line: &str| writer.send_line(line)),
    );

    let notifier = Arc::clone(&connection);
    let watcher = Arc::clone(&server);
    let registry = server.store().clone();
    let session = owner.clone();
    TaskStore::subscribe(server.store(), move |change| {
        // Only 2025-11-25 tasks get 2025-11-25 treatment: their input travels as requests
        // to the client, and their changes as notifications/tasks/status.
        if !watcher.is_v1_task(change.task.id()) {
            return;
        }
        if let AnyTask::InputRequired(task) = &change.task {
            forward_input(&notifier, &registry, &session, task);
        }
        if notifier.initialized.load(Ordering::SeqCst) && notifier.is_news(&change.task) {
            match serde_json::to_value(TaskStatusNotification::new(change.task.clone())) {
                Ok(notification) => notifier.send(&notification),
                Err(err) => eprintln!("stdio_server: cannot serialize a notification: {err}"),
            }
        }
        if change.task.is_terminal() {
            watcher.forget_task(change.task.id());
        }
    });

    // Over a shared store, the redeliverable tasks of instances that stopped are run again
    // here. Their requestor is not this connection's client (not even a 2025-11-25 one:
    // nothing says which stdio client created a task), so nothing is forwarded to it: the
    // requestor polls with tasks/get, or waits with tasks/result.
    let stopping = Arc::new(AtomicBool::new(false));
    let claims = if server.is_shared() {
        let stop = Arc::clone(&stopping);
        Some(ClaimLoop::start(
            Arc::clone(&server),
            move || stop.load(Ordering::SeqCst),
            |claimed| {
                if let Ok(job) = &claimed.job {
                    eprintln!(
                        "stdio_server: claimed task {}: `{}`, attempt {} of {}",
                        claimed.task,
                        job.tool,
                        claimed.attempts.attempt(),
                        claimed.attempts.max()
                    );
                }
                claimed.into_work().start();
            },
            |warning| eprintln!("stdio_server: claim loop: {warning}"),
        )?)
    } else {
        None
    };

    eprintln!("stdio_server: ready (MCP 2025-11-25 over stdio)");
    let mut stdin = io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut stdin)
            .take(MAX_MESSAGE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        if line.len() > MAX_MESSAGE && line.last() != Some(&b'\n') {
            // Too long: skip the rest of the line, answer, and keep serving.
            let mut rest = Vec::new();
            while (&mut stdin).take(1 << 16).read_until(b'\n', &mut rest)? > 0 {
                let ended = rest.last() == Some(&b'\n');
                rest.clear();
                if ended {
                    break;
                }
            }
            connection.refuse(&Refusal::invalid_request(&format!(
                "invalid request: a message is at most {MAX_MESSAGE} bytes"
            )));
            continue;
        }
        let trimmed = line.trim_ascii();
        if !trimmed.is_empty() {
            handle_line(&server, &connection, &listens, &owner, trimmed);
        }
    }
    eprintln!("stdio_server: stdin closed, shutting down");
    if !listens.close_all(LISTENS_END) {
        eprintln!("stdio_server: the open listens did not end in time");
    }
    stopping.store(true, Ordering::SeqCst);
    if let Some(claims) = claims {
        let _ended = claims.join_within(CLAIM_LOOP_END);
    }
    Ok(())
}
