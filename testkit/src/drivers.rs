//! The driver suite: one generic function per clause of the [`Driver`] contract, over any
//! [`DriverBackend`], and the shared store's own guarantees held over the driver with
//! faults injected by [`Flaky`] (a lost reply, an outage, a deaf feed, renewals that stop).
//!
//! Run them all with [`driver_suite!`](crate::driver_suite). Every blocking call is
//! bounded, so a bug fails a test instead of hanging the suite.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{
    ChangeEvent, Condition, Driver, FeedEvent, FeedSink, FeedTarget, Inserted, LEASE_LAPSED,
    LapsedLease, LeaseCall, LeaseOp, Listed, Listening, NewTask, Position, Renewal, Scan,
    SharedStore, StoreSettings, StoredOrigin, TaskFilter, TaskKey, Versioned, Write, Wrote, encode,
};
use mcp_tasks::{
    AnyTask, ClaimBackoff, Error, InputRequests, LeasePolicy, LimitScope, Limits, Owner,
    Redelivery, Step, Task, TaskHandle, TaskId, TaskRequest, TaskStatus, TaskStore, Timestamp,
    TtlPolicy, Update,
};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::DriverBackend;
use crate::support::{
    BOUND, WAKE, accept, alice, ask, assert_unavailable, bob, claim_within, eventually, input_keys,
    join_within, ms, obj, recorder, req, terminal_changes, timed, tool_result,
};

// ---------------------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------------------

/// A driver that fails on demand, around a real one: how the suite holds the shared
/// store's outage handling to its word on every engine. Each fault is off until armed.
#[derive(Debug)]
pub struct Flaky<D> {
    inner: D,
    /// Writes to refuse with the store error before they reach the engine.
    failing_writes: AtomicUsize,
    /// Writes to send, whose reply is then lost (the store error, after the engine
    /// applied them).
    lost_replies: AtomicUsize,
    /// Whether reads fail with the store error.
    failing_reads: AtomicBool,
    /// Whether renewals fail with the store error (the instance looks dead to the others).
    failing_renewals: AtomicBool,
    /// Whether the store hears no changes (its copies fall behind).
    deaf: bool,
    /// The cursor secret the storage keeps now, if the test says so (it lost the one the
    /// engine keeps, and another instance shared this one).
    secret: Mutex<Option<u128>>,
    /// Disconnections the test adds to the engine's.
    disconnections: AtomicU64,
    /// What the store asked of the driver, counted.
    counts: Counts,
}

/// What a store asked of a [`Flaky`] driver.
#[derive(Debug, Default)]
pub struct Counts {
    /// Reads.
    pub reads: AtomicUsize,
    /// Writes (inserts and removals aside), whatever came of them.
    pub writes: AtomicUsize,
    /// Claims answered [`Wrote::Held`] (the back-off had not passed).
    pub held_claims: AtomicUsize,
    /// Renewal rounds (and hand-overs).
    pub renewals: AtomicUsize,
    /// Asks for lapsed leases.
    pub lapsed_asks: AtomicUsize,
    /// Asks for the cursor secret.
    pub secret_asks: AtomicUsize,
}

impl<D: Driver> Flaky<D> {
    /// `inner`, with no fault armed.
    pub fn new(inner: D) -> Self {
        Flaky {
            inner,
            failing_writes: AtomicUsize::new(0),
            lost_replies: AtomicUsize::new(0),
            failing_reads: AtomicBool::new(false),
            failing_renewals: AtomicBool::new(false),
            deaf: false,
            secret: Mutex::new(None),
            disconnections: AtomicU64::new(0),
            counts: Counts::default(),
        }
    }

