//! What both rmcp examples do first: their log on stderr, telemetry, and the example
//! server of `servers/` (`mcp_tasks_servers::example`: the example tools, the test-only
//! ones with `MCP_TASKS_TEST_TOOLS=1`, the conformance fixtures with `--conformance`, the
//! store from `--store URL`), served through a `TaskManager`.

use std::process::ExitCode;

use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::telemetry::{self, Guard, Transport};
use mcp_tasks_servers::example::Options;

/// Why an example stops before serving: its message and exit status.
pub struct Stop(pub ExitCode, pub String);

/// Starts the log (`RUST_LOG`, warnings by default) and the telemetry (OTLP when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, with the `otel` feature: flushed when the guard
/// drops).
pub fn observe(transport: Transport) -> Guard {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .target(env_logger::Target::Stderr)
        .init();
    let telemetry = telemetry::init(transport);
    if telemetry.exporting() {
        log::warn!("{}", telemetry.describe());
    }
    telemetry
}

/// The example server that `args` (the command line left to the example options) ask
/// for, as an rmcp server. Call it on the runtime: over a shared store the claim loop
/// starts on it.
pub fn tasks(program: &str, args: Vec<String>) -> Result<TaskManager, Stop> {
    let options = Options::parse(program, args).map_err(|why| Stop(ExitCode::from(2), why))?;
    let server = options
        .build()
        .map_err(|err| Stop(ExitCode::FAILURE, err.to_string()))?;
    Ok(TaskManager::new(server))
}
