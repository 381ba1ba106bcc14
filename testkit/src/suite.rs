//! The behaviour suite: one generic function per behaviour, over any [`Backend`].
//!
//! Run them all with [`store_suite!`](crate::store_suite), or call one from a test of your
//! own. Every blocking call is bounded (a wait timeout, or a join with a deadline), so a
//! bug fails a test instead of hanging the suite.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    AnyTask, Error, InputRequests, LimitScope, Limits, Outcome, Owner, RequestId, StatusChange,
    TaskOrigin, TaskRequest, TaskStatus, TaskStore, Timestamp, TtlPolicy,
};
use serde_json::{Value, json};

use crate::support::{
    BOUND, Seen, WAKE, accept, alice, ask, assert_not_found, blocked_waiters, bob, error_result,
    eventually, ids, input_keys, join_within, list_all, ms, obj, recorder, req, spawn_at_barrier,
    spawn_wait, tool_outcome, tool_result,
};
use crate::{Backend, Config};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Creates a task for `owner` by id; returns its id.
fn new_task<S: TaskStore>(store: &S, owner: &Owner) -> String {
    store
        .insert(owner, req(1))
        .expect("insert a task")
        .id()
        .to_string()
}

/// A task of `owner` in `status`, moved there by id; returns its id.
fn task_in<S: TaskStore>(store: &S, owner: &Owner, status: TaskStatus) -> String {
    let id = new_task(store, owner);
    match status {
        TaskStatus::Working => {}
        TaskStatus::InputRequired => {
            store
                .update_status(owner, &id, status, Some("need input".into()))
                .unwrap();
        }
        TaskStatus::Completed => {
            store
                .store_result(owner, &id, status, tool_outcome("ok"))
                .unwrap();
        }
        TaskStatus::Failed => {
            store
                .store_result(owner, &id, status, Outcome::error(-32000, "broken"))
                .unwrap();
        }
        TaskStatus::Cancelled => {
            let _ = store.cancel(owner, &id, None).unwrap();
        }
    }
    assert_eq!(store.get(owner, &id).unwrap().status(), status);
    id
}

#[track_caller]
fn assert_invalid_params<T: Debug>(result: Result<T, Error>, what: &str) {
    match result {
        Err(err @ Error::InvalidParams { .. }) => assert_eq!(err.code(), -32602, "{what}"),
        other => panic!("{what}: expected InvalidParams, got {other:?}"),
    }
}

#[track_caller]
fn assert_cancelled<T: Debug>(result: Result<T, Error>, id: &str, what: &str) {
    match result {
        Err(err @ Error::TaskCancelled { .. }) => {
            assert_eq!(err.code(), -32602, "{what}");
            assert_eq!(err.to_jsonrpc().data.unwrap()["taskId"], id, "{what}");
        }
        other => panic!("{what}: expected TaskCancelled, got {other:?}"),
    }
}

#[track_caller]
fn assert_illegal<T: Debug>(result: Result<T, Error>, from: TaskStatus, to: TaskStatus) {
    match result {
        Err(
            err @ Error::IllegalTransition {
                from: was,
                to: wanted,
                ..
            },
        ) => {
            assert_eq!((was, wanted), (from, to));
            assert_eq!(err.code(), -32602);
        }
        other => panic!("expected IllegalTransition {from} → {to}, got {other:?}"),
    }
}

/// `AlreadyTerminal`, holding the task as it is stored; returns that task.
#[track_caller]
fn assert_already_terminal<T: Debug>(result: Result<T, Error>, stored: &AnyTask) -> AnyTask {
    match result {
        Err(err @ Error::AlreadyTerminal { .. }) => {
            assert_eq!(err.code(), -32602);
            let data = err.to_jsonrpc().data.expect("data with the task");
            assert_eq!(data["taskId"], stored.id().to_string());
            assert_eq!(data["status"], json!(stored.status()));
            let message = err.to_jsonrpc().message;
            assert!(message.contains(stored.status().as_str()), "{message}");
            let Error::AlreadyTerminal { task } = err else {
                unreachable!()
            };
            assert_eq!(*task, *stored, "the error holds the task as stored");
            *task
        }
        other => panic!("expected AlreadyTerminal, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Creating and reading
// ---------------------------------------------------------------------------------------

/// Checks: create and get round trip.
pub fn create_and_get_round_trip<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let before = Timestamp::now().unix_millis();
    let task = store.insert(&owner, req(7)).unwrap();
    let after = Timestamp::now().unix_millis();
    let id = task.id().to_string();

    assert_eq!(task.status(), TaskStatus::Working);
    assert_eq!(task.status_message(), None);
    assert_eq!(task.created_at(), task.last_updated_at());
    // The store's clock (the Redis server's) is this machine's: within a second of ours.
    let created = task.created_at().unix_millis();
    assert!(
        (before - 1_000..=after + 1_000).contains(&created),
        "createdAt {created} is not near the time of the call ({before}..{after})"
    );
    let uuid = task.id().as_uuid().expect("the id is a UUID");
    assert_eq!(uuid.get_version_num(), 4, "ids are random UUID v4: {id}");

    let stored = store.get(&owner, &id).unwrap();
    assert_eq!(
        stored,
        task.clone().into_any(),
        "get returns the task as created"
    );
    assert_eq!(
        serde_json::to_value(&stored).unwrap(),
        serde_json::to_value(task.clone().into_any()).unwrap(),
        "and the same wire form"
    );
    match store.result(&owner, &id) {
        Err(err @ Error::NotFinished { .. }) => {
            assert_eq!(err.code(), -32602);
            assert!(
                matches!(err, Error::NotFinished { status: TaskStatus::Working, ref task_id } if *task_id == id)
            );
        }
        other => panic!("the result of a working task: {other:?}"),
    }

    // Fresh ids in the canonical form (random UUIDs, lowercase and hyphenated), by id or
    // through a handle, and each task reads back as itself.
    let mut seen = HashSet::from([id.clone()]);
    for n in 0..500 {
        let other = if n % 2 == 0 {
            store.insert(&owner, req(n)).unwrap()
        } else {
            let (handle, task) = store.create(&owner, req(n)).unwrap();
            assert_eq!(handle.id(), task.id());
            let _ = handle.detach();
            task
        };
        let text = other.id().to_string();
        let uuid = uuid::Uuid::parse_str(&text).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 4, "{text}");
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{text}");
        assert_eq!(uuid.hyphenated().to_string(), text, "the canonical form");
        assert!(seen.insert(text), "a repeated id");
        if n < 5 {
            assert_eq!(
                store.get(&owner, &other.id().to_string()).unwrap(),
                other.into_any()
            );
        }
    }
    // Unknown ids, well-formed or not, are not found; ids are case-sensitive.
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_not_found(store.get(&owner, &unknown), &unknown, "an unknown uuid");
    assert_not_found(store.get(&owner, "not-a-task"), "not-a-task", "garbage");
    assert_not_found(store.get(&owner, ""), "", "an empty id");
    let upper = id.to_uppercase();
    assert_not_found(store.get(&owner, &upper), &upper, "the id in upper case");
    assert_eq!(
        store.get(&owner, &id).unwrap(),
        stored,
        "nothing changed it"
    );
}

/// Checks: ttl and poll interval come from the policy.
pub fn ttl_and_poll_interval_come_from_the_policy<B: Backend>(backend: &B) {
    let store = backend.store(Config {
        ttl: TtlPolicy::new(Some(60_000)).with_max(600_000),
        poll_interval: Some(500),
        ..Config::default()
    });
    assert_eq!(
        store.ttl_policy(),
        TtlPolicy::new(Some(60_000)).with_max(600_000)
    );
    let owner = alice();
    let cases = [
        (None, None, Some(60_000), Some(500)),
        (Some(120_000), Some(42), Some(120_000), Some(42)),
        (Some(1_000_000_000), None, Some(600_000), Some(500)),
        (Some(u64::MAX), None, Some(600_000), Some(500)),
        (Some(5), Some(1), Some(1_000), Some(1)),
    ];
    for (ttl, poll, want_ttl, want_poll) in cases {
        let request = req(1).with_ttl(ttl).with_poll_interval(poll);
        let task = store.insert(&owner, request).unwrap();
        assert_eq!(task.ttl(), want_ttl, "requested ttl {ttl:?}");
        assert_eq!(task.poll_interval(), want_poll, "requested poll {poll:?}");
        let stored = store.get(&owner, &task.id().to_string()).unwrap();
        assert_eq!(stored.ttl(), want_ttl, "stored ttl for {ttl:?}");
        assert_eq!(stored.poll_interval(), want_poll);
        let wire = serde_json::to_value(&stored).unwrap();
        assert_eq!(wire["ttl"], json!(want_ttl));
        assert_eq!(
            stored.expires_at(),
            want_ttl.map(|ttl| stored.created_at().plus_millis(ttl))
        );
        // Listed, and once finished, with the same effective value.
        let listed = store.list(&owner, None, 100).unwrap();
        let entry = listed.tasks.iter().find(|t| t.id() == task.id());
        assert_eq!(entry.expect("listed").ttl(), want_ttl, "listed ttl");
        let done = store
            .store_result(
                &owner,
                &task.id().to_string(),
                TaskStatus::Completed,
                tool_outcome("x"),
            )
            .unwrap();
        assert_eq!(done.ttl(), want_ttl, "a finished task keeps its ttl");
    }
    // No default poll interval: none unless asked.
    let plain = backend.default_store();
    let task = plain.insert(&owner, req(1)).unwrap();
    assert_eq!(task.poll_interval(), None);
    let wire = serde_json::to_value(plain.get(&owner, &task.id().to_string()).unwrap()).unwrap();
    assert!(wire.get("pollInterval").is_none(), "{wire}");
    // Unlimited retention where the policy allows it.
    let open = backend.store(Config {
        ttl: TtlPolicy::new(None).with_unlimited_allowed(true),
        ..Config::default()
    });
    let forever = open.insert(&owner, req(1)).unwrap();
    assert_eq!(forever.ttl(), None);
    let stored = open.get(&owner, &forever.id().to_string()).unwrap();
    assert_eq!(stored.ttl(), None);
    assert_eq!(serde_json::to_value(&stored).unwrap()["ttl"], Value::Null);
}

/// Checks: other owners see the error of an unknown id.
pub fn other_owners_see_the_error_of_an_unknown_id<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, created) = store.create(&owner, req(1)).unwrap();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("ok?")))
        .unwrap();
    let id = created.id().to_string();
    let before = store.get(&owner, &id).unwrap();

    // Each stranger's every by-id operation is refused as for an unknown id, and changes
    // nothing; their lists do not show it. Checked while the task waits for input and once
    // it has a result.
    let refused_to_strangers = |id: &str| {
        for stranger in [
            bob(),
            Owner::anonymous(),
            Owner::new(""),
            Owner::new("alice "),
        ] {
            let who = format!("{stranger:?}");
            let started = Instant::now();
            assert_not_found(store.get(&stranger, id), id, &format!("get by {who}"));
            assert_not_found(store.origin(&stranger, id), id, "origin");
            assert_not_found(store.result(&stranger, id), id, "result");
            assert_not_found(store.cancel(&stranger, id, None), id, "cancel");
            assert_not_found(
                store.update_status(&stranger, id, TaskStatus::Working, None),
                id,
                "update_status",
            );
            assert_not_found(
                store.store_result(&stranger, id, TaskStatus::Completed, tool_outcome("stolen")),
                id,
                "store_result",
            );
            assert_not_found(
                store.respond(&stranger, id, obj(json!({"confirm": accept("x")}))),
                id,
                "respond",
            );
            assert_not_found(store.request_cancel(&stranger, id), id, "request_cancel");
            assert_not_found(store.set_ttl(&stranger, id, Some(5_000)), id, "set_ttl");
            assert_not_found(
                store.set_poll_interval(&stranger, id, Some(1)),
                id,
                "set_poll_interval",
            );
            assert_not_found(store.remove(&stranger, id), id, "remove");
            // Not a timeout: the task does not exist for them.
            assert_not_found(store.wait(&stranger, id, Some(BOUND)), id, "wait");
            assert_not_found(
                store.wait_for_input(&stranger, id, Some(BOUND)),
                id,
                "wait_for_input",
            );
            assert!(
                started.elapsed() < WAKE,
                "refusals are immediate, not timeouts"
            );
            let page = store.list(&stranger, None, 100).unwrap();
            assert!(
                !ids(&page.tasks).iter().any(|listed| listed == id),
                "{who} lists alice's task: {page:?}"
            );
        }
    };
    refused_to_strangers(&id);
    // Alice's task is exactly as it was: nothing leaked through.
    assert_eq!(store.get(&owner, &id).unwrap(), before);
    assert_eq!(
        ids(&store.list(&owner, None, 100).unwrap().tasks),
        std::slice::from_ref(&id)
    );
    // Equal keys are the same owner, however the value was built.
    assert_eq!(
        store.get(&Owner::from(String::from("alice")), &id).unwrap(),
        before
    );

    // Once the task has its result, strangers cannot tell that it exists either.
    let done = waiting
        .resume()
        .unwrap()
        .complete(tool_result("done"))
        .unwrap()
        .into_any();
    refused_to_strangers(&id);
    assert_eq!(store.get(&owner, &id).unwrap(), done);

    // Anonymous tasks are visible to anonymous callers only.
    let anonymous = new_task(&store, &Owner::anonymous());
    assert_eq!(
        store.get(&Owner::anonymous(), &anonymous).unwrap().status(),
        TaskStatus::Working
    );
    assert_not_found(store.get(&owner, &anonymous), &anonymous, "alice");
    assert_not_found(store.get(&Owner::new(""), &anonymous), &anonymous, "\"\"");
    assert_eq!(
        ids(&store.list(&Owner::anonymous(), None, 100).unwrap().tasks),
        [anonymous]
    );
}

