//! MCP over Streamable HTTP (feature `http`), on hyper 1.x and tokio: both generations of
//! MCP tasks on one endpoint, as [`HttpServer::serve`] on an address or as a
//! [`tower_service::Service`] ([`McpService`]) an axum or hyper application mounts at a path.
//!
//! ```no_run
//! use mcp_tasks_server::Server;
//! use mcp_tasks_server::access::{Access, Tokens};
//! use mcp_tasks_server::http::Http;
//!
//! # async fn run(server: Server) -> Result<(), Box<dyn std::error::Error>> {
//! let tokens = Tokens::parse("alice=token-a,bob=token-b")?;
//! let http = server.into_http(Http::new(Access::Tokens(tokens)));
//! http.serve("127.0.0.1:8808").await?; // until SIGTERM or SIGINT, then a graceful shutdown
//! # Ok(())
//! # }
//! ```
//!
//! # MCP 2025-11-25 (sessions)
//! `initialize` opens a session (`Mcp-Session-Id`); every later message needs it (`400`
//! without, `404` for a session this server does not know, that ended, or that another
//! principal opened). A notification or a response is answered `202`; a request with
//! `application/json`, except a `tasks/result` still waiting for its task, which (for a
//! client that accepts it) is a `text/event-stream` carrying the task's input requests
//! (`elicitation/create`, tagged with the related task) and its
//! `notifications/tasks/status`, then the answer. `GET` opens the session's standalone SSE
//! stream; every stream starts with a priming event and each event has an id, so a client
//! that lost a stream resumes it with `GET` and `Last-Event-ID`. `DELETE` ends the session.
//!
//! # MCP 2026-07-28 (stateless, the tasks extension)
//! No session; the version header and `_meta` framing are checked (`-32020`, `-32602`,
//! `-32022`, HTTP 400), `initialize`, `ping` and unknown methods are `-32601` with HTTP
//! 404, the routing headers (`Mcp-Method`, `Mcp-Name`, a tool's `Mcp-Param-*`) must match
//! the body. `subscriptions/listen` answers with a long-lived `text/event-stream`.
//!
//! # Checks, before anything is read or allocated
//! On a loopback address `Host` (a loopback name, else 403), `Origin` (a loopback origin or
//! one allowed, else 403), `Authorization` (401 with `WWW-Authenticate: Bearer`, the body
//! never read, the connection closed), the body's declared size (413), the principal's
//! concurrent requests (429 with `Retry-After`), then the body must arrive in time (408).
//! The limits are [`Limits`]; the connection cap and header timeout apply to
//! [`HttpServer::serve`] (an application mounting the service sets its own).
//!
//! # Traces
//! A request's span (feature `otel`) joins the trace its `_meta` names; without one, a W3C
//! `traceparent` (and `tracestate`) HTTP header does the same.
//!
//! # Shutdown
//! [`HttpServer::serve`] stops on SIGTERM or SIGINT ([`HttpServer::serve_until`] on any
//! future): it stops accepting and claiming, lets requests and running tasks finish for
//! [`Limits::shutdown_grace`], hands the redeliverable tasks still running over to another
//! instance of a shared store and fails the others (`-32603`), answers their waiters, and
//! logs one line saying how many finished, were handed over and failed.

pub mod admin;
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

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

pub use admin::AdminSettings;
pub use body::Body;
pub use config::{ADDR_ENV, DEFAULT_ADDR, Http, Limits};
pub use listener::{bind, raise_descriptor_limit, shutdown_signal};
pub use service::{ENDPOINT, METRICS, McpService};

use crate::access::Access;
use crate::claims::ClaimLoop;
use crate::listen::Listens;
use crate::server::Server;

use self::limits::Slots;
use self::session::Sessions;
use self::tasks::Tasks;
use self::trace::Trace;

/// The target of the one-line-per-request log (`debug`): method, principal, status,
/// latency.
pub const REQUEST_LOG: &str = "mcp_tasks_server::http::request";

