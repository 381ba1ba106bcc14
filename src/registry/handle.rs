//! [`TaskHandle<S>`]: the typed handle a handler drives a stored task with.

use std::fmt;
use std::marker::PhantomData;

use crate::any::AnyTask;
use crate::error::Error;
use crate::id::TaskId;
use crate::input::InputRequests;
use crate::jsonrpc::{INTERNAL_ERROR, JsonObject};
use crate::outcome::Outcome;
use crate::registry::TaskRegistry;
use crate::registry::owner::Owner;
use crate::status::{
    CanRequireInput, CanResume, Cancelled, Completed, Failed, InputRequired, NonTerminal,
    TaskState, TaskStatus, Working,
};
use crate::task::{Change, Finished, Task};

/// The typed handle of a stored task in status `S`: the task's one writer.
///
/// Its transitions are those of [`Task<S>`], and each writes through to the registry in one
/// critical section. If the task was cancelled, expired or removed meanwhile (or another
/// writer moved it), the transition changes nothing and returns the error: a cancelled task
/// stays cancelled, a late result is never stored over it, and the first terminal status
/// wins.
///
/// Dropping a handle of a non-terminal task (a handler that returned early or panicked)
/// fails the task with a JSON-RPC error `-32603`, so that no requestor waits for it
/// forever; [`detach`](TaskHandle::detach) opts out.
#[must_use = "dropping the handle of a running task fails the task"]
pub struct TaskHandle<S: TaskState> {
    registry: Option<TaskRegistry>,
    id: TaskId,
    key: u128,
    owner: Owner,
    message: Option<String>,
    state: PhantomData<fn() -> S>,
}

impl TaskHandle<Working> {
    pub(crate) fn new(registry: TaskRegistry, id: TaskId, key: u128, owner: Owner) -> Self {
        TaskHandle {
            registry: Some(registry),
            id,
            key,
            owner,
            message: None,
            state: PhantomData,
        }
    }
}

/// The message a dropped handle leaves on its failed task.
const DROPPED: &str = "the task's handler stopped without finishing the task";

