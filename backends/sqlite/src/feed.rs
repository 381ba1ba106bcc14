//! The change feed: SQLite tells no process of another's commits, so each instance's feed
//! thread asks. Every change appends its event to the `events` table in its own
//! transaction; the thread polls `PRAGMA data_version` (which moves when another
//! connection committed: a read of the shared-memory index, no disk I/O) every
//! [feed poll](crate::SqliteStoreBuilder::feed_poll), and, when it moved, delivers the
//! events after the last one it delivered, in their commit order. This process's own
//! writes nudge it at once, so its own changes are fed without waiting for the poll.
//!
//! Events are kept a minute ([`EVENT_WINDOW_MS`], pruned by the sweep); a feed that finds
//! it missed some (a process stopped for longer) says so ([`FeedSink::down`], then `up`),
//! and the store's waits read their tasks once more.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mcp_tasks::Error;
use mcp_tasks::backend::FeedSink;
use rusqlite::Connection;

use crate::connection::Options;

/// How long events are kept for the feeds of other processes.
pub(crate) const EVENT_WINDOW_MS: i64 = 60_000;

/// The most events one read of the feed delivers.
const BATCH: i64 = 1_000;

/// Wakes the feed threads of this instance when it committed a change.
#[derive(Debug, Default)]
pub(crate) struct Nudge {
    committed: Mutex<u64>,
    changed: Condvar,
}

impl Nudge {
    /// Says that this instance committed a change.
    pub(crate) fn committed(&self) {
        if let Ok(mut count) = self.committed.lock() {
            *count = count.wrapping_add(1);
            self.changed.notify_all();
        }
    }

    /// Waits until a commit after `seen` or `poll`; answers the commits counted now.
    fn wait(&self, seen: u64, poll: Duration) -> u64 {
        let Ok(count) = self.committed.lock() else {
            return seen;
        };
        if *count != seen {
            return *count;
        }
        match self.changed.wait_timeout(count, poll) {
            Ok((count, _)) => *count,
            Err(_) => seen,
        }
    }

    fn seen(&self) -> u64 {
        self.committed.lock().map_or(0, |count| *count)
    }
}

/// The feed's place in the events: the last one delivered.
fn last_event(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("SELECT coalesce(max(seq), 0) FROM events", [], |row| {
        row.get(0)
    })
}

/// Starts the feed thread of an instance; answers once it knows where the events stand.
pub(crate) fn start(
    options: &Options,
    nudge: &Arc<Nudge>,
    poll: Duration,
    sink: FeedSink,
) -> Result<(), Error> {
    let connection = options.open()?;
    let last = last_event(&connection).map_err(|err| options.fault("cannot be read", err))?;
    let options = options.clone();
    let nudge = Arc::clone(nudge);
    std::thread::Builder::new()
        .name("mcp-tasks-sqlite-feed".into())
        .spawn(move || run(&options, connection, &nudge, poll, &sink, last))
        .map_err(|err| Error::store_caused("cannot start the SQLite store's feed thread", err))?;
    Ok(())
}

/// The feed thread: polls, reads, delivers, until the store is gone.
fn run(
    options: &Options,
    mut connection: Connection,
    nudge: &Nudge,
    poll: Duration,
    sink: &FeedSink,
    mut last: i64,
) {
    if !sink.up() {
        return;
    }
    let mut up = true;
    let mut seen = nudge.seen();
    let mut version: Option<i64> = None;
    loop {
        let now = nudge.wait(seen, poll);
        let nudged = now != seen;
        seen = now;
        if sink.is_closed() {
            return;
        }
        let moved = match connection.query_row("PRAGMA data_version", [], |row| row.get(0)) {
            Ok(current) => {
                let moved = version != Some(current);
                version = Some(current);
                moved
            }
            Err(_) => true,
        };
        if !(moved || nudged || !up) {
            continue;
        }
        match deliver(&connection, sink, &mut last) {
            Ok(Some(true)) => {
                if !up {
                    if !sink.up() {
                        return;
                    }
                    up = true;
                }
            }
            Ok(Some(false)) => {
                // Events were pruned before this feed read them: changes went unheard.
                if !sink.down() || !sink.up() {
                    return;
                }
                up = true;
            }
            Ok(None) => return,
            Err(_) => {
                if up {
                    if !sink.down() {
                        return;
                    }
                    up = false;
                }
                if let Ok(fresh) = options.open() {
                    connection = fresh;
                    version = None;
                }
            }
        }
    }
}

/// Delivers the events after `last`, in order: `Some(true)`, or `Some(false)` if some
/// were pruned unread (the feed skipped them); `None` once the store is gone.
fn deliver(
    connection: &Connection,
    sink: &FeedSink,
    last: &mut i64,
) -> rusqlite::Result<Option<bool>> {
    let mut whole = true;
    loop {
        let mut statement = connection.prepare_cached(
            "SELECT seq, payload FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let events = statement
            .query_map([*last, BATCH], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let count = events.len();
        for (seq, payload) in events {
            if seq != *last + 1 {
                whole = false;
            }
            *last = seq;
            if !sink.message(&payload) {
                return Ok(None);
            }
        }
        if i64::try_from(count).unwrap_or(i64::MAX) < BATCH {
            return Ok(Some(whole));
        }
    }
}
