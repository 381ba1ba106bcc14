//! # mcp-tasks-otel
//!
//! OpenTelemetry for servers of MCP tasks: the spans and metrics of OpenTelemetry's MCP
//! semantic conventions (status *development*, in the GenAI conventions), and what they do
//! not cover yet, the tasks, whose work outlives its request and may move to another
//! instance. Written against the OpenTelemetry API only: the application installs an SDK
//! and its exporters (the example servers' `mcp_tasks_servers::telemetry::init` does,
//! from the standard `OTEL_*` variables); [`Telemetry::default`] records nothing and costs
//! one branch per call.
//!
//! # Spans
//! [`Telemetry::request`] starts one `SERVER` span per request, named `{mcp.method.name}`
//! or `tools/call {gen_ai.tool.name}`, the child of the trace context the client sent in
//! `params._meta` (`traceparent`, `tracestate`, `baggage`; SEP-414), with
//! `mcp.method.name`, `mcp.protocol.version` (`2025-11-25` or `2026-07-28`),
//! `jsonrpc.request.id`, `network.transport` (and `network.protocol.name`),
//! `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` on `tools/call`,
//! `mcp.session.id` on a 2025-11-25 request in a session (never on 2026-07-28, which has
//! none), and on failure `error.type` (the JSON-RPC code, or `tool_error` for a result with
//! `isError: true`), `rpc.response.status_code` (the JSON-RPC code) and an error status
//! with the error's message.
//!
//! The tasks' additions:
//! - `mcp.task.id` and `mcp.task.status` on every request span that creates or reads one
//!   task (the first task the store answers while the request is
//!   [in scope](RequestSpan::in_scope); the store must be [`Telemetry::observe`]d).
//! - A task's work is an `INTERNAL` span `execute_tool {gen_ai.tool.name}` (the GenAI
//!   execute-tool span, [`TaskRun`]) with `mcp.task.id`, `mcp.task.attempt` and, when it
//!   ends, `mcp.task.status` (`completed`, `failed`, `cancelled`, or `working` /
//!   `input_required` if the attempt stopped without finishing: handed over, superseded)
//!   and `error.type` (`tool_error`, the JSON-RPC code, or `cancelled`). Its parent is the
//!   `tools/call` span that created the task: a server stores that context with the task
//!   ([`task_trace_context`], then
//!   [`TaskRequest::with_trace_context`](mcp_tasks::TaskRequest::with_trace_context)), so
//!   an attempt claimed by another instance continues the same trace.
//! - Request spans about a task (`tasks/get`, `tasks/result`, `tasks/cancel`,
//!   `tasks/update`) link to the task's stored context.
//!
//! # Metrics
//! - `mcp.server.operation.duration` (histogram, s): the conventions' metric, with the
//!   span's low-cardinality attributes (a method or tool the server does not know reads
//!   `_OTHER`).
//! - `mcp.task.created` (counter): by `gen_ai.tool.name`, `mcp.protocol.version`.
//! - `mcp.task.finished` (counter) and `mcp.task.duration` (histogram, s, an attempt's
//!   run on this instance): by tool and `mcp.task.status`.
//! - `mcp.task.running` (up-down counter): attempts running here, by tool.
//! - `mcp.task.input.wait.duration` (histogram, s) and `mcp.task.input.waiting` (up-down
//!   counter): handlers waiting for the requestor's input.
//! - `mcp.task.store.operation.duration` (histogram, s): every store call by
//!   `mcp.task.store.backend` (the store's type: `TaskRegistry`, `RedisTaskStore`, …) and
//!   `mcp.task.store.operation` (`get`, `update`, `insert_leased`, `claim`, …), with
//!   `error.type` when it failed; waits are not operations and are not counted.
//! - `mcp.task.redeliveries` (counter): tasks this instance claimed for another attempt,
//!   by tool.
//! - `mcp.task.lease.lapses` (counter): tasks failed because the instance running them
//!   stopped renewing their lease, as this instance's store subscription sees them (over a
//!   shared store every instance sees each lapse: aggregate with `max`, not `sum`). A
//!   redeliverable task whose lease lapses is claimed instead, and counted as a
//!   redelivery where it is claimed.
//! - `mcp.task.listen.subscriptions` (up-down counter): open `subscriptions/listen`
//!   streams ([`Telemetry::listen_opened`]).
//! - The store's tasks across owners, from a periodic scan ([`Fleet`], fed by the
//!   application's sampler; nothing is observed before its first scan, and a failed scan
//!   keeps the last values): `mcp.task.store.tasks` (gauge, by `mcp.task.status` and
//!   `gen_ai.tool.name`), `mcp.task.store.oldest_working.age` (gauge, s),
//!   `mcp.task.store.awaiting_claim`, `mcp.task.store.stalled`,
//!   `mcp.task.store.exhausted`, `mcp.task.store.scan.tasks`,
//!   `mcp.task.store.scan.truncated` (gauges) and `mcp.task.store.scan.errors` (counter).
#![deny(missing_docs)]

