//! What a running tool sees: [`TaskContext`], and how it ends: [`TaskExit`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_tasks::{
    InputRequests, InputRequired, JsonObject, Outcome, Owner, TaskHandle, TaskStore, Working,
};
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ClientCapabilities, InputRequest};
use tokio_util::sync::CancellationToken as CancelSignal;

use crate::convert;
use crate::wait;

/// How a tool's operation finished without producing a result (as in `rmcp::task_manager`).
#[derive(Debug)]
pub enum TaskExit {
    /// The operation stops because cancellation was requested; the task settles
    /// `cancelled`.
    Cancelled,
    /// A real failure; the task settles `failed` with this error inlined, even after a
    /// cancellation request.
    Error(ErrorData),
}

impl From<ErrorData> for TaskExit {
    fn from(error: ErrorData) -> Self {
        TaskExit::Error(error)
    }
}

/// The boxed future of a tool's operation.
pub type TaskFuture = Pin<Box<dyn Future<Output = Result<CallToolResult, TaskExit>> + Send>>;

/// The typed handle of the running task, in whichever unfinished status it is.
pub(crate) enum Slot<T: TaskStore> {
    Working(TaskHandle<Working, T>),
    Waiting(TaskHandle<InputRequired, T>),
    /// Moved on: finished, or the task is gone.
    Spent,
}

/// Where a context runs: as a stored task, or inline (the client did not declare the
/// tasks extension).
enum Mode<T: TaskStore> {
    Task(Box<Running<T>>),
    Inline { cancel: CancelSignal },
}

/// A context's stored task.
struct Running<T: TaskStore> {
    store: T,
    owner: Owner,
    id: String,
    slot: Mutex<Slot<T>>,
    /// The status message last set: each move of the typed handle carries it (a move
    /// without one clears it).
    message: Mutex<Option<String>>,
    /// One input request at a time: the typed handle goes `working` → `input_required` →
    /// `working` for each.
    input_gate: tokio::sync::Mutex<()>,
}

/// What a run of a tool knows of its call and of earlier attempts.
#[derive(Debug)]
pub(crate) struct Run {
    /// The call's arguments (empty for an operation given to `call_tool` or `spawn`,
    /// which captures its own).
    pub(crate) arguments: JsonObject,
    /// The attempt running now (from 1).
    pub(crate) attempt: u32,
    /// The last checkpoint of an earlier attempt.
    pub(crate) checkpoint: Option<serde_json::Value>,
    /// The task's status message when this run starts (a claim's "attempt 2 of 3").
    pub(crate) message: Option<String>,
}

impl Run {
    /// The first run of a call with `arguments`.
    pub(crate) fn first(arguments: JsonObject) -> Self {
        Run {
            arguments,
            attempt: 1,
            checkpoint: None,
            message: None,
        }
    }
}

/// The handle a tool's operation gets: ask the client for input, see a cancellation
/// request, set a status message; for a redeliverable tool, read the call's arguments,
/// the attempt and the last checkpoint, and save a checkpoint. Cheap to clone; every
/// clone is the same task.
///
/// The task itself moves only through the typed [`TaskHandle`] inside, so the operation
/// can never make a move the spec forbids: asking for input takes it `working` →
/// `input_required` → `working`, and the operation's return value finishes it.
pub struct TaskContext<T: TaskStore> {
    mode: Arc<Mode<T>>,
    run: Arc<Run>,
}

impl<T: TaskStore> Clone for TaskContext<T> {
    fn clone(&self) -> Self {
        Self {
            mode: Arc::clone(&self.mode),
            run: Arc::clone(&self.run),
        }
    }
}

impl<T: TaskStore> std::fmt::Debug for TaskContext<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id())
            .finish_non_exhaustive()
    }
}

impl<T: TaskStore> TaskContext<T> {
    /// The id of the task, or `None` when the call runs inline (the client did not
    /// declare the tasks extension).
    #[must_use]
    pub fn task_id(&self) -> Option<&str> {
        match &*self.mode {
            Mode::Task(running) => Some(&running.id),
            Mode::Inline { .. } => None,
        }
    }

    /// The arguments of the call, for a handler registered with
    /// [`TaskManager::register`](crate::TaskManager::register) (the same on every attempt);
    /// empty for an operation given to [`call_tool`](crate::TaskManager::call_tool), which
    /// captures what it needs.
    #[must_use]
    pub fn arguments(&self) -> &JsonObject {
        &self.run.arguments
    }

