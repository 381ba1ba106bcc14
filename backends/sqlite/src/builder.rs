//! [`SqliteStoreBuilder`]: which file an instance keeps its tasks in, how its commits
//! reach the disk and how often its feed looks for other processes' changes; the settings
//! every shared store takes are the core's
//! ([`StoreSettings`](mcp_tasks::backend::StoreSettings)).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_tasks::Error;
use mcp_tasks::backend::{SharedStore, StoreSettings};

use crate::SqliteTaskStore;
use crate::connection::{Engine, Options, Synchronous};
use crate::driver::SqliteDriver;
use crate::schema;

/// How long a call waits for another process's write lock (SQLite's busy timeout), by
/// default: the I/O timeout.
pub const DEFAULT_IO_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_IO_TIMEOUT;

/// How long a finishing write is retried, and a wait waits, while the file cannot be
/// written or read, by default.
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_OUTAGE_TIMEOUT;

/// How often an instance's feed looks for changes other processes committed, by default.
pub const DEFAULT_FEED_POLL: Duration = Duration::from_millis(20);

/// Builds a [`SqliteTaskStore`] ([`SqliteTaskStore::builder`]).
#[derive(Debug, Clone)]
#[must_use]
pub struct SqliteStoreBuilder {
    path: PathBuf,
    synchronous: Synchronous,
    feed_poll: Duration,
    max_page_count: Option<u32>,
    settings: StoreSettings,
}

impl SqliteTaskStore {
    /// Opens the store in the file at `path` (created if missing) with the default
    /// settings (see [`builder`](Self::builder)).
    ///
    /// # Errors
    /// As for [`SqliteStoreBuilder::build`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::builder(path).build()
    }

    /// A builder for the store in the file at `path`: every process that opens the same
    /// file shares its tasks. The file is created, with the schema, if it does not exist;
    /// keep it on a local file system (WAL needs shared memory between the processes).
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: path.as_ref().to_owned(),
            synchronous: Synchronous::default(),
            feed_poll: DEFAULT_FEED_POLL,
            max_page_count: None,
            settings: StoreSettings::default(),
        }
    }
}

impl SqliteStoreBuilder {
    /// How a commit reaches the disk (default [`Synchronous::Full`]: an acknowledged
    /// change survives a power loss; [`Synchronous::Normal`] only a crash of the process).
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// How often the feed looks for changes other processes committed (default
    /// [`DEFAULT_FEED_POLL`], 20 ms): the longest a wait in this process sleeps past a
    /// change made in another. Changes made by this process are fed at once. Zero is
    /// refused.
    pub fn feed_poll(mut self, every: Duration) -> Self {
        self.feed_poll = every;
        self
    }

    /// The largest the file may grow, in pages (4,096 bytes each unless the file was
    /// created with another page size; default: no limit but the disk's). A change that
    /// would grow it further is refused with [`Error::Store`] as on a full disk, and
    /// nothing of it is written.
    pub fn max_page_count(mut self, pages: u32) -> Self {
        self.max_page_count = Some(pages);
        self
    }

    mcp_tasks::store_settings_methods!(settings);

    /// Opens (or creates) the file and its schema, agrees on the cursor secret, and starts
    /// the feed thread and the lease thread.
    ///
    /// Both limits apply, counted exactly in the creating transaction (the file's write
    /// lock serializes creates): the per-owner limit counts the owner's unexpired tasks,
    /// the total counts every stored task (and deletes the expired ones when it is
    /// reached, before it refuses).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for bad settings ([`StoreSettings::validate`]) or a zero
    /// feed poll; [`Error::Store`] naming the file if it cannot be opened or written (a
    /// read-only file or directory), is not an SQLite database, is another application's
    /// database, or holds a task store of a newer schema version.
    pub fn build(self) -> Result<SqliteTaskStore, Error> {
        let settings = self.settings.clone();
        let driver = self.build_driver()?;
        SharedStore::start(driver, settings).map(|store| SqliteTaskStore { store })
    }

    /// Checks the settings, opens the file and prepares its schema, without starting a
    /// store: the driver alone, for the store test kit's driver suite (or a store of your
    /// own over it).
    ///
    /// # Errors
    /// As for [`build`](Self::build).
    pub fn build_driver(self) -> Result<SqliteDriver, Error> {
        self.settings.validate()?;
        if self.feed_poll.is_zero() {
            return Err(Error::InvalidConfig(
                "the SQLite store's feed poll is zero: its feed would read without pause"
                    .to_owned(),
            ));
        }
        let options = Options {
            path: self.path,
            busy: self.settings.io(),
            synchronous: self.synchronous,
            max_page_count: self.max_page_count,
        };
        if std::fs::metadata(&options.path).is_ok_and(|meta| meta.permissions().readonly()) {
            return Err(options.read_only());
        }
        let engine = Engine::open(options)?;
        {
            let mut writer = engine.writer()?;
            schema::prepare(&mut writer, &engine.options)?;
        }
        Ok(SqliteDriver::new(engine, self.feed_poll))
    }
}
