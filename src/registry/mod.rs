//! [`TaskRegistry`]: the synchronous, owner-isolating task store.
//!
//! One `Mutex` guards all state; every read-check-write happens in one critical section
//! through one private `lock()` helper. No lock guard or reference into the map leaves the
//! registry, and no user code (subscribers) or serialization runs while the lock is held.
//!
//! # Poison policy
//! The lock is never held across user code, and each critical section completes its
//! writes with code that does not panic, so a poisoned lock (a panic on some thread while
//! it held the guard, which this crate's code cannot cause) leaves consistent data:
//! `lock()` takes the guard back from the poison error and the registry keeps working.

mod cursor;
mod handle;
mod notify;
mod owner;
mod policy;

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::any::{AnyTask, Transition, TransitionError};
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::{Error, LimitScope};
use crate::id::TaskId;
use crate::jsonrpc::RequestId;
use crate::outcome::Outcome;
use crate::status::{Cancelled, TaskState, TaskStatus, Working};
use crate::task::{Change, Task};

pub use handle::TaskHandle;
pub use notify::{StatusChange, SubscriptionId};
pub use owner::Owner;
pub use policy::{Limits, TtlPolicy};

use cursor::CursorKey;
use notify::Notifier;

/// The most tasks one `list` page holds.
pub const MAX_PAGE_SIZE: usize = 1_000;

/// What a new task is created for: the originating request and the requested timing.
///
/// Mirrors what the official SDKs' stores take: the request id, the method, and the `task`
/// param's `ttl`, plus a poll interval. The registry keeps the request id and the method
/// with the task ([`TaskRegistry::origin`]); it does not keep the params.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    request_id: RequestId,
    method: String,
    ttl: Option<u64>,
    poll_interval: Option<u64>,
}

impl TaskRequest {
    /// A task for the request `request_id` of `method` (e.g. `tools/call`).
    #[must_use]
    pub fn new(request_id: impl Into<RequestId>, method: impl Into<String>) -> Self {
        Self {
            request_id: request_id.into(),
            method: method.into(),
            ttl: None,
            poll_interval: None,
        }
    }

    /// The same request, asking for this TTL in milliseconds (the `task.ttl` param).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Option<u64>) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same request, suggesting this poll interval in milliseconds (otherwise the
    /// registry's default).
    #[must_use]
    pub fn with_poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }
}

/// The request a task was created for.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOrigin {
    /// The JSON-RPC id of the originating request.
    pub request_id: RequestId,
    /// Its method.
    pub method: Arc<str>,
}

/// One page of [`TaskRegistry::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks, oldest first.
    pub tasks: Vec<AnyTask>,
    /// The cursor of the next page; present if and only if more tasks follow.
    pub next_cursor: Option<String>,
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
                inner: Mutex::new(Inner::default()),
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

/// The task store: create, get, transition, cancel, store and wait for results, list.
///
/// `Send + Sync`, and a cheap handle: clones share the same store, so it can be passed to
/// worker threads as it is, or used by reference.
///
/// # Mapping from the official SDKs' stores
///
/// | TypeScript `TaskStore` | C# `IMcpTaskStore` | `TaskRegistry` |
/// |---|---|---|
/// | `createTask(taskParams, requestId, request, sessionId)` | `CreateTaskAsync(taskParams, requestId, request, sessionId)` | [`insert(&owner, TaskRequest)`](Self::insert) (by id), or [`create`](Self::create) for a typed [`TaskHandle<Working>`] |
/// | `getTask(taskId, sessionId)` (`null` if unknown) | `GetTaskAsync` (`null` if unknown) | [`get`](Self::get) → `Err(TaskNotFound)` if unknown |
/// | `updateTaskStatus(taskId, status, statusMessage, sessionId)` | `UpdateTaskStatusAsync` | [`update_status`](Self::update_status) (checked against the spec table), or the handle's transitions |
/// | `storeTaskResult(taskId, status, result, sessionId)` | `StoreTaskResultAsync` | [`store_result`](Self::store_result), or the handle's `complete` / `fail` / `finish` |
/// | `getTaskResult(taskId, sessionId)` | `GetTaskResultAsync` | [`result`](Self::result) (now), [`wait`](Self::wait) (blocking, for `tasks/result`) |
/// | `listTasks(cursor, sessionId)` | `ListTasksAsync(cursor, sessionId)` | [`list`](Self::list) |
/// | (through `updateTaskStatus`) | `CancelTaskAsync` (idempotent) | [`cancel`](Self::cancel): `-32602` on a terminal task as the spec says; the error holds the task for idempotent callers |
/// | `sessionId` | `sessionId` | [`Owner`] (authorization context or session) |
#[derive(Clone)]
pub struct TaskRegistry {
    shared: Arc<Shared>,
}

