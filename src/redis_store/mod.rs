//! [`RedisTaskStore`]: a [`TaskStore`] shared by several server instances through Redis
//! (cargo feature `redis`).
//!
//! An MCP server behind a load balancer runs as several processes, and `tasks/get` or
//! `tasks/result` may reach an instance other than the one running the task. Each
//! instance builds a `RedisTaskStore` on the same Redis (and key prefix); they share the
//! tasks, and every guarantee of the in-process [`TaskRegistry`](crate::TaskRegistry)
//! holds across them.
//!
//! # How it keeps the guarantees
//! - **One state machine, atomic steps.** A change is decided by the core
//!   ([`Update::apply`]) on the task as known with its version, then written by a Lua
//!   script only if the version is unchanged and the move is one the spec's table allows
//!   (checked again by the server); otherwise the script answers the task as it is, and
//!   the instance decides again on that.
//!   So two instances racing a cancellation and a completion cannot both win: the first
//!   terminal status stays, a cancelled task never gains a result, and cancelling a
//!   terminal task is the spec's `-32602`.
//! - **Owners by key layout.** An owner's keys share one hash tag made of its key
//!   (hex-encoded), so they live in one cluster slot and no owner can name another's keys:
//!   another owner's task does not exist for you (the error of an unknown id). Limits per
//!   owner are counted inside the creating script.
//! - **One clock.** `createdAt` and `lastUpdatedAt` come from the Redis server's `TIME`,
//!   written by the scripts: no skew between instances, and `lastUpdatedAt` never moves
//!   backwards.
//! - **TTL is key expiry.** A task's hash expires at `createdAt + ttl` (`PEXPIREAT`), so an
//!   expired task is gone for every instance without a sweeper. The owner's index and
//!   counter expire with its last expiring task.
//! - **Keyset cursors.** Tasks are listed by a per-owner creation sequence; a cursor names
//!   the last one shown and carries a keyed tag under a secret shared through Redis, so a
//!   cursor from one instance continues on another, survives deletions and expiry, and a
//!   forged or foreign cursor is refused.
//! - **Waits without polling.** Every script that changes a task publishes it on the
//!   store's channel in the same atomic step. Each instance runs one subscriber thread
//!   that wakes its local waiters; a waiter registers and waits for a confirmed
//!   subscription *before* it reads the task, so no change is missed; if the subscriber's
//!   connection drops, every waiter reads again after it reconnects; every wait is bounded
//!   by its timeout, by the task's expiry, and while Redis is unreachable by the outage
//!   timeout (see [below](self#faults)).
//! - **Subscribers** ([`TaskStore::subscribe`]) of every instance see the changes made on
//!   any instance, in order, from the moment [`RedisStoreBuilder::build`] returns. Pub/sub
//!   delivers at most once: changes published while an instance's subscriber connection
//!   is down (until it reconnects, with backoff up to a second) reach its waiters, which
//!   read again, but not its subscribers. Status notifications are advisory in MCP
//!   (requestors poll `tasks/get`), so a missed one delays nobody. Subscribers run on the
//!   instance's subscriber thread, which also wakes its waiters: keep them short and hand
//!   anything that blocks (or waits on the store) to another thread.
//!
//! # Faults
//! - **A broken connection is retried once, exactly.** When a request's connection breaks
//!   (Redis restarted, the connection was cut, or Redis did not answer within the
//!   [I/O timeout](RedisStoreBuilder::io_timeout), default 10 s), the instance drops every
//!   pooled connection (all are as old as the broken one) and sends the request once more
//!   on a fresh connection; only if that fails too does the caller get [`Error::Store`].
//!   The first attempt may have been applied with only its reply lost, so every write
//!   carries a random write id stored with what it wrote, and a replay that finds its own
//!   write answers as the first attempt did and changes nothing more: a create answers
//!   the task (not "exists"), a commit answers `ok` (not "changed meanwhile": it is not
//!   decided again), a removal answers the removed task (from a tombstone kept 30 s).
//!   If another writer changed the task between the lost reply and the replay, the
//!   replay cannot tell and the change is decided again on the task as it now is.
//!   A request Redis refuses because it cannot serve yet (`LOADING` while a restarted
//!   Redis reads its AOF, `MASTERDOWN`, `TRYAGAIN`: nothing was run) is sent again with
//!   backoff for up to the I/O timeout.
//! - **Bounded waits.** `tasks/result` and a handler's wait for input watch the task
//!   through the instance's subscription. While it is down (Redis unreachable), a wait
//!   answers [`Error::Store`] (`-32603`, "task store unavailable") at its timeout, never
//!   [`Error::Timeout`] (which would read as "still working"), and at the latest after
//!   the store's [outage timeout](RedisStoreBuilder::outage_timeout) (default 30 s) when it
//!   has no timeout or a longer one. A read or write during the outage answers
//!   [`Error::Store`] as soon as connecting fails, or within a few I/O timeouts (the
//!   request, a fresh connection, the retry) when Redis hangs (connections open, no
//!   answers). The subscription is checked with a
//!   `PING` after a second of silence, so a hung Redis takes it down like a lost one.
//! - **Finished work is not lost to an outage.** A typed handle's finishing write
//!   (`complete`, `fail`, `finish`, `cancel`) carries work already done: when Redis cannot
//!   be reached, it is tried again with backoff (10 ms doubling to 1 s) until it lands, the
//!   task turns out gone or moved on, or the outage timeout passes; then it answers
//!   [`Error::Store`] saying that it gave up (the example servers log it). If an earlier
//!   attempt landed but its answer was lost, the retry finds the task already in the
//!   status it was moving to and answers the task as stored. With AOF and
//!   `appendfsync always`, nothing a handler finished is lost across a Redis restart
//!   shorter than the outage timeout. Reads (`TaskHandle::current_status`,
//!   `cancel_requested`) answer [`Error::Store`] during an outage, never "gone" or
//!   "asked to cancel".
//!   Every store error keeps the Redis client's error as its
//!   [`source`](std::error::Error::source).
//!
//! # Dead instances
//! An instance can die with tasks running (`kill -9`, a crashed host, a network partition
//! from Redis): nothing else can see its handlers stop, and without more a task it ran
//! would stay `working` until its TTL, forever with an unlimited one. So by default
//! ([`LeasePolicy`], [`RedisStoreBuilder::lease_policy`]) a task created for a typed handle
//! ([`TaskStore::create`]) carries a **lease**:
//! - The creating script gives it a deadline (server clock) and files it in the
//!   store-wide lease index `{prefix}:leases`, in the same atomic step as the task.
//! - Each instance runs a lease thread that renews every lease its live handles hold,
//!   every renewal interval (default 40 s leases, renewed every 5 s), in **one round trip
//!   per interval whatever their number**, and drops a lease once its handle finished,
//!   failed or was dropped. A detached handle gives its lease up (the task is driven by id
//!   from then on and never lapses). Tasks created by id ([`TaskStore::insert`]) have no
//!   lease: whoever drives them is not known to the store.
//! - The same thread, on every instance, asks the index for lapsed leases (one round trip
//!   when there are none) and fails each such task with the JSON-RPC error `-32603` "the
//!   server instance running the task stopped…", in a write that lands only if the task
//!   is still at the version it read and its lease is still lapsed. Every instance's
//!   waiters (`tasks/result`) and subscribers see it like any change.
//!
//! What it guarantees: while any instance runs, a task whose instance stopped renewing
//! fails within **the lease plus one renewal interval** (45 s by default; if every
//! instance died, within one interval of the next one starting). A lapsed lease is never
//! renewed, and the verdict is fenced by the task's version: a stale holder that comes
//! back (its process was paused, or it lost Redis for longer than the lease) finds its
//! writes refused (`IllegalTransition`: the task is `failed`), and its handler's result
//! is not stored over the verdict. A lease rides out an outage of the lease minus one
//! interval (35 s by default, longer than the default outage timeout of the finishing
//! writes); keep it so if you change either. Leases are invisible on the wire
//! (`lastUpdatedAt` does not move when one is renewed).
//!
//! Trade-offs: a shorter lease notices a death sooner but fails running tasks during a
//! shorter outage or process pause; [`LeasePolicy::leave_until_ttl`] turns leases off (no
//! thread, no index: the behaviour without leases). Leases need the index to be
//! updated with the task in one step, which a Redis Cluster cannot do across slots:
//! [`build`](RedisStoreBuilder::build) refuses leases on a cluster.
//!
//! # Cursors across Redis restarts
//! A `tasks/list` cursor carries a tag under a secret every instance must know.
//! - **Configured** ([`RedisStoreBuilder::cursor_secret`], the recommended setup for
//!   several instances): every instance with the same secret accepts every cursor any of
//!   them issued, across any Redis restart, persistent or not; nothing is stored in Redis.
//! - **Not configured:** the first instance shares a random secret in
//!   `{prefix}:cursor-secret` (`SET NX`) and the others adopt it when they are built. If
//!   Redis keeps the key (persistence), restarts change nothing. If a restart loses it,
//!   an instance that finds it missing (one built after the restart, or one built before
//!   that reads it again, which it does after any disconnection before it issues its next
//!   cursor, and on a cursor it cannot check) shares its own; every instance adopts the
//!   shared one and still accepts cursors under the one it held before. So every instance
//!   accepts every cursor issued after the restart, whenever it was built. A cursor issued
//!   before the restart is accepted by the instances that were running then and refused
//!   (`-32602`, invalid cursor) by those built after; it named tasks the restart lost, so
//!   the requestor lists again from the start. Each instance keeps two secrets (current
//!   and previous): after a second restart without persistence, cursors from before the
//!   first one are refused too.
//!
//! # Operating Redis for it
//! - Use `maxmemory-policy noeviction`: an evicted task would silently vanish. With it, a
//!   full Redis refuses new tasks ([`Error::Store`]) instead.
//! - Enable AOF (`appendonly yes`, `appendfsync everysec` or `always`) if tasks must
//!   survive a Redis restart. With `always`, no acknowledged change is lost; with
//!   `everysec`, a crash loses at most about the last second of changes; without
//!   persistence a restart loses every task (requestors then get "task not found").
//!   Either way, requests succeed again as soon as Redis answers (each instance
//!   reconnects on the first request).
//! - With several instances, give them all the same
//!   [`cursor_secret`](RedisStoreBuilder::cursor_secret) (at least 16 characters, e.g. 32
//!   random hex digits, kept like a password), and choose the
//!   [`outage_timeout`](RedisStoreBuilder::outage_timeout): how long a `tasks/result`
//!   without a timeout may wait for Redis to come back before it answers an error. The
//!   [`io_timeout`](RedisStoreBuilder::io_timeout) must exceed your slowest request
//!   (a page of `tasks/list`, a create that prunes a large per-owner index).
//! - Run every instance with the same build of this crate (the stored record and the
//!   scripts are versioned with it) and the same key prefix.
//! - Expiry and leases rely on the server's clock. Redis Cluster works with
//!   [`LeasePolicy::leave_until_ttl`] (an owner's keys are in one slot; the channel is a
//!   plain, cluster-wide `PUBLISH`); with leases, use one Redis (with replicas and
//!   Sentinel for failover).
//!
//! Costs: a read is one round trip, and so is a change, in the common case. Every
//! creation and change publishes the task as written with its version, so each instance
//! keeps the latest version of the unfinished tasks (up to 16,384; a finished task is
//! never kept) and decides a change on that copy, sending the version it decided on with
//! the write: one round trip. If the version moved meanwhile (another instance wrote in
//! between, and its event has not arrived yet), the script answers the task as it now is
//! instead of writing, and the change is decided again on that: two round trips. Only a
//! task the instance holds no copy of (one created before it started, or forgotten past
//! the bound) is read first. The common write is four commands inside Redis (read, clock,
//! write, publish). Leases cost each instance two round trips per renewal interval (renew
//! all it holds, look for lapsed ones), whatever the number of tasks: 0.4 per second with
//! the default 5 s interval.