// ---------------------------------------------------------------------------------------
// Transitions by id
// ---------------------------------------------------------------------------------------

/// Every pair of statuses: `update_status` moves a live task to `working`,
/// `input_required` or `cancelled` (the same status with a new message included) and
/// refuses the rest with the error of its reason, changing nothing.
pub fn update_status_follows_the_transition_table<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    for from in TaskStatus::ALL {
        for to in TaskStatus::ALL {
            let id = task_in(&store, &owner, from);
            let before = store.get(&owner, &id).unwrap();
            let message = format!("{from} -> {to}");
            let outcome = store.update_status(&owner, &id, to, Some(message.clone()));
            let after = store.get(&owner, &id).unwrap();
            match outcome {
                Ok(task) => {
                    assert!(
                        !from.is_terminal()
                            && !matches!(to, TaskStatus::Completed | TaskStatus::Failed),
                        "{message} must be refused"
                    );
                    assert!(
                        from == to || from.can_transition_to(to),
                        "{message} is not in the table"
                    );
                    assert_eq!(task, after, "{message}: returns the task as stored");
                    assert_eq!(after.status(), to);
                    assert_eq!(after.status_message(), Some(message.as_str()));
                    assert_eq!(after.outcome(), None);
                    assert!(after.last_updated_at() >= before.last_updated_at());
                }
                // A terminal status needs a result: refused before the store looks.
                Err(err) if matches!(to, TaskStatus::Completed | TaskStatus::Failed) => {
                    assert_invalid_params(Err::<(), _>(err), &message);
                    assert_eq!(after, before, "{message}: a refusal changes nothing");
                }
                Err(err) => {
                    assert_eq!(after, before, "{message}: a refusal changes nothing");
                    match from {
                        TaskStatus::Cancelled => assert_cancelled(Err::<(), _>(err), &id, &message),
                        TaskStatus::Completed | TaskStatus::Failed => {
                            assert_illegal(Err::<(), _>(err), from, to);
                        }
                        _ => panic!("{message} must be allowed: {err:?}"),
                    }
                }
            }
        }
    }
}

/// Checks: the first terminal state wins.
pub fn the_first_terminal_state_wins<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();

    // Malformed results are refused before the store looks at the task.
    let id = new_task(&store, &owner);
    let before = store.get(&owner, &id).unwrap();
    let malformed = [
        (TaskStatus::Completed, Outcome::error(-32000, "boom")),
        (TaskStatus::Completed, Outcome::Result(error_result("bad"))),
        (TaskStatus::Failed, tool_outcome("fine")),
        (TaskStatus::Working, tool_outcome("x")),
        (TaskStatus::InputRequired, tool_outcome("x")),
        (TaskStatus::Cancelled, tool_outcome("x")),
    ];
    for (status, outcome) in malformed {
        assert_invalid_params(
            store.store_result(&owner, &id, status, outcome.clone()),
            &format!("{status} with {outcome:?}"),
        );
    }
    // The refusal of a `failed` result says what it lacks.
    let lacking = store
        .store_result(&owner, &id, TaskStatus::Failed, tool_outcome("fine"))
        .unwrap_err();
    assert!(lacking.to_string().contains("isError"), "{lacking}");
    assert_eq!(store.get(&owner, &id).unwrap(), before, "nothing stored");

    // Completed first: every later terminal move is refused, the result stays.
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("42"))
        .unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
    assert_eq!(done.outcome(), Some(&tool_outcome("42")));
    assert_eq!(store.get(&owner, &id).unwrap(), done);
    assert_eq!(store.result(&owner, &id).unwrap(), done);
    assert_illegal(
        store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("43")),
        TaskStatus::Completed,
        TaskStatus::Completed,
    );
    assert_illegal(
        store.store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32000, "late"),
        ),
        TaskStatus::Completed,
        TaskStatus::Failed,
    );
    assert_illegal(
        store.update_status(&owner, &id, TaskStatus::Working, None),
        TaskStatus::Completed,
        TaskStatus::Working,
    );
    assert_already_terminal(store.cancel(&owner, &id, Some("too late".into())), &done);
    assert_illegal(
        store.update_status(&owner, &id, TaskStatus::Cancelled, None),
        TaskStatus::Completed,
        TaskStatus::Cancelled,
    );
    assert_eq!(store.get(&owner, &id).unwrap(), done, "the result stays");

    // Failed first: the error outcome stays.
    let id = new_task(&store, &owner);
    let failed = store
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32000, "disk full"),
        )
        .unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    assert_eq!(failed.outcome(), Some(&Outcome::error(-32000, "disk full")));
    assert_already_terminal(store.cancel(&owner, &id, None), &failed);
    assert_illegal(
        store.store_result(
            &owner,
            &id,
            TaskStatus::Completed,
            tool_outcome("recovered"),
        ),
        TaskStatus::Failed,
        TaskStatus::Completed,
    );
    assert_eq!(store.result(&owner, &id).unwrap(), failed);

    // A failing tool result (`isError`) is stored as `failed`, as it is.
    let id = new_task(&store, &owner);
    let failed = store
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::Result(error_result("no such file")),
        )
        .unwrap();
    assert_eq!(
        store.get(&owner, &id).unwrap().outcome(),
        Some(&Outcome::Result(error_result("no such file")))
    );
    assert_eq!(store.get(&owner, &id).unwrap(), failed);

    // A result stored by id first: the handle's own is refused.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let first = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("first"))
        .unwrap();
    assert_illegal(
        handle.complete(tool_result("second")),
        TaskStatus::Completed,
        TaskStatus::Completed,
    );
    assert_eq!(store.result(&owner, &id).unwrap(), first);

    // The handle's result first: nothing by id replaces or moves it.
    let (handle, task) = store.create(&owner, req(3)).unwrap();
    let id = task.id().to_string();
    let done = handle.complete(tool_result("mine")).unwrap().into_any();
    assert_illegal(
        store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("x")),
        TaskStatus::Completed,
        TaskStatus::Completed,
    );
    assert_already_terminal(store.cancel(&owner, &id, None), &done);
    assert_illegal(
        store.update_status(&owner, &id, TaskStatus::Working, None),
        TaskStatus::Completed,
        TaskStatus::Working,
    );
    assert_eq!(store.result(&owner, &id).unwrap(), done);
}

