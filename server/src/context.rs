//! What a running handler sees: its [`Context`], and how a handler ends without a result:
//! an [`Exit`].
//!
//! The context does the races every handler would otherwise write again: asking for input
//! and waiting for the answers against a cancel, a superseded attempt, a store that cannot
//! be reached for a while and an answer deadline; a cancel against the work; a checkpoint
//! refused because another instance runs the task now. Each surfaces as one [`Exit`],
//! which the handler passes on with `?`, and the context finishes the task with whatever
//! the handler returns.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use mcp_tasks::ext::Ask;
use mcp_tasks::{
    Error, InputRequest, InputRequests, InputRequired, JsonObject, JsonRpcError, Owner, TaskHandle,
    TaskId, TaskState, TaskStore, Working, ext, jsonrpc,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::answers;
use crate::peer::{LogLevel, Peer};
use crate::server::{Generation, Store};
use crate::work::{Timer, within_on};

/// How often a handler waiting for input looks whether another instance runs its task now
/// (it must then stop before it takes the answers meant for the new attempt).
const SUPERSEDED_CHECK: Duration = Duration::from_secs(1);

/// How long a wait that found the store unreachable pauses before it looks again.
const OUTAGE_PAUSE: Duration = Duration::from_millis(200);

/// The status message of a task cancelled at its requestor's request.
pub(crate) const CANCELLED_MESSAGE: &str = "cancelled at the requestor's request";

/// How a handler ends without a result: the requestor cancelled, the task is no longer
/// this handler's to finish, or the call failed with a JSON-RPC error.
///
/// The context's own operations return the first two; a handler returns them on with `?`.
/// Any error converts into an `Exit` with `?` too: a [`JsonRpcError`] keeps its code,
/// an [`mcp_tasks::Error`] becomes the exit it means (superseded or gone: stop; cancel
/// requested: cancelled; a fault: `-32603`), and any other error is `-32603` with its
/// message. For a failure the model should read, answer a result instead
/// ([`ToolResult::error`](crate::ToolResult::error)).
pub struct Exit {
    kind: ExitKind,
}

pub(crate) enum ExitKind {
    /// The requestor cancelled: the task settles `cancelled`.
    Cancelled,
    /// The task is no longer this handler's (another attempt runs it, it finished, expired
    /// or was removed): nothing is written.
    Stopped(String),
    /// The call failed: the task settles `failed` with this error, or the call is answered
    /// with it.
    Error(JsonRpcError),
    /// The call needs input it cannot ask from inside (a 2026-07-28 input round).
    Ask(Ask),
}

impl Exit {
    /// The requestor asked to cancel: the task settles `cancelled` (or stays so).
    #[must_use]
    pub fn cancelled() -> Self {
        Self {
            kind: ExitKind::Cancelled,
        }
    }

    /// The call fails with `error`.
    #[must_use]
    pub fn error(error: JsonRpcError) -> Self {
        Self {
            kind: ExitKind::Error(error),
        }
    }

    /// The call fails with an internal error (`-32603`) saying `message`.
    #[must_use]
    pub fn internal(message: impl Into<String>) -> Self {
        Self::error(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, message))
    }

    /// The call fails with `-32602` (invalid params) saying `message`.
    #[must_use]
    pub fn invalid_params(message: impl fmt::Display) -> Self {
        Self::error(JsonRpcError::new(
            jsonrpc::INVALID_PARAMS,
            format!("invalid params: {message}"),
        ))
    }

    /// The call cannot go on without answers to `requests`, which it cannot ask from where
    /// it runs: on 2026-07-28, a call running at once answers an `InputRequiredResult`
    /// asking them, and the client's retry brings the answers
    /// ([`Context::ask`] does this by itself; this is for a handler that decides to ask
    /// again whatever the retry carries). Anywhere else it fails the call with `-32603`.
    #[must_use]
    pub fn input_required(requests: InputRequests) -> Self {
        Self {
            kind: ExitKind::Ask(Ask::new(requests)),
        }
    }

    pub(crate) fn stopped(why: impl Into<String>) -> Self {
        Self {
            kind: ExitKind::Stopped(why.into()),
        }
    }

    pub(crate) fn ask(ask: Ask) -> Self {
        Self {
            kind: ExitKind::Ask(ask),
        }
    }

    pub(crate) fn into_kind(self) -> ExitKind {
        self.kind
    }

    pub(crate) fn from_kind(kind: ExitKind) -> Self {
        Self { kind }
    }

    /// Whether the requestor cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, ExitKind::Cancelled)
    }

    /// Whether the task is no longer this handler's to finish (another attempt runs it, or
    /// it finished, expired or was removed meanwhile).
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        matches!(self.kind, ExitKind::Stopped(_))
    }

    /// The JSON-RPC error the call fails with, if that is how it ends.
    #[must_use]
    pub fn as_error(&self) -> Option<&JsonRpcError> {
        match &self.kind {
            ExitKind::Error(error) => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC error this exit answers a call with, where the call is answered (not a
    /// task): a cancel or a stop read as `-32603`.
    pub(crate) fn into_jsonrpc(self) -> JsonRpcError {
        match self.kind {
            ExitKind::Error(error) => error,
            ExitKind::Cancelled => {
                JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the request was cancelled")
            }
            ExitKind::Stopped(why) => JsonRpcError::new(jsonrpc::INTERNAL_ERROR, why),
            ExitKind::Ask(_) => JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "the tool needs input that this request cannot carry",
            ),
        }
    }
}

impl fmt::Debug for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExitKind::Cancelled => f.write_str("Exit::Cancelled"),
            ExitKind::Stopped(why) => f.debug_tuple("Exit::Stopped").field(why).finish(),
            ExitKind::Error(error) => f.debug_tuple("Exit::Error").field(error).finish(),
            ExitKind::Ask(ask) => f.debug_tuple("Exit::InputRequired").field(ask).finish(),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExitKind::Cancelled => f.write_str("cancelled at the requestor's request"),
            ExitKind::Stopped(why) => write!(f, "stopped: {why}"),
            ExitKind::Error(error) => write!(f, "{error}"),
            ExitKind::Ask(_) => f.write_str("input required"),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Exit {
    fn from(error: E) -> Self {
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
        let boxed = match boxed.downcast::<JsonRpcError>() {
            Ok(error) => return Exit::error(*error),
            Err(other) => other,
        };
        match boxed.downcast::<Error>() {
            Ok(error) => from_store(*error),
            Err(other) => Exit::internal(mcp_tasks::backend::shorten(&other.to_string())),
        }
    }
}

/// The exit a store's answer to this handler's write means.
fn from_store(error: Error) -> Exit {
    match error {
        Error::CancelRequested { .. } => Exit::cancelled(),
        ref gone if is_gone(gone) => Exit::stopped(gone.to_string()),
        other => Exit::error(other.to_jsonrpc()),
    }
}

/// Whether a write was refused because the task is no longer this handler's: finished,
/// gone, or run by another attempt now.
pub(crate) fn is_gone(error: &Error) -> bool {
    matches!(
        error,
        Error::TaskNotFound { .. } | Error::TaskCancelled { .. } | Error::Superseded { .. }
    ) || matches!(error, Error::IllegalTransition { from, .. } if from.is_terminal())
}

/// The answer to a form-mode elicitation ([`Context::elicit`]). It serializes (with the
/// content's own form) so that a handler may save it as a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Elicited<T> {
    /// The user answered (`accept`), with the form's content.
    Accept(T),
    /// The user declined to answer.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

/// The typed handle of the running task, in whichever unfinished status it is.
pub(crate) enum Slot {
    Working(TaskHandle<Working, Store>),
    Waiting(TaskHandle<InputRequired, Store>),
    /// Finished, taken by the handler, or no longer this handler's.
    Spent,
}

/// A context's stored task.
pub(crate) struct Running {
    pub(crate) store: Store,
    pub(crate) id: TaskId,
    key: Box<str>,
    slot: Mutex<Slot>,
    /// The status message last set: each move of the typed handle carries it.
    message: Mutex<Option<String>>,
    /// Answers gathered in input rounds before the task was created
    /// ([`ToolBuilder::ask_first`](crate::ToolBuilder::ask_first)), by key, until read.
    first: Mutex<JsonObject>,
    /// Fired by the runner when the task's one cancel wait resolves: what
    /// [`Context::cancelled`] waits for, so that a handler's waits add no store wait of
    /// their own.
    cancel: Signal,
}

/// A one-way signal: fired once, awaited by any number of futures on any thread.
#[derive(Default)]
pub(crate) struct Signal {
    state: Mutex<(bool, Vec<std::task::Waker>)>,
}

impl Signal {
    /// Fires it: every waiter wakes, and every wait from now on is ready.
    pub(crate) fn fire(&self) {
        let wakers = {
            let mut state = lock(&self.state);
            state.0 = true;
            std::mem::take(&mut state.1)
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Resolves once fired.
    pub(crate) async fn fired(&self) {
        std::future::poll_fn(|cx| {
            let mut state = lock(&self.state);
            if state.0 {
                return Poll::Ready(());
            }
            if !state.1.iter().any(|waker| waker.will_wake(cx.waker())) {
                state.1.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await;
    }
}

/// A call running at once (not a task): what it may send its client, and its input rounds.
pub(crate) struct Inline {
    pub(crate) peer: Option<Arc<dyn Peer>>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) log_level: Option<LogLevel>,
    /// On 2026-07-28: the answers this call's rounds carried (and remembered), by key.
    pub(crate) rounds: Option<Rounds>,
}

/// The input rounds of a call running at once on 2026-07-28.
pub(crate) struct Rounds {
    /// The round's number (0: no `requestState`).
    pub(crate) number: u32,
    /// The answers: remembered by earlier rounds, then this retry's, by key (not yet
    /// checked against their questions).
    pub(crate) answers: JsonObject,
}

enum Mode {
    Task(Running),
    Inline(Mutex<Inline>),
}

pub(crate) struct Inner {
    timer: Arc<dyn Timer>,
    tool: Arc<str>,
    owner: Owner,
    generation: Generation,
    /// The client's declared capabilities, as far as the wire tells (2026-07-28: the
    /// request's `_meta`; 2025-11-25: `elicitation` from `initialize`).
    capabilities: Value,
    attempt: u32,
    checkpoint: Option<Value>,
    answer_timeout: Duration,
    mode: Mode,
}

/// What a running handler sees of its call: its task (if it runs as one), its client, and
/// the earlier attempts. Cheap to clone; every clone is the same call.
///
/// Every operation works whether the call runs as a task or at once: asking for input
/// waits for `tasks/update` (or a 2025-11-25 `elicitation/create` answer) in a task, asks
/// the client directly on 2025-11-25 at once, and on 2026-07-28 at once answers an
/// `InputRequiredResult` whose retry runs the handler again with the answers.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("tool", &self.inner.tool)
            .field("task", &self.task_id())
            .field("attempt", &self.inner.attempt)
            .finish_non_exhaustive()
    }
}

/// What a context is built from, whatever its mode.
pub(crate) struct Call {
    pub(crate) timer: Arc<dyn Timer>,
    pub(crate) tool: Arc<str>,
    pub(crate) owner: Owner,
    pub(crate) generation: Generation,
    pub(crate) capabilities: Value,
    pub(crate) answer_timeout: Duration,
}

impl Context {
    /// The context of a task's run: attempt `attempt` from `checkpoint`, with the answers
    /// gathered before the task (`first`).
    pub(crate) fn task(
        call: Call,
        handle: TaskHandle<Working, Store>,
        store: Store,
        attempt: u32,
        checkpoint: Option<Value>,
        first: JsonObject,
        message: Option<String>,
    ) -> Self {
        let id = handle.id().clone();
        Self::new(
            call,
            attempt,
            checkpoint,
            Mode::Task(Running {
                store,
                key: id.to_string().into_boxed_str(),
                id,
                slot: Mutex::new(Slot::Working(handle)),
                message: Mutex::new(message),
                first: Mutex::new(first),
                cancel: Signal::default(),
            }),
        )
    }

    /// The context of a call running at once.
    pub(crate) fn inline(call: Call, inline: Inline) -> Self {
        Self::new(call, 1, None, Mode::Inline(Mutex::new(inline)))
    }

    fn new(call: Call, attempt: u32, checkpoint: Option<Value>, mode: Mode) -> Self {
        Self {
            inner: Arc::new(Inner {
                timer: call.timer,
                tool: call.tool,
                owner: call.owner,
                generation: call.generation,
                capabilities: call.capabilities,
                attempt,
                checkpoint,
                answer_timeout: call.answer_timeout,
                mode,
            }),
        }
    }

    /// The tool being run.
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// The task's id, or `None` when the call runs at once.
    #[must_use]
    pub fn task_id(&self) -> Option<&TaskId> {
        match &self.inner.mode {
            Mode::Task(running) => Some(&running.id),
            Mode::Inline(_) => None,
        }
    }

    /// The requestor: whom the task belongs to (the bearer token's principal, the session,
    /// or the stdio client).
    #[must_use]
    pub fn owner(&self) -> &Owner {
        &self.inner.owner
    }

    /// The wire generation of the call that made the task (or runs at once).
    #[must_use]
    pub fn generation(&self) -> Generation {
        self.inner.generation
    }

    /// The attempt running: 1 for the first run (and for any call that runs once), 2 for
    /// the first redelivery on another instance, and so on.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// Whether the client declared `capability` (`elicitation`, `sampling`, `roots`, ...).
    /// On 2026-07-28 a request declares its client's capabilities in its `_meta`; on
    /// 2025-11-25 the server knows what the client declared at `initialize` on the
    /// connection the call came on (none for a redelivered task). A capability is declared
    /// by an object (`"sampling": {}`); any other value (`"sampling": true`) declares
    /// nothing, as when the server checks what an input round asks.
    #[must_use]
    pub fn client_declares(&self, capability: &str) -> bool {
        self.inner
            .capabilities
            .get(capability)
            .is_some_and(Value::is_object)
    }

    /// On 2026-07-28, for a call running at once, the number of its input round: 0 for a
    /// call without a `requestState`, then one more for each retry that brought one back.
    /// `None` anywhere else.
    #[must_use]
    pub fn input_round(&self) -> Option<u32> {
        match &self.inner.mode {
            Mode::Inline(inline) => lock(inline).rounds.as_ref().map(|rounds| rounds.number),
            Mode::Task(_) => None,
        }
    }

    /// The checkpoint an earlier attempt saved last ([`save_checkpoint`](Self::save_checkpoint)),
    /// read as `T`: where this attempt resumes instead of starting from zero. `None` on the
    /// first attempt; checkpoints saved by this attempt are not read back here.
    ///
    /// # Errors
    /// `-32603` if the checkpoint does not read as `T` (another version of the tool saved
    /// it): the task fails rather than start over unknowingly.
    pub fn checkpoint<T: DeserializeOwned>(&self) -> Result<Option<T>, Exit> {
        match &self.inner.checkpoint {
            None => Ok(None),
            Some(saved) => T::deserialize(saved).map(Some).map_err(|err| {
                Exit::internal(format!(
                    "the checkpoint of `{}` does not read as this version of the tool expects: {err}",
                    self.inner.tool
                ))
            }),
        }
    }

    /// Saves `progress` in the task (one store write, at most
    /// [`MAX_CHECKPOINT_BYTES`](mcp_tasks::MAX_CHECKPOINT_BYTES) as JSON): a small value (a
    /// step, a cursor, the answer already read) that the next attempt of a redeliverable
    /// task reads back with [`checkpoint`](Self::checkpoint). Each replaces the last; never
    /// shown to clients. Nothing happens for a call running at once. A store that cannot be
    /// reached now only loses this checkpoint (a re-run then repeats a little more): it is
    /// logged, and the work goes on.
    ///
    /// # Errors
    /// An exit to pass on: stopped when another instance runs the task now, or it finished
    /// or is gone; cancelled when cancelled; `-32602` for a value over the limit or one that
    /// does not serialize.
    pub fn save_checkpoint<T: Serialize + ?Sized>(&self, progress: &T) -> Result<(), Exit> {
        let Mode::Task(running) = &self.inner.mode else {
            return Ok(());
        };
        let value = serde_json::to_value(progress).map_err(|err| {
            Exit::invalid_params(format!("the checkpoint does not serialize: {err}"))
        })?;
        let saved = match &*lock(&running.slot) {
            Slot::Working(handle) => handle.checkpoint(value),
            Slot::Waiting(handle) => handle.checkpoint(value),
            Slot::Spent => return Err(Exit::stopped("the task is no longer this handler's")),
        };
        self.tolerate_outage(saved, "its checkpoint")
    }

    /// Sets the task's status message (what `tasks/get` shows beside its status), kept
    /// across its moves; nothing for a call running at once. A store that cannot be reached
    /// now is logged and the work goes on.
    ///
    /// # Errors
    /// As for [`save_checkpoint`](Self::save_checkpoint).
    pub fn set_status(&self, message: impl Into<String>) -> Result<(), Exit> {
        let Mode::Task(running) = &self.inner.mode else {
            return Ok(());
        };
        let message = message.into();
        *lock(&running.message) = Some(message.clone());
        let set = match &*lock(&running.slot) {
            Slot::Working(handle) => handle.set_status_message(Some(message)),
            Slot::Waiting(handle) => handle.set_status_message(Some(message)),
            Slot::Spent => return Err(Exit::stopped("the task is no longer this handler's")),
        };
        self.tolerate_outage(set, "its status message")
    }

    /// A store write that an outage only delays: logged, not an exit.
    fn tolerate_outage(&self, written: Result<(), Error>, what: &str) -> Result<(), Exit> {
        match written {
            Ok(()) => Ok(()),
            Err(error @ Error::Store { .. }) => {
                log::warn!(
                    "task {}: {what} could not be written now: {error}",
                    self.task_id().map(ToString::to_string).unwrap_or_default()
                );
                Ok(())
            }
            Err(error) => Err(from_store(error)),
        }
    }

    /// Asks the requestor for input under `key` (an elicitation, a sampling or a roots
    /// request) and waits for the answer, checked against the request (an answer of
    /// another shape is never read as empty).
    ///
    /// In a task, the task is `input_required` with the request in `inputRequests` (and, on
    /// 2025-11-25, the request goes to the client as `elicitation/create`) until the answer
    /// arrives, then `working` again. At once on 2025-11-25 the request goes to the client
    /// on the call's connection; at once on 2026-07-28 the call is answered with an
    /// `InputRequiredResult` and the handler runs again, from the start, on the retry that
    /// brings the answer (so a handler that asks at once does nothing before asking that it
    /// must not repeat).
    ///
    /// # Errors
    /// Cancelled if the requestor cancels meanwhile; stopped if another instance runs the
    /// task now, or it finished or is gone; `-32602` for an answer that does not match the
    /// request; `-32603` when no answer came within the tool's answer timeout, or the
    /// client cannot be asked on this connection.
    pub async fn ask(&self, key: impl Into<String>, request: InputRequest) -> Result<Value, Exit> {
        let key = key.into();
        let mut answers = self
            .ask_all(InputRequests::new().with(key.clone(), request))
            .await?;
        Ok(answers.remove(&key).unwrap_or_default())
    }

    /// Asks several things at once (all outstanding together) and waits until every one
    /// is answered; the answers come back under the keys given. As for [`ask`](Self::ask).
    ///
    /// # Errors
    /// As for [`ask`](Self::ask).
    pub async fn ask_all(&self, requests: InputRequests) -> Result<BTreeMap<String, Value>, Exit> {
        if requests.is_empty() {
            return Ok(BTreeMap::new());
        }
        match &self.inner.mode {
            Mode::Task(running) => self.ask_in_task(running, requests).await,
            Mode::Inline(inline) => self.ask_inline(inline, requests).await,
        }
    }

    /// Asks the requestor to fill a form whose schema is `T`'s (a flat object of strings,
    /// numbers, booleans and enums, as MCP's elicitation allows), under `key`, with
    /// `message`; reads the answer as `T`. As for [`ask`](Self::ask).
    ///
    /// # Errors
    /// As for [`ask`](Self::ask); `-32602` when the accepted content does not read as `T`.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, Exit> {
        let request = answers::form::<T>(&message.into());
        let answer = self.ask(key, request).await?;
        match answer.get("action").and_then(Value::as_str) {
            Some("accept") => {
                let content = answer.get("content").cloned().unwrap_or_default();
                T::deserialize(content)
                    .map(Elicited::Accept)
                    .map_err(|err| {
                        Exit::invalid_params(format!(
                            "the answer to `{key}` does not match the requested schema: {err}"
                        ))
                    })
            }
            Some("decline") => Ok(Elicited::Decline),
            _ => Ok(Elicited::Cancel),
        }
    }

    /// Resolves once the requestor asks to cancel the task (or at once if it did), or the
    /// task is finished, gone or no longer this handler's. For a call running at once it
    /// never resolves. A store that cannot be reached for a while is waited out.
    pub async fn cancelled(&self) {
        let Mode::Task(running) = &self.inner.mode else {
            return std::future::pending().await;
        };
        running.cancel.fired().await;
    }

    /// The task's one wait on the store for a cancel (the runner's): resolves once the
    /// requestor asks to cancel, or the task is finished, gone or no longer this handler's.
    async fn store_cancel_wait(&self) {
        let Mode::Task(running) = &self.inner.mode else {
            return std::future::pending().await;
        };
        loop {
            match running
                .store
                .wait_for_cancel_async(&self.inner.owner, &running.key)
                .await
            {
                Err(Error::Store { .. }) => self.inner.timer.sleep(OUTAGE_PAUSE).await,
                Ok(()) | Err(_) => return,
            }
        }
    }

    /// `work`'s output, unless the requestor cancels first ([`cancelled`](Self::cancelled)):
    /// then `work` is dropped and the exit is cancelled (stopped, when the task finished or
    /// is no longer this handler's).
    ///
    /// # Errors
    /// The exit that ended the wait.
    pub async fn until_cancelled<F: Future>(&self, work: F) -> Result<F::Output, Exit> {
        let mut work = std::pin::pin!(work);
        let mut cancelled = std::pin::pin!(self.cancelled());
        let ended = std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(output));
            }
            if cancelled.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(()));
            }
            Poll::Pending
        })
        .await;
        match ended {
            Ok(output) => Ok(output),
            Err(()) => Err(self.why_cancelled()),
        }
    }

    /// Sleeps `duration` without holding a thread, unless the requestor cancels first.
    ///
    /// # Errors
    /// As for [`until_cancelled`](Self::until_cancelled).
    pub async fn sleep(&self, duration: Duration) -> Result<(), Exit> {
        self.until_cancelled(self.inner.timer.sleep(duration)).await
    }

    /// Why the cancel wait resolved: a cancel, or a task that is no longer this handler's.
    fn why_cancelled(&self) -> Exit {
        let Mode::Task(running) = &self.inner.mode else {
            return Exit::cancelled();
        };
        match running.store.get(&self.inner.owner, &running.key) {
            Ok(task)
                if task.cancel_requested() || task.status() == mcp_tasks::TaskStatus::Cancelled =>
            {
                Exit::cancelled()
            }
            Ok(task) if task.is_terminal() => Exit::stopped("the task finished meanwhile"),
            Err(error) if is_gone(&error) => Exit::stopped(error.to_string()),
            // Read as a cancel: a store that cannot be read says nothing, but the wait that
            // resolved did.
            _ => Exit::cancelled(),
        }
    }

    /// Sends `notifications/progress` for the call's progress token, if the call runs at
    /// once and asked for progress (MCP's tasks carry no progress notifications).
    pub fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) {
        let Mode::Inline(inline) = &self.inner.mode else {
            return;
        };
        let inline = lock(inline);
        let (Some(peer), Some(token)) = (&inline.peer, &inline.progress_token) else {
            return;
        };
        let mut params = serde_json::json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        peer.notify("notifications/progress", params);
    }

    /// Sends `notifications/message` at `level` from `logger`, if the call runs at once and
    /// its client wants that level (MCP's tasks carry no log notifications).
    pub fn log(&self, level: LogLevel, logger: &str, data: Value) {
        let Mode::Inline(inline) = &self.inner.mode else {
            return;
        };
        let inline = lock(inline);
        let Some(peer) = &inline.peer else { return };
        if inline.log_level.is_some_and(|least| level >= least) {
            peer.notify(
                "notifications/message",
                serde_json::json!({"level": level.as_str(), "logger": logger, "data": data}),
            );
        }
    }

    /// Sends a request to the client on the call's connection and waits for its answer:
    /// for a call running at once on 2025-11-25 (the 2026-07-28 wire has no requests from
    /// server to client; ask with [`ask`](Self::ask) there).
    ///
    /// # Errors
    /// The client's error answer; `-32603` when the client cannot be asked here: in a task,
    /// or on 2026-07-28, whatever the transport (nothing is sent).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, JsonRpcError> {
        if self.inner.generation == Generation::Extension {
            return Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "`{method}` cannot reach the client: the 2026-07-28 wire has no requests \
                     from server to client (ask for input with `Context::ask`)"
                ),
            ));
        }
        let peer = match &self.inner.mode {
            Mode::Inline(inline) => lock(inline).peer.clone(),
            Mode::Task(_) => None,
        };
        match peer {
            Some(peer) => peer.request(method, params).await,
            None => Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("`{method}` cannot reach the client from here"),
            )),
        }
    }

    /// Asks the transport to close the call's event stream now (Streamable HTTP,
    /// SEP-1699): the client resumes it with `Last-Event-ID` and gets what follows, the
    /// answer included. Elsewhere nothing happens.
    pub fn close_stream(&self) {
        if let Mode::Inline(inline) = &self.inner.mode
            && let Some(peer) = &lock(inline).peer
        {
            peer.close_stream();
        }
    }

    /// Takes the task's typed handle, in `working`, for a handler that drives the statuses
    /// itself: from now on the context moves nothing, and the handler answers
    /// [`Settled`](crate::Settled) once it has finished the task.
    ///
    /// # Errors
    /// `-32603` for a call running at once (it has no task) or a handle already taken or
    /// waiting for input; stopped if the task is no longer this handler's.
    pub fn take_handle(&self) -> Result<TaskHandle<Working, Store>, Exit> {
        let Mode::Task(running) = &self.inner.mode else {
            return Err(Exit::internal(
                "the call runs at once: there is no task handle to take",
            ));
        };
        let mut slot = lock(&running.slot);
        match std::mem::replace(&mut *slot, Slot::Spent) {
            Slot::Working(handle) => Ok(carry(handle, &running.message)),
            Slot::Waiting(handle) => {
                *slot = Slot::Waiting(handle);
                Err(Exit::internal(
                    "the task waits for input: its handle can be taken only while it works",
                ))
            }
            Slot::Spent => Err(Exit::stopped(
                "the task handle was already taken, or the task ended",
            )),
        }
    }

    /// In a task: asks through the store and waits.
    async fn ask_in_task(
        &self,
        running: &Running,
        requests: InputRequests,
    ) -> Result<BTreeMap<String, Value>, Exit> {
        // What was answered before the task existed is not asked again.
        let mut answered = BTreeMap::new();
        let mut wanted = InputRequests::new();
        {
            let mut first = lock(&running.first);
            for (key, request) in requests.iter() {
                match first.remove(key) {
                    Some(answer) => {
                        let answer =
                            answers::checked(key, request, &answer).map_err(Exit::error)?;
                        answered.insert(key.to_owned(), answer);
                    }
                    None => wanted = wanted.with(key, request.clone()),
                }
            }
        }
        if wanted.is_empty() {
            return Ok(answered);
        }
        {
            let mut slot = lock(&running.slot);
            let handle = match std::mem::replace(&mut *slot, Slot::Spent) {
                Slot::Working(handle) => handle,
                Slot::Waiting(handle) => {
                    *slot = Slot::Waiting(handle);
                    return Err(Exit::internal(
                        "the task already waits for input: ask once at a time (ask_all asks \
                         several things together)",
                    ));
                }
                Slot::Spent => return Err(Exit::stopped("the task is no longer this handler's")),
            };
            match carry(handle, &running.message).require_input(wanted.clone()) {
                Ok(waiting) => *slot = Slot::Waiting(waiting),
                Err(error) => return Err(from_store(error)),
            }
        }
        let answers = self.wait_for_answers(running).await?;
        for (key, request) in wanted.iter() {
            let answer = answers.get(key).cloned().unwrap_or_default();
            answers::check(request, &answer).map_err(|why| {
                Exit::invalid_params(format!(
                    "the answer to `{key}` does not match the requested schema: {why}"
                ))
            })?;
            answered.insert(key.to_owned(), answer);
        }
        let mut slot = lock(&running.slot);
        match std::mem::replace(&mut *slot, Slot::Spent) {
            Slot::Waiting(waiting) => match carry(waiting, &running.message).resume() {
                Ok(working) => *slot = Slot::Working(working),
                Err(error) => return Err(from_store(error)),
            },
            other => {
                *slot = other;
                return Err(Exit::stopped("the task is no longer this handler's"));
            }
        }
        Ok(answered)
    }

    /// Waits for the answers to the task's outstanding requests, within the tool's answer
    /// timeout, looking every second whether another attempt runs the task now, and
    /// riding out a store that cannot be reached.
    async fn wait_for_answers(&self, running: &Running) -> Result<BTreeMap<String, Value>, Exit> {
        let deadline = Instant::now() + self.inner.answer_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = within_on(
                &*self.inner.timer,
                left.min(SUPERSEDED_CHECK),
                running
                    .store
                    .wait_for_input_async(&self.inner.owner, &running.key),
            )
            .await;
            match waited {
                Some(Ok(answers)) => {
                    return Ok(answers
                        .iter()
                        .map(|(key, answer)| (key.to_owned(), Value::Object(answer.clone())))
                        .collect());
                }
                Some(Err(Error::CancelRequested { .. })) => return Err(Exit::cancelled()),
                _ if self.superseded(running) => {
                    return Err(Exit::stopped("another instance runs the task now"));
                }
                None if left > SUPERSEDED_CHECK => {}
                Some(Err(Error::Store { .. })) if !left.is_zero() => {
                    self.inner.timer.sleep(OUTAGE_PAUSE).await;
                }
                None | Some(Err(Error::Store { .. })) => {
                    return Err(Exit::internal("the requestor did not answer in time"));
                }
                Some(Err(error)) => return Err(from_store(error)),
            }
        }
    }

    /// Whether another attempt runs the task now (it was claimed elsewhere): this
    /// handler's writes are refused, and it must neither take the task's answers nor give
    /// up the lease.
    fn superseded(&self, running: &Running) -> bool {
        let mine = match &*lock(&running.slot) {
            Slot::Working(handle) => handle.attempt(),
            Slot::Waiting(handle) => handle.attempt(),
            Slot::Spent => return false,
        };
        let Some(mine) = mine else { return false };
        running
            .store
            .get(&self.inner.owner, &running.key)
            .is_ok_and(|task| {
                task.attempts()
                    .is_some_and(|attempts| attempts.attempt() != mine)
            })
    }

    /// At once: from the client on 2025-11-25, from the rounds on 2026-07-28.
    async fn ask_inline(
        &self,
        inline: &Mutex<Inline>,
        requests: InputRequests,
    ) -> Result<BTreeMap<String, Value>, Exit> {
        let (peer, from_rounds) = {
            let inline = lock(inline);
            (inline.peer.clone(), inline.rounds.is_some())
        };
        if from_rounds {
            let mut inline = lock(inline);
            let Some(rounds) = inline.rounds.as_mut() else {
                return Err(Exit::internal("no input rounds"));
            };
            let mut answered = BTreeMap::new();
            let mut missing = InputRequests::new();
            for (key, request) in requests.iter() {
                match rounds.answers.get(key) {
                    Some(answer) => {
                        let answer =
                            answers::checked_response(key, request, answer).map_err(Exit::error)?;
                        answered.insert(key.to_owned(), answer);
                    }
                    None => missing = missing.with(key, request.clone()),
                }
            }
            if missing.is_empty() {
                return Ok(answered);
            }
            // Ask what is missing, remembering every answer so far: the retry runs the
            // handler again from the start.
            let remembered: JsonObject = rounds
                .answers
                .iter()
                .map(|(key, answer)| (key.clone(), answer.clone()))
                .collect();
            return Err(Exit::ask(
                Ask::new(missing).remembering(Value::Object(remembered)),
            ));
        }
        let Some(peer) = peer else {
            return Err(Exit::internal(
                "this call cannot ask its client for input here",
            ));
        };
        let mut answered = BTreeMap::new();
        for (key, request) in requests.iter() {
            let capability = request.capability();
            if let Some(capability) = capability
                && !self.client_declares(capability)
            {
                return Err(Exit::error(JsonRpcError::new(
                    jsonrpc::INVALID_PARAMS,
                    format!(
                        "invalid params: the `{}` tool asks the client through `{}`, and this \
                         client did not declare the `{capability}` capability",
                        self.inner.tool, request.method
                    ),
                )));
            }
            let answer = peer
                .request(&request.method, Value::Object(request.params.clone()))
                .await
                .map_err(Exit::error)?;
            let answer = answers::checked(key, request, &answer).map_err(Exit::error)?;
            answered.insert(key.to_owned(), answer);
        }
        Ok(answered)
    }

    /// Hands the task over to another instance through the handle the context holds (the
    /// handle is spent by the hand-over, so nothing this handler does later writes):
    /// `None` when the context holds no handle any more.
    pub(crate) fn hand_over(&self) -> Option<Result<bool, Error>> {
        let running = self.running()?;
        let mut slot = lock(&running.slot);
        let (kept, handed) = match std::mem::replace(&mut *slot, Slot::Spent) {
            Slot::Working(handle) => match handle.hand_over() {
                Ok(_) => (Slot::Spent, Ok(true)),
                Err((handle, error)) => (Slot::Working(handle), error.map_or(Ok(false), Err)),
            },
            Slot::Waiting(handle) => match handle.hand_over() {
                Ok(_) => (Slot::Spent, Ok(true)),
                Err((handle, error)) => (Slot::Waiting(handle), error.map_or(Ok(false), Err)),
            },
            Slot::Spent => return None,
        };
        *slot = kept;
        Some(handed)
    }

    /// A weak reference, for the server's table of the tasks running here.
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The context a weak reference names, if it still runs.
    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| Self { inner })
    }

    /// The slot of a task's context, for the runner that finishes it.
    pub(crate) fn running(&self) -> Option<&Running> {
        match &self.inner.mode {
            Mode::Task(running) => Some(running),
            Mode::Inline(_) => None,
        }
    }

    /// The owner's key of the task (its id as text).
    pub(crate) fn store_key(running: &Running) -> &str {
        &running.key
    }

    /// Takes whatever handle the task still has, for the runner to finish it with.
    pub(crate) fn take_slot(running: &Running) -> (Slot, Option<String>) {
        let slot = std::mem::replace(&mut *lock(&running.slot), Slot::Spent);
        (slot, lock(&running.message).clone())
    }
}