mod lease;
mod record;
mod scripts;
mod waiters;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redis::{Client, Connection, Script};

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::error::{Error, LimitScope};
use crate::id::TaskId;
use crate::input::InputResponses;
use crate::jsonrpc::RequestId;
use crate::status::{TaskStatus, Working};
use crate::store::{
    CursorKey, Lease, Limits, MAX_PAGE_SIZE, Notifier, Owner, Probe, Step, StoreFuture, Subscriber,
    SubscriptionId, TaskOrigin, TaskPage, TaskRequest, TaskStore, TtlPolicy, Update, take_answers,
    wait,
};
use crate::task::Task;

pub use lease::LeasePolicy;
use lease::Leases;
use waiters::{Listener, Waiters};

/// The name of each instance's subscriber connection (`CLIENT LIST` shows it).
pub const SUBSCRIBER_NAME: &str = "mcp-tasks-subscriber";

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "mcp-tasks";

/// How often a change is decided again when other writers keep changing the task first.
const MAX_ATTEMPTS: usize = 64;

/// The most unfinished tasks an instance remembers at their latest version (as it wrote
/// them, or as another instance's event told it).
const RECENT: usize = 16_384;

/// The default of [`RedisStoreBuilder::outage_timeout`].
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default of [`RedisStoreBuilder::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a connection attempt takes (or the I/O timeout, if shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest outage timeout (a longer one is cut to this).
const MAX_OUTAGE_TIMEOUT: Duration = Duration::from_secs(86_400);

/// How often, at most, a cursor this instance cannot check makes it read the shared
/// cursor secret again (when it saw no disconnection meanwhile).
const SECRET_RECHECK: Duration = Duration::from_secs(1);

/// A task store in Redis, shared by every instance built on the same server and prefix.
///
/// `Clone` shares the instance (its connections and its subscriber thread). See the
/// [module docs](self) for the guarantees and how to run Redis for it.
///
/// ```no_run
/// use mcp_tasks::{Owner, RedisTaskStore, TaskRequest, TaskStore};
///
/// let store = RedisTaskStore::open("redis://127.0.0.1:6379")?;
/// let alice = Owner::new("alice");
/// let (handle, task) = store.create(&alice, TaskRequest::new(1, "tools/call"))?;
/// // Any instance can answer tasks/get and tasks/result for it.
/// let other = RedisTaskStore::open("redis://127.0.0.1:6379")?;
/// assert_eq!(other.get(&alice, &task.id().to_string())?.status(), task.status());
/// # drop(handle);
/// # Ok::<(), mcp_tasks::Error>(())
/// ```
#[derive(Clone)]
pub struct RedisTaskStore {
    inner: Arc<Inner>,
}

/// Builds a [`RedisTaskStore`].
#[derive(Clone)]
#[must_use]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursor_secret: Option<String>,
    outage_timeout: Duration,
    io_timeout: Duration,
    leases: LeasePolicy,
}

