//! Tests of what only the in-process [`TaskRegistry`] has: its injected clock (expiry and
//! timestamps driven by a [`ManualClock`], `purge_expired`), the total limit, `len`, its
//! shards, and its lock policy (no clock, handler or subscriber code under its lock).
//!
//! The behaviour every store shares (ownership, ids, transitions, results, handles, waits,
//! pagination, cursors, subscribers) is in `store_suite.rs`, which runs it against this
//! registry and the Redis store alike.
//!
//! Every blocking call is bounded (a wait timeout, or a join with a deadline) so that a bug
//! fails a test instead of hanging the suite.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::{
    AnyTask, Clock, Error, InputRequest, InputRequests, LimitScope, Limits, ManualClock, Owner,
    StatusChange, TaskHandle, TaskRegistry, TaskStatus, Timestamp, TtlPolicy, Working,
};
use serde_json::json;

#[path = "support/common.rs"]
mod common;
use common::{
    BOUND, WAKE, blocked_waiters, ids, join_within, list_all, ms, obj, req, spawn_wait,
    tool_outcome, tool_result,
};

fn t0() -> Timestamp {
    Timestamp::parse("2025-11-25T10:30:00Z").unwrap()
}

/// A registry on a manual clock at [`t0`]: default TTL 60 s, at most 1 h, no limits.
fn manual() -> (TaskRegistry, ManualClock) {
    manual_with(
        TtlPolicy::new(Some(60_000)).with_max(3_600_000),
        Limits::none(),
    )
}

fn manual_with(ttl: TtlPolicy, limits: Limits) -> (TaskRegistry, ManualClock) {
    let clock = ManualClock::new(t0());
    let registry = TaskRegistry::builder()
        .clock(clock.clone())
        .ttl_policy(ttl)
        .limits(limits)
        .build()
        .unwrap();
    (registry, clock)
}

/// Creates a task for `owner` and returns its handle and id.
fn start(registry: &TaskRegistry, owner: &Owner) -> (TaskHandle<Working, TaskRegistry>, String) {
    let (handle, task) = registry.create(owner, req(1)).unwrap();
    assert_eq!(task.status(), TaskStatus::Working);
    let id = task.id().to_string();
    (handle, id)
}

/// Creates a task for `owner` that nobody drives through a handle; returns its id.
fn start_detached(registry: &TaskRegistry, owner: &Owner) -> String {
    let (handle, id) = start(registry, owner);
    assert_eq!(handle.detach().to_string(), id);
    id
}

fn not_found(id: &str) -> Error {
    Error::TaskNotFound {
        task_id: id.to_owned(),
    }
}

/// `registry.wait` on another thread, failing the test if it blocks longer than [`WAKE`].
fn wait_bounded(
    registry: &TaskRegistry,
    owner: &Owner,
    id: &str,
    timeout: Option<Duration>,
) -> Result<AnyTask, Error> {
    let (registry, owner, id) = (registry.clone(), owner.clone(), id.to_owned());
    join_within(
        thread::spawn(move || registry.wait(&owner, &id, timeout)),
        WAKE,
        "wait",
    )
}

// ---------------------------------------------------------------------------------------
// TTL and expiry on the registry's clock
// ---------------------------------------------------------------------------------------

#[test]
fn expiry_runs_from_creation_not_from_the_last_update() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let (handle, task) = registry
        .create(&owner, req(1).with_ttl(Some(1_000)))
        .unwrap();
    let id = task.id().to_string();
    clock.advance(ms(600));
    let handle = handle.require_input(InputRequests::new()).unwrap();
    assert_eq!(
        registry.get(&owner, &id).unwrap().last_updated_at(),
        t0().plus_millis(600)
    );
    clock.advance(ms(399));
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::InputRequired,
        "1 ms before expiry the task is alive"
    );
    clock.advance(ms(1));
    assert_eq!(registry.get(&owner, &id), Err(not_found(&id)));
    // The handle cannot write to an expired task, and nothing comes back.
    assert_eq!(handle.resume().unwrap_err(), not_found(&id));
    assert_eq!(registry.get(&owner, &id), Err(not_found(&id)));
    assert_eq!(registry.len(), 0);
}