mod fleet;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mcp_tasks::{
    AnyTask, JsonObject, JsonRpcError, Outcome, Owner, RequestId, TaskId, TaskStatus, TaskStore,
    TraceContext,
};
use opentelemetry::global::{BoxedTracer, ObjectSafeTracerProvider};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider, UpDownCounter};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue, Value as OtelValue};
use serde_json::Value;

pub use fleet::{Fleet, NO_TOOL, StoreCensus, WeakFleet};
/// The OpenTelemetry API this crate is written against (install an SDK of the same
/// version).
pub use opentelemetry;
pub use store::Observed;

/// The instrumentation scope of every span and metric.
const SCOPE: &str = "mcp-tasks";

/// `mcp.server.operation.duration`'s buckets, as the conventions advise (s).
const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Store calls are sub-millisecond in process and a round trip over the network (s).
const STORE_BUCKETS: [f64; 12] = [
    0.000_1, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Tasks and input waits last from milliseconds to an hour (s).
const TASK_BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The methods whose names metrics carry; any other reads `_OTHER` (a client's made-up
/// method names must not grow a metric's series).
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
    "notifications/initialized",
    "notifications/cancelled",
];

/// The recording half: a tracer, the transport and the instruments.
struct Inner {
    tracer: BoxedTracer,
    transport: &'static str,
    protocol: Option<&'static str>,
    operation: Histogram<f64>,
    created: Counter<u64>,
    finished: Counter<u64>,
    running: UpDownCounter<i64>,
    task_duration: Histogram<f64>,
    input_wait: Histogram<f64>,
    input_waiting: UpDownCounter<i64>,
    store_operation: Histogram<f64>,
    redeliveries: Counter<u64>,
    lease_lapses: Counter<u64>,
    listen: UpDownCounter<i64>,
    fleet: Fleet,
}

/// Where a server's spans and metrics go: a tracer and a meter of the application's
/// OpenTelemetry providers, or nowhere ([`Telemetry::default`]: every call returns at
/// once). Cloning shares it.
#[derive(Clone, Default)]
pub struct Telemetry {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("recording", &self.is_enabled())
            .finish()
    }
}