impl fmt::Debug for RedisStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStoreBuilder")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("limits", &self.limits)
            .field("poll_interval", &self.poll_interval)
            .field(
                "cursor_secret",
                &self.cursor_secret.as_ref().map(|_| "<configured>"),
            )
            .field("outage_timeout", &self.outage_timeout)
            .field("io_timeout", &self.io_timeout)
            .field("leases", &self.leases)
            .finish()
    }
}

struct Inner {
    client: Client,
    pool: Mutex<Vec<Connection>>,
    /// Counts the failed connections of the pool (with the subscription's epoch: the
    /// disconnections this instance saw).
    broken: AtomicU64,
    outage_timeout: Duration,
    io_timeout: Duration,
    prefix: String,
    channel: String,
    ttl: TtlPolicy,
    per_owner: Option<usize>,
    poll_interval: Option<u64>,
    cursors: Cursors,
    waiters: Waiters,
    notifier: Notifier,
    /// Unfinished tasks at the latest version this instance knows, by task key: as it
    /// wrote them, or as the event of another instance's write told it. A change to one is
    /// decided on that copy and written in one round trip if the version still holds;
    /// otherwise the script answers the task as it is, and the change is decided again.
    recent: Mutex<HashMap<String, (u64, Kept)>>,
    /// The leases of running tasks, unless the [`LeasePolicy`] is to leave them.
    leases: Option<Leases>,
    create: Script,
    commit: Script,
    remove: Script,
    list: Script,
    renew: Script,
    lapsed: Script,
}

impl RedisStoreBuilder {
    /// Uses this key prefix (default [`DEFAULT_PREFIX`]); instances sharing tasks use the
    /// same one. It may not contain `{` or `}`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Uses this retention policy.
    pub fn ttl_policy(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// Uses these limits. Only the limit per owner applies (checked atomically when a task
    /// is created); the total is Redis's `maxmemory`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Suggests this poll interval (milliseconds) for tasks whose request names none.
    pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Signs `tasks/list` cursors with this secret (at least 16 characters; every instance
    /// must use the same): the recommended setup for several instances, since cursors then
    /// hold across any Redis restart and instances never have to agree on a secret through
    /// Redis. Without it, the instances share a random secret through Redis (see the
    /// [module docs](self#cursors-across-redis-restarts)).
    pub fn cursor_secret(mut self, secret: impl Into<String>) -> Self {
        self.cursor_secret = Some(secret.into());
        self
    }

    /// How long a wait (`tasks/result`, a handler's wait for input) waits for Redis to come
    /// back when it finds the store's subscription down, before it answers
    /// [`Error::Store`] (default [`DEFAULT_OUTAGE_TIMEOUT`]). A wait with a shorter timeout
    /// answers [`Error::Store`] at its timeout instead; no wait outlasts an outage by
    /// more than this. A typed handle's finishing write (`complete`, `fail`, `cancel`) is
    /// retried through an outage for as long. Zero is refused; more than a day is cut to a
    /// day.
    pub fn outage_timeout(mut self, outage_timeout: Duration) -> Self {
        self.outage_timeout = outage_timeout;
        self
    }

    /// How long a request waits for Redis's answer (default [`DEFAULT_IO_TIMEOUT`]) before
    /// its connection counts as broken (and the request is retried once, see the
    /// [module docs](self#faults)); connecting takes at most this long too, and at most
    /// 5 s. The subscriber connection is checked with a `PING` when idle for a second and
    /// counts as lost when the answer takes longer than this. So a Redis that hangs
    /// (stopped, or cut off without closing its connections) is noticed like one that
    /// went away. Zero is refused.
    pub fn io_timeout(mut self, io_timeout: Duration) -> Self {
        self.io_timeout = io_timeout;
        self
    }

    /// What happens to a task whose instance stops renewing its lease (it died, or lost
    /// Redis for longer than the lease): by default it fails with `-32603` 40 s after the
    /// last renewal at the latest (see [`LeasePolicy`] and the
    /// [module docs](self#dead-instances)).
    pub fn lease_policy(mut self, leases: LeasePolicy) -> Self {
        self.leases = leases;
        self
    }

    /// Connects, agrees on the cursor secret with the other instances, and starts the
    /// subscriber thread; returns once its subscription is confirmed.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL, prefix or TTL policy, a zero I/O or outage timeout
    /// or a cursor secret shorter than 16 characters, a lease under 100 ms or not longer
    /// than its renewal interval, leases on a Redis Cluster; [`Error::Store`] if Redis
    /// cannot be reached.
    pub fn build(self) -> Result<RedisTaskStore, Error> {
        self.ttl.validate()?;
        self.leases.validate()?;
        if self.prefix.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "the Redis key prefix `{}` contains a brace, which would change the keys' \
                 hash slots: choose one without `{{` or `}}`",
                self.prefix
            )));
        }
        let client = Client::open(self.url.as_str()).map_err(|err| {
            Error::InvalidConfig(format!("`{}` is not a Redis URL: {err}", self.url))
        })?;
        if self.io_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "the Redis store's I/O timeout is zero: no request could be answered".to_owned(),
            ));
        }
        if self.outage_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "the Redis store's outage timeout is zero: every wait would fail at once"
                    .to_owned(),
            ));
        }
        if self
            .cursor_secret
            .as_ref()
            .is_some_and(|secret| secret.chars().count() < 16)
        {
            return Err(Error::InvalidConfig(
                "the cursor secret is shorter than 16 characters: use a long random one".to_owned(),
            ));
        }
        let mut connection = connect(&client, self.io_timeout).map_err(store_error)?;
        if self.leases.lease().is_some() && in_cluster(&mut connection).map_err(store_error)? {
            return Err(Error::InvalidConfig(
                "leases keep a store-wide index that a Redis Cluster cannot update with a \
                 task in one step: use `LeasePolicy::leave_until_ttl()` on a cluster"
                    .to_owned(),
            ));
        }
        let secret_key = format!("{}:cursor-secret", self.prefix);
        let cursors = match &self.cursor_secret {
            Some(secret) => Cursors::fixed(derive_secret(secret)),
            None => {
                let mine = uuid::Uuid::new_v4().as_u128();
                let shared =
                    share_secret(&mut connection, &secret_key, mine).map_err(store_error)?;
                let secret = parse_secret(&secret_key, &shared)?;
                Cursors::shared(secret_key, secret)
            }
        };
        let leases = Leases::new(&self.prefix, self.leases);
        let inner = Arc::new(Inner {
            client,
            pool: Mutex::new(vec![connection]),
            broken: AtomicU64::new(0),
            outage_timeout: self.outage_timeout.min(MAX_OUTAGE_TIMEOUT),
            io_timeout: self.io_timeout,
            channel: format!("{}:events", self.prefix),
            prefix: self.prefix,
            ttl: self.ttl,
            per_owner: self.limits.per_owner,
            poll_interval: self.poll_interval,
            cursors,
            waiters: Waiters::default(),
            notifier: Notifier::default(),
            recent: Mutex::new(HashMap::new()),
            leases,
            create: Script::new(&scripts::source(scripts::CREATE)),
            commit: Script::new(&scripts::source(scripts::COMMIT)),
            remove: Script::new(&scripts::source(scripts::REMOVE)),
            list: Script::new(&scripts::source(scripts::LIST)),
            renew: Script::new(&scripts::source(scripts::RENEW)),
            lapsed: Script::new(&scripts::source(scripts::LAPSED)),
        });
        let weak = Arc::downgrade(&inner);
        let client = inner.client.clone();
        let channel = inner.channel.clone();
        let io_timeout = self.io_timeout;
        std::thread::Builder::new()
            .name("mcp-tasks-redis".into())
            .spawn(move || waiters::run(&client, &channel, &weak, io_timeout))
            .map_err(|err| Error::store_caused("cannot start the subscriber thread", err))?;
        if let Some(interval) = self.leases.renewal_interval() {
            let weak = Arc::downgrade(&inner);
            std::thread::Builder::new()
                .name("mcp-tasks-leases".into())
                .spawn(move || lease::run(&weak, interval))
                .map_err(|err| Error::store_caused("cannot start the lease thread", err))?;
        }
        // Subscribers registered right after `build` must see every change from then on.
        if !inner.waiters.wait_live(Duration::from_secs(5)) {
            return Err(Error::store(format!(
                "could not subscribe to `{}` within 5 s",
                inner.channel
            )));
        }
        Ok(RedisTaskStore { inner })
    }
}

