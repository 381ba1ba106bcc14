//! One HTTP request, from its headers to its response: the checks that run before anything
//! is read or allocated, then the JSON-RPC message, on the wire it belongs to. The endpoint
//! is a `tower` service ([`McpService`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, AsHeaderName, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mcp_tasks::protocol::methods as v1_methods;
use mcp_tasks::{JsonRpcError, Owner, TaskId, jsonrpc};
use serde_json::Value;

use crate::access::{host_allowed, origin_allowed};
use crate::framing::{self, Id, Incoming as Message};
use crate::server::{Created, Elicitation, Reply, ResultState, Server};
use crate::work::Work;
use crate::{headers, outbound};

use super::App;
use super::body::{Body, Inner};
use super::limits::Slot;
use super::listen;
use super::session::{Role, Session, parse_event_id};
use super::sse::{self, Answer};
use super::stateless::{self, Wire};
use super::talk::{self, Talked};
use super::trace::Trace;

/// The endpoint [`HttpServer::serve`](super::HttpServer::serve) serves.
pub const ENDPOINT: &str = "/mcp";

/// The metrics in Prometheus' text format, behind the same checks as the endpoint
/// (feature `otel`, `MCP_TASKS_PROMETHEUS=1`), on [`HttpServer::serve`](super::HttpServer::serve).
pub const METRICS: &str = "/metrics";

/// How long a `tasks/result` stream's answer waits for the task's terminal status
/// notification to be queued (it normally is within microseconds).
const TERMINAL_NOTICE: std::time::Duration = std::time::Duration::from_secs(1);

/// What the request log line says besides the HTTP facts (noted only when that line is
/// written: `on`).
#[derive(Default)]
struct Noted {
    on: bool,
    method: Option<String>,
    principal: Option<Arc<str>>,
}

/// The MCP endpoint as a `tower` service ([`HttpServer::service`](super::HttpServer::service)):
/// it takes any `http` request whose body yields [`Bytes`], and answers with a [`Body`];
/// it never fails (a refusal is a response). Cheap to clone.
#[derive(Clone)]
pub struct McpService {
    app: Arc<App>,
    /// Serving a whole listener: the endpoint is [`ENDPOINT`] and the metrics [`METRICS`];
    /// mounted by an application, every path it is given is the endpoint.
    routed: bool,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService").finish_non_exhaustive()
    }
}

impl McpService {
    pub(crate) fn new(app: Arc<App>, routed: bool) -> Self {
        Self { app, routed }
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (app, routed) = (Arc::clone(&self.app), self.routed);
        Box::pin(async move { Ok(handle(app, request, routed).await) })
    }
}

/// Answers one HTTP request and logs it (target [`REQUEST_LOG`](super::REQUEST_LOG),
/// level `debug`).
async fn handle<B>(app: Arc<App>, request: Request<B>, routed: bool) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The request line is written only at debug level: nothing is noted for it otherwise.
    if !log::log_enabled!(target: super::REQUEST_LOG, log::Level::Debug) {
        return route(&app, request, routed, &mut Noted::default()).await;
    }
    let started = Instant::now();
    let http_method = request.method().clone();
    let mut noted = Noted {
        on: true,
        ..Noted::default()
    };
    let response = route(&app, request, routed, &mut noted).await;
    log::debug!(
        target: super::REQUEST_LOG,
        "request http={http_method} method={} principal={} status={} latency_us={}",
        noted.method.as_deref().unwrap_or("-"),
        noted.principal.as_deref().unwrap_or("-"),
        response.status().as_u16(),
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
    response
}

