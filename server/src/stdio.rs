//! MCP over stdio (newline-delimited JSON-RPC 2.0), or over any pair of byte streams:
//! [`Server::serve_stdio`], [`Server::serve_lines`].
//!
//! One requestor (the process at the other end, the owner [`Stdio::owner`] names), every
//! feature of both generations: on 2025-11-25 `notifications/tasks/status` for each change
//! of a task's status or message, and a task's input requests sent as `elicitation/create`
//! (to a client that declared `elicitation`); on 2026-07-28 `subscriptions/listen`, whose
//! notifications travel on the same channel until the client sends `notifications/cancelled`
//! naming the listen, or the input ends. Requests to the client from a call running at
//! once (progress, log messages, sampling, elicitation) go out on the channel too.
//!
//! Messages follow JSON-RPC 2.0 exactly ([`crate::framing`]): invalid messages
//! get `-32600` (or `-32700`), ids are echoed byte for byte, a message longer than
//! [`MAX_MESSAGE`] is refused and skipped. Over a shared store the server also runs its
//! claim loop: the redeliverable tasks of instances that stopped run again here (their
//! requestors poll or wait with `tasks/result`; nothing of them is sent on this channel).

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks::protocol::{TaskStatusNotification, tag_related_task};
use mcp_tasks::{
    AnyTask, InputRequired, JsonObject, JsonRpcError, Owner, Task, TaskId, TaskStatus, TaskStore,
    WatchLimits, jsonrpc,
};
use serde_json::{Value, json};

use crate::claims::ClaimLoop;
use crate::framing::{self, Id, Incoming, Refusal};
use crate::listen::{self, LineListens, Listens};
use crate::outbound;
use crate::peer::{Answer, LogLevel, Peer};
use crate::server::{Elicitation, Reply, Server, Store};
use crate::telemetry::Telemetry;
use crate::work::{Work, oneshot, within};

/// How long a task waits for the client to answer an elicitation.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest message (one line) the server reads: 4 MiB.
pub const MAX_MESSAGE: usize = 4 << 20;

/// How long the claim loop may take to end once the input closed.
const CLAIM_LOOP_END: Duration = Duration::from_millis(1_500);

/// How long the open listens may take to send their last messages once the input closed.
const LISTENS_END: Duration = Duration::from_millis(1_500);

/// How often a task waiting for an answer checks whether it was cancelled meanwhile.
const STATUS_CHECK: Duration = Duration::from_millis(100);

/// The environment variable naming the stdio requestor ([`Stdio::from_env`]).
pub const OWNER_ENV: &str = "MCP_TASKS_OWNER";

/// The environment variable naming a file that every message read and written is appended
/// to, one JSON line each, `{"dir": "in" | "out", "msg": ...}` ([`Stdio::from_env`]).
pub const TRACE_ENV: &str = "MCP_TASKS_TRACE";

/// How a server serves stdio: its requestor, its message trace, its listen limits.
#[derive(Debug, Clone)]
pub struct Stdio {
    owner: Owner,
    trace: Option<PathBuf>,
    listen_limits: WatchLimits,
}

impl Default for Stdio {
    fn default() -> Self {
        Self {
            owner: Owner::new("stdio"),
            trace: None,
            listen_limits: WatchLimits::default(),
        }
    }
}

impl Stdio {
    /// The requestor is the owner `stdio`; no trace; the default listen limits.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// What the environment sets: [`OWNER_ENV`], [`TRACE_ENV`], and the listen limits
    /// ([`listen::MAX_TASK_IDS_ENV`], [`listen::MAX_PER_PRINCIPAL_ENV`]).
    ///
    /// # Errors
    /// A listen limit that is not a positive whole number.
    pub fn from_env() -> Result<Self, String> {
        let mut stdio = Self::new().listen_limits(listen::limits_from_env()?);
        if let Some(owner) = std::env::var(OWNER_ENV)
            .ok()
            .filter(|owner| !owner.is_empty())
        {
            stdio = stdio.owner(Owner::new(owner));
        }
        if let Some(path) = std::env::var_os(TRACE_ENV) {
            stdio = stdio.trace_file(path);
        }
        Ok(stdio)
    }

