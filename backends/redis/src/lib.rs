//! [`RedisTaskStore`]: a [`TaskStore`] shared by several server instances through Redis.
//!
//! An MCP server behind a load balancer runs as several processes, and `tasks/get` or
//! `tasks/result` may reach an instance other than the one running the task. Each
//! instance builds a `RedisTaskStore` on the same Redis (and key prefix); they share the
//! tasks, and every guarantee of the in-process [`TaskRegistry`](mcp_tasks::TaskRegistry)
//! holds across them.
//!
//! The store is the core's [`SharedStore`] over a [`RedisDriver`]: the decisions, waits,
//! subscribers, cursors, leases, claims and the handling of outages are written once in
//! the core for every engine ([`mcp_tasks::backend`]); this crate is the driver (the Lua
//! scripts, the key layout, the connections and the pub/sub subscriber), held to the
//! driver contract by the store test kit's `driver_suite!` and to the registry's behaviour
//! by its `store_suite!`.
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
//!   that wakes its local waiters; a waiter registers *before* it reads the task, so no
//!   change is missed; while the subscriber's connection is down, waiters read their task
//!   every [fallback poll](RedisStoreBuilder::fallback_poll) (1 s by default), and every
//!   one reads again once it is back; every wait is bounded by its timeout, by the task's
//!   expiry, and while Redis is unreachable by the outage timeout (see
//!   [below](crate#faults)).
//! - **Subscribers** ([`TaskStore::subscribe`]) of every instance see the changes made on
//!   any instance, in order, from the moment [`RedisStoreBuilder::build`] returns. Pub/sub
//!   delivers at most once: changes published while an instance's subscriber connection
//!   is down (until it reconnects, with backoff up to a second) reach its waiters, which
//!   read again, but not its subscribers. Status notifications are advisory in MCP
//!   (requestors poll `tasks/get`), so a missed one delays nobody. Subscribers run on the
//!   instance's subscriber thread, which also wakes its waiters: keep them short and hand
//!   anything that blocks (or waits on the store) to another thread.
//!
//! # Connections
//! Each instance sends its changes (the create and commit scripts: every write of a
//! task but its removal) on one shared connection: the commands of the threads that call at the
//! same time are written together, in one write, and their replies read in order and
//! handed back, so that Redis reads a batch of commands at once and answers it in one
//! write, rather than being woken for each command. No thread of its own does this: the
//! first caller to find the connection free writes what is queued; a caller of that
//! batch reads its replies, writes what was queued meanwhile, and passes the reading of
//! those replies on to one of their callers. A caller so waits for the batch in flight
//! before its own, each bounded by the
//! [I/O timeout](RedisStoreBuilder::io_timeout). Every other request (reads, removals,
//! listings, leases, the sweep) runs on a pooled connection of its own, one per
//! concurrent request, and the subscriber on a connection of its own.
//!
//! # Faults
//! - **A broken connection is retried once, exactly.** When a request's connection breaks
//!   (Redis restarted, the connection was cut, or Redis did not answer within the
//!   [I/O timeout](RedisStoreBuilder::io_timeout), default 10 s), the instance drops every
//!   pooled connection (all are as old as the broken one) and sends the request once more
//!   on a fresh connection (a fresh connection cut while it was made counts as a broken
//!   one); only if that fails too does the caller get [`Error::Store`].
//!   When the shared connection of the changes breaks, every change written on it and not
//!   yet answered fails so, and each is sent once more (together again) on a fresh one.
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
//!   through the instance's subscription. While Redis cannot be read, a wait answers
//!   [`Error::Store`] (`-32603`, "task store unavailable") at its timeout, never
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
//! renewals, no index: the behaviour without leases; the lease thread then only runs the
//! driver's housekeeping every 5 s). Leases need the index to be
//! updated with the task in one step, which a Redis Cluster cannot do across slots:
//! [`build`](RedisStoreBuilder::build) refuses leases on a cluster.
//!
//! # Redelivery
//! A task created [`with_redelivery`](mcp_tasks::TaskRequest::with_redelivery) keeps its
//! job in its hash (`j`) and its attempts and last checkpoint in its record. When its lease
//! lapses it is not failed while it has attempts left: every instance's lease thread files
//! it as claimable once the [`ClaimBackoff`](mcp_tasks::ClaimBackoff) of the attempt that
//! stopped has passed (1 s after the first, doubling, at most 60 s by default:
//! [`RedisStoreBuilder::claim_backoff`]), and wakes the instance's claim loop
//! ([`TaskStore::wait_for_claimable`](mcp_tasks::TaskStore::wait_for_claimable)). A claim
//! ([`TaskStore::claim`](mcp_tasks::TaskStore::claim)) decides the next attempt in the
//! core and writes it, with a new lease for the claiming instance, in one script that
//! lands only if the task is at the version decided on and its lease lapsed at least the
//! back-off ago: one round trip when the instance knows the task's latest version (it
//! heard its events), two otherwise. Of several instances claiming at once, one wins; the
//! others find the lease held. The old holder's writes are refused from then on
//! ([`Error::Superseded`]): every write of a handle carries
//! its attempt. A hand-over ([`TaskStore::hand_over`](mcp_tasks::TaskStore::hand_over), on
//! a graceful shutdown) makes the lease lapse at once and tells every instance on the
//! channel, so another claims the task without waiting for a lease or a back-off. When
//! the last attempt's lease lapses, the task fails with `-32603` saying how many attempts
//! ran. Redelivery needs leases: with [`LeasePolicy::leave_until_ttl`] nothing is ever
//! claimable.
//!
//! Costs: creating a redeliverable task is one round trip (the job is written with it);
//! a claim is one round trip in the common case; the claim loop sleeps until a lease round
//! (every renewal interval, already there for the reaper) or a hand-over event files a
//! candidate: it never polls Redis on its own.
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
//! # Listing across owners
//! Outside a Redis Cluster, every task is also filed in a store-wide index (`{prefix}:all`,
//! a sorted set of task keys by a store-wide creation sequence, written in the creating
//! and removing scripts), which the driver's
//! [`page_all`](mcp_tasks::backend::Driver::page_all) walks for an operator's view of every
//! owner's tasks: one script per page, looking at no more than ten index entries per task
//! asked for (the status filter is applied inside it), forgetting entries of tasks that
//! expired as it goes. Each instance also prunes such entries, 1,000 every 30 s. It costs
//! one `ZADD` and one counter `SET` per creation, and about 100 bytes of memory per task
//! until it is pruned. A Redis Cluster keeps no such index (its keys would be in another
//! slot than the task's): listing across owners answers [`Error::Store`] there. Tasks
//! created by a build before this index are not in it.
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
//!
//! [`TaskStore`]: mcp_tasks::TaskStore
//! [`SharedStore`]: mcp_tasks::backend::SharedStore
//! [`TaskStore::subscribe`]: mcp_tasks::TaskStore::subscribe
//! [`TaskStore::create`]: mcp_tasks::TaskStore::create
//! [`TaskStore::insert`]: mcp_tasks::TaskStore::insert
//! [`Update::apply`]: mcp_tasks::Update::apply
//! [`Error::Store`]: mcp_tasks::Error::Store
//! [`Error::Timeout`]: mcp_tasks::Error::Timeout
//! [`Error::Superseded`]: mcp_tasks::Error::Superseded

