//! How a prepared call runs: a task's handler raced with its cancel and finished by its
//! context, or a call at once run to its answer. A panic fails the task (or answers the
//! call) with `-32603`; the server goes on.
//!
//! A task whose requestor cancels is settled `cancelled` at once, whether or not the
//! handler notices: the handler then has [`CANCEL_GRACE`] to stop on its own (its writes
//! are refused from then on, its result too), and an async handler is dropped after it.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use mcp_tasks::{JsonObject, Outcome, TaskHandle, TaskStatus, jsonrpc};

use crate::context::{CANCELLED_MESSAGE, Context, Exit, ExitKind, Slot, is_gone};
use crate::handler::{self, CatchUnwind, Prepared};
use crate::result::Produced;
use crate::server::Store;
use crate::work::{Work, on_thread, within_on};

/// How long a handler whose task was cancelled may run on to stop by itself.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// What a call at once answers.
pub(crate) enum Answered {
    /// Its `CallToolResult` (or a method's result).
    Result(JsonObject),
}

/// What a handler ended with: its answer or exit, or its panic's message.
type Ended = Result<Result<Produced, Exit>, String>;

/// A task's work: the handler raced with the task's cancel, then the task finished with
/// what the handler answered.
pub(crate) fn task(prepared: Prepared, context: Context) -> Work {
    Work::future(async move {
        let tool = context.tool().to_owned();
        let handler: Pin<Box<dyn Future<Output = Ended> + Send>> = match prepared {
            Prepared::Async(start) => Box::pin(CatchUnwind(start(context.clone()))),
            Prepared::Blocking(run) => {
                let inner = context.clone();
                Box::pin(on_thread(move || run(inner)))
            }
        };
        let mut handler = handler;
        let mut cancel = context.cancel_wait();
        let ended = std::future::poll_fn(|cx| {
            if let Poll::Ready(ended) = handler.as_mut().poll(cx) {
                return Poll::Ready(Some(ended));
            }
            if cancel.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        match ended {
            Some(ended) => finish(&context, &tool, ended),
            None => {
                // The requestor cancelled (or the task ended elsewhere): settle it now, then
                // give the handler its grace to stop by itself.
                settle_cancelled(&context);
                if within_on(context.timer(), CANCEL_GRACE, handler)
                    .await
                    .is_none()
                {
                    log::debug!(
                        "task {}: the handler of `{tool}` did not stop within {CANCEL_GRACE:?} \
                         of its cancel; dropped",
                        task_id(&context)
                    );
                }
            }
        }
    })
}

/// A call at once, on this thread (a blocking handler; an async one is polled here).
pub(crate) fn inline_blocking(prepared: Prepared, context: Context) -> Result<Answered, Exit> {
    let tool = context.tool().to_owned();
    let ended = match prepared {
        Prepared::Blocking(run) => handler::catch(move || run(context)),
        Prepared::Async(start) => crate::work::block_on(CatchUnwind(start(context))),
    };
    answered(&tool, ended)
}

/// A call at once, as a future (a blocking handler runs on a thread of its own).
pub(crate) async fn inline_async(prepared: Prepared, context: Context) -> Result<Answered, Exit> {
    let tool = context.tool().to_owned();
    let ended = match prepared {
        Prepared::Async(start) => CatchUnwind(start(context)).await,
        Prepared::Blocking(run) => on_thread(move || run(context)).await,
    };
    answered(&tool, ended)
}

fn answered(tool: &str, ended: Ended) -> Result<Answered, Exit> {
    match ended {
        Ok(Ok(Produced::Result(result))) => Ok(Answered::Result(result)),
        Ok(Ok(Produced::Settled)) => Err(Exit::internal(format!(
            "the handler of `{tool}` answered that it settled a task, but the call ran at once"
        ))),
        Ok(Err(exit)) => Err(exit),
        Err(panic) => Err(Exit::error(handler::panicked(tool, &panic))),
    }
}

fn task_id(context: &Context) -> String {
    context
        .task_id()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Finishes the task with what its handler ended with, through whatever handle the
/// context still holds.
fn finish(context: &Context, tool: &str, ended: Ended) {
    let Some(running) = context.running() else {
        return;
    };
    let (slot, message) = Context::take_slot(running);
    let id = task_id(context);
    let written = match ended {
        Ok(Ok(Produced::Result(result))) => {
            with_slot(slot, message, |finish| finish.result(result))
        }
        Ok(Ok(Produced::Settled)) => {
            if !matches!(slot, Slot::Spent) {
                log::warn!(
                    "task {id}: the handler of `{tool}` answered `Settled` but did not take the \
                     task's handle; the task is left as it is"
                );
                detach(slot);
            }
            Ok(())
        }
        Ok(Err(exit)) => match exit.into_kind() {
            ExitKind::Cancelled => with_slot(slot, message, Finish::cancel),
            ExitKind::Stopped(why) => {
                log::debug!("task {id}: the handler of `{tool}` stopped: {why}");
                detach(slot);
                Ok(())
            }
            ExitKind::Error(error) => {
                with_slot(slot, message, |finish| finish.fail(Outcome::Error(error)))
            }
            ExitKind::Ask(_) => with_slot(slot, message, |finish| {
                finish.fail(Outcome::error(
                    jsonrpc::INTERNAL_ERROR,
                    "the tool needs input that a task cannot ask in rounds",
                ))
            }),
        },
        Err(panic) => with_slot(slot, message, |finish| {
            finish.fail(Outcome::Error(handler::panicked(tool, &panic)))
        }),
    };
    if let Err(error) = written {
        if is_gone(&error) {
            log::debug!("task {id}: the result of `{tool}` was refused: {error}");
        } else {
            log::warn!("task {id}: the result of `{tool}` could not be stored: {error}");
        }
    }
}

/// The task's requestor cancelled, or the task ended elsewhere: settle what the context
/// still holds accordingly.
fn settle_cancelled(context: &Context) {
    let Some(running) = context.running() else {
        return;
    };
    let still_working = running
        .store
        .get(context.owner(), Context::store_key(running))
        .map(|task| (task.status(), task.cancel_requested()));
    let (slot, message) = Context::take_slot(running);
    match still_working {
        // A cancel request (2026-07-28) on a task still running: honour it.
        Ok((TaskStatus::Working | TaskStatus::InputRequired, true)) => {
            if let Err(error) = with_slot(slot, message, Finish::cancel)
                && !is_gone(&error)
            {
                log::warn!("task {}: could not be cancelled: {error}", task_id(context));
            }
        }
        // Cancelled, finished, gone or no longer this handler's: nothing to write.
        _ => detach(slot),
    }
}

/// A finishing move, from either unfinished status.
struct Finish(Slot, Option<String>);

impl Finish {
    fn result(self, result: JsonObject) -> Result<(), mcp_tasks::Error> {
        match self.0 {
            Slot::Working(handle) => carry(handle, self.1).finish(result).map(drop),
            Slot::Waiting(handle) => carry(handle, self.1).finish(result).map(drop),
            Slot::Spent => Ok(()),
        }
    }

    fn fail(self, outcome: Outcome) -> Result<(), mcp_tasks::Error> {
        match self.0 {
            Slot::Working(handle) => carry(handle, self.1).fail(outcome).map(drop),
            Slot::Waiting(handle) => carry(handle, self.1).fail(outcome).map(drop),
            Slot::Spent => Ok(()),
        }
    }

    fn cancel(self) -> Result<(), mcp_tasks::Error> {
        let message = Some(CANCELLED_MESSAGE.to_owned());
        match self.0 {
            Slot::Working(handle) => carry(handle, message).cancel().map(drop),
            Slot::Waiting(handle) => carry(handle, message).cancel().map(drop),
            Slot::Spent => Ok(()),
        }
    }
}

fn with_slot(
    slot: Slot,
    message: Option<String>,
    finish: impl FnOnce(Finish) -> Result<(), mcp_tasks::Error>,
) -> Result<(), mcp_tasks::Error> {
    finish(Finish(slot, message))
}

fn carry<S: mcp_tasks::TaskState>(
    handle: TaskHandle<S, Store>,
    message: Option<String>,
) -> TaskHandle<S, Store> {
    match message {
        Some(message) => handle.with_message(message),
        None => handle,
    }
}

/// Lets go of a handle without a write.
fn detach(slot: Slot) {
    match slot {
        Slot::Working(handle) => drop(handle.detach()),
        Slot::Waiting(handle) => drop(handle.detach()),
        Slot::Spent => {}
    }
}