impl Telemetry {
    /// Telemetry into these providers, for requests arriving over `network.transport`
    /// `transport` (`pipe` for stdio, `tcp` for HTTP).
    #[must_use]
    pub fn new(
        tracers: &(impl ObjectSafeTracerProvider + ?Sized),
        meters: &(impl MeterProvider + ?Sized),
        transport: &'static str,
    ) -> Self {
        let scope = InstrumentationScope::builder(SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = BoxedTracer::new(tracers.boxed_tracer(scope.clone()));
        Self::with(tracer, &meters.meter_with_scope(scope), transport)
    }

    /// Telemetry into the global providers (`opentelemetry::global`), as installed by the
    /// application.
    #[must_use]
    pub fn global(transport: &'static str) -> Self {
        Self::new(
            &opentelemetry::global::tracer_provider(),
            &*opentelemetry::global::meter_provider(),
            transport,
        )
    }

    fn with(tracer: BoxedTracer, meter: &Meter, transport: &'static str) -> Self {
        let seconds = |name: &'static str, description: &'static str, buckets: &[f64]| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(buckets.to_vec())
                .build()
        };
        let tasks = |name: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_unit("{task}")
                .with_description(description)
                .build()
        };
        let gauge = |name: &'static str, unit: &'static str, description: &'static str| {
            meter
                .i64_up_down_counter(name)
                .with_unit(unit)
                .with_description(description)
                .build()
        };
        let inner = Inner {
            tracer,
            transport,
            protocol: (transport == "tcp").then_some("http"),
            operation: seconds(
                "mcp.server.operation.duration",
                "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.",
                &OPERATION_BUCKETS,
            ),
            created: tasks(
                "mcp.task.created",
                "Tasks created, by tool and protocol version.",
            ),
            finished: tasks(
                "mcp.task.finished",
                "Task attempts that ended on this instance, by tool and status.",
            ),
            running: gauge(
                "mcp.task.running",
                "{task}",
                "Task attempts running on this instance, by tool.",
            ),
            task_duration: seconds(
                "mcp.task.duration",
                "How long a task attempt ran on this instance, by tool and status.",
                &TASK_BUCKETS,
            ),
            input_wait: seconds(
                "mcp.task.input.wait.duration",
                "How long a task's handler waited for the requestor's input.",
                &TASK_BUCKETS,
            ),
            input_waiting: gauge(
                "mcp.task.input.waiting",
                "{task}",
                "Handlers waiting for the requestor's input.",
            ),
            store_operation: seconds(
                "mcp.task.store.operation.duration",
                "Task store calls, by backend and operation (waits excluded).",
                &STORE_BUCKETS,
            ),
            redeliveries: tasks(
                "mcp.task.redeliveries",
                "Tasks this instance claimed for another attempt, by tool.",
            ),
            lease_lapses: tasks(
                "mcp.task.lease.lapses",
                "Tasks failed because their instance stopped renewing the lease.",
            ),
            listen: gauge(
                "mcp.task.listen.subscriptions",
                "{subscription}",
                "Open subscriptions/listen streams.",
            ),
            fleet: Fleet::register(meter),
        };
        Telemetry {
            inner: Some(Arc::new(inner)),
        }
    }

    /// Whether anything is recorded.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// `store`, timing every call by backend and operation and noting the task a request
    /// touches (its id, status and trace context) for the request's span ([`Observed`]).
    #[must_use]
    pub fn observe<S: TaskStore>(&self, store: S) -> Observed<S> {
        Observed::new(store, self.inner.clone())
    }

    /// Starts the span of a request; [`RequestSpan::end`] ends it.
    pub fn request(&self, request: &Request<'_>) -> RequestSpan {
        let Some(inner) = &self.inner else {
            return RequestSpan { state: None };
        };
        let tool = request
            .tool
            .map(|(name, known)| (clip(name), if known { Some(clip(name)) } else { None }));
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", clip(request.method)),
            KeyValue::new("mcp.protocol.version", request.version),
            KeyValue::new("network.transport", inner.transport),
        ];
        if let Some(id) = request.id {
            attributes.push(KeyValue::new("jsonrpc.request.id", request_id(id)));
        }
        if let Some(protocol) = inner.protocol {
            attributes.push(KeyValue::new("network.protocol.name", protocol));
        }
        if let Some((name, _)) = &tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", name.clone()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        // 2026-07-28 has no sessions: the attribute never appears there.
        if let Some(session) = request.session
            && request.version == mcp_tasks::protocol::PROTOCOL_VERSION
        {
            attributes.push(KeyValue::new("mcp.session.id", clip(session)));
        }
        let name = match &tool {
            Some((tool, _)) => format!("{} {tool}", clip(request.method)),
            None => clip(request.method),
        };
        let parent = remote_parent(request.meta.and_then(TraceContext::from_meta).as_ref());
        let span = inner
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&inner.tracer, &parent);
        RequestSpan {
            state: Some(Box::new(RequestState {
                inner: Arc::clone(inner),
                context: parent.with_span(span),
                started: Instant::now(),
                method: KNOWN_METHODS
                    .iter()
                    .find(|known| **known == request.method)
                    .copied()
                    .unwrap_or("_OTHER"),
                tool: tool.map(|(_, known)| known.unwrap_or_else(|| "_OTHER".to_owned())),
                version: request.version,
                noted: Mutex::new(None),
            })),
        }
    }

    /// One attempt of a task's work in a span whose parent is `parent` (the context the
    /// task keeps), counted as running while it runs; [`TaskRun::run`] or
    /// [`TaskRun::run_async`] runs it, then reads the task once from `store` to tell how it
    /// ended.
    pub fn task_run(
        &self,
        tool: &str,
        task: &TaskId,
        attempt: u32,
        parent: Option<&TraceContext>,
        owner: &Owner,
        store: Arc<dyn TaskStore>,
    ) -> TaskRun {
        let Some(inner) = &self.inner else {
            return TaskRun { state: None };
        };
        TaskRun::start(
            inner,
            remote_parent(parent),
            tool,
            task,
            attempt,
            owner,
            store,
        )
    }

    /// The store gauges ([`Fleet`]: what a periodic scan of the store found), if anything
    /// is recorded.
    #[must_use]
    pub fn fleet(&self) -> Option<Fleet> {
        self.inner.as_ref().map(|inner| inner.fleet.clone())
    }

    /// Counts a task this instance claimed for another attempt.
    pub fn redelivered(&self, tool: &str) {
        if let Some(inner) = &self.inner {
            inner
                .redeliveries
                .add(1, &[KeyValue::new("gen_ai.tool.name", clip(tool))]);
        }
    }

    /// Counts an open `subscriptions/listen` stream until the guard is dropped.
    pub fn listen_opened(&self) -> ListenGuard {
        if let Some(inner) = &self.inner {
            inner.listen.add(1, &[]);
        }
        ListenGuard {
            inner: self.inner.clone(),
        }
    }
}

