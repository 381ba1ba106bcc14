//! [`PostgresTaskStore`]: a durable [`TaskStore`] shared by several server instances
//! through PostgreSQL.
//!
//! (The full guarantees are in the crate's README and in the sections below.)
//!
//! [`TaskStore`]: mcp_tasks::TaskStore

#![deny(missing_docs)]

mod builder;
mod connection;
mod events;
mod lease;
mod owners;
mod rows;
mod schema;
mod statements;
mod store;
mod waits;

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend::{Copies, CursorKey, Feed, Notifier};
use mcp_tasks::{Error, Timestamp, TtlPolicy};

pub use builder::{
    DEFAULT_FALLBACK_POLL, DEFAULT_IO_TIMEOUT, DEFAULT_OUTAGE_TIMEOUT, DEFAULT_POOL_SIZE,
    DEFAULT_SCHEMA, PostgresStoreBuilder,
};
use connection::Engine;
pub use connection::POOL_NAME;
pub use events::LISTENER_NAME;
use lease::Leases;
/// The policy of a task's lease (re-exported from the core: every shared store has one).
pub use mcp_tasks::LeasePolicy;
use statements::Statements;

/// A task store in PostgreSQL, shared by every instance built on the same database and
/// schema.
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
#[derive(Clone)]
pub struct PostgresTaskStore {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    schema: String,
    channel: String,
    sql: Statements,
    outage_timeout: Duration,
    fallback_poll: Duration,
    ttl: TtlPolicy,
    per_owner: Option<usize>,
    poll_interval: Option<u64>,
    cursors: CursorKey,
    /// The waits of this instance, by task id, and whether it listens.
    feed: Feed<uuid::Uuid>,
    notifier: Notifier,
    /// Unfinished tasks at the latest version this instance knows, by task id.
    copies: Copies<uuid::Uuid>,
    /// The leases of running tasks, unless the [`LeasePolicy`] is to leave them.
    leases: Option<Leases>,
}

impl PostgresTaskStore {
    /// The schema this instance shares tasks in.
    #[must_use]
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// The number of waits pending on this instance now, blocking or async.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.inner.feed.pending()
    }

    /// Whether this instance's listening connection is up now (while it is down, waits
    /// poll).
    #[must_use]
    pub fn listening(&self) -> bool {
        self.inner.feed.live()
    }

    /// The current time on the PostgreSQL server's clock (the one every timestamp comes
    /// from).
    ///
    /// # Errors
    /// [`Error::Store`] if PostgreSQL cannot be reached.
    pub fn now(&self) -> Result<Timestamp, Error> {
        let rows = self.inner.query(&self.inner.sql.now, Vec::new())?;
        let millis: i64 = rows
            .first()
            .ok_or_else(|| rows::unexpected("no time"))
            .and_then(|row| rows::column(row, 0))?;
        Ok(Timestamp::from_unix_millis(millis))
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
        use std::str::FromStr;
        let config = tokio_postgres::Config::from_str(url).map_err(|err| {
            Error::InvalidConfig(format!("`{url}` is not a PostgreSQL URL: {err}"))
        })?;
        let engine = Engine::start(config, 1, DEFAULT_IO_TIMEOUT)?;
        let pool = engine.pool.clone();
        let schema = schema.to_owned();
        engine.block_on(async move {
            let mut client = pool
                .get()
                .await
                .map_err(|err| Error::store_caused("cannot connect to PostgreSQL", err))?;
            schema::migrate(&mut client, &schema)
                .await
                .map_err(Error::store)
        })
    }
}

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("schema", &self.inner.schema)
            .field("ttl", &self.inner.ttl)
            .field("per_owner", &self.inner.per_owner)
            .field("listening", &self.inner.feed.live())
            .field(
                "leases_held",
                &self.inner.leases.as_ref().map(|leases| leases.book.len()),
            )
            .finish_non_exhaustive()
    }
}