/// Checks: a cancelled task never gains a result.
pub fn a_cancelled_task_never_gains_a_result<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let id = new_task(&store, &owner);
    let cancelled = store
        .cancel(&owner, &id, Some("the user gave up".into()))
        .unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    assert_eq!(cancelled.status_message(), Some("the user gave up"));
    let stored = store.get(&owner, &id).unwrap();
    assert_eq!(stored, cancelled.clone().into_any());

    assert_cancelled(
        store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("late")),
        &id,
        "a late result",
    );
    assert_cancelled(
        store.store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32000, "late"),
        ),
        &id,
        "a late failure",
    );
    let again = assert_already_terminal(store.cancel(&owner, &id, None), &stored);
    assert_eq!(again.status(), TaskStatus::Cancelled);
    let now = store.get(&owner, &id).unwrap();
    assert_eq!(now, stored, "still cancelled, without an outcome");
    assert_eq!(now.outcome(), None);
    assert_eq!(
        store.result(&owner, &id).unwrap(),
        stored,
        "the result is the task"
    );

    // A task waiting for input is cancelled by id the same way.
    let id = task_in(&store, &owner, TaskStatus::InputRequired);
    let cancelled = store.cancel(&owner, &id, Some("why".into())).unwrap();
    assert_eq!(cancelled.status_message(), Some("why"));
    assert_eq!(store.get(&owner, &id).unwrap(), cancelled.into_any());

    // The same through a typed handle: the handler's late result is refused.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let _ = store.cancel(&owner, &id, None).unwrap();
    assert_eq!(handle.current_status().unwrap(), TaskStatus::Cancelled);
    assert_cancelled(
        handle.complete(tool_result("late")),
        &id,
        "a handle's late result",
    );
    let now = store.get(&owner, &id).unwrap();
    assert_eq!(now.status(), TaskStatus::Cancelled);
    assert_eq!(now.outcome(), None);

    // Cancelled while the handler waits for input: its resume, fail and cancel are refused.
    for attempt in ["resume", "fail", "cancel"] {
        let (handle, task) = store.create(&owner, req(3)).unwrap();
        let id = task.id().to_string();
        let waiting = handle.require_input(InputRequests::new()).unwrap();
        let cancelled = store.cancel(&owner, &id, None).unwrap().into_any();
        let refused = match attempt {
            "resume" => waiting.resume().map(drop),
            "fail" => waiting.fail(Outcome::error(-1, "x")).map(drop),
            _ => waiting.cancel().map(drop),
        };
        assert_cancelled(refused, &id, attempt);
        assert_eq!(store.get(&owner, &id).unwrap(), cancelled, "{attempt}");
    }

    // Nor can it add a status message; dropping the handle then does not fail the task.
    let (handle, task) = store.create(&owner, req(4)).unwrap();
    let id = task.id().to_string();
    let cancelled = store.cancel(&owner, &id, None).unwrap().into_any();
    assert_cancelled(
        handle.set_status_message(Some("still going".into())),
        &id,
        "a late status message",
    );
    drop(handle);
    let now = store.get(&owner, &id).unwrap();
    assert_eq!(now, cancelled, "dropping the handle changed nothing");
    assert_eq!(now.status_message(), None);
}

// ---------------------------------------------------------------------------------------
// Typed handles
// ---------------------------------------------------------------------------------------

/// Checks: a handler gets input answered from another thread.
pub fn a_handler_gets_input_answered_from_another_thread<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, created) = store.create(&owner, req(3)).unwrap();
    let id = created.id().to_string();
    assert_eq!(handle.id(), created.id());
    assert_eq!(handle.owner(), &owner);
    assert_eq!(handle.current_status().unwrap(), TaskStatus::Working);

    let question = InputRequests::new().with("confirm", ask("Proceed?"));
    let waiting = handle
        .with_message("waiting for confirmation")
        .require_input(question.clone())
        .unwrap();
    let now = store.get(&owner, &id).unwrap();
    assert_eq!(now.status(), TaskStatus::InputRequired);
    assert_eq!(now.status_message(), Some("waiting for confirmation"));
    assert_eq!(now.input_requests(), Some(&question));
    assert!(matches!(
        store.result(&owner, &id),
        Err(Error::NotFinished {
            status: TaskStatus::InputRequired,
            ..
        })
    ));

    let handler = thread::spawn(move || -> Result<_, Error> {
        let answers = waiting.wait_for_input(Some(BOUND))?;
        let working = waiting.resume()?;
        let answer = answers.get("confirm").expect("the answer")["content"]["answer"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        let done = working.complete(tool_result(&answer))?;
        Ok((answers, done))
    });
    thread::sleep(ms(50));
    assert!(!handler.is_finished(), "the handler waits for its answer");
    assert_eq!(
        store.get(&owner, &id).unwrap().status(),
        TaskStatus::InputRequired
    );

    // An answer to an unknown key changes nothing and does not wake the handler.
    let unchanged = store
        .respond(&owner, &id, obj(json!({"other": accept("no")})))
        .unwrap();
    assert_eq!(input_keys(&unchanged), ["confirm"]);
    thread::sleep(ms(30));
    assert!(!handler.is_finished(), "an unknown key is no answer");

    let responder = {
        let store = store.clone();
        let owner = owner.clone();
        let id = id.clone();
        thread::spawn(move || store.respond(&owner, &id, obj(json!({"confirm": accept("yes")}))))
    };
    let responded = join_within(responder, WAKE, "respond").unwrap();
    assert_eq!(responded.id().to_string(), id);

    let (answers, done) = join_within(handler, WAKE, "the handler").unwrap();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers.get("confirm").unwrap(), &obj(accept("yes")));
    assert_eq!(done.status(), TaskStatus::Completed);
    let finished = store.wait(&owner, &id, Some(BOUND)).unwrap();
    assert_eq!(finished.status(), TaskStatus::Completed);
    assert_eq!(finished.outcome(), Some(&tool_outcome("yes")));
    assert_eq!(finished, done.into_any());
}

/// Checks: a dropped unfinished handle fails its task.
pub fn a_dropped_unfinished_handle_fails_its_task<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let dropped_with = |id: &str| {
        let task = store.get(&owner, id).unwrap();
        assert_eq!(task.status(), TaskStatus::Failed, "{task:?}");
        let error = task
            .outcome()
            .and_then(Outcome::as_error)
            .expect("a JSON-RPC error outcome");
        assert_eq!(error.code, INTERNAL_ERROR);
        assert_eq!(INTERNAL_ERROR, -32603);
        assert!(task.status_message().is_some(), "the failure says why");
        task
    };

    let (handle, task) = store.create(&owner, req(1)).unwrap();
    drop(handle);
    dropped_with(&task.id().to_string());

    // Waiters on the task wake with the failure.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("x", ask("x?")))
        .unwrap();
    let waiters = blocked_waiters(&store, &owner, &id, 4);
    drop(waiting);
    let failed = dropped_with(&id);
    for waiter in waiters {
        assert_eq!(join_within(waiter, WAKE, "a waiter").unwrap(), failed);
    }

    // A handler that panics drops its handle while unwinding.
    let (handle, task) = store.create(&owner, req(3)).unwrap();
    let panicked = thread::spawn(move || {
        let _handle = handle;
        panic!("a handler bug (expected by the test)");
    })
    .join();
    assert!(panicked.is_err());
    dropped_with(&task.id().to_string());

    // A finished handle leaves its result alone; a detached one leaves the task working.
    let (handle, task) = store.create(&owner, req(4)).unwrap();
    let done = handle.complete(tool_result("ok")).unwrap();
    assert_eq!(
        store.get(&owner, &task.id().to_string()).unwrap(),
        done.into_any()
    );
    let (handle, task) = store.create(&owner, req(5)).unwrap();
    assert_eq!(handle.detach(), *task.id());
    assert_eq!(
        store.get(&owner, &task.id().to_string()).unwrap(),
        task.into_any()
    );
    // Detached while waiting for input, the task is left to the by-id API.
    let (handle, task) = store.create(&owner, req(6)).unwrap();
    let id = task.id().to_string();
    let waiting = handle.require_input(InputRequests::new()).unwrap();
    assert_eq!(waiting.detach().to_string(), id);
    assert_eq!(
        store.get(&owner, &id).unwrap().status(),
        TaskStatus::InputRequired
    );
    store
        .update_status(&owner, &id, TaskStatus::Working, None)
        .unwrap();
    store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("by id"))
        .unwrap();
    assert_eq!(
        store.result(&owner, &id).unwrap().outcome(),
        Some(&tool_outcome("by id"))
    );
}

/// Checks: a handle of a removed task changes nothing.
pub fn a_handle_of_a_removed_task_changes_nothing<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    store.remove(&owner, &id).unwrap();
    assert_not_found(handle.current_status(), &id, "the status");
    assert_not_found(handle.cancel_requested(), &id, "the cancel flag");
    assert_not_found(handle.snapshot(), &id, "a snapshot");
    assert_not_found(handle.complete(tool_result("x")), &id, "a late result");
    assert!(list_all(&store, &owner, 10).is_empty(), "nothing came back");

    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    store.remove(&owner, &id).unwrap();
    drop(handle);
    assert_not_found(store.get(&owner, &id), &id, "after the drop");
    assert!(
        list_all(&store, &owner, 10).is_empty(),
        "dropping it does not bring it back"
    );
}

