//! The fixtures that talk to the client while they run inline (`mcp_tasks_servers`'
//! `core_fixtures`: progress, log messages, sampling, elicitation), over rmcp's peer. They
//! run the shared blocking runner on tokio's blocking pool, through a
//! `mcp_tasks_servers::peer::Peer` that sends with rmcp: so both example servers send the
//! same messages, at the same levels, with the same progress token.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks::{JsonRpcError, jsonrpc};
use mcp_tasks_servers::peer::{Caller, LogLevel, Peer};
use mcp_tasks_servers::tools::Call;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ClientCapabilities, ServerNotification, ServerRequest};
use rmcp::service::{RequestContext, RoleServer, ServiceError};
use serde_json::{Value, json};

/// How long a fixture waits for the client to answer one of its requests.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The log level a client set with `logging/setLevel`, per session (shared by the clones of
/// one session's handler).
pub type LogLevelCell = Arc<Mutex<Option<LogLevel>>>;

/// Reads a log level cell.
pub fn read(cell: &LogLevelCell) -> Option<LogLevel> {
    *cell.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets a log level cell.
pub fn write(cell: &LogLevelCell, level: LogLevel) {
    *cell.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
}

/// Whether `context`'s request speaks 2026-07-28 (or later).
pub fn is_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= mcp_tasks::ext::PROTOCOL_VERSION)
}

/// rmcp's peer of one request, as the shared fixtures' `Peer`.
struct RmcpPeer {
    peer: rmcp::Peer<RoleServer>,
    capabilities: Option<ClientCapabilities>,
    log_level: LogLevelCell,
    runtime: tokio::runtime::Handle,
}

impl Peer for RmcpPeer {
    fn notify(&self, method: &str, params: Value) {
        let message = json!({"method": method, "params": params});
        match serde_json::from_value::<ServerNotification>(message) {
            Ok(notification) => {
                if let Err(err) = self
                    .runtime
                    .block_on(self.peer.send_notification(notification))
                {
                    eprintln!("`{method}` was not sent: {err}");
                }
            }
            Err(err) => eprintln!("`{method}` is not a notification rmcp sends: {err}"),
        }
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
        let internal = |why: String| JsonRpcError::new(jsonrpc::INTERNAL_ERROR, why);
        let needs = match method {
            "sampling/createMessage" => Some("sampling"),
            "elicitation/create" => Some("elicitation"),
            _ => None,
        };
        if let Some(capability) = needs {
            let declared = serde_json::to_value(&self.capabilities)
                .is_ok_and(|capabilities| capabilities[capability].is_object());
            if !declared {
                return Err(JsonRpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!(
                        "invalid params: this client did not declare the `{capability}` capability"
                    ),
                ));
            }
        }
        let request: ServerRequest =
            serde_json::from_value(json!({"method": method, "params": params})).map_err(|err| {
                internal(format!("`{method}` is not a request rmcp sends: {err}"))
            })?;
        let answer = self.runtime.block_on(tokio::time::timeout(
            ANSWER_TIMEOUT,
            self.peer.send_request(request),
        ));
        match answer {
            Ok(Ok(result)) => serde_json::to_value(result).map_err(|err| internal(err.to_string())),
            Ok(Err(ServiceError::McpError(error))) => Err(JsonRpcError::new(
                i64::from(error.code.0),
                error.message.to_string(),
            )),
            Ok(Err(other)) => Err(internal(format!("`{method}` failed: {other}"))),
            Err(_) => Err(internal(format!(
                "the client did not answer `{method}` in time"
            ))),
        }
    }

    fn log_level(&self) -> Option<LogLevel> {
        read(&self.log_level)
    }

    fn set_log_level(&self, level: LogLevel) {
        write(&self.log_level, level);
    }
}

/// Runs `call` inline, talking to `context`'s client: progress with the request's token,
/// log messages at the level the session set (2025-11-25) or the request asked for
/// (2026-07-28), requests to the client where the wire has them.
pub async fn run(
    call: Call,
    context: &RequestContext<RoleServer>,
    log_level: LogLevelCell,
) -> Result<CallToolResult, ErrorData> {
    let peer = RmcpPeer {
        peer: context.peer.clone(),
        capabilities: context.client_capabilities(),
        log_level,
        runtime: tokio::runtime::Handle::current(),
    };
    let params = json!({"_meta": context.meta});
    let ext = is_2026(context);
    let result = tokio::task::spawn_blocking(move || {
        let caller = if ext {
            Caller::ext(&peer, Some(&params))
        } else {
            Caller::v1(&peer, Some(&params))
        };
        call.run_talking(&caller)
    })
    .await
    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    match result {
        Ok(result) => mcp_tasks_rmcp::tool_result(result),
        Err(error) => Err(super::error(error)),
    }
}
