//! Waits of a shared store: each probe reads the task once; between probes a wait sleeps
//! until its task's change is heard, its expiry, and while the change feed is down (or the
//! driver has none, or its feed may lose a change while up) the fallback poll. A read that fails is tried again every fallback
//! poll, up to the outage timeout (and the wait's own deadline), then answered as
//! [`Error::Store`], never as a state. The core's wait primitive runs the probes blocking
//! or as futures.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::driver::{Driver, TaskKey, Versioned};
use super::store::{Inner, not_found};
use crate::any::AnyTask;
use crate::error::{Error, shorten};
use crate::input::InputResponses;
use crate::store::take_answers;
use crate::store::versioned::{DecidedOn, Written};
use crate::store::wait::{Probe, block, future};
use crate::store::{Owner, StoreFuture};

/// What a wait's check makes of the task it read.
pub(crate) enum Check<R> {
    Done(R),
    /// Read again at once (a write lost a race).
    Again,
    /// Sleep until the task changes.
    Wait,
}

/// A wait for the result: done once the task is terminal.
pub(crate) fn until_terminal(_: &TaskKey, read: Versioned) -> Result<Check<AnyTask>, Error> {
    Ok(if read.task.is_terminal() {
        Check::Done(read.task)
    } else {
        Check::Wait
    })
}

impl<D: Driver> Inner<D> {
    /// One probe of a wait: reads the task and lets `check` decide. A read that fails
    /// ([`Error::Store`]) is tried again every fallback poll until `deadline`, or the
    /// outage timeout after the first failing read began (`failing_since`), then answered.
    fn probe<R>(
        &self,
        key: &TaskKey,
        task_id: &str,
        deadline: Option<Instant>,
        failing_since: &mut Option<Instant>,
        check: &mut impl FnMut(&TaskKey, Versioned) -> Result<Check<R>, Error>,
    ) -> Probe<R> {
        // Taken before the read: a feed that goes down after it has woken the wait.
        let live = self.feed.live();
        let started = Instant::now();
        let read = match self.driver.read(key) {
            Ok(Some(read)) => {
                *failing_since = None;
                read
            }
            Ok(None) => return Probe::Done(Err(not_found(task_id))),
            Err(Error::Store { message, cause }) => {
                let since = *failing_since.get_or_insert(started);
                let outage = since + self.settings.outage();
                let until = deadline.map_or(outage, |deadline| deadline.min(outage));
                return match until.checked_duration_since(Instant::now()) {
                    Some(left) => Probe::Wait(Some(left.min(self.settings.poll()))),
                    _ => Probe::Done(Err(Error::Store {
                        message: format!(
                            "cannot watch task `{}`: the task store has been unreachable for \
                             the last {:?} ({message})",
                            shorten(task_id),
                            since.elapsed(),
                        ),
                        cause,
                    })),
                };
            }
            Err(error) => return Probe::Done(Err(error)),
        };
        let expires_in = read.expires_in;
        match check(key, read) {
            Ok(Check::Done(answer)) => Probe::Done(Ok(answer)),
            Ok(Check::Again) => Probe::Again,
            Ok(Check::Wait) => {
                let mut bound = expires_in.map(|left| left.max(Duration::from_millis(1)));
                if !live || self.lossy_feed.load(Ordering::Relaxed) {
                    // Changes may go unheard until the feed is back (or, for a feed that
                    // sends after commit, if their writer stopped in between): poll.
                    let poll = self.settings.poll();
                    bound = Some(bound.map_or(poll, |bound| bound.min(poll)));
                }
                Probe::Wait(bound)
            }
            Err(error) => Probe::Done(Err(error)),
        }
    }

    /// Blocks until `check` answers for the task, it is gone, or the timeout or its
    /// expiry passes. `check` gets the task as read; it may ask to read again at once.
    pub(crate) fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(&TaskKey, Versioned) -> Result<Check<R>, Error>,
    ) -> Result<R, Error> {
        let key = self.key(owner, task_id)?;
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let listener = self.feed.register(key.clone());
        let mut failing_since = None;
        block(&listener, task_id, timeout, || {
            self.probe(&key, task_id, deadline, &mut failing_since, &mut check)
        })
    }

    /// [`wait_until`](Self::wait_until) as a future (no deadline: the caller's runtime
    /// bounds it). Each probe is one read, made inside `poll`.
    pub(crate) fn wait_until_async<'a, R: Send + 'a>(
        &'a self,
        owner: &Owner,
        task_id: &'a str,
        mut check: impl FnMut(&TaskKey, Versioned) -> Result<Check<R>, Error> + Send + Unpin + 'a,
    ) -> StoreFuture<'a, R> {
        let key = match self.key(owner, task_id) {
            Ok(key) => key,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let listener = self.feed.register(key.clone());
        let mut failing_since = None;
        future(listener, move || {
            self.probe(&key, task_id, None, &mut failing_since, &mut check)
        })
    }

    /// A wait for input: takes the answers of the task as read, if all are there, by a
    /// write decided on that read (read again if another writer came first).
    pub(crate) fn take_input(
        &self,
        key: &TaskKey,
        task_id: &str,
        read: Versioned,
    ) -> Result<Check<InputResponses>, Error> {
        let on = DecidedOn::new(read.version, &read.task);
        let mut task = read.task;
        match take_answers(&mut task, task_id) {
            None => Ok(Check::Wait),
            Some(Err(error)) => Err(error),
            Some(Ok(answers)) => Ok(match self.commit(key, on, &task, false)? {
                Written::Stored(_) => Check::Done(answers),
                Written::Stale(_) => Check::Again,
            }),
        }
    }
}
