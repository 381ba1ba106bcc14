//! [`PostgresDriver`]: the [`Driver`] of the shared store on PostgreSQL. A read is one
//! `SELECT`; every change is one call of a server-side function ([`schema`](crate::schema))
//! that locks the task's row and decides within one statement.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend::{
    Condition, Driver, FeedSink, Inserted, LapsedLease, LeaseCall, LeaseOp, Listed, Listening,
    NewTask, Position, Renewal, Scan, StoredOrigin, StoredRow, TaskFilter, TaskKey, Versioned,
    Write, Wrote,
};
use mcp_tasks::{AnyTask, Error, LimitScope, Owner, TaskStatus, Timestamp};
use tokio_postgres::Row;

use crate::announce::{self, Announcer};
use crate::connection::{Engine, Params};
use crate::rows::{bigint, column, task_at, unexpected, write_id};
use crate::statements::{COMMIT_TYPES, CREATE_TYPES, Statements};

/// How long a removed task's fields let a replayed removal answer as the first one.
const REPLAY_WINDOW_MS: i64 = 30_000;

/// The most expired rows one sweep deletes.
const SWEEP_BATCH: i64 = 1_000;

/// The driver of a shared store in one PostgreSQL database and schema: what a
/// [`PostgresTaskStore`](crate::PostgresTaskStore) runs on, and what the store test kit
/// holds to the driver contract
/// ([`PostgresStoreBuilder::build_driver`](crate::PostgresStoreBuilder::build_driver)).
pub struct PostgresDriver {
    pub(crate) engine: Engine,
    pub(crate) schema: String,
    pub(crate) channel: String,
    sql: Statements,
    /// Sends the events of this instance's committed writes.
    announcer: Announcer,
}

