//! [`Task<S>`]: a task whose status is its type.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::id::TaskId;
use crate::input::{InputRequests, InputResponses, InputState, Progress, WorkingData};
use crate::jsonrpc::JsonObject;
use crate::millis::OptMillis;
use crate::outcome::{Kept, Outcome};
use crate::status::{
    AwaitsInput, Buildable, CanRequireInput, CanResume, Cancelled, Completed, Failed, HasFailure,
    HasResult, InputRequired, NonTerminal, TaskState, TaskStatus, Working,
};
use crate::trace::TraceContext;

/// When a change happens, and the status message the task shows afterwards.
///
/// Every transition takes one. A bare [`Timestamp`] converts into a change without a
/// message: `task.complete(result, now)`. With a message:
/// `task.cancel(Change::at(now).with_message("stopped by the user"))`.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Change {
    at: Timestamp,
    message: Option<String>,
}

impl Change {
    /// A change at `at`, without a status message.
    pub fn at(at: Timestamp) -> Self {
        Self { at, message: None }
    }

    /// The same change, leaving the task with this status message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The same change with an optional status message.
    pub fn with_optional_message(mut self, message: Option<String>) -> Self {
        self.message = message;
        self
    }
}

impl From<Timestamp> for Change {
    fn from(at: Timestamp) -> Self {
        Change::at(at)
    }
}

/// A task in status `S`: the protocol `Task` object, typed by its status.
///
/// A new task is a `Task<Working>` ([`Task::new`]). Transitions consume the task and exist
/// only where the spec allows them:
///
/// | from | methods |
/// |---|---|
/// | `Working` | [`require_input`](Task::require_input), [`complete`](Task::complete), [`fail`](Task::fail), [`cancel`](Task::cancel) |
/// | `InputRequired` | [`resume`](Task::resume), [`complete`](Task::complete), [`fail`](Task::fail), [`cancel`](Task::cancel) |
/// | `Completed`, `Failed`, `Cancelled` | none |
///
/// Some readers, too, exist in one status only: the builders [`with_ttl`](Task::with_ttl),
/// [`with_poll_interval`](Task::with_poll_interval) and
/// [`with_trace_context`](Task::with_trace_context) in `Working`; the input methods
/// ([`input_requests`](Task::input_requests), [`answer`](Task::answer),
/// [`all_answered`](Task::all_answered), [`take_answers`](Task::take_answers)) in
/// `InputRequired`; [`result`](Task::result) in `Completed`; [`outcome`](Task::outcome) in
/// `Failed`. Each method is bounded by a capability trait of its own, so calling one in the
/// wrong status is refused with a message naming the task's status.
///
/// Every change moves `lastUpdatedAt` (never backwards). A transition replaces the status
/// message with the one in its [`Change`] (or none); a failure without one gets a
/// diagnostic from its outcome.
///
/// There is no `Default` and no constructor for a later status: the only ways into a
/// status are a transition or a checked conversion from [`AnyTask`].
#[must_use = "a task is a value: a transition returns the task in its new status"]
pub struct Task<S: TaskState> {
    pub(crate) id: TaskId,
    pub(crate) status_message: Option<Arc<str>>,
    pub(crate) created_at: Timestamp,
    pub(crate) last_updated_at: Timestamp,
    pub(crate) ttl: OptMillis,
    pub(crate) poll_interval: OptMillis,
    /// The trace context of the request that created the task (never on the wire).
    pub(crate) trace: Option<Arc<TraceContext>>,
    /// The tool the task runs, if its creator named one (never on the wire).
    pub(crate) tool: Option<Arc<str>>,
    pub(crate) data: S::Data,
    pub(crate) state: PhantomData<fn() -> S>,
}

impl Task<Working> {
    /// A new task in `working`, created at `created_at`, with unlimited retention and no
    /// suggested poll interval.
    pub fn new(id: TaskId, created_at: Timestamp) -> Self {
        Task {
            id,
            status_message: None,
            created_at,
            last_updated_at: created_at,
            ttl: OptMillis::NONE,
            poll_interval: OptMillis::NONE,
            trace: None,
            tool: None,
            data: WorkingData::default(),
            state: PhantomData,
        }
    }

    /// The same new task, declared redeliverable: its first attempt of at most
    /// `max_attempts` (clamped to `1..=`[`MAX_ATTEMPTS`](crate::MAX_ATTEMPTS)). A store
    /// does this for a request [`with_redelivery`](crate::TaskRequest::with_redelivery).
    pub fn with_attempts(mut self, max_attempts: u32) -> Self {
        self.data.progress_mut().attempts = Some(crate::store::Attempts::first(
            max_attempts.clamp(1, crate::store::MAX_ATTEMPTS),
        ));
        self
    }
}