#[test]
fn expired_tasks_behave_as_unknown_ids_everywhere() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let short: Vec<String> = (0..4)
        .map(|n| {
            let (handle, task) = registry
                .create(&owner, req(n).with_ttl(Some(1_000)))
                .unwrap();
            let _ = handle.detach();
            task.id().to_string()
        })
        .collect();
    let (long_handle, long) = registry
        .create(&owner, req(9).with_ttl(Some(5_000)))
        .unwrap();
    let long = long.id().to_string();
    // Short tasks that nobody looks up before listing.
    for n in 0..3 {
        let (handle, _) = registry
            .create(&owner, req(n).with_ttl(Some(1_000)))
            .unwrap();
        let _ = handle.detach();
    }
    // One of the short ones finished before it expired: that does not keep it.
    registry
        .store_result(&owner, &short[3], TaskStatus::Completed, tool_outcome("r"))
        .unwrap();

    clock.advance(ms(1_000));
    assert_eq!(registry.get(&owner, &short[0]), Err(not_found(&short[0])));
    assert_eq!(
        registry.cancel(&owner, &short[1], None).unwrap_err(),
        not_found(&short[1])
    );
    assert_eq!(
        registry.result(&owner, &short[3]),
        Err(not_found(&short[3]))
    );
    assert_eq!(
        wait_bounded(&registry, &owner, &short[2], Some(BOUND)),
        Err(not_found(&short[2]))
    );
    assert_eq!(list_all(&registry, &owner, 10), vec![long.clone()]);
    assert_eq!(registry.len(), 1, "expired tasks are gone from memory");
    assert!(registry.get(&owner, &long).is_ok());
    let _ = long_handle
        .complete(tool_result("late but in time"))
        .unwrap();
}

#[test]
fn purge_expired_counts_and_releases_what_expired_and_nothing_else() {
    let (registry, clock) = manual();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    for n in 0..5 {
        let owner = if n % 2 == 0 { &alice } else { &bob };
        let (h, _) = registry
            .create(owner, req(n).with_ttl(Some(1_000)))
            .unwrap();
        let _ = h.detach();
    }
    for n in 0..3 {
        let (h, _) = registry
            .create(&alice, req(n).with_ttl(Some(10_000)))
            .unwrap();
        let _ = h.detach();
    }
    assert_eq!(registry.purge_expired(), 0, "nothing expired yet");
    assert_eq!(registry.len(), 8);
    clock.advance(ms(999));
    assert_eq!(registry.purge_expired(), 0);
    assert_eq!(registry.len(), 8);
    clock.advance(ms(1));
    assert_eq!(registry.len(), 8, "expired tasks count until purged");
    assert_eq!(registry.purge_expired(), 5);
    assert_eq!(registry.len(), 3);
    assert_eq!(registry.purge_expired(), 0, "a second sweep finds nothing");
    assert_eq!(registry.len(), 3);
    assert!(list_all(&registry, &bob, 10).is_empty());
    assert_eq!(list_all(&registry, &alice, 10).len(), 3);
    clock.advance(ms(9_000));
    assert_eq!(registry.purge_expired(), 3);
    assert!(registry.is_empty());
}

#[test]
fn every_waiter_wakes_on_expiry_swept_by_purge() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let (handle, task) = registry
        .create(&owner, req(1).with_ttl(Some(60_000)))
        .unwrap();
    let id = task.id().to_string();
    let blocked = blocked_waiters(&registry, &owner, &id, 8);
    clock.advance(ms(60_000));
    assert_eq!(registry.purge_expired(), 1);
    for waiter in blocked {
        assert_eq!(join_within(waiter, WAKE, "a waiter"), Err(not_found(&id)));
    }
    assert_eq!(
        handle.complete(tool_result("late")).unwrap_err(),
        not_found(&id)
    );
}

#[test]
fn every_waiter_wakes_on_expiry_noticed_by_a_lookup() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    let blocked = blocked_waiters(&registry, &owner, &id, 4);
    clock.advance(ms(60_000));
    assert_eq!(registry.get(&owner, &id), Err(not_found(&id)));
    for waiter in blocked {
        assert_eq!(join_within(waiter, WAKE, "a waiter"), Err(not_found(&id)));
    }
}

