//! The [`TaskStore`] implementation: creates, reads, changes decided by the core and
//! written in one round trip, removals and waits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend;
use mcp_tasks::{
    AnyTask, Claim, Error, InputResponses, JsonObject, Lease, LimitScope, MAX_PAGE_SIZE, Owner,
    Redelivery, RequestId, StoreFuture, Subscriber, SubscriptionId, Task, TaskId, TaskOrigin,
    TaskPage, TaskRequest, TaskStore, Timestamp, TtlPolicy, Update, Working,
};

use crate::RedisTaskStore;
use crate::keys::{canonical, not_found};
use crate::lease::Leases;
use crate::scripts;
use crate::waits::{Check, until_terminal};
use crate::writes::{decode, stamp, unexpected, write_id};

impl RedisTaskStore {
    /// One decision and conditional write of `update` (see [`TaskStore::update`]),
    /// decided first on the copy this instance keeps, if any (the latest version it wrote
    /// or heard of).
    pub(crate) fn update_once(
        &self,
        owner: &Owner,
        task_id: &str,
        update: &Update,
    ) -> Result<AnyTask, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let keys = inner.keys(owner);
        let known = inner.copies.recall(&keys.task(id), id);
        backend::update_versioned(
            update,
            task_id,
            known,
            || Ok(inner.read(&keys, id)?.map(|read| (read.version, read.task))),
            |on, task, notify| inner.commit(&keys, id, on, task, notify),
        )
    }

    /// Creates a task, with a lease held by this instance if `leased` and the policy has
    /// leases.
    pub(crate) fn create_task(
        &self,
        owner: &Owner,
        request: TaskRequest,
        leased: bool,
    ) -> Result<(Task<Working>, Lease), Error> {
        let inner = &*self.inner;
        let leases = inner.leases.as_ref().filter(|_| leased);
        let id = TaskId::random();
        let text = id.to_string();
        let keys = inner.keys(owner);
        let ttl = inner.ttl.effective(request.ttl());
        let poll_interval = request.poll_interval().or(inner.poll_interval);
        let max_attempts = request.redelivery().map(Redelivery::max_attempts);
        // The caller's trace context, kept with the task (and its redeliveries).
        let trace = request.trace_context().cloned();
        let fresh = |at| {
            let task = Task::new(id.clone(), at)
                .with_ttl(ttl)
                .with_poll_interval(poll_interval)
                .with_trace_context(trace.clone());
            match max_attempts {
                Some(max) => task.with_attempts(max),
                None => task,
            }
        };
        let job = match request.redelivery() {
            Some(redelivery) => serde_json::to_string(redelivery.job())
                .map_err(|err| Error::Internal(err.to_string()))?,
            None => String::new(),
        };
        let body = backend::encode(&fresh(Timestamp::from_unix_millis(0)).into_any());
        let request_id = serde_json::to_string(request.request_id())
            .map_err(|err| Error::Internal(err.to_string()))?;
        // Chosen before the call, so that a replay recognizes its own write.
        let write = write_id();
        let reply: Vec<String> = inner.with(|connection| {
            let mut invocation = inner.create.key(keys.task(&text));
            invocation.key(&keys.index).key(&keys.counter);
            if let Some(leases) = leases {
                invocation.key(&leases.index);
            }
            invocation
                .arg(&text)
                .arg(&body)
                .arg(ttl.map(|ttl| ttl.to_string()).unwrap_or_default())
                .arg(inner.per_owner.map(|n| n.to_string()).unwrap_or_default())
                .arg(&request_id)
                .arg(request.method())
                .arg(&write)
                .arg(leases.map(Leases::lease_ms).unwrap_or_default())
                .arg(&inner.channel)
                .arg(&keys.tag)
                .arg(&job)
                .invoke(connection)
        })?;
        match reply.first().map(String::as_str) {
            Some("ok") => {
                let task = fresh(stamp(&reply)?);
                inner
                    .copies
                    .remember(keys.task(&text), 1, &task.clone().into_any());
                let attempt = task.attempts().map(|attempts| attempts.attempt());
                // For a redeliverable task, the lease names its attempt.
                let lease = leases.map_or_else(Lease::none, |leases| {
                    leases.book.hold(keys.task(&text), attempt)
                });
                Ok((task, lease))
            }
            Some("limit") => Err(Error::LimitExceeded {
                limit: inner.per_owner.unwrap_or(usize::MAX),
                scope: LimitScope::PerOwner,
            }),
            _ => Err(unexpected(&reply)),
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn ttl_policy(&self) -> TtlPolicy {
        self.inner.ttl
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.create_task(owner, request, false)
            .map(|(task, _)| task)
    }

    /// Creates the task with a lease held by this instance (unless the policy is to leave
    /// tasks until their TTL): see the [crate docs](crate#dead-instances).
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        self.create_task(owner, request, true)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let id = canonical(task_id)?;
        let keys = self.inner.keys(owner);
        match self.inner.read(&keys, id)? {
            Some(read) => Ok(read.task),
            None => Err(not_found(task_id)),
        }
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let id = canonical(task_id)?;
        let keys = self.inner.keys(owner);
        let key = keys.task(id);
        let (request_id, method): (Option<String>, Option<String>) =
            self.inner.with(|connection| {
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg(&["r", "m"])
                    .query(connection)
            })?;
        let (Some(request_id), Some(method)) = (request_id, method) else {
            return Err(not_found(task_id));
        };
        let request_id: RequestId = serde_json::from_str(&request_id)
            .map_err(|err| Error::store(format!("task `{id}` has a bad request id: {err}")))?;
        Ok(TaskOrigin {
            request_id,
            method: Arc::from(method),
        })
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        let inner = &*self.inner;
        let after = cursor
            .map(|cursor| inner.decode_cursor(owner, cursor))
            .transpose()?;
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let keys = inner.keys(owner);
        let flat: Vec<String> = inner.with(|connection| {
            inner
                .list
                .key(&keys.index)
                .arg(&keys.tasks)
                .arg(after.map(|seq| seq.to_string()).unwrap_or_default())
                .arg(page_size + 1)
                .invoke(connection)
        })?;
        let mut tasks = Vec::with_capacity(page_size.min(flat.len() / 6));
        let mut last = None;
        let mut more = false;
        for row in flat.chunks(6) {
            let [id, seq, status, body, created, updated] = row else {
                return Err(unexpected(row));
            };
            if tasks.len() == page_size {
                more = true;
                break;
            }
            tasks.push(decode(id, status, created, updated, body)?);
            last = Some(seq.parse::<u64>().map_err(|_| unexpected(row))?);
        }
        let next_cursor = match (more, last) {
            (true, Some(seq)) => {
                // After a disconnection, Redis may have restarted and lost the shared secret.
                inner.recheck_secret(false)?;
                Some(inner.cursors.encode(owner, seq))
            }
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        backend::retry_finishing(
            &update,
            self.inner.outage_timeout,
            || self.update_once(owner, task_id, &update),
            || self.get(owner, task_id),
        )
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let keys = inner.keys(owner);
        inner.copies.forget(&keys.task(id));
        let write = write_id();
        let fields: Vec<Option<String>> = inner.with(|connection| {
            inner
                .remove
                .key(keys.task(id))
                .key(&keys.index)
                .key(keys.tombstone(id))
                .arg(id)
                .arg(&inner.channel)
                .arg(&keys.tag)
                .arg(&write)
                .arg(scripts::REPLAY_WINDOW_MS)
                .invoke(connection)
        })?;
        match <[Option<String>; 4]>::try_from(fields) {
            Ok([Some(status), Some(body), Some(created), Some(updated)]) => {
                decode(id, &status, &created, &updated, &body)
            }
            _ => Err(not_found(task_id)),
        }
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        self.inner
            .wait_until(owner, task_id, timeout, until_terminal)
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        let inner = &*self.inner;
        inner.wait_until(owner, task_id, timeout, |keys, read| {
            inner.take_input(keys, task_id, read)
        })
    }

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        self.inner.wait_until_async(owner, task_id, until_terminal)
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        let inner = &*self.inner;
        inner.wait_until_async(owner, task_id, move |keys, read| {
            inner.take_input(keys, task_id, read)
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.inner.wait_until_async(owner, task_id, move |_, read| {
            Ok(match backend::cancel_seen(&read.task, task_id) {
                Some(Ok(())) => Check::Done(()),
                Some(Err(error)) => return Err(error),
                None => Check::Wait,
            })
        })
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.inner.notifier.subscribe(subscriber)
    }

    /// Claims a task whose instance stopped or handed it over (see the
    /// [crate docs](crate#redelivery)): one round trip when this instance knows the task's
    /// latest version. Without leases ([`LeasePolicy::leave_until_ttl`]) nothing is ever
    /// claimable.
    ///
    /// [`LeasePolicy::leave_until_ttl`]: mcp_tasks::LeasePolicy::leave_until_ttl
    fn claim(&self) -> Result<Option<Claim>, Error> {
        match &self.inner.leases {
            Some(leases) => self.inner.claim_due(leases),
            None => Ok(None),
        }
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        match &self.inner.leases {
            Some(leases) => leases.claimables.wait_due(timeout),
            None => std::thread::sleep(timeout.unwrap_or(Duration::from_secs(3_600))),
        }
        Ok(())
    }

    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let Some(leases) = &inner.leases else {
            return Ok(false);
        };
        inner.hand_over_key(leases, &inner.keys(owner), id)
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let key = inner.keys(owner).task(id);
        let (job, status): (Option<String>, Option<String>) = inner.with(|connection| {
            redis::cmd("HMGET")
                .arg(&key)
                .arg(&["j", "s"])
                .query(connection)
        })?;
        if status.is_none() {
            return Err(not_found(task_id));
        }
        job.filter(|job| !job.is_empty())
            .map(|job| {
                serde_json::from_str(&job)
                    .map_err(|err| Error::store(format!("task `{id}` has a bad job: {err}")))
            })
            .transpose()
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.inner.notifier.unsubscribe(id)
    }
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.inner.prefix)
            .field("ttl", &self.inner.ttl)
            .field("per_owner", &self.inner.per_owner)
            .field(
                "leases_held",
                &self.inner.leases.as_ref().map(|leases| leases.book.len()),
            )
            .finish_non_exhaustive()
    }
}
