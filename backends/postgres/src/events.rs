//! The listening connection: one per instance, on the store's runtime. It `LISTEN`s on the
//! store's channel and hands each notification, in order, to the instance's event thread,
//! which hands it to the store's [`FeedSink`] (off the runtime: the store may read a task
//! too large for its notification, and its subscribers are user code). It checks the connection
//! with a `SELECT 1` after a second of silence, which must answer within a second (a hung
//! connection counts as lost); when the connection is lost it tells the
//! waits (they poll until it is back, then read again, since notifications sent meanwhile
//! are lost), backs off (10 ms doubling to 1 s) and connects again.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mcp_tasks::Error;
use mcp_tasks::backend::FeedSink;
use tokio_postgres::{AsyncMessage, Config, NoTls};

use crate::connection::Engine;

/// The application name of each instance's listening connection (`pg_stat_activity`
/// shows it).
pub const LISTENER_NAME: &str = "mcp-tasks-listener";

/// How long the listening connection may stay silent before it is checked.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// How long the check (`SELECT 1`) may take before the connection counts as hung (at most
/// the I/O timeout): bounded apart from the I/O timeout (10 s), so that a hung listening
/// connection costs the waits about what a lost one does (their fallback poll starts
/// within two seconds), not ten seconds of unheard changes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What the listening connection tells the event thread, in order.
enum Event {
    Up,
    Down,
    Message(String),
}

/// Starts the event thread and the listening connection on `channel`, delivering to
/// `sink`.
pub(crate) fn start(engine: &Engine, channel: &str, sink: FeedSink) -> Result<(), Error> {
    let (events, received) = mpsc::channel();
    std::thread::Builder::new()
        .name("mcp-tasks-pg-events".into())
        .spawn(move || dispatch(&received, &sink))
        .map_err(|err| Error::store_caused("cannot start the event thread", err))?;
    let mut config = engine.config.clone();
    config.application_name(LISTENER_NAME);
    engine.spawn(listen(
        config,
        channel.to_owned(),
        engine.io_timeout,
        events,
    ));
    Ok(())
}

/// The event thread: hands each event to the store while it lives.
fn dispatch(received: &Receiver<Event>, sink: &FeedSink) {
    for event in received {
        let open = match event {
            Event::Up => sink.up(),
            Event::Down => sink.down(),
            Event::Message(payload) => sink.message(&payload),
        };
        if !open {
            return;
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
                tokio::time::timeout(io_timeout.min(PROBE_TIMEOUT), client.simple_query("SELECT 1"))
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
