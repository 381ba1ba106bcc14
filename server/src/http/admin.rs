//! The operator's console over HTTP: a JSON API over the server's store as a
//! [`TaskAdmin`] (every owner's tasks), a Server-Sent Events stream of task changes, and a
//! web page that uses them, on a listener of its own ([`AdminSettings`], off unless asked
//! for) behind admin tokens of its own.
//!
//! | request | what |
//! |---|---|
//! | `GET /` (`/app.js`, `/app.css`) | the page (it asks for the admin token; it holds no data) |
//! | `GET /api/tasks?status=&tool=&owner=&cursor=&limit=` (and `minAttempts`, `olderThanMs`, `newerThanMs`, `holder`, one of `stalledGraceMs`, `inputRequiredLongerThanMs`, `exhausted=true`) | one page of every owner's tasks |
//! | `GET /api/counts` | the tasks by status and by tool, the last hour per minute, the oldest working task |
//! | `GET /api/tasks/{id}` | one task whole |
//! | `POST /api/tasks/{id}/cancel`, `/fail` (`{"reason": ".."}`), `/hand-over` | an action, recorded under the admin principal's name |
//! | `GET /api/instances` | the instances holding tasks, and the drained ones |
//! | `POST /api/instances/{name}/drain`, `/undrain` | drain an instance (it claims nothing, its tasks are handed over), or end its drain |
//! | `POST /api/purge` (`{"olderThanMs": ..}`) | remove the finished tasks last updated longer ago |
//! | `GET /api/events` | `text/event-stream`: one `task` event per creation and per change of any task |
//!
//! Every `/api/` request carries `Authorization: Bearer <admin token>` (never a cookie, so
//! a page of another site cannot make a browser send it); an MCP principal's token is
//! refused (`401`), and a token may not be both (the server does not start). A
//! state-changing request is a `POST` with `Content-Type: application/json` (a form of
//! another site cannot send one without the browser asking first), and a browser `Origin`
//! must be a loopback one, the console's own, or one listed.
//!
//! Errors are JSON, `{"error": "..", "kind": ".."}`: an unknown task `404`, a malformed
//! parameter or cursor `400` naming it (`"parameter"`), an action on a task that moved on
//! `409` with what was found (`"status"`), a store that cannot answer `503`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_tasks::admin::{
    AdminError, ChangeKind, InstanceInfo, MAX_ADMIN_PAGE, TaskAdmin, TaskQuery, View,
};
use mcp_tasks::backend::StoredRow;
use mcp_tasks::{Owner, StatusChange, TaskStatus};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::access::{Tokens, host_allowed, origin_allowed};

use super::body::{Body, Inner};
use super::service::header_str;
use super::sse::KEEPALIVE;

/// The environment variable with the address the console listens on (unset: no console).
pub const ADMIN_ADDR_ENV: &str = "MCP_TASKS_ADMIN_ADDR";
/// The environment variable with the admin tokens (`principal=token`, as `MCP_TASKS_TOKENS`).
pub const ADMIN_TOKENS_ENV: &str = "MCP_TASKS_ADMIN_TOKENS";
/// The environment variable naming a file of admin tokens (instead of
/// [`ADMIN_TOKENS_ENV`]).
pub const ADMIN_TOKENS_FILE_ENV: &str = "MCP_TASKS_ADMIN_TOKENS_FILE";
/// The environment variable with browser origins allowed beside the loopback ones and the
/// console's own (comma-separated).
pub const ADMIN_ORIGINS_ENV: &str = "MCP_TASKS_ADMIN_ALLOWED_ORIGINS";

/// The tasks a list page holds unless `limit` says otherwise.
pub const DEFAULT_LIST_LIMIT: usize = 50;

/// The most tasks `GET /api/counts` reads (its answer says `"truncated": true` beyond).
pub const MAX_COUNTED: usize = 20 * MAX_ADMIN_PAGE;

/// The largest body an action may have.
const MAX_ACTION_BODY: usize = 16 * 1024;

/// The longest reason a fail action may give (characters).
const MAX_REASON: usize = 1_000;

/// Changes waiting for one event stream; beyond them the stream says `lagged` (the page
/// reads the tasks again).
const EVENTS: usize = 256;

/// How long a connection may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

