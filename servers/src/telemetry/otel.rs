//! The OpenTelemetry side of [`telemetry`](super) (feature `otel`).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use mcp_tasks::{
    AnyTask, JsonRpcError, Outcome, Owner, RequestId, TaskId, TaskStatus, TaskStore, TraceContext,
};
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _, UpDownCounter};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde_json::Value;

use super::{Transport, known_method};
use crate::server::{Reply, Store};
use crate::tools::Catalog;

/// The instrumentation scope of every span and metric.
const SCOPE: &str = "mcp-tasks-servers";

/// `mcp.server.operation.duration`'s buckets, as the conventions advise (s).
const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Store calls are sub-millisecond in process and a round trip over the network (s).
const STORE_BUCKETS: [f64; 12] = [
    0.000_1, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Tasks and input waits last from milliseconds to the TTL's hour (s).
const TASK_BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The recording half: a tracer and the instruments.
pub(super) struct Inner {
    tracer: SdkTracer,
    transport: Transport,
    operation: Histogram<f64>,
    created: Counter<u64>,
    finished: Counter<u64>,
    running: UpDownCounter<i64>,
    task_duration: Histogram<f64>,
    pub(super) input_wait: Histogram<f64>,
    pub(super) input_waiting: UpDownCounter<i64>,
    pub(super) store_operation: Histogram<f64>,
    redeliveries: Counter<u64>,
    pub(super) lease_lapses: Counter<u64>,
    listen: UpDownCounter<i64>,
}

/// Where a server's spans and metrics go: a tracer and meters of an OpenTelemetry SDK
/// provider, or nowhere ([`Telemetry::default`]: every call returns at once). Cloning
/// shares it.
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

/// What [`init`](super::init) installed.
static GLOBAL: OnceLock<Telemetry> = OnceLock::new();

impl Telemetry {
    /// Telemetry into these providers (for tests and embedders: the example binaries use
    /// [`init`](super::init) and [`global`](Self::global)).
    #[must_use]
    pub fn new(
        tracers: &SdkTracerProvider,
        meters: &SdkMeterProvider,
        transport: Transport,
    ) -> Self {
        let meter = meters.meter(SCOPE);
        let seconds = |name: &'static str, description: &'static str, buckets: &[f64]| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(buckets.to_vec())
                .build()
        };
        let inner = Inner {
            tracer: tracers.tracer(SCOPE),
            transport,
            operation: seconds(
                "mcp.server.operation.duration",
                "MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.",
                &OPERATION_BUCKETS,
            ),
            created: meter
                .u64_counter("mcp.task.created")
                .with_unit("{task}")
                .with_description("Tasks created, by tool and protocol version.")
                .build(),
            finished: meter
                .u64_counter("mcp.task.finished")
                .with_unit("{task}")
                .with_description("Task attempts that ended on this instance, by tool and status.")
                .build(),
            running: meter
                .i64_up_down_counter("mcp.task.running")
                .with_unit("{task}")
                .with_description("Task attempts running on this instance, by tool.")
                .build(),
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
            input_waiting: meter
                .i64_up_down_counter("mcp.task.input.waiting")
                .with_unit("{task}")
                .with_description("Handlers waiting for the requestor's input.")
                .build(),
            store_operation: seconds(
                "mcp.task.store.operation.duration",
                "Task store calls, by backend and operation (waits excluded).",
                &STORE_BUCKETS,
            ),
            redeliveries: meter
                .u64_counter("mcp.task.redeliveries")
                .with_unit("{task}")
                .with_description("Tasks this instance claimed for another attempt, by tool.")
                .build(),
            lease_lapses: meter
                .u64_counter("mcp.task.lease.lapses")
                .with_unit("{task}")
                .with_description("Tasks failed because their instance stopped renewing the lease.")
                .build(),
            listen: meter
                .i64_up_down_counter("mcp.task.listen.subscriptions")
                .with_unit("{subscription}")
                .with_description("Open subscriptions/listen streams.")
                .build(),
        };
        Telemetry {
            inner: Some(Arc::new(inner)),
        }
    }

    /// What [`init`](super::init) installed, else telemetry that records nothing.
    #[must_use]
    pub fn global() -> Self {
        GLOBAL.get().cloned().unwrap_or_default()
    }

    /// Whether anything is recorded.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// `store`, timing every call by backend and operation and noting the task a request
    /// touches (its id, status and trace context) for the request's span; `store` itself
    /// if nothing is recorded.
    #[must_use]
    pub fn observe_store(&self, store: Store) -> Store {
        match &self.inner {
            Some(inner) => super::store::Observed::wrap(store, inner),
            None => store,
        }
    }

    /// Starts the span of a request (see the module docs); [`Operation::reply`] or
    /// [`Operation::end`] ends it.
    pub fn operation(
        &self,
        method: &str,
        id: &RequestId,
        params: Option<&Value>,
        version: &'static str,
        session: Option<&str>,
        catalog: Catalog,
    ) -> Operation {
        let Some(inner) = &self.inner else {
            return Operation { state: None };
        };
        let tool = (method == "tools/call")
            .then(|| params.and_then(|p| p.get("name")).and_then(Value::as_str))
            .flatten()
            .map(|name| (name.to_owned(), catalog.task_support(name).is_some()));
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", clip(method)),
            KeyValue::new("mcp.protocol.version", version),
            KeyValue::new("jsonrpc.request.id", request_id(id)),
            KeyValue::new("network.transport", inner.transport.as_str()),
        ];
        if inner.transport == Transport::Http {
            attributes.push(KeyValue::new("network.protocol.name", "http"));
        }
        if let Some((name, _)) = &tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", clip(name)));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        // 2026-07-28 has no sessions: the attribute never appears there.
        if let Some(session) = session
            && version == mcp_tasks::protocol::PROTOCOL_VERSION
        {
            attributes.push(KeyValue::new("mcp.session.id", clip(session)));
        }
        let name = match &tool {
            Some((tool, _)) => format!("{} {}", clip(method), clip(tool)),
            None => clip(method),
        };
        let parent = remote_parent(TraceContext::of_params(params).as_ref());
        let span = inner
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&inner.tracer, &parent);
        Operation {
            state: Some(Box::new(OpState {
                inner: Arc::clone(inner),
                context: parent.with_span(span),
                started: Instant::now(),
                method: known_method(method),
                tool,
                version,
                noted: None,
            })),
        }
    }

    /// The work of a task's attempt, in a span whose parent is `parent` (the context the
    /// task keeps), counted as running while it runs; [`TaskRun::run`] runs it.
    pub fn task_run(
        &self,
        tool: &str,
        task: &TaskId,
        attempt: u32,
        parent: Option<&TraceContext>,
        owner: &Owner,
        store: &Store,
    ) -> TaskRun {
        let Some(inner) = &self.inner else {
            return TaskRun { state: None };
        };
        TaskRun {
            state: Some(Box::new(RunState {
                inner: Arc::clone(inner),
                parent: remote_parent(parent),
                tool: tool.to_owned(),
                task: task.clone(),
                attempt,
                owner: owner.clone(),
                store: Arc::clone(store),
            })),
        }
    }

    /// Counts a task this instance claimed for another attempt.
    pub fn redelivered(&self, tool: &str) {
        if let Some(inner) = &self.inner {
            inner
                .redeliveries
                .add(1, &[KeyValue::new("gen_ai.tool.name", tool.to_owned())]);
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

/// An open `subscriptions/listen` stream, counted until dropped
/// ([`Telemetry::listen_opened`]).
#[derive(Debug)]
#[must_use = "the subscription is counted while the guard lives"]
pub struct ListenGuard {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inner")
    }
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner {
            inner.listen.add(-1, &[]);
        }
    }
}

