//! `RedisTaskStore` as several server instances see it: two instances, built separately on
//! one `redis-server` with the same key prefix (as two processes behind a load balancer
//! would be), share the tasks, their waits, their races, their cursors and one clock.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`); without one on `PATH` the
//! tests say `SKIPPED` and pass. Every blocking call is bounded.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    Error, InputRequest, InputRequests, LeasePolicy, LimitScope, Limits, Outcome, Owner,
    TaskRequest, TaskStatus, TaskStore, TtlPolicy,
};
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::redis::RedisServer;
use serde_json::json;

use mcp_tasks_testkit::support::{
    BOUND, WAKE, alice, assert_not_found, bob, eventually, ids, join_within, ms, obj, recorder,
    req, spawn_at_barrier, spawn_wait, tool_outcome, tool_result,
};

/// The name the store gives each instance's subscriber connection.
const SUBSCRIBER_NAME: &str = "mcp-tasks-subscriber";

fn policy() -> TtlPolicy {
    TtlPolicy::new(Some(60_000)).with_max(600_000)
}

/// A fresh key prefix: what one deployment shares.
fn fresh_prefix() -> String {
    format!("multi-{}", uuid::Uuid::new_v4().simple())
}

/// One instance on `server` with `prefix`.
fn instance(server: &RedisServer, prefix: &str, limits: Limits) -> RedisTaskStore {
    RedisTaskStore::builder(&server.url())
        .prefix(prefix)
        .ttl_policy(policy())
        .limits(limits)
        .build()
        .expect("a RedisTaskStore on the test server")
}

/// Two separately built instances sharing one prefix.
fn pair(server: &RedisServer) -> (RedisTaskStore, RedisTaskStore) {
    let prefix = fresh_prefix();
    (
        instance(server, &prefix, Limits::none()),
        instance(server, &prefix, Limits::none()),
    )
}

#[test]
fn a_task_created_on_one_instance_is_finished_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let task = a
        .insert(&owner, TaskRequest::new("r-1", "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    assert_eq!(b.get(&owner, &id).unwrap(), task.clone().into_any());
    assert_eq!(
        b.origin(&owner, &id).unwrap(),
        a.origin(&owner, &id).unwrap()
    );
    assert_not_found(b.get(&bob(), &id), &id, "another owner on B");
    let done = b
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("from b"))
        .unwrap();
    assert_eq!(a.get(&owner, &id).unwrap(), done);
    assert_eq!(a.result(&owner, &id).unwrap(), done);
    assert_eq!(
        a.get(&owner, &id).unwrap().outcome(),
        Some(&tool_outcome("from b"))
    );
    // The loser on A sees B's result.
    match a.cancel(&owner, &id, None) {
        Err(Error::AlreadyTerminal { task }) => assert_eq!(*task, done),
        other => panic!("expected AlreadyTerminal, got {other:?}"),
    }

    // A handle running on A, dropped there: B sees the failure. A removal on B is gone on A.
    let (handle, task) = a.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    assert_eq!(b.get(&owner, &id).unwrap().status(), TaskStatus::Working);
    drop(handle);
    let failed = b.get(&owner, &id).unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    assert_eq!(
        failed.outcome().and_then(Outcome::as_error).map(|e| e.code),
        Some(INTERNAL_ERROR)
    );
    b.remove(&owner, &id).unwrap();
    assert_not_found(a.get(&owner, &id), &id, "a task removed on B, on A");
}