const PAGE_HTML: &str = include_str!("admin/index.html");
const PAGE_JS: &str = include_str!("admin/app.js");
const PAGE_CSS: &str = include_str!("admin/app.css");

/// The page's policy: its own script and style only, no frame, no other connection.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'none'";

/// Where and for whom the operator's console is served
/// ([`Http::admin`](super::Http::admin)).
pub struct AdminSettings {
    pub(crate) addr: String,
    pub(crate) tokens: Tokens,
    pub(crate) allowed_origins: Vec<String>,
}

impl std::fmt::Debug for AdminSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens.
        f.debug_struct("AdminSettings")
            .field("addr", &self.addr)
            .field("principals", &self.tokens.count())
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

impl AdminSettings {
    /// The console on `addr` (`127.0.0.1:8809`; port 0 picks one), for the admin
    /// principals of `tokens` (none of them may be an MCP principal's token).
    #[must_use]
    pub fn new(addr: impl Into<String>, tokens: Tokens) -> Self {
        Self {
            addr: addr.into(),
            tokens,
            allowed_origins: Vec::new(),
        }
    }

    /// Browser origins allowed beside the loopback ones and the console's own.
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = String>) -> Self {
        self.allowed_origins = origins.into_iter().collect();
        self
    }

    /// The address the console listens on.
    #[must_use]
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// What the environment sets: `None` unless `MCP_TASKS_ADMIN_ADDR` is set; then the
    /// tokens of `MCP_TASKS_ADMIN_TOKENS` (or the file `MCP_TASKS_ADMIN_TOKENS_FILE`) and
    /// the origins of `MCP_TASKS_ADMIN_ALLOWED_ORIGINS`.
    ///
    /// # Errors
    /// One line for the operator: the address without tokens, both token variables, a
    /// file that cannot be read, or tokens [`Tokens::parse`] refuses.
    pub fn from_env() -> Result<Option<Self>, String> {
        let addr = match std::env::var(ADMIN_ADDR_ENV) {
            Ok(addr) if !addr.trim().is_empty() => addr.trim().to_owned(),
            _ => return Ok(None),
        };
        let text = match (
            std::env::var(ADMIN_TOKENS_ENV).ok(),
            std::env::var_os(ADMIN_TOKENS_FILE_ENV),
        ) {
            (Some(text), None) => text,
            (None, Some(path)) => std::fs::read_to_string(&path).map_err(|err| {
                format!(
                    "cannot read {ADMIN_TOKENS_FILE_ENV}={}: {err}",
                    std::path::Path::new(&path).display()
                )
            })?,
            (None, None) => {
                return Err(format!(
                    "{ADMIN_ADDR_ENV} is set: the console needs admin tokens, \
                     {ADMIN_TOKENS_ENV}=<principal=token,...> or {ADMIN_TOKENS_FILE_ENV}=<file>"
                ));
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "set {ADMIN_TOKENS_ENV} or {ADMIN_TOKENS_FILE_ENV}, not both"
                ));
            }
        };
        let tokens = Tokens::parse(&text).map_err(|why| format!("the admin tokens: {why}"))?;
        let origins: Vec<String> = std::env::var(ADMIN_ORIGINS_ENV)
            .map(|list| {
                list.split(',')
                    .map(|origin| origin.trim().to_owned())
                    .filter(|origin| !origin.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Self::new(addr, tokens).allowed_origins(origins)))
    }
}

/// Everything the console's requests share.
pub(crate) struct Console {
    store: Arc<dyn TaskAdmin>,
    tokens: Tokens,
    origins: Vec<String>,
    loopback: bool,
    shutdown: watch::Receiver<bool>,
}

/// Serves the console on `listener` until `shutdown` turns `true` (its event streams end
/// then too).
pub(crate) async fn serve(
    listener: TcpListener,
    store: Arc<dyn TaskAdmin>,
    settings: AdminSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let loopback = listener
        .local_addr()
        .is_ok_and(|addr: SocketAddr| addr.ip().is_loopback());
    let console = Arc::new(Console {
        store,
        tokens: settings.tokens,
        origins: settings.allowed_origins,
        loopback,
        shutdown: shutdown.clone(),
    });
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                log::debug!("admin console: a connection failed before it was accepted: {err}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let console = Arc::clone(&console);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let console = Arc::clone(&console);
                async move { Ok::<_, std::convert::Infallible>(handle(&console, request).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(err) = served.await {
                log::debug!("admin console: connection ended: {err}");
            }
        });
    }
}

