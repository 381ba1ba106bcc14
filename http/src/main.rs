//! `mcp_http`: the example MCP server over Streamable HTTP, on hyper 1.x and tokio, serving
//! both generations of MCP tasks on one endpoint, `/mcp`.
//!
//! ```text
//! MCP_TASKS_TOKENS='alice=token-a,bob=token-b' cargo run -p mcp-tasks-http
//! ```
//!
//! Same tools, routing and handlers as `stdio_server` (`servers/src`): `sleep` {ms},
//! `fail` {}, `crash` {} (task optional), `confirm` {question} (task required, asks the
//! user; on 2026-07-28 without the tasks extension it asks through an
//! `InputRequiredResult` instead), `echo` {text} (never a task), and the conformance
//! suite's fixture tools.
//!
//! # MCP 2025-11-25 (sessions)
//! - `POST` carries one JSON-RPC message. `initialize` opens a session (`Mcp-Session-Id`);
//!   every later message needs it (`400` without, `404` for a session this server does not
//!   know, that ended, or that another principal opened). A notification or a response is
//!   answered `202`; a request with `application/json`, except a `tasks/result` still
//!   waiting for its task, which (for a client that accepts it) is a `text/event-stream`
//!   carrying the task's input requests (`elicitation/create`, tagged with the related
//!   task) and its `notifications/tasks/status`, then the answer.
//! - `GET` opens a standalone SSE stream of the session: every message for the session that
//!   no `tasks/result` stream carries (with several open, each message goes out on one).
//! - Every SSE stream starts with a priming event (an id, a `retry` delay, no data); each
//!   event has an id, and a client that lost a stream resumes it with `GET` and
//!   `Last-Event-ID`: the events after it on that stream are sent again (the last 256 of the
//!   session are kept), never those of another stream.
//! - `DELETE` ends the session (`204`).
//!
//! # MCP 2026-07-28 (stateless, the tasks extension)
//! On the same endpoint, see `stateless.rs`: the version header and `_meta` framing are
//! checked (`-32020`, `-32602`, `-32022`, HTTP 400), `initialize`, `ping` and unknown
//! methods are `-32601` with HTTP 404, `server/discover` and `tools/list` carry `ttlMs` and
//! `cacheScope`.
//!
//! `subscriptions/listen` with `notifications.taskIds` (see `listen.rs` and
//! `mcp_tasks_servers::listen`) answers with a long-lived `text/event-stream`: the
//! acknowledgement (only the ids of the caller's own tasks), then one `notifications/tasks`
//! per change of those tasks, made on this instance or on any other of a shared store, and
//! at shutdown the `SubscriptionsListenResult`. `-32021` (HTTP 400) without the extension
//! declared; `MCP_TASKS_LISTEN_MAX_TASK_IDS` (1000) ids per listen (`-32602`) and
//! `MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL` (16) open listens per principal (`-32603`) at most;
//! HTTP 406 for a client that does not accept `text/event-stream`.
//!
//! # Authorization, origins, limits
//! - `Authorization: Bearer <token>`: the token's principal owns its tasks
//!   (`MCP_TASKS_TOKENS` or `MCP_TASKS_TOKENS_FILE`), or the anonymous single-owner mode
//!   bound to loopback (`MCP_TASKS_ANONYMOUS=1`); see `mcp_tasks_servers::access`.
//!   A request without a known token is answered `401` before its body is read, and its
//!   connection closed.
//! - `Origin`, when present, must be a loopback origin or listed in
//!   `MCP_TASKS_ALLOWED_ORIGINS` (`403`); on a loopback address, `Host` must name a loopback
//!   host (any port) or an allowed origin's host (`403`): DNS-rebinding protection.
//! - Checked before anything is read or allocated for a request: the connection cap
//!   (`MCP_TASKS_MAX_CONNECTIONS`, 2048), the header timeout (`MCP_TASKS_HEADER_TIMEOUT_MS`,
//!   10 s), the declared body size (`MCP_TASKS_MAX_BODY_BYTES`, 4 MiB: `413`), the
//!   principal's concurrent requests (`MCP_TASKS_PRINCIPAL_REQUESTS`, 32: `429` with
//!   `Retry-After`); then the body must arrive within `MCP_TASKS_BODY_TIMEOUT_MS` (10 s:
//!   `408`). A keep-alive connection idle for the header timeout is closed.
//! - Stored tasks: at most `MCP_TASKS_MAX_TASKS_PER_OWNER` (1000) per principal and
//!   `MCP_TASKS_MAX_TASKS` (100000) in all (`none`: no limit), finished ones included until
//!   their TTL (60 s by default); a `tools/call` over either is `-32603` "too many tasks".
//!   The first keeps one principal from filling the store for the others (it is reached at
//!   about a principal's creation rate × the TTL: raise it for a client that creates many
//!   short tasks); the second bounds the store's memory (the process's, or the shared
//!   store's over every instance).
//! - Out of file descriptors, the server backs off (10 ms doubling to 1 s) and keeps
//!   serving once descriptors free up; at start it raises its soft descriptor limit to the
//!   hard one.
//!
//! # Shutdown
//! On SIGTERM or SIGINT the server stops accepting (and claiming), lets in-flight requests
//! and running tasks finish for `MCP_TASKS_SHUTDOWN_MS` (10 s), then hands the
//! redeliverable tasks still running over to another instance of the shared store (which
//! claims them at once) and fails the others (`-32603`, "the server shut down before the
//! task finished"), answers their waiters, says on stderr in one line how many finished,
//! were handed over and failed (with the ids), and exits 0. A longer grace lets more tasks
//! finish in place; a shorter one hands them over sooner.
//!
//! # Tasks that outlive their process (cargo features `redis`, `postgres`)
//! The tasks live in process unless a shared store is named: Redis with `--redis URL` or
//! `MCP_TASKS_REDIS_URL` (cargo feature `redis`), PostgreSQL with `--postgres URL` or
//! `MCP_TASKS_POSTGRES_URL` (cargo feature `postgres`; `MCP_TASKS_POSTGRES_SCHEMA` names
//! the schema, default `mcp_tasks`). The command line wins over the environment; two
//! stores named on either is a usage error, and a store that cannot be reached at start-up
//! is one line naming its URL (a password hidden) and the cause, and exit status 1.
//! Instances on the same URL (and schema) serve the same tasks.
//!
//! Over a shared store the server runs a claim loop (`claims.rs`): a redeliverable task
//! (`sleep`, `confirm`) whose instance died or handed it over is claimed here and its tool
//! run again from its last checkpoint. A claimed 2025-11-25 task whose session lives on
//! this instance gets that session's notifications and input requests again; a
//! redelivered 2025-11-25 task whose session went with its instance is adopted by a new
//! session of its owner that calls `tasks/result` for it on a stream (the re-run's input
//! requests go there, the answers back through the store); other requestors poll
//! (`tasks/get`) or wait (`tasks/result`) through any instance. The knobs, each a
//! trade-off:
//! - `MCP_TASKS_LEASE_MS` (40000; `0`: no leases): how long a dead instance's tasks wait
//!   before they run elsewhere (or, for a task that runs once, fail). Shorter resumes
//!   sooner; it must outlast any pause or store outage an instance should ride out, else
//!   a task still running is claimed elsewhere (its first run is then superseded).
//! - `MCP_TASKS_LEASE_RENEW_MS` (an eighth of the lease): more often, fewer missed renewals
//!   before a lapse; one round trip to the store per interval and instance.
//! - `MCP_TASKS_CLAIM_BACKOFF_MS` (1000, doubled per attempt up to 60 s): how long a lapsed
//!   task waits before it is claimed. Longer spares the fleet a poison task (one that kills
//!   every instance that runs it), and delays every resumption after a crash as much. A
//!   hand-over waits none.
//! - `MCP_TASKS_OUTAGE_MS` (30000): how long the store retries through an outage of Redis
//!   or PostgreSQL
//!   before it answers an error. Longer rides out longer outages; waiters and finishing
//!   writes are held as long.
//!
//! # Other settings
//! `MCP_TASKS_HTTP_ADDR` (default `127.0.0.1:8808`, port 0 picks one; the first stdout line
//! is `listening on http://ADDR/mcp`), `MCP_TASKS_PAGE_SIZE`, `MCP_TASKS_TRACE_DIR`,
//! the shared store (`--redis URL`, `--postgres URL`, see above) and the knobs above,
//! `MCP_TASKS_CONFORMANCE=1` or `--conformance` (the conformance suite's fixture tools too),
//! `MCP_TASKS_TEST_TOOLS=1` (test only: the `abort` and `steps` tools),
//! `MCP_TASKS_REQUEST_STATE_KEY` (at least 32 bytes; the same on every instance behind one
//! load balancer; unset: random per process) and `MCP_TASKS_REQUEST_STATE_TTL_MS` (default
//! ten minutes), the key and lifetime of a 2026-07-28 `requestState` (SEP-2322, see
//! `mcp_tasks_servers::mrtr`).
//! `RUST_LOG` filters the log on stderr (default `info`); `RUST_LOG=mcp_http=debug` adds
//! one line per request: HTTP method, JSON-RPC method, principal, status, latency.
//!
//! # Telemetry
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set (e.g. `http://127.0.0.1:4318`), spans and metrics
//! go to that OpenTelemetry collector over OTLP/HTTP: one span per MCP request following
//! the MCP semantic conventions, each task's work in the trace of the call that created
//! it (also when another instance runs it), and the tasks' metrics; see
//! `mcp_tasks_servers::telemetry` and the README. Unset, nothing is recorded. With
//! `MCP_TASKS_PROMETHEUS=1`, `GET /metrics` answers the metrics in Prometheus' text format,
//! behind the same checks as `/mcp` (a bearer token, `Host`, `Origin`).

