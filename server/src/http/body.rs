//! Response bodies: a whole JSON message (with, for a new task, the handler to start once
//! the message has been sent), or an SSE stream.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use crate::work::{TaskFuture, Work};

use super::limits::Slot;
use super::sse::SseBody;

/// The body of every response of the MCP endpoint: a whole message, or an SSE stream.
pub struct Body(pub(crate) Inner);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            Inner::Full(_) => "Body::Full",
            Inner::Then(..) => "Body::Then",
            Inner::Sse { .. } => "Body::Sse",
        })
    }
}

/// What a body is.
pub(crate) enum Inner {
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
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Body(Inner::Full(Some(bytes.into())))
    }

    /// No body.
    pub(crate) fn empty() -> Self {
        Body(Inner::Full(None))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            Inner::Full(bytes) | Inner::Then(bytes, _) => {
                Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes))))
            }
            Inner::Sse { stream, .. } => Pin::new(stream).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Inner::Full(bytes) | Inner::Then(bytes, _) => bytes.is_none(),
            Inner::Sse { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Full(bytes) | Inner::Then(bytes, _) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Inner::Sse { .. } => SizeHint::default(),
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Inner::Then(_, then) = &mut self.0
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
pub(crate) fn spawn(runtime: &tokio::runtime::Handle, work: Work) {
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
pub(crate) fn for_store(work: Work, shared: bool) -> Work {
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