#[test]
fn a_waiter_on_one_instance_is_woken_by_a_completion_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    let waiter = spawn_wait(&a, &owner, &id);
    thread::sleep(ms(200));
    assert!(
        !waiter.is_finished(),
        "A's waiter blocks while the task works"
    );
    let finished_at = Instant::now();
    let done = b
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("b did it"))
        .unwrap();
    let waited = join_within(waiter, WAKE, "A's waiter").unwrap();
    assert!(
        finished_at.elapsed() < Duration::from_secs(2),
        "A's waiter returned {:?} after B's completion",
        finished_at.elapsed()
    );
    assert_eq!(waited, done);

    // Cancel and removal on B end waits on A too.
    let id = a.insert(&owner, req(2)).unwrap().id().to_string();
    let waiter = spawn_wait(&a, &owner, &id);
    thread::sleep(ms(50));
    let cancelled = b.cancel(&owner, &id, None).unwrap();
    assert_eq!(
        join_within(waiter, WAKE, "A's waiter on a cancel").unwrap(),
        cancelled.into_any()
    );
    let id = a.insert(&owner, req(3)).unwrap().id().to_string();
    let waiter = spawn_wait(&a, &owner, &id);
    thread::sleep(ms(50));
    b.remove(&owner, &id).unwrap();
    assert_not_found(
        join_within(waiter, WAKE, "A's waiter on a removal"),
        &id,
        "A's wait on a task removed on B",
    );
}

#[test]
fn a_handler_on_one_instance_gets_input_answered_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let ask = InputRequest::elicitation(obj(json!({"message": "Proceed?"})));
    let (handle, task) = a.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask.clone()))
        .unwrap();
    let handler = thread::spawn(move || {
        let answers = waiting.wait_for_input(Some(BOUND))?;
        let done = waiting.resume()?.complete(tool_result("confirmed"))?;
        Ok::<_, Error>((answers, done))
    });
    thread::sleep(ms(100));
    assert!(!handler.is_finished());
    let requests = b.get(&owner, &id).unwrap();
    assert_eq!(requests.status(), TaskStatus::InputRequired);
    b.respond(
        &owner,
        &id,
        obj(json!({"confirm": {"action": "accept", "content": {"ok": true}}})),
    )
    .unwrap();
    let (answers, done) = join_within(handler, WAKE, "the handler on A").unwrap();
    assert_eq!(answers.get("confirm").unwrap()["content"]["ok"], true);
    assert_eq!(b.wait(&owner, &id, Some(BOUND)).unwrap(), done.into_any());

    // A cooperative cancel on B reaches the handler waiting on A.
    let (handle, task) = a.create(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask))
        .unwrap();
    let handler = thread::spawn(move || {
        let answers = waiting.wait_for_input(Some(BOUND));
        (waiting, answers)
    });
    thread::sleep(ms(100));
    b.request_cancel(&owner, &id).unwrap();
    let (waiting, answers) = join_within(handler, WAKE, "the handler on A");
    assert!(
        matches!(answers, Err(Error::CancelRequested { .. })),
        "{answers:?}"
    );
    drop(waiting.cancel().unwrap());
    assert_eq!(b.get(&owner, &id).unwrap().status(), TaskStatus::Cancelled);
}

#[test]
fn cancel_and_complete_racing_across_instances_have_one_winner() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let rounds = 200;
    let (mut cancels, mut completions) = (0, 0);
    for round in 0..rounds {
        let id = a.insert(&owner, req(round)).unwrap().id().to_string();
        let barrier = Arc::new(Barrier::new(2));
        let canceller = {
            let (a, owner, id) = (a.clone(), owner.clone(), id.clone());
            spawn_at_barrier(&barrier, move || {
                a.cancel(&owner, &id, Some("from a".into()))
            })
        };
        let completer = {
            let (b, owner, id) = (b.clone(), owner.clone(), id.clone());
            spawn_at_barrier(&barrier, move || {
                b.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("from b"))
            })
        };
        let cancelled = join_within(canceller, WAKE, "A.cancel");
        let completed = join_within(completer, WAKE, "B.store_result");
        let on_a = a.get(&owner, &id).unwrap();
        let on_b = b.get(&owner, &id).unwrap();
        assert_eq!(on_a, on_b, "round {round}: both instances read one task");
        match (cancelled, completed) {
            (Ok(task), Err(Error::TaskCancelled { task_id })) => {
                cancels += 1;
                assert_eq!(task_id, id);
                assert_eq!(on_a, task.into_any(), "round {round}");
                assert_eq!(on_a.outcome(), None, "round {round}: no result");
            }
            (Err(Error::AlreadyTerminal { task }), Ok(done)) => {
                completions += 1;
                assert_eq!(*task, done, "round {round}: the loser saw the winner");
                assert_eq!(on_a, done, "round {round}");
                assert_eq!(on_a.outcome(), Some(&tool_outcome("from b")));
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        }
    }
    assert_eq!(cancels + completions, rounds);
    eprintln!("{cancels} cancels and {completions} completions won");
}