/// Answers one request of the console.
pub(crate) async fn handle<B>(console: &Arc<Console>, request: Request<B>) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let headers = request.headers();
    let host = header_str(headers, &header::HOST);
    // Bound to loopback, only requests addressed to a loopback name (or an allowed
    // origin's host): a DNS-rebound name is refused.
    if console.loopback
        && let Some(host) = host
        && !host_allowed(host, &console.origins)
    {
        return error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "forbidden: this Host may not use the console",
        );
    }
    if let Some(origin) = header_str(headers, &header::ORIGIN) {
        let own = host.is_some_and(|host| {
            origin.strip_prefix("http://") == Some(host)
                || origin.strip_prefix("https://") == Some(host)
        });
        if !own && !origin_allowed(origin, &console.origins) {
            return error(
                StatusCode::FORBIDDEN,
                "forbidden",
                "forbidden: this origin may not use the console",
            );
        }
    }
    let path = request.uri().path().to_owned();
    let page = match path.as_str() {
        "/" | "/index.html" => Some((PAGE_HTML, "text/html; charset=utf-8")),
        "/app.js" => Some((PAGE_JS, "text/javascript; charset=utf-8")),
        "/app.css" => Some((PAGE_CSS, "text/css; charset=utf-8")),
        _ => None,
    };
    if let Some((text, kind)) = page {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return not_allowed("GET");
        }
        let mut response = respond(StatusCode::OK, kind, Bytes::from_static(text.as_bytes()));
        response.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_POLICY),
        );
        return response;
    }
    let Some(rest) = path.strip_prefix("/api/") else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "not found: the console is `/`, its API `/api/`",
        );
    };
    let actor = match authenticate(console, request.headers()) {
        Ok(actor) => actor,
        Err(response) => return response,
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let method = request.method().clone();
    match (segments.as_slice(), &method) {
        (["tasks"], &Method::GET) => list(console, request.uri().query()).await,
        (["counts"], &Method::GET) => counts(console).await,
        (["events"], &Method::GET) => events(console),
        (["tasks", id], &Method::GET) if !id.is_empty() => show(console, decode_path(id)).await,
        (["tasks", id, action], &Method::POST)
            if !id.is_empty() && matches!(*action, "cancel" | "fail" | "hand-over") =>
        {
            let (id, action) = (decode_path(id), (*action).to_owned());
            act(console, request, actor, id, action).await
        }
        (["instances"], &Method::GET) => instances(console).await,
        (["instances", name, action], &Method::POST)
            if !name.is_empty() && matches!(*action, "drain" | "undrain") =>
        {
            let (name, action) = (decode_path(name), (*action).to_owned());
            instance_action(console, request, actor, name, action).await
        }
        (["purge"], &Method::POST) => purge(console, request, actor).await,
        (["tasks"] | ["counts"] | ["events"] | ["instances"], _) => not_allowed("GET"),
        (["purge"], _) => not_allowed("POST"),
        (["instances", name, action], _)
            if !name.is_empty() && matches!(*action, "drain" | "undrain") =>
        {
            not_allowed("POST")
        }
        (["tasks", id], _) if !id.is_empty() => not_allowed("GET"),
        (["tasks", id, action], _)
            if !id.is_empty() && matches!(*action, "cancel" | "fail" | "hand-over") =>
        {
            not_allowed("POST")
        }
        _ => error(
            StatusCode::NOT_FOUND,
            "not_found",
            "not found: the API serves /api/tasks, /api/tasks/{id}, \
             /api/tasks/{id}/{cancel,fail,hand-over}, /api/counts, /api/events, \
             /api/instances, /api/instances/{name}/{drain,undrain}, /api/purge",
        ),
    }
}

/// The admin principal of the request's bearer token, or the `401` to answer.
#[allow(clippy::result_large_err)]
fn authenticate(console: &Console, headers: &http::HeaderMap) -> Result<String, Response<Body>> {
    let refuse = |message: &str, challenge: &'static str| {
        let mut response = error(StatusCode::UNAUTHORIZED, "unauthorized", message);
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        response
    };
    let Some(value) = header_str(headers, &header::AUTHORIZATION) else {
        return Err(refuse(
            "unauthorized: send `Authorization: Bearer <admin token>`",
            r#"Bearer realm="mcp-tasks-admin""#,
        ));
    };
    value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .and_then(|(_, token)| console.tokens.principal(token.trim()))
        .map(str::to_owned)
        .ok_or_else(|| {
            refuse(
                "unauthorized: not an admin token",
                r#"Bearer realm="mcp-tasks-admin", error="invalid_token""#,
            )
        })
}

