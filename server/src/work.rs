//! A task's handler as a transport starts it: blocking code that needs a thread of its
//! own, or a future that holds no thread while it waits.
//!
//! A task outlives its request, and a task server exists to hold many of them at once:
//! a handler that waits (`sleep`'s timer, a cancel) as a future costs a few hundred
//! bytes while it waits, where a blocking one holds a thread (and tokio's blocking pool
//! stops at 512). Handlers that block — on the requestor's answer, or in fixture code
//! written for threads — stay [`Work::Blocking`].
//!
//! The transports start each kind where it belongs: `mcp_http` spawns a future on its
//! tokio runtime and blocking work on the runtime's blocking pool; `stdio_server` has no
//! runtime and uses [`Work::start`]: a thread for blocking work, and a small pool of
//! executor threads ([`EXECUTOR_THREADS`]) shared by every future. A future's polls may
//! make a store call (a checkpoint, the result): a registry call takes microseconds, a
//! shared store's one round trip, as the store's own futures do inside `poll`.
//!
//! The executor is a few lines of `std` (a queue of woken tasks, [`Wake`]), not
//! `futures-executor`: that one forbids its `block_on` inside a future it polls, and code
//! a handler runs may call it (OpenTelemetry's simple span processor does, on every span
//! end).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// A future a task's handler is, boxed: `Send`, `'static`.
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How many executor threads [`Work::start`] polls every future on (outside a runtime).
pub const EXECUTOR_THREADS: usize = 2;

/// A task's handler, ready to start.
pub enum Work {
    /// Blocking code: runs on a thread of its own until the task ends.
    Blocking(Box<dyn FnOnce() + Send>),
    /// A future: polled by an executor, holding no thread while it waits.
    Async(TaskFuture),
}

impl Work {
    /// Blocking work.
    pub fn blocking(work: impl FnOnce() + Send + 'static) -> Self {
        Work::Blocking(Box::new(work))
    }

    /// Work as a future.
    pub fn future(work: impl Future<Output = ()> + Send + 'static) -> Self {
        Work::Async(Box::pin(work))
    }

    /// This work, then `after` once it has ended (on the same thread or executor): what
    /// a transport that counts its running handlers appends.
    #[must_use]
    pub fn then(self, after: impl FnOnce() + Send + 'static) -> Self {
        match self {
            Work::Blocking(work) => Work::blocking(move || {
                work();
                after();
            }),
            Work::Async(work) => Work::future(async move {
                work.await;
                after();
            }),
        }
    }

    /// Runs the work on this thread to its end (a future with a local executor): for
    /// callers that have a thread for it anyway, and tests.
    pub fn run_here(self) {
        match self {
            Work::Blocking(work) => work(),
            Work::Async(work) => block_on(work),
        }
    }

    /// Starts the work outside an async runtime: blocking work on a new thread, a future
    /// on the process's executor threads ([`EXECUTOR_THREADS`], started on first use).
    /// If the executor could not be started, a future gets a thread of its own instead.
    pub fn start(self) {
        match self {
            Work::Blocking(work) => {
                thread::spawn(work);
            }
            Work::Async(work) if EXECUTOR.is_some() => Spawned::schedule(Arc::new(Spawned {
                future: Mutex::new(Some(work)),
                queued: AtomicBool::new(false),
            })),
            Work::Async(work) => {
                thread::spawn(move || block_on(work));
            }
        }
    }
}

/// A timer's wait, boxed ([`Timer::sleep`]).
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Where the waits of handlers and their contexts come from ([`Context::sleep`], answer
/// deadlines, a cancel's grace). A transport on an async runtime supplies the runtime's
/// timer (the HTTP transport does: tokio's); the default needs no runtime
/// ([`RuntimeFreeTimer`]).
///
/// [`Context::sleep`]: crate::Context::sleep
pub trait Timer: Send + Sync + 'static {
    /// A future that completes after `duration`. It may be polled from any thread.
    fn sleep(&self, duration: Duration) -> Sleep;
}

