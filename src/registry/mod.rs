//! [`TaskRegistry`]: the synchronous, owner-isolating task store.
//!
//! Tasks live in shards, each behind one `Mutex`. An owner's tasks spread over [`LANES`]
//! neighbouring shards, its lanes, chosen by the task id: every read-check-write of a task
//! is one critical section of its one shard's lock, so two threads working on one owner's
//! tasks rarely contend, nor do different requestors. What spans an owner (its `list`
//! pages, its task count under a per-owner limit) holds all its lanes at once, locked in
//! ascending shard order, and sees one consistent state: creation sequence numbers come
//! from one counter, taken under the lane's lock, so no task can appear in a lane ahead of
//! an older one still being stored in another. No lock guard or reference into a map leaves the
//! registry, and no user code (clock, subscribers) or serialization runs while a lock is
//! held.
//!
//! # Poison policy
//! A lock is never held across user code, and each critical section completes its writes
//! with code that does not panic, so a poisoned lock (a panic on some thread while it held
//! the guard, which this crate's code cannot cause) leaves consistent data: `lock()` takes
//! the guard back from the poison error and the registry keeps working.

mod shard;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::any::AnyTask;
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::{Error, LimitScope};
use crate::id::TaskId;
use crate::input::InputResponses;
use crate::status::Working;
use crate::store::{
    CursorKey, Events, Lease, Limits, MAX_PAGE_SIZE, Notifier, Owner, Probe, Step, StoreFuture,
    Subscriber, SubscriptionId, TaskOrigin, TaskPage, TaskRequest, TaskStore, TtlPolicy, Update,
    wait,
};
use crate::task::Task;

use shard::{Entry, Inner, Key, take};

/// The number of shards an owner's tasks spread over, its lanes (a power of two).
const LANES: usize = 4;

/// The number of lane groups (a power of two): an owner's lanes are one group, picked by
/// its hash, so two owners share all their locks or none, as rarely as one in `GROUPS`.
const GROUPS: usize = 16;

/// The number of shards.
const SHARDS: usize = GROUPS * LANES;

/// The shard of `owner`'s task under `key`: one of the owner's lanes.
fn shard_of(owner: &Owner, key: Key) -> usize {
    group(owner) * LANES + key.lane(LANES)
}

/// The lane group of `owner`.
fn group(owner: &Owner) -> usize {
    owner.shard_hash() as usize % GROUPS
}

/// The shards of `owner`'s lanes, in ascending order (the order they are locked in).
fn lanes(owner: &Owner) -> [usize; LANES] {
    let group = group(owner);
    std::array::from_fn(|lane| group * LANES + lane)
}

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
                shards: (0..SHARDS).map(|_| Shard::default()).collect(),
                next_seq: AtomicU64::new(0),
                events: (0..SHARDS).map(|_| Events::default()).collect(),
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

/// One shard's lock and state, on cache lines of its own: two threads busy on neighbouring
/// shards do not write to one line.
#[derive(Default)]
#[repr(align(128))]
struct Shard(Mutex<Inner>);

struct Shared {
    shards: Box<[Shard]>,
    /// The creation sequence numbers of every shard (the order of `list`), each taken
    /// under the lock of the shard that stores the task.
    next_seq: AtomicU64,
    /// The events the waits on each shard's tasks listen to, notified after the unlock.
    events: Box<[Events<Key>]>,
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