/// What a request span is started from ([`Telemetry::request`]).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The request's id (`None` for a notification).
    pub id: Option<&'a RequestId>,
    /// Its `params._meta`, where the client's trace context travels.
    pub meta: Option<&'a JsonObject>,
    /// The MCP version it speaks.
    pub version: &'static str,
    /// Its 2025-11-25 session, if any.
    pub session: Option<&'a str>,
    /// For `tools/call`: the tool's name, and whether the server has it (an unknown name
    /// reads `_OTHER` in metrics).
    pub tool: Option<(&'a str, bool)>,
}

/// An open `subscriptions/listen` stream, counted until dropped
/// ([`Telemetry::listen_opened`]).
#[must_use = "the subscription is counted while the guard lives"]
pub struct ListenGuard {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for ListenGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenGuard")
    }
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner {
            inner.listen.add(-1, &[]);
        }
    }
}

/// How a request ended, for its span and its metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending<'a> {
    /// A result.
    Done,
    /// A tool result with `isError: true` (`error.type = tool_error`).
    ToolError,
    /// A JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message.
        message: &'a str,
    },
}

impl<'a> Ending<'a> {
    /// The ending of a JSON answer: an error, a result with `isError: true`, or done.
    #[must_use]
    pub fn of(answer: Result<&Value, &'a JsonRpcError>) -> Self {
        match answer {
            Err(error) => Ending::Error {
                code: error.code,
                message: &error.message,
            },
            Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => {
                Ending::ToolError
            }
            Ok(_) => Ending::Done,
        }
    }
}

/// The span of one request ([`Telemetry::request`]); [`RequestSpan::default`] records
/// nothing.
#[must_use = "a request's span ends with end"]
#[derive(Default)]
pub struct RequestSpan {
    state: Option<Box<RequestState>>,
}

