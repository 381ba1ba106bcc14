//! The example server of `servers/` served by rmcp 3.x over stdio: the tools are the
//! library's example tools (`mcp_tasks_servers::tools`), written once and run here by rmcp
//! through `mcp_tasks_rmcp::TaskManager`.
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp --example rmcp_stdio [-- --store URL] [--conformance]
//! ```
//!
//! Tools: `sleep {ms}`, `fail`, `crash`, `confirm {question}` (asks for input), `echo
//! {text}` (never a task); with `--conformance` the conformance suite's fixtures, with
//! `MCP_TASKS_TEST_TOOLS=1` the test-only tools. A client that declares
//! `io.modelcontextprotocol/tasks` gets a task for every call that may be one; any other
//! gets the result at once. The owner of every task is this connection. Over a shared
//! store (`--store redis://…`, feature `redis`; `postgres://…`, feature `postgres`) it
//! claims the tasks of stopped instances, and when stdin closes it hands its running
//! redeliverable tasks over.

mod common;

use std::process::ExitCode;
use std::time::Duration;

use mcp_tasks_server::telemetry::Transport;
use rmcp::ServiceExt;

/// How long running tasks may take to finish once stdin closed.
const GRACE: Duration = Duration::from_secs(1);

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = common::observe(Transport::Stdio);
    let tasks = match common::tasks("rmcp_stdio", std::env::args().skip(1).collect()) {
        Ok(tasks) => tasks,
        Err(common::Stop(status, why)) => {
            eprintln!("rmcp_stdio: {why}");
            return status;
        }
    };
    let served = match tasks.clone().serve(rmcp::transport::stdio()).await {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|err| err.to_string()),
        Err(err) => Err(err.to_string()),
    };
    let ended = tasks.shut_down(GRACE).await;
    if !ended.handed_over.is_empty() || !ended.failed.is_empty() {
        log::warn!(
            "stdin closed: {} task(s) handed over, {} failed",
            ended.handed_over.len(),
            ended.failed.len()
        );
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("rmcp_stdio: {why}");
            ExitCode::FAILURE
        }
    }
}