/// The span of one request, from [`Telemetry::operation`].
#[must_use = "an operation's span ends with reply or end"]
pub struct Operation {
    state: Option<Box<OpState>>,
}

struct OpState {
    inner: Arc<Inner>,
    /// The request's context: its span, child of the client's.
    context: Context,
    started: Instant,
    /// The method as metrics name it.
    method: &'static str,
    /// The tool of a `tools/call`, and whether the catalog knows it.
    tool: Option<(String, bool)>,
    version: &'static str,
    /// The first task the request touched.
    noted: Option<Noted>,
}

/// A task a store call answered, as a request's span tells of it.
pub(super) struct Noted {
    id: TaskId,
    status: TaskStatus,
    trace: Option<TraceContext>,
}

thread_local! {
    /// The tasks the store answered on this thread while an operation is in scope.
    static NOTES: RefCell<Option<Option<Noted>>> = const { RefCell::new(None) };
}

/// Tells the operation in scope on this thread (if any) of a task the store answered.
pub(super) fn note(id: &TaskId, status: TaskStatus, trace: Option<&TraceContext>) {
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
pub(super) fn note_task(task: &AnyTask) {
    note(task.id(), task.status(), task.trace_context());
}

/// The current request span's context as a task keeps it (see
/// [`task_trace_context`](super::task_trace_context)), with the baggage the client `sent`.
pub(super) fn current_trace_context(sent: Option<&TraceContext>) -> Option<TraceContext> {
    if NOTES.with(|slot| slot.borrow().is_none()) {
        return None;
    }
    let context = Context::current();
    let span = context.span();
    let span = span.span_context();
    if !span.is_valid() {
        return None;
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
            .with_baggage(sent.and_then(TraceContext::baggage))
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

impl Operation {
    /// Runs `f` as part of the request: its span is the current context (a task created
    /// in `f` keeps it), and the first task the store answers is noted for the span.
    pub fn in_scope<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let Some(state) = self.state.as_mut() else {
            return f();
        };
        let _current = state.context.clone().attach();
        let scope = Scope::enter();
        let result = f();
        let noted = scope.leave();
        if state.noted.is_none() {
            state.noted = noted;
        }
        result
    }

    /// Awaits `future` as part of the request ([`in_scope`](Self::in_scope) around every
    /// poll).
    pub async fn in_scope_async<F: Future>(&mut self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        std::future::poll_fn(|cx| self.in_scope(|| future.as_mut().poll(cx))).await
    }

    /// Ends the span when `reply` has its answer: now, after the work of a `Later`
    /// (run in scope), or as a task is created (whose attempt then runs in its own span,
    /// [`TaskRun`]).
    pub fn reply(mut self, reply: Reply, owner: &Owner, store: &Store) -> Reply {
        if self.state.is_none() {
            return reply;
        }
        match reply {
            Reply::Now(answer) => {
                self.end(&answer);
                Reply::Now(answer)
            }
            Reply::Later(work) => Reply::Later(Box::new(move || {
                let answer = self.in_scope(work);
                self.end(&answer);
                answer
            })),
            Reply::ThenRun(created, work) => {
                let run = self.created(&created, owner, store);
                self.end_with(Ok(&created));
                Reply::ThenRun(created, Box::new(move || run.run(work)))
            }
        }
    }

    /// The attempt of the task this request created (answered with `created`).
    fn created(&self, created: &Value, owner: &Owner, store: &Store) -> TaskRun {
        let Some(state) = &self.state else {
            return TaskRun { state: None };
        };
        let tool = state.metric_tool().unwrap_or("_OTHER");
        state.inner.created.add(
            1,
            &[
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                KeyValue::new("mcp.protocol.version", state.version),
            ],
        );
        let task = created
            .get("task")
            .and_then(|task| task.get("taskId"))
            .or_else(|| created.get("taskId"))
            .and_then(Value::as_str)
            .map(TaskId::from);
        let Some(task) = task else {
            return TaskRun { state: None };
        };
        TaskRun {
            state: Some(Box::new(RunState {
                inner: Arc::clone(&state.inner),
                parent: state.context.clone(),
                tool: tool.to_owned(),
                task,
                attempt: 1,
                owner: owner.clone(),
                store: Arc::clone(store),
            })),
        }
    }

    /// Ends the span with `answer`.
    pub fn end(self, answer: &Result<Value, JsonRpcError>) {
        self.end_with(answer.as_ref());
    }

    fn end_with(self, answer: Result<&Value, &JsonRpcError>) {
        let Some(state) = self.state else { return };
        let span = state.context.span();
        let mut metric = vec![
            KeyValue::new("mcp.method.name", state.method),
            KeyValue::new("mcp.protocol.version", state.version),
            KeyValue::new("network.transport", state.inner.transport.as_str()),
        ];
        if let Some(tool) = state.metric_tool() {
            metric.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            metric.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        match answer {
            Err(error) => {
                let code = error.code.to_string();
                span.set_status(Status::error(error.message.clone()));
                let attributes = [
                    KeyValue::new("error.type", code.clone()),
                    KeyValue::new("rpc.response.status_code", code),
                ];
                span.set_attributes(attributes.iter().cloned());
                metric.extend(attributes);
            }
            Ok(result) if is_tool_error(result) => {
                span.set_status(Status::error("the tool reported an error (isError)"));
                let error = KeyValue::new("error.type", "tool_error");
                span.set_attribute(error.clone());
                metric.push(error);
            }
            Ok(_) => {}
        }
        if let Some(noted) = state.noted {
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

impl OpState {
    /// The tool as metrics name it: the catalog's, else `_OTHER`.
    fn metric_tool(&self) -> Option<&str> {
        self.tool
            .as_ref()
            .map(|(name, known)| if *known { name.as_str() } else { "_OTHER" })
    }
}

/// One attempt of a task's work ([`Telemetry::task_run`]).
#[must_use = "the attempt is recorded when it runs"]
pub struct TaskRun {
    state: Option<Box<RunState>>,
}

struct RunState {
    inner: Arc<Inner>,
    parent: Context,
    tool: String,
    task: TaskId,
    attempt: u32,
    owner: Owner,
    store: Store,
}

impl TaskRun {
    /// Runs `work` (the handler) in the attempt's span, then reads once how the task
    /// stands to end the span and count the attempt by its status.
    pub fn run(self, work: impl FnOnce()) {
        let Some(state) = self.state else {
            return work();
        };
        let inner = &state.inner;
        let tool = KeyValue::new("gen_ai.tool.name", state.tool.clone());
        let span = inner
            .tracer
            .span_builder(format!("execute_tool {}", state.tool))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                tool.clone(),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("mcp.task.id", state.task.to_string()),
                KeyValue::new("mcp.task.attempt", i64::from(state.attempt)),
            ])
            .start_with_context(&inner.tracer, &state.parent);
        let context = state.parent.with_span(span);
        let started = Instant::now();
        inner.running.add(1, std::slice::from_ref(&tool));
        {
            let _current = context.clone().attach();
            work();
        }
        inner.running.add(-1, std::slice::from_ref(&tool));
        let span = context.span();
        let (status, error) = match state.store.get(&state.owner, &state.task.to_string()) {
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
        let attributes = [tool, status];
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

fn is_tool_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
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

/// The exporters [`init`](super::init) started.
#[must_use = "dropping the guard stops the exporters"]
pub struct Guard {
    tracers: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
    said: String,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said)
    }
}

impl Guard {
    pub(super) fn install(transport: Transport) -> Guard {
        let off = |said: &str| Guard {
            tracers: None,
            meters: None,
            said: said.to_owned(),
        };
        let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        if env("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return off("telemetry: off (OTEL_SDK_DISABLED)");
        }
        let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let traces = (endpoint || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some())
            && env("OTEL_TRACES_EXPORTER").as_deref() != Some("none");
        let metrics = (endpoint || env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").is_some())
            && env("OTEL_METRICS_EXPORTER").as_deref() != Some("none");
        if !traces && !metrics {
            return off("telemetry: off (no OTEL_EXPORTER_OTLP_ENDPOINT)");
        }
        let mut resource = opentelemetry_sdk::Resource::builder();
        if env("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service_name());
        }
        let resource = resource.build();
        let tracers = if traces {
            match opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()
            {
                Ok(exporter) => SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
                Err(err) => return off(&format!("telemetry: off (the span exporter: {err})")),
            }
        } else {
            SdkTracerProvider::builder().build()
        };
        let meters = if metrics {
            match opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .build()
            {
                Ok(exporter) => SdkMeterProvider::builder()
                    .with_periodic_exporter(exporter)
                    .with_resource(resource)
                    .build(),
                Err(err) => return off(&format!("telemetry: off (the metric exporter: {err})")),
            }
        } else {
            SdkMeterProvider::builder().build()
        };
        let _ = GLOBAL.set(Telemetry::new(&tracers, &meters, transport));
        let signals = match (traces, metrics) {
            (true, true) => "spans and metrics",
            (true, false) => "spans",
            _ => "metrics",
        };
        Guard {
            tracers: Some(tracers),
            meters: Some(meters),
            said: format!("telemetry: {signals} exported over OTLP/HTTP"),
        }
    }

    /// One line for the operator: what is exported, or why nothing is.
    #[must_use]
    pub fn describe(&self) -> &str {
        &self.said
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // What is still batched goes out now; a collector that is gone costs the exporter's
        // timeout once.
        if let Some(tracers) = self.tracers.take() {
            let _ = tracers.shutdown();
        }
        if let Some(meters) = self.meters.take() {
            let _ = meters.shutdown();
        }
    }
}

/// The binary's file stem (`mcp_http`, `stdio_server`), as `service.name`.
fn service_name() -> String {
    std::env::args()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .and_then(|stem| stem.to_str())
        .map_or_else(|| SCOPE.to_owned(), str::to_owned)
}