/// A response with `body` of type `kind`, never cached, never sniffed.
fn respond(status: StatusCode, kind: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Body::full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    respond(
        status,
        "application/json",
        Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
    )
}

/// An error answer: `{"error": message, "kind": kind}`.
fn error(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": message, "kind": kind}))
}

/// A `400` naming the parameter at fault.
fn bad_parameter(parameter: &str, message: &str) -> Response<Body> {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({"error": message, "kind": "invalid_parameter", "parameter": parameter}),
    )
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("method not allowed: use {allow}"),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The answer to an admin operation's error.
fn admin_error(err: AdminError) -> Response<Body> {
    let message = err.to_string();
    match err {
        AdminError::NotFound { task_id } => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": message, "kind": "not_found", "taskId": task_id}),
        ),
        AdminError::AlreadyFinished { task_id, status } => json_response(
            StatusCode::CONFLICT,
            &json!({"error": message, "kind": "already_finished", "taskId": task_id,
                    "status": status}),
        ),
        AdminError::NotHandedOver { task_id, .. } => json_response(
            StatusCode::CONFLICT,
            &json!({"error": message, "kind": "not_handed_over", "taskId": task_id}),
        ),
        AdminError::InvalidCursor { .. } => bad_parameter("cursor", &message),
        AdminError::NoInstances => json_response(
            StatusCode::CONFLICT,
            &json!({"error": message, "kind": "no_instances"}),
        ),
        other => {
            log::warn!("admin console: {other}");
            error(StatusCode::SERVICE_UNAVAILABLE, "store", &message)
        }
    }
}

/// Runs `call` (store round trips) on the blocking pool.
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response<Body>> {
    tokio::task::spawn_blocking(call).await.map_err(|err| {
        log::error!("admin console: a store call failed: {err}");
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error: the store call did not finish",
        )
    })
}

/// `%XX` and `+` decoded; `None` for a malformed escape or text that is not UTF-8.
fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn decode_path(segment: &str) -> String {
    percent_decode(segment, false).unwrap_or_else(|| segment.to_owned())
}

/// What a list asks for.
#[derive(Debug)]
struct ListParameters {
    /// The filter, but for its time bounds.
    filter: TaskQuery,
    cursor: Option<String>,
    limit: usize,
    /// Only tasks created longer ago than this (`olderThanMs`), on the store's clock.
    older_than: Option<Duration>,
    /// Only tasks created less long ago than this (`newerThanMs`).
    newer_than: Option<Duration>,
}

/// A whole number parameter, or the `400` naming it.
#[allow(clippy::result_large_err)]
fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, Response<Body>> {
    value.parse::<T>().map_err(|_| {
        bad_parameter(
            name,
            &format!("`{name}` is a whole number (0 or more, within its range)"),
        )
    })
}

