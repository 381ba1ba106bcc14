//! The `tasks/*` dispatcher and the `tools/call` augmentation decision: every answer and
//! every error path, against the spec's codes.

use std::thread;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::protocol::{
    Augmentation, CANCELLED_BY_REQUEST, Dispatcher, RELATED_TASK_META_KEY, TaskSupport,
    augmentation,
};
use mcp_tasks::{
    Error, JsonObject, Limits, ManualClock, Outcome, Owner, TaskRegistry, TaskStatus, Timestamp,
    TtlPolicy,
};
use serde_json::{Value, json};

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

fn setup() -> (Dispatcher, ManualClock) {
    let clock = ManualClock::new(Timestamp::parse("2025-11-25T10:30:00Z").unwrap());
    let registry = TaskRegistry::builder()
        .clock(clock.clone())
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(600_000))
        .limits(Limits::none())
        .build()
        .unwrap();
    (Dispatcher::new(registry).with_page_size(2), clock)
}

fn new_task(
    dispatcher: &Dispatcher,
    owner: &Owner,
) -> (
    mcp_tasks::TaskHandle<mcp_tasks::Working, TaskRegistry>,
    String,
) {
    let (handle, created) = dispatcher
        .accept(owner, 1.into(), "tools/call", Some(30_000))
        .unwrap();
    let id = created.task.id().to_string();
    (handle, id)
}

fn params(task_id: &str) -> Value {
    json!({"taskId": task_id})
}

#[test]
fn get_returns_the_task_at_the_top_level_without_related_task_meta() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (_handle, id) = new_task(&dispatcher, &alice);
    let result = dispatcher
        .dispatch(&alice, "tasks/get", Some(&params(&id)))
        .unwrap();
    assert_eq!(result["taskId"], id);
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttl"], 30_000);
    assert_eq!(result["createdAt"], "2025-11-25T10:30:00Z");
    assert!(result.get("_meta").is_none());
    assert!(
        result.get("task").is_none(),
        "tasks/get is flat, not nested"
    );
}

#[test]
fn stray_params_and_related_task_meta_are_ignored_in_favour_of_task_id() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (_a, first) = new_task(&dispatcher, &alice);
    let (_b, second) = new_task(&dispatcher, &alice);
    let liberal = json!({
        "taskId": first,
        "task": {"ttl": 5},
        "_meta": {RELATED_TASK_META_KEY: {"taskId": second}},
        "extra": [1, 2, 3],
    });
    let result = dispatcher
        .dispatch(&alice, "tasks/get", Some(&liberal))
        .unwrap();
    assert_eq!(result["taskId"], first);
}

#[test]
fn malformed_params_are_invalid_params_naming_the_field() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        for (bad, field) in [
            (None, "taskId"),
            (Some(json!({})), "taskId"),
            (Some(json!({"taskId": 7})), "taskId"),
            (Some(json!({"taskId": null})), "taskId"),
            (Some(json!(["taskId"])), "params"),
            (Some(json!("x")), "params"),
        ] {
            let err = dispatcher
                .dispatch(&alice, method, bad.as_ref())
                .unwrap_err();
            assert_eq!(err.code, -32602, "{method} {bad:?}");
            assert!(
                err.message.contains(field),
                "{method} {bad:?}: {}",
                err.message
            );
        }
    }
    let err = dispatcher
        .dispatch(&alice, "tasks/list", Some(&json!({"cursor": 5})))
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("cursor"));
}

