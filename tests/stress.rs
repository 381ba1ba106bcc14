//! Concurrency stress (issue 6, item 2): many threads race to complete, fail and cancel the
//! same tasks, move them between `working` and `input_required`, read them and wait for
//! them, while a clock thread moves a [`ManualClock`] forward and sweeps expired tasks.
//!
//! Checked at the end of every run:
//! - exactly one terminal state per task: at most one finishing call succeeds on a task,
//!   and every task that did not expire first has exactly one (a closing pass cancels what
//!   is still running, so that every task ends);
//! - what is stored is what the winner left; a cancelled task never has a stored result;
//!   every refusal is one of the expected `-32602` errors, and an `IllegalTransition` is
//!   always from a terminal status;
//! - every waiter returns (with the winner's terminal task, or `TaskNotFound` for a task
//!   that expired), none times out, and every thread ends within a deadline: a deadlock or
//!   a lost wakeup fails the test instead of hanging it;
//! - the counts add up: completed + failed + cancelled + expired == created, the registry
//!   agrees task by task and in `list`, and after every TTL has passed a sweep leaves it
//!   empty;
//! - status notifications: per task, in order, at most one terminal status, last, and it is
//!   the winner's.
//!
//! The default runs take a few seconds; `cargo test --release --test stress -- --ignored`
//! runs the soak (`STRESS_SOAK_SECS`, 60 by default).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::TaskStore;
use mcp_tasks::{
    AnyTask, Clock, Error, JsonObject, Limits, ManualClock, Outcome, Owner, StatusChange,
    TaskHandle, TaskRegistry, TaskRequest, TaskStatus, Timestamp, TtlPolicy, Working,
};
use serde_json::json;

/// The timeout of every wait that an event must end: never reached when the registry
/// works (the whole run takes a few seconds).
const WAIT_BOUND: Duration = Duration::from_secs(60);
/// How long a run may take before it counts as a deadlock.
const DEADLINE: Duration = Duration::from_secs(120);
/// How soon every waiter must return once every task has ended.
const WAKE: Duration = Duration::from_secs(10);

fn t0() -> Timestamp {
    Timestamp::parse("2025-11-25T10:30:00Z").unwrap()
}

