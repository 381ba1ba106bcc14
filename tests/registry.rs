//! Integration tests of [`TaskRegistry`] (issue 3): ownership, ids, TTL, limits, the typed
//! handle, the by-id API, pagination, blocking waits and status notifications.
//!
//! Every blocking call is bounded (a wait timeout, or a join with a deadline) so that a bug
//! fails a test instead of hanging the suite.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::TaskStore;
use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    AnyTask, Clock, Error, InputRequest, InputRequests, LimitScope, Limits, ManualClock, Outcome,
    Owner, RequestId, StatusChange, TaskHandle, TaskRegistry, TaskRequest, TaskStatus, Timestamp,
    TtlPolicy, Working,
};
use serde_json::{Value, json};

#[path = "support/common.rs"]
mod common;
use common::{
    BOUND, Seen, WAKE, ids, join_within, ms, obj, recorder, req, spawn_wait, tool_outcome,
    tool_result,
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

/// Every task of `owner`, walking all pages of `page_size`.
fn list_all(registry: &TaskRegistry, owner: &Owner, page_size: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100_000 {
        let page = registry.list(owner, cursor.as_deref(), page_size).unwrap();
        all.extend(ids(&page.tasks));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
    panic!("pagination never ends");
}

// ---------------------------------------------------------------------------------------
// Ownership
// ---------------------------------------------------------------------------------------

/// Every by-id operation a caller can attempt on `id`, each with its error (an operation
/// that succeeds is reported as `Ok` with what it returned).
fn attempt_all(
    registry: &TaskRegistry,
    owner: &Owner,
    id: &str,
) -> Vec<(&'static str, Result<String, Error>)> {
    let shown = |r: Result<AnyTask, Error>| r.map(|task| format!("{task:?}"));
    vec![
        ("get", shown(registry.get(owner, id))),
        ("result", shown(registry.result(owner, id))),
        (
            "wait",
            shown(wait_bounded(registry, owner, id, Some(ms(200)))),
        ),
        (
            "cancel",
            registry
                .cancel(owner, id, Some("not yours".into()))
                .map(|task| format!("{task:?}")),
        ),
        (
            "update_status working",
            shown(registry.update_status(owner, id, TaskStatus::Working, Some("x".into()))),
        ),
        (
            "update_status input_required",
            shown(registry.update_status(owner, id, TaskStatus::InputRequired, None)),
        ),
        (
            "update_status cancelled",
            shown(registry.update_status(owner, id, TaskStatus::Cancelled, None)),
        ),
        (
            "store_result completed",
            shown(registry.store_result(owner, id, TaskStatus::Completed, tool_outcome("stolen"))),
        ),
        (
            "store_result failed",
            shown(registry.store_result(
                owner,
                id,
                TaskStatus::Failed,
                Outcome::error(-32000, "sabotage"),
            )),
        ),
        ("remove", shown(registry.remove(owner, id))),
        (
            "origin",
            registry
                .origin(owner, id)
                .map(|origin| format!("{origin:?}")),
        ),
    ]
}

fn assert_all_not_found(attempts: &[(&'static str, Result<String, Error>)], id: &str) {
    for (op, outcome) in attempts {
        match outcome {
            Err(err) => {
                assert_eq!(err, &not_found(id), "{op}");
                assert_eq!(err.code(), -32602, "{op}");
            }
            Ok(value) => panic!("{op} succeeded where it must look unknown: {value}"),
        }
    }
}

#[test]
fn another_owner_and_anonymous_get_exactly_the_unknown_id_error_for_every_operation() {
    let (registry, _clock) = manual();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let anonymous = Owner::anonymous();
    let id = start_detached(&registry, &alice);
    registry
        .update_status(&alice, &id, TaskStatus::Working, Some("busy".into()))
        .unwrap();
    let before = registry.get(&alice, &id).unwrap();

    let as_bob = attempt_all(&registry, &bob, &id);
    let as_anonymous = attempt_all(&registry, &anonymous, &id);
    let as_empty_key = attempt_all(&registry, &Owner::new(""), &id);
    // Nothing the others tried changed the task, and they cannot list it.
    assert_eq!(registry.get(&alice, &id).unwrap(), before);
    assert_eq!(registry.len(), 1);
    assert!(list_all(&registry, &bob, 10).is_empty());
    assert!(list_all(&registry, &anonymous, 10).is_empty());
    assert_eq!(list_all(&registry, &alice, 10), vec![id.clone()]);

    // Now the id is unknown to everybody, alice included.
    registry.remove(&alice, &id).unwrap();
    let as_alice_unknown = attempt_all(&registry, &alice, &id);

    assert_all_not_found(&as_alice_unknown, &id);
    for other in [&as_bob, &as_anonymous, &as_empty_key] {
        assert_eq!(other.len(), as_alice_unknown.len());
        for ((op, theirs), (_, unknown)) in other.iter().zip(&as_alice_unknown) {
            let theirs = theirs.as_ref().unwrap_err();
            let unknown = unknown.as_ref().unwrap_err();
            assert_eq!(theirs, unknown, "{op}: error value");
            assert_eq!(
                theirs.to_jsonrpc(),
                unknown.to_jsonrpc(),
                "{op}: wire error"
            );
            assert_eq!(theirs.to_string(), unknown.to_string(), "{op}: message");
        }
    }

    // A random id that was never issued answers the same, up to the echoed id.
    let never = uuid::Uuid::new_v4().to_string();
    let as_never = attempt_all(&registry, &bob, &never);
    assert_all_not_found(&as_never, &never);
    for ((op, never_err), (_, unknown)) in as_never.iter().zip(&as_alice_unknown) {
        let never_rpc = never_err.as_ref().unwrap_err().to_jsonrpc();
        let unknown_rpc = unknown.as_ref().unwrap_err().to_jsonrpc();
        assert_eq!(never_rpc.code, unknown_rpc.code, "{op}");
        assert_eq!(never_rpc.data, unknown_rpc.data, "{op}");
        assert_eq!(
            never_rpc.message.replace(&never, &id),
            unknown_rpc.message,
            "{op}"
        );
    }
    // Ids that are not even UUIDs are unknown in the same way.
    assert_all_not_found(&attempt_all(&registry, &alice, "task-1"), "task-1");
    let upper = id.to_uppercase();
    assert_all_not_found(&attempt_all(&registry, &alice, &upper), &upper);
}

#[test]
fn another_owner_cannot_tell_a_finished_task_exists_either() {
    let (registry, _clock) = manual();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let (handle, id) = start(&registry, &alice);
    let _ = handle.complete(tool_result("done")).unwrap();
    let done = registry.get(&alice, &id).unwrap();
    let as_bob = attempt_all(&registry, &bob, &id);
    assert_eq!(registry.get(&alice, &id).unwrap(), done);
    registry.remove(&alice, &id).unwrap();
    let unknown = attempt_all(&registry, &alice, &id);
    for ((op, theirs), (_, unknown)) in as_bob.iter().zip(&unknown) {
        assert_eq!(
            theirs.as_ref().unwrap_err().to_jsonrpc(),
            unknown.as_ref().unwrap_err().to_jsonrpc(),
            "{op}"
        );
    }
    assert_all_not_found(&as_bob, &id);
}

#[test]
fn lists_show_only_the_callers_tasks_and_anonymous_tasks_only_to_anonymous() {
    let (registry, _clock) = manual();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let anonymous = Owner::anonymous();
    let mut mine: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for round in 0..5 {
        for (name, owner) in [("alice", &alice), ("bob", &bob), ("anonymous", &anonymous)] {
            if name == "bob" && round % 2 == 0 {
                continue;
            }
            mine.entry(name)
                .or_default()
                .push(start_detached(&registry, owner));
        }
    }
    for (name, owner) in [("alice", &alice), ("bob", &bob), ("anonymous", &anonymous)] {
        assert_eq!(list_all(&registry, owner, 2), mine[name], "{name}");
        assert_eq!(list_all(&registry, owner, 1000), mine[name], "{name}");
    }
    assert!(list_all(&registry, &Owner::new("carol"), 10).is_empty());
    // Equal keys are the same owner, whoever built the value.
    assert_eq!(
        list_all(&registry, &Owner::from(String::from("alice")), 10),
        mine["alice"]
    );
    // Anonymous tasks are reachable by anonymous callers only.
    let anon_id = &mine["anonymous"][0];
    assert!(registry.get(&anonymous, anon_id).is_ok());
    assert_eq!(registry.get(&alice, anon_id), Err(not_found(anon_id)));
    assert_eq!(
        registry.get(&Owner::new(""), anon_id),
        Err(not_found(anon_id))
    );
    // An owner's own tasks stay invisible to anonymous callers.
    let alice_id = &mine["alice"][0];
    assert_eq!(registry.get(&anonymous, alice_id), Err(not_found(alice_id)));
}

// ---------------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------------

#[test]
fn ids_are_canonical_uuid_v4_strings_and_unique() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let mut seen = HashSet::new();
    for n in 0..3_000 {
        let (handle, task) = registry.create(&owner, req(n)).unwrap();
        let id = task.id().to_string();
        assert_eq!(handle.id(), task.id());
        let _ = handle.detach();
        let uuid = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(uuid.get_version_num(), 4, "{id}");
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{id}");
        assert_eq!(
            uuid.hyphenated().to_string(),
            id,
            "canonical lowercase form"
        );
        assert_eq!(task.id().as_uuid(), Some(uuid));
        assert!(seen.insert(id), "duplicate id");
    }
    assert_eq!(registry.len(), 3_000);
}

// ---------------------------------------------------------------------------------------
// TTL
// ---------------------------------------------------------------------------------------

#[test]
fn ttl_default_clamp_and_effective_value_everywhere() {
    let (registry, _clock) = manual_with(
        TtlPolicy::new(Some(60_000)).with_max(120_000),
        Limits::none(),
    );
    let owner = Owner::new("alice");
    for (requested, effective) in [
        (None, 60_000),
        (Some(5_000), 5_000),
        (Some(120_000), 120_000),
        (Some(120_001), 120_000),
        (Some(u64::MAX), 120_000),
    ] {
        let (handle, task) = registry.create(&owner, req(1).with_ttl(requested)).unwrap();
        assert_eq!(task.ttl(), Some(effective), "{requested:?}");
        let id = task.id().to_string();
        assert_eq!(registry.get(&owner, &id).unwrap().ttl(), Some(effective));
        let listed = registry.list(&owner, None, 1000).unwrap();
        let entry = listed.tasks.iter().find(|t| t.id() == task.id()).unwrap();
        assert_eq!(entry.ttl(), Some(effective));
        let done = handle.complete(tool_result("x")).unwrap();
        assert_eq!(done.ttl(), Some(effective));
        // The wire form shows the effective value too.
        let wire = serde_json::to_value(registry.get(&owner, &id).unwrap()).unwrap();
        assert_eq!(wire["ttl"], json!(effective));
    }
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
    let wire = serde_json::to_value(open.get(&owner, &task.id().to_string()).unwrap()).unwrap();
    assert_eq!(wire["ttl"], Value::Null, "unlimited shows as null");
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

// ---------------------------------------------------------------------------------------
// Limits
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

// ---------------------------------------------------------------------------------------
// Typed handle
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
    assert_eq!(handle.current_status(), Some(TaskStatus::Working));

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
    assert_eq!(registry.result(&owner, &id).unwrap_err().code(), -32602);

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
    assert_eq!(registry.result(&owner, &id).unwrap(), stored);
    assert_eq!(
        wait_bounded(&registry, &owner, &id, Some(BOUND))
            .unwrap()
            .outcome(),
        Some(&tool_outcome("42"))
    );
}

#[test]
fn handle_fail_and_finish_store_the_outcome_with_the_status() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let failed = handle.fail(Outcome::error(-32000, "disk full")).unwrap();
    assert_eq!(failed.status_message(), Some("disk full"));
    assert_eq!(
        registry.result(&owner, &id).unwrap().outcome(),
        Some(&Outcome::error(-32000, "disk full"))
    );

    let (handle, id) = start(&registry, &owner);
    let bad = obj(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}));
    match handle.finish(bad.clone()).unwrap() {
        mcp_tasks::Finished::Failed(task) => {
            assert_eq!(task.outcome(), Some(&Outcome::Result(bad.clone())));
        }
        other => panic!("isError must fail the task: {other:?}"),
    }
    let stored = registry.result(&owner, &id).unwrap();
    assert_eq!(stored.status(), TaskStatus::Failed);
    assert_eq!(stored.outcome(), Some(&Outcome::Result(bad)));

    let (handle, id) = start(&registry, &owner);
    let cancelled = handle.with_message("handler gave up").cancel().unwrap();
    assert_eq!(cancelled.status_message(), Some("handler gave up"));
    let stored = registry.result(&owner, &id).unwrap();
    assert_eq!(stored.status(), TaskStatus::Cancelled);
    assert_eq!(stored.outcome(), None);
}