impl std::fmt::Debug for PostgresDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDriver")
            .field("schema", &self.schema)
            .field("io_timeout", &self.engine.io_timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresDriver {
    pub(crate) fn new(engine: Engine, schema: String) -> Self {
        let channel = format!("mcp_tasks_{schema}");
        PostgresDriver {
            sql: Statements::new(&schema),
            announcer: Announcer::start(&engine, &channel),
            channel,
            schema,
            engine,
        }
    }

    /// The schema the tasks are kept in.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// `text` with `{s}` naming the schema (a statement of the seldom-used drain flags,
    /// kept out of the store's prepared set).
    fn in_schema(&self, text: &str) -> Arc<str> {
        Arc::from(text.replace("{s}", &crate::schema::quoted(&self.schema)))
    }

    /// Runs one of the store's statements.
    fn query(&self, sql: &Arc<str>, params: &Params) -> Result<Vec<Row>, Error> {
        self.engine.query(sql, params)
    }

    /// Runs a statement about the task under `key` (its id and owner tag first, then
    /// `more`).
    fn about(&self, sql: &Arc<str>, key: &TaskKey, more: Params) -> Result<Vec<Row>, Error> {
        let mut params: Params = vec![Box::new(key.id()), Box::new(key.owner_tag())];
        params.extend(more);
        self.query(sql, &params)
    }
}

impl Driver for PostgresDriver {
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error> {
        let rows = self.about(&self.sql.read, key, Vec::new())?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let expires_in: Option<i64> = column(row, 5)?;
        Ok(Some(Versioned {
            version: column::<i64>(row, 0)?.unsigned_abs(),
            task: task_at(row, &key.id(), 1)?,
            expires_in: expires_in.map(|left| Duration::from_millis(left.max(0).unsigned_abs())),
        }))
    }

    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error> {
        let lease = new.lease.map(|lease| bigint(lease.as_millis().max(1)));
        let params: Params = vec![
            Box::new(new.key.id()),
            Box::new(new.key.owner_tag()),
            Box::new(new.body.to_owned()),
            Box::new(new.ttl.map(bigint)),
            Box::new(new.limits.per_owner.map(bigint)),
            Box::new(new.request_id.to_owned()),
            Box::new(new.method.to_owned()),
            Box::new(write_id()),
            Box::new(lease),
            Box::new(new.job.map(str::to_owned)),
            // No channel: the write sends no event; the announcer does, once committed.
            Box::new(None::<String>),
            Box::new(new.holder.to_owned()),
        ];
        let announce = |created: i64| {
            self.announcer.announce(announce::written(
                &new.key.owner_tag(),
                &new.key.id(),
                false,
                1,
                TaskStatus::Working.as_str(),
                created,
                created,
                new.body,
            ));
            Ok(Inserted::Created(Timestamp::from_unix_millis(created)))
        };
        // Without a per-owner limit, one plain statement; when it inserts nothing (the id
        // exists: a replay, or another task), the function answers, with the same
        // parameters.
        if new.limits.per_owner.is_none() {
            let rows = self
                .engine
                .query_typed(&self.sql.create_fast, CREATE_TYPES, &params)?;
            if let Some(row) = rows.first() {
                return announce(column(row, 0)?);
            }
        }
        let rows = self.query(&self.sql.create, &params)?;
        let row = rows.first().ok_or_else(|| unexpected("no row"))?;
        let outcome: String = column(row, 0)?;
        match outcome.as_str() {
            "ok" => announce(column(row, 1)?),
            "limit" => Ok(Inserted::Full(LimitScope::PerOwner)),
            other => Err(unexpected(other)),
        }
    }

    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error> {
        let (condition, backoff, lease, attempt) = match write.condition {
            Condition::Free => ("", None, None, None),
            Condition::Lapsed => ("lapsed", None, None, None),
            Condition::Claim {
                backoff,
                lease,
                attempt,
            } => (
                "claim",
                Some(bigint(backoff.as_millis())),
                Some(bigint(lease.as_millis().max(1))),
                Some(i32::try_from(attempt).unwrap_or(i32::MAX)),
            ),
        };
        let params: Params = vec![
            Box::new(write.key.id()),
            Box::new(write.key.owner_tag()),
            Box::new(bigint(write.version)),
            Box::new(write.task.status().as_str().to_owned()),
            Box::new(write.body.to_owned()),
            Box::new(write.ttl_changed),
            Box::new(write.task.ttl().map(bigint)),
            Box::new(write.notify),
            Box::new(write_id()),
            Box::new(condition.to_owned()),
            Box::new(backoff),
            Box::new(lease),
            Box::new(attempt),
            Box::new(None::<String>),
            Box::new(write.keep_updated),
            Box::new(write.holder.to_owned()),
        ];
        let announce = |version: i64, created: i64, updated: i64| {
            self.announcer.announce(announce::written(
                &write.key.owner_tag(),
                &write.key.id(),
                write.notify,
                version,
                write.task.status().as_str(),
                created,
                updated,
                write.body,
            ));
        };
        let claimed = matches!(write.condition, Condition::Claim { .. });
        // The common case, one plain `UPDATE`; when it does not land, the function decides
        // (with the same parameters, so a replay of either is recognized by the write id).
        let rows = self
            .engine
            .query_typed(&self.sql.commit_fast, COMMIT_TYPES, &params)?;
        if let Some(row) = rows.first() {
            let updated: i64 = column(row, 2)?;
            announce(column(row, 0)?, column(row, 1)?, updated);
            return Ok(Wrote::Written {
                at: Timestamp::from_unix_millis(updated),
                job: if claimed {
                    Some(column::<Option<String>>(row, 3)?.unwrap_or_default())
                } else {
                    None
                },
            });
        }
        let rows = self.query(&self.sql.commit, &params)?;
        let row = rows.first().ok_or_else(|| unexpected("no row"))?;
        let outcome: String = column(row, 0)?;
        match outcome.as_str() {
            "ok" => Ok(Wrote::Written {
                at: {
                    let updated: i64 = column(row, 5)?;
                    announce(column(row, 1)?, column(row, 4)?, updated);
                    Timestamp::from_unix_millis(updated)
                },
                job: if claimed {
                    Some(column::<Option<String>>(row, 6)?.unwrap_or_default())
                } else {
                    None
                },
            }),
            "stale" => Ok(Wrote::Stale(Some((
                column::<i64>(row, 1)?.unsigned_abs(),
                task_at(row, &write.key.id(), 2)?,
            )))),
            "renewed" => Ok(Wrote::Held),
            "gone" => Ok(Wrote::Gone),
            "illegal" => Ok(Wrote::Illegal(
                column::<Option<String>>(row, 2)?
                    .and_then(|status| status.parse().ok())
                    .unwrap_or(TaskStatus::Completed),
            )),
            other => Err(unexpected(other)),
        }
    }

    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error> {
        let rows = self.about(
            &self.sql.remove,
            key,
            vec![
                Box::new(write_id()),
                Box::new(None::<String>),
                Box::new(REPLAY_WINDOW_MS),
            ],
        )?;
        let removed = rows
            .first()
            .map(|row| task_at(row, &key.id(), 0))
            .transpose()?;
        if removed.is_some() {
            self.announcer
                .announce(announce::removed(&key.owner_tag(), &key.id()));
        }
        Ok(removed)
    }

    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error> {
        let rows = self.query(
            &self.sql.list,
            &vec![
                Box::new(mcp_tasks::backend::owner_tag(owner)),
                Box::new(after.map_or(i64::MIN, bigint)),
                Box::new(bigint(limit)),
            ],
        )?;
        rows.iter()
            .map(|row| {
                let id: uuid::Uuid = column(row, 0)?;
                Ok(Listed {
                    position: column::<i64>(row, 1)?.unsigned_abs(),
                    task: task_at(row, &id, 2)?,
                })
            })
            .collect()
    }

    /// One indexed keyset query (`ORDER BY seq, id`), the status filter pushed down.
    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        let statuses: Option<Vec<String>> = filter
            .statuses
            .as_ref()
            .map(|statuses| statuses.iter().map(|s| s.as_str().to_owned()).collect());
        let (seq, id) = after.map_or((i64::MIN, uuid::Uuid::nil()), |after| {
            (bigint(after.seq), after.id)
        });
        let rows = self.query(
            &self.sql.page_all,
            &vec![
                Box::new(seq),
                Box::new(id),
                Box::new(statuses),
                Box::new(bigint(limit.saturating_add(1))),
            ],
        )?;
        let mut rows = rows
            .iter()
            .map(|row| {
                let id: uuid::Uuid = column(row, 0)?;
                let tag: String = column(row, 1)?;
                let lease: Option<i64> = column(row, 7)?;
                let holder: Option<String> = column(row, 8)?;
                Ok(StoredRow {
                    key: TaskKey::from_tag(&tag, &id.to_string())
                        .ok_or_else(|| unexpected("a row of an unknown owner"))?,
                    position: Position {
                        seq: column::<i64>(row, 2)?.unsigned_abs(),
                        id,
                    },
                    task: task_at(row, &id, 3)?,
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
        let rows = self.about(&self.sql.origin, key, Vec::new())?;
        rows.first()
            .map(|row| {
                Ok(StoredOrigin {
                    request_id: column(row, 0)?,
                    method: column(row, 1)?,
                })
            })
            .transpose()
    }

    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error> {
        let rows = self.about(&self.sql.job, key, Vec::new())?;
        rows.first()
            .map(|row| Ok(column::<Option<String>>(row, 0)?.unwrap_or_default()))
            .transpose()
    }

    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error> {
        let ids: Vec<uuid::Uuid> = calls.iter().map(|call| call.key.id()).collect();
        let ops: Vec<String> = calls.iter().map(|call| call.op.code().to_owned()).collect();
        let attempts: Vec<Option<i32>> = calls
            .iter()
            .map(|call| call.attempt.map(|a| i32::try_from(a).unwrap_or(i32::MAX)))
            .collect();
        let rows = self.query(
            &self.sql.renew,
            &vec![
                Box::new(ids),
                Box::new(ops),
                Box::new(attempts),
                Box::new(bigint(lease.as_millis().max(1))),
                Box::new(None::<String>),
            ],
        )?;
        let row = rows.first().ok_or_else(|| unexpected("no renewal"))?;
        let verdicts: Vec<String> = column(row, 0)?;
        for (call, verdict) in calls.iter().zip(&verdicts) {
            if call.op == LeaseOp::HandOver && verdict == "released" {
                self.announcer
                    .announce(announce::claimable(&call.key.owner_tag(), &call.key.id()));
            }
        }
        Ok(verdicts
            .iter()
            .map(|verdict| Renewal::from_verdict(verdict))
            .collect())
    }

    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error> {
        let rows = self.query(&self.sql.lapsed, &vec![Box::new(bigint(limit))])?;
        let mut lapsed = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: uuid::Uuid = column(row, 0)?;
            let tag: String = column(row, 1)?;
            let deadline: i64 = column(row, 2)?;
            if let Some(key) = TaskKey::from_tag(&tag, &id.to_string()) {
                lapsed.push(LapsedLease {
                    key,
                    handed_over: deadline == 0,
                });
            }
        }
        Ok(lapsed)
    }

    fn listen(&self, sink: FeedSink) -> Result<Listening, Error> {
        crate::events::start(&self.engine, &self.channel, sink)?;
        Ok(Listening::FeedAfterCommit)
    }

    fn share_secret(&self, mine: u128) -> Result<u128, Error> {
        let rows = self.query(
            &self.sql.share_secret,
            &vec![Box::new(format!("{mine:032x}"))],
        )?;
        let shared: String = rows
            .first()
            .map(|row| column(row, 0))
            .transpose()?
            .ok_or_else(|| Error::store("the cursor secret could not be shared"))?;
        u128::from_str_radix(&shared, 16).map_err(|_| {
            Error::store(format!(
                "the cursor secret in `{}.settings` is not one this crate wrote: delete it",
                self.schema
            ))
        })
    }

    fn now(&self) -> Result<Timestamp, Error> {
        let rows = self.query(&self.sql.now, &Vec::new())?;
        let millis: i64 = rows
            .first()
            .ok_or_else(|| unexpected("no time"))
            .and_then(|row| column(row, 0))?;
        Ok(Timestamp::from_unix_millis(millis))
    }

    /// Deletes expired rows (any instance's), 1,000 per round.
    fn sweep(&self) -> Result<(), Error> {
        self.query(&self.sql.sweep, &vec![Box::new(SWEEP_BATCH)])
            .map(|_| ())
    }

    /// Rows `drain/<name>` of the `settings` table (their value: when, in ms).
    fn drained(&self) -> Result<Vec<String>, Error> {
        let rows = self.query(
            &self.in_schema(
                "SELECT substr(name, 7) FROM {s}.settings WHERE left(name, 6) = 'drain/' \
                 ORDER BY name",
            ),
            &Vec::new(),
        )?;
        rows.iter().map(|row| column(row, 0)).collect()
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        let sql = if draining {
            "WITH added AS (INSERT INTO {s}.settings (name, value) \
             VALUES ($1, {s}.now_ms()::text) ON CONFLICT (name) DO NOTHING RETURNING 1) \
             SELECT count(*) = 0 FROM added"
        } else {
            "WITH gone AS (DELETE FROM {s}.settings WHERE name = $1 RETURNING 1) \
             SELECT count(*) > 0 FROM gone"
        };
        let params: Params = vec![Box::new(format!("drain/{name}"))];
        let rows = self.query(&self.in_schema(sql), &params)?;
        rows.first()
            .ok_or_else(|| unexpected("no row"))
            .and_then(|row| column(row, 0))
    }
}
