//! Races on one task, repeated many times: whatever the interleaving, exactly one terminal
//! state wins, a cancelled task never gains a result, a stored result is never replaced,
//! and every waiter returns with exactly what was stored.
//!
//! Each iteration releases its contenders together through a barrier and must end within a
//! deadline, so a deadlock or a lost wakeup fails the test instead of hanging it.

use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::TaskStore;
use mcp_tasks::{
    AnyTask, Error, InputRequests, JsonObject, Limits, Outcome, Owner, TaskRegistry, TaskRequest,
    TaskStatus,
};
use serde_json::json;

const ITERATIONS: usize = 2_000;
/// The timeout of waits that an event must end: never reached when the registry works.
const BOUND: Duration = Duration::from_secs(30);
/// How soon the event must end them (much less than [`BOUND`], so that a lost wakeup cannot
/// hide behind a waiter that times out, looks again and finds the task finished).
const WAKE: Duration = Duration::from_secs(5);

fn registry() -> TaskRegistry {
    TaskRegistry::builder()
        .limits(Limits::none())
        .build()
        .unwrap()
}

fn result(text: &str) -> JsonObject {
    match json!({"content": [{"type": "text", "text": text}]}) {
        serde_json::Value::Object(map) => map,
        _ => unreachable!(),
    }
}

/// What one contender did: the task it left, or its refusal.
type Attempt = Result<AnyTask, Error>;

/// One contender of a race.
type Contender = Box<dyn FnOnce() -> Attempt + Send>;

/// A contender that works by id.
type ById = Box<dyn FnOnce(&TaskRegistry, &Owner, &str) -> Attempt + Send>;

/// Runs the contenders at once and returns what each got, in order. Fails the test if
/// they have not all finished within [`WAKE`]: a deadlock, or a waiter that was not woken.
fn race(contenders: Vec<Contender>) -> Vec<Attempt> {
    let barrier = Arc::new(Barrier::new(contenders.len()));
    let running: Vec<_> = contenders
        .into_iter()
        .map(|contender| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                contender()
            })
        })
        .collect();
    let deadline = Instant::now() + WAKE;
    while !running.iter().all(JoinHandle::is_finished) {
        assert!(
            Instant::now() < deadline,
            "a contender still runs after {WAKE:?}: deadlock or lost wakeup"
        );
        thread::sleep(Duration::from_micros(50));
    }
    running.into_iter().map(|t| t.join().unwrap()).collect()
}

/// Checks the end of a race: exactly one contender won, the stored task is what the winner
/// left, and every loser was refused with a `-32602` error that explains why.
fn check_one_winner(
    registry: &TaskRegistry,
    owner: &Owner,
    id: &str,
    attempts: &[Attempt],
) -> AnyTask {
    let winners: Vec<&AnyTask> = attempts.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one terminal state wins: {attempts:?}"
    );
    let stored = registry.result(owner, id).unwrap();
    assert_eq!(&stored, winners[0], "the winner's task is what is stored");
    for err in attempts.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(err.code(), -32602, "{err:?}");
        match (stored.status(), err) {
            (
                TaskStatus::Cancelled,
                Error::TaskCancelled { .. } | Error::AlreadyTerminal { .. },
            ) => {}
            (_, Error::IllegalTransition { from, .. }) => assert_eq!(*from, stored.status()),
            (_, Error::AlreadyTerminal { task }) => assert_eq!(**task, stored),
            (status, other) => panic!("{status}: unexpected refusal {other:?}"),
        }
    }
    if stored.status() == TaskStatus::Cancelled {
        assert_eq!(
            stored.outcome(),
            None,
            "a cancelled task never gains a result"
        );
    }
    stored
}

