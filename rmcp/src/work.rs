//! Where the library's work runs under rmcp: on the tokio runtime rmcp serves on.
//!
//! A future (a handler that waits: a timer, an answer, a cancel) is a task of the runtime
//! and holds no thread while it waits; blocking work goes to the runtime's blocking pool.
//! Over a store shared with other instances a poll may make a round trip to the store
//! (and wait through an outage), so on a multi-threaded runtime each poll, and each
//! request the library routes, runs inside `block_in_place`: the runtime moves its other
//! work to another thread meanwhile, as the library's own HTTP transport does. The
//! handlers wait on the runtime's timer ([`TokioTimer`]), as over the library's HTTP.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::time::Duration;

use mcp_tasks_server::work::{Sleep, Timer, Work};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Whether calls to a shared store block in place on `runtime` (a multi-threaded one).
pub(crate) fn in_place(runtime: &Handle, shared: bool) -> bool {
    shared && runtime.runtime_flavor() == RuntimeFlavor::MultiThread
}

/// Runs `call` (which calls the store) in place, if `in_place` says so.
pub(crate) fn store_call<T>(in_place: bool, call: impl FnOnce() -> T) -> T {
    if in_place {
        tokio::task::block_in_place(call)
    } else {
        call()
    }
}

/// Starts `work` on `runtime`: a future as one of its tasks, blocking work on its blocking
/// pool.
pub(crate) fn spawn(runtime: &Handle, work: Work, shared: bool) {
    match work {
        Work::Async(future) if in_place(runtime, shared) => {
            runtime.spawn(InPlace(future));
        }
        Work::Async(future) => {
            runtime.spawn(future);
        }
        Work::Blocking(work) => {
            runtime.spawn_blocking(work);
        }
    }
}

/// Tokio's timer, for the waits of handlers created and polled on any thread (created
/// inside the runtime's context, which a tokio `Sleep` keeps).
pub(crate) struct TokioTimer(pub(crate) Handle);

impl Timer for TokioTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        let _inside = self.0.enter();
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A future polled inside `block_in_place`.
pub(crate) struct InPlace<F>(pub(crate) F);

impl<F: Future + Unpin> Future for InPlace<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        tokio::task::block_in_place(|| Pin::new(&mut self.0).poll(cx))
    }
}
