//! The claim loop: one thread per instance that takes on the redeliverable tasks whose
//! instance stopped (their lease lapsed, or they were handed over on a graceful shutdown)
//! and runs their handlers again here, from their last checkpoint.
//!
//! ```text
//! loop {
//!     claim one task    -> run it (on the transport's threads), claim the next at once
//!     nothing to claim  -> wait until the store says something may be claimable (1 s at most)
//!     the store failed  -> log, back off (100 ms doubling to 5 s)
//! }
//! ```
//!
//! It runs only over a store shared with other instances ([`Server::is_shared`]): the
//! in-process registry never has anything to claim.

use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::TaskStore;

use crate::server::{Claimed, Server};

/// How long the loop sleeps between claims when nothing is claimable, unless the store
/// wakes it first.
pub const IDLE_WAIT: Duration = Duration::from_secs(1);

/// The first back-off after a store error; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest back-off after store errors.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How often a backing-off loop looks at its stop condition.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// The running claim loop ([`ClaimLoop::start`]).
#[derive(Debug)]
pub struct ClaimLoop {
    thread: JoinHandle<()>,
}

impl ClaimLoop {
    /// Starts the loop on its own thread: each claimed task goes to `run` (which must not
    /// block: start the handler elsewhere, e.g. on a blocking pool, with
    /// [`Claimed::run`]); store errors go to `warn`, one line each (a run of errors says
    /// so once per back-off). The loop ends once `stopped` answers `true` (checked before
    /// every claim, and at least every second).
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start(
        server: Arc<Server>,
        stopped: impl Fn() -> bool + Send + 'static,
        run: impl Fn(Claimed) + Send + 'static,
        warn: impl Fn(String) + Send + 'static,
    ) -> std::io::Result<Self> {
        let thread = thread::Builder::new()
            .name("mcp-tasks-claims".into())
            .spawn(move || claim_loop(&server, &stopped, &run, &warn))?;
        Ok(ClaimLoop { thread })
    }

    /// Whether the loop has ended.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the loop to end (after its stop condition turned `true`), at most
    /// `limit`; answers whether it ended.
    pub fn join_within(self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.thread.is_finished() {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.thread.join();
        true
    }
}

fn claim_loop(
    server: &Server,
    stopped: &dyn Fn() -> bool,
    run: &dyn Fn(Claimed),
    warn: &dyn Fn(String),
) {
    let mut backoff = FIRST_BACKOFF;
    while !stopped() {
        let failed = match server.claim() {
            Ok(Some(claimed)) => {
                run(claimed);
                None
            }
            Ok(None) => server
                .store()
                .wait_for_claimable(Some(IDLE_WAIT))
                .err()
                .map(|err| format!("waiting for claimable tasks: {err}")),
            Err(err) => Some(format!("claiming a task: {err}")),
        };
        match failed {
            None => backoff = FIRST_BACKOFF,
            Some(why) => {
                warn(format!("{why}; trying again in {backoff:?}"));
                sleep_unless(backoff, stopped);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Sleeps `duration`, or less once `stopped` answers `true`.
fn sleep_unless(duration: Duration, stopped: &dyn Fn() -> bool) {
    let deadline = Instant::now() + duration;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if left.is_zero() || stopped() {
            return;
        }
        thread::sleep(left.min(STOP_CHECK));
    }
}
