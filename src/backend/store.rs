//! [`SharedStore`]: the one [`TaskStore`] of every engine, over its [`Driver`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::cursors::Cursors;
use super::driver::{
    ChangeEvent, Condition, Driver, FeedEvent, FeedSink, FeedTarget, Inserted, Listening, NewTask,
    TaskKey, Write, Wrote,
};
use super::leases::Leases;
use super::settings::StoreSettings;
use super::waits::{Check, until_terminal};
use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::error::{Error, LimitScope, shorten};
use crate::id::TaskId;
use crate::input::InputResponses;
use crate::jsonrpc::{JsonObject, RequestId};
use crate::status::Working;
use crate::store::copies::Copies;
use crate::store::feed::Feed;
use crate::store::notify::Notifier;
use crate::store::record::encode;
use crate::store::versioned::{DecidedOn, Written, retry_finishing, update_versioned};
use crate::store::{
    Claim, Lease, MAX_PAGE_SIZE, Owner, Redelivery, StoreFuture, Subscriber, SubscriptionId,
    TaskOrigin, TaskPage, TaskRequest, TaskStore, TtlPolicy, Update,
};
use crate::task::Task;

/// How often the lease thread runs when there are no leases (its housekeeping: the
/// driver's [`sweep`](Driver::sweep)).
const HOUSEKEEPING: Duration = Duration::from_secs(5);

/// The [`TaskStore`] of an engine, written once over its [`Driver`]: every decision,
/// wait, subscription, lease, claim, cursor and retry of a store shared by several server
/// instances (see the [module docs](super) for what it guarantees and what it asks of the
/// driver).
///
/// `Clone` shares the instance (its driver, its copies, its waits and its threads). A
/// backend crate wraps it in a type of its own (with its constructors) and implements
/// [`AsSharedStore`] to make that type a [`TaskStore`].
pub struct SharedStore<D: Driver> {
    inner: Arc<Inner<D>>,
}