    /// Every lane of `owner`, locked in ascending shard order, with its shard index.
    fn lock_lanes(&self, owner: &Owner) -> [(usize, MutexGuard<'_, Inner>); LANES] {
        let lanes = lanes(owner);
        // `from_fn` runs in index order: the locks are taken in ascending order.
        std::array::from_fn(|lane| (lanes[lane], self.lock_shard(lanes[lane])))
    }

    /// The one way to the state of a shard: see the module's poison policy.
    fn lock_shard(&self, index: usize) -> MutexGuard<'_, Inner> {
        self.shared.shards[index]
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The after-unlock work of a critical section about to start: create it before taking
    /// the lock, hand it what the section removes or queues, and
    /// [`finish`](AfterUnlock::finish) it once the guard is gone.
    fn after_unlock(&self, shard: usize) -> AfterUnlock<'_> {
        AfterUnlock {
            shared: &self.shared,
            events: &self.shared.events[shard],
            all_events: &self.shared.events,
            woken: Vec::new(),
            dead: Vec::new(),
            handed_out: 0,
            counted: 0,
            queued: false,
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
        let mut task = Task::new(TaskId::from_uuid(uuid), now)
            .with_ttl(ttl)
            .with_poll_interval(poll_interval)
            .with_trace_context(request.trace.clone())
            .with_tool(request.tool());
        // Redelivery is a no-op here (no other instance): the task keeps its attempts and
        // checkpoints, and nothing ever claims it.
        if let Some(redelivery) = request.redelivery() {
            task = task.with_attempts(redelivery.max_attempts());
        }
        let limits = self.shared.limits;
        let mut request = Some(request);
        // Expired tasks of other owners still count towards the total until their shards
        // are swept: when the total looks reached, sweep all shards once and try again.
        let shard = shard_of(owner, key);
        for attempt in 0..2 {
            let mut after = self.after_unlock(shard);
            let result = {
                // The owner's expired tasks make room in this section, and its count spans
                // its lanes: hold them all.
                let mut lanes = self.lock_lanes(owner);
                // Counted only against a limit (a lookup of the owner in every lane).
                let counted = limits.per_owner.is_some();
                let mut owned = 0;
                for (_, inner) in &mut lanes {
                    inner.purge_expired(now, after.dead());
                    if counted {
                        owned += inner.owned(owner);
                    }
                }
                // Counted now, before the total limit is checked.
                after.count_dead();
                match limits.per_owner {
                    Some(limit) if owned >= limit => Err(Error::LimitExceeded {
                        limit,
                        scope: LimitScope::PerOwner,
                    }),
                    _ => match lanes.iter_mut().find(|(index, _)| *index == shard) {
                        Some((_, inner)) => {
                            let stored = self.insert_locked(inner, key, owner, &task, &mut request);
                            if stored.is_ok() {
                                after.queue_created(owner, &task);
                            }
                            stored
                        }
                        None => Err(Error::Internal(
                            "a task's shard is not one of its owner's lanes".to_owned(),
                        )),
                    },
                }
            };
            after.finish();
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

    /// The end of a create, under the lock of the task's shard: the total limit, then the
    /// task stored under the next sequence number.
    fn insert_locked(
        &self,
        inner: &mut Inner,
        key: Key,
        owner: &Owner,
        task: &Task<Working>,
        request: &mut Option<TaskRequest>,
    ) -> Result<(), Error> {
        let limits = self.shared.limits;
        if self
            .shared
            .stored
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                limits.total.is_none_or(|limit| n < limit).then_some(n + 1)
            })
            .is_err()
        {
            return Err(Error::LimitExceeded {
                limit: limits.total.unwrap_or(usize::MAX),
                scope: LimitScope::Total,
            });
        }
        let Some(request) = request.take() else {
            self.shared.stored.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::Internal("a task request was used twice".to_owned()));
        };
        // Taken under this lock: see the module documentation.
        let seq = self.shared.next_seq.fetch_add(1, Ordering::SeqCst);
        let stored = task.clone().into_any();
        let inserted = inner.insert(key, owner, seq, stored, request.request_id, &request.method);
        if inserted.is_err() {
            // Gives back the place reserved above.
            self.shared.stored.fetch_sub(1, Ordering::SeqCst);
        }
        inserted
    }