#[test]
fn pages_skip_and_repeat_nothing_while_tasks_are_removed_and_expire() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let other = Owner::new("bob");
    // Interleave two owners and several TTLs, in creation order.
    let mut created = Vec::new();
    for n in 0..40u64 {
        let ttl = match n % 4 {
            0 => 1_000,
            1 => 2_000,
            _ => 3_600_000,
        };
        let (h, task) = registry.create(&owner, req(1).with_ttl(Some(ttl))).unwrap();
        let _ = h.detach();
        created.push(task.id().to_string());
        let (h, _) = registry.create(&other, req(1)).unwrap();
        let _ = h.detach();
    }

    let mut seen: Vec<String> = Vec::new();
    let mut removed: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut page_no = 0;
    loop {
        let page = registry.list(&owner, cursor.as_deref(), 4).unwrap();
        for task in &page.tasks {
            // Listed means retrievable, and never expired.
            assert!(!task.is_expired(clock.now()), "an expired task was listed");
            let id = task.id().to_string();
            assert_eq!(&registry.get(&owner, &id).unwrap(), task);
        }
        let page_ids = ids(&page.tasks);
        // Pages come in creation order and never hold removed tasks.
        for id in &page_ids {
            assert!(!removed.contains(id), "a removed task was listed");
        }
        seen.extend(page_ids.iter().cloned());
        page_no += 1;
        match page_no {
            // Remove the task the cursor points at (the last of the page).
            1 => {
                let last = page_ids.last().unwrap();
                registry.remove(&owner, last).unwrap();
                removed.insert(last.clone());
            }
            // Remove some tasks not yet seen, and one already seen.
            2 => {
                for id in [&created[9], &created[10], &created[14], &created[0]] {
                    if registry.remove(&owner, id).is_ok() {
                        removed.insert(id.clone());
                    }
                }
            }
            // Expire the 1 s tasks, the page's last one among them if it has that TTL.
            3 => clock.advance(ms(1_000)),
            // Expire the 2 s tasks too; and a new task arrives.
            5 => {
                clock.advance(ms(1_000));
                let (h, task) = registry.create(&owner, req(2)).unwrap();
                let _ = h.detach();
                created.push(task.id().to_string());
            }
            _ => {}
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }

    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no task repeated");
    // Every task still alive at the end was seen, in creation order.
    let alive = list_all(&registry, &owner, 1000);
    for id in &alive {
        assert!(seen.contains(id), "task {id} was skipped");
    }
    let order: Vec<usize> = seen
        .iter()
        .map(|id| created.iter().position(|c| c == id).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "creation order");
    // And the walk really crossed removals and expiries.
    assert!(alive.len() < created.len() - removed.len());
    assert!(
        alive.contains(created.last().unwrap()),
        "the new task is listed"
    );
}

#[test]
fn unlimited_retention_only_when_the_policy_allows_it() {
    let owner = Owner::new("alice");
    let (open, clock) = manual_with(
        TtlPolicy::new(None).with_unlimited_allowed(true),
        Limits::none(),
    );
    let (_, task) = open.create(&owner, req(1)).unwrap();
    assert_eq!(task.ttl(), None);
    let (_, short) = open.create(&owner, req(2).with_ttl(Some(7_000))).unwrap();
    assert_eq!(short.ttl(), Some(7_000));
    // Unlimited tasks survive any amount of time; the short one does not.
    clock.advance(Duration::from_secs(10 * 365 * 24 * 3600));
    assert!(open.get(&owner, &task.id().to_string()).is_ok());
    assert!(open.get(&owner, &short.id().to_string()).is_err());

    // Without permission, no default falls back to the maximum.
    let (capped, _) = manual_with(TtlPolicy::new(None).with_max(500), Limits::none());
    let (_, task) = capped.create(&owner, req(1)).unwrap();
    assert_eq!(task.ttl(), Some(500));

    // Policies that cannot work are refused at construction.
    for bad in [TtlPolicy::new(None), TtlPolicy::new(Some(10)).with_max(5)] {
        let err = TaskRegistry::builder().ttl_policy(bad).build().unwrap_err();
        assert!(matches!(err, Error::InvalidConfig(_)), "{err:?}");
        assert_eq!(err.code(), -32603);
    }
    // The default registry never keeps a task forever.
    let default = TaskRegistry::new();
    let (_, task) = default.create(&owner, req(1)).unwrap();
    assert_eq!(task.ttl(), TtlPolicy::default().default_ttl());
    assert!(task.ttl().is_some());
}

