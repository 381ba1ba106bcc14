//! The admin operations ([`TaskAdmin`]) held against a backend: listing across owners
//! with filters and pages (while tasks change), show, cancel and fail (a finished task
//! answers what it was found in), hand-over then claim by another instance, drain, purge
//! and instances.
//!
//! Run them all with [`admin_suite!`](crate::admin_suite), for a [`Backend`] whose store
//! is a [`TaskAdmin`] (every store over a driver, and the registry).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tasks::admin::{
    Action, AdminAction, AdminError, AdminPage, ChangeKind, TaskAdmin, TaskQuery, View,
};
use mcp_tasks::{Error, Outcome, Owner, Redelivery, TaskStatus, TaskStore};
use serde_json::json;

use crate::Backend;
use crate::support::{WAKE, alice, bob, claim_within, ms, obj, req, tool_result};

fn ids(page: &AdminPage) -> Vec<String> {
    page.rows
        .iter()
        .map(|row| row.key.id().to_string())
        .collect()
}

fn redeliverable(n: i64, tool: &str, max: u32) -> mcp_tasks::TaskRequest {
    let job = obj(json!({"tool": tool, "arguments": {}}));
    req(n)
        .with_tool(tool)
        .with_redelivery(Redelivery::new(max, job))
}

/// Every page of `query`, at most `limit` each, through to the end.
fn walk<S: TaskAdmin>(store: &S, query: &TaskQuery, limit: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1_000 {
        let page = store.list_tasks(query, cursor.as_deref(), limit).unwrap();
        seen.extend(ids(&page));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return seen,
        }
    }
    panic!("the walk did not end within 1,000 pages");
}

/// Lists every owner's tasks in creation order, by status, owner, age and tool, in pages
/// that fill up to their limit; a walk lists once every task stored all along while
/// others come and go; a malformed cursor is refused.
pub fn admin_lists_across_owners_with_filters_and_pages<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let carol = Owner::new("carol");
    let owners = [alice(), bob(), carol.clone()];
    let mut created = Vec::new();
    for n in 0..24 {
        let owner = &owners[n % 3];
        let request = match n % 4 {
            0 => redeliverable(n as i64, "fetch", 3),
            // Runs once, and keeps its tool all the same.
            2 => req(n as i64).with_tool("fetch"),
            _ => req(n as i64),
        };
        created.push(store.insert(owner, request).unwrap().id().to_string());
        // Creation times apart, for the age filter.
        std::thread::sleep(ms(2));
    }
    assert_eq!(
        walk(&store, &TaskQuery::all(), 5),
        created,
        "every owner's, in order"
    );

    // A selective filter fills its page.
    let carols = store
        .list_tasks(&TaskQuery::all().of_owner(carol.clone()), None, 3)
        .unwrap();
    assert_eq!(carols.rows.len(), 3);
    assert!(carols.rows.iter().all(|row| row.key.owner() == &carol));
    assert!(carols.next_cursor.is_some());
    assert_eq!(
        walk(&store, &TaskQuery::all().of_owner(carol.clone()), 3).len(),
        8
    );

    // Statuses are pushed down.
    let _ = store.cancel(&alice(), &created[3], None).unwrap();
    let _ = store.cancel(&carol, &created[5], None).unwrap();
    assert_eq!(
        walk(
            &store,
            &TaskQuery::all().with_status(TaskStatus::Cancelled),
            1
        ),
        vec![created[3].clone(), created[5].clone()]
    );
    assert_eq!(
        walk(
            &store,
            &TaskQuery::all().with_status(TaskStatus::Working),
            100
        )
        .len(),
        22
    );

    // Age: created before the 13th task.
    let thirteenth = store.get(&bob(), &created[13]).unwrap().created_at();
    let before = walk(&store, &TaskQuery::all().created_before(thirteenth), 4);
    assert_eq!(before[..], created[..13]);
    let after = walk(&store, &TaskQuery::all().created_after(thirteenth), 4);
    assert_eq!(after[..], created[14..]);

    // Tool: the one every task keeps, redeliverable or not, finished or not.
    let _ = store.cancel(&bob(), &created[4], None).unwrap();
    let fetchers = walk(&store, &TaskQuery::all().of_tool("fetch"), 2);
    let expected: Vec<String> = created.iter().step_by(2).cloned().collect();
    assert_eq!(fetchers, expected);
    assert!(walk(&store, &TaskQuery::all().of_tool("nothing"), 10).is_empty());
    assert_eq!(
        walk(&store, &TaskQuery::all().with_min_attempts(1), 10).len(),
        5,
        "the unfinished redeliverable ones (a finished task keeps no attempts)"
    );

    // A walk while tasks come and go: each task stored all along, once.
    let mut going: Vec<(Owner, String)> = (0..24)
        .filter(|n| n % 5 == 1)
        .map(|n| (owners[n % 3].clone(), created[n].clone()))
        .collect();
    let staying: Vec<&String> = (0..24)
        .filter(|n| n % 5 != 1)
        .map(|n| &created[n])
        .collect();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for round in 0.. {
        assert!(round < 100, "the walk ends");
        let page = store
            .list_tasks(&TaskQuery::all(), cursor.as_deref(), 4)
            .unwrap();
        seen.extend(ids(&page));
        if let Some((owner, id)) = going.pop() {
            let _ = store.remove(&owner, &id).unwrap();
        }
        let _ = store.insert(&owners[round % 3], req(1_000)).unwrap();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no task listed twice");
    for id in staying {
        assert!(
            seen.contains(id),
            "{id} was stored all along and not listed"
        );
    }

    match store.list_tasks(&TaskQuery::all(), Some("v1.zz.nonsense"), 10) {
        Err(AdminError::InvalidCursor { .. }) => {}
        other => panic!("a malformed cursor answered {other:?}"),
    }
}

