//! Waits on Redis: each probe reads the task once while the change feed is up, and waits
//! for the feed (up to the outage timeout) while it is down; the core's wait primitive runs
//! the probes blocking or as futures.

use std::time::{Duration, Instant};

use mcp_tasks::backend::{self, DecidedOn, Probe, Written, shorten, take_answers};
use mcp_tasks::{AnyTask, Error, InputResponses, Owner, StoreFuture};

use crate::Inner;
use crate::keys::{Keys, canonical, not_found};
use crate::writes::Read;

/// What a waiter's check makes of the task it read.
pub(crate) enum Check<R> {
    Done(R),
    /// Read again at once (a write lost a race).
    Again,
    /// Sleep until the task changes.
    Wait,
}

/// A wait for the result: done once the task is terminal.
pub(crate) fn until_terminal(_: &Keys, read: Read) -> Result<Check<AnyTask>, Error> {
    Ok(if read.task.is_terminal() {
        Check::Done(read.task)
    } else {
        Check::Wait
    })
}

impl Inner {
    /// The store is unreachable for a wait that waited `waited` for it.
    pub(crate) fn unavailable(&self, task_id: &str, waited: Duration) -> Error {
        Error::store(format!(
            "cannot watch task `{}`: the subscription to Redis has been down for the last \
             {waited:?}",
            shorten(task_id)
        ))
    }

    /// One probe of a wait (see [`wait`](crate::store::wait)): while the subscription is
    /// down the wait waits for it, up to `deadline` and at most the outage timeout from
    /// when it saw it down (`down_since`), then answers [`Error::Store`]; while it is up,
    /// the task is read and `check` decides.
    pub(crate) fn probe<R>(
        &self,
        keys: &Keys,
        task_id: &str,
        deadline: Option<Instant>,
        down_since: &mut Option<Instant>,
        check: &mut impl FnMut(&Keys, Read) -> Result<Check<R>, Error>,
    ) -> Probe<R> {
        if !self.feed.live() {
            let since = *down_since.get_or_insert_with(Instant::now);
            let outage = since + self.outage_timeout;
            let until = deadline.map_or(outage, |deadline| deadline.min(outage));
            return match until.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Probe::Wait(Some(left)),
                _ => Probe::Done(Err(self.unavailable(task_id, since.elapsed()))),
            };
        }
        *down_since = None;
        let read = match self.read(keys, task_id) {
            Ok(Some(read)) => read,
            Ok(None) => return Probe::Done(Err(not_found(task_id))),
            Err(error) => return Probe::Done(Err(error)),
        };
        let expires_in = read.expires_in;
        match check(keys, read) {
            Ok(Check::Done(answer)) => Probe::Done(Ok(answer)),
            Ok(Check::Again) => Probe::Again,
            Ok(Check::Wait) => {
                Probe::Wait(expires_in.map(|left| left.max(Duration::from_millis(1))))
            }
            Err(error) => Probe::Done(Err(error)),
        }
    }

    /// Blocks until `check` answers for the task, it is gone, or the deadline or its
    /// expiry passes. `check` gets the task as read; it may ask to read again at once.
    pub(crate) fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(&Keys, Read) -> Result<Check<R>, Error>,
    ) -> Result<R, Error> {
        let id = canonical(task_id)?;
        let keys = self.keys(owner);
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let listener = self.feed.register(keys.task(id));
        let mut down_since = None;
        backend::block(&listener, task_id, timeout, || {
            self.probe(&keys, id, deadline, &mut down_since, &mut check)
        })
    }

    /// [`wait_until`](Self::wait_until) as a future (no deadline: the caller's runtime
    /// bounds it). Each probe is one round trip to Redis, made inside `poll`.
    pub(crate) fn wait_until_async<'a, R: Send + 'a>(
        &'a self,
        owner: &Owner,
        task_id: &'a str,
        mut check: impl FnMut(&Keys, Read) -> Result<Check<R>, Error> + Send + Unpin + 'a,
    ) -> StoreFuture<'a, R> {
        let id = match canonical(task_id) {
            Ok(id) => id,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let keys = self.keys(owner);
        let listener = self.feed.register(keys.task(id));
        let mut down_since = None;
        backend::future(listener, move || {
            self.probe(&keys, id, None, &mut down_since, &mut check)
        })
    }
}

impl Inner {
    /// A wait for input: takes the answers of the task as read, if all are there, by a
    /// write decided on that read (read again if another writer came first).
    pub(crate) fn take_input(
        &self,
        keys: &Keys,
        task_id: &str,
        read: Read,
    ) -> Result<Check<InputResponses>, Error> {
        let on = DecidedOn::new(read.version, &read.task);
        let mut task = read.task;
        match take_answers(&mut task, task_id) {
            None => Ok(Check::Wait),
            Some(Err(error)) => Err(error),
            Some(Ok(answers)) => Ok(match self.commit(keys, task_id, on, &task, false)? {
                Written::Stored(_) => Check::Done(answers),
                Written::Stale(_) => Check::Again,
            }),
        }
    }
}
