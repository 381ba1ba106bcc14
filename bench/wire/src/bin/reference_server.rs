//! `reference_server`: the floor of the wire benchmark's stack. It serves the requests
//! `wire_load` sends, on both wires, with the least work this stack (hyper 1.x, tokio,
//! serde_json) allows, so that a report can say how far above that floor `mcp_http`
//! spends. It is not a product and no other code should grow from it.
//!
//! ```text
//! reference_server [--listen 127.0.0.1:0] [--tokens FILE] [--workers N]
//! ```
//!
//! The first line on stdout is `listening on http://ADDR/mcp`. `--tokens` reads
//! `principal=token` lines (the file `run.sh` writes for `mcp_http`); without it every
//! request is one principal. Ends on SIGTERM or SIGINT.
//!
//! What it does per request, and nothing more:
//! - the bearer token: one `HashMap` lookup (its principal owns the tasks it creates);
//! - the body: parsed once by serde into borrowed, typed fields (`id` kept raw, echoed);
//! - 2025-11-25 (no `MCP-Protocol-Version: 2026-07-28`): `initialize` opens a session
//!   (`Mcp-Session-Id`), every later request must name one of its principal's (`404`);
//!   a notification is `202`; `tools/call` of `sleep` answers `{task}`, `tasks/get` the
//!   task, `tasks/result` the tool result of a completed task;
//! - 2026-07-28: no session; `tools/call` answers the task (`resultType: "task"`), and
//!   `tasks/get` of a completed task carries its `result`;
//! - tasks in 64 shards, each a `Mutex<HashMap>`; one tokio timer per task completes it
//!   after `ms`; a task is kept 60 s from its creation (the next insert into its shard
//!   drops the expired ones, which expire in creation order);
//! - answers serialized from typed structs, `Content-Type: application/json`.
//!
//! Left out on purpose: connection and request limits, header checks (`Mcp-Method`,
//! `Origin`, `Host`), every other method and tool, cancellation, `tasks/result` before
//! the task ends (a JSON-RPC error: the workload never asks it early), and constant-time
//! token comparison.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use tokio::net::TcpSocket;

/// How long a task is kept, from its creation (as `mcp_http`'s default).
const TTL_MS: u64 = 60_000;
/// The polling interval the tasks suggest (as `mcp_http`'s).
const POLL_INTERVAL_MS: u64 = 100;
/// Lock shards of the tasks and of the sessions (a power of two).
const SHARDS: u64 = 64;
/// Listen backlog (as `mcp_http`'s): a burst of connecting clients does not wait for SYN
/// retransmits.
const BACKLOG: u32 = 4096;
const V2026: &str = "2026-07-28";

// ---- state --------------------------------------------------------------------------

struct Task {
    owner: u32,
    ms: u64,
    created_ms: u64,
    updated_ms: u64,
    done: bool,
}

#[derive(Default)]
struct TaskShard {
    tasks: HashMap<u64, Task>,
    /// (expiry, id) in creation order.
    expiries: VecDeque<(u64, u64)>,
}

/// `SHARDS` locks, one per `id % SHARDS`. A lock is never held across an await, and no
/// code that can panic runs under one, so a poisoned lock is taken back as it is.
struct Shards<T>(Box<[Mutex<T>]>);

impl<T: Default> Shards<T> {
    fn new() -> Self {
        Self((0..SHARDS).map(|_| Mutex::default()).collect())
    }