#[test]
fn complete_racing_cancel_has_exactly_one_winner() {
    let registry = registry();
    let owner = Owner::new("alice");
    let (mut completed, mut cancelled) = (0, 0);
    for n in 0..ITERATIONS {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(n as i64, "tools/call"))
            .unwrap();
        let id = task.id().to_string();
        let payload = result(&format!("result {n}"));
        let attempts = race(vec![
            Box::new({
                let payload = payload.clone();
                move || handle.complete(payload).map(|t| t.into_any())
            }),
            Box::new({
                let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
                move || registry.cancel(&owner, &id, None).map(|t| t.into_any())
            }),
        ]);
        let stored = check_one_winner(&registry, &owner, &id, &attempts);
        match stored.status() {
            TaskStatus::Completed => {
                completed += 1;
                assert_eq!(stored.outcome(), Some(&Outcome::Result(payload)));
            }
            TaskStatus::Cancelled => {
                cancelled += 1;
                assert_eq!(
                    attempts[0].as_ref().unwrap_err(),
                    &Error::TaskCancelled {
                        task_id: id.clone()
                    }
                );
                // Nothing can be stored later either.
                assert!(
                    registry
                        .store_result(
                            &owner,
                            &id,
                            TaskStatus::Completed,
                            Outcome::Result(result("late"))
                        )
                        .is_err()
                );
                assert_eq!(registry.result(&owner, &id).unwrap(), stored);
            }
            other => panic!("{other}"),
        }
        registry.remove(&owner, &id).unwrap();
    }
    assert_eq!(completed + cancelled, ITERATIONS);
    eprintln!("complete vs cancel: {completed} completed, {cancelled} cancelled");
}

#[test]
fn complete_fail_store_result_and_cancel_race_with_one_winner() {
    let registry = registry();
    let owner = Owner::new("alice");
    let mut wins = [0usize; 5];
    for n in 0..ITERATIONS {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(n as i64, "tools/call"))
            .unwrap();
        let id = task.id().to_string();
        // Half of the time the handler is waiting for input when the race starts.
        let handle = if n % 2 == 0 {
            Ok(handle)
        } else {
            Err(handle.require_input(InputRequests::new()).unwrap())
        };
        let by_handle = result(&format!("handle {n}"));
        let by_id = result(&format!("by id {n}"));
        let failure = Outcome::error(-32000, format!("failure {n}"));
        let by_registry = |f: ById| {
            let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
            Box::new(move || f(&registry, &owner, &id)) as Contender
        };
        let attempts = race(vec![
            Box::new({
                let payload = by_handle.clone();
                move || match handle {
                    Ok(working) => working.complete(payload).map(|t| t.into_any()),
                    Err(waiting) => waiting.complete(payload).map(|t| t.into_any()),
                }
            }),
            by_registry(Box::new({
                let payload = by_id.clone();
                move |r, o, i| r.store_result(o, i, TaskStatus::Completed, Outcome::Result(payload))
            })),
            by_registry(Box::new({
                let failure = failure.clone();
                move |r, o, i| r.store_result(o, i, TaskStatus::Failed, failure)
            })),
            by_registry(Box::new(|r, o, i| {
                r.cancel(o, i, Some("stop".into())).map(|t| t.into_any())
            })),
            by_registry(Box::new(|r, o, i| {
                r.update_status(o, i, TaskStatus::Cancelled, None)
            })),
        ]);
        let stored = check_one_winner(&registry, &owner, &id, &attempts);
        let winner = attempts.iter().position(Result::is_ok).unwrap();
        wins[winner] += 1;
        let expected = match winner {
            0 => Some(Outcome::Result(by_handle)),
            1 => Some(Outcome::Result(by_id)),
            2 => Some(failure),
            _ => None,
        };
        assert_eq!(stored.outcome(), expected.as_ref(), "winner {winner}");
        assert_eq!(
            stored.status(),
            [
                TaskStatus::Completed,
                TaskStatus::Completed,
                TaskStatus::Failed,
                TaskStatus::Cancelled,
                TaskStatus::Cancelled
            ][winner]
        );
        registry.remove(&owner, &id).unwrap();
    }
    assert_eq!(wins.iter().sum::<usize>(), ITERATIONS);
    eprintln!("wins (handle, store completed, store failed, cancel, update cancelled): {wins:?}");
}

