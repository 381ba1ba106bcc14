//! A request answered by work that talks to the client while it runs (`Reply::Talk`: a
//! tool reporting progress or logging, one asking for sampling or elicitation,
//! `logging/setLevel`). What it sends goes out on the POST's own SSE stream, ahead of the
//! answer; work that sent nothing is answered with plain JSON. A request that does not take
//! `text/event-stream` gets the answer alone: its notifications are dropped and its
//! requests refused.
//!
//! Requests to the client exist on the 2025-11-25 wire only (the client answers them with
//! a POST in its session); on the 2026-07-28 wire the work may only notify.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_tasks::{JsonRpcError, jsonrpc};
use mcp_tasks_servers::framing::{self, Id};
use mcp_tasks_servers::peer::{LogLevel, Peer, Talk};
use mcp_tasks_servers::server::Elicitation;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::session::Session;
use crate::sse;
use crate::trace::Trace;

/// How long the work waits for the client to answer one of its requests.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The client end of one request, for its work ([`Peer`]).
struct StreamPeer {
    /// The request's stream (`None`: the client takes no SSE).
    out: Option<mpsc::UnboundedSender<String>>,
    /// The 2025-11-25 session the request came in (`None`: the 2026-07-28 wire).
    session: Option<Arc<Session>>,
    runtime: tokio::runtime::Handle,
}

impl StreamPeer {
    fn send(&self, message: &Value) -> bool {
        self.out
            .as_ref()
            .is_some_and(|out| out.send(message.to_string()).is_ok())
    }
}

impl Peer for StreamPeer {
    fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
        let unreachable = |why: &str| {
            Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("`{method}` cannot reach the client: {why}"),
            ))
        };
        let Some(session) = &self.session else {
            return unreachable("the 2026-07-28 wire has no server-to-client requests");
        };
        if method == "elicitation/create" && session.elicitation != Elicitation::Declared {
            return Err(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                "invalid params: this client did not declare the `elicitation` capability \
                 (form mode) at initialize",
            ));
        }
        if self.out.is_none() {
            return unreachable("its request takes no event stream");
        }
        let (id, answered) = session.expect_answer();
        let asked = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.send(&asked) {
            session.forget_request(&id);
            return unreachable("its stream closed");
        }
        let answer = self
            .runtime
            .block_on(tokio::time::timeout(ANSWER_TIMEOUT, answered));
        session.forget_request(&id);
        match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => unreachable("its session ended"),
            Err(_) => unreachable("no answer in time"),
        }
    }

    fn log_level(&self) -> Option<LogLevel> {
        self.session
            .as_ref()
            .and_then(|session| session.log_level())
    }

    fn set_log_level(&self, level: LogLevel) {
        if let Some(session) = &self.session {
            session.set_log_level(level);
        }
    }
}

/// How a talking request is answered.
pub enum Talked {
    /// The work sent nothing (or could not): its answer, to send as JSON.
    Answer(Result<Value, JsonRpcError>),
    /// An SSE stream: the messages the work sent, then its answer.
    Stream(sse::SseBody),
}

/// Runs `work` (on the blocking pool) for the request `id`, in `session` on the 2025-11-25
/// wire. With `sse_ok` its messages go out on an SSE stream, opened at the first one and
/// ended by the answer. Everything sent on the stream is traced under `trace.1`.
pub async fn run(
    work: Talk,
    id: Id,
    session: Option<Arc<Session>>,
    sse_ok: bool,
    trace: (Arc<Trace>, String),
) -> Talked {
    let (out, mut messages) = mpsc::unbounded_channel();
    let peer = StreamPeer {
        out: sse_ok.then_some(out),
        session,
        runtime: tokio::runtime::Handle::current(),
    };
    // The peer goes with the work: once the work returns, `messages` ends.
    let mut work = tokio::task::spawn_blocking(move || work(&peer));
    let joined = |joined: Result<Result<Value, JsonRpcError>, tokio::task::JoinError>| {
        joined
            .unwrap_or_else(|err| Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, err.to_string())))
    };
    let mut finished = None;
    let first = tokio::select! {
        message = messages.recv() => message,
        answer = &mut work => {
            finished = Some(joined(answer));
            messages.try_recv().ok()
        }
    };
    let Some(first) = first else {
        let answer = match finished {
            Some(answer) => answer,
            None => joined(work.await),
        };
        return Talked::Answer(answer);
    };
    let (events, body) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let (trace, name) = trace;
        let mut next = Some(first);
        while let Some(message) = next {
            trace.write(&name, "out", &message);
            if events.send(sse::message(None, &message)).await.is_err() {
                // The client left: the work runs on, unheard.
                return;
            }
            next = messages.recv().await;
        }
        let answer = match finished {
            Some(answer) => answer,
            None => joined(work.await),
        };
        let text = framing::response(Some(&id), &answer);
        trace.write(&name, "out", &text);
        let _ = events.send(sse::message(None, &text)).await;
    });
    Talked::Stream(sse::from_events(body))
}
