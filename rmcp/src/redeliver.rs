//! Redelivery: the handlers a claimed task runs, the job a redeliverable call stores, the
//! claim loop, and the hand-over on shutdown.
//!
//! A call made with [`TaskOptions::redeliver`](crate::TaskOptions::redeliver) through
//! [`TaskManager::call_registered`](crate::TaskManager::call_registered) stores its *job*
//! with the task: the tool's name, its arguments and the wire generation. The task's owner
//! is the owner of the call (the store keeps it with the task); a handler reads nothing
//! else of the request (its [`TaskContext`] holds no other request state), so nothing else
//! is stored. When the instance running it dies, another instance's claim loop claims it
//! and runs the handler registered under the job's tool, as a fresh call's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use mcp_tasks::{Claim, JsonObject, JsonRpcError, Outcome, TaskHandle, TaskStore};
use mcp_tasks_otel::{TaskRun, Telemetry};
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::runtime::Handle as Runtime;
use tokio::task::AbortHandle;

use crate::context::{Run, TaskContext, TaskFuture};

/// A tool's handler, as registered: called once per run (the first, and each redelivery).
pub(crate) type Handler<T> = Arc<dyn Fn(TaskContext<T>) -> TaskFuture + Send + Sync>;

/// The job's keys.
const TOOL: &str = "tool";
const ARGUMENTS: &str = "arguments";
const GENERATION: &str = "generation";

/// The longest the claim loop sleeps between claims when the store tells it nothing (a
/// store's notifications wake it sooner).
const CLAIM_WAIT: Duration = Duration::from_secs(5);

/// The first and the longest pause of the claim loop after a store failure (doubling).
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The job a redeliverable call stores: what another instance needs to run it again.
pub(crate) fn job(request: &CallToolRequestParams) -> JsonObject {
    let mut job = JsonObject::new();
    job.insert(TOOL.to_owned(), Value::String(request.name.to_string()));
    job.insert(
        ARGUMENTS.to_owned(),
        Value::Object(request.arguments.clone().unwrap_or_default()),
    );
    job.insert(
        GENERATION.to_owned(),
        Value::String(mcp_tasks::ext::PROTOCOL_VERSION.to_owned()),
    );
    job
}

/// The tool and arguments of a stored job, or why it cannot run here.
fn read_job(job: &JsonObject) -> Result<(String, JsonObject), String> {
    let generation = job.get(GENERATION).and_then(Value::as_str);
    if generation != Some(mcp_tasks::ext::PROTOCOL_VERSION) {
        return Err(format!(
            "its job is for the wire generation {generation:?}, and this server serves {}",
            mcp_tasks::ext::PROTOCOL_VERSION
        ));
    }
    let Some(tool) = job.get(TOOL).and_then(Value::as_str) else {
        return Err("its job names no tool".to_owned());
    };
    let arguments = match job.get(ARGUMENTS) {
        Some(Value::Object(arguments)) => arguments.clone(),
        None => JsonObject::new(),
        Some(_) => return Err("its job's arguments are not an object".to_owned()),
    };
    Ok((tool.to_owned(), arguments))
}

/// A redeliverable task running here, for the hand-over.
struct Tracked<T: TaskStore> {
    context: TaskContext<T>,
    abort: Option<AbortHandle>,
}

/// What the clones of one manager share for redelivery: the handlers by tool, the
/// redeliverable tasks running here, and the claim loop's state.
///
/// Poison policy of its locks: a panic while one is held leaves a consistent map (every
/// critical section is one insert, remove or read, and no user code runs under a lock),
/// so a poisoned lock is entered as it is.
pub(crate) struct Claims<T: TaskStore> {
    handlers: RwLock<HashMap<String, Handler<T>>>,
    running: Mutex<HashMap<String, Tracked<T>>>,
    /// Whether the claim loop was started.
    started: AtomicBool,
    /// Whether the manager hands over instead of running (after a shutdown's hand-over);
    /// written under the `running` lock.
    stopped: AtomicBool,
}