async fn route<B>(
    app: &Arc<App>,
    request: Request<B>,
    routed: bool,
    noted: &mut Noted,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let scrape = routed && request.uri().path() == METRICS;
    if routed && request.uri().path() != ENDPOINT && !scrape {
        return refusal(
            StatusCode::NOT_FOUND,
            jsonrpc::INVALID_REQUEST,
            "not found: the MCP endpoint is /mcp",
        );
    }
    let headers = request.headers();
    // Bound to loopback, the server answers only requests addressed to a loopback name (or
    // an allowed origin's host): a DNS-rebound name is refused even without `Origin`.
    if app.loopback()
        && let Some(host) = header_str(headers, &header::HOST)
        && !host_allowed(host, &app.extra_origins)
    {
        return closing(refusal(
            StatusCode::FORBIDDEN,
            jsonrpc::INVALID_REQUEST,
            "forbidden: this Host may not use the server",
        ));
    }
    if let Some(origin) = header_str(headers, &header::ORIGIN)
        && !origin_allowed(origin, &app.extra_origins)
    {
        return closing(refusal(
            StatusCode::FORBIDDEN,
            jsonrpc::INVALID_REQUEST,
            "forbidden: this origin may not use the server",
        ));
    }
    // The body of a refused request is never read: the connection closes instead.
    let principal = match app
        .access
        .principal(header_str(headers, &header::AUTHORIZATION))
    {
        Ok(principal) => Arc::clone(principal),
        Err(why) => {
            let mut response = closing(refusal(
                StatusCode::UNAUTHORIZED,
                jsonrpc::INVALID_REQUEST,
                why.message(),
            ));
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(why.challenge()),
            );
            return response;
        }
    };
    if noted.on {
        noted.principal = Some(Arc::clone(&principal));
    }
    if scrape {
        return metrics(&request);
    }
    match *request.method() {
        Method::POST => post(app, request, principal, noted).await,
        Method::GET => get(app, &request, &principal),
        Method::DELETE => delete(app, &request, &principal),
        _ => {
            let mut response = closing(refusal(
                StatusCode::METHOD_NOT_ALLOWED,
                jsonrpc::INVALID_REQUEST,
                "method not allowed: POST a message, GET the session's stream, DELETE the session",
            ));
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// `POST`: one JSON-RPC message.
async fn post<B>(
    app: &Arc<App>,
    request: Request<B>,
    principal: Arc<str>,
    noted: &mut Noted,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    // The declared length is checked before a byte of the body is read.
    if let Some(length) = headers.get(header::CONTENT_LENGTH) {
        match length
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
        {
            Some(length) if length > app.limits.max_body => {
                return closing(refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    jsonrpc::INVALID_REQUEST,
                    &format!(
                        "payload too large: a message is at most {} bytes",
                        app.limits.max_body
                    ),
                ));
            }
            Some(_) => {}
            None => {
                return closing(refusal(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::INVALID_REQUEST,
                    "bad request: Content-Length is not a number of bytes",
                ));
            }
        }
    }
    let Some(slot) = app.slots.take(&principal) else {
        return too_many();
    };
    let content_type = header_str(&headers, &header::CONTENT_TYPE).unwrap_or("");
    if !media_is(content_type, "application/json") {
        return closing(refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            jsonrpc::INVALID_REQUEST,
            "unsupported media type: POST application/json",
        ));
    }
    let accept = header_str(&headers, &header::ACCEPT);
    if !accepts(accept, "application/json") {
        return closing(refusal(
            StatusCode::NOT_ACCEPTABLE,
            jsonrpc::INVALID_REQUEST,
            "not acceptable: responses are application/json (or text/event-stream)",
        ));
    }
    let sse_ok = accepts(accept, "text/event-stream");

    let mut collect = std::pin::pin!(
        Limited::new(
            body,
            usize::try_from(app.limits.max_body).unwrap_or(usize::MAX),
        )
        .collect()
    );
    // A body already in hand (it came with the head, as a short message does) is read
    // without arming the timer; else the timer bounds the wait for it. The first poll's
    // waker wakes nobody: the poll under the timer registers the task's own.
    let first = collect
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()));
    let read = match first {
        Poll::Ready(read) => Ok(read),
        Poll::Pending => tokio::time::timeout(app.limits.body_timeout, collect).await,
    };
    let body: Bytes = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => {
            return closing(refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                jsonrpc::INVALID_REQUEST,
                "payload too large",
            ));
        }
        Ok(Err(err)) => {
            return closing(refusal(
                StatusCode::BAD_REQUEST,
                jsonrpc::PARSE_ERROR,
                &format!("cannot read the body: {err}"),
            ));
        }
        Err(_) => {
            return closing(refusal(
                StatusCode::REQUEST_TIMEOUT,
                jsonrpc::INVALID_REQUEST,
                "request timeout: the body did not arrive in time",
            ));
        }
    };

    let mut message = framing::parse(&body);
    // A request without a trace context in its `_meta` joins the trace of its HTTP
    // headers (`traceparent`, `tracestate`), if they carry one.
    if let Message::Request { params, .. } = &mut message {
        join_header_trace(params, &headers);
    }
    let (method, params) = match &message {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            (Some(method.as_str()), params.as_ref())
        }
        Message::Response(_) => (None, None),
        Message::Invalid(refused) => return json(StatusCode::BAD_REQUEST, refused.to_json()),
    };
    if noted.on {
        noted.method = method.map(str::to_owned);
    }
    if let Message::Request { id, method, params } = &message
        && let Err(why) = headers::check(
            method,
            params.as_ref(),
            header_str(&headers, &MCP_METHOD),
            header_str(&headers, &MCP_NAME),
        )
    {
        let error = JsonRpcError::new(mcp_tasks::ext::HEADER_MISMATCH, why);
        return json(
            StatusCode::BAD_REQUEST,
            framing::response(Some(id), &Err(error)),
        );
    }
    let version = header_str(&headers, &MCP_PROTOCOL_VERSION);
    let wire = method.map_or(Wire::Session, |method| {
        stateless::wire(version, method, params)
    });
    let text = std::str::from_utf8(&body).unwrap_or_default();
    match wire {
        Wire::Stateless => {
            stateless_message(app, message, &principal, &headers, sse_ok, text, slot).await
        }
        Wire::Session => {
            session_message(app, message, &principal, &headers, sse_ok, text, slot).await
        }
    }
}