#[test]
fn unknown_expired_and_foreign_tasks_answer_the_same_not_found() {
    let (dispatcher, clock) = setup();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let (_handle, id) = new_task(&dispatcher, &alice);
    let as_bob: Vec<_> = ["tasks/get", "tasks/result", "tasks/cancel"]
        .into_iter()
        .map(|method| {
            dispatcher
                .dispatch(&bob, method, Some(&params(&id)))
                .unwrap_err()
        })
        .collect();
    let anonymous = dispatcher
        .dispatch(&Owner::anonymous(), "tasks/get", Some(&params(&id)))
        .unwrap_err();
    clock.advance(Duration::from_millis(30_000));
    let expired = dispatcher
        .dispatch(&alice, "tasks/get", Some(&params(&id)))
        .unwrap_err();
    assert_eq!(expired.code, -32602);
    for err in as_bob.iter().chain([&anonymous]) {
        assert_eq!(
            *err, expired,
            "a foreign task must look exactly like a gone one"
        );
    }
    let garbage = dispatcher
        .dispatch(&alice, "tasks/get", Some(&params("not-a-uuid")))
        .unwrap_err();
    assert_eq!(garbage.code, -32602);
}

#[test]
fn list_pages_follow_cursors_and_need_no_params() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let mut handles = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (handle, id) = new_task(&dispatcher, &alice);
        handles.push(handle);
        ids.push(id);
    }
    let (_bobs, bob_id) = new_task(&dispatcher, &bob);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let page = dispatcher
            .dispatch(&alice, "tasks/list", params.as_ref())
            .unwrap();
        pages += 1;
        for task in page["tasks"].as_array().unwrap() {
            assert!(task.get("_meta").is_none());
            seen.push(task["taskId"].as_str().unwrap().to_owned());
        }
        match page.get("nextCursor") {
            Some(Value::String(next)) => cursor = Some(next.clone()),
            None => break,
            Some(other) => panic!("nextCursor must be a string: {other}"),
        }
    }
    assert_eq!(seen, ids, "every task once, in creation order");
    assert_eq!(pages, 3);
    assert!(!seen.contains(&bob_id));
    // `null` params and an empty object read like no params.
    for empty in [Some(json!(null)), Some(json!({}))] {
        let page = dispatcher
            .dispatch(&alice, "tasks/list", empty.as_ref())
            .unwrap();
        assert_eq!(page["tasks"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn list_cursors_are_bound_to_their_owner() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let bob = Owner::new("bob");
    let _tasks: Vec<_> = (0..3).map(|_| new_task(&dispatcher, &alice)).collect();
    let _bobs: Vec<_> = (0..3).map(|_| new_task(&dispatcher, &bob)).collect();
    let page = dispatcher.dispatch(&alice, "tasks/list", None).unwrap();
    let cursor = page["nextCursor"].clone();
    let err = dispatcher
        .dispatch(&bob, "tasks/list", Some(&json!({"cursor": cursor})))
        .unwrap_err();
    assert_eq!(err.code, -32602);
    for forged in [
        "",
        "0000000000000000ffffffffffffffff",
        "hello",
        &"a".repeat(10_000),
    ] {
        let err = dispatcher
            .dispatch(&alice, "tasks/list", Some(&json!({"cursor": forged})))
            .unwrap_err();
        assert_eq!(err.code, -32602, "{forged:.20}");
        assert!(err.message.len() < 300);
    }
}

#[test]
fn cancel_answers_the_cancelled_task_then_refuses_a_second_time() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (handle, id) = new_task(&dispatcher, &alice);
    let result = dispatcher
        .dispatch(&alice, "tasks/cancel", Some(&params(&id)))
        .unwrap();
    assert_eq!(result["status"], "cancelled");
    assert_eq!(result["statusMessage"], CANCELLED_BY_REQUEST);
    assert!(result.get("_meta").is_none());
    let again = dispatcher
        .dispatch(&alice, "tasks/cancel", Some(&params(&id)))
        .unwrap_err();
    assert_eq!(again.code, -32602);
    assert!(
        again.message.contains("terminal status `cancelled`"),
        "{}",
        again.message
    );
    assert_eq!(again.data.as_ref().unwrap()["status"], "cancelled");
    // The handler's late result is refused and the task stays cancelled.
    let late = handle.complete(object(json!({"content": []}))).unwrap_err();
    assert!(matches!(late, Error::TaskCancelled { .. }));
    let polled = dispatcher
        .dispatch(&alice, "tasks/get", Some(&params(&id)))
        .unwrap();
    assert_eq!(polled["status"], "cancelled");
}

#[test]
fn cancel_of_a_completed_task_is_invalid_params() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (handle, id) = new_task(&dispatcher, &alice);
    let _done = handle.complete(object(json!({"content": []}))).unwrap();
    let err = dispatcher
        .dispatch(&alice, "tasks/cancel", Some(&params(&id)))
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("`completed`"));
}

