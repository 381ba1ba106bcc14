//! [`RedisDriver`]: the [`Driver`] of the shared store on Redis. Every read-check-write is
//! one of the [`scripts`](crate::scripts), run atomically by the server; a read is one
//! `HMGET` (with the task's `PTTL`).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{
    Condition, Driver, FeedSink, Inserted, LapsedLease, LeaseCall, Listed, Listening, NewTask,
    Position, Renewal, Scan, StoredOrigin, StoredRow, TaskFilter, TaskKey, Versioned, Write, Wrote,
};
use mcp_tasks::{AnyTask, Error, LimitScope, Owner, TaskStatus, Timestamp};
use redis::{Client, Connection, Script};

use crate::keys::Keys;
use crate::mux::Mux;
use crate::scripts;

/// How long the sweep of the store-wide index waits between rounds.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// The most index entries one sweep round looks at.
const SWEEP_BATCH: usize = 1_000;

/// The most index entries one page across owners looks at, per task asked for.
const PAGE_BUDGET: usize = 10;

/// The driver of a shared store on one Redis and key prefix: what a
/// [`RedisTaskStore`](crate::RedisTaskStore) runs on, and what the store test kit holds to
/// the driver contract ([`RedisStoreBuilder::build_driver`](crate::RedisStoreBuilder::build_driver)).
pub struct RedisDriver {
    pub(crate) client: Client,
    pub(crate) pool: Mutex<Vec<Connection>>,
    /// The shared connection the changes (creates and commits) are sent on.
    pub(crate) mux: Mux,
    /// Counts the failed connections of the pool.
    pub(crate) broken: AtomicU64,
    pub(crate) io_timeout: Duration,
    pub(crate) prefix: String,
    pub(crate) channel: String,
    /// The store-wide lease index.
    leases: String,
    /// The store-wide index of every task and its counter, unless on a Redis Cluster.
    all: Option<(String, String)>,
    /// When the next sweep of the store-wide index is due, and where it starts.
    sweep: Mutex<(Instant, String)>,
    create: Script,
    commit: Script,
    remove: Script,
    list: Script,
    list_all: Script,
    renew: Script,
    lapsed: Script,
    prune: Script,
}

impl std::fmt::Debug for RedisDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDriver")
            .field("prefix", &self.prefix)
            .field("io_timeout", &self.io_timeout)
            .field("store_wide_index", &self.all.is_some())
            .finish_non_exhaustive()
    }
}

/// A random write id (see [`scripts`]).
fn write_id() -> String {
    format!("{:016x}", uuid::Uuid::new_v4().as_u128() as u64)
}

fn decode(
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
    mcp_tasks::backend::decode(id, status, millis(created)?, millis(updated)?, body)
}

/// The server time an `{'ok', millis}` reply of a script carries.
fn stamp(reply: &[String]) -> Result<Timestamp, Error> {
    reply
        .get(1)
        .and_then(|millis| millis.parse().ok())
        .map(Timestamp::from_unix_millis)
        .ok_or_else(|| unexpected(reply))
}

fn unexpected<T: std::fmt::Debug>(reply: &[T]) -> Error {
    Error::store(format!(
        "unexpected reply from a script: {reply:?} (do all instances run the same version?)"
    ))
}

/// A whole number as the scripts take it.
fn number(value: impl TryInto<u64>) -> String {
    value.try_into().unwrap_or(u64::MAX).to_string()
}

/// Adds `value` to `cmd` as the scripts take an optional number (`''` for none).
fn optional(cmd: &mut redis::Cmd, value: Option<u64>) -> &mut redis::Cmd {
    match value {
        Some(value) => cmd.arg(value),
        None => cmd.arg(""),
    }
}

