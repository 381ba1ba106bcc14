//! Task statuses: the runtime [`TaskStatus`] enum and its five zero-sized marker twins.
//!
//! Every marker ([`Working`], [`InputRequired`], [`Completed`], [`Failed`], [`Cancelled`])
//! is an uninhabited enum: it exists only as a type parameter of [`Task`](crate::Task) and
//! cannot be constructed. The sealed [`TaskState`] trait ties each marker to its runtime
//! twin, and small capability traits ([`NonTerminal`], [`CanRequireInput`], [`CanResume`])
//! gate the transitions, so the compiler enforces the spec's transition table. Four more
//! ([`Buildable`], [`AwaitsInput`], [`HasResult`], [`HasFailure`]) gate the methods that
//! exist in one status only. Every capability bound sits on its method, not on an impl
//! block, so a misuse is reported in task words (E0277 with the trait's message) rather
//! than as a bare "method not found".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::any::AnyTask;
use crate::input::{InputState, WorkingData};
use crate::task::Task;

/// The status of a task, as the protocol spells it (`working`, `input_required`, ...).
///
/// This is the runtime twin of the marker types: `Working::STATUS == TaskStatus::Working`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor.
    InputRequired,
    /// The request finished successfully; its result is available.
    Completed,
    /// The request did not complete successfully.
    Failed,
    /// The request was cancelled before completion.
    Cancelled,
}

impl TaskStatus {
    /// All five statuses, in lifecycle order.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The terminal statuses: a task in one of these never changes again.
    pub const TERMINAL: [TaskStatus; 3] = [
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The protocol string of this status (`"input_required"` for [`TaskStatus::InputRequired`]).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether this status is terminal (`completed`, `failed` or `cancelled`).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Whether the spec allows a task to move from `self` to `to`.
    ///
    /// This is the transition table of the 2025-11-25 spec: `working` may move to any other
    /// status, `input_required` may move to any other status, and terminal statuses never
    /// move. Staying in the same status (a new status message) is an update, not a
    /// transition, and returns `false` here.
    #[must_use]
    pub const fn can_transition_to(self, to: TaskStatus) -> bool {
        match self {
            TaskStatus::Working => !matches!(to, TaskStatus::Working),
            TaskStatus::InputRequired => !matches!(to, TaskStatus::InputRequired),
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled => false,
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a string that is not one of the five task statuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown task status `{0}`: expected one of working, input_required, completed, failed, cancelled"
)]
pub struct UnknownStatus(pub String);

impl FromStr for TaskStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

pub(crate) use sealed::StateData;

mod sealed {
    /// Seals [`TaskState`](super::TaskState): only this crate's five markers implement it.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not a task status",
        label = "only the five MCP task statuses can parameterize `Task`",
        note = "the task statuses are `Working`, `InputRequired`, `Completed`, `Failed` and `Cancelled`; `TaskState` is sealed"
    )]
    pub trait Sealed {}

    /// What a status's data knows of the progress kept across `working` and
    /// `input_required`.
    pub trait StateData {
        fn progress(&self) -> Option<&crate::input::Progress>;
        fn progress_mut(&mut self) -> Option<&mut crate::input::Progress>;
    }

    impl StateData for crate::input::WorkingData {
        fn progress(&self) -> Option<&crate::input::Progress> {
            crate::input::WorkingData::progress(self)
        }
        fn progress_mut(&mut self) -> Option<&mut crate::input::Progress> {
            Some(crate::input::WorkingData::progress_mut(self))
        }
    }

    impl StateData for std::sync::Arc<crate::input::InputState> {
        fn progress(&self) -> Option<&crate::input::Progress> {
            Some(&self.progress)
        }
        fn progress_mut(&mut self) -> Option<&mut crate::input::Progress> {
            Some(&mut std::sync::Arc::make_mut(self).progress)
        }
    }

    impl StateData for Option<crate::outcome::Kept> {
        fn progress(&self) -> Option<&crate::input::Progress> {
            None
        }
        fn progress_mut(&mut self) -> Option<&mut crate::input::Progress> {
            None
        }
    }