mod body;
mod claims;
mod config;
mod limits;
mod listen;
mod listener;
mod service;
mod session;
mod sse;
mod stateless;
mod talk;
mod tasks;
mod trace;

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use mcp_tasks_servers::access::Access;
use mcp_tasks_servers::claims::ClaimLoop;
use mcp_tasks_servers::listen::Listens;
use mcp_tasks_servers::server::Server;
use mcp_tasks_servers::telemetry::{self, Transport};
use tokio::sync::watch;

use crate::config::{Config, Limits};
use crate::limits::Slots;
use crate::session::Sessions;
use crate::tasks::Tasks;
use crate::trace::Trace;

/// Everything the requests share.
pub struct App {
    /// Routing, tools and tasks of both generations.
    pub server: Arc<Server>,
    /// Who a request acts for.
    pub access: Access,
    /// Origins allowed beside the loopback ones.
    pub extra_origins: Vec<String>,
    /// Whether the server listens on a loopback address (then `Host` is checked too).
    pub loopback: bool,
    /// The limits.
    pub limits: Limits,
    /// Per-principal request slots.
    pub slots: Slots,
    /// 2025-11-25 sessions.
    pub sessions: Sessions,
    /// The tasks this instance runs.
    pub tasks: Arc<Tasks>,
    /// The open `subscriptions/listen` streams.
    pub listens: Listens,
    /// The message trace.
    pub trace: Arc<Trace>,
    /// Turns `true` when the server starts shutting down.
    pub shutdown: watch::Receiver<bool>,
    /// The claim loop, over a shared store (taken at shutdown to wait for its end).
    pub claims: Mutex<Option<ClaimLoop>>,
}

