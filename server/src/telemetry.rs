//! What an operator sees of a server: spans and metrics through OpenTelemetry
//! (cargo feature `otel`; without it every call here is free and does nothing).
//!
//! The spans, attributes and metrics are `mcp-tasks-otel`'s: OpenTelemetry's MCP
//! semantic conventions, and the tasks' additions (`mcp.task.id`, `mcp.task.status`, the
//! work's `execute_tool` span in the trace of the call that created the task, also on
//! another instance, links from `tasks/get`, the tasks' and the store's metrics). This
//! module ties them to the servers: [`init`] installs the SDK and the OTLP exporters from
//! the environment, [`Operation`] spans a request through its [`Reply`], and
//! [`observe_store`] times the store.
//!
//! # Pointing it at a collector
//! [`init`] exports over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set,
//! with the SDK's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`,
//! `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_BSP_*`); `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_METRICS_EXPORTER=none` turns one signal off, `OTEL_SDK_DISABLED=true` both.
//! Unset, nothing is recorded: each request costs a branch. With
//! `MCP_TASKS_PROMETHEUS=1` the metrics are also kept for a Prometheus scrape
//! ([`prometheus_text`]), with or without an OTLP endpoint.

use std::time::Duration;

use mcp_tasks::{JsonObject, JsonRpcError, Owner, TraceContext};
use serde_json::Value;

use crate::server::{Answering, Reply, Store};
use crate::tool::Tools;
use crate::work::Work;

/// The crates the spans and metrics are recorded with (feature `otel`): `mcp_tasks_otel`'s
/// `testing::Recorder` keeps them in memory for tests that assert them.
#[cfg(feature = "otel")]
pub use {mcp_tasks_otel, opentelemetry};

#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod prometheus;
#[cfg(feature = "otel")]
pub mod sampler;
#[cfg(feature = "otel")]
pub use mcp_tasks_otel::{ListenGuard, TaskRun, Telemetry};
#[cfg(feature = "otel")]
pub use otel::{Guard, Operation};

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(not(feature = "otel"))]
pub use off::{Guard, ListenGuard, Operation, TaskRun, Telemetry};

/// How requests reach the server: the conventions' `network.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Standard input and output (`pipe`).
    Stdio,
    /// Streamable HTTP (`tcp`, with `network.protocol.name = http`).
    Http,
}

impl Transport {
    /// The `network.transport` value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "pipe",
            Transport::Http => "tcp",
        }
    }
}

/// Exports spans and metrics over OTLP if the environment asks for it (see the module
/// docs), and makes that the telemetry [`global`] answers (what
/// a [`Server`](crate::Server) observes with unless its builder is given another); the OpenTelemetry global
/// providers are set too, for libraries that record through them (`mcp-tasks-rmcp`).
/// Keep the guard: dropping it flushes what is pending and stops the exporters. Without an
/// OTLP endpoint, or built without the `otel` feature, it does nothing and says so in
/// [`Guard::describe`]. A second call changes nothing.
#[must_use = "dropping the guard stops the exporters"]
pub fn init(transport: Transport) -> Guard {
    Guard::install(transport)
}

/// The environment variable that, set to `1`, has [`init`] keep the metrics for a
/// Prometheus scrape ([`prometheus_text`]; `mcp_http` serves them on `GET /metrics`,
/// behind its bearer tokens), with or without an OTLP endpoint.
pub const PROMETHEUS_ENV: &str = "MCP_TASKS_PROMETHEUS";

/// Every metric recorded so far in Prometheus' text exposition format, if [`init`]
/// installed the scrape ([`PROMETHEUS_ENV`]); `None` otherwise. It flushes the meter
/// provider (its OTLP exporter too, if any) and blocks until that is done: call it
/// where blocking is allowed.
#[must_use]
pub fn prometheus_text() -> Option<String> {
    #[cfg(feature = "otel")]
    return otel::prometheus_text();
    #[cfg(not(feature = "otel"))]
    None
}

/// What [`init`] installed, else telemetry that records nothing.
#[must_use]
pub fn global() -> Telemetry {
    #[cfg(feature = "otel")]
    return otel::global();
    #[cfg(not(feature = "otel"))]
    Telemetry
}

/// How the store gauges are sampled: a scan of the store across owners every `every`, at
/// most `max_tasks` tasks a round. [`StoreScan::from_env`] reads
/// [`SCAN_ENV`] and [`SCAN_MAX_ENV`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreScan {
    /// How long between two scans; zero: no scans (no store gauges).
    pub every: Duration,
    /// The most tasks one scan reads (the unfinished first): beyond it the counts are
    /// lower bounds, and `mcp.task.store.scan.truncated` says so.
    pub max_tasks: usize,
    /// How long after its lease lapsed a claimable `working` task counts as stalled (as
    /// the admin view's `--grace`).
    pub stalled_grace: Duration,
}

/// The environment variable of the scan's interval in milliseconds ([`StoreScan`];
/// default 15000, `0` turns the store gauges off).
pub const SCAN_ENV: &str = "MCP_TASKS_METRICS_SCAN_MS";

/// The environment variable of the most tasks one scan reads ([`StoreScan`]; default
/// 10000).
pub const SCAN_MAX_ENV: &str = "MCP_TASKS_METRICS_SCAN_MAX";

