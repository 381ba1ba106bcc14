//! The example MCP server over stdio: the example tools (`mcp_tasks_servers::tools`) served
//! as MCP tasks by the server library, both generations of MCP tasks on one channel.
//!
//! ```text
//! cargo run --bin stdio_server
//! cargo run -p mcp-tasks-servers --features redis --bin stdio_server -- --store redis://127.0.0.1:6379
//! ```
//!
//! Tools: `sleep` {ms}, `fail` {} (a tool error) and `crash` {} (a JSON-RPC error), task
//! optional; `confirm` {question} (task required; asks the user for input); `echo` {text}
//! (never a task). With `--conformance` (or `MCP_TASKS_CONFORMANCE=1`), the official
//! conformance suite's fixture tools too.
//!
//! The store: `--store URL` (or `MCP_TASKS_STORE`; also `--redis URL`, `--postgres URL`,
//! `MCP_TASKS_REDIS_URL`, `MCP_TASKS_POSTGRES_URL`), with the cargo feature of its backend
//! (`redis`, `postgres`); the tasks live in this process otherwise. Over a shared store the
//! server claims and runs again the redeliverable tasks (`sleep`, `confirm`) of instances
//! that stopped. A store that cannot be opened is one line on stderr and exit status 1.
//! The other settings of the environment: `mcp_tasks_server::settings` (the store's
//! leases, outages and limits, the `requestState` key, the page size) and
//! `mcp_tasks_server::stdio` (`MCP_TASKS_OWNER`, the requestor; `MCP_TASKS_TRACE=<file>`,
//! a trace of every message). With the `otel` feature it exports spans and metrics over
//! OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. Logs go to stderr (`RUST_LOG`).

use std::process::ExitCode;

use mcp_tasks_server::Stdio;
use mcp_tasks_server::telemetry::{self, Transport};
use mcp_tasks_servers::example::{self, Options};

fn main() -> ExitCode {
    example::main("stdio_server", run)
}

fn run() -> Result<(), String> {
    // Spans and metrics over OTLP when the OTEL_EXPORTER_OTLP_* variables ask for it
    // (feature `otel`), flushed when `run` returns.
    let telemetry = telemetry::init(Transport::Stdio);
    if telemetry.exporting() {
        log::info!("{}", telemetry.describe());
    }
    let options = Options::parse("stdio_server", std::env::args().skip(1))?;
    let stdio = Stdio::from_env()?;
    let server = options.build().map_err(|err| err.to_string())?;
    log::info!("ready (MCP 2025-11-25 and 2026-07-28 over stdio)");
    server
        .serve_stdio_with(stdio)
        .map_err(|err| format!("stdio: {err}"))?;
    log::info!("stdin closed, shut down");
    Ok(())
}
