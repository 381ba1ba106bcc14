//! [`telemetry`](super) with the `otel` feature: the SDK and the OTLP exporters, and a
//! request's span around the servers' [`Reply`](crate::server::Reply).

use std::sync::{Arc, OnceLock};

use mcp_tasks::{JsonRpcError, Owner, RequestId, TaskId};
use mcp_tasks_otel::{Ending, Request, RequestSpan, TaskRun, Telemetry};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::Value;

use super::Transport;
use super::prometheus::Scrape;
use crate::server::Store;
use crate::tool::Tools;

/// What [`init`](super::init) installed.
static GLOBAL: OnceLock<Telemetry> = OnceLock::new();

/// The reader `GET /metrics` collects from, if [`PROMETHEUS_ENV`](super::PROMETHEUS_ENV)
/// asked for it.
static SCRAPE: OnceLock<(Scrape, SdkMeterProvider)> = OnceLock::new();

pub(super) fn global() -> Telemetry {
    GLOBAL.get().cloned().unwrap_or_default()
}

pub(super) fn prometheus_text() -> Option<String> {
    SCRAPE
        .get()
        .and_then(|(scrape, meters)| scrape.text(meters))
}

/// The span of one request.
#[must_use = "an operation's span ends with reply or end"]
pub struct Operation {
    span: RequestSpan,
    recording: bool,
}

impl Operation {
    /// Starts the span of a request of `method` with `id` and `params`, speaking
    /// `version` (in the 2025-11-25 `session`, if any), to a server of `tools`;
    /// [`reply`](Self::reply) or [`end`](Self::end) ends it.
    pub(crate) fn start(
        telemetry: &Telemetry,
        method: &str,
        id: &RequestId,
        params: Option<&Value>,
        version: &'static str,
        session: Option<&str>,
        tools: &Tools,
    ) -> Self {
        let span = telemetry.request(&Request {
            method,
            id: Some(id),
            meta: params
                .and_then(|params| params.get("_meta"))
                .and_then(Value::as_object),
            version,
            session,
            tool: Self::tool(method, params, tools),
        });
        Operation {
            span,
            recording: telemetry.is_enabled(),
        }
    }

    pub(super) fn is_recording(&self) -> bool {
        self.recording
    }

    /// Runs `f` as part of the request (a task created in it keeps the request's span as
    /// its trace context; the task it touches is noted for the span).
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        self.span.in_scope(f)
    }

    /// Awaits `future` as part of the request.
    pub async fn in_scope_async<F: Future>(&self, future: F) -> F::Output {
        self.span.in_scope_async(future).await
    }

    pub(super) fn created(&self, task: &TaskId, owner: &Owner, store: &Store) -> TaskRun {
        self.span.created(task, owner, Arc::clone(store))
    }

    /// Ends the span of a request that created a task (its answer is a result).
    pub(super) fn end_created(self) {
        self.span.end(Ending::Done);
    }

    pub(super) fn end_with(self, answer: Result<&Value, &JsonRpcError>) {
        self.span.end(Ending::of(answer));
    }
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
        let scraped = env(super::PROMETHEUS_ENV).is_some_and(|value| value == "1");
        if !traces && !metrics && !scraped {
            return off("telemetry: off (no OTEL_EXPORTER_OTLP_ENDPOINT)");
        }
        let mut resource = opentelemetry_sdk::Resource::builder();
        if env("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(program_name());
        }
        let resource = resource.build();
        let tracers = if traces {
            match opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()
            {
                Ok(exporter) => Some(
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource.clone())
                        .build(),
                ),
                Err(err) => return off(&format!("telemetry: off (the span exporter: {err})")),
            }
        } else {
            None
        };
        let mut meters = SdkMeterProvider::builder().with_resource(resource);
        if metrics {
            match opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .build()
            {
                Ok(exporter) => meters = meters.with_periodic_exporter(exporter),
                Err(err) => return off(&format!("telemetry: off (the metric exporter: {err})")),
            }
        }
        let scrape = scraped.then(Scrape::default);
        if let Some(scrape) = &scrape {
            meters = meters.with_reader(scrape.reader());
        }
        let meters = meters.build();
        // Without an exported trace, spans are not even made.
        let telemetry = match &tracers {
            Some(tracers) => Telemetry::new(tracers, &meters, transport.as_str()),
            None => Telemetry::new(
                &opentelemetry::trace::noop::NoopTracerProvider::new(),
                &meters,
                transport.as_str(),
            ),
        };
        if GLOBAL.set(telemetry).is_err() {
            return off("telemetry: already installed");
        }
        if let Some(scrape) = scrape {
            let _ = SCRAPE.set((scrape, meters.clone()));
        }
        if let Some(tracers) = &tracers {
            opentelemetry::global::set_tracer_provider(tracers.clone());
        }
        opentelemetry::global::set_meter_provider(meters.clone());
        let exported = match (traces, metrics) {
            (true, true) => "spans and metrics exported over OTLP/HTTP",
            (true, false) => "spans exported over OTLP/HTTP",
            (false, true) => "metrics exported over OTLP/HTTP",
            (false, false) => "nothing exported over OTLP",
        };
        let scraped = if scraped {
            "; metrics on GET /metrics (Prometheus text)"
        } else {
            ""
        };
        Guard {
            tracers,
            meters: Some(meters),
            said: format!("telemetry: {exported}{scraped}"),
        }
    }

    /// One line for the operator: what is exported, or why nothing is.
    #[must_use]
    pub fn describe(&self) -> &str {
        &self.said
    }

    /// Whether spans or metrics are exported (a collector is configured).
    #[must_use]
    pub fn exporting(&self) -> bool {
        self.tracers.is_some() || self.meters.is_some()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // What is still batched goes out now; a collector that is gone costs the
        // exporter's timeout once.
        if let Some(tracers) = self.tracers.take() {
            let _ = tracers.shutdown();
        }
        if let Some(meters) = self.meters.take() {
            let _ = meters.shutdown();
        }
    }
}

/// The running program's name (its binary's file stem): the service name when
/// `OTEL_SERVICE_NAME` names none.
fn program_name() -> String {
    std::env::args()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .and_then(|stem| stem.to_str())
        .map_or_else(|| "mcp-tasks-server".to_owned(), str::to_owned)
}