impl<D: Driver> Clone for SharedStore<D> {
    fn clone(&self) -> Self {
        SharedStore {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// A store type that is a [`SharedStore`] over a driver (a backend crate's own type, with
/// its constructors and getters): it is a [`TaskStore`] through the shared store.
pub trait AsSharedStore: Send + Sync + std::fmt::Debug {
    /// The engine's driver.
    type Driver: Driver;

    /// The shared store this store is.
    fn shared_store(&self) -> &SharedStore<Self::Driver>;
}

impl<D: Driver> AsSharedStore for SharedStore<D> {
    type Driver = D;

    fn shared_store(&self) -> &SharedStore<D> {
        self
    }
}

/// One instance of a shared store: its driver and what it keeps in memory.
pub(crate) struct Inner<D> {
    pub(crate) driver: D,
    pub(crate) settings: StoreSettings,
    pub(crate) cursors: Cursors,
    /// The waits of this instance by task, and whether its change feed is up (never, for a
    /// driver without one: its waits poll).
    pub(crate) feed: Feed<TaskKey>,
    pub(crate) notifier: Notifier,
    /// Unfinished tasks at the latest version this instance knows: as it wrote them, or
    /// as its feed told it. A change to one is decided on that copy and written in one
    /// round trip if the version still holds.
    pub(crate) copies: Copies<TaskKey>,
    /// The leases of running tasks, unless the lease policy is to leave them.
    pub(crate) leases: Option<Leases>,
    /// Whether the feed may lose a change while it is up ([`Listening::FeedAfterCommit`]):
    /// then the waits poll while it is up too.
    pub(crate) lossy_feed: AtomicBool,
}

/// The error of an unknown task.
pub(crate) fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

/// What a conditional write came to, once the store took note of it.
pub(crate) enum Landed {
    /// Written: the task as stored, and for a claim its job.
    Stored(AnyTask, Option<String>),
    /// Not written: another writer came first (with the task as it is, if answered).
    Stale(Option<(u64, AnyTask)>),
    /// Not written: the lease condition does not hold.
    Held,
}

impl<D: Driver> SharedStore<D> {
    /// Starts an instance over `driver` with `settings`: agrees on the cursor secret,
    /// starts the driver's change feed and the lease thread (which also runs the driver's
    /// housekeeping); returns once the feed is up, so that subscribers registered right
    /// after see every change from then on.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for settings that cannot work
    /// ([`StoreSettings::validate`]); [`Error::Store`] if the driver cannot share the
    /// cursor secret, start its feed, or the feed is not up within the I/O timeout.
    pub fn start(driver: D, settings: StoreSettings) -> Result<Self, Error> {
        settings.validate()?;
        let cursors = Cursors::agree(&driver, settings.configured_cursor_secret())?;
        // A drain of an earlier instance of this name ends with it: this one claims.
        driver.set_draining(settings.instance(), false)?;
        let leases = Leases::of(&settings);
        let inner = Arc::new(Inner {
            driver,
            settings,
            cursors,
            feed: Feed::default(),
            notifier: Notifier::default(),
            copies: Copies::default(),
            leases,
            lossy_feed: AtomicBool::new(false),
        });
        let target: Weak<dyn FeedTarget> = Arc::downgrade(&inner) as Weak<dyn FeedTarget>;
        let listening = inner.driver.listen(FeedSink::new(target))?;
        inner
            .lossy_feed
            .store(listening == Listening::FeedAfterCommit, Ordering::Relaxed);
        let interval = inner
            .settings
            .leases()
            .renewal_interval()
            .unwrap_or(HOUSEKEEPING);
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("mcp-tasks-leases".into())
            .spawn(move || super::leases::run(&weak, interval))
            .map_err(|err| Error::store_caused("cannot start the lease thread", err))?;
        let io = inner.settings.io();
        if listening != Listening::Polling && !inner.feed.wait_live(io) {
            return Err(Error::store(format!(
                "the store's change feed did not come up within {io:?}"
            )));
        }
        Ok(SharedStore { inner })
    }

    /// The driver.
    #[must_use]
    pub fn driver(&self) -> &D {
        &self.inner.driver
    }

    /// The settings it was started with.
    pub fn settings(&self) -> &StoreSettings {
        &self.inner.settings
    }

    /// The number of waits pending on this instance now, blocking or async: each `wait`,
    /// `wait_for_input` in progress and each future of theirs not yet resolved or dropped.
    #[must_use]
    pub fn pending_waits(&self) -> usize {
        self.inner.feed.pending()
    }

    /// Whether this instance hears changes now (its driver's feed is up); while it does
    /// not, waits poll.
    #[must_use]
    pub fn listening(&self) -> bool {
        self.inner.feed.live()
    }

    /// Registers `watcher` for every creation and status change heard by this instance
    /// (any instance's: [`TaskAdmin::watch`](crate::admin::TaskAdmin::watch)).
    pub(crate) fn watch(&self, watcher: crate::store::ChangeWatcher) -> SubscriptionId {
        self.inner.notifier.watch(watcher)
    }

    /// The current time on the engine's clock (the one every timestamp comes from).
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot be reached.
    pub fn now(&self) -> Result<Timestamp, Error> {
        self.inner.driver.now()
    }
}

impl<D: Driver> std::fmt::Debug for SharedStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("SharedStore")
            .field("driver", &inner.driver)
            .field("ttl", &inner.settings.ttl())
            .field("limits", &inner.settings.stored_limits())
            .field("listening", &inner.feed.live())
            .field(
                "leases_held",
                &inner.leases.as_ref().map(|leases| leases.book.len()),
            )
            .finish_non_exhaustive()
    }
}

impl<D: Driver> Inner<D> {
    /// The key of `owner`'s task `task_id`: only ids a store could have issued name one.
    pub(crate) fn key(&self, owner: &Owner, task_id: &str) -> Result<TaskKey, Error> {
        TaskId::parse_canonical_uuid(task_id)
            .map(|id| TaskKey::new(owner.clone(), id))
            .ok_or_else(|| not_found(task_id))
    }