struct Shared {
    inner: Mutex<Inner>,
    clock: Arc<dyn Clock>,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursors: CursorKey,
    notifier: Notifier,
}

/// Registry ids are random UUID v4s generated here, never chosen by callers, so their bits
/// are already uniformly distributed: the map hashes them by folding, not with SipHash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u128(&mut self, n: u128) {
        self.0 = (n as u64) ^ ((n >> 64) as u64);
    }
}

type IdMap<V> = HashMap<u128, V, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct Inner {
    tasks: IdMap<Entry>,
    /// Each owner's task keys by creation sequence: the keyset for `list`.
    owners: HashMap<Owner, BTreeMap<u64, u128>>,
    /// Keys of tasks with a finite TTL, by expiry time.
    expiry: BTreeSet<(Timestamp, u128)>,
    /// Interned method names of originating requests.
    methods: Vec<Arc<str>>,
    next_seq: u64,
}

struct Entry {
    task: AnyTask,
    owner: Owner,
    seq: u64,
    request_id: RequestId,
    method: Arc<str>,
    /// Present while some thread waits for this task to finish.
    waiters: Option<Arc<Condvar>>,
}

/// The map key of an id, if it is one this registry could have issued.
fn key_of(task_id: &str) -> Option<u128> {
    TaskId::parse_canonical_uuid(task_id).map(|uuid| uuid.as_u128())
}

fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

impl Inner {
    /// The entry for `key` if `owner` may see it at `now`; an expired entry is removed.
    fn visible(&mut self, key: u128, owner: &Owner, now: Timestamp) -> Option<&mut Entry> {
        let expired = {
            let entry = self.tasks.get(&key)?;
            if entry.owner != *owner {
                return None;
            }
            entry.task.is_expired(now)
        };
        if expired {
            self.remove(key);
            return None;
        }
        self.tasks.get_mut(&key)
    }

    /// Removes a task and every index entry that names it, and wakes its waiters.
    fn remove(&mut self, key: u128) -> Option<Entry> {
        let entry = self.tasks.remove(&key)?;
        if let MapEntry::Occupied(mut tasks) = self.owners.entry(entry.owner.clone()) {
            tasks.get_mut().remove(&entry.seq);
            if tasks.get().is_empty() {
                tasks.remove();
            }
        }
        if let Some(end) = entry.task.expires_at() {
            self.expiry.remove(&(end, key));
        }
        if let Some(waiters) = &entry.waiters {
            waiters.notify_all();
        }
        Some(entry)
    }

    /// Removes every task expired at `now`; the cost is proportional to what expired.
    fn purge_expired(&mut self, now: Timestamp) -> usize {
        let mut purged = 0;
        while let Some(&(end, key)) = self.expiry.first() {
            if end > now {
                break;
            }
            self.expiry.pop_first();
            if self.remove(key).is_some() {
                purged += 1;
            }
        }
        purged
    }