#[test]
fn racing_results_across_instances_keep_the_first() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    for round in 0..100 {
        let id = a.insert(&owner, req(round)).unwrap().id().to_string();
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [(a.clone(), "a"), (b.clone(), "b")]
            .into_iter()
            .map(|(store, name)| {
                let (owner, id) = (owner.clone(), id.clone());
                spawn_at_barrier(&barrier, move || {
                    store.store_result(&owner, &id, TaskStatus::Completed, tool_outcome(name))
                })
            })
            .collect();
        let outcomes: Vec<_> = racers
            .into_iter()
            .map(|racer| join_within(racer, WAKE, "store_result"))
            .collect();
        let winners: Vec<_> = outcomes.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        let stored = b.get(&owner, &id).unwrap();
        assert_eq!(
            &stored, winners[0],
            "round {round}: the winner's result stays"
        );
        assert!(
            outcomes.iter().any(|r| matches!(
                r,
                Err(Error::IllegalTransition {
                    from: TaskStatus::Completed,
                    ..
                })
            )),
            "round {round}: the loser is told the task is completed: {outcomes:?}"
        );
    }
}

#[test]
fn a_waiter_survives_its_subscriber_connection_being_killed() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    // After the kill, the completion comes at once, a little later, or after reconnection.
    for (round, delay) in [0, 0, 1, 5, 20, 100].into_iter().enumerate() {
        let id = a.insert(&owner, req(1)).unwrap().id().to_string();
        let waiter = spawn_wait(&a, &owner, &id);
        // Both instances are subscribed, under the documented name.
        eventually("two named subscriber connections", || {
            server
                .pubsub_client_names()
                .iter()
                .filter(|name| *name == SUBSCRIBER_NAME)
                .count()
                >= 2
        });
        thread::sleep(ms(30));
        assert!(!waiter.is_finished(), "round {round}: the waiter blocks");
        let killed = server.kill_pubsub_clients();
        assert!(killed >= 2, "round {round}: killed {killed} subscribers");
        thread::sleep(ms(delay));
        let done = b
            .store_result(
                &owner,
                &id,
                TaskStatus::Completed,
                tool_outcome("after the kill"),
            )
            .unwrap();
        let waited = join_within(waiter, WAKE, "a waiter whose subscriber was killed");
        assert_eq!(
            waited.unwrap(),
            done,
            "round {round} (completion {delay} ms after the kill)"
        );
    }
    // The instance reconnected: its next waits are woken by events as before.
    let id = a.insert(&owner, req(2)).unwrap().id().to_string();
    let waiter = spawn_wait(&a, &owner, &id);
    thread::sleep(ms(100));
    let cancelled = b.cancel(&owner, &id, None).unwrap();
    assert_eq!(
        join_within(waiter, WAKE, "a waiter after reconnection").unwrap(),
        cancelled.into_any()
    );
}