    /// Creates a task, with a lease held by this instance if `leased` and the policy has
    /// leases.
    fn create(
        &self,
        owner: &Owner,
        request: TaskRequest,
        leased: bool,
    ) -> Result<(Task<Working>, Lease), Error> {
        let leases = self.leases.as_ref().filter(|_| leased);
        let uuid = Uuid::new_v4();
        let key = TaskKey::new(owner.clone(), uuid);
        let ttl = self.settings.ttl().effective(request.ttl());
        let poll_interval = request
            .poll_interval()
            .or(self.settings.suggested_poll_interval());
        let max_attempts = request.redelivery().map(Redelivery::max_attempts);
        // The caller's trace context, kept with the task (and its redeliveries).
        let trace = request.trace_context().cloned();
        let fresh = |at| {
            let task = Task::new(TaskId::from_uuid(uuid), at)
                .with_ttl(ttl)
                .with_poll_interval(poll_interval)
                .with_trace_context(trace.clone())
                .with_tool(request.tool());
            match max_attempts {
                Some(max) => task.with_attempts(max),
                None => task,
            }
        };
        let json = |err: serde_json::Error| Error::Internal(err.to_string());
        let job = request
            .redelivery()
            .map(|redelivery| serde_json::to_string(redelivery.job()))
            .transpose()
            .map_err(json)?;
        let body = encode(&fresh(Timestamp::from_unix_millis(0)).into_any());
        let request_id = serde_json::to_string(request.request_id()).map_err(json)?;
        let limits = self.settings.stored_limits();
        let new = NewTask {
            key: &key,
            body: &body,
            ttl,
            request_id: &request_id,
            method: request.method(),
            job: job.as_deref(),
            lease: leases.map(|leases| leases.lease),
            holder: self.settings.instance(),
            limits,
        };
        match self.driver.insert(&new)? {
            Inserted::Created(at) => {
                let task = fresh(at);
                self.copies
                    .remember(key.clone(), 1, &task.clone().into_any());
                let attempt = task.attempts().map(|attempts| attempts.attempt());
                // For a redeliverable task, the lease names its attempt (and fences the
                // handle's writes by it, leased or not).
                let lease = match (leases, attempt) {
                    (Some(leases), attempt) => leases.book.hold(key, attempt),
                    (None, Some(attempt)) => Lease::none().for_attempt(attempt),
                    (None, None) => Lease::none(),
                };
                Ok((task, lease))
            }
            Inserted::Full(scope) => Err(Error::LimitExceeded {
                limit: match scope {
                    LimitScope::PerOwner => limits.per_owner,
                    LimitScope::Total => limits.total,
                }
                .unwrap_or(usize::MAX),
                scope,
            }),
        }
    }

    /// The task `task_id` of `owner`.
    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let key = self.key(owner, task_id)?;
        match self.driver.read(&key)? {
            Some(read) => Ok(read.task),
            None => Err(not_found(task_id)),
        }
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        let key = self.key(owner, task_id)?;
        let origin = self
            .driver
            .origin(&key)?
            .ok_or_else(|| not_found(task_id))?;
        let request_id: RequestId = serde_json::from_str(&origin.request_id).map_err(|err| {
            Error::store(format!(
                "task `{}` has a bad request id: {err}",
                shorten(task_id)
            ))
        })?;
        Ok(TaskOrigin {
            request_id,
            method: Arc::from(origin.method),
        })
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        let after = cursor
            .map(|cursor| self.decode_cursor(owner, cursor))
            .transpose()?;
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        let mut rows = self.driver.page(owner, after, page_size + 1)?;
        let more = rows.len() > page_size;
        rows.truncate(page_size);
        let next_cursor = match rows.last() {
            Some(last) if more => {
                // After a disconnection, the storage may have lost the shared secret.
                self.recheck_secret(false)?;
                Some(self.cursors.encode(owner, last.position))
            }
            _ => None,
        };
        Ok(TaskPage {
            tasks: rows.into_iter().map(|row| row.task).collect(),
            next_cursor,
        })
    }

    /// One decision and conditional write of `update` (see [`TaskStore::update`]),
    /// decided first on the copy this instance keeps, if any (the latest version it wrote
    /// or heard of).
    fn update_once(&self, key: &TaskKey, task_id: &str, update: &Update) -> Result<AnyTask, Error> {
        let known = self.copies.recall(key, task_id);
        update_versioned(
            update,
            task_id,
            known,
            || Ok(self.driver.read(key)?.map(|read| (read.version, read.task))),
            |on, task, notify| self.commit(key, on, task, notify),
        )
    }

