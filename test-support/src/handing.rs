//! [`HandingRegistry`]: the in-process registry, plus hand-overs and claims as a shared
//! store does them, for tests of what servers do with a claimed task without Redis.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_tasks::{
    AnyTask, Claim, Error, InputResponses, JsonObject, Lease, Owner, StoreFuture, Subscriber,
    SubscriptionId, Task, TaskOrigin, TaskPage, TaskRegistry, TaskRequest, TaskStore, TtlPolicy,
    Update, Working,
};

/// The registry, doing on a hand-over what a shared store does: the task becomes
/// claimable, and a claim applies the core's [`Update::claim`] and hands back the job, the
/// checkpoint and a lease fenced by the new attempt. `Clone` shares the store, so two
/// servers (or managers) over clones play two instances.
#[derive(Clone, Default)]
pub struct HandingRegistry {
    registry: TaskRegistry,
    jobs: Arc<Mutex<HashMap<String, JsonObject>>>,
    handed: Arc<Handed>,
}

/// The tasks handed over and not claimed yet, and the condition claimers wait on.
#[derive(Default)]
struct Handed {
    queue: Mutex<VecDeque<(Owner, String)>>,
    filed: Condvar,
}

/// Poison policy: every critical section here only moves entries of a map or a queue.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for HandingRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandingRegistry").finish_non_exhaustive()
    }
}

impl TaskStore for HandingRegistry {
    fn ttl_policy(&self) -> TtlPolicy {
        self.registry.ttl_policy()
    }
    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.insert_leased(owner, request).map(|(task, _)| task)
    }
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        let job = request
            .redelivery()
            .map(|redelivery| redelivery.job().clone());
        let (task, lease) = self.registry.insert_leased(owner, request)?;
        if let Some(job) = job {
            lock(&self.jobs).insert(task.id().to_string(), job);
        }
        Ok((task, lease))
    }
    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.registry.get(owner, task_id)
    }
    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        self.registry.origin(owner, task_id)
    }
    fn list(&self, owner: &Owner, cursor: Option<&str>, size: usize) -> Result<TaskPage, Error> {
        self.registry.list(owner, cursor, size)
    }
    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        self.registry.update(owner, task_id, update)
    }
    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.registry.remove(owner, task_id)
    }
    fn wait(&self, o: &Owner, id: &str, t: Option<Duration>) -> Result<AnyTask, Error> {
        self.registry.wait(o, id, t)
    }
    fn wait_for_input(
        &self,
        o: &Owner,
        id: &str,
        t: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        self.registry.wait_for_input(o, id, t)
    }
    fn wait_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, AnyTask> {
        self.registry.wait_async(o, id)
    }
    fn wait_for_input_async<'a>(
        &'a self,
        o: &'a Owner,
        id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        self.registry.wait_for_input_async(o, id)
    }
    fn wait_for_cancel_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, ()> {
        self.registry.wait_for_cancel_async(o, id)
    }
    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.registry.add_subscriber(subscriber)
    }
    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.registry.unsubscribe(id)
    }

    /// Hands over an unfinished redeliverable task with attempts left.
    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        let redeliverable = lock(&self.jobs).contains_key(task_id);
        let task = self.registry.get(owner, task_id)?;
        let left = task.attempts().is_some_and(|attempts| attempts.left());
        if !redeliverable || !left || task.is_terminal() {
            return Ok(false);
        }
        lock(&self.handed.queue).push_back((owner.clone(), task_id.to_owned()));
        self.handed.filed.notify_all();
        Ok(true)
    }

    fn claim(&self) -> Result<Option<Claim>, Error> {
        let Some((owner, task_id)) = lock(&self.handed.queue).pop_front() else {
            return Ok(None);
        };
        let claimed = self.registry.update(&owner, &task_id, Update::claim())?;
        let Some(attempts) = claimed.attempts() else {
            return Err(Error::Internal(format!(
                "claimed task {task_id} has no attempts"
            )));
        };
        let checkpoint = claimed.checkpoint().cloned();
        let task =
            Task::<Working>::try_from(claimed).map_err(|err| Error::Internal(err.to_string()))?;
        let job = lock(&self.jobs).get(&task_id).cloned().unwrap_or_default();
        Ok(Some(Claim {
            owner,
            task,
            job,
            attempts,
            checkpoint,
            lease: Lease::none().for_attempt(attempts.attempt()),
        }))
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        let queue = lock(&self.handed.queue);
        let timeout = timeout.unwrap_or(Duration::from_secs(1));
        drop(
            self.handed
                .filed
                .wait_timeout_while(queue, timeout, |queue| queue.is_empty())
                .unwrap_or_else(PoisonError::into_inner),
        );
        Ok(())
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        self.registry.get(owner, task_id)?;
        Ok(lock(&self.jobs).get(task_id).cloned())
    }
}
