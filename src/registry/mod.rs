//! [`TaskRegistry`]: the synchronous, owner-isolating task store.
//!
//! Tasks live in shards chosen by their owner, each behind one `Mutex`: an owner's tasks
//! (and its `list` keyset) are always in one shard, so every read-check-write of a task is
//! one critical section of one lock, taken through one private `lock()` helper, while
//! different requestors rarely contend. No lock guard or reference into a map leaves the
//! registry, and no user code (clock, subscribers) or serialization runs while a lock is
//! held.
//!
//! # Poison policy
//! A lock is never held across user code, and each critical section completes its writes
//! with code that does not panic, so a poisoned lock (a panic on some thread while it held
//! the guard, which this crate's code cannot cause) leaves consistent data: `lock()` takes
//! the guard back from the poison error and the registry keeps working.

mod shard;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::any::AnyTask;
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::{Error, LimitScope};
use crate::id::TaskId;
use crate::input::InputResponses;
use crate::status::Working;
use crate::store::{
    CursorKey, Limits, MAX_PAGE_SIZE, Notifier, Owner, Step, Subscriber, SubscriptionId,
    TaskOrigin, TaskPage, TaskRequest, TaskStore, TtlPolicy, Update,
};
use crate::task::Task;

use shard::{Entry, Inner, Key, take};

/// The number of shards (a power of two).
const SHARDS: usize = 16;

/// Builds a [`TaskRegistry`] with a clock, TTL policy, limits and poll interval.
#[derive(Clone)]
#[must_use]
pub struct RegistryBuilder {
    clock: Arc<dyn Clock>,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
}

impl RegistryBuilder {
    /// Uses this clock for every timestamp and expiry.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Uses this retention policy.
    pub fn ttl_policy(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// Uses these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Suggests this poll interval (milliseconds) for tasks whose request names none.
    pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// The registry.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if the TTL policy cannot work ([`TtlPolicy::validate`]).
    pub fn build(self) -> Result<TaskRegistry, Error> {
        self.ttl.validate()?;
        Ok(self.into_registry())
    }

    fn into_registry(self) -> TaskRegistry {
        TaskRegistry {
            shared: Arc::new(Shared {
                shards: (0..SHARDS).map(|_| Mutex::new(Inner::default())).collect(),
                stored: AtomicUsize::new(0),
                clock: self.clock,
                ttl: self.ttl,
                limits: self.limits,
                poll_interval: self.poll_interval,
                cursors: CursorKey::new(),
                notifier: Notifier::default(),
            }),
        }
    }
}

/// The in-process task store: create, get, transition, cancel, store and wait for
/// results, list.
///
/// `Send + Sync`, and a cheap handle: clones share the same store, so it can be passed to
/// worker threads as it is, or used by reference.
///
/// Its operations are those of [`TaskStore`] (bring the trait into scope), which also maps
/// them to the official SDKs' stores.
#[derive(Clone)]
pub struct TaskRegistry {
    shared: Arc<Shared>,
}

struct Shared {
    shards: Box<[Mutex<Inner>]>,
    /// Tasks stored over all shards, for the total limit and `len`.
    stored: AtomicUsize,
    clock: Arc<dyn Clock>,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursors: CursorKey,
    notifier: Notifier,
}

fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

impl Default for TaskRegistry {
    /// A registry with the system clock, the default [`TtlPolicy`] and [`Limits`], and no
    /// suggested poll interval.
    fn default() -> Self {
        TaskRegistry::new()
    }
}

impl TaskRegistry {
    /// A registry with the system clock, the default [`TtlPolicy`] and [`Limits`], and no
    /// suggested poll interval.
    #[must_use]
    pub fn new() -> Self {
        // The default TTL policy is valid: no need to check it.
        Self::builder().into_registry()
    }