    /// The driver wrapped.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// What the store asked of the driver so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The storage keeps `secret` as the cursor secret from now on (as if it lost its own
    /// and another instance shared this one); with `disconnected`, the driver also says it
    /// lost its connections meanwhile.
    pub fn keep_secret(&self, secret: u128, disconnected: bool) {
        *self.secret.lock().unwrap() = Some(secret);
        if disconnected {
            self.disconnections.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `inner`, whose feed the store never hears ([`Listening::Polling`]).
    pub fn deaf(inner: D) -> Self {
        Flaky {
            deaf: true,
            ..Flaky::new(inner)
        }
    }

    /// Refuses the next `n` writes (and inserts, removals) before they reach the engine.
    pub fn fail_writes(&self, n: usize) {
        self.failing_writes.store(n, Ordering::SeqCst);
    }

    /// Loses the reply of the next `n` writes, which the engine applies.
    pub fn lose_replies(&self, n: usize) {
        self.lost_replies.store(n, Ordering::SeqCst);
    }

    /// Fails every read from now on (or no more).
    pub fn fail_reads(&self, failing: bool) {
        self.failing_reads.store(failing, Ordering::SeqCst);
    }

    /// Fails every renewal from now on (or no more).
    pub fn fail_renewals(&self, failing: bool) {
        self.failing_renewals.store(failing, Ordering::SeqCst);
    }

    fn outage() -> Error {
        Error::store("the engine is unreachable (a fault injected by the test kit)")
    }

    /// Takes one of `count`, if any is left.
    fn take(count: &AtomicUsize) -> bool {
        count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    fn refuse_write(&self) -> Result<(), Error> {
        if Self::take(&self.failing_writes) {
            return Err(Self::outage());
        }
        Ok(())
    }
}

impl<D: Driver> Driver for Flaky<D> {
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error> {
        self.counts.reads.fetch_add(1, Ordering::SeqCst);
        if self.failing_reads.load(Ordering::SeqCst) {
            return Err(Self::outage());
        }
        self.inner.read(key)
    }

    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error> {
        self.refuse_write()?;
        self.inner.insert(new)
    }

    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error> {
        self.counts.writes.fetch_add(1, Ordering::SeqCst);
        self.refuse_write()?;
        let wrote = self.inner.write(write)?;
        if matches!(write.condition, Condition::Claim { .. }) && wrote == Wrote::Held {
            self.counts.held_claims.fetch_add(1, Ordering::SeqCst);
        }
        if Self::take(&self.lost_replies) {
            return Err(Error::store(
                "the connection broke before the reply came back (a fault injected by the \
                 test kit)",
            ));
        }
        Ok(wrote)
    }

    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error> {
        self.refuse_write()?;
        self.inner.remove(key)
    }

    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error> {
        self.inner.page(owner, after, limit)
    }

    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        self.inner.page_all(after, filter, limit)
    }

    fn origin(&self, key: &TaskKey) -> Result<Option<StoredOrigin>, Error> {
        self.inner.origin(key)
    }

    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error> {
        self.inner.job(key)
    }

    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error> {
        self.counts.renewals.fetch_add(1, Ordering::SeqCst);
        if self.failing_renewals.load(Ordering::SeqCst) {
            return Err(Self::outage());
        }
        self.inner.renew(calls, lease)
    }

    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error> {
        self.counts.lapsed_asks.fetch_add(1, Ordering::SeqCst);
        self.inner.lapsed(limit)
    }

    fn listen(&self, sink: FeedSink) -> Result<Listening, Error> {
        if self.deaf {
            return Ok(Listening::Polling);
        }
        self.inner.listen(sink)
    }

    fn share_secret(&self, mine: u128) -> Result<u128, Error> {
        self.counts.secret_asks.fetch_add(1, Ordering::SeqCst);
        match *self.secret.lock().unwrap() {
            Some(secret) => Ok(secret),
            None => self.inner.share_secret(mine),
        }
    }

    fn now(&self) -> Result<Timestamp, Error> {
        self.inner.now()
    }

    fn sweep(&self) -> Result<(), Error> {
        self.inner.sweep()
    }

    fn disconnections(&self) -> u64 {
        self.inner.disconnections() + self.disconnections.load(Ordering::SeqCst)
    }

    fn drained(&self) -> Result<Vec<String>, Error> {
        self.inner.drained()
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        self.inner.set_draining(name, draining)
    }
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// The settings of the suite's stores: a 60 s default TTL, no limits, a 100 ms fallback
/// poll, and a 2 s outage timeout.
fn settings() -> StoreSettings {
    StoreSettings::default()
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(600_000))
        .limits(Limits::none())
        .fallback_poll(ms(100))
        .outage_timeout(ms(2_000))
}

/// A store over `driver` with `settings`.
fn store<D: Driver>(driver: D, settings: StoreSettings) -> SharedStore<D> {
    SharedStore::start(driver, settings).expect("a store over the driver")
}

/// A fresh key of `owner`.
fn key_of(owner: &Owner) -> TaskKey {
    TaskKey::new(owner.clone(), Uuid::new_v4())
}

/// What an insert of a new task under `key` takes: its record (`attempts`: redeliverable).
fn record(key: &TaskKey, ttl: Option<u64>, attempts: Option<u32>) -> String {
    let task = Task::new(TaskId::from_uuid(key.id()), Timestamp::from_unix_millis(0)).with_ttl(ttl);
    let task = match attempts {
        Some(max) => task.with_attempts(max),
        None => task,
    };
    encode(&task.into_any())
}

/// The instance name the suite's inserts and writes give.
const HOLDER: &str = "kit-instance";

/// The job the suite's redeliverable tasks carry.
const JOB: &str = r#"{"tool":"sleep","arguments":{"ms":10}}"#;

/// Inserts a new task under `key` (a 60 s ttl), with a lease and a job when given.
#[track_caller]
fn insert<D: Driver>(
    driver: &D,
    key: &TaskKey,
    lease: Option<Duration>,
    job: Option<&str>,
) -> Timestamp {
    let body = record(key, Some(60_000), job.map(|_| 3));
    let new = NewTask {
        key,
        body: &body,
        ttl: Some(60_000),
        request_id: "7",
        method: "tools/call",
        job,
        lease,
        holder: HOLDER,
        limits: Limits::none(),
    };
    match driver.insert(&new).expect("an insert") {
        Inserted::Created(at) => at,
        other => panic!("an insert without limits: {other:?}"),
    }
}

/// The task under `key`, read.
#[track_caller]
fn read<D: Driver>(driver: &D, key: &TaskKey) -> Versioned {
    driver
        .read(key)
        .expect("a read")
        .expect("the task is stored")
}

/// Decides `update` on the task under `key` as read; answers the version decided on and
/// the task decided.
#[track_caller]
fn decide<D: Driver>(driver: &D, key: &TaskKey, update: Update) -> (u64, AnyTask, AnyTask) {
    let read = read(driver, key);
    let before = read.task.clone();
    let at = read.task.last_updated_at();
    match update.apply(read.task, at) {
        Step::Changed(task) | Step::Quiet(task) => (read.version, before, task),
        other => panic!("the update changes the task: {other:?}"),
    }
}

/// Writes `task`, decided on `version` of `before`, with `condition`.
fn write<D: Driver>(
    driver: &D,
    key: &TaskKey,
    version: u64,
    before: &AnyTask,
    task: &AnyTask,
    condition: Condition,
) -> Wrote {
    let body = encode(task);
    driver
        .write(&Write {
            key,
            version,
            task,
            body: &body,
            ttl_changed: task.ttl() != before.ttl(),
            notify: true,
            keep_updated: false,
            condition,
            holder: HOLDER,
        })
        .expect("a write")
}

/// Every row of every owner's pages of `limit` under `filter`, walked from the start.
#[track_caller]
fn walk<D: Driver>(
    driver: &D,
    filter: &TaskFilter,
    limit: usize,
) -> Vec<mcp_tasks::backend::StoredRow> {
    let mut rows = Vec::new();
    let mut after = None;
    for _ in 0..10_000 {
        let page = driver.page_all(after, filter, limit).expect("a page");
        assert!(page.rows.len() <= limit, "a page holds at most its limit");
        rows.extend(page.rows);
        match page.next {
            Some(next) => {
                assert!(after.is_none_or(|after| after < next), "pages move on");
                after = Some(next);
            }
            None => return rows,
        }
    }
    panic!("the pages never end");
}

/// A redeliverable request of at most `max` attempts.
fn redeliverable(max: u32) -> TaskRequest {
    let job = obj(serde_json::from_str::<Value>(JOB).unwrap());
    req(1).with_redelivery(Redelivery::new(max, job))
}

/// Records what a feed delivers.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<FeedEvent>>,
    arrived: Condvar,
}

impl FeedTarget for Recorder {
    fn receive(&self, event: FeedEvent) {
        self.events.lock().unwrap().push(event);
        self.arrived.notify_all();
    }
}

impl Recorder {
    /// Waits (bounded by [`WAKE`]) until an event `wanted` answers `Some` for arrived; its
    /// answer.
    #[track_caller]
    fn until<T>(&self, what: &str, mut wanted: impl FnMut(&FeedEvent) -> Option<T>) -> T {
        let started = Instant::now();
        let mut events = self.events.lock().unwrap();
        loop {
            if let Some(found) = events.iter().find_map(&mut wanted) {
                return found;
            }
            let left = WAKE
                .checked_sub(started.elapsed())
                .unwrap_or_else(|| panic!("{what}: not heard within {WAKE:?}"));
            events = self.arrived.wait_timeout(events, left).unwrap().0;
        }
    }

    /// The changes heard of the task under `key`, in order.
    fn changes_of(&self, key: &TaskKey) -> Vec<ChangeEvent> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                FeedEvent::Change(change) if change.key() == key => Some(change.clone()),
                _ => None,
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// The driver contract
// ---------------------------------------------------------------------------------------

/// Checks: an insert stores the task at version 1, timed by the engine's clock, with its
/// ttl, origin and job, for its owner only.
pub fn a_driver_reads_what_it_inserts<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let before = driver.now().unwrap();
    let key = key_of(&alice());
    let at = insert(&driver, &key, None, None);
    let after = driver.now().unwrap();
    assert!(
        before <= at && at <= after,
        "{before:?} <= {at:?} <= {after:?}"
    );
    let stored = read(&driver, &key);
    assert_eq!(stored.version, 1, "a new task is at version 1");
    assert_eq!(stored.task.status(), TaskStatus::Working);
    assert_eq!(stored.task.id().to_string(), key.id().to_string());
    assert_eq!(
        (stored.task.created_at(), stored.task.last_updated_at()),
        (at, at)
    );
    assert_eq!(stored.task.ttl(), Some(60_000));
    let left = stored.expires_in.expect("a task with a ttl expires");
    assert!(
        left <= ms(60_000) && left > ms(50_000),
        "{left:?} left of 60 s"
    );
    assert_eq!(
        driver.origin(&key).unwrap(),
        Some(StoredOrigin {
            request_id: "7".into(),
            method: "tools/call".into()
        })
    );
    assert_eq!(driver.job(&key).unwrap().as_deref(), Some(""), "no job");
    let foreign = TaskKey::new(bob(), key.id());
    assert_eq!(
        driver.read(&foreign).unwrap(),
        None,
        "another owner's task is none"
    );
    assert_eq!(driver.origin(&foreign).unwrap(), None);
    assert_eq!(driver.job(&foreign).unwrap(), None);
    assert_eq!(
        driver.read(&key_of(&alice())).unwrap(),
        None,
        "an unknown id"
    );