#[test]
fn a_task_cancelled_by_id_refuses_the_handles_late_transitions() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");

    // Cancelled while working: the late completion is refused and stores nothing.
    let (handle, id) = start(&registry, &owner);
    clock.advance(ms(10));
    let cancelled = registry
        .cancel(&owner, &id, Some("stopped by the user".into()))
        .unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    assert_eq!(cancelled.last_updated_at(), t0().plus_millis(10));
    assert_eq!(handle.current_status(), Some(TaskStatus::Cancelled));
    clock.advance(ms(10));
    let err = handle.complete(tool_result("too late")).unwrap_err();
    assert_eq!(
        err,
        Error::TaskCancelled {
            task_id: id.clone()
        }
    );
    assert_eq!(err.code(), -32602);
    let stored = registry.get(&owner, &id).unwrap();
    assert_eq!(
        stored,
        cancelled.clone().into_any(),
        "unchanged, time included"
    );
    assert_eq!(stored.outcome(), None);
    assert_eq!(stored.status_message(), Some("stopped by the user"));

    // Cancelled while waiting for input: resume, fail and cancel are all refused.
    for attempt in 0..3 {
        let (handle, id) = start(&registry, &owner);
        let handle = handle.require_input(InputRequests::new()).unwrap();
        let _ = registry.cancel(&owner, &id, None).unwrap();
        let err = match attempt {
            0 => handle.resume().map(drop).unwrap_err(),
            1 => handle.fail(Outcome::error(-1, "x")).map(drop).unwrap_err(),
            _ => handle.cancel().map(drop).unwrap_err(),
        };
        assert_eq!(
            err,
            Error::TaskCancelled {
                task_id: id.clone()
            }
        );
        let stored = registry.get(&owner, &id).unwrap();
        assert_eq!(stored.status(), TaskStatus::Cancelled);
        assert_eq!(stored.outcome(), None);
    }

    // A status message cannot be added to a cancelled task either.
    let (handle, id) = start(&registry, &owner);
    let _ = registry.cancel(&owner, &id, None).unwrap();
    assert_eq!(
        handle.set_status_message(Some("still going".into())),
        Err(Error::TaskCancelled {
            task_id: id.clone()
        })
    );
    drop(handle);
    let stored = registry.get(&owner, &id).unwrap();
    assert_eq!(
        stored.status(),
        TaskStatus::Cancelled,
        "dropping does not fail it"
    );
    assert_eq!(stored.status_message(), None);
}