/// A 2026-07-28 message: no session; its version framing is checked first.
async fn stateless_message(
    app: &Arc<App>,
    message: Message,
    principal: &Arc<str>,
    headers: &HeaderMap,
    sse_ok: bool,
    text: &str,
    slot: Slot,
) -> Response<Body> {
    let version = header_str(headers, &MCP_PROTOCOL_VERSION);
    let trace_name = if app.trace.is_on() {
        Trace::stateless_name(principal)
    } else {
        String::new()
    };
    app.trace.write(&trace_name, "in", text);
    let Message::Request { id, method, params } = message else {
        // Notifications and responses need no answer.
        return accepted();
    };
    if let Err(error) = stateless::check(version, params.as_ref())
        .and_then(|()| routing_headers(&app.server, headers, &method, params.as_ref()))
    {
        let answer = framing::response(Some(&id), &Err(error));
        app.trace.write(&trace_name, "out", &answer);
        return json(StatusCode::BAD_REQUEST, answer);
    }
    let owner = Owner::shared(Arc::clone(principal));
    if method == mcp_tasks::ext::methods::SUBSCRIPTIONS_LISTEN {
        // A long-lived stream: the request slot is given back once it is open.
        return match listen::open(app, &owner, &id, params.as_ref(), sse_ok, &trace_name) {
            listen::Answer::Stream(body) => event_stream(body, None),
            listen::Answer::Refused(error) => {
                let status = match error.code {
                    jsonrpc::INVALID_REQUEST => StatusCode::NOT_ACCEPTABLE,
                    code => stateless::status_of(code),
                };
                let answer = framing::response(Some(&id), &Err(error));
                app.trace.write(&trace_name, "out", &answer);
                json(status, answer)
            }
        };
    }
    if let Some(result) =
        app.store_call(|| app.server.task_get_text(&owner, &method, params.as_ref()))
    {
        let (status, text) = match result {
            Ok(result) => (StatusCode::OK, framing::result_response(Some(&id), &result)),
            Err(error) => (
                stateless::status_of(error.code),
                framing::response(Some(&id), &Err(error)),
            ),
        };
        app.trace.write(&trace_name, "out", &text);
        return json(status, text);
    }
    let reply = app.store_call(|| {
        app.server.request(
            &owner,
            id.request_id(),
            &method,
            params,
            Elicitation::Undeclared,
        )
    });
    if let Reply::Later(work) = reply {
        let status = |answer: &Result<Value, JsonRpcError>| match answer {
            Err(error) => stateless::status_of(error.code),
            Ok(_) => StatusCode::OK,
        };
        return talking(app, work, id, None, sse_ok, trace_name, slot, status).await;
    }
    let (answer, then) = settle(app, reply, &owner, None).await;
    let status = answer.status(stateless::status_of);
    let text = answer.response(&id);
    app.trace.write(&trace_name, "out", &text);
    with_work(json(status, text), then)
}

