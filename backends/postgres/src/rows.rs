//! Reads and conditional writes of one task: a read answers the task with its version; a
//! write lands only at the version its change was decided on (else it answers the task as
//! it now is), carrying a write id so that a replay recognizes itself.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend::{self, DecidedOn, Written, shorten};
use mcp_tasks::{AnyTask, Error, Owner, TaskStatus};
use tokio_postgres::Row;

use crate::Inner;
use crate::connection::Params;
use crate::owners::owner_tag;

pub(crate) fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

/// Only ids this store could have issued name a task: anything else is unknown.
pub(crate) fn canonical(task_id: &str) -> Result<uuid::Uuid, Error> {
    if backend::is_task_id(task_id) {
        uuid::Uuid::parse_str(task_id).map_err(|_| not_found(task_id))
    } else {
        Err(not_found(task_id))
    }
}

/// A random write id.
pub(crate) fn write_id() -> uuid::Uuid {
    uuid::Uuid::new_v4()
}

/// A task as read, with its version.
pub(crate) struct Read {
    pub(crate) version: i64,
    pub(crate) task: AnyTask,
    /// Time left before the task expires, if it has a TTL.
    pub(crate) expires_in: Option<Duration>,
}

/// The lease condition of a conditional write.
pub(crate) enum Condition {
    /// None: the version alone decides.
    None,
    /// Only while the task's lease is lapsed (the reaper's verdict).
    Lapsed,
    /// Only if the task's lease lapsed at least `backoff_ms` ago (a hand-over lapses it
    /// at once, with no back-off); then this instance holds a new lease of `lease_ms` for
    /// `attempt` (a claim).
    Claim {
        backoff_ms: i64,
        lease_ms: i64,
        attempt: i32,
    },
}

/// What a conditional write with a lease condition came to.
pub(crate) enum Wrote {
    /// Written: the task as stored, with the server's time of the write.
    Ok(AnyTask),
    /// A claim written: the task as stored, and its job (JSON text, empty if none).
    Claimed(AnyTask, String),
    /// Not written: another writer came first. With the task as it now is (and its
    /// version), or without it when the lease condition failed.
    Stale(Option<(i64, AnyTask)>),
}

/// A millisecond count as a ttl or lease parameter.
pub(crate) fn millis(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) fn unexpected(what: &str) -> Error {
    Error::store(format!(
        "unexpected answer from a function of the task store: {what} (do all instances run \
         the same version?)"
    ))
}

/// A column of `row`, or a store error naming it.
pub(crate) fn column<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r Row,
    index: usize,
) -> Result<T, Error> {
    row.try_get(index)
        .map_err(|err| Error::store_caused("a row of the task store is unreadable", err))
}

impl Inner {
    /// Runs one of the store's statements.
    pub(crate) fn query(&self, sql: &Arc<str>, params: Params) -> Result<Vec<Row>, Error> {
        self.engine.query(Arc::clone(sql), params)
    }

    /// Reads the task `id` of `owner` with its version and remaining lifetime.
    pub(crate) fn read(&self, owner: &Owner, id: uuid::Uuid) -> Result<Option<Read>, Error> {
        let rows = self.query(
            &self.sql.read,
            vec![Box::new(id), Box::new(owner_tag(owner))],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let version: i64 = column(row, 0)?;
        let status: String = column(row, 1)?;
        let body: String = column(row, 2)?;
        let created: i64 = column(row, 3)?;
        let updated: i64 = column(row, 4)?;
        let expires_in: Option<i64> = column(row, 5)?;
        let task = backend::decode(&id.to_string(), &status, created, updated, &body)?;
        Ok(Some(Read {
            version,
            task,
            expires_in: expires_in.map(|left| Duration::from_millis(left.max(0).unsigned_abs())),
        }))
    }

    /// Writes `task`, decided `on` a version of the task: [`Written::Stale`] if another
    /// writer came first.
    pub(crate) fn commit(
        &self,
        owner: &Owner,
        id: uuid::Uuid,
        on: DecidedOn<i64>,
        task: &AnyTask,
        notify: bool,
    ) -> Result<Written<i64>, Error> {
        Ok(
            match self.write(owner, id, on, task, notify, &Condition::None)? {
                Wrote::Ok(stored) | Wrote::Claimed(stored, _) => Written::Stored(stored),
                Wrote::Stale(current) => Written::Stale(current),
            },
        )
    }

    /// The conditional write of [`commit`](Self::commit), with a lease condition
    /// ([`Condition`]).
    pub(crate) fn write(
        &self,
        owner: &Owner,
        id: uuid::Uuid,
        on: DecidedOn<i64>,
        task: &AnyTask,
        notify: bool,
        condition: &Condition,
    ) -> Result<Wrote, Error> {
        let DecidedOn { version, ttl } = on;
        let status = task.status();
        let (name, backoff, lease, attempt) = match condition {
            Condition::None => ("", None, None, None),
            Condition::Lapsed => ("lapsed", None, None, None),
            Condition::Claim {
                backoff_ms,
                lease_ms,
                attempt,
            } => ("claim", Some(*backoff_ms), Some(*lease_ms), Some(*attempt)),
        };
        let params: Params = vec![
            Box::new(id),
            Box::new(owner_tag(owner)),
            Box::new(version),
            Box::new(status.as_str().to_owned()),
            Box::new(backend::encode(task)),
            Box::new(task.ttl() != ttl),
            Box::new(task.ttl().map(millis)),
            Box::new(notify),
            Box::new(write_id()),
            Box::new(name.to_owned()),
            Box::new(backoff),
            Box::new(lease),
            Box::new(attempt),
            Box::new(self.channel.clone()),
        ];
        let rows = self.query(&self.sql.commit, params)?;
        let row = rows.first().ok_or_else(|| unexpected("no row"))?;
        let outcome: String = column(row, 0)?;
        match outcome.as_str() {
            "ok" => {
                let new_version: i64 = column(row, 1)?;
                let updated: i64 = column(row, 5)?;
                let mut stored = task.clone();
                backend::set_last_updated_at(
                    &mut stored,
                    mcp_tasks::Timestamp::from_unix_millis(updated),
                );
                self.copies
                    .remember(id, u64::try_from(new_version).unwrap_or(0), &stored);
                match condition {
                    Condition::Claim { .. } => {
                        let job: Option<String> = column(row, 6)?;
                        Ok(Wrote::Claimed(stored, job.unwrap_or_default()))
                    }
                    _ => Ok(Wrote::Ok(stored)),
                }
            }
            "stale" => {
                let version: i64 = column(row, 1)?;
                let status: String = column(row, 2)?;
                let body: String = column(row, 3)?;
                let created: i64 = column(row, 4)?;
                let updated: i64 = column(row, 5)?;
                let task = backend::decode(&id.to_string(), &status, created, updated, &body)?;
                Ok(Wrote::Stale(Some((version, task))))
            }
            "renewed" => Ok(Wrote::Stale(None)),
            "gone" => Err(not_found(&id.to_string())),
            "illegal" => {
                let from: Option<String> = column(row, 2)?;
                let from = from
                    .and_then(|status| status.parse().ok())
                    .unwrap_or(TaskStatus::Completed);
                let id = id.to_string();
                Err(Error::IllegalTransition {
                    message: format!(
                        "task `{}` is `{from}` in the shared store; `{status}` cannot follow it",
                        shorten(&id)
                    ),
                    task_id: id,
                    from,
                    to: status,
                })
            }
            other => Err(unexpected(other)),
        }
    }
}
