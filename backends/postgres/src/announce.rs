//! The announcer: sends the events of this instance's committed writes on the store's
//! channel, many in one transaction, from a connection of its own (`application_name`
//! [`ANNOUNCER_NAME`]).
//!
//! PostgreSQL commits notifying transactions one at a time (a database-wide lock held
//! from the notifications' queueing to the end of the commit, its flush included), so a
//! write that notified in its own transaction made every write wait for every other's
//! flush. The writes now commit without notifying (they group-commit like any `UPDATE`),
//! and each instance hands the events of its writes, once they committed, to its
//! announcer: whatever queued while its last batch was sent goes in the next, one
//! statement (`pg_notify` over an array) committed with `synchronous_commit = off`
//! (nothing durable rides on it, so the lock is held for no flush). With one writer the
//! event goes at once; under load, one transaction carries many.
//!
//! An event is lost if the instance stops between a write's commit and its announcement,
//! or if the announcement fails twice (a fresh connection is tried once): so the driver
//! answers [`Listening::FeedAfterCommit`](mcp_tasks::backend::Listening::FeedAfterCommit)
//! and waits read their task every fallback poll as well. Events of one instance go out in
//! the order its writes were answered; two instances writing one task at nearly the same
//! moment may announce in the other order (every event carries its version, and the store
//! keeps the latest).

use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_postgres::{Client, Config, NoTls, Statement};

use crate::connection::Engine;

/// The application name of each instance's announcing connection (`pg_stat_activity`
/// shows it).
pub const ANNOUNCER_NAME: &str = "mcp-tasks-announcer";

/// The most events one transaction carries.
const MAX_BATCH: usize = 1_000;

/// The statement that sends a batch: `$1` the channel, `$2` the events.
const SEND: &str = "SELECT count(pg_notify($1, e)) FROM unnest($2::text[]) AS e";

/// The longest event that keeps the task's record (PostgreSQL's limit is 8,000 bytes;
/// the schema's `event` keeps the same margin).
const FULL_EVENT_MAX: usize = 7_900;

/// The sending side: queues an event, never blocks. Dropping it ends the announcer once
/// it sent what was queued.
pub(crate) struct Announcer {
    queue: UnboundedSender<String>,
}

impl Announcer {
    /// Starts the announcer of `engine` on `channel`.
    pub(crate) fn start(engine: &Engine, channel: &str) -> Announcer {
        let (queue, queued) = unbounded_channel();
        let mut config = engine.config.clone();
        let options = match config.get_options() {
            Some(own) => format!("{own} -c synchronous_commit=off"),
            None => "-c synchronous_commit=off".to_owned(),
        };
        config.application_name(ANNOUNCER_NAME).options(options);
        engine.spawn(run(config, channel.to_owned(), engine.io_timeout, queued));
        Announcer { queue }
    }

    /// Queues `event` (sent once what was queued before it is).
    pub(crate) fn announce(&self, event: String) {
        let _ = self.queue.send(event);
    }
}

/// The event of a write: the task as written, without its record (and times) when the
/// whole would not fit a notification. The same text as the schema's `event`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn written(
    tag: &str,
    id: &uuid::Uuid,
    notify: bool,
    version: i64,
    status: &str,
    created: i64,
    updated: i64,
    body: &str,
) -> String {
    let head = format!(
        "{tag}\n{id}\n{}\n{version}\n{status}",
        if notify { '1' } else { '0' }
    );
    if head.len() + body.len() + 42 <= FULL_EVENT_MAX {
        format!("{head}\n{created}\n{updated}\n{body}")
    } else {
        head
    }
}

/// The event of a removal.
pub(crate) fn removed(tag: &str, id: &uuid::Uuid) -> String {
    format!("{tag}\n{id}\n0")
}

/// The event of a hand-over: the task is claimable at once.
pub(crate) fn claimable(tag: &str, id: &uuid::Uuid) -> String {
    format!("{tag}\n{id}\nclaimable")
}

/// Sends what is queued, batch after batch, until the store is gone.
async fn run(
    config: Config,
    channel: String,
    io_timeout: Duration,
    mut queued: UnboundedReceiver<String>,
) {
    let mut client: Option<(Client, Statement)> = None;
    let mut batch = Vec::new();
    while let Some(first) = queued.recv().await {
        batch.clear();
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queued.try_recv() {
                Ok(event) => batch.push(event),
                Err(_) => break,
            }
        }
        // Once on the connection it has, once more on a fresh one; then the batch is
        // dropped (the waits' fallback poll reads what it would have told).
        for _ in 0..2 {
            if client.is_none() {
                client = connect(&config, io_timeout).await;
            }
            let Some((connected, send)) = &client else {
                continue;
            };
            let sent =
                tokio::time::timeout(io_timeout, connected.query(send, &[&channel, &batch])).await;
            if matches!(sent, Ok(Ok(_))) {
                break;
            }
            client = None;
        }
    }
}

/// A fresh connection, driven on the runtime, with the sending statement prepared; `None`
/// if it cannot be had in time.
async fn connect(config: &Config, io_timeout: Duration) -> Option<(Client, Statement)> {
    let connected = async {
        let (client, connection) = config.connect(NoTls).await.ok()?;
        tokio::spawn(connection);
        let send = client.prepare(SEND).await.ok()?;
        Some((client, send))
    };
    tokio::time::timeout(io_timeout, connected).await.ok()?
}