impl<S: TaskState> Task<S> {
    /// The task id.
    #[must_use]
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// The status, `S::STATUS`.
    #[must_use]
    pub fn status(&self) -> TaskStatus {
        S::STATUS
    }

    /// The human-readable status message, if any.
    #[must_use]
    pub fn status_message(&self) -> Option<&str> {
        self.status_message.as_deref()
    }

    /// When the task was created.
    #[must_use]
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When the task last changed.
    #[must_use]
    pub fn last_updated_at(&self) -> Timestamp {
        self.last_updated_at
    }

    /// The retention time in milliseconds from creation; `None` is unlimited.
    #[must_use]
    pub fn ttl(&self) -> Option<u64> {
        self.ttl.get()
    }

    /// The suggested polling interval in milliseconds, if any.
    #[must_use]
    pub fn poll_interval(&self) -> Option<u64> {
        self.poll_interval.get()
    }

    /// When the retention time ends (`created_at + ttl`); `None` if unlimited.
    #[must_use]
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.ttl().map(|ttl| self.created_at.plus_millis(ttl))
    }

    /// Whether the retention time has ended at `now`.
    #[must_use]
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|end| now >= end)
    }

    /// The same task with a retention time in milliseconds from creation (`None` keeps it
    /// forever). A builder of a `working` task; later, use [`set_ttl`](Task::set_ttl).
    pub fn with_ttl(mut self, ttl: Option<u64>) -> Self
    where
        S: Buildable,
    {
        self.ttl = OptMillis::new(ttl);
        self
    }

    /// The same task with a suggested polling interval in milliseconds. A builder of a
    /// `working` task; later, use [`set_poll_interval`](Task::set_poll_interval).
    pub fn with_poll_interval(mut self, poll_interval: Option<u64>) -> Self
    where
        S: Buildable,
    {
        self.poll_interval = OptMillis::new(poll_interval);
        self
    }

    /// The same task, continuing the trace of the request that created it (a store does
    /// this for a request [`with_trace_context`](crate::TaskRequest::with_trace_context)).
    /// A builder of a `working` task.
    pub fn with_trace_context(mut self, trace: Option<TraceContext>) -> Self
    where
        S: Buildable,
    {
        self.trace = trace.map(Arc::new);
        self
    }

    /// The same task, running the tool `tool` (a store does this for a request
    /// [`with_tool`](crate::TaskRequest::with_tool)): kept in every status, for an
    /// operator's view to filter and count by. A builder of a `working` task.
    pub fn with_tool(mut self, tool: Option<&str>) -> Self
    where
        S: Buildable,
    {
        self.tool = tool.map(Arc::from);
        self
    }

    /// The tool the task runs, if its creator named one, kept in every status. Never shown
    /// on the wire.
    #[must_use]
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The trace context of the request that created the task, kept in every status
    /// ([`TraceContext`]). Never shown on the wire.
    #[must_use]
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.trace.as_deref()
    }

    /// The input requests still unanswered, by wire key.
    #[must_use]
    pub fn input_requests(&self) -> &InputRequests
    where
        S: AwaitsInput,
    {
        &self.data.outstanding
    }

    /// Records answers to outstanding requests, by wire key (unknown or already answered
    /// keys are ignored), and returns how many were taken. The status stays
    /// `input_required` until the handler resumes.
    pub fn answer(
        &mut self,
        responses: impl IntoIterator<Item = (String, JsonObject)>,
        at: Timestamp,
    ) -> usize
    where
        S: AwaitsInput,
    {
        let taken = Arc::make_mut(&mut self.data).answer(responses);
        if taken > 0 {
            self.last_updated_at = self.last_updated_at.max(at);
        }
        taken
    }

    /// Whether every request is answered.
    #[must_use]
    pub fn all_answered(&self) -> bool
    where
        S: AwaitsInput,
    {
        self.data.all_answered()
    }

    /// Takes the answers received so far, under the handler's names.
    pub fn take_answers(&mut self) -> InputResponses
    where
        S: AwaitsInput,
    {
        Arc::make_mut(&mut self.data).take_answers()
    }

    /// The result of the underlying request.
    ///
    /// `None` only for a task read from a peer's `Task` object, which never carries the
    /// result (fetch it with `tasks/result`).
    ///
    /// The [`TaskRegistry`](crate::TaskRegistry) keeps a finished task's result as its JSON
    /// text: a copy it hands out reads the text back on its first call here (or to
    /// [`outcome`](Task::outcome)), once per copy.
    #[must_use]
    pub fn result(&self) -> Option<&JsonObject>
    where
        S: HasResult,
    {
        self.data
            .as_ref()
            .map(Kept::get)
            .and_then(Outcome::as_result)
    }

    /// What the underlying request failed with: a JSON-RPC error or a failing result.
    ///
    /// `None` only for a task read from a peer's `Task` object.
    #[must_use]
    pub fn outcome(&self) -> Option<&Outcome>
    where
        S: HasFailure,
    {
        self.data.as_ref().map(Kept::get)
    }

    /// Erases the status: the same task as an [`AnyTask`].
    pub fn into_any(self) -> AnyTask {
        S::wrap(self)
    }

    /// Moves this task's common fields into status `T` with `data`, applying `change`.
    fn into_state<T: TaskState>(self, data: T::Data, change: Change) -> Task<T> {
        Task {
            id: self.id,
            status_message: change.message.map(Arc::from),
            created_at: self.created_at,
            last_updated_at: self.last_updated_at.max(change.at),
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            trace: self.trace,
            tool: self.tool,
            data,
            state: PhantomData,
        }
    }

    /// Replaces the status message without changing the status.
    pub fn set_status_message(&mut self, message: Option<String>, at: Timestamp)
    where
        S: NonTerminal,
    {
        self.status_message = message.map(Arc::from);
        self.last_updated_at = self.last_updated_at.max(at);
    }

    /// `working` → `input_required`: the task waits for the requestor to answer `requests`.
    ///
    /// Each request keeps the name the handler gave it, unless this task already issued a
    /// request under that name: then it gets a suffix on the wire (`confirm-2`), so that no
    /// key is ever reused. Answers come back under the handler's names.
    pub fn require_input(
        self,
        requests: InputRequests,
        change: impl Into<Change>,
    ) -> Task<InputRequired>
    where
        S: CanRequireInput,
    {
        let progress = self.progress().cloned().unwrap_or_default();
        let state = InputState::issue_shared(requests, progress);
        self.into_state(state, change.into())
    }

    /// `input_required` → `working`: the input arrived and the work goes on. Requests still
    /// unanswered are withdrawn; their keys stay used.
    pub fn resume(self, change: impl Into<Change>) -> Task<Working>
    where
        S: CanResume,
    {
        // A task that never issued a key or heard a cancel request carries nothing.
        let progress = self
            .progress()
            .filter(|progress| **progress != Progress::default())
            .cloned();
        self.into_state(WorkingData(progress.map(Arc::new)), change.into())
    }

    /// What this task keeps across `working` and `input_required`.
    fn progress(&self) -> Option<&Progress> {
        crate::status::StateData::progress(&self.data)
    }

    /// Whether the requestor asked to cancel this task (the tasks extension's cooperative
    /// `tasks/cancel`). The flag is never shown on the wire; a handler that sees it may
    /// [`cancel`](Task::cancel) the task, or finish it anyway.
    #[must_use]
    pub fn cancel_requested(&self) -> bool {
        self.progress()
            .is_some_and(|progress| progress.cancel_requested)
    }

    /// The attempts of a redeliverable task (see [`Redelivery`](crate::Redelivery));
    /// `None` for a task that runs once. Never shown on the wire.
    #[must_use]
    pub fn attempts(&self) -> Option<crate::store::Attempts> {
        self.progress().and_then(|progress| progress.attempts)
    }

    /// The last checkpoint its handler saved
    /// ([`TaskHandle::checkpoint`](crate::TaskHandle::checkpoint)). Never shown on the
    /// wire.
    #[must_use]
    pub fn checkpoint(&self) -> Option<&serde_json::Value> {
        self.progress()
            .and_then(|progress| progress.checkpoint.as_deref())
    }

    /// Saves a handler's checkpoint in the task, without changing its status nor its
    /// `lastUpdatedAt`: a checkpoint is never on the wire, so the task as a client sees it
    /// (and as its subscribers were last told) stays as it was. A checkpoint that differs
    /// from the one stored is progress: the attempt saving it no longer counts against the
    /// task's bound ([`Attempts`](crate::Attempts)).
    pub(crate) fn set_checkpoint(&mut self, checkpoint: serde_json::Value)
    where
        S: NonTerminal,
    {
        if let Some(progress) = crate::status::StateData::progress_mut(&mut self.data) {
            if progress.checkpoint.as_deref() != Some(&checkpoint) {
                progress.attempts = progress.attempts.map(crate::store::Attempts::with_progress);
            }
            progress.checkpoint = Some(Arc::new(checkpoint));
        }
    }

    /// Moves a redeliverable task on to its next attempt (a claim), without changing its
    /// status. Answers the new attempts, or `None` if none is left (nothing changes then).
    pub(crate) fn next_attempt(&mut self) -> Option<crate::store::Attempts>
    where
        S: NonTerminal,
    {
        let progress = crate::status::StateData::progress_mut(&mut self.data)?;
        let attempts = progress.attempts.as_mut()?;
        *attempts = attempts.next()?;
        Some(*attempts)
    }

    /// Records that the requestor asked to cancel this task, without changing its status.
    ///
    /// The flag is for the task's handler: nothing a client sees changes, so
    /// `lastUpdatedAt` stays as it was (a client following the task holds what
    /// `tasks/get` answers).
    pub fn request_cancel(&mut self)
    where
        S: NonTerminal,
    {
        if let Some(progress) = crate::status::StateData::progress_mut(&mut self.data) {
            progress.cancel_requested = true;
        }
    }

    /// Changes the retention time (milliseconds from creation; `None`: unlimited).
    pub fn set_ttl(&mut self, ttl: Option<u64>, at: Timestamp) {
        self.ttl = OptMillis::new(ttl);
        self.last_updated_at = self.last_updated_at.max(at);
    }

    /// Changes the suggested polling interval.
    pub fn set_poll_interval(&mut self, poll_interval: Option<u64>, at: Timestamp) {
        self.poll_interval = OptMillis::new(poll_interval);
        self.last_updated_at = self.last_updated_at.max(at);
    }

    /// → `completed`, with the result of the underlying request (for `tools/call`, a
    /// `CallToolResult`).
    ///
    /// A tool result whose `isError` is `true` is a failure in 2025-11-25: pass it to
    /// [`fail`](Task::fail) as [`Outcome::Result`], or let [`finish`](Task::finish) choose.
    pub fn complete(self, result: JsonObject, change: impl Into<Change>) -> Task<Completed>
    where
        S: NonTerminal,
    {
        self.into_state(Some(Kept::new(Outcome::Result(result))), change.into())
    }

    /// → `failed`, with what the underlying request produced: a JSON-RPC error, or a result
    /// that reports an error (a `CallToolResult` with `isError: true`).
    ///
    /// Without a message in `change`, the status message is a diagnostic taken from the
    /// outcome (the error message, or the result's first text).
    pub fn fail(self, outcome: Outcome, change: impl Into<Change>) -> Task<Failed>
    where
        S: NonTerminal,
    {
        let mut change = change.into();
        if change.message.is_none() {
            change.message = outcome.diagnostic();
        }
        self.into_state(Some(Kept::new(outcome)), change)
    }

    /// → `completed` or `failed`, whichever `result` means: a result whose `isError` is
    /// `true` fails the task (as 2025-11-25 requires for tool calls), any other completes it.
    pub fn finish(self, result: JsonObject, change: impl Into<Change>) -> Finished
    where
        S: NonTerminal,
    {
        if crate::outcome::is_error_result(&result) {
            Finished::Failed(self.fail(Outcome::Result(result), change))
        } else {
            Finished::Completed(self.complete(result, change))
        }
    }

    /// → `cancelled`. A cancelled task carries no result.
    pub fn cancel(self, change: impl Into<Change>) -> Task<Cancelled>
    where
        S: NonTerminal,
    {
        self.into_state((), change.into())
    }
}