    let redeliverable = key_of(&Owner::anonymous());
    insert(&driver, &redeliverable, None, Some(JOB));
    assert_eq!(driver.job(&redeliverable).unwrap().as_deref(), Some(JOB));
    let attempts = read(&driver, &redeliverable).task.attempts();
    assert_eq!(attempts.map(|a| (a.attempt(), a.max())), Some((1, 3)));
}

/// Checks: a write lands only at the version it was decided on, as the next version, at
/// the engine's time, never moving a finished task to another status; a stale write
/// changes nothing; a write of a task that is gone says so.
pub fn a_write_lands_only_at_the_version_it_was_decided_on<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    let created = insert(&driver, &key, None, None);
    let (version, before, cancelled) = decide(&driver, &key, Update::cancel(Some("stop".into())));
    let Wrote::Written { at, job } =
        write(&driver, &key, version, &before, &cancelled, Condition::Free)
    else {
        panic!("a write at the stored version lands");
    };
    assert!(
        at >= created,
        "the engine's time, never before the last update"
    );
    assert_eq!(job, None, "only a claim answers the job");
    let stored = read(&driver, &key);
    assert_eq!(stored.version, 2);
    assert_eq!(stored.task.status(), TaskStatus::Cancelled);
    assert_eq!(stored.task.status_message(), Some("stop"));
    assert_eq!(stored.task.last_updated_at(), at);

    // Decided on version 1 again: stale.
    let Step::Changed(noted) = Update::status(TaskStatus::Working, Some("late".into()))
        .unwrap()
        .apply(before.clone(), created)
    else {
        panic!("a message change");
    };
    match write(&driver, &key, 1, &before, &noted, Condition::Free) {
        Wrote::Stale(None) => {}
        Wrote::Stale(Some((version, task))) => {
            assert_eq!(version, 2, "the version stored");
            assert_eq!(task, stored.task, "the task as stored");
        }
        other => panic!("a stale write must not land: {other:?}"),
    }
    let unchanged = |what: &str| {
        let now = read(&driver, &key);
        assert_eq!(
            (now.version, now.task),
            (stored.version, stored.task.clone()),
            "{what}"
        );
    };
    unchanged("a stale write changes nothing");

    // At the right version, off a finished status: refused.
    let working = noted;
    assert_eq!(
        write(&driver, &key, 2, &stored.task, &working, Condition::Free),
        Wrote::Illegal(TaskStatus::Cancelled)
    );
    unchanged("a refused move changes nothing");
    assert_eq!(
        write(
            &driver,
            &key_of(&alice()),
            1,
            &before,
            &working,
            Condition::Free
        ),
        Wrote::Gone
    );
    assert_eq!(
        write(
            &driver,
            &TaskKey::new(bob(), key.id()),
            2,
            &stored.task,
            &stored.task,
            Condition::Free
        ),
        Wrote::Gone,
        "another owner's task is gone"
    );
}

/// Checks: a write that changes the ttl moves the expiry to creation plus the new ttl, and
/// an expired task is gone for reads, writes and pages.
pub fn a_write_that_changes_the_ttl_moves_the_expiry<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    insert(&driver, &key, None, None);
    let (version, before, shorter) = decide(&driver, &key, Update::ttl(Some(1_000)));
    assert!(matches!(
        write(&driver, &key, version, &before, &shorter, Condition::Free),
        Wrote::Written { .. }
    ));
    let stored = read(&driver, &key);
    assert_eq!(stored.task.ttl(), Some(1_000));
    assert!(
        stored.expires_in.is_some_and(|left| left <= ms(1_000)),
        "expires a second after its creation: {:?}",
        stored.expires_in
    );
    thread::sleep(ms(1_100));
    assert_eq!(driver.read(&key).unwrap(), None, "expired: gone");
    assert_eq!(
        write(
            &driver,
            &key,
            2,
            &stored.task,
            &stored.task,
            Condition::Free
        ),
        Wrote::Gone
    );
    assert!(driver.page(&alice(), None, 10).unwrap().is_empty());
    assert!(
        walk(&driver, &TaskFilter::any(), 10).is_empty(),
        "no page of every owner holds it"
    );
}

/// Checks: a removal answers the task as it was, once; the task is gone after it.
pub fn a_removal_answers_the_task_once<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    insert(&driver, &key, None, None);
    let stored = read(&driver, &key);
    assert_eq!(
        driver.remove(&TaskKey::new(bob(), key.id())).unwrap(),
        None,
        "another owner cannot remove it"
    );
    assert_eq!(driver.remove(&key).unwrap(), Some(stored.task));
    assert_eq!(driver.read(&key).unwrap(), None);
    assert_eq!(driver.remove(&key).unwrap(), None, "removed once");
    assert!(driver.page(&alice(), None, 10).unwrap().is_empty());
}

/// Checks: an owner's pages follow the creation sequence, continue right after the last
/// task shown (whatever was removed meanwhile), and hold only the owner's tasks.
pub fn an_owners_pages_follow_creation<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let mut mine = Vec::new();
    for n in 0..7 {
        let owner = if n % 3 == 2 { bob() } else { alice() };
        let key = key_of(&owner);
        insert(&driver, &key, None, None);
        if owner == alice() {
            mine.push(key.id().to_string());
        }
    }
    let first = driver.page(&alice(), None, 3).unwrap();
    let ids = |page: &[Listed]| -> Vec<String> {
        page.iter().map(|row| row.task.id().to_string()).collect()
    };
    assert_eq!(ids(&first), mine[..3]);
    assert!(first.windows(2).all(|w| w[0].position < w[1].position));
    // The last task shown is removed: the next page still starts right after it.
    let last = TaskKey::new(alice(), Uuid::parse_str(&mine[2]).unwrap());
    driver.remove(&last).unwrap();
    let second = driver.page(&alice(), Some(first[2].position), 3).unwrap();
    assert_eq!(ids(&second), mine[3..]);
    assert!(first[2].position < second[0].position);
    let end = driver.page(&alice(), Some(second[1].position), 3).unwrap();
    assert!(end.is_empty(), "nothing after the last: {end:?}");
    let bobs = driver.page(&bob(), None, 10).unwrap();
    assert_eq!(bobs.len(), 2, "only bob's");
    assert!(
        driver
            .page(&Owner::anonymous(), None, 10)
            .unwrap()
            .is_empty()
    );
}

/// Checks: the pages of every owner's tasks hold each stored task once, in position order,
/// with its owner and lease; a status filter keeps every task it matches.
pub fn pages_of_every_owner_hold_each_task_once<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let owners = [alice(), bob(), Owner::anonymous(), Owner::new("}{:*\n")];
    let mut keys = Vec::new();
    for n in 0..9 {
        let key = key_of(&owners[n % owners.len()]);
        insert(&driver, &key, (n == 4).then_some(ms(60_000)), None);
        keys.push(key);
    }
    let mut cancelled = HashSet::new();
    for key in keys.iter().step_by(3) {
        let (version, before, task) = decide(&driver, key, Update::cancel(None));
        write(&driver, key, version, &before, &task, Condition::Free);
        cancelled.insert(key.clone());
    }
    for limit in [1, 2, 4, 100] {
        let rows = walk(&driver, &TaskFilter::any(), limit);
        let walked: Vec<TaskKey> = rows.iter().map(|row| row.key.clone()).collect();
        let unique: HashSet<&TaskKey> = walked.iter().collect();
        assert_eq!(
            unique.len(),
            walked.len(),
            "each task once (pages of {limit})"
        );
        assert_eq!(
            unique,
            keys.iter().collect(),
            "every task (pages of {limit})"
        );
        assert!(
            rows.windows(2).all(|w| w[0].position < w[1].position),
            "in position order"
        );
        for row in &rows {
            assert_eq!(row.position.id, row.key.id());
            assert_eq!(row.task, read(&driver, &row.key).task, "the task as stored");
            let leased = row.key == keys[4];
            assert_eq!(
                row.leased_until.is_some(),
                leased,
                "a lease shows while held"
            );
            assert_eq!(
                row.lease_holder.as_deref(),
                leased.then_some(HOLDER),
                "with the instance holding it"
            );
        }
        // Tasks of one owner stand in creation order.
        let alices: Vec<&TaskKey> = walked
            .iter()
            .filter(|key| *key.owner() == alice())
            .collect();
        let created: Vec<&TaskKey> = keys.iter().filter(|key| *key.owner() == alice()).collect();
        assert_eq!(alices, created);
    }
    let filter = TaskFilter::any().with_status(TaskStatus::Cancelled);
    let matched: HashSet<TaskKey> = walk(&driver, &filter, 2)
        .into_iter()
        .filter(|row| filter.matches(&row.task))
        .map(|row| row.key)
        .collect();
    assert_eq!(
        matched, cancelled,
        "the filter leaves out no task it matches"
    );
}