    impl StateData for () {
        fn progress(&self) -> Option<&crate::input::Progress> {
            None
        }
        fn progress_mut(&mut self) -> Option<&mut crate::input::Progress> {
            None
        }
    }
}

/// A task status at the type level. Sealed: implemented only by the five markers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a task status",
    label = "`Task` is parameterized by a task status",
    note = "the task statuses are `Working`, `InputRequired`, `Completed`, `Failed` and `Cancelled`"
)]
///
/// `STATUS` is the runtime twin, and `Data` is what a task carries in that status: the
/// outstanding input requests of `InputRequired`, the stored outcome of `Completed` and
/// `Failed`, nothing otherwise.
pub trait TaskState: sealed::Sealed + Sized + 'static {
    /// The runtime status of this marker.
    const STATUS: TaskStatus;
    /// What a task in this status carries besides the common fields.
    #[doc(hidden)]
    type Data: Clone + fmt::Debug + PartialEq + Send + Sync + sealed::StateData + 'static;

    /// Erases a task of this status.
    #[doc(hidden)]
    fn wrap(task: Task<Self>) -> AnyTask;

    /// Takes the task out of `any` if it has this status, or hands `any` back.
    #[doc(hidden)]
    fn unwrap(any: AnyTask) -> Result<Task<Self>, AnyTask>;

    /// Borrows the task in `any` if it has this status.
    #[doc(hidden)]
    fn peek(any: &AnyTask) -> Option<&Task<Self>>;
}

/// A status from which a task can still finish: `Working` or `InputRequired`.
///
/// Bounds `complete`, `fail`, `cancel` and `set_status_message`.
#[diagnostic::on_unimplemented(
    message = "the task is already `{Self}`, a terminal status: it cannot change any more",
    label = "this needs a task that is `Working` or `InputRequired`",
    note = "completed, failed and cancelled tasks are final (MCP 2025-11-25, task lifecycle)"
)]
pub trait NonTerminal: TaskState {}

/// A status from which a task can ask for input: only `Working`.
#[diagnostic::on_unimplemented(
    message = "cannot require input from a task that is `{Self}`",
    label = "`require_input` needs a `Working` task",
    note = "only a working task can move to input_required; a terminal task never changes, and an input_required task already waits for input"
)]
pub trait CanRequireInput: TaskState {}

/// A status from which a task can go back to work: only `InputRequired`.
#[diagnostic::on_unimplemented(
    message = "cannot resume a task that is `{Self}`",
    label = "`resume` needs an `InputRequired` task",
    note = "only a task waiting for input can resume to working"
)]
pub trait CanResume: TaskState {}

/// A status in which a task still takes its builders (`with_ttl`, `with_poll_interval`):
/// only `Working`.
#[diagnostic::on_unimplemented(
    message = "the task is `{Self}`: only a `Working` task takes the `with_*` builders",
    label = "this builder needs a `Working` task",
    note = "a task that has moved on changes its retention and poll interval with `set_ttl` and `set_poll_interval`"
)]
pub trait Buildable: TaskState {}

/// A status in which a task waits for the requestor's input: only `InputRequired`.
///
/// Bounds `input_requests`, `answer`, `all_answered`, `take_answers` and the handle's
/// `wait_for_input`.
#[diagnostic::on_unimplemented(
    message = "the task is `{Self}`: only an `InputRequired` task has input requests",
    label = "this needs an `InputRequired` task",
    note = "a task waits for input from `require_input` until `resume`"
)]
pub trait AwaitsInput: TaskState<Data = std::sync::Arc<InputState>> {}

/// A status in which a task has a result: only `Completed`. Bounds `result`.
#[diagnostic::on_unimplemented(
    message = "the task is `{Self}`: only a `Completed` task has a result",
    label = "`result` needs a `Completed` task",
    note = "a failed task has an `outcome` instead; an unfinished task has neither yet"
)]
pub trait HasResult: TaskState<Data = Option<crate::outcome::Kept>> {}

