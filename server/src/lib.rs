//! # mcp-tasks-server
//!
//! An MCP server for your own tools, each call of which may run as a durable MCP *task*:
//! typed handlers, both generations of MCP tasks (2025-11-25 and the 2026-07-28 tasks
//! extension, with `subscriptions/listen` and input rounds), stdio and Streamable HTTP,
//! tasks in this process or in Redis or PostgreSQL, redelivered on another instance when
//! the one running them stops.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use mcp_tasks_server::{Context, Exit, Server, TaskSupport, Tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Count {
//!     /// How far to count.
//!     to: u32,
//! }
//!
//! #[derive(Serialize, Deserialize)]
//! struct Progress {
//!     done: u32,
//! }
//!
//! /// Counts slowly; a run on another instance goes on from the last number saved.
//! async fn count(ctx: Context, Count { to }: Count) -> Result<String, Exit> {
//!     let from = ctx.checkpoint::<Progress>()?.map_or(0, |progress| progress.done);
//!     for done in from..to {
//!         ctx.sleep(Duration::from_secs(1)).await?; // a cancel ends it here
//!         ctx.save_checkpoint(&Progress { done: done + 1 })?;
//!     }
//!     Ok(format!("counted to {to}"))
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let count = Tool::new("count")
//!         .description("Counts to `to`, a second a number")
//!         .task_support(TaskSupport::Optional)
//!         .redelivery(3)
//!         .run(count);
//!     Server::builder().name("counter", "1.0.0").tool(count).build()?.serve_stdio()?;
//!     Ok(())
//! }
//! ```
//!
//! # Handlers
//! A handler is an async function (or, with [`ToolBuilder::run_blocking`], a blocking
//! one) of a [`Context`] and the tool's arguments, a type that derives
//! `serde::Deserialize` and `schemars::JsonSchema`: the input schema `tools/list` shows is
//! derived from it, and arguments that do not fit are refused with `-32602` naming the
//! field before the handler runs. It answers `Result<R, Exit>`: `R` is a [`ToolResult`],
//! a `String`, [`Structured<T>`] or [`Settled`] ([`IntoToolResult`]); the context
//! finishes the task with it. An [`Exit`] is how it ends otherwise: cancelled, stopped
//! (the task is no longer its own), or a JSON-RPC error; every error converts into one
//! with `?`. A handler that panics fails its task with `-32603`, and the server goes on.
//!
//! The context does the races: [`Context::ask`] and [`Context::elicit`] ask the requestor
//! for input and wait for the answer (checked against the question) or exit on a cancel,
//! a superseded attempt or the answer deadline; [`Context::sleep`] and
//! [`Context::until_cancelled`] race the work with a cancel;
//! [`Context::save_checkpoint`] saves progress for the next attempt
//! ([`Context::checkpoint`]). A requestor's cancel settles the task `cancelled` even if
//! the handler never looks, and its late result is refused. A handler that drives the
//! statuses itself takes the typed handle ([`Context::take_handle`]): the typestate of
//! `mcp-tasks` holds there, and it answers [`Settled`], which only a finished task makes.
//!
//! # Serving
//! [`Server::builder`] takes the tools, the store (the in-process registry by default,
//! any [`TaskStore`](mcp_tasks::TaskStore), or a URL: [`ServerBuilder::store_url`]),
//! methods of the application's own ([`ServerBuilder::method`]: prompts, resources), and
//! settings read from the environment only when the program asks
//! ([`Settings::from_env`]). It refuses, when built, two tools with one name, a name MCP
//! does not allow, or a redeliverable tool that never runs as a task ([`BuildError`]).
//! Transports: [`Server::serve_stdio`] (or any pair of streams, [`Server::serve_lines`]).
//!
//! # Modules
//! - [`tool`], [`context`], [`result`], [`handler`]: tools, what their handlers see and
//!   answer.
//! - [`server`]: the request routing of both generations; [`builder`]: building a server.
//! - [`stdio`]: the stdio transport; `http` (feature `http`): Streamable HTTP.
//! - [`store_url`], [`settings`]: stores named by URL, settings from the environment.
//! - [`listen`], [`mrtr`], [`answers`]: `subscriptions/listen`, input rounds, answers
//!   checked against their questions.
//! - [`claims`], [`work`], [`running`]: the claim loop of redelivered tasks, where
//!   handlers run, and the tasks running here, ended when a transport shuts down.
//! - [`access`], [`framing`], `headers` (feature `http`), [`outbound`], [`peer`]: what
//!   transports share.
//! - [`telemetry`]: spans and metrics through OpenTelemetry (feature `otel`).
//! - [`testing`]: a server driven in process, for tests of your tools.

