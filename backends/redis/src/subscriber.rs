//! The change feed of one instance: its subscription to the store's pub/sub channel.
//!
//! Every change a script makes is published in the same atomic step. One subscriber
//! thread per instance listens on the channel and hands each message to the store's
//! [`FeedSink`] (which keeps the instance's copies and claimables, tells its subscribers
//! and wakes the waits on the task). The subscription is the feed: when its connection
//! drops or comes back, the sink hears it (waits poll meanwhile, and read again once it is
//! back, since messages sent meanwhile are lost).

use std::time::{Duration, Instant};

use mcp_tasks::backend::FeedSink;

/// Runs the subscriber: connect, subscribe, deliver messages; on any error, take the feed
/// down, back off, and reconnect. Ends when the store is gone.
pub(crate) fn run(client: &redis::Client, channel: &str, sink: &FeedSink, io_timeout: Duration) {
    let mut backoff = Duration::from_millis(10);
    loop {
        let session = subscribe(client, channel, sink, io_timeout);
        if !sink.down() || session.is_ok() {
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
fn subscribe(
    client: &redis::Client,
    channel: &str,
    sink: &FeedSink,
    io_timeout: Duration,
) -> redis::RedisResult<()> {
    let mut connection =
        client.get_connection_with_timeout(io_timeout.min(Duration::from_secs(2)))?;
    connection.set_write_timeout(Some(io_timeout))?;
    connection.set_read_timeout(Some(io_timeout))?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(crate::SUBSCRIBER_NAME)
        .exec(&mut connection)?;
    let mut pubsub = connection.as_pubsub();
    pubsub.subscribe(channel)?;
    // Wake up now and then to notice that the store was dropped.
    let tick = Duration::from_millis(500).min(io_timeout);
    pubsub.set_read_timeout(Some(tick))?;
    let mut heard = Instant::now();
    if !sink.up() {
        return Ok(());
    }
    loop {
        match pubsub.get_message() {
            Ok(message) => {
                heard = Instant::now();
                // Read in place (text that is not UTF-8 is no change event).
                let payload = std::str::from_utf8(message.get_payload_bytes()).unwrap_or_default();
                if !sink.message(payload) {
                    return Ok(());
                }
            }
            Err(err) if err.is_timeout() => {
                if sink.is_closed() {
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
