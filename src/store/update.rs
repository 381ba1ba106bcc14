//! [`Update`]: one change to a stored task, decided by the core's state machine for every
//! backend, and the [`Step`] it comes to.

use serde_json::Value;

use crate::any::{AnyTask, Transition, TransitionError};
use crate::clock::Timestamp;
use crate::error::Error;
use crate::input::InputResponses;
use crate::jsonrpc::{INTERNAL_ERROR, JsonObject};
use crate::outcome::Outcome;
use crate::status::TaskStatus;
use crate::task::Change;

/// What an [`Update`] comes to, applied to the stored task at one moment.
///
/// A backend applies an update in one atomic step: it reads the task, calls
/// [`Update::apply`], and writes the answer back only if the task did not change
/// meanwhile (under a lock, or with a compare-and-set).
#[derive(Debug)]
pub enum Step {
    /// Store this task and tell subscribers: something on the wire changed.
    Changed(AnyTask),
    /// Store this task without telling subscribers and with its `lastUpdatedAt` as stored
    /// (nothing on the wire changed: a checkpoint, a cancel request), and wake its waiters.
    Quiet(AnyTask),
    /// Nothing to store, notify or wake: this is the task as it was.
    Unchanged(AnyTask),
    /// The update is refused with this error; the task is as it was.
    Refused(AnyTask, Error),
}

impl From<Result<AnyTask, TransitionError>> for Step {
    fn from(result: Result<AnyTask, TransitionError>) -> Self {
        match result {
            Ok(task) => Step::Changed(task),
            Err(err) => {
                let error = Error::from(&err);
                Step::Refused(*err.task, error)
            }
        }
    }
}

/// One change to a stored task, by id: what [`TaskStore::update`](crate::TaskStore::update)
/// applies. Built only through its constructors, which check what can be checked without
/// the task (so a `completed` status without a result never reaches a store).
///
/// The state machine is the core's ([`AnyTask::apply`]); [`Update::apply`] is the one place
/// that decides an update against a stored task, for every backend.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "an update does nothing until a store applies it"]
pub struct Update {
    op: Op,
    /// The attempt of the handler that writes, for a redeliverable task's handle: the
    /// update is refused ([`Error::Superseded`]) once the task runs another attempt.
    fence: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Cancel(Option<String>),
    Status(TaskStatus, Transition, Option<String>),
    Result(Transition),
    Respond(JsonObject),
    RequestCancel,
    Ttl(Option<u64>),
    PollInterval(Option<u64>),
    /// A typed handle's step from exactly `from`.
    Step(TaskStatus, Transition, Option<String>),
    /// A typed handle's status message, from exactly `from`.
    Message(TaskStatus, Option<String>),
    /// A typed handle's finishing move, from either unfinished status.
    End(Transition, Option<String>),
    /// The handle was dropped before its task finished.
    Abandon(String),
    /// A handler's checkpoint, from an unfinished status.
    Checkpoint(Value),
    /// Another instance takes the task on for its next attempt.
    Claim,
}

impl From<Op> for Update {
    fn from(op: Op) -> Self {
        Update { op, fence: None }
    }
}

impl Update {
    /// `tasks/cancel`: the task becomes `cancelled` now. Refused with
    /// [`Error::AlreadyTerminal`] (`-32602`, holding the task) if it is already terminal.
    pub fn cancel(status_message: Option<String>) -> Self {
        Update::from(Op::Cancel(status_message))
    }

    /// The SDKs' `updateTaskStatus`: move to `status` with `status_message` (the same
    /// status with a new message updates a non-terminal task's message).
    ///
    /// # Errors
    /// [`Error::InvalidParams`] for `completed` or `failed`: they need a result
    /// ([`Update::result`]).
    pub fn status(status: TaskStatus, status_message: Option<String>) -> Result<Self, Error> {
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
        Ok(Update::from(Op::Status(status, transition, status_message)))
    }

    /// The SDKs' `storeTaskResult`: the terminal `status` with its `outcome`, which can
    /// never be overwritten afterwards.
    ///
    /// # Errors
    /// [`Error::InvalidParams`] for a status other than `completed` or `failed`, a
    /// `completed` error or `isError` result, or a `failed` result without `isError: true`.
    pub fn result(status: TaskStatus, outcome: Outcome) -> Result<Self, Error> {
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
        Ok(Update::from(Op::Result(transition)))
    }

