//! The example MCP servers of mcp-tasks, built on the server library (`mcp-tasks-server`)
//! and its public API only.
//!
//! - [`tools`]: the example tools (`sleep`, `fail`, `crash`, `confirm`, `echo`) and the
//!   test-only ones, as tool values.
//! - [`example`]: the example servers' command line, shared by `stdio_server` and
//!   `mcp_http`: the store, `--conformance`, the test tools.
//! - [`child`]: a server process driven over its pipes, for the tests.
//! - `src/bin/stdio_server.rs` (`cargo run --bin stdio_server`): the stdio example. The
//!   Streamable HTTP example is `mcp_http`, in the repository's `http/` crate:
//!   `cargo run -p mcp-tasks-http`.

#![deny(missing_docs)]

pub mod child;
pub mod example;
pub mod tools;