impl<T: TaskStore> Default for Claims<T> {
    fn default() -> Self {
        Claims {
            handlers: RwLock::default(),
            running: Mutex::default(),
            started: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
        }
    }
}

impl<T: TaskStore> Claims<T> {
    fn running(&self) -> MutexGuard<'_, HashMap<String, Tracked<T>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(&self, tool: String, handler: Handler<T>) {
        self.handlers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tool, handler);
    }

    pub(crate) fn handler(&self, tool: &str) -> Option<Handler<T>> {
        self.handlers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
            .cloned()
    }

    pub(crate) fn tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = self
            .handlers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        tools.sort();
        tools
    }

    /// Marks the loop started; answers whether it was not already.
    pub(crate) fn start(&self) -> bool {
        !self.started.swap(true, Ordering::SeqCst)
    }
}

impl<T: TaskStore + Clone + 'static> Claims<T> {
    /// Runs `make_future`'s operation with `context` on `runtime`, and finishes the task
    /// with what it returns, all in `attempt`'s span. A redeliverable task is tracked for
    /// the hand-over while it runs; once the manager stopped, it is handed over at once
    /// instead.
    pub(crate) fn launch(
        self: &Arc<Self>,
        runtime: &Runtime,
        context: TaskContext<T>,
        make_future: impl FnOnce(TaskContext<T>) -> TaskFuture,
        attempt: TaskRun,
    ) {
        if !context.is_redeliverable() {
            let future = make_future(context.clone());
            runtime.spawn(attempt.run_async(async move {
                let exit = future.await;
                context.finish(exit);
            }));
            return;
        }
        let key = context.task_id().unwrap_or_default().to_owned();
        {
            let mut running = self.running();
            if self.stopped.load(Ordering::SeqCst) {
                drop(running);
                if context.hand_over() {
                    return;
                }
            } else {
                running.insert(
                    key.clone(),
                    Tracked {
                        context: context.clone(),
                        abort: None,
                    },
                );
            }
        }
        let future = make_future(context.clone());
        let untrack = Untrack {
            claims: Arc::clone(self),
            key: key.clone(),
        };
        let join = runtime.spawn(attempt.run_async(async move {
            // Dropped when the operation ends, panics or is aborted.
            let _untrack = untrack;
            let exit = future.await;
            context.finish(exit);
        }));
        if let Some(tracked) = self.running().get_mut(&key) {
            tracked.abort = Some(join.abort_handle());
        }
    }

    /// Stops claiming and hands every redeliverable task running here over to another
    /// instance; answers how many were.
    pub(crate) fn hand_over_running(&self) -> usize {
        let tracked: Vec<Tracked<T>> = {
            let mut running = self.running();
            self.stopped.store(true, Ordering::SeqCst);
            running.drain().map(|(_, tracked)| tracked).collect()
        };
        let mut handed = 0;
        for Tracked { context, abort } in tracked {
            if context.hand_over() {
                handed += 1;
                if let Some(abort) = abort {
                    abort.abort();
                }
            }
        }
        handed
    }

    /// The claim loop, on its own thread: claims while there is something to claim, then
    /// sleeps until the store says something may be claimable; stops once the manager
    /// handed its tasks over. A store failure is logged and retried after a pause that
    /// doubles up to [`RETRY_MAX`], indefinitely: the loop is the instance's share of the
    /// fleet's redeliveries.
    pub(crate) fn claim_loop(self: Arc<Self>, store: T, runtime: Runtime, telemetry: &Telemetry) {
        // Handlers are called here to make their futures: in the runtime's context, as on
        // a request.
        let _runtime = runtime.enter();
        let mut pause = RETRY_FIRST;
        while !self.stopped.load(Ordering::SeqCst) {
            let outcome = match store.claim() {
                Ok(Some(claim)) => {
                    self.start_claimed(&store, &runtime, claim, telemetry);
                    pause = RETRY_FIRST;
                    continue;
                }
                Ok(None) => store.wait_for_claimable(Some(CLAIM_WAIT)),
                Err(err) => Err(err),
            };
            match outcome {
                Ok(()) => pause = RETRY_FIRST,
                Err(err) => {
                    eprintln!("claim loop: the store failed ({err}); trying again in {pause:?}");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(RETRY_MAX);
                }
            }
        }
    }

    /// Runs a claimed task's registered handler, as a fresh call's. A task whose job cannot
    /// run here (no handler for its tool, another wire generation) fails with `-32603`
    /// saying why: it was claimed, and another instance would claim it again for nothing.
    fn start_claimed(
        self: &Arc<Self>,
        store: &T,
        runtime: &Runtime,
        mut claim: Claim,
        telemetry: &Telemetry,
    ) {
        let job = std::mem::take(&mut claim.job);
        let checkpoint = claim.checkpoint.take();
        let attempt = claim.attempts.attempt();
        let message = claim.task.status_message().map(str::to_owned);
        // The attempt continues the trace of the call that created the task.
        let tool = job.get("tool").and_then(Value::as_str).unwrap_or("_OTHER");
        telemetry.redelivered(tool);
        let traced = telemetry.task_run(
            tool,
            claim.task.id(),
            attempt,
            claim.task.trace_context(),
            &claim.owner,
            Arc::new(store.clone()),
        );
        let handle = TaskHandle::claimed(store.clone(), claim);
        let found = read_job(&job).and_then(|(tool, arguments)| match self.handler(&tool) {
            Some(handler) => Ok((handler, arguments)),
            None => Err(format!(
                "no handler for its tool `{tool}` is registered on this instance (every \
                 instance serving a redeliverable tool must register its handler)"
            )),
        });
        let (handler, arguments) = match found {
            Ok(found) => found,
            Err(why) => {
                let id = handle.id().to_string();
                let error = JsonRpcError::new(-32603, format!("the task cannot run again: {why}"));
                if let Err(err) = handle.fail(Outcome::Error(error)) {
                    eprintln!("task {id}: could not be failed: {err}");
                }
                return;
            }
        };
        let run = Run {
            arguments,
            attempt,
            checkpoint,
            message,
        };
        let context = TaskContext::task(store.clone(), handle, run);
        self.launch(runtime, context, move |context| handler(context), traced);
    }
}

