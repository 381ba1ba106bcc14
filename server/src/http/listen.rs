//! `subscriptions/listen` over Streamable HTTP (2026-07-28, with `notifications.taskIds`):
//! the answer to the POST is a long-lived `text/event-stream` that carries the
//! acknowledgement, then one `notifications/tasks` per change of the acknowledged tasks
//! (whichever instance of a shared store made it), each an event without an id (a lost
//! stream is not resumed: the client listens again and reads its tasks once).
//!
//! The stream ends when the client closes it (nothing of the listen is left on the server
//! then), or when the server shuts down: once the tasks running here have ended (finished,
//! handed over or failed) and their changes were sent, each stream gets the
//! `SubscriptionsListenResult` and closes. An idle stream sends a comment every 15 s.
//!
//! The listen holds no request slot of its principal once it is acknowledged: its own
//! bound applies (`MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL`, see `crate::listen`).

use std::sync::Arc;

use crate::framing::Id;
use crate::listen::{Listening, Listens};
use mcp_tasks::{JsonRpcError, Owner, jsonrpc};
use serde_json::Value;
use tokio::sync::mpsc;

use super::App;
use super::sse::{self, KEEPALIVE, SseBody};

/// Events waiting for the connection; beyond them the listen's own buffer holds changes
/// (and, far behind, keeps each task's latest state).
const EVENTS: usize = 64;

/// What a listen request is answered with: its stream, or an error.
pub enum Answer {
    /// The stream of the acknowledged listen.
    Stream(SseBody),
    /// The JSON-RPC error to answer, as a response message.
    Refused(JsonRpcError),
}

/// Opens the listen request `id` of `owner` (it reads each task once, so it runs where
/// blocking is allowed) and starts the task that feeds its stream. `sse_ok` says whether
/// the client accepts `text/event-stream`: a listen has no other answer.
pub fn open(
    app: &Arc<App>,
    owner: &Owner,
    id: &Id,
    params: Option<&Value>,
    sse_ok: bool,
    trace_name: &str,
) -> Answer {
    if !sse_ok {
        // The request's own errors first (`-32021` is a MUST, whatever the client accepts).
        if let Err(error) = Listens::check(params) {
            return Answer::Refused(error);
        }
        return Answer::Refused(JsonRpcError::new(
            jsonrpc::INVALID_REQUEST,
            "invalid request: subscriptions/listen is answered with a text/event-stream; \
             accept it",
        ));
    }
    let opened = app.store_call(|| app.listens.open(owner, id, params));
    let listening = match opened {
        Ok(listening) => listening,
        Err(error) => return Answer::Refused(error),
    };
    let (tx, body) = sse::channel(EVENTS);
    tokio::spawn(feed(Arc::clone(app), listening, tx, trace_name.to_owned()));
    Answer::Stream(body)
}

/// What woke a listen's feed.
enum Step {
    Change(Option<mcp_tasks::AnyTask>),
    Left,
    Idle,
}

/// Sends the acknowledgement, then each change, until the client leaves or the server
/// ends the listen (then its result). The listen is dropped with this task.
async fn feed(app: Arc<App>, listening: Listening, tx: mpsc::Sender<bytes::Bytes>, trace: String) {
    let Listening { stream, mut watch } = listening;
    let send = |message: Result<String, serde_json::Error>| {
        let message = message.map_err(|err| {
            log::warn!(
                "listen {}: cannot write a message: {err}",
                stream.subscription_id()
            );
        });
        if let Ok(text) = &message {
            app.trace.write(&trace, "out", text);
        }
        message.ok().map(|text| sse::message_event(&text))
    };
    if let Some(ack) = send(stream.acknowledgement())
        && tx.send(ack).await.is_err()
    {
        return;
    }
    loop {
        let step = tokio::select! {
            change = watch.recv() => Step::Change(change),
            () = tx.closed() => Step::Left,
            () = tokio::time::sleep(KEEPALIVE) => Step::Idle,
        };
        let event = match step {
            Step::Change(Some(task)) => send(stream.notification(&task)),
            Step::Change(None) => {
                // The server ended the listen: its result closes the stream.
                if let Some(result) = send(stream.result()) {
                    let _ = tx.send(result).await;
                }
                break;
            }
            Step::Left => break,
            Step::Idle => Some(bytes::Bytes::from_static(b": keepalive\n\n")),
        };
        if let Some(event) = event
            && tx.send(event).await.is_err()
        {
            break;
        }
    }
    drop(watch);
    // What is left of the listens, for an operator (and the tests) to see that an ended
    // listen left nothing behind.
    let watches = app.listens.watches();
    log::debug!(
        "listen {} ended: {} open, {} routes, store subscription: {}",
        stream.subscription_id(),
        watches.len(),
        watches.routes(),
        if watches.is_subscribed() {
            "held"
        } else {
            "none"
        }
    );
}
