//! The example MCP server over the 2025-11-25 Streamable HTTP transport, with bearer
//! tokens as authorization contexts: each token's principal owns its tasks.
//!
//! ```text
//! MCP_TASKS_TOKENS='alice=token-a,bob=token-b' cargo run --bin http_server
//! ```
//!
//! Same tools, routing and handlers as `stdio_server` (`servers/src`): `sleep` {ms},
//! `fail` {} and `crash` {} (task optional), `confirm` {question} (task required), `echo`
//! {text} (never a task). One endpoint, `/mcp`:
//!
//! - `POST` takes one JSON-RPC message. A request is answered with `application/json`; a
//!   notification or a response with `202 Accepted`. `GET` and `DELETE` answer
//!   `405 Method Not Allowed` (no server-initiated stream; sessions end when the server
//!   forgets them).
//! - `initialize` issues an `Mcp-Session-Id`; every later 2025-11-25 message must carry it
//!   (`400` without, `404` for a session this server does not know or that belongs to
//!   another principal). A request framed for 2026-07-28 (the tasks extension, see
//!   `mcp_tasks_servers::server`) stands alone and needs no session.
//! - Messages follow JSON-RPC 2.0 exactly, as over stdio (`mcp_tasks_servers::framing`):
//!   `"jsonrpc": "2.0"` is required; a message that is not JSON is `400` with `-32700`, one
//!   that is not a valid JSON-RPC 2.0 message `400` with `-32600`; ids are echoed byte for
//!   byte; an error whose request id cannot be read (and every HTTP-level refusal) has no
//!   `id` member.
//! - `MCP-Protocol-Version` must be `2025-11-25` (or `2026-07-28`) when present (`400`
//!   otherwise); absent, the transport's default is assumed.
//! - `Origin`, when present, must be a loopback origin (`http(s)://localhost`,
//!   `127.0.0.1` or `[::1]`, any port) or listed in `MCP_TASKS_ALLOWED_ORIGINS`; any other
//!   is `403` (DNS-rebinding protection).
//! - `Authorization: Bearer <token>` is required; a missing or unknown token is `401` with
//!   `WWW-Authenticate: Bearer`. The token's principal (say `alice`) is the task
//!   [`Owner`]: another principal cannot see, list, wait on or cancel those tasks (it gets
//!   the error of an unknown id), and a new session with the same token sees them again.
//!
//! Each request runs on its own thread (at most 256 at once, then `503`; at most 32 of
//! one principal, then `429`), so a blocking `tasks/result` never stalls other requests.
//!
//! # What JSON-only mode cannot carry
//! A POST answered with `application/json` carries exactly one message, the response, and
//! there is no `GET` stream. So this server sends no `notifications/tasks/status`
//! (clients poll `tasks/get`, as the spec requires them to be able to) and no
//! server-to-client requests, which is how a 2025-11-25 task asks for input: the
//! `confirm` tool's `elicitation/create` cannot reach the user. Such a task moves to
//! `input_required` and then fails at once with a JSON-RPC error (`-32603`, "the
//! elicitation round trip needs the stdio transport ...") that `tasks/result` returns.
//! Use `stdio_server` for elicitation and status notifications (or the 2026-07-28 tasks
//! extension, whose input travels in `tasks/get` and `tasks/update`).
//!
//! # Configuration (environment)
//! - `MCP_TASKS_TOKENS`: `principal=token` pairs separated by commas or newlines, e.g.
//!   `alice=token-a,bob=token-b`; or `MCP_TASKS_TOKENS_FILE`: a file with the same pairs
//!   (one per line, `#` starts a comment). Exactly one of the two must be set; the server
//!   refuses to start without tokens (unless in the anonymous mode below). Keep the file
//!   private.
//! - `MCP_TASKS_ANONYMOUS=1`: the anonymous single-owner mode, for local tools and the
//!   official conformance suite (which sends no token): no `Authorization` is read, and
//!   every request acts as one fixed owner, `anonymous`, so every local process that
//!   reaches the port sees every task. It is refused unless `MCP_TASKS_HTTP_ADDR` is a
//!   loopback IP address (`127.0.0.1:PORT`, `[::1]:PORT`; a host name is refused too), and
//!   refused together with tokens. The `Origin` check (above) still applies, so a web page
//!   cannot reach the server through DNS rebinding. `0` or unset: tokens, as above.
//! - `MCP_TASKS_HTTP_ADDR`: where to listen, default `127.0.0.1:8808` (port `0` picks a
//!   free one). The server prints `listening on http://ADDR/mcp` on stdout once ready.
//! - `MCP_TASKS_ALLOWED_ORIGINS`: extra allowed origins, comma-separated, exact match.
//! - `MCP_TASKS_PAGE_SIZE`: tasks per `tasks/list` page (default 50).
//! - `MCP_TASKS_TRACE_DIR=<dir>`: appends every message read and written to
//!   `<dir>/<session>.jsonl` (2026-07-28 requests without a session: `ext-<principal>.jsonl`),
//!   one JSON line each, `{"dir": "in" | "out", "msg": ...}`.
//! - `MCP_TASKS_REDIS_URL` (or the argument `--redis URL`, which wins): keep the tasks in
//!   Redis (`RedisTaskStore`, cargo feature `redis`) instead of in this process, e.g.
//!   `redis://127.0.0.1:6379` or `redis+unix:///run/redis/redis.sock`.
//! - `MCP_TASKS_LEASE_MS` (with Redis): the lease of a running task in milliseconds
//!   (default 40000); a task whose instance dies fails `-32603` within the lease and an
//!   eighth of it. `0` turns leases off (the task then stays `working` until its TTL).
//!
//! # Several instances, one store
//! Servers started with the same Redis URL and the same tokens serve the same tasks: a
//! task created through one is read (`tasks/get`), awaited (`tasks/result` blocks until
//! the handler on the other instance finishes it), listed and cancelled through any of
//! them, and stays invisible to other principals. Sessions are per instance (a client
//! initializes with each), and a task's handler runs on the instance that created it.
//!
//! ```text
//! export MCP_TASKS_TOKENS='alice=token-a,bob=token-b'
//! cargo build -p mcp-tasks-servers --features redis --bin http_server
//! MCP_TASKS_HTTP_ADDR=127.0.0.1:8808 ./target/debug/http_server --redis redis://127.0.0.1:6379 &
//! MCP_TASKS_HTTP_ADDR=127.0.0.1:8809 ./target/debug/http_server --redis redis://127.0.0.1:6379 &
//! ```
//!
//! Built without the feature, a Redis URL is a startup error.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{Cursor, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use mcp_tasks::TaskStore;
use mcp_tasks::protocol::PROTOCOL_VERSION;
use mcp_tasks::{AnyTask, JsonRpcError, Outcome, Owner, TaskId, TaskStatus, ext, jsonrpc};
use mcp_tasks_servers::access::{Access, origin_allowed};
use mcp_tasks_servers::framing::{self, Incoming};
use mcp_tasks_servers::headers;
use mcp_tasks_servers::server::{Elicitation, Generation, Reply, Server};
use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response};