#[test]
fn the_first_terminal_state_wins_and_results_are_never_overwritten() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");

    // store_result by id first: the handle's completion is refused.
    let (handle, id) = start(&registry, &owner);
    let first = registry
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("first"))
        .unwrap();
    let err = handle.complete(tool_result("second")).unwrap_err();
    assert_eq!(err.code(), -32602);
    assert!(
        matches!(
            &err,
            Error::IllegalTransition {
                from: TaskStatus::Completed,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(registry.result(&owner, &id).unwrap(), first);

    // store_result twice: the second is refused, the first kept.
    let id = start_detached(&registry, &owner);
    let first = registry
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32000, "first"),
        )
        .unwrap();
    for (status, outcome) in [
        (TaskStatus::Failed, Outcome::error(-32000, "second")),
        (TaskStatus::Completed, tool_outcome("second")),
    ] {
        let err = registry
            .store_result(&owner, &id, status, outcome)
            .unwrap_err();
        assert_eq!(err.code(), -32602);
        assert!(
            matches!(
                &err,
                Error::IllegalTransition {
                    from: TaskStatus::Failed,
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert_eq!(registry.result(&owner, &id).unwrap(), first);

    // The handle's result first: nothing stored by id replaces it.
    let (handle, id) = start(&registry, &owner);
    let done = handle.complete(tool_result("mine")).unwrap().into_any();
    assert!(
        registry
            .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("x"))
            .is_err()
    );
    assert!(registry.cancel(&owner, &id, None).is_err());
    assert!(
        registry
            .update_status(&owner, &id, TaskStatus::Working, None)
            .is_err()
    );
    assert_eq!(registry.result(&owner, &id).unwrap(), done);
}

#[test]
fn dropping_an_unfinished_handle_fails_the_task_and_wakes_waiters() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let handle = handle.require_input(InputRequests::new()).unwrap();
    let waiters: Vec<_> = (0..4).map(|_| spawn_wait(&registry, &owner, &id)).collect();
    thread::sleep(ms(50));
    assert!(waiters.iter().all(|w| !w.is_finished()), "waiters block");
    drop(handle);
    let stored = registry.get(&owner, &id).unwrap();
    assert_eq!(stored.status(), TaskStatus::Failed);
    let Some(Outcome::Error(error)) = stored.outcome() else {
        panic!("a dropped handle stores a JSON-RPC error: {stored:?}");
    };
    assert_eq!(error.code, INTERNAL_ERROR);
    assert_eq!(error.code, -32603);
    assert!(stored.status_message().is_some());
    for waiter in waiters {
        assert_eq!(join_within(waiter, WAKE, "a waiter").unwrap(), stored);
    }
}

#[test]
fn a_detached_handle_leaves_the_task_working_for_the_by_id_api() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let handle = handle.require_input(InputRequests::new()).unwrap();
    let detached = handle.detach();
    assert_eq!(detached.to_string(), id);
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::InputRequired
    );
    registry
        .update_status(&owner, &id, TaskStatus::Working, None)
        .unwrap();
    registry
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("by id"))
        .unwrap();
    assert_eq!(
        registry.result(&owner, &id).unwrap().outcome(),
        Some(&tool_outcome("by id"))
    );
}

