//! [`SqliteDriver`]: the [`Driver`] of the shared store on one SQLite file. A read is one
//! `SELECT`; every change is one `BEGIN IMMEDIATE` transaction that reads the task's row,
//! decides as the contract says, writes the row and appends its event, and commits: the
//! whole of it or nothing.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_tasks::backend::{
    Condition, Driver, FeedSink, Inserted, LapsedLease, LeaseCall, LeaseOp, Listed, Listening,
    NewTask, Position, Renewal, Scan, StoredOrigin, StoredRow, TaskFilter, TaskKey, Versioned,
    Write, Wrote, decode,
};
use mcp_tasks::{AnyTask, Error, LimitScope, Owner, TaskStatus, Timestamp};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::connection::Engine;
use crate::feed::{self, EVENT_WINDOW_MS, Nudge};

/// The most expired rows one sweep deletes.
const SWEEP_BATCH: i64 = 1_000;

/// The largest record an event carries (a larger one is read when a change needs it).
const EVENT_RECORD_MAX: usize = 8_000;

/// Whether a task in `status` is finished (holds no lease, moves to no other status).
fn finished(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// A count or duration in milliseconds as an SQLite integer.
fn int(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// The machine's clock in Unix milliseconds: the clock of every process on the file.
fn clock() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| int(since.as_millis()))
}

/// The event text of a write ([`ChangeEvent::parse`](mcp_tasks::backend::ChangeEvent::parse)).
fn written_event(
    key: &TaskKey,
    notify: bool,
    version: i64,
    status: &str,
    created: i64,
    updated: i64,
    body: &str,
) -> String {
    let head = format!(
        "{}\n{}\n{}\n{version}\n{status}",
        key.owner_tag(),
        key.id(),
        if notify { '1' } else { '0' }
    );
    if body.len() <= EVENT_RECORD_MAX {
        format!("{head}\n{created}\n{updated}\n{body}")
    } else {
        head
    }
}

/// The driver of a shared store in one SQLite file: what a
/// [`SqliteTaskStore`](crate::SqliteTaskStore) runs on, and what the store test kit holds
/// to the driver contract
/// ([`SqliteStoreBuilder::build_driver`](crate::SqliteStoreBuilder::build_driver)).
#[derive(Debug)]
pub struct SqliteDriver {
    engine: Engine,
    nudge: Arc<Nudge>,
    feed_poll: Duration,
}

impl SqliteDriver {
    pub(crate) fn new(engine: Engine, feed_poll: Duration) -> Self {
        SqliteDriver {
            engine,
            nudge: Arc::new(Nudge::default()),
            feed_poll,
        }
    }

    /// The file the tasks are kept in.
    #[must_use]
    pub fn path(&self) -> &std::path::Path {
        self.engine.path()
    }

    /// Runs `change` in one `BEGIN IMMEDIATE` transaction, committed if it answers `Ok`
    /// with `true` beside its answer (rolled back otherwise: nothing of it is written).
    fn change<T>(
        &self,
        what: &str,
        change: impl FnOnce(&Transaction<'_>, i64) -> rusqlite::Result<(bool, T)>,
    ) -> Result<T, Error> {
        let mut connection = self.engine.writer()?;
        let options = &self.engine.options;
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| options.fault(what, err))?;
        let (commit, answer) =
            change(&transaction, clock()).map_err(|err| options.fault(what, err))?;
        if commit {
            transaction
                .commit()
                .map_err(|err| options.fault(what, err))?;
            drop(connection);
            self.nudge.committed();
        }
        Ok(answer)
    }