#![deny(missing_docs)]

pub mod access;
pub mod answers;
pub mod builder;
pub mod claims;
pub mod context;
pub mod framing;
pub mod handler;
#[cfg(feature = "http")]
pub mod headers;
#[cfg(feature = "http")]
pub mod http;
pub mod listen;
mod merged;
pub mod mrtr;
pub mod outbound;
pub mod peer;
pub mod result;
mod runner;
pub mod running;
pub mod server;
pub mod settings;
pub mod stdio;
pub mod store_url;
pub mod telemetry;
pub mod testing;
pub mod tool;
pub mod work;

pub use builder::{BuildError, ServerBuilder};
pub use context::{Context, Elicited, Exit};
pub use handler::{Arguments, BlockingHandler, Handler, NoArguments};
pub use result::{IntoToolResult, Settled, Structured, ToolResult};
pub use server::{Generation, Server, Store};
pub use settings::Settings;
pub use stdio::Stdio;
pub use tool::{TaskSupport, Tool, ToolBuilder, ToolError};
pub use work::block_on;

/// The crates this one is written against, for users who need their types.
pub use {mcp_tasks, schemars, serde_json};

/// The Redis store (feature `redis`), for users who build it themselves.
#[cfg(feature = "redis")]
pub use mcp_tasks_redis;

/// The PostgreSQL store (feature `postgres`), for users who build it themselves.
#[cfg(feature = "postgres")]
pub use mcp_tasks_postgres;

/// The SQLite store (feature `sqlite`), for users who build it themselves.
#[cfg(feature = "sqlite")]
pub use mcp_tasks_sqlite;

/// The README and the documentation pages of the repository (`docs/`), their code compiled
/// and run as doctests; only inside the repository (`build.rs`). The pages that show
/// Streamable HTTP need the feature `http`.
#[cfg(all(doctest, repository_docs))]
mod pages {
    /// README.md: the first task server, the core in brief.
    #[cfg(feature = "http")]
    #[doc = include_str!("../../README.md")]
    pub struct Readme;

    /// docs/tools.md: writing tools.
    #[cfg(feature = "http")]
    #[doc = include_str!("../../docs/tools.md")]
    pub struct Tools;

    /// docs/serving.md: stdio, Streamable HTTP, settings.
    #[cfg(feature = "http")]
    #[doc = include_str!("../../docs/serving.md")]
    pub struct Serving;

    /// docs/clients.md: the official SDKs' clients.
    #[doc = include_str!("../../docs/clients.md")]
    pub struct Clients;

    /// docs/input-rounds.md: input without a task.
    #[doc = include_str!("../../docs/input-rounds.md")]
    pub struct InputRounds;

    /// docs/generations.md: the two generations of MCP tasks.
    #[doc = include_str!("../../docs/generations.md")]
    pub struct Generations;

    /// docs/listen.md: listening instead of polling.
    #[doc = include_str!("../../docs/listen.md")]
    pub struct Listen;

    /// docs/redelivery.md: redelivery and operations.
    #[doc = include_str!("../../docs/redelivery.md")]
    pub struct Redelivery;

    /// docs/operations-console.md: the operations console.
    #[doc = include_str!("../../docs/operations-console.md")]
    pub struct OperationsConsole;

    /// docs/stores.md: choosing a store.
    #[doc = include_str!("../../docs/stores.md")]
    pub struct Stores;

    /// docs/backend.md: writing a backend.
    #[doc = include_str!("../../docs/backend.md")]
    pub struct Backend;

    /// docs/telemetry.md: spans and metrics.
    #[doc = include_str!("../../docs/telemetry.md")]
    pub struct Telemetry;

    /// docs/security.md.
    #[doc = include_str!("../../docs/security.md")]
    pub struct Security;

    /// docs/performance.md: the measured tables.
    #[doc = include_str!("../../docs/performance.md")]
    pub struct Performance;

    /// docs/interop.md: the interop and conformance suites.
    #[doc = include_str!("../../docs/interop.md")]
    pub struct Interop;

    /// docs/testing.md: tests and snapshots.
    #[doc = include_str!("../../docs/testing.md")]
    pub struct Testing;

    /// docs/rmcp.md: rmcp servers.
    #[doc = include_str!("../../docs/rmcp.md")]
    pub struct Rmcp;

    /// docs/spec.md: which spec.
    #[doc = include_str!("../../docs/spec.md")]
    pub struct Spec;

    /// docs/layout.md: the repository's layout.
    #[doc = include_str!("../../docs/layout.md")]
    pub struct Layout;
}
