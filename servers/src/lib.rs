//! The example MCP servers of mcp-tasks, and the code they share.
//!
//! - [`tools`]: the example tools and their handlers, written once for every transport and
//!   both generations of MCP tasks.
//! - [`fixtures`]: the fixture tools of the official conformance suite's `tasks-*`
//!   scenarios, registered beside the example tools.
//! - [`mrtr`]: input before (or without) a task on the 2026-07-28 wire (SEP-2322): the
//!   rounds of `InputRequiredResult` and retry, and the `requestState` key.
//! - [`input_fixtures`]: the fixtures of the suite's `input-required-result-*` scenarios.
//! - [`core_fixtures`]: the fixture tools the suite expects of any tools server (content
//!   blocks, progress, logging, sampling, elicitation), served with the fixtures.
//! - [`peer`]: what a tool running inline may send its client while it runs (progress, log
//!   messages, requests), and `logging/setLevel`.
//! - [`work`]: a task's handler as a transport starts it: blocking, or a future that holds
//!   no thread while it waits.
//! - [`claims`]: the claim loop that runs again, here, the redeliverable tasks of
//!   instances that stopped (over a shared store).
//! - [`access`]: bearer-token principals, the anonymous loopback mode, allowed origins.
//! - [`framing`]: JSON-RPC 2.0 framing both transports share: which messages are valid,
//!   how invalid ones are refused, and ids echoed exactly as the client wrote them.
//! - [`outbound`]: the client's answers to the server's requests for a task's input.
//! - [`server`]: the request routing over any transport, for both generations.
//! - [`shared`]: the stores several instances share (Redis, PostgreSQL): which one the
//!   command line and the environment name, and how it is opened.
//! - [`headers`]: the `Mcp-Method` / `Mcp-Name` request headers checked against the body.
//! - [`listen`]: `subscriptions/listen` with `notifications.taskIds` (2026-07-28): task
//!   status pushed to the client, for both transports, over the store's one subscription.
//! - [`telemetry`]: spans and metrics through OpenTelemetry (feature `otel`), following
//!   the MCP semantic conventions, with the tasks' additions.
//! - `src/bin/stdio_server.rs` (`cargo run --bin stdio_server`): the stdio transport.
//!   The Streamable HTTP transport is `mcp_http`, in the repository's `http/` crate (built
//!   on hyper 1.x and tokio, so this crate stays synchronous):
//!   `cargo run -p mcp-tasks-http`.

#![deny(missing_docs)]

pub mod access;
pub mod child;
pub mod claims;
pub mod core_fixtures;
pub mod fixtures;
pub mod framing;
pub mod headers;
pub mod input_fixtures;
pub mod listen;
pub mod mrtr;
pub mod outbound;
pub mod peer;
pub mod server;
pub mod shared;
pub mod telemetry;
pub mod tools;
pub mod work;
