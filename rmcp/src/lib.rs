//! # mcp-tasks-rmcp
//!
//! [mcp-tasks](mcp_tasks) as the task store of [rmcp] 3.x servers: what
//! `rmcp::task_manager` gives (the 2026-07-28 tasks extension
//! `io.modelcontextprotocol/tasks`), on any [`TaskStore`](mcp_tasks::TaskStore) — the
//! in-process [`TaskRegistry`](mcp_tasks::TaskRegistry), or `RedisTaskStore` (feature
//! `redis`) shared by several server instances — with owner isolation and the core's
//! typed task handles.
//!
//! The names are rmcp's: [`TaskManager`], [`TaskContext`] (`request_input`,
//! `cancelled`, `is_cancel_requested`, `set_status_message`), [`TaskExit`],
//! [`TaskOptions`], [`TaskFuture`].
//!
//! ```no_run
//! use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions, text_result};
//! use rmcp::model::*;
//! use rmcp::service::{RequestContext, RoleServer};
//! use rmcp::{ErrorData, ServerHandler};
//!
//! #[derive(Clone, Default)]
//! struct Server {
//!     tasks: TaskManager,
//! }
//!
//! impl ServerHandler for Server {
//!     async fn call_tool(
//!         &self,
//!         _request: CallToolRequestParams,
//!         context: RequestContext<RoleServer>,
//!     ) -> Result<CallToolResponse, ErrorData> {
//!         // A task if the client declared the extension, else inline.
//!         self.tasks
//!             .call_tool(&context, TaskOptions::new(), |ctx| {
//!                 Box::pin(async move {
//!                     tokio::select! {
//!                         _ = ctx.cancelled() => Err(TaskExit::Cancelled),
//!                         _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {
//!                             Ok(text_result("done", false))
//!                         }
//!                     }
//!                 })
//!             })
//!             .await
//!     }
//!
//!     // tasks/get, tasks/update and tasks/cancel, from the store, per owner.
//!     mcp_tasks_rmcp::task_handlers!(tasks);
//!
//!     fn get_info(&self) -> ServerConfig {
//!         ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
//!     }
//! }
//! ```
//!
//! # Owners
//! A task belongs to the owner of the request that made it: the request's [`Principal`]
//! (put there by an authentication layer in front of rmcp's Streamable HTTP service),
//! else its HTTP session, else the connection (a stdio server's one client). Another
//! owner's `tasks/get`, `tasks/update` or `tasks/cancel` gets `-32602`, exactly as for an
//! unknown id.
//!
//! Over Streamable HTTP without an authentication layer, 2026-07-28 requests carry no
//! session, so they all fall to the connection owner of the handler the service factory
//! returns: with a factory that clones one handler, every such client shares one owner
//! (a single-owner server). Put a [`Principal`] on each request to keep clients apart.
//!
//! # Gating
//! rmcp refuses `tasks/*` from a request that did not declare the extension with
//! `-32021` before a handler method runs, and refuses a `CallToolResponse::Task` for
//! such a request; [`TaskManager::call_tool`] therefore runs the tool inline for it.
//!
//! # Redelivery
//! Over a store shared by several instances (`RedisTaskStore`), a tool may declare that
//! its task runs again on another instance when the one running it stops: register its
//! handler by name on every instance ([`TaskManager::register`]), start the claim loop
//! ([`TaskManager::run_claims`]), and answer its calls with
//! [`TaskManager::call_registered`] and [`TaskOptions::redeliver`]. The task stores its
//! job (the tool, its arguments, the wire generation); when its instance dies (its lease
//! lapses, and a back-off passes) or hands it over on shutdown
//! ([`TaskManager::hand_over_running`]), another instance claims it and runs the
//! registered handler again, with the next [`attempt`](TaskContext::attempt) and the
//! last [`checkpoint`](TaskContext::checkpoint) its handler saved
//! ([`save_checkpoint`](TaskContext::save_checkpoint)).
//!
//! The guarantee: the work runs **at least once per attempt** (an attempt whose
//! instance died after doing part of it runs again from its last checkpoint), and the
//! task has **exactly one final result** (an earlier attempt's late writes are refused).
//! So a tool may declare it only if it is safe to run again from the start or from its
//! checkpoint: idempotent, or checking what it already did. Every instance serving such a
//! tool must register the same handlers. On the in-process
//! [`TaskRegistry`](mcp_tasks::TaskRegistry) nothing is ever claimed: it behaves as
//! without redelivery.
//!
//! # Telemetry
//! [`TaskManager::with_telemetry`] records, through OpenTelemetry (`mcp_tasks_otel`, on
//! the API: the application installs the SDK), a span per `tools/call`, `tasks/get`,
//! `tasks/update` and `tasks/cancel` following the MCP semantic conventions, the child of
//! the context the client sent in `_meta`; the task keeps the `tools/call` span's context
//! ([`TaskRequest::with_trace_context`](mcp_tasks::TaskRequest::with_trace_context)), and
//! each run of its operation is an `execute_tool` span in that trace, also when another
//! instance claims it. [`TaskOptions::for_tool`] names the tool of a
//! [`call_tool`](TaskManager::call_tool). The examples export over OTLP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! # Waits
//! Waiting for input and for a cancel request awaits the core's runtime-free futures
//! (`TaskStore::wait_for_input_async`, `TaskStore::wait_for_cancel_async`): a pending wait
//! holds no thread, and dropping it deregisters it.
#![deny(missing_docs)]

mod context;
mod convert;
mod manager;
mod owner;
mod redeliver;
mod telemetry;
mod wait;

pub use context::{TaskContext, TaskExit, TaskFuture};
pub use manager::{
    AnswerCheck, DEFAULT_POLL_INTERVAL_MS, DEFAULT_TASK_TTL_MS, TaskManager, TaskOptions, complete,
    declares_tasks, text_result, tool_result, without_tasks_extension,
};
pub use owner::Principal;

/// The crates this one is written against, for the macro and for users.
pub use {mcp_tasks, mcp_tasks_otel, rmcp};

/// Writes the three task methods of an `rmcp::ServerHandler` (`get_task`, `update_task`,
/// `cancel_task`) inside its `impl`, answering them from the [`TaskManager`] in the
/// named field of `self`: `mcp_tasks_rmcp::task_handlers!(tasks);`.
#[macro_export]
macro_rules! task_handlers {
    ($field:ident) => {
        async fn get_task(
            &self,
            request: $crate::rmcp::model::GetTaskParams,
            context: $crate::rmcp::service::RequestContext<$crate::rmcp::service::RoleServer>,
        ) -> ::std::result::Result<$crate::rmcp::model::GetTaskResult, $crate::rmcp::ErrorData> {
            self.$field.get_task(request, &context).await
        }

        async fn update_task(
            &self,
            request: $crate::rmcp::model::UpdateTaskParams,
            context: $crate::rmcp::service::RequestContext<$crate::rmcp::service::RoleServer>,
        ) -> ::std::result::Result<(), $crate::rmcp::ErrorData> {
            self.$field.update_task(request, &context).await
        }

        async fn cancel_task(
            &self,
            request: $crate::rmcp::model::CancelTaskParams,
            context: $crate::rmcp::service::RequestContext<$crate::rmcp::service::RoleServer>,
        ) -> ::std::result::Result<(), $crate::rmcp::ErrorData> {
            self.$field.cancel_task(request, &context).await
        }
    };
}