impl App {
    /// Runs `call`, which calls the store. Over a shared store (a round trip, which may
    /// wait through an outage) inside `block_in_place`, so that the runtime moves its other
    /// work to another thread meanwhile; over the in-process registry (a call under a
    /// mutex: microseconds) right here, as `block_in_place` hands the worker's core to a
    /// thread of the blocking pool on every call, which under load kept hundreds of
    /// threads busy handing cores around.
    pub fn store_call<T>(&self, call: impl FnOnce() -> T) -> T {
        if self.server.is_shared() {
            tokio::task::block_in_place(call)
        } else {
            call()
        }
    }
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_http: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    // Before the server: it observes with what this installs (flushed when run returns).
    let telemetry = telemetry::init(Transport::Http);
    // Said only when something is exported (a store that cannot be reached at start-up is
    // one line on stderr).
    if telemetry.exporting() {
        tracing::info!("{}", telemetry.describe());
    }
    let config = Config::from_env()?;
    listener::raise_descriptor_limit();
    let server = Arc::new(Server::from_env().map_err(|err| err.to_string())?);
    let listens = Listens::from_env(server.store().clone())?.counted_by(server.telemetry().clone());
    let trace = Arc::new(
        Trace::new(config.trace_dir.clone())
            .map_err(|err| format!("cannot create MCP_TASKS_TRACE_DIR: {err}"))?,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mcp-http")
        .build()
        .map_err(|err| format!("cannot start the runtime: {err}"))?;
    runtime.block_on(async move {
        let signals = listener::Signals::listen();
        let listener = listener::bind(&config.addr)
            .await
            .map_err(|err| format!("cannot listen on {}: {err}", config.addr))?;
        let bound = listener
            .local_addr()
            .map_or_else(|_| config.addr.clone(), |addr| addr.to_string());
        let (stop, shutdown) = watch::channel(false);
        let tasks = Arc::new(Tasks::default());
        tasks.watch(&server, &trace);
        let app = Arc::new(App {
            server,
            access: config.access,
            extra_origins: config.extra_origins,
            loopback: listener.local_addr().is_ok_and(|addr| addr.ip().is_loopback()),
            slots: Slots::new(config.limits.principal_requests),
            limits: config.limits,
            sessions: Sessions::default(),
            tasks,
            listens,
            trace,
            shutdown,
            claims: Mutex::new(None),
        });
        if app.server.is_shared() {
            let claims = claims::start(&app)?;
            *app.claims.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(claims);
        }
        tracing::info!(
            "ready: MCP 2025-11-25 (sessions, SSE) and 2026-07-28 (stateless) over Streamable HTTP; {}",
            app.access.describe()
        );
        println!("listening on http://{bound}{}", service::ENDPOINT);
        let _ = std::io::stdout().flush();
        listener::serve(listener, app, stop, signals).await;
        Ok::<(), String>(())
    })?;
    // The handlers still running as futures are not dropped: their tasks were handed over
    // or failed at shutdown, and a dropped handle would abandon its task (fenced, but a
    // task handed over keeps its attempt until claimed). The process ends now anyway.
    std::mem::forget(runtime);
    Ok(())
}