#[test]
fn result_blocks_until_terminal_and_returns_the_stored_result_with_related_task() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (handle, id) = new_task(&dispatcher, &alice);
    let waiter = {
        let dispatcher = dispatcher.clone();
        let alice = alice.clone();
        let id = id.clone();
        thread::spawn(move || dispatcher.dispatch(&alice, "tasks/result", Some(&params(&id))))
    };
    thread::sleep(Duration::from_millis(50));
    assert!(
        !waiter.is_finished(),
        "tasks/result must block while the task works"
    );
    let stored = object(json!({"content": [{"type": "text", "text": "42"}], "_meta": {"x": 1}}));
    let _done = handle.complete(stored).unwrap();
    let result = waiter.join().unwrap().unwrap();
    assert_eq!(result["content"][0]["text"], "42");
    assert_eq!(result["_meta"]["x"], 1, "the result's own _meta is kept");
    assert_eq!(result["_meta"][RELATED_TASK_META_KEY]["taskId"], id);
}

#[test]
fn result_of_failed_tasks_distinguishes_tool_errors_from_jsonrpc_errors() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (tool_error, tool_id) = new_task(&dispatcher, &alice);
    let tool_result = object(json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
    match tool_error.finish(tool_result).unwrap() {
        mcp_tasks::Finished::Failed(task) => assert_eq!(task.status(), TaskStatus::Failed),
        mcp_tasks::Finished::Completed(_) => panic!("isError must fail the task"),
    }
    let ok = dispatcher
        .dispatch(&alice, "tasks/result", Some(&params(&tool_id)))
        .unwrap();
    assert_eq!(
        ok["isError"], true,
        "a failing result is a successful response"
    );
    assert_eq!(ok["_meta"][RELATED_TASK_META_KEY]["taskId"], tool_id);

    let (rpc_error, rpc_id) = new_task(&dispatcher, &alice);
    let _failed = rpc_error
        .fail(Outcome::error(-32000, "upstream is down"))
        .unwrap();
    let err = dispatcher
        .dispatch(&alice, "tasks/result", Some(&params(&rpc_id)))
        .unwrap_err();
    assert_eq!(err.code, -32000, "exactly the stored error");
    assert_eq!(err.message, "upstream is down");
}

#[test]
fn result_of_a_cancelled_task_is_the_documented_error() {
    let (dispatcher, _) = setup();
    let alice = Owner::new("alice");
    let (_handle, id) = new_task(&dispatcher, &alice);
    let waiter = {
        let dispatcher = dispatcher.clone();
        let alice = alice.clone();
        let id = id.clone();
        thread::spawn(move || dispatcher.dispatch(&alice, "tasks/result", Some(&params(&id))))
    };
    thread::sleep(Duration::from_millis(20));
    dispatcher
        .dispatch(&alice, "tasks/cancel", Some(&params(&id)))
        .unwrap();
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(err.code, -32602);
    assert_eq!(
        err.data.unwrap(),
        json!({"taskId": id, "status": "cancelled"})
    );
}

