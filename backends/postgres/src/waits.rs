//! Waits on PostgreSQL: each probe reads the task once; between probes a wait sleeps until
//! its task's notification, its expiry, and while the listening connection is down, the
//! fallback poll. A read that fails is tried again every fallback poll, up to the outage
//! timeout (and the wait's own deadline), then answered as [`Error::Store`], never as a
//! state. The core's wait primitive runs the probes blocking or as futures.

use std::time::{Duration, Instant};

use mcp_tasks::backend::{self, DecidedOn, Probe, Written, shorten, take_answers};
use mcp_tasks::{AnyTask, Error, InputResponses, Owner, StoreFuture};

use crate::Inner;
use crate::rows::{Read, canonical, not_found};

/// What a waiter's check makes of the task it read.
pub(crate) enum Check<R> {
    Done(R),
    /// Read again at once (a write lost a race).
    Again,
    /// Sleep until the task changes.
    Wait,
}

/// A wait for the result: done once the task is terminal.
pub(crate) fn until_terminal(read: Read) -> Result<Check<AnyTask>, Error> {
    Ok(if read.task.is_terminal() {
        Check::Done(read.task)
    } else {
        Check::Wait
    })
}

impl Inner {
    /// One probe of a wait.
    fn probe<R>(
        &self,
        owner: &Owner,
        id: uuid::Uuid,
        task_id: &str,
        deadline: Option<Instant>,
        failing_since: &mut Option<Instant>,
        check: &mut impl FnMut(Read) -> Result<Check<R>, Error>,
    ) -> Probe<R> {
        let live = self.feed.live();
        let read = match self.read(owner, id) {
            Ok(Some(read)) => {
                *failing_since = None;
                read
            }
            Ok(None) => return Probe::Done(Err(not_found(task_id))),
            Err(error @ Error::Store { .. }) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                let outage = since + self.outage_timeout;
                let until = deadline.map_or(outage, |deadline| deadline.min(outage));
                return match until.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => {
                        Probe::Wait(Some(left.min(self.fallback_poll)))
                    }
                    _ => Probe::Done(Err(Error::Store {
                        message: format!(
                            "cannot watch task `{}`: the task store has been unreachable for \
                             the last {:?} ({})",
                            shorten(task_id),
                            since.elapsed(),
                            error
                        ),
                        cause: None,
                    })),
                };
            }
            Err(error) => return Probe::Done(Err(error)),
        };
        let expires_in = read.expires_in;
        match check(read) {
            Ok(Check::Done(answer)) => Probe::Done(Ok(answer)),
            Ok(Check::Again) => Probe::Again,
            Ok(Check::Wait) => {
                let mut bound = expires_in.map(|left| left.max(Duration::from_millis(1)));
                if !live {
                    // Notifications may be lost until the connection is back: poll.
                    bound = Some(bound.map_or(self.fallback_poll, |b| b.min(self.fallback_poll)));
                }
                Probe::Wait(bound)
            }
            Err(error) => Probe::Done(Err(error)),
        }
    }

    /// Blocks until `check` answers for the task, it is gone, or the deadline or its
    /// expiry passes.
    pub(crate) fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(Read) -> Result<Check<R>, Error>,
    ) -> Result<R, Error> {
        let id = canonical(task_id)?;
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let listener = self.feed.register(id);
        let mut failing_since = None;
        backend::block(&listener, task_id, timeout, || {
            self.probe(owner, id, task_id, deadline, &mut failing_since, &mut check)
        })
    }

    /// [`wait_until`](Self::wait_until) as a future (no deadline: the caller's runtime
    /// bounds it). Each probe is one round trip, made inside `poll`.
    pub(crate) fn wait_until_async<'a, R: Send + 'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
        mut check: impl FnMut(Read) -> Result<Check<R>, Error> + Send + Unpin + 'a,
    ) -> StoreFuture<'a, R> {
        let id = match canonical(task_id) {
            Ok(id) => id,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let listener = self.feed.register(id);
        let mut failing_since = None;
        backend::future(listener, move || {
            self.probe(owner, id, task_id, None, &mut failing_since, &mut check)
        })
    }

    /// A wait for input: takes the answers of the task as read, if all are there, by a
    /// write decided on that read (read again if another writer came first).
    pub(crate) fn take_input(
        &self,
        owner: &Owner,
        task_id: &str,
        read: Read,
    ) -> Result<Check<InputResponses>, Error> {
        let id = canonical(task_id)?;
        let on = DecidedOn::new(read.version, &read.task);
        let mut task = read.task;
        match take_answers(&mut task, task_id) {
            None => Ok(Check::Wait),
            Some(Err(error)) => Err(error),
            Some(Ok(answers)) => Ok(match self.commit(owner, id, on, &task, false)? {
                Written::Stored(_) => Check::Done(answers),
                Written::Stale(_) => Check::Again,
            }),
        }
    }
}