#[test]
fn a_handle_of_a_removed_task_changes_nothing() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    registry.remove(&owner, &id).unwrap();
    assert_eq!(handle.current_status(), None);
    assert_eq!(handle.snapshot(), Err(not_found(&id)));
    assert_eq!(
        handle.complete(tool_result("x")).unwrap_err(),
        not_found(&id)
    );
    assert!(registry.is_empty(), "nothing came back");
    let (handle, id) = start(&registry, &owner);
    registry.remove(&owner, &id).unwrap();
    drop(handle);
    assert!(registry.is_empty(), "dropping it does not resurrect it");
}

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

// ---------------------------------------------------------------------------------------
// By-id API
// ---------------------------------------------------------------------------------------

/// A task of `owner` in `status`, moved there through the by-id API.
fn task_in(registry: &TaskRegistry, owner: &Owner, status: TaskStatus) -> String {
    let id = start_detached(registry, owner);
    match status {
        TaskStatus::Working => {}
        TaskStatus::InputRequired => {
            registry
                .update_status(
                    owner,
                    &id,
                    TaskStatus::InputRequired,
                    Some("need input".into()),
                )
                .unwrap();
        }
        TaskStatus::Completed => {
            registry
                .store_result(owner, &id, status, tool_outcome("ok"))
                .unwrap();
        }
        TaskStatus::Failed => {
            registry
                .store_result(owner, &id, status, Outcome::error(-32000, "broken"))
                .unwrap();
        }
        TaskStatus::Cancelled => {
            let _ = registry.cancel(owner, &id, None).unwrap();
        }
    }
    assert_eq!(registry.get(owner, &id).unwrap().status(), status);
    id
}

#[test]
fn cancel_moves_live_tasks_and_refuses_terminal_ones_with_the_current_task() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    for from in [TaskStatus::Working, TaskStatus::InputRequired] {
        let id = task_in(&registry, &owner, from);
        clock.advance(ms(5));
        let cancelled = registry.cancel(&owner, &id, Some("why".into())).unwrap();
        assert_eq!(cancelled.status(), TaskStatus::Cancelled);
        assert_eq!(cancelled.status_message(), Some("why"));
        assert_eq!(cancelled.last_updated_at(), clock.now());
        assert_eq!(registry.get(&owner, &id).unwrap(), cancelled.into_any());
    }
    for from in TaskStatus::TERMINAL {
        let id = task_in(&registry, &owner, from);
        let current = registry.get(&owner, &id).unwrap();
        clock.advance(ms(5));
        let err = registry.cancel(&owner, &id, None).unwrap_err();
        assert_eq!(err.code(), -32602, "{from}");
        match &err {
            Error::AlreadyTerminal { task } => assert_eq!(**task, current, "{from}"),
            other => panic!("{from}: {other:?}"),
        }
        let rpc = err.to_jsonrpc();
        assert_eq!(rpc.code, -32602);
        assert_eq!(rpc.data.as_ref().unwrap()["taskId"], json!(id));
        assert_eq!(rpc.data.as_ref().unwrap()["status"], json!(from.as_str()));
        assert!(rpc.message.contains(from.as_str()), "{}", rpc.message);
        assert_eq!(registry.get(&owner, &id).unwrap(), current, "unchanged");
    }
}

#[test]
fn result_is_not_finished_while_the_task_runs() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    for status in [TaskStatus::Working, TaskStatus::InputRequired] {
        let id = task_in(&registry, &owner, status);
        let err = registry.result(&owner, &id).unwrap_err();
        assert_eq!(
            err,
            Error::NotFinished {
                task_id: id.clone(),
                status
            }
        );
        assert_eq!(err.code(), -32602);
    }
    let id = task_in(&registry, &owner, TaskStatus::Completed);
    assert_eq!(
        registry.result(&owner, &id).unwrap().outcome(),
        Some(&tool_outcome("ok"))
    );
    let id = task_in(&registry, &owner, TaskStatus::Failed);
    assert_eq!(
        registry.result(&owner, &id).unwrap().outcome(),
        Some(&Outcome::error(-32000, "broken"))
    );
    let id = task_in(&registry, &owner, TaskStatus::Cancelled);
    let cancelled = registry.result(&owner, &id).unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    assert_eq!(cancelled.outcome(), None);
}

#[test]
fn update_status_follows_the_spec_table_for_every_pair() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    for from in TaskStatus::ALL {
        for to in TaskStatus::ALL {
            let id = task_in(&registry, &owner, from);
            let before = registry.get(&owner, &id).unwrap();
            clock.advance(ms(3));
            let outcome = registry.update_status(&owner, &id, to, Some(format!("{from} -> {to}")));
            let after = registry.get(&owner, &id).unwrap();
            match outcome {
                Ok(task) => {
                    assert!(
                        !from.is_terminal()
                            && !matches!(to, TaskStatus::Completed | TaskStatus::Failed),
                        "{from} -> {to} must be refused"
                    );
                    assert!(
                        from == to || from.can_transition_to(to),
                        "{from} -> {to} is not in the table"
                    );
                    assert_eq!(task, after);
                    assert_eq!(after.status(), to);
                    assert_eq!(
                        after.status_message(),
                        Some(format!("{from} -> {to}").as_str())
                    );
                    assert_eq!(after.last_updated_at(), clock.now());
                }
                Err(err) => {
                    assert_eq!(err.code(), -32602, "{from} -> {to}");
                    assert_eq!(after, before, "{from} -> {to}: a refusal changes nothing");
                    match (from, to) {
                        (_, TaskStatus::Completed | TaskStatus::Failed) => {
                            assert!(matches!(err, Error::InvalidParams { .. }), "{err:?}");
                        }
                        (TaskStatus::Cancelled, _) => {
                            assert_eq!(
                                err,
                                Error::TaskCancelled {
                                    task_id: id.clone()
                                }
                            );
                        }
                        (TaskStatus::Completed | TaskStatus::Failed, _) => assert!(
                            matches!(err, Error::IllegalTransition { from: f, .. } if f == from),
                            "{err:?}"
                        ),
                        _ => panic!("{from} -> {to} must be allowed: {err:?}"),
                    }
                }
            }
        }
    }
}

