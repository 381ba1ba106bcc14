//! [`LeaseBook`] and [`Claimables`]: what a shared store's instance keeps of leases: the
//! leases its live handles hold (renewed together, one round trip per interval), and the
//! tasks it heard are claimable, with when.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::store::lease::{Lease, LeaseHolder};

/// What a renewal round does with a held lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Renew it.
    Renew,
    /// Give it up (the handle was detached), then forget it.
    Release,
}

/// What the store answered for one lease of a renewal round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// Renewed: keep holding it.
    Renewed,
    /// Given up as asked (released, or handed over).
    Released,
    /// The task is gone, finished, or its lease is another attempt's: forget it.
    Gone,
    /// Too late: it lapsed (the task is failed or claimed by whoever sees it first).
    Lapsed,
}

impl Renewal {
    /// The verdict as the in-repo engines' renewals answer it: `ok` (renewed), `released`
    /// and `lapsed`; anything else (`gone`) is [`Renewal::Gone`].
    #[must_use]
    pub fn from_verdict(verdict: &str) -> Self {
        match verdict {
            "ok" => Renewal::Renewed,
            "released" => Renewal::Released,
            "lapsed" => Renewal::Lapsed,
            _ => Renewal::Gone,
        }
    }
}

/// One lease of a renewal round: the task key, what to do, and the attempt the lease
/// runs (`None` for a task that runs once): a lease another attempt holds now is not this
/// instance's to renew or release.
pub type HeldLease<K> = (K, Hold, Option<u32>);

/// The held leases by task key, shared with the handles' holders.
type Shared<K> = Arc<Mutex<HashMap<K, (Hold, Option<u32>)>>>;

/// The leases this instance's handles hold, by task key.
pub struct LeaseBook<K> {
    held: Shared<K>,
}

impl<K> Default for LeaseBook<K> {
    fn default() -> Self {
        LeaseBook {
            held: Arc::default(),
        }
    }
}

impl<K> std::fmt::Debug for LeaseBook<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseBook")
            .field("held", &lock(&self.held).len())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle's hold on one lease of a book.
struct Holder<K> {
    held: Shared<K>,
    key: K,
}

impl<K: Eq + Hash + Send + Sync + 'static> LeaseHolder for Holder<K> {
    fn end(self: Box<Self>) {
        let mut held = lock(&self.held);
        // A release not sent yet stays: the task must not lapse.
        if held.get(&self.key).map(|(hold, _)| *hold) == Some(Hold::Renew) {
            held.remove(&self.key);
        }
    }

    fn release(self: Box<Self>) {
        if let Some(entry) = lock(&self.held).get_mut(&self.key) {
            entry.0 = Hold::Release;
        }
    }
}

impl<K: Eq + Hash + Clone + Send + Sync + 'static> LeaseBook<K> {
    /// Starts holding the lease of the task under `key` (just created or claimed with
    /// one), for `attempt` of a redeliverable task; the [`Lease`] goes to its handle.
    pub fn hold(&self, key: K, attempt: Option<u32>) -> Lease {
        lock(&self.held).insert(key.clone(), (Hold::Renew, attempt));
        let lease = Lease::held(Box::new(Holder {
            held: Arc::clone(&self.held),
            key,
        }));
        match attempt {
            Some(attempt) => lease.for_attempt(attempt),
            None => lease,
        }
    }

    /// The leases of the next renewal round.
    #[must_use]
    pub fn round(&self) -> Vec<HeldLease<K>> {
        lock(&self.held)
            .iter()
            .map(|(key, (hold, attempt))| (key.clone(), *hold, *attempt))
            .collect()
    }

    /// Settles a round with the store's answer for each of its leases: forgets those
    /// gone, lapsed or released (a release asked for after the round went out stays, for
    /// the next round).
    pub fn settle(&self, round: Vec<HeldLease<K>>, answers: impl IntoIterator<Item = Renewal>) {
        let mut held = lock(&self.held);
        for ((key, sent, _), answer) in round.into_iter().zip(answers) {
            let done = match answer {
                Renewal::Renewed => false,
                Renewal::Released => held.get(&key).map(|(hold, _)| *hold) == Some(sent),
                Renewal::Gone | Renewal::Lapsed => true,
            };
            if done {
                held.remove(&key);
            }
        }
    }

    /// The attempt of the lease held and renewed under `key`: `Some(None)` for a task
    /// that runs once, `None` if no live handle holds it.
    #[must_use]
    pub fn renewing(&self, key: &K) -> Option<Option<u32>> {
        lock(&self.held)
            .get(key)
            .filter(|(hold, _)| *hold == Hold::Renew)
            .map(|(_, attempt)| *attempt)
    }

    /// Stops holding the lease under `key` (handed over, or found gone).
    pub fn forget(&self, key: &K) {
        lock(&self.held).remove(key);
    }

    /// How many leases are held (renewing or releasing).
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.held).len()
    }

    /// Whether no lease is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Claimable tasks this instance heard of, by task key: when each may be claimed. A