#[test]
fn result_timeout_is_an_internal_error_and_changes_nothing() {
    let (dispatcher, _) = setup();
    let dispatcher = dispatcher.with_result_timeout(Some(Duration::from_millis(30)));
    let alice = Owner::new("alice");
    let (_handle, id) = new_task(&dispatcher, &alice);
    let err = dispatcher
        .dispatch(&alice, "tasks/result", Some(&params(&id)))
        .unwrap_err();
    assert_eq!(err.code, -32603);
    let polled = dispatcher
        .dispatch(&alice, "tasks/get", Some(&params(&id)))
        .unwrap();
    assert_eq!(polled["status"], "working");
}

#[test]
fn other_methods_are_method_not_found() {
    let (dispatcher, _) = setup();
    for method in ["tasks/update", "tasks/", "tools/call", ""] {
        assert!(!Dispatcher::handles(method));
        let err = dispatcher
            .dispatch(&Owner::anonymous(), method, None)
            .unwrap_err();
        assert_eq!(err.code, -32601, "{method}");
    }
    for method in ["tasks/get", "tasks/list", "tasks/cancel", "tasks/result"] {
        assert!(Dispatcher::handles(method));
    }
}

#[test]
fn accept_respects_limits_and_ttl_policy() {
    let registry = TaskRegistry::builder()
        .ttl_policy(TtlPolicy::new(Some(1_000)).with_max(5_000))
        .limits(Limits {
            per_owner: Some(1),
            total: None,
        })
        .build()
        .unwrap();
    let dispatcher = Dispatcher::new(registry);
    let alice = Owner::new("alice");
    let (_handle, created) = dispatcher
        .accept(&alice, 1.into(), "tools/call", Some(999_999))
        .unwrap();
    assert_eq!(created.task.ttl(), Some(5_000), "clamped to the maximum");
    let err = dispatcher
        .accept(&alice, 2.into(), "tools/call", None)
        .unwrap_err();
    assert_eq!(err.code(), -32603);
    let origin = dispatcher
        .store()
        .origin(&alice, &created.task.id().to_string())
        .unwrap();
    assert_eq!(origin.request_id, 1.into());
    assert_eq!(&*origin.method, "tools/call");
}

#[test]
fn augmentation_follows_the_spec_matrix() {
    let with_task = object(json!({"name": "t", "task": {"ttl": 5000}}));
    let with_empty_task = object(json!({"name": "t", "task": {}}));
    let without = object(json!({"name": "t"}));
    use Augmentation::*;
    // Capability not declared: always normal, the task param ignored.
    for support in [
        TaskSupport::Forbidden,
        TaskSupport::Optional,
        TaskSupport::Required,
    ] {
        assert_eq!(augmentation(support, false, &with_task), Normal);
        assert_eq!(augmentation(support, false, &without), Normal);
    }
    assert_eq!(
        augmentation(TaskSupport::Optional, true, &with_task),
        Task { ttl: Some(5000) }
    );
    assert_eq!(
        augmentation(TaskSupport::Optional, true, &with_empty_task),
        Task { ttl: None }
    );
    assert_eq!(augmentation(TaskSupport::Optional, true, &without), Normal);
    assert_eq!(
        augmentation(TaskSupport::Required, true, &with_task),
        Task { ttl: Some(5000) }
    );
    assert_eq!(augmentation(TaskSupport::Forbidden, true, &without), Normal);
    match augmentation(TaskSupport::Required, true, &without) {
        Refuse(err) => {
            assert_eq!(err.code(), -32601);
            assert!(err.to_string().contains("must be called as a task"));
        }
        other => panic!("{other:?}"),
    }
    match augmentation(TaskSupport::Forbidden, true, &with_task) {
        Refuse(err) => assert_eq!(err.code(), -32601),
        other => panic!("{other:?}"),
    }
    for bad in [
        json!({"ttl": -1}),
        json!({"ttl": 1.5}),
        json!({"ttl": "60"}),
        json!(true),
    ] {
        let params = object(json!({"name": "t", "task": bad}));
        match augmentation(TaskSupport::Optional, true, &params) {
            Refuse(err) => assert_eq!(err.code(), -32602, "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}
