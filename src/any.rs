//! [`AnyTask`]: a task of any status, the erased form that is stored and serialized.

use std::fmt;

use crate::clock::Timestamp;
use crate::id::TaskId;
use crate::input::InputRequests;
use crate::jsonrpc::JsonObject;
use crate::outcome::{Kept, Outcome};
use crate::status::{
    Cancelled, Completed, Failed, InputRequired, NonTerminal, TaskState, TaskStatus, Working,
};
use crate::task::{Change, Task};

/// A task of any status.
///
/// Erasing is infallible (`AnyTask::from(task)` or [`Task::into_any`]); getting a typed task
/// back is checked (`Task::<Working>::try_from(any)`), and a mismatch hands the original
/// back in [`StatusMismatch`]. Tasks whose id arrives from the wire move through
/// [`AnyTask::apply`], which checks each move against the spec's table at run time.
///
/// Its serde form is exactly the protocol `Task` object of the 2025-11-25 dialect (see
/// [`protocol`](crate::protocol)); a terminal task's result is not part of that object.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyTask {
    /// A task in `working`.
    Working(Task<Working>),
    /// A task in `input_required`.
    InputRequired(Task<InputRequired>),
    /// A task in `completed`.
    Completed(Task<Completed>),
    /// A task in `failed`.
    Failed(Task<Failed>),
    /// A task in `cancelled`.
    Cancelled(Task<Cancelled>),
}

/// Applies the same expression to the task inside any variant.
macro_rules! each {
    ($any:expr, $task:ident => $body:expr) => {
        match $any {
            AnyTask::Working($task) => $body,
            AnyTask::InputRequired($task) => $body,
            AnyTask::Completed($task) => $body,
            AnyTask::Failed($task) => $body,
            AnyTask::Cancelled($task) => $body,
        }
    };
}

/// A move requested at run time, for [`AnyTask::apply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// `working` → `input_required`, waiting for these requests.
    RequireInput(InputRequests),
    /// `input_required` → `working`.
    Resume,
    /// → `completed` with this result.
    Complete(JsonObject),
    /// → `failed` with this outcome.
    Fail(Outcome),
    /// → `cancelled`.
    Cancel,
}

impl Transition {
    /// The status this move leads to.
    #[must_use]
    pub fn target(&self) -> TaskStatus {
        match self {
            Transition::RequireInput(_) => TaskStatus::InputRequired,
            Transition::Resume => TaskStatus::Working,
            Transition::Complete(_) => TaskStatus::Completed,
            Transition::Fail(_) => TaskStatus::Failed,
            Transition::Cancel => TaskStatus::Cancelled,
        }
    }
}

impl AnyTask {
    /// The task id.
    #[must_use]
    pub fn id(&self) -> &TaskId {
        each!(self, task => task.id())
    }

    /// The current status.
    #[must_use]
    pub fn status(&self) -> TaskStatus {
        each!(self, task => task.status())
    }

