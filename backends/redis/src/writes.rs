//! Reads and conditional writes of one task: a read answers the task with its version; a
//! write lands only at the version its change was decided on (else it answers the task as
//! it now is), carrying a write id so that a replay recognizes itself.

use std::time::Duration;

use mcp_tasks::backend::{self, DecidedOn, Written, shorten};
use mcp_tasks::{AnyTask, Error, TaskStatus, Timestamp};

use crate::Inner;
use crate::keys::{Keys, not_found};

/// A random write id (see [`scripts`]).
pub(crate) fn write_id() -> String {
    format!("{:016x}", uuid::Uuid::new_v4().as_u128() as u64)
}

/// A task as read, with its version.
pub(crate) struct Read {
    pub(crate) version: u64,
    pub(crate) task: AnyTask,
    /// Time left before the task expires, if it has a TTL.
    pub(crate) expires_in: Option<Duration>,
}

/// The lease condition of a conditional write.
pub(crate) enum Condition<'a> {
    /// None: the version alone decides.
    None,
    /// Only while the task's lease is lapsed (the reaper's verdict).
    Lapsed,
    /// Only if the task's lease lapsed at least `backoff_ms` ago (a hand-over lapses it
    /// at once, with no back-off); then this instance holds a new lease of `lease_ms`,
    /// filed in the lease `index` (a claim).
    Claim {
        index: &'a str,
        backoff_ms: u64,
        lease_ms: &'a str,
        attempt: u32,
    },
}

impl Condition<'_> {
    /// The name the commit script takes.
    fn name(&self) -> &'static str {
        match self {
            Condition::None => "",
            Condition::Lapsed => "lapsed",
            Condition::Claim { .. } => "claim",
        }
    }
}

/// What a conditional write with a lease condition came to.
pub(crate) enum Wrote {
    /// Written: the task as stored, with the server's time of the write.
    Ok(AnyTask),
    /// A claim written: the task as stored, and its job (JSON text, empty if none).
    Claimed(AnyTask, String),
    /// Not written: another writer came first. With the task as it now is (and its
    /// version) when the script answered it.
    Stale(Option<(u64, AnyTask)>),
}

pub(crate) fn decode(
    id: &str,
    status: &str,
    created: &str,
    updated: &str,
    body: &str,
) -> Result<AnyTask, Error> {
    let millis = |text: &str| {
        text.parse::<i64>()
            .map_err(|_| Error::store(format!("task `{id}` has a bad timestamp `{text}`")))
    };
    backend::decode(id, status, millis(created)?, millis(updated)?, body)
}

/// The server time an `{'ok', millis}` reply of a script carries.
pub(crate) fn stamp(reply: &[String]) -> Result<Timestamp, Error> {
    reply
        .get(1)
        .and_then(|millis| millis.parse().ok())
        .map(Timestamp::from_unix_millis)
        .ok_or_else(|| unexpected(reply))
}

pub(crate) fn unexpected(reply: &[String]) -> Error {
    Error::store(format!(
        "unexpected reply from a script: {reply:?} (do all instances run the same version?)"
    ))
}

impl Inner {
    /// Reads the task `id` of `keys` with its version and remaining lifetime.
    pub(crate) fn read(&self, keys: &Keys, id: &str) -> Result<Option<Read>, Error> {
        let key = keys.task(id);
        let (fields, pttl): (Vec<Option<String>>, i64) = self.with(|connection| {
            redis::pipe()
                .cmd("HMGET")
                .arg(&key)
                .arg(&["v", "s", "b", "c", "u"])
                .cmd("PTTL")
                .arg(&key)
                .query(connection)
        })?;
        // `-2`: the key expired between the two commands, so the task is gone (taking it
        // for a task without expiry would let a waiter sleep past its end).
        if pttl == -2 {
            return Ok(None);
        }
        let [
            Some(version),
            Some(status),
            Some(body),
            Some(created),
            Some(updated),
        ] = <[Option<String>; 5]>::try_from(fields).unwrap_or_default()
        else {
            return Ok(None);
        };
        let task = decode(id, &status, &created, &updated, &body)?;
        let version = version
            .parse()
            .map_err(|_| Error::store(format!("task `{id}` has a bad version `{version}`")))?;
        let expires_in = u64::try_from(pttl).ok().map(Duration::from_millis);
        Ok(Some(Read {
            version,
            task,
            expires_in,
        }))
    }

