//! The tasks this instance runs, and what their changes send to the clients: a 2025-11-25
//! task created through a session sends that session `notifications/tasks/status` and its
//! input requests (`elicitation/create`, tagged with the related task); the answers go
//! back into the store, where the handler waits for them. Over a shared store, a task
//! claimed here is recorded too (with its session if this instance holds it), a
//! redelivered 2025-11-25 task may be adopted by a new session of its owner
//! ([`Tasks::adopt`]), and a shutdown hands the redeliverable tasks over
//! ([`Tasks::end_all`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::outbound;
use crate::server::{Generation, Job, Server, Store};
use mcp_tasks::protocol::tag_related_task;
use mcp_tasks::{
    AnyTask, InputRequired, JsonObject, JsonRpcError, Owner, Task, TaskId, TaskStatus, TaskStore,
    jsonrpc,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::session::Session;
use super::trace::Trace;
use crate::running::Ending;

/// How long a task waits for the client to answer one of its input requests.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a task waiting for an answer checks that it still waits (not cancelled).
const STATUS_CHECK: Duration = Duration::from_millis(100);

/// How long a task's entry outlives its handler when no terminal change arrives.
const FORGET_AFTER: Duration = Duration::from_secs(30);

/// What a task carries here.
struct Running {
    owner: Owner,
    /// The session that created it, for a 2025-11-25 task.
    session: Option<Weak<Session>>,
    /// How many of its handlers run on this instance: one, or two for a moment when the
    /// task was claimed back here while its superseded first run was still stopping.
    handlers: usize,
    /// The attempt its handler here runs (1 unless claimed for a later one).
    attempt: u32,
    /// When its last handler here returned, while its terminal change is still to come.
    returned: Option<Instant>,
}

/// The tasks this instance created, until they finish.
#[derive(Default)]
pub struct Tasks {
    running: Mutex<HashMap<TaskId, Running>>,
    /// When [`Tasks::handler_returned`] next sweeps out the entries that outlived their
    /// handler by [`FORGET_AFTER`] (none before the first return).
    next_sweep: Mutex<Option<Instant>>,
    /// Woken whenever a task's end has been handled here.
    ended: Notify,
}

impl Tasks {
    fn running(&self) -> MutexGuard<'_, HashMap<TaskId, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a task whose handler starts here; `session` for a 2025-11-25 task.
    pub fn started(&self, task: TaskId, owner: Owner, session: Option<&Arc<Session>>) {
        self.running().insert(
            task,
            Running {
                owner,
                session: session.map(Arc::downgrade),
                handlers: 1,
                attempt: 1,
                returned: None,
            },
        );
    }

    /// Records a task claimed here for attempt `attempt`: its handler runs here from now
    /// on. `session` is the 2025-11-25 session its job names, if this instance holds it; a
    /// task created here keeps the session it had.
    pub fn claimed(
        &self,
        task: TaskId,
        owner: Owner,
        session: Option<&Arc<Session>>,
        attempt: u32,
    ) {
        let mut running = self.running();
        let (kept, handlers) = running.get(&task).map_or((None, 0), |running| {
            (running.session.clone(), running.handlers)
        });
        running.insert(
            task,
            Running {
                owner,
                session: session.map(Arc::downgrade).or(kept),
                handlers: handlers + 1,
                attempt,
                returned: None,
            },
        );
    }

    /// Makes `session` the session of a redelivered 2025-11-25 task whose own session does
    /// not live on this instance (the instance it was created on stopped, with its
    /// sessions): the client reconnected here, in a new session of the task's owner, and
    /// waits with `tasks/result`. From now on the task's status notifications and input
    /// requests (the re-run asks again) go to that session, wherever the re-run runs: the
    /// answers go back through the store. Answers whether it did (the task runs still, has
    /// run more than one attempt, was created through 2025-11-25, and no open session of
    /// this instance has it).
    pub fn adopt(
        &self,
        server: &Server,
        trace: &Arc<Trace>,
        owner: &Owner,
        task: &TaskId,
        session: &Arc<Session>,
    ) -> bool {
        let store = server.store();
        let key = task.to_string();
        let Ok(current) = store.get(owner, &key) else {
            return false;
        };
        let Some(attempts) = current.attempts() else {
            return false;
        };
        if current.is_terminal() || attempts.attempt() < 2 {
            return false;
        }
        let created_in_2025 = store
            .job(owner, &key)
            .ok()
            .flatten()
            .and_then(|job| Job::from_object(&job).ok())
            .is_some_and(|job| job.generation == Generation::V2025);
        if !created_in_2025 {
            return false;
        }
        {
            let mut running = self.running();
            let entry = running.entry(task.clone()).or_insert_with(|| Running {
                owner: owner.clone(),
                session: None,
                handlers: 0,
                attempt: attempts.attempt(),
                returned: None,
            });
            if entry.session.as_ref().is_some_and(|s| s.strong_count() > 0) {
                return false;
            }
            entry.session = Some(Arc::downgrade(session));
        }
        if let AnyTask::InputRequired(waiting) = &current {
            forward_input(session, store, trace, waiting);
        }
        true
    }

    /// The session a 2025-11-25 task was created through, if it is still open.
    pub fn session_of(&self, task: &TaskId) -> Option<Arc<Session>> {
        self.running().get(task)?.session.as_ref()?.upgrade()
    }

    /// Sends each store change to the sessions concerned, as the store tells it: on the
    /// thread that delivers the store's changes (one at a time, in order), inside this
    /// runtime's context (an input request's wait for its answer is spawned on it). What a
    /// change does here is short and never calls the store: a few locks, a notification
    /// serialized and queued. No channel and no task of its own: a change costs no copy of
    /// the task, no send and no wake-up of another task (often on the other thread).
    pub fn watch(self: &Arc<Self>, server: &Arc<Server>, trace: &Arc<Trace>) {
        let runtime = tokio::runtime::Handle::current();
        // Weak: the server owns the store, which owns this subscriber.
        let (tasks, weak, trace) = (Arc::clone(self), Arc::downgrade(server), Arc::clone(trace));
        TaskStore::subscribe(server.store(), move |change| {
            let Some(server) = weak.upgrade() else {
                return;
            };
            let _inside = runtime.enter();
            tasks.on_change(&server, &trace, &change.task);
        });
    }

    fn on_change(&self, server: &Server, trace: &Arc<Trace>, task: &AnyTask) {
        let Some(session) = self.session_of(task.id()) else {
            if task.is_terminal() {
                self.finished(server, task.id());
            }
            return;
        };
        if let AnyTask::InputRequired(waiting) = task {
            forward_input(&session, server.store(), trace, waiting);
        }
        if session.is_news(task) {
            match status_notification(task) {
                Ok(notification) => {
                    trace.write(&session.id, "out", &notification);
                    session.notify(Some(task.id()), notification);
                }
                Err(err) => log::error!("cannot serialize a status notification: {err}"),
            }
        }
        if task.is_terminal() {
            self.finished(server, task.id());
        }
    }

    fn finished(&self, server: &Server, task: &TaskId) {
        {
            let mut running = self.running();
            running.remove(task);
            shrink_if_sparse(&mut running);
        }
        server.forget_task(task);
        self.ended.notify_waiters();
    }

    /// Waits, at most `limit`, until the end of `task` has been handled here (for a task
    /// created through a session: its terminal status notification is queued), so that a
    /// `tasks/result` stream sends that notification before the answer.
    pub async fn ended(&self, task: &TaskId, limit: Duration) {
        let handled = async {
            loop {
                let ended = self.ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if !self.running().contains_key(task) {
                    return;
                }
                ended.await;
            }
        };
        let _ = tokio::time::timeout(limit, handled).await;
    }

    /// Notes that `task`'s handler returned. Its entry stays for its terminal change (the
    /// status notification of a 2025-11-25 task needs its session), which usually has been
    /// handled already or is on its way; an entry whose terminal change never comes (the
    /// task expired or was removed while its handler ran) goes once it outlived its handler
    /// by [`FORGET_AFTER`]: each return sweeps such entries out, at most once per
    /// [`FORGET_AFTER`], so that no finished task keeps a timer or an entry here for long.
    pub fn handler_returned(&self, task: &TaskId) {
        let now = Instant::now();
        let mut running = self.running();
        if let Some(entry) = running.get_mut(task) {
            entry.handlers = entry.handlers.saturating_sub(1);
            if entry.handlers == 0 {
                entry.returned = Some(now);
            }
        }
        let mut next_sweep = self
            .next_sweep
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match *next_sweep {
            Some(at) if at > now => {}
            Some(_) => {
                // Unless a handler runs it here again (claimed back meanwhile).
                running.retain(|_, entry| {
                    entry.handlers > 0
                        || entry
                            .returned
                            .is_none_or(|at| now.saturating_duration_since(at) < FORGET_AFTER)
                });
                shrink_if_sparse(&mut running);
                *next_sweep = Some(now + FORGET_AFTER);
            }
            None => *next_sweep = Some(now + FORGET_AFTER),
        }
    }

    /// How many tasks this instance's handlers still run.
    pub fn handlers_running(&self) -> usize {
        self.running().values().filter(|r| r.handlers > 0).count()
    }

    /// Ends every task whose handler still runs here (the server is shutting down): a
    /// redeliverable task is handed over to another instance
    /// ([`TaskStore::hand_over`]), which runs it again at once; any other (or one that
    /// cannot be handed over: no attempts left, no other instance's store) fails with
    /// `-32603` and `why`. A task that finished meanwhile keeps its outcome, and one that
    /// runs as a later attempt elsewhere now is left alone.
    pub fn end_all(&self, server: &Server, why: &str) -> Ending {
        let running: Vec<(TaskId, Owner, u32)> = self
            .running()
            .iter()
            .filter(|(_, r)| r.handlers > 0)
            .map(|(id, r)| (id.clone(), r.owner.clone(), r.attempt))
            .collect();
        crate::running::end(server, running, why)
    }
}

/// Halves a map's capacity once it is less than a quarter full, so that a burst of tasks
/// does not leave its table behind (amortized: each shrink follows many removals).
fn shrink_if_sparse<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

/// The `notifications/tasks/status` message announcing `task`, serialized from the task
/// as it is: the text of
/// [`TaskStatusNotification`](mcp_tasks::protocol::TaskStatusNotification), without a copy
/// of the task to build one, nor the flattening serializer between.
fn status_notification(task: &AnyTask) -> serde_json::Result<String> {
    const HEAD: &str = r#"{"jsonrpc":"2.0","method":"notifications/tasks/status","params":"#;
    let params = serde_json::to_string(task)?;
    let mut text = String::with_capacity(HEAD.len() + params.len() + 1);
    text.push_str(HEAD);
    text.push_str(&params);
    text.push('}');
    Ok(text)
}

/// Forwards each input request of `task` not forwarded yet as a request to the client, and
/// puts the answer (or a dismissal) back into the store.
fn forward_input(
    session: &Arc<Session>,
    store: &Store,
    trace: &Arc<Trace>,
    task: &Task<InputRequired>,
) {
    for (key, request) in task.input_requests().iter() {
        if !session.forward_once(task.id(), key) {
            continue;
        }
        let mut params = request.params.clone();
        tag_related_task(&mut params, task.id());
        let (request_id, text, answered) = session.request(task.id(), &request.method, params);
        trace.write(&session.id, "out", &text);
        let (session, store, trace) = (Arc::clone(session), store.clone(), Arc::clone(trace));
        let (task, key) = (task.id().clone(), key.to_owned());
        let owner = Owner::new(session.principal.clone());
        tokio::spawn(async move {
            let answer = wait_for_answer(
                &session,
                &trace,
                &store,
                &owner,
                &task,
                &request_id,
                answered,
            )
            .await;
            let mut responses = JsonObject::new();
            responses.insert(key.clone(), Value::Object(outbound::input_response(answer)));
            let (store2, owner2, task2) = (store.clone(), owner.clone(), task.clone());
            let delivered = tokio::task::spawn_blocking(move || {
                store2.respond(&owner2, &task2.to_string(), responses)
            })
            .await;
            match delivered {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => {
                    log::debug!("task {task}: an input answer was not delivered: {err}")
                }
                Err(err) => log::error!("task {task}: delivering an input answer failed: {err}"),
            }
            session.forwarded_done(&task, &key);
        });
    }
}

/// The client's answer to request `id`, or an error when the task stops waiting (the
/// request is then withdrawn with `notifications/cancelled`) or no answer comes in time.
async fn wait_for_answer(
    session: &Arc<Session>,
    trace: &Trace,
    store: &Store,
    owner: &Owner,
    task: &TaskId,
    id: &str,
    mut answered: tokio::sync::oneshot::Receiver<Result<Value, JsonRpcError>>,
) -> Result<Value, JsonRpcError> {
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        match tokio::time::timeout(STATUS_CHECK, &mut answered).await {
            Ok(Ok(answer)) => return answer,
            Ok(Err(_)) => {
                return Err(JsonRpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "the session ended",
                ));
            }
            Err(_) => {}
        }
        let (store2, owner2, task2) = (store.clone(), owner.clone(), task.clone());
        let waiting = tokio::task::spawn_blocking(move || {
            store2
                .get(&owner2, &task2.to_string())
                .is_ok_and(|task| task.status() == TaskStatus::InputRequired)
        })
        .await
        .unwrap_or(false);
        if !waiting || Instant::now() >= deadline {
            session.forget_request(id);
            let withdrawn = json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the task no longer waits for this input"},
            })
            .to_string();
            trace.write(&session.id, "out", &withdrawn);
            session.notify(Some(task), withdrawn);
            return Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "the task stopped waiting for the client's answer",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_tasks::protocol::TaskStatusNotification;
    use mcp_tasks::{RequestId, TaskRegistry, TaskRequest};

    use super::*;

    #[test]
    fn a_status_notification_is_the_text_of_the_protocol_type() {
        let store = TaskRegistry::new();
        let owner = Owner::new("alice");
        let request = || TaskRequest::new(RequestId::from(1), "tools/call").with_ttl(Some(60_000));
        let same = |task: &AnyTask| {
            let expected =
                serde_json::to_string(&TaskStatusNotification::new(task.clone())).unwrap();
            assert_eq!(status_notification(task).unwrap(), expected, "{task:?}");
        };
        let (working, task) = store.create(&owner, request()).unwrap();
        same(&AnyTask::from(task));
        let mut result = JsonObject::new();
        result.insert("content".into(), json!([{"type": "text", "text": "done"}]));
        let done = working.with_message("all done").complete(result).unwrap();
        same(&store.get(&owner, &done.id().to_string()).unwrap());
        let (failing, _) = store.create(&owner, request()).unwrap();
        let failed = failing
            .fail(mcp_tasks::Outcome::error(jsonrpc::INTERNAL_ERROR, "broken"))
            .unwrap();
        same(&store.get(&owner, &failed.id().to_string()).unwrap());
        let (cancelling, _) = store.create(&owner, request()).unwrap();
        let cancelled = cancelling.cancel().unwrap();
        same(&store.get(&owner, &cancelled.id().to_string()).unwrap());
    }

    fn returned_long_ago(tasks: &Tasks, task: &TaskId) {
        let long_ago = Instant::now().checked_sub(FORGET_AFTER * 2);
        if let Some(entry) = tasks.running().get_mut(task) {
            entry.returned = long_ago;
        }
        *tasks.next_sweep.lock().unwrap() = long_ago;
    }

    #[test]
    fn a_returned_handler_leaves_no_timer_and_its_stale_entry_is_swept_out() {
        let tasks = Tasks::default();
        let owner = Owner::new("alice");
        let (stale, fresh, busy) = (TaskId::from("a"), TaskId::from("b"), TaskId::from("c"));
        for task in [&stale, &fresh, &busy] {
            tasks.started(task.clone(), owner.clone(), None);
        }
        // Outside any runtime: nothing is spawned, and the entry waits for its change.
        tasks.handler_returned(&stale);
        assert_eq!(tasks.running().len(), 3);
        assert_eq!(tasks.handlers_running(), 2);
        // Its terminal change never came: the next return after FORGET_AFTER sweeps it.
        returned_long_ago(&tasks, &stale);
        tasks.handler_returned(&fresh);
        let left: Vec<TaskId> = tasks.running().keys().cloned().collect();
        assert!(!left.contains(&stale), "the stale entry is swept");
        assert!(
            left.contains(&fresh),
            "a handler that just returned keeps its entry"
        );
        assert!(left.contains(&busy), "a running handler keeps its entry");
        // A task claimed back here runs again: never swept while its handler runs.
        tasks.claimed(fresh.clone(), owner.clone(), None, 2);
        returned_long_ago(&tasks, &fresh);
        tasks.handler_returned(&busy);
        assert!(tasks.running().contains_key(&fresh));
    }
}