#[test]
fn a_cursor_issued_by_one_instance_continues_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let mut created = Vec::new();
    for n in 0..6 {
        let store = if n % 2 == 0 { &a } else { &b };
        created.push(store.insert(&owner, req(n)).unwrap().id().to_string());
        thread::sleep(ms(2));
    }
    assert_eq!(ids(&a.list(&owner, None, 100).unwrap().tasks), created);
    assert_eq!(ids(&b.list(&owner, None, 100).unwrap().tasks), created);

    let first = a.list(&owner, None, 2).unwrap();
    assert_eq!(ids(&first.tasks), created[..2]);
    let cursor = first.next_cursor.expect("a cursor");
    // The cursor's task is removed on B between pages.
    b.remove(&owner, &created[1]).unwrap();
    let second = b.list(&owner, Some(&cursor), 2).unwrap();
    assert_eq!(ids(&second.tasks), created[2..4]);
    let third = a
        .list(&owner, Some(&second.next_cursor.expect("a cursor")), 2)
        .unwrap();
    assert_eq!(ids(&third.tasks), created[4..]);
    assert_eq!(third.next_cursor, None);
    let seen: Vec<_> = [first.tasks, second.tasks, third.tasks].concat();
    let unique: HashSet<_> = ids(&seen).into_iter().collect();
    assert_eq!(unique.len(), seen.len(), "no task repeated");

    // Not for another owner on B, nor for another deployment (prefix) on the same server.
    assert!(matches!(
        b.list(&bob(), Some(&cursor), 2),
        Err(Error::InvalidCursor { .. })
    ));
    let elsewhere = instance(&server, &fresh_prefix(), Limits::none());
    let _ = elsewhere.insert(&owner, req(9)).unwrap();
    assert!(matches!(
        elsewhere.list(&owner, Some(&cursor), 2),
        Err(Error::InvalidCursor { .. })
    ));
}

#[test]
fn created_at_follows_one_clock_across_instances() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let mut previous = None;
    for n in 0..40 {
        let (store, other) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let before = other.now().unwrap();
        let task = store.insert(&owner, req(n)).unwrap();
        let after = other.now().unwrap();
        let created = task.created_at();
        assert!(
            before <= created && created <= after,
            "task {n}: createdAt {created:?} is outside the server's time around it \
             ({before:?}..{after:?})"
        );
        if let Some(previous) = previous {
            assert!(
                created >= previous,
                "task {n}: createdAt {created:?} is before the previous task's {previous:?}"
            );
        }
        previous = Some(created);
    }
    // Listed in creation order: createdAt never decreases down the list.
    let listed = a.list(&owner, None, 100).unwrap().tasks;
    assert_eq!(listed.len(), 40);
    assert!(
        listed
            .windows(2)
            .all(|pair| pair[0].created_at() <= pair[1].created_at())
    );
    // lastUpdatedAt moves forward whichever instance writes.
    let id = a.insert(&owner, req(99)).unwrap().id().to_string();
    let mut last = a.get(&owner, &id).unwrap().last_updated_at();
    for n in 0..6 {
        let store = if n % 2 == 0 { &b } else { &a };
        let message = format!("step {n}");
        let status = if n % 2 == 0 {
            TaskStatus::InputRequired
        } else {
            TaskStatus::Working
        };
        let task = store
            .update_status(&owner, &id, status, Some(message))
            .unwrap();
        assert!(task.last_updated_at() >= last, "step {n} went backwards");
        assert!(task.last_updated_at() >= task.created_at());
        last = task.last_updated_at();
    }
}

#[test]
fn the_per_owner_limit_is_shared_by_the_instances() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let limits = Limits {
        per_owner: Some(3),
        total: None,
    };
    let (a, b) = (
        instance(&server, &prefix, limits),
        instance(&server, &prefix, limits),
    );
    let owner = alice();
    let _ = a.insert(&owner, req(1)).unwrap();
    let _ = b.insert(&owner, req(2)).unwrap();
    let _ = a.insert(&owner, req(3)).unwrap();
    for store in [&a, &b] {
        assert!(matches!(
            store.insert(&owner, req(4)),
            Err(Error::LimitExceeded {
                limit: 3,
                scope: LimitScope::PerOwner
            })
        ));
    }
    assert_eq!(b.list(&owner, None, 100).unwrap().tasks.len(), 3);
    // Concurrent inserts from both instances never exceed the limit together.
    let owner = Owner::new("carol");
    let barrier = Arc::new(Barrier::new(8));
    let inserters: Vec<_> = (0..8)
        .map(|n| {
            let store = if n % 2 == 0 { a.clone() } else { b.clone() };
            let owner = owner.clone();
            spawn_at_barrier(&barrier, move || store.insert(&owner, req(n)).is_ok())
        })
        .collect();
    let created = inserters
        .into_iter()
        .map(|inserter| join_within(inserter, WAKE, "insert"))
        .filter(|&ok| ok)
        .count();
    assert_eq!(created, 3, "exactly the limit was created");
    assert_eq!(a.list(&owner, None, 100).unwrap().tasks.len(), 3);
}

