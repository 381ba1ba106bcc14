//! [`TaskHandle<S>`]: the typed handle a handler drives a stored task with.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use crate::any::AnyTask;
use crate::any::Transition;
use crate::error::Error;
use crate::id::TaskId;
use crate::input::{InputRequests, InputResponses};
use crate::jsonrpc::JsonObject;
use crate::outcome::Outcome;
use crate::status::{
    AwaitsInput, CanRequireInput, CanResume, Cancelled, Completed, Failed, InputRequired,
    NonTerminal, TaskState, TaskStatus, Working,
};
use crate::store::{Lease, Owner, TaskStore, Update};
use crate::task::{Finished, Task};

/// The typed handle of a stored task in status `S`: the task's one writer.
///
/// Its transitions are those of [`Task<S>`], and each writes through to the store `T` (for
/// example the in-process [`TaskRegistry`](crate::TaskRegistry)) as one atomic [`Update`],
/// re-checked there against the stored status: over a shared store, other instances race. If the task was cancelled, expired or removed meanwhile (or another
/// writer moved it), the transition changes nothing and returns the error: a cancelled task
/// stays cancelled, a late result is never stored over it, and the first terminal status
/// wins.
///
/// Dropping a handle of a non-terminal task (a handler that returned early or panicked)
/// fails the task with a JSON-RPC error `-32603`, so that no requestor waits for it
/// forever; [`detach`](TaskHandle::detach) opts out.
#[must_use = "dropping the handle of a running task fails the task"]
pub struct TaskHandle<S: TaskState, T: TaskStore> {
    store: Option<T>,
    id: TaskId,
    /// The id as text, as the store's by-id operations take it.
    key: Box<str>,
    owner: Owner,
    /// The task's lease in a shared store, renewed while the handle lives.
    lease: Lease,
    message: Option<String>,
    state: PhantomData<fn() -> S>,
}

impl<T: TaskStore> TaskHandle<Working, T> {
    pub(crate) fn new(store: T, id: TaskId, owner: Owner, lease: Lease) -> Self {
        TaskHandle {
            store: Some(store),
            key: id.to_string().into_boxed_str(),
            id,
            owner,
            lease,
            message: None,
            state: PhantomData,
        }
    }
}

/// The message a dropped handle leaves on its failed task.
const DROPPED: &str = "the task's handler stopped without finishing the task";

impl<S: TaskState, T: TaskStore> TaskHandle<S, T> {
    /// The task id.
    #[must_use]
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// The owner the task is bound to.
    #[must_use]
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The task as it is stored now.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if it expired or was removed.
    pub fn snapshot(&self) -> Result<AnyTask, Error> {
        self.store()?.get(&self.owner, &self.key)
    }

    /// The status the task has now. A handler can poll this to stop early once the task is
    /// `cancelled`.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed (nothing more to do);
    /// [`Error::Store`] if the store cannot be reached right now: that says nothing about
    /// the task, which a handler should go on running (and finish once the store is back).
    pub fn current_status(&self) -> Result<TaskStatus, Error> {
        self.snapshot().map(|task| task.status())
    }

    /// Whether the requestor asked to cancel the task (the tasks extension's cooperative
    /// `tasks/cancel`). A handler may honour it with [`cancel`](TaskHandle::cancel), or
    /// finish anyway.
    ///
    /// # Errors
    /// As for [`current_status`](TaskHandle::current_status): a task that is gone, or a
    /// store that cannot be reached, is an error, never read as a request to cancel.
    pub fn cancel_requested(&self) -> Result<bool, Error> {
        self.snapshot().map(|task| task.cancel_requested())
    }

    /// Changes the task's retention time in place (within the store's [`TtlPolicy`](crate::TtlPolicy)).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed.
    pub fn set_ttl(&self, ttl: Option<u64>) -> Result<(), Error> {
        self.store()?.set_ttl(&self.owner, &self.key, ttl).map(drop)
    }

    /// Changes the task's suggested poll interval in place.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed.
    pub fn set_poll_interval(&self, poll_interval: Option<u64>) -> Result<(), Error> {
        self.store()?
            .set_poll_interval(&self.owner, &self.key, poll_interval)
            .map(drop)
    }

    /// The same handle; its next transition leaves the task with this status message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Gives up the handle without touching the task; the task can still be driven by id
    /// through the store. Returns the id.
    pub fn detach(mut self) -> TaskId {
        self.store = None;
        std::mem::replace(&mut self.lease, Lease::none()).release();
        self.id.clone()
    }

    fn store(&self) -> Result<&T, Error> {
        self.store.as_ref().ok_or_else(spent)
    }

    /// Applies a typed, non-finishing move (`require_input`, `resume`) through the store.
    /// If it is refused while the task is still unfinished (another writer moved it), the
    /// handle stays armed, so dropping it fails the task rather than stranding it.
    fn step(mut self, transition: Transition) -> Result<TaskHandleParts<T>, Error> {
        let store = self.store.take().ok_or_else(spent)?;
        let update = Update::step(S::STATUS, transition, self.message.take());
        match store.update(&self.owner, &self.key, update) {
            Ok(_) => Ok(TaskHandleParts {
                store,
                id: self.id.clone(),
                key: std::mem::take(&mut self.key),
                owner: self.owner.clone(),
                lease: std::mem::replace(&mut self.lease, Lease::none()),
            }),
            Err(error) => {
                if matches!(error, Error::IllegalTransition { from, .. } if !from.is_terminal()) {
                    self.store = Some(store);
                }
                Err(error)
            }
        }
    }