    fn update(&self, owner: &Owner, task_id: &str, update: &Update) -> Result<AnyTask, Error> {
        let key = self.key(owner, task_id)?;
        retry_finishing(
            update,
            self.settings.outage(),
            || self.update_once(&key, task_id, update),
            || self.get(owner, task_id),
        )
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        let key = self.key(owner, task_id)?;
        self.copies.forget(&key);
        self.driver.remove(&key)?.ok_or_else(|| not_found(task_id))
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        let key = self.key(owner, task_id)?;
        let job = self.driver.job(&key)?.ok_or_else(|| not_found(task_id))?;
        if job.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&job).map(Some).map_err(|err| {
            Error::store(format!("task `{}` has a bad job: {err}", shorten(task_id)))
        })
    }

    /// Writes `task`, decided `on` a version of the task: [`Written::Stale`] if another
    /// writer came first. Unless `notify`, the task's last update stays as stored (a
    /// checkpoint, a cancel request, answers taken: nothing on the wire changed).
    pub(crate) fn commit(
        &self,
        key: &TaskKey,
        on: DecidedOn<u64>,
        task: &AnyTask,
        notify: bool,
    ) -> Result<Written<u64>, Error> {
        let condition = Condition::Free;
        Ok(match self.write(key, on, task, notify, condition)? {
            Landed::Stored(stored, _) => Written::Stored(stored),
            Landed::Stale(current) => Written::Stale(current),
            Landed::Held => Written::Stale(None),
        })
    }

    /// The version-checked write of `task` decided `on` a version, with a lease
    /// `condition`: if `notify` (the task a client sees changed), subscribers are told and
    /// the last update moves to the engine's time; otherwise neither (a write nobody sees
    /// on the wire keeps `lastUpdatedAt`). Remembers what it wrote.
    ///
    /// # Errors
    /// [`Error::TaskNotFound`] if the task is gone; [`Error::IllegalTransition`] if the
    /// engine refuses a move off a finished status; the driver's errors.
    pub(crate) fn write(
        &self,
        key: &TaskKey,
        on: DecidedOn<u64>,
        task: &AnyTask,
        notify: bool,
        condition: Condition,
    ) -> Result<Landed, Error> {
        let body = encode(task);
        let write = Write {
            key,
            version: on.version,
            task,
            body: &body,
            ttl_changed: task.ttl() != on.ttl,
            notify,
            keep_updated: !notify,
            condition,
            holder: self.settings.instance(),
        };
        match self.driver.write(&write)? {
            Wrote::Written { at, job } => {
                // What was written, with the engine's time of the write.
                let mut stored = task.clone();
                stored.set_last_updated_at(at);
                self.copies.remember(key.clone(), on.version + 1, &stored);
                Ok(Landed::Stored(stored, job))
            }
            Wrote::Stale(current) => Ok(Landed::Stale(current)),
            Wrote::Held => Ok(Landed::Held),
            Wrote::Gone => Err(not_found(&key.id().to_string())),
            Wrote::Illegal(from) => {
                let id = key.id().to_string();
                let to = task.status();
                Err(Error::IllegalTransition {
                    message: format!(
                        "task `{}` is `{from}` in the shared store; `{to}` cannot follow it",
                        shorten(&id)
                    ),
                    task_id: id,
                    from,
                    to,
                })
            }
        }
    }

    /// Takes a change the feed heard: keeps the copies and claimables current, tells the
    /// subscribers (before the waits wake, as in the registry: a server answering a waiter
    /// has sent the task's status notification first), and wakes the task's waits.
    fn on_change(&self, change: ChangeEvent) {
        if let Some(leases) = &self.leases {
            if let ChangeEvent::Claimable { key } = &change {
                // Handed over by its instance: claimable at once, here too.
                leases.claimables.file(key.clone(), Instant::now());
                return;
            }
            // Any other change (a claim, a finish, a removal) ends a candidacy; a task
            // still claimable is filed again by the next lease round that sees it lapsed.
            leases.claimables.unfile(change.key());
        }
        match change {
            ChangeEvent::Removed { key } => {
                self.copies.forget(&key);
                self.feed.bump(&key);
            }
            ChangeEvent::Written {
                key,
                version,
                notify,
                parts,
            } => {
                // Version 1 is a creation: told to the watchers only (it is no status change).
                let created = version == 1;
                let told = if (notify && self.notifier.has_subscribers())
                    || (created && self.notifier.has_watchers())
                {
                    match &parts {
                        Some(parts) => parts.decode(&key.id().to_string()).ok(),
                        // Not carried (too large for the event): read it (it may have moved
                        // on since).
                        None => self.driver.read(&key).ok().flatten().map(|read| read.task),
                    }
                } else {
                    None
                };
                match parts {
                    Some(parts) => self.copies.learn(key.clone(), version, parts),
                    // Not learned; an older copy goes too (read when it changes).
                    None => self.copies.outdate(&key, version),
                }
                if let Some(task) = told {
                    if created {
                        self.notifier.queue_created(key.owner(), &task);
                    } else {
                        self.notifier.queue(key.owner(), &task);
                    }
                    self.notifier.deliver();
                }
                self.feed.bump(&key);
            }
            ChangeEvent::Claimable { .. } => {}
        }
    }
}