/// The list's parameters: the query, the cursor, the limit.
#[allow(clippy::result_large_err)]
fn list_parameters(query: Option<&str>) -> Result<ListParameters, Response<Body>> {
    let mut filter = TaskQuery::all();
    let (mut cursor, mut limit) = (None, DEFAULT_LIST_LIMIT);
    let (mut older_than, mut newer_than) = (None, None);
    let mut views = Vec::new();
    for pair in query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(name, true)
            .ok_or_else(|| bad_parameter("query", "the query is not percent-encoded UTF-8"))?;
        let value = percent_decode(value, true).ok_or_else(|| {
            bad_parameter(&name, &format!("`{name}` is not percent-encoded UTF-8"))
        })?;
        match name.as_str() {
            "status" => {
                for status in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let status = status.parse::<TaskStatus>().map_err(|_| {
                        bad_parameter(
                            "status",
                            &format!(
                                "`{}` is not a task status: working, input_required, \
                                 completed, failed, cancelled",
                                status.chars().take(40).collect::<String>()
                            ),
                        )
                    })?;
                    filter = filter.with_status(status);
                }
            }
            "tool" if !value.is_empty() => filter = filter.of_tool(value),
            "owner" if value == "-" => filter = filter.of_owner(Owner::anonymous()),
            "owner" if !value.is_empty() => filter = filter.of_owner(Owner::new(value)),
            "cursor" if !value.is_empty() => cursor = Some(value),
            "limit" => {
                limit = match value.parse::<usize>() {
                    Ok(n) if (1..=MAX_ADMIN_PAGE).contains(&n) => n,
                    _ => {
                        return Err(bad_parameter(
                            "limit",
                            &format!("`limit` is a whole number from 1 to {MAX_ADMIN_PAGE}"),
                        ));
                    }
                };
            }
            "minAttempts" => filter.min_attempts = Some(number(&name, &value)?),
            "olderThanMs" => older_than = Some(Duration::from_millis(number(&name, &value)?)),
            "newerThanMs" => newer_than = Some(Duration::from_millis(number(&name, &value)?)),
            "holder" if !value.is_empty() => filter.lease_holder = Some(value),
            "stalledGraceMs" => views.push(View::Stalled {
                grace: Duration::from_millis(number(&name, &value)?),
            }),
            "inputRequiredLongerThanMs" => views.push(View::InputRequiredLongerThan(
                Duration::from_millis(number(&name, &value)?),
            )),
            "exhausted" if value == "true" => views.push(View::Exhausted),
            "exhausted" if value == "false" => {}
            "exhausted" => {
                return Err(bad_parameter("exhausted", "`exhausted` is true or false"));
            }
            "tool" | "owner" | "cursor" | "holder" => {}
            other => {
                return Err(bad_parameter(
                    other,
                    &format!(
                        "`{}` is not a parameter of the list: status, tool, owner, \
                         minAttempts, olderThanMs, newerThanMs, holder, stalledGraceMs, \
                         inputRequiredLongerThanMs, exhausted, cursor, limit",
                        other.chars().take(40).collect::<String>()
                    ),
                ));
            }
        }
    }
    if views.len() > 1 {
        return Err(bad_parameter(
            "view",
            "one of stalledGraceMs, inputRequiredLongerThanMs and exhausted at most",
        ));
    }
    filter.view = views.pop();
    Ok(ListParameters {
        filter,
        cursor,
        limit,
        older_than,
        newer_than,
    })
}

async fn list(console: &Arc<Console>, query: Option<&str>) -> Response<Body> {
    let ListParameters {
        mut filter,
        cursor,
        limit,
        older_than,
        newer_than,
    } = match list_parameters(query) {
        Ok(parameters) => parameters,
        Err(response) => return response,
    };
    let store = Arc::clone(&console.store);
    let answered = blocking(move || -> Result<Value, AdminError> {
        if older_than.is_some() || newer_than.is_some() {
            // The bounds on the store's clock, as the command line's.
            filter = filter.created_within(store.clock()?, older_than, newer_than);
        }
        let page = store.list_tasks(&filter, cursor.as_deref(), limit)?;
        let mut tasks = Vec::with_capacity(page.rows.len());
        for row in &page.rows {
            let mut value = mcp_tasks::admin::row_json(row);
            value["tool"] = json!(tool_of(&*store, row)?);
            tasks.push(value);
        }
        Ok(json!({"tasks": tasks, "nextCursor": page.next_cursor}))
    })
    .await;
    match answered {
        Ok(Ok(value)) => json_response(StatusCode::OK, &value),
        Ok(Err(err)) => admin_error(err),
        Err(response) => response,
    }
}

async fn show(console: &Arc<Console>, id: String) -> Response<Body> {
    let store = Arc::clone(&console.store);
    match blocking(move || store.show_task(&id)).await {
        Ok(Ok(details)) => json_response(StatusCode::OK, &details.to_json()),
        Ok(Err(err)) => admin_error(err),
        Err(response) => response,
    }
}