/// Checks: the per-owner limit is checked with the insert: refused past it, nothing
/// stored, other owners unaffected, room again after a removal.
pub fn the_per_owner_limit_is_checked_with_the_insert<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let limits = Limits {
        per_owner: Some(2),
        total: None,
    };
    let try_insert = |key: &TaskKey| {
        let body = record(key, Some(60_000), None);
        driver
            .insert(&NewTask {
                key,
                body: &body,
                ttl: Some(60_000),
                request_id: "1",
                method: "tools/call",
                job: None,
                lease: None,
                holder: HOLDER,
                limits,
            })
            .unwrap()
    };
    let first = key_of(&alice());
    assert!(matches!(try_insert(&first), Inserted::Created(_)));
    assert!(matches!(
        try_insert(&key_of(&alice())),
        Inserted::Created(_)
    ));
    let refused = key_of(&alice());
    assert_eq!(try_insert(&refused), Inserted::Full(LimitScope::PerOwner));
    assert_eq!(driver.read(&refused).unwrap(), None, "nothing stored");
    assert_eq!(driver.page(&alice(), None, 10).unwrap().len(), 2);
    assert!(matches!(try_insert(&key_of(&bob())), Inserted::Created(_)));
    driver.remove(&first).unwrap();
    assert!(
        matches!(try_insert(&refused), Inserted::Created(_)),
        "room again"
    );
}

/// Checks: leases are renewed, released and handed over in one call, each answered in
/// order; a lease of another attempt is not the caller's; a lapsed lease is listed (by any
/// instance) and no longer renewed; the verdict on it lands only while it is lapsed.
pub fn leases_renew_release_lapse_and_hand_over<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let other = backend.another(&driver);
    let lease = ms(400);
    let (once, again, released) = (key_of(&alice()), key_of(&bob()), key_of(&alice()));
    insert(&driver, &once, Some(lease), None);
    insert(&driver, &again, Some(lease), Some(JOB));
    insert(&driver, &released, Some(lease), None);
    let call = |key: &TaskKey, op, attempt| LeaseCall {
        key: key.clone(),
        op,
        attempt,
    };
    assert_eq!(
        driver
            .renew(
                &[
                    call(&once, LeaseOp::Renew, None),
                    call(&again, LeaseOp::Renew, Some(1)),
                    call(&released, LeaseOp::Release, None),
                    call(&again, LeaseOp::Renew, Some(2)),
                    call(&key_of(&alice()), LeaseOp::Renew, None),
                ],
                lease,
            )
            .unwrap(),
        [
            Renewal::Renewed,
            Renewal::Renewed,
            Renewal::Released,
            Renewal::Gone,
            Renewal::Gone
        ],
        "renewed, released, another attempt's, unknown"
    );
    assert!(other.lapsed(100).unwrap().is_empty(), "nothing lapsed yet");
    thread::sleep(lease + ms(200));
    let lapsed = other.lapsed(100).unwrap();
    let keys: HashSet<&TaskKey> = lapsed.iter().map(|lapsed| &lapsed.key).collect();
    assert_eq!(
        keys,
        HashSet::from([&once, &again]),
        "any instance sees them"
    );
    assert!(lapsed.iter().all(|lapsed| !lapsed.handed_over));
    assert_eq!(
        driver
            .renew(&[call(&once, LeaseOp::Renew, None)], lease)
            .unwrap(),
        [Renewal::Lapsed],
        "too late"
    );

    // The verdict lands while the lease is lapsed, and only then.
    let (version, before, failed) = decide(&other, &once, Update::abandon(LEASE_LAPSED));
    assert!(matches!(
        write(&other, &once, version, &before, &failed, Condition::Lapsed),
        Wrote::Written { .. }
    ));
    assert_eq!(read(&driver, &once).task.status(), TaskStatus::Failed);
    let held = key_of(&alice());
    insert(&driver, &held, Some(ms(60_000)), None);
    let (version, before, failed) = decide(&other, &held, Update::abandon(LEASE_LAPSED));
    assert_eq!(
        write(&other, &held, version, &before, &failed, Condition::Lapsed),
        Wrote::Held,
        "a live lease"
    );
    assert_eq!(
        write(&other, &released, 1, &before, &failed, Condition::Lapsed),
        Wrote::Held,
        "no lease"
    );
    let listed: Vec<TaskKey> = other
        .lapsed(100)
        .unwrap()
        .into_iter()
        .map(|l| l.key)
        .collect();
    assert_eq!(
        listed,
        std::slice::from_ref(&again),
        "finished and released tasks are not listed"
    );

    // A hand-over lapses the lease at once, for any instance to see.
    let handed = key_of(&bob());
    insert(&driver, &handed, Some(ms(60_000)), Some(JOB));
    assert_eq!(
        driver
            .renew(&[call(&handed, LeaseOp::HandOver, Some(1))], lease)
            .unwrap(),
        [Renewal::Released]
    );
    let lapsed = other.lapsed(100).unwrap();
    assert!(
        lapsed.contains(&LapsedLease {
            key: handed.clone(),
            handed_over: true
        }),
        "{lapsed:?}"
    );
}

/// Checks: a claim lands only once the lease lapsed at least the back-off ago, answers the
/// job, and holds a new lease for its attempt (the old attempt's renewals are not its).
pub fn a_claim_lands_only_after_the_back_off_and_takes_a_new_lease<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    insert(&driver, &key, Some(ms(300)), Some(JOB));
    thread::sleep(ms(400));
    let claim = |backoff| {
        let (version, _, claimed) = decide(&driver, &key, Update::claim());
        assert_eq!(claimed.attempts().map(|a| a.attempt()), Some(2));
        let body = encode(&claimed);
        driver
            .write(&Write {
                key: &key,
                version,
                task: &claimed,
                body: &body,
                ttl_changed: false,
                notify: true,
                keep_updated: false,
                condition: Condition::Claim {
                    backoff,
                    lease: ms(60_000),
                    attempt: 2,
                },
                holder: "kit-claimer",
            })
            .unwrap()
    };
    assert_eq!(claim(ms(60_000)), Wrote::Held, "within the back-off");
    match claim(Duration::ZERO) {
        Wrote::Written { job, .. } => assert_eq!(job.as_deref(), Some(JOB)),
        other => panic!("a claim after the back-off lands: {other:?}"),
    }
    let stored = read(&driver, &key);
    assert_eq!(stored.task.attempts().map(|a| a.attempt()), Some(2));
    assert!(
        !driver.lapsed(100).unwrap().iter().any(|l| l.key == key),
        "leased again"
    );
    let renew = |attempt| {
        driver
            .renew(
                &[LeaseCall {
                    key: key.clone(),
                    op: LeaseOp::Renew,
                    attempt: Some(attempt),
                }],
                ms(60_000),
            )
            .unwrap()
    };
    assert_eq!(renew(1), [Renewal::Gone], "the old attempt's lease is gone");
    assert_eq!(renew(2), [Renewal::Renewed]);
    let row = walk(&driver, &TaskFilter::any(), 10)
        .into_iter()
        .find(|row| row.key == key)
        .expect("listed");
    assert_eq!(
        row.lease_holder.as_deref(),
        Some("kit-claimer"),
        "the claiming instance holds the lease"
    );
}