#[test]
fn requested_ttls_below_the_minimum_are_raised_so_a_new_task_can_be_read() {
    let (registry, clock) = manual_with(TtlPolicy::new(Some(60_000)), Limits::none());
    let owner = Owner::new("alice");
    let (_, task) = registry.create(&owner, req(1).with_ttl(Some(0))).unwrap();
    assert_eq!(task.ttl(), Some(1_000));
    let id = task.id().to_string();
    assert!(registry.get(&owner, &id).is_ok());
    clock.advance(ms(1_000));
    assert_eq!(registry.get(&owner, &id), Err(not_found(&id)));
    // A maximum below the minimum wins.
    let (tight, _) = manual_with(TtlPolicy::new(Some(100)).with_max(200), Limits::none());
    let (_, task) = tight.create(&owner, req(1).with_ttl(Some(0))).unwrap();
    assert_eq!(task.ttl(), Some(200));
}

// ---------------------------------------------------------------------------------------
// Timestamps from the registry's clock
// ---------------------------------------------------------------------------------------

#[test]
fn handle_transitions_write_through_with_the_registry_clock() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let (handle, created) = registry
        .create(&owner, req(7).with_poll_interval(Some(250)))
        .unwrap();
    let id = created.id().to_string();
    assert_eq!(created.created_at(), t0());
    assert_eq!(created.last_updated_at(), t0());
    assert_eq!(created.poll_interval(), Some(250));
    assert_eq!(handle.owner(), &owner);
    assert_eq!(handle.current_status().unwrap(), TaskStatus::Working);

    clock.advance(ms(1_000));
    handle.set_status_message(Some("reading".into())).unwrap();
    let now = registry.get(&owner, &id).unwrap();
    assert_eq!(now.status(), TaskStatus::Working);
    assert_eq!(now.status_message(), Some("reading"));
    assert_eq!(now.last_updated_at(), t0().plus_millis(1_000));

    clock.advance(ms(1_000));
    let question = InputRequests::new().with(
        "confirm",
        InputRequest::elicitation(obj(json!({"message": "Proceed?"}))),
    );
    let handle = handle
        .with_message("waiting for confirmation")
        .require_input(question.clone())
        .unwrap();
    let now = registry.get(&owner, &id).unwrap();
    assert_eq!(now.status(), TaskStatus::InputRequired);
    assert_eq!(now.status_message(), Some("waiting for confirmation"));
    assert_eq!(now.input_requests(), Some(&question));
    assert_eq!(now.last_updated_at(), t0().plus_millis(2_000));
    assert_eq!(handle.snapshot().unwrap(), now);

    clock.advance(ms(1_000));
    let handle = handle.resume().unwrap();
    let now = registry.get(&owner, &id).unwrap();
    assert_eq!(now.status(), TaskStatus::Working);
    assert_eq!(now.last_updated_at(), t0().plus_millis(3_000));

    clock.advance(ms(1_000));
    let done = handle.complete(tool_result("42")).unwrap();
    assert_eq!(done.result(), Some(&tool_result("42")));
    assert_eq!(done.last_updated_at(), t0().plus_millis(4_000));
    let stored = registry.get(&owner, &id).unwrap();
    assert_eq!(stored, done.clone().into_any());
    assert_eq!(stored.created_at(), t0(), "creation time never moves");
}

/// Changes by id are stamped with the registry's clock; a refused one leaves the time.
#[test]
fn by_id_changes_are_stamped_with_the_registry_clock() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    clock.advance(ms(1_000));
    let moved = registry
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    assert_eq!(moved.last_updated_at(), clock.now(), "update_status");
    assert_eq!(registry.get(&owner, &id).unwrap(), moved);
    clock.advance(ms(1_000));
    let cancelled = registry
        .cancel(&owner, &id, Some("stop".into()))
        .unwrap()
        .into_any();
    assert_eq!(cancelled.last_updated_at(), clock.now(), "cancel");
    assert_eq!(registry.get(&owner, &id).unwrap(), cancelled);
    clock.advance(ms(1_000));
    assert!(
        registry
            .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("late"))
            .is_err()
    );
    let now = registry.get(&owner, &id).unwrap();
    assert_eq!(now, cancelled, "a refusal keeps the time");
    assert_eq!(now.created_at(), t0(), "creation time never moves");
}

