//! [`Feed`]: a shared store's waits on one instance, and the state of the change feed that
//! wakes them (a Redis subscription, a PostgreSQL `LISTEN` connection).
//!
//! A wait registers on its task's event *before* it reads the task (no lost wakeup), and
//! reads only while the feed is up. When the feed goes down or comes back, every wait
//! wakes: while it is down a wait knows that changes may go unheard (it waits for the
//! feed, or polls), and once it is back it reads again, since changes sent meanwhile were
//! lost.

use std::hash::Hash;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::store::wait::{Events, Listener};

/// The waits of one instance, by task key, and whether its change feed is up.
pub struct Feed<K: Eq + Hash + Clone> {
    state: Mutex<State>,
    /// Signalled when the feed comes up or goes down.
    link: Condvar,
    events: Events<K>,
}

impl<K: Eq + Hash + Clone> Default for Feed<K> {
    fn default() -> Self {
        Feed {
            state: Mutex::default(),
            link: Condvar::new(),
            events: Events::default(),
        }
    }
}

impl<K: Eq + Hash + Clone> std::fmt::Debug for Feed<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Feed")
            .field("live", &state.live)
            .field("epoch", &state.epoch)
            .field("waits", &self.events.listeners())
            .finish()
    }
}

#[derive(Default)]
struct State {
    /// Moves on whenever the feed is lost.
    epoch: u64,
    /// Whether the feed is up now.
    live: bool,
}

impl<K: Eq + Hash + Clone> Feed<K> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a wait on the task under `key`.
    pub fn register(&self, key: K) -> Listener<'_, K> {
        self.events.listen(key)
    }

    /// A change event named the task under `key`: wake its waits.
    pub fn bump(&self, key: &K) {
        self.events.notify(key);
    }

    /// Waits up to `timeout` for the feed to be up; answers whether it is.
    pub fn wait_live(&self, timeout: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .link
            .wait_timeout_while(state, timeout, |state| !state.live)
            .unwrap_or_else(PoisonError::into_inner);
        state.live
    }

    /// Whether the feed is up now.
    #[must_use]
    pub fn live(&self) -> bool {
        self.lock().live
    }

    /// How many times the feed was lost so far.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// The number of waits registered now.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.events.listeners()
    }

    /// The feed is up: every wait reads again.
    pub fn up(&self) {
        self.lock().live = true;
        self.link.notify_all();
        self.events.notify_all();
    }

    /// The feed is lost: every wait learns it.
    pub fn down(&self) {
        {
            let mut state = self.lock();
            state.live = false;
            state.epoch += 1;
        }
        self.link.notify_all();
        self.events.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn an_event_or_a_change_of_the_feed_ends_a_sleep() {
        let feed = Feed::<String>::default();
        feed.up();
        let listener = feed.register("task".to_owned());
        for change in [
            &|feed: &Feed<String>| feed.bump(&"task".to_owned()),
            &|feed: &Feed<String>| feed.down(),
            &|feed: &Feed<String>| feed.up(),
        ] as [&dyn Fn(&Feed<String>); 3]
        {
            let mark = listener.mark();
            change(&feed);
            let started = Instant::now();
            listener.sleep(mark, Some(Duration::from_secs(10)));
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "a wakeup was lost"
            );
        }
        feed.down();
        assert!(!feed.live(), "no wait may read while the feed is down");
        assert_eq!(feed.epoch(), 2);
        assert_eq!(feed.pending(), 1);
        drop(listener);
        assert_eq!(feed.pending(), 0, "a dropped wait leaves nothing");
    }
}
