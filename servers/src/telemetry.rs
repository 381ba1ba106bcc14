//! What an operator sees of the example servers: spans and metrics through OpenTelemetry
//! (cargo feature `otel`; without it every call here is free and does nothing).
//!
//! # Spans
//! One `SERVER` span per request, as OpenTelemetry's MCP semantic conventions (status
//! *development*, in the GenAI conventions) describe it: named `{mcp.method.name}` or
//! `tools/call {gen_ai.tool.name}`, a child of the trace context the client sent in
//! `params._meta` (`traceparent`, `tracestate`, `baggage`; SEP-414), with
//! `mcp.method.name`, `mcp.protocol.version` (`2025-11-25` or `2026-07-28`),
//! `jsonrpc.request.id`, `network.transport` (`pipe` on stdio, `tcp` on HTTP),
//! `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` on `tools/call`,
//! `mcp.session.id` on a 2025-11-25 request in an HTTP session (never on 2026-07-28, which
//! has no sessions), and on failure `error.type` (the JSON-RPC code, or `tool_error` for a
//! result with `isError: true`), `rpc.response.status_code` (the JSON-RPC code) and an
//! error status with the error's message.
//!
//! The conventions say nothing of tasks yet. What this server adds:
//! - `mcp.task.id` on every request span that creates or reads one task (`tools/call` as a
//!   task, `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`), and
//!   `mcp.task.status`, its status as that request left or read it.
//! - The task's work is an `INTERNAL` span `execute_tool {gen_ai.tool.name}` (the GenAI
//!   execute-tool span) with `mcp.task.id`, `mcp.task.attempt` (1, then 2… after a
//!   redelivery) and, when it ends, `mcp.task.status` (`completed`, `failed`, `cancelled`,
//!   or `working` / `input_required` if this attempt stopped without finishing: handed
//!   over, superseded) and `error.type` (`tool_error`, the JSON-RPC code, or `cancelled`).
//!   Its parent is the `tools/call` span that created the task: that context is stored
//!   with the task ([`TaskRequest::with_trace_context`](mcp_tasks::TaskRequest::with_trace_context)),
//!   so an attempt claimed by another instance continues the same trace.
//! - `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update` spans link to the
//!   task's stored context, so a poll in its own trace leads to the work it asks about.
//!
//! # Metrics
//! - `mcp.server.operation.duration` (histogram, s): the conventions' metric, with the
//!   span's low-cardinality attributes (an unknown method or tool reads `_OTHER`).
//! - `mcp.task.created` (counter, `{task}`): by `gen_ai.tool.name`, `mcp.protocol.version`.
//! - `mcp.task.finished` (counter, `{task}`) and `mcp.task.duration` (histogram, s, from
//!   the attempt's start to its end on this instance): by tool, `mcp.task.status`.
//! - `mcp.task.running` (up-down counter, `{task}`): attempts running here, by tool.
//! - `mcp.task.input.wait.duration` (histogram, s) and `mcp.task.input.waiting` (up-down
//!   counter): handlers waiting for the requestor's input.
//! - `mcp.task.store.operation.duration` (histogram, s): every store call by
//!   `mcp.task.store.backend` (the store's type: `TaskRegistry`, `RedisTaskStore`, …) and
//!   `mcp.task.store.operation` (`get`, `update`, `insert_leased`, `claim`, …), with
//!   `error.type` when it failed. Waits are not operations: they are not counted here.
//! - `mcp.task.redeliveries` (counter): tasks this instance claimed for another attempt,
//!   by tool.
//! - `mcp.task.lease.lapses` (counter): tasks failed because the instance running them
//!   stopped renewing their lease, as this instance's store subscription sees them (over a
//!   shared store every instance sees each lapse: aggregate with `max`, not `sum`). A
//!   redeliverable task whose lease lapses is claimed instead, and counted as a
//!   redelivery where it is claimed.
//! - `mcp.task.listen.subscriptions` (up-down counter): open `subscriptions/listen`
//!   streams, through [`Telemetry::listen_opened`].
//!
//! # Pointing it at a collector
//! [`init`] exports over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is set,
//! with the SDK's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`,
//! `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_BSP_*`); `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_METRICS_EXPORTER=none` turns one signal off, `OTEL_SDK_DISABLED=true` both.
//! Unset, nothing is recorded: each request costs one branch.

use mcp_tasks::{JsonObject, TraceContext};

#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod store;
#[cfg(feature = "otel")]
pub use otel::{Guard, ListenGuard, Operation, TaskRun, Telemetry};

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(not(feature = "otel"))]
pub use off::{Guard, ListenGuard, Operation, TaskRun, Telemetry};

/// How requests reach the server: the conventions' `network.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Standard input and output (`pipe`).
    Stdio,
    /// Streamable HTTP (`tcp`, `network.protocol.name = http`).
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
/// docs), and makes that the telemetry [`Telemetry::global`] answers (what
/// [`Server::new`](crate::server::Server::new) observes with). Keep the guard: dropping it
/// flushes what is pending and stops the exporters. Without an OTLP endpoint, or built
/// without the `otel` feature, it does nothing and says so in [`Guard::describe`].
///
/// A second call changes nothing.
#[must_use = "dropping the guard stops the exporters"]
pub fn init(transport: Transport) -> Guard {
    Guard::install(transport)
}

/// The trace context a task created now keeps: the current request span's (so the work
/// is its child) if telemetry is recording, else whatever the client sent in the
/// request's `_meta` (`traceparent`, `tracestate`, `baggage`), so that an instance that
/// records continues the caller's trace.
#[must_use]
pub fn task_trace_context(meta: Option<&JsonObject>) -> Option<TraceContext> {
    let sent = meta.and_then(TraceContext::from_meta);
    #[cfg(feature = "otel")]
    if let Some(context) = otel::current_trace_context(sent.as_ref()) {
        return Some(context);
    }
    sent
}

/// The method name metrics may carry: a method the servers know, else `_OTHER` (a
/// client's made-up method names must not grow the metric's series).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn known_method(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
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
    KNOWN
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("_OTHER")
}