    /// Writes `task`, decided `on` a version of the task: [`Written::Stale`] if another
    /// writer came first.
    pub(crate) fn commit(
        &self,
        keys: &Keys,
        id: &str,
        on: DecidedOn<u64>,
        task: &AnyTask,
        notify: bool,
    ) -> Result<Written<u64>, Error> {
        Ok(
            match self.write(keys, id, on, task, notify, &Condition::None)? {
                Wrote::Ok(stored) | Wrote::Claimed(stored, _) => Written::Stored(stored),
                Wrote::Stale(current) => Written::Stale(current),
            },
        )
    }

    /// The conditional write of [`commit`](Self::commit), with the script's lease
    /// condition ([`Condition`]): [`Written::Stale`] without the task also when the lease
    /// turned out renewed meanwhile.
    pub(crate) fn write(
        &self,
        keys: &Keys,
        id: &str,
        on: DecidedOn<u64>,
        task: &AnyTask,
        notify: bool,
        condition: &Condition<'_>,
    ) -> Result<Wrote, Error> {
        let DecidedOn { version, ttl } = on;
        let body = backend::encode(task);
        let status = task.status();
        let write = write_id();
        let reply: Vec<String> = self.with(|connection| {
            let mut invocation = self.commit.key(keys.task(id));
            invocation.key(&keys.index).key(&keys.counter);
            if let Condition::Claim { index, .. } = condition {
                invocation.key(*index);
            }
            invocation
                .arg(version.to_string())
                .arg(status.as_str())
                .arg(&body)
                .arg(task.ttl().map(|ttl| ttl.to_string()).unwrap_or_default())
                .arg(if notify { "1" } else { "0" })
                .arg(&self.channel)
                .arg(&keys.tag)
                .arg(id)
                .arg(&write)
                .arg(condition.name())
                .arg(if task.ttl() == ttl { "" } else { "1" })
                .arg((version + 1).to_string());
            if let Condition::Claim {
                backoff_ms,
                lease_ms,
                attempt,
                ..
            } = condition
            {
                invocation.arg(*backoff_ms).arg(*lease_ms).arg(*attempt);
            }
            invocation.invoke(connection)
        })?;
        match reply.first().map(String::as_str) {
            Some("ok") => {
                // What was written, with the server's time of the write.
                let mut stored = task.clone();
                backend::set_last_updated_at(&mut stored, stamp(&reply)?);
                self.copies.remember(keys.task(id), version + 1, &stored);
                match condition {
                    Condition::Claim { .. } => {
                        let job = reply.get(2).cloned().unwrap_or_default();
                        Ok(Wrote::Claimed(stored, job))
                    }
                    _ => Ok(Wrote::Ok(stored)),
                }
            }
            Some("stale") => match &reply[1..] {
                [version, status, body, created, updated] => {
                    let version = version.parse().map_err(|_| unexpected(&reply))?;
                    let task = decode(id, status, created, updated, body)?;
                    Ok(Wrote::Stale(Some((version, task))))
                }
                _ => Ok(Wrote::Stale(None)),
            },
            Some("renewed") => Ok(Wrote::Stale(None)),
            Some("gone") => Err(not_found(id)),
            Some("illegal") => {
                let from = reply
                    .get(1)
                    .and_then(|status| status.parse().ok())
                    .unwrap_or(TaskStatus::Completed);
                Err(Error::IllegalTransition {
                    task_id: id.to_owned(),
                    from,
                    to: status,
                    message: format!(
                        "task `{}` is `{from}` in the shared store; `{status}` cannot follow it",
                        shorten(id)
                    ),
                })
            }
            _ => Err(unexpected(&reply)),
        }
    }
}