    /// Applies a finishing move (legal from either unfinished status); the handle is spent.
    fn end(mut self, transition: Transition) -> Result<AnyTask, Error> {
        let store = self.store.take().ok_or_else(spent)?;
        let update = Update::end(transition, self.message.take());
        store.update(&self.owner, &self.key, update)
    }

    /// Replaces the status message now (a progress note), without a transition.
    ///
    /// # Errors
    /// As for the transitions: the task was cancelled, expired, removed or moved meanwhile.
    pub fn set_status_message(&self, message: Option<String>) -> Result<(), Error>
    where
        S: NonTerminal,
    {
        self.store()?
            .update(&self.owner, &self.key, Update::message(S::STATUS, message))
            .map(drop)
    }

    /// `working` → `input_required`, waiting for `requests`.
    ///
    /// # Errors
    /// [`Error::TaskCancelled`] if the task was cancelled, [`Error::TaskNotFound`] if it
    /// expired or was removed, [`Error::IllegalTransition`] if another writer moved it.
    pub fn require_input(
        self,
        requests: InputRequests,
    ) -> Result<TaskHandle<InputRequired, T>, Error>
    where
        S: CanRequireInput,
    {
        let parts = self.step(Transition::RequireInput(requests))?;
        Ok(parts.into_handle())
    }

    /// `input_required` → `working`.
    ///
    /// # Errors
    /// As for [`require_input`](TaskHandle::require_input).
    pub fn resume(self) -> Result<TaskHandle<Working, T>, Error>
    where
        S: CanResume,
    {
        let parts = self.step(Transition::Resume)?;
        Ok(parts.into_handle())
    }

    /// Blocks until every input request is answered, then returns the answers under the
    /// names given in [`require_input`](TaskHandle::require_input). Follow with
    /// [`resume`](TaskHandle::resume).
    ///
    /// # Errors
    /// [`Error::CancelRequested`] if the requestor asks to cancel meanwhile (the handle is
    /// intact: [`cancel`](TaskHandle::cancel) or carry on); [`Error::TaskCancelled`] if the
    /// task was cancelled; [`Error::TaskNotFound`] if it expired or was removed;
    /// [`Error::NothingToWaitFor`] at once if the task asked for no input (or its answers
    /// were taken already); [`Error::Timeout`] if `timeout` passed.
    pub fn wait_for_input(&self, timeout: Option<Duration>) -> Result<InputResponses, Error>
    where
        S: AwaitsInput,
    {
        self.store()?
            .wait_for_input(&self.owner, &self.key, timeout)
    }

    /// → `completed` with `result`; returns the finished task.
    ///
    /// # Errors
    /// As for [`require_input`](TaskHandle::require_input); nothing is stored then.
    pub fn complete(self, result: JsonObject) -> Result<Task<Completed>, Error>
    where
        S: NonTerminal,
    {
        typed(self.end(Transition::Complete(result))?)
    }

    /// → `failed` with `outcome` (a JSON-RPC error, or a result that reports one).
    ///
    /// # Errors
    /// As for [`complete`](TaskHandle::complete).
    pub fn fail(self, outcome: Outcome) -> Result<Task<Failed>, Error>
    where
        S: NonTerminal,
    {
        if matches!(outcome, Outcome::Result(_)) && !outcome.is_error_result() {
            // The handle stays armed: dropping it fails the task with an internal error.
            return Err(Error::invalid_params(
                "a failed task's result must report the failure with `isError: true`: set it, \
                 fail with a JSON-RPC error, or complete the task",
            ));
        }
        typed(self.end(Transition::Fail(outcome))?)
    }

    /// → `completed`, or `failed` if `result` has `isError: true` ([`Task::finish`]).
    ///
    /// # Errors
    /// As for [`complete`](TaskHandle::complete).
    pub fn finish(self, result: JsonObject) -> Result<Finished, Error>
    where
        S: NonTerminal,
    {
        let transition = if crate::outcome::is_error_result(&result) {
            Transition::Fail(Outcome::Result(result))
        } else {
            Transition::Complete(result)
        };
        match self.end(transition)? {
            AnyTask::Completed(task) => Ok(Finished::Completed(task)),
            AnyTask::Failed(task) => Ok(Finished::Failed(task)),
            other => Err(Error::Internal(format!(
                "finish produced a {} task",
                other.status()
            ))),
        }
    }

    /// → `cancelled` (the handler gives up); returns the finished task.
    ///
    /// # Errors
    /// As for [`complete`](TaskHandle::complete).
    pub fn cancel(self) -> Result<Task<Cancelled>, Error>
    where
        S: NonTerminal,
    {
        typed(self.end(Transition::Cancel)?)
    }
}

fn typed<T: TaskState>(task: AnyTask) -> Result<Task<T>, Error> {
    Task::try_from(task).map_err(|err| Error::Internal(err.to_string()))
}

fn spent() -> Error {
    Error::Internal("the task handle was already used".to_owned())
}

/// The fields of a spent handle, to build the handle of the next status.
struct TaskHandleParts<T: TaskStore> {
    store: T,
    id: TaskId,
    key: Box<str>,
    owner: Owner,
    lease: Lease,
}

impl<T: TaskStore> TaskHandleParts<T> {
    fn into_handle<S: TaskState>(self) -> TaskHandle<S, T> {
        TaskHandle {
            store: Some(self.store),
            id: self.id,
            key: self.key,
            owner: self.owner,
            lease: self.lease,
            message: None,
            state: PhantomData,
        }
    }
}

impl<S: TaskState, T: TaskStore> Drop for TaskHandle<S, T> {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let _ = store.update(&self.owner, &self.key, Update::abandon(DROPPED));
        }
    }
}

impl<S: TaskState, T: TaskStore> fmt::Debug for TaskHandle<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("status", &S::STATUS)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}
