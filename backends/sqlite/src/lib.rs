//! [`SqliteTaskStore`]: a durable [`TaskStore`] in one SQLite file, with no server to run,
//! shared by every process that opens the same file.
//!
//! The store is the core's [`SharedStore`] over a [`SqliteDriver`]: the decisions, waits,
//! subscribers, cursors, leases, claims and the handling of outages are written once in
//! the core for every engine ([`mcp_tasks::backend`]); this crate is the driver (the
//! schema, one transaction per change, the connections, the feed thread), held to the
//! driver contract by the store test kit's `driver_suite!` and to the registry's behaviour
//! by its `store_suite!`.
//!
//! # How it keeps the guarantees
//! - **One transaction per change, nothing half-written.** A read is one `SELECT` (on a
//!   pooled reading connection: in WAL, reads never wait for a writer). Every change
//!   (create, the version-checked write, removal, a lease round, the sweep) is one
//!   `BEGIN IMMEDIATE` transaction on the instance's writing connection: it takes the
//!   file's write lock first, reads the task's row, decides exactly as the driver contract
//!   says (the version, the lease condition of the reaper's verdict or of a claim, the
//!   spec's table of moves, the limits), writes the row and appends the change's event,
//!   and commits, or rolls back having written nothing. SQLite lets one transaction write
//!   at a time, so a decision never races another: the first terminal status stays and a
//!   cancelled task never gains a result, whatever the number of processes.
//! - **Owners by column.** Every statement names the task's id *and* its owner's tag
//!   ([`owner_tag`](mcp_tasks::backend::owner_tag)): another owner's task does not exist
//!   for you.
//! - **One clock.** Times come from the machine's clock, which every process on the file
//!   shares; `lastUpdatedAt` never moves backwards (a write stamps the later of now and
//!   the time stored).
//! - **Limits, exactly.** The per-owner limit counts the owner's unexpired tasks and the
//!   total the stored rows (kept by triggers; the expired ones are deleted first when it is
//!   reached), both inside the creating transaction.
//! - **TTL.** A task's row holds its expiry; every statement ignores expired rows, and each
//!   instance's lease thread deletes them, 1,000 per round.
//! - **Keyset cursors** by a per-owner creation sequence, under a cursor secret every
//!   process shares (configured, or stored once in the file).
//!
//! # Several processes on one file
//! Every process that opens the file (with [`SqliteTaskStore::open`] or a
//! [builder](SqliteTaskStore::builder)) shares its tasks. Keep it on a local file system:
//! WAL coordinates the processes through shared memory (the `-shm` file beside it), which
//! network file systems do not provide. Each instance holds one writing connection (its
//! threads queue on a mutex; other processes wait for the file's write lock up to the
//! [I/O timeout](SqliteStoreBuilder::io_timeout), SQLite's busy timeout), a few reading
//! connections, and one for its feed.
//!
//! SQLite tells no process of another's commits, so each instance's **feed** asks: every
//! change appends its event to a table in its own transaction; a feed thread polls
//! `PRAGMA data_version` (a read of the shared memory, no disk I/O) every
//! [feed poll](SqliteStoreBuilder::feed_poll) (20 ms) and, when another connection
//! committed, delivers the events after the last one it delivered, in commit order. The
//! instance's own commits nudge it at once. So a wait in one process is woken by a
//! result written in another within about the feed poll: 1 to 10 ms measured
//! (`sqlite_faults`, five rounds on the development machine), where a wait in the process
//! that wrote the result is woken at once. Events are kept a minute; a feed that missed
//! some (a process paused for longer) says so and its waits read their tasks again.
//!
//! # Durability
//! A change is acknowledged once its transaction committed. The file is in WAL mode with
//! [`Synchronous::Full`] by default: the WAL is flushed (`fsync`) at every commit, before
//! the commit is acknowledged, so an acknowledged result survives a `kill -9` of the
//! process, a crash of the OS and a power loss (on storage that honours flushes). With
//! [`Synchronous::Normal`] the WAL is flushed only at checkpoints: an acknowledged change
//! survives the process's death (it is in the OS's cache), but a power loss or an OS
//! crash may lose the last changes acknowledged since the last checkpoint; the file is
//! never corrupted either way. The fault suite kills (`SIGKILL`) a process that creates
//! and finishes tasks on two threads: every result it had acknowledged (1,000 per run) is
//! there after the restart, and every row decodes.
//!
//! # Faults
//! A fault is an [`Error::Store`] naming the file, never a state, and a refused change
//! writes nothing of itself (its transaction is rolled back):
//! - a **read-only file** (or a directory where SQLite cannot keep its `-wal` and `-shm`
//!   files) is refused at open;
//! - a **full disk**, or a file grown to its [`max_page_count`](SqliteStoreBuilder::max_page_count),
//!   refuses the change that needed the room; the tasks read as before it. A handle's
//!   finishing write is retried through it up to the
//!   [outage timeout](SqliteStoreBuilder::outage_timeout), then answered as the error;
//! - a file that is **not an SQLite database**, one of **another application**, or a task
//!   store of a **newer schema version** than the build is refused at open, with one line;
//! - another process holding the **write lock** longer than the I/O timeout (10 s) makes
//!   the change fail with the error, never hang.
//!
//! # Dead instances and redelivery
//! The same contract as every shared store's. A task created for a typed handle holds a
//! lease its instance renews ([`LeasePolicy`]); when a process is killed, its leases
//! lapse: a task that runs once fails with `-32603`, and a redeliverable one with attempts
//! left is claimed by an instance still running on the file, or by the next process to
//! open it, after its [claim back-off](SqliteStoreBuilder::claim_backoff), with its job and
//! last checkpoint (proven by the fault suite and by `mcp_http` killed and started again
//! on its file: the sleep that was running finishes).
//!
//! # Schema
//! The schema is created in one transaction when a process opens an empty (or new) file,
//! marked as a task store by its `application_id` and versioned by its `user_version`
//! (version 1). Processes opening a new file at once create it once.
//!
//! # Costs
//! A read is one `SELECT` on an indexed key: `tasks/get` 4–18 µs against 3–12 µs for a
//! raw `SELECT` of one row by key in the same runs. A change is one transaction, and with
//! `FULL` its cost is the flush: a create or a result written takes about one flush of the
//! WAL (0.6–3.6 ms per commit on the development machine's disk, which other jobs were
//! using; 0.9–1.6× a raw one-row `INSERT` committed with the same settings in the same run
//! in five runs of six, 4× in one). With `NORMAL` a create costs 0.18–0.34 ms, 3–5× a raw
//! one-row `INSERT`, because it writes more pages (the row and its indexes, the owner's
//! sequence, the event, the count), which the WAL's checkpoints copy again. `cargo run
//! --release -p mcp-tasks-sqlite --example costs` measures both on your disk. Leases cost
//! each instance one transaction per renewal interval while it holds any.
//!
//! [`TaskStore`]: mcp_tasks::TaskStore