    /// A builder to choose the clock, TTL policy, limits and poll interval.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder {
            clock: Arc::new(SystemClock),
            ttl: TtlPolicy::default(),
            limits: Limits::default(),
            poll_interval: None,
        }
    }

    /// The current time on the registry's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    /// The one way to the state of `owner`'s shard: see the module's poison policy.
    fn lock(&self, owner: &Owner) -> MutexGuard<'_, Inner> {
        let index = owner.shard_hash() as usize % self.shared.shards.len();
        self.lock_shard(index)
    }

    fn lock_shard(&self, index: usize) -> MutexGuard<'_, Inner> {
        self.shared.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts removed entries out of the total; the caller drops them after unlocking.
    fn forget(&self, removed: usize) {
        if removed > 0 {
            self.shared.stored.fetch_sub(removed, Ordering::SeqCst);
        }
    }

    /// Stores a new task; returns its key and the task.
    fn store_new(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Key, Task<Working>), Error> {
        let uuid = uuid::Uuid::new_v4();
        let key = Key::of_uuid(uuid);
        let ttl = self.shared.ttl.effective(request.ttl);
        let poll_interval = request.poll_interval.or(self.shared.poll_interval);
        let now = self.now();
        let task = Task::new(TaskId::from_uuid(uuid), now)
            .with_ttl(ttl)
            .with_poll_interval(poll_interval);
        let limits = self.shared.limits;
        let mut request = Some(request);
        // Expired tasks of other owners still count towards the total until their shards
        // are swept: when the total looks reached, sweep all shards once and try again.
        for attempt in 0..2 {
            let mut dead = Vec::new();
            let result = {
                let mut inner = self.lock(owner);
                let purged = inner.purge_expired(now, &mut dead);
                self.forget(purged);
                if let Some(limit) = limits.per_owner
                    && inner.owned(owner) >= limit
                {
                    Err(Error::LimitExceeded {
                        limit,
                        scope: LimitScope::PerOwner,
                    })
                } else if self
                    .shared
                    .stored
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                        limits.total.is_none_or(|limit| n < limit).then_some(n + 1)
                    })
                    .is_err()
                {
                    Err(Error::LimitExceeded {
                        limit: limits.total.unwrap_or(usize::MAX),
                        scope: LimitScope::Total,
                    })
                } else if let Some(request) = request.take() {
                    let stored = task.clone().into_any();
                    let inserted =
                        inner.insert(key, owner, stored, request.request_id, &request.method);
                    if inserted.is_err() {
                        self.forget(1);
                    }
                    inserted
                } else {
                    Err(Error::Internal("a task request was used twice".to_owned()))
                }
            };
            drop(dead);
            match result {
                Err(Error::LimitExceeded {
                    scope: LimitScope::Total,
                    ..
                }) if attempt == 0 && self.purge_expired() > 0 => continue,
                result => return result.map(|()| (key, task)),
            }
        }
        Err(Error::LimitExceeded {
            limit: limits.total.unwrap_or(usize::MAX),
            scope: LimitScope::Total,
        })
    }

    fn read<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        read: impl FnOnce(&Entry) -> R,
    ) -> Result<R, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let mut dead = Vec::new();
        let result = self
            .lock(owner)
            .visible(key, owner, now, &mut dead)
            .map(|entry| read(entry));
        self.forget(dead.len());
        drop(dead);
        result.ok_or_else(|| not_found(task_id))
    }

    /// Removes every expired task now and returns how many. Waiters on them wake and see
    /// them gone. The cost is proportional to the number of expired tasks (plus one look
    /// per shard).
    pub fn purge_expired(&self) -> usize {
        let now = self.now();
        let mut purged = 0;
        for index in 0..self.shared.shards.len() {
            let mut dead = Vec::new();
            let count = self.lock_shard(index).purge_expired(now, &mut dead);
            self.forget(count);
            purged += count;
            drop(dead);
        }
        purged
    }

    /// The number of stored tasks (expired ones count until they are purged or looked up).
    #[must_use]
    pub fn len(&self) -> usize {
        self.shared.stored.load(Ordering::SeqCst)
    }

    /// Whether no task is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sleeps on the task's condition variable until `check` gives an answer, the task is
    /// gone, or `timeout` (or the task's expiry) passes. `check` runs under the lock.
    fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(&mut Entry) -> Option<Result<R, Error>>,
    ) -> Result<R, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let started = Instant::now();
        // The clock is user code: it is read only while the lock is not held.
        let mut now = self.now();
        let mut dead = Vec::new();
        let mut inner = self.lock(owner);
        let mut waiting: Option<Arc<Condvar>> = None;
        let outcome = loop {
            let Some(entry) = inner.visible(key, owner, now, &mut dead) else {
                break Err(not_found(task_id));
            };
            if let Some(answer) = check(entry) {
                break answer;
            }
            let until_expiry = entry
                .task
                .expires_at()
                .map(|end| end.saturating_since(now).max(Duration::from_millis(1)));
            let until_deadline = match timeout {
                Some(timeout) => match timeout.checked_sub(started.elapsed()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => {
                        break Err(Error::Timeout {
                            task_id: task_id.to_owned(),
                            waited: started.elapsed(),
                        });
                    }
                },
                None => None,
            };
            let condvar = inner.waiters(key);
            inner = match until_expiry.into_iter().chain(until_deadline).min() {
                Some(bound) => {
                    condvar
                        .wait_timeout(inner, bound)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => condvar.wait(inner).unwrap_or_else(PoisonError::into_inner),
            };
            waiting = Some(condvar);
            // Every state is checked again under the lock, so no wakeup is lost meanwhile.
            drop(inner);
            now = self.now();
            inner = self.lock(owner);
        };
        if let Some(condvar) = waiting {
            inner.leave(key, &condvar);
        }
        drop(inner);
        self.forget(dead.len());
        drop(dead);
        outcome
    }

    /// Applies `update` to the visible task under `key` in one critical section: a changed
    /// task is stored, queued for subscribers, and wakes its waiters. Returns the task as it is afterwards.
    fn apply_key(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &str,
        update: Update,
    ) -> Result<AnyTask, Error> {
        let now = self.now();
        let mut dead = Vec::new();
        let result = {
            let mut inner = self.lock(owner);
            let applied = match inner.visible(key, owner, now, &mut dead) {
                None => Err(not_found(task_id)),
                Some(entry) => {
                    let before = entry.task.expires_at();
                    match update.apply(take(&mut entry.task), now) {
                        Step::Changed(next) => {
                            entry.task = next.clone();
                            Ok((next, before, true, true))
                        }
                        Step::Quiet(next) => {
                            entry.task = next.clone();
                            Ok((next, before, true, false))
                        }
                        Step::Unchanged(task) => {
                            entry.task = task.clone();
                            Ok((task, before, false, false))
                        }
                        Step::Refused(task, error) => {
                            entry.task = task;
                            Err(error)
                        }
                    }
                }
            };
            applied.map(|(task, before, stored, notify)| {
                if stored {
                    let after = task.expires_at();
                    if after != before {
                        inner.reindex_expiry(key, before, after);
                    }
                    // Waiters check their own condition: a finish, an answer, a request
                    // to cancel.
                    inner.wake(key);
                }
                if notify {
                    self.shared.notifier.queue(owner, &task);
                }
                task
            })
        };
        self.forget(dead.len());
        drop(dead);
        self.shared.notifier.deliver();
        result
    }
}

