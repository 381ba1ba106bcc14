//! The spans of the requests [`TaskManager`](crate::TaskManager) answers, through
//! `mcp_tasks_otel` (recording only with [`TaskManager::with_telemetry`](crate::TaskManager::with_telemetry)).

use mcp_tasks_otel::{Ending, Request, RequestSpan, Telemetry};
use rmcp::ErrorData;
use rmcp::model::CallToolResponse;
use rmcp::service::{RequestContext, RoleServer};

use crate::convert;

/// Starts the span of `context`'s request of `method` (for `tools/call`, of `tool`).
pub(crate) fn request(
    telemetry: &Telemetry,
    context: &RequestContext<RoleServer>,
    method: &str,
    tool: Option<&str>,
) -> RequestSpan {
    if !telemetry.is_enabled() {
        return RequestSpan::default();
    }
    let id = convert::request_id(&context.id);
    telemetry.request(&Request {
        method,
        id: Some(&id),
        meta: Some(&context.meta.0.0),
        // The extension's wire: no sessions, so no `mcp.session.id`.
        version: mcp_tasks::ext::PROTOCOL_VERSION,
        session: None,
        tool: tool.map(|tool| (tool, true)),
    })
}

/// Answers `context`'s request of `method` (a `tasks/*` one) with `answer`, in its span.
pub(crate) fn traced<R: Answer>(
    telemetry: &Telemetry,
    context: &RequestContext<RoleServer>,
    method: &str,
    answer: impl FnOnce() -> Result<R, ErrorData>,
) -> Result<R, ErrorData> {
    let span = request(telemetry, context, method, None);
    let answer = span.in_scope(answer);
    span.end(ending(&answer));
    answer
}

/// How an answer ends its span: a JSON-RPC error, a tool result with `isError`, or done.
pub(crate) fn ending<R: Answer>(answer: &Result<R, ErrorData>) -> Ending<'_> {
    match answer {
        Err(error) => Ending::Error {
            code: i64::from(error.code.0),
            message: &error.message,
        },
        Ok(answer) if answer.is_tool_error() => Ending::ToolError,
        Ok(_) => Ending::Done,
    }
}

/// An answer that may be a tool's error result.
pub(crate) trait Answer {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl Answer for CallToolResponse {
    fn is_tool_error(&self) -> bool {
        matches!(self, CallToolResponse::Complete(result) if result.is_error == Some(true))
    }
}

impl Answer for () {}

impl Answer for rmcp::model::GetTaskResult {}