#[test]
fn store_result_takes_completed_or_failed_only() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    let before = registry.get(&owner, &id).unwrap();
    let refused = [
        (
            TaskStatus::Completed,
            Outcome::error(-32000, "an error is not a completion"),
        ),
        (TaskStatus::Working, tool_outcome("x")),
        (TaskStatus::InputRequired, tool_outcome("x")),
        (TaskStatus::Cancelled, tool_outcome("x")),
    ];
    for (status, outcome) in refused {
        let err = registry
            .store_result(&owner, &id, status, outcome)
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidParams { .. }),
            "{status}: {err:?}"
        );
        assert_eq!(err.code(), -32602);
        assert_eq!(registry.get(&owner, &id).unwrap(), before);
    }
    let stored = registry
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("ok"))
        .unwrap();
    assert_eq!(stored.status(), TaskStatus::Completed);

    // Failed takes a JSON-RPC error or a result that reports one.
    let id = start_detached(&registry, &owner);
    let error_result = obj(json!({"content": [], "isError": true}));
    let stored = registry
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::Result(error_result.clone()),
        )
        .unwrap();
    assert_eq!(stored.outcome(), Some(&Outcome::Result(error_result)));

    // Refused on every terminal task.
    for from in TaskStatus::TERMINAL {
        let id = task_in(&registry, &owner, from);
        let current = registry.get(&owner, &id).unwrap();
        let err = registry
            .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("late"))
            .unwrap_err();
        assert_eq!(err.code(), -32602);
        if from == TaskStatus::Cancelled {
            assert_eq!(
                err,
                Error::TaskCancelled {
                    task_id: id.clone()
                }
            );
        }
        assert_eq!(registry.get(&owner, &id).unwrap(), current);
    }
}

#[test]
fn origin_keeps_the_request_id_and_method() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let cases = [
        (RequestId::from(42), "tools/call"),
        (RequestId::from("req-7"), "sampling/createMessage"),
        (RequestId::from(-1), "elicitation/create"),
        (RequestId::from("req-8"), "tools/call"),
    ];
    let mut made = Vec::new();
    for (request_id, method) in &cases {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(request_id.clone(), *method))
            .unwrap();
        made.push((task.id().to_string(), handle));
    }
    for ((id, _), (request_id, method)) in made.iter().zip(&cases) {
        let origin = registry.origin(&owner, id).unwrap();
        assert_eq!(&origin.request_id, request_id);
        assert_eq!(&*origin.method, *method);
    }
    // Kept after the task finished.
    let (id, handle) = made.remove(0);
    let _ = handle.complete(tool_result("x")).unwrap();
    assert_eq!(
        registry.origin(&owner, &id).unwrap().request_id,
        RequestId::from(42)
    );
}

// ---------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------

