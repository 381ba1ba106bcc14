//! # mcp-tasks-rmcp
//!
//! The tools of a [`mcp_tasks_server`] server, served by [rmcp] 3.x: rmcp is one more
//! transport of the server library. A tool is written once, as for the library's own
//! stdio and Streamable HTTP servers — `Tool::new(..).run(handler)`, a handler an async
//! (or blocking) function of a [`Context`](mcp_tasks_server::Context) and its typed
//! arguments — and runs under rmcp unchanged: as a durable task in the server's store
//! (the in-process registry, Redis, PostgreSQL), with input, checkpoints, cancellation
//! and redelivery, or at once with its progress and log messages sent through rmcp's peer.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use mcp_tasks_rmcp::TaskManager;
//! use mcp_tasks_server::{Context, Exit, Server, TaskSupport, Tool};
//! use rmcp::ServiceExt;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Count {
//!     /// How far to count.
//!     to: u32,
//! }
//!
//! /// Written once: the library's own transports and rmcp run it alike.
//! async fn count(ctx: Context, Count { to }: Count) -> Result<String, Exit> {
//!     for _ in 0..to {
//!         ctx.sleep(Duration::from_secs(1)).await?; // a cancel ends it here
//!     }
//!     Ok(format!("counted to {to}"))
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let count = Tool::new("count").task_support(TaskSupport::Optional).run(count);
//!     let server = Server::builder().name("counter", "1.0.0").tool(count).build()?;
//!     // rmcp serves it (here over stdio; the library's own: `server.serve_stdio()`).
//!     let running = TaskManager::new(server).serve(rmcp::transport::stdio()).await?;
//!     running.waiting().await?;
//!     Ok(())
//! }
//! ```
//!
//! # The surface
//! [`TaskManager`] holds the [`Server`](mcp_tasks_server::Server) and is an rmcp
//! `ServerHandler` itself: `get_info` and `initialize` declare what the server's
//! `server/discover` and `initialize` do, and `tools/list`, `tools/call`, `tasks/get`,
//! `tasks/update`, `tasks/cancel`, and the methods the application added to the server
//! (prompts, resources, completion, `logging/setLevel`, others through
//! `on_custom_request`) are answered by the server's routing. An application with a
//! handler of its own keeps a `TaskManager` in a field and writes the tool and task
//! methods with [`task_handlers!`]; each method is also a method of the manager, taking
//! rmcp's typed params.
//!
//! A request is converted to the JSON the library routes (rmcp's typed params, with the
//! `_meta` rmcp keeps in the request's context), and the answer back to rmcp's type. A
//! task's handler is started on the tokio runtime as the `CreateTaskResult` goes back;
//! a call running at once runs in the request's own task (blocking handlers on the
//! blocking pool), and what it sends its client goes out through rmcp's peer, in order,
//! before its answer.
//!
//! # Generations
//! rmcp 3.x serves the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) and
//! no 2025-11-25 tasks (its `tools/call` params have no `task`). A request rmcp reads as
//! 2026-07-28 (`server/discover` lifecycle, or its `_meta`) is routed as one: a tool runs
//! as a task when the request declared the extension, in input rounds (SEP-2322) when it
//! asks at once. A 2025-11-25 session's calls run at once (a tool that needs a task is
//! refused there); their progress, log messages, sampling and elicitation requests go to
//! the client through rmcp's peer.
//!
//! # Owners
//! A task belongs to the owner of the request that made it: the request's [`Principal`]
//! (put there by an authentication layer in front of rmcp's Streamable HTTP service),
//! else its HTTP session, else the connection (a stdio server's one client). Another
//! owner's `tasks/get`, `tasks/update` or `tasks/cancel` gets `-32602`, exactly as for an
//! unknown id. A Streamable HTTP service factory returns
//! [`TaskManager::for_session`]: without a principal, 2026-07-28 requests carry no
//! session, and all fall to the one connection owner.
//!
//! # Redelivery and shutdown
//! Over a store shared by several instances (a `redis://` or `postgres://` store URL), a
//! tool declared redeliverable ([`ToolBuilder::redelivery`](mcp_tasks_server::ToolBuilder::redelivery))
//! runs again on another instance when the one running it stops, from its last
//! checkpoint: [`TaskManager::new`] starts the claim loop, which claims the tasks of
//! stopped instances and runs them on the runtime. On a graceful shutdown,
//! [`TaskManager::shut_down`] stops claiming, lets the running tasks finish for a grace
//! period, hands the redeliverable ones over and fails the others;
//! [`TaskManager::hand_over_running`] only hands over. The guarantee is the library's:
//! at least once per attempt, exactly one final result.
//!
//! # Telemetry
//! With the feature `otel`, the library's spans and metrics
//! ([`mcp_tasks_server::telemetry`]): a span per request following the MCP semantic
//! conventions, the child of the context the client sent in `_meta`, and each run of a
//! task an `execute_tool` span in that trace, also on another instance.
//!
//! # `subscriptions/listen`
//! rmcp 3.11 drops `notifications.taskIds` when it reads a listen request and cannot send
//! `notifications/tasks`: `subscriptions/listen` stays rmcp's `-32601`, and clients poll
//! `tasks/get` (see the README).
#![deny(missing_docs)]

mod convert;
mod handler;
mod manager;
mod owner;
mod peer;
mod work;

pub use manager::TaskManager;
pub use owner::Principal;

/// The crates this one is written against, for the macro and for users.
pub use {mcp_tasks_server, rmcp};

/// Writes the tool and task methods of an `rmcp::ServerHandler` inside its `impl`
/// (`get_tool`, `list_tools`, `call_tool`, `get_task`, `update_task`, `cancel_task`),
/// answering them from the [`TaskManager`] in the named field of `self`:
///
/// ```no_run
/// use mcp_tasks_rmcp::TaskManager;
/// use rmcp::ServerHandler;
/// use rmcp::model::ServerConfig;
///
/// #[derive(Clone)]
/// struct App {
///     tasks: TaskManager,
/// }
///
/// impl ServerHandler for App {
///     fn get_info(&self) -> ServerConfig {
///         self.tasks.info()
///     }
///
///     mcp_tasks_rmcp::task_handlers!(tasks);
/// }
/// ```
#[macro_export]
macro_rules! task_handlers {
    ($field:ident) => {
        fn get_tool(&self, name: &str) -> ::std::option::Option<$crate::rmcp::model::Tool> {
            self.$field.tool(name)
        }

        async fn list_tools(
            &self,
            request: ::std::option::Option<$crate::rmcp::model::PaginatedRequestParams>,
            context: $crate::rmcp::service::RequestContext<$crate::rmcp::service::RoleServer>,
        ) -> ::std::result::Result<$crate::rmcp::model::ListToolsResult, $crate::rmcp::ErrorData> {
            self.$field.list_tools(request, &context).await
        }

        async fn call_tool(
            &self,
            request: $crate::rmcp::model::CallToolRequestParams,
            context: $crate::rmcp::service::RequestContext<$crate::rmcp::service::RoleServer>,
        ) -> ::std::result::Result<$crate::rmcp::model::CallToolResponse, $crate::rmcp::ErrorData> {
            self.$field.call_tool(request, &context).await
        }

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
