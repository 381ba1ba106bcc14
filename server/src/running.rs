//! The tasks whose handlers run on this instance, for a transport that ends them when it
//! shuts down: a redeliverable task is handed over to another instance of a shared store,
//! which runs it again at once; any other fails with `-32603`, so that its requestor is
//! answered rather than left polling a task nobody runs.
//!
//! A transport records each task as its handler starts — a task the request created
//! ([`Running::track`], with the `CreateTaskResult` of a
//! [`Reply::ThenRun`](crate::server::Reply::ThenRun)) or one the claim loop claimed
//! ([`Running::track_claimed`]) — and gets back the work to start, which forgets the task
//! when the handler returns. At shutdown it stops claiming, lets the handlers run for a
//! grace period (watching [`Running::len`]), then calls [`Running::end_all`].
//!
//! ```
//! use std::sync::Arc;
//!
//! use mcp_tasks_server::running::Running;
//! use mcp_tasks_server::server::Reply;
//! # fn start(_work: mcp_tasks_server::work::Work) {}
//! # fn send(_answer: &str) {}
//! # fn carry(running: &Arc<Running>, owner: &mcp_tasks_server::mcp_tasks::Owner, reply: Reply) {
//! if let Reply::ThenRun(created, work) = reply {
//!     let work = running.track(owner, &created, work);
//!     send(created.answer_json());
//!     start(work);
//! }
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_tasks::{JsonRpcError, Outcome, Owner, TaskId, TaskStatus, jsonrpc};

use crate::server::{Claimed, Created, Server};
use crate::work::Work;

/// What a running task carries here.
#[derive(Debug)]
struct Entry {
    owner: Owner,
    /// The attempt its handler here runs (1 unless claimed for a later one).
    attempt: u32,
    /// How many of its handlers run here: one, or two for a moment when the task was
    /// claimed back here while its superseded first run was still stopping.
    handlers: usize,
}

/// How the tasks still running at shutdown ended ([`Running::end_all`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ending {
    /// Redeliverable tasks handed over to another instance, which runs them again.
    pub handed_over: Vec<TaskId>,
    /// Tasks failed with `-32603`.
    pub failed: Vec<TaskId>,
}

/// The tasks whose handlers run on this instance (see the [module docs](self)).
///
/// Its one lock is never held while a store is called or user code runs; a poisoned lock
/// is taken over as it is (the map stays consistent: every change is one insert or one
/// removal).
#[derive(Debug, Default)]
pub struct Running {
    tasks: Mutex<HashMap<TaskId, Entry>>,
}

impl Running {
    /// Nothing runs yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn tasks(&self) -> MutexGuard<'_, HashMap<TaskId, Entry>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the task of `created` (the answer of a
    /// [`Reply::ThenRun`](crate::server::Reply::ThenRun), either generation's) for `owner`,
    /// and answers `work` followed by forgetting it.
    #[must_use]
    pub fn track(self: &Arc<Self>, owner: &Owner, created: &Created, work: Work) -> Work {
        self.started(created.task_id().clone(), owner.clone(), 1, work)
    }

    /// Records a task the claim loop claimed here, and answers its work followed by
    /// forgetting it.
    #[must_use]
    pub fn track_claimed(self: &Arc<Self>, claimed: Claimed) -> Work {
        let (task, owner, attempt) = (
            claimed.task.clone(),
            claimed.owner.clone(),
            claimed.attempts.attempt(),
        );
        self.started(task, owner, attempt, claimed.into_work())
    }

    fn started(self: &Arc<Self>, task: TaskId, owner: Owner, attempt: u32, work: Work) -> Work {
        {
            let mut tasks = self.tasks();
            let handlers = tasks.get(&task).map_or(0, |entry| entry.handlers);
            tasks.insert(
                task.clone(),
                Entry {
                    owner,
                    attempt,
                    handlers: handlers + 1,
                },
            );
        }
        let running = Arc::clone(self);
        work.then(move || running.returned(&task))
    }

    /// Notes that a handler of `task` returned; the task is forgotten with its last one.
    fn returned(&self, task: &TaskId) {
        let mut tasks = self.tasks();
        if let Some(entry) = tasks.get_mut(task) {
            entry.handlers = entry.handlers.saturating_sub(1);
            if entry.handlers == 0 {
                tasks.remove(task);
            }
        }
        if tasks.len() < tasks.capacity() / 4 {
            let len = tasks.len();
            tasks.shrink_to(len * 2);
        }
    }