    fn intern(&mut self, method: &str) -> Arc<str> {
        if let Some(known) = self.methods.iter().find(|m| ***m == *method) {
            return Arc::clone(known);
        }
        let method: Arc<str> = Arc::from(method);
        // A server has a handful of task-augmentable methods; keep the table small anyway.
        if self.methods.len() < 64 {
            self.methods.push(Arc::clone(&method));
        }
        method
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

    /// The registry's TTL policy.
    #[must_use]
    pub fn ttl_policy(&self) -> TtlPolicy {
        self.shared.ttl
    }

    /// The current time on the registry's clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    /// The one way to the state: see the module's poison policy.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.shared
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a task for `owner` and returns the typed handle its handler drives, and the
    /// new task (for the `CreateTaskResult`).
    ///
    /// The id is a fresh UUID v4, the TTL is the [`TtlPolicy`]'s answer to the requested
    /// one, and the poll interval the request's or the registry's default. Dropping the
    /// handle before the task finishes fails the task; to drive a task by id only, use
    /// [`insert`](Self::insert).
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] if `owner` or the whole registry holds the most tasks its
    /// [`Limits`] allow; nothing is created.
    pub fn create(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(TaskHandle<Working>, Task<Working>), Error> {
        let (key, owner, task) = self.store_new(owner, request)?;
        let handle = TaskHandle::new(self.clone(), task.id().clone(), key, owner);
        Ok((handle, task))
    }

    /// Creates a task for `owner` to be driven by id ([`update_status`](Self::update_status),
    /// [`store_result`](Self::store_result), [`cancel`](Self::cancel)), as the SDKs' stores
    /// do, and returns it.
    ///
    /// # Errors
    /// As for [`create`](Self::create).
    pub fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.store_new(owner, request).map(|(_, _, task)| task)
    }

    /// Stores a new task; returns its key, the interned owner and the task.
    fn store_new(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(u128, Owner, Task<Working>), Error> {
        let uuid = uuid::Uuid::new_v4();
        let key = uuid.as_u128();
        let ttl = self.shared.ttl.effective(request.ttl);
        let poll_interval = request.poll_interval.or(self.shared.poll_interval);
        let now = self.now();
        let task = Task::new(TaskId::from_uuid(uuid), now)
            .with_ttl(ttl)
            .with_poll_interval(poll_interval);
        let mut inner = self.lock();
        inner.purge_expired(now);
        let limits = self.shared.limits;
        if let Some(limit) = limits.total
            && inner.tasks.len() >= limit
        {
            return Err(Error::LimitExceeded {
                limit,
                scope: LimitScope::Total,
            });
        }
        let (owner, owned) = match inner.owners.get_key_value(owner) {
            Some((interned, tasks)) => (interned.clone(), tasks.len()),
            None => (owner.clone(), 0),
        };
        if let Some(limit) = limits.per_owner
            && owned >= limit
        {
            return Err(Error::LimitExceeded {
                limit,
                scope: LimitScope::PerOwner,
            });
        }
        let method = inner.intern(&request.method);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        if let Some(end) = task.expires_at() {
            inner.expiry.insert((end, key));
        }
        inner
            .owners
            .entry(owner.clone())
            .or_default()
            .insert(seq, key);
        inner.tasks.insert(
            key,
            Entry {
                task: task.clone().into_any(),
                owner: owner.clone(),
                seq,
                request_id: request.request_id,
                method,
                waiters: None,
            },
        );
        Ok((key, owner, task))
    }

    /// The task `task_id` as `owner` sees it now (its outcome included, if terminal).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if no such task is visible to `owner` (unknown, expired,
    /// removed, or another owner's).
    pub fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.read(owner, task_id, |entry| entry.task.clone())
    }

