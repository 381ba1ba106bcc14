//! [`telemetry`](super) built without the `otel` feature: the same calls, recording
//! nothing, compiled to nothing.

use mcp_tasks::{JsonRpcError, Owner, RequestId, TaskId, TraceContext};
use serde_json::Value;

use super::Transport;
use crate::server::Store;
use crate::tool::Tools;

/// Where a server's spans and metrics go: nowhere in this build (feature `otel` off).
#[derive(Debug, Clone, Copy, Default)]
pub struct Telemetry;

impl Telemetry {
    /// Whether anything is recorded: never in this build.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        false
    }

    /// An attempt that records nothing.
    pub fn task_run(
        &self,
        _tool: &str,
        _task: &TaskId,
        _attempt: u32,
        _parent: Option<&TraceContext>,
        _owner: &Owner,
        _store: Store,
    ) -> TaskRun {
        TaskRun
    }

    /// Nothing to count.
    pub fn redelivered(&self, _tool: &str) {}

    /// Nothing to count.
    pub fn listen_opened(&self) -> ListenGuard {
        ListenGuard
    }
}

/// An open `subscriptions/listen` stream (not counted in this build).
#[derive(Debug)]
#[must_use = "the subscription is counted while the guard lives"]
pub struct ListenGuard;

/// A request's span (none in this build).
#[must_use = "an operation's span ends with reply or end"]
pub struct Operation;

impl Operation {
    /// A request that records nothing.
    pub(crate) fn start(
        _telemetry: &Telemetry,
        _method: &str,
        _id: &RequestId,
        _params: Option<&Value>,
        _version: &'static str,
        _session: Option<&str>,
        _tools: &Tools,
    ) -> Self {
        Operation
    }

    pub(super) fn is_recording(&self) -> bool {
        false
    }

    /// Runs `f`.
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }

    /// Awaits `future`.
    pub async fn in_scope_async<F: Future>(&self, future: F) -> F::Output {
        future.await
    }

    pub(super) fn created(&self, _task: &TaskId, _owner: &Owner, _store: &Store) -> TaskRun {
        TaskRun
    }

    pub(super) fn end_created(self) {}

    pub(super) fn end_with(self, _answer: Result<&Value, &JsonRpcError>) {}
}

/// A task's attempt (not recorded in this build).
#[derive(Debug, Default)]
#[must_use = "the attempt is recorded when it runs"]
pub struct TaskRun;

impl TaskRun {
    /// Runs `work`.
    pub fn run(self, work: impl FnOnce()) {
        work();
    }

    /// Awaits `work`.
    pub async fn run_async<F: Future>(self, work: F) -> F::Output {
        work.await
    }
}

/// Nothing was installed: this build has no `otel` feature.
#[derive(Debug)]
#[must_use = "dropping the guard stops the exporters"]
pub struct Guard;

impl Guard {
    pub(super) fn install(_transport: Transport) -> Guard {
        Guard
    }

    /// One line for the operator.
    #[must_use]
    pub fn describe(&self) -> &str {
        "telemetry: not built in (cargo feature `otel` of mcp-tasks-server)"
    }

    /// Whether spans or metrics are exported: never, in this build.
    #[must_use]
    pub fn exporting(&self) -> bool {
        false
    }
}
