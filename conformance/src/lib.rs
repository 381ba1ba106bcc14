//! The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! registered on a server through the server library's public API ([`register`]): tools
//! written as any user's tools are, one prompt, and the empty resource lists.
//! `interop/conformance/README.md` gives each one's contract as the scenarios read it.
//!
//! - [`tasks`]: the fixtures of the `tasks-*` scenarios (`greet`, `slow_compute`,
//!   `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
//!   `test_tool_with_task`) and the diagnostic ones of the transport scenarios
//!   (`test_simple_text`, listed first, `test_reconnection`, `test_custom_header`, ...).
//! - [`core`]: what the suite expects of any tools server (content blocks, a tool error,
//!   progress, logging, sampling, elicitation, a JSON Schema 2020-12 input schema).
//! - [`input`]: the fixtures of the `input-required-result-*` scenarios (SEP-2322, input
//!   rounds on 2026-07-28), and their prompt.
//! - [`resources`]: no resources, said as the `caching` and `sep-2164-*` scenarios expect.
//!
//! ```
//! use mcp_tasks_server::Server;
//!
//! let server = mcp_tasks_conformance::register(Server::builder()).build();
//! assert!(server.is_ok());
//! ```

#![deny(missing_docs)]

pub mod core;
pub mod input;
pub mod resources;
pub mod tasks;

mod read;

use mcp_tasks_server::ServerBuilder;

/// What a server serving the fixtures tells a client it is about (it replaces the
/// instructions set before [`register`]).
pub const INSTRUCTIONS: &str = "An example of MCP tasks, serving the conformance \
     suite's fixture tools too. Tools: sleep, fail, crash (task optional), confirm (task \
     only; asks the user for input), echo (never a task). Fixtures: greet (never a task), \
     slow_compute, protocol_error_job (task optional), failing_job, confirm_delete, \
     multi_input, test_tool_with_task (task only); test_simple_text, test_reconnection, \
     test_missing_capability, test_streaming_elicitation, test_logging_tool, \
     test_custom_header, test_input_required_result_* (never a task); prompt \
     test_input_required_result_prompt.";

/// Adds the fixtures to `builder`: the tools, in the order `tools/list` shows them
/// ([`tasks`] first, `test_simple_text` leading, then [`core`], then [`input`]), before
/// whatever tools are added after; `logging/setLevel` and the `logging` capability (for
/// `test_tool_with_logging`); the prompt of [`input`] and the empty [`resources`], with
/// the `prompts` and `resources` capabilities; and the [`INSTRUCTIONS`].
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder = builder
        .instructions(INSTRUCTIONS)
        .logging()
        .tools(tasks::tools())
        .tools(core::tools())
        .tools(input::tools());
    resources::register(input::register_prompt(builder))
}