#[test]
fn next_cursor_is_present_iff_more_tasks_follow() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let empty = registry.list(&owner, None, 3).unwrap();
    assert!(empty.tasks.is_empty());
    assert_eq!(empty.next_cursor, None);

    let all: Vec<String> = (0..6).map(|_| start_detached(&registry, &owner)).collect();
    let first = registry.list(&owner, None, 3).unwrap();
    assert_eq!(ids(&first.tasks), all[..3]);
    let cursor = first.next_cursor.expect("more follow");
    let second = registry.list(&owner, Some(&cursor), 3).unwrap();
    assert_eq!(ids(&second.tasks), all[3..]);
    assert_eq!(
        second.next_cursor, None,
        "exactly a full last page: no cursor"
    );

    let whole = registry.list(&owner, None, 6).unwrap();
    assert_eq!(ids(&whole.tasks), all);
    assert_eq!(whole.next_cursor, None);
    let bigger = registry.list(&owner, None, 100).unwrap();
    assert_eq!(bigger.next_cursor, None);
    let almost = registry.list(&owner, None, 5).unwrap();
    assert!(almost.next_cursor.is_some());

    // A page size of zero still makes progress.
    let mut walked = Vec::new();
    let mut cursor = None;
    loop {
        let page = registry.list(&owner, cursor.as_deref(), 0).unwrap();
        assert_eq!(page.tasks.len(), 1);
        walked.extend(ids(&page.tasks));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(walked, all);
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
fn foreign_forged_empty_and_oversized_cursors_are_invalid_params() {
    let (registry, _clock) = manual();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    for _ in 0..3 {
        start_detached(&registry, &alice);
        start_detached(&registry, &bob);
    }
    let cursor = registry.list(&alice, None, 1).unwrap().next_cursor.unwrap();
    let bobs = registry.list(&bob, None, 1).unwrap().next_cursor.unwrap();
    assert!(registry.list(&alice, Some(&cursor), 1).is_ok());

    let mut forged: Vec<String> = Vec::new();
    for i in 0..cursor.len() {
        let mut bytes = cursor.clone().into_bytes();
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        forged.push(String::from_utf8(bytes).unwrap());
    }
    let other_registry = manual().0;
    start_detached(&other_registry, &alice);
    start_detached(&other_registry, &alice);
    let foreign_registry = other_registry
        .list(&alice, None, 1)
        .unwrap()
        .next_cursor
        .unwrap();

    let mut bad: Vec<(String, String)> = vec![
        ("bob's cursor".into(), bobs.clone()),
        ("another registry's".into(), foreign_registry),
        ("empty".into(), String::new()),
        ("oversized".into(), "0".repeat(100_000)),
        ("doubled".into(), format!("{cursor}{cursor}")),
        ("truncated".into(), cursor[..cursor.len() - 1].to_owned()),
        ("upper case".into(), cursor.to_uppercase()),
        ("a task id".into(), uuid::Uuid::new_v4().to_string()),
        ("non-ascii".into(), "é".repeat(16)),
        ("zeros".into(), "0".repeat(cursor.len())),
    ];
    bad.extend(forged.into_iter().map(|f| ("forged".to_owned(), f)));
    for (what, cursor_text) in &bad {
        if cursor_text == &cursor {
            continue;
        }
        let err = registry.list(&alice, Some(cursor_text), 1).unwrap_err();
        assert!(
            matches!(err, Error::InvalidCursor { .. }),
            "{what}: {err:?}"
        );
        assert_eq!(err.code(), -32602, "{what}");
        assert!(
            err.to_string().len() < 300,
            "{what}: the message stays short"
        );
    }
    // Anonymous callers cannot use an owner's cursor, and vice versa.
    assert!(
        registry
            .list(&Owner::anonymous(), Some(&cursor), 1)
            .is_err()
    );
    // Bob's cursor refused for alice says the same as a forged one: no oracle.
    let foreign = registry.list(&alice, Some(&bobs), 1).unwrap_err();
    let made_up = registry
        .list(&alice, Some(&"ab".repeat(cursor.len() / 2)), 1)
        .unwrap_err();
    assert_eq!(foreign.to_jsonrpc(), made_up.to_jsonrpc());
}

// ---------------------------------------------------------------------------------------
// Waits
// ---------------------------------------------------------------------------------------

/// Starts `n` threads waiting on `id`, and checks that they block.
fn waiters(
    registry: &TaskRegistry,
    owner: &Owner,
    id: &str,
    n: usize,
) -> Vec<JoinHandle<Result<AnyTask, Error>>> {
    let started = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (registry, owner, id) = (registry.clone(), owner.clone(), id.to_owned());
            let started = Arc::clone(&started);
            thread::spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                registry.wait(&owner, &id, Some(BOUND))
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < n {
        thread::yield_now();
    }
    thread::sleep(ms(30));
    assert!(
        handles.iter().all(|h| !h.is_finished()),
        "waiters return only once the task is terminal"
    );
    handles
}

#[test]
fn every_waiter_wakes_on_completion_with_the_stored_outcome() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let blocked = waiters(&registry, &owner, &id, 8);
    let handle = handle.require_input(InputRequests::new()).unwrap();
    let handle = handle.resume().unwrap();
    thread::sleep(ms(10));
    assert!(
        blocked.iter().all(|h| !h.is_finished()),
        "non-terminal changes do not end waits"
    );
    let _ = handle.complete(tool_result("the answer")).unwrap();
    let stored = registry.result(&owner, &id).unwrap();
    for waiter in blocked {
        let got = join_within(waiter, WAKE, "a waiter").unwrap();
        assert_eq!(got, stored);
        assert_eq!(got.outcome(), Some(&tool_outcome("the answer")));
    }
}

#[test]
fn every_waiter_wakes_on_cancellation() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let blocked = waiters(&registry, &owner, &id, 8);
    let cancelled = registry.cancel(&owner, &id, Some("stop".into())).unwrap();
    for waiter in blocked {
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap(),
            cancelled.clone().into_any()
        );
    }
    assert!(handle.complete(tool_result("late")).is_err());
}

#[test]
fn every_waiter_wakes_on_failure_stored_by_id() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    let blocked = waiters(&registry, &owner, &id, 4);
    let failed = registry
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32001, "no"),
        )
        .unwrap();
    for waiter in blocked {
        assert_eq!(join_within(waiter, WAKE, "a waiter").unwrap(), failed);
    }
}

#[test]
fn every_waiter_wakes_on_expiry_swept_by_purge() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let (handle, task) = registry
        .create(&owner, req(1).with_ttl(Some(60_000)))
        .unwrap();
    let id = task.id().to_string();
    let blocked = waiters(&registry, &owner, &id, 8);
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
    let blocked = waiters(&registry, &owner, &id, 4);
    clock.advance(ms(60_000));
    assert_eq!(registry.get(&owner, &id), Err(not_found(&id)));
    for waiter in blocked {
        assert_eq!(join_within(waiter, WAKE, "a waiter"), Err(not_found(&id)));
    }
}

#[test]
fn every_waiter_wakes_on_removal() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    let blocked = waiters(&registry, &owner, &id, 8);
    registry.remove(&owner, &id).unwrap();
    for waiter in blocked {
        assert_eq!(join_within(waiter, WAKE, "a waiter"), Err(not_found(&id)));
    }
}