    fn read_row<T>(
        &self,
        sql: &str,
        key: &TaskKey,
        map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, Error> {
        let (id, owner) = (key.id().to_string(), key.owner_tag());
        self.engine.read(|connection: &Connection| {
            connection
                .prepare_cached(sql)?
                .query_row(params![id, owner, clock()], map)
                .optional()
        })
    }
}

/// The task of a row's columns from `at` on: status, body, created, updated.
fn task_at(
    row: &rusqlite::Row<'_>,
    id: &str,
    at: usize,
) -> rusqlite::Result<Result<AnyTask, Error>> {
    let status: String = row.get(at)?;
    let body: String = row.get(at + 1)?;
    let created: i64 = row.get(at + 2)?;
    let updated: i64 = row.get(at + 3)?;
    Ok(decode(id, &status, created, updated, &body))
}

/// `expires` is live at `now`.
const LIVE: &str = "(expires IS NULL OR expires > ?3)";

impl Driver for SqliteDriver {
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error> {
        let id = key.id().to_string();
        let now = clock();
        let found = self.read_row(
            &format!(
                "SELECT version, status, body, created, updated, expires FROM tasks \
                 WHERE id = ?1 AND owner = ?2 AND {LIVE}"
            ),
            key,
            |row| {
                let expires: Option<i64> = row.get(5)?;
                Ok((row.get::<_, i64>(0)?, task_at(row, &id, 1)?, expires))
            },
        )?;
        found
            .map(|(version, task, expires)| {
                Ok(Versioned {
                    version: version.unsigned_abs(),
                    task: task?,
                    expires_in: expires
                        .map(|at| Duration::from_millis((at - now).max(0).unsigned_abs())),
                })
            })
            .transpose()
    }