/// The `EVALSHA` of `script` on `keys` keys, which the caller adds, then the script's
/// arguments; `bytes`: the longest of them (the record), to size the command once.
///
/// The scripts run on every change are built so, in one buffer, rather than by
/// [`Script::key`] and [`Script::arg`], which copy each argument into a vector of its own
/// first, then all of them into the command.
fn evalsha(script: &Script, keys: usize, bytes: usize) -> redis::Cmd {
    let mut cmd = redis::Cmd::with_capacity(keys + 24, bytes + 512);
    cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys);
    cmd
}

/// A duration in milliseconds as the scripts take it (at least 1).
fn millis(duration: Duration) -> String {
    number(duration.as_millis().max(1))
}

impl RedisDriver {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        client: Client,
        connection: Connection,
        io_timeout: Duration,
        prefix: String,
        store_wide_index: bool,
    ) -> Self {
        let script = |source| Script::new(&scripts::source(source));
        RedisDriver {
            client,
            pool: Mutex::new(vec![connection]),
            mux: Mux::default(),
            broken: AtomicU64::new(0),
            io_timeout,
            channel: format!("{prefix}:events"),
            leases: format!("{prefix}:leases"),
            all: store_wide_index.then(|| (format!("{prefix}:all"), format!("{prefix}:all-n"))),
            sweep: Mutex::new((Instant::now() + SWEEP_EVERY, String::new())),
            prefix,
            create: script(scripts::CREATE),
            commit: script(scripts::COMMIT),
            remove: script(scripts::REMOVE),
            list: script(scripts::LIST),
            list_all: script(scripts::PAGE_ALL),
            renew: script(scripts::RENEW),
            lapsed: script(scripts::LAPSED),
            prune: script(scripts::SWEEP),
        }
    }

    /// The key prefix the tasks are kept under.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn keys(&self, owner: &Owner) -> Keys {
        Keys::new(&self.prefix, mcp_tasks::backend::owner_tag(owner))
    }

    /// The key of a task key (`{prefix}:{tag}:t:{id}`) as a [`TaskKey`].
    fn parse_task_key(&self, key: &str) -> Option<TaskKey> {
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix(":{")?;
        let (tag, id) = rest.split_once("}:t:")?;
        TaskKey::from_tag(tag, id)
    }
}