/// The handle, its next move keeping the status message last set.
pub(crate) fn carry<S: TaskState, T: TaskStore>(
    handle: TaskHandle<S, T>,
    message: &Mutex<Option<String>>,
) -> TaskHandle<S, T> {
    match lock(message).clone() {
        Some(message) => handle.with_message(message),
        None => handle,
    }
}

/// The one lock helper: a poisoned lock (a panic while held) is taken over as it is; what
/// it guards stays consistent because every critical section here is a swap or a read.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The future of a context's cancel wait, boxed (for the runner's race).
pub(crate) type CancelWait = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Context {
    /// The timer of this call's waits.
    pub(crate) fn timer(&self) -> &dyn Timer {
        &*self.inner.timer
    }

    /// The task's cancel wait on the store, owned (for the runner, which races the handler
    /// with it): when it resolves, every [`cancelled`](Self::cancelled) of the handler's
    /// context resolves too.
    pub(crate) fn cancel_wait(&self) -> CancelWait {
        let context = self.clone();
        Box::pin(async move {
            context.store_cancel_wait().await;
            if let Some(running) = context.running() {
                running.cancel.fire();
            }
        })
    }
}

/// The `-32021` of a capability the client must declare.
#[must_use]
pub fn capability_required(capability: &str, message: impl Into<String>) -> JsonRpcError {
    ext::capability_required(capability, message)
}