#![deny(missing_docs)]

mod builder;
mod connection;
mod driver;
mod keys;
mod mux;
mod scripts;
mod subscriber;

use mcp_tasks::backend::{AsSharedStore, SharedStore};
use mcp_tasks::{Error, Timestamp};

pub use builder::{
    DEFAULT_IO_TIMEOUT, DEFAULT_OUTAGE_TIMEOUT, DEFAULT_PREFIX, RedisStoreBuilder, redacted_url,
};
pub use driver::RedisDriver;
/// The policy of a task's lease (re-exported from the core: every shared store has one).
pub use mcp_tasks::LeasePolicy;

/// The name of each instance's subscriber connection (`CLIENT LIST` shows it).
pub const SUBSCRIBER_NAME: &str = "mcp-tasks-subscriber";

/// A task store in Redis, shared by every instance built on the same server and prefix:
/// the core's [`SharedStore`] over a [`RedisDriver`].
///
/// `Clone` shares the instance (its connections and its threads). See the
/// [crate docs](crate) for the guarantees and how to run Redis for it.
///
/// ```no_run
/// use mcp_tasks::{Owner, TaskRequest, TaskStore};
/// use mcp_tasks_redis::RedisTaskStore;
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
#[derive(Clone, Debug)]
pub struct RedisTaskStore {
    store: SharedStore<RedisDriver>,
}

/// The store is a [`TaskStore`](mcp_tasks::TaskStore) through the shared store.
impl AsSharedStore for RedisTaskStore {
    type Driver = RedisDriver;

    fn shared_store(&self) -> &SharedStore<RedisDriver> {
        &self.store
    }
}

impl RedisTaskStore {
    /// The key prefix this instance shares tasks under (instances with the same Redis and
    /// prefix serve the same tasks).
    #[must_use]
    pub fn prefix(&self) -> &str {
        self.store.driver().prefix()
    }

    /// The number of waits pending on this instance now, blocking or async: each `wait`,
    /// `wait_for_input` in progress and each future of theirs not yet resolved or dropped.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.store.pending_waits()
    }

    /// The current time on the Redis server's clock (the one every timestamp comes from).
    ///
    /// # Errors
    /// [`Error::Store`] if Redis cannot be reached.
    pub fn now(&self) -> Result<Timestamp, Error> {
        self.store.now()
    }
}