#[test]
fn subscribers_of_one_instance_see_changes_made_on_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let (seen, _) = recorder(&a);
    let owner = alice();
    let id = b.insert(&owner, req(1)).unwrap().id().to_string();
    b.update_status(&owner, &id, TaskStatus::InputRequired, Some("?".into()))
        .unwrap();
    let done = b
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("ok"))
        .unwrap();
    eventually("B's completion reaches A's subscriber", || {
        seen.lock()
            .unwrap()
            .iter()
            .any(|change| change.task.status() == TaskStatus::Completed)
    });
    let seen = seen.lock().unwrap();
    let statuses: Vec<_> = seen.iter().map(|change| change.task.status()).collect();
    assert_eq!(statuses, [TaskStatus::InputRequired, TaskStatus::Completed]);
    assert!(seen.iter().all(|change| change.owner == owner));
    assert_eq!(seen[1].task, done);
}

#[test]
fn an_expired_task_is_gone_for_every_instance() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let short = TtlPolicy::new(Some(300)).with_min(50).with_max(600_000);
    let build = || {
        RedisTaskStore::builder(&server.url())
            .prefix(prefix.as_str())
            .ttl_policy(short)
            .build()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let owner = alice();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    let started = Instant::now();
    let waiter = spawn_wait(&b, &owner, &id);
    assert_not_found(
        join_within(waiter, WAKE, "B's waiter on an expiring task"),
        &id,
        "B's wait on a task expiring",
    );
    assert!(started.elapsed() >= ms(250), "{:?}", started.elapsed());
    for store in [&a, &b] {
        assert_not_found(store.get(&owner, &id), &id, "an expired task");
        assert!(store.list(&owner, None, 10).unwrap().tasks.is_empty());
    }
}

/// An instance decides a change first on the copy of the task it last wrote; when another
/// instance changed the task since, the write must find another version and the change
/// be decided again on the task as it is (not applied to the stale copy).
#[test]
fn a_change_decided_on_a_stale_copy_is_decided_again() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let (a, b) = pair(&server);
    let owner = alice();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    // A wrote the task last (working); B moves it on.
    a.update_status(&owner, &id, TaskStatus::Working, Some("a".into()))
        .unwrap();
    b.update_status(&owner, &id, TaskStatus::InputRequired, Some("b".into()))
        .unwrap();
    // On A's copy this is a message update of a working task; on the task as it is, a
    // resume from input_required.
    let resumed = a
        .update_status(&owner, &id, TaskStatus::Working, Some("again".into()))
        .unwrap();
    assert_eq!(resumed.status(), TaskStatus::Working);
    let seen = b.get(&owner, &id).unwrap();
    assert_eq!(
        seen, resumed,
        "B sees what A's change made of the task as it was"
    );
    assert_eq!(seen.status_message(), Some("again"));

    // A's copy says working; B finished the task: A's change is refused by the task as it is.
    a.update_status(&owner, &id, TaskStatus::Working, Some("mine".into()))
        .unwrap();
    b.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("b"))
        .unwrap();
    let refused = a.update_status(&owner, &id, TaskStatus::InputRequired, None);
    assert!(
        matches!(
            refused,
            Err(Error::IllegalTransition {
                from: TaskStatus::Completed,
                ..
            })
        ),
        "{refused:?}"
    );
    let cancel = a.cancel(&owner, &id, None);
    assert!(
        matches!(cancel, Err(Error::AlreadyTerminal { .. })),
        "{cancel:?}"
    );
    assert_eq!(
        b.get(&owner, &id).unwrap().status(),
        TaskStatus::Completed,
        "the first terminal state stays"
    );
}

