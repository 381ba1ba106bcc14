//! The example MCP servers of mcp-tasks, and the code they share.
//!
//! - [`tools`]: the example tools and their handlers, written once for every transport and
//!   both generations of MCP tasks.
//! - [`server`]: the request routing over any transport, for both generations.
//! - `src/bin/stdio_server.rs` (`cargo run --bin stdio_server`) and
//!   `src/bin/http_server.rs` (`cargo run --bin http_server`): the transports.

pub mod server;
pub mod tools;