/// The task [`Task::finish`] produced: completed, or failed by a result with `isError`.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Finished {
    /// The result did not report an error.
    Completed(Task<Completed>),
    /// The result reported an error (`isError: true`).
    Failed(Task<Failed>),
}

impl From<Finished> for AnyTask {
    fn from(finished: Finished) -> Self {
        match finished {
            Finished::Completed(task) => task.into_any(),
            Finished::Failed(task) => task.into_any(),
        }
    }
}

// Written by hand: derives would demand the same traits of the uninhabited markers.
impl<S: TaskState> Clone for Task<S> {
    fn clone(&self) -> Self {
        Task {
            id: self.id.clone(),
            status_message: self.status_message.clone(),
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            trace: self.trace.clone(),
            tool: self.tool.clone(),
            data: self.data.clone(),
            state: PhantomData,
        }
    }
}

impl<S: TaskState> PartialEq for Task<S> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.status_message == other.status_message
            && self.created_at == other.created_at
            && self.last_updated_at == other.last_updated_at
            && self.ttl == other.ttl
            && self.poll_interval == other.poll_interval
            && self.trace == other.trace
            && self.tool == other.tool
            && self.data == other.data
    }
}

impl<S: TaskState> fmt::Debug for Task<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("status", &S::STATUS)
            .field("status_message", &self.status_message)
            .field("created_at", &self.created_at)
            .field("last_updated_at", &self.last_updated_at)
            .field("ttl", &self.ttl())
            .field("poll_interval", &self.poll_interval())
            .field("trace", &self.trace)
            .field("tool", &self.tool)
            .field("data", &self.data)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_unix_millis(millis)
    }

    fn object(value: serde_json::Value) -> JsonObject {
        match value {
            serde_json::Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn every_legal_path_of_the_spec_table_compiles_and_moves_time() {
        let id = TaskId::from("t");
        let working = Task::new(id.clone(), at(0)).with_ttl(Some(60_000));
        let waiting = working.clone().require_input(InputRequests::new(), at(1));
        assert_eq!(waiting.status(), TaskStatus::InputRequired);
        let resumed = waiting.clone().resume(at(2));
        assert_eq!(resumed.last_updated_at(), at(2));
        assert_eq!(resumed.created_at(), at(0));

        let result = object(json!({"content": []}));
        assert_eq!(
            working.clone().complete(result.clone(), at(3)).status(),
            TaskStatus::Completed
        );
        assert_eq!(
            waiting.clone().complete(result.clone(), at(3)).status(),
            TaskStatus::Completed
        );
        assert_eq!(
            working
                .clone()
                .fail(Outcome::error(-32603, "boom"), at(3))
                .status(),
            TaskStatus::Failed
        );
        assert_eq!(
            waiting
                .clone()
                .fail(Outcome::error(-32603, "boom"), at(3))
                .status(),
            TaskStatus::Failed
        );
        assert_eq!(
            working.clone().cancel(at(3)).status(),
            TaskStatus::Cancelled
        );
        assert_eq!(waiting.cancel(at(3)).status(), TaskStatus::Cancelled);
    }

    #[test]
    fn last_updated_never_moves_backwards() {
        let task = Task::new(TaskId::from("t"), at(10));
        let done = task.cancel(at(5));
        assert_eq!(done.last_updated_at(), at(10));
    }

    #[test]
    fn transitions_replace_the_status_message() {
        let mut task = Task::new(TaskId::from("t"), at(0));
        task.set_status_message(Some("halfway".into()), at(1));
        assert_eq!(task.status_message(), Some("halfway"));
        assert_eq!(task.last_updated_at(), at(1));
        let waiting = task.require_input(
            InputRequests::new(),
            Change::at(at(2)).with_message("need a yes"),
        );
        assert_eq!(waiting.status_message(), Some("need a yes"));
        let working = waiting.resume(at(3));
        assert_eq!(working.status_message(), None);
    }

    #[test]
    fn fail_without_message_uses_a_diagnostic() {
        let task = Task::new(TaskId::from("t"), at(0));
        let failed = task
            .clone()
            .fail(Outcome::error(-32603, "disk full"), at(1));
        assert_eq!(failed.status_message(), Some("disk full"));
        let tool_error =
            object(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}));
        let failed = task.fail(Outcome::Result(tool_error.clone()), at(1));
        assert_eq!(failed.status_message(), Some("no such file"));
        assert_eq!(failed.outcome(), Some(&Outcome::Result(tool_error)));
    }

    #[test]
    fn finish_routes_is_error_results_to_failed() {
        let task = Task::new(TaskId::from("t"), at(0));
        let ok = object(json!({"content": [], "isError": false}));
        let bad = object(json!({"content": [], "isError": true}));
        match task.clone().finish(ok.clone(), at(1)) {
            Finished::Completed(done) => assert_eq!(done.result(), Some(&ok)),
            Finished::Failed(_) => panic!("isError false must complete"),
        }
        match task.finish(bad.clone(), at(1)) {
            Finished::Failed(failed) => assert_eq!(failed.outcome(), Some(&Outcome::Result(bad))),
            Finished::Completed(_) => panic!("isError true must fail"),
        }
    }

    #[test]
    fn expiry_runs_from_creation() {
        let task = Task::new(TaskId::from("t"), at(1_000)).with_ttl(Some(500));
        assert_eq!(task.expires_at(), Some(at(1_500)));
        assert!(!task.is_expired(at(1_499)));
        assert!(task.is_expired(at(1_500)));
        let forever = Task::new(TaskId::from("u"), at(0));
        assert!(!forever.is_expired(Timestamp::from_unix_millis(i64::MAX / 2_000_000)));
    }
}