async fn act<B>(
    console: &Arc<Console>,
    request: Request<B>,
    actor: String,
    id: String,
    action: String,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let params = match action_body(request).await {
        Ok(params) => params,
        Err(response) => return response,
    };
    let reason = if action == "fail" {
        match params.get("reason").and_then(Value::as_str).map(str::trim) {
            Some(reason) if !reason.is_empty() && reason.chars().count() <= MAX_REASON => {
                Some(reason.to_owned())
            }
            _ => {
                return bad_parameter(
                    "reason",
                    &format!("fail takes a `reason`: text of 1 to {MAX_REASON} characters"),
                );
            }
        }
    } else {
        None
    };
    let store = Arc::clone(&console.store);
    let done = blocking(move || match (action.as_str(), reason) {
        ("cancel", _) => store.cancel_task(&id, &actor),
        ("fail", Some(reason)) => store.fail_task(&id, &reason, &actor),
        _ => store.hand_over_task(&id, &actor),
    })
    .await;
    match done {
        Ok(Ok(record)) => {
            log::info!("{record}");
            json_response(StatusCode::OK, &record.to_json())
        }
        Ok(Err(err)) => admin_error(err),
        Err(response) => response,
    }
}

/// The JSON object an action's body holds (`{}` for an empty body), or the error to
/// answer: an action is a `POST` with `Content-Type: application/json` (a form of another
/// site cannot send one without the browser asking first) and a small body.
#[allow(clippy::result_large_err)]
async fn action_body<B>(request: Request<B>) -> Result<Value, Response<Body>>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let json_body = header_str(request.headers(), &header::CONTENT_TYPE)
        .and_then(|kind| kind.split(';').next())
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"));
    if !json_body {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "an action is a POST with `Content-Type: application/json`",
        ));
    }
    let body = match Limited::new(request.into_body(), MAX_ACTION_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_body",
                &format!("an action's body is at most {MAX_ACTION_BODY} bytes of JSON"),
            ));
        }
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice(&body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(bad_parameter("body", "an action's body is a JSON object")),
    }
}

async fn instances(console: &Arc<Console>) -> Response<Body> {
    let store = Arc::clone(&console.store);
    match blocking(move || store.instances()).await {
        Ok(Ok(instances)) => json_response(
            StatusCode::OK,
            &json!({"instances": instances.iter().map(InstanceInfo::to_json).collect::<Vec<_>>()}),
        ),
        Ok(Err(err)) => admin_error(err.into()),
        Err(response) => response,
    }
}

/// `drain` or `undrain` of the instance `name`.
async fn instance_action<B>(
    console: &Arc<Console>,
    request: Request<B>,
    actor: String,
    name: String,
    action: String,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(response) = action_body(request).await {
        return response;
    }
    if name.len() > 128 || name.chars().any(char::is_control) {
        return bad_parameter(
            "name",
            "an instance name is 1 to 128 bytes without control characters",
        );
    }
    let store = Arc::clone(&console.store);
    let done = blocking(move || -> Result<Value, AdminError> {
        if action == "drain" {
            let report = store.drain(&name, &actor)?;
            log::info!(
                "admin {actor} drained instance {name}: {} tasks handed over, {} kept",
                report.handed_over.len(),
                report.kept.len()
            );
            let mut value = report.to_json();
            value["name"] = json!(name);
            Ok(value)
        } else {
            let was = store.undrain(&name)?;
            log::info!("admin {actor} undrained instance {name} (drained before: {was})");
            Ok(json!({"name": name, "wasDraining": was}))
        }
    })
    .await;
    match done {
        Ok(Ok(value)) => json_response(StatusCode::OK, &value),
        Ok(Err(err)) => admin_error(err),
        Err(response) => response,
    }
}

/// Removes the finished tasks last updated more than `olderThanMs` ago.
async fn purge<B>(console: &Arc<Console>, request: Request<B>, actor: String) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let params = match action_body(request).await {
        Ok(params) => params,
        Err(response) => return response,
    };
    let Some(older_than) = params.get("olderThanMs").and_then(Value::as_u64) else {
        return bad_parameter(
            "olderThanMs",
            "purge takes `olderThanMs`: the age in milliseconds (a whole number, 0 or more) \
             beyond which finished tasks are removed",
        );
    };
    let store = Arc::clone(&console.store);
    let bound = Duration::from_millis(older_than);
    match blocking(move || store.purge_finished(bound, &mut |_| {})).await {
        Ok(Ok(done)) => {
            log::info!(
                "admin {actor} purged {} of {} finished tasks older than {older_than} ms",
                done.purged,
                done.examined
            );
            json_response(
                StatusCode::OK,
                &json!({"examined": done.examined, "purged": done.purged,
                        "olderThanMs": older_than, "actor": actor}),
            )
        }
        Ok(Err(err)) => admin_error(err.into()),
        Err(response) => response,
    }
}