    /// The request `task_id` was created for.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        self.read(owner, task_id, |entry| TaskOrigin {
            request_id: entry.request_id.clone(),
            method: Arc::clone(&entry.method),
        })
    }

    /// The finished task `task_id`, with its stored outcome, without waiting.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::NotFinished`] if the task
    /// is still `working` or `input_required`.
    pub fn result(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.read(owner, task_id, |entry| entry.task.clone())
            .and_then(|task| {
                if task.is_terminal() {
                    Ok(task)
                } else {
                    Err(Error::NotFinished {
                        task_id: task_id.to_owned(),
                        status: task.status(),
                    })
                }
            })
    }

    fn read<R>(
        &self,
        owner: &Owner,
        task_id: &str,
        read: impl FnOnce(&Entry) -> R,
    ) -> Result<R, Error> {
        let key = key_of(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let mut inner = self.lock();
        let entry = inner
            .visible(key, owner, now)
            .ok_or_else(|| not_found(task_id))?;
        Ok(read(entry))
    }

    /// One page of `owner`'s tasks, oldest first, continuing after `cursor`.
    ///
    /// `page_size` is clamped to `1..=`[`MAX_PAGE_SIZE`]. Cursors are keyset-based: tasks
    /// deleted or expired between pages never make another task skipped or repeated.
    ///
    /// # Errors
    /// [`Error::InvalidCursor`] for an empty, malformed or forged cursor, or one issued to
    /// another owner or by another registry.
    pub fn list(
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
        let mut inner = self.lock();
        inner.purge_expired(now);
        let Some(keys) = inner.owners.get(owner) else {
            return Ok(TaskPage {
                tasks: Vec::new(),
                next_cursor: None,
            });
        };
        let start = after.map_or(0, |seq| seq.saturating_add(1));
        let mut page = keys.range(start..);
        let mut tasks = Vec::with_capacity(page_size.min(keys.len()));
        let mut last = None;
        for (&seq, key) in page.by_ref().take(page_size) {
            if let Some(entry) = inner.tasks.get(key) {
                tasks.push(entry.task.clone());
                last = Some(seq);
            }
        }
        let more = page.next().is_some();
        drop(inner);
        let next_cursor = match (more, last) {
            (true, Some(seq)) => Some(self.shared.cursors.encode(owner, seq)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Cancels `task_id` (`tasks/cancel`): it becomes `cancelled` before this returns, and
    /// stays so whatever its handler does later.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::AlreadyTerminal`]
    /// (`-32602`, as the spec requires) if the task is already terminal; the error holds
    /// the task, for callers that prefer idempotent cancellation.
    pub fn cancel(
        &self,
        owner: &Owner,
        task_id: &str,
        status_message: Option<String>,
    ) -> Result<Task<Cancelled>, Error> {
        let cancelled = self.apply(owner, task_id, |task, now| {
            if task.is_terminal() {
                let error = Error::AlreadyTerminal {
                    task: Box::new(task.clone()),
                };
                return Err(Refused::new(task, error));
            }
            Ok(task.apply(
                Transition::Cancel,
                Change::at(now).with_optional_message(status_message),
            )?)
        })?;
        Task::try_from(cancelled).map_err(|err| Error::Internal(err.to_string()))
    }

    /// Moves `task_id` to `status` with `status_message`, as the SDKs' `updateTaskStatus`
    /// does, checked against the spec's table. The same status with a new message is an
    /// update of a non-terminal task; moving to `input_required` this way records no input
    /// requests.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::InvalidParams`] for
    /// `completed` or `failed` (they need a result: use [`store_result`](Self::store_result));
    /// [`Error::TaskCancelled`] or [`Error::IllegalTransition`] for a move the table forbids.
    pub fn update_status(
        &self,
        owner: &Owner,
        task_id: &str,
        status: TaskStatus,
        status_message: Option<String>,
    ) -> Result<AnyTask, Error> {
        let transition = match status {
            TaskStatus::Working => Transition::Resume,
            TaskStatus::InputRequired => Transition::RequireInput(Default::default()),
            TaskStatus::Cancelled => Transition::Cancel,
            TaskStatus::Completed | TaskStatus::Failed => {
                return Err(Error::invalid_params(format!(
                    "a task becomes `{status}` with its result: store the result instead of \
                     only setting the status"
                )));
            }
        };
        self.apply(owner, task_id, |mut task, now| {
            if task.status() == status {
                return match task.set_status_message(status_message, now) {
                    Ok(()) => Ok(task),
                    Err(err) => Err(err.into()),
                };
            }
            Ok(task.apply(
                transition,
                Change::at(now).with_optional_message(status_message),
            )?)
        })
    }

    /// Stores the outcome of `task_id` together with its terminal status, as the SDKs'
    /// `storeTaskResult` does. A stored outcome can never be overwritten.
    ///
    /// `status` is `completed` (with [`Outcome::Result`]) or `failed` (with a JSON-RPC error
    /// or a result that reports one).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::InvalidParams`] for
    /// another status, or a `completed` error; [`Error::TaskCancelled`] if the task was
    /// cancelled; [`Error::IllegalTransition`] if it already has an outcome.
    pub fn store_result(
        &self,
        owner: &Owner,
        task_id: &str,
        status: TaskStatus,
        outcome: Outcome,
    ) -> Result<AnyTask, Error> {
        let transition = match (status, outcome) {
            (TaskStatus::Completed, Outcome::Result(result)) => Transition::Complete(result),
            (TaskStatus::Completed, Outcome::Error(_)) => {
                return Err(Error::invalid_params(
                    "a completed task carries a result, not a JSON-RPC error: store the error \
                     with status `failed`",
                ));
            }
            (TaskStatus::Failed, outcome) => Transition::Fail(outcome),
            (status, _) => {
                return Err(Error::invalid_params(format!(
                    "a result is stored with status `completed` or `failed`, not `{status}`"
                )));
            }
        };
        self.apply(owner, task_id, |task, now| Ok(task.apply(transition, now)?))
    }

    /// Removes `task_id` at once (the spec allows deleting a task at any time after
    /// cancellation or expiry); waiters wake and see it gone.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let key = key_of(task_id).ok_or_else(|| not_found(task_id))?;
        let now = self.now();
        let mut inner = self.lock();
        inner
            .visible(key, owner, now)
            .ok_or_else(|| not_found(task_id))?;
        inner
            .remove(key)
            .map(|entry| entry.task)
            .ok_or_else(|| not_found(task_id))
    }

    /// Removes every expired task now and returns how many. Waiters on them wake and see
    /// them gone. The cost is proportional to the number of expired tasks.
    pub fn purge_expired(&self) -> usize {
        let now = self.now();
        self.lock().purge_expired(now)
    }

    /// The number of stored tasks (expired ones count until they are purged or looked up).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// Whether no task is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks until `task_id` is terminal, then returns it with its stored outcome (what
    /// `tasks/result` needs).
    ///
    /// Event-driven: the thread sleeps on a condition variable that the finishing
    /// transition, a removal or the expiry sweep signals; many threads may wait on one task.
    /// `timeout` bounds the wait in real time; the task's expiry bounds it too.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task is not visible to `owner`, or expires or is
    /// removed while waiting; [`Error::Timeout`] if `timeout` passes first.
    pub fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        let key = key_of(task_id).ok_or_else(|| not_found(task_id))?;
        let started = Instant::now();
        // The clock is user code: it is read only while the lock is not held.
        let mut now = self.now();
        let mut inner = self.lock();
        let mut waiting: Option<Arc<Condvar>> = None;
        let outcome = loop {
            let Some(entry) = inner.visible(key, owner, now) else {
                break Err(not_found(task_id));
            };
            if entry.task.is_terminal() {
                break Ok(entry.task.clone());
            }
            let condvar = Arc::clone(
                entry
                    .waiters
                    .get_or_insert_with(|| Arc::new(Condvar::new())),
            );
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
            inner = self.lock();
        };
        // The last waiter to leave drops the task's condition variable.
        if let Some(condvar) = waiting
            && let Some(entry) = inner.tasks.get_mut(&key)
            && let Some(shared) = &entry.waiters
            && Arc::ptr_eq(shared, &condvar)
            && Arc::strong_count(shared) == 2
        {
            entry.waiters = None;
        }
        outcome
    }

    /// Registers `subscriber` for every status change and status-message change of every
    /// task. It is called outside the registry's lock, in order per task (and in the order
    /// the changes happened overall). A panicking subscriber is caught and keeps its
    /// registration; the registry is unaffected.
    pub fn subscribe(
        &self,
        subscriber: impl Fn(&StatusChange) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.shared.notifier.subscribe(Arc::new(subscriber))
    }

    /// Removes a subscriber; returns whether it was registered.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.shared.notifier.unsubscribe(id)
    }

    /// Applies `change` to the visible task `task_id` in one critical section. `change`
    /// gets the task and the time and returns the new task, or the unchanged task and the
    /// error. A status or message change is queued for subscribers, and a terminal status
    /// wakes the waiters. Returns the new task.
    fn apply(
        &self,
        owner: &Owner,
        task_id: &str,
        change: impl FnOnce(AnyTask, Timestamp) -> Step,
    ) -> Result<AnyTask, Error> {
        let key = key_of(task_id).ok_or_else(|| not_found(task_id))?;
        self.apply_key(key, owner, task_id, change)
    }

    fn apply_key(
        &self,
        key: u128,
        owner: &Owner,
        task_id: &str,
        change: impl FnOnce(AnyTask, Timestamp) -> Step,
    ) -> Result<AnyTask, Error> {
        let now = self.now();
        let mut inner = self.lock();
        let entry = inner
            .visible(key, owner, now)
            .ok_or_else(|| not_found(task_id))?;
        let current = take(&mut entry.task);
        let result = match change(current, now) {
            Ok(next) => {
                entry.task = next.clone();
                if next.is_terminal()
                    && let Some(waiters) = &entry.waiters
                {
                    waiters.notify_all();
                }
                self.shared.notifier.queue(&entry.owner, &next);
                Ok(next)
            }
            Err(refused) => {
                let Refused { unchanged, error } = *refused;
                entry.task = unchanged;
                Err(error)
            }
        };
        drop(inner);
        self.shared.notifier.deliver();
        result
    }

    /// Applies a typed transition for a handle: the stored task must have status `S`.
    pub(crate) fn transition<S: TaskState>(
        &self,
        key: u128,
        owner: &Owner,
        task_id: &TaskId,
        change: impl FnOnce(Task<S>, Timestamp) -> AnyTask,
    ) -> Result<AnyTask, Error> {
        let id = task_id.to_string();
        self.apply_key(key, owner, &id, |current, now| {
            match Task::<S>::try_from(current) {
                Ok(task) => Ok(change(task, now)),
                Err(mismatch) => {
                    let current = mismatch.into_inner();
                    let err = if current.status() == TaskStatus::Cancelled {
                        Error::TaskCancelled {
                            task_id: id.clone(),
                        }
                    } else {
                        Error::IllegalTransition {
                            task_id: id.clone(),
                            from: current.status(),
                            to: S::STATUS,
                            message: format!(
                                "task `{}` is `{}`, not `{}` as its handle expected: another \
                                 writer changed it",
                                crate::error::shorten(&id),
                                current.status(),
                                S::STATUS
                            ),
                        }
                    };
                    Err(Refused::new(current, err))
                }
            }
        })
    }
}

/// A change refused inside the critical section: the task to put back, and why.
pub(crate) struct Refused {
    unchanged: AnyTask,
    error: Error,
}

impl Refused {
    pub(crate) fn new(unchanged: AnyTask, error: Error) -> Box<Self> {
        Box::new(Refused { unchanged, error })
    }
}

impl From<TransitionError> for Box<Refused> {
    fn from(err: TransitionError) -> Self {
        let error = Error::from(&err);
        Refused::new(*err.task, error)
    }
}

/// What a change applied in the critical section gives: the new task, or a refusal.
pub(crate) type Step = Result<AnyTask, Box<Refused>>;

/// Moves the task out of `slot`, leaving a cheap placeholder that the caller overwrites
/// before the critical section ends.
fn take(slot: &mut AnyTask) -> AnyTask {
    let placeholder = Task::new(slot.id().clone(), slot.created_at()).into_any();
    std::mem::replace(slot, placeholder)
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
