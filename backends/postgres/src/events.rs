//! The listening connection: one per instance, driven by a thread of its own (the
//! instance's event thread, [`direct`](crate::direct)), which `LISTEN`s on the store's
//! channel and hands each notification, in order, to the store's [`FeedSink`] (on this
//! thread, off any runtime: the store may read a task too large for its notification, and
//! its subscribers are user code). It checks the connection with a `SELECT 1` after a
//! second of silence, which must answer within a second (a hung connection counts as
//! lost); when the connection is lost it tells the waits (they poll until it is back, then
//! read again, since notifications sent meanwhile are lost), backs off (10 ms doubling to
//! 1 s) and connects again. It ends, closing its connection, within a quarter of a second
//! of the store being dropped.

use std::time::{Duration, Instant};

use mcp_tasks::Error;
use mcp_tasks::backend::FeedSink;
use tokio_postgres::Config;

use crate::connection::Engine;
use crate::direct::Direct;

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

/// How often the event thread looks whether the store is gone, while nothing is heard.
const TICK: Duration = Duration::from_millis(250);

/// Starts the event thread, listening on `channel` and delivering to `sink`.
pub(crate) fn start(engine: &Engine, channel: &str, sink: FeedSink) -> Result<(), Error> {
    let mut config = engine.config.clone();
    config.application_name(LISTENER_NAME);
    let channel = channel.to_owned();
    let io_timeout = engine.io_timeout;
    std::thread::Builder::new()
        .name("mcp-tasks-pg-events".into())
        .spawn(move || listen(&config, &channel, io_timeout, &sink))
        .map_err(|err| Error::store_caused("cannot start the event thread", err))?;
    Ok(())
}

/// Listens, and listens again after every failure, until the store is gone.
fn listen(config: &Config, channel: &str, io_timeout: Duration, sink: &FeedSink) {
    let mut backoff = Duration::from_millis(10);
    loop {
        let started = Instant::now();
        if session(config, channel, io_timeout, sink).is_ok() || !sink.down() {
            return;
        }
        if started.elapsed() > Duration::from_secs(5) {
            backoff = Duration::from_millis(10);
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// One listening session: connect, `LISTEN`, deliver notifications. `Ok` once the store
/// is gone; `Err` (saying why) when the connection failed, hung or closed.
fn session(
    config: &Config,
    channel: &str,
    io_timeout: Duration,
    sink: &FeedSink,
) -> Result<(), String> {
    let deadline = Instant::now() + io_timeout;
    let mut connection = Direct::connect(config, deadline).map_err(|err| err.to_string())?;
    connection
        .batch_execute(&format!("LISTEN \"{channel}\""), deadline)
        .map_err(|err| format!("LISTEN failed: {err}"))?;
    if !sink.up() {
        return Ok(());
    }
    let mut heard = Instant::now();
    loop {
        let payloads = connection
            .notifications(Instant::now() + TICK)
            .map_err(|err| err.to_string())?;
        if payloads.is_empty() {
            if sink.is_closed() {
                return Ok(());
            }
            if heard.elapsed() >= IDLE_CHECK {
                // Silent for a while: is PostgreSQL still there? (A hung server counts as
                // gone: the waits poll meanwhile.)
                let probe = Instant::now() + io_timeout.min(PROBE_TIMEOUT);
                connection
                    .batch_execute("SELECT 1", probe)
                    .map_err(|err| format!("the listening connection failed its check: {err}"))?;
                heard = Instant::now();
            }
            continue;
        }
        heard = Instant::now();
        for payload in payloads {
            for event in crate::announce::unpack(&payload) {
                if !sink.message(event) {
                    return Ok(());
                }
            }
        }
    }
}