#[test]
fn a_dropped_handle_racing_a_result_by_id_fails_only_an_unfinished_task() {
    let registry = registry();
    let owner = Owner::new("alice");
    for n in 0..ITERATIONS {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(n as i64, "tools/call"))
            .unwrap();
        let id = task.id().to_string();
        let payload = result(&format!("{n}"));
        let attempts = race(vec![
            Box::new(move || {
                drop(handle);
                Err(Error::Internal("dropped".into()))
            }),
            Box::new({
                let (registry, owner, id, payload) =
                    (registry.clone(), owner.clone(), id.clone(), payload.clone());
                move || {
                    registry.store_result(
                        &owner,
                        &id,
                        TaskStatus::Completed,
                        Outcome::Result(payload),
                    )
                }
            }),
        ]);
        let stored = registry.result(&owner, &id).unwrap();
        match &attempts[1] {
            Ok(task) => {
                assert_eq!(&stored, task, "the result stored first is kept");
                assert_eq!(stored.outcome(), Some(&Outcome::Result(payload)));
            }
            Err(err) => {
                assert_eq!(stored.status(), TaskStatus::Failed, "{err:?}");
                assert_eq!(stored.outcome().unwrap().as_error().unwrap().code, -32603);
            }
        }
        registry.remove(&owner, &id).unwrap();
    }
}

#[test]
fn waiters_racing_the_end_of_a_task_always_return_what_was_stored() {
    let registry = registry();
    let owner = Owner::new("alice");
    for n in 0..ITERATIONS {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(n as i64, "tools/call"))
            .unwrap();
        let id = task.id().to_string();
        let waiter = |registry: &TaskRegistry| {
            let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
            Box::new(move || registry.wait(&owner, &id, Some(BOUND))) as Contender
        };
        let ender: Contender = match n % 4 {
            0 => Box::new(move || handle.complete(result("done")).map(|t| t.into_any())),
            1 => {
                let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
                Box::new(move || {
                    let cancelled = registry.cancel(&owner, &id, None).map(|t| t.into_any());
                    drop(handle);
                    cancelled
                })
            }
            2 => Box::new(move || {
                drop(handle);
                Err(Error::Internal("dropped".into()))
            }),
            _ => {
                let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
                Box::new(move || {
                    let _ = handle.detach();
                    registry.remove(&owner, &id)
                })
            }
        };
        let attempts = race(vec![
            waiter(&registry),
            waiter(&registry),
            ender,
            waiter(&registry),
        ]);
        let stored = registry.get(&owner, &id);
        for (i, got) in attempts.iter().enumerate() {
            if i == 2 {
                continue;
            }
            match (&stored, got) {
                (Ok(stored), Ok(got)) => {
                    assert!(stored.is_terminal());
                    assert_eq!(got, stored, "iteration {n}");
                }
                // Removed: every waiter sees it gone, never a timeout.
                (Err(gone), Err(got)) => assert_eq!(got, gone, "iteration {n}"),
                (stored, got) => panic!("iteration {n}: stored {stored:?}, waiter got {got:?}"),
            }
        }
        let _ = registry.remove(&owner, &id);
    }
    assert!(registry.is_empty());
}

#[test]
fn handler_steps_racing_cancel_never_leave_a_result_on_a_cancelled_task() {
    let registry = registry();
    let owner = Owner::new("alice");
    let mut cancelled = 0;
    for n in 0..ITERATIONS {
        let (handle, task) = registry
            .create(&owner, TaskRequest::new(n as i64, "tools/call"))
            .unwrap();
        let id = task.id().to_string();
        let attempts = race(vec![
            Box::new(move || {
                // Each step may find the task cancelled; the handler then stops.
                let handle = handle.require_input(InputRequests::new())?;
                let handle = handle.resume()?;
                handle.set_status_message(Some("almost".into()))?;
                handle.complete(result("done")).map(|t| t.into_any())
            }),
            Box::new({
                let (registry, owner, id) = (registry.clone(), owner.clone(), id.clone());
                move || registry.cancel(&owner, &id, None).map(|t| t.into_any())
            }),
        ]);
        let stored = check_one_winner(&registry, &owner, &id, &attempts);
        if stored.status() == TaskStatus::Cancelled {
            cancelled += 1;
            assert_eq!(
                attempts[0].as_ref().unwrap_err(),
                &Error::TaskCancelled {
                    task_id: id.clone()
                }
            );
            assert_eq!(
                stored.status_message(),
                None,
                "the cancel's message, not the handler's"
            );
        } else {
            assert_eq!(stored.outcome(), Some(&Outcome::Result(result("done"))));
        }
        registry.remove(&owner, &id).unwrap();
    }
    eprintln!("handler steps vs cancel: {cancelled} cancelled of {ITERATIONS}");
}
