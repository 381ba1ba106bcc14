//! The rmcp peer of the wire benchmark: an rmcp 3.11 server whose tasks live in rmcp's
//! OWN `TaskManager` (not mcp-tasks), serving `sleep {ms}` over Streamable HTTP. A
//! 2026-07-28 request that declares the tasks extension gets a task (an async sleep on
//! tokio, then the result); one that does not gets the result inline.
//!
//! ```text
//! rmcp_own_tm [--listen 127.0.0.1:0]
//! ```
//!
//! The first line on stdout is `listening on http://ADDR/mcp`. rmcp's
//! `StreamableHttpService` with its default configuration (answers as SSE; 2026-07-28
//! requests are served statelessly), on hyper as the `rmcp_http` example serves it, with
//! `TCP_NODELAY` on every accepted socket. Tasks get a 60 s TTL. No authentication:
//! every caller sees every task (rmcp's manager has no owners). Ends on SIGTERM or Ctrl-C.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, GetTaskParams, GetTaskResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use tokio::net::TcpListener;

/// The tasks' TTL: as `mcp_http`'s default and the TypeScript peer's (asked by the client).
const TTL_MS: u64 = 60_000;

/// The handler: one `TaskManager` shared by every request.
#[derive(Clone)]
struct Peer {
    tasks: TaskManager,
}

fn sleep_ms(request: &CallToolRequestParams) -> Result<u64, ErrorData> {
    if request.name != "sleep" {
        return Err(ErrorData::invalid_params(
            format!("unknown tool {}", request.name),
            None,
        ));
    }
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get("ms")?.as_u64())
        .ok_or_else(|| ErrorData::invalid_params("`sleep` needs a non-negative integer `ms`", None))
}

fn slept(ms: u64) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
}

impl ServerHandler for Peer {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ms = sleep_ms(&request)?;
        let as_task = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if !as_task {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            return Ok(CallToolResponse::Complete(slept(ms)));
        }
        // The same 60 s TTL as the other servers of the benchmark (rmcp's default is 5 min).
        let options = TaskOptions::new().with_ttl_ms(TTL_MS);
        let task = self.tasks.spawn(options, move |ctx| {
            Box::pin(async move {
                tokio::select! {
                    () = ctx.cancelled() => Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(slept(ms)),
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0}},
            "required": ["ms"]
        });
        let schema = schema.as_object().cloned().unwrap_or_default();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "sleep",
            "Sleeps ms milliseconds, then answers",
            schema,
        )]))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }
}

fn listen_addr() -> Result<SocketAddr, String> {
    let mut args = std::env::args().skip(1);
    let mut addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let text = args.next().ok_or("--listen needs an address")?;
                addr = text
                    .parse()
                    .map_err(|err| format!("--listen {text}: {err}"))?;
            }
            other => {
                return Err(format!(
                    "unknown argument {other}; usage: rmcp_own_tm [--listen ADDR]"
                ));
            }
        }
    }
    Ok(addr)
}

#[tokio::main]
async fn main() -> ExitCode {
    let addr = match listen_addr() {
        Ok(addr) => addr,
        Err(why) => {
            eprintln!("rmcp_own_tm: {why}");
            return ExitCode::from(2);
        }
    };
    let listener = match TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("rmcp_own_tm: cannot listen on {addr}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    println!("listening on http://{local}/mcp");

    let peer = Peer {
        tasks: TaskManager::new(),
    };
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(peer.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let mut stop = std::pin::pin!(shutdown());
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return ExitCode::SUCCESS,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                eprintln!("rmcp_own_tm: accept: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Fair to the peer: its SSE answers must not wait for the client's delayed ACK.
        if let Err(err) = stream.set_nodelay(true) {
            eprintln!("rmcp_own_tm: TCP_NODELAY: {err}");
        }
        let service = Arc::clone(&service);
        tokio::spawn(async move {
            let handler = service_fn(move |request| {
                let service = Arc::clone(&service);
                async move { Ok::<_, Infallible>(service.handle(request).await) }
            });
            // A client that leaves mid-answer is an ordinary end of its connection.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
