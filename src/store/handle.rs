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
use crate::store::{Lease, Owner, StoreFuture, TaskStore, Update};
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
    held: Held<T>,
    message: Option<String>,
    state: PhantomData<fn() -> S>,
}

/// What a handle holds of its task, whatever its status: moved whole from a handle to the
/// next one by a transition, it fails the task when dropped while armed.
struct Held<T: TaskStore> {
    store: T,
    id: TaskId,
    /// The id as text, as the store's by-id operations take it.
    key: Box<str>,
    owner: Owner,
    /// The task's lease in a shared store, renewed while the handle lives.
    lease: Lease,
    /// Whether dropping fails the task: until a finishing move or `detach` spends it.
    armed: bool,
}

impl<T: TaskStore> TaskHandle<Working, T> {
    /// The handle of a task this instance claimed for its next attempt
    /// ([`TaskStore::claim`]): the claim's lease moves into it, so its writes are fenced by
    /// the attempt, and dropping it unfinished fails the task as for any handle (unless
    /// another instance claims it meanwhile).
    pub fn claimed(store: T, claim: crate::store::Claim) -> Self {
        Self::new(store, claim.task.id().clone(), claim.owner, claim.lease)
    }

    pub(crate) fn new(store: T, id: TaskId, owner: Owner, lease: Lease) -> Self {
        TaskHandle {
            held: Held {
                store,
                key: id.to_string().into_boxed_str(),
                id,
                owner,
                lease,
                armed: true,
            },
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
        &self.held.id
    }

    /// The owner the task is bound to.
    #[must_use]
    pub fn owner(&self) -> &Owner {
        &self.held.owner
    }

    /// The task as it is stored now.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if it expired or was removed.
    pub fn snapshot(&self) -> Result<AnyTask, Error> {
        self.held.store.get(&self.held.owner, &self.held.key)
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

    /// Resolves `Ok` once the requestor asked to cancel the task, or it was cancelled: a
    /// handler awaits it beside its work (`select!`) to stop early. Dropping it leaves
    /// nothing registered.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed;
    /// [`Error::IllegalTransition`] if another writer finished it; a shared store
    /// unreachable for its outage timeout as [`Error::Store`], never read as a cancel.
    pub fn cancelled(&self) -> StoreFuture<'_, ()> {
        let held = &self.held;
        held.store.wait_for_cancel_async(&held.owner, &held.key)
    }

    /// Changes the task's retention time in place (within the store's [`TtlPolicy`](crate::TtlPolicy)).
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed.
    pub fn set_ttl(&self, ttl: Option<u64>) -> Result<(), Error> {
        let held = &self.held;
        held.store.set_ttl(&held.owner, &held.key, ttl).map(drop)
    }

    /// Changes the task's suggested poll interval in place.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task expired or was removed.
    pub fn set_poll_interval(&self, poll_interval: Option<u64>) -> Result<(), Error> {
        let held = &self.held;
        held.store
            .set_poll_interval(&held.owner, &held.key, poll_interval)
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
        self.held.armed = false;
        std::mem::replace(&mut self.held.lease, Lease::none()).release();
        self.held.id.clone()
    }

    /// Applies a typed, non-finishing move (`require_input`, `resume`) through the store;
    /// the handle of the next status holds the task from then on. If the move is refused
    /// while the task is still unfinished (another writer moved it), the handle stays
    /// armed, so dropping it fails the task rather than stranding it.
    fn step<N: TaskState>(self, transition: Transition) -> Result<TaskHandle<N, T>, Error> {
        let TaskHandle {
            mut held, message, ..
        } = self;
        let update = Update::step(S::STATUS, transition, message).fenced(held.lease.attempt());
        match held.store.update(&held.owner, &held.key, update) {
            Ok(_) => Ok(TaskHandle {
                held,
                message: None,
                state: PhantomData,
            }),
            Err(error) => {
                if !matches!(error, Error::IllegalTransition { from, .. } if !from.is_terminal()) {
                    held.armed = false;
                }
                Err(error)
            }
        }
    }

    /// Applies a finishing move (legal from either unfinished status); the handle is spent.
    fn end(mut self, transition: Transition) -> Result<AnyTask, Error> {
        self.held.armed = false;
        let update = Update::end(transition, self.message.take()).fenced(self.held.lease.attempt());
        let held = &self.held;
        held.store.update(&held.owner, &held.key, update)
    }

    /// Hands the task over to another instance ([`TaskStore::hand_over`]: a graceful
    /// shutdown's move for a redeliverable task) and, if it was, spends this handle without
    /// a write: the next attempt runs elsewhere, and this handler's moves would be
    /// superseded anyway. Answers the task id; if the task was not handed over (it runs
    /// once, is not leased here, has no attempts left) the handle comes back, with the
    /// store's error if there was one, to finish or fail the task as before.
    ///
    /// # Errors
    /// The handle, and `Some(error)` if the store failed ([`Error::Store`]), or `None`
    /// if the task cannot be handed over.
    #[allow(clippy::result_large_err)]
    pub fn hand_over(mut self) -> Result<TaskId, (Self, Option<Error>)>
    where
        S: NonTerminal,
    {
        let held = &self.held;
        match held.store.hand_over(&held.owner, &held.key) {
            Ok(true) => {
                self.held.armed = false;
                // Ended, not released: the lease may be another instance's by now.
                drop(std::mem::replace(&mut self.held.lease, Lease::none()));
                Ok(self.held.id.clone())
            }
            Ok(false) => Err((self, None)),
            Err(error) => Err((self, Some(error))),
        }
    }

    /// The attempt this handle runs, for a redeliverable task (from 1); `None` for a task
    /// that runs once.
    #[must_use]
    pub fn attempt(&self) -> Option<u32> {
        self.held.lease.attempt()
    }

    /// Saves a checkpoint in the task: a small progress value (at most
    /// [`MAX_CHECKPOINT_BYTES`](crate::MAX_CHECKPOINT_BYTES) as JSON: a step, a cursor, the
    /// answers already consumed) that a later attempt of a redeliverable task reads back
    /// ([`Claim::checkpoint`](crate::Claim)), to resume from there instead of from zero.
    /// One write, never shown to clients, never told to subscribers; each replaces the
    /// last.
    ///
    /// # Errors
    /// [`Error::InvalidParams`] for a checkpoint over the limit (nothing is written);
    /// [`Error::Superseded`] if another instance runs the task now; as for the transitions
    /// if the task was cancelled, expired or removed meanwhile.
    pub fn checkpoint(&self, checkpoint: serde_json::Value) -> Result<(), Error>
    where
        S: NonTerminal,
    {
        let held = &self.held;
        let update = Update::checkpoint(checkpoint)?.fenced(held.lease.attempt());
        held.store.update(&held.owner, &held.key, update).map(drop)
    }

    /// Replaces the status message now (a progress note), without a transition.
    ///
    /// # Errors
    /// As for the transitions: the task was cancelled, expired, removed or moved meanwhile.
    pub fn set_status_message(&self, message: Option<String>) -> Result<(), Error>
    where
        S: NonTerminal,
    {
        let held = &self.held;
        held.store
            .update(
                &held.owner,
                &held.key,
                Update::message(S::STATUS, message).fenced(held.lease.attempt()),
            )
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
        self.step(Transition::RequireInput(requests))
    }

    /// `input_required` → `working`.
    ///
    /// # Errors
    /// As for [`require_input`](TaskHandle::require_input).
    pub fn resume(self) -> Result<TaskHandle<Working, T>, Error>
    where
        S: CanResume,
    {
        self.step(Transition::Resume)
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
        let held = &self.held;
        held.store.wait_for_input(&held.owner, &held.key, timeout)
    }

    /// Resolves once every input request is answered, with the answers:
    /// [`wait_for_input`](TaskHandle::wait_for_input) as a future, without a timeout (use
    /// the runtime's). Dropping it takes nothing.
    ///
    /// # Errors
    /// As for [`wait_for_input`](TaskHandle::wait_for_input), [`Error::Timeout`] aside; a
    /// shared store unreachable for its outage timeout as [`Error::Store`].
    pub fn wait_for_input_async(&self) -> StoreFuture<'_, InputResponses>
    where
        S: AwaitsInput,
    {
        let held = &self.held;
        held.store.wait_for_input_async(&held.owner, &held.key)
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
            other => Err(broken_contract(other.status(), "completed` or `failed")),
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

/// The finished task a store answered to a finishing move, in the status the move gives.
fn typed<S: TaskState>(task: AnyTask) -> Result<Task<S>, Error> {
    let status = task.status();
    Task::try_from(task).map_err(|_| broken_contract(status, S::STATUS.as_str()))
}

/// A store answered a finishing move with a task in another status: it did not apply the
/// update as [`TaskStore::update`] must (the backends of this crate never do). A fault of
/// the store, never read as the task's state.
fn broken_contract(answered: TaskStatus, expected: &str) -> Error {
    Error::store(format!(
        "the task store answered a `{answered}` task to a move to `{expected}`: it does not \
         apply updates as `TaskStore::update` must"
    ))
}

impl<T: TaskStore> Drop for Held<T> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.store.update(
                &self.owner,
                &self.key,
                Update::abandon(DROPPED).fenced(self.lease.attempt()),
            );
        }
    }
}