    /// Answers to input requests, by wire key. Answers to unknown or answered keys, answers
    /// that are not objects, and answers to a task no longer waiting are ignored.
    pub fn respond(responses: JsonObject) -> Self {
        Update::from(Op::Respond(responses))
    }

    /// The tasks extension's cooperative `tasks/cancel`: sets the cancel-requested flag of
    /// an unfinished task; a terminal task is left as it is.
    pub fn request_cancel() -> Self {
        Update::from(Op::RequestCancel)
    }

    /// A new retention time (already bounded by the store's policy).
    pub fn ttl(ttl: Option<u64>) -> Self {
        Update::from(Op::Ttl(ttl))
    }

    /// A new suggested poll interval.
    pub fn poll_interval(poll_interval: Option<u64>) -> Self {
        Update::from(Op::PollInterval(poll_interval))
    }

    /// A typed handle's non-finishing `transition` (`require_input`, `resume`), legal only
    /// if the task is still in `from`.
    pub(crate) fn step(from: TaskStatus, transition: Transition, message: Option<String>) -> Self {
        Update::from(Op::Step(from, transition, message))
    }

    /// A typed handle's status message, legal only if the task is still in `from`.
    pub(crate) fn message(from: TaskStatus, message: Option<String>) -> Self {
        Update::from(Op::Message(from, message))
    }

    /// A typed handle's finishing move, legal from either unfinished status (so that a
    /// status moved by id meanwhile does not strand the task).
    pub(crate) fn end(transition: Transition, message: Option<String>) -> Self {
        Update::from(Op::End(transition, message))
    }

    /// The status a typed handle's finishing move leads to (`None` for any other update):
    /// such a write carries work already done, so a backend that can fail transiently
    /// retries it rather than lose it.
    #[must_use]
    pub fn finishing_target(&self) -> Option<TaskStatus> {
        match &self.op {
            Op::End(transition, _) => Some(transition.target()),
            _ => None,
        }
    }

    /// Fails an unfinished task with `-32603` and `message` (its handle was dropped, or its
    /// lease lapsed); a finished task is left alone.
    pub fn abandon(message: &str) -> Self {
        Update::from(Op::Abandon(message.to_owned()))
    }

    /// A handler's checkpoint: a small progress value saved in the unfinished task (never
    /// shown on the wire, never told to subscribers, and leaving the task's
    /// `lastUpdatedAt` as it was: the task a client sees does not change), which a later
    /// attempt reads back ([`Claim::checkpoint`](crate::Claim)).
    ///
    /// # Errors
    /// [`Error::InvalidParams`] for a checkpoint over
    /// [`MAX_CHECKPOINT_BYTES`](crate::MAX_CHECKPOINT_BYTES) serialized.
    pub fn checkpoint(checkpoint: Value) -> Result<Self, Error> {
        let size = serde_json::to_vec(&checkpoint).map_or(usize::MAX, |bytes| bytes.len());
        if size > crate::store::MAX_CHECKPOINT_BYTES {
            return Err(Error::invalid_params(format!(
                "a checkpoint of {size} bytes is over the limit of {} bytes: save a smaller \
                 progress value (a position, a step), not the work itself",
                crate::store::MAX_CHECKPOINT_BYTES
            )));
        }
        Ok(Update::from(Op::Checkpoint(checkpoint)))
    }

    /// A claim of a redeliverable task for its next attempt, decided for the backend that
    /// found its instance gone (its lease lapsed, or it handed the task over): the attempt
    /// moves on, a task waiting for input is resumed (its unanswered requests withdrawn:
    /// the next attempt asks again, under new keys), and the status message says so. The
    /// status stays unfinished. Refused ([`Error::IllegalTransition`]) for a finished task,
    /// one that is not redeliverable, or one whose attempts ran out.
    pub fn claim() -> Self {
        Update::from(Op::Claim)
    }

