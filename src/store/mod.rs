//! [`TaskStore`]: the one surface of a task store, whatever keeps the tasks.
//!
//! The in-process [`TaskRegistry`](crate::TaskRegistry) implements it, and so do the
//! backend crates (`mcp-tasks-redis`'s `RedisTaskStore`, shared by servers run as several
//! instances), written against [`backend`](crate::backend) like any third-party store. Dispatchers, typed [`TaskHandle`]s and servers are written once, over any
//! `TaskStore`.
//!
//! A backend implements a handful of by-id operations; everything else (cancel, status
//! updates, results, answers) is one [`Update`] whose decision the core makes
//! ([`Update::apply`]), so every backend follows the same state machine. What a backend
//! guarantees is atomicity: an update is decided on the task as stored and written only if
//! nobody changed the task meanwhile.

pub(crate) mod copies;
pub(crate) mod cursor;
pub(crate) mod feed;
mod handle;
mod lease;
pub(crate) mod lease_book;
pub(crate) mod notify;
mod owner;
mod policy;
pub(crate) mod record;
mod redelivery;
mod update;
pub(crate) mod versioned;
pub(crate) mod wait;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use crate::any::AnyTask;
use crate::error::Error;
use crate::input::InputResponses;
use crate::jsonrpc::{JsonObject, RequestId};
use crate::outcome::Outcome;
use crate::status::{Cancelled, TaskStatus, Working};
use crate::task::Task;
use crate::trace::TraceContext;

pub(crate) use cursor::CursorKey;
pub use handle::TaskHandle;
pub use lease::{Lease, LeaseHolder, LeasePolicy};
pub(crate) use notify::Notifier;
pub use notify::{ChangeKind, ChangeWatcher, StatusChange, SubscriptionId};
pub use owner::Owner;
pub use policy::{Limits, TtlPolicy};
pub use redelivery::{
    ATTEMPT_CEILING_FACTOR, Attempts, Claim, ClaimBackoff, MAX_ATTEMPTS, MAX_CHECKPOINT_BYTES,
    Redelivery, attempts_exhausted,
};
pub use update::{Step, Update};
pub use update::{handle_conflict, take_answers};
pub use wait::StoreFuture;
pub(crate) use wait::{Events, Probe};
pub use watch::{Received, Recv, Watch, WatchCloser, WatchError, WatchLimits, Watches};

/// The most tasks one `list` page holds.
pub const MAX_PAGE_SIZE: usize = 1_000;

/// A status-change subscriber ([`TaskStore::subscribe`]).
pub type Subscriber = Arc<dyn Fn(&StatusChange) + Send + Sync>;

/// What a new task is created for: the originating request and the requested timing.
///
/// Mirrors what the official SDKs' stores take: the request id, the method, and the `task`
/// param's `ttl`, plus a poll interval. The store keeps the request id and the method
/// with the task ([`TaskStore::origin`]); it does not keep the params.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRequest {
    pub(crate) request_id: RequestId,
    pub(crate) method: String,
    pub(crate) ttl: Option<u64>,
    pub(crate) poll_interval: Option<u64>,
    pub(crate) redelivery: Option<Redelivery>,
    pub(crate) trace: Option<TraceContext>,
    pub(crate) tool: Option<String>,
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
            redelivery: None,
            trace: None,
            tool: None,
        }
    }

    /// The same request, asking for this TTL in milliseconds (the `task.ttl` param).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Option<u64>) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same request, suggesting this poll interval in milliseconds (otherwise the
    /// store's default).
    #[must_use]
    pub fn with_poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// The same request, for a task whose work may run again from the start on another
    /// instance when the one running it stops ([`Redelivery`]; see the
    /// [`TaskStore::claim`] docs). A store without other instances keeps the attempts and
    /// ignores the rest.
    #[must_use]
    pub fn with_redelivery(mut self, redelivery: Redelivery) -> Self {
        self.redelivery = Some(redelivery);
        self
    }

    /// The same request, carrying the trace context of the request that creates the task
    /// (read from its `params._meta` with [`TraceContext::of_params`], or the server's
    /// own span): the task keeps it, in every status and in its stored form, so that its
    /// work continues the trace wherever it runs ([`Task::trace_context`]). Never shown
    /// on the wire.
    #[must_use]
    pub fn with_trace_context(mut self, trace: Option<TraceContext>) -> Self {
        self.trace = trace;
        self
    }

    /// The same request, for a task running the tool `name` (a server's `tools/call`):
    /// the task keeps the name in every status and in its stored form
    /// ([`Task::tool`]), so that an operator's view filters and counts tasks by tool,
    /// whether they run once or may be redelivered. Never shown on the wire.
    #[must_use]
    pub fn with_tool(mut self, name: impl Into<String>) -> Self {
        self.tool = Some(name.into());
        self
    }

    /// The tool the request names, if any.
    #[must_use]
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The trace context the request carries, if any.
    #[must_use]
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The redelivery the request asks for, if any.
    #[must_use]
    pub fn redelivery(&self) -> Option<&Redelivery> {
        self.redelivery.as_ref()
    }

    /// The JSON-RPC id of the originating request.
    #[must_use]
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// The method of the originating request.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The requested TTL in milliseconds, before the store's [`TtlPolicy`] (`None`: the
    /// policy's default).
    #[must_use]
    pub fn ttl(&self) -> Option<u64> {
        self.ttl
    }

    /// The suggested poll interval in milliseconds, if the request names one.
    #[must_use]
    pub fn poll_interval(&self) -> Option<u64> {
        self.poll_interval
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

/// One page of [`TaskStore::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// The tasks, oldest first.
    pub tasks: Vec<AnyTask>,
    /// The cursor of the next page; present if and only if more tasks follow.
    pub next_cursor: Option<String>,
}