    fn read<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        read: impl FnOnce(&Entry) -> R,
    ) -> Result<R, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let shard = shard_of(owner, key);
        let mut after = self.after_unlock(shard);
        let result = self
            .lock_shard(shard)
            .visible(key, owner, now, after.dead())
            .map(|entry| read(entry));
        after.finish();
        result.ok_or_else(|| not_found(task_id))
    }

    /// Removes every expired task now and returns how many. Waiters on them wake and see
    /// them gone. The cost is proportional to the number of expired tasks (plus one look
    /// per shard).
    pub fn purge_expired(&self) -> usize {
        let now = self.now();
        let mut purged = 0;
        for index in 0..self.shared.shards.len() {
            let mut after = self.after_unlock(index);
            purged += self.lock_shard(index).purge_expired(now, after.dead());
            after.finish();
        }
        purged
    }

    /// Up to `limit` stored tasks of every owner after the creation sequence number
    /// `after`, oldest first, with their owners and sequence numbers (the admin view,
    /// [`TaskAdmin`](crate::admin::TaskAdmin)), and whether more may follow. Each shard is
    /// locked in turn, never two at once, twice: once to find the page's last sequence
    /// number (without copying a task), once to copy the tasks up to it. Expired tasks
    /// are left out.
    pub(crate) fn every_owner_after(
        &self,
        after: Option<u64>,
        limit: usize,
    ) -> (Vec<(u64, Owner, AnyTask)>, Option<u64>) {
        let now = self.now();
        let mut seqs = Vec::new();
        for index in 0..self.shared.shards.len() {
            let mut taken = 0;
            self.lock_shard(index).each_after(after, |seq, entry| {
                if !entry.task.is_expired(now) {
                    seqs.push(seq);
                    taken += 1;
                }
                taken < limit
            });
        }
        seqs.sort_unstable();
        // The page ends at its `limit`-th task; a full page may have more behind.
        let last = (seqs.len() >= limit).then(|| seqs[limit - 1]);
        let upto = last.unwrap_or(u64::MAX);
        let mut found = Vec::new();
        for index in 0..self.shared.shards.len() {
            self.lock_shard(index).each_after(after, |seq, entry| {
                if seq > upto {
                    return false;
                }
                if !entry.task.is_expired(now) {
                    found.push((seq, entry.owner.clone(), entry.task.clone()));
                }
                true
            });
        }
        found.sort_unstable_by_key(|(seq, _, _)| *seq);
        (found, last)
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

    /// Probes the task under `key` for a wait: `check` runs on it under the lock and
    /// answers, or the wait sleeps until the task changes or expires.
    fn probe<R>(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &str,
        check: &mut impl FnMut(&mut Entry) -> Option<Result<R, Error>>,
    ) -> Probe<R> {
        // The clock is user code: it is read only while the lock is not held.
        let now = self.now();
        let shard = shard_of(owner, key);
        let mut after = self.after_unlock(shard);
        let probe = {
            let mut inner = self.lock_shard(shard);
            match inner.visible(key, owner, now, after.dead()) {
                None => Probe::Done(Err(not_found(task_id))),
                Some(entry) => match check(entry) {
                    Some(answer) => Probe::Done(answer),
                    None => Probe::Wait(
                        entry
                            .task
                            .expires_at()
                            .map(|end| end.saturating_since(now).max(Duration::from_millis(1))),
                    ),
                },
            }
        };
        after.finish();
        probe
    }

    /// Blocks until `check` answers for the task, it is gone, or `timeout` (or the task's
    /// expiry) passes. `check` runs under the lock.
    fn wait_until<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
        mut check: impl FnMut(&mut Entry) -> Option<Result<R, Error>>,
    ) -> Result<R, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let listener = self.shared.events[shard_of(owner, key)].listen(key);
        wait::block(&listener, task_id, timeout, || {
            self.probe(key, owner, task_id, &mut check)
        })
    }

    /// [`wait_until`](Self::wait_until) as a future.
    fn wait_until_async<'a, R: Send + 'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
        mut check: impl FnMut(&mut Entry) -> Option<Result<R, Error>> + Send + Unpin + 'a,
    ) -> StoreFuture<'a, R> {
        let Some(key) = Key::of_id(task_id) else {
            return Box::pin(std::future::ready(Err(not_found(task_id))));
        };
        let listener = self.shared.events[shard_of(owner, key)].listen(key);
        wait::future(listener, move || {
            self.probe(key, owner, task_id, &mut check)
        })
    }

    /// The number of waits pending now, blocking or async: each `wait`, `wait_for_input`
    /// in progress and each future of theirs not yet resolved or dropped. A dropped future
    /// counts no more.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.shared.events.iter().map(Events::listeners).sum()
    }

    /// Applies `update` to the visible task under `key` in one critical section: a changed
    /// task is stored, queued for subscribers, and wakes its waiters. Returns the task as it
    /// is afterwards.
    ///
    /// The task is decided in its slot and copied once, for the caller, after it is stored:
    /// no copy for the slot, none for the notification queue unless there are subscribers.
    fn apply_key(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &str,
        update: Update,
    ) -> Result<AnyTask, Error> {
        let now = self.now();
        let shard = shard_of(owner, key);
        let mut after = self.after_unlock(shard);
        let result = {
            let mut inner = self.lock_shard(shard);
            match inner.visible(key, owner, now, after.dead()) {
                None => Err(not_found(task_id)),
                Some(entry) => {
                    let before = entry.task.expires_at();
                    let (task, change) = match update.apply(take(&mut entry.task), now) {
                        Step::Changed(next) => (next, Ok(Some(true))),
                        Step::Quiet(next) => (next, Ok(Some(false))),
                        Step::Unchanged(task) => (task, Ok(None)),
                        Step::Refused(task, error) => (task, Err(error)),
                    };
                    entry.task = task;
                    // The slot keeps a finished task's result as its text; the copies
                    // handed out (to the caller, to subscribers) are taken first, whole.
                    match change {
                        Err(error) => {
                            entry.task.compact_outcome();
                            Err(error)
                        }
                        Ok(None) => {
                            let answer = entry.task.clone();
                            entry.task.compact_outcome();
                            Ok(answer)
                        }
                        Ok(Some(notify)) => {
                            if notify {
                                after.queue(owner, &entry.task);
                            }
                            let expires = entry.task.expires_at();
                            let answer = entry.task.clone();
                            entry.task.compact_outcome();
                            if expires != before {
                                inner.reindex_expiry(key, before, expires);
                            }
                            // Waiters check their own condition: a finish, an answer, a
                            // request to cancel.
                            after.wake(key);
                            Ok(answer)
                        }
                    }
                }
            }
        };
        after.finish();
        result
    }
}

