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

mod cursor;
mod handle;
mod notify;
mod owner;
mod policy;
mod shard;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::any::{AnyTask, Transition};
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::{Error, LimitScope};
use crate::id::TaskId;
use crate::input::InputResponses;
use crate::jsonrpc::JsonObject;
use crate::jsonrpc::RequestId;
use crate::outcome::Outcome;
use crate::status::{Cancelled, TaskState, TaskStatus, Working};
use crate::task::{Change, Task};
use serde_json::Value;

pub use handle::TaskHandle;
pub use notify::{StatusChange, SubscriptionId};
pub use owner::Owner;
pub use policy::{Limits, TtlPolicy};

use cursor::CursorKey;
use notify::Notifier;
use shard::{Entry, Inner, Key, Step, take};

/// The number of shards (a power of two).
const SHARDS: usize = 16;

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
        let (key, task) = self.store_new(owner, request)?;
        let handle = TaskHandle::new(self.clone(), task.id().clone(), key, owner.clone());
        Ok((handle, task))
    }

    /// Creates a task for `owner` to be driven by id ([`update_status`](Self::update_status),
    /// [`store_result`](Self::store_result), [`cancel`](Self::cancel)), as the SDKs' stores
    /// do, and returns it.
    ///
    /// # Errors
    /// As for [`create`](Self::create).
    pub fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.store_new(owner, request).map(|(_, task)| task)
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

    /// The finished task `task_id`, with its stored outcome, without waiting.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::NotFinished`] if the task
    /// is still `working` or `input_required`.
    pub fn result(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let task = self.get(owner, task_id)?;
        if task.is_terminal() {
            Ok(task)
        } else {
            Err(Error::NotFinished {
                task_id: task_id.to_owned(),
                status: task.status(),
            })
        }
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
                return Step::Refused(task, error);
            }
            task.apply(
                Transition::Cancel,
                Change::at(now).with_optional_message(status_message),
            )
            .into()
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
                    Ok(()) => Step::Changed(task),
                    Err(err) => Err(err).into(),
                };
            }
            task.apply(
                transition,
                Change::at(now).with_optional_message(status_message),
            )
            .into()
        })
    }

    /// Stores the outcome of `task_id` together with its terminal status, as the SDKs'
    /// `storeTaskResult` does. A stored outcome can never be overwritten.
    ///
    /// `status` is `completed` (with [`Outcome::Result`] that does not report an error) or
    /// `failed` (with a JSON-RPC error, or a result that reports one with `isError: true`).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::InvalidParams`] for
    /// another status, a `completed` error or `isError` result, or a `failed` result without
    /// `isError: true`;
    /// [`Error::TaskCancelled`] if the task was cancelled; [`Error::IllegalTransition`] if
    /// it already has an outcome.
    pub fn store_result(
        &self,
        owner: &Owner,
        task_id: &str,
        status: TaskStatus,
        outcome: Outcome,
    ) -> Result<AnyTask, Error> {
        let transition = match (status, outcome) {
            (TaskStatus::Completed, outcome @ Outcome::Result(_)) if outcome.is_error_result() => {
                return Err(Error::invalid_params(
                    "a result with `isError: true` means the request failed: store it with \
                     status `failed`",
                ));
            }
            (TaskStatus::Completed, Outcome::Result(result)) => Transition::Complete(result),
            (TaskStatus::Completed, Outcome::Error(_)) => {
                return Err(Error::invalid_params(
                    "a completed task carries a result, not a JSON-RPC error: store the error \
                     with status `failed`",
                ));
            }
            (TaskStatus::Failed, outcome @ Outcome::Result(_)) if !outcome.is_error_result() => {
                return Err(Error::invalid_params(
                    "a failed task's result must report the failure with `isError: true`: \
                     set it, store a JSON-RPC error instead, or store the result as `completed`",
                ));
            }
            (TaskStatus::Failed, outcome) => Transition::Fail(outcome),
            (status, _) => {
                return Err(Error::invalid_params(format!(
                    "a result is stored with status `completed` or `failed`, not `{status}`"
                )));
            }
        };
        self.apply(owner, task_id, |task, now| {
            task.apply(transition, now).into()
        })
    }

    /// Removes `task_id` at once (the spec allows deleting a task at any time after
    /// cancellation or expiry); waiters wake and see it gone.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
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
        self.wait_until(owner, task_id, timeout, |entry| {
            entry.task.is_terminal().then(|| Ok(entry.task.clone()))
        })
    }

    /// Blocks until every input request of the `input_required` task `task_id` is answered,
    /// then takes the answers (under the names its handler gave the requests). This is how
    /// a handler receives input, whatever the dialect that delivered it.
    ///
    /// # Errors
    /// [`Error::CancelRequested`] if the requestor asks to cancel meanwhile (the handler
    /// decides what to do); [`Error::TaskCancelled`] if the task is cancelled;
    /// [`Error::IllegalTransition`] if it leaves `input_required` some other way;
    /// [`Error::TaskNotFound`] and [`Error::Timeout`] as for [`wait`](Self::wait).
    pub fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        self.wait_until(owner, task_id, timeout, |entry| match &mut entry.task {
            AnyTask::InputRequired(task) if task.cancel_requested() => {
                Some(Err(Error::CancelRequested {
                    task_id: task_id.to_owned(),
                }))
            }
            AnyTask::InputRequired(task) if task.all_answered() => Some(Ok(task.take_answers())),
            AnyTask::InputRequired(_) => None,
            other => Some(Err(handle_conflict(
                task_id,
                other,
                TaskStatus::InputRequired,
            ))),
        })
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

    /// Delivers answers to the input requests of `task_id`, by wire key (`tasks/update`'s
    /// `inputResponses`, or the answers to 2025-11-25 elicitation requests). Answers to
    /// unknown or already answered keys, answers that are not objects, and answers to a
    /// task that no longer waits for input are ignored. The handler waiting in
    /// [`wait_for_input`](Self::wait_for_input) wakes once every request is answered.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn respond(
        &self,
        owner: &Owner,
        task_id: &str,
        responses: JsonObject,
    ) -> Result<AnyTask, Error> {
        self.apply(owner, task_id, |task, now| match task {
            AnyTask::InputRequired(mut waiting) => {
                let answers = responses
                    .into_iter()
                    .filter_map(|(key, answer)| match answer {
                        Value::Object(answer) => Some((key, answer)),
                        _ => None,
                    });
                if waiting.answer(answers, now) > 0 {
                    Step::Changed(waiting.into_any())
                } else {
                    Step::Unchanged(waiting.into_any())
                }
            }
            other => Step::Unchanged(other),
        })
    }

    /// Asks the handler of `task_id` to cancel it (the tasks extension's cooperative
    /// `tasks/cancel`): sets the flag [`TaskHandle::cancel_requested`] reads and wakes a
    /// handler waiting for input; the status does not change. A terminal task is left as
    /// it is (the request is acknowledged all the same).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn request_cancel(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.apply(owner, task_id, |task, now| match task {
            AnyTask::Working(mut task) => {
                task.request_cancel(now);
                Step::Quiet(task.into_any())
            }
            AnyTask::InputRequired(mut task) => {
                task.request_cancel(now);
                Step::Quiet(task.into_any())
            }
            finished => Step::Unchanged(finished),
        })
    }

    /// Changes the retention time of `task_id` in place (the tasks extension lets it
    /// change over a task's life), bounded by the [`TtlPolicy`]: clamped to its minimum and
    /// maximum, and unlimited only where the policy allows it. The new expiry counts from
    /// creation, as always.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn set_ttl(
        &self,
        owner: &Owner,
        task_id: &str,
        ttl: Option<u64>,
    ) -> Result<AnyTask, Error> {
        let ttl = self.shared.ttl.bound(ttl);
        self.apply(owner, task_id, |mut task, now| {
            task.set_ttl(ttl, now);
            Step::Changed(task)
        })
    }

    /// Changes the suggested poll interval of `task_id` in place.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    pub fn set_poll_interval(
        &self,
        owner: &Owner,
        task_id: &str,
        poll_interval: Option<u64>,
    ) -> Result<AnyTask, Error> {
        self.apply(owner, task_id, |mut task, now| {
            task.set_poll_interval(poll_interval, now);
            Step::Changed(task)
        })
    }

    /// Registers `subscriber` for every status change and status-message change of every
    /// task. It is called outside the registry's locks, in the order of the changes of each
    /// task (and of each owner), possibly on another thread than the one that made the
    /// change, after that change's operation returned. A panicking subscriber is caught and
    /// keeps its registration; the registry is unaffected.
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

    /// Applies `change` to the visible task `task_id` in one critical section; see
    /// [`apply_key`](Self::apply_key).
    fn apply(
        &self,
        owner: &Owner,
        task_id: &str,
        change: impl FnOnce(AnyTask, Timestamp) -> Step,
    ) -> Result<AnyTask, Error> {
        let key = Key::of_id(task_id).ok_or_else(|| not_found(task_id))?;
        self.apply_key(key, owner, task_id, change)
    }

    /// Applies `change` to the visible task under `key` in one critical section. `change`
    /// gets the task and the time; a changed task is stored, queued for subscribers, and if
    /// terminal wakes its waiters. Returns the task as it is afterwards.
    fn apply_key(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &str,
        change: impl FnOnce(AnyTask, Timestamp) -> Step,
    ) -> Result<AnyTask, Error> {
        let now = self.now();
        let mut dead = Vec::new();
        let result = {
            let mut inner = self.lock(owner);
            let applied = match inner.visible(key, owner, now, &mut dead) {
                None => Err(not_found(task_id)),
                Some(entry) => {
                    let before = entry.task.expires_at();
                    match change(take(&mut entry.task), now) {
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

    /// Applies a typed change for a handle: the stored task must have status `S`; `target`
    /// is the status the change leads to (for the error if it is refused).
    pub(crate) fn transition<S: TaskState>(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &TaskId,
        target: TaskStatus,
        change: impl FnOnce(Task<S>, Timestamp) -> AnyTask,
    ) -> Result<AnyTask, Error> {
        let id = task_id.to_string();
        self.apply_key(key, owner, &id, |current, now| {
            match Task::<S>::try_from(current) {
                Ok(task) => Step::Changed(change(task, now)),
                Err(mismatch) => {
                    let current = mismatch.into_inner();
                    let error = handle_conflict(&id, &current, target);
                    Step::Refused(current, error)
                }
            }
        })
    }

    /// Applies a handle's finishing move (complete, fail, cancel), legal from either
    /// non-terminal status, so that a status moved by id meanwhile does not strand the task.
    pub(crate) fn finish_key(
        &self,
        key: Key,
        owner: &Owner,
        task_id: &TaskId,
        transition: Transition,
        change: Change,
    ) -> Result<AnyTask, Error> {
        let id = task_id.to_string();
        self.apply_key(key, owner, &id, |current, _| {
            if current.is_terminal() {
                let error = handle_conflict(&id, &current, transition.target());
                return Step::Refused(current, error);
            }
            current.apply(transition, change).into()
        })
    }

    /// Fails the task of a handle dropped before it finished; a finished task is left as
    /// it is.
    pub(crate) fn abandon(&self, key: Key, owner: &Owner, task_id: &TaskId, message: &str) {
        let id = task_id.to_string();
        let _ = self.apply_key(key, owner, &id, |task, now| {
            if task.is_terminal() {
                return Step::Unchanged(task);
            }
            task.apply(
                Transition::Fail(Outcome::error(crate::jsonrpc::INTERNAL_ERROR, message)),
                Change::at(now).with_message(message),
            )
            .into()
        });
    }
}

/// Why a handle's move does not fit the stored task.
fn handle_conflict(task_id: &str, current: &AnyTask, wanted: TaskStatus) -> Error {
    if current.status() == TaskStatus::Cancelled {
        return Error::TaskCancelled {
            task_id: task_id.to_owned(),
        };
    }
    Error::IllegalTransition {
        task_id: task_id.to_owned(),
        from: current.status(),
        to: wanted,
        message: format!(
            "task `{}` is `{}`, which its handle did not expect: another writer changed it",
            crate::error::shorten(task_id),
            current.status(),
        ),
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