    /// The attempt running the task: 1 for the first run (and for a task that runs once,
    /// or a call run inline), 2 for the first redelivery on another instance, and so on.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.run.attempt
    }

    /// The checkpoint an earlier attempt saved last
    /// ([`save_checkpoint`](Self::save_checkpoint)), if any: where this attempt may resume
    /// instead of starting from zero. `None` on the first attempt. Checkpoints saved by
    /// this attempt are not read back here.
    #[must_use]
    pub fn checkpoint(&self) -> Option<&serde_json::Value> {
        self.run.checkpoint.as_ref()
    }
}

impl<T: TaskStore + Clone + 'static> TaskContext<T> {
    pub(crate) fn task(store: T, handle: TaskHandle<Working, T>, run: Run) -> Self {
        Self {
            mode: Arc::new(Mode::Task(Box::new(Running {
                store,
                owner: handle.owner().clone(),
                id: handle.id().to_string(),
                slot: Mutex::new(Slot::Working(handle)),
                message: Mutex::new(run.message.clone()),
                input_gate: tokio::sync::Mutex::new(()),
            }))),
            run: Arc::new(run),
        }
    }

    pub(crate) fn inline(cancel: CancelSignal, arguments: JsonObject) -> Self {
        Self {
            mode: Arc::new(Mode::Inline { cancel }),
            run: Arc::new(Run::first(arguments)),
        }
    }

    /// Whether this context runs a redeliverable task (one its handle's attempt fences).
    pub(crate) fn is_redeliverable(&self) -> bool {
        let Mode::Task(running) = &*self.mode else {
            return false;
        };
        match &*lock(&running.slot) {
            Slot::Working(handle) => handle.attempt().is_some(),
            Slot::Waiting(handle) => handle.attempt().is_some(),
            Slot::Spent => false,
        }
    }

    /// Saves `checkpoint` in the task (one store write, at most
    /// [`MAX_CHECKPOINT_BYTES`](mcp_tasks::MAX_CHECKPOINT_BYTES) as JSON): a small progress
    /// value (a step, a cursor, the time already spent) that the next attempt of a
    /// redeliverable task reads back with [`checkpoint`](Self::checkpoint). Each replaces
    /// the last; never shown to clients. Ignored inline.
    ///
    /// # Errors
    /// [`TaskExit::Cancelled`] if the task was cancelled or is gone, or another instance
    /// runs it now (this attempt was superseded: nothing is left to do here);
    /// [`TaskExit::Error`] with `-32602` for a checkpoint over the limit, and with the
    /// store's error otherwise.
    pub fn save_checkpoint(&self, checkpoint: serde_json::Value) -> Result<(), TaskExit> {
        let Mode::Task(running) = &*self.mode else {
            return Ok(());
        };
        let saved = match &*lock(&running.slot) {
            Slot::Working(handle) => handle.checkpoint(checkpoint),
            Slot::Waiting(handle) => handle.checkpoint(checkpoint),
            Slot::Spent => return Err(TaskExit::Cancelled),
        };
        saved.map_err(gone_or_error)
    }

    /// Gives the task up to another instance (the handle's
    /// [`hand_over`](TaskHandle::hand_over)): on success the typed handle is spent without a
    /// write and the operation's next move finds nothing to move (`TaskExit::Cancelled`);
    /// otherwise the handle stays, and the task ends as it would have. Answers whether it
    /// was handed over.
    pub(crate) fn hand_over(&self) -> bool {
        let Mode::Task(running) = &*self.mode else {
            return false;
        };
        // The slot stays locked across the store write: no move of the operation runs
        // between the hand-over and letting the handle go.
        let mut slot = lock(&running.slot);
        let taken = std::mem::replace(&mut *slot, Slot::Spent);
        if matches!(taken, Slot::Spent) {
            return false;
        }
        let kept = match taken {
            Slot::Working(handle) => handle.hand_over().map_err(|(h, e)| (Slot::Working(h), e)),
            Slot::Waiting(handle) => handle.hand_over().map_err(|(h, e)| (Slot::Waiting(h), e)),
            Slot::Spent => return false,
        };
        match kept {
            Ok(_) => true,
            Err((handle, error)) => {
                if let Some(error) = error {
                    eprintln!("task {}: could not be handed over: {error}", running.id);
                }
                *slot = handle;
                false
            }
        }
    }

    /// Asks the client for input under `key` (an elicitation, a sampling or a roots
    /// request) and waits for its answer from `tasks/update`.
    ///
    /// While the request is outstanding, `tasks/get` shows the task `input_required` with
    /// it in `inputRequests`. Keys are unique over the task's life: a key used before is
    /// sent with a suffix (`confirm-2`) and answered under the name given here. Calls
    /// from clones of one context are served one after the other; to ask several things
    /// at once, use [`request_inputs`](Self::request_inputs).
    ///
    /// # Errors
    /// [`TaskExit::Cancelled`] if the requestor asks to cancel meanwhile, or the task was
    /// cancelled or is gone; [`TaskExit::Error`] with `-32021` when the call runs inline
    /// (input needs the tasks extension), and with the store's error otherwise.
    pub async fn request_input(
        &self,
        key: impl Into<String>,
        request: InputRequest,
    ) -> Result<serde_json::Value, TaskExit> {
        let key = key.into();
        let mut answers = self.request_inputs([(key.clone(), request)]).await?;
        Ok(answers.remove(&key).unwrap_or_default())
    }

    /// Asks the client several things at once (all outstanding together in `tasks/get`)
    /// and waits until every one is answered; the answers come back under the keys given
    /// here. The client may answer them in several `tasks/update`s: the task stays
    /// `input_required` with the rest until the last one.
    ///
    /// # Errors
    /// As [`request_input`](Self::request_input).
    pub async fn request_inputs(
        &self,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<BTreeMap<String, serde_json::Value>, TaskExit> {
        let (store, owner, id, slot, message, gate) = match &*self.mode {
            Mode::Task(running) => (
                &running.store,
                &running.owner,
                &running.id,
                &running.slot,
                &running.message,
                &running.input_gate,
            ),
            Mode::Inline { .. } => {
                return Err(TaskExit::Error(
                    ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ),
                ));
            }
        };
        let mut wanted = InputRequests::new();
        for (key, request) in requests {
            let request: mcp_tasks::InputRequest = convert::rewire(&request)?;
            wanted = wanted.with(key, request);
        }
        if wanted.is_empty() {
            // Nothing to ask: nothing to wait for.
            return Ok(BTreeMap::new());
        }
        let _one_at_a_time = gate.lock().await;
        {
            let mut slot = lock(slot);
            let Slot::Working(handle) = std::mem::replace(&mut *slot, Slot::Spent) else {
                return Err(TaskExit::Cancelled);
            };
            match carry(handle, message).require_input(wanted) {
                Ok(waiting) => *slot = Slot::Waiting(waiting),
                Err(err) => return Err(gone_or_error(err)),
            }
        }
        let answered = wait::input(store, owner, id).await;
        let mut slot = lock(slot);
        let Slot::Waiting(waiting) = std::mem::replace(&mut *slot, Slot::Spent) else {
            return Err(TaskExit::Cancelled);
        };
        match answered {
            Ok(answers) => {
                *slot = Slot::Working(carry(waiting, message).resume().map_err(gone_or_error)?);
                Ok(answers
                    .iter()
                    .map(|(key, answer)| {
                        (key.to_owned(), serde_json::Value::Object(answer.clone()))
                    })
                    .collect())
            }
            Err(mcp_tasks::Error::CancelRequested { .. }) => {
                // The operation decides; it gets its `working` handle back to finish with.
                *slot = Slot::Working(carry(waiting, message).resume().map_err(gone_or_error)?);
                Err(TaskExit::Cancelled)
            }
            Err(err) => {
                // Cancelled, expired or removed meanwhile: nothing is left to finish.
                if is_gone(&err) {
                    waiting.detach();
                } else {
                    *slot = Slot::Waiting(waiting);
                }
                Err(gone_or_error(err))
            }
        }
    }

    /// Replaces the task's human-readable status message (ignored inline).
    pub fn set_status_message(&self, message: impl Into<String>) {
        if let Mode::Task(running) = &*self.mode {
            let (slot, last) = (&running.slot, &running.message);
            let message = Some(message.into());
            last.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone_from(&message);
            let _ = match &*lock(slot) {
                Slot::Working(handle) => handle.set_status_message(message),
                Slot::Waiting(handle) => handle.set_status_message(message),
                Slot::Spent => Ok(()),
            };
        }
    }

    /// Whether the requestor asked to cancel the task (`tasks/cancel`), or, inline, the
    /// request was cancelled (`notifications/cancelled`). A task that is already terminal
    /// or gone reads as cancelled (there is nothing left to do); a store that cannot be
    /// reached reads as not cancelled. It reads the store synchronously (a network round
    /// trip for `RedisTaskStore`); in async code prefer [`cancelled`](Self::cancelled).
    #[must_use]
    pub fn is_cancel_requested(&self) -> bool {
        match &*self.mode {
            Mode::Task(running) => running
                .store
                .get(&running.owner, &running.id)
                .is_ok_and(|task| task.cancel_requested() || task.is_terminal()),
            Mode::Inline { cancel } => cancel.is_cancelled(),
        }
    }

    /// Resolves once cancellation was requested (or at once, if it was already), or the
    /// task is terminal or gone. Cooperative: pair it with `tokio::select!` around the
    /// work, and return [`TaskExit::Cancelled`] to settle the task `cancelled`.
    pub async fn cancelled(&self) {
        match &*self.mode {
            Mode::Task(running) => {
                wait::cancel_requested(&running.store, &running.owner, &running.id).await;
            }
            Mode::Inline { cancel } => cancel.cancelled().await,
        }
    }

    /// Finishes the task with what the operation returned, through the typed handle.
    pub(crate) fn finish(&self, exit: Result<CallToolResult, TaskExit>) {
        let Mode::Task(running) = &*self.mode else {
            return;
        };
        let (slot, id) = (&running.slot, &running.id);
        let slot = std::mem::replace(&mut *lock(slot), Slot::Spent);
        let outcome = match slot {
            Slot::Working(handle) => settle(handle, exit),
            Slot::Waiting(handle) => settle(handle, exit),
            Slot::Spent => Ok(()),
        };
        if let Err(err) = outcome
            && !is_gone(&err)
        {
            eprintln!("task {id}: the result could not be stored: {err}");
        }
    }
}

