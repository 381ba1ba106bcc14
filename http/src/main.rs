//! `mcp_http`: the example MCP server over Streamable HTTP: the example tools
//! (`mcp_tasks_servers::tools`) served as MCP tasks by the server library, both generations
//! of MCP tasks on one endpoint, `/mcp`.
//!
//! ```text
//! MCP_TASKS_TOKENS='alice=token-a,bob=token-b' cargo run -p mcp-tasks-http
//! MCP_TASKS_TOKENS='alice=token-a' cargo run -p mcp-tasks-http --features redis -- --store redis://127.0.0.1:6379
//! ```
//!
//! Everything it does is the library's (`mcp_tasks_server::http`): sessions and SSE on
//! 2025-11-25, the stateless 2026-07-28 wire with `subscriptions/listen`, bearer-token
//! principals, the checks and limits before anything is read, graceful shutdown with
//! hand-over on SIGTERM or SIGINT. This program reads its settings from the environment
//! and its command line:
//!
//! - `MCP_TASKS_HTTP_ADDR` (default `127.0.0.1:8808`, port 0 picks one); the first stdout
//!   line is `listening on http://ADDR/mcp`;
//! - the principals, origins, limits and message trace: `mcp_tasks_server::http::Http::from_env`
//!   (`MCP_TASKS_TOKENS`, `MCP_TASKS_TOKENS_FILE`, `MCP_TASKS_ANONYMOUS=1`,
//!   `MCP_TASKS_ALLOWED_ORIGINS`, `MCP_TASKS_MAX_CONNECTIONS`, `MCP_TASKS_MAX_BODY_BYTES`,
//!   `MCP_TASKS_PRINCIPAL_REQUESTS`, `MCP_TASKS_HEADER_TIMEOUT_MS`,
//!   `MCP_TASKS_BODY_TIMEOUT_MS`, `MCP_TASKS_SHUTDOWN_MS`, `MCP_TASKS_TRACE_DIR`);
//! - the operator's console (`mcp_tasks_server::http::admin`), off unless
//!   `MCP_TASKS_ADMIN_ADDR` is set: its admin tokens `MCP_TASKS_ADMIN_TOKENS` (or
//!   `MCP_TASKS_ADMIN_TOKENS_FILE`), `MCP_TASKS_ADMIN_ALLOWED_ORIGINS`; the second stdout
//!   line is then `operator's console on http://ADDR/`;
//! - the store and the server's settings: `--store URL` (or `MCP_TASKS_STORE`; also
//!   `--redis URL`, `--postgres URL`), `--conformance`, and `mcp_tasks_server::settings`
//!   (leases, outages, limits on stored tasks, the `requestState` key);
//! - telemetry: `OTEL_EXPORTER_OTLP_*` (spans and metrics over OTLP), and
//!   `MCP_TASKS_PROMETHEUS=1` (`GET /metrics`, behind the same checks as `/mcp`);
//! - `RUST_LOG` (default `info`); `RUST_LOG=mcp_tasks_server::http::request=debug` logs
//!   one line per request.

use std::io::Write;
use std::process::ExitCode;

use mcp_tasks_server::http::{self, ADDR_ENV, DEFAULT_ADDR, Http};
use mcp_tasks_server::telemetry::{self, Transport};
use mcp_tasks_servers::example::{self, Options};

/// mimalloc rather than the system allocator: a request allocates (its message, its
/// answer, hyper's buffers), and on the wire benchmark mimalloc spends less CPU per request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    example::main("mcp_http", run)
}

fn run() -> Result<(), String> {
    // Before the server: it observes with what this installs (flushed when `run` returns).
    let telemetry = telemetry::init(Transport::Http);
    if telemetry.exporting() {
        log::info!("{}", telemetry.describe());
    }
    let addr = std::env::var(ADDR_ENV).unwrap_or_else(|_| DEFAULT_ADDR.to_owned());
    let settings = Http::from_env(&addr)?;
    let options = Options::parse("mcp_http", std::env::args().skip(1))?;
    http::raise_descriptor_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mcp-http")
        .build()
        .map_err(|err| format!("cannot start the runtime: {err}"))?;
    runtime.block_on(async move {
        let server = options.build().map_err(|err| err.to_string())?;
        let listener = http::bind(&addr)
            .await
            .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
        let bound = listener
            .local_addr()
            .map_or_else(|_| addr.clone(), |addr| addr.to_string());
        // Listened for before the line below: a signal right after it shuts down gracefully.
        let signal = http::shutdown_signal();
        let mut served = server.into_http(settings);
        let admin = served
            .bind_admin()
            .await
            .map_err(|err| format!("cannot listen for the operator's console: {err}"))?;
        println!("listening on http://{bound}{}", http::ENDPOINT);
        if let Some(admin) = admin {
            println!("operator's console on http://{admin}/");
        }
        let _ = std::io::stdout().flush();
        served
            .serve_until(listener, signal)
            .await
            .map_err(|err| err.to_string())
    })?;
    // The handlers still running as futures are not dropped: their tasks were handed over
    // or failed at shutdown, and a dropped handle would abandon its task (fenced, but a
    // task handed over keeps its attempt until claimed). The process ends now anyway.
    std::mem::forget(runtime);
    Ok(())
}