/// claim loop sleeps in [`wait_due`](Self::wait_due) until one is due.
pub struct Claimables<K> {
    due: Mutex<HashMap<K, Instant>>,
    /// Woken when a candidate is filed.
    filed: Condvar,
}

impl<K> Default for Claimables<K> {
    fn default() -> Self {
        Claimables {
            due: Mutex::default(),
            filed: Condvar::new(),
        }
    }
}

impl<K> std::fmt::Debug for Claimables<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claimables")
            .field("filed", &lock(&self.due).len())
            .finish()
    }
}

impl<K: Eq + Hash + Clone> Claimables<K> {
    /// Files the task under `key` as claimable from `due` (kept if filed already for
    /// sooner), and wakes the claim loops.
    pub fn file(&self, key: K, due: Instant) {
        let mut filed = lock(&self.due);
        let entry = filed.entry(key).or_insert(due);
        *entry = (*entry).min(due);
        drop(filed);
        self.filed.notify_all();
    }

    /// Forgets the candidate under `key` (it changed: claimed, finished, removed).
    pub fn unfile(&self, key: &K) {
        lock(&self.due).remove(key);
    }

    /// Whether the task under `key` is filed.
    #[must_use]
    pub fn contains(&self, key: &K) -> bool {
        lock(&self.due).contains_key(key)
    }

    /// Takes a candidate that is due now, if any.
    pub fn take_due(&self) -> Option<K> {
        let now = Instant::now();
        let mut filed = lock(&self.due);
        let key = filed
            .iter()
            .find(|(_, due)| **due <= now)
            .map(|(key, _)| key.clone())?;
        filed.remove(&key);
        Some(key)
    }

    /// Blocks until a candidate is due, or `timeout` passes (an hour without one).
    pub fn wait_due(&self, timeout: Option<Duration>) {
        let until = Instant::now() + timeout.unwrap_or(Duration::from_secs(3_600));
        let mut filed = lock(&self.due);
        loop {
            let now = Instant::now();
            let next = filed.values().min().copied();
            if next.is_some_and(|due| due <= now) || until <= now {
                return;
            }
            let wake = next.map_or(until, |due| due.min(until));
            filed = self
                .filed
                .wait_timeout(filed, wake.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_forgets_what_ended_and_keeps_a_late_release() {
        let book = LeaseBook::<String>::default();
        let renewed = book.hold("a".to_owned(), None);
        let _lapsed = book.hold("b".to_owned(), Some(2));
        let round = book.round();
        assert_eq!(round.len(), 2);
        // Detached after the round went out: released next round.
        let answers: Vec<Renewal> = round
            .iter()
            .map(|(key, _, _)| {
                if key == "a" {
                    Renewal::Renewed
                } else {
                    Renewal::Lapsed
                }
            })
            .collect();
        renewed.release();
        book.settle(round, answers);
        assert_eq!(book.len(), 1);
        assert_eq!(book.round(), vec![("a".to_owned(), Hold::Release, None)]);
        assert_eq!(book.renewing(&"a".to_owned()), None);
        book.settle(book.round(), [Renewal::Released]);
        assert!(book.is_empty());
    }

    #[test]
    fn a_due_candidate_ends_the_wait_and_is_taken_once() {
        let claimables = Claimables::<String>::default();
        claimables.file("later".to_owned(), Instant::now() + Duration::from_secs(60));
        assert_eq!(claimables.take_due(), None);
        claimables.file("now".to_owned(), Instant::now());
        let started = Instant::now();
        claimables.wait_due(Some(Duration::from_secs(10)));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(claimables.take_due(), Some("now".to_owned()));
        assert_eq!(claimables.take_due(), None);
        assert!(claimables.contains(&"later".to_owned()));
        claimables.unfile(&"later".to_owned());
        assert!(!claimables.contains(&"later".to_owned()));
    }
}
