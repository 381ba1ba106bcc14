//! The store wrapper of [`telemetry`](super): every call timed by backend and operation,
//! input waits measured, lease lapses counted, and the task a request touches noted for
//! its span. No backend changes: it wraps whatever `TaskStore` the server opened.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::backend::LEASE_LAPSED;
use mcp_tasks::{
    AnyTask, Claim, Error, InputResponses, JsonObject, Lease, Owner, StatusChange, StoreFuture,
    Subscriber, SubscriptionId, Task, TaskOrigin, TaskPage, TaskRequest, TaskStatus, TaskStore,
    TtlPolicy, Update, Working,
};
use opentelemetry::KeyValue;

use super::otel::{Inner, note, note_task};
use crate::server::Store;

/// A store whose calls are measured ([`Telemetry::observe_store`](super::Telemetry::observe_store)).
pub(super) struct Observed {
    store: Store,
    telemetry: Arc<Inner>,
    /// `mcp.task.store.backend`: the store's type, as its `Debug` names it.
    backend: KeyValue,
}

impl Observed {
    pub(super) fn wrap(store: Store, telemetry: &Arc<Inner>) -> Store {
        let debug = format!("{store:?}");
        let name: String = debug
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let lapses = telemetry.lease_lapses.clone();
        store.add_subscriber(Arc::new(move |change: &StatusChange| {
            if change.task.status() == TaskStatus::Failed
                && change.task.status_message().is_some_and(lapsed)
            {
                lapses.add(1, &[]);
            }
        }));
        Arc::new(Observed {
            store,
            telemetry: Arc::clone(telemetry),
            backend: KeyValue::new("mcp.task.store.backend", name),
        })
    }

    /// Runs one store operation and records how long it took.
    fn timed<T>(
        &self,
        operation: &'static str,
        call: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        let started = Instant::now();
        let answer = call();
        let seconds = started.elapsed().as_secs_f64();
        let kind = KeyValue::new("mcp.task.store.operation", operation);
        match &answer {
            Ok(_) => self
                .telemetry
                .store_operation
                .record(seconds, &[self.backend.clone(), kind]),
            Err(err) => self.telemetry.store_operation.record(
                seconds,
                &[
                    self.backend.clone(),
                    kind,
                    KeyValue::new("error.type", err.code().to_string()),
                ],
            ),
        }
        answer
    }

    /// Counts a handler waiting for input while `wait` runs, and how long it waited.
    fn waiting(&self) -> InputWait {
        self.telemetry
            .input_waiting
            .add(1, std::slice::from_ref(&self.backend));
        InputWait {
            telemetry: Arc::clone(&self.telemetry),
            backend: self.backend.clone(),
            started: Instant::now(),
        }
    }
}

/// Whether a failed task's message says its lease lapsed (with or without attempts left
/// to say so).
fn lapsed(message: &str) -> bool {
    message == LEASE_LAPSED || message.starts_with("the task failed after ")
}

/// One handler waiting for input, counted until dropped (also when its future is).
struct InputWait {
    telemetry: Arc<Inner>,
    backend: KeyValue,
    started: Instant,
}

impl Drop for InputWait {
    fn drop(&mut self) {
        let backend = std::slice::from_ref(&self.backend);
        self.telemetry.input_waiting.add(-1, backend);
        self.telemetry
            .input_wait
            .record(self.started.elapsed().as_secs_f64(), backend);
    }
}

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.store.fmt(f)
    }
}

impl TaskStore for Observed {
    fn ttl_policy(&self) -> TtlPolicy {
        self.store.ttl_policy()
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        let task = self.timed("insert", || self.store.insert(owner, request))?;
        note(task.id(), task.status(), task.trace_context());
        Ok(task)
    }

    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        let (task, lease) =
            self.timed("insert_leased", || self.store.insert_leased(owner, request))?;
        note(task.id(), task.status(), task.trace_context());
        Ok((task, lease))
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let task = self.timed("get", || self.store.get(owner, task_id))?;
        note_task(&task);
        Ok(task)
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        self.timed("origin", || self.store.origin(owner, task_id))
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        self.timed("list", || self.store.list(owner, cursor, page_size))
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        let task = self.timed("update", || self.store.update(owner, task_id, update))?;
        note_task(&task);
        Ok(task)
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.timed("remove", || self.store.remove(owner, task_id))
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        let task = self.store.wait(owner, task_id, timeout)?;
        note_task(&task);
        Ok(task)
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        let _waiting = self.waiting();
        self.store.wait_for_input(owner, task_id, timeout)
    }

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        let wait = self.store.wait_async(owner, task_id);
        Box::pin(async move {
            let task = wait.await?;
            note_task(&task);
            Ok(task)
        })
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        let waiting = self.waiting();
        let wait = self.store.wait_for_input_async(owner, task_id);
        Box::pin(async move {
            let answers = wait.await;
            drop(waiting);
            answers
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.store.wait_for_cancel_async(owner, task_id)
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.store.add_subscriber(subscriber)
    }

    fn claim(&self) -> Result<Option<Claim>, Error> {
        self.timed("claim", || self.store.claim())
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        self.store.wait_for_claimable(timeout)
    }

    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        self.timed("hand_over", || self.store.hand_over(owner, task_id))
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        self.timed("job", || self.store.job(owner, task_id))
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.store.unsubscribe(id)
    }
}