impl Driver for RedisDriver {
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error> {
        let id = key.id().to_string();
        let task_key = self.keys(key.owner()).task(&id);
        let (fields, pttl): (Vec<Option<String>>, i64) = self.with(|connection| {
            redis::pipe()
                .cmd("HMGET")
                .arg(&task_key)
                .arg(&["v", "s", "b", "c", "u"])
                .cmd("PTTL")
                .arg(&task_key)
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
        let task = decode(&id, &status, &created, &updated, &body)?;
        let version = version
            .parse()
            .map_err(|_| Error::store(format!("task `{id}` has a bad version `{version}`")))?;
        let expires_in = u64::try_from(pttl).ok().map(Duration::from_millis);
        Ok(Some(Versioned {
            version,
            task,
            expires_in,
        }))
    }

    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error> {
        let id = new.key.id().to_string();
        let keys = self.keys(new.key.owner());
        // Chosen before the call, so that a replay recognizes its own write.
        let write = write_id();
        let key_count = 3 + usize::from(new.lease.is_some()) + 2 * usize::from(self.all.is_some());
        let mut cmd = evalsha(&self.create, key_count, new.body.len());
        cmd.arg(keys.task(&id)).arg(&keys.index).arg(&keys.counter);
        if new.lease.is_some() {
            cmd.arg(&self.leases);
        }
        if let Some((all, counter)) = &self.all {
            cmd.arg(all).arg(counter);
        }
        cmd.arg(&id).arg(new.body);
        optional(&mut cmd, new.ttl)
            .arg(new.limits.per_owner.map(number).unwrap_or_default())
            .arg(new.request_id)
            .arg(new.method)
            .arg(&write)
            .arg(new.lease.map(millis).unwrap_or_default())
            .arg(&self.channel)
            .arg(&keys.tag)
            .arg(new.job.unwrap_or_default())
            .arg(if self.all.is_some() { "1" } else { "" })
            .arg(new.holder);
        let reply: Vec<String> = self.change(&self.create, &cmd)?;
        match reply.first().map(String::as_str) {
            Some("ok") => Ok(Inserted::Created(stamp(&reply)?)),
            Some("limit") => Ok(Inserted::Full(LimitScope::PerOwner)),
            _ => Err(unexpected(&reply)),
        }
    }

    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error> {
        let id = write.key.id().to_string();
        let keys = self.keys(write.key.owner());
        let version = write.version;
        let status = write.task.status();
        let (condition, claim) = match write.condition {
            Condition::Free => ("", None),
            Condition::Lapsed => ("lapsed", None),
            Condition::Claim {
                backoff,
                lease,
                attempt,
            } => ("claim", Some((backoff, lease, attempt))),
        };
        let write_id = write_id();
        // The index and counter only where the script touches them (a new ttl).
        let key_count = 1 + usize::from(claim.is_some()) + 2 * usize::from(write.ttl_changed);
        let mut cmd = evalsha(&self.commit, key_count, write.body.len());
        cmd.arg(keys.task(&id));
        if claim.is_some() {
            cmd.arg(&self.leases);
        }
        if write.ttl_changed {
            cmd.arg(&keys.index).arg(&keys.counter);
        }
        cmd.arg(version).arg(status.as_str()).arg(write.body);
        optional(&mut cmd, write.task.ttl())
            .arg(if write.notify { "1" } else { "0" })
            .arg(&self.channel)
            .arg(&keys.tag)
            .arg(&id)
            .arg(&write_id)
            .arg(condition)
            .arg(if write.ttl_changed { "1" } else { "" })
            .arg(version + 1);
        match claim {
            Some((backoff, lease, attempt)) => cmd
                .arg(number(backoff.as_millis()))
                .arg(millis(lease))
                .arg(attempt),
            None => cmd.arg("").arg("").arg(""),
        };
        cmd.arg(if write.keep_updated { "1" } else { "" })
            .arg(write.holder);
        let reply: Vec<String> = self.change(&self.commit, &cmd)?;
        match reply.first().map(String::as_str) {
            Some("ok") => Ok(Wrote::Written {
                at: stamp(&reply)?,
                job: claim.map(|_| reply.get(2).cloned().unwrap_or_default()),
            }),
            Some("stale") => match &reply[1..] {
                [version, status, body, created, updated] => {
                    let version = version.parse().map_err(|_| unexpected(&reply))?;
                    let task = decode(&id, status, created, updated, body)?;
                    Ok(Wrote::Stale(Some((version, task))))
                }
                _ => Ok(Wrote::Stale(None)),
            },
            Some("renewed") => Ok(Wrote::Held),
            Some("gone") => Ok(Wrote::Gone),
            Some("illegal") => Ok(Wrote::Illegal(
                reply
                    .get(1)
                    .and_then(|status| status.parse().ok())
                    .unwrap_or(TaskStatus::Completed),
            )),
            _ => Err(unexpected(&reply)),
        }
    }

    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error> {
        let id = key.id().to_string();
        let keys = self.keys(key.owner());
        let write = write_id();
        let fields: Vec<Option<String>> = self.with(|connection| {
            let mut invocation = self.remove.key(keys.task(&id));
            invocation.key(&keys.index).key(keys.tombstone(&id));
            if let Some((all, _)) = &self.all {
                invocation.key(all);
            }
            invocation
                .arg(&id)
                .arg(&self.channel)
                .arg(&keys.tag)
                .arg(&write)
                .arg(scripts::REPLAY_WINDOW_MS)
                .invoke(connection)
        })?;
        match <[Option<String>; 4]>::try_from(fields) {
            Ok([Some(status), Some(body), Some(created), Some(updated)]) => {
                decode(&id, &status, &created, &updated, &body).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error> {
        let keys = self.keys(owner);
        let flat: Vec<String> = self.with(|connection| {
            self.list
                .key(&keys.index)
                .arg(&keys.tasks)
                .arg(after.map(number).unwrap_or_default())
                .arg(limit)
                .invoke(connection)
        })?;
        flat.chunks(6)
            .map(|row| {
                let [id, seq, status, body, created, updated] = row else {
                    return Err(unexpected(row));
                };
                Ok(Listed {
                    position: seq.parse().map_err(|_| unexpected(row))?,
                    task: decode(id, status, created, updated, body)?,
                })
            })
            .collect()
    }

    /// Walks the store-wide index `{prefix}:all`, looking at no more than ten entries per
    /// task asked for; on a Redis Cluster, which keeps no such index, it answers
    /// [`Error::Store`].
    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        let Some((all, _)) = &self.all else {
            return Err(Error::store(
                "listing tasks across owners needs the store-wide index, which a Redis \
                 Cluster cannot keep with each task",
            ));
        };
        let statuses = filter
            .statuses
            .as_ref()
            .map(|statuses| {
                statuses
                    .iter()
                    .fold(",".to_owned(), |list, status| format!("{list}{status},"))
            })
            .unwrap_or_default();
        let flat: Vec<String> = self.with(|connection| {
            self.list_all
                .key(all)
                .arg(after.map(|after| number(after.seq)).unwrap_or_default())
                .arg(limit)
                .arg(limit.saturating_mul(PAGE_BUDGET).max(100))
                .arg(&statuses)
                .invoke(connection)
        })?;
        let Some((next, flat)) = flat.split_first() else {
            return Err(unexpected(&flat));
        };
        let rows = flat
            .chunks(8)
            .map(|row| {
                let [key, seq, status, body, created, updated, lease, holder] = row else {
                    return Err(unexpected(row));
                };
                let key = self.parse_task_key(key).ok_or_else(|| unexpected(row))?;
                let seq = seq.parse().map_err(|_| unexpected(row))?;
                Ok(StoredRow {
                    position: Position { seq, id: key.id() },
                    task: decode(&key.id().to_string(), status, created, updated, body)?,
                    leased_until: lease.parse().ok().map(Timestamp::from_unix_millis),
                    lease_holder: Some(holder.clone()).filter(|holder| !holder.is_empty()),
                    key,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let next = match next.as_str() {
            "" => None,
            seq => Some(Position {
                seq: seq.parse().map_err(|_| unexpected(&[seq]))?,
                id: uuid::Uuid::max(),
            }),
        };
        Ok(Scan { rows, next })
    }

    fn origin(&self, key: &TaskKey) -> Result<Option<StoredOrigin>, Error> {
        let task_key = self.keys(key.owner()).task(&key.id().to_string());
        let (request_id, method): (Option<String>, Option<String>) = self.with(|connection| {
            redis::cmd("HMGET")
                .arg(&task_key)
                .arg(&["r", "m"])
                .query(connection)
        })?;
        Ok(request_id
            .zip(method)
            .map(|(request_id, method)| StoredOrigin { request_id, method }))
    }

    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error> {
        let task_key = self.keys(key.owner()).task(&key.id().to_string());
        let (job, status): (Option<String>, Option<String>) = self.with(|connection| {
            redis::cmd("HMGET")
                .arg(&task_key)
                .arg(&["j", "s"])
                .query(connection)
        })?;
        Ok(status.map(|_| job.unwrap_or_default()))
    }

    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error> {
        let verdicts: Vec<String> = self.with(|connection| {
            let mut invocation = self.renew.key(&self.leases);
            invocation.arg(millis(lease)).arg(&self.channel);
            for call in calls {
                invocation
                    .arg(self.keys(call.key.owner()).task(&call.key.id().to_string()))
                    .arg(call.op.code())
                    // `''` for a task that runs once.
                    .arg(call.attempt.map(number).unwrap_or_default());
            }
            invocation.invoke(connection)
        })?;
        Ok(verdicts
            .iter()
            .map(|verdict| Renewal::from_verdict(verdict))
            .collect())
    }

    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error> {
        let lapsed: Vec<String> =
            self.with(|connection| self.lapsed.key(&self.leases).arg(limit).invoke(connection))?;
        lapsed
            .chunks(2)
            .filter_map(|pair| match pair {
                [key, deadline] => self.parse_task_key(key).map(|key| {
                    Ok(LapsedLease {
                        key,
                        handed_over: deadline == "0",
                    })
                }),
                _ => Some(Err(unexpected(&lapsed))),
            })
            .collect()
    }

    fn listen(&self, sink: FeedSink) -> Result<Listening, Error> {
        let client = self.client.clone();
        let channel = self.channel.clone();
        let io_timeout = self.io_timeout;
        std::thread::Builder::new()
            .name("mcp-tasks-redis".into())
            .spawn(move || crate::subscriber::run(&client, &channel, &sink, io_timeout))
            .map_err(|err| Error::store_caused("cannot start the subscriber thread", err))?;
        Ok(Listening::Feed)
    }

    fn share_secret(&self, mine: u128) -> Result<u128, Error> {
        let key = format!("{}:cursor-secret", self.prefix);
        let shared: String = self.with(|connection| {
            let (_, shared): (Option<String>, String) = redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&key)
                .arg(format!("{mine:032x}"))
                .arg("NX")
                .cmd("GET")
                .arg(&key)
                .query(connection)?;
            Ok(shared)
        })?;
        u128::from_str_radix(&shared, 16).map_err(|_| {
            Error::store(format!(
                "the shared cursor secret is not one this crate wrote: delete the key `{key}`"
            ))
        })
    }

    fn now(&self) -> Result<Timestamp, Error> {
        let (seconds, micros): (i64, i64) =
            self.with(|connection| redis::cmd("TIME").query(connection))?;
        Ok(Timestamp::from_unix_millis(seconds * 1000 + micros / 1000))
    }

    /// Prunes the store-wide index of tasks that expired, a batch every 30 s per instance
    /// (at once again while batches come back full).
    fn sweep(&self) -> Result<(), Error> {
        let Some((all, _)) = &self.all else {
            return Ok(());
        };
        let after = {
            let sweep = self
                .sweep
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if sweep.0 > Instant::now() {
                return Ok(());
            }
            sweep.1.clone()
        };
        let next: String = self.with(|connection| {
            self.prune
                .key(all)
                .arg(&after)
                .arg(SWEEP_BATCH)
                .invoke(connection)
        })?;
        let due = if next.is_empty() {
            Instant::now() + SWEEP_EVERY
        } else {
            Instant::now()
        };
        *self
            .sweep
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = (due, next);
        Ok(())
    }

    fn disconnections(&self) -> u64 {
        self.broken.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The hash `{prefix}:drained`: instance name to the time (ms) it was drained.
    fn drained(&self) -> Result<Vec<String>, Error> {
        let key = format!("{}:drained", self.prefix);
        let mut names: Vec<String> =
            self.with(|connection| redis::cmd("HKEYS").arg(&key).query(connection))?;
        names.sort();
        Ok(names)
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        let key = format!("{}:drained", self.prefix);
        if draining {
            let now = self.now()?.unix_millis();
            // HSETNX: 0 when the field was there already.
            let added: i64 = self.with(|connection| {
                redis::cmd("HSETNX")
                    .arg(&key)
                    .arg(name)
                    .arg(now)
                    .query(connection)
            })?;
            Ok(added == 0)
        } else {
            let removed: i64 =
                self.with(|connection| redis::cmd("HDEL").arg(&key).arg(name).query(connection))?;
            Ok(removed == 1)
        }
    }
}