    fn lock(&self, id: u64) -> MutexGuard<'_, T> {
        #[allow(clippy::cast_possible_truncation)]
        self.0[(id % SHARDS) as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

struct App {
    /// Token → principal; empty: every request is principal 0.
    tokens: HashMap<String, u32>,
    /// Session id → principal.
    sessions: Shards<HashMap<u64, u32>>,
    tasks: Shards<TaskShard>,
    next_id: AtomicU64,
}

impl App {
    fn principal(&self, headers: &HeaderMap) -> Option<u32> {
        if self.tokens.is_empty() {
            return Some(0);
        }
        let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
        let token = value.strip_prefix("Bearer ")?;
        self.tokens.get(token).copied()
    }

    fn create(self: &Arc<Self>, owner: u32, ms: u64) -> (u64, u64) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let now = now_ms();
        {
            let mut shard = self.tasks.lock(id);
            while let Some(&(expiry, old)) = shard.expiries.front() {
                if expiry > now {
                    break;
                }
                shard.expiries.pop_front();
                shard.tasks.remove(&old);
            }
            shard.expiries.push_back((now + TTL_MS, id));
            let task = Task {
                owner,
                ms,
                created_ms: now,
                updated_ms: now,
                done: false,
            };
            shard.tasks.insert(id, task);
        }
        let app = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            if let Some(task) = app.tasks.lock(id).tasks.get_mut(&id) {
                task.done = true;
                task.updated_ms = now_ms();
            }
        });
        (id, now)
    }

    /// The task's (ms, created, updated, done), if `owner`'s.
    fn read(&self, owner: u32, id: u64) -> Option<(u64, u64, u64, bool)> {
        let shard = self.tasks.lock(id);
        let task = shard.tasks.get(&id).filter(|task| task.owner == owner)?;
        Some((task.ms, task.created_ms, task.updated_ms, task.done))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

// ---- the wire -----------------------------------------------------------------------

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(default, borrow)]
    params: Params<'a>,
}

#[derive(Default, Deserialize)]
struct Params<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "taskId")]
    task_id: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Arguments>,
}

#[derive(Deserialize)]
struct Arguments {
    ms: Option<u64>,
}

#[derive(Serialize)]
struct Answer<'a, R> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: R,
}

#[derive(Serialize)]
struct Refusal<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: Error,
}

#[derive(Serialize)]
struct Error {
    code: i64,
    message: &'static str,
}

/// A task as either wire shows it (2025-11-25: `ttl`, `pollInterval`; 2026-07-28:
/// `ttlMs`, `pollIntervalMs`, `resultType` and, once completed, `result`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskView {
    task_id: Hex,
    status: &'static str,
    created_at: Rfc3339,
    last_updated_at: Rfc3339,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll_interval: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll_interval_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ToolResult>,
}

#[derive(Serialize)]
struct Created {
    task: TaskView,
}

/// `sleep`'s result: `slept {ms} ms`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult {
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<RelatedTask>,
    content: [Text; 1],
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

#[derive(Serialize)]
struct RelatedTask {
    #[serde(rename = "io.modelcontextprotocol/related-task")]
    related: TaskRef,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskRef {
    task_id: Hex,
}

#[derive(Serialize)]
struct Text {
    #[serde(rename = "type")]
    kind: &'static str,
    text: Slept,
}

/// Shown as `slept {ms} ms`.
struct Slept(u64);

impl Serialize for Slept {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("slept {} ms", self.0))
    }
}

/// A task or session id, shown as 16 hex digits.
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{:016x}", self.0))
    }
}

fn parse_hex(text: &str) -> Option<u64> {
    u64::from_str_radix(text, 16).ok()
}

/// Unix milliseconds shown as RFC 3339 UTC, `2026-07-28T12:00:00.000Z`.
struct Rfc3339(u64);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, ms) = (self.0 / 86_400_000, self.0 % 86_400_000);
        // Civil date from days since 1970-01-01 (Howard Hinnant's `civil_from_days`).
        #[allow(clippy::cast_possible_wrap)]
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        )
    }
}

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn view(
    stateless: bool,
    id: u64,
    task: (u64, u64, u64, bool),
    result_type: &'static str,
) -> TaskView {
    let (ms, created, updated, done) = task;
    TaskView {
        task_id: Hex(id),
        status: if done { "completed" } else { "working" },
        created_at: Rfc3339(created),
        last_updated_at: Rfc3339(updated),
        ttl: (!stateless).then_some(TTL_MS),
        poll_interval: (!stateless).then_some(POLL_INTERVAL_MS),
        ttl_ms: stateless.then_some(TTL_MS),
        poll_interval_ms: stateless.then_some(POLL_INTERVAL_MS),
        result_type: stateless.then_some(result_type),
        result: (stateless && done).then(|| slept(ms, None, Some("complete"))),
    }
}

fn slept(ms: u64, meta: Option<RelatedTask>, result_type: Option<&'static str>) -> ToolResult {
    ToolResult {
        meta,
        content: [Text {
            kind: "text",
            text: Slept(ms),
        }],
        is_error: false,
        result_type,
    }
}