    /// Whether the status is terminal.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        self.status().is_terminal()
    }

    /// The status message, if any.
    #[must_use]
    pub fn status_message(&self) -> Option<&str> {
        each!(self, task => task.status_message())
    }

    /// When the task was created.
    #[must_use]
    pub fn created_at(&self) -> Timestamp {
        each!(self, task => task.created_at())
    }

    /// When the task last changed.
    #[must_use]
    pub fn last_updated_at(&self) -> Timestamp {
        each!(self, task => task.last_updated_at())
    }

    /// Sets when the task last changed, as a store that keeps time itself recorded it
    /// (never earlier than the time the task already shows).
    pub(crate) fn set_last_updated_at(&mut self, at: Timestamp) {
        each!(self, task => task.last_updated_at = task.last_updated_at.max(at));
    }

    /// The retention time in milliseconds from creation; `None` is unlimited.
    #[must_use]
    pub fn ttl(&self) -> Option<u64> {
        each!(self, task => task.ttl())
    }

    /// The suggested polling interval in milliseconds, if any.
    #[must_use]
    pub fn poll_interval(&self) -> Option<u64> {
        each!(self, task => task.poll_interval())
    }

    /// When the retention time ends; `None` if unlimited.
    #[must_use]
    pub fn expires_at(&self) -> Option<Timestamp> {
        each!(self, task => task.expires_at())
    }

    /// Whether the retention time has ended at `now`.
    #[must_use]
    pub fn is_expired(&self, now: Timestamp) -> bool {
        each!(self, task => task.is_expired(now))
    }

    /// The input requests of an `input_required` task.
    #[must_use]
    pub fn input_requests(&self) -> Option<&InputRequests> {
        match self {
            AnyTask::InputRequired(task) => Some(task.input_requests()),
            _ => None,
        }
    }

    /// The stored outcome of a `completed` or `failed` task (`None` for other statuses and
    /// for tasks read from a peer's `Task` object, which never carries it).
    #[must_use]
    pub fn outcome(&self) -> Option<&Outcome> {
        self.kept().map(Kept::get)
    }

    /// The result of a `completed` or `failed` task ([`Outcome::Result`]) as JSON text: the
    /// text [`serde_json::to_string`] writes for it. A copy that keeps its result as text
    /// (as a [`TaskRegistry`](crate::TaskRegistry)'s copies do) lends it without reading
    /// it back; any other is printed. `None` for an error outcome and where
    /// [`outcome`](Self::outcome) is `None`.
    ///
    /// For an answer that shows the result as it is, this is cheaper than
    /// [`outcome`](Self::outcome), which reads the text back into a map.
    #[must_use]
    pub fn result_json(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.kept().and_then(Kept::result_json)
    }

    /// What a finished task keeps of its outcome.
    fn kept(&self) -> Option<&Kept> {
        match self {
            AnyTask::Completed(task) => task.data.as_ref(),
            AnyTask::Failed(task) => task.data.as_ref(),
            _ => None,
        }
    }

    /// Keeps a finished task's result as its JSON text only, for a store's own copy
    /// ([`Kept::compact`]): its copies read it back when asked.
    pub(crate) fn compact_outcome(&mut self) {
        if let AnyTask::Completed(Task {
            data: Some(kept), ..
        })
        | AnyTask::Failed(Task {
            data: Some(kept), ..
        }) = self
        {
            kept.compact();
        }
    }

    /// Whether this copy holds its result as text only ([`Self::compact_outcome`]).
    #[cfg(test)]
    pub(crate) fn outcome_is_text(&self) -> bool {
        self.kept().is_some_and(Kept::is_text)
    }

    /// The attempts of a redeliverable task ([`Task::attempts`]).
    #[must_use]
    pub fn attempts(&self) -> Option<crate::store::Attempts> {
        each!(self, task => task.attempts())
    }

    /// The trace context of the request that created it ([`Task::trace_context`]).
    #[must_use]
    pub fn trace_context(&self) -> Option<&crate::TraceContext> {
        each!(self, task => task.trace_context())
    }

    /// The tool it runs, if its creator named one ([`Task::tool`]).
    #[must_use]
    pub fn tool(&self) -> Option<&str> {
        each!(self, task => task.tool())
    }

    /// The last checkpoint of its handler ([`Task::checkpoint`]).
    #[must_use]
    pub fn checkpoint(&self) -> Option<&serde_json::Value> {
        each!(self, task => task.checkpoint())
    }

    /// Whether the requestor asked to cancel this task ([`Task::cancel_requested`]).
    #[must_use]
    pub fn cancel_requested(&self) -> bool {
        each!(self, task => task.cancel_requested())
    }

    /// Changes the retention time ([`Task::set_ttl`]).
    pub fn set_ttl(&mut self, ttl: Option<u64>, at: Timestamp) {
        each!(self, task => task.set_ttl(ttl, at))
    }

    /// Changes the suggested polling interval ([`Task::set_poll_interval`]).
    pub fn set_poll_interval(&mut self, poll_interval: Option<u64>, at: Timestamp) {
        each!(self, task => task.set_poll_interval(poll_interval, at))
    }

    /// Borrows the typed task if it has status `S`.
    #[must_use]
    pub fn as_task<S: TaskState>(&self) -> Option<&Task<S>> {
        S::peek(self)
    }

    /// Replaces the status message of a non-terminal task.
    ///
    /// # Errors
    /// [`TransitionError`] naming the terminal status if the task is terminal; the task is
    /// unchanged.
    pub fn set_status_message(
        &mut self,
        message: Option<String>,
        at: Timestamp,
    ) -> Result<(), TransitionError> {
        match self {
            AnyTask::Working(task) => task.set_status_message(message, at),
            AnyTask::InputRequired(task) => task.set_status_message(message, at),
            terminal => {
                return Err(TransitionError {
                    to: terminal.status(),
                    task: Box::new(terminal.clone()),
                });
            }
        }
        Ok(())
    }

    /// Applies a move requested at run time, checked against the spec's table.
    ///
    /// # Errors
    /// [`TransitionError`] for a move the spec forbids (from a terminal status, or to the
    /// status the task already has); it hands the unchanged task back.
    pub fn apply(
        self,
        transition: Transition,
        change: impl Into<Change>,
    ) -> Result<AnyTask, TransitionError> {
        let change = change.into();
        match (self, transition) {
            (AnyTask::Working(task), Transition::RequireInput(requests)) => {
                Ok(task.require_input(requests, change).into_any())
            }
            (AnyTask::InputRequired(task), Transition::Resume) => {
                Ok(task.resume(change).into_any())
            }
            (AnyTask::Working(task), transition) => end(task, transition, change),
            (AnyTask::InputRequired(task), transition) => end(task, transition, change),
            (task, transition) => Err(TransitionError {
                to: transition.target(),
                task: Box::new(task),
            }),
        }
    }
}