impl<S: TaskState> TaskHandle<S> {
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
        let registry = self.registry()?;
        registry.get(&self.owner, &self.id.to_string())
    }

    /// The status the task has now, or `None` if it expired or was removed. A handler can
    /// poll this to stop early once the task is `cancelled`.
    #[must_use]
    pub fn current_status(&self) -> Option<TaskStatus> {
        self.snapshot().ok().map(|task| task.status())
    }

    /// The same handle; its next transition leaves the task with this status message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Gives up the handle without touching the task; the task can still be driven by id
    /// through the registry. Returns the id.
    pub fn detach(mut self) -> TaskId {
        self.registry = None;
        self.id.clone()
    }

    fn registry(&self) -> Result<&TaskRegistry, Error> {
        self.registry
            .as_ref()
            .ok_or_else(|| Error::Internal("the task handle was already used".to_owned()))
    }

    /// Applies a typed transition through the registry; the handle is spent either way.
    fn transition(
        mut self,
        step: impl FnOnce(Task<S>, Change) -> AnyTask,
    ) -> Result<(AnyTask, TaskHandleParts), Error> {
        let registry = self
            .registry
            .take()
            .ok_or_else(|| Error::Internal("the task handle was already used".to_owned()))?;
        let message = self.message.take();
        let task = registry.transition::<S>(self.key, &self.owner, &self.id, |task, now| {
            step(task, Change::at(now).with_optional_message(message))
        })?;
        let parts = TaskHandleParts {
            registry,
            id: self.id.clone(),
            key: self.key,
            owner: self.owner.clone(),
        };
        Ok((task, parts))
    }

    /// Replaces the status message now (a progress note), without a transition.
    ///
    /// # Errors
    /// As for the transitions: the task was cancelled, expired, removed or moved meanwhile.
    pub fn set_status_message(&self, message: Option<String>) -> Result<(), Error>
    where
        S: NonTerminal,
    {
        let registry = self.registry()?;
        registry
            .transition::<S>(self.key, &self.owner, &self.id, |mut task, now| {
                task.set_status_message(message, now);
                task.into_any()
            })
            .map(drop)
    }

    /// `working` → `input_required`, waiting for `requests`.
    ///
    /// # Errors
    /// [`Error::TaskCancelled`] if the task was cancelled, [`Error::TaskNotFound`] if it
    /// expired or was removed, [`Error::IllegalTransition`] if another writer moved it.
    pub fn require_input(self, requests: InputRequests) -> Result<TaskHandle<InputRequired>, Error>
    where
        S: CanRequireInput,
    {
        let (_, parts) =
            self.transition(|task, change| task.require_input(requests, change).into_any())?;
        Ok(parts.into_handle())
    }

    /// `input_required` → `working`.
    ///
    /// # Errors
    /// As for [`require_input`](TaskHandle::require_input).
    pub fn resume(self) -> Result<TaskHandle<Working>, Error>
    where
        S: CanResume,
    {
        let (_, parts) = self.transition(|task, change| task.resume(change).into_any())?;
        Ok(parts.into_handle())
    }

    /// → `completed` with `result`; returns the finished task.
    ///
    /// # Errors
    /// As for [`require_input`](TaskHandle::require_input); nothing is stored then.
    pub fn complete(self, result: JsonObject) -> Result<Task<Completed>, Error>
    where
        S: NonTerminal,
    {
        let (task, _) = self.transition(|task, change| task.complete(result, change).into_any())?;
        typed(task)
    }

    /// → `failed` with `outcome` (a JSON-RPC error, or a result that reports one).
    ///
    /// # Errors
    /// As for [`complete`](TaskHandle::complete).
    pub fn fail(self, outcome: Outcome) -> Result<Task<Failed>, Error>
    where
        S: NonTerminal,
    {
        let (task, _) = self.transition(|task, change| task.fail(outcome, change).into_any())?;
        typed(task)
    }

    /// → `completed`, or `failed` if `result` has `isError: true` ([`Task::finish`]).
    ///
    /// # Errors
    /// As for [`complete`](TaskHandle::complete).
    pub fn finish(self, result: JsonObject) -> Result<Finished, Error>
    where
        S: NonTerminal,
    {
        let (task, _) =
            self.transition(|task, change| AnyTask::from(task.finish(result, change)))?;
        match task {
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
        let (task, _) = self.transition(|task, change| task.cancel(change).into_any())?;
        typed(task)
    }
}

fn typed<T: TaskState>(task: AnyTask) -> Result<Task<T>, Error> {
    Task::try_from(task).map_err(|err| Error::Internal(err.to_string()))
}

/// The fields of a spent handle, to build the handle of the next status.
struct TaskHandleParts {
    registry: TaskRegistry,
    id: TaskId,
    key: u128,
    owner: Owner,
}

impl TaskHandleParts {
    fn into_handle<T: TaskState>(self) -> TaskHandle<T> {
        TaskHandle {
            registry: Some(self.registry),
            id: self.id,
            key: self.key,
            owner: self.owner,
            message: None,
            state: PhantomData,
        }
    }
}

impl<S: TaskState> Drop for TaskHandle<S> {
    fn drop(&mut self) {
        let Some(registry) = self.registry.take() else {
            return;
        };
        let id = self.id.to_string();
        // Fails the task only if it is still non-terminal; a finished or cancelled task is
        // left as it is.
        let _ = registry.apply_key(self.key, &self.owner, &id, |task, now| {
            if task.is_terminal() {
                // Unchanged: refuse, so that nothing is written, notified or woken.
                return Err(super::Refused::new(task, Error::Internal(String::new())));
            }
            Ok(task.apply(
                crate::any::Transition::Fail(Outcome::error(INTERNAL_ERROR, DROPPED)),
                Change::at(now).with_message(DROPPED),
            )?)
        });
    }
}

impl<S: TaskState> fmt::Debug for TaskHandle<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .field("status", &S::STATUS)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}