/// The timer that needs no runtime: `futures-timer`'s, one thread of its own for every wait
/// of the process.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeFreeTimer;

impl Timer for RuntimeFreeTimer {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(futures_timer::Delay::new(duration))
    }
}

/// `future`'s output if it is ready within `limit` (on a runtime-free timer), else `None`
/// (`future` is dropped).
pub async fn within<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    within_on(&RuntimeFreeTimer, limit, future).await
}

/// `future`'s output if it is ready within `limit` (on `timer`), else `None` (`future` is
/// dropped).
pub async fn within_on<F: Future>(
    timer: &dyn Timer,
    limit: Duration,
    future: F,
) -> Option<F::Output> {
    let mut timer = timer.sleep(limit);
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// Runs blocking `work` on a thread of its own; the future resolves with what it returned,
/// or with its panic's message (or why no thread could be started).
pub fn on_thread<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> impl Future<Output = Result<R, String>> + Send {
    let (done, finished) = oneshot();
    let started = thread::Builder::new()
        .name("mcp-tasks-blocking".into())
        .spawn(move || done.send(crate::handler::catch(work)));
    let refused = started
        .err()
        .map(|err| format!("no thread could be started for the work: {err}"));
    async move {
        if let Some(refused) = refused {
            return Err(refused);
        }
        finished
            .await
            .unwrap_or_else(|| Err("the work's thread ended without an answer".to_owned()))
    }
}

/// A value handed once from one side (any thread) to a future ([`oneshot`]).
struct OneShot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    /// The sender is gone (sent, or dropped without sending).
    closed: bool,
}

/// The sending half of a [`oneshot`].
pub struct OneShotSender<T>(Arc<Mutex<OneShot<T>>>);

impl<T> OneShotSender<T> {
    /// Hands `value` to the receiver (dropped if the receiver is gone).
    pub fn send(self, value: T) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        slot.value = Some(value);
        // `Drop` closes it and wakes the receiver.
    }
}

impl<T> Drop for OneShotSender<T> {
    fn drop(&mut self) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        slot.closed = true;
        if let Some(waker) = slot.waker.take() {
            waker.wake();
        }
    }
}

/// A channel for one value, from any thread to a future that needs no runtime: the future
/// resolves with `Some(value)`, or `None` if the sender was dropped without sending.
pub fn oneshot<T: Send>() -> (OneShotSender<T>, impl Future<Output = Option<T>> + Send) {
    let slot = Arc::new(Mutex::new(OneShot {
        value: None,
        waker: None,
        closed: false,
    }));
    let receiver = Arc::clone(&slot);
    let future = std::future::poll_fn(move |cx| {
        let mut slot = receiver.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Some(value));
        }
        if slot.closed {
            return Poll::Ready(None);
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    });
    (OneShotSender(slot), future)
}

/// Polls `future` on this thread until it is ready, parking the thread between wakes.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        thread::park();
    }
}

/// A future spawned on the executor: polled by whichever executor thread takes it off the
/// queue; its waker puts it back (once, however often it is woken before that).
struct Spawned {
    /// The future; `None` once it is done.
    future: Mutex<Option<TaskFuture>>,
    /// Whether it is in the queue (or about to be).
    queued: AtomicBool,
}

impl Spawned {
    /// Queues it for a poll, unless it is queued already (only spawned once the executor
    /// runs).
    fn schedule(self: Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel)
            && let Some(queue) = &*EXECUTOR
        {
            // The receiving threads live as long as the process.
            let _ = queue.send(self);
        }
    }

    /// Polls the future once (a wake during the poll queues it again).
    fn poll(self: Arc<Self>) {
        self.queued.store(false, Ordering::Release);
        let waker = Waker::from(Arc::clone(&self));
        let mut context = Context::from_waker(&waker);
        let mut slot = self.future.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(future) = slot.as_mut()
            && future.as_mut().poll(&mut context).is_ready()
        {
            *slot = None;
        }
    }
}

impl Wake for Spawned {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }
}