/// Shows a task whole; cancels a working task (the actor in its status message) and
/// answers what it found for a finished one; fails one with `-32603` and the reason.
pub fn admin_shows_cancels_and_fails<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let (handle, task) = store
        .create(&alice(), redeliverable(1, "sleep", 3))
        .unwrap();
    let a = task.id().to_string();
    handle.checkpoint(json!({"step": 1})).unwrap();
    let b = store.insert(&bob(), req(2)).unwrap().id().to_string();

    let details = store.show_task(&a).unwrap();
    assert_eq!(details.row.key.owner(), &alice());
    assert_eq!(details.row.task.status(), TaskStatus::Working);
    assert_eq!(
        details.row.task.attempts().map(|a| (a.attempt(), a.max())),
        Some((1, 3))
    );
    assert_eq!(
        details.checkpoint_bytes,
        Some(json!({"step": 1}).to_string().len())
    );
    if let Some(job) = &details.job {
        assert_eq!(job.tool.as_deref(), Some("sleep"));
        assert!(
            details.row.lease_holder.is_some(),
            "a leased task names its holder"
        );
        assert!(details.row.leased_until.is_some());
    }
    match store.show_task("00000000-0000-4000-8000-000000000000") {
        Err(AdminError::NotFound { .. }) => {}
        other => panic!("an unknown id showed {other:?}"),
    }

    let record = store.cancel_task(&a, "alice-ops").unwrap();
    assert_eq!(record.action, AdminAction::Cancel);
    assert_eq!(
        (record.from, record.to),
        (TaskStatus::Working, TaskStatus::Cancelled)
    );
    assert_eq!(record.actor, "alice-ops");
    let cancelled = store.get(&alice(), &a).unwrap();
    assert_eq!(cancelled.status(), TaskStatus::Cancelled);
    assert_eq!(
        cancelled.status_message(),
        Some("cancelled by admin alice-ops")
    );
    match handle.complete(tool_result("late")) {
        Err(Error::TaskCancelled { .. }) => {}
        other => panic!("a cancelled task took a result: {other:?}"),
    }
    match store.cancel_task(&a, "again") {
        Err(AdminError::AlreadyFinished { status, .. }) => {
            assert_eq!(status, TaskStatus::Cancelled);
        }
        other => panic!("cancelling a cancelled task answered {other:?}"),
    }

    store
        .fail_task(&b, "the upstream is gone", "bob-ops")
        .unwrap();
    let failed = store.get(&bob(), &b).unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    let error = failed.outcome().and_then(Outcome::as_error).unwrap();
    assert_eq!(error.code, -32603);
    assert_eq!(error.message, "the upstream is gone");
    assert_eq!(
        failed.status_message(),
        Some("failed by admin bob-ops: the upstream is gone")
    );
    match store.fail_task(&b, "twice", "bob-ops") {
        Err(AdminError::AlreadyFinished { status, .. }) => assert_eq!(status, TaskStatus::Failed),
        other => panic!("failing a failed task answered {other:?}"),
    }
    let answers = store
        .act(&[&a, &b, "nope"], &Action::Cancel, "many")
        .unwrap();
    assert!(matches!(
        answers[0].1,
        Err(AdminError::AlreadyFinished { .. })
    ));
    assert!(matches!(
        answers[1].1,
        Err(AdminError::AlreadyFinished { .. })
    ));
    assert!(matches!(answers[2].1, Err(AdminError::NotFound { .. })));
}

