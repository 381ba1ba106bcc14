//! The listening connection: one per instance, on the store's runtime. It `LISTEN`s on the
//! store's channel and hands each notification, in order, to the instance's event thread,
//! which keeps the copies, tells subscribers and wakes waits. It checks the connection
//! with a `SELECT 1` after a second of silence; when the connection is lost it tells the
//! waits (they poll until it is back, then read again, since notifications sent meanwhile
//! are lost), backs off (10 ms doubling to 1 s) and connects again.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mcp_tasks::Error;
use mcp_tasks::backend::StoredParts;
use tokio_postgres::{AsyncMessage, Config, NoTls};

use crate::Inner;
use crate::owners::owner_of_tag;

/// The application name of each instance's listening connection (`pg_stat_activity`
/// shows it).
pub const LISTENER_NAME: &str = "mcp-tasks-listener";

/// How long the listening connection may stay silent before it is checked.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// What the listening connection tells the event thread, in order.
enum Event {
    Up,
    Down,
    Message(String),
}

/// Starts the event thread and the listening connection of `inner`.
pub(crate) fn start(inner: &Arc<Inner>) -> Result<(), Error> {
    let (events, received) = mpsc::channel();
    let weak = Arc::downgrade(inner);
    std::thread::Builder::new()
        .name("mcp-tasks-pg-events".into())
        .spawn(move || dispatch(&received, &weak))
        .map_err(|err| Error::store_caused("cannot start the event thread", err))?;
    let mut config = inner.engine.config.clone();
    config.application_name(LISTENER_NAME);
    let channel = inner.channel.clone();
    let io_timeout = inner.engine.io_timeout;
    inner
        .engine
        .spawn(listen(config, channel, io_timeout, events));
    Ok(())
}

/// The event thread: applies each event while the store lives.
fn dispatch(received: &Receiver<Event>, inner: &Weak<Inner>) {
    for event in received {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        match event {
            Event::Up => inner.feed.up(),
            Event::Down => inner.feed.down(),
            Event::Message(payload) => inner.on_message(&payload),
        }
    }
}

/// Listens, and listens again after every failure, until the store is gone (the event
/// thread stops receiving).
async fn listen(config: Config, channel: String, io_timeout: Duration, events: Sender<Event>) {
    let mut backoff = Duration::from_millis(10);
    loop {
        let started = Instant::now();
        let _ = session(&config, &channel, io_timeout, &events).await;
        if events.send(Event::Down).is_err() {
            return;
        }
        if started.elapsed() > Duration::from_secs(5) {
            backoff = Duration::from_millis(10);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// One listening session: connect, `LISTEN`, forward notifications; answers why it ended.
async fn session(
    config: &Config,
    channel: &str,
    io_timeout: Duration,
    events: &Sender<Event>,
) -> Result<(), String> {
    let (client, mut connection) = tokio::time::timeout(io_timeout, config.connect(NoTls))
        .await
        .map_err(|_| "connecting timed out".to_owned())?
        .map_err(|err| err.to_string())?;
    let (forward, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    if forward.send(notification.payload().to_owned()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    let _abort = AbortOnDrop(driver);
    tokio::time::timeout(
        io_timeout,
        client.batch_execute(&format!("LISTEN \"{channel}\"")),
    )
    .await
    .map_err(|_| "LISTEN timed out".to_owned())?
    .map_err(|err| err.to_string())?;
    events.send(Event::Up).map_err(|_| "the store is gone")?;
    loop {
        tokio::select! {
            payload = notifications.recv() => match payload {
                Some(payload) => events
                    .send(Event::Message(payload))
                    .map_err(|_| "the store is gone")?,
                None => return Err("the listening connection closed".to_owned()),
            },
            () = tokio::time::sleep(IDLE_CHECK) => {
                // Silent for a while: is PostgreSQL still there? (A hung server counts as
                // gone: the waits poll meanwhile.)
                tokio::time::timeout(io_timeout, client.simple_query("SELECT 1"))
                    .await
                    .map_err(|_| "the listening connection hung".to_owned())?
                    .map_err(|err| err.to_string())?;
            }
        }
    }
}

/// Stops the connection's driver when the session ends (closing the connection).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Inner {
    /// Applies one notification (see the [`schema`](crate::schema) module for its form).
    fn on_message(&self, payload: &str) {
        let parts: Vec<&str> = payload.splitn(8, '\n').collect();
        let (Some(tag), Some(id), Some(notify)) = (parts.first(), parts.get(1), parts.get(2))
        else {
            return;
        };
        let Ok(id) = uuid::Uuid::parse_str(id) else {
            return;
        };
        if let Some(leases) = &self.leases {
            if *notify == "claimable" {
                // Handed over by its instance: claimable at once, here too.
                leases
                    .claimables
                    .file((id, (*tag).to_owned()), Instant::now());
                return;
            }
            // Any change (a claim, a finish, a removal) ends a candidacy; a task still
            // claimable is filed again by the next lease round that sees it lapsed.
            leases.claimables.unfile(&(id, (*tag).to_owned()));
        }
        let (Some(version), Some(status)) = (
            parts.get(3).and_then(|version| version.parse::<u64>().ok()),
            parts.get(4),
        ) else {
            // A removal.
            self.copies.forget(&id);
            self.feed.bump(&id);
            return;
        };
        let stored = match (
            parts.get(5).and_then(|created| created.parse().ok()),
            parts.get(6).and_then(|updated| updated.parse().ok()),
            parts.get(7),
        ) {
            (Some(created), Some(updated), Some(body)) => Some(StoredParts {
                status: (*status).to_owned(),
                created,
                updated,
                body: (*body).to_owned(),
            }),
            _ => None,
        };
        match &stored {
            Some(stored) => self.copies.learn(id, version, stored.clone()),
            None => self.copies.outdate(&id, version),
        }
        // Subscribers are told before the waits wake, as in the registry: a server
        // answering a waiter has sent the task's status notification first.
        if *notify == "1"
            && self.notifier.has_subscribers()
            && let Some(owner) = owner_of_tag(tag)
        {
            let task = match &stored {
                Some(stored) => stored.decode(&id.to_string()).ok(),
                // Too large for a notification: read it (it may have moved on since).
                None => self.read(&owner, id).ok().flatten().map(|read| read.task),
            };
            if let Some(task) = task {
                self.notifier.queue(&owner, &task);
                self.notifier.deliver();
            }
        }
        self.feed.bump(&id);
    }
}
