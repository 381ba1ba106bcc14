//! An rmcp 3.x server over Streamable HTTP whose tasks live in an mcp-tasks store, with
//! bearer tokens mapped to owners.
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp --example rmcp_http -- \
//!     --token s3cret=alice --token other=bob [--listen 127.0.0.1:8808] \
//!     [--redis URL | --postgres URL] [--conformance] \
//!     [--lease-ms MS] [--lease-renew-ms MS] [--claim-backoff-ms MS]
//! cargo run -p mcp-tasks-rmcp --example rmcp_http -- --anonymous
//! ```
//!
//! On `SIGTERM` or Ctrl-C it hands its running redeliverable tasks (`sleep`) over to the
//! other instances of a shared store (`--redis URL` or `--postgres URL`, or
//! `MCP_TASKS_REDIS_URL` or `MCP_TASKS_POSTGRES_URL`; features `redis`, `postgres`), which
//! finish them, and exits.
//!
//! The endpoint is `/mcp`. Every request needs `Authorization: Bearer <token>` for one
//! of the `--token TOKEN=OWNER` pairs (else `401`); the owner becomes the request's
//! [`Principal`], so a task is visible only with a token of its owner, whichever session
//! or connection asks. `--anonymous` instead serves every request as the one owner
//! `anonymous`, and is refused unless the address is a loopback one (for test suites
//! that send no token). The first line on stdout is `listening on http://ADDR/mcp`.
//!
//! On the 2026-07-28 wire a `tools/call` must repeat the tool's `x-mcp-header` arguments in
//! `Mcp-Param-*` headers (SEP-2243); rmcp 3.11 does not check them, so this front does,
//! with `mcp_http`'s check (`mcp_tasks_servers::headers::check_params`): a missing,
//! undecodable or different header is refused with HTTP 400 and `-32020` before rmcp
//! reads the request.
//!
//! As the project's own `mcp_http` (`http/`), it also reads `MCP_TASKS_HTTP_ADDR` (the
//! default for `--listen`) and `MCP_TASKS_ANONYMOUS=1` (as `--anonymous`), so the
//! conformance runner drives it unchanged:
//!
//! ```text
//! cargo build -p mcp-tasks-rmcp --example rmcp_http
//! CONFORMANCE_SET=tasks CONFORMANCE_SERVER=$PWD/target/debug/examples/rmcp_http bash interop/conformance/run.sh
//! ```

mod common;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_tasks_rmcp::Principal;
use mcp_tasks_servers::headers;
use mcp_tasks_servers::tools::Catalog;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;

/// Who may call: bearer tokens and their owners, or everyone as one anonymous owner.
enum Access {
    Tokens(HashMap<String, String>),
    Anonymous,
}

const USAGE: &str = "usage: rmcp_http (--token TOKEN=OWNER ... | --anonymous) \
                     [--listen ADDR] [--redis URL | --postgres URL] [--conformance]";

fn parse(args: Vec<String>) -> Result<(SocketAddr, Access), String> {
    let mut listen: SocketAddr = match std::env::var("MCP_TASKS_HTTP_ADDR") {
        Ok(addr) => addr
            .parse()
            .map_err(|err| format!("MCP_TASKS_HTTP_ADDR={addr}: {err}"))?,
        Err(_) => ([127, 0, 0, 1], 8808).into(),
    };
    let mut tokens = HashMap::new();
    let mut anonymous = std::env::var("MCP_TASKS_ANONYMOUS").is_ok_and(|value| value == "1");
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
                    .filter(|(token, owner)| !token.is_empty() && !owner.is_empty())
                    .ok_or_else(|| format!("--token {pair}: expected TOKEN=OWNER"))?;
                tokens.insert(token.to_owned(), owner.to_owned());
            }
            "--anonymous" => anonymous = true,
            other => return Err(format!("unknown argument {other}; {USAGE}")),
        }
    }
    let access = match (anonymous, tokens.is_empty()) {
        (true, true) if listen.ip().is_loopback() => Access::Anonymous,
        (true, true) => {
            return Err(format!(
                "--anonymous serves only a loopback address, not {listen}"
            ));
        }
        (true, false) => return Err("--anonymous and --token exclude each other".into()),
        (false, false) => Access::Tokens(tokens),
        (false, true) => return Err(format!("no --token and no --anonymous; {USAGE}")),
    };
    Ok((listen, access))
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