// ---- HTTP ---------------------------------------------------------------------------

type Reply = Response<Full<Bytes>>;

fn status(code: StatusCode) -> Reply {
    let mut response = Response::new(Full::default());
    *response.status_mut() = code;
    response
}

fn json(body: Vec<u8>) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn answer(id: &RawValue, result: impl Serialize) -> Reply {
    let message = Answer {
        jsonrpc: "2.0",
        id,
        result,
    };
    serde_json::to_vec(&message).map_or_else(|_| status(StatusCode::INTERNAL_SERVER_ERROR), json)
}

fn refuse(id: &RawValue, code: i64, message: &'static str) -> Reply {
    let message = Refusal {
        jsonrpc: "2.0",
        id,
        error: Error { code, message },
    };
    serde_json::to_vec(&message).map_or_else(|_| status(StatusCode::INTERNAL_SERVER_ERROR), json)
}

async fn handle(app: Arc<App>, request: Request<Incoming>) -> Result<Reply, Infallible> {
    let headers = request.headers();
    let Some(owner) = app.principal(headers) else {
        return Ok(status(StatusCode::UNAUTHORIZED));
    };
    let stateless = headers
        .get("mcp-protocol-version")
        .is_some_and(|version| version == V2026);
    let session = headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .and_then(parse_hex);
    let Ok(body) = request.into_body().collect().await else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let body = body.to_bytes();
    let Ok(message) = serde_json::from_slice::<Message>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    if !stateless && message.method != "initialize" {
        let known = session.is_some_and(|id| app.sessions.lock(id).get(&id) == Some(&owner));
        if !known {
            return Ok(status(StatusCode::NOT_FOUND));
        }
    }
    let Some(id) = message.id else {
        return Ok(status(StatusCode::ACCEPTED));
    };
    let params = &message.params;
    let task_id = || params.task_id.as_deref().and_then(parse_hex);
    Ok(match &*message.method {
        "initialize" if !stateless => {
            let session = app.next_id.fetch_add(1, Ordering::Relaxed);
            app.sessions.lock(session).insert(session, owner);
            let mut response = answer(id, Initialized::default());
            if let Ok(value) = HeaderValue::from_str(&format!("{session:016x}")) {
                response.headers_mut().insert("mcp-session-id", value);
            }
            response
        }
        "tools/call" => {
            let ms = params.arguments.as_ref().and_then(|arguments| arguments.ms);
            match (params.name.as_deref(), ms) {
                (Some("sleep"), Some(ms)) => {
                    let (task, now) = app.create(owner, ms);
                    let view = view(stateless, task, (ms, now, now, false), "task");
                    if stateless {
                        answer(id, view)
                    } else {
                        answer(id, Created { task: view })
                    }
                }
                _ => refuse(id, -32602, "only sleep {ms} is served"),
            }
        }
        "tasks/get" => match task_id().and_then(|task| Some((task, app.read(owner, task)?))) {
            Some((task, read)) => answer(id, view(stateless, task, read, "complete")),
            None => refuse(id, -32602, "no such task"),
        },
        "tasks/result" if !stateless => {
            match task_id().and_then(|task| Some((task, app.read(owner, task)?))) {
                Some((task, (ms, _, _, true))) => {
                    let meta = RelatedTask {
                        related: TaskRef { task_id: Hex(task) },
                    };
                    answer(id, slept(ms, Some(meta), None))
                }
                Some(_) => refuse(id, -32603, "the task has not ended"),
                None => refuse(id, -32602, "no such task"),
            }
        }
        _ => refuse(id, -32601, "method not found"),
    })
}

/// The `initialize` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Initialized {
    protocol_version: &'static str,
    capabilities: Capabilities,
    server_info: ServerInfo,
}

#[derive(Serialize)]
struct Capabilities {
    tools: Empty,
    tasks: TasksCapability,
}

#[derive(Serialize)]
struct TasksCapability {
    requests: ToolsCall,
}

#[derive(Serialize)]
struct ToolsCall {
    tools: Call,
}