/// A status in which a task has what it failed with: only `Failed`. Bounds `outcome`.
#[diagnostic::on_unimplemented(
    message = "the task is `{Self}`: only a `Failed` task has a failure outcome",
    label = "`outcome` needs a `Failed` task",
    note = "a completed task has a `result` instead; an unfinished task has neither yet"
)]
pub trait HasFailure: TaskState<Data = Option<crate::outcome::Kept>> {}

macro_rules! marker {
    ($(#[$doc:meta])* $name:ident, $status:ident, $data:ty) => {
        $(#[$doc])*
        ///
        /// An uninhabited marker: it cannot be constructed, only named as a type parameter.
        #[derive(Debug)]
        pub enum $name {}

        impl sealed::Sealed for $name {}

        impl TaskState for $name {
            const STATUS: TaskStatus = TaskStatus::$status;
            type Data = $data;

            fn wrap(task: Task<Self>) -> AnyTask {
                AnyTask::$status(task)
            }

            fn unwrap(any: AnyTask) -> Result<Task<Self>, AnyTask> {
                match any {
                    AnyTask::$status(task) => Ok(task),
                    other => Err(other),
                }
            }

            fn peek(any: &AnyTask) -> Option<&Task<Self>> {
                match any {
                    AnyTask::$status(task) => Some(task),
                    _ => None,
                }
            }
        }
    };
}

marker!(
    /// The status `working`: the request is being processed. Every task starts here.
    Working,
    Working,
    WorkingData
);
marker!(
    /// The status `input_required`: the receiver waits for input from the requestor.
    InputRequired,
    InputRequired,
    std::sync::Arc<InputState>
);
marker!(
    /// The status `completed`: terminal; the task carries its result.
    Completed,
    Completed,
    Option<crate::outcome::Kept>
);
marker!(
    /// The status `failed`: terminal; the task carries a JSON-RPC error or a failing result.
    Failed,
    Failed,
    Option<crate::outcome::Kept>
);
marker!(
    /// The status `cancelled`: terminal; the task carries no result.
    Cancelled,
    Cancelled,
    ()
);

impl NonTerminal for Working {}
impl NonTerminal for InputRequired {}
impl CanRequireInput for Working {}
impl CanResume for InputRequired {}
impl Buildable for Working {}
impl AwaitsInput for InputRequired {}
impl HasResult for Completed {}
impl HasFailure for Failed {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_from_str_and_display() {
        for status in TaskStatus::ALL {
            assert_eq!(status.to_string().parse::<TaskStatus>(), Ok(status));
        }
        let err = "done".parse::<TaskStatus>().unwrap_err();
        assert_eq!(err, UnknownStatus("done".into()));
        assert!(err.to_string().contains("unknown task status `done`"));
    }

    #[test]
    fn terminal_list_matches_is_terminal() {
        let terminal: Vec<_> = TaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, TaskStatus::TERMINAL);
    }

    #[test]
    fn transition_table_is_the_spec_table() {
        use TaskStatus::*;
        // Rows of tasks-digest §2, written out independently of `can_transition_to`.
        let allowed = [
            (Working, InputRequired),
            (Working, Completed),
            (Working, Failed),
            (Working, Cancelled),
            (InputRequired, Working),
            (InputRequired, Completed),
            (InputRequired, Failed),
            (InputRequired, Cancelled),
        ];
        for from in TaskStatus::ALL {
            for to in TaskStatus::ALL {
                assert_eq!(
                    from.can_transition_to(to),
                    allowed.contains(&(from, to)),
                    "{from} -> {to}"
                );
            }
        }
    }

    #[test]
    fn markers_name_their_runtime_twin() {
        assert_eq!(Working::STATUS, TaskStatus::Working);
        assert_eq!(InputRequired::STATUS, TaskStatus::InputRequired);
        assert_eq!(Completed::STATUS, TaskStatus::Completed);
        assert_eq!(Failed::STATUS, TaskStatus::Failed);
        assert_eq!(Cancelled::STATUS, TaskStatus::Cancelled);
        assert_eq!(std::mem::size_of::<Working>(), 0);
    }
}