/// Checks: handle fail finish and cancel store their outcome.
pub fn handle_fail_finish_and_cancel_store_their_outcome<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let failed = handle.fail(Outcome::error(-32000, "disk full")).unwrap();
    assert_eq!(failed.status_message(), Some("disk full"));
    assert_eq!(
        store
            .result(&owner, &task.id().to_string())
            .unwrap()
            .outcome(),
        Some(&Outcome::error(-32000, "disk full"))
    );

    // `finish` fails the task when the tool result reports an error, completes it otherwise.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    match handle.finish(error_result("no such file")).unwrap() {
        mcp_tasks::Finished::Failed(task) => {
            assert_eq!(
                task.outcome(),
                Some(&Outcome::Result(error_result("no such file")))
            );
        }
        other => panic!("isError must fail the task: {other:?}"),
    }
    let stored = store.result(&owner, &task.id().to_string()).unwrap();
    assert_eq!(stored.status(), TaskStatus::Failed);
    assert_eq!(
        stored.outcome(),
        Some(&Outcome::Result(error_result("no such file")))
    );
    let (handle, task) = store.create(&owner, req(3)).unwrap();
    match handle.finish(tool_result("fine")).unwrap() {
        mcp_tasks::Finished::Completed(done) => {
            assert_eq!(done.result(), Some(&tool_result("fine")));
        }
        other => panic!("a plain result completes the task: {other:?}"),
    }
    assert_eq!(
        store
            .result(&owner, &task.id().to_string())
            .unwrap()
            .status(),
        TaskStatus::Completed
    );

    let (handle, task) = store.create(&owner, req(4)).unwrap();
    let cancelled = handle.with_message("handler gave up").cancel().unwrap();
    assert_eq!(cancelled.status_message(), Some("handler gave up"));
    let stored = store.result(&owner, &task.id().to_string()).unwrap();
    assert_eq!(stored, cancelled.into_any());
    assert_eq!(stored.outcome(), None);
}

/// Another writer moved the task to `input_required` behind the handle's back: the handle
/// can still finish it, and a refused non-finishing move fails the task rather than
/// leaving it without a writer.
pub fn a_handle_copes_with_another_writer<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    store
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    let done = handle.complete(tool_result("done anyway")).unwrap();
    assert_eq!(done.result(), Some(&tool_result("done anyway")));
    assert_eq!(store.get(&owner, &id).unwrap(), done.into_any());

    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    store
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    assert_illegal(
        handle.require_input(InputRequests::new()),
        TaskStatus::InputRequired,
        TaskStatus::InputRequired,
    );
    // Nobody holds a writer any more: the task must not wait for one forever.
    let task = store.wait(&owner, &id, Some(WAKE)).unwrap();
    assert_eq!(task.status(), TaskStatus::Failed);
    match task.outcome() {
        Some(Outcome::Error(error)) => assert_eq!(error.code, INTERNAL_ERROR),
        other => panic!("expected the abandonment error, got {other:?}"),
    }
}

/// Checks: request cancel wakes the handler waiting for input.
pub fn request_cancel_wakes_the_handler_waiting_for_input<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    assert!(!handle.cancel_requested().unwrap());
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("sure?")))
        .unwrap();
    let waiter = thread::spawn(move || {
        let answers = waiting.wait_for_input(Some(BOUND));
        (waiting, answers)
    });
    thread::sleep(ms(50));
    assert!(!waiter.is_finished(), "the handler waits");
    let acknowledged = store.request_cancel(&owner, &id).unwrap();
    assert_eq!(
        acknowledged.status(),
        TaskStatus::InputRequired,
        "cooperative: the status does not change"
    );
    assert!(acknowledged.cancel_requested());
    let (waiting, answers) = join_within(waiter, WAKE, "wait_for_input");
    match answers {
        Err(err @ Error::CancelRequested { .. }) => {
            assert_eq!(err.code(), -32603);
            assert!(matches!(err, Error::CancelRequested { ref task_id } if *task_id == id));
        }
        other => panic!("expected CancelRequested, got {other:?}"),
    }
    let stored = store.get(&owner, &id).unwrap();
    assert_eq!(stored.status(), TaskStatus::InputRequired);
    assert!(stored.cancel_requested());
    assert!(waiting.cancel_requested().unwrap());
    let cancelled = waiting.cancel().unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    // A finished task acknowledges a cancel request unchanged.
    let before = store.get(&owner, &id).unwrap();
    assert_eq!(store.request_cancel(&owner, &id).unwrap(), before);
    assert_eq!(store.get(&owner, &id).unwrap(), before);

    // On a working task the flag is set; the handler sees it; the status stays.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let flagged = store
        .request_cancel(&owner, &task.id().to_string())
        .unwrap();
    assert_eq!(flagged.status(), TaskStatus::Working);
    assert!(handle.cancel_requested().unwrap());
    let done = handle.complete(tool_result("finished anyway")).unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
}

// ---------------------------------------------------------------------------------------
// Blocking waits
// ---------------------------------------------------------------------------------------

/// Checks: wait blocks until another thread finishes the task.
pub fn wait_blocks_until_another_thread_finishes_the_task<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let id = new_task(&store, &owner);
    let waiter = spawn_wait(&store, &owner, &id);
    thread::sleep(ms(100));
    assert!(!waiter.is_finished(), "wait blocks while the task works");
    // Changes that do not finish the task do not end the wait.
    store
        .update_status(&owner, &id, TaskStatus::InputRequired, Some("?".into()))
        .unwrap();
    store
        .update_status(&owner, &id, TaskStatus::Working, None)
        .unwrap();
    thread::sleep(ms(50));
    assert!(
        !waiter.is_finished(),
        "a non-terminal change ended the wait"
    );
    let finisher = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        thread::spawn(move || {
            store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("done"))
        })
    };
    let finished = join_within(finisher, WAKE, "store_result").unwrap();
    let waited = join_within(waiter, WAKE, "the waiter").unwrap();
    assert_eq!(waited.status(), TaskStatus::Completed);
    assert_eq!(waited.outcome(), Some(&tool_outcome("done")));
    assert_eq!(waited, finished);

    // A finished task is returned at once.
    let started = Instant::now();
    assert_eq!(store.wait(&owner, &id, Some(BOUND)).unwrap(), finished);
    assert_eq!(store.wait(&owner, &id, None).unwrap(), finished);
    assert!(started.elapsed() < WAKE);

    // Several waiters on one task all wake.
    let id = new_task(&store, &owner);
    let waiters = blocked_waiters(&store, &owner, &id, 4);
    let failed = store
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::error(-32000, "broken"),
        )
        .unwrap();
    for waiter in waiters {
        assert_eq!(join_within(waiter, WAKE, "a waiter").unwrap(), failed);
    }
}

/// Checks: wait ends with cancel and remove.
pub fn wait_ends_with_cancel_and_remove<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let first = new_task(&store, &owner);
    let waiters = blocked_waiters(&store, &owner, &first, 3);
    let cancelled = store
        .cancel(&owner, &first, Some("stop".into()))
        .unwrap()
        .into_any();
    for waiter in waiters {
        let waited = join_within(waiter, WAKE, "a waiter on a cancelled task").unwrap();
        assert_eq!(waited, cancelled);
    }

    let id = new_task(&store, &owner);
    let waiters = blocked_waiters(&store, &owner, &id, 3);
    let removed = store.remove(&owner, &id).unwrap();
    assert_eq!(removed.id().to_string(), id);
    assert_eq!(removed.status(), TaskStatus::Working);
    for waiter in waiters {
        assert_not_found(
            join_within(waiter, WAKE, "a waiter on a removed task"),
            &id,
            "wait on a removed task",
        );
    }
    assert_not_found(store.get(&owner, &id), &id, "get after remove");
    assert_not_found(store.remove(&owner, &id), &id, "remove twice");
    assert_eq!(
        ids(&store.list(&owner, None, 100).unwrap().tasks),
        [first],
        "the removed task is not listed"
    );
}

/// Checks: wait times out.
pub fn wait_times_out<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let id = new_task(&store, &owner);
    let started = Instant::now();
    match store.wait(&owner, &id, Some(ms(200))) {
        Err(err @ Error::Timeout { .. }) => {
            let elapsed = started.elapsed();
            assert_eq!(err.code(), -32603);
            let Error::Timeout { task_id, waited } = err else {
                unreachable!()
            };
            assert_eq!(task_id, id);
            assert!(waited >= ms(200), "waited {waited:?}");
            assert!(
                elapsed >= ms(200) && elapsed < WAKE,
                "returned after {elapsed:?}"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // A zero timeout answers at once, and the timed-out waits left the task alone.
    assert!(matches!(
        store.wait(&owner, &id, Some(std::time::Duration::ZERO)),
        Err(Error::Timeout { .. })
    ));
    assert_eq!(
        store.get(&owner, &id).unwrap().status(),
        TaskStatus::Working
    );
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("done"))
        .unwrap();
    assert_eq!(
        store
            .wait(&owner, &id, Some(std::time::Duration::ZERO))
            .unwrap(),
        done,
        "a zero timeout on a finished task returns it"
    );

    // wait_for_input too.
    let (handle, _) = store.create(&owner, req(2)).unwrap();
    let waiting = handle
        .require_input(InputRequests::new().with("q", ask("q?")))
        .unwrap();
    let started = Instant::now();
    assert!(
        matches!(
            waiting.wait_for_input(Some(ms(150))),
            Err(Error::Timeout { .. })
        ),
        "wait_for_input without an answer times out"
    );
    let elapsed = started.elapsed();
    assert!(elapsed >= ms(150) && elapsed < WAKE, "{elapsed:?}");
    drop(waiting.cancel().unwrap());
}

/// Checks: waiters of one task are not woken by another.
pub fn waiters_of_one_task_are_not_woken_by_another<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (first, task) = store.create(&owner, req(1)).unwrap();
    let first_id = task.id().to_string();
    let (second, task) = store.create(&owner, req(2)).unwrap();
    let second_id = task.id().to_string();
    let on_first = blocked_waiters(&store, &owner, &first_id, 3);
    let on_second = blocked_waiters(&store, &owner, &second_id, 3);
    let _ = second.complete(tool_result("2")).unwrap();
    for waiter in on_second {
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap().status(),
            TaskStatus::Completed
        );
    }
    thread::sleep(ms(50));
    assert!(on_first.iter().all(|waiter| !waiter.is_finished()));
    // A timed-out waiter leaving breaks neither the others nor waiters that come later.
    assert!(matches!(
        store.wait(&owner, &first_id, Some(ms(10))),
        Err(Error::Timeout { .. })
    ));
    let late = blocked_waiters(&store, &owner, &first_id, 2);
    let _ = first.complete(tool_result("1")).unwrap();
    for waiter in on_first.into_iter().chain(late) {
        assert_eq!(
            join_within(waiter, WAKE, "a waiter").unwrap().status(),
            TaskStatus::Completed
        );
    }
}