    /// How many tasks have a handler running here.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tasks().len()
    }

    /// Whether no task has a handler running here.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tasks().is_empty()
    }

    /// Hands every redeliverable task running here over to another instance of `server`'s
    /// shared store ([`Server::hand_over`]: through its handler's handle, which the
    /// hand-over spends, so nothing that handler does later is written), which claims it at
    /// once and runs its next attempt; the others are left to run. Answers the tasks handed
    /// over. One store call per task. The in-process registry hands nothing over.
    pub fn hand_over(&self, server: &Server) -> Vec<TaskId> {
        let mut handed_over = Vec::new();
        for (task, owner, _) in self.snapshot() {
            match server.hand_over(&owner, &task) {
                Ok(true) => handed_over.push(task),
                Ok(false) => {}
                Err(err) => log::warn!("task {task}: cannot hand the task over: {err}"),
            }
        }
        handed_over
    }

    /// Ends every task running here (the transport is shutting down): a redeliverable
    /// task is handed over as by [`hand_over`](Self::hand_over); any other (or one that
    /// cannot be handed over: no attempts left, a store that is not shared) fails with
    /// `-32603` and `why`. A task that finished meanwhile keeps its outcome, and one that
    /// runs as a later attempt on another instance now is left alone. Two store calls per
    /// task at most.
    pub fn end_all(&self, server: &Server, why: &str) -> Ending {
        end(server, self.snapshot(), why)
    }

    /// The tasks running here, copied out of the lock.
    fn snapshot(&self) -> Vec<(TaskId, Owner, u32)> {
        self.tasks()
            .iter()
            .map(|(task, entry)| (task.clone(), entry.owner.clone(), entry.attempt))
            .collect()
    }
}

/// Ends `tasks` (each `(task, owner, attempt run here)`) as a shutdown does: hands each
/// redeliverable one over, fails the others with `-32603` saying `why` — unless another
/// instance runs it now.
pub(crate) fn end(
    server: &Server,
    tasks: impl IntoIterator<Item = (TaskId, Owner, u32)>,
    why: &str,
) -> Ending {
    let store = server.store();
    let mut ending = Ending::default();
    for (task, owner, attempt) in tasks {
        let key = task.to_string();
        match server.hand_over(&owner, &task) {
            Ok(true) => {
                ending.handed_over.push(task);
                continue;
            }
            Ok(false) => {}
            Err(err) => log::warn!("task {task}: cannot hand the task over: {err}"),
        }
        // Not handed over: fail it, unless another instance runs it now (its lease
        // lapsed here and it was claimed: failing it by id would end that attempt).
        let elsewhere = store.get(&owner, &key).is_ok_and(|stored| {
            stored
                .attempts()
                .is_some_and(|attempts| attempts.attempt() != attempt)
        });
        if elsewhere {
            log::debug!("task {task}: not failed at shutdown: another instance runs it");
            continue;
        }
        let error = JsonRpcError::new(jsonrpc::INTERNAL_ERROR, why);
        match store.store_result(&owner, &key, TaskStatus::Failed, Outcome::Error(error)) {
            Ok(_) => ending.failed.push(task),
            Err(err) => log::debug!("task {task}: not failed at shutdown: {err}"),
        }
    }
    ending
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use mcp_tasks::{AnyTask, TaskRegistry, TaskRequest, TaskStore};

    use serde_json::json;

    use super::*;

    /// The answer that created the task `id` (2026-07-28's shape).
    fn created(id: &str) -> Created {
        Created::new(
            TaskId::from(id),
            &json!({"resultType": "task", "taskId": id}),
        )
        .unwrap()
    }

    #[test]
    fn a_task_is_forgotten_when_its_handler_returns() {
        let running = Arc::new(Running::new());
        let owner = Owner::new("alice");
        let (gate, wait) = mpsc::channel::<()>();
        let work = running.track(
            &owner,
            &created("t-1"),
            Work::blocking(move || {
                let _ = wait.recv_timeout(Duration::from_secs(10));
            }),
        );
        assert_eq!(running.len(), 1);
        gate.send(()).unwrap();
        work.run_here();
        assert!(running.is_empty());
    }

    #[test]
    fn at_shutdown_a_task_that_runs_once_fails_and_a_finished_one_keeps_its_outcome() {
        let server = Server::builder()
            .store(TaskRegistry::new())
            .build()
            .unwrap();
        let store = server.store();
        let owner = Owner::new("alice");
        let running = Arc::new(Running::new());
        let mut works = Vec::new();
        let mut ids = Vec::new();
        for n in 0i64..2 {
            let (handle, task) = store
                .create(
                    &owner,
                    TaskRequest::new(mcp_tasks::RequestId::from(n), "tools/call"),
                )
                .unwrap();
            let created = created(&task.id().to_string());
            ids.push(task.id().clone());
            if n == 1 {
                // Finished before the shutdown, its handler still returning.
                let _done = handle.complete(mcp_tasks::JsonObject::new()).unwrap();
            } else {
                std::mem::forget(handle);
            }
            works.push(running.track(&owner, &created, Work::blocking(|| {})));
        }
        // The registry hands nothing over.
        assert!(running.hand_over(&server).is_empty());
        let ending = running.end_all(&server, "the server shut down");
        assert_eq!(ending.handed_over, Vec::<TaskId>::new());
        assert_eq!(ending.failed, vec![ids[0].clone()]);
        let failed = store.get(&owner, &ids[0].to_string()).unwrap();
        assert!(matches!(failed, AnyTask::Failed(_)), "{failed:?}");
        let done = store.get(&owner, &ids[1].to_string()).unwrap();
        assert!(matches!(done, AnyTask::Completed(_)), "{done:?}");
        for work in works {
            work.run_here();
        }
        assert!(running.is_empty());
    }
}