struct RequestState {
    inner: Arc<Inner>,
    /// The request's context: its span, child of the client's.
    context: Context,
    started: Instant,
    /// The method as metrics name it.
    method: &'static str,
    /// The tool as metrics name it.
    tool: Option<String>,
    version: &'static str,
    /// The first task the request touched.
    noted: Mutex<Option<Noted>>,
}

/// A task a store call answered, as a request's span tells of it.
struct Noted {
    id: TaskId,
    status: TaskStatus,
    trace: Option<TraceContext>,
}

thread_local! {
    /// The first task the store answered on this thread while a request is in scope.
    static NOTES: RefCell<Option<Option<Noted>>> = const { RefCell::new(None) };
}

/// Tells the request in scope on this thread (if any) of a task the store answered.
fn note(id: &TaskId, status: TaskStatus, trace: Option<&TraceContext>) {
    NOTES.with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut()
            && let Some(noted @ None) = slot.as_mut()
        {
            *noted = Some(Noted {
                id: id.clone(),
                status,
                trace: trace.cloned(),
            });
        }
    });
}

/// [`note`] for a whole task.
fn note_task(task: &AnyTask) {
    note(task.id(), task.status(), task.trace_context());
}

/// The trace context a task created now keeps: the current request span's (so the
/// task's work is its child) while a recording request is [in scope](RequestSpan::in_scope),
/// else what the client sent in the request's `_meta` (`traceparent`, `tracestate`,
/// `baggage`), so that an instance that records continues the caller's trace. The
/// client's baggage is kept either way ([`RequestSpan::trace_context`] without the
/// scope).
#[must_use]
pub fn task_trace_context(meta: Option<&JsonObject>) -> Option<TraceContext> {
    let sent = meta.and_then(TraceContext::from_meta);
    if NOTES.with(|slot| slot.borrow().is_none()) {
        return sent;
    }
    let current = Context::current();
    continued(current.span().span_context(), sent)
}

/// The context of `span` as a task keeps it, with the baggage the client `sent`; what
/// was sent if `span` is not a valid one.
fn continued(span: &SpanContext, sent: Option<TraceContext>) -> Option<TraceContext> {
    if !span.is_valid() {
        return sent;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        span.trace_id(),
        span.span_id(),
        span.trace_flags().to_u8()
    );
    TraceContext::new(&traceparent).map(|context| {
        context
            .with_tracestate(Some(&span.trace_state().header()))
            .with_baggage(sent.as_ref().and_then(TraceContext::baggage))
    })
}

/// Restores the thread's notes when the scope ends, also by a panic.
struct Scope {
    previous: Option<Option<Noted>>,
}

impl Scope {
    fn enter() -> Self {
        Scope {
            previous: NOTES.with(|slot| slot.replace(Some(None))),
        }
    }

    fn leave(mut self) -> Option<Noted> {
        let previous = self.previous.take();
        NOTES.with(|slot| slot.replace(previous)).flatten()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            NOTES.with(|slot| slot.replace(Some(previous)));
        }
    }
}

impl RequestSpan {
    /// The trace context a task this request creates keeps: the request span's, with the
    /// baggage the client sent in `meta`; what the client sent if nothing is recorded.
    #[must_use]
    pub fn trace_context(&self, meta: Option<&JsonObject>) -> Option<TraceContext> {
        let sent = meta.and_then(TraceContext::from_meta);
        match &self.state {
            Some(state) => continued(state.context.span().span_context(), sent),
            None => sent,
        }
    }