/// A connection whose every request is answered within `io_timeout` or fails.
fn connect(client: &Client, io_timeout: Duration) -> redis::RedisResult<Connection> {
    let connection = client.get_connection_with_timeout(io_timeout.min(CONNECT_TIMEOUT))?;
    connection.set_read_timeout(Some(io_timeout))?;
    connection.set_write_timeout(Some(io_timeout))?;
    Ok(connection)
}

/// Whether the server is a Redis Cluster node.
fn in_cluster(connection: &mut Connection) -> redis::RedisResult<bool> {
    let info: String = redis::cmd("INFO").arg("cluster").query(connection)?;
    Ok(info.lines().any(|line| line.trim() == "cluster_enabled:1"))
}

/// A Redis client's error as the store-unavailable error, keeping it as the source.
fn store_error(err: redis::RedisError) -> Error {
    let message = if err.is_timeout() {
        "Redis did not answer in time"
    } else if is_broken(&err) {
        "the connection to Redis failed"
    } else {
        "Redis refused the request"
    };
    Error::store_caused(message, err)
}

/// Whether a failed request leaves its connection unusable (and the others of the pool
/// suspect): an I/O error or a dropped connection.
fn is_broken(err: &redis::RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_unrecoverable_error()
}

/// A random write id (see [`scripts`]).
fn write_id() -> String {
    format!("{:016x}", uuid::Uuid::new_v4().as_u128() as u64)
}

/// Shares `mine` as the cursor secret under `key` unless one is there; returns the one
/// there (one round trip, atomic).
fn share_secret(connection: &mut Connection, key: &str, mine: u128) -> redis::RedisResult<String> {
    let (_, shared): (Option<String>, String) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(key)
        .arg(format!("{mine:032x}"))
        .arg("NX")
        .cmd("GET")
        .arg(key)
        .query(connection)?;
    Ok(shared)
}

fn parse_secret(key: &str, text: &str) -> Result<u128, Error> {
    u128::from_str_radix(text, 16).map_err(|_| {
        Error::store(format!(
            "the shared cursor secret is not one this crate wrote: delete the key `{key}`"
        ))
    })
}

/// The 128-bit key of an operator's cursor secret: SipHash-2-4 of the text under two fixed
/// keys, the same in every process of every build.
fn derive_secret(secret: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |k0: u64, k1: u64| {
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new_with_keys(k0, k1);
        secret.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(0x6d63_702d_7461_736b, 1)) << 64) | u128::from(half(0x6375_7273_6f72_7321, 2))
}

/// The secrets `tasks/list` cursors are signed with.
struct Cursors {
    /// Where the shared secret lives; `None` when the operator configured one.
    key: Option<String>,
    state: Mutex<Secrets>,
}

struct Secrets {
    /// Signs new cursors; accepted.
    current: u128,
    /// The one held before `current` (a Redis restart without persistence): accepted.
    previous: Option<u128>,
    /// When the shared secret was last read, and the disconnections seen by then.
    checked_at: Instant,
    checked_after: u64,
}

impl Cursors {
    fn fixed(secret: u128) -> Self {
        Self::new(None, secret)
    }

    fn shared(key: String, secret: u128) -> Self {
        Self::new(Some(key), secret)
    }

