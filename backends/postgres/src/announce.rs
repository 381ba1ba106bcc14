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
//! event goes at once; under load, one transaction carries many, packed into as few
//! notifications as hold them ([`pack`]: up to 7,900 bytes each), so that the listening
//! connections' backends queue, read and send one entry where they handled one per event.
//! (An instance of an older build, which reads one event per notification, ignores packed
//! ones while builds are mixed: its waits then hear those changes on their fallback poll.)
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

/// Under load, the least time from the start of one batch to the start of the next: once
/// a batch carried more than one event, the next gathers for a moment rather than go with
/// a few (every batch costs PostgreSQL a transaction and a wake-up of each listening
/// backend, and each instance a wake-up of its event thread). After a batch of one event
/// (a quiet moment), the next goes at once.
const BATCH_INTERVAL: Duration = Duration::from_millis(1);

/// The statement that sends a batch: `$1` the channel, `$2` the events.
const SEND: &str = "SELECT count(pg_notify($1, e)) FROM unnest($2::text[]) AS e";

/// The longest event that keeps the task's record (PostgreSQL's limit is 8,000 bytes;
/// the schema's `event` keeps the same margin), and the longest notification of packed
/// events.
const FULL_EVENT_MAX: usize = 7_900;

/// The first line of a notification that packs several events ([`pack`]): no owner tag
/// reads so, so an instance of an older build ignores it whole (rather than reading its
/// first event with the others as its record).
pub(crate) const PACKED: &str = "*\n";

/// What separates packed events: a control character, which a record (JSON text) never
/// holds, nor does an event's head.
pub(crate) const SEPARATOR: char = '\u{1e}';

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

/// The notifications that carry `events`, in order, into `payloads`: consecutive events
/// packed into one notification up to [`FULL_EVENT_MAX`] bytes, `PACKED` and then the
/// events separated by [`SEPARATOR`] (so that the listeners' backends and connections
/// handle one entry where they handled dozens); an event alone as it is.
fn pack(events: &[String], payloads: &mut Vec<String>) {
    payloads.clear();
    // One event needs no packing (and an older build reads it).
    if let [single] = events {
        payloads.push(single.clone());
        return;
    }
    let mut packed: Option<String> = None;
    for event in events {
        let fits = |payload: &String| payload.len() + 1 + event.len() <= FULL_EVENT_MAX;
        if event.contains(SEPARATOR) || PACKED.len() + event.len() > FULL_EVENT_MAX {
            payloads.extend(packed.take());
            payloads.push(event.clone());
            continue;
        }
        match &mut packed {
            Some(payload) if fits(payload) => {
                payload.push(SEPARATOR);
                payload.push_str(event);
            }
            _ => {
                payloads.extend(packed.take());
                let mut payload = String::with_capacity(FULL_EVENT_MAX);
                payload.push_str(PACKED);
                payload.push_str(event);
                packed = Some(payload);
            }
        }
    }
    payloads.extend(packed);
}