/// The request's principal: its bearer token's owner (`None`: no valid token).
fn principal(access: &Access, request: &Request<Incoming>) -> Option<Principal> {
    let tokens = match access {
        Access::Anonymous => return Some(Principal::new("anonymous")),
        Access::Tokens(tokens) => tokens,
    };
    let token = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))?;
    tokens.get(token).map(|owner| Principal::new(owner.clone()))
}

/// The largest body this front reads to check its headers (as rmcp's own limit).
const MAX_BODY: usize = 4 << 20;

/// A `POST`, its body read, if its `Mcp-Param-*` headers agree with its body (see the
/// module docs); else the refusal to send.
async fn check_param_headers(
    catalog: Catalog,
    request: Request<Incoming>,
) -> Result<Request<Full<Bytes>>, Response<Body>> {
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the body: {err}"),
            ));
        }
    };
    let stateless = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|version| version.to_str().ok())
        .is_some_and(|version| version >= mcp_tasks::ext::PROTOCOL_VERSION);
    if stateless
        && let Ok(message) = serde_json::from_slice::<Value>(&body)
        && message["method"] == "tools/call"
        && let Some(schema) = message["params"]["name"]
            .as_str()
            .and_then(|tool| catalog.input_schema(tool))
        && let Err(why) =
            headers::check_params(&schema, message["params"].get("arguments"), |name| {
                parts
                    .headers
                    .get(name)
                    .and_then(|value| value.to_str().ok())
            })
    {
        let refusal = serde_json::json!({
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": mcp_tasks::ext::HEADER_MISMATCH, "message": why},
        });
        let mut response = plain(StatusCode::BAD_REQUEST, &refusal.to_string());
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        return Err(response);
    }
    Ok(Request::from_parts(parts, Full::new(body)))
}

/// `401` with the scheme to use.
fn unauthorized() -> Response<Body> {
    let mut refused = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
    refused.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    refused
}

#[tokio::main]
async fn main() -> ExitCode {
    // Spans and metrics over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (flushed as main
    // returns).
    let telemetry =
        mcp_tasks_servers::telemetry::init(mcp_tasks_servers::telemetry::Transport::Http);
    // Said only when something is exported: stderr stays quiet otherwise (a store that
    // cannot be reached at start-up is one line there).
    if telemetry.exporting() {
        eprintln!("rmcp_http: {}", telemetry.describe());
    }
    let parsed =
        common::from_args().and_then(|(store, catalog, rest)| Ok((store, catalog, parse(rest)?)));
    let (store, catalog, (listen, access)) = match parsed {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("rmcp_http: {why}");
            return ExitCode::from(2);
        }
    };
    let listener = match TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("rmcp_http: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(listen);
    println!("listening on http://{local}/mcp");

    let server = common::ExampleServer::new(store, catalog);
    let tasks = server.tasks.clone();
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(server.for_session()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let access = Arc::new(access);
    let mut stop = std::pin::pin!(shutdown());
    loop {
        let accepted = tokio::select! {
            () = &mut stop => {
                let handed = tasks.hand_over_running();
                eprintln!("rmcp_http: shutting down; {handed} task(s) handed over");
                return ExitCode::SUCCESS;
            }
            accepted = listener.accept() => accepted,
        };
        let (stream, _) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                eprintln!("rmcp_http: accept: {err}");
                continue;
            }
        };
        // An SSE answer is a few small writes: without TCP_NODELAY, Nagle holds the last
        // one until the client's delayed ACK (~40 ms on Linux) for every response.
        if let Err(err) = stream.set_nodelay(true) {
            eprintln!("rmcp_http: TCP_NODELAY: {err}");
        }
        let service = Arc::clone(&service);
        let access = Arc::clone(&access);
        tokio::spawn(async move {
            let handler = service_fn(move |mut request: Request<Incoming>| {
                let service = Arc::clone(&service);
                let access = Arc::clone(&access);
                async move {
                    if request.uri().path() != "/mcp" {
                        return Ok::<_, Infallible>(plain(StatusCode::NOT_FOUND, "not found"));
                    }
                    let Some(principal) = principal(&access, &request) else {
                        return Ok(unauthorized());
                    };
                    request.extensions_mut().insert(principal);
                    if request.method() != hyper::Method::POST {
                        return Ok(service.handle(request).await);
                    }
                    match check_param_headers(catalog, request).await {
                        Ok(request) => Ok(service.handle(request).await),
                        Err(refused) => Ok(refused),
                    }
                }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            if let Err(err) = connection.await {
                eprintln!("rmcp_http: connection: {err}");
            }
        });
    }
}

/// Resolves on Ctrl-C, or on `SIGTERM` (Unix).
async fn shutdown() {
    #[cfg(unix)]
    {
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
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
