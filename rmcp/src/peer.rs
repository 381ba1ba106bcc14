//! The client end of one request, over rmcp's peer: what a handler running at once sends
//! while it runs (`notifications/progress`, `notifications/message`, and on 2025-11-25
//! `sampling/createMessage` and `elicitation/create`), as the server library's [`Peer`].
//!
//! Messages go out in the order the handler sends them, through one queue that the
//! request's own task drains ([`Outbox::forward`]): rmcp ties a message sent from inside a
//! request's handler to that request (its Streamable HTTP transport sends it on the
//! request's stream), and a message sent from a spawned task would lose that tie. The
//! answer is sent after everything the handler queued.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_server::mcp_tasks::{JsonRpcError, jsonrpc};
use mcp_tasks_server::peer::{Answer, LogLevel, Peer};
use rmcp::model::{ServerNotification, ServerRequest};
use rmcp::service::{PeerRequestOptions, RoleServer, ServiceError};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::convert;

/// How long a handler waits for the client to answer one of its requests.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The log level a client set with `logging/setLevel` (2025-11-25), for one session.
pub(crate) type LogLevelCell = Arc<Mutex<Option<LogLevel>>>;

/// A message for the client, queued in order.
enum Outgoing {
    Notification(ServerNotification),
    Request(ServerRequest, oneshot::Sender<Result<Value, JsonRpcError>>),
}

/// rmcp's peer of one request, as the library's [`Peer`].
pub(crate) struct RmcpPeer {
    /// The queue, until the request is answered.
    queue: Mutex<Option<mpsc::UnboundedSender<Outgoing>>>,
    /// What the client declared (at `initialize`, or in the request's `_meta`).
    capabilities: Value,
    log_level: LogLevelCell,
    /// The request speaks 2026-07-28, whose wire has no server-to-client requests.
    extension: bool,
}

/// The receiving end of a request's queue ([`RmcpPeer::new`]).
pub(crate) struct Outbox(mpsc::UnboundedReceiver<Outgoing>);

impl RmcpPeer {
    /// A peer for a request whose client declared `capabilities`, and its queue.
    pub(crate) fn new(
        capabilities: Value,
        log_level: LogLevelCell,
        extension: bool,
    ) -> (Self, Outbox) {
        let (queue, outbox) = mpsc::unbounded_channel();
        let peer = Self {
            queue: Mutex::new(Some(queue)),
            capabilities,
            log_level,
            extension,
        };
        (peer, Outbox(outbox))
    }

    /// Closes the queue: what was queued is still sent, anything later is dropped.
    pub(crate) fn close(&self) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn push(&self, message: Outgoing) -> bool {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|queue| queue.send(message).is_ok())
    }
}

impl Peer for RmcpPeer {
    fn notify(&self, method: &str, params: Value) {
        match serde_json::from_value(json!({"method": method, "params": params})) {
            Ok(notification) => {
                if !self.push(Outgoing::Notification(notification)) {
                    log::debug!("`{method}` was not sent: the request was answered");
                }
            }
            Err(err) => log::warn!("`{method}` is not a notification rmcp sends: {err}"),
        }
    }

    fn request(&self, method: &str, params: Value) -> Answer {
        let refused = |error: JsonRpcError| -> Answer { Box::pin(std::future::ready(Err(error))) };
        if self.extension {
            return refused(convert::internal(format!(
                "`{method}` cannot reach the client: the 2026-07-28 wire has no requests to the client"
            )));
        }
        let needs = match method {
            "sampling/createMessage" => Some("sampling"),
            "elicitation/create" => Some("elicitation"),
            _ => None,
        };
        if let Some(capability) = needs
            && !self.capabilities[capability].is_object()
        {
            return refused(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                format!(
                    "invalid params: this client did not declare the `{capability}` capability"
                ),
            ));
        }
        let request: ServerRequest =
            match serde_json::from_value(json!({"method": method, "params": params})) {
                Ok(request) => request,
                Err(err) => {
                    return refused(convert::internal(format!(
                        "`{method}` is not a request rmcp sends: {err}"
                    )));
                }
            };
        let (answer, answered) = oneshot::channel();
        if !self.push(Outgoing::Request(request, answer)) {
            return refused(convert::internal(format!(
                "`{method}` was not sent: the request was answered"
            )));
        }
        let method = method.to_owned();
        Box::pin(async move {
            answered.await.unwrap_or_else(|_| {
                Err(convert::internal(format!(
                    "the client did not answer `{method}`"
                )))
            })
        })
    }

    fn log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn set_log_level(&self, level: LogLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }
}

impl Outbox {
    /// Sends what is queued, in order, through `peer`, until the queue is closed and empty.
    /// Run it in the request's own task (see the module docs). A request is sent here and
    /// its answer awaited apart, so that later messages do not wait for it.
    pub(crate) async fn forward(mut self, peer: rmcp::Peer<RoleServer>) {
        while let Some(message) = self.0.recv().await {
            match message {
                Outgoing::Notification(notification) => {
                    if let Err(err) = peer.send_notification(notification).await {
                        log::debug!("a notification was not sent: {err}");
                    }
                }
                Outgoing::Request(request, answer) => {
                    let options = PeerRequestOptions::with_timeout(ANSWER_TIMEOUT);
                    match peer.send_request_with_option(request, options).await {
                        Ok(handle) => {
                            tokio::spawn(async move {
                                let got = handle.await_response().await;
                                let _ = answer.send(client_answer(got));
                            });
                        }
                        Err(err) => {
                            let _ = answer.send(client_answer(Err(err)));
                        }
                    }
                }
            }
        }
    }
}

/// The client's answer to a request, as the library reads it.
fn client_answer(
    got: Result<rmcp::model::ClientResult, ServiceError>,
) -> Result<Value, JsonRpcError> {
    match got {
        Ok(result) => serde_json::to_value(result).map_err(convert::internal),
        Err(ServiceError::McpError(error)) => Err(convert::jsonrpc_error(&error)),
        Err(other) => Err(convert::internal(format!(
            "the request to the client failed: {other}"
        ))),
    }
}