/// The events packed in `payload` (one notification), in order: those after [`PACKED`],
/// or the payload itself.
pub(crate) fn unpack(payload: &str) -> impl Iterator<Item = &str> {
    let (packed, events) = match payload.strip_prefix(PACKED) {
        Some(events) => (true, events),
        None => (false, payload),
    };
    events.split(move |c| packed && c == SEPARATOR)
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
    let mut payloads = Vec::new();
    let mut last: Option<tokio::time::Instant> = None;
    while let Some(first) = queued.recv().await {
        if let Some(next) = last.map(|last| last + BATCH_INTERVAL)
            && next > tokio::time::Instant::now()
        {
            tokio::time::sleep_until(next).await;
        }
        let started = tokio::time::Instant::now();
        batch.clear();
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queued.try_recv() {
                Ok(event) => batch.push(event),
                Err(_) => break,
            }
        }
        last = (batch.len() > 1).then_some(started);
        pack(&batch, &mut payloads);
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
                tokio::time::timeout(io_timeout, connected.query(send, &[&channel, &payloads]))
                    .await;
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

#[cfg(test)]
mod tests {
    use super::{FULL_EVENT_MAX, PACKED, SEPARATOR, pack, unpack, written};

    fn events(count: usize, len: usize) -> Vec<String> {
        (0..count)
            .map(|n| format!("a\n{n}\n1\n{}", "x".repeat(len)))
            .collect()
    }

    fn unpacked(payloads: &[String]) -> Vec<String> {
        payloads
            .iter()
            .flat_map(|payload| unpack(payload).map(str::to_owned))
            .collect()
    }

    #[test]
    fn packed_events_come_out_whole_and_in_order_within_the_notification_limit() {
        let sent = events(500, 100);
        let mut payloads = Vec::new();
        pack(&sent, &mut payloads);
        assert!(payloads.len() < 10, "{} notifications", payloads.len());
        assert!(payloads.len() > 1, "packed into one notification");
        assert!(payloads.iter().all(|p| p.len() <= FULL_EVENT_MAX));
        assert!(payloads.iter().all(|p| p.starts_with(PACKED)));
        assert_eq!(unpacked(&payloads), sent);
    }

    #[test]
    fn an_event_alone_goes_as_it_is() {
        let mut payloads = Vec::new();
        let one = events(1, 10);
        pack(&one, &mut payloads);
        assert_eq!(payloads, one);
        assert_eq!(unpacked(&payloads), one);
    }

    #[test]
    fn large_events_and_events_holding_the_separator_go_alone() {
        let large = format!("a\nid\n1\n{}", "y".repeat(FULL_EVENT_MAX - 8));
        let odd = format!("a\nid\n1\n{{\"x\":\"{SEPARATOR}\"}}");
        let mut sent = events(3, 10);
        sent.insert(1, large.clone());
        sent.push(odd.clone());
        sent.extend(events(2, 10));
        let mut payloads = Vec::new();
        pack(&sent, &mut payloads);
        assert!(payloads.contains(&large) && payloads.contains(&odd));
        assert!(payloads.iter().all(|p| p.len() <= FULL_EVENT_MAX));
        // The odd one is delivered whole: it is not packed, so it is not split.
        assert_eq!(unpacked(&payloads), sent);
    }

    /// Events of the given lengths (each distinct, so that their order shows).
    fn sized(lengths: &[usize]) -> Vec<String> {
        (lengths.iter().enumerate())
            .map(|(n, &len)| format!("{n}{}", "x".repeat(len - 1)))
            .collect()
    }

    #[test]
    fn a_notification_holds_as_many_events_as_fit_and_not_a_byte_more() {
        // The mark, three events and two separators: exactly the limit.
        let exact = sized(&[2_632, 2_632, 2_632]);
        let mut payloads = Vec::new();
        pack(&exact, &mut payloads);
        assert_eq!(payloads.len(), 1, "three events fill one notification");
        assert_eq!(payloads[0].len(), FULL_EVENT_MAX);
        // One byte more: the third starts the next notification.
        let over = sized(&[2_632, 2_632, 2_633]);
        pack(&over, &mut payloads);
        let expected = vec![
            format!("{PACKED}{}{SEPARATOR}{}", over[0], over[1]),
            format!("{PACKED}{}", over[2]),
        ];
        assert_eq!(payloads, expected);
    }

    #[test]
    fn an_event_as_long_as_a_notification_holds_beside_its_mark_is_packed() {
        let sent = sized(&[10, FULL_EVENT_MAX - PACKED.len(), 10]);
        let mut payloads = Vec::new();
        pack(&sent, &mut payloads);
        let expected: Vec<String> = sent.iter().map(|e| format!("{PACKED}{e}")).collect();
        assert_eq!(payloads, expected);
        assert_eq!(unpacked(&payloads), sent);
    }

    #[test]
    fn a_written_event_keeps_the_record_while_the_whole_fits_a_notification() {
        let id = uuid::Uuid::from_u128(7);
        // What every event of this write starts with, and the room kept for its two times.
        let head = format!("tag\n{id}\n1\n3\nworking");
        let room = FULL_EVENT_MAX - head.len() - 42;
        let event = |body: &str| written("tag", &id, true, 3, "working", 1, 2, body);
        let fits = "r".repeat(room);
        assert_eq!(event(&fits), format!("{head}\n1\n2\n{fits}"));
        let over = "r".repeat(room + 1);
        assert_eq!(
            event(&over),
            head,
            "too long: the event names the task only"
        );
    }
}