/// Applies a terminal move (or refuses a same-status one) to a non-terminal task.
fn end<S: NonTerminal>(
    task: Task<S>,
    transition: Transition,
    change: Change,
) -> Result<AnyTask, TransitionError> {
    match transition {
        Transition::Complete(result) => Ok(task.complete(result, change).into_any()),
        Transition::Fail(outcome) => Ok(task.fail(outcome, change).into_any()),
        Transition::Cancel => Ok(task.cancel(change).into_any()),
        other => Err(TransitionError {
            to: other.target(),
            task: Box::new(task.into_any()),
        }),
    }
}

impl<S: TaskState> From<Task<S>> for AnyTask {
    fn from(task: Task<S>) -> Self {
        S::wrap(task)
    }
}

impl<S: TaskState> TryFrom<AnyTask> for Task<S> {
    type Error = StatusMismatch;

    fn try_from(any: AnyTask) -> Result<Self, Self::Error> {
        S::unwrap(any).map_err(|task| StatusMismatch {
            expected: S::STATUS,
            task: Box::new(task),
        })
    }
}

/// A typed task was asked of an [`AnyTask`] in another status. Holds the original.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "expected a `{expected}` task, but task `{}` is `{}`",
    crate::error::shorten(&self.task.id().to_string()),
    self.task.status()
)]
pub struct StatusMismatch {
    /// The status that was asked for.
    pub expected: TaskStatus,
    /// The task, unchanged.
    pub task: Box<AnyTask>,
}

impl StatusMismatch {
    /// The original task.
    #[must_use]
    pub fn into_inner(self) -> AnyTask {
        *self.task
    }
}