    fn new(key: Option<String>, secret: u128) -> Self {
        Cursors {
            key,
            state: Mutex::new(Secrets {
                current: secret,
                previous: None,
                checked_at: Instant::now(),
                checked_after: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Secrets> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn encode(&self, owner: &Owner, seq: u64) -> String {
        CursorKey::from_secret(self.lock().current).encode(owner, seq)
    }

    fn decode(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        let (current, previous) = {
            let state = self.lock();
            (state.current, state.previous)
        };
        let first = CursorKey::from_secret(current).decode(owner, cursor);
        match previous {
            Some(previous) if first.is_err() => CursorKey::from_secret(previous)
                .decode(owner, cursor)
                .or(first),
            _ => first,
        }
    }
}

fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

/// The hash tag of an owner: `a` for anonymous, else `o` and the key in hex.
fn owner_tag(owner: &Owner) -> String {
    match owner.key() {
        None => "a".to_owned(),
        Some(key) => {
            let mut tag = String::with_capacity(1 + 2 * key.len());
            tag.push('o');
            for byte in key.bytes() {
                tag.push_str(&format!("{byte:02x}"));
            }
            tag
        }
    }
}

fn owner_of_tag(tag: &str) -> Option<Owner> {
    if tag == "a" {
        return Some(Owner::anonymous());
    }
    let hex = tag.strip_prefix('o')?;
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok().map(Owner::new)
}

/// The keys of one owner.
struct Keys {
    /// `{prefix}:{tag}:t:` (a task key is this and the id).
    tasks: String,
    index: String,
    counter: String,
    tag: String,
}

/// A task as read, with its version.
struct Read {
    version: u64,
    task: AnyTask,
    /// Time left before the task expires, if it has a TTL.
    expires_in: Option<Duration>,
}

impl Keys {
    /// The keys of the owner with hash tag `tag`: all of them carry it, so they share
    /// one cluster slot.
    fn new(prefix: &str, tag: String) -> Self {
        let base = format!("{prefix}:{{{tag}}}");
        Keys {
            tasks: format!("{base}:t:"),
            index: format!("{base}:i"),
            counter: format!("{base}:n"),
            tag,
        }
    }

    /// The key of the task `id`.
    fn task(&self, id: &str) -> String {
        format!("{}{id}", self.tasks)
    }

    /// The key of the tombstone a removal of the task `id` leaves for a replay.
    fn tombstone(&self, id: &str) -> String {
        format!("{}{id}:removed", self.tasks)
    }
}

impl Inner {
    fn keys(&self, owner: &Owner) -> Keys {
        Keys::new(&self.prefix, owner_tag(owner))
    }

    /// Runs `f` on a pooled connection. If the connection breaks (Redis restarted, or the
    /// connection was cut), every pooled connection is dropped, since they are all as old
    /// as the broken one, and `f` runs once more on a fresh connection. Replaying a write
    /// is safe: every script recognizes its own write id and answers as the first attempt
    /// did (see [`scripts`]).
    fn with<T>(
        &self,
        mut f: impl FnMut(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, Error> {
        let pooled = self.pool().pop();
        let mut connection = match pooled {
            Some(connection) => connection,
            None => self.connect()?,
        };
        let mut result = self.when_ready(&mut connection, &mut f);
        if let Err(err) = &result
            && is_broken(err)
        {
            self.broke();
            connection = self.connect()?;
            result = self.when_ready(&mut connection, &mut f);
        }
        match &result {
            Err(err) if is_broken(err) => self.broke(),
            _ => self.pool().push(connection),
        }
        result.map_err(store_error)
    }

    /// Runs `f` on `connection`, again (with backoff, for up to the I/O timeout) while
    /// Redis answers that it cannot serve yet and the request was not run: `LOADING` (a
    /// restarted Redis reading its AOF), `MASTERDOWN`, `TRYAGAIN`.
    fn when_ready<T>(
        &self,
        connection: &mut Connection,
        f: &mut impl FnMut(&mut Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let deadline = Instant::now() + self.io_timeout;
        let mut backoff = Duration::from_millis(10);
        loop {
            match f(connection) {
                Err(err)
                    if matches!(err.retry_method(), redis::RetryMethod::WaitAndRetry)
                        && Instant::now() + backoff < deadline =>
                {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                }
                result => return result,
            }
        }
    }

    fn pool(&self) -> MutexGuard<'_, Vec<Connection>> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection broke: forget the pooled ones.
    fn broke(&self) {
        self.broken.fetch_add(1, Ordering::Relaxed);
        self.pool().clear();
    }

    /// The disconnections this instance has seen (pool and subscription).
    fn disconnections(&self) -> u64 {
        self.broken.load(Ordering::Relaxed) + self.waiters.epoch()
    }

    /// Reads the shared cursor secret again if this instance saw a disconnection since it
    /// last did (Redis may have restarted and lost it), or, when `doubt` (a cursor it
    /// cannot check), if it last did over [`SECRET_RECHECK`] ago. Re-shares its own secret
    /// if the key is missing, adopts the one there otherwise (keeping the one it held as
    /// the previous). Answers whether the secret changed.
    fn recheck_secret(&self, doubt: bool) -> Result<bool, Error> {
        let Some(key) = &self.cursors.key else {
            return Ok(false);
        };
        let seen = self.disconnections();
        let mine = {
            let state = self.cursors.lock();
            let due = state.checked_after != seen
                || (doubt && state.checked_at.elapsed() >= SECRET_RECHECK);
            if !due {
                return Ok(false);
            }
            state.current
        };
        let shared = self.with(|connection| share_secret(connection, key, mine))?;
        let shared = parse_secret(key, &shared)?;
        let mut state = self.cursors.lock();
        state.checked_at = Instant::now();
        state.checked_after = seen;
        if shared == state.current {
            return Ok(false);
        }
        state.previous = Some(state.current);
        state.current = shared;
        Ok(true)
    }

    /// The sequence number `cursor` continues after, under any secret this instance holds
    /// (read again once if none fits).
    fn decode_cursor(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        match self.cursors.decode(owner, cursor) {
            Err(err) if self.recheck_secret(true)? => {
                self.cursors.decode(owner, cursor).map_err(|_| err)
            }
            decoded => decoded,
        }
    }

    /// The store is unreachable for a wait that waited `waited` for it.
    fn unavailable(&self, task_id: &str, waited: Duration) -> Error {
        Error::store(format!(
            "cannot watch task `{}`: the subscription to Redis has been down for the last \
             {waited:?}",
            crate::error::shorten(task_id)
        ))
    }

    fn connect(&self) -> Result<Connection, Error> {
        connect(&self.client, self.io_timeout).map_err(store_error)
    }

    /// Reads the task `id` of `keys` with its version and remaining lifetime.
    fn read(&self, keys: &Keys, id: &str) -> Result<Option<Read>, Error> {
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
    fn commit(
        &self,
        keys: &Keys,
        id: &str,
        on: DecidedOn,
        task: &AnyTask,
        notify: bool,
    ) -> Result<Written, Error> {
        self.write(keys, id, on, task, notify, "")
    }

    /// The conditional write of [`commit`](Self::commit), with the script's lease
    /// condition: `""` for none, `"lapsed"` to write only while the task's lease is lapsed
    /// ([`Written::Stale`] without the task then also when it was renewed meanwhile).
    fn write(
        &self,
        keys: &Keys,
        id: &str,
        on: DecidedOn,
        task: &AnyTask,
        notify: bool,
        lease_condition: &str,
    ) -> Result<Written, Error> {
        let DecidedOn { version, ttl } = on;
        let body = record::encode(task);
        let status = task.status();
        let write = write_id();
        let reply: Vec<String> = self.with(|connection| {
            self.commit
                .key(keys.task(id))
                .key(&keys.index)
                .key(&keys.counter)
                .arg(version.to_string())
                .arg(status.as_str())
                .arg(&body)
                .arg(task.ttl().map(|ttl| ttl.to_string()).unwrap_or_default())
                .arg(if notify { "1" } else { "0" })
                .arg(&self.channel)
                .arg(&keys.tag)
                .arg(id)
                .arg(&write)
                .arg(lease_condition)
                .arg(if task.ttl() == ttl { "" } else { "1" })
                .arg((version + 1).to_string())
                .invoke(connection)
        })?;
        match reply.first().map(String::as_str) {
            Some("ok") => {
                // What was written, with the server's time of the write.
                let mut stored = task.clone();
                stored.set_last_updated_at(stamp(&reply)?);
                self.remember(keys.task(id), version + 1, &stored);
                Ok(Written::Ok(stored))
            }
            Some("stale") => match &reply[1..] {
                [version, status, body, created, updated] => {
                    let version = version.parse().map_err(|_| unexpected(&reply))?;
                    let task = decode(id, status, created, updated, body)?;
                    Ok(Written::Stale(Some((version, task))))
                }
                _ => Ok(Written::Stale(None)),
            },
            Some("renewed") => Ok(Written::Stale(None)),
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
                        crate::error::shorten(id)
                    ),
                })
            }
            _ => Err(unexpected(&reply)),
        }
    }

    /// Remembers `task` as this instance wrote it (at `version`), if it is unfinished.
    fn remember(&self, key: String, version: u64, task: &AnyTask) {
        if task.is_terminal() {
            self.forget(&key);
            return;
        }
        self.keep_copy(key, version, Kept::Task(task.clone()), false);
    }

    /// Remembers the task under `key` as an event published it (at `version`), if it is
    /// unfinished; decoded only when a change needs it.
    fn learn(&self, key: String, version: u64, status: &str, raw: Raw) {
        if matches!(status, "completed" | "failed" | "cancelled") {
            self.forget(&key);
            return;
        }
        self.keep_copy(key, version, Kept::Raw(raw), true);
    }

    /// Keeps `copy` of the task under `key` unless a later version is kept already (the
    /// event of another instance's later write may come before this instance remembers
    /// its own), or, for an event (`heard`), the same version (an instance sees the event
    /// of its own write after it remembered the write: the decoded copy stays).
    fn keep_copy(&self, key: String, version: u64, copy: Kept, heard: bool) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((kept, _)) = recent.get(&key) {
            if *kept > version || (heard && *kept == version) {
                return;
            }
        } else if recent.len() >= RECENT {
            // Bounded: forget one (it is read again when changed, if it still runs).
            if let Some(victim) = recent.keys().next().cloned() {
                recent.remove(&victim);
            }
        }
        recent.insert(key, (version, copy));
    }

    /// Forgets the copy of the task under `key` (it finished or was removed).
    fn forget(&self, key: &str) {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Takes the copy of the task `id` under `key`, if one is kept (and reads as a task).
    fn recall(&self, key: &str, id: &str) -> Option<(u64, AnyTask)> {
        let (version, copy) = self
            .recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)?;
        match copy {
            Kept::Task(task) => Some((version, task)),
            Kept::Raw(raw) => {
                let task = decode(id, &raw.status, &raw.created, &raw.updated, &raw.body).ok()?;
                Some((version, task))
            }
        }
    }

    /// One probe of a wait (see [`wait`](crate::store::wait)): while the subscription is
    /// down the wait waits for it, up to `deadline` and at most the outage timeout from
    /// when it saw it down (`down_since`), then answers [`Error::Store`]; while it is up,
    /// the task is read and `check` decides.
    fn probe<R>(
        &self,
        keys: &Keys,
        task_id: &str,
        deadline: Option<Instant>,
        down_since: &mut Option<Instant>,
        check: &mut impl FnMut(&Keys, Read) -> Result<Check<R>, Error>,
    ) -> Probe<R> {
        if !self.waiters.live() {
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
    fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(&Keys, Read) -> Result<Check<R>, Error>,
    ) -> Result<R, Error> {
        let id = canonical(task_id)?;
        let keys = self.keys(owner);
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let listener = self.waiters.register(&keys.task(id));
        let mut down_since = None;
        wait::block(&listener, task_id, timeout, || {
            self.probe(&keys, id, deadline, &mut down_since, &mut check)
        })
    }

    /// [`wait_until`](Self::wait_until) as a future (no deadline: the caller's runtime
    /// bounds it). Each probe is one round trip to Redis, made inside `poll`.
    fn wait_until_async<'a, R: Send + 'a>(
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
        let listener = self.waiters.register(&keys.task(id));
        let mut down_since = None;
        wait::future(listener, move || {
            self.probe(&keys, id, None, &mut down_since, &mut check)
        })
    }
}

/// A wait for the result: done once the task is terminal.
fn until_terminal(_: &Keys, read: Read) -> Result<Check<AnyTask>, Error> {
    Ok(if read.task.is_terminal() {
        Check::Done(read.task)
    } else {
        Check::Wait
    })
}

impl Inner {
    /// A wait for input: takes the answers of the task as read, if all are there, by a
    /// write decided on that read (read again if another writer came first).
    fn take_input(
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
                Written::Ok(_) => Check::Done(answers),
                Written::Stale(_) => Check::Again,
            }),
        }
    }
}

/// The version of a task a change was decided on, and the task's ttl at that version.
#[derive(Clone, Copy)]
struct DecidedOn {
    version: u64,
    ttl: Option<u64>,
}

impl DecidedOn {
    fn new(version: u64, task: &AnyTask) -> Self {
        DecidedOn {
            version,
            ttl: task.ttl(),
        }
    }
}

/// What a conditional write came to.
enum Written {
    /// Written: the task as stored, with the server's time of the write.
    Ok(AnyTask),
    /// Not written: another writer came first. With the task as it now is (and its
    /// version) when the script answered it.
    Stale(Option<(u64, AnyTask)>),
}

/// A kept copy of an unfinished task.
enum Kept {
    /// As this instance wrote it.
    Task(AnyTask),
    /// As an event published it, not yet decoded.
    Raw(Raw),
}

/// The stored parts of a task, as an event carries them.
struct Raw {
    status: String,
    created: String,
    updated: String,
    body: String,
}

/// What a waiter's check makes of the task it read.
enum Check<R> {
    Done(R),
    /// Read again at once (a write lost a race).
    Again,
    /// Sleep until the task changes.
    Wait,
}

/// Only ids this store could have issued name keys: anything else is unknown.
fn canonical(task_id: &str) -> Result<&str, Error> {
    TaskId::parse_canonical_uuid(task_id)
        .map(|_| task_id)
        .ok_or_else(|| not_found(task_id))
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
    record::decode(id, status, millis(created)?, millis(updated)?, body)
}

/// The server time an `{'ok', millis}` reply of a script carries.
fn stamp(reply: &[String]) -> Result<Timestamp, Error> {
    reply
        .get(1)
        .and_then(|millis| millis.parse().ok())
        .map(Timestamp::from_unix_millis)
        .ok_or_else(|| unexpected(reply))
}

fn unexpected(reply: &[String]) -> Error {
    Error::store(format!(
        "unexpected reply from a script: {reply:?} (do all instances run the same version?)"
    ))
}

impl Listener for Inner {
    fn on_message(&self, payload: &str) {
        let mut parts = payload.splitn(8, '\n');
        let (Some(tag), Some(id), Some(notify)) = (parts.next(), parts.next(), parts.next()) else {
            return;
        };
        let key = format!("{}:{{{tag}}}:t:{id}", self.prefix);
        let (Some(version), Some(status), Some(created), Some(updated), Some(body)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            // A removal.
            self.forget(&key);
            self.waiters.bump(&key);
            return;
        };
        if let Ok(version) = version.parse() {
            let raw = Raw {
                status: status.to_owned(),
                created: created.to_owned(),
                updated: updated.to_owned(),
                body: body.to_owned(),
            };
            self.learn(key.clone(), version, status, raw);
        }
        self.waiters.bump(&key);
        if notify != "1" || !self.notifier.has_subscribers() {
            return;
        }
        if let (Some(owner), Ok(task)) = (
            owner_of_tag(tag),
            decode(id, status, created, updated, body),
        ) {
            self.notifier.queue(&owner, &task);
            self.notifier.deliver();
        }
    }