/// Forgets a tracked task when its operation ends, however it ends.
struct Untrack<T: TaskStore + Clone + 'static> {
    claims: Arc<Claims<T>>,
    key: String,
}

impl<T: TaskStore + Clone + 'static> Drop for Untrack<T> {
    fn drop(&mut self) {
        let removed = self.claims.running().remove(&self.key);
        // The context is dropped outside the lock: dropping the last one may write.
        drop(removed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_job_names_the_tool_its_arguments_and_the_generation() {
        let mut request = CallToolRequestParams::new("sleep");
        request.arguments = json!({"ms": 5}).as_object().cloned();
        let job = job(&request);
        assert_eq!(
            Value::Object(job.clone()),
            json!({"tool": "sleep", "arguments": {"ms": 5}, "generation": "2026-07-28"})
        );
        let (tool, arguments) = read_job(&job).unwrap();
        assert_eq!(tool, "sleep");
        assert_eq!(Value::Object(arguments), json!({"ms": 5}));
    }

    #[test]
    fn a_job_of_another_generation_or_without_a_tool_does_not_run() {
        let other = json!({"tool": "sleep", "generation": "2025-11-25"});
        let why = read_job(other.as_object().unwrap()).unwrap_err();
        assert!(why.contains("2025-11-25"), "{why}");
        let nameless = json!({"generation": "2026-07-28"});
        assert!(read_job(nameless.as_object().unwrap()).is_err());
    }
}