/// `→ completed` (or `failed` for a result with `isError: true`), `→ failed` with the
/// error, or `→ cancelled`.
fn settle<S, T>(
    handle: TaskHandle<S, T>,
    exit: Result<CallToolResult, TaskExit>,
) -> Result<(), mcp_tasks::Error>
where
    S: mcp_tasks::NonTerminal,
    T: TaskStore,
{
    match exit {
        Ok(result) => match convert::object(&result) {
            Ok(result) => handle.finish(without_result_type(result)).map(drop),
            Err(err) => handle
                .fail(Outcome::Error(convert::jsonrpc_error(&err)))
                .map(drop),
        },
        Err(TaskExit::Cancelled) => handle
            .with_message("cancelled at the requestor's request")
            .cancel()
            .map(drop),
        Err(TaskExit::Error(error)) => handle
            .fail(Outcome::Error(convert::jsonrpc_error(&error)))
            .map(drop),
    }
}

/// The neutral result the core stores: rmcp writes its own `resultType`, which the
/// dialect adds back when it shows the task.
fn without_result_type(mut result: JsonObject) -> JsonObject {
    if result.get("resultType").and_then(serde_json::Value::as_str) == Some("complete") {
        result.remove("resultType");
    }
    result
}

/// The handle, its next move keeping the status message last set.
fn carry<S: mcp_tasks::TaskState, T: TaskStore>(
    handle: TaskHandle<S, T>,
    message: &Mutex<Option<String>>,
) -> TaskHandle<S, T> {
    match message
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
    {
        Some(message) => handle.with_message(message),
        None => handle,
    }
}

fn lock<T: TaskStore>(slot: &Mutex<Slot<T>>) -> std::sync::MutexGuard<'_, Slot<T>> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the task can no longer be moved by this handler: it is finished or gone, or
/// another instance runs it now.
fn is_gone(err: &mcp_tasks::Error) -> bool {
    matches!(
        err,
        mcp_tasks::Error::TaskNotFound { .. }
            | mcp_tasks::Error::TaskCancelled { .. }
            | mcp_tasks::Error::Superseded { .. }
    ) || matches!(err, mcp_tasks::Error::IllegalTransition { from, .. } if from.is_terminal())
}

fn gone_or_error(err: mcp_tasks::Error) -> TaskExit {
    if is_gone(&err) {
        TaskExit::Cancelled
    } else {
        TaskExit::Error(convert::store_error(err))
    }
}