/// Hands a running task over (another instance claims it at once, its old handler
/// superseded), lists the instances holding tasks, drains one, and lists stalled tasks.
/// A store of one process hands nothing over and sees no instance.
pub fn admin_hands_over_and_drains<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let (old, task) = store
        .create(&alice(), redeliverable(1, "sleep", 3))
        .unwrap();
    let id = task.id().to_string();
    let (once, _) = store.create(&bob(), req(2)).unwrap();
    let Some(other) = backend.another_instance(&store) else {
        match store.hand_over_task(&id, "ops") {
            Err(AdminError::NotHandedOver { .. }) => {}
            other => panic!("a store of one process handed over: {other:?}"),
        }
        assert!(store.instances().unwrap().is_empty());
        let _ = old.complete(tool_result("done")).unwrap();
        let _ = once.complete(tool_result("done")).unwrap();
        return;
    };
    let first = store
        .show_task(&id)
        .unwrap()
        .row
        .lease_holder
        .expect("leased");
    let instances = other.instances().unwrap();
    let mine = instances
        .iter()
        .find(|i| i.name == first)
        .expect("the creator");
    assert_eq!((mine.tasks, mine.live_leases, mine.alive), (2, 2, true));
    assert_eq!(
        other
            .list_tasks(&TaskQuery::all().held_by(first.clone()), None, 10)
            .unwrap()
            .rows
            .len(),
        2
    );

    // A task that runs once cannot be handed over.
    let once_id = once.id().to_string();
    match other.hand_over_task(&once_id, "ops") {
        Err(AdminError::NotHandedOver { why, .. }) => assert!(why.contains("redeliverable")),
        answer => panic!("{answer:?}"),
    }

    let record = other.hand_over_task(&id, "ops").unwrap();
    assert_eq!(record.action, AdminAction::HandOver);
    let (claim, _) = claim_within(&other, WAKE);
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!(claim.attempts.attempt(), 2);
    let new = mcp_tasks::TaskHandle::claimed(other.clone(), claim);
    match old.complete(tool_result("late")) {
        Err(Error::Superseded { .. }) => {}
        answer => panic!("the old holder's result went through: {answer:?}"),
    }
    let second = other
        .show_task(&id)
        .unwrap()
        .row
        .lease_holder
        .expect("leased");
    assert_ne!(second, first, "held by the claiming instance");

    // Drain the second: its one task goes back to a claim.
    let report = store.drain(&second, "ops").unwrap();
    assert_eq!(report.handed_over.len(), 1, "{report:?}");
    assert!(report.kept.is_empty());
    let (claim, _) = claim_within(&store, WAKE);
    assert_eq!(claim.attempts.attempt(), 3);
    let last = mcp_tasks::TaskHandle::claimed(store.clone(), claim);
    drop(new);
    // On its last attempt: nothing to hand over, and listed as exhausted.
    match other.hand_over_task(&id, "ops") {
        Err(AdminError::NotHandedOver { why, .. }) => assert!(why.contains("attempts")),
        answer => panic!("{answer:?}"),
    }
    let exhausted = other
        .list_tasks(&TaskQuery::all().in_view(View::Exhausted), None, 10)
        .unwrap();
    assert_eq!(ids(&exhausted), vec![id.clone()]);
    assert!(
        other
            .list_tasks(
                &TaskQuery::all().in_view(View::Stalled {
                    grace: Duration::ZERO
                }),
                None,
                10
            )
            .unwrap()
            .rows
            .is_empty(),
        "every lease is live"
    );
    let _ = last.complete(tool_result("done")).unwrap();
    let _ = once.complete(tool_result("done")).unwrap();
    let seen = other.instances().unwrap();
    assert!(
        seen.iter()
            .all(|i| i.name == second && i.draining && i.tasks == 0),
        "no unfinished task holds a lease; the drained instance is listed: {seen:?}"
    );
    assert!(store.undrain(&second).unwrap(), "drained above");
    assert!(other.instances().unwrap().is_empty());
}