#[test]
fn a_wait_times_out_and_a_finished_task_returns_at_once() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    let started = Instant::now();
    let err = wait_bounded(&registry, &owner, &id, Some(ms(100))).unwrap_err();
    let waited = started.elapsed();
    match &err {
        Error::Timeout {
            task_id,
            waited: reported,
        } => {
            assert_eq!(task_id, &id);
            assert!(*reported >= ms(100), "{reported:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(waited >= ms(100), "{waited:?}");
    assert!(waited < WAKE, "{waited:?}");
    assert_eq!(err.code(), -32603);
    // A zero timeout answers at once.
    assert!(matches!(
        wait_bounded(&registry, &owner, &id, Some(Duration::ZERO)),
        Err(Error::Timeout { .. })
    ));
    // The task is unaffected by the timed-out wait, and a later wait still works.
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::Working
    );
    let done = handle.complete(tool_result("done")).unwrap().into_any();
    let started = Instant::now();
    assert_eq!(
        wait_bounded(&registry, &owner, &id, Some(BOUND)).unwrap(),
        done
    );
    let unbounded = {
        let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
        thread::spawn(move || registry.wait(&owner, &id, None))
    };
    assert_eq!(
        join_within(unbounded, WAKE, "a waiter without a timeout").unwrap(),
        done
    );
    assert_eq!(
        wait_bounded(&registry, &owner, &id, Some(Duration::ZERO)).unwrap(),
        done
    );
    assert!(
        started.elapsed() < ms(1_000),
        "no waiting on a finished task"
    );
}

#[test]
fn waiters_of_one_task_are_not_woken_by_others_and_late_waiters_still_wake() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (first, first_id) = start(&registry, &owner);
    let (second, second_id) = start(&registry, &owner);
    let on_first = waiters(&registry, &owner, &first_id, 3);
    let on_second = waiters(&registry, &owner, &second_id, 3);
    let _ = second.complete(tool_result("2")).unwrap();
    for waiter in on_second {
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap().status(),
            TaskStatus::Completed
        );
    }
    thread::sleep(ms(20));
    assert!(on_first.iter().all(|h| !h.is_finished()));
    // A timed-out waiter leaving does not break the others, nor waiters that come later.
    assert!(matches!(
        wait_bounded(&registry, &owner, &first_id, Some(ms(10))),
        Err(Error::Timeout { .. })
    ));
    let late = waiters(&registry, &owner, &first_id, 2);
    let _ = first.complete(tool_result("1")).unwrap();
    for waiter in on_first.into_iter().chain(late) {
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap().status(),
            TaskStatus::Completed
        );
    }
}

// ---------------------------------------------------------------------------------------
// Notifications
// ---------------------------------------------------------------------------------------

fn statuses(log: &Seen) -> Vec<(TaskStatus, Option<String>)> {
    log.lock()
        .unwrap()
        .iter()
        .map(|c| (c.task.status(), c.task.status_message().map(str::to_owned)))
        .collect()
}

#[test]
fn subscribers_see_every_status_and_message_change_in_order() {
    let (registry, clock) = manual();
    let owner = Owner::new("alice");
    let (log, _) = recorder(&registry);
    let (handle, id) = start(&registry, &owner);
    clock.advance(ms(1));
    handle.set_status_message(Some("step 1".into())).unwrap();
    let handle = handle
        .with_message("question")
        .require_input(InputRequests::new())
        .unwrap();
    handle
        .set_status_message(Some("still waiting".into()))
        .unwrap();
    let handle = handle.resume().unwrap();
    let _ = handle
        .with_message("done")
        .complete(tool_result("x"))
        .unwrap();
    // By id too.
    let other = start_detached(&registry, &owner);
    registry
        .update_status(&owner, &other, TaskStatus::InputRequired, None)
        .unwrap();
    registry
        .update_status(&owner, &other, TaskStatus::InputRequired, Some("m".into()))
        .unwrap();
    let _ = registry.cancel(&owner, &other, Some("bye".into())).unwrap();
    // Refused changes notify nothing.
    assert!(registry.cancel(&owner, &other, None).is_err());
    assert!(
        registry
            .store_result(&owner, &other, TaskStatus::Failed, Outcome::error(-1, "x"))
            .is_err()
    );

    let s = |status, message: Option<&str>| (status, message.map(str::to_owned));
    assert_eq!(
        statuses(&log),
        vec![
            s(TaskStatus::Working, Some("step 1")),
            s(TaskStatus::InputRequired, Some("question")),
            s(TaskStatus::InputRequired, Some("still waiting")),
            s(TaskStatus::Working, None),
            s(TaskStatus::Completed, Some("done")),
            s(TaskStatus::InputRequired, None),
            s(TaskStatus::InputRequired, Some("m")),
            s(TaskStatus::Cancelled, Some("bye")),
        ]
    );
    let log = log.lock().unwrap();
    assert!(log.iter().all(|c| c.owner == owner));
    assert!(log[..5].iter().all(|c| c.task.id().to_string() == id));
    // Each notification carries the task exactly as stored after the change.
    assert_eq!(log[4].task, registry.get(&owner, &id).unwrap());
    assert_eq!(log[7].task, registry.get(&owner, &other).unwrap());
}

#[test]
fn a_failure_by_a_dropped_handle_is_notified_and_an_unchanged_task_is_not() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (log, _) = recorder(&registry);
    let (handle, _) = start(&registry, &owner);
    drop(handle);
    assert_eq!(statuses(&log).len(), 1);
    assert_eq!(statuses(&log)[0].0, TaskStatus::Failed);

    // A handler that notices the cancellation and returns: its handle's drop changes
    // nothing, so nothing more is notified.
    log.lock().unwrap().clear();
    let (handle, id) = start(&registry, &owner);
    let _ = registry.cancel(&owner, &id, None).unwrap();
    assert_eq!(handle.current_status(), Some(TaskStatus::Cancelled));
    let before = registry.get(&owner, &id).unwrap();
    drop(handle);
    assert_eq!(registry.get(&owner, &id).unwrap(), before);
    assert_eq!(
        statuses(&log),
        vec![(TaskStatus::Cancelled, None)],
        "exactly one notification for one change"
    );
}