/// What a critical section leaves for after its lock is released: the entries it removed,
/// to count out of the total and to drop (dropping a task frees user data, which is never
/// done under the lock), and whether it queued notifications, to deliver in order.
///
/// Created by [`TaskRegistry::after_unlock`] before the lock is taken. Its work runs when
/// it is dropped, so an early return still counts what was removed: the one rule is that
/// the lock guard goes first ([`finish`](Self::finish) says where).
struct AfterUnlock<'a> {
    shared: &'a Shared,
    /// The events of the section's shard, and the tasks whose waits to wake.
    events: &'a Events<Key>,
    /// The events of every shard, for the removed entries (a section over an owner's lanes
    /// removes from several).
    all_events: &'a [Events<Key>],
    woken: Vec<Key>,
    dead: Vec<Entry>,
    /// Entries removed and handed to the caller.
    handed_out: usize,
    /// How many removed entries are already counted out of the total.
    counted: usize,
    queued: bool,
}

impl AfterUnlock<'_> {
    /// Where the section puts the entries it removes.
    fn dead(&mut self) -> &mut Vec<Entry> {
        &mut self.dead
    }

    /// Counts the entries removed so far out of the total now, inside the section (for a
    /// limit check that follows); each is counted once.
    fn count_dead(&mut self) {
        let removed = self.dead.len() + self.handed_out;
        let uncounted = removed - self.counted;
        if uncounted > 0 {
            self.shared.stored.fetch_sub(uncounted, Ordering::SeqCst);
        }
        self.counted = removed;
    }

    /// An entry the section removed for the caller, after the unlock: counted out of the
    /// total like the dead ones, and its task handed back.
    fn hand_out(&mut self, entry: Entry) -> AnyTask {
        self.handed_out += 1;
        self.woken.extend(entry.key());
        entry.task
    }

    /// Wakes the waits on the task under `key` after the unlock (they see its change).
    ///
    /// Called under the lock, after the change: a wait that registered before now is
    /// counted in `listeners` (it registers before it probes under the same lock), and one
    /// that registers later probes after this section and sees the change. So with no
    /// listener there is nothing to remember.
    fn wake(&mut self, key: Key) {
        if self.events.listeners() > 0 {
            self.woken.push(key);
        }
    }

    /// Queues a change of `owner`'s task for subscribers, delivered after the unlock.
    fn queue(&mut self, owner: &Owner, task: &AnyTask) {
        // Without subscribers nothing is queued, and there is nothing to deliver.
        if self.shared.notifier.has_subscribers() {
            self.shared.notifier.queue(owner, task);
            self.queued = true;
        }
    }

    /// Queues the creation of `owner`'s `task` for watchers, delivered after the unlock.
    fn queue_created(&mut self, owner: &Owner, task: &Task<Working>) {
        if self.shared.notifier.has_watchers() {
            self.shared
                .notifier
                .queue_created(owner, &task.clone().into_any());
            self.queued = true;
        }
    }

    /// Ends the section's work: call it after the lock guard is dropped.
    fn finish(self) {}
}