    /// The requestor: every task of this connection belongs to `owner`. Servers sharing a
    /// store see the tasks of the same owner: give each requestor its own (a user name).
    #[must_use]
    pub fn owner(mut self, owner: Owner) -> Self {
        self.owner = owner;
        self
    }

    /// Appends every message read and written to the file at `path`.
    #[must_use]
    pub fn trace_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// The bounds of `subscriptions/listen`.
    #[must_use]
    pub fn listen_limits(mut self, limits: WatchLimits) -> Self {
        self.listen_limits = limits;
        self
    }
}

impl Server {
    /// Serves MCP on this process's stdin and stdout until stdin closes, as
    /// [`Stdio::new`] says (the requestor `stdio`, no trace).
    ///
    /// # Errors
    /// Reading stdin failed, or the trace file cannot be opened.
    pub fn serve_stdio(self) -> io::Result<()> {
        self.serve_stdio_with(Stdio::new())
    }

    /// Serves MCP on stdin and stdout until stdin closes, as `stdio` says.
    ///
    /// # Errors
    /// As for [`serve_stdio`](Self::serve_stdio).
    pub fn serve_stdio_with(self, stdio: Stdio) -> io::Result<()> {
        self.serve_lines(io::stdin().lock(), io::stdout(), stdio)
    }