    fn waiters(&self) -> &Waiters {
        &self.waiters
    }
}

impl RedisTaskStore {
    /// One decision and conditional write of `update` (see [`TaskStore::update`]); each
    /// decision takes its own copy of it, since a lost race decides again.
    fn update_once(&self, owner: &Owner, task_id: &str, update: &Update) -> Result<AnyTask, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let keys = inner.keys(owner);
        // Decided first on the copy this instance keeps, if any (the latest version it
        // wrote or heard of); a refusal is decided again on a fresh read, and a write that
        // finds another version on the task as the script answers it.
        let mut known = inner
            .recall(&keys.task(id), id)
            .map(|(version, task)| (version, task, false));
        for _ in 0..MAX_ATTEMPTS {
            let (version, task, fresh) = match known.take() {
                Some(known) => known,
                None => match inner.read(&keys, id)? {
                    Some(read) => (read.version, read.task, true),
                    None => return Err(not_found(task_id)),
                },
            };
            let at = task.last_updated_at();
            let on = DecidedOn::new(version, &task);
            let (task, notify) = match update.clone().apply(task, at) {
                Step::Changed(task) => (task, true),
                Step::Quiet(task) => (task, false),
                Step::Unchanged(task) if fresh => return Ok(task),
                Step::Refused(_, error) if fresh => return Err(error),
                Step::Unchanged(_) | Step::Refused(..) => continue,
            };
            match inner.commit(&keys, id, on, &task, notify)? {
                Written::Ok(stored) => return Ok(stored),
                Written::Stale(current) => {
                    known = current.map(|(version, task)| (version, task, true));
                }
            }
        }
        Err(Error::store(format!(
            "task `{}` kept changing under {MAX_ATTEMPTS} attempts to update it: try again",
            crate::error::shorten(task_id)
        )))
    }

