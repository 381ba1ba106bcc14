//! The connections of one instance to its file: how each is opened (WAL, the busy
//! timeout, the durability), the one that writes (behind a mutex: SQLite lets one
//! transaction write at a time anyway, and a mutex queues this process's writers without
//! the busy handler's sleeps), the ones that read (a small pool: in WAL, reads run beside
//! a write), and what SQLite's errors become.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use mcp_tasks::Error;
use rusqlite::{Connection, ErrorCode, OpenFlags};

/// How many idle reading connections an instance keeps.
const IDLE_READERS: usize = 8;

/// How a commit reaches the disk: SQLite's `synchronous` setting, in WAL mode.
///
/// | setting | survives a `kill -9` of the process | survives a power loss or an OS crash |
/// |---|---|---|
/// | [`Full`](Synchronous::Full) (default) | every acknowledged change | every acknowledged change (on storage that honours flushes) |
/// | [`Normal`](Synchronous::Normal) | every acknowledged change | all but the last changes since the last checkpoint's flush; never a corrupt file |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=NORMAL`: the WAL is flushed at checkpoints only. A commit is in the
    /// OS's cache when acknowledged: it survives the process's crash, not the machine's.
    Normal,
    /// `synchronous=FULL`: the WAL is flushed at every commit, before it is acknowledged.
    #[default]
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// How every connection of an instance is opened.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) path: PathBuf,
    pub(crate) busy: Duration,
    pub(crate) synchronous: Synchronous,
    pub(crate) max_page_count: Option<u32>,
}

impl Options {
    /// The file's path as messages show it.
    pub(crate) fn shown(&self) -> String {
        self.path.display().to_string()
    }

    /// Opens a connection to the file, in WAL mode, with the busy timeout and durability.
    pub(crate) fn open(&self) -> Result<Connection, Error> {
        let connection = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|err| self.fault("cannot be opened", err))?;
        if connection.is_readonly("main").unwrap_or(false) {
            return Err(self.read_only());
        }
        connection
            .busy_timeout(self.busy)
            .map_err(|err| self.fault("cannot be opened", err))?;
        // The first statement reads the file: a file that is not a database fails here.
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|err| self.fault("cannot be opened", err))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::store(format!(
                "the task store `{}` cannot be put in WAL mode (journal mode `{mode}`): keep it \
                 on a local file system",
                self.shown()
            )));
        }
        connection
            .pragma_update(None, "synchronous", self.synchronous.pragma())
            .map_err(|err| self.fault("cannot be opened", err))?;
        if let Some(pages) = self.max_page_count {
            connection
                .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
                .map_err(|err| self.fault("cannot be opened", err))?;
        }
        Ok(connection)
    }

    /// The error of a file this process may not write.
    pub(crate) fn read_only(&self) -> Error {
        Error::store(format!(
            "the task store `{}` is read-only: this process may not write the file (or its \
             directory, where SQLite keeps the `-wal` and `-shm` files beside it)",
            self.shown()
        ))
    }

    /// A store error saying what failed on the file, and why in SQLite's words.
    pub(crate) fn fault(&self, what: &str, err: rusqlite::Error) -> Error {
        let why = match err.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => {
                "the disk (or the file's size limit) is full; nothing of the change was written"
                    .to_owned()
            }
            Some(ErrorCode::ReadOnly) => {
                "the file is read-only; nothing of the change was written".to_owned()
            }
            Some(ErrorCode::NotADatabase) => "the file is not an SQLite database".to_owned(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
                "another process held the file's write lock longer than the I/O timeout \
                 ({:?})",
                self.busy
            ),
            _ => err.to_string(),
        };
        Error::store_caused(
            format!("the task store `{}` {what}: {why}", self.shown()),
            err,
        )
    }
}

/// The connections of one instance: one writer, a pool of readers.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) options: Options,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

impl Engine {
    /// Opens the writing connection (the schema is then prepared on it).
    pub(crate) fn open(options: Options) -> Result<Engine, Error> {
        let writer = options.open()?;
        Ok(Engine {
            options,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.options.path
    }

    /// The writing connection, for one transaction.
    pub(crate) fn writer(&self) -> Result<MutexGuard<'_, Connection>, Error> {
        self.writer.lock().map_err(|_| {
            Error::store(format!(
                "the task store `{}`: a writer panicked while holding the connection",
                self.options.shown()
            ))
        })
    }

    /// Runs `read` on a reading connection (one from the pool, or a new one).
    pub(crate) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let pooled = self.readers.lock().ok().and_then(|mut idle| idle.pop());
        let connection = match pooled {
            Some(connection) => connection,
            None => self.options.open()?,
        };
        let answer = read(&connection).map_err(|err| self.options.fault("cannot be read", err));
        if let Ok(mut idle) = self.readers.lock()
            && idle.len() < IDLE_READERS
        {
            idle.push(connection);
        }
        answer
    }
}