/// Resets the server's statistics (`CONFIG RESETSTAT`).
fn reset_stats(server: &RedisServer) {
    assert_eq!(server.command(&["CONFIG", "RESETSTAT"]), "+OK");
}

/// The calls of `command` the server counted since its statistics were reset (inner
/// commands of scripts included; `EVALSHA` and `PTTL` only come from clients).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let prefix = format!("cmdstat_{command}:calls=");
    server
        .command(&["INFO", "commandstats"])
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

/// A change is one round trip when the instance knows the task's latest version, also
/// when another instance wrote it last (it heard of the write); two, without a read, when
/// the version moved unheard; an instance that holds no copy (it started after the last
/// write) reads first, once.
#[test]
fn a_change_is_one_round_trip_on_any_instance_that_heard_of_the_last_write() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // No lease thread: its scans would count as round trips.
    let build = || {
        RedisTaskStore::builder(&server.url())
            .prefix(prefix.as_str())
            .ttl_policy(policy())
            .lease_policy(LeasePolicy::leave_until_ttl())
            .build()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let (seen, _) = recorder(&b);
    let owner = alice();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    a.update_status(&owner, &id, TaskStatus::InputRequired, Some("a".into()))
        .unwrap();
    // B's subscribers hear of a write after B took note of it.
    eventually("A's change reaches B", || !seen.lock().unwrap().is_empty());
    reset_stats(&server);
    let resumed = b
        .update_status(&owner, &id, TaskStatus::Working, Some("b".into()))
        .unwrap();
    assert_eq!(resumed.status(), TaskStatus::Working);
    assert_eq!(
        (calls(&server, "evalsha"), calls(&server, "pttl")),
        (1, 0),
        "one write, no read"
    );
    assert_eq!(a.get(&owner, &id).unwrap(), resumed);

    // A write no instance heard of (the version moved behind their backs): B's write finds
    // another version, and the script's answer is the task as it is, decided on again
    // without a read.
    let key = server.command(&["KEYS", &format!("{prefix}:*:t:{id}")]);
    assert_eq!(server.command(&["HINCRBY", &key, "v", "1"]), ":4");
    reset_stats(&server);
    let moved = b
        .update_status(&owner, &id, TaskStatus::InputRequired, Some("b2".into()))
        .unwrap();
    assert_eq!(
        (calls(&server, "evalsha"), calls(&server, "pttl")),
        (2, 0),
        "a refused write and a write, no read"
    );
    assert_eq!(a.get(&owner, &id).unwrap(), moved);
    assert_eq!(server.command(&["HGET", &key, "v"]), "5");

    // An instance built after the last write reads the task once, then writes.
    let c = build();
    reset_stats(&server);
    c.update_status(&owner, &id, TaskStatus::Working, Some("c".into()))
        .unwrap();
    assert_eq!(
        (calls(&server, "evalsha"), calls(&server, "pttl")),
        (1, 1),
        "one read, one write"
    );
    // It wrote the task last: the next change is one write again.
    reset_stats(&server);
    let cancelled = c.cancel(&owner, &id, Some("stop".into())).unwrap();
    assert_eq!(
        (calls(&server, "evalsha"), calls(&server, "pttl")),
        (1, 0),
        "one write, no read"
    );
    assert_eq!(b.get(&owner, &id).unwrap(), cancelled.into_any());
}