/// Checks: wait on an expiring task returns not found.
pub fn wait_on_an_expiring_task_returns_not_found<B: Backend>(backend: &B) {
    let store = backend.store(Config {
        ttl: TtlPolicy::new(Some(300)).with_min(50).with_max(600_000),
        ..Config::default()
    });
    let owner = alice();
    let task = store.insert(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    assert_eq!(task.ttl(), Some(300));
    let kept = new_task(&store, &owner);
    store.set_ttl(&owner, &kept, Some(60_000)).unwrap();

    let started = Instant::now();
    assert_not_found(
        store.wait(&owner, &id, Some(BOUND)),
        &id,
        "wait on an expiring task",
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= ms(250),
        "the waiter returned after {elapsed:?}, before the 300 ms TTL ran out"
    );
    assert!(
        elapsed < WAKE,
        "the waiter returned after {elapsed:?}, long after expiry"
    );
    assert_not_found(store.get(&owner, &id), &id, "get after expiry");
    assert_not_found(store.cancel(&owner, &id, None), &id, "cancel after expiry");
    let listed = ids(&store.list(&owner, None, 100).unwrap().tasks);
    assert_eq!(
        listed,
        std::slice::from_ref(&kept),
        "the expired task is not listed"
    );
    assert_eq!(
        store.get(&owner, &kept).unwrap().status(),
        TaskStatus::Working
    );
}

/// Checks: set ttl is bounded by the policy and moves the expiry.
pub fn set_ttl_is_bounded_by_the_policy_and_moves_the_expiry<B: Backend>(backend: &B) {
    let policy = TtlPolicy::new(Some(60_000)).with_min(100).with_max(600_000);
    let store = backend.store(Config {
        ttl: policy,
        ..Config::default()
    });
    let owner = alice();
    let id = new_task(&store, &owner);
    let cases = [
        (Some(120_000), Some(120_000)),
        (Some(1_000_000_000), Some(600_000)),
        (Some(1), Some(100)),
        (None, Some(600_000)),
        (Some(90_000), Some(90_000)),
    ];
    for (ask_for, want) in cases {
        assert_eq!(policy.bound(ask_for), want);
        let task = store.set_ttl(&owner, &id, ask_for).unwrap();
        assert_eq!(task.ttl(), want, "set_ttl({ask_for:?})");
        assert_eq!(store.get(&owner, &id).unwrap().ttl(), want);
    }
    let poll = store.set_poll_interval(&owner, &id, Some(1_234)).unwrap();
    assert_eq!(poll.poll_interval(), Some(1_234));
    assert_eq!(store.get(&owner, &id).unwrap().poll_interval(), Some(1_234));

    // A shorter TTL ends the task sooner (counted from creation); a longer one keeps it.
    let shortened = new_task(&store, &owner);
    let extended = store
        .insert(&owner, req(2).with_ttl(Some(300)))
        .unwrap()
        .id()
        .to_string();
    assert_eq!(
        store.set_ttl(&owner, &shortened, Some(200)).unwrap().ttl(),
        Some(200)
    );
    assert_eq!(
        store
            .set_ttl(&owner, &extended, Some(60_000))
            .unwrap()
            .ttl(),
        Some(60_000)
    );
    thread::sleep(ms(700));
    assert_not_found(
        store.get(&owner, &shortened),
        &shortened,
        "a task past its shortened TTL",
    );
    assert_eq!(store.get(&owner, &extended).unwrap().ttl(), Some(60_000));
    // A TTL that ended already (shorter than the task's age) removes it.
    assert_not_found(
        store
            .set_ttl(&owner, &id, Some(100))
            .and_then(|_| store.get(&owner, &id)),
        &id,
        "a task whose new TTL ended before now",
    );
}

// ---------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------

/// Checks: keyset pagination never skips or repeats.
pub fn keyset_pagination_never_skips_or_repeats<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let mut created = Vec::new();
    for n in 0..5 {
        created.push(store.insert(&owner, req(n)).unwrap().id().to_string());
        if n == 1 {
            new_task(&store, &bob());
        }
        // Distinct creation times: "oldest first" is then one order.
        thread::sleep(ms(3));
    }
    let all = store.list(&owner, None, 100).unwrap();
    assert_eq!(ids(&all.tasks), created, "oldest first, only alice's");
    assert_eq!(all.next_cursor, None, "no cursor on the last page");
    let created_at: Vec<_> = all.tasks.iter().map(AnyTask::created_at).collect();
    assert!(created_at.windows(2).all(|pair| pair[0] < pair[1]));

    let first = store.list(&owner, None, 2).unwrap();
    assert_eq!(ids(&first.tasks), created[..2]);
    let cursor = first.next_cursor.expect("a cursor: more tasks follow");
    // The cursor's own task and a later one go away between pages.
    store.remove(&owner, &created[1]).unwrap();
    store.remove(&owner, &created[3]).unwrap();
    let second = store.list(&owner, Some(&cursor), 2).unwrap();
    assert_eq!(
        ids(&second.tasks),
        [created[2].clone(), created[4].clone()],
        "no task skipped or repeated"
    );
    assert_eq!(second.next_cursor, None, "nothing follows");
    // A cursor is a position, not a session: it can be used again.
    assert_eq!(store.list(&owner, Some(&cursor), 2).unwrap(), second);

    // Page size 1 walks the rest one by one; 0 is raised to 1, a huge one is clamped.
    let mut walked = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list(&owner, cursor.as_deref(), 0).unwrap();
        assert_eq!(page.tasks.len(), 1);
        walked.extend(ids(&page.tasks));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(
        walked,
        [created[0].clone(), created[2].clone(), created[4].clone()]
    );
    assert_eq!(
        ids(&store.list(&owner, None, usize::MAX).unwrap().tasks),
        walked
    );
    // An owner without tasks gets an empty last page.
    let empty = store.list(&Owner::new("carol"), None, 10).unwrap();
    assert!(empty.tasks.is_empty());
    assert_eq!(empty.next_cursor, None);
}

/// Checks: cursors are bound to owner and store.
pub fn cursors_are_bound_to_owner_and_store<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    for n in 0..3 {
        let _ = store.insert(&owner, req(n)).unwrap();
        let _ = store.insert(&bob(), req(n)).unwrap();
    }
    let cursor = store
        .list(&owner, None, 1)
        .unwrap()
        .next_cursor
        .expect("a cursor");
    let bobs = store
        .list(&bob(), None, 1)
        .unwrap()
        .next_cursor
        .expect("a cursor");
    // Every refusal is the same short `InvalidCursor`: no oracle for forgers.
    let refused = |who: &Owner, cursor: &str, what: &str| match store.list(who, Some(cursor), 10) {
        Err(err @ Error::InvalidCursor { .. }) => {
            assert_eq!(err.code(), -32602, "{what}");
            assert!(err.to_string().len() < 300, "{what}: a short message");
            err.to_jsonrpc()
        }
        other => panic!("{what}: expected InvalidCursor, got {other:?}"),
    };
    let foreign = refused(&owner, &bobs, "bob's cursor used by alice");
    refused(&bob(), &cursor, "alice's cursor used by bob");
    refused(
        &Owner::anonymous(),
        &cursor,
        "alice's cursor used anonymously",
    );
    let made_up = refused(&owner, &"ab".repeat(cursor.len() / 2), "a made-up cursor");
    assert_eq!(foreign, made_up, "a foreign cursor reads as a made-up one");
    let malformed = [
        ("an empty cursor", String::new()),
        ("garbage", "garbage".to_owned()),
        ("an oversized cursor", "0".repeat(100_000)),
        ("a doubled cursor", format!("{cursor}{cursor}")),
        ("a truncated cursor", cursor[..cursor.len() - 1].to_owned()),
        ("a task id", uuid::Uuid::new_v4().to_string()),
        ("non-ascii", "é".repeat(16)),
        ("zeros", "0".repeat(cursor.len())),
    ];
    for (what, text) in &malformed {
        refused(&owner, text, what);
    }
    if cursor.to_uppercase() != cursor {
        refused(&owner, &cursor.to_uppercase(), "the cursor in upper case");
    }
    // One character changed anywhere: refused.
    for index in 0..cursor.len() {
        let mut forged: Vec<char> = cursor.chars().collect();
        forged[index] = if forged[index] == '0' { '1' } else { '0' };
        let forged: String = forged.into_iter().collect();
        refused(&owner, &forged, &format!("a cursor changed at {index}"));
    }
    // Another store (another registry, another Redis prefix) did not issue it.
    let other = backend.default_store();
    let _ = other.insert(&owner, req(9)).unwrap();
    match other.list(&owner, Some(&cursor), 10) {
        Err(Error::InvalidCursor { .. }) => {}
        other => panic!("a cursor of another store: expected InvalidCursor, got {other:?}"),
    }
    // The genuine cursor still works.
    assert_eq!(
        store.list(&owner, Some(&cursor), 10).unwrap().tasks.len(),
        2
    );
}

// ---------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------

