//! The [`TaskStore`] implementation: creates, reads, changes decided by the core and
//! written in one call, removals and waits.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend;
use mcp_tasks::{
    AnyTask, Claim, Error, InputResponses, JsonObject, Lease, LimitScope, MAX_PAGE_SIZE, Owner,
    Redelivery, RequestId, StoreFuture, Subscriber, SubscriptionId, Task, TaskId, TaskOrigin,
    TaskPage, TaskRequest, TaskStore, Timestamp, TtlPolicy, Update, Working,
};

use crate::PostgresTaskStore;
use crate::owners::owner_tag;
use crate::rows::{canonical, column, millis, not_found, unexpected, write_id};
use crate::waits::{Check, until_terminal};

/// How long a removed task's fields let a replayed removal answer as the first one.
const REPLAY_WINDOW_MS: i64 = 30_000;

impl PostgresTaskStore {
    /// One decision and conditional write of `update` (see [`TaskStore::update`]),
    /// decided first on the copy this instance keeps, if any.
    fn update_once(&self, owner: &Owner, task_id: &str, update: &Update) -> Result<AnyTask, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let known = inner
            .copies
            .recall(&id, task_id)
            .map(|(version, task)| (i64::try_from(version).unwrap_or(0), task));
        backend::update_versioned(
            update,
            task_id,
            known,
            || Ok(inner.read(owner, id)?.map(|read| (read.version, read.task))),
            |on, task, notify| inner.commit(owner, id, on, task, notify),
        )
    }

    /// Creates a task, with a lease held by this instance if `leased` and the policy has
    /// leases.
    fn create_task(
        &self,
        owner: &Owner,
        request: TaskRequest,
        leased: bool,
    ) -> Result<(Task<Working>, Lease), Error> {
        let inner = &*self.inner;
        let leases = inner.leases.as_ref().filter(|_| leased);
        let id = TaskId::random();
        let uuid = canonical(&id.to_string())?;
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
        let job = request
            .redelivery()
            .map(|redelivery| serde_json::to_string(redelivery.job()))
            .transpose()
            .map_err(|err| Error::Internal(err.to_string()))?;
        let body = backend::encode(&fresh(Timestamp::from_unix_millis(0)).into_any());
        let request_id = serde_json::to_string(request.request_id())
            .map_err(|err| Error::Internal(err.to_string()))?;
        let rows = inner.query(
            &inner.sql.create,
            vec![
                Box::new(uuid),
                Box::new(owner_tag(owner)),
                Box::new(body),
                Box::new(ttl.map(millis)),
                Box::new(
                    inner
                        .per_owner
                        .map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
                ),
                Box::new(request_id),
                Box::new(request.method().to_owned()),
                // Chosen before the call, so that a replay recognizes its own write.
                Box::new(write_id()),
                Box::new(leases.map(crate::lease::Leases::lease_ms)),
                Box::new(job),
                Box::new(inner.channel.clone()),
            ],
        )?;
        let row = rows.first().ok_or_else(|| unexpected("no row"))?;
        let outcome: String = column(row, 0)?;
        let at: i64 = column(row, 1)?;
        match outcome.as_str() {
            "ok" => {
                let task = fresh(Timestamp::from_unix_millis(at));
                inner.copies.remember(uuid, 1, &task.clone().into_any());
                let attempt = task.attempts().map(|attempts| attempts.attempt());
                let lease =
                    leases.map_or_else(Lease::none, |leases| leases.book.hold(uuid, attempt));
                let lease = match attempt {
                    Some(attempt) if !lease.is_held() => lease.for_attempt(attempt),
                    _ => lease,
                };
                Ok((task, lease))
            }
            "limit" => Err(Error::LimitExceeded {
                limit: inner.per_owner.unwrap_or(usize::MAX),
                scope: LimitScope::PerOwner,
            }),
            other => Err(unexpected(other)),
        }
    }
}

impl TaskStore for PostgresTaskStore {
    fn ttl_policy(&self) -> TtlPolicy {
        self.inner.ttl
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.create_task(owner, request, false)
            .map(|(task, _)| task)
    }

    /// Creates the task with a lease held by this instance (unless the policy is to leave
    /// tasks until their TTL).
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        self.create_task(owner, request, true)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let id = canonical(task_id)?;
        match self.inner.read(owner, id)? {
            Some(read) => Ok(read.task),
            None => Err(not_found(task_id)),
        }
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let rows = inner.query(
            &inner.sql.origin,
            vec![Box::new(id), Box::new(owner_tag(owner))],
        )?;
        let row = rows.first().ok_or_else(|| not_found(task_id))?;
        let request_id: String = column(row, 0)?;
        let method: String = column(row, 1)?;
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
            .map(|cursor| inner.cursors.decode(owner, cursor))
            .transpose()?
            .map_or(i64::MIN, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let rows = inner.query(
            &inner.sql.list,
            vec![
                Box::new(owner_tag(owner)),
                Box::new(after),
                Box::new(i64::try_from(page_size + 1).unwrap_or(i64::MAX)),
            ],
        )?;
        let mut tasks = Vec::with_capacity(page_size.min(rows.len()));
        let mut last = None;
        let more = rows.len() > page_size;
        for row in rows.iter().take(page_size) {
            let id: uuid::Uuid = column(row, 0)?;
            let seq: i64 = column(row, 1)?;
            let status: String = column(row, 2)?;
            let body: String = column(row, 3)?;
            let created: i64 = column(row, 4)?;
            let updated: i64 = column(row, 5)?;
            tasks.push(backend::decode(
                &id.to_string(),
                &status,
                created,
                updated,
                &body,
            )?);
            last = Some(seq);
        }
        let next_cursor = match (more, last) {
            (true, Some(seq)) => Some(
                inner
                    .cursors
                    .encode(owner, u64::try_from(seq).unwrap_or_default()),
            ),
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
        inner.copies.forget(&id);
        let rows = inner.query(
            &inner.sql.remove,
            vec![
                Box::new(id),
                Box::new(owner_tag(owner)),
                Box::new(write_id()),
                Box::new(inner.channel.clone()),
                Box::new(REPLAY_WINDOW_MS),
            ],
        )?;
        let row = rows.first().ok_or_else(|| not_found(task_id))?;
        let status: String = column(row, 0)?;
        let body: String = column(row, 1)?;
        let created: i64 = column(row, 2)?;
        let updated: i64 = column(row, 3)?;
        backend::decode(task_id, &status, created, updated, &body)
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
        inner.wait_until(owner, task_id, timeout, |read| {
            inner.take_input(owner, task_id, read)
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
        inner.wait_until_async(owner, task_id, move |read| {
            inner.take_input(owner, task_id, read)
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.inner.wait_until_async(owner, task_id, move |read| {
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

    /// Claims a task whose instance stopped or handed it over. Without leases
    /// ([`LeasePolicy::leave_until_ttl`](mcp_tasks::LeasePolicy::leave_until_ttl))
    /// nothing is ever claimable.
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
        inner.hand_over_task(leases, owner, id)
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        let inner = &*self.inner;
        let id = canonical(task_id)?;
        let rows = inner.query(
            &inner.sql.job,
            vec![Box::new(id), Box::new(owner_tag(owner))],
        )?;
        let row = rows.first().ok_or_else(|| not_found(task_id))?;
        let job: Option<String> = column(row, 0)?;
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
