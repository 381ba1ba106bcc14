//! The example MCP servers of mcp-tasks, and the code they share.
//!
//! - [`tools`]: the example tools and their handlers, written once for every transport and
//!   both generations of MCP tasks.
//! - [`fixtures`]: the fixture tools of the official conformance suite's `tasks-*`
//!   scenarios, registered beside the example tools.
//! - [`claims`]: the claim loop that runs again, here, the redeliverable tasks of
//!   instances that stopped (over a shared store).
//! - [`access`]: bearer-token principals, the anonymous loopback mode, allowed origins.
//! - [`framing`]: JSON-RPC 2.0 framing both transports share: which messages are valid,
//!   how invalid ones are refused, and ids echoed exactly as the client wrote them.
//! - [`outbound`]: the client's answers to the server's requests for a task's input.
//! - [`server`]: the request routing over any transport, for both generations.
//! - [`headers`]: the `Mcp-Method` / `Mcp-Name` request headers checked against the body.
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
pub mod fixtures;
pub mod framing;
pub mod headers;
pub mod outbound;
pub mod server;
pub mod telemetry;
pub mod tools;