/// A small deterministic generator (SplitMix64): every run of a seed makes the same choices.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn tool_result(text: &str, is_error: bool) -> JsonObject {
    let value = if is_error {
        json!({"content": [{"type": "text", "text": text}], "isError": true})
    } else {
        json!({"content": [{"type": "text", "text": text}]})
    };
    match value {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

#[derive(Debug, Clone)]
struct Config {
    seed: u64,
    /// One thread group per owner; the owners' names spread them over distinct shards.
    owners: Vec<Owner>,
    tasks_per_owner: usize,
    /// Threads racing on the tasks of each owner.
    workers_per_owner: usize,
    /// Threads blocked in `wait`, per owner.
    waiters_per_owner: usize,
    /// Manual milliseconds the clock thread adds per tick.
    tick: u64,
}

/// One created task and what the run learned about it.
struct Tracked {
    id: String,
    owner: Owner,
    expires_at: Option<Timestamp>,
    /// The typed handle, for whichever worker takes it first.
    handle: Mutex<Option<TaskHandle<Working, TaskRegistry>>>,
    /// Every finishing call that succeeded: the task it left.
    winners: Mutex<Vec<AnyTask>>,
    /// The terminal tasks waiters got.
    waited: Mutex<Vec<AnyTask>>,
}

/// Per task id, the statuses notified, in order, and whether each carried an outcome.
type Notified = HashMap<String, Vec<(TaskStatus, bool)>>;

#[derive(Default)]
struct Counters {
    refused_cancelled: AtomicUsize,
    refused_terminal: AtomicUsize,
    not_found: AtomicUsize,
    moves: AtomicUsize,
    waits_ok: AtomicUsize,
    waits_gone: AtomicUsize,
    purged: AtomicUsize,
    ticks: AtomicU64,
}

/// Checks a refused finishing call: why may it be refused?
fn check_refusal(err: &Error, what: &str) -> Result<(), String> {
    match err {
        Error::TaskCancelled { .. } | Error::TaskNotFound { .. } => Ok(()),
        Error::AlreadyTerminal { task } if task.is_terminal() => Ok(()),
        Error::IllegalTransition { from, .. } if from.is_terminal() => Ok(()),
        other => Err(format!("{what}: unexpected refusal {other:?}")),
    }
    .and_then(|()| {
        if err.code() == -32602 {
            Ok(())
        } else {
            Err(format!("{what}: {err:?} is not -32602"))
        }
    })
}

/// Checks what a terminal task carries.
fn check_terminal(task: &AnyTask, what: &str) -> Result<(), String> {
    match (task.status(), task.outcome()) {
        (TaskStatus::Cancelled, None) => Ok(()),
        (TaskStatus::Cancelled, Some(outcome)) => Err(format!(
            "{what}: a cancelled task has a stored result {outcome:?}"
        )),
        (TaskStatus::Completed, Some(Outcome::Result(_))) | (TaskStatus::Failed, Some(_)) => Ok(()),
        (status, outcome) => Err(format!("{what}: {status} with outcome {outcome:?}")),
    }
}

struct Run {
    registry: TaskRegistry,
    clock: ManualClock,
    tasks: Vec<Arc<Tracked>>,
    counters: Counters,
    errors: Mutex<Vec<String>>,
}

impl Run {
    fn error(&self, message: String) {
        let mut errors = self.errors.lock().unwrap();
        if errors.len() < 20 {
            errors.push(message);
        }
    }

    fn record_win(&self, task: &Tracked, result: Result<AnyTask, Error>, what: &str) {
        match result {
            Ok(left) => {
                if let Err(e) = check_terminal(&left, what) {
                    self.error(e);
                }
                task.winners.lock().unwrap().push(left);
            }
            Err(err) => {
                match &err {
                    Error::TaskCancelled { .. } => &self.counters.refused_cancelled,
                    Error::TaskNotFound { .. } => &self.counters.not_found,
                    _ => &self.counters.refused_terminal,
                }
                .fetch_add(1, Ordering::Relaxed);
                if let Err(e) = check_refusal(&err, what) {
                    self.error(e);
                }
            }
        }
    }

    /// One worker's turn on one task.
    fn act(&self, task: &Tracked, choice: u64) {
        let (owner, id) = (&task.owner, task.id.as_str());
        let text = format!("by {choice:x}");
        match choice % 12 {
            0 | 1 => {
                let outcome = Outcome::Result(tool_result(&text, false));
                let result = self
                    .registry
                    .store_result(owner, id, TaskStatus::Completed, outcome);
                self.record_win(task, result, "store_result(completed)");
            }
            2 => {
                let outcome = Outcome::error(-32_000, text);
                let result = self
                    .registry
                    .store_result(owner, id, TaskStatus::Failed, outcome);
                self.record_win(task, result, "store_result(failed, error)");
            }
            3 => {
                let outcome = Outcome::Result(tool_result(&text, true));
                let result = self
                    .registry
                    .store_result(owner, id, TaskStatus::Failed, outcome);
                self.record_win(task, result, "store_result(failed, isError)");
            }
            4 => {
                let result = self
                    .registry
                    .cancel(owner, id, Some(text))
                    .map(|t| t.into_any());
                self.record_win(task, result, "cancel");
            }
            5 => {
                let result =
                    self.registry
                        .update_status(owner, id, TaskStatus::Cancelled, Some(text));
                self.record_win(task, result, "update_status(cancelled)");
            }
            6 | 7 => {
                let Some(handle) = task.handle.lock().unwrap().take() else {
                    return self.act(task, choice / 12 * 12 + choice % 6);
                };
                let result = match choice / 12 % 4 {
                    0 => handle
                        .complete(tool_result(&text, false))
                        .map(|t| t.into_any()),
                    1 => handle
                        .fail(Outcome::error(-32_001, text))
                        .map(|t| t.into_any()),
                    2 => handle
                        .finish(tool_result(&text, choice.is_multiple_of(2)))
                        .map(|finished| match finished {
                            mcp_tasks::Finished::Completed(t) => t.into_any(),
                            mcp_tasks::Finished::Failed(t) => t.into_any(),
                        }),
                    _ => handle.cancel().map(|t| t.into_any()),
                };
                self.record_win(task, result, "handle");
            }
            8 | 9 => {
                let status = if choice.is_multiple_of(2) {
                    TaskStatus::InputRequired
                } else {
                    TaskStatus::Working
                };
                match self.registry.update_status(owner, id, status, Some(text)) {
                    Ok(left) => {
                        self.counters.moves.fetch_add(1, Ordering::Relaxed);
                        if left.status() != status {
                            self.error(format!("update_status({status}) left {left:?}"));
                        }
                    }
                    Err(err) => {
                        if let Err(e) = check_refusal(&err, "update_status") {
                            self.error(e);
                        }
                    }
                }
            }
            10 => match self.registry.get(owner, id) {
                Ok(seen) if seen.is_terminal() => {
                    if let Err(e) = check_terminal(&seen, "get") {
                        self.error(e);
                    }
                }
                Ok(seen) if seen.outcome().is_some() => {
                    self.error(format!("a running task has an outcome: {seen:?}"));
                }
                Ok(_) | Err(Error::TaskNotFound { .. }) => {}
                Err(other) => self.error(format!("get: {other:?}")),
            },
            _ => match self
                .registry
                .wait(owner, id, Some(Duration::from_micros(200)))
            {
                Ok(seen) => {
                    if let Err(e) = check_terminal(&seen, "short wait") {
                        self.error(e);
                    }
                }
                Err(Error::Timeout { .. } | Error::TaskNotFound { .. }) => {}
                Err(other) => self.error(format!("short wait: {other:?}")),
            },
        }
    }

    /// A waiter: blocks on each of `tasks` in turn until it ends.
    fn wait_all(&self, tasks: &[Arc<Tracked>]) {
        for task in tasks {
            match self.registry.wait(&task.owner, &task.id, Some(WAIT_BOUND)) {
                Ok(seen) => {
                    self.counters.waits_ok.fetch_add(1, Ordering::Relaxed);
                    if !seen.is_terminal() {
                        self.error(format!("a wait returned a running task {seen:?}"));
                    }
                    if let Err(e) = check_terminal(&seen, "wait") {
                        self.error(e);
                    }
                    task.waited.lock().unwrap().push(seen);
                }
                Err(Error::TaskNotFound { .. }) => {
                    self.counters.waits_gone.fetch_add(1, Ordering::Relaxed);
                }
                Err(other) => self.error(format!("wait on {}: {other:?}", task.id)),
            }
        }
    }
}

/// Joins `threads`, failing if they are not all done by `deadline`.
fn join_by(threads: Vec<JoinHandle<()>>, deadline: Instant, what: &str) {
    while !threads.iter().all(JoinHandle::is_finished) {
        assert!(
            Instant::now() < deadline,
            "{what}: threads still running at the deadline: deadlock or lost wakeup"
        );
        thread::sleep(Duration::from_millis(1));
    }
    for thread in threads {
        thread.join().expect("no thread panics");
    }
}

#[derive(Debug, Default, PartialEq)]
struct Totals {
    created: usize,
    completed: usize,
    failed: usize,
    cancelled: usize,
    expired: usize,
}

fn stress(config: &Config) -> Totals {
    let started = Instant::now();
    let deadline = started + DEADLINE;
    let clock = ManualClock::new(t0());
    let registry = TaskRegistry::builder()
        .clock(clock.clone())
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_min(0))
        .limits(Limits::none())
        .build()
        .unwrap();
    let notes: Arc<Mutex<Notified>> = Arc::default();
    let sink = Arc::clone(&notes);
    registry.subscribe(move |change: &StatusChange| {
        let entry = (change.task.status(), change.task.outcome().is_some());
        let mut notes = sink.lock().unwrap();
        notes
            .entry(change.task.id().to_string())
            .or_default()
            .push(entry);
    });

    // Tasks: by id or with a handle; TTLs from "expires during the run" to "outlives it".
    let mut tasks = Vec::new();
    for (o, owner) in config.owners.iter().enumerate() {
        for n in 0..config.tasks_per_owner {
            let r = mix(config.seed ^ ((o as u64) << 32 | n as u64));
            let ttl = match r % 4 {
                0 => Some(r % 400),
                1 => Some(r % 4_000),
                _ => None,
            };
            let request = TaskRequest::new(n as i64, "tools/call").with_ttl(ttl);
            let (handle, task) = if r.is_multiple_of(3) {
                let task = registry.insert(owner, request).unwrap();
                (None, task)
            } else {
                let (handle, task) = registry.create(owner, request).unwrap();
                (Some(handle), task)
            };
            tasks.push(Arc::new(Tracked {
                id: task.id().to_string(),
                owner: owner.clone(),
                expires_at: task.expires_at(),
                handle: Mutex::new(handle),
                winners: Mutex::default(),
                waited: Mutex::default(),
            }));
        }
    }
    let created = tasks.len();
    // Tasks with a TTL of 0 are gone already (each insert sweeps its shard).
    assert!(registry.len() <= created);

    let run = Arc::new(Run {
        registry: registry.clone(),
        clock: clock.clone(),
        tasks,
        counters: Counters::default(),
        errors: Mutex::default(),
    });

    // Waiters first, so that they block before the work starts.
    let mut waiters = Vec::new();
    for (o, owner) in config.owners.iter().enumerate() {
        let mine: Vec<Arc<Tracked>> = run
            .tasks
            .iter()
            .filter(|t| t.owner == *owner)
            .cloned()
            .collect();
        for w in 0..config.waiters_per_owner {
            // Each waiter walks its owner's tasks from a different place.
            let mut order = mine.clone();
            let len = order.len();
            order.rotate_left((w * len / config.waiters_per_owner.max(1) + o) % len.max(1));
            let run = Arc::clone(&run);
            waiters.push(thread::spawn(move || run.wait_all(&order)));
        }
    }

    // The clock: moves on and sweeps, until the workers are done.
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (run, stop, tick) = (Arc::clone(&run), Arc::clone(&stop), config.tick);
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                run.clock.advance(Duration::from_millis(tick));
                run.counters.ticks.fetch_add(1, Ordering::Relaxed);
                let purged = run.registry.purge_expired();
                run.counters.purged.fetch_add(purged, Ordering::Relaxed);
                thread::sleep(Duration::from_micros(300));
            }
        })
    };

    // Workers: every worker of an owner walks that owner's tasks in the same order, so they
    // meet on the same task at the same time; each makes its own choice there.
    let total_workers = config.owners.len() * config.workers_per_owner;
    let barrier = Arc::new(Barrier::new(total_workers));
    let mut workers = Vec::new();
    for (o, owner) in config.owners.iter().enumerate() {
        let mine: Vec<Arc<Tracked>> = run
            .tasks
            .iter()
            .filter(|t| t.owner == *owner)
            .cloned()
            .collect();
        for w in 0..config.workers_per_owner {
            let (run, barrier, mine) = (Arc::clone(&run), Arc::clone(&barrier), mine.clone());
            let seed = mix(config.seed ^ ((o as u64) << 40) ^ ((w as u64) << 20));
            workers.push(thread::spawn(move || {
                barrier.wait();
                for (n, task) in mine.iter().enumerate() {
                    run.act(task, mix(seed ^ n as u64));
                }
            }));
        }
    }
    join_by(workers, deadline, "workers");
    stop.store(true, Ordering::SeqCst);
    join_by(vec![ticker], deadline, "clock");

    // Close: handles nobody took are detached (a dropped one would fail its task unseen),
    // then every task still running is cancelled, so that every task ends.
    for task in &run.tasks {
        if let Some(handle) = task.handle.lock().unwrap().take() {
            handle.detach();
        }
    }
    for task in &run.tasks {
        let result = registry
            .cancel(&task.owner, &task.id, Some("closing".into()))
            .map(|t| t.into_any());
        run.record_win(task, result, "closing cancel");
    }
    // Every task has ended now: a waiter still asleep missed a wakeup (its own timeout
    // and the task's expiry would end it much later).
    join_by(waiters, Instant::now() + WAKE, "waiters");

    // Every task: one winner and the registry agrees, or expired without one.
    let now = clock.now();
    let mut totals = Totals {
        created,
        ..Totals::default()
    };
    let mut visible: HashMap<Owner, Vec<String>> = HashMap::new();
    let notes = notes.lock().unwrap();
    for task in &run.tasks {
        let winners = task.winners.lock().unwrap();
        let stored = registry.get(&task.owner, &task.id);
        let expired = task.expires_at.is_some_and(|end| now >= end);
        match (winners.as_slice(), stored) {
            ([winner], Ok(stored)) => {
                assert!(!expired, "an expired task is still visible: {stored:?}");
                assert_eq!(&stored, winner, "what is stored is what the winner left");
                visible
                    .entry(task.owner.clone())
                    .or_default()
                    .push(task.id.clone());
            }
            ([_], Err(Error::TaskNotFound { .. })) => {
                assert!(expired, "task {} vanished before its expiry", task.id);
            }
            ([], Err(Error::TaskNotFound { .. })) => {
                assert!(expired, "task {} has no winner yet did not expire", task.id);
            }
            (winners, stored) => panic!(
                "task {}: {} terminal states won ({winners:?}); stored {stored:?}",
                task.id,
                winners.len()
            ),
        }
        match winners.first().map(AnyTask::status) {
            Some(TaskStatus::Completed) => totals.completed += 1,
            Some(TaskStatus::Failed) => totals.failed += 1,
            Some(TaskStatus::Cancelled) => totals.cancelled += 1,
            Some(other) => panic!("a winner left {other}"),
            None => totals.expired += 1,
        }
        for seen in task.waited.lock().unwrap().iter() {
            assert_eq!(
                Some(seen),
                winners.first(),
                "a waiter got what the winner left"
            );
        }
        // Notifications: in order, one terminal status, last, and the winner's.
        let notified = notes.get(&task.id).map(Vec::as_slice).unwrap_or_default();
        let terminal: Vec<usize> = (0..notified.len())
            .filter(|&i| notified[i].0.is_terminal())
            .collect();
        match winners.first() {
            Some(winner) => {
                assert_eq!(
                    terminal,
                    vec![notified.len() - 1],
                    "task {}: notified {notified:?}",
                    task.id
                );
                assert_eq!(notified[notified.len() - 1].0, winner.status());
            }
            None => assert!(terminal.is_empty(), "{notified:?}"),
        }
        for &(status, has_outcome) in notified {
            assert!(
                !(status == TaskStatus::Cancelled && has_outcome),
                "a cancelled task was notified with a result"
            );
        }
    }
    drop(notes);
    let errors = run.errors.lock().unwrap();
    assert!(
        errors.is_empty(),
        "{} problems, first: {errors:#?}",
        errors.len()
    );
    assert_eq!(
        totals.completed + totals.failed + totals.cancelled + totals.expired,
        totals.created,
        "{totals:?}"
    );

    // The lists agree with the lookups.
    for owner in &config.owners {
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = registry.list(owner, cursor.as_deref(), 97).unwrap();
            listed.extend(page.tasks.iter().map(|t| t.id().to_string()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let expected = visible.remove(owner).unwrap_or_default();
        assert_eq!(listed, expected, "{owner:?}: list vs get");
    }

    // After every TTL, one sweep leaves nothing.
    clock.advance(Duration::from_millis(5_000_000));
    let swept = registry.purge_expired();
    let live_unlimited = run.tasks.iter().filter(|t| t.expires_at.is_none()).count();
    assert_eq!(registry.len(), live_unlimited, "swept {swept}");
    let counters = &run.counters;
    eprintln!(
        "{totals:?} in {:?}: refused as cancelled {}, as terminal {}, not found {}, moves {}, \
         waits {} ok / {} gone, {} ticks",
        started.elapsed(),
        counters.refused_cancelled.load(Ordering::Relaxed),
        counters.refused_terminal.load(Ordering::Relaxed),
        counters.not_found.load(Ordering::Relaxed),
        counters.moves.load(Ordering::Relaxed),
        counters.waits_ok.load(Ordering::Relaxed),
        counters.waits_gone.load(Ordering::Relaxed),
        counters.ticks.load(Ordering::Relaxed),
    );
    totals
}

fn owners(n: usize) -> Vec<Owner> {
    (0..n).map(|i| Owner::new(format!("owner-{i}"))).collect()
}

/// Eight owners (in eight shards), two workers and one waiter each; four seeds.
#[test]
fn many_owners_race_finish_cancel_expiry_and_waits() {
    for seed in 1..=4 {
        let totals = stress(&Config {
            seed,
            owners: owners(8),
            tasks_per_owner: 500,
            workers_per_owner: 2,
            waiters_per_owner: 1,
            tick: 40,
        });
        assert!(totals.completed > 0 && totals.failed > 0 && totals.cancelled > 0);
        assert!(totals.expired > 0, "{totals:?}");
    }
}

/// One owner, so one contended shard: eight workers and four waiters on its tasks; four
/// seeds.
#[test]
fn one_owner_many_threads_on_one_shard() {
    for seed in 11..=14 {
        let totals = stress(&Config {
            seed,
            owners: owners(1),
            tasks_per_owner: 3_000,
            workers_per_owner: 8,
            waiters_per_owner: 4,
            tick: 40,
        });
        assert!(totals.completed > 0 && totals.failed > 0 && totals.cancelled > 0);
        assert!(totals.expired > 0, "{totals:?}");
    }
}

/// The soak: both shapes, new seeds, for `STRESS_SOAK_SECS` seconds (60 by default).
#[test]
#[ignore = "soak: minutes; run with --release -- --ignored"]
fn soak() {
    let seconds: u64 = std::env::var("STRESS_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut seed = 100;
    let mut grand = Totals::default();
    while Instant::now() < end {
        seed += 1;
        let config = if seed % 2 == 0 {
            Config {
                seed,
                owners: owners(12),
                tasks_per_owner: 400,
                workers_per_owner: 3,
                waiters_per_owner: 2,
                tick: 10 + seed % 60,
            }
        } else {
            Config {
                seed,
                owners: owners(1),
                tasks_per_owner: 4_000,
                workers_per_owner: 16,
                waiters_per_owner: 8,
                tick: 10 + seed % 60,
            }
        };
        let totals = stress(&config);
        grand.created += totals.created;
        grand.completed += totals.completed;
        grand.failed += totals.failed;
        grand.cancelled += totals.cancelled;
        grand.expired += totals.expired;
    }
    eprintln!("soak: {} runs, {grand:?}", seed - 100);
}