impl<D: Driver> FeedTarget for Inner<D> {
    fn receive(&self, event: FeedEvent) {
        match event {
            FeedEvent::Up => self.feed.up(),
            FeedEvent::Down => self.feed.down(),
            FeedEvent::Change(change) => self.on_change(change),
        }
    }
}

/// Every [`AsSharedStore`] is a store: the shared store's decisions, written once.
impl<T: AsSharedStore> TaskStore for T {
    fn ttl_policy(&self) -> TtlPolicy {
        self.shared_store().inner.settings.ttl()
    }

    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        let inner = &self.shared_store().inner;
        inner.create(owner, request, false).map(|(task, _)| task)
    }

    /// Creates the task with a lease held by this instance (unless the policy is to leave
    /// tasks until their TTL).
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        self.shared_store().inner.create(owner, request, true)
    }

    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.shared_store().inner.get(owner, task_id)
    }

    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        self.shared_store().inner.origin(owner, task_id)
    }

    fn list(
        &self,
        owner: &Owner,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<TaskPage, Error> {
        self.shared_store().inner.list(owner, cursor, page_size)
    }

    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        self.shared_store().inner.update(owner, task_id, &update)
    }

    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.shared_store().inner.remove(owner, task_id)
    }

    fn wait(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AnyTask, Error> {
        let inner = &self.shared_store().inner;
        inner.wait_until(owner, task_id, timeout, until_terminal)
    }

    fn wait_for_input(
        &self,
        owner: &Owner,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        let inner = &self.shared_store().inner;
        inner.wait_until(owner, task_id, timeout, |key, read| {
            inner.take_input(key, task_id, read)
        })
    }

    fn wait_async<'a>(&'a self, owner: &'a Owner, task_id: &'a str) -> StoreFuture<'a, AnyTask> {
        let inner = &self.shared_store().inner;
        inner.wait_until_async(owner, task_id, until_terminal)
    }

    fn wait_for_input_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        let inner = &self.shared_store().inner;
        inner.wait_until_async(owner, task_id, move |key, read| {
            inner.take_input(key, task_id, read)
        })
    }

    fn wait_for_cancel_async<'a>(
        &'a self,
        owner: &'a Owner,
        task_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        let inner = &self.shared_store().inner;
        inner.wait_until_async(owner, task_id, move |_, read| {
            Ok(match crate::store::wait::cancel_seen(&read.task, task_id) {
                Some(Ok(())) => Check::Done(()),
                Some(Err(error)) => return Err(error),
                None => Check::Wait,
            })
        })
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.shared_store().inner.notifier.subscribe(subscriber)
    }

    /// Claims a task whose instance stopped or handed it over: one round trip when this
    /// instance knows the task's latest version. Without leases
    /// ([`LeasePolicy::leave_until_ttl`](crate::LeasePolicy::leave_until_ttl)) nothing is
    /// ever claimable.
    fn claim(&self) -> Result<Option<Claim>, Error> {
        let inner = &self.shared_store().inner;
        match &inner.leases {
            Some(leases) => inner.claim_due(leases),
            None => Ok(None),
        }
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        match &self.shared_store().inner.leases {
            Some(leases) => leases.claimables.wait_due(timeout),
            None => std::thread::sleep(timeout.unwrap_or(Duration::from_secs(3_600))),
        }
        Ok(())
    }

    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        self.shared_store().inner.hand_over(owner, task_id)
    }

    fn job(&self, owner: &Owner, task_id: &str) -> Result<Option<JsonObject>, Error> {
        self.shared_store().inner.job(owner, task_id)
    }

    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.shared_store().inner.notifier.unsubscribe(id)
    }
}
