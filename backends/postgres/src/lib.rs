//! [`PostgresTaskStore`]: a durable [`TaskStore`] shared by several server instances
//! through PostgreSQL.
//!
//! Each instance builds a `PostgresTaskStore` on the same database and schema; they share
//! the tasks, and every guarantee of the in-process [`TaskRegistry`] holds across them,
//! with what PostgreSQL adds: a change the store acknowledged is committed, and a committed
//! row survives a crash of the server (see [Durability](crate#durability)).
//!
//! The store is the core's [`SharedStore`] over a
//! [`PostgresDriver`]: the decisions, waits, subscribers, cursors, leases, claims and the
//! handling of outages are written once in the core for every engine
//! ([`mcp_tasks::backend`]); this crate is the driver (the schema and its functions, the
//! statements, the pool and its runtime, the listening connection), held to the driver
//! contract by the store test kit's `driver_suite!` and to the registry's behaviour by its
//! `store_suite!`.
//!
//! # How it keeps the guarantees
//! - **One state machine, one round trip per operation.** A read is one `SELECT`. A
//!   change is decided by the core ([`Update::apply`]) on the task as known with its
//!   version, then written by one call of a server-side function (`commit_task`) that
//!   locks the task's row, writes only if the version is unchanged and the move is one the
//!   spec's table allows, and otherwise answers the task as it is, so the instance decides
//!   again on that. Creating (`create_task`), removing (`remove_task`) and renewing leases
//!   (`renew_leases`) are one call each too. The first terminal status stays, a cancelled
//!   task never gains a result, and cancelling a terminal task is the spec's `-32602`.
//! - **Isolation.** Every statement runs in its own transaction at PostgreSQL's default,
//!   `READ COMMITTED`, and that is enough: a function decides on a row it has locked
//!   (`SELECT … FOR UPDATE`), and the lock makes a concurrent writer of the same task wait
//!   and then read the version the first one committed (PostgreSQL re-reads a locked row
//!   after the wait). No decision reads a set of rows that another transaction could
//!   change unseen, except the per-owner count of a create, which runs after the owner's
//!   row is locked (each statement of a function sees what committed before it started),
//!   so two creates of one owner cannot both pass the limit. `SERIALIZABLE` would add
//!   retries and nothing these writes need.
//! - **Owners by column.** Every statement names the task's id *and* its owner's tag
//!   ([`owner_tag`](mcp_tasks::backend::owner_tag)): another owner's task does not exist for
//!   you (the error of an unknown id).
//! - **One clock.** `createdAt`, `lastUpdatedAt`, expiries and lease deadlines come from
//!   the server's `clock_timestamp()`: no skew between instances, and `lastUpdatedAt`
//!   never moves backwards.
//! - **TTL.** A task's row holds its expiry (`createdAt + ttl`); every statement ignores
//!   expired rows, so an expired task is gone for every instance at once, and each
//!   instance's lease thread deletes them in batches.
//! - **Keyset cursors.** Tasks are listed by a per-owner creation sequence; a cursor
//!   names the last one shown, encrypted and tagged per owner ([`CursorKey`]) under a
//!   secret every instance shares (configured, or stored once in the schema's `settings`
//!   table), so a cursor from one instance continues on another, survives deletions,
//!   expiry and restarts, and reveals nothing.
//! - **Wake-ups across instances.** Every change is sent on the store's channel with
//!   `pg_notify`, after it committed: the writes commit without notifying (schema
//!   version 3), and each instance's announcer (one connection of its own,
//!   `application_name` [`ANNOUNCER_NAME`]) sends the events of the instance's committed
//!   writes, in the order they were answered, whatever queued while its last batch was
//!   sent in one transaction (`synchronous_commit = off`: nothing durable rides on it),
//!   packed into as few notifications as hold them; under load at most one such batch a
//!   millisecond, after a quiet moment at once. So
//!   notifications no longer serialize the writes' commits (PostgreSQL commits notifying
//!   transactions one at a time), and a wake-up costs one more round trip than a change
//!   (0.8 ms median across instances on the development machine). Each instance keeps one
//!   listening connection (`application_name` [`LISTENER_NAME`]); its notifications keep
//!   the instance's copies of unfinished tasks current, reach
//!   [subscribers](mcp_tasks::TaskStore::subscribe), and wake the instance's waits. A wait
//!   registers *before* it reads (no lost wake-up). An event is lost if its instance stops
//!   between the commit and the announcement, or while a listening connection is down:
//!   so waits also read their task every
//!   [fallback poll](PostgresStoreBuilder::fallback_poll) (1 s by default), which bounds
//!   how late such a change is seen, at one read per pending wait per fallback poll; when
//!   the listening connection is back, every wait reads once more. The connection is
//!   checked with a `SELECT 1` after a second of silence, which must answer within a second, so a hung server (or a hung
//!   listening session) takes it down like a lost one: a change is then heard within
//!   about two seconds plus the fallback poll, not the 10 s I/O timeout.
//! - **Subscribers** of every instance see the changes made on any instance, in order,
//!   from the moment [`build`](PostgresStoreBuilder::build) returns (each instance's in
//!   the order its writes were answered; two instances changing one task at the same
//!   moment may be heard in the other order, each change with its version); changes made
//!   while an instance's listening connection is down, and changes whose event was lost
//!   with their instance, reach its waits but not its subscribers (status notifications
//!   are advisory in MCP). They run on the instance's event thread:
//!   keep them short.
//!
//! # Using it from synchronous and asynchronous code
//! A statement runs on the thread that calls: it takes a pooled connection, writes the
//! statement and reads its answer itself, waiting on the connection's socket (no runtime
//! is entered, no other thread is involved). So the same store works from plain threads
//! and from handlers running on any async runtime, tokio's included (where the blocking
//! `postgres` crate panics: it enters a runtime of its own). The instance's event thread
//! drives its listening connection the same way, and the store's own small tokio runtime
//! (one worker thread) only the announcer's connection (and the migrations). A call blocks its thread for one round trip, like the Redis store:
//! from async code prefer `spawn_blocking` for long sequences. The waits are also futures
//! ([`wait_async`](mcp_tasks::TaskStore::wait_async)) that need no runtime: woken by the
//! instance's notifications and the store layer's timer, each woken poll reads once.
//! Connections come from a pool of at most [`pool_size`](PostgresStoreBuilder::pool_size)
//! (16 by default, plus the listening one); a call waits for a free one at most the
//! [I/O timeout](PostgresStoreBuilder::io_timeout) (10 s), which also bounds connecting
//! and every statement. TLS is not built in: use a unix socket, a private network or a
//! TLS sidecar.
//!
//! # Faults
//! - **A broken connection is retried once, exactly.** When a statement's connection
//!   breaks (the server restarted, the connection was cut, or it did not answer within
//!   the I/O timeout), the instance drops every idle pooled connection and sends the
//!   statement once more on a fresh one; only if that fails too does the caller get
//!   [`Error::Store`]. Every write carries a random write id
//!   stored with what it wrote, so a replay of a write that was applied answers as the
//!   first attempt did and changes nothing more (a create answers the task, a commit
//!   `ok`, a removal the removed task, kept 30 s).
//! - **Bounded waits.** A wait whose read fails reads again every fallback poll; if the
//!   store stays unreachable until the wait's timeout, or for the
//!   [outage timeout](PostgresStoreBuilder::outage_timeout) (30 s), it answers
//!   [`Error::Store`], never a state ("still working", "gone").
//! - **Finished work is not lost to an outage.** A typed handle's finishing write
//!   (`complete`, `fail`, `finish`, `cancel`) is retried with backoff (10 ms doubling to
//!   1 s) until it lands, the task turns out gone or moved on, or the outage timeout
//!   passes; then it answers [`Error::Store`] saying it gave up.
//!
//! # Dead instances and redelivery
//! The same contract as the Redis store's (`mcp-tasks-redis`), on rows. A task created
//! for a typed handle ([`TaskStore::create`](mcp_tasks::TaskStore::create)) has a lease
//! deadline in its row; each instance's lease thread renews every lease its live handles
//! hold in one call per [renewal interval](LeasePolicy) (40 s leases renewed every 5 s by
//! default), and fails, with `-32603`, the tasks whose lease lapsed (any instance's), in a
//! write that lands only while the lease is still lapsed; a stale holder's later writes
//! find a newer version and are refused. A task created
//! [`with_redelivery`](mcp_tasks::TaskRequest::with_redelivery) keeps its job and
//! checkpoint: when its lease lapses with attempts left, every instance files it as
//! claimable after the [`ClaimBackoff`](mcp_tasks::ClaimBackoff), and one
//! [claim](mcp_tasks::TaskStore::claim) wins (a conditional write that takes a new lease
//! for the next attempt; the old holder is [superseded](mcp_tasks::Error::Superseded)).
//! A [hand-over](mcp_tasks::TaskStore::hand_over) lapses the lease at once and tells
//! every instance, which claims without waiting. A task whose instance stopped fails (or
//! becomes claimable) within the lease plus one renewal interval.
//!
//! # Listing across owners
//! The driver's [`page_all`](mcp_tasks::backend::Driver::page_all), for an operator's view
//! of every owner's tasks, is one keyset query on the index of (`seq`, `id`) (schema
//! version 2), with the status filter in its `WHERE`.
//!
//! # Schema and migrations
//! The tables and functions live in one schema ([`DEFAULT_SCHEMA`], or
//! [`schema`](PostgresStoreBuilder::schema)); instances on the same database and schema
//! share tasks. The schema is versioned (`<schema>.migrations`); [`build`] applies the
//! migrations it lacks in one transaction under an advisory lock, so instances starting
//! at once apply each once, and refuses a schema newer than the build. Where the
//! application's role may not create tables, build with
//! [`migrate(false)`](PostgresStoreBuilder::migrate) (it then checks the version) and run
//! [`PostgresTaskStore::migrate`] as a deploy step. PostgreSQL 13 or newer.
//!
//! # Durability
//! A change is acknowledged once its transaction committed. With PostgreSQL's defaults,
//! `fsync = on` and `synchronous_commit = on`, a commit is on disk (its WAL flushed)
//! before the server confirms it, so an acknowledged result survives `kill -9` of
//! PostgreSQL, a crash of its host, or a power loss (on storage that honours flushes).
//! The fault suite proves it for `kill -9`: handlers finishing tasks while the server is
//! killed and restarted lose no acknowledged result. What relaxing them trades:
//! - `synchronous_commit = off`: commits are confirmed before their WAL is flushed; a
//!   crash of PostgreSQL loses up to about three times `wal_writer_delay` (600 ms by
//!   default) of acknowledged changes, without corrupting anything: the same window as
//!   Redis's `appendfsync everysec`. It can be set for this store's role alone
//!   (`ALTER ROLE … SET synchronous_commit = off`).
//! - `fsync = off`: a crash of the host (not just of PostgreSQL) can corrupt the
//!   database. Never on data you keep.
//! - With streaming replicas, `synchronous_commit = remote_apply` (and
//!   `synchronous_standby_names`) makes an acknowledged change survive a failover too;
//!   asynchronous replication can lose the last acknowledged changes on a failover, as
//!   Redis replication does.
//!
//! # Costs
//! A change is one commit of its own, without a notification: PostgreSQL commits notifying
//! transactions one at a time (a database-wide lock held across the commit's flush), so
//! the store leaves its events to each instance's announcer, which sends many per
//! transaction, and the writes group-commit like any one-row `UPDATE`. With 16 handlers on
//! 2 instances on the development machine (2 cores shared with other work), alternated
//! with the build before in the same hour: 0.44–0.50× (median 0.47×; 7,650–9,550 changes
//! per second) of what `pgbench` makes of a plain one-row `UPDATE` at 16 clients in the same
//! run (~17,000–21,000/s), where that build made 0.36–0.45× (median 0.41×); client CPU
//! ~48 µs and PostgreSQL's ~150 µs per change, against ~56 and ~175 µs before (the raw
//! `UPDATE`: ~14 and ~70 µs). A change costs PostgreSQL about twice a plain `UPDATE`: a
//! create inserts into four indexes and bumps the owner's row, and every change is
//! announced and heard by every instance's listening connection. When commits flush
//! slowly (a loaded disk) the ratio is higher, 0.56–0.67×
//! (`cargo bench -p mcp-tasks-suites --features redis,postgres --bench shared_concurrency`).
//! The common create (without a per-owner limit) and the common commit are one plain
//! statement each; the schema's functions decide the rest. What it costs: a wake-up across
//! instances waits for the write's reply and one more round trip (0.50–0.67 ms median
//! from the call, 0.23–0.30 ms after it returned), and
//! every pending wait reads its task once per fallback poll, since an event is lost if its
//! instance stops between the commit and the announcement. Reads are not affected.
//!
//! A read is one round trip; a change is one round trip when the instance knows the
//! task's latest version (it wrote it or heard its notification, which carries the task
//! when it fits in a notification's 8,000 bytes), two otherwise (a read first). Leases
//! cost each instance two round trips per renewal interval (renew all it holds, look for
//! lapsed ones), and a row update per held lease per interval inside PostgreSQL. Expired
//! tasks are deleted by every instance's lease thread, 1,000 per interval.
//!
//! [`TaskStore`]: mcp_tasks::TaskStore
//! [`TaskRegistry`]: mcp_tasks::TaskRegistry
//! [`Update::apply`]: mcp_tasks::Update::apply
//! [`CursorKey`]: mcp_tasks::backend::CursorKey
//! [`build`]: PostgresStoreBuilder::build