/// Checks: a write may keep the task's last update as stored (a change nobody sees on
/// the wire); otherwise it moves to the engine's time.
pub fn a_quiet_write_may_keep_the_last_update<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    let created = insert(&driver, &key, None, None);
    thread::sleep(ms(20));
    let keep = |update: Update, keep_updated: bool| {
        let (version, _, task) = decide(&driver, &key, update);
        let body = encode(&task);
        driver
            .write(&Write {
                key: &key,
                version,
                task: &task,
                body: &body,
                ttl_changed: false,
                notify: false,
                keep_updated,
                condition: Condition::Free,
                holder: HOLDER,
            })
            .unwrap()
    };
    let saved = Update::checkpoint(json!({"step": 1})).unwrap();
    assert_eq!(
        keep(saved, true),
        Wrote::Written {
            at: created,
            job: None
        },
        "the last update stays"
    );
    let stored = read(&driver, &key);
    assert_eq!(stored.version, 2);
    assert_eq!(stored.task.last_updated_at(), created);
    assert_eq!(stored.task.checkpoint(), Some(&json!({"step": 1})));
    let Wrote::Written { at, .. } = keep(Update::request_cancel(), false) else {
        panic!("written");
    };
    assert!(at > created, "the engine's time: {at:?} after {created:?}");
    assert_eq!(read(&driver, &key).task.last_updated_at(), at);
}

/// Checks: every insert, write, removal and hand-over of one instance reaches another's
/// feed, in order, with the version and (when carried) the task as written.
pub fn changes_reach_every_instances_feed_in_order<B: DriverBackend>(backend: &B) {
    let writer = backend.driver();
    let listener = backend.another(&writer);
    let recorder = Arc::new(Recorder::default());
    let target: Weak<dyn FeedTarget> = Arc::downgrade(&recorder) as Weak<dyn FeedTarget>;
    if listener.listen(FeedSink::new(target)).unwrap() == Listening::Polling {
        return;
    }
    recorder.until("the feed comes up", |event| {
        matches!(event, FeedEvent::Up).then_some(())
    });
    let key = key_of(&alice());
    insert(&writer, &key, Some(ms(60_000)), Some(JOB));
    let (version, before, noted) = decide(
        &writer,
        &key,
        Update::status(TaskStatus::Working, Some("noted".into())).unwrap(),
    );
    write(&writer, &key, version, &before, &noted, Condition::Free);
    let body = encode(&noted);
    writer
        .write(&Write {
            key: &key,
            version: 2,
            task: &noted,
            body: &body,
            ttl_changed: false,
            notify: false,
            keep_updated: false,
            condition: Condition::Free,
            holder: HOLDER,
        })
        .unwrap();
    let handed = LeaseCall {
        key: key.clone(),
        op: LeaseOp::HandOver,
        attempt: Some(1),
    };
    writer.renew(&[handed], ms(60_000)).unwrap();
    writer.remove(&key).unwrap();
    recorder.until("the removal", |event| match event {
        FeedEvent::Change(ChangeEvent::Removed { key: removed }) if *removed == key => Some(()),
        _ => None,
    });
    let heard = recorder.changes_of(&key);
    let mut versions = Vec::new();
    for change in &heard[..heard.len() - 1] {
        match change {
            ChangeEvent::Written {
                version,
                notify,
                parts,
                ..
            } => {
                versions.push((*version, *notify));
                if let Some(parts) = parts {
                    let task = parts.decode(&key.id().to_string()).unwrap();
                    assert_eq!(task.status(), TaskStatus::Working);
                    assert_eq!(task.status_message().is_some(), *version > 1);
                }
            }
            ChangeEvent::Claimable { .. } => versions.push((0, false)),
            ChangeEvent::Removed { .. } => panic!("the removal is the last change"),
        }
    }
    assert_eq!(
        versions,
        [(1, false), (2, true), (3, false), (0, false)],
        "inserted, written (told), written quietly, handed over, in order: {heard:?}"
    );
}

/// Checks: the first secret offered is every instance's.
pub fn the_cursor_secret_is_shared_once<B: DriverBackend>(backend: &B) {
    let first = backend.driver();
    let second = backend.another(&first);
    let mine = Uuid::new_v4().as_u128();
    assert_eq!(
        first.share_secret(mine).unwrap(),
        mine,
        "fresh storage keeps it"
    );
    assert_eq!(second.share_secret(Uuid::new_v4().as_u128()).unwrap(), mine);
    assert_eq!(first.share_secret(Uuid::new_v4().as_u128()).unwrap(), mine);
}

/// Checks: the engine's clock is about the wall clock and does not move backwards.
pub fn the_engines_clock_moves_forward<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let first = driver.now().unwrap();
    let second = driver.now().unwrap();
    assert!(first <= second);
    let wall = Timestamp::now();
    let skew = (wall.unix_millis() - second.unix_millis()).abs();
    assert!(skew < 60_000, "{skew} ms from the wall clock");
}

// ---------------------------------------------------------------------------------------
// The shared store over the driver
// ---------------------------------------------------------------------------------------

/// Checks: a change that is a no-op on an instance's copy, which is behind (it heard no
/// change), is decided again on a fresh read before it is answered: an answer to a
/// request the copy does not show is not lost.
pub fn a_no_op_decided_on_a_stale_copy_is_decided_again<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let other = backend.another(&driver);
    let deaf = store(Flaky::deaf(driver), settings());
    let live = store(other, settings());
    let (handle, task) = live.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    // The deaf instance writes the task: its copy is `working`, at that version.
    deaf.set_poll_interval(&alice(), &id, Some(500)).unwrap();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("go on?")))
        .unwrap();
    let keys = input_keys(&live.get(&alice(), &id).unwrap());
    let responses = obj(json!({ keys[0].clone(): accept("yes") }));
    let answered = deaf.respond(&alice(), &id, responses).unwrap();
    assert_eq!(
        answered.status(),
        TaskStatus::InputRequired,
        "the task as stored"
    );
    assert!(input_keys(&answered).is_empty(), "the answer was taken in");
    let answers = waiting.wait_for_input(Some(BOUND)).unwrap();
    assert_eq!(answers.len(), 1, "the handler gets the answer");
    // A wait on the instance that hears nothing reads its task every fallback poll.
    let waiter = {
        let (deaf, id) = (deaf.clone(), id.clone());
        timed(move || deaf.wait(&alice(), &id, Some(BOUND)))
    };
    thread::sleep(ms(200));
    let _done = waiting
        .resume()
        .unwrap()
        .complete(tool_result("done"))
        .unwrap();
    let (finished, waited) = join_within(waiter, BOUND, "a wait that polls");
    assert_eq!(finished.unwrap().status(), TaskStatus::Completed);
    assert!(waited < ms(200) + WAKE, "found by a poll: {waited:?}");
}