#![deny(missing_docs)]

mod builder;
mod connection;
mod driver;
mod feed;
mod schema;

use mcp_tasks::backend::{AsSharedStore, SharedStore};
use mcp_tasks::{Error, Timestamp};

pub use builder::{
    DEFAULT_FEED_POLL, DEFAULT_IO_TIMEOUT, DEFAULT_OUTAGE_TIMEOUT, SqliteStoreBuilder,
};
pub use connection::Synchronous;
pub use driver::SqliteDriver;
/// The policy of a task's lease (re-exported from the core: every shared store has one).
pub use mcp_tasks::LeasePolicy;

/// A task store in one SQLite file, shared by every process that opens it: the core's
/// [`SharedStore`] over a [`SqliteDriver`].
///
/// `Clone` shares the instance (its connections and its threads). See the
/// [crate docs](crate) for the guarantees, the durability and the costs.
///
/// ```no_run
/// use mcp_tasks::{Owner, TaskRequest, TaskStore};
/// use mcp_tasks_sqlite::SqliteTaskStore;
///
/// let store = SqliteTaskStore::open("tasks.db")?;
/// let alice = Owner::new("alice");
/// let (handle, task) = store.create(&alice, TaskRequest::new(1, "tools/call"))?;
/// // Any process that opens the file can answer tasks/get and tasks/result for it.
/// let other = SqliteTaskStore::open("tasks.db")?;
/// assert_eq!(other.get(&alice, &task.id().to_string())?.status(), task.status());
/// # drop(handle);
/// # Ok::<(), mcp_tasks::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SqliteTaskStore {
    store: SharedStore<SqliteDriver>,
}

/// The store is a [`TaskStore`](mcp_tasks::TaskStore) through the shared store.
impl AsSharedStore for SqliteTaskStore {
    type Driver = SqliteDriver;

    fn shared_store(&self) -> &SharedStore<SqliteDriver> {
        &self.store
    }
}

impl SqliteTaskStore {
    /// The file this instance keeps its tasks in.
    #[must_use]
    pub fn path(&self) -> &std::path::Path {
        self.store.driver().path()
    }

    /// The number of waits pending on this instance now, blocking or async.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.store.pending_waits()
    }

    /// Whether this instance's feed is up now (while it is down, waits poll).
    #[must_use]
    pub fn listening(&self) -> bool {
        self.store.listening()
    }

    /// The current time on the machine's clock (the one every timestamp comes from).
    ///
    /// # Errors
    /// Never for this store; the signature is every shared store's.
    pub fn now(&self) -> Result<Timestamp, Error> {
        self.store.now()
    }
}
