//! Response bodies: a whole JSON message (with, for a new task, the handler to start once
//! the message has been sent), or an SSE stream.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use mcp_tasks_servers::work::{TaskFuture, Work};

use crate::limits::Slot;
use crate::sse::SseBody;

/// The body of every response.
pub enum Body {
    /// A whole message (or nothing).
    Full(Option<Bytes>),
    /// A whole message; `then` starts once the body has been handed to the connection, or
    /// the client left: a task's handler must not change the task before the requestor has
    /// the `CreateTaskResult`, and must run even if nobody reads it. A future is spawned on
    /// the runtime (it holds no thread while it waits), blocking work on the blocking pool.
    Then(Option<Bytes>, Option<Work>),
    /// An SSE stream, holding its principal's request slot while it is open.
    Sse {
        /// The events.
        stream: SseBody,
        /// The principal's request slot, given back when the stream closes.
        _slot: Option<Slot>,
    },
}

impl Body {
    /// A whole body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Body::Full(Some(bytes.into()))
    }

    /// No body.
    pub fn empty() -> Self {
        Body::Full(None)
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(bytes) | Body::Then(bytes, _) => {
                Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes))))
            }
            Body::Sse { stream, .. } => Pin::new(stream).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(bytes) | Body::Then(bytes, _) => bytes.is_none(),
            Body::Sse { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(bytes) | Body::Then(bytes, _) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Body::Sse { .. } => SizeHint::default(),
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Body::Then(_, then) = self
            && let Some(work) = then.take()
        {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => spawn(&runtime, work),
                Err(_) => work.start(),
            }
        }
    }
}

/// Starts `work` on `runtime`: a future as a task of the runtime, blocking work on its
/// blocking pool.
pub fn spawn(runtime: &tokio::runtime::Handle, work: Work) {
    match work {
        Work::Async(work) => {
            runtime.spawn(work);
        }
        Work::Blocking(work) => {
            runtime.spawn_blocking(work);
        }
    }
}

/// `work` as this server runs it: over a shared store, a future's polls (each may make a
/// round trip to the store, and wait through an outage) run inside `block_in_place`, as the
/// requests' store calls do (`App::store_call`), so that they never stall a worker; over
/// the in-process registry (microseconds under a mutex), as it is.
pub fn for_store(work: Work, shared: bool) -> Work {
    match work {
        Work::Async(future) if shared => Work::future(InPlace(future)),
        other => other,
    }
}

/// A task's future polled inside `block_in_place` ([`for_store`]).
struct InPlace(TaskFuture);

impl Future for InPlace {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        tokio::task::block_in_place(|| self.0.as_mut().poll(cx))
    }
}