    /// Runs `f` as part of the request: its span is the current context (a task created
    /// in `f` keeps it, [`task_trace_context`]), and the first task the observed store
    /// answers is noted for the span.
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let Some(state) = &self.state else {
            return f();
        };
        let _current = state.context.clone().attach();
        let scope = Scope::enter();
        let result = f();
        let noted = scope.leave();
        // Poison policy: the slot is only ever replaced whole.
        let mut slot = state.noted.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = noted;
        }
        result
    }

    /// Awaits `future` as part of the request ([`in_scope`](Self::in_scope) around every
    /// poll).
    pub async fn in_scope_async<F: Future>(&self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        std::future::poll_fn(|cx| self.in_scope(|| future.as_mut().poll(cx))).await
    }

    /// The first attempt of the task this request created (`task`), a child of the
    /// request's span; counts the task as created.
    pub fn created(&self, task: &TaskId, owner: &Owner, store: Arc<dyn TaskStore>) -> TaskRun {
        let Some(state) = &self.state else {
            return TaskRun { state: None };
        };
        let tool = state.tool.as_deref().unwrap_or("_OTHER");
        state.inner.created.add(
            1,
            &[
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                KeyValue::new("mcp.protocol.version", state.version),
            ],
        );
        TaskRun::start(
            &state.inner,
            state.context.clone(),
            tool,
            task,
            1,
            owner,
            store,
        )
    }

    /// Ends the span as the request ended, and records its duration.
    pub fn end(self, ending: Ending<'_>) {
        let Some(state) = self.state else { return };
        let span = state.context.span();
        let mut metric = vec![
            KeyValue::new("mcp.method.name", state.method),
            KeyValue::new("mcp.protocol.version", state.version),
            KeyValue::new("network.transport", state.inner.transport),
        ];
        if let Some(tool) = &state.tool {
            metric.push(KeyValue::new("gen_ai.tool.name", tool.clone()));
            metric.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        match ending {
            Ending::Error { code, message } => {
                let code = code.to_string();
                span.set_status(Status::error(message.to_owned()));
                let attributes = [
                    KeyValue::new("error.type", code.clone()),
                    KeyValue::new("rpc.response.status_code", code),
                ];
                span.set_attributes(attributes.iter().cloned());
                metric.extend(attributes);
            }
            Ending::ToolError => {
                span.set_status(Status::error("the tool reported an error (isError)"));
                let error = KeyValue::new("error.type", "tool_error");
                span.set_attribute(error.clone());
                metric.push(error);
            }
            Ending::Done => {}
        }
        let noted = state
            .noted
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(noted) = noted {
            span.set_attributes([
                KeyValue::new("mcp.task.id", noted.id.to_string()),
                KeyValue::new("mcp.task.status", noted.status.as_str()),
            ]);
            // A request about a task links to the trace of its work.
            let own = span.span_context().trace_id();
            if let Some(task) = noted.trace.as_ref().and_then(span_context)
                && task.trace_id() != own
            {
                span.add_link(
                    task,
                    vec![KeyValue::new("mcp.task.id", noted.id.to_string())],
                );
            }
        }
        span.end();
        state
            .inner
            .operation
            .record(state.started.elapsed().as_secs_f64(), &metric);
    }
}

/// One attempt of a task's work ([`Telemetry::task_run`], [`RequestSpan::created`]);
/// [`TaskRun::default`] records nothing.
#[must_use = "the attempt is recorded when it runs"]
#[derive(Default)]
pub struct TaskRun {
    state: Option<Box<RunState>>,
}

struct RunState {
    inner: Arc<Inner>,
    context: Context,
    tool: KeyValue,
    task: TaskId,
    owner: Owner,
    store: Arc<dyn TaskStore>,
}

impl TaskRun {
    fn start(
        inner: &Arc<Inner>,
        parent: Context,
        tool: &str,
        task: &TaskId,
        attempt: u32,
        owner: &Owner,
        store: Arc<dyn TaskStore>,
    ) -> Self {
        let tool = KeyValue::new("gen_ai.tool.name", clip(tool));
        let span = inner
            .tracer
            .span_builder(format!("execute_tool {}", tool.value))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                tool.clone(),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("mcp.task.id", task.to_string()),
                KeyValue::new("mcp.task.attempt", i64::from(attempt)),
            ])
            .start_with_context(&inner.tracer, &parent);
        TaskRun {
            state: Some(Box::new(RunState {
                inner: Arc::clone(inner),
                context: parent.with_span(span),
                tool,
                task: task.clone(),
                owner: owner.clone(),
                store,
            })),
        }
    }

    /// Runs `work` (the handler) in the attempt's span, then ends it
    /// ([`run_async`](Self::run_async) for a future).
    pub fn run(self, work: impl FnOnce()) {
        let Some(state) = self.state else {
            return work();
        };
        let attempt = Attempt::begin(state);
        let _current = attempt.context().map(|context| context.clone().attach());
        work();
    }

    /// Awaits `work` (the handler) with the attempt's span current at every poll, then
    /// ends it; also when the future is dropped before it finished (an aborted attempt).
    pub async fn run_async<F: Future>(self, work: F) -> F::Output {
        let Some(state) = self.state else {
            return work.await;
        };
        let attempt = Attempt::begin(state);
        let mut work = std::pin::pin!(work);
        std::future::poll_fn(|cx| {
            let _current = attempt.context().map(|context| context.clone().attach());
            work.as_mut().poll(cx)
        })
        .await
    }
}