/// A task store: create, get, change, list and wait for tasks, by id, for one owner at a
/// time.
///
/// Every operation takes the caller's [`Owner`]: a task is visible only to the owner it
/// was created for, and for anyone else it does not exist (the error of an unknown id).
/// Every change is decided by [`Update::apply`] on the task as stored and written
/// atomically, so concurrent writers (threads, or instances sharing a store) cannot lose
/// an update: the first terminal status stays, and a cancelled task never gains a result.
///
/// The trait is object safe: `Arc<dyn TaskStore>` is itself a `TaskStore`, for servers
/// that pick their backend at run time. Methods with a generic argument are provided and
/// available on every sized store, `Arc<dyn TaskStore>` included.
///
/// # Mapping from the official SDKs' stores
///
/// | TypeScript `TaskStore` | C# `IMcpTaskStore` | `TaskStore` |
/// |---|---|---|
/// | `createTask(taskParams, requestId, request, sessionId)` | `CreateTaskAsync(taskParams, requestId, request, sessionId)` | [`insert(&owner, TaskRequest)`](Self::insert) (by id), or [`create`](Self::create) for a typed [`TaskHandle<Working>`] |
/// | `getTask(taskId, sessionId)` (`null` if unknown) | `GetTaskAsync` (`null` if unknown) | [`get`](Self::get) → `Err(TaskNotFound)` if unknown |
/// | `updateTaskStatus(taskId, status, statusMessage, sessionId)` | `UpdateTaskStatusAsync` | [`update_status`](Self::update_status) (checked against the spec table), or the handle's transitions |
/// | `storeTaskResult(taskId, status, result, sessionId)` | `StoreTaskResultAsync` | [`store_result`](Self::store_result), or the handle's `complete` / `fail` / `finish` |
/// | `getTaskResult(taskId, sessionId)` | `GetTaskResultAsync` | [`result`](Self::result) (now), [`wait`](Self::wait) (blocking, for `tasks/result`) |
/// | `listTasks(cursor, sessionId)` | `ListTasksAsync(cursor, sessionId)` | [`list`](Self::list) |
/// | (through `updateTaskStatus`) | `CancelTaskAsync` (idempotent) | [`cancel`](Self::cancel): `-32602` on a terminal task as the spec says; the error holds the task for idempotent callers |
/// | `sessionId` | `sessionId` | [`Owner`] (authorization context or session) |
pub trait TaskStore: Send + Sync + std::fmt::Debug {
    /// The store's retention policy (what [`set_ttl`](Self::set_ttl) is bounded by).
    fn ttl_policy(&self) -> TtlPolicy;

    /// Creates a task for `owner` to be driven by id, as the SDKs' stores do, and returns
    /// it. The id is a fresh UUID v4, the TTL the [`TtlPolicy`]'s answer to the requested
    /// one, and the poll interval the request's or the store's default.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] if `owner` (or the whole store) holds the most tasks its
    /// limits allow; nothing is created. A backend's own failure as [`Error::Store`].
    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error>;