    /// Serves MCP on `input` and `output` (newline-delimited JSON-RPC 2.0) until `input`
    /// ends, then lets the open listens send their last messages and stops claiming.
    ///
    /// # Errors
    /// Reading `input` failed, or the trace file cannot be opened.
    pub fn serve_lines(
        self,
        mut input: impl BufRead,
        output: impl Write + Send + 'static,
        stdio: Stdio,
    ) -> io::Result<()> {
        let server = Arc::new(self);
        let connection = Arc::new(Connection::new(Box::new(output), stdio.trace.as_deref())?);
        let owner = stdio.owner;
        let writer = Arc::clone(&connection);
        let listens = LineListens::new(
            Listens::new(server.store().clone(), stdio.listen_limits)
                .counted_by(Telemetry::clone(server.telemetry())),
            Arc::new(move |line: &str| writer.send_line(line)),
        );
        let subscription = subscribe(&server, &connection, &owner);
        let stopping = Arc::new(AtomicBool::new(false));
        let claims = if server.is_shared() {
            let stop = Arc::clone(&stopping);
            Some(ClaimLoop::start(
                Arc::clone(&server),
                move || stop.load(Ordering::SeqCst),
                |claimed| {
                    if let Ok(job) = &claimed.job {
                        log::info!(
                            "claimed task {}: `{}`, {}",
                            claimed.task,
                            job.tool,
                            claimed.attempts
                        );
                    }
                    claimed.into_work().start();
                },
                |warning| log::warn!("claim loop: {warning}"),
            )?)
        } else {
            None
        };
        let mut line = Vec::new();
        let read = loop {
            line.clear();
            match (&mut input)
                .take(MAX_MESSAGE as u64 + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(err) => break Err(err),
            }
            if line.len() > MAX_MESSAGE && line.last() != Some(&b'\n') {
                // Too long: skip the rest of the line, answer, and keep serving.
                if let Err(err) = skip_line(&mut input) {
                    break Err(err);
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
        };
        if !listens.close_all(LISTENS_END) {
            log::warn!("the open listens did not end in time");
        }
        stopping.store(true, Ordering::SeqCst);
        if let Some(claims) = claims {
            let _ended = claims.join_within(CLAIM_LOOP_END);
        }
        TaskStore::unsubscribe(server.store(), subscription);
        read
    }
}

/// Skips what is left of an overlong line.
fn skip_line(input: &mut impl BufRead) -> io::Result<()> {
    let mut rest = Vec::new();
    while input.take(1 << 16).read_until(b'\n', &mut rest)? > 0 {
        let ended = rest.last() == Some(&b'\n');
        rest.clear();
        if ended {
            break;
        }
    }
    Ok(())
}

/// What a connection waits for from its client: an answer to a request it sent.
type Pending = Box<dyn FnOnce(Result<Value, JsonRpcError>) + Send>;

/// The client end: writes whole lines, and matches the client's answers to the requests
/// the server sent.
struct Connection {
    out: Mutex<Box<dyn Write + Send>>,
    trace: Option<Mutex<File>>,
    pending: Mutex<HashMap<String, Pending>>,
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    fn new(out: Box<dyn Write + Send>, trace: Option<&std::path::Path>) -> io::Result<Self> {
        let trace = match trace {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Self {
            out: Mutex::new(out),
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

    fn trace(&self, entry: &Value) {
        if let Some(trace) = &self.trace
            && let Err(err) = writeln!(lock(trace), "{entry}")
        {
            log::warn!("cannot write the trace: {err}");
        }
    }

    /// Writes one message as one line.
    fn send(&self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes one message, already serialized, as one line.
    fn send_line(&self, line: &str) {
        {
            let mut out = lock(&self.out);
            if let Err(err) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                log::warn!("cannot write to the client: {err}");
            }
        }
        self.trace_raw("out", line);
    }

    /// Traces a message as the JSON text it is (ids stay as written).
    fn trace_raw(&self, dir: &str, message: &str) {
        if let Some(trace) = &self.trace
            && let Err(err) = writeln!(lock(trace), "{{\"dir\":\"{dir}\",\"msg\":{message}}}")
        {
            log::warn!("cannot write the trace: {err}");
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
            _ => self.trace(&json!({"dir": "in", "raw": String::from_utf8_lossy(line)})),
        }
    }

    fn respond(&self, id: &Id, answer: &Result<Value, JsonRpcError>) {
        self.send_line(&framing::response(Some(id), answer));
    }

    /// Answers a message that is not JSON-RPC 2.0.
    fn refuse(&self, refusal: &Refusal) {
        self.send_line(&refusal.to_json());
    }

    /// Whether `task`'s change is news: its status or message differ from the last one
    /// notified. A terminal task is forgotten.
    fn is_news(&self, task: &AnyTask) -> bool {
        let mut notified = lock(&self.notified);
        let now = (task.status(), task.status_message().map(str::to_owned));
        if task.is_terminal() {
            return notified.remove(task.id()).is_none_or(|last| last != now);
        }
        notified.insert(task.id().clone(), now.clone()) != Some(now)
    }

    /// Sends a request to the client: its id; `then` gets the answer.
    fn send_request(&self, method: &str, params: &Value, then: Pending) -> String {
        let id = format!("server-{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        lock(&self.pending).insert(id.clone(), then);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Stops waiting for the answer to request `id`.
    fn forget_request(&self, id: &str) {
        lock(&self.pending).remove(id);
    }

    /// Hands the client's answer to whoever waits for it.
    fn resolve(&self, message: &JsonObject) {
        let Some((id, answer)) = outbound::client_answer(message) else {
            return;
        };
        let waiting = lock(&self.pending).remove(&id);
        match waiting {
            Some(waiting) => waiting(answer),
            None => log::debug!("an answer to unknown request {id} was ignored"),
        }
    }

    /// Sends a request to the client for `task` and blocks until the client answers, the
    /// task stops waiting (cancelled or expired: the request is then withdrawn with
    /// `notifications/cancelled`), or [`ANSWER_TIMEOUT`] passes.
    fn request_for_task(
        &self,
        method: &str,
        params: JsonObject,
        store: &Store,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Value, JsonRpcError> {
        let (answer, answered) = mpsc::channel();
        let id = self.send_request(
            method,
            &Value::Object(params),
            Box::new(move |got| {
                // The waiting thread may have timed out and gone; nothing to do then.
                let _ = answer.send(got);
            }),
        );
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
                    let waiting = store
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
}

/// The client end of a call running at once: notifications go out at once, and requests
/// wait for the client's answer (at most [`ANSWER_TIMEOUT`]).
struct StdioPeer(Arc<Connection>);

impl Peer for StdioPeer {
    fn notify(&self, method: &str, params: Value) {
        self.0
            .send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&self, method: &str, params: Value) -> Answer {
        if method == "elicitation/create" && !self.0.elicitation.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                "invalid params: this client did not declare the `elicitation` capability",
            ))));
        }
        let (answer, answered) = oneshot();
        let id = self
            .0
            .send_request(method, &params, Box::new(move |got| answer.send(got)));
        let connection = Arc::clone(&self.0);
        let method = method.to_owned();
        Box::pin(async move {
            let got = within(ANSWER_TIMEOUT, answered).await;
            connection.forget_request(&id);
            match got {
                Some(Some(answer)) => answer,
                _ => Err(JsonRpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    format!("the client did not answer `{method}`"),
                )),
            }
        })
    }

    fn log_level(&self) -> Option<LogLevel> {
        *lock(&self.0.log_level)
    }

    fn set_log_level(&self, level: LogLevel) {
        *lock(&self.0.log_level) = Some(level);
    }
}

/// The store subscription of a connection: a 2025-11-25 task's changes become
/// `notifications/tasks/status`, and its input requests `elicitation/create`.
fn subscribe(
    server: &Arc<Server>,
    connection: &Arc<Connection>,
    owner: &Owner,
) -> mcp_tasks::SubscriptionId {
    let notifier = Arc::clone(connection);
    let watcher = Arc::clone(server);
    let store = server.store().clone();
    let session = owner.clone();
    TaskStore::subscribe(server.store(), move |change| {
        // Only 2025-11-25 tasks get 2025-11-25 treatment: their input travels as requests
        // to the client, and their changes as notifications/tasks/status.
        if !watcher.is_v1_task(change.task.id()) {
            return;
        }
        if let AnyTask::InputRequired(task) = &change.task {
            forward_input(&notifier, &store, &session, task);
        }
        if notifier.initialized.load(Ordering::SeqCst) && notifier.is_news(&change.task) {
            match serde_json::to_value(TaskStatusNotification::new(change.task.clone())) {
                Ok(notification) => notifier.send(&notification),
                Err(err) => log::warn!("cannot serialize a notification: {err}"),
            }
        }
        if change.task.is_terminal() {
            watcher.forget_task(change.task.id());
        }
    })
}

/// In 2025-11-25 a task's input requests travel as ordinary server→client requests tagged
/// with the related-task `_meta`; the answers go back into the store, where the handler
/// waits for them. Each outstanding key is forwarded once.
fn forward_input(
    connection: &Arc<Connection>,
    store: &Store,
    owner: &Owner,
    task: &Task<InputRequired>,
) {
    for (key, request) in task.input_requests().iter() {
        let forwarded = (task.id().clone(), key.to_owned());
        if !lock(&connection.forwarded).insert(forwarded.clone()) {
            continue;
        }
        let mut params = request.params.clone();
        tag_related_task(&mut params, task.id());
        let (connection, store, owner) = (Arc::clone(connection), store.clone(), owner.clone());
        let (method, id, key) = (
            request.method.clone(),
            task.id().to_string(),
            key.to_owned(),
        );
        std::thread::spawn(move || {
            let answer = outbound::input_response(
                connection.request_for_task(&method, params, &store, &owner, &id),
            );
            let mut responses = JsonObject::new();
            responses.insert(key, Value::Object(answer));
            if let Err(err) = store.respond(&owner, &id, responses) {
                log::warn!("task {id}: {err}");
            }
            lock(&connection.forwarded).remove(&forwarded);
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
            connection.respond(&id, &Err(error));
        }
        return;
    }
    let elicitation = if connection.elicitation.load(Ordering::SeqCst) {
        Elicitation::Declared
    } else {
        Elicitation::Undeclared
    };
    match server.request(owner, id.request_id(), &method, params, elicitation) {
        Reply::Now(answer) => connection.respond(&id, &answer),
        Reply::Later(work) => {
            let peer: Arc<dyn Peer> = Arc::new(StdioPeer(Arc::clone(connection)));
            let connection = Arc::clone(connection);
            if work.is_blocking() {
                std::thread::spawn(move || {
                    let answer = work.run_here(peer);
                    connection.respond(&id, &answer);
                });
            } else {
                let answer = work.into_future(peer);
                Work::future(async move {
                    let answer = answer.await;
                    connection.respond(&id, &answer);
                })
                .start();
            }
        }
        Reply::ThenRun(created, work) => {
            connection.send_line(&framing::result_response(Some(&id), created.answer_json()));
            work.start();
        }
    }
}
