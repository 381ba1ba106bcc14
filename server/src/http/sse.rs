//! Server-Sent Events: the response body of an SSE stream, and the task that fills it
//! from a session's mailbox.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use tokio::sync::{mpsc, watch};

use super::session::{Event, Role, Session};

/// The reconnection delay a client is told in the priming event (ms).
const RETRY_MS: u64 = 1000;

/// How often an idle stream sends a comment, so a dead peer is noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// The answer a `tasks/result` stream ends with: one JSON-RPC response.
pub type Answer = Pin<Box<dyn Future<Output = String> + Send>>;

/// The body of an SSE response: events as the stream's task produces them.
pub struct SseBody {
    events: mpsc::Receiver<Bytes>,
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.events
            .poll_recv(cx)
            .map(|event| event.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// An SSE body fed through the returned sender (at most `capacity` events waiting): for
/// a stream that no session holds (a 2026-07-28 `subscriptions/listen`).
pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, SseBody) {
    let (tx, events) = mpsc::channel(capacity);
    (tx, SseBody { events })
}

/// One SSE event without an id, carrying one JSON-RPC message written on one line.
pub fn message_event(message: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// One SSE event: its id and one JSON-RPC message as `data` (one line per line of it).
fn encode(event: &Event) -> Bytes {
    message(Some(&event.id), &event.data)
}

/// One SSE event carrying one JSON-RPC message as `data` (one line per line of it), with
/// `id` if given.
pub fn message(id: Option<&str>, data: &str) -> Bytes {
    let mut text = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        text.push_str("id: ");
        text.push_str(id);
        text.push('\n');
    }
    text.push_str("event: message\n");
    for line in data.split('\n') {
        text.push_str("data: ");
        text.push_str(line);
        text.push('\n');
    }
    text.push('\n');
    Bytes::from(text)
}

/// A stream of the events `events` yields, already encoded ([`message`]); it ends when
/// their sender is dropped.
pub fn from_events(events: mpsc::Receiver<Bytes>) -> SseBody {
    SseBody { events }
}

/// Opens a stream of `session` with `role` (resuming `resume`, a `Last-Event-ID`) and
/// returns its body. A `tasks/result` stream carries the messages about its task and ends
/// with `answer`; if the client drops it first, the answer still comes and waits for the
/// stream to be resumed. A standalone stream ends when the session ends or the server shuts
/// down.
pub fn open(
    session: Arc<Session>,
    role: Role,
    resume: Option<(u64, u64)>,
    answer: Option<Answer>,
    mut shutdown: watch::Receiver<bool>,
) -> SseBody {
    // A detached stream closes right after its priming event: its answer waits for the
    // client to resume it.
    let close_early = role == Role::Detached;
    let (tx, events) = mpsc::channel(16);
    let (stream, replay) = session.open_stream(&role, resume);
    tokio::spawn(async move {
        let _open = OpenStream {
            session: Arc::clone(&session),
            role: role.clone(),
        };
        let mut answer = answer;
        // The priming event: an id to resume from, and the reconnection delay.
        let priming = format!(
            "id: {}\nretry: {RETRY_MS}\ndata: \n\n",
            session.mark(stream)
        );
        let mut alive = !close_early || resume.is_some();
        let primed = tx.send(Bytes::from(priming)).await.is_ok();
        alive = alive && primed;
        for event in replay {
            alive = alive && tx.send(encode(&event)).await.is_ok();
        }
        while alive {
            let changed = session.changed();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if session.has_ended() || (role == Role::General && *shutdown.borrow()) {
                break;
            }
            for event in session.take(stream, &role) {
                // Taken events are in the history: a resumed stream sends them again.
                alive = alive && tx.send(encode(&event)).await.is_ok();
            }
            if !alive {
                break;
            }
            tokio::select! {
                () = &mut changed => {}
                response = async {
                    match answer.as_mut() {
                        Some(answer) => answer.await,
                        None => std::future::pending().await,
                    }
                }, if answer.is_some() => {
                    answer = None;
                    // What was queued for this stream meanwhile (the task's terminal status
                    // notification) goes out before the answer.
                    for event in session.take(stream, &role) {
                        if tx.send(encode(&event)).await.is_err() {
                            break;
                        }
                    }
                    let event = session.record(stream, response.into());
                    let _ = tx.send(encode(&event)).await;
                    break;
                }
                () = tx.closed() => alive = false,
                _ = shutdown.changed(), if role == Role::General => {}
                () = tokio::time::sleep(KEEPALIVE) => {
                    alive = tx.send(Bytes::from_static(b": keepalive\n\n")).await.is_ok();
                }
            }
        }
        // The client left before the answer: it still comes, and waits for a resumption.
        if let Some(answer) = answer {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                let response = answer.await;
                if !session.has_ended() {
                    session.pin(stream, response);
                }
            });
        }
    });
    SseBody { events }
}

/// Closes its stream in the session when the stream's task ends, however it ends.
struct OpenStream {
    session: Arc<Session>,
    role: Role,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.session.close_stream(&self.role);
    }
}
