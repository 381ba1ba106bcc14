//! Local waits of one instance, woken by the store's pub/sub channel.
//!
//! Every change a script makes is published in the same atomic step. One subscriber
//! thread per instance listens on the channel and bumps the task each message names in
//! the instance's [`Feed`] (the core's waits of a shared store: a wait marks its task's
//! event *before* it reads the task, so no wakeup is lost, and reads only while the feed
//! is up). The subscription is the feed: when its connection drops or comes back, every
//! wait wakes; while it is down a wait waits for it (bounded by the outage timeout), and
//! once it is back it reads again, since messages sent meanwhile are lost.

use std::sync::Weak;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{Feed, StoredParts};

use crate::Inner;
use crate::keys::owner_of_tag;

/// What the subscriber thread needs of its store, held weakly so that the thread ends
/// once the store is dropped.
pub(crate) trait Listener: Send + Sync + 'static {
    /// Handles one message of the channel.
    fn on_message(&self, payload: &str);
    /// The feed to tell about the subscription's state.
    fn feed(&self) -> &Feed<String>;
}

/// Runs the subscriber: connect, subscribe, deliver messages; on any error, take the feed
/// down, back off, and reconnect. Ends when the listener is gone.
pub(crate) fn run<L: Listener>(
    client: &redis::Client,
    channel: &str,
    listener: &Weak<L>,
    io_timeout: Duration,
) {
    let mut backoff = Duration::from_millis(10);
    loop {
        let session = subscribe(client, channel, listener, io_timeout);
        let Some(alive) = listener.upgrade() else {
            return;
        };
        alive.feed().down();
        drop(alive);
        if session.is_ok() {
            return;
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// How long the subscription may stay silent before it is checked with a `PING`.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// One subscription session. `Ok` means the store is gone; `Err` that the connection
/// failed (or did not answer a `PING` within `io_timeout`: a hung Redis counts as gone).
fn subscribe<L: Listener>(
    client: &redis::Client,
    channel: &str,
    listener: &Weak<L>,
    io_timeout: Duration,
) -> redis::RedisResult<()> {
    let mut connection =
        client.get_connection_with_timeout(io_timeout.min(Duration::from_secs(2)))?;
    connection.set_write_timeout(Some(io_timeout))?;
    connection.set_read_timeout(Some(io_timeout))?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(super::SUBSCRIBER_NAME)
        .exec(&mut connection)?;
    let mut pubsub = connection.as_pubsub();
    pubsub.subscribe(channel)?;
    // Wake up now and then to notice that the store was dropped.
    let tick = Duration::from_millis(500).min(io_timeout);
    pubsub.set_read_timeout(Some(tick))?;
    let mut heard = Instant::now();
    match listener.upgrade() {
        Some(alive) => alive.feed().up(),
        None => return Ok(()),
    }
    loop {
        match pubsub.get_message() {
            Ok(message) => {
                heard = Instant::now();
                let Some(listener) = listener.upgrade() else {
                    return Ok(());
                };
                if let Ok(payload) = message.get_payload::<String>() {
                    listener.on_message(&payload);
                }
            }
            Err(err) if err.is_timeout() => {
                if listener.strong_count() == 0 {
                    return Ok(());
                }
                if heard.elapsed() >= IDLE_CHECK {
                    // Silent for a while: is Redis still there? (A timeout here ends the
                    // session, and the feed goes down.)
                    pubsub.set_read_timeout(Some(io_timeout))?;
                    pubsub.ping::<redis::Value>()?;
                    pubsub.set_read_timeout(Some(tick))?;
                    heard = Instant::now();
                }
            }
            Err(err) => return Err(err),
        }
    }
}

impl Listener for Inner {
    fn on_message(&self, payload: &str) {
        let mut parts = payload.splitn(8, '\n');
        let (Some(tag), Some(id), Some(notify)) = (parts.next(), parts.next(), parts.next()) else {
            return;
        };
        let key = format!("{}:{{{tag}}}:t:{id}", self.prefix);
        if let Some(leases) = &self.leases {
            if notify == "claimable" {
                // Handed over by its instance: claimable at once, here too.
                leases.claimables.file(key, Instant::now());
                return;
            }
            // Any change (a claim, a finish, a removal) ends a candidacy; a task still
            // claimable is filed again by the next lease round that sees it lapsed.
            leases.claimables.unfile(&key);
        }
        let (Some(version), Some(status), Some(created), Some(updated), Some(body)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            // A removal.
            self.copies.forget(&key);
            self.feed.bump(&key);
            return;
        };
        let parts = match (created.parse(), updated.parse()) {
            (Ok(created), Ok(updated)) => Some(StoredParts {
                status: status.to_owned(),
                created,
                updated,
                body: body.to_owned(),
            }),
            _ => None,
        };
        // Decoded before the parts are kept, told after.
        let told = if notify == "1" && self.notifier.has_subscribers() {
            owner_of_tag(tag).zip(parts.as_ref().and_then(|parts| parts.decode(id).ok()))
        } else {
            None
        };
        if let Ok(version) = version.parse() {
            match parts {
                Some(parts) => self.copies.learn(key.clone(), version, parts),
                // Not learned; an older copy goes too (the task is read when it changes).
                None => self.copies.outdate(&key, version),
            }
        }
        // Subscribers are told before the waiters wake, as in the registry: a server
        // answering a waiter has sent the task's status notification first.
        if let Some((owner, task)) = told {
            self.notifier.queue(&owner, &task);
            self.notifier.deliver();
        }
        self.feed.bump(&key);
    }

    fn feed(&self) -> &Feed<String> {
        &self.feed
    }
}