/// The one endpoint.
const ENDPOINT: &str = "/mcp";

/// Where to listen unless `MCP_TASKS_HTTP_ADDR` says otherwise.
const DEFAULT_ADDR: &str = "127.0.0.1:8808";

/// Largest request body accepted.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Requests handled at once; more are answered `503`.
const MAX_IN_FLIGHT: usize = 256;

/// Requests of one principal handled at once; more are answered `429` (so one principal
/// cannot hold every request thread, e.g. with blocking `tasks/result` calls).
const MAX_IN_FLIGHT_PER_PRINCIPAL: usize = 32;

/// Sessions kept per principal; a new one beyond this forgets that principal's oldest.
const MAX_SESSIONS_PER_PRINCIPAL: usize = 64;

/// The message a task gets when it needs the elicitation round trip.
const ELICITATION_NEEDS_STDIO: &str = "the elicitation round trip needs the stdio transport: \
     this Streamable HTTP server answers in JSON-only mode and cannot send `elicitation/create` \
     to the client";

type HttpResponse = Response<Cursor<Vec<u8>>>;

/// Issued sessions, each bound to the principal that opened it.
#[derive(Default)]
struct Sessions {
    principal_of: HashMap<String, String>,
    by_principal: HashMap<String, VecDeque<String>>,
}

