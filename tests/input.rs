//! Input requests as data of `input_required`, answers delivered to the waiting handler,
//! the cooperative cancel flag, and TTL changes in place.

use std::thread;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::{
    Error, InputRequests, Limits, ManualClock, Owner, TaskRegistry, TaskRequest, TaskStatus,
    Timestamp, TtlPolicy,
};
use serde_json::json;

#[path = "support/common.rs"]
mod common;
use common::{accept, ask, input_keys, obj};

fn setup() -> (TaskRegistry, ManualClock, Owner) {
    let clock = ManualClock::new(Timestamp::parse("2025-11-25T10:30:00Z").unwrap());
    let registry = TaskRegistry::builder()
        .clock(clock.clone())
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(600_000))
        .limits(Limits::none())
        .build()
        .unwrap();
    (registry, clock, Owner::new("alice"))
}

#[test]
fn input_keys_are_unique_over_the_whole_life_of_a_task() {
    let (registry, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(
            InputRequests::new()
                .with("confirm", ask("one?"))
                .with("name", ask("who?")),
        )
        .unwrap();
    assert_eq!(
        input_keys(&registry.get(&owner, &id).unwrap()),
        ["confirm", "name"]
    );
    registry
        .respond(
            &owner,
            &id,
            obj(json!({"confirm": accept("yes"), "name": accept("ann")})),
        )
        .unwrap();
    let answers = waiting
        .wait_for_input(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(answers.get("confirm").unwrap()["content"]["answer"], "yes");
    let working = waiting.resume().unwrap();
    // The same names again: the wire keys change, the handler's names do not.
    let waiting = working
        .require_input(InputRequests::new().with("confirm", ask("two?")))
        .unwrap();
    assert_eq!(
        input_keys(&registry.get(&owner, &id).unwrap()),
        ["confirm-2"]
    );
    // An answer to the old, used key is ignored; the new key is taken.
    registry
        .respond(&owner, &id, obj(json!({"confirm": accept("stale")})))
        .unwrap();
    assert_eq!(
        input_keys(&registry.get(&owner, &id).unwrap()),
        ["confirm-2"]
    );
    registry
        .respond(&owner, &id, obj(json!({"confirm-2": accept("again")})))
        .unwrap();
    let answers = waiting
        .wait_for_input(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        answers.get("confirm").unwrap()["content"]["answer"],
        "again"
    );
    assert_eq!(answers.len(), 1);
    let working = waiting.resume().unwrap();
    let waiting = working
        .require_input(InputRequests::new().with("confirm", ask("three?")))
        .unwrap();
    assert_eq!(
        input_keys(&registry.get(&owner, &id).unwrap()),
        ["confirm-3"]
    );
    drop(waiting.cancel().unwrap());
}

#[test]
fn partial_answers_keep_the_task_waiting_for_the_rest() {
    let (registry, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(
            InputRequests::new()
                .with("a", ask("a?"))
                .with("b", ask("b?")),
        )
        .unwrap();
    let waiter = thread::spawn(move || {
        let answers = waiting.wait_for_input(Some(Duration::from_secs(10)));
        (waiting, answers)
    });
    // Unknown keys, non-object answers and a partial answer.
    registry
        .respond(
            &owner,
            &id,
            obj(json!({"zzz": accept("x"), "b": "not an object", "a": accept("1")})),
        )
        .unwrap();
    let task = registry.get(&owner, &id).unwrap();
    assert_eq!(task.status(), TaskStatus::InputRequired);
    assert_eq!(
        input_keys(&task),
        ["b"],
        "answered keys leave the outstanding requests"
    );
    thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "the handler waits for every answer");
    registry
        .respond(&owner, &id, obj(json!({"b": accept("2")})))
        .unwrap();
    let (waiting, answers) = waiter.join().unwrap();
    let answers = answers.unwrap();
    assert_eq!(answers.get("a").unwrap()["content"]["answer"], "1");
    assert_eq!(answers.get("b").unwrap()["content"]["answer"], "2");
    // A late duplicate answer changes nothing.
    let before = registry.get(&owner, &id).unwrap();
    registry
        .respond(&owner, &id, obj(json!({"a": accept("late")})))
        .unwrap();
    assert_eq!(registry.get(&owner, &id).unwrap(), before);
    drop(waiting.resume().unwrap());
}

#[test]
fn a_cancel_request_reaches_the_handler_without_changing_the_status() {
    let (registry, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    assert!(!handle.cancel_requested().unwrap());
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("sure?")))
        .unwrap();
    let waiter = thread::spawn(move || {
        let answers = waiting.wait_for_input(Some(Duration::from_secs(10)));
        (waiting, answers)
    });
    thread::sleep(Duration::from_millis(20));
    let acknowledged = registry.request_cancel(&owner, &id).unwrap();
    assert_eq!(
        acknowledged.status(),
        TaskStatus::InputRequired,
        "cooperative: no status change"
    );
    let (waiting, answers) = waiter.join().unwrap();
    assert!(
        matches!(answers, Err(Error::CancelRequested { .. })),
        "{answers:?}"
    );
    assert!(waiting.cancel_requested().unwrap());
    // The flag is not part of the wire form.
    let wire = serde_json::to_value(registry.get(&owner, &id).unwrap()).unwrap();
    assert!(!wire.to_string().contains("cancel"), "{wire}");
    // The handler honours it.
    let cancelled = waiting.cancel().unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    // A cancel request for a finished task is acknowledged and changes nothing.
    let before = registry.get(&owner, &id).unwrap();
    assert_eq!(registry.request_cancel(&owner, &id).unwrap(), before);
    assert_eq!(registry.get(&owner, &id).unwrap(), before);
}

#[test]
fn the_flag_survives_going_back_to_work_and_a_handler_may_still_complete() {
    let (registry, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    registry.request_cancel(&owner, &id).unwrap();
    assert!(handle.cancel_requested().unwrap());
    let waiting = handle
        .require_input(InputRequests::new().with("x", ask("x?")))
        .unwrap();
    assert!(waiting.cancel_requested().unwrap());
    let working = waiting.resume().unwrap();
    assert!(working.cancel_requested().unwrap());
    let done = working.complete(obj(json!({"content": []}))).unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
}

#[test]
fn ttl_and_poll_interval_change_in_place_within_the_policy() {
    let (registry, clock, owner) = setup();
    let (handle, task) = registry
        .create(
            &owner,
            TaskRequest::new(1, "tools/call").with_ttl(Some(10_000)),
        )
        .unwrap();
    let id = task.id().to_string();
    clock.advance(Duration::from_millis(500));
    handle.set_ttl(Some(20_000)).unwrap();
    handle.set_poll_interval(Some(250)).unwrap();
    let now = registry.get(&owner, &id).unwrap();
    assert_eq!(now.ttl(), Some(20_000));
    assert_eq!(now.poll_interval(), Some(250));
    assert_eq!(now.last_updated_at(), registry.now());
    assert_eq!(
        now.created_at(),
        task.created_at(),
        "the TTL still counts from creation"
    );
    // The old expiry no longer applies; the new one does, and purge finds it.
    clock.advance(Duration::from_millis(10_000));
    assert!(registry.get(&owner, &id).is_ok());
    assert_eq!(registry.purge_expired(), 0);
    clock.advance(Duration::from_millis(10_000));
    assert_eq!(registry.purge_expired(), 1);
    drop(handle.detach());
    // Clamped to the policy: above the maximum, and unlimited where not allowed.
    let (_, task) = registry
        .create(&owner, TaskRequest::new(2, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    assert_eq!(
        registry
            .set_ttl(&owner, &id, Some(u64::MAX / 2))
            .unwrap()
            .ttl(),
        Some(600_000)
    );
    assert_eq!(
        registry.set_ttl(&owner, &id, None).unwrap().ttl(),
        Some(600_000)
    );
}

#[test]
fn answers_for_someone_elses_task_are_not_found() {
    let (registry, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let _waiting = handle
        .require_input(InputRequests::new().with("x", ask("x?")))
        .unwrap();
    let bob = Owner::new("bob");
    let err = registry
        .respond(&bob, &id, obj(json!({"x": accept("mine")})))
        .unwrap_err();
    assert!(matches!(err, Error::TaskNotFound { .. }));
    assert!(matches!(
        registry.request_cancel(&bob, &id),
        Err(Error::TaskNotFound { .. })
    ));
    assert_eq!(
        input_keys(&registry.get(&owner, &id).unwrap()),
        ["x"],
        "nothing answered"
    );
}

/// A wait for input that no answer can ever end answers at once instead of blocking until
/// its timeout: no request was issued (by the handle or by id), or the answers were taken.
#[test]
fn a_wait_for_input_with_nothing_outstanding_answers_at_once() {
    let (registry, _, owner) = setup();
    fn nothing_to_wait_for<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) {
        match result {
            Err(error @ Error::NothingToWaitFor { .. }) => assert_eq!(error.code(), -32603),
            other => panic!("{what}: expected NothingToWaitFor, got {other:?}"),
        }
    }
    // A handler that asked for nothing: run on a thread, so that a hang fails the test
    // (within 10 s) instead of blocking it forever.
    let (handle, _) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let waiting = handle.require_input(InputRequests::new()).unwrap();
    let (send, answer) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = send.send(waiting.wait_for_input(None).map(drop));
    });
    let answered = answer
        .recv_timeout(Duration::from_secs(10))
        .expect("a wait with nothing outstanding returns at once");
    nothing_to_wait_for(answered, "the handle asked for nothing");

    // A task moved to input_required by id, as the SDKs' updateTaskStatus does.
    let task = registry
        .insert(&owner, TaskRequest::new(2, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    registry
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    nothing_to_wait_for(
        registry.wait_for_input(&owner, &id, Some(Duration::from_secs(10))),
        "input_required by id",
    );

    // A handler that took its answers and waits again.
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(3, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("a", ask("a?")))
        .unwrap();
    registry
        .respond(&owner, &id, obj(json!({"a": accept("1")})))
        .unwrap();
    let answers = waiting
        .wait_for_input(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(answers.get("a").unwrap()["content"]["answer"], "1");
    nothing_to_wait_for(
        waiting.wait_for_input(Some(Duration::from_secs(10))),
        "answers already taken",
    );
    drop(waiting.resume().unwrap());
}