    /// The same update, written by the handler of `attempt` (a redeliverable task's
    /// handle): refused with [`Error::Superseded`] if the task runs another attempt now.
    pub(crate) fn fenced(mut self, attempt: Option<u32>) -> Self {
        self.fence = attempt;
        self
    }

    /// Decides this update against `task` (as stored, visible to the caller) at `now`.
    pub fn apply(self, task: AnyTask, now: Timestamp) -> Step {
        if let (Some(attempt), Some(attempts)) = (self.fence, task.attempts())
            && attempts.attempt() != attempt
            && !task.is_terminal()
        {
            let error = Error::Superseded {
                task_id: task.id().to_string(),
                attempt,
                current: attempts.attempt(),
            };
            return Step::Refused(task, error);
        }
        match self.op {
            Op::Cancel(message) => {
                if task.is_terminal() {
                    let error = Error::AlreadyTerminal {
                        task: Box::new(task.clone()),
                    };
                    return Step::Refused(task, error);
                }
                task.apply(
                    Transition::Cancel,
                    Change::at(now).with_optional_message(message),
                )
                .into()
            }
            Op::Status(status, transition, message) => {
                let mut task = task;
                if task.status() == status {
                    return match task.set_status_message(message, now) {
                        Ok(()) => Step::Changed(task),
                        Err(err) => Err(err).into(),
                    };
                }
                task.apply(transition, Change::at(now).with_optional_message(message))
                    .into()
            }
            Op::Result(transition) => task.apply(transition, now).into(),
            Op::Respond(responses) => match task {
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
            },
            Op::RequestCancel => match task {
                AnyTask::Working(mut task) => {
                    task.request_cancel();
                    Step::Quiet(task.into_any())
                }
                AnyTask::InputRequired(mut task) => {
                    task.request_cancel();
                    Step::Quiet(task.into_any())
                }
                finished => Step::Unchanged(finished),
            },
            Op::Ttl(ttl) => {
                let mut task = task;
                task.set_ttl(ttl, now);
                Step::Changed(task)
            }
            Op::PollInterval(poll_interval) => {
                let mut task = task;
                task.set_poll_interval(poll_interval, now);
                Step::Changed(task)
            }
            Op::Step(from, transition, message) => {
                if task.status() != from {
                    let error = handle_conflict(&task.id().to_string(), &task, transition.target());
                    return Step::Refused(task, error);
                }
                task.apply(transition, Change::at(now).with_optional_message(message))
                    .into()
            }
            Op::Message(from, message) => {
                if task.status() != from {
                    let error = handle_conflict(&task.id().to_string(), &task, from);
                    return Step::Refused(task, error);
                }
                let mut task = task;
                match task.set_status_message(message, now) {
                    Ok(()) => Step::Changed(task),
                    Err(err) => Err(err).into(),
                }
            }
            Op::End(transition, message) => {
                if task.is_terminal() {
                    let error = handle_conflict(&task.id().to_string(), &task, transition.target());
                    return Step::Refused(task, error);
                }
                task.apply(transition, Change::at(now).with_optional_message(message))
                    .into()
            }
            Op::Abandon(message) => {
                if task.is_terminal() {
                    return Step::Unchanged(task);
                }
                task.apply(
                    Transition::Fail(Outcome::error(INTERNAL_ERROR, message.as_str())),
                    Change::at(now).with_message(message),
                )
                .into()
            }
            Op::Checkpoint(checkpoint) => match task {
                AnyTask::Working(mut task) => {
                    task.set_checkpoint(checkpoint);
                    Step::Quiet(task.into_any())
                }
                AnyTask::InputRequired(mut task) => {
                    task.set_checkpoint(checkpoint);
                    Step::Quiet(task.into_any())
                }
                finished => {
                    let error =
                        handle_conflict(&finished.id().to_string(), &finished, finished.status());
                    Step::Refused(finished, error)
                }
            },
            Op::Claim => {
                let id = task.id().to_string();
                let refuse = |task: AnyTask, why: &str| {
                    let error = Error::IllegalTransition {
                        task_id: id.clone(),
                        from: task.status(),
                        to: TaskStatus::Working,
                        message: format!(
                            "task `{}` cannot run again: {why}",
                            crate::error::shorten(&id)
                        ),
                    };
                    Step::Refused(task, error)
                };
                let mut working = match task {
                    AnyTask::Working(task) => task,
                    AnyTask::InputRequired(task) => task.resume(now),
                    finished => return refuse(finished, "it is finished"),
                };
                let Some(attempts) = working.next_attempt() else {
                    let why = if working.attempts().is_some() {
                        "its attempts ran out"
                    } else {
                        "it was not created redeliverable"
                    };
                    return refuse(working.into_any(), why);
                };
                let message = format!("resumed on another server instance: {attempts}");
                let mut task = working.into_any();
                match task.set_status_message(Some(message), now) {
                    Ok(()) => Step::Changed(task),
                    Err(err) => Err(err).into(),
                }
            }
        }
    }
}