/// The queue of the executor [`Work::start`] spawns futures on: [`EXECUTOR_THREADS`]
/// threads, for the life of the process, started on first use (`None` if none could be).
static EXECUTOR: LazyLock<Option<Sender<Arc<Spawned>>>> = LazyLock::new(|| {
    let (queue, woken) = mpsc::channel::<Arc<Spawned>>();
    let woken = Arc::new(Mutex::new(woken));
    let started = (0..EXECUTOR_THREADS)
        .filter(|n| {
            let woken = Arc::clone(&woken);
            thread::Builder::new()
                .name(format!("mcp-tasks-work-{n}"))
                .spawn(move || run_executor(&woken))
                .is_ok()
        })
        .count();
    (started > 0).then_some(queue)
});

/// One executor thread: polls what was woken, until the process ends.
fn run_executor(woken: &Mutex<Receiver<Arc<Spawned>>>) {
    loop {
        let next = woken.lock().unwrap_or_else(PoisonError::into_inner).recv();
        match next {
            Ok(spawned) => spawned.poll(),
            Err(_) => return,
        }
    }
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Work::Blocking(_) => "Work::Blocking",
            Work::Async(_) => "Work::Async",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn either_kind_runs_then_its_continuation_where_it_is_started() {
        for async_work in [false, true] {
            let (sender, events) = mpsc::channel();
            let (ran, then) = (sender.clone(), sender);
            let work = if async_work {
                Work::future(async move { ran.send("ran").unwrap() })
            } else {
                Work::blocking(move || ran.send("ran").unwrap())
            };
            work.then(move || then.send("then").unwrap()).start();
            let wait = Duration::from_secs(10);
            assert_eq!(events.recv_timeout(wait), Ok("ran"));
            assert_eq!(events.recv_timeout(wait), Ok("then"));
        }
    }

    #[test]
    fn within_answers_a_ready_future_and_gives_up_on_a_pending_one() {
        assert_eq!(
            block_on(within(Duration::from_secs(10), async { 7 })),
            Some(7)
        );
        let started = std::time::Instant::now();
        assert_eq!(
            block_on(within(
                Duration::from_millis(30),
                std::future::pending::<()>()
            )),
            None
        );
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    /// The threads of this process.
    fn threads() -> usize {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("Threads:"))
                    .and_then(|count| count.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    #[test]
    fn many_waiting_futures_share_the_executor_threads() {
        // 1,000 futures that each wait for a gate: none holds a thread meanwhile.
        let (done, finished) = mpsc::channel();
        let mut gates = Vec::new();
        for _ in 0..1_000 {
            let (open, gate) = gate::gate();
            gates.push(open);
            let done = done.clone();
            Work::future(async move {
                gate.await;
                done.send(()).unwrap();
            })
            .start();
        }
        let waiting = threads();
        assert!(
            waiting < 100,
            "1,000 waiting futures hold {waiting} threads (the test harness's included)"
        );
        for open in gates {
            open();
        }
        for _ in 0..1_000 {
            finished
                .recv_timeout(Duration::from_secs(10))
                .expect("every future ended");
        }
    }

    /// A one-shot gate without another crate: a future that is ready once opened.
    mod gate {
        use std::future::Future;
        use std::pin::Pin;
        use std::sync::{Arc, Mutex};
        use std::task::{Context, Poll, Waker};

        #[derive(Default)]
        struct State {
            open: bool,
            waker: Option<Waker>,
        }

        pub struct Gate(Arc<Mutex<State>>);

        impl Future for Gate {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                let mut state = self.0.lock().unwrap();
                if state.open {
                    Poll::Ready(())
                } else {
                    state.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }

        pub fn gate() -> (impl FnOnce(), Gate) {
            let state = Arc::new(Mutex::new(State::default()));
            let opener = Arc::clone(&state);
            let open = move || {
                let mut state = opener.lock().unwrap();
                state.open = true;
                if let Some(waker) = state.waker.take() {
                    waker.wake();
                }
            };
            (open, Gate(state))
        }
    }
}