/// Checks: the per owner limit refuses and creates nothing.
pub fn the_per_owner_limit_refuses_and_creates_nothing<B: Backend>(backend: &B) {
    let store = backend.store(Config {
        limits: Limits {
            per_owner: Some(3),
            total: None,
        },
        ..Config::default()
    });
    let owner = alice();
    let mut mine: Vec<String> = (0..3).map(|_| new_task(&store, &owner)).collect();
    let check_refused = |result: Result<String, Error>| match result {
        Err(err @ Error::LimitExceeded { .. }) => {
            assert_eq!(err.code(), -32603);
            assert!(matches!(
                err,
                Error::LimitExceeded {
                    limit: 3,
                    scope: LimitScope::PerOwner
                }
            ));
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    };
    check_refused(store.insert(&owner, req(4)).map(|t| t.id().to_string()));
    check_refused(store.create(&owner, req(5)).map(|(handle, task)| {
        drop(handle.detach());
        task.id().to_string()
    }));
    assert_eq!(
        ids(&store.list(&owner, None, 100).unwrap().tasks),
        mine,
        "nothing was created"
    );
    // Finished tasks still count until they are gone.
    store
        .store_result(&owner, &mine[0], TaskStatus::Completed, tool_outcome("ok"))
        .unwrap();
    check_refused(store.insert(&owner, req(6)).map(|t| t.id().to_string()));
    // Other owners have their own allowance.
    for _ in 0..3 {
        new_task(&store, &bob());
    }
    new_task(&store, &Owner::anonymous());
    // A removed task frees its place.
    store.remove(&owner, &mine[1]).unwrap();
    mine.remove(1);
    mine.push(new_task(&store, &owner));
    check_refused(store.insert(&owner, req(7)).map(|t| t.id().to_string()));
    assert_eq!(ids(&store.list(&owner, None, 100).unwrap().tasks), mine);
}

// ---------------------------------------------------------------------------------------
// Subscribers
// ---------------------------------------------------------------------------------------

fn changes_of(seen: &Seen, id: &str) -> Vec<StatusChange> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|change| change.task.id().to_string() == id)
        .cloned()
        .collect()
}

/// Checks: subscribers see status changes in order.
pub fn subscribers_see_status_changes_in_order<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let (seen, _) = recorder(&store);
    let owner = alice();
    let id = new_task(&store, &owner);
    store
        .update_status(&owner, &id, TaskStatus::InputRequired, Some("q".into()))
        .unwrap();
    // Not on the wire: no notification.
    store.request_cancel(&owner, &id).unwrap();
    store
        .update_status(&owner, &id, TaskStatus::Working, Some("back".into()))
        .unwrap();
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("r"))
        .unwrap();
    let bobs = new_task(&store, &bob());
    let bob_cancelled = store.cancel(&bob(), &bobs, Some("bye".into())).unwrap();

    eventually("the completion reaches the subscriber", || {
        changes_of(&seen, &id)
            .iter()
            .any(|change| change.task.status() == TaskStatus::Completed)
    });
    let mine = changes_of(&seen, &id);
    let summary: Vec<_> = mine
        .iter()
        .map(|change| (change.task.status(), change.task.status_message()))
        .collect();
    assert_eq!(
        summary[..2],
        [
            (TaskStatus::InputRequired, Some("q")),
            (TaskStatus::Working, Some("back")),
        ],
        "no creation event, no event for the quiet cancel request, in order: {summary:?}"
    );
    assert_eq!(summary.len(), 3, "{summary:?}");
    assert!(mine.iter().all(|change| change.owner == owner));
    assert_eq!(mine[2].task, done, "the subscriber sees the task as stored");

    eventually("bob's cancellation reaches the subscriber", || {
        !changes_of(&seen, &bobs).is_empty()
    });
    let theirs = changes_of(&seen, &bobs);
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].owner, bob(), "the change names its owner");
    assert_eq!(theirs[0].task, bob_cancelled.into_any());

    // A handle's transitions are told too.
    let (handle, task) = store.create(&owner, req(9)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("k", ask("k?")))
        .unwrap();
    drop(waiting.cancel().unwrap());
    eventually("the handle's cancel reaches the subscriber", || {
        changes_of(&seen, &id)
            .iter()
            .any(|change| change.task.status() == TaskStatus::Cancelled)
    });
    let statuses: Vec<_> = changes_of(&seen, &id)
        .iter()
        .map(|change| change.task.status())
        .collect();
    assert_eq!(statuses, [TaskStatus::InputRequired, TaskStatus::Cancelled]);
}

/// The status and message of each change told about `id`, in order.
fn told(seen: &Seen, id: &str) -> Vec<(TaskStatus, Option<String>)> {
    changes_of(seen, id)
        .iter()
        .map(|change| {
            let message = change.task.status_message().map(str::to_owned);
            (change.task.status(), message)
        })
        .collect()
}

/// Makes one more change and waits until the subscriber was told of it: every change made
/// before has been told by then.
fn settle<S: TaskStore>(store: &S, seen: &Seen) {
    let owner = alice();
    let marker = new_task(store, &owner);
    let _ = store.cancel(&owner, &marker, None).unwrap();
    eventually("the last change reaches the subscriber", || {
        !changes_of(seen, &marker).is_empty()
    });
}

/// Checks: message changes are told and refused changes are not.
pub fn message_changes_are_told_and_refused_changes_are_not<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let (seen, _) = recorder(&store);
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    handle.set_status_message(Some("step 1".into())).unwrap();
    let waiting = handle
        .with_message("question")
        .require_input(InputRequests::new())
        .unwrap();
    waiting
        .set_status_message(Some("still waiting".into()))
        .unwrap();
    let working = waiting.resume().unwrap();
    let done = working
        .with_message("done")
        .complete(tool_result("x"))
        .unwrap();
    // By id: the same status with another message is a change too.
    let other = new_task(&store, &owner);
    store
        .update_status(&owner, &other, TaskStatus::InputRequired, None)
        .unwrap();
    store
        .update_status(&owner, &other, TaskStatus::InputRequired, Some("m".into()))
        .unwrap();
    let cancelled = store.cancel(&owner, &other, Some("bye".into())).unwrap();
    // Refused changes are not told.
    assert!(store.cancel(&owner, &other, None).is_err());
    assert!(
        store
            .store_result(&owner, &other, TaskStatus::Failed, Outcome::error(-1, "x"))
            .is_err()
    );
    assert!(
        store
            .update_status(&owner, &id, TaskStatus::Working, None)
            .is_err()
    );
    settle(&store, &seen);

    let s = |status, message: Option<&str>| (status, message.map(str::to_owned));
    assert_eq!(
        told(&seen, &id),
        [
            s(TaskStatus::Working, Some("step 1")),
            s(TaskStatus::InputRequired, Some("question")),
            s(TaskStatus::InputRequired, Some("still waiting")),
            s(TaskStatus::Working, None),
            s(TaskStatus::Completed, Some("done")),
        ]
    );
    assert_eq!(
        told(&seen, &other),
        [
            s(TaskStatus::InputRequired, None),
            s(TaskStatus::InputRequired, Some("m")),
            s(TaskStatus::Cancelled, Some("bye")),
        ]
    );
    // Each change carries the task as stored after it.
    assert_eq!(changes_of(&seen, &id)[4].task, done.into_any());
    assert_eq!(changes_of(&seen, &other)[2].task, cancelled.into_any());
}

/// Checks: a dropped handle is told once.
pub fn a_dropped_handle_is_told_once<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let (seen, _) = recorder(&store);
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let dropped = task.id().to_string();
    drop(handle);
    // A handler that notices the cancellation and returns: dropping its handle changes
    // nothing, so nothing more is told.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let _ = store.cancel(&owner, &id, None).unwrap();
    assert_eq!(handle.current_status().unwrap(), TaskStatus::Cancelled);
    let before = store.get(&owner, &id).unwrap();
    drop(handle);
    assert_eq!(store.get(&owner, &id).unwrap(), before);
    settle(&store, &seen);

    let statuses: Vec<_> = told(&seen, &dropped)
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    assert_eq!(statuses, [TaskStatus::Failed]);
    assert_eq!(
        told(&seen, &id),
        [(TaskStatus::Cancelled, None)],
        "exactly one change told for one change"
    );
}

