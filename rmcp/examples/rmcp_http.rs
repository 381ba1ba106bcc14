//! The example server of `servers/` served by rmcp 3.x over Streamable HTTP, with bearer
//! tokens mapped to owners: the tools are the library's example tools
//! (`mcp_tasks_servers::tools`), run by rmcp through `mcp_tasks_rmcp::TaskManager`.
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp --example rmcp_http -- \
//!     --token s3cret=alice --token other=bob [--listen 127.0.0.1:8808] \
//!     [--store URL] [--conformance]
//! cargo run -p mcp-tasks-rmcp --example rmcp_http -- --anonymous
//! ```
//!
//! The endpoint is `/mcp`. Every request needs `Authorization: Bearer <token>` for one of
//! the `--token TOKEN=OWNER` pairs (else `401`); the owner becomes the request's
//! `Principal`, so a task is visible only with a token of its owner, whichever session or
//! connection asks. `--anonymous` (or `MCP_TASKS_ANONYMOUS=1`) serves every request as the
//! one owner `anonymous`, on a loopback address only. `MCP_TASKS_HTTP_ADDR` is the default
//! of `--listen`, so the conformance runner drives it as it drives `mcp_http`. The first
//! line on stdout is `listening on http://ADDR/mcp`.
//!
//! rmcp checks a 2026-07-28 call's `Mcp-Param-*` headers against the tool's schema
//! (`TaskManager` answers rmcp's `get_tool`). Over a shared store (`--store redis://…`,
//! feature `redis`) the server claims the tasks of stopped instances; on `SIGTERM` or
//! Ctrl-C it hands its running redeliverable tasks over to the other instances, fails the
//! others, and exits.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use mcp_tasks_rmcp::Principal;
use mcp_tasks_server::access::{ANONYMOUS_ENV, Access, Tokens};
use mcp_tasks_server::telemetry::Transport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

const USAGE: &str = "usage: rmcp_http (--token TOKEN=OWNER ... | --anonymous) [--listen ADDR] \
                     [--store URL] [--conformance]";

/// How long running tasks may take to finish once asked to stop.
const GRACE: Duration = Duration::from_millis(500);

/// The address and who may call; the rest of the arguments are the example options'.
fn parse(args: impl Iterator<Item = String>) -> Result<(SocketAddr, Access, Vec<String>), String> {
    let addr = std::env::var("MCP_TASKS_HTTP_ADDR").unwrap_or_else(|_| "127.0.0.1:8808".into());
    let mut listen: SocketAddr = addr.parse().map_err(|err| format!("{addr}: {err}"))?;
    let mut anonymous = std::env::var(ANONYMOUS_ENV).is_ok_and(|value| value == "1");
    let (mut tokens, mut rest) = (Vec::new(), Vec::new());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                let addr = args.next().ok_or("--listen needs an address")?;
                listen = addr
                    .parse()
                    .map_err(|err| format!("--listen {addr}: {err}"))?;
            }
            "--token" => {
                let pair = args.next().ok_or("--token needs TOKEN=OWNER")?;
                let (token, owner) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("--token {pair}: expected TOKEN=OWNER"))?;
                tokens.push((owner.to_owned(), token.to_owned()));
            }
            "--anonymous" => anonymous = true,
            _ => rest.push(arg),
        }
    }
    let access = match (anonymous, tokens.is_empty()) {
        (true, true) if listen.ip().is_loopback() => Access::Anonymous,
        (true, true) => {
            return Err(format!(
                "--anonymous serves a loopback address only, not {listen}"
            ));
        }
        (true, false) => return Err("--anonymous and --token exclude each other".into()),
        (false, false) => Access::Tokens(Tokens::from_pairs(tokens)?),
        (false, true) => return Err(format!("no --token and no --anonymous; {USAGE}")),
    };
    Ok((listen, access, rest))
}

#[tokio::main]
async fn main() -> ExitCode {
    let _telemetry = common::observe(Transport::Http);
    let (listen, access, rest) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("rmcp_http: {why}");
            return ExitCode::from(2);
        }
    };
    let tasks = match common::tasks("rmcp_http", rest) {
        Ok(tasks) => tasks,
        Err(common::Stop(status, why)) => {
            eprintln!("rmcp_http: {why}");
            return status;
        }
    };
    let listener = match TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("rmcp_http: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "listening on http://{}/mcp",
        listener.local_addr().unwrap_or(listen)
    );

    // One handler per session, one owner per request: its principal.
    let sessions = tasks.clone();
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(sessions.for_session()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let access = Arc::new(access);
    let mut stop = std::pin::pin!(shutdown());
    loop {
        let (stream, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    log::warn!("accept: {err}");
                    continue;
                }
            },
        };
        // An SSE answer is a few small writes: without TCP_NODELAY, Nagle holds the last
        // one until the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let (service, access) = (Arc::clone(&service), Arc::clone(&access));
        tokio::spawn(async move {
            let handler = service_fn(move |mut request: Request<Incoming>| {
                let (service, access) = (Arc::clone(&service), Arc::clone(&access));
                async move {
                    if request.uri().path() != "/mcp" {
                        return Ok::<_, Infallible>(plain(StatusCode::NOT_FOUND, "not found"));
                    }
                    let authorization = request.headers().get(header::AUTHORIZATION);
                    match access.authenticate(authorization.and_then(|value| value.to_str().ok())) {
                        Ok(owner) => {
                            let principal = Principal::new(owner);
                            request.extensions_mut().insert(principal);
                            Ok(service.handle(request).await)
                        }
                        Err(refused) => {
                            let mut refusal = plain(StatusCode::UNAUTHORIZED, refused.message());
                            refusal.headers_mut().insert(
                                header::WWW_AUTHENTICATE,
                                header::HeaderValue::from_static(refused.challenge()),
                            );
                            Ok(refusal)
                        }
                    }
                }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            if let Err(err) = connection.await {
                log::debug!("connection: {err}");
            }
        });
    }
    let ended = tasks.shut_down(GRACE).await;
    eprintln!(
        "rmcp_http: shutting down; {} task(s) handed over, {} failed",
        ended.handed_over.len(),
        ended.failed.len()
    );
    ExitCode::SUCCESS
}

/// A plain-text answer.
fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Resolves on Ctrl-C or `SIGTERM`.
async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        Some(()) = async { term.as_mut()?.recv().await } => {}
    }
}