    /// One transaction: the id's absence, the per-owner count (exact: the transaction
    /// holds the file's write lock), the total (the row count the triggers keep, less the
    /// expired rows it deletes when it is reached), the owner's next sequence, the row,
    /// its event.
    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error> {
        let key = new.key;
        let (id, owner) = (key.id().to_string(), key.owner_tag());
        self.change("cannot store a new task", |tx, now| {
            let exists: Option<i64> = tx
                .prepare_cached("SELECT 1 FROM tasks WHERE id = ?1")?
                .query_row([&id], |row| row.get(0))
                .optional()?;
            if exists.is_some() {
                return Ok((
                    false,
                    Err(Error::store(format!("a task with id {id} exists"))),
                ));
            }
            if let Some(limit) = new.limits.per_owner {
                let n: i64 = tx
                    .prepare_cached(
                        "SELECT count(*) FROM tasks WHERE owner = ?1 AND \
                         (expires IS NULL OR expires > ?2)",
                    )?
                    .query_row(params![owner, now], |row| row.get(0))?;
                if n >= int(limit) {
                    return Ok((false, Ok(Inserted::Full(LimitScope::PerOwner))));
                }
            }
            if let Some(limit) = new.limits.total {
                let count = |tx: &Transaction<'_>| -> rusqlite::Result<i64> {
                    tx.query_row("SELECT tasks FROM tally", [], |row| row.get(0))
                };
                if count(tx)? >= int(limit) {
                    tx.execute("DELETE FROM tasks WHERE expires <= ?1", [now])?;
                    if count(tx)? >= int(limit) {
                        return Ok((false, Ok(Inserted::Full(LimitScope::Total))));
                    }
                }
            }
            let seq: i64 = tx
                .prepare_cached(
                    "INSERT INTO owners (owner, seq) VALUES (?1, ?2) ON CONFLICT (owner) \
                     DO UPDATE SET seq = max(seq + 1, excluded.seq) RETURNING seq",
                )?
                .query_row(params![owner, now], |row| row.get(0))?;
            let lease = new.lease.map(|lease| now + int(lease.as_millis().max(1)));
            tx.prepare_cached(
                "INSERT INTO tasks (id, owner, seq, version, status, body, created, updated, \
                 expires, request_id, method, job, lease, lease_attempt, lease_holder) \
                 VALUES (?1, ?2, ?3, 1, 'working', ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                id,
                owner,
                seq,
                new.body,
                now,
                new.ttl.map(|ttl| now.saturating_add(int(ttl))),
                new.request_id,
                new.method,
                new.job,
                lease,
                (new.job.is_some() && lease.is_some()).then_some(1),
                lease.map(|_| new.holder),
            ])?;
            event(
                tx,
                now,
                &written_event(key, false, 1, "working", now, now, new.body),
            )?;
            Ok((
                true,
                Ok(Inserted::Created(Timestamp::from_unix_millis(now))),
            ))
        })?
    }

    /// One transaction: the row as stored, the version, the lease condition and the
    /// spec's table checked on it, then the row and its event written.
    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error> {
        let key = write.key;
        let (id, owner) = (key.id().to_string(), key.owner_tag());
        let status = write.task.status().as_str();
        self.change("cannot write a task", |tx, now| {
            let row = tx
                .prepare_cached(&format!(
                    "SELECT version, status, body, created, updated, lease, lease_attempt, \
                     lease_holder, job FROM tasks WHERE id = ?1 AND owner = ?2 AND {LIVE}"
                ))?
                .query_row(params![id, owner, now], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        task_at(row, &id, 1)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(3)?,
                        row.get::<_, i64>(4)?,
                        row.get::<_, Option<i64>>(5)?,
                        row.get::<_, Option<i64>>(6)?,
                        row.get::<_, Option<String>>(7)?,
                        row.get::<_, Option<String>>(8)?,
                    ))
                })
                .optional()?;
            let Some((version, task, current, created, updated, lease, attempt, holder, job)) = row
            else {
                return Ok((false, Ok(Wrote::Gone)));
            };
            if version != int(write.version) {
                return Ok((
                    false,
                    task.map(|task| Wrote::Stale(Some((version.unsigned_abs(), task)))),
                ));
            }
            let (mut lease, mut attempt, mut holder) = (lease, attempt, holder);
            match write.condition {
                Condition::Free => {}
                Condition::Lapsed => {
                    if lease.is_none_or(|deadline| deadline > now) {
                        return Ok((false, Ok(Wrote::Held)));
                    }
                }
                Condition::Claim {
                    backoff,
                    lease: length,
                    attempt: next,
                } => {
                    if lease.is_none_or(|deadline| {
                        deadline.saturating_add(int(backoff.as_millis())) > now
                    }) {
                        return Ok((false, Ok(Wrote::Held)));
                    }
                    lease = Some(now + int(length.as_millis().max(1)));
                    attempt = Some(i64::from(next));
                    holder = Some(write.holder.to_owned());
                }
            }
            if current != status && finished(&current) {
                let found = current.parse().unwrap_or(TaskStatus::Completed);
                return Ok((false, Ok(Wrote::Illegal(found))));
            }
            if finished(status) {
                lease = None;
            }
            let stamp = if write.keep_updated {
                updated
            } else {
                now.max(updated)
            };
            let next = version + 1;
            tx.prepare_cached(
                "UPDATE tasks SET version = ?2, status = ?3, body = ?4, updated = ?5, \
                 lease = ?6, lease_attempt = ?7, lease_holder = ?8, \
                 expires = CASE WHEN ?9 THEN ?10 ELSE expires END WHERE id = ?1",
            )?
            .execute(params![
                id,
                next,
                status,
                write.body,
                stamp,
                lease,
                attempt,
                holder,
                write.ttl_changed,
                write.task.ttl().map(|ttl| created.saturating_add(int(ttl))),
            ])?;
            event(
                tx,
                now,
                &written_event(key, write.notify, next, status, created, stamp, write.body),
            )?;
            Ok((
                true,
                Ok(Wrote::Written {
                    at: Timestamp::from_unix_millis(stamp),
                    job: matches!(write.condition, Condition::Claim { .. })
                        .then(|| job.unwrap_or_default()),
                }),
            ))
        })?
    }

    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error> {
        let (id, owner) = (key.id().to_string(), key.owner_tag());
        self.change("cannot remove a task", |tx, now| {
            let found = tx
                .prepare_cached(&format!(
                    "SELECT status, body, created, updated FROM tasks \
                     WHERE id = ?1 AND owner = ?2 AND {LIVE}"
                ))?
                .query_row(params![id, owner, now], |row| task_at(row, &id, 0))
                .optional()?;
            let Some(task) = found else {
                return Ok((false, Ok(None)));
            };
            tx.prepare_cached("DELETE FROM tasks WHERE id = ?1")?
                .execute([&id])?;
            event(tx, now, &format!("{owner}\n{id}\n0"))?;
            Ok((true, task.map(Some)))
        })?
    }

    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error> {
        let tag = mcp_tasks::backend::owner_tag(owner);
        let after = after.map_or(i64::MIN, int);
        let rows = self.engine.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT id, seq, status, body, created, updated FROM tasks \
                     WHERE owner = ?1 AND seq > ?2 AND {LIVE} ORDER BY seq LIMIT ?4"
                ))?
                .query_map(params![tag, after, clock(), int(limit)], |row| {
                    let id: String = row.get(0)?;
                    let position: i64 = row.get(1)?;
                    Ok((position, task_at(row, &id, 2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter()
            .map(|(position, task)| {
                Ok(Listed {
                    position: position.unsigned_abs(),
                    task: task?,
                })
            })
            .collect()
    }

    /// One keyset query on the index of (`seq`, `id`), the status filter in its `WHERE`.
    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        let statuses = filter
            .statuses
            .as_ref()
            .map_or_else(String::new, |statuses| {
                let named: Vec<String> = statuses
                    .iter()
                    .map(|status| format!("'{}'", status.as_str()))
                    .collect();
                format!("AND status IN ({})", named.join(", "))
            });
        let (seq, id) = after.map_or((i64::MIN, String::new()), |after| {
            (int(after.seq), after.id.to_string())
        });
        let rows = self.engine.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT id, owner, seq, status, body, created, updated, \
                     CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN NULL \
                     ELSE lease END, \
                     CASE WHEN lease IS NULL OR status IN ('completed', 'failed', 'cancelled') \
                     THEN NULL ELSE lease_holder END \
                     FROM tasks WHERE (seq, id) > (?1, ?2) AND {LIVE} {statuses} \
                     ORDER BY seq, id LIMIT ?4"
                ))?
                .query_map(
                    params![seq, id, clock(), int(limit.saturating_add(1))],
                    |row| {
                        let id: String = row.get(0)?;
                        Ok((
                            id.clone(),
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                            task_at(row, &id, 3)?,
                            row.get::<_, Option<i64>>(7)?,
                            row.get::<_, Option<String>>(8)?,
                        ))
                    },
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        let mut rows = rows
            .into_iter()
            .map(|(id, tag, seq, task, lease, holder)| {
                let key = TaskKey::from_tag(&tag, &id)
                    .ok_or_else(|| Error::store(format!("a row of an unknown owner: {id}")))?;
                Ok(StoredRow {
                    position: Position {
                        seq: seq.unsigned_abs(),
                        id: key.id(),
                    },
                    key,
                    task: task?,
                    leased_until: lease.map(Timestamp::from_unix_millis),
                    lease_holder: holder,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = rows.last().filter(|_| more).map(|row| row.position);
        Ok(Scan { rows, next })
    }

    fn origin(&self, key: &TaskKey) -> Result<Option<StoredOrigin>, Error> {
        self.read_row(
            &format!(
                "SELECT request_id, method FROM tasks WHERE id = ?1 AND owner = ?2 AND {LIVE}"
            ),
            key,
            |row| {
                Ok(StoredOrigin {
                    request_id: row.get(0)?,
                    method: row.get(1)?,
                })
            },
        )
    }

    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error> {
        self.read_row(
            &format!("SELECT coalesce(job, '') FROM tasks WHERE id = ?1 AND owner = ?2 AND {LIVE}"),
            key,
            |row| row.get(0),
        )
    }

    /// One transaction for the whole round (none when there is nothing to renew).
    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let length = int(lease.as_millis().max(1));
        self.change("cannot renew leases", |tx, now| {
            let mut verdicts = Vec::with_capacity(calls.len());
            let mut changed = false;
            for call in calls {
                let (id, owner) = (call.key.id().to_string(), call.key.owner_tag());
                let found = tx
                    .prepare_cached(
                        "SELECT status, lease, lease_attempt FROM tasks \
                         WHERE id = ?1 AND owner = ?2",
                    )?
                    .query_row(params![id, owner], |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, Option<i64>>(1)?,
                            row.get::<_, Option<i64>>(2)?,
                        ))
                    })
                    .optional()?;
                let verdict = match found {
                    None | Some((_, None, _)) => "gone",
                    Some((status, _, _)) if finished(&status) => "gone",
                    Some((_, _, held))
                        if call
                            .attempt
                            .is_some_and(|attempt| held != Some(i64::from(attempt))) =>
                    {
                        "gone"
                    }
                    Some((_, Some(deadline), _)) => {
                        let set = match call.op {
                            LeaseOp::Release => Some((None, "released")),
                            _ if deadline < now => None,
                            LeaseOp::HandOver => Some((Some(0), "released")),
                            LeaseOp::Renew => Some((Some(now + length), "ok")),
                        };
                        match set {
                            None => "lapsed",
                            Some((new, verdict)) => {
                                tx.prepare_cached("UPDATE tasks SET lease = ?2 WHERE id = ?1")?
                                    .execute(params![id, new])?;
                                if call.op == LeaseOp::HandOver {
                                    event(tx, now, &format!("{owner}\n{id}\nclaimable"))?;
                                }
                                changed = true;
                                verdict
                            }
                        }
                    }
                };
                verdicts.push(Renewal::from_verdict(verdict));
            }
            Ok((changed, verdicts))
        })
    }

    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error> {
        let rows = self.engine.read(|connection| {
            connection
                .prepare_cached(
                    "SELECT id, owner, lease FROM tasks WHERE lease IS NOT NULL AND lease <= ?1 \
                     AND status NOT IN ('completed', 'failed', 'cancelled') \
                     ORDER BY lease LIMIT ?2",
                )?
                .query_map(params![clock(), int(limit)], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, tag, deadline)| {
                TaskKey::from_tag(&tag, &id).map(|key| LapsedLease {
                    key,
                    handed_over: deadline == 0,
                })
            })
            .collect())
    }

    fn listen(&self, sink: FeedSink) -> Result<Listening, Error> {
        feed::start(&self.engine.options, &self.nudge, self.feed_poll, sink)?;
        Ok(Listening::Feed)
    }

    fn share_secret(&self, mine: u128) -> Result<u128, Error> {
        let shared = self.change("cannot share the cursor secret", |tx, _| {
            tx.execute(
                "INSERT OR IGNORE INTO settings (name, value) VALUES ('cursor-secret', ?1)",
                [format!("{mine:032x}")],
            )?;
            let value: String = tx.query_row(
                "SELECT value FROM settings WHERE name = 'cursor-secret'",
                [],
                |row| row.get(0),
            )?;
            Ok((true, value))
        })?;
        u128::from_str_radix(&shared, 16).map_err(|_| {
            Error::store(format!(
                "the cursor secret in `{}` (table `settings`) is not one this crate wrote: \
                 delete it",
                self.engine.options.shown()
            ))
        })
    }

    fn now(&self) -> Result<Timestamp, Error> {
        Ok(Timestamp::from_unix_millis(clock()))
    }

    /// Deletes expired rows (any instance's), 1,000 per round, and the events older than
    /// a minute; skips the write when there is nothing to delete.
    fn sweep(&self) -> Result<(), Error> {
        let now = clock();
        let due: bool = self.engine.read(|connection| {
            connection
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM tasks WHERE expires <= ?1) \
                     OR coalesce((SELECT at < ?2 AND seq < (SELECT max(seq) FROM events) \
                     FROM events ORDER BY seq LIMIT 1), 0)",
                )?
                .query_row(params![now, now - EVENT_WINDOW_MS], |row| row.get(0))
        })?;
        if !due {
            return Ok(());
        }
        self.change("cannot delete expired tasks", |tx, now| {
            tx.prepare_cached(
                "DELETE FROM tasks WHERE rowid IN \
                 (SELECT rowid FROM tasks WHERE expires <= ?1 LIMIT ?2)",
            )?
            .execute(params![now, SWEEP_BATCH])?;
            // Up to the first event young enough to keep, and never the newest (its key
            // is where the next one's follows).
            tx.prepare_cached(
                "DELETE FROM events WHERE seq < coalesce(\
                 (SELECT seq FROM events WHERE at >= ?1 ORDER BY seq LIMIT 1), \
                 (SELECT max(seq) FROM events))",
            )?
            .execute([now - EVENT_WINDOW_MS])?;
            Ok((true, ()))
        })
    }

    /// Rows `drain/<name>` of the `settings` table (their value: when, in ms).
    fn drained(&self) -> Result<Vec<String>, Error> {
        self.engine.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT substr(name, 7) FROM settings WHERE substr(name, 1, 6) = 'drain/' \
                 ORDER BY name",
            )?;
            let names = statement.query_map([], |row| row.get(0))?;
            names.collect()
        })
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        let name = format!("drain/{name}");
        self.change("cannot keep the drain flag", |tx, now| {
            let changed = if draining {
                tx.execute(
                    "INSERT OR IGNORE INTO settings (name, value) VALUES (?1, ?2)",
                    params![name, now.to_string()],
                )?
            } else {
                tx.execute("DELETE FROM settings WHERE name = ?1", [&name])?
            };
            // Set before: nothing added; cleared: one removed.
            Ok((
                changed > 0,
                if draining { changed == 0 } else { changed == 1 },
            ))
        })
    }
}

/// Appends a change's event, in the change's transaction.
fn event(tx: &Transaction<'_>, now: i64, payload: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT INTO events (at, payload) VALUES (?1, ?2)")?
        .execute(params![now, payload])?;
    Ok(())
}