/// Checks: notifications stay in order per task across threads.
pub fn notifications_stay_in_order_per_task_across_threads<B: Backend>(backend: &B) {
    const THREADS: usize = 8;
    const STEPS: usize = 200;
    let store = backend.default_store();
    let owner = alice();
    let (seen, _) = recorder(&store);
    let workers: Vec<_> = (0..THREADS)
        .map(|n| {
            let (store, owner) = (store.clone(), owner.clone());
            thread::spawn(move || {
                let (mut handle, task) = store.create(&owner, req(n as i64)).unwrap();
                let id = task.id().to_string();
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
        .map(|worker| join_within(worker, BOUND, "a worker"))
        .collect();
    // Every step is told once; each require_input/resume pair twice; then the completion.
    let expected = STEPS + STEPS / 50 + 1;
    eventually("every change reaches the subscriber", || {
        ids.iter().all(|id| changes_of(&seen, id).len() >= expected)
    });
    for id in &ids {
        let mine = changes_of(&seen, id);
        assert_eq!(mine.len(), expected, "{id}");
        let mut step = 0;
        for change in &mine[..mine.len() - 1] {
            match change.task.status() {
                // The resume right after an input_required step.
                TaskStatus::Working if change.task.status_message().is_none() => {}
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

/// The dropped handle tells its failure while its thread unwinds; a subscriber that panics
/// then must not turn that into an abort.
pub fn a_handler_panic_with_a_panicking_subscriber_does_not_abort<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let panicky = store.subscribe(|_| panic!("a subscriber bug (expected by the test)"));
    let (seen, _) = recorder(&store);
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let worker = thread::spawn(move || {
        let _handle = handle;
        panic!("a handler bug (expected by the test)");
    });
    assert!(worker.join().is_err());
    assert_eq!(store.get(&owner, &id).unwrap().status(), TaskStatus::Failed);
    eventually("the failure reaches the other subscriber", || {
        changes_of(&seen, &id).len() == 1
    });
    assert!(store.unsubscribe(panicky));
}

/// Checks: unsubscribed and panicking subscribers.
pub fn unsubscribed_and_panicking_subscribers<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let calls = Arc::new(AtomicUsize::new(0));
    let panicky = {
        let calls = Arc::clone(&calls);
        store.subscribe(move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            panic!("a subscriber bug (expected by the test)");
        })
    };
    let (gone, gone_id) = recorder(&store);
    let (kept, _) = recorder(&store);
    let owner = alice();

    let first = new_task(&store, &owner);
    store
        .update_status(&owner, &first, TaskStatus::InputRequired, None)
        .unwrap();
    eventually("both recorders see the first change", || {
        changes_of(&gone, &first).len() == 1 && changes_of(&kept, &first).len() == 1
    });
    assert!(store.unsubscribe(gone_id));
    assert!(!store.unsubscribe(gone_id), "already unsubscribed");

    let second = new_task(&store, &owner);
    let _ = store.cancel(&owner, &second, None).unwrap();
    eventually("the kept recorder sees the second change", || {
        changes_of(&kept, &second).len() == 1
    });
    thread::sleep(ms(100));
    assert!(
        changes_of(&gone, &second).is_empty(),
        "an unsubscribed subscriber is not called"
    );
    // The panicking subscriber stopped neither the store nor the others, and kept its
    // registration.
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(store.unsubscribe(panicky));
    assert_eq!(
        store.get(&owner, &second).unwrap().status(),
        TaskStatus::Cancelled
    );
}

// ---------------------------------------------------------------------------------------
// Origin and timestamps
// ---------------------------------------------------------------------------------------

/// Checks: origin returns the request id and method.
pub fn origin_returns_the_request_id_and_method<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let numbered = store
        .insert(&owner, TaskRequest::new(42, "tools/call"))
        .unwrap();
    let named = store
        .insert(&owner, TaskRequest::new("req-7", "sampling/createMessage"))
        .unwrap();
    let negative = store
        .insert(&owner, TaskRequest::new(-1, "elicitation/create"))
        .unwrap();
    let cases = [
        (numbered.id(), RequestId::Number(42), "tools/call"),
        (
            named.id(),
            RequestId::String("req-7".into()),
            "sampling/createMessage",
        ),
        (negative.id(), RequestId::Number(-1), "elicitation/create"),
    ];
    for (id, request_id, method) in cases {
        let id = id.to_string();
        let origin = store.origin(&owner, &id).unwrap();
        assert_eq!(
            origin,
            TaskOrigin {
                request_id,
                method: method.into()
            }
        );
        // Still known once the task is finished.
        let _ = store.cancel(&owner, &id, None).unwrap();
        assert_eq!(store.origin(&owner, &id).unwrap(), origin);
    }
    let id = numbered.id().to_string();
    assert_not_found(store.origin(&bob(), &id), &id, "another owner's origin");
    store.remove(&owner, &id).unwrap();
    assert_not_found(store.origin(&owner, &id), &id, "a removed task's origin");
}

/// Checks: last updated at moves forward from created at.
pub fn last_updated_at_moves_forward_from_created_at<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let task = store.insert(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let created = task.created_at();
    assert_eq!(task.last_updated_at(), created);
    let mut last = created;
    let mut step = |what: &str, task: AnyTask, strictly: bool| {
        assert_eq!(task.created_at(), created, "{what}: createdAt never moves");
        assert!(
            task.last_updated_at() >= created,
            "{what}: lastUpdatedAt before createdAt"
        );
        if strictly {
            assert!(
                task.last_updated_at() > last,
                "{what}: lastUpdatedAt did not move forward ({:?} after {last:?})",
                task.last_updated_at()
            );
        } else {
            assert!(task.last_updated_at() >= last, "{what}: moved backwards");
        }
        last = task.last_updated_at();
    };
    thread::sleep(ms(5));
    step(
        "update_status",
        store
            .update_status(&owner, &id, TaskStatus::InputRequired, Some("?".into()))
            .unwrap(),
        true,
    );
    thread::sleep(ms(5));
    step(
        "request_cancel",
        store.request_cancel(&owner, &id).unwrap(),
        false,
    );
    thread::sleep(ms(5));
    step(
        "resume",
        store
            .update_status(&owner, &id, TaskStatus::Working, None)
            .unwrap(),
        true,
    );
    thread::sleep(ms(5));
    step(
        "set_poll_interval",
        store.set_poll_interval(&owner, &id, Some(10)).unwrap(),
        false,
    );
    thread::sleep(ms(5));
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("x"))
        .unwrap();
    step("store_result", done.clone(), true);
    // A refused change leaves the time alone.
    thread::sleep(ms(5));
    let _ = store.cancel(&owner, &id, None).unwrap_err();
    step("refused cancel", store.get(&owner, &id).unwrap(), false);
    assert_eq!(store.get(&owner, &id).unwrap(), done);
}

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

/// Checks: racing cancel and result have one winner.
pub fn racing_cancel_and_result_have_one_winner<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (mut cancels, mut results) = (0, 0);
    for round in 0..60 {
        let id = new_task(&store, &owner);
        let barrier = Arc::new(Barrier::new(2));
        let canceller = {
            let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
            spawn_at_barrier(&barrier, move || store.cancel(&owner, &id, None))
        };
        let finisher = {
            let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
            spawn_at_barrier(&barrier, move || {
                store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("won"))
            })
        };
        let cancelled = join_within(canceller, WAKE, "cancel");
        let finished = join_within(finisher, WAKE, "store_result");
        let stored = store.get(&owner, &id).unwrap();
        match (cancelled, finished) {
            (Ok(task), Err(Error::TaskCancelled { .. })) => {
                cancels += 1;
                assert_eq!(stored, task.into_any(), "round {round}");
                assert_eq!(stored.outcome(), None, "round {round}");
            }
            (Err(Error::AlreadyTerminal { task }), Ok(done)) => {
                results += 1;
                assert_eq!(*task, done, "round {round}: the loser saw the winner");
                assert_eq!(stored, done, "round {round}");
                assert_eq!(stored.outcome(), Some(&tool_outcome("won")));
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        }
    }
    assert_eq!(cancels + results, 60);
}

/// Checks: a shared dyn store is a store.
pub fn a_shared_dyn_store_is_a_store<B: Backend>(backend: &B) {
    let store: Arc<dyn TaskStore> = Arc::new(backend.default_store());
    let owner = alice();
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let waiter = spawn_wait(&store, &owner, &id);
    let done = handle.complete(tool_result("dyn")).unwrap();
    assert_eq!(
        join_within(waiter, WAKE, "a waiter through Arc<dyn TaskStore>").unwrap(),
        done.into_any()
    );
    assert_eq!(store.ttl_policy(), Config::default().ttl);
    assert_eq!(ids(&store.list(&owner, None, 10).unwrap().tasks), [id]);
}

/// The issue's observation: an owner's consecutive cursors must not show that other owners
/// (some of them in the same registry shard) created tasks between its own, nor change when
/// they create tasks while it pages.
pub fn cursors_reveal_nothing_of_other_owners<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = Owner::new("tenant-a");
    // 256 owners: with the registry's shards, many of them share tenant-a's.
    let others: Vec<Owner> = (0..256)
        .map(|n| Owner::new(format!("tenant-b{n}")))
        .collect();
    let everyone_creates = || {
        for other in &others {
            new_task(&store, other);
        }
    };
    let mut created = Vec::new();
    for n in 0..6 {
        created.push(store.insert(&owner, req(n)).unwrap().id().to_string());
        // Others are busy between tenant-a's 2nd and 3rd, and 4th and 5th tasks only.
        if n == 1 || n == 3 {
            everyone_creates();
        }
        thread::sleep(ms(2));
    }
    let walk = |busy: bool| {
        let (mut walked, mut cursors) = (Vec::new(), Vec::new());
        let mut cursor: Option<String> = None;
        loop {
            let page = store.list(&owner, cursor.as_deref(), 1).unwrap();
            walked.extend(ids(&page.tasks));
            match page.next_cursor {
                Some(next) => cursors.push(next.clone()),
                None => break,
            }
            cursor = cursors.last().cloned();
            if busy {
                everyone_creates();
            }
        }
        (walked, cursors)
    };
    let quiet = walk(false);
    assert_eq!(quiet.0, created, "page size 1 neither skips nor repeats");
    assert_eq!(quiet.1.len(), created.len() - 1);
    assert_eq!(
        walk(true),
        quiet,
        "others creating tasks while tenant-a pages change none of its pages or cursors"
    );
    // No cursor shows a counter in clear, and no two consecutive cursors are close, so
    // neither a gap (others were busy) nor a step of one (they were not) can be told.
    let halves = |cursor: &str| {
        assert_eq!(cursor.len(), 32, "{cursor}");
        assert!(
            cursor
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "{cursor}: lowercase hex"
        );
        assert!(!cursor.contains("00000000"), "a clear counter in {cursor}");
        let (high, low) = cursor.split_at(16);
        [high, low].map(|half| u64::from_str_radix(half, 16).unwrap())
    };
    for pair in quiet.1.windows(2) {
        for (a, b) in halves(&pair[0]).into_iter().zip(halves(&pair[1])) {
            let distance = a.wrapping_sub(b).min(b.wrapping_sub(a));
            assert!(
                distance > 1 << 40,
                "consecutive cursors {} and {} are close",
                pair[0],
                pair[1]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Redelivery
// ---------------------------------------------------------------------------------------

/// A `tools/call` request for a task that may run `max` times, with a job.
fn redeliverable(max: u32) -> TaskRequest {
    let job = obj(json!({"tool": "sleep", "arguments": {"ms": 10}}));
    req(1).with_redelivery(mcp_tasks::Redelivery::new(max, job))
}

/// Checks that a handler's checkpoint is kept in the task (up to the limit, 64 KiB), read
/// back, never told to subscribers nor shown on the wire, and refused over the limit.
pub fn checkpoints_are_kept_quietly_and_bounded<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let (seen, _) = recorder(&store);
    let (handle, task) = store.create(&alice(), redeliverable(3)).unwrap();
    let id = task.id().to_string();
    assert_eq!(handle.attempt(), Some(1), "the first attempt");
    assert_eq!(
        task.attempts().map(|a| (a.attempt(), a.max())),
        Some((1, 3))
    );
    settle(&store, &seen);
    let told = changes_of(&seen, &id).len();
    // The limit exactly (a JSON string takes its quotes) is kept, whole.
    let most = Value::String("x".repeat(mcp_tasks::MAX_CHECKPOINT_BYTES - 2));
    handle.checkpoint(most.clone()).unwrap();
    assert_eq!(
        store.get(&alice(), &id).unwrap().checkpoint(),
        Some(&most),
        "a checkpoint of the limit is kept"
    );
    handle.checkpoint(json!({"step": 7})).unwrap();
    let stored = store.get(&alice(), &id).unwrap();
    assert_eq!(stored.checkpoint(), Some(&json!({"step": 7})));
    assert_eq!(stored.status(), TaskStatus::Working);
    let wire = serde_json::to_value(&stored).unwrap();
    assert!(
        !wire.to_string().contains("step"),
        "never on the wire: {wire}"
    );
    settle(&store, &seen);
    assert_eq!(
        changes_of(&seen, &id).len(),
        told,
        "a checkpoint is not a status change"
    );
    let big = Value::String("x".repeat(mcp_tasks::MAX_CHECKPOINT_BYTES));
    assert_invalid_params(handle.checkpoint(big), "a checkpoint over the limit");
    assert_eq!(
        store.get(&alice(), &id).unwrap().checkpoint(),
        Some(&json!({"step": 7})),
        "the refused checkpoint changed nothing"
    );
    let _done = handle.complete(tool_result("done")).unwrap();
}

/// Checks that a checkpoint leaves the task as a client sees it exactly as it was: the
/// same wire view (`lastUpdatedAt` included) from `tasks/get`, on this instance and any
/// other, and no notification, so a client following the task with
/// `subscriptions/listen` still holds what `tasks/get` answers. A status change after it
/// moves `lastUpdatedAt` and is told, with the time `tasks/get` then answers.
pub fn a_checkpoint_leaves_the_wire_view_and_last_update_as_they_were<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let other = backend.another_instance(&store);
    let (seen, _) = recorder(&store);
    let (handle, task) = store.create(&alice(), redeliverable(3)).unwrap();
    let id = task.id().to_string();
    let wire = |task: &AnyTask| serde_json::to_value(task).unwrap();
    let before = store.get(&alice(), &id).unwrap();
    settle(&store, &seen);
    let told = changes_of(&seen, &id).len();
    // Past the clock's resolution: a moving lastUpdatedAt would show.
    thread::sleep(ms(20));
    handle.checkpoint(json!({"step": 1})).unwrap();
    thread::sleep(ms(5));
    handle.checkpoint(json!({"step": 2})).unwrap();
    let after = store.get(&alice(), &id).unwrap();
    assert_eq!(
        after.checkpoint(),
        Some(&json!({"step": 2})),
        "the checkpoint is kept"
    );
    assert_eq!(
        after.last_updated_at(),
        before.last_updated_at(),
        "a checkpoint does not move lastUpdatedAt"
    );
    assert_eq!(wire(&after), wire(&before), "the wire view is as it was");
    if let Some(other) = &other {
        let there = other.get(&alice(), &id).unwrap();
        assert_eq!(wire(&there), wire(&before), "on another instance too");
    }
    settle(&store, &seen);
    assert_eq!(
        changes_of(&seen, &id).len(),
        told,
        "a checkpoint is not told to subscribers"
    );
    // A status change after it moves lastUpdatedAt, and is told as tasks/get answers it.
    thread::sleep(ms(20));
    handle.set_status_message(Some("step 3".into())).unwrap();
    let moved = store.get(&alice(), &id).unwrap();
    assert!(
        moved.last_updated_at() > before.last_updated_at(),
        "a status change moves lastUpdatedAt: {:?} after {:?}",
        moved.last_updated_at(),
        before.last_updated_at()
    );
    assert_eq!(moved.checkpoint(), Some(&json!({"step": 2})));
    eventually("the status change is told", || {
        changes_of(&seen, &id).len() > told
    });
    let last = changes_of(&seen, &id).pop().unwrap();
    assert_eq!(
        wire(&last.task),
        wire(&moved),
        "the subscriber holds what tasks/get answers"
    );
    let _done = handle.complete(tool_result("done")).unwrap();
}

/// Checks that the other writes nobody sees on the wire leave the task as a client sees
/// it, `lastUpdatedAt` included, and tell no subscriber: a cooperative cancel request
/// (the handler decides), and a handler taking the answers it waited for. A client
/// following the task holds what `tasks/get` answers.
pub fn a_cancel_request_and_answers_taken_leave_last_update_as_it_was<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let owner = alice();
    let (seen, _) = recorder(&store);
    let wire = |task: &AnyTask| serde_json::to_value(task).unwrap();

    // A cancel request on a working task: the flag is set, nothing on the wire moves.
    let (handle, task) = store.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let before = store.get(&owner, &id).unwrap();
    settle(&store, &seen);
    let told = changes_of(&seen, &id).len();
    // Past the clock's resolution: a moving lastUpdatedAt would show.
    thread::sleep(ms(20));
    let flagged = store.request_cancel(&owner, &id).unwrap();
    assert!(flagged.cancel_requested(), "the request is kept");
    let after = store.get(&owner, &id).unwrap();
    assert!(after.cancel_requested());
    assert_eq!(
        after.last_updated_at(),
        before.last_updated_at(),
        "a cancel request does not move lastUpdatedAt"
    );
    assert_eq!(wire(&after), wire(&before), "the wire view is as it was");
    assert_eq!(wire(&flagged), wire(&before), "and so is the answer to it");
    settle(&store, &seen);
    assert_eq!(
        changes_of(&seen, &id).len(),
        told,
        "a cancel request is not told to subscribers"
    );
    assert!(handle.cancel_requested().unwrap(), "the handler sees it");
    let _cancelled = handle.cancel().unwrap();

    // Answers taken by the handler: the answer moved the task (and was told); taking it
    // does not move it again.
    let (handle, task) = store.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("sure?")))
        .unwrap();
    let answered = store
        .respond(&owner, &id, obj(json!({"confirm": accept("yes")})))
        .unwrap();
    settle(&store, &seen);
    let told = changes_of(&seen, &id).len();
    thread::sleep(ms(20));
    let answers = waiting.wait_for_input(Some(BOUND)).unwrap();
    assert_eq!(answers.get("confirm").unwrap(), &obj(accept("yes")));
    let after = store.get(&owner, &id).unwrap();
    assert_eq!(
        after.last_updated_at(),
        answered.last_updated_at(),
        "taking the answers does not move lastUpdatedAt"
    );
    assert_eq!(wire(&after), wire(&answered), "the wire view is as it was");
    settle(&store, &seen);
    assert_eq!(
        changes_of(&seen, &id).len(),
        told,
        "taking the answers is not told to subscribers"
    );
    let _done = waiting
        .resume()
        .unwrap()
        .complete(tool_result("yes"))
        .unwrap();
}