/// Checks: a handle's change refused on an instance's copy, which is behind, is decided
/// again on a fresh read, where it is legal.
pub fn a_refusal_decided_on_a_stale_copy_is_decided_again<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let other = backend.another(&driver);
    let deaf = store(Flaky::deaf(driver), settings());
    let live = store(other, settings());
    let (handle, task) = deaf.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    // The deaf instance's copy says `input_required`; another moves the task back.
    deaf.update_status(&alice(), &id, TaskStatus::InputRequired, Some("a".into()))
        .unwrap();
    live.update_status(&alice(), &id, TaskStatus::Working, Some("b".into()))
        .unwrap();
    handle
        .set_status_message(Some("halfway".into()))
        .expect("legal on the task as stored: `working`");
    assert_eq!(
        live.get(&alice(), &id).unwrap().status_message(),
        Some("halfway")
    );
    let _done = handle.complete(tool_result("done")).unwrap();
}

/// Checks: a handle's finishing write whose reply was lost (the engine applied it) is
/// tried again, finds the task finished as it meant to, and answers the task as stored:
/// one result, told once.
pub fn a_finishing_write_whose_reply_was_lost_lands_once<B: DriverBackend>(backend: &B) {
    let flaky = store(Flaky::new(backend.driver()), settings());
    let (seen, _) = recorder(&flaky);
    let (handle, task) = flaky.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    flaky.driver().lose_replies(1);
    let done = handle
        .complete(tool_result("done"))
        .expect("the finishing write landed: its lost reply is no error");
    assert_eq!(done.result(), Some(&tool_result("done")));
    let stored = flaky.get(&alice(), &id).unwrap();
    assert_eq!(stored, done.clone().into_any(), "the task as stored");
    if flaky.listening() {
        assert_eq!(terminal_changes(&seen, &stored), 1, "told once");
    }
}

/// Checks: a handle's finishing write is tried again through an outage until it lands;
/// past the outage timeout it gives up, saying so.
pub fn a_finishing_write_rides_out_an_outage_and_gives_up_after_it<B: DriverBackend>(backend: &B) {
    let flaky = store(
        Flaky::new(backend.driver()),
        settings().outage_timeout(ms(500)),
    );
    let (handle, task) = flaky.create(&alice(), req(1)).unwrap();
    flaky.driver().fail_writes(3);
    let done = handle.complete(tool_result("after the outage")).unwrap();
    assert_eq!(
        flaky.get(&alice(), &task.id().to_string()).unwrap(),
        done.into_any()
    );

    let (handle, task) = flaky.create(&alice(), req(2)).unwrap();
    flaky.driver().fail_writes(usize::MAX);
    let started = Instant::now();
    let given_up = assert_unavailable(
        handle.complete(tool_result("lost")).map(drop),
        "a finishing write past the outage timeout",
    );
    assert!(given_up.to_string().contains("given up"), "{given_up}");
    assert!(
        started.elapsed() >= ms(250),
        "retried for most of the outage timeout: {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < ms(1_500),
        "given up about the outage timeout: {:?}",
        started.elapsed()
    );
    flaky.driver().fail_writes(0);
    let stored = flaky.get(&alice(), &task.id().to_string()).unwrap();
    assert_eq!(stored.status(), TaskStatus::Working, "nothing was written");
}

/// Checks: while the engine cannot be read, reads and waits answer the store error, never
/// a state: not "gone", not "still working" (a timeout), not "asked to cancel".
pub fn a_store_that_cannot_read_answers_errors_never_states<B: DriverBackend>(backend: &B) {
    let flaky = store(
        Flaky::new(backend.driver()),
        settings().outage_timeout(ms(300)),
    );
    let (handle, task) = flaky.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    flaky.driver().fail_reads(true);
    assert_unavailable(flaky.get(&alice(), &id), "a read");
    assert_unavailable(handle.cancel_requested(), "a handle's look at its task");
    let started = Instant::now();
    assert_unavailable(
        flaky.wait(&alice(), &id, Some(ms(200))),
        "a wait with a timeout",
    );
    let waited = started.elapsed();
    assert!(
        waited >= ms(150) && waited < WAKE,
        "a failing read is tried again until the wait's timeout: {waited:?}"
    );
    let waiter = {
        let (flaky, id) = (flaky.clone(), id.clone());
        timed(move || flaky.wait(&alice(), &id, None))
    };
    let (result, waited) = join_within(waiter, BOUND, "a wait without a timeout");
    assert_unavailable(result, "a wait without a timeout, at the outage timeout");
    assert!(waited >= ms(250) && waited < WAKE, "{waited:?}");
    flaky.driver().fail_reads(false);
    assert_eq!(
        flaky.get(&alice(), &id).unwrap().status(),
        TaskStatus::Working
    );
    let _done = handle.complete(tool_result("done")).unwrap();
}

/// Checks: a redeliverable task whose instance stopped renewing is claimed only after its
/// claim back-off, which doubles with each attempt counted against its bound, with its
/// checkpoint (up to the limit); an attempt that saved progress (a new checkpoint) does
/// not count, so the task runs once more than its bound; once its attempts ran out, it
/// fails saying how many ran.
pub fn a_lapsed_task_waits_its_claim_backoff_doubling_per_attempt<B: DriverBackend>(backend: &B) {
    let (lease, base) = (ms(400), ms(600));
    let settings = settings()
        .lease_policy(LeasePolicy::fail_after(lease).renewed_every(ms(50)))
        .claim_backoff(ClaimBackoff::new(base, Duration::from_secs(10)));
    // An instance that stops renewing: every lease it takes lapses.
    let stopped = store(Flaky::new(backend.driver()), settings.clone());
    stopped.driver().fail_renewals(true);
    let (handle, task) = stopped.create(&alice(), redeliverable(3)).unwrap();
    let created = Instant::now();
    let id = task.id().to_string();
    // A checkpoint just under the limit is kept for the next attempt: attempt 1 saved
    // progress, it does not count (its back-off is the base).
    let big = Value::String("x".repeat(mcp_tasks::MAX_CHECKPOINT_BYTES - 2));
    handle.checkpoint(big.clone()).unwrap();

    let mut at = created;
    let mut claims = Vec::new();
    // Attempts 2, 3 and 4 are claimed after a back-off of the attempts counted so far
    // (0, 1, then 2: the base, the base, twice the base); none of them saves progress.
    for (attempt, backoff) in [(2, base), (3, base), (4, base * 2)] {
        let (claim, now) = claim_within(&stopped, BOUND);
        let waited = now - at;
        assert!(
            waited >= lease + backoff - ms(150),
            "attempt {attempt} claimed {waited:?} after the last: before its lease and \
             back-off ({:?})",
            lease + backoff
        );
        assert!(
            waited < lease + backoff + ms(2_000),
            "attempt {attempt} claimed late: {waited:?}"
        );
        assert_eq!(claim.task.id().to_string(), id);
        assert_eq!(claim.attempts.attempt(), attempt);
        assert_eq!(
            claim.attempts.spent(),
            attempt - 2,
            "attempt 1 did not count"
        );
        assert_eq!(
            claim.checkpoint.as_ref(),
            Some(&big),
            "the checkpoint, whole"
        );
        at = now;
        claims.push(claim);
    }

    // The last attempt lapses too: the task fails, saying how many ran.
    let failed = stopped.wait(&alice(), &id, Some(BOUND)).unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    let message = failed.status_message().unwrap_or_default();
    assert!(
        message.contains("after 3 of 3 attempts without progress (4 in all)"),
        "{message}"
    );
    assert!(stopped.claim().unwrap().is_none(), "nothing left to claim");
    let held = stopped.driver().counts().held_claims.load(Ordering::SeqCst);
    assert!(
        held <= 3,
        "{held} claims were tried before their back-off passed (a candidate waits for it)"
    );
    drop((claims, handle));
}