    /// Creates a task as [`insert`](Self::insert) does, for a handler of this process to
    /// run, and returns the [`Lease`] the handler holds while it runs the task
    /// ([`create`](Self::create) puts it in the task's [`TaskHandle`]). A store shared by
    /// several instances renews the lease in the background and fails the task if it
    /// lapses (the instance died); the default, for stores whose tasks cannot outlive
    /// their handlers' process, creates the task with [`Lease::none`].
    ///
    /// # Errors
    /// As for [`insert`](Self::insert).
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        Ok((self.insert(owner, request)?, Lease::none()))
    }

    /// The task `task_id` as `owner` sees it now (its outcome included, if terminal).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if no such task is visible to `owner` (unknown, expired,
    /// removed, or another owner's).
    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error>;

    /// The request `task_id` was created for.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error>;

    /// One page of `owner`'s tasks, oldest first, continuing after `cursor`.
    ///
    /// `page_size` is clamped to `1..=`[`MAX_PAGE_SIZE`]. Cursors are keyset-based: tasks
    /// deleted or expired between pages never make another task skipped or repeated.
    ///
    /// # Errors
    /// [`Error::InvalidCursor`] for an empty, malformed or forged cursor, or one issued to
    /// another owner or by another store.
    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error>;

    /// Applies `update` to `task_id` atomically; returns the task as it is afterwards. A
    /// changed task is stored, told to subscribers, and wakes its waiters.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); the update's own refusal.
    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error>;

    /// Removes `task_id` at once (the spec allows deleting a task at any time after
    /// cancellation or expiry); waiters wake and see it gone.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error>;

    /// Blocks until `task_id` is terminal, then returns it with its stored outcome (what
    /// `tasks/result` needs). Event-driven, never polling; `timeout` bounds the wait in
    /// real time, and the task's expiry bounds it too.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task is not visible to `owner`, or expires or is
    /// removed while waiting; [`Error::Timeout`] if `timeout` passes first.
    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error>;

    /// Blocks until every input request of the `input_required` task `task_id` is answered,
    /// then takes the answers (under the names its handler gave the requests). This is how
    /// a handler receives input, whatever the dialect that delivered it.
    ///
    /// # Errors
    /// [`Error::CancelRequested`] if the requestor asks to cancel meanwhile (the handler
    /// decides what to do); [`Error::TaskCancelled`] if the task is cancelled;
    /// [`Error::IllegalTransition`] if it leaves `input_required` some other way;
    /// [`Error::NothingToWaitFor`] at once if no request is outstanding and no answer is
    /// left to take; [`Error::TaskNotFound`] and [`Error::Timeout`] as for
    /// [`wait`](Self::wait).
    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error>;

    /// Resolves once `task_id` is terminal, with its stored outcome: [`wait`](Self::wait)
    /// as a future, for async servers, with no runtime needed. It has no timeout: bound it
    /// with the runtime's (`tokio::time::timeout`). Dropping it abandons the wait and
    /// leaves nothing registered.
    ///
    /// It is woken by the same per-task events as the blocking waits, and at the task's
    /// expiry by the store layer's one timer thread (started on first use). Each poll that
    /// is woken reads the task once: under the registry's lock, or one round trip to
    /// Redis, made inside `poll`.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task is not visible to `owner`, or expires or is
    /// removed while waited for (the future resolves at its expiry); a backend's own
    /// failure as [`Error::Store`] (a shared store unreachable for its outage timeout).
    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask>;

    /// Resolves once every input request of the `input_required` task `task_id` is
    /// answered, with the answers taken: [`wait_for_input`](Self::wait_for_input) as a
    /// future, without a timeout (use the runtime's). Dropping it takes nothing.
    ///
    /// # Errors
    /// As for [`wait_for_input`](Self::wait_for_input), [`Error::Timeout`] aside;
    /// [`Error::Store`] as for [`wait_async`](Self::wait_async).
    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses>;

    /// Resolves once the requestor asked to cancel `task_id` (the tasks extension's
    /// cooperative cancel) or the task was cancelled: what a handler awaits beside its work
    /// to stop early ([`TaskHandle::cancelled`]).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task is not visible to `owner`, or expires or is
    /// removed meanwhile; [`Error::IllegalTransition`] if it finished (`completed` or
    /// `failed`) instead, so no cancel can come; [`Error::Store`] as for
    /// [`wait_async`](Self::wait_async).
    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()>;

    /// Registers `subscriber` for every status change and status-message change of every
    /// task, called outside the store's locks, in the order of each task's changes, and
    /// before the change wakes the task's waiters (so a server sends a task's status
    /// notification before the `tasks/result` answer the same change releases). A
    /// panicking subscriber is contained and keeps its registration.
    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId;

    /// Claims one claimable task for its next attempt, if any: a task created with
    /// [`TaskRequest::with_redelivery`] whose instance stopped (its lease lapsed, and the
    /// [`ClaimBackoff`] passed) or handed it over ([`hand_over`](Self::hand_over)), with
    /// attempts left. Atomic: of the instances claiming at once, one gets it, with a new
    /// lease and the next attempt; the old holder's late writes are refused from then on
    /// ([`Error::Superseded`]).
    ///
    /// The default, for stores whose tasks cannot outlive their process (the registry):
    /// nothing is ever claimable.
    ///
    /// # Errors
    /// A backend's own failure as [`Error::Store`].
    fn claim(&self) -> Result<Option<Claim>, Error> {
        Ok(None)
    }

    /// Blocks until a task may have become claimable (a lease lapsed, a task was handed
    /// over, a back-off passed), or `timeout` passes: a claim loop's sleep between
    /// [`claim`](Self::claim)s, woken by the store's notifications rather than by polling.
    /// It may return early; claim to find out.
    ///
    /// The default sleeps `timeout` (an hour without one): nothing is ever claimable.
    ///
    /// # Errors
    /// A backend's own failure as [`Error::Store`].
    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        std::thread::sleep(timeout.unwrap_or(Duration::from_secs(3_600)));
        Ok(())
    }

    /// Gives up this instance's lease on the redeliverable task `task_id` so that another
    /// instance claims it at once (a graceful shutdown's hand-over): answers `true` if it
    /// was handed over, `false` if the task is not redeliverable, not leased by this
    /// instance, or has no attempts left (then fail it as before). The handler still
    /// running here is superseded once another instance claims the task.
    ///
    /// The default hands nothing over.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); a backend's own failure as
    /// [`Error::Store`].
    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        let _ = (owner, task_id);
        Ok(false)
    }

    /// The job stored with the redeliverable task `task_id` ([`Redelivery::job`]), if it
    /// has one (a store without redelivery answers `None`).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        self.get(owner, task_id).map(|_| None)
    }

    /// Removes a subscriber; returns whether it was registered.
    fn unsubscribe(&self, id: SubscriptionId) -> bool;

    /// Creates a task for `owner` and returns the typed handle its handler drives, and the
    /// new task (for the `CreateTaskResult`). Dropping the handle before the task finishes
    /// fails the task; to drive a task by id only, use [`insert`](Self::insert).
    ///
    /// # Errors
    /// As for [`insert`](Self::insert).
    fn create(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(TaskHandle<Working, Self>, Task<Working>), Error>
    where
        Self: Clone + Sized,
    {
        let (task, lease) = self.insert_leased(owner, request)?;
        let handle = TaskHandle::new(self.clone(), task.id().clone(), owner.clone(), lease);
        Ok((handle, task))
    }

    /// Registers `subscriber` ([`add_subscriber`](Self::add_subscriber)) for every change.
    fn subscribe(
        &self,
        subscriber: impl Fn(&StatusChange) + Send + Sync + 'static,
    ) -> SubscriptionId
    where
        Self: Sized,
    {
        self.add_subscriber(Arc::new(subscriber))
    }

    /// The finished task `task_id`, with its stored outcome, without waiting.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::NotFinished`] if the task
    /// is still `working` or `input_required`.
    fn result(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
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

    /// Cancels `task_id` (`tasks/cancel`): it becomes `cancelled` before this returns, and
    /// stays so whatever its handler does later.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::AlreadyTerminal`]
    /// (`-32602`, as the spec requires) if the task is already terminal; the error holds
    /// the task, for callers that prefer idempotent cancellation.
    fn cancel(
        &self,
        owner: &Owner,
        task_id: &str,
        status_message: Option<String>,
    ) -> Result<Task<Cancelled>, Error> {
        let cancelled = self.update(owner, task_id, Update::cancel(status_message))?;
        Task::try_from(cancelled).map_err(|err| Error::Internal(err.to_string()))
    }

    /// Moves `task_id` to `status` with `status_message`, as the SDKs' `updateTaskStatus`
    /// does, checked against the spec's table ([`Update::status`]).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::InvalidParams`] for
    /// `completed` or `failed` (they need a result: use [`store_result`](Self::store_result));
    /// [`Error::TaskCancelled`] or [`Error::IllegalTransition`] for a move the table forbids.
    fn update_status(
        &self,
        owner: &Owner,
        task_id: &str,
        status: TaskStatus,
        status_message: Option<String>,
    ) -> Result<AnyTask, Error> {
        self.update(owner, task_id, Update::status(status, status_message)?)
    }

    /// Stores the outcome of `task_id` together with its terminal status, as the SDKs'
    /// `storeTaskResult` does ([`Update::result`]). A stored outcome can never be
    /// overwritten.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get); [`Error::InvalidParams`] for
    /// another status, a `completed` error or `isError` result, or a `failed` result
    /// without `isError: true`; [`Error::TaskCancelled`] if the task was cancelled;
    /// [`Error::IllegalTransition`] if it already has an outcome.
    fn store_result(
        &self,
        owner: &Owner,
        task_id: &str,
        status: TaskStatus,
        outcome: Outcome,
    ) -> Result<AnyTask, Error> {
        self.update(owner, task_id, Update::result(status, outcome)?)
    }

    /// Delivers answers to the input requests of `task_id`, by wire key ([`Update::respond`]).
    /// The handler waiting in [`wait_for_input`](Self::wait_for_input) wakes once every
    /// request is answered.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn respond(
        &self,
        owner: &Owner,
        task_id: &str,
        responses: JsonObject,
    ) -> Result<AnyTask, Error> {
        self.update(owner, task_id, Update::respond(responses))
    }

    /// Asks the handler of `task_id` to cancel it (the tasks extension's cooperative
    /// `tasks/cancel`): sets the flag [`TaskHandle::cancel_requested`] reads and wakes a
    /// handler waiting for input; the status does not change.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn request_cancel(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.update(owner, task_id, Update::request_cancel())
    }

    /// Changes the retention time of `task_id` in place, bounded by the [`TtlPolicy`]
    /// ([`TtlPolicy::bound`]). The new expiry counts from creation, as always.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn set_ttl(&self, owner: &Owner, task_id: &str, ttl: Option<u64>) -> Result<AnyTask, Error> {
        let ttl = self.ttl_policy().bound(ttl);
        self.update(owner, task_id, Update::ttl(ttl))
    }

    /// Changes the suggested poll interval of `task_id` in place.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] as for [`get`](Self::get).
    fn set_poll_interval(
        &self,
        owner: &Owner,
        task_id: &str,
        poll_interval: Option<u64>,
    ) -> Result<AnyTask, Error> {
        self.update(owner, task_id, Update::poll_interval(poll_interval))
    }
}

/// A shared store is a store: `Arc<dyn TaskStore>` for a backend picked at run time.
impl<T: TaskStore + ?Sized> TaskStore for Arc<T> {
    fn ttl_policy(&self) -> TtlPolicy {
        (**self).ttl_policy()
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        (**self).insert(owner, request)
    }

    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        (**self).insert_leased(owner, request)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        (**self).get(owner, task_id)
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        (**self).origin(owner, task_id)
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        (**self).list(owner, cursor, page_size)
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        (**self).update(owner, task_id, update)
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        (**self).remove(owner, task_id)
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        (**self).wait(owner, task_id, timeout)
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        (**self).wait_for_input(owner, task_id, timeout)
    }

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        (**self).wait_async(owner, task_id)
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        (**self).wait_for_input_async(owner, task_id)
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        (**self).wait_for_cancel_async(owner, task_id)
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        (**self).add_subscriber(subscriber)
    }

    fn claim(&self) -> Result<Option<Claim>, Error> {
        (**self).claim()
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        (**self).wait_for_claimable(timeout)
    }

    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        (**self).hand_over(owner, task_id)
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        (**self).job(owner, task_id)
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        (**self).unsubscribe(id)
    }
}
