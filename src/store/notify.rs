//! Status-change subscribers, called outside the registry's lock, in order.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, TryLockError};

use crate::any::AnyTask;
use crate::store::Owner;

/// A task changed status or status message: the task as it is now and whose it is (to
/// route a `notifications/tasks/status` to the right requestor).
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    /// The owner of the task.
    pub owner: Owner,
    /// The task after the change.
    pub task: AnyTask,
}

/// Identifies a subscription, for [`TaskStore::unsubscribe`](crate::TaskStore::unsubscribe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

use crate::store::Subscriber;

/// The subscribers of one store ([`TaskStore::add_subscriber`](crate::TaskStore::add_subscriber))
/// and the changes waiting to be told to them.
///
/// A backend [queues](Notifier::queue) each change in the critical section (or atomic
/// step) that made it, so the queue order is the order of the changes, and
/// [delivers](Notifier::deliver) them after it, outside its locks: whichever thread holds
/// the delivery lock calls every subscriber, in order, containing a panicking one.
#[derive(Default)]
pub struct Notifier {
    /// The subscribers, replaced as a whole on each (un)subscription: a delivery takes the
    /// current list with one reference count, without copying it.
    subscribers: RwLock<Arc<[(SubscriptionId, Subscriber)]>>,
    count: AtomicUsize,
    next_id: AtomicU64,
    queue: Mutex<VecDeque<StatusChange>>,
    delivering: Mutex<()>,
}

impl Notifier {
    /// Registers `subscriber`.
    pub fn subscribe(&self, subscriber: Subscriber) -> SubscriptionId {
        let id = SubscriptionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut subscribers = self
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut list = subscribers.to_vec();
        list.push((id, subscriber));
        self.count.store(list.len(), Ordering::SeqCst);
        *subscribers = list.into();
        id
    }

    /// Removes a subscriber; answers whether it was registered.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut subscribers = self
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let before = subscribers.len();
        let list: Vec<_> = subscribers
            .iter()
            .filter(|(known, _)| *known != id)
            .cloned()
            .collect();
        self.count.store(list.len(), Ordering::SeqCst);
        let removed = list.len() != before;
        *subscribers = list.into();
        removed
    }

    /// Whether anyone is subscribed.
    #[must_use]
    pub fn has_subscribers(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Queues a change of `owner`'s `task`. Called inside the backend's critical section;
    /// costs nothing without subscribers.
    pub fn queue(&self, owner: &Owner, task: &AnyTask) {
        if !self.has_subscribers() {
            return;
        }
        let change = StatusChange {
            owner: owner.clone(),
            task: task.clone(),
        };
        self.pending().push_back(change);
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, VecDeque<StatusChange>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Delivers queued changes. Called after the backend's lock is released. If another
    /// thread is delivering, it will also deliver what this thread queued.
    pub fn deliver(&self) {
        if !self.has_subscribers() {
            return;
        }
        while !self.pending().is_empty() {
            let _delivering = match self.delivering.try_lock() {
                Ok(guard) => guard,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                // The holder looks at the queue again after it lets go of the delivery lock.
                Err(TryLockError::WouldBlock) => return,
            };
            loop {
                let next = self.pending().pop_front();
                let Some(change) = next else { break };
                let subscribers = Arc::clone(
                    &self
                        .subscribers
                        .read()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                for (_, subscriber) in subscribers.iter() {
                    // A panicking subscriber must not stop the others or the registry.
                    let _ = catch_unwind(AssertUnwindSafe(|| subscriber(&change)));
                }
            }
        }
    }
}