/// Checks: a redeliverable task whose every attempt saves progress and then lapses runs
/// again past its bound, up to its ceiling ([`Attempts::ceiling`](mcp_tasks::Attempts),
/// four times the bound), then fails saying it reached the ceiling.
pub fn a_task_that_saves_progress_runs_up_to_its_ceiling<B: DriverBackend>(backend: &B) {
    let settings = settings()
        .lease_policy(LeasePolicy::fail_after(ms(200)).renewed_every(ms(40)))
        .claim_backoff(ClaimBackoff::new(ms(20), ms(20)));
    let stopped = store(Flaky::new(backend.driver()), settings);
    stopped.driver().fail_renewals(true);
    let (first, task) = stopped.create(&alice(), redeliverable(2)).unwrap();
    let id = task.id().to_string();
    first.checkpoint(json!({"attempt": 1})).unwrap();
    let mut handles = vec![first];
    let started = Instant::now();
    loop {
        let Some(claim) = stopped.claim().unwrap() else {
            if stopped.get(&alice(), &id).unwrap().is_terminal() {
                break;
            }
            assert!(
                started.elapsed() < BOUND * 4,
                "stuck: {:?}",
                started.elapsed()
            );
            stopped.wait_for_claimable(Some(ms(20))).unwrap();
            continue;
        };
        let attempt = claim.attempts.attempt();
        assert!(attempt <= 8, "attempt {attempt}: past the ceiling of 2 × 4");
        assert_eq!(claim.attempts.spent(), 0, "no attempt counted");
        assert_eq!(claim.checkpoint, Some(json!({"attempt": attempt - 1})));
        let handle = TaskHandle::claimed(stopped.clone(), claim);
        handle.checkpoint(json!({"attempt": attempt})).unwrap();
        handles.push(handle);
    }
    assert_eq!(handles.len(), 8, "ran 8 times: the ceiling");
    let failed = stopped.get(&alice(), &id).unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    let message = failed.status_message().unwrap_or_default();
    assert!(message.contains("after 8 attempts (ceiling)"), "{message}");
    drop(handles);
}

/// Checks: a task that runs once, whose instance stopped renewing its lease, fails with
/// the lease-lapsed error, seen by a waiter on another instance.
pub fn a_lapsed_task_that_runs_once_fails<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let other = backend.another(&driver);
    let settings = settings().lease_policy(LeasePolicy::fail_after(ms(300)).renewed_every(ms(50)));
    let stopped = store(Flaky::new(driver), settings.clone());
    let watching = store(other, settings);
    stopped.driver().fail_renewals(true);
    let (handle, task) = stopped.create(&alice(), req(1)).unwrap();
    let failed = watching
        .wait(&alice(), &task.id().to_string(), Some(BOUND))
        .unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    assert_eq!(failed.status_message(), Some(LEASE_LAPSED));
    assert!(
        !watching
            .hand_over(&alice(), &task.id().to_string())
            .unwrap()
    );
    match handle.complete(tool_result("late")) {
        Err(Error::IllegalTransition { from, .. }) => assert_eq!(from, TaskStatus::Failed),
        other => panic!("the verdict stands: {other:?}"),
    }
}

/// Checks: an instance that wrote a task last writes its next change at once, on its copy
/// (one write), without hearing of its own write.
pub fn a_change_after_the_instances_own_write_is_one_write<B: DriverBackend>(backend: &B) {
    let deaf = store(Flaky::deaf(backend.driver()), settings());
    let task = deaf.insert(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    let writes = || deaf.driver().counts().writes.load(Ordering::SeqCst);
    let reads = || deaf.driver().counts().reads.load(Ordering::SeqCst);
    let (written, read) = (writes(), reads());
    for n in 0..3 {
        deaf.update_status(&alice(), &id, TaskStatus::Working, Some(format!("{n}")))
            .unwrap();
    }
    assert_eq!(
        (writes() - written, reads() - read),
        (3, 0),
        "each change one write on the copy, no read"
    );
    assert_eq!(deaf.get(&alice(), &id).unwrap().status_message(), Some("2"));
}

/// Checks: a store says how many waits it has pending and whether it hears changes; its
/// leases carry its instance name; its claim loop sleeps while nothing is claimable.
pub fn a_store_reports_its_waits_feed_and_name<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let listens = {
        let probe = Arc::new(Recorder::default());
        let target: Weak<dyn FeedTarget> = Arc::downgrade(&probe) as Weak<dyn FeedTarget>;
        backend
            .another(&driver)
            .listen(FeedSink::new(target))
            .unwrap()
            != Listening::Polling
    };
    let settings = settings()
        .instance_name("kit-named")
        .lease_policy(LeasePolicy::fail_after(ms(60_000)));
    let named = store(driver, settings);
    assert_eq!(
        named.listening(),
        listens,
        "hears changes when its driver feeds them"
    );
    assert_eq!(named.settings().instance(), "kit-named");
    assert!(format!("{named:?}").contains("SharedStore"));
    let (handle, task) = named.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    let row = walk(named.driver(), &TaskFilter::any(), 10)
        .into_iter()
        .find(|row| row.key.id().to_string() == id)
        .expect("listed");
    assert_eq!(row.lease_holder.as_deref(), Some("kit-named"));
    assert_eq!(named.pending_waits(), 0);
    let waiter = {
        let (named, id) = (named.clone(), id.clone());
        thread::spawn(move || named.wait(&alice(), &id, Some(BOUND)))
    };
    eventually("the wait is pending", || named.pending_waits() == 1);
    let _done = handle.complete(tool_result("done")).unwrap();
    join_within(waiter, BOUND, "the waiter").unwrap();
    assert_eq!(named.pending_waits(), 0, "a finished wait leaves nothing");
    let started = Instant::now();
    named.wait_for_claimable(Some(ms(200))).unwrap();
    assert!(
        started.elapsed() >= ms(150),
        "nothing is claimable: the claim loop's wait sleeps"
    );
}

/// Checks: leases given up (a detached handle's, a handed-over one) are no longer
/// renewed: once every handle let go, a round asks nothing of the driver.
pub fn leases_given_up_are_no_longer_renewed<B: DriverBackend>(backend: &B) {
    let settings =
        settings().lease_policy(LeasePolicy::fail_after(ms(2_000)).renewed_every(ms(100)));
    let flaky = store(Flaky::new(backend.driver()), settings);
    let renewals = || flaky.driver().counts().renewals.load(Ordering::SeqCst);
    let (detached, _) = flaky.create(&alice(), req(1)).unwrap();
    let (handed, task) = flaky.create(&alice(), redeliverable(2)).unwrap();
    eventually("the leases are renewed", || renewals() >= 2);
    let _id = detached.detach();
    // The release goes out with the next round.
    thread::sleep(ms(350));
    assert!(flaky.hand_over(&alice(), &task.id().to_string()).unwrap());
    let before = renewals();
    thread::sleep(ms(500));
    assert_eq!(
        renewals(),
        before,
        "no lease is held any more: nothing to renew"
    );
    drop(handed);
}