#[derive(Serialize)]
struct Call {
    call: Empty,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

impl Default for Initialized {
    fn default() -> Self {
        Self {
            protocol_version: "2025-11-25",
            capabilities: Capabilities {
                tools: Empty {},
                tasks: TasksCapability {
                    requests: ToolsCall {
                        tools: Call { call: Empty {} },
                    },
                },
            },
            server_info: ServerInfo {
                name: "reference_server",
                version: "0",
            },
        }
    }
}

// ---- main ---------------------------------------------------------------------------

struct Args {
    listen: SocketAddr,
    tokens: Option<String>,
    workers: Option<usize>,
}

const USAGE: &str = "usage: reference_server [--listen 127.0.0.1:0] [--tokens FILE] [--workers N]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: ([127, 0, 0, 1], 0).into(),
        tokens: None,
        workers: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))?;
        match flag.as_str() {
            "--listen" => args.listen = value.parse().map_err(|err| format!("--listen: {err}"))?,
            "--tokens" => args.tokens = Some(value),
            "--workers" => {
                args.workers = Some(value.parse().map_err(|err| format!("--workers: {err}"))?);
            }
            other => return Err(format!("unknown argument {other}; {USAGE}")),
        }
    }
    Ok(args)
}

/// `principal=token` lines: each token → its principal's number.
fn read_tokens(path: &str) -> Result<HashMap<String, u32>, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{path}: {err}"))?;
    let mut principals: HashMap<&str, u32> = HashMap::new();
    let mut tokens = HashMap::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let (principal, token) = line
            .split_once('=')
            .ok_or_else(|| format!("{path}: `{line}` is not principal=token"))?;
        let next = u32::try_from(principals.len()).map_err(|err| err.to_string())?;
        let number = *principals.entry(principal).or_insert(next);
        tokens.insert(token.to_owned(), number);
    }
    Ok(tokens)
}

async fn serve(args: Args, tokens: HashMap<String, u32>) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let socket = if args.listen.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|err| err.to_string())?;
    socket.set_reuseaddr(true).map_err(|err| err.to_string())?;
    socket
        .bind(args.listen)
        .map_err(|err| format!("bind: {err}"))?;
    let listener = socket
        .listen(BACKLOG)
        .map_err(|err| format!("listen: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    let mut term = signal(SignalKind::terminate()).map_err(|err| err.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|err| err.to_string())?;
    let app = Arc::new(App {
        tokens,
        sessions: Shards::new(),
        tasks: Shards::new(),
        next_id: AtomicU64::new(1),
    });
    println!("listening on http://{addr}/mcp");
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of descriptors, most likely: wait for some to close.
                eprintln!("reference_server: accept: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(Arc::clone(&app), request));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Raises the soft limit of open files to the hard one (10,000 clients).
fn raise_nofile() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct passed, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit);
        }
    }
}

fn main() -> ExitCode {
    let (args, tokens) = match parse_args().and_then(|args| {
        let tokens = args.tokens.as_deref().map(read_tokens).transpose()?;
        Ok((args, tokens.unwrap_or_default()))
    }) {
        Ok(read) => read,
        Err(why) => {
            eprintln!("reference_server: {why}");
            return ExitCode::from(2);
        }
    };
    raise_nofile();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        builder.worker_threads(workers);
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("reference_server: runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args, tokens)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("reference_server: {why}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(Rfc3339(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Rfc3339(1_785_240_000_123).to_string(),
            "2026-07-28T12:00:00.123Z"
        );
        assert_eq!(
            Rfc3339(951_782_400_000).to_string(),
            "2000-02-29T00:00:00.000Z"
        );
    }

    #[test]
    fn a_completed_2026_task_carries_its_result() {
        let shown = serde_json::to_value(view(true, 255, (5, 0, 7, true), "complete")).unwrap();
        assert_eq!(shown["taskId"], "00000000000000ff");
        assert_eq!(shown["status"], "completed");
        assert_eq!(shown["ttlMs"], TTL_MS);
        assert_eq!(shown["result"]["content"][0]["text"], "slept 5 ms");
        assert!(shown.get("ttl").is_none());
        let working = serde_json::to_value(view(false, 1, (5, 0, 0, false), "task")).unwrap();
        assert_eq!(working["status"], "working");
        assert_eq!(working["pollInterval"], POLL_INTERVAL_MS);
        assert!(working.get("result").is_none() && working.get("resultType").is_none());
    }
}
