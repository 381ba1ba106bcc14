//! Local waiters of one instance, woken by the store's pub/sub channel.
//!
//! Every change a script makes is published in the same atomic step. One subscriber
//! thread per instance listens on the channel and bumps the generation of the task each
//! message names; threads waiting on that task wake and read it again. A waiter takes
//! the generation *before* it reads the task (no lost wakeup), and only once the
//! subscription is confirmed. When the subscriber's connection drops, the epoch moves on
//! and every waiter wakes to read again after the subscriber has reconnected, since
//! messages sent meanwhile are lost.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

/// The waiters of one instance and the state of its subscription.
#[derive(Default)]
pub(crate) struct Waiters {
    state: Mutex<State>,
    /// Signalled when the subscription comes up or goes down.
    link: Condvar,
}

#[derive(Default)]
struct State {
    /// The tasks some thread waits on, by task key.
    slots: HashMap<String, Arc<Slot>>,
    /// Moves on whenever the subscription is lost.
    epoch: u64,
    /// Whether the subscription is confirmed now.
    live: bool,
}

struct Slot {
    /// Bumped by every message about the task.
    generation: Mutex<u64>,
    wake: Condvar,
    /// Threads registered on this slot.
    waiting: Mutex<usize>,
}

/// Where a waiter stood when it last read the task.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    generation: u64,
    epoch: u64,
}

/// A registered waiter; unregisters on drop.
pub(crate) struct Registration<'a> {
    waiters: &'a Waiters,
    key: String,
    slot: Arc<Slot>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Waiters {
    /// Registers interest in the task under `key`.
    pub(crate) fn register(&self, key: &str) -> Registration<'_> {
        let mut state = lock(&self.state);
        let slot = Arc::clone(state.slots.entry(key.to_owned()).or_insert_with(|| {
            Arc::new(Slot {
                generation: Mutex::new(0),
                wake: Condvar::new(),
                waiting: Mutex::new(0),
            })
        }));
        // Counted under the state's lock, so the last waiter leaving cannot remove the
        // slot from the map between our lookup and our count.
        *lock(&slot.waiting) += 1;
        drop(state);
        Registration {
            waiters: self,
            key: key.to_owned(),
            slot,
        }
    }

    /// A message named the task under `key`: wake its waiters.
    pub(crate) fn bump(&self, key: &str) {
        let slot = lock(&self.state).slots.get(key).cloned();
        if let Some(slot) = slot {
            *lock(&slot.generation) += 1;
            slot.wake.notify_all();
        }
    }

    /// Waits up to `timeout` for a confirmed subscription; returns whether there is one.
    pub(crate) fn wait_live(&self, timeout: Duration) -> bool {
        let state = lock(&self.state);
        let (state, _) = self
            .link
            .wait_timeout_while(state, timeout, |state| !state.live)
            .unwrap_or_else(PoisonError::into_inner);
        state.live
    }

    /// How many times the subscription was lost so far.
    pub(crate) fn epoch(&self) -> u64 {
        lock(&self.state).epoch
    }

    /// The subscription is confirmed: waiters may read.
    pub(crate) fn up(&self) {
        lock(&self.state).live = true;
        self.link.notify_all();
    }

    /// The subscription is lost: every waiter must read again once it is back.
    pub(crate) fn down(&self) {
        let slots: Vec<Arc<Slot>> = {
            let mut state = lock(&self.state);
            state.live = false;
            state.epoch += 1;
            state.slots.values().cloned().collect()
        };
        self.link.notify_all();
        for slot in slots {
            // Taking the slot's lock orders this with a waiter about to sleep on it.
            drop(lock(&slot.generation));
            slot.wake.notify_all();
        }
    }
}