impl Drop for AfterUnlock<'_> {
    #[inline]
    fn drop(&mut self) {
        // The common section removed nothing, woke no one and queued nothing.
        if !(self.dead.is_empty() && self.handed_out == 0 && self.woken.is_empty() && !self.queued)
        {
            self.run();
        }
    }
}

impl AfterUnlock<'_> {
    /// The after-unlock work of a section that left some (kept out of line: most sections
    /// leave none).
    #[inline(never)]
    fn run(&mut self) {
        self.count_dead();
        // Subscribers are told first, so that a server answering a waiter (`tasks/result`)
        // has sent the task's status notification before the answer.
        if self.queued {
            self.shared.notifier.deliver();
        }
        // The waits of changed and removed tasks wake (a removed one sees it gone).
        if self.events.listeners() > 0 {
            for key in &self.woken {
                self.events.notify(key);
            }
        }
        for entry in &self.dead {
            if let Some(key) = entry.key() {
                let events = &self.all_events[shard_of(&entry.owner, key)];
                if events.listeners() > 0 {
                    events.notify(&key);
                }
            }
        }
        // Tasks and owners are dropped here, outside the lock.
        self.dead.clear();
    }
}

impl TaskStore for TaskRegistry {
    fn ttl_policy(&self) -> TtlPolicy {
        self.shared.ttl
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.store_new(owner, request).map(|(_, task)| task)
    }

