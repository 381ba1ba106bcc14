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

/// What a [`ChangeWatcher`] is told of a task: it was created, or its status or status
/// message changed (what a [`Subscriber`] is told).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// The task was created (`working`).
    Created,
    /// Its status or status message changed.
    Changed,
}

/// A subscriber to every creation and every status change of a store's tasks, from any
/// instance of a shared store ([`TaskAdmin::watch`](crate::admin::TaskAdmin::watch)):
/// an operator's live view. Removed with [`TaskStore::unsubscribe`](crate::TaskStore::unsubscribe).
pub type ChangeWatcher = Arc<dyn Fn(&StatusChange, ChangeKind) + Send + Sync>;

/// Identifies a subscription, for [`TaskStore::unsubscribe`](crate::TaskStore::unsubscribe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

use crate::store::Subscriber;

/// Who is told: a status subscriber, or a watcher of creations too.
#[derive(Clone)]
enum Listener {
    Status(Subscriber),
    Every(ChangeWatcher),
}

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
    subscribers: RwLock<Arc<[(SubscriptionId, Listener)]>>,
    count: AtomicUsize,
    /// Of those, watchers (told of creations too).
    watchers: AtomicUsize,
    next_id: AtomicU64,
    queue: Mutex<VecDeque<(StatusChange, ChangeKind)>>,
    delivering: Mutex<()>,
}

impl Notifier {
    /// Registers `subscriber`.
    pub fn subscribe(&self, subscriber: Subscriber) -> SubscriptionId {
        self.register(Listener::Status(subscriber))
    }

    /// Registers `watcher`, told of creations ([`queue_created`](Self::queue_created))
    /// as well as of status changes.
    pub fn watch(&self, watcher: ChangeWatcher) -> SubscriptionId {
        self.register(Listener::Every(watcher))
    }

    fn register(&self, listener: Listener) -> SubscriptionId {
        let id = SubscriptionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut subscribers = self
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut list = subscribers.to_vec();
        list.push((id, listener));
        self.count_of(&list);
        *subscribers = list.into();
        id
    }

    /// Keeps the counts of `list`, the subscribers from now on.
    fn count_of(&self, list: &[(SubscriptionId, Listener)]) {
        let watchers = list
            .iter()
            .filter(|(_, listener)| matches!(listener, Listener::Every(_)))
            .count();
        self.watchers.store(watchers, Ordering::SeqCst);
        self.count.store(list.len(), Ordering::SeqCst);
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
        self.count_of(&list);
        let removed = list.len() != before;
        *subscribers = list.into();
        removed
    }

    /// Whether anyone is subscribed.
    #[must_use]
    pub fn has_subscribers(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Whether a watcher is registered (creations are told to watchers only).
    #[must_use]
    pub fn has_watchers(&self) -> bool {
        self.watchers.load(Ordering::SeqCst) > 0
    }

    /// Queues a change of `owner`'s `task`. Called inside the backend's critical section;
    /// costs nothing without subscribers.
    pub fn queue(&self, owner: &Owner, task: &AnyTask) {
        if !self.has_subscribers() {
            return;
        }
        self.push(owner, task, ChangeKind::Changed);
    }

    /// Queues the creation of `owner`'s `task`, for the watchers. Costs nothing without
    /// watchers.
    pub fn queue_created(&self, owner: &Owner, task: &AnyTask) {
        if !self.has_watchers() {
            return;
        }
        self.push(owner, task, ChangeKind::Created);
    }

    fn push(&self, owner: &Owner, task: &AnyTask, kind: ChangeKind) {
        let change = StatusChange {
            owner: owner.clone(),
            task: task.clone(),
        };
        self.pending().push_back((change, kind));
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, VecDeque<(StatusChange, ChangeKind)>> {
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
                let Some((change, kind)) = next else { break };
                let subscribers = Arc::clone(
                    &self
                        .subscribers
                        .read()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                for (_, listener) in subscribers.iter() {
                    // A panicking subscriber must not stop the others or the registry.
                    let _ = catch_unwind(AssertUnwindSafe(|| match listener {
                        Listener::Status(subscriber) if kind == ChangeKind::Changed => {
                            subscriber(&change);
                        }
                        Listener::Status(_) => {}
                        Listener::Every(watcher) => watcher(&change, kind),
                    }));
                }
            }
        }
    }
}