/// A 2025-11-25 message: `initialize` opens a session, everything else needs one.
async fn session_message(
    app: &Arc<App>,
    message: Message,
    principal: &Arc<str>,
    headers: &HeaderMap,
    sse_ok: bool,
    text: &str,
    slot: Slot,
) -> Response<Body> {
    let initialize = matches!(&message, Message::Request { method, .. } if method == "initialize");
    let session = if initialize {
        let params = match &message {
            Message::Request { params, .. } => params.as_ref(),
            _ => None,
        };
        app.sessions
            .open(principal, Elicitation::declared_in(params))
    } else {
        let Some(id) = header_str(headers, &MCP_SESSION_ID) else {
            return refusal(
                StatusCode::BAD_REQUEST,
                jsonrpc::INVALID_REQUEST,
                "bad request: missing Mcp-Session-Id (send initialize first)",
            );
        };
        match app.sessions.get(id, principal) {
            Some(session) => session,
            None => {
                return refusal(
                    StatusCode::NOT_FOUND,
                    jsonrpc::INVALID_REQUEST,
                    "session not found: initialize a new session",
                );
            }
        }
    };
    app.trace.write(&session.id, "in", text);
    let (id, method, params) = match message {
        Message::Request { id, method, params } => (id, method, params),
        Message::Response(answer) => {
            if let Some((id, answer)) = outbound::client_answer(&answer)
                && !session.resolve(&id, answer)
            {
                log::debug!(
                    "session {}: an answer to unknown request {id} was ignored",
                    session.id
                );
            }
            return accepted();
        }
        Message::Notification { .. } | Message::Invalid(_) => return accepted(),
    };
    let owner = Owner::shared(Arc::clone(principal));
    if method == v1_methods::TASKS_RESULT {
        return tasks_result(app, &session, &owner, id, params, sse_ok, slot).await;
    }
    if let Some(result) =
        app.store_call(|| app.server.task_get_text(&owner, &method, params.as_ref()))
    {
        let text = match result {
            Ok(result) => framing::result_response(Some(&id), &result),
            Err(error) => framing::response(Some(&id), &Err(error)),
        };
        app.trace.write(&session.id, "out", &text);
        return json(StatusCode::OK, text);
    }
    let reply = app.store_call(|| {
        app.server.request_in(
            &owner,
            id.request_id(),
            &method,
            params,
            session.elicitation,
            Some(&session.id),
        )
    });
    if let Reply::Later(work) = reply {
        let (session_id, status) = (session.id.clone(), |_: &_| StatusCode::OK);
        return talking(
            app,
            work,
            id,
            Some(session),
            sse_ok,
            session_id,
            slot,
            status,
        )
        .await;
    }
    let (answer, then) = settle(app, reply, &owner, Some(&session)).await;
    let text = answer.response(&id);
    app.trace.write(&session.id, "out", &text);
    let mut response = with_work(json(StatusCode::OK, text), then);
    if initialize && let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// The response to a request answered by talking work ([`talk`]): the SSE stream of what it
/// sent, ending with its answer (holding `slot` while open), or the answer alone as JSON,
/// with the HTTP status `status` gives it. Traced under `trace_name`.
#[expect(
    clippy::too_many_arguments,
    reason = "the request's facts, each used once"
)]
async fn talking(
    app: &Arc<App>,
    work: crate::server::Answering,
    id: Id,
    session: Option<Arc<Session>>,
    sse_ok: bool,
    trace_name: String,
    slot: Slot,
    status: impl FnOnce(&Result<Value, JsonRpcError>) -> StatusCode,
) -> Response<Body> {
    let trace = (Arc::clone(&app.trace), trace_name.clone());
    let detached_session = session.clone();
    match talk::run(work, id.clone(), session, sse_ok, trace).await {
        Talked::Stream(body) => event_stream(body, Some(slot)),
        Talked::Detached(answer) => {
            // Closed right after its priming event: the answer waits for the client to
            // resume the stream with `GET` and `Last-Event-ID` (SEP-1699).
            let Some(session) = detached_session else {
                let answer = answer.await;
                return json(status(&answer), framing::response(Some(&id), &answer));
            };
            let (trace, name) = (Arc::clone(&app.trace), trace_name);
            let answer: Answer = Box::pin(async move {
                let text = framing::response(Some(&id), &answer.await);
                trace.write(&name, "out", &text);
                text
            });
            let body = sse::open(
                session,
                Role::Detached,
                None,
                Some(answer),
                app.shutdown.clone(),
            );
            event_stream(body, Some(slot))
        }
        Talked::Answer(answer) => {
            drop(slot);
            let text = framing::response(Some(&id), &answer);
            app.trace.write(&trace_name, "out", &text);
            json(status(&answer), text)
        }
    }
}