impl Sessions {
    fn open(&mut self, session: &str, principal: &str) {
        let mine = self.by_principal.entry(principal.to_owned()).or_default();
        if mine.len() >= MAX_SESSIONS_PER_PRINCIPAL
            && let Some(oldest) = mine.pop_front()
        {
            self.principal_of.remove(&oldest);
        }
        mine.push_back(session.to_owned());
        self.principal_of
            .insert(session.to_owned(), principal.to_owned());
    }

    fn belongs_to(&self, session: &str, principal: &str) -> bool {
        self.principal_of
            .get(session)
            .is_some_and(|owner| owner == principal)
    }
}

/// Everything the request threads share.
struct State {
    server: Arc<Server>,
    access: Access,
    extra_origins: Vec<String>,
    sessions: Mutex<Sessions>,
    trace_dir: Option<PathBuf>,
    trace_files: Mutex<HashMap<String, Arc<Mutex<File>>>>,
    in_flight: AtomicUsize,
    per_principal: Mutex<HashMap<String, usize>>,
}

impl State {
    fn trace(&self, session: &str, entry: &dyn std::fmt::Display) {
        let Some(dir) = &self.trace_dir else { return };
        let file = {
            let mut files = self
                .trace_files
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match files.get(session) {
                Some(file) => Arc::clone(file),
                None => {
                    let path = dir.join(format!("{session}.jsonl"));
                    match OpenOptions::new().create(true).append(true).open(&path) {
                        Ok(file) => {
                            let file = Arc::new(Mutex::new(file));
                            files.insert(session.to_owned(), Arc::clone(&file));
                            file
                        }
                        Err(err) => {
                            eprintln!("http_server: cannot open the trace {path:?}: {err}");
                            return;
                        }
                    }
                }
            }
        };
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = writeln!(file, "{entry}") {
            eprintln!("http_server: cannot write the trace: {err}");
        }
    }

    /// Traces one message given as JSON text (one line), kept as written.
    fn trace_raw(&self, session: &str, dir: &str, message: &str) {
        self.trace(
            session,
            &format_args!("{{\"dir\":\"{dir}\",\"msg\":{message}}}"),
        );
    }
}

fn header(name: &str, value: &str) -> Header {
    // Only ASCII literals and server-made ids get here, never a client's bytes.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("an ASCII header")
}

fn json_body(status: u16, body: &str) -> HttpResponse {
    Response::from_string(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
}

/// An HTTP-level refusal, with a JSON-RPC error as its body: no `id` member, as for any
/// error whose request could not be read (`mcp_tasks_servers::framing`).
fn refusal(status: u16, code: i64, message: &str) -> HttpResponse {
    json_body(
        status,
        &framing::response(None, &Err(JsonRpcError::new(code, message))),
    )
}

fn accepted() -> HttpResponse {
    Response::from_data(Vec::new()).with_status_code(202)
}

fn header_value<'r>(request: &'r Request, name: &'static str) -> Option<&'r str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// The principal of the request's bearer token, or the `401` to answer.
fn authenticate<'s>(state: &'s State, request: &Request) -> Result<&'s str, HttpResponse> {
    state
        .access
        .authenticate(header_value(request, "Authorization"))
        .map_err(|why| {
            refusal(401, jsonrpc::INVALID_REQUEST, why.message())
                .with_header(header("WWW-Authenticate", why.challenge()))
        })
}

/// What to answer, and work to start once the answer is sent.
struct Answer {
    response: HttpResponse,
    then: Option<Box<dyn FnOnce() + Send>>,
}

impl From<HttpResponse> for Answer {
    fn from(response: HttpResponse) -> Self {
        Answer {
            response,
            then: None,
        }
    }
}