/// Checks: a reaper round whose batch of lapsed leases comes back short asks the driver
/// once, not again until its next round.
pub fn a_short_batch_of_lapsed_leases_is_asked_for_once<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let key = key_of(&alice());
    insert(&driver, &key, Some(ms(100)), None);
    thread::sleep(ms(150));
    let interval = ms(1_000);
    let started = Instant::now();
    let reaper = store(
        Flaky::new(backend.another(&driver)),
        settings().lease_policy(LeasePolicy::fail_after(ms(10_000)).renewed_every(interval)),
    );
    while read(&driver, &key).task.status() != TaskStatus::Failed {
        assert!(started.elapsed() < interval * 3, "not failed by the reaper");
        thread::sleep(ms(10));
    }
    // Time for an ask right after the failing write, well within the round.
    thread::sleep(ms(100));
    let asks = reaper.driver().counts().lapsed_asks.load(Ordering::SeqCst);
    let rounds = started.elapsed().as_millis() / interval.as_millis();
    assert!(
        u128::try_from(asks).unwrap() <= rounds.max(1),
        "one ask per round, its batch of one lease being short: {asks} asks in {rounds} round(s)"
    );
}

/// Checks: one lease round fails every task whose lease lapsed, however many (more than
/// one batch of the driver's): a task whose instance died fails within the lease plus one
/// renewal interval.
pub fn a_lease_round_fails_every_lapsed_task<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let keys: Vec<TaskKey> = (0..150)
        .map(|_| {
            let key = key_of(&alice());
            insert(&driver, &key, Some(ms(100)), None);
            key
        })
        .collect();
    thread::sleep(ms(150));
    assert_eq!(driver.lapsed(1_000).unwrap().len(), keys.len());
    let interval = ms(3_000);
    let started = Instant::now();
    let _reaper = store(
        backend.another(&driver),
        settings().lease_policy(LeasePolicy::fail_after(ms(10_000)).renewed_every(interval)),
    );
    let limit = interval + ms(2_500);
    while !driver.lapsed(1_000).unwrap().is_empty() {
        assert!(
            started.elapsed() < limit,
            "not every lapsed task failed in the first round ({} left after {:?})",
            driver.lapsed(1_000).unwrap().len(),
            started.elapsed()
        );
        thread::sleep(ms(50));
    }
    for key in keys.iter().step_by(37) {
        assert_eq!(read(&driver, key).task.status(), TaskStatus::Failed);
    }
}

/// Checks: cursors follow the secret the storage keeps: asked for again after a
/// disconnection (the storage may have lost it), and on a cursor this instance cannot
/// check (at most once a second), never otherwise; the one held before stays accepted.
pub fn cursors_follow_the_secret_the_storage_keeps<B: DriverBackend>(backend: &B) {
    let one = store(Flaky::new(backend.driver()), settings());
    for n in 0..4 {
        let _task = one.insert(&alice(), req(n)).unwrap();
    }
    let asked = || one.driver().counts().secret_asks.load(Ordering::SeqCst);
    let next = |store: &SharedStore<Flaky<B::Driver>>, cursor: Option<&str>| {
        store
            .list(&alice(), cursor, 1)
            .map(|page| page.next_cursor.expect("more tasks follow"))
    };
    let first = next(&one, None).unwrap();
    let before = asked();
    thread::sleep(ms(1_100));
    let second = next(&one, Some(&first)).unwrap();
    assert_eq!(
        asked(),
        before,
        "no disconnection, no doubt: not asked again"
    );

    // The storage lost the secret and another instance shared its own; this instance lost
    // its connections meanwhile: it asks again before it issues a cursor.
    let shared = Uuid::new_v4().as_u128();
    one.driver().keep_secret(shared, true);
    let third = next(&one, None).unwrap();
    assert_eq!(asked(), before + 1, "asked again after a disconnection");
    let other_driver = Flaky::new(backend.another(one.driver().inner()));
    other_driver.keep_secret(shared, false);
    let other = store(other_driver, settings());
    assert!(
        next(&other, Some(&third)).is_ok(),
        "signed with the shared secret"
    );
    assert!(
        next(&other, Some(&first)).is_err(),
        "the lost secret is not the other's"
    );
    assert!(
        next(&one, Some(&first)).is_ok(),
        "the one held before is still accepted"
    );
    assert!(next(&one, Some(&second)).is_ok());

    // A cursor this instance cannot check makes it ask again, at most once a second.
    let newer = Uuid::new_v4().as_u128();
    let newer_driver = Flaky::new(backend.another(one.driver().inner()));
    newer_driver.keep_secret(newer, false);
    let doubtful = next(&store(newer_driver, settings()), None).unwrap();
    one.driver().keep_secret(shared, true);
    next(&one, None).unwrap();
    let asks = asked();
    one.driver().keep_secret(newer, false);
    assert!(
        next(&one, Some(&doubtful)).is_err(),
        "unchecked within a second"
    );
    assert_eq!(asked(), asks, "not asked within a second of the last ask");
    thread::sleep(ms(1_100));
    assert!(
        next(&one, Some(&doubtful)).is_ok(),
        "asked again, and adopted"
    );
    assert_eq!(asked(), asks + 1);
}

/// Checks: an instance hands over only a redeliverable task with attempts left; a task
/// that runs once, or on its last attempt, stays with it, running.
pub fn only_a_task_with_attempts_left_is_handed_over<B: DriverBackend>(backend: &B) {
    let settings =
        settings().lease_policy(LeasePolicy::fail_after(ms(10_000)).renewed_every(ms(1_000)));
    let store = store(backend.driver(), settings);
    let (once, runs_once) = store.create(&alice(), req(1)).unwrap();
    let (last, on_its_last) = store.create(&alice(), redeliverable(1)).unwrap();
    for (what, task) in [
        ("a task that runs once", &runs_once),
        ("a task on its last attempt", &on_its_last),
    ] {
        let id = task.id().to_string();
        assert!(
            !store.hand_over(&alice(), &id).unwrap(),
            "{what} is not handed over"
        );
        assert_eq!(
            store.get(&alice(), &id).unwrap().status(),
            TaskStatus::Working,
            "{what} runs on"
        );
    }
    let (_left, task) = store.create(&alice(), redeliverable(2)).unwrap();
    assert!(
        store.hand_over(&alice(), &task.id().to_string()).unwrap(),
        "a task with attempts left is handed over"
    );
    let _ = once.complete(tool_result("done")).unwrap();
    let _ = last.complete(tool_result("done")).unwrap();
}

/// Checks: a handed-over task is claimed by another instance at once (no back-off), told
/// through the feed, with a fresh lease that instance renews.
pub fn a_handed_over_task_is_claimed_at_once<B: DriverBackend>(backend: &B) {
    let driver = backend.driver();
    let other = backend.another(&driver);
    let settings = settings()
        .lease_policy(LeasePolicy::fail_after(ms(2_000)).renewed_every(ms(100)))
        .claim_backoff(ClaimBackoff::new(
            Duration::from_secs(30),
            Duration::from_secs(30),
        ));
    let old = store(driver, settings.clone());
    let new = store(other, settings);
    let (handle, task) = old.create(&alice(), redeliverable(2)).unwrap();
    assert!(old.hand_over(&alice(), &task.id().to_string()).unwrap());
    let (claim, _) = claim_within(&new, WAKE);
    assert_eq!(claim.attempts.attempt(), 2);
    let claimed = TaskHandle::claimed(new.clone(), claim);
    // Longer than the lease: the new holder renews it.
    thread::sleep(ms(2_500));
    let done = claimed.complete(tool_result("done")).unwrap();
    assert_eq!(done.result(), Some(&tool_result("done")));
    assert!(matches!(
        handle.complete(tool_result("late")),
        Err(Error::Superseded { .. } | Error::IllegalTransition { .. })
    ));
    eventually("the old instance hears the result", || {
        old.get(&alice(), &task.id().to_string())
            .is_ok_and(|task| task.status() == TaskStatus::Completed)
    });
}
