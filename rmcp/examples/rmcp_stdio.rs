//! An rmcp 3.x server over stdio whose tasks live in an mcp-tasks store.
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp --example rmcp_stdio [-- --redis URL | --postgres URL] [--conformance]
//! ```
//!
//! Tools: `sleep {ms}`, `fail`, `crash`, `confirm {question}` (asks for input), `echo
//! {text}` (never a task); with `--conformance`, the conformance suite's fixtures too. A client that declares `io.modelcontextprotocol/tasks` gets a
//! task for every call but `echo`; any other client gets the result inline. The owner of
//! every task is this connection.

mod common;

use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Spans and metrics over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let telemetry =
        mcp_tasks_servers::telemetry::init(mcp_tasks_servers::telemetry::Transport::Stdio);
    // Said only when something is exported: stderr stays quiet otherwise (a store that
    // cannot be reached at start-up is one line there).
    if telemetry.exporting() {
        eprintln!("rmcp_stdio: {}", telemetry.describe());
    }
    let (store, catalog, rest) = match common::from_args() {
        Ok(found) => found,
        Err(why) => {
            eprintln!("rmcp_stdio: {why}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(unknown) = rest.first() {
        eprintln!(
            "rmcp_stdio: unknown argument {unknown}; usage: rmcp_stdio \
             [--redis URL | --postgres URL] [--conformance]"
        );
        return std::process::ExitCode::from(2);
    }
    let server = common::ExampleServer::new(store, catalog);
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(err) => {
            eprintln!("rmcp_stdio: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Err(err) = running.waiting().await {
        eprintln!("rmcp_stdio: {err}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