// ---------------------------------------------------------------------------------------
// The total limit, len
// ---------------------------------------------------------------------------------------

#[test]
fn limits_per_owner_and_total_are_typed_errors_and_create_nothing() {
    let (registry, clock) = manual_with(
        TtlPolicy::new(Some(60_000)),
        Limits {
            per_owner: Some(2),
            total: Some(3),
        },
    );
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let carol = Owner::new("carol");
    let a1 = start_detached(&registry, &alice);
    let (a2_handle, a2) = start(&registry, &alice);

    let err = registry.create(&alice, req(3)).unwrap_err();
    assert_eq!(
        err,
        Error::LimitExceeded {
            limit: 2,
            scope: LimitScope::PerOwner
        }
    );
    assert_eq!(err.code(), -32603);
    let rpc = err.to_jsonrpc();
    assert_eq!(rpc.code, -32603);
    assert!(rpc.message.contains('2'), "{}", rpc.message);
    assert_eq!(registry.len(), 2, "nothing created");
    assert_eq!(
        list_all(&registry, &alice, 10),
        vec![a1.clone(), a2.clone()]
    );

    let b1 = start_detached(&registry, &bob);
    for owner in [&bob, &carol, &Owner::anonymous()] {
        let err = registry.create(owner, req(4)).unwrap_err();
        assert_eq!(
            err,
            Error::LimitExceeded {
                limit: 3,
                scope: LimitScope::Total
            }
        );
        assert_eq!(err.code(), -32603);
    }
    assert_eq!(registry.len(), 3);
    assert_eq!(list_all(&registry, &bob, 10), vec![b1.clone()]);

    // Finished and cancelled tasks still count: they are stored until removed or expired.
    let _ = a2_handle.complete(tool_result("ok")).unwrap();
    let _ = registry.cancel(&bob, &b1, None).unwrap();
    assert!(registry.create(&carol, req(5)).is_err());

    // Removal frees a place.
    registry.remove(&alice, &a2).unwrap();
    let c1 = start_detached(&registry, &carol);
    assert!(registry.create(&alice, req(6)).is_err());

    // Expiry frees places without an explicit purge.
    clock.advance(ms(60_000));
    assert_eq!(registry.len(), 3, "not purged yet");
    let fresh: Vec<String> = (0..2).map(|_| start_detached(&registry, &alice)).collect();
    assert_eq!(registry.len(), 2);
    assert_eq!(list_all(&registry, &alice, 10), fresh);
    assert_eq!(registry.get(&carol, &c1), Err(not_found(&c1)));
}

#[test]
fn expired_tasks_of_other_owners_free_the_total_limit() {
    let (registry, clock) = manual_with(
        TtlPolicy::new(Some(5_000)),
        Limits {
            per_owner: None,
            total: Some(4),
        },
    );
    // Owners spread over different shards fill the registry...
    for n in 0..4 {
        start_detached(&registry, &Owner::new(format!("owner-{n}")));
    }
    assert!(registry.create(&Owner::new("late"), req(9)).is_err());
    // ...and once their tasks expire, a newcomer gets a place without an explicit purge.
    clock.advance(ms(5_000));
    start_detached(&registry, &Owner::new("late"));
    // Expired tasks count in `len` until they are swept.
    registry.purge_expired();
    assert_eq!(registry.len(), 1);
}

// ---------------------------------------------------------------------------------------
// Lock policy: no user code under the lock, a panic poisons nothing
// ---------------------------------------------------------------------------------------

#[test]
fn a_panicking_handler_thread_fails_its_task_and_the_registry_stays_usable() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    registry.subscribe(move |change: &StatusChange| {
        sink.lock().unwrap().push(change.task.status());
    });
    let (handle, id) = start(&registry, &owner);
    let waiter = spawn_wait(&registry, &owner, &id);
    let worker = thread::spawn(move || {
        let _waiting = handle.require_input(InputRequests::new()).unwrap();
        panic!("handler bug (expected by the test)");
    });
    assert!(worker.join().is_err(), "the worker panicked");

    let failed = join_within(waiter, WAKE, "a waiter").unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    assert_eq!(failed.outcome().unwrap().as_error().unwrap().code, -32603);
    assert_eq!(registry.get(&owner, &id).unwrap(), failed);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![TaskStatus::InputRequired, TaskStatus::Failed]
    );

    // Everything still works.
    let (handle, id2) = start(&registry, &owner);
    assert_eq!(
        list_all(&registry, &owner, 10),
        vec![id.clone(), id2.clone()]
    );
    let _ = handle.complete(tool_result("fine")).unwrap();
    assert_eq!(
        wait_bounded(&registry, &owner, &id2, Some(BOUND))
            .unwrap()
            .status(),
        TaskStatus::Completed
    );
    let id3 = start_detached(&registry, &owner);
    let _ = registry.cancel(&owner, &id3, None).unwrap();
    registry.remove(&owner, &id).unwrap();
    assert_eq!(registry.len(), 2);
}