#[test]
fn notifications_stay_in_order_per_task_across_threads() {
    const THREADS: usize = 8;
    const STEPS: usize = 200;
    let registry = TaskRegistry::builder()
        .limits(Limits::none())
        .build()
        .unwrap();
    let owner = Owner::new("alice");
    let (log, _) = recorder(&registry);
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (registry, owner) = (registry.clone(), owner.clone());
            thread::spawn(move || {
                let (handle, id) = start(&registry, &owner);
                let mut handle = handle;
                for step in 0..STEPS {
                    if step % 50 == 49 {
                        let waiting = handle
                            .with_message(format!("{step}"))
                            .require_input(InputRequests::new())
                            .unwrap();
                        handle = waiting.resume().unwrap();
                    } else {
                        handle.set_status_message(Some(format!("{step}"))).unwrap();
                    }
                }
                let _ = handle.complete(tool_result(&id)).unwrap();
                id
            })
        })
        .collect();
    let ids: Vec<String> = workers
        .into_iter()
        .map(|worker| join_within(worker, WAKE, "a worker"))
        .collect();

    let log = log.lock().unwrap();
    for id in &ids {
        let mine: Vec<&StatusChange> = log
            .iter()
            .filter(|c| &c.task.id().to_string() == id)
            .collect();
        // Every step notifies once; each require_input/resume pair notifies twice.
        let expected = STEPS + STEPS / 50 + 1;
        assert_eq!(mine.len(), expected, "{id}");
        let mut step = 0;
        for change in &mine[..mine.len() - 1] {
            match change.task.status() {
                TaskStatus::Working if change.task.status_message().is_none() => {
                    // The resume right after an input_required step.
                }
                _ => {
                    let got: usize = change.task.status_message().unwrap().parse().unwrap();
                    assert_eq!(got, step, "{id}: out of order");
                    step += 1;
                }
            }
        }
        assert_eq!(step, STEPS);
        assert_eq!(mine.last().unwrap().task.status(), TaskStatus::Completed);
        assert!(
            mine.windows(2)
                .all(|w| w[0].task.last_updated_at() <= w[1].task.last_updated_at())
        );
    }
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

#[test]
fn a_panicking_subscriber_neither_poisons_nor_stalls_the_registry() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    registry.subscribe(move |_: &StatusChange| {
        counted.fetch_add(1, Ordering::SeqCst);
        panic!("subscriber bug (expected by the test)");
    });
    let (log, _) = recorder(&registry);
    let worker = {
        let (registry, owner) = (registry.clone(), owner.clone());
        thread::spawn(move || {
            let (handle, id) = start(&registry, &owner);
            handle.set_status_message(Some("a".into())).unwrap();
            let handle = handle.require_input(InputRequests::new()).unwrap();
            let _ = handle.complete(tool_result("b")).unwrap();
            id
        })
    };
    let id = join_within(worker, WAKE, "the worker");
    assert_eq!(calls.load(Ordering::SeqCst), 3, "kept its registration");
    assert_eq!(
        statuses(&log).len(),
        3,
        "the other subscriber got everything"
    );
    // The registry is fully usable afterwards, from any thread.
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::Completed
    );
    let other = start_detached(&registry, &owner);
    let _ = registry.cancel(&owner, &other, None).unwrap();
    assert_eq!(
        wait_bounded(&registry, &owner, &other, Some(BOUND))
            .unwrap()
            .status(),
        TaskStatus::Cancelled
    );
    assert_eq!(list_all(&registry, &owner, 1).len(), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(statuses(&log).len(), 4);
}

#[test]
fn a_handler_panic_with_a_panicking_subscriber_does_not_abort() {
    // The dropped handle notifies while its thread unwinds; the subscriber panics then.
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    registry.subscribe(|_: &StatusChange| panic!("subscriber bug (expected by the test)"));
    let (log, _) = recorder(&registry);
    let (handle, id) = start(&registry, &owner);
    let worker = thread::spawn(move || {
        let _handle = handle;
        panic!("handler bug (expected by the test)");
    });
    assert!(worker.join().is_err());
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::Failed
    );
    assert_eq!(statuses(&log).len(), 1);
}

#[test]
fn unsubscribe_stops_deliveries() {
    let (registry, _clock) = manual();
    let owner = Owner::new("alice");
    let (log, sub) = recorder(&registry);
    let (kept, _) = recorder(&registry);
    let id = start_detached(&registry, &owner);
    registry
        .update_status(&owner, &id, TaskStatus::Working, Some("1".into()))
        .unwrap();
    assert!(registry.unsubscribe(sub));
    assert!(!registry.unsubscribe(sub), "only once");
    registry
        .update_status(&owner, &id, TaskStatus::Working, Some("2".into()))
        .unwrap();
    let _ = registry.cancel(&owner, &id, None).unwrap();
    assert_eq!(statuses(&log).len(), 1);
    assert_eq!(statuses(&kept).len(), 3);
}

// ---------------------------------------------------------------------------------------
// Lock policy: no user code under the lock
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Handles and by-id writers together; policy edges
// ---------------------------------------------------------------------------------------

#[test]
fn a_handle_can_finish_a_task_that_another_writer_moved_to_input_required() {
    let (registry, _) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    registry
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    let done = handle.complete(tool_result("done anyway")).unwrap();
    assert_eq!(done.result(), Some(&tool_result("done anyway")));
    assert_eq!(
        registry.get(&owner, &id).unwrap().status(),
        TaskStatus::Completed
    );
}

#[test]
fn a_refused_non_finishing_move_fails_the_task_instead_of_stranding_it() {
    let (registry, _) = manual();
    let owner = Owner::new("alice");
    let (handle, id) = start(&registry, &owner);
    registry
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    let err = handle.require_input(InputRequests::new()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::IllegalTransition {
                from: TaskStatus::InputRequired,
                ..
            }
        ),
        "{err:?}"
    );
    // Nobody holds a writer any more: the task must not wait for one forever.
    let task = registry
        .wait(&owner, &id, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(task.status(), TaskStatus::Failed);
    match task.outcome() {
        Some(Outcome::Error(error)) => assert_eq!(error.code, INTERNAL_ERROR),
        other => panic!("expected the abandonment error, got {other:?}"),
    }
}

#[test]
fn a_failed_result_must_report_the_failure() {
    let (registry, _) = manual();
    let owner = Owner::new("alice");
    let id = start_detached(&registry, &owner);
    let before = registry.get(&owner, &id).unwrap();
    let err = registry
        .store_result(&owner, &id, TaskStatus::Failed, tool_outcome("fine"))
        .unwrap_err();
    assert_eq!(err.code(), -32602);
    assert!(err.to_string().contains("isError"), "{err}");
    assert_eq!(registry.get(&owner, &id).unwrap(), before, "nothing stored");
    let failing = obj(json!({"content": [], "isError": true}));
    let failed = registry
        .store_result(&owner, &id, TaskStatus::Failed, Outcome::Result(failing))
        .unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
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