/// The routing headers the stateless wire requires: `Mcp-Method`, `Mcp-Name` when the body
/// names something, and the `Mcp-Param-*` of a tool's annotated arguments.
fn routing_headers(
    server: &Server,
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
) -> Result<(), JsonRpcError> {
    if !stateless::METHODS.contains(&method) {
        // Dispatch refuses it (-32601) whatever its headers say.
        return Ok(());
    }
    let mismatch = |why: String| JsonRpcError::new(mcp_tasks::ext::HEADER_MISMATCH, why);
    headers::require(
        method,
        params,
        header_str(headers, &MCP_METHOD),
        header_str(headers, &MCP_NAME),
    )
    .map_err(mismatch)?;
    if method == "tools/call"
        && let Some(tool) = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .and_then(|name| server.tool(name))
    {
        headers::check_schema_params(
            tool.input_schema(),
            params.and_then(|p| p.get("arguments")),
            |name| header_str(headers, name),
        )
        .map_err(mismatch)?;
    }
    Ok(())
}

/// `tasks/result` (2025-11-25): the answer once the task is terminal. While it waits, a
/// client that takes SSE gets a stream that carries the task's requests (its input) and
/// notifications first.
async fn tasks_result(
    app: &Arc<App>,
    session: &Arc<Session>,
    owner: &Owner,
    id: Id,
    params: Option<Value>,
    sse_ok: bool,
    slot: Slot,
) -> Response<Body> {
    let task_id = params
        .as_ref()
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str);
    let task: Option<TaskId> = task_id.map(TaskId::from);
    // The task as read to decide whether the answer streams (one read serves both):
    // `Some(text)` once it is known whether the answer can be written at once.
    let mut read: Option<Option<String>> = None;
    let streams = sse_ok
        && task.as_ref().is_some_and(|task| {
            let mine = app
                .tasks
                .session_of(task)
                .is_some_and(|s| Arc::ptr_eq(&s, session));
            if !mine {
                // A redelivered task whose session went with its instance streams here
                // (only a shared store redelivers: the registry's tasks run once).
                if !app.server.is_shared() {
                    return false;
                }
                return app.store_call(|| {
                    app.tasks
                        .adopt(&app.server, &app.trace, owner, task, session)
                });
            }
            match app.store_call(|| {
                app.server
                    .task_result_state(owner, task_id.unwrap_or_default())
            }) {
                ResultState::Running => true,
                ResultState::Now(text) => {
                    read = Some(text);
                    false
                }
            }
        });
    let text = match read {
        Some(text) => text,
        None if !streams => app.store_call(|| app.server.task_result_text(owner, params.as_ref())),
        None => None,
    };
    if let Some(result) = text {
        // Completed already (the usual case: the client polled until it did).
        let text = framing::result_response(Some(&id), &result);
        app.trace.write(&session.id, "out", &text);
        drop(slot);
        if let Some(task) = &task {
            session.drop_notifications_about(task);
        }
        return json(StatusCode::OK, text);
    }
    let dispatcher = app.server.dispatcher().clone();
    let (owner2, trace, session_id) = (owner.clone(), Arc::clone(&app.trace), session.id.clone());
    // On a stream, the task's terminal status notification goes out before the answer.
    let (tasks, notified_first) = (Arc::clone(&app.tasks), task.clone().filter(|_| streams));
    let operation = crate::telemetry::Operation::start(
        app.server.telemetry(),
        v1_methods::TASKS_RESULT,
        id.request_id(),
        params.as_ref(),
        mcp_tasks::protocol::PROTOCOL_VERSION,
        Some(&session.id),
        app.server.tools(),
    );
    let answer: Answer = Box::pin(async move {
        let answer = operation
            .in_scope_async(dispatcher.result_async(&owner2, params.as_ref()))
            .await;
        operation.end(&answer);
        if let Some(task) = &notified_first {
            tasks.ended(task, TERMINAL_NOTICE).await;
        }
        let text = framing::response(Some(&id), &answer);
        trace.write(&session_id, "out", &text);
        text
    });
    match (streams, task) {
        (true, Some(task)) => {
            let body = sse::open(
                Arc::clone(session),
                Role::Result(task),
                None,
                Some(answer),
                app.shutdown.clone(),
            );
            event_stream(body, Some(slot))
        }
        (_, task) => {
            let text = answer.await;
            drop(slot);
            if let Some(task) = &task {
                session.drop_notifications_about(task);
            }
            json(StatusCode::OK, text)
        }
    }
}