fn handle(state: &State, request: &mut Request) -> Answer {
    let path = request.url().split('?').next().unwrap_or("");
    if path != ENDPOINT {
        return refusal(
            404,
            jsonrpc::INVALID_REQUEST,
            "not found: the MCP endpoint is /mcp",
        )
        .into();
    }
    if let Some(origin) = header_value(request, "Origin")
        && !origin_allowed(origin, &state.extra_origins)
    {
        return refusal(
            403,
            jsonrpc::INVALID_REQUEST,
            "forbidden: this origin may not use the server",
        )
        .into();
    }
    if *request.method() != Method::Post {
        return refusal(
            405,
            jsonrpc::INVALID_REQUEST,
            "method not allowed: this server answers POST only (no SSE stream, no session termination)",
        )
        .with_header(header("Allow", "POST"))
        .into();
    }
    let principal = match authenticate(state, request) {
        Ok(principal) => principal,
        Err(response) => return response.into(),
    };
    let Some(_slot) = PrincipalSlot::take(state, principal) else {
        return refusal(
            429,
            jsonrpc::INTERNAL_ERROR,
            "too many requests at once for this principal, retry shortly",
        )
        .with_header(header("Retry-After", "1"))
        .into();
    };
    if let Some(version) = header_value(request, "MCP-Protocol-Version")
        && version != PROTOCOL_VERSION
        && version != ext::PROTOCOL_VERSION
    {
        return refusal(
            400,
            jsonrpc::INVALID_REQUEST,
            &format!(
                "bad request: unsupported MCP-Protocol-Version `{}`; this server speaks {PROTOCOL_VERSION} (and {})",
                version.chars().take(40).collect::<String>(),
                ext::PROTOCOL_VERSION
            ),
        )
        .into();
    }
    let content_type = header_value(request, "Content-Type").unwrap_or("");
    if !content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
    {
        return refusal(
            415,
            jsonrpc::INVALID_REQUEST,
            "unsupported media type: POST application/json",
        )
        .into();
    }
    if let Some(accept) = header_value(request, "Accept") {
        let accepts_json = accept.split(',').any(|media| {
            let media = media.split(';').next().unwrap_or("").trim();
            ["application/json", "application/*", "*/*"]
                .iter()
                .any(|ok| media.eq_ignore_ascii_case(ok))
        });
        if !accepts_json {
            return refusal(
                406,
                jsonrpc::INVALID_REQUEST,
                "not acceptable: responses are application/json",
            )
            .into();
        }
    }
    let session_header = header_value(request, "Mcp-Session-Id").map(str::to_owned);

    let mut body = Vec::new();
    if let Err(err) = request
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
    {
        return refusal(
            400,
            jsonrpc::PARSE_ERROR,
            &format!("cannot read the body: {err}"),
        )
        .into();
    }
    if body.len() > MAX_BODY {
        return refusal(413, jsonrpc::INVALID_REQUEST, "payload too large").into();
    }
    let incoming = framing::parse(&body);
    let method = match &incoming {
        Incoming::Request { method, .. } | Incoming::Notification { method, .. } => {
            Some(method.as_str())
        }
        Incoming::Response(_) => None,
        Incoming::Invalid(refusal) => return json_body(400, &refusal.to_json()).into(),
    };
    let params = match &incoming {
        Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params.as_ref(),
        _ => None,
    };
    if let Incoming::Request { id, method, .. } = &incoming
        && let Err(message) = headers::check(
            method,
            params,
            header_value(request, "Mcp-Method"),
            header_value(request, "Mcp-Name"),
        )
    {
        let error = JsonRpcError::new(ext::HEADER_MISMATCH, message);
        return json_body(400, &framing::response(Some(id), &Err(error))).into();
    }

    // The session: issued by `initialize`, required and checked for everything else of
    // 2025-11-25. A request framed for 2026-07-28 stands alone (no handshake, no session).
    let initialize =
        matches!(&incoming, Incoming::Request { method, .. } if method == "initialize");
    let stateless =
        method.is_some_and(|method| Generation::of(method, params) == Generation::Extension);
    let session = if initialize {
        uuid::Uuid::new_v4().simple().to_string()
    } else if stateless && session_header.is_none() {
        // One trace per principal for these; the name is safe as a file name.
        let name: String = principal
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("ext-{name}")
    } else {
        let Some(session) = session_header else {
            return refusal(
                400,
                jsonrpc::INVALID_REQUEST,
                "bad request: missing Mcp-Session-Id (send initialize first)",
            )
            .into();
        };
        let known = state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .belongs_to(&session, principal);
        if !known {
            return refusal(
                404,
                jsonrpc::INVALID_REQUEST,
                "session not found: initialize a new session",
            )
            .into();
        }
        session
    };
    // The body parsed as JSON above, so it is traced as written (ids byte for byte).
    match std::str::from_utf8(&body) {
        Ok(text) if !text.contains(['\n', '\r']) => state.trace_raw(&session, "in", text.trim()),
        _ => state.trace(
            &session,
            &json!({"dir": "in", "msg": serde_json::from_slice::<Value>(&body).ok()}),
        ),
    }

    let (id, method, params) = match incoming {
        Incoming::Request { id, method, params } => (id, method, params),
        // Notifications (`notifications/initialized`, `notifications/cancelled`) need no
        // answer; nor does a response (this server sends no requests to match it with).
        Incoming::Notification { .. } | Incoming::Response(_) | Incoming::Invalid(_) => {
            return accepted().into();
        }
    };
    let owner = Owner::new(principal);
    // Over JSON-only HTTP a request to the client has no way to travel.
    let reply = state.server.request(
        &owner,
        id.request_id(),
        &method,
        params,
        Elicitation::Unreachable,
    );
    let (answer, then) = match reply {
        Reply::Now(answer) => (answer, None),
        // This is the request's own thread: it may block (a `tasks/result` waits here
        // without holding up any other request).
        Reply::Later(work) => (work(), None),
        Reply::ThenRun(answer, work) => (Ok(answer), Some(work)),
    };
    let opened = initialize && answer.is_ok();
    let message = framing::response(Some(&id), &answer);
    state.trace_raw(&session, "out", &message);
    let mut response = json_body(200, &message);
    if opened {
        state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .open(&session, principal);
        response.add_header(header("Mcp-Session-Id", &session));
    }
    Answer { response, then }
}