/// Everything the requests share.
pub(crate) struct App {
    /// Routing, tools and tasks of both generations.
    pub(crate) server: Arc<Server>,
    /// Who a request acts for.
    pub(crate) access: Access,
    /// Origins allowed beside the loopback ones.
    pub(crate) extra_origins: Vec<String>,
    /// Whether the server listens on a loopback address (then `Host` is checked too).
    pub(crate) loopback: std::sync::atomic::AtomicBool,
    /// The limits.
    pub(crate) limits: Limits,
    /// Per-principal request slots.
    pub(crate) slots: Slots,
    /// 2025-11-25 sessions.
    pub(crate) sessions: Sessions,
    /// The tasks this instance runs.
    pub(crate) tasks: Arc<Tasks>,
    /// The open `subscriptions/listen` streams.
    pub(crate) listens: Listens,
    /// The message trace.
    pub(crate) trace: Arc<Trace>,
    /// Turns `true` when the server starts shutting down.
    pub(crate) shutdown: watch::Receiver<bool>,
    /// The claim loop, over a shared store (taken at shutdown to wait for its end).
    pub(crate) claims: Mutex<Option<ClaimLoop>>,
    /// The graceful shutdown of the connections [`HttpServer::serve`] accepted, once it
    /// stopped accepting.
    pub(crate) connections: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl App {
    /// Runs `call`, which calls the store. Over a shared store (a round trip, which may
    /// wait through an outage) inside `block_in_place`, so that the runtime moves its other
    /// work to another thread meanwhile; over the in-process registry (a call under a
    /// mutex: microseconds) right here.
    pub(crate) fn store_call<T>(&self, call: impl FnOnce() -> T) -> T {
        if self.server.is_shared() {
            tokio::task::block_in_place(call)
        } else {
            call()
        }
    }

    fn loopback(&self) -> bool {
        self.loopback.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Tokio's timer, for waits created and polled on any thread (created inside the runtime's
/// context, which a `Sleep` keeps).
struct TokioTimer(tokio::runtime::Handle);

impl crate::work::Timer for TokioTimer {
    fn sleep(&self, duration: std::time::Duration) -> crate::work::Sleep {
        let _inside = self.0.enter();
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A server over Streamable HTTP ([`Server::into_http`]): serve it on an address, or
/// mount its [`service`](Self::service) in an application.
pub struct HttpServer {
    app: Arc<App>,
    stop: watch::Sender<bool>,
    /// The operator's console, if asked for, and its listener once bound.
    admin: Option<AdminSettings>,
    admin_listener: Option<tokio::net::TcpListener>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("server", &self.app.server)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The server over Streamable HTTP, as `http` says. Call it inside a tokio runtime
    /// (multi-threaded): it starts the task watcher and, over a shared store, the claim
    /// loop on it.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    #[must_use]
    pub fn into_http(self, http: Http) -> HttpServer {
        // The handlers' waits on the runtime's timer: one thread for every wait of the
        // process (the runtime-free timer) wakes and preempts a worker for each.
        let timer = TokioTimer(tokio::runtime::Handle::current());
        let server = Arc::new(self.with_timer(Arc::new(timer)));
        let (stop, shutdown) = watch::channel(false);
        let trace = Arc::new(http.trace);
        let tasks = Arc::new(Tasks::default());
        tasks.watch(&server, &trace);
        let listens = Listens::new(server.store().clone(), http.listen_limits)
            .counted_by(server.telemetry().clone());
        let app = Arc::new(App {
            access: http.access,
            extra_origins: http.allowed_origins,
            loopback: std::sync::atomic::AtomicBool::new(false),
            slots: Slots::new(http.limits.principal_requests),
            limits: http.limits,
            sessions: Sessions::default(),
            tasks,
            listens,
            trace,
            shutdown,
            claims: Mutex::new(None),
            connections: Mutex::new(None),
            server,
        });
        if app.server.is_shared() {
            match claims::start(&app) {
                Ok(claims) => {
                    *app.claims
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(claims);
                }
                Err(why) => log::error!("{why}: tasks of stopped instances are not claimed here"),
            }
        }
        HttpServer {
            app,
            stop,
            admin: http.admin,
            admin_listener: None,
        }
    }
}

impl HttpServer {
    /// The MCP endpoint as a `tower` service, for an application that routes to it (axum's
    /// `Router::route_service("/mcp", ..)`, or hyper's `serve_connection`): it answers
    /// every request it is given as the endpoint, whatever its path. Cheap to clone.
    #[must_use]
    pub fn service(&self) -> McpService {
        McpService::new(Arc::clone(&self.app), false)
    }

    /// Binds `addr` and serves it until SIGTERM or SIGINT, then shuts down gracefully (see
    /// the [module docs](self)). The endpoint is [`ENDPOINT`] (`/mcp`), and [`METRICS`]
    /// answers the metrics in Prometheus' text format (feature `otel`, with
    /// `MCP_TASKS_PROMETHEUS=1` at [`telemetry::init`](crate::telemetry::init)), behind
    /// the same checks.
    ///
    /// # Errors
    /// The address cannot be bound, or the anonymous mode on an address that is not a
    /// loopback one.
    pub async fn serve(self, addr: &str) -> std::io::Result<()> {
        let listener = bind(addr).await?;
        self.serve_until(listener, shutdown_signal()).await
    }

    /// Serves `listener` until `shutdown` completes, then shuts down gracefully.
    ///
    /// # Errors
    /// The anonymous mode on an address that is not a loopback one.
    pub async fn serve_until(
        mut self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        self.bind_admin().await?;
        if matches!(self.app.access, Access::Anonymous) && !local.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("the anonymous mode listens on loopback only, not on {local}"),
            ));
        }
        self.app.loopback.store(
            local.ip().is_loopback(),
            std::sync::atomic::Ordering::Relaxed,
        );
        log::info!(
            "ready: MCP 2025-11-25 (sessions, SSE) and 2026-07-28 (stateless) over Streamable \
             HTTP on {local}; {}",
            self.app.access.describe()
        );
        if let (Some(settings), Some(admin_listener)) =
            (self.admin.take(), self.admin_listener.take())
        {
            let store = self.app.server.admin_store().cloned().ok_or_else(|| {
                std::io::Error::other(
                    "the operator's console needs a store the builder opened (a store URL \
                     or the in-process registry), not one given as a TaskStore",
                )
            })?;
            if let Access::Tokens(tokens) = &self.app.access
                && settings.tokens.shares_a_token(tokens)
            {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a token is both an MCP principal's and an admin's: give the console \
                     tokens of its own",
                ));
            }
            log::info!(
                "the operator's console on http://{}/",
                admin_listener.local_addr()?
            );
            tokio::spawn(admin::serve(
                admin_listener,
                store,
                settings,
                self.app.shutdown.clone(),
            ));
        }
        listener::serve(listener, Arc::clone(&self.app), shutdown).await;
        self.shut_down().await;
        Ok(())
    }

    /// Binds the operator's console's address ([`Http::admin`]) now, before
    /// [`serve_until`](Self::serve_until) (which otherwise binds it), and answers the
    /// address bound (`None` without a console): for a program that prints it.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind_admin(&mut self) -> std::io::Result<Option<std::net::SocketAddr>> {
        if self.admin_listener.is_none()
            && let Some(settings) = &self.admin
        {
            self.admin_listener = Some(bind(&settings.addr).await?);
        }
        self.admin_listener
            .as_ref()
            .map(tokio::net::TcpListener::local_addr)
            .transpose()
    }

    /// Shuts down as [`serve`](Self::serve) does after its signal, for an application that
    /// mounted the [`service`](Self::service): stops claiming, lets running tasks finish
    /// for the grace period, hands over or fails the rest, ends the listens.
    pub async fn shut_down(&self) {
        listener::shut_down(&self.app, &self.stop).await;
    }
}