impl<S: TaskState, T: TaskStore> fmt::Debug for TaskHandle<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.held.id)
            .field("status", &S::STATUS)
            .field("owner", &self.held.owner)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::TaskRegistry;
    use crate::input::InputResponses;
    use crate::store::{Subscriber, SubscriptionId, TaskOrigin, TaskPage, TaskRequest, TtlPolicy};

    /// A store that breaks the contract of `update`: it answers the task as it was.
    #[derive(Debug, Clone, Default)]
    struct Liar(TaskRegistry);

    impl TaskStore for Liar {
        fn ttl_policy(&self) -> TtlPolicy {
            self.0.ttl_policy()
        }
        fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
            self.0.insert(owner, request)
        }
        fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
            self.0.get(owner, task_id)
        }
        fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
            self.0.origin(owner, task_id)
        }
        fn list(
            &self,
            owner: &Owner,
            cursor: Option<&str>,
            size: usize,
        ) -> Result<TaskPage, Error> {
            self.0.list(owner, cursor, size)
        }
        fn update(&self, owner: &Owner, task_id: &str, _: Update) -> Result<AnyTask, Error> {
            self.0.get(owner, task_id)
        }
        fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
            self.0.remove(owner, task_id)
        }
        fn wait(&self, o: &Owner, id: &str, t: Option<Duration>) -> Result<AnyTask, Error> {
            self.0.wait(o, id, t)
        }
        fn wait_for_input(
            &self,
            o: &Owner,
            id: &str,
            t: Option<Duration>,
        ) -> Result<InputResponses, Error> {
            self.0.wait_for_input(o, id, t)
        }
        fn wait_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, AnyTask> {
            self.0.wait_async(o, id)
        }
        fn wait_for_input_async<'a>(
            &'a self,
            o: &'a Owner,
            id: &'a str,
        ) -> StoreFuture<'a, InputResponses> {
            self.0.wait_for_input_async(o, id)
        }
        fn wait_for_cancel_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, ()> {
            self.0.wait_for_cancel_async(o, id)
        }
        fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
            self.0.add_subscriber(subscriber)
        }
        fn unsubscribe(&self, id: SubscriptionId) -> bool {
            self.0.unsubscribe(id)
        }
    }

    #[test]
    fn a_store_that_answers_another_status_is_a_store_error_never_a_state() {
        let store = Liar::default();
        let owner = Owner::new("alice");
        let (handle, _) = store
            .create(&owner, TaskRequest::new(1, "tools/call"))
            .unwrap();
        match handle.complete(JsonObject::new()) {
            Err(error @ Error::Store { .. }) => {
                let message = error.to_string();
                assert!(
                    message.contains("`working`") && message.contains("`completed`"),
                    "{message}"
                );
            }
            other => panic!("expected a store error, got {other:?}"),
        }
        let (handle, _) = store
            .create(&owner, TaskRequest::new(2, "tools/call"))
            .unwrap();
        assert!(matches!(
            handle.finish(JsonObject::new()),
            Err(Error::Store { .. })
        ));
    }
}
