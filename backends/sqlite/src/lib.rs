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
//! DOCS
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