impl Default for StoreScan {
    /// Every 15 s, at most 10,000 tasks, stalled 60 s after a lease lapsed unclaimed.
    fn default() -> Self {
        StoreScan {
            every: Duration::from_secs(15),
            max_tasks: 10_000,
            stalled_grace: Duration::from_secs(60),
        }
    }
}

impl StoreScan {
    /// No scans.
    #[must_use]
    pub fn off() -> Self {
        StoreScan {
            every: Duration::ZERO,
            ..StoreScan::default()
        }
    }

    /// The defaults, with what [`SCAN_ENV`] and [`SCAN_MAX_ENV`] set.
    ///
    /// # Errors
    /// A variable that is not a whole number (a maximum of 0 is refused too), naming it.
    pub fn from_env() -> Result<Self, String> {
        let mut scan = StoreScan::default();
        let read = |name: &str| -> Result<Option<u64>, String> {
            match std::env::var(name) {
                Ok(value) if !value.trim().is_empty() => value
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name} must be a whole number, not `{value}`")),
                _ => Ok(None),
            }
        };
        if let Some(ms) = read(SCAN_ENV)? {
            scan.every = Duration::from_millis(ms);
        }
        if let Some(max) = read(SCAN_MAX_ENV)? {
            if max == 0 {
                return Err(format!("{SCAN_MAX_ENV} must be at least 1"));
            }
            scan.max_tasks = usize::try_from(max).unwrap_or(usize::MAX);
        }
        Ok(scan)
    }

    /// Whether scans are made.
    #[must_use]
    pub fn is_on(&self) -> bool {
        !self.every.is_zero()
    }
}

/// Starts the sampler of `telemetry`'s store gauges over `admin`, unless `telemetry`
/// records nothing, `scan` is off, or a sampler feeds it already (one per telemetry: one
/// per process with what [`init`] installed). Answers whether it started one.
pub fn sample_store(
    telemetry: &Telemetry,
    admin: std::sync::Arc<dyn mcp_tasks::admin::TaskAdmin>,
    scan: StoreScan,
) -> bool {
    #[cfg(feature = "otel")]
    if scan.is_on()
        && let Some(fleet) = telemetry.fleet()
        && fleet.claim_sampling()
    {
        return match sampler::Sampler::new(admin, scan).start(fleet.downgrade()) {
            Ok(_) => true,
            Err(err) => {
                log::warn!("cannot start the store scan of the task gauges: {err}");
                false
            }
        };
    }
    let _ = (telemetry, admin, scan);
    false
}

/// `store`, timed by backend and operation and noting the task each request touches, if
/// `telemetry` records; else `store` itself.
#[must_use]
pub fn observe_store(telemetry: &Telemetry, store: Store) -> Store {
    #[cfg(feature = "otel")]
    if telemetry.is_enabled() {
        return std::sync::Arc::new(telemetry.observe(store));
    }
    let _ = telemetry;
    store
}

/// The trace context a task created now keeps: the current request span's while one is
/// recording (the work is then its child), else what the client sent in the request's
/// `_meta` (`traceparent`, `tracestate`, `baggage`).
#[must_use]
pub fn task_trace_context(meta: Option<&JsonObject>) -> Option<TraceContext> {
    #[cfg(feature = "otel")]
    return mcp_tasks_otel::task_trace_context(meta);
    #[cfg(not(feature = "otel"))]
    meta.and_then(TraceContext::from_meta)
}

/// `work` in the span of its attempt `run`: a blocking handler inside it, a future with
/// it current at every poll; the span ends with the work.
#[must_use]
pub fn traced(run: TaskRun, work: Work) -> Work {
    match work {
        Work::Blocking(work) => Work::blocking(move || run.run(work)),
        Work::Async(work) => Work::future(run.run_async(work)),
    }
}

/// The helpers both builds share.
impl Operation {
    /// The tool of a `tools/call`, and whether the server has it.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    fn tool<'a>(method: &str, params: Option<&'a Value>, tools: &Tools) -> Option<(&'a str, bool)> {
        (method == "tools/call")
            .then(|| params.and_then(|p| p.get("name")).and_then(Value::as_str))
            .flatten()
            .map(|name| (name, tools.get(name).is_some()))
    }

    /// Ends the span when `reply` has its answer: now, after the work of a `Later` (run in
    /// scope), or as a task is created (whose attempt runs in its own span, a child).
    pub fn reply(self, reply: Reply, owner: &Owner, store: &Store) -> Reply {
        if !self.is_recording() {
            return reply;
        }
        match reply {
            Reply::Now(answer) => {
                self.end(&answer);
                Reply::Now(answer)
            }
            Reply::Later(Answering::Blocking(work)) => {
                Reply::Later(Answering::Blocking(Box::new(move |peer| {
                    let answer = self.in_scope(move || work(peer));
                    self.end(&answer);
                    answer
                })))
            }
            Reply::Later(Answering::Async(work)) => {
                Reply::Later(Answering::Async(Box::new(move |peer| {
                    let future = self.in_scope(move || work(peer));
                    Box::pin(async move {
                        let answer = self.in_scope_async(future).await;
                        self.end(&answer);
                        answer
                    })
                })))
            }
            Reply::ThenRun(created, work) => {
                let run = self.created(created.task_id(), owner, store);
                self.end_created();
                Reply::ThenRun(created, traced(run, work))
            }
        }
    }

    /// Ends the span with `answer`.
    pub fn end(self, answer: &Result<Value, JsonRpcError>) {
        self.end_with(answer.as_ref());
    }
}