impl Registration<'_> {
    /// Waits (until `until`) for a confirmed subscription, then marks where the waiter
    /// stands: call before reading the task. `None` if `until` passed first (the
    /// subscription is down, so the task cannot be watched).
    pub(crate) fn mark(&self, until: Instant) -> Option<Mark> {
        let mut state = lock(&self.waiters.state);
        while !state.live {
            let left = until.checked_duration_since(Instant::now())?;
            state = self
                .waiters
                .link
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let epoch = state.epoch;
        drop(state);
        Some(Mark {
            generation: *lock(&self.slot.generation),
            epoch,
        })
    }

    /// Sleeps until a message about the task arrives after `mark`, the subscription is
    /// lost, or `bound` passes.
    pub(crate) fn sleep(&self, mark: Mark, bound: Option<Duration>) {
        let started = Instant::now();
        let mut generation = lock(&self.slot.generation);
        loop {
            if *generation != mark.generation || self.epoch() != mark.epoch {
                return;
            }
            generation = match bound {
                None => self
                    .slot
                    .wake
                    .wait(generation)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(bound) => {
                    let Some(left) = bound.checked_sub(started.elapsed()) else {
                        return;
                    };
                    let (guard, timeout) = self
                        .slot
                        .wake
                        .wait_timeout(generation, left)
                        .unwrap_or_else(PoisonError::into_inner);
                    if timeout.timed_out() {
                        return;
                    }
                    guard
                }
            };
        }
    }

    fn epoch(&self) -> u64 {
        // Lock order: a slot's generation, then the state (never the other way round).
        lock(&self.waiters.state).epoch
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.waiters.state);
        let mut waiting = lock(&self.slot.waiting);
        *waiting -= 1;
        if *waiting == 0 {
            drop(waiting);
            state.slots.remove(&self.key);
        }
    }
}

/// What the subscriber thread needs of its store, held weakly so that the thread ends
/// once the store is dropped.
pub(crate) trait Listener: Send + Sync + 'static {
    /// Handles one message of the channel.
    fn on_message(&self, payload: &str);
    /// The waiters to tell about the subscription's state.
    fn waiters(&self) -> &Waiters;
}

/// Runs the subscriber: connect, subscribe, deliver messages; on any error, tell the
/// waiters, back off, and reconnect. Ends when the listener is gone.
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
        alive.waiters().down();
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
        Some(alive) => alive.waiters().up(),
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
                    // session, and the waiters learn that the subscription is down.)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// While a waiter is registered, messages about its task reach its slot, however other
    /// waiters of the same task come and go.
    #[test]
    fn a_registered_waiter_is_always_reachable() {
        let waiters = Arc::new(Waiters::default());
        let churn = {
            let waiters = Arc::clone(&waiters);
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    drop(waiters.register("task"));
                }
            })
        };
        for _ in 0..20_000 {
            let registration = waiters.register("task");
            let in_map = lock(&waiters.state).slots.get("task").cloned();
            assert!(
                in_map.is_some_and(|slot| Arc::ptr_eq(&slot, &registration.slot)),
                "a registered waiter's slot left the map"
            );
        }
        churn.join().unwrap();
        assert!(lock(&waiters.state).slots.is_empty(), "slots leaked");
    }

    #[test]
    fn a_message_or_a_lost_subscription_ends_a_sleep() {
        let waiters = Arc::new(Waiters::default());
        waiters.up();
        let registration = waiters.register("task");
        let far = Instant::now() + Duration::from_secs(60);
        let mark = registration.mark(far).unwrap();
        waiters.bump("task");
        let started = Instant::now();
        registration.sleep(mark, Some(Duration::from_secs(10)));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a message was lost"
        );

        let mark = registration.mark(far).unwrap();
        let sleeper = {
            let waiters = Arc::clone(&waiters);
            std::thread::spawn(move || {
                let registration = waiters.register("task");
                let mark = registration.mark(far).unwrap();
                registration.sleep(mark, Some(Duration::from_secs(10)));
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        waiters.down();
        let started = Instant::now();
        sleeper.join().unwrap();
        registration.sleep(mark, Some(Duration::from_secs(10)));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a lost subscription went unseen"
        );
        assert_eq!(
            registration
                .mark(Instant::now() + Duration::from_millis(20))
                .map(|_| ()),
            None,
            "no waiter may read before the subscription is back"
        );
    }
}