/// Checks redelivery across instances: a task handed over by one instance is claimed
/// once, by another, with its job, next attempt and checkpoint; the old holder's late
/// result is refused ([`Error::Superseded`]) and the new holder's is the one result. A
/// store of one process checks that nothing is ever claimable instead.
pub fn a_handed_over_task_is_claimed_once_and_fences_its_old_holder<B: Backend>(backend: &B) {
    let store = backend.default_store();
    let (old, task) = store.create(&alice(), redeliverable(3)).unwrap();
    let id = task.id().to_string();
    old.checkpoint(json!({"step": 2})).unwrap();
    let Some(other) = backend.another_instance(&store) else {
        assert!(
            !store.hand_over(&alice(), &id).unwrap(),
            "no other instance to take it"
        );
        assert!(
            store.claim().unwrap().is_none(),
            "nothing is ever claimable"
        );
        let _done = old.complete(tool_result("done")).unwrap();
        return;
    };
    assert!(
        other.claim().unwrap().is_none(),
        "a live instance's task is not claimable"
    );
    assert!(store.hand_over(&alice(), &id).unwrap(), "handed over");
    let started = Instant::now();
    let claim = loop {
        if let Some(claim) = other.claim().unwrap() {
            break claim;
        }
        assert!(started.elapsed() < WAKE, "not claimed within {WAKE:?}");
        other.wait_for_claimable(Some(ms(50))).unwrap();
    };
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!(claim.owner, alice());
    assert_eq!((claim.attempts.attempt(), claim.attempts.max()), (2, 3));
    assert_eq!(claim.checkpoint, Some(json!({"step": 2})));
    assert_eq!(claim.job["tool"], "sleep");
    assert!(store.claim().unwrap().is_none(), "claimed once");
    assert!(other.claim().unwrap().is_none(), "claimed once");
    let new = mcp_tasks::TaskHandle::claimed(other.clone(), claim);
    match old.complete(tool_result("late")) {
        Err(Error::Superseded {
            attempt: 1,
            current: 2,
            ..
        }) => {}
        result => panic!("the old holder's result went through: {result:?}"),
    }
    let _done = new.complete(tool_result("done")).unwrap();
    let finished = store.wait(&alice(), &id, Some(BOUND)).unwrap();
    assert_eq!(
        finished.outcome(),
        Some(&Outcome::Result(tool_result("done")))
    );
}