/// Fails a 2025-11-25 task as soon as it needs input: over JSON-only HTTP the only way to
/// ask (a request to the client) does not exist. A 2026-07-28 task shows its input
/// requests in `tasks/get` and receives the answers from `tasks/update`, which work here.
fn refuse_v1_input(server: &Arc<Server>) -> std::io::Result<()> {
    let (stuck, to_fail) = mpsc::channel::<(Owner, TaskId)>();
    let registry = server.store().clone();
    // Not from inside the subscriber: a registry change made there would be delivered
    // while the subscriber still runs.
    std::thread::Builder::new()
        .name("mcp-input".into())
        .spawn(move || {
            for (owner, task) in to_fail {
                let error = JsonRpcError::new(jsonrpc::INTERNAL_ERROR, ELICITATION_NEEDS_STDIO)
                    .with_data(json!({
                        "transport": "streamable-http (application/json responses only)",
                        "useInstead": ["stdio", "the 2026-07-28 tasks extension (tasks/update)"],
                    }));
                let failed = registry.store_result(
                    &owner,
                    &task.to_string(),
                    TaskStatus::Failed,
                    Outcome::Error(error),
                );
                // Cancelled or expired meanwhile: nothing to do.
                if let Err(err) = failed {
                    eprintln!("http_server: task {task}: {err}");
                }
            }
        })?;
    let watcher = Arc::clone(server);
    TaskStore::subscribe(server.store(), move |change| {
        if let AnyTask::InputRequired(task) = &change.task
            && watcher.is_v1_task(task.id())
        {
            let _ = stuck.send((change.owner.clone(), task.id().clone()));
        }
        if change.task.is_terminal() {
            watcher.forget_task(change.task.id());
        }
    });
    Ok(())
}