/// A move the spec's transition table forbids. Holds the unchanged task.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", describe_illegal_move(&self.task, self.to))]
pub struct TransitionError {
    /// The status the move would have led to.
    pub to: TaskStatus,
    /// The task, unchanged.
    pub task: Box<AnyTask>,
}

impl TransitionError {
    /// The status the task has (and keeps).
    #[must_use]
    pub fn from(&self) -> TaskStatus {
        self.task.status()
    }

    /// The original task.
    #[must_use]
    pub fn into_inner(self) -> AnyTask {
        *self.task
    }
}

pub(crate) fn describe_illegal_move(task: &AnyTask, to: TaskStatus) -> String {
    let from = task.status();
    let id = crate::error::shorten(&task.id().to_string());
    let why = if from.is_terminal() {
        "terminal tasks never change"
    } else if from == to {
        "it already has that status"
    } else {
        "the spec's transition table forbids it"
    };
    format!("cannot move task `{id}` from `{from}` to `{to}`: {why}")
}

impl fmt::Display for AnyTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task `{}` ({})", self.id(), self.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_unix_millis(millis)
    }

    fn working() -> AnyTask {
        Task::new(TaskId::from("t"), at(0)).into_any()
    }

    #[test]
    fn try_from_checks_the_status_and_hands_the_task_back() {
        let any = working();
        let err = Task::<Completed>::try_from(any.clone()).unwrap_err();
        assert_eq!(err.expected, TaskStatus::Completed);
        assert_eq!(
            err.to_string(),
            "expected a `completed` task, but task `t` is `working`"
        );
        assert_eq!(err.into_inner(), any);
        let typed = Task::<Working>::try_from(any.clone()).unwrap();
        assert_eq!(typed.into_any(), any);
    }

    #[test]
    fn apply_follows_the_table_for_every_pair() {
        let transitions = || {
            vec![
                Transition::RequireInput(InputRequests::new()),
                Transition::Resume,
                Transition::Complete(JsonObject::new()),
                Transition::Fail(Outcome::error(-1, "x")),
                Transition::Cancel,
            ]
        };
        let w = working();
        let ir = w
            .clone()
            .apply(Transition::RequireInput(InputRequests::new()), at(1))
            .unwrap();
        let starts = [
            w.clone(),
            ir.clone(),
            w.clone().apply(Transition::Cancel, at(1)).unwrap(),
            w.clone()
                .apply(Transition::Complete(JsonObject::new()), at(1))
                .unwrap(),
            w.clone()
                .apply(Transition::Fail(Outcome::error(-1, "x")), at(1))
                .unwrap(),
        ];
        for start in starts {
            for transition in transitions() {
                let from = start.status();
                let to = transition.target();
                match start.clone().apply(transition, at(2)) {
                    Ok(next) => {
                        assert!(from.can_transition_to(to), "{from} -> {to} allowed");
                        assert_eq!(next.status(), to);
                        assert_eq!(next.last_updated_at(), at(2));
                    }
                    Err(err) => {
                        assert!(!from.can_transition_to(to), "{from} -> {to} refused");
                        assert_eq!(err.from(), from);
                        assert_eq!(err.to, to);
                        assert_eq!(*err.task, start);
                    }
                }
            }
        }
    }

    #[test]
    fn illegal_move_names_both_statuses() {
        let done = working().apply(Transition::Cancel, at(1)).unwrap();
        let err = done
            .apply(Transition::Complete(JsonObject::new()), at(2))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot move task `t` from `cancelled` to `completed`: terminal tasks never change"
        );
    }

    #[test]
    fn status_message_of_a_terminal_task_cannot_change() {
        let mut done = working().apply(Transition::Cancel, at(1)).unwrap();
        let before = done.clone();
        assert!(done.set_status_message(Some("late".into()), at(2)).is_err());
        assert_eq!(done, before);
        let mut live = working();
        live.set_status_message(Some("half".into()), at(2)).unwrap();
        assert_eq!(live.status_message(), Some("half"));
    }
}