/// An attempt under way: counted as running until dropped, when its span ends with the
/// task's status (however the work ended: returned, panicked, aborted).
struct Attempt {
    state: Option<Box<RunState>>,
    started: Instant,
}

impl Attempt {
    fn begin(state: Box<RunState>) -> Self {
        state
            .inner
            .running
            .add(1, std::slice::from_ref(&state.tool));
        Attempt {
            state: Some(state),
            started: Instant::now(),
        }
    }

    fn context(&self) -> Option<&Context> {
        self.state.as_ref().map(|state| &state.context)
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.finish(self.started);
        }
    }
}

impl RunState {
    /// Ends the span and counts the attempt by the task's status as the attempt left it
    /// (one store read).
    fn finish(self, started: Instant) {
        let inner = &self.inner;
        inner.running.add(-1, std::slice::from_ref(&self.tool));
        let span = self.context.span();
        let (status, error) = match self.store.get(&self.owner, &self.task.to_string()) {
            Ok(task) => (Cow::Borrowed(task.status().as_str()), error_type(&task)),
            // Gone (expired, removed) or unreadable: the attempt's end is unknown.
            Err(err) => (Cow::Borrowed("unknown"), Some(err.code().to_string())),
        };
        let status = KeyValue::new("mcp.task.status", OtelValue::from(status));
        span.set_attribute(status.clone());
        if let Some(error) = &error {
            span.set_status(Status::error(error.clone()));
            span.set_attribute(KeyValue::new("error.type", error.clone()));
        }
        span.end();
        let attributes = [self.tool.clone(), status];
        inner.finished.add(1, &attributes);
        inner
            .task_duration
            .record(started.elapsed().as_secs_f64(), &attributes);
    }
}

/// The `error.type` of a task as its attempt left it: `tool_error` for a result with
/// `isError`, the JSON-RPC code of an error, `cancelled`; none while it works or when it
/// completed.
fn error_type(task: &AnyTask) -> Option<String> {
    match task.status() {
        TaskStatus::Cancelled => Some("cancelled".to_owned()),
        TaskStatus::Failed => Some(match task.outcome() {
            Some(Outcome::Error(error)) => error.code.to_string(),
            _ => "tool_error".to_owned(),
        }),
        _ => None,
    }
}

/// The span context a stored trace context names.
fn span_context(trace: &TraceContext) -> Option<SpanContext> {
    let parent = trace.traceparent();
    let trace_id = TraceId::from_hex(parent.get(3..35)?).ok()?;
    let span_id = SpanId::from_hex(parent.get(36..52)?).ok()?;
    let flags = u8::from_str_radix(parent.get(53..55)?, 16).ok()?;
    let state = trace
        .tracestate()
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8()),
        true,
        state,
    ))
}

/// A context whose remote parent is `trace`, or an empty one (a new trace).
fn remote_parent(trace: Option<&TraceContext>) -> Context {
    match trace.and_then(span_context) {
        Some(span) => Context::new().with_remote_span_context(span),
        None => Context::new(),
    }
}

/// A request id as the conventions write it: the number, or the string unquoted.
fn request_id(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => clip(s),
    }
}

/// At most 128 bytes of a client's text in an attribute.
fn clip(text: &str) -> String {
    let mut end = text.len().min(128);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
