//! What recording costs: `tasks/get` through the extension's dispatcher and a task's
//! whole life (create in a `tools/call` span, run in its attempt's span, complete), on
//! the in-process registry, three ways: without any of this crate, with
//! `Telemetry::default()` (nothing installed: what a server without an OTLP endpoint
//! pays), and recording into an SDK whose batch span processor and periodic reader hand
//! everything to exporters that drop it (the SDK's whole cost, without the network).
//!
//! ```text
//! cargo run --release -p mcp-tasks-otel --features testing --example overhead
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::ext::ExtDispatcher;
use mcp_tasks::{JsonObject, Owner, RequestId, TaskRegistry, TaskRequest, TaskStore};
use mcp_tasks_otel::{Ending, Request, Telemetry, task_trace_context};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;

/// Drops every span.
#[derive(Debug)]
struct Drop;

impl SpanExporter for Drop {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        Ok(())
    }
}

impl PushMetricExporter for Drop {
    async fn export(&self, _metrics: &ResourceMetrics) -> OTelSdkResult {
        Ok(())
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

const ROUNDS: u32 = 200_000;

/// `ROUNDS` polls of one task, and `ROUNDS / 4` task lives; ns per poll and per task.
fn measure(telemetry: Option<&Telemetry>) -> (f64, f64) {
    let registry = TaskRegistry::builder()
        .limits(mcp_tasks::Limits::none())
        .build()
        .expect("a registry");
    let store: Arc<dyn TaskStore> = match telemetry {
        Some(telemetry) => Arc::new(telemetry.observe(registry)),
        None => Arc::new(registry),
    };
    let dispatcher = ExtDispatcher::new(Arc::clone(&store));
    let owner = Owner::new("alice");
    let meta = json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"});
    let meta = meta.as_object().cloned();
    let (_, task) = store
        .create(&owner, TaskRequest::new(0, "tools/call"))
        .expect("a task");
    let params = json!({"taskId": task.id().to_string()});
    let id = RequestId::from(1);
    let started = Instant::now();
    for _ in 0..ROUNDS {
        let request = Request {
            method: "tasks/get",
            id: Some(&id),
            meta: meta.as_ref(),
            version: mcp_tasks::ext::PROTOCOL_VERSION,
            session: None,
            tool: None,
        };
        match telemetry {
            Some(telemetry) => {
                let span = telemetry.request(&request);
                let answer =
                    span.in_scope(|| dispatcher.dispatch(&owner, "tasks/get", Some(&params), true));
                span.end(Ending::of(answer.as_ref()));
            }
            None => {
                let _ = dispatcher.dispatch(&owner, "tasks/get", Some(&params), true);
            }
        }
    }
    let poll = started.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
    let tasks = ROUNDS / 4;
    let started = Instant::now();
    for n in 0..tasks {
        let id = RequestId::from(i64::from(n));
        let create = || {
            TaskRequest::new(id.clone(), "tools/call")
                .with_trace_context(task_trace_context(meta.as_ref()))
        };
        match telemetry {
            Some(telemetry) => {
                let span = telemetry.request(&Request {
                    method: "tools/call",
                    id: Some(&id),
                    meta: meta.as_ref(),
                    version: mcp_tasks::ext::PROTOCOL_VERSION,
                    session: None,
                    tool: Some(("sleep", true)),
                });
                let (handle, task) = span
                    .in_scope(|| store.create(&owner, create()))
                    .expect("created");
                let run = span.created(task.id(), &owner, Arc::clone(&store));
                span.end(Ending::Done);
                run.run(|| drop(handle.complete(JsonObject::new()).expect("completed")));
            }
            None => {
                let (handle, _) = store.create(&owner, create()).expect("created");
                drop(handle.complete(JsonObject::new()).expect("completed"));
            }
        }
    }
    let task = started.elapsed().as_nanos() as f64 / f64::from(tasks);
    (poll, task)
}

fn main() {
    let tracers = SdkTracerProvider::builder()
        .with_batch_exporter(Drop)
        .build();
    let meters = SdkMeterProvider::builder()
        .with_periodic_exporter(Drop)
        .build();
    let recording = Telemetry::new(&tracers, &meters, "tcp");
    let off = Telemetry::default();
    // Warm up, then each way twice, alternating.
    let _ = measure(None);
    for round in 1..=2 {
        for (name, telemetry) in [
            ("no telemetry", None),
            ("Telemetry::default() (nothing installed)", Some(&off)),
            ("recording (SDK, batch, exporters drop)", Some(&recording)),
        ] {
            let (poll, task) = measure(telemetry);
            println!(
                "overhead: run {round}: {name:44} tasks/get {poll:7.0} ns ({:9.0}/s), a task's life {task:7.0} ns ({:8.0}/s)",
                1e9 / poll,
                1e9 / task
            );
        }
    }
    let _ = tracers.shutdown();
    let _ = meters.shutdown();
}
