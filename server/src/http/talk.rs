//! A request answered by work ([`Answering`]): a call running at once, a method of the
//! application's, `logging/setLevel`. What the work sends its client (progress, log
//! messages, requests) goes out on the POST's own SSE stream, ahead of the answer; work
//! that sent nothing is answered with plain JSON. A request that does not take
//! `text/event-stream` gets the answer alone: its notifications are dropped and its
//! requests refused. Work that closes its stream ([`Peer::close_stream`], SEP-1699) has its
//! answer sent on a stream the client resumes with `GET` and `Last-Event-ID`.
//!
//! Requests to the client exist on the 2025-11-25 wire only (the client answers them with
//! a POST in its session); on the 2026-07-28 wire the work may only notify.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_tasks::{JsonRpcError, jsonrpc};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::framing::{self, Id};
use crate::peer::{Answer, LogLevel, Peer};
use crate::server::{AnswerFuture, Answering, Elicitation};

use super::session::Session;
use super::sse;
use super::trace::Trace;

/// How long the work waits for the client to answer one of its requests.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// What the work sends its stream: a message, or the wish to close it.
enum Sent {
    Message(String),
    Close,
}

/// The client end of one request, for its work ([`Peer`]).
struct StreamPeer {
    /// The request's stream (`None`: the client takes no SSE).
    out: Option<mpsc::UnboundedSender<Sent>>,
    /// The 2025-11-25 session the request came in (`None`: the 2026-07-28 wire).
    session: Option<Arc<Session>>,
}

impl StreamPeer {
    fn send(&self, message: &Value) -> bool {
        self.out
            .as_ref()
            .is_some_and(|out| out.send(Sent::Message(message.to_string())).is_ok())
    }
}

impl Peer for StreamPeer {
    fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&self, method: &str, params: Value) -> Answer {
        let unreachable = |why: &str| -> Answer {
            let error = JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("`{method}` cannot reach the client: {why}"),
            );
            Box::pin(std::future::ready(Err(error)))
        };
        let Some(session) = &self.session else {
            return unreachable("the 2026-07-28 wire has no server-to-client requests");
        };
        if method == "elicitation/create" && session.elicitation != Elicitation::Declared {
            return Box::pin(std::future::ready(Err(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                "invalid params: this client did not declare the `elicitation` capability \
                 (form mode) at initialize",
            ))));
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
        let session = Arc::clone(session);
        Box::pin(async move {
            // A runtime-free timer: the work may run off the runtime (a blocking handler).
            let answer = crate::work::within(ANSWER_TIMEOUT, answered).await;
            session.forget_request(&id);
            match answer {
                Some(Ok(answer)) => answer,
                Some(Err(_)) => Err(JsonRpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "the client cannot be reached: its session ended",
                )),
                None => Err(JsonRpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "the client cannot be reached: no answer in time",
                )),
            }
        })
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

    fn close_stream(&self) {
        if let Some(out) = &self.out {
            let _ = out.send(Sent::Close);
        }
    }
}

/// How a request answered by work is answered.
pub(crate) enum Talked {
    /// The work sent nothing (or could not): its answer, to send as JSON.
    Answer(Result<Value, JsonRpcError>),
    /// An SSE stream: the messages the work sent, then its answer.
    Stream(sse::SseBody),
    /// The work closed its stream: the answer to come, for a stream the client resumes.
    Detached(AnswerFuture),
}

/// Runs `work` for the request `id`, in `session` on the 2025-11-25 wire: a future on the
/// runtime, blocking work on the blocking pool. With `sse_ok` its messages go out on an SSE
/// stream, opened at the first one and ended by the answer. Everything sent on the stream
/// is traced under `trace.1`.
pub(crate) async fn run(
    work: Answering,
    id: Id,
    session: Option<Arc<Session>>,
    sse_ok: bool,
    trace: (Arc<Trace>, String),
) -> Talked {
    let (out, mut messages) = mpsc::unbounded_channel();
    let detachable = sse_ok && session.is_some();
    let peer: Arc<dyn Peer> = Arc::new(StreamPeer {
        out: sse_ok.then_some(out),
        session,
    });
    // The peer goes with the work: once the work returns, `messages` ends.
    let mut work = match work {
        Answering::Async(work) => tokio::spawn(work(peer)),
        Answering::Blocking(work) => tokio::task::spawn_blocking(move || work(peer)),
    };
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
    let first = match first {
        None => {
            let answer = match finished {
                Some(answer) => answer,
                None => joined(work.await),
            };
            return Talked::Answer(answer);
        }
        Some(Sent::Close) if detachable => {
            return Talked::Detached(Box::pin(async move {
                match finished {
                    Some(answer) => answer,
                    None => joined(work.await),
                }
            }));
        }
        Some(first) => first,
    };
    let (events, body) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let (trace, name) = trace;
        let mut next = Some(first);
        while let Some(sent) = next {
            if let Sent::Message(message) = sent {
                trace.write(&name, "out", &message);
                if events.send(sse::message(None, &message)).await.is_err() {
                    // The client left: the work runs on, unheard.
                    return;
                }
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