    /// No lease (a task cannot outlive this process); a redeliverable task's handle runs
    /// its first and only attempt.
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        let (_, task) = self.store_new(owner, request)?;
        let lease = match task.attempts() {
            Some(attempts) => Lease::none().for_attempt(attempts.attempt()),
            None => Lease::none(),
        };
        Ok((task, lease))
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.read(owner, task_id, |entry| entry.task.clone())
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let shard = shard_of(owner, key);
        let mut after = self.after_unlock(shard);
        let origin = self.lock_shard(shard).origin(key, owner, now, after.dead());
        after.finish();
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
        let last_seen = cursor
            .map(|cursor| self.shared.cursors.decode(owner, cursor))
            .transpose()?;
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let now = self.now();
        let mut after = self.after_unlock(lanes(owner)[0]);
        let (tasks, last, more) = {
            // Every lane at once: one consistent state (see the module documentation).
            let mut lanes = self.lock_lanes(owner);
            for (_, inner) in &mut lanes {
                inner.purge_expired(now, after.dead());
            }
            // Each lane's keyset is in order: merge them, oldest first, one past the page.
            let mut heads: [_; LANES] = std::array::from_fn(|lane| {
                lanes[lane]
                    .1
                    .keyset_after(owner, last_seen, page_size + 1)
                    .peekable()
            });
            let mut tasks = Vec::with_capacity(page_size);
            let mut last = None;
            let mut more = false;
            loop {
                let oldest = (0..LANES)
                    .filter_map(|lane| heads[lane].peek().map(|&(seq, _)| (seq, lane)))
                    .min();
                let Some((seq, lane)) = oldest else { break };
                if tasks.len() == page_size {
                    more = true;
                    break;
                }
                if let Some((_, slot)) = heads[lane].next()
                    && let Some(task) = lanes[lane].1.task_at(slot)
                {
                    tasks.push(task.clone());
                    last = Some(seq);
                }
            }
            (tasks, last, more)
        };
        after.finish();
        let next_cursor = match (more, last) {
            (true, Some(seq)) => Some(self.shared.cursors.encode(owner, seq)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let shard = shard_of(owner, key);
        let mut after = self.after_unlock(shard);
        let removed = {
            let mut inner = self.lock_shard(shard);
            match inner.visible(key, owner, now, after.dead()) {
                Some(_) => inner.remove(key),
                None => None,
            }
        };
        let task = removed.map(|entry| after.hand_out(entry));
        after.finish();
        task.ok_or_else(|| not_found(task_id))
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

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        self.wait_until_async(owner, task_id, |entry| {
            entry.task.is_terminal().then(|| Ok(entry.task.clone()))
        })
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        self.wait_until_async(owner, task_id, move |entry| {
            crate::store::take_answers(&mut entry.task, task_id)
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.wait_until_async(owner, task_id, move |entry| {
            wait::cancel_seen(&entry.task, task_id)
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

impl TaskRegistry {
    /// Registers `watcher` for every creation and status change
    /// ([`TaskAdmin::watch`](crate::admin::TaskAdmin::watch)).
    pub(crate) fn watch_every(&self, watcher: crate::store::ChangeWatcher) -> SubscriptionId {
        self.shared.notifier.watch(watcher)
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::input::{InputRequest, InputRequests};
    use crate::jsonrpc::JsonObject;
    use crate::outcome::Outcome;
    use crate::store::StatusChange;

    fn object(value: serde_json::Value) -> JsonObject {
        match value {
            serde_json::Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    /// Every change `registry` delivers to subscribers, in order.
    fn changes_of(registry: &TaskRegistry) -> Arc<Mutex<Vec<StatusChange>>> {
        let seen: Arc<Mutex<Vec<StatusChange>>> = Arc::default();
        let log = Arc::clone(&seen);
        registry.subscribe(move |change| log.lock().unwrap().push(change.clone()));
        seen
    }

    fn request(n: i64) -> TaskRequest {
        TaskRequest::new(n, "tools/call")
    }

    #[test]
    fn a_response_notifies_only_when_it_answers() {
        let registry = TaskRegistry::new();
        let seen = changes_of(&registry);
        let alice = Owner::new("alice");
        let (handle, task) = registry.create(&alice, request(1)).unwrap();
        let id = task.id().to_string();
        let ask = InputRequest::elicitation(object(json!({"message": "go on?"})));
        let _waiting = handle
            .require_input(InputRequests::new().with("confirm", ask))
            .unwrap();
        let before = seen.lock().unwrap().len();
        assert_eq!(before, 1, "the move to input_required is one change");

        for nothing in [json!({}), json!({"unknown": {}}), json!({"confirm": 3})] {
            registry.respond(&alice, &id, object(nothing)).unwrap();
        }
        assert_eq!(seen.lock().unwrap().len(), before, "nothing was answered");

        let answered = registry
            .respond(
                &alice,
                &id,
                object(json!({"confirm": {"action": "accept"}})),
            )
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), before + 1);
        assert_eq!(seen[before].task, answered);
        assert_eq!(seen[before].owner, alice);
    }

    #[test]
    fn a_finished_task_keeps_no_job_checkpoint_or_input_state() {
        let registry = TaskRegistry::new();
        let alice = Owner::new("alice");
        let job = object(json!({"tool": "sleep", "arguments": {"ms": 0}}));
        let request = request(1).with_redelivery(crate::store::Redelivery::new(3, job));
        let (handle, task) = registry.create(&alice, request).unwrap();
        let id = task.id().to_string();
        // A running redeliverable task keeps its attempts and its last checkpoint.
        handle.checkpoint(json!({"elapsed_ms": 1})).unwrap();
        let running = registry.get(&alice, &id).unwrap();
        assert!(running.attempts().is_some() && running.checkpoint().is_some());
        let ask = InputRequest::elicitation(object(json!({"message": "go on?"})));
        let waiting = handle
            .require_input(InputRequests::new().with("confirm", ask))
            .unwrap();
        registry
            .respond(
                &alice,
                &id,
                object(json!({"confirm": {"action": "accept"}})),
            )
            .unwrap();
        let done = waiting
            .resume()
            .unwrap()
            .complete(object(json!({"content": []})))
            .unwrap();
        // Finished, it holds its outcome and nothing of the run: no attempts, checkpoint,
        // input requests or answers; the registry never stored the job.
        let stored = registry.get(&alice, &id).unwrap();
        assert_eq!(stored, done.clone().into_any());
        assert!(stored.attempts().is_none());
        assert!(stored.checkpoint().is_none());
        assert!(stored.input_requests().is_none());
        assert!(!stored.cancel_requested());
        assert_eq!(registry.job(&alice, &id).unwrap(), None);
        // Its stored form (as the shared stores write it) is its retention and its result.
        let body: serde_json::Value =
            serde_json::from_str(&crate::store::record::encode(&stored)).unwrap();
        let parts = body.as_object().unwrap();
        assert!(
            parts
                .keys()
                .all(|part| ["t", "p", "r"].contains(&part.as_str())),
            "{body}"
        );
    }

    #[test]
    fn the_slot_keeps_a_result_as_text_and_every_copy_reads_it_whole() {
        let registry = TaskRegistry::new();
        let seen = changes_of(&registry);
        let alice = Owner::new("alice");
        let result = object(json!({"content": [{"type": "text", "text": "done"}], "n": 0.1}));
        let in_slot = |id: &str| {
            registry
                .read(&alice, id, |entry| entry.task.clone())
                .unwrap()
        };

        let (handle, task) = registry.create(&alice, request(1)).unwrap();
        let id = task.id().to_string();
        let done = handle.complete(result.clone()).unwrap();
        // The caller's copy and the subscribers' are whole; the slot's is text.
        assert_eq!(done.result(), Some(&result));
        assert!(!done.clone().into_any().outcome_is_text());
        let changes = seen.lock().unwrap().clone();
        let finished = changes.last().unwrap();
        assert!(!finished.task.outcome_is_text());
        assert_eq!(
            finished.task.outcome(),
            Some(&Outcome::Result(result.clone()))
        );
        assert!(in_slot(&id).outcome_is_text());
        // Every read gets it whole, and leaves the slot's copy as text.
        for _ in 0..2 {
            let read = registry.get(&alice, &id).unwrap();
            assert_eq!(read.outcome(), Some(&Outcome::Result(result.clone())));
            assert_eq!(read, done.clone().into_any());
            assert!(in_slot(&id).outcome_is_text());
        }
        // Its text is lent as it is kept, without reading it back; a whole copy prints
        // the same text.
        let printed = serde_json::to_string(&result).unwrap();
        let read = registry.get(&alice, &id).unwrap();
        let lent = read.result_json().unwrap();
        assert!(matches!(lent, std::borrow::Cow::Borrowed(_)));
        assert_eq!(lent, printed);
        assert!(read.outcome_is_text());
        let whole = done.clone().into_any();
        let whole = whole.result_json().unwrap();
        assert!(matches!(whole, std::borrow::Cow::Owned(_)));
        assert_eq!(whole, printed);

        // So does a write the finished task refuses.
        assert!(registry.cancel(&alice, &id, None).is_err());
        assert!(in_slot(&id).outcome_is_text());
        assert_eq!(
            registry.get(&alice, &id).unwrap().outcome(),
            Some(&Outcome::Result(result))
        );

        // A failure the tool reported is kept as text too; a JSON-RPC error as it is.
        let failing = object(json!({"content": [], "isError": true}));
        let (handle, task) = registry.create(&alice, request(2)).unwrap();
        let _failed = handle.complete(failing.clone()).unwrap();
        let failed = in_slot(&task.id().to_string());
        assert!(failed.outcome_is_text());
        assert_eq!(failed.outcome(), Some(&Outcome::Result(failing)));
        let (handle, task) = registry.create(&alice, request(3)).unwrap();
        let _failed = handle.fail(Outcome::error(-32603, "broken")).unwrap();
        let failed = in_slot(&task.id().to_string());
        assert!(!failed.outcome_is_text());
        assert_eq!(failed.outcome(), Some(&Outcome::error(-32603, "broken")));
        assert_eq!(failed.result_json(), None);
        assert_eq!(task.into_any().result_json(), None);
    }

    #[test]
    fn every_removal_leaves_the_count_once() {
        let start = Timestamp::from_unix_millis(1_700_000_000_000);
        let clock = ManualClock::new(start);
        let registry = TaskRegistry::builder()
            .clock(clock.clone())
            .limits(Limits {
                per_owner: None,
                total: Some(4),
            })
            .build()
            .unwrap();
        let alice = Owner::new("alice");
        let short = |n| request(n).with_ttl(Some(1_000));
        let ids: Vec<String> = (0..4)
            .map(|n| registry.insert(&alice, short(n)).unwrap().id().to_string())
            .collect();
        assert_eq!(registry.len(), 4);
        assert!(
            registry.insert(&alice, short(9)).is_err(),
            "the total is reached"
        );

        registry.remove(&alice, &ids[0]).unwrap();
        assert_eq!(registry.len(), 3, "removed");
        assert!(registry.remove(&alice, &ids[0]).is_err());
        assert_eq!(registry.len(), 3, "a second removal counts nothing");

        clock.advance(Duration::from_secs(2));
        assert!(registry.get(&alice, &ids[1]).is_err());
        assert_eq!(registry.len(), 2, "expired on a read");
        assert!(registry.origin(&alice, &ids[2]).is_err());
        assert_eq!(registry.len(), 1, "expired on an origin lookup");
        assert!(registry.list(&alice, None, 10).unwrap().tasks.is_empty());
        assert_eq!(registry.len(), 0, "purged by a list");
        assert_eq!(registry.purge_expired(), 0);

        // Four new tasks fit again, and expired ones make room for a new one in the
        // same critical section that checks the limit.
        let ids: Vec<String> = (0..4)
            .map(|n| registry.insert(&alice, short(n)).unwrap().id().to_string())
            .collect();
        clock.advance(Duration::from_secs(2));
        let fresh = registry.insert(&alice, request(5)).unwrap();
        assert_eq!(registry.len(), 1);
        assert_eq!(
            registry.get(&alice, &fresh.id().to_string()).unwrap(),
            fresh.into_any()
        );
        assert!(registry.get(&alice, &ids[3]).is_err());
        assert_eq!(registry.len(), 1);
    }
}