#[test]
fn a_subscriber_may_call_back_into_the_registry() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let slot: Arc<OnceLock<TaskRegistry>> = Arc::default();
    let seen: Arc<Mutex<Vec<(TaskStatus, TaskStatus)>>> = Arc::default();
    {
        let (slot, seen, owner) = (Arc::clone(&slot), Arc::clone(&seen), owner.clone());
        registry.subscribe(move |change: &StatusChange| {
            let registry = slot.get().unwrap();
            let id = change.task.id().to_string();
            // A read under a lock would deadlock here.
            let now = registry.get(&owner, &id).unwrap();
            seen.lock()
                .unwrap()
                .push((change.task.status(), now.status()));
            // A write from inside a notification is delivered after this one.
            if change.task.status_message() == Some("cancel me") {
                let _ = registry
                    .cancel(&owner, &id, Some("cancelled by a subscriber".into()))
                    .unwrap();
            }
            let _ = registry.list(&owner, None, 10).unwrap();
        });
    }
    assert!(slot.set(registry.clone()).is_ok());
    let worker = {
        let (registry, owner) = (registry.clone(), owner.clone());
        thread::spawn(move || {
            let (handle, id) = start(&registry, &owner);
            handle.set_status_message(Some("hello".into())).unwrap();
            handle.set_status_message(Some("cancel me".into())).unwrap();
            let late = handle.complete(tool_result("late"));
            (id, late)
        })
    };
    let (id, late) = join_within(worker, WAKE, "the worker");
    assert_eq!(
        late.unwrap_err(),
        Error::TaskCancelled {
            task_id: id.clone()
        }
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (TaskStatus::Working, TaskStatus::Working),
            // Delivered after the write: the subscriber sees the task as it is now.
            (TaskStatus::Working, TaskStatus::Working),
            (TaskStatus::Cancelled, TaskStatus::Cancelled),
        ]
    );
    assert_eq!(
        registry.get(&owner, &id).unwrap().status_message(),
        Some("cancelled by a subscriber")
    );
}

/// A clock that uses the registry it serves (for example to log its size): it would
/// deadlock if the registry read the clock while holding its lock.
struct ReentrantClock {
    time: ManualClock,
    registry: Arc<OnceLock<TaskRegistry>>,
}

impl Clock for ReentrantClock {
    fn now(&self) -> Timestamp {
        if let Some(registry) = self.registry.get() {
            let _ = registry.len();
        }
        self.time.now()
    }
}

#[test]
fn the_clock_is_never_read_under_the_lock() {
    let slot: Arc<OnceLock<TaskRegistry>> = Arc::default();
    let time = ManualClock::new(t0());
    let registry = TaskRegistry::builder()
        .clock(ReentrantClock {
            time: time.clone(),
            registry: Arc::clone(&slot),
        })
        .build()
        .unwrap();
    assert!(slot.set(registry.clone()).is_ok());
    let worker = thread::spawn(move || {
        let owner = Owner::new("alice");
        let (handle, id) = start(&registry, &owner);
        let _ = registry.list(&owner, None, 10).unwrap();
        let _ = registry.get(&owner, &id).unwrap();
        let timed_out = registry.wait(&owner, &id, Some(ms(20)));
        assert!(
            matches!(timed_out, Err(Error::Timeout { .. })),
            "{timed_out:?}"
        );
        let waiter = spawn_wait(&registry, &owner, &id);
        thread::sleep(ms(20));
        let _ = handle.complete(tool_result("x")).unwrap();
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap().status(),
            TaskStatus::Completed
        );
        registry.purge_expired();
        registry.remove(&owner, &id).unwrap();
    });
    join_within(worker, WAKE, "the worker");
}