#![deny(missing_docs)]

mod announce;
mod builder;
mod connection;
mod direct;
mod driver;
mod events;
mod rows;
mod schema;
mod statements;

use mcp_tasks::backend::{AsSharedStore, SharedStore};
use mcp_tasks::{Error, Timestamp};

pub use announce::ANNOUNCER_NAME;
pub use builder::{
    DEFAULT_FALLBACK_POLL, DEFAULT_IO_TIMEOUT, DEFAULT_OUTAGE_TIMEOUT, DEFAULT_POOL_SIZE,
    DEFAULT_SCHEMA, PostgresStoreBuilder, redacted_url,
};
use connection::Engine;
pub use connection::POOL_NAME;
pub use driver::PostgresDriver;
pub use events::LISTENER_NAME;
/// The policy of a task's lease (re-exported from the core: every shared store has one).
pub use mcp_tasks::LeasePolicy;

/// A task store in PostgreSQL, shared by every instance built on the same database and
/// schema: the core's [`SharedStore`] over a [`PostgresDriver`].
///
/// `Clone` shares the instance (its pool, its listening connection and its threads). See
/// the [crate docs](crate) for the guarantees and how to run PostgreSQL for it.
///
/// ```no_run
/// use mcp_tasks::{Owner, TaskRequest, TaskStore};
/// use mcp_tasks_postgres::PostgresTaskStore;
///
/// let store = PostgresTaskStore::open("postgres://mcp@127.0.0.1/mcp")?;
/// let alice = Owner::new("alice");
/// let (handle, task) = store.create(&alice, TaskRequest::new(1, "tools/call"))?;
/// // Any instance can answer tasks/get and tasks/result for it.
/// let other = PostgresTaskStore::open("postgres://mcp@127.0.0.1/mcp")?;
/// assert_eq!(other.get(&alice, &task.id().to_string())?.status(), task.status());
/// # drop(handle);
/// # Ok::<(), mcp_tasks::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PostgresTaskStore {
    store: SharedStore<PostgresDriver>,
}