impl TaskStore for TaskRegistry {
    fn ttl_policy(&self) -> TtlPolicy {
        self.shared.ttl
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.store_new(owner, request).map(|(_, task)| task)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.read(owner, task_id, |entry| entry.task.clone())
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let mut dead = Vec::new();
        let origin = self.lock(owner).origin(key, owner, now, &mut dead);
        self.forget(dead.len());
        drop(dead);
        origin
            .map(|(request_id, method)| TaskOrigin { request_id, method })
            .ok_or_else(|| not_found(task_id))
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        let after = cursor
            .map(|cursor| self.shared.cursors.decode(owner, cursor))
            .transpose()?;
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let now = self.now();
        let mut dead = Vec::new();
        let (tasks, last, more) = {
            let mut inner = self.lock(owner);
            let purged = inner.purge_expired(now, &mut dead);
            self.forget(purged);
            inner.page(owner, after, page_size)
        };
        drop(dead);
        let next_cursor = match (more, last) {
            (true, Some(seq)) => Some(self.shared.cursors.encode(owner, seq)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let mut dead = Vec::new();
        let removed = {
            let mut inner = self.lock(owner);
            match inner.visible(key, owner, now, &mut dead) {
                Some(_) => inner.remove(key),
                None => None,
            }
        };
        self.forget(dead.len() + usize::from(removed.is_some()));
        drop(dead);
        removed
            .map(|entry| entry.task)
            .ok_or_else(|| not_found(task_id))
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        self.wait_until(owner, task_id, timeout, |entry| {
            entry.task.is_terminal().then(|| Ok(entry.task.clone()))
        })
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        self.wait_until(owner, task_id, timeout, |entry| {
            crate::store::take_answers(&mut entry.task, task_id)
        })
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.shared.notifier.unsubscribe(id)
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        self.apply_key(key, owner, task_id, update)
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.shared.notifier.subscribe(subscriber)
    }
}

impl std::fmt::Debug for TaskRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRegistry")
            .field("tasks", &self.len())
            .field("ttl", &self.shared.ttl)
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TaskRegistry>();
};