/// Bad settings are typed errors that say what to fix, before or without a server.
#[test]
fn bad_settings_are_typed_errors() {
    let braces = RedisTaskStore::builder("redis://127.0.0.1:1")
        .prefix("tasks{a}")
        .build()
        .unwrap_err();
    assert!(
        matches!(&braces, Error::InvalidConfig(m) if m.contains("brace")),
        "{braces}"
    );
    let url = RedisTaskStore::open("not a url").unwrap_err();
    assert!(
        matches!(&url, Error::InvalidConfig(m) if m.contains("not a Redis URL")),
        "{url}"
    );
    let policy = RedisTaskStore::builder("redis://127.0.0.1:1")
        .ttl_policy(TtlPolicy::new(Some(10_000)).with_max(1_000))
        .build()
        .unwrap_err();
    assert!(matches!(policy, Error::InvalidConfig(_)), "{policy}");
    let dir = std::env::temp_dir().join(format!("no-redis-{}", uuid::Uuid::new_v4().simple()));
    let unreachable =
        RedisTaskStore::open(&format!("redis+unix://{}/redis.sock", dir.display())).unwrap_err();
    assert!(matches!(unreachable, Error::Store { .. }), "{unreachable}");
    assert_eq!(unreachable.code(), -32603);
}

/// An owner's index and sequence counter (what its listings walk) live as long as its
/// longest-lived task, and without expiry while one of its tasks has none; tasks created
/// faster than the clock ticks still list in creation order.
#[test]
fn an_owners_index_and_counter_last_as_long_as_its_longest_task() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let store = instance(&server, &prefix, Limits::none());
    let owner = alice();
    let tag = mcp_tasks::backend::owner_tag(&owner);
    let key = |suffix: &str| format!("{prefix}:{{{tag}}}:{suffix}");
    let expiry = |key: &str| -> i64 {
        let reply = server.command(&["PEXPIRETIME", key]);
        reply
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("PEXPIRETIME {key} answered {reply}"))
    };
    let (index, counter) = (key("i"), key("n"));

    // Many in a row: the sequence runs ahead of the clock, and still orders them.
    let created: Vec<String> = (0..40)
        .map(|n| store.insert(&owner, req(n)).unwrap().id().to_string())
        .collect();
    let listed = store.list(&owner, None, 100).unwrap().tasks;
    let mut in_order = ids(&listed);
    in_order.retain(|id| created.contains(id));
    assert_eq!(in_order, created, "listed in creation order");
    let last = expiry(&key(&format!("t:{}", created[39])));
    assert!(last > 0, "a task of the default ttl expires");
    assert_eq!(
        expiry(&index),
        last,
        "the index lasts as long as the last task"
    );
    assert_eq!(
        expiry(&counter),
        last,
        "the counter lasts as long as the last task"
    );

    // A shorter-lived task moves neither.
    let short = store.insert(&owner, req(40).with_ttl(Some(1_000))).unwrap();
    assert!(expiry(&key(&format!("t:{}", short.id()))) < last);
    assert_eq!((expiry(&index), expiry(&counter)), (last, last));

    // A task without expiry (another instance's policy allows it) keeps both for good,
    // and a later task with one leaves them so.
    let forever = RedisTaskStore::builder(&server.url())
        .prefix(prefix.as_str())
        .ttl_policy(TtlPolicy::new(None).with_unlimited_allowed(true))
        .build()
        .unwrap();
    let kept = forever.insert(&owner, req(41)).unwrap();
    assert_eq!(kept.ttl(), None);
    assert_eq!((expiry(&index), expiry(&counter)), (-1, -1));
    let _ = store.insert(&owner, req(42)).unwrap();
    assert_eq!((expiry(&index), expiry(&counter)), (-1, -1));

    // With every task of the index removed, the index is gone; the next task files a new
    // one that expires with it, after the ones before it.
    let other = bob();
    let tag = mcp_tasks::backend::owner_tag(&other);
    let index = format!("{prefix}:{{{tag}}}:i");
    let first = store.insert(&other, req(1)).unwrap().id().to_string();
    store.remove(&other, &first).unwrap();
    assert_eq!(server.command(&["EXISTS", &index]), ":0");
    let next = store.insert(&other, req(2)).unwrap().id().to_string();
    let next_expiry = expiry(&format!("{prefix}:{{{tag}}}:t:{next}"));
    assert!(next_expiry > 0);
    assert_eq!(expiry(&index), next_expiry);
    assert_eq!(ids(&store.list(&other, None, 10).unwrap().tasks), [next]);
}