    /// Creates a task, with a lease held by this instance if `leased` and the policy has
    /// leases.
    fn create_task(
        &self,
        owner: &Owner,
        request: TaskRequest,
        leased: bool,
    ) -> Result<(Task<Working>, Lease), Error> {
        let inner = &*self.inner;
        let leases = inner.leases.as_ref().filter(|_| leased);
        let id = TaskId::random();
        let text = id.to_string();
        let keys = inner.keys(owner);
        let ttl = inner.ttl.effective(request.ttl);
        let poll_interval = request.poll_interval.or(inner.poll_interval);
        let fresh = |at| {
            Task::new(id.clone(), at)
                .with_ttl(ttl)
                .with_poll_interval(poll_interval)
        };
        let body = record::encode(&fresh(Timestamp::from_unix_millis(0)).into_any());
        let request_id = serde_json::to_string(&request.request_id)
            .map_err(|err| Error::Internal(err.to_string()))?;
        // Chosen before the call, so that a replay recognizes its own write.
        let write = write_id();
        let reply: Vec<String> = inner.with(|connection| {
            let mut invocation = inner.create.key(keys.task(&text));
            invocation.key(&keys.index).key(&keys.counter);
            if let Some(leases) = leases {
                invocation.key(&leases.index);
            }
            invocation
                .arg(&text)
                .arg(&body)
                .arg(ttl.map(|ttl| ttl.to_string()).unwrap_or_default())
                .arg(inner.per_owner.map(|n| n.to_string()).unwrap_or_default())
                .arg(&request_id)
                .arg(&request.method)
                .arg(&write)
                .arg(leases.map(Leases::lease_ms).unwrap_or_default())
                .arg(&inner.channel)
                .arg(&keys.tag)
                .invoke(connection)
        })?;
        match reply.first().map(String::as_str) {
            Some("ok") => {
                let task = fresh(stamp(&reply)?);
                inner.remember(keys.task(&text), 1, &task.clone().into_any());
                let lease = leases.map_or_else(Lease::none, |leases| leases.hold(keys.task(&text)));
                Ok((task, lease))
            }
            Some("limit") => Err(Error::LimitExceeded {
                limit: inner.per_owner.unwrap_or(usize::MAX),
                scope: LimitScope::PerOwner,
            }),
            _ => Err(unexpected(&reply)),
        }
    }