/// What the counts endpoint answers, read over at most [`MAX_COUNTED`] tasks.
fn count_tasks(store: &dyn TaskAdmin) -> Result<Value, AdminError> {
    const MINUTE: i64 = 60_000;
    const MINUTES: usize = 60;
    let now = store.clock()?.unix_millis();
    let mut by_status: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut by_tool: BTreeMap<String, usize> = BTreeMap::new();
    let (mut created, mut completed, mut failed, mut cancelled) = (
        vec![0_usize; MINUTES],
        vec![0_usize; MINUTES],
        vec![0_usize; MINUTES],
        vec![0_usize; MINUTES],
    );
    let minute = |at: i64| {
        let ago = now.saturating_sub(at).max(0) / MINUTE;
        usize::try_from(ago)
            .ok()
            .filter(|ago| *ago < MINUTES)
            .map(|ago| MINUTES - 1 - ago)
    };
    let mut oldest_working: Option<i64> = None;
    let (mut total, mut cursor) = (0, None::<String>);
    let all = TaskQuery::all();
    loop {
        let page = store.list_tasks(&all, cursor.as_deref(), MAX_ADMIN_PAGE)?;
        for row in &page.rows {
            total += 1;
            let task = &row.task;
            let status = task.status();
            *by_status.entry(status.as_str()).or_default() += 1;
            if let Some(tool) = tool_of(store, row)? {
                *by_tool.entry(tool).or_default() += 1;
            }
            let born = task.created_at().unix_millis();
            if let Some(at) = minute(born) {
                created[at] += 1;
            }
            let bucket = match status {
                TaskStatus::Completed => Some(&mut completed),
                TaskStatus::Failed => Some(&mut failed),
                TaskStatus::Cancelled => Some(&mut cancelled),
                _ => None,
            };
            if let (Some(bucket), Some(at)) = (bucket, minute(task.last_updated_at().unix_millis()))
            {
                bucket[at] += 1;
            }
            if status == TaskStatus::Working {
                oldest_working = Some(oldest_working.map_or(born, |oldest| oldest.min(born)));
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() || total >= MAX_COUNTED {
            break;
        }
    }
    Ok(json!({
        "total": total,
        "truncated": cursor.is_some(),
        "byStatus": by_status,
        "byTool": by_tool,
        "now": now,
        "oldestWorkingAgeMs": oldest_working.map(|born| now.saturating_sub(born).max(0)),
        "lastHour": {
            "bucketMs": MINUTE,
            "created": created,
            "completed": completed,
            "failed": failed,
            "cancelled": cancelled,
        },
    }))
}

async fn counts(console: &Arc<Console>) -> Response<Body> {
    let store = Arc::clone(&console.store);
    match blocking(move || count_tasks(&*store)).await {
        Ok(Ok(value)) => json_response(StatusCode::OK, &value),
        Ok(Err(err)) => admin_error(err),
        Err(response) => response,
    }
}

/// One SSE event named `name` with `data` on one line.
fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The stream of task creations and changes: the store's watch
/// ([`TaskAdmin::watch`], whichever instance of a shared store made the change) feeds a
/// bounded queue; a client too slow for it is told
/// `lagged` and reads the tasks again. The subscription ends with the stream.
fn events(console: &Arc<Console>) -> Response<Body> {
    let (changes, mut queued) = mpsc::channel::<Bytes>(EVENTS);
    let lagged = Arc::new(AtomicBool::new(false));
    let subscription = {
        let lagged = Arc::clone(&lagged);
        console
            .store
            .watch(Arc::new(move |change: &StatusChange, kind: ChangeKind| {
                if changes
                    .try_send(event("task", &change_json(change, kind)))
                    .is_err()
                {
                    lagged.store(true, Ordering::Relaxed);
                }
            }))
    };
    let (out, stream) = super::sse::channel(16);
    let store = Arc::clone(&console.store);
    let mut shutdown = console.shutdown.clone();
    tokio::spawn(async move {
        let _ = out
            .send(event(
                "ready",
                &json!({"keepaliveMs": KEEPALIVE.as_millis()}),
            ))
            .await;
        loop {
            let next = tokio::select! {
                change = queued.recv() => match change {
                    Some(change) => change,
                    None => break,
                },
                () = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(b": keepalive\n\n"),
                () = out.closed() => break,
                _ = shutdown.wait_for(|stop| *stop) => break,
            };
            if lagged.swap(false, Ordering::Relaxed)
                && out.send(event("lagged", &json!({}))).await.is_err()
            {
                break;
            }
            if out.send(next).await.is_err() {
                break;
            }
        }
        store.unsubscribe(subscription);
    });
    let mut response = Response::new(Body(Inner::Sse {
        stream,
        _slot: None,
    }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The tool a task runs ([`TaskAdmin::tool_of`]; `None` for a task that names none).
fn tool_of(store: &dyn TaskAdmin, row: &StoredRow) -> Result<Option<String>, AdminError> {
    Ok(store.tool_of(row)?)
}

/// A created or changed task, as the event stream tells it (its `tool` when it keeps one:
/// a task stored before tasks kept it is told without, and the page keeps the tool the
/// list showed).
fn change_json(change: &StatusChange, kind: ChangeKind) -> Value {
    let task = &change.task;
    let mut value = json!({
        "change": if kind == ChangeKind::Created { "created" } else { "changed" },
        "taskId": task.id().to_string(),
        "owner": change.owner.key(),
        "status": task.status(),
        "statusMessage": task.status_message(),
        "createdAt": task.created_at().to_string(),
        "lastUpdatedAt": task.last_updated_at().to_string(),
    });
    if let Some(tool) = task.tool() {
        value["tool"] = json!(tool);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_refuses_malformed_escapes() {
        assert_eq!(percent_decode("a%20b+c", true).as_deref(), Some("a b c"));
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%zz", true), None);
        assert_eq!(percent_decode("%2", true), None);
        assert_eq!(percent_decode("%ff", true), None);
    }

    #[test]
    fn list_parameters_name_the_one_at_fault() {
        let status = |response: Response<Body>| response.status();
        assert!(list_parameters(Some("status=working,completed&tool=sleep&limit=10")).is_ok());
        assert_eq!(
            status(list_parameters(Some("status=sleeping")).unwrap_err()),
            StatusCode::BAD_REQUEST
        );
        assert!(list_parameters(Some("limit=0")).is_err());
        assert!(list_parameters(Some("limit=1001")).is_err());
        assert!(list_parameters(Some("colour=red")).is_err());
        let listed = list_parameters(Some("owner=%3Cscript%3E&cursor=abc")).unwrap();
        assert_eq!(listed.filter.owner, Some(Owner::new("<script>")));
        assert_eq!(listed.cursor.as_deref(), Some("abc"));
        assert_eq!(listed.limit, DEFAULT_LIST_LIMIT);
        assert_eq!((listed.older_than, listed.newer_than), (None, None));
        assert_eq!(listed.filter.view, None);
    }

    #[test]
    fn the_command_lines_filters_are_list_parameters() {
        let listed = list_parameters(Some(
            "minAttempts=2&olderThanMs=90000&newerThanMs=5&holder=web-1&stalledGraceMs=60000",
        ))
        .unwrap();
        assert_eq!(listed.filter.min_attempts, Some(2));
        assert_eq!(listed.older_than, Some(Duration::from_secs(90)));
        assert_eq!(listed.newer_than, Some(Duration::from_millis(5)));
        assert_eq!(listed.filter.lease_holder.as_deref(), Some("web-1"));
        assert_eq!(
            listed.filter.view,
            Some(View::Stalled {
                grace: Duration::from_secs(60)
            })
        );
        let waiting = list_parameters(Some("inputRequiredLongerThanMs=1000")).unwrap();
        assert_eq!(
            waiting.filter.view,
            Some(View::InputRequiredLongerThan(Duration::from_secs(1)))
        );
        let exhausted = list_parameters(Some("exhausted=true")).unwrap();
        assert_eq!(exhausted.filter.view, Some(View::Exhausted));
        let parameter = |query: &str| match list_parameters(Some(query)) {
            Ok(_) => panic!("{query} accepted"),
            Err(response) => response.status(),
        };
        for refused in [
            "minAttempts=-1",
            "olderThanMs=soon",
            "exhausted=yes",
            "exhausted=true&stalledGraceMs=1",
        ] {
            assert_eq!(parameter(refused), StatusCode::BAD_REQUEST, "{refused}");
        }
    }
}