/// The store is a [`TaskStore`](mcp_tasks::TaskStore) through the shared store.
impl AsSharedStore for PostgresTaskStore {
    type Driver = PostgresDriver;

    fn shared_store(&self) -> &SharedStore<PostgresDriver> {
        &self.store
    }
}

impl PostgresTaskStore {
    /// The schema this instance shares tasks in.
    #[must_use]
    pub fn schema(&self) -> &str {
        self.store.driver().schema()
    }

    /// The number of waits pending on this instance now, blocking or async.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.store.pending_waits()
    }

    /// Whether this instance's listening connection is up now (while it is down, waits
    /// poll).
    #[must_use]
    pub fn listening(&self) -> bool {
        self.store.listening()
    }

    /// The current time on the PostgreSQL server's clock (the one every timestamp comes
    /// from).
    ///
    /// # Errors
    /// [`Error::Store`] if PostgreSQL cannot be reached.
    pub fn now(&self) -> Result<Timestamp, Error> {
        self.store.now()
    }

    /// Applies the schema's migrations at `url` in `schema` and answers the version it is
    /// at, without building a store: a deploy step run with a role that may create
    /// tables, for instances built with [`migrate(false)`](PostgresStoreBuilder::migrate).
    /// Safe to run from several places at once (an advisory lock orders them).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL; [`Error::Store`] if PostgreSQL cannot be
    /// reached or refuses a migration (nothing of it is applied then).
    pub fn migrate(url: &str, schema: &str) -> Result<i32, Error> {
        let config = builder::parse_url(url)?;
        let engine = Engine::start(config, 1, DEFAULT_IO_TIMEOUT)?;
        builder::prepare_schema(&engine, schema, true)
    }
}