/// Purges finished tasks older than the bound only, in batches with progress; unfinished
/// and young finished tasks stay.
pub fn admin_purges_finished_tasks<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let mut finished = Vec::new();
    for n in 0..12 {
        let owner = if n % 2 == 0 { alice() } else { bob() };
        let id = store.insert(&owner, req(n)).unwrap().id().to_string();
        let _ = store.cancel(&owner, &id, None).unwrap();
        finished.push((owner, id));
    }
    let running = store.insert(&alice(), req(99)).unwrap().id().to_string();
    std::thread::sleep(ms(20));
    let young = store.insert(&bob(), req(100)).unwrap().id().to_string();
    let _ = store.cancel(&bob(), &young, None).unwrap();
    // Finished 20 ms ago or more, measured on the store's clock: the young one is newer.
    let bound = ms(15);
    let mut told = 0;
    let done = store.purge_finished(bound, &mut |_| told += 1).unwrap();
    assert!(told >= 1, "progress is told");
    assert_eq!(done.purged, 12, "{done:?}");
    for (owner, id) in &finished {
        assert!(store.get(owner, id).is_err(), "{id} was purged");
    }
    assert_eq!(
        store.get(&alice(), &running).unwrap().status(),
        TaskStatus::Working
    );
    assert!(
        store.get(&bob(), &young).is_ok(),
        "finished less than the bound ago"
    );
}

