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
    /// Store this task without telling subscribers (nothing on the wire changed), and
    /// wake its waiters.
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
pub struct Update(Op);

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
}

impl Update {
    /// `tasks/cancel`: the task becomes `cancelled` now. Refused with
    /// [`Error::AlreadyTerminal`] (`-32602`, holding the task) if it is already terminal.
    pub fn cancel(status_message: Option<String>) -> Self {
        Update(Op::Cancel(status_message))
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
        Ok(Update(Op::Status(status, transition, status_message)))
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
        Ok(Update(Op::Result(transition)))
    }

    /// Answers to input requests, by wire key. Answers to unknown or answered keys, answers
    /// that are not objects, and answers to a task no longer waiting are ignored.
    pub fn respond(responses: JsonObject) -> Self {
        Update(Op::Respond(responses))
    }

    /// The tasks extension's cooperative `tasks/cancel`: sets the cancel-requested flag of
    /// an unfinished task; a terminal task is left as it is.
    pub fn request_cancel() -> Self {
        Update(Op::RequestCancel)
    }

    /// A new retention time (already bounded by the store's policy).
    pub fn ttl(ttl: Option<u64>) -> Self {
        Update(Op::Ttl(ttl))
    }

    /// A new suggested poll interval.
    pub fn poll_interval(poll_interval: Option<u64>) -> Self {
        Update(Op::PollInterval(poll_interval))
    }

    /// A typed handle's non-finishing `transition` (`require_input`, `resume`), legal only
    /// if the task is still in `from`.
    pub(crate) fn step(from: TaskStatus, transition: Transition, message: Option<String>) -> Self {
        Update(Op::Step(from, transition, message))
    }

    /// A typed handle's status message, legal only if the task is still in `from`.
    pub(crate) fn message(from: TaskStatus, message: Option<String>) -> Self {
        Update(Op::Message(from, message))
    }

    /// A typed handle's finishing move, legal from either unfinished status (so that a
    /// status moved by id meanwhile does not strand the task).
    pub(crate) fn end(transition: Transition, message: Option<String>) -> Self {
        Update(Op::End(transition, message))
    }

    /// The status a typed handle's finishing move leads to (`None` for any other update):
    /// such a write carries work already done, so a backend that can fail transiently
    /// retries it rather than lose it.
    #[must_use]
    pub fn finishing_target(&self) -> Option<TaskStatus> {
        match &self.0 {
            Op::End(transition, _) => Some(transition.target()),
            _ => None,
        }
    }

    /// Fails an unfinished task with `-32603` and `message` (its handle was dropped, or its
    /// lease lapsed); a finished task is left alone.
    pub fn abandon(message: &str) -> Self {
        Update(Op::Abandon(message.to_owned()))
    }

    /// Decides this update against `task` (as stored, visible to the caller) at `now`.
    pub fn apply(self, task: AnyTask, now: Timestamp) -> Step {
        match self.0 {
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
                    task.request_cancel(now);
                    Step::Quiet(task.into_any())
                }
                AnyTask::InputRequired(mut task) => {
                    task.request_cancel(now);
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
}