/// One of a principal's `MAX_IN_FLIGHT_PER_PRINCIPAL` request slots, held while its
/// request is handled.
struct PrincipalSlot<'s> {
    state: &'s State,
    principal: &'s str,
}

impl<'s> PrincipalSlot<'s> {
    fn take(state: &'s State, principal: &'s str) -> Option<Self> {
        let mut counts = state
            .per_principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(principal.to_owned()).or_default();
        if *count >= MAX_IN_FLIGHT_PER_PRINCIPAL {
            return None;
        }
        *count += 1;
        Some(PrincipalSlot { state, principal })
    }
}

impl Drop for PrincipalSlot<'_> {
    fn drop(&mut self) {
        let mut counts = self
            .state
            .per_principal
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(self.principal);
            }
        }
    }
}

/// Counts a request in flight for as long as it lives.
struct InFlight(Arc<State>);

impl InFlight {
    /// Counts one more request, or `None` (not counted) when `MAX_IN_FLIGHT` are running.
    fn enter(state: &Arc<State>) -> Option<Self> {
        let before = state.in_flight.fetch_add(1, Ordering::AcqRel);
        let counted = InFlight(Arc::clone(state));
        (before < MAX_IN_FLIGHT).then_some(counted)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn serve(counted: InFlight, mut request: Request) {
    let state = Arc::clone(&counted.0);
    let Answer { response, then } = handle(&state, &mut request);
    if let Err(err) = request.respond(response) {
        eprintln!("http_server: cannot send a response: {err}");
    }
    drop(counted);
    // A task's handler starts only once the requestor has its `CreateTaskResult`; it runs
    // on this thread, no longer counted as a request (the registry's limits bound tasks).
    if let Some(work) = then {
        work();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let addr = std::env::var("MCP_TASKS_HTTP_ADDR").unwrap_or_else(|_| DEFAULT_ADDR.to_owned());
    let access = Access::from_env(&addr).map_err(|err| format!("http_server: {err}"))?;
    let extra_origins = std::env::var("MCP_TASKS_ALLOWED_ORIGINS")
        .map(|list| {
            list.split(',')
                .map(|origin| origin.trim().to_owned())
                .filter(|origin| !origin.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let trace_dir = std::env::var_os("MCP_TASKS_TRACE_DIR").map(PathBuf::from);
    if let Some(dir) = &trace_dir {
        std::fs::create_dir_all(dir)?;
    }
    let server = Arc::new(Server::from_env()?);
    refuse_v1_input(&server)?;
    let state = Arc::new(State {
        server,
        access,
        extra_origins,
        sessions: Mutex::new(Sessions::default()),
        trace_dir,
        trace_files: Mutex::new(HashMap::new()),
        in_flight: AtomicUsize::new(0),
        per_principal: Mutex::new(HashMap::new()),
    });

    let http = tiny_http::Server::http(addr.as_str())
        .map_err(|err| format!("http_server: cannot listen on {addr}: {err}"))?;
    let bound = http
        .server_addr()
        .to_ip()
        .map_or_else(|| addr.clone(), |ip| ip.to_string());
    eprintln!(
        "http_server: ready (MCP {PROTOCOL_VERSION} over Streamable HTTP, JSON responses; {})",
        state.access.describe()
    );
    println!("listening on http://{bound}{ENDPOINT}");
    std::io::stdout().flush()?;

    loop {
        let request = http.recv()?;
        let Some(counted) = InFlight::enter(&state) else {
            let busy = refusal(
                503,
                jsonrpc::INTERNAL_ERROR,
                "busy: too many requests at once, retry shortly",
            )
            .with_header(header("Retry-After", "1"));
            if let Err(err) = request.respond(busy) {
                eprintln!("http_server: cannot send a response: {err}");
            }
            continue;
        };
        let spawned = std::thread::Builder::new()
            .name("mcp-request".into())
            .spawn(move || serve(counted, request));
        if let Err(err) = spawned {
            eprintln!("http_server: cannot start a request thread: {err}");
        }
    }
}