/// A watcher hears every creation (from another instance too, where there is one) and
/// every status change, in order, each once; a status subscriber hears no creation; an
/// unsubscribed watcher hears nothing more.
pub fn admin_watch_tells_creations_and_changes<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let heard: Arc<Mutex<Vec<(String, ChangeKind, TaskStatus)>>> = Arc::default();
    let statuses: Arc<Mutex<Vec<String>>> = Arc::default();
    let watching = {
        let heard = Arc::clone(&heard);
        store.watch(Arc::new(move |change, kind| {
            heard
                .lock()
                .unwrap()
                .push((change.task.id().to_string(), kind, change.task.status()));
        }))
    };
    let subscribed = {
        let statuses = Arc::clone(&statuses);
        store.add_subscriber(Arc::new(move |change| {
            statuses.lock().unwrap().push(change.task.id().to_string());
        }))
    };
    let creator = backend.another_instance(&store);
    let made = match &creator {
        Some(other) => other.insert(&bob(), req(1)).unwrap(),
        None => store.insert(&bob(), req(1)).unwrap(),
    };
    let id = made.id().to_string();
    let _ = store.cancel(&bob(), &id, None).unwrap();
    let wanted = vec![
        (id.clone(), ChangeKind::Created, TaskStatus::Working),
        (id.clone(), ChangeKind::Changed, TaskStatus::Cancelled),
    ];
    let started = Instant::now();
    while *heard.lock().unwrap() != wanted {
        assert!(
            started.elapsed() < WAKE,
            "heard {:?} within {WAKE:?}",
            heard.lock().unwrap()
        );
        std::thread::sleep(ms(5));
    }
    assert_eq!(
        *statuses.lock().unwrap(),
        vec![id.clone()],
        "a status subscriber hears the cancel, not the creation"
    );
    assert!(store.unsubscribe(watching));
    assert!(store.unsubscribe(subscribed));
    let _ = store.insert(&bob(), req(2)).unwrap();
    std::thread::sleep(ms(50));
    assert_eq!(
        heard.lock().unwrap().len(),
        2,
        "nothing heard once unsubscribed"
    );
}

/// A drain sets a flag the drained instance's claim loop honours: the task handed over is
/// claimed by another instance, never by the drained one; `instances` says it drains;
/// `undrain` ends it (the instance claims again). A store of one process has no instance
/// to drain.
pub fn admin_drain_stops_the_claim_loop<B: Backend>(backend: &B)
where
    B::Store: TaskAdmin,
{
    let store = backend.default_store();
    let Some(other) = backend.another_instance(&store) else {
        match store.drain("anyone", "ops") {
            Err(AdminError::NoInstances) => {}
            answer => panic!("a store of one process drained: {answer:?}"),
        }
        assert!(store.drained().unwrap().is_empty());
        return;
    };
    let (old, task) = store
        .create(&alice(), redeliverable(1, "sleep", 4))
        .unwrap();
    let id = task.id().to_string();
    let name = other
        .show_task(&id)
        .unwrap()
        .row
        .lease_holder
        .expect("leased");

    let report = other.drain(&name, "ops").unwrap();
    assert!(!report.was_draining);
    assert_eq!(report.handed_over.len(), 1, "{report:?}");
    assert_eq!(other.drained().unwrap(), vec![name.clone()]);
    let seen = other.instances().unwrap();
    assert!(
        seen.iter().any(|i| i.name == name && i.draining),
        "{seen:?}"
    );
    // The drained instance hears the task is claimable, and does not claim it.
    store.wait_for_claimable(Some(ms(500))).unwrap();
    assert!(
        store.claim().unwrap().is_none(),
        "a drained instance claimed"
    );
    let started = Instant::now();
    let claim = loop {
        assert!(
            store.claim().unwrap().is_none(),
            "a drained instance claimed"
        );
        if let Some(claim) = other.claim().unwrap() {
            break claim;
        }
        assert!(started.elapsed() < WAKE, "not claimed within {WAKE:?}");
        other.wait_for_claimable(Some(ms(50))).unwrap();
    };
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!(claim.attempts.attempt(), 2);
    let held = mcp_tasks::TaskHandle::claimed(other.clone(), claim);
    drop(old);
    assert!(
        other.drain(&name, "ops").unwrap().was_draining,
        "drained twice"
    );

    // Undrained: the instance claims again.
    assert!(store.undrain(&name).unwrap());
    assert!(!store.undrain(&name).unwrap(), "not drained any more");
    assert!(store.drained().unwrap().is_empty());
    let _ = store.hand_over_task(&id, "ops").unwrap();
    let (claim, _) = claim_within(&store, WAKE);
    assert_eq!(claim.attempts.attempt(), 3);
    let last = mcp_tasks::TaskHandle::claimed(store.clone(), claim);
    drop(held);
    let _ = last.complete(tool_result("done")).unwrap();
}