/// `GET`: the session's standalone SSE stream (resumed from `Last-Event-ID` if given).
fn get<B>(app: &Arc<App>, request: &Request<B>, principal: &Arc<str>) -> Response<Body> {
    let headers = request.headers();
    if !accepts(header_str(headers, &header::ACCEPT), "text/event-stream") {
        return refusal(
            StatusCode::NOT_ACCEPTABLE,
            jsonrpc::INVALID_REQUEST,
            "not acceptable: GET opens a text/event-stream",
        );
    }
    let Some(id) = header_str(headers, &MCP_SESSION_ID) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            jsonrpc::INVALID_REQUEST,
            "bad request: missing Mcp-Session-Id (the stream belongs to a session)",
        );
    };
    let Some(session) = app.sessions.get(id, principal) else {
        return refusal(
            StatusCode::NOT_FOUND,
            jsonrpc::INVALID_REQUEST,
            "session not found: initialize a new session",
        );
    };
    let Some(slot) = app.slots.take(principal) else {
        return too_many();
    };
    let resume = header_str(headers, &LAST_EVENT_ID).and_then(parse_event_id);
    let body = sse::open(session, Role::General, resume, None, app.shutdown.clone());
    event_stream(body, Some(slot))
}

/// `GET /metrics`, once authenticated: every metric recorded so far, in Prometheus' text
/// format; `404` unless `MCP_TASKS_PROMETHEUS=1`.
fn metrics<B>(request: &Request<B>) -> Response<Body> {
    if request.method() != Method::GET {
        let mut response = closing(refusal(
            StatusCode::METHOD_NOT_ALLOWED,
            jsonrpc::INVALID_REQUEST,
            "method not allowed: GET the metrics",
        ));
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return response;
    }
    // Collecting flushes the meter provider and waits for it.
    match tokio::task::block_in_place(crate::telemetry::prometheus_text) {
        Some(text) => {
            let mut response = Response::new(Body::full(text));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            response
        }
        None => refusal(
            StatusCode::NOT_FOUND,
            jsonrpc::INVALID_REQUEST,
            "not found: the metrics are not kept (set MCP_TASKS_PROMETHEUS=1)",
        ),
    }
}

/// `DELETE`: ends the session.
fn delete<B>(app: &Arc<App>, request: &Request<B>, principal: &str) -> Response<Body> {
    let Some(id) = header_str(request.headers(), &MCP_SESSION_ID) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            jsonrpc::INVALID_REQUEST,
            "bad request: missing Mcp-Session-Id",
        );
    };
    if app.sessions.end(id, principal) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        response
    } else {
        refusal(
            StatusCode::NOT_FOUND,
            jsonrpc::INVALID_REQUEST,
            "session not found",
        )
    }
}

/// A request's answer as the transport writes it: a value, or a created task's text.
enum Answered {
    Value(Result<Value, JsonRpcError>),
    Created(Created),
}

impl Answered {
    /// The HTTP status of the answer, as `of_error` gives an error's.
    fn status(&self, of_error: impl FnOnce(i64) -> StatusCode) -> StatusCode {
        match self {
            Answered::Value(Err(error)) => of_error(error.code),
            Answered::Value(Ok(_)) | Answered::Created(_) => StatusCode::OK,
        }
    }

    /// The response to request `id`, one line of JSON.
    fn response(&self, id: &Id) -> String {
        match self {
            Answered::Value(answer) => framing::response(Some(id), answer),
            Answered::Created(created) => framing::result_response(Some(id), created.answer_json()),
        }
    }
}