/// What a handler waiting for input gets from `task` now: the answers (taken out of the
/// task, which the backend then stores), an error if it can no longer get them, or `None`
/// to keep waiting. The decision of every backend's
/// [`wait_for_input`](crate::TaskStore::wait_for_input).
pub fn take_answers(task: &mut AnyTask, task_id: &str) -> Option<Result<InputResponses, Error>> {
    match task {
        AnyTask::InputRequired(task) if task.cancel_requested() => {
            Some(Err(Error::CancelRequested {
                task_id: task_id.to_owned(),
            }))
        }
        AnyTask::InputRequired(task) if task.all_answered() => Some(Ok(task.take_answers())),
        // Nothing outstanding and nothing to take: no answer can ever come.
        AnyTask::InputRequired(task) if task.input_requests().is_empty() => {
            Some(Err(Error::NothingToWaitFor {
                task_id: task_id.to_owned(),
            }))
        }
        AnyTask::InputRequired(_) => None,
        other => Some(Err(handle_conflict(
            task_id,
            other,
            TaskStatus::InputRequired,
        ))),
    }
}

/// Why a typed handle's move to `wanted` does not fit the stored task `current`:
/// [`Error::TaskCancelled`] if it was cancelled, else [`Error::IllegalTransition`].
#[must_use]
pub fn handle_conflict(task_id: &str, current: &AnyTask, wanted: TaskStatus) -> Error {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::id::TaskId;
    use crate::input::{InputRequest, InputRequests};
    use crate::task::Task;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    /// A task waiting for the answer to one request, `confirm`.
    fn waiting(at: Timestamp) -> AnyTask {
        let ask = InputRequest::elicitation(object(json!({"message": "go on?"})));
        Task::new(TaskId::random(), at)
            .require_input(InputRequests::new().with("confirm", ask), at)
            .into_any()
    }

    #[test]
    fn a_response_that_answers_nothing_changes_nothing() {
        let start = Timestamp::from_unix_millis(1_000_000);
        let later = start.plus_millis(5_000);
        for responses in [
            json!({}),
            json!({"unknown": {"action": "accept"}}),
            json!({"confirm": "not an object"}),
            json!({"confirm": null, "other": {"action": "accept"}}),
        ] {
            let task = waiting(start);
            match Update::respond(object(responses.clone())).apply(task.clone(), later) {
                Step::Unchanged(after) => assert_eq!(after, task, "{responses}"),
                step => panic!("{responses} answered nothing but gave {step:?}"),
            }
        }
    }

    #[test]
    fn a_response_that_answers_is_a_change() {
        let start = Timestamp::from_unix_millis(1_000_000);
        let later = start.plus_millis(5_000);
        let responses = object(json!({"confirm": {"action": "accept"}, "unknown": {}}));
        match Update::respond(responses).apply(waiting(start), later) {
            Step::Changed(after) => {
                assert_eq!(after.status(), TaskStatus::InputRequired);
                assert!(after.input_requests().is_some_and(InputRequests::is_empty));
                assert_eq!(after.last_updated_at(), later);
            }
            step => panic!("an answer gave {step:?}"),
        }
    }

    #[test]
    fn a_response_to_a_task_not_waiting_changes_nothing() {
        let start = Timestamp::from_unix_millis(1_000_000);
        let working = Task::new(TaskId::random(), start).into_any();
        let responses = object(json!({"confirm": {"action": "accept"}}));
        match Update::respond(responses).apply(working.clone(), start.plus_millis(1)) {
            Step::Unchanged(after) => assert_eq!(after, working),
            step => panic!("a working task gave {step:?}"),
        }
    }

    #[test]
    fn a_handle_message_applies_only_in_the_status_the_handle_knows() {
        let start = Timestamp::from_unix_millis(1_000_000);
        let later = start.plus_millis(5);
        let working = Task::new(TaskId::random(), start).into_any();
        let message = || Some("halfway".to_owned());
        match Update::message(TaskStatus::Working, message()).apply(working.clone(), later) {
            Step::Changed(after) => {
                assert_eq!(after.status_message(), Some("halfway"));
                assert_eq!(after.last_updated_at(), later);
            }
            step => panic!("a message in the expected status gave {step:?}"),
        }
        let update = Update::message(TaskStatus::InputRequired, message());
        match update.apply(working.clone(), later) {
            Step::Refused(after, Error::IllegalTransition { from, .. }) => {
                assert_eq!(after, working);
                assert_eq!(from, TaskStatus::Working);
            }
            step => panic!("a message from a status the task left gave {step:?}"),
        }
        let cancelled = match Update::cancel(None).apply(working, later) {
            Step::Changed(cancelled) => cancelled,
            step => panic!("cancel gave {step:?}"),
        };
        match Update::message(TaskStatus::Working, message()).apply(cancelled.clone(), later) {
            Step::Refused(after, Error::TaskCancelled { .. }) => assert_eq!(after, cancelled),
            step => panic!("a message to a cancelled task gave {step:?}"),
        }
    }

    fn stored(step: Step) -> AnyTask {
        match step {
            Step::Changed(task) | Step::Quiet(task) => task,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn a_claim_moves_the_attempt_on_and_fences_the_old_holder_out() {
        let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
        let task = Task::new(TaskId::random(), t0).with_attempts(3).into_any();
        assert_eq!(
            task.attempts().map(|a| (a.attempt(), a.max())),
            Some((1, 3))
        );
        let saved = stored(
            Update::checkpoint(json!({"step": 4}))
                .unwrap()
                .fenced(Some(1))
                .apply(task, t0.plus_millis(1)),
        );
        assert_eq!(saved.checkpoint(), Some(&json!({"step": 4})));
        assert_eq!(
            saved.status_message(),
            None,
            "a checkpoint is not on the wire"
        );

        let claimed = stored(Update::claim().apply(saved, t0.plus_millis(2)));
        assert_eq!(claimed.status(), TaskStatus::Working);
        assert_eq!(claimed.attempts().map(|a| a.attempt()), Some(2));
        assert_eq!(
            claimed.checkpoint(),
            Some(&json!({"step": 4})),
            "kept for attempt 2"
        );
        assert_eq!(
            claimed.status_message(),
            Some("resumed on another server instance: attempt 2: 0 of 3 spent without progress"),
            "attempt 1 saved progress: it did not count"
        );
        // The old holder (attempt 1) can no longer finish or checkpoint the task.
        for late in [
            Update::end(Transition::Complete(JsonObject::new()), None).fenced(Some(1)),
            Update::checkpoint(json!(1)).unwrap().fenced(Some(1)),
            Update::abandon("dropped").fenced(Some(1)),
        ] {
            match late.apply(claimed.clone(), t0.plus_millis(3)) {
                Step::Refused(
                    _,
                    Error::Superseded {
                        attempt: 1,
                        current: 2,
                        ..
                    },
                ) => {}
                other => panic!("the old holder's write went through: {other:?}"),
            }
        }
        // The new holder's does.
        let done = stored(
            Update::end(Transition::Complete(JsonObject::new()), None)
                .fenced(Some(2))
                .apply(claimed, t0.plus_millis(4)),
        );
        assert_eq!(done.status(), TaskStatus::Completed);
    }

    #[test]
    fn a_claim_resumes_a_task_waiting_for_input_and_stops_at_the_bound() {
        let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
        let requests =
            InputRequests::new().with("confirm", InputRequest::elicitation(JsonObject::new()));
        let task = Task::new(TaskId::random(), t0)
            .with_attempts(2)
            .require_input(requests.clone(), t0)
            .into_any();
        let claimed = stored(Update::claim().apply(task, t0.plus_millis(1)));
        assert_eq!(
            claimed.status(),
            TaskStatus::Working,
            "asked again by the next run"
        );
        assert_eq!(claimed.attempts().map(|a| a.attempt()), Some(2));
        // Asking again gives a new key: keys stay unique across attempts.
        let AnyTask::Working(working) = claimed.clone() else {
            panic!("working")
        };
        let again = working
            .require_input(requests, t0.plus_millis(2))
            .into_any();
        let keys: Vec<&str> = again
            .input_requests()
            .unwrap()
            .iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["confirm-2"]);
        // Two of two: no third attempt.
        assert!(matches!(
            Update::claim().apply(claimed, t0.plus_millis(3)),
            Step::Refused(_, Error::IllegalTransition { .. })
        ));
        // A task that runs once is never claimed, nor a finished one.
        let once = Task::new(TaskId::random(), t0).into_any();
        assert!(matches!(
            Update::claim().apply(once, t0),
            Step::Refused(_, Error::IllegalTransition { .. })
        ));
        let finished = Task::new(TaskId::random(), t0)
            .with_attempts(3)
            .cancel(t0)
            .into_any();
        assert!(matches!(
            Update::claim().apply(finished, t0),
            Step::Refused(_, Error::IllegalTransition { .. })
        ));
    }

    #[test]
    fn only_a_new_checkpoint_is_progress_and_spares_its_attempt() {
        let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
        let save = |task: AnyTask, value: Value, attempt: u32| {
            stored(
                Update::checkpoint(value)
                    .unwrap()
                    .fenced(Some(attempt))
                    .apply(task, t0.plus_millis(1)),
            )
        };
        let claim = |task: AnyTask| stored(Update::claim().apply(task, t0.plus_millis(2)));
        let spent = |task: &AnyTask| task.attempts().map(|a| (a.attempt(), a.spent()));
        let task = Task::new(TaskId::random(), t0).with_attempts(2).into_any();
        // Attempt 1 saves {"step": 1}: progress, it does not count.
        let saved = save(task, json!({"step": 1}), 1);
        assert!(saved.attempts().is_some_and(|a| a.progressed()));
        assert_eq!(
            saved.last_updated_at(),
            t0,
            "a checkpoint leaves lastUpdatedAt"
        );
        let second = claim(saved);
        assert_eq!(spent(&second), Some((2, 0)));
        // Attempt 2 saves the checkpoint it started from again: no progress, it counts.
        let same = save(second, json!({"step": 1}), 2);
        assert!(same.attempts().is_some_and(|a| !a.progressed()));
        let third = claim(same);
        assert_eq!(spent(&third), Some((3, 1)));
        assert!(third.status_message().is_some_and(|m| m.contains("1 of 2")));
        // Attempt 3 saves nothing: the second attempt counted, none is left.
        assert!(matches!(
            Update::claim().apply(third.clone(), t0.plus_millis(3)),
            Step::Refused(_, Error::IllegalTransition { .. })
        ));
        // Saving something new, it may run again.
        let fourth = claim(save(third, json!({"step": 2}), 3));
        assert_eq!(spent(&fourth), Some((4, 1)));
    }

    #[test]
    fn a_checkpoint_over_the_limit_is_refused_before_any_store() {
        assert_eq!(crate::store::MAX_CHECKPOINT_BYTES, 65_536, "64 KiB");
        // A JSON string takes its quotes: this one is the limit exactly, then one over.
        let at = |bytes: usize| Value::String("x".repeat(bytes - 2));
        assert!(Update::checkpoint(at(crate::store::MAX_CHECKPOINT_BYTES)).is_ok());
        assert!(matches!(
            Update::checkpoint(at(crate::store::MAX_CHECKPOINT_BYTES + 1)),
            Err(Error::InvalidParams { .. })
        ));
        assert!(Update::checkpoint(json!({"ok": true})).is_ok());
    }
}