    /// The number of waits pending on this instance now, blocking or async: each `wait`,
    /// `wait_for_input` in progress and each future of theirs not yet resolved or dropped.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.inner.waiters.pending()
    }

    /// A store on the Redis at `url` (`redis://host:port/db`, `rediss://…`,
    /// `redis+unix:///path/to/redis.sock`), with the default prefix, [`TtlPolicy`] and
    /// [`Limits`], and no suggested poll interval.
    ///
    /// # Errors
    /// As for [`RedisStoreBuilder::build`].
    pub fn open(url: &str) -> Result<Self, Error> {
        Self::builder(url).build()
    }

    /// A builder for a store on the Redis at `url`.
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.to_owned(),
            prefix: DEFAULT_PREFIX.to_owned(),
            ttl: TtlPolicy::default(),
            limits: Limits::default(),
            poll_interval: None,
            cursor_secret: None,
            outage_timeout: DEFAULT_OUTAGE_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            leases: LeasePolicy::default(),
        }
    }

    /// The current time on the Redis server's clock (the one every timestamp comes from).
    ///
    /// # Errors
    /// [`Error::Store`] if Redis cannot be reached.
    pub fn now(&self) -> Result<Timestamp, Error> {
        let (seconds, micros): (i64, i64) = self
            .inner
            .with(|connection| redis::cmd("TIME").query(connection))?;
        Ok(Timestamp::from_unix_millis(seconds * 1000 + micros / 1000))
    }
}

impl TaskStore for RedisTaskStore {
    fn ttl_policy(&self) -> TtlPolicy {
        self.inner.ttl
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.create_task(owner, request, false)
            .map(|(task, _)| task)
    }

    /// Creates the task with a lease held by this instance (unless the policy is to leave
    /// tasks until their TTL): see the [module docs](self#dead-instances).
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        self.create_task(owner, request, true)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let id = canonical(task_id)?;
        let keys = self.inner.keys(owner);
        match self.inner.read(&keys, id)? {
            Some(read) => Ok(read.task),
            None => Err(not_found(task_id)),
        }
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let id = canonical(task_id)?;
        let keys = self.inner.keys(owner);
        let key = keys.task(id);
        let (request_id, method): (Option<String>, Option<String>) =
            self.inner.with(|connection| {
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg(&["r", "m"])
                    .query(connection)
            })?;
        let (Some(request_id), Some(method)) = (request_id, method) else {
            return Err(not_found(task_id));
        };
        let request_id: RequestId = serde_json::from_str(&request_id)
            .map_err(|err| Error::store(format!("task `{id}` has a bad request id: {err}")))?;
        Ok(TaskOrigin {
            request_id,
            method: Arc::from(method),
        })
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        let inner = &*self.inner;
        let after = cursor
            .map(|cursor| inner.decode_cursor(owner, cursor))
            .transpose()?;
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let keys = inner.keys(owner);
        let flat: Vec<String> = inner.with(|connection| {
            inner
                .list
                .key(&keys.index)
                .arg(&keys.tasks)
                .arg(after.map(|seq| seq.to_string()).unwrap_or_default())
                .arg(page_size + 1)
                .invoke(connection)
        })?;
        let mut tasks = Vec::with_capacity(page_size.min(flat.len() / 6));
        let mut last = None;
        let mut more = false;
        for row in flat.chunks(6) {
            let [id, seq, status, body, created, updated] = row else {
                return Err(unexpected(row));
            };
            if tasks.len() == page_size {
                more = true;
                break;
            }
            tasks.push(decode(id, status, created, updated, body)?);
            last = Some(seq.parse::<u64>().map_err(|_| unexpected(row))?);
        }
        let next_cursor = match (more, last) {
            (true, Some(seq)) => {
                // After a disconnection, Redis may have restarted and lost the shared secret.
                inner.recheck_secret(false)?;
                Some(inner.cursors.encode(owner, seq))
            }
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        let Some(target) = update.finishing_target() else {
            return self.update_once(owner, task_id, &update);
        };
        // A handle's finishing write carries work already done: through an outage it is
        // tried again, with backoff, until it lands, the task is found gone or moved on, or
        // the outage timeout passes.
        let deadline = Instant::now() + self.inner.outage_timeout;
        let mut backoff = Duration::from_millis(10);
        let mut attempts = 1;
        loop {
            match self.update_once(owner, task_id, &update) {
                Err(Error::Store { .. }) if Instant::now() + backoff < deadline => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    attempts += 1;
                }
                Err(Error::Store { message, cause }) if attempts > 1 => {
                    return Err(Error::Store {
                        message: format!(
                            "{message} (the task's finishing write was tried {attempts} times \
                             over {:?}, then given up)",
                            self.inner.outage_timeout
                        ),
                        cause,
                    });
                }
                // An earlier attempt landed although its answer was lost in the outage:
                // the task already has the status this write gives it.
                Err(Error::IllegalTransition { from, .. }) if attempts > 1 && from == target => {
                    return self.get(owner, task_id);
                }
                other => return other,
            }
        }
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let keys = inner.keys(owner);
        inner.forget(&keys.task(id));
        let write = write_id();
        let fields: Vec<Option<String>> = inner.with(|connection| {
            inner
                .remove
                .key(keys.task(id))
                .key(&keys.index)
                .key(keys.tombstone(id))
                .arg(id)
                .arg(&inner.channel)
                .arg(&keys.tag)
                .arg(&write)
                .arg(scripts::REPLAY_WINDOW_MS)
                .invoke(connection)
        })?;
        match <[Option<String>; 4]>::try_from(fields) {
            Ok([Some(status), Some(body), Some(created), Some(updated)]) => {
                decode(id, &status, &created, &updated, &body)
            }
            _ => Err(not_found(task_id)),
        }
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        self.inner
            .wait_until(owner, task_id, timeout, until_terminal)
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        let inner = &*self.inner;
        inner.wait_until(owner, task_id, timeout, |keys, read| {
            inner.take_input(keys, task_id, read)
        })
    }

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        self.inner.wait_until_async(owner, task_id, until_terminal)
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        let inner = &*self.inner;
        inner.wait_until_async(owner, task_id, move |keys, read| {
            inner.take_input(keys, task_id, read)
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.inner.wait_until_async(owner, task_id, move |_, read| {
            Ok(match wait::cancel_seen(&read.task, task_id) {
                Some(Ok(())) => Check::Done(()),
                Some(Err(error)) => return Err(error),
                None => Check::Wait,
            })
        })
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.inner.notifier.subscribe(subscriber)
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.inner.notifier.unsubscribe(id)
    }
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.inner.prefix)
            .field("ttl", &self.inner.ttl)
            .field("per_owner", &self.inner.per_owner)
            .field("leases_held", &self.inner.leases.as_ref().map(Leases::held))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_tags_round_trip_and_keep_owners_apart() {
        for owner in [
            Owner::anonymous(),
            Owner::new(""),
            Owner::new("alice"),
            Owner::new("}{:*\n"),
            Owner::new("ünï"),
        ] {
            let tag = owner_tag(&owner);
            assert!(!tag.contains(['{', '}']), "{tag}");
            assert_eq!(owner_of_tag(&tag), Some(owner));
        }
        assert_ne!(owner_tag(&Owner::anonymous()), owner_tag(&Owner::new("")));
        assert_ne!(owner_tag(&Owner::new("a")), owner_tag(&Owner::new("b")));
        assert_eq!(owner_of_tag("ozz"), None);
    }
}