/// Runs a reply to its answer; a new task's handler comes back to start once the answer is
/// out (and the task is recorded as running here).
async fn settle(
    app: &Arc<App>,
    reply: Reply,
    owner: &Owner,
    session: Option<&Arc<Session>>,
) -> (Answered, Option<Work>) {
    match reply {
        Reply::Now(answer) => (Answered::Value(answer), None),
        // Answered by `talking` before it gets here; with nobody to talk to otherwise.
        Reply::Later(work) => (
            Answered::Value(work.into_future(Arc::new(crate::peer::Mute)).await),
            None,
        ),
        Reply::ThenRun(created, work) => {
            let task = created.task_id().clone();
            app.tasks.started(task.clone(), owner.clone(), session);
            // The handler's return is what shutdown waits for.
            let tasks = Arc::clone(&app.tasks);
            let work = work.then(move || tasks.handler_returned(&task));
            let work = super::body::for_store(work, app.server.is_shared());
            (Answered::Created(created), Some(work))
        }
    }
}

fn with_work(response: Response<Body>, then: Option<Work>) -> Response<Body> {
    match then {
        None => response,
        Some(work) => response.map(|mut body| match &mut body {
            Body(Inner::Full(bytes)) => Body(Inner::Then(bytes.take(), Some(work))),
            _ => body,
        }),
    }
}

fn event_stream(body: sse::SseBody, slot: Option<Slot>) -> Response<Body> {
    let mut response = Response::new(Body(Inner::Sse {
        stream: body,
        _slot: slot,
    }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn json(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Body::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn accepted() -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// Puts the trace context of the HTTP headers (W3C `traceparent`, `tracestate`) into
/// `params._meta` when it names none: `_meta` wins when both are present.
fn join_header_trace(params: &mut Option<Value>, headers: &HeaderMap) {
    let Some(traceparent) = header_str(headers, &TRACEPARENT) else {
        return;
    };
    let params = params.get_or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(object) = params.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if meta.contains_key("traceparent") {
        return;
    }
    meta.insert("traceparent".into(), Value::String(traceparent.to_owned()));
    if let Some(tracestate) = header_str(headers, &TRACESTATE) {
        meta.insert("tracestate".into(), Value::String(tracestate.to_owned()));
    }
}

/// An HTTP-level refusal with a JSON-RPC error body without `id` (no request was read).
pub(crate) fn refusal(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    json(
        status,
        framing::response(None, &Err(JsonRpcError::new(code, message))),
    )
}

/// The connection closes after this response (its request's body is not read).
fn closing(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn too_many() -> Response<Body> {
    let mut response = closing(refusal(
        StatusCode::TOO_MANY_REQUESTS,
        jsonrpc::INTERNAL_ERROR,
        "too many requests at once for this principal, retry shortly",
    ));
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The header `name`'s value as text, if present and visible ASCII. On the request path
/// it is named by a [`HeaderName`] (a standard one, or one of the constants below): a name
/// given as text is parsed into one on every lookup.
pub(super) fn header_str(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The MCP headers this endpoint reads.
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

fn media_is(value: &str, media: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|found| found.trim().eq_ignore_ascii_case(media))
}

/// Whether an `Accept` header takes `media` (absent: anything).
fn accepts(accept: Option<&str>, media: &str) -> bool {
    let Some(accept) = accept else { return true };
    let (kind, _) = media.split_once('/').unwrap_or((media, ""));
    accept.split(',').any(|range| {
        let range = range.split(';').next().unwrap_or("").trim();
        range.eq_ignore_ascii_case(media)
            || range == "*/*"
            || range
                .strip_suffix("/*")
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case(kind))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_ranges_are_read_as_media_ranges() {
        assert!(accepts(None, "text/event-stream"));
        assert!(accepts(
            Some("application/json, text/event-stream"),
            "text/event-stream"
        ));
        assert!(accepts(Some("text/*;q=0.5"), "text/event-stream"));
        assert!(accepts(Some("*/*"), "application/json"));
        assert!(!accepts(Some("application/json"), "text/event-stream"));
        assert!(!accepts(Some("text/html"), "application/json"));
        assert!(media_is(
            "Application/JSON; charset=utf-8",
            "application/json"
        ));
        assert!(!media_is("text/plain", "application/json"));
    }
}
