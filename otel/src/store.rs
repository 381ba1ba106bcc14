//! [`Observed`]: a store whose every call is timed by backend and operation, its input
//! waits measured, its lease lapses counted, and the task a request touches noted for the
//! request's span. No backend changes: it wraps whatever `TaskStore` a server opened.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks::backend::LEASE_LAPSED;
use mcp_tasks::{
    AnyTask, Claim, Error, InputResponses, JsonObject, Lease, Owner, StatusChange, StoreFuture,
    Subscriber, SubscriptionId, Task, TaskOrigin, TaskPage, TaskRequest, TaskStatus, TaskStore,
    TtlPolicy, Update, Working,
};
use opentelemetry::KeyValue;

use super::{Inner, note, note_task};

/// A store whose calls are measured ([`Telemetry::observe`](super::Telemetry::observe));
/// with telemetry that records nothing, it only forwards. Cloning clones the store (and
/// shares the telemetry).
#[derive(Clone)]
pub struct Observed<S> {
    store: S,
    telemetry: Option<Measures>,
}

/// The recording half of [`Observed`].
#[derive(Clone)]
struct Measures {
    inner: Arc<Inner>,
    /// `mcp.task.store.backend`: the store's type, as its `Debug` names it.
    backend: KeyValue,
}

impl<S: TaskStore> Observed<S> {
    pub(super) fn new(store: S, telemetry: Option<Arc<Inner>>) -> Self {
        let Some(telemetry) = telemetry else {
            return Observed {
                store,
                telemetry: None,
            };
        };
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
        Observed {
            store,
            telemetry: Some(Measures {
                inner: telemetry,
                backend: KeyValue::new("mcp.task.store.backend", name),
            }),
        }
    }

    /// The store it wraps.
    pub fn get_ref(&self) -> &S {
        &self.store
    }

    /// Runs one store operation and records how long it took.
    fn timed<T>(
        &self,
        operation: &'static str,
        call: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        let Some(measures) = &self.telemetry else {
            return call();
        };
        let started = Instant::now();
        let answer = call();
        let seconds = started.elapsed().as_secs_f64();
        let kind = KeyValue::new("mcp.task.store.operation", operation);
        let backend = measures.backend.clone();
        match &answer {
            Ok(_) => measures
                .inner
                .store_operation
                .record(seconds, &[backend, kind]),
            Err(err) => measures.inner.store_operation.record(
                seconds,
                &[
                    backend,
                    kind,
                    KeyValue::new("error.type", err.code().to_string()),
                ],
            ),
        }
        answer
    }

    /// Counts a handler waiting for input while the guard lives, and how long it waited.
    fn waiting(&self) -> Option<InputWait> {
        let measures = self.telemetry.clone()?;
        measures
            .inner
            .input_waiting
            .add(1, std::slice::from_ref(&measures.backend));
        Some(InputWait {
            measures,
            started: Instant::now(),
        })
    }
}

/// Whether a failed task's message says its lease lapsed (with or without attempts left
/// to say so).
fn lapsed(message: &str) -> bool {
    message == LEASE_LAPSED || message.starts_with("the task failed after ")
}

/// One handler waiting for input, counted until dropped (also when its future is).
struct InputWait {
    measures: Measures,
    started: Instant,
}

impl Drop for InputWait {
    fn drop(&mut self) {
        let backend = std::slice::from_ref(&self.measures.backend);
        self.measures.inner.input_waiting.add(-1, backend);
        self.measures
            .inner
            .input_wait
            .record(self.started.elapsed().as_secs_f64(), backend);
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Observed<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.store.fmt(f)
    }
}

impl<S: TaskStore> TaskStore for Observed<S> {
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
