//! The schema: tables, indexes and triggers, versioned by SQLite's `user_version` and
//! marked as a task store by its `application_id`, created in one transaction when a
//! process opens an empty file.
//!
//! Conventions. Times are milliseconds since the Unix epoch on the machine's clock (every
//! process on one file shares it). A task row holds its version, status, record (`body`:
//! the core's stored form, opaque to SQL), created/updated, its expiry (`created + ttl`),
//! the originating request id (JSON) and method, the job of a redeliverable task, and
//! while a handler of some instance runs it, the deadline of its lease (`0`: handed over),
//! the attempt it runs and the instance that took it. An owner's creation sequence lives
//! in `owners`; `tally` counts the rows of `tasks` (kept by triggers) for the total limit.
//!
//! Events. Every change appends its event to `events` in its own transaction, in the text
//! form [`ChangeEvent::parse`](mcp_tasks::backend::ChangeEvent::parse) reads; its key
//! (one more than the last, as one transaction writes at a time) orders them as they
//! committed, and every process's feed reads the ones after the last it delivered. The
//! newest event is never pruned, so keys are never reused. No index but the key: a
//! change writes as few pages as it can (the `INSERT` of a change is most of its cost).

use mcp_tasks::Error;
use rusqlite::Connection;

use crate::connection::Options;

/// The schema version this build writes and reads.
pub(crate) const VERSION: i64 = 1;

/// The `application_id` that marks a file as a task store (`mcpt`).
pub(crate) const APPLICATION_ID: i64 = 0x6d63_7074;

const V1: &str = r"
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  seq INTEGER NOT NULL,
  version INTEGER NOT NULL,
  status TEXT NOT NULL,
  body TEXT NOT NULL,
  created INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  expires INTEGER,
  request_id TEXT NOT NULL,
  method TEXT NOT NULL,
  job TEXT,
  lease INTEGER,
  lease_attempt INTEGER,
  lease_holder TEXT,
  UNIQUE (owner, seq)
);
CREATE INDEX tasks_position ON tasks (seq, id);
CREATE INDEX tasks_owner_expires ON tasks (owner, expires);
CREATE INDEX tasks_lease ON tasks (lease) WHERE lease IS NOT NULL;
CREATE INDEX tasks_expires ON tasks (expires) WHERE expires IS NOT NULL;
CREATE TABLE owners (owner TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, payload TEXT NOT NULL);
CREATE TABLE tally (one INTEGER PRIMARY KEY CHECK (one = 1), tasks INTEGER NOT NULL);
INSERT INTO tally (one, tasks) VALUES (1, 0);
CREATE TRIGGER tasks_counted AFTER INSERT ON tasks BEGIN
  UPDATE tally SET tasks = tasks + 1;
END;
CREATE TRIGGER tasks_uncounted AFTER DELETE ON tasks BEGIN
  UPDATE tally SET tasks = tasks - 1;
END;
";

/// Creates the schema in an empty file, or checks that the file holds this build's: one
/// `BEGIN IMMEDIATE` transaction, so that processes opening a new file at once create it
/// once. A file of another application, or of a newer build, is refused.
pub(crate) fn prepare(connection: &mut Connection, options: &Options) -> Result<(), Error> {
    let shown = options.shown();
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|err| options.fault("cannot be opened", err))?;
    let read = |sql: &str| -> Result<i64, Error> {
        transaction
            .query_row(sql, [], |row| row.get(0))
            .map_err(|err| options.fault("cannot be read", err))
    };
    let application = read("PRAGMA application_id")?;
    let version = read("PRAGMA user_version")?;
    let objects = read("SELECT count(*) FROM sqlite_master")?;
    if application == 0 && version == 0 && objects == 0 {
        transaction
            .execute_batch(V1)
            .and_then(|()| {
                transaction.execute_batch(&format!(
                    "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {VERSION};"
                ))
            })
            .and_then(|()| transaction.commit())
            .map_err(|err| options.fault("cannot be given the task store's schema", err))?;
        return Ok(());
    }
    if application != APPLICATION_ID {
        return Err(Error::store(format!(
            "`{shown}` is an SQLite database of another application (application id \
             {application:#x}, {objects} schema objects), not a task store: open a new file"
        )));
    }
    if version > VERSION {
        return Err(Error::store(format!(
            "the task store `{shown}` is at schema version {version}, newer than this build's \
             {VERSION}: run every process on it with the same (or a newer) build"
        )));
    }
    if version < VERSION {
        return Err(Error::store(format!(
            "the task store `{shown}` is at schema version {version}, which this build \
             ({VERSION}) cannot read"
        )));
    }
    Ok(())
}
