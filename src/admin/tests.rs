use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::store::{Owner, Redelivery, TaskRequest};
use crate::{JsonObject, ManualClock, TaskRegistry};

fn registry() -> (TaskRegistry, ManualClock) {
    let clock = ManualClock::new(Timestamp::from_unix_millis(1_000_000));
    let registry = TaskRegistry::builder()
        .clock(clock.clone())
        .ttl_policy(crate::TtlPolicy::new(Some(86_400_000)).with_max(86_400_000))
        .build()
        .unwrap();
    (registry, clock)
}

fn request(n: i64) -> TaskRequest {
    TaskRequest::new(n, "tools/call")
}

fn with_job(n: i64, tool: &str, max: u32) -> TaskRequest {
    let JsonValue::Object(job) = json!({"tool": tool, "arguments": {}}) else {
        unreachable!()
    };
    request(n)
        .with_tool(tool)
        .with_redelivery(Redelivery::new(max, job as JsonObject))
}

type JsonValue = serde_json::Value;

fn ids(page: &AdminPage) -> Vec<String> {
    page.rows
        .iter()
        .map(|row| row.key.id().to_string())
        .collect()
}

#[test]
fn a_cursor_reads_back_and_anything_else_is_refused() {
    let at = Position {
        seq: 0x1f,
        id: uuid::Uuid::new_v4(),
    };
    let text = AdminCursor(at).encode();
    assert_eq!(AdminCursor::decode(&text).unwrap(), AdminCursor(at));
    for bad in [
        "",
        "v1",
        "v1.1f",
        "v2.1f.00000000000000000000000000000000",
        "v1..00000000000000000000000000000000",
        "v1.zz.00000000000000000000000000000000",
        "v1.1f.0000",
        "v1.1f.00000000000000000000000000000000.x",
        "v1.11111111111111111.00000000000000000000000000000000",
    ] {
        match AdminCursor::decode(bad) {
            Err(AdminError::InvalidCursor { .. }) => {}
            other => panic!("{bad:?} read as {other:?}"),
        }
    }
    let (registry, _) = registry();
    match registry.list_tasks(&TaskQuery::all(), Some("nonsense"), 10) {
        Err(AdminError::InvalidCursor { cursor }) => assert_eq!(cursor, "nonsense"),
        other => panic!("a bad cursor listed: {other:?}"),
    }
}

#[test]
fn lists_every_owners_tasks_filtered_and_paged_full() {
    let (registry, clock) = registry();
    let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
    let mut created = Vec::new();
    for n in 0..30 {
        let owner = if n % 3 == 0 { &bob } else { &alice };
        let task = registry.insert(owner, request(n)).unwrap();
        created.push(task.id().to_string());
        clock.advance(Duration::from_millis(10));
    }
    // Every owner's, in creation order, paged.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = registry
            .list_tasks(&TaskQuery::all(), cursor.as_deref(), 7)
            .unwrap();
        assert!(page.rows.len() == 7 || page.next_cursor.is_none());
        seen.extend(ids(&page));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, created);
    // A selective filter still fills its page (bob's are one in three).
    let bobs = registry
        .list_tasks(&TaskQuery::all().of_owner(bob.clone()), None, 5)
        .unwrap();
    assert_eq!(bobs.rows.len(), 5);
    assert!(bobs.rows.iter().all(|row| row.key.owner() == &bob));
    assert!(bobs.next_cursor.is_some());
    // Status pushed down, age checked after.
    let _ = registry.cancel(&alice, &created[1], None).unwrap();
    let cancelled = registry
        .list_tasks(
            &TaskQuery::all().with_status(TaskStatus::Cancelled),
            None,
            100,
        )
        .unwrap();
    assert_eq!(ids(&cancelled), vec![created[1].clone()]);
    assert_eq!(cancelled.next_cursor, None);
    let old = registry
        .list_tasks(
            &TaskQuery::all().created_before(Timestamp::from_unix_millis(1_000_050)),
            None,
            100,
        )
        .unwrap();
    assert_eq!(ids(&old), created[..5].to_vec());
}

#[test]
fn derived_views_tool_and_attempt_filters() {
    let (registry, clock) = registry();
    let owner = Owner::new("carol");
    let plain = registry.insert(&owner, request(1)).unwrap();
    let sleeper = registry.insert(&owner, with_job(2, "sleep", 1)).unwrap();
    let fetcher = registry.insert(&owner, with_job(3, "fetch", 3)).unwrap();
    let waiting = registry
        .update_status(
            &owner,
            &plain.id().to_string(),
            TaskStatus::InputRequired,
            None,
        )
        .unwrap();
    clock.advance(Duration::from_secs(120));
    let once = registry
        .insert(&owner, request(4).with_tool("fetch"))
        .unwrap();
    let list = |query: TaskQuery| ids(&registry.list_tasks(&query, None, 100).unwrap());
    // The registry keeps no job (its tasks never run elsewhere), but every task keeps the
    // tool its creator named: the filter matches those that run once too.
    assert_eq!(
        registry.job(&owner, &fetcher.id().to_string()).unwrap(),
        None
    );
    assert_eq!(
        list(TaskQuery::all().of_tool("fetch")),
        vec![fetcher.id().to_string(), once.id().to_string()]
    );
    assert!(list(TaskQuery::all().of_tool("nothing")).is_empty());
    assert_eq!(
        list(TaskQuery::all().in_view(View::Exhausted)),
        vec![sleeper.id().to_string()],
        "one attempt of one: none left"
    );
    assert_eq!(list(TaskQuery::all().with_min_attempts(1)).len(), 2);
    assert_eq!(list(TaskQuery::all().with_min_attempts(2)).len(), 0);
    assert_eq!(
        list(TaskQuery::all().in_view(View::InputRequiredLongerThan(Duration::from_secs(60)))),
        vec![waiting.id().to_string()]
    );
    assert!(
        list(TaskQuery::all().in_view(View::InputRequiredLongerThan(Duration::from_secs(600))))
            .is_empty()
    );
    assert!(
        list(TaskQuery::all().in_view(View::Stalled {
            grace: Duration::ZERO
        }))
        .is_empty(),
        "the registry has no leases: nothing stalls"
    );
    assert!(
        list(
            TaskQuery::all()
                .with_status(TaskStatus::Completed)
                .in_view(View::InputRequiredLongerThan(Duration::ZERO))
        )
        .is_empty(),
        "a status and a view that exclude each other keep nothing"
    );
    // Exhausted: unfinished tasks only (pushed down as such); a finished one keeps no
    // attempts and leaves the view.
    assert_eq!(
        TaskQuery::all()
            .in_view(View::Exhausted)
            .pushed_down()
            .statuses,
        Some(vec![TaskStatus::Working, TaskStatus::InputRequired])
    );
    let _ = registry
        .cancel(&owner, &sleeper.id().to_string(), None)
        .unwrap();
    assert!(list(TaskQuery::all().in_view(View::Exhausted)).is_empty());
    assert!(
        list(
            TaskQuery::all()
                .with_status(TaskStatus::Cancelled)
                .in_view(View::Exhausted)
        )
        .is_empty()
    );
}

#[test]
fn a_walk_lists_once_every_task_that_stays_while_tasks_come_and_go() {
    let (registry, _) = registry();
    let owners: Vec<Owner> = (0..4).map(|n| Owner::new(format!("o{n}"))).collect();
    let mut staying = HashSet::new();
    let mut going = Vec::new();
    for n in 0..40 {
        let owner = &owners[n % 4];
        let id = registry
            .insert(owner, request(n as i64))
            .unwrap()
            .id()
            .to_string();
        if n % 5 == 0 {
            going.push((owner.clone(), id));
        } else {
            staying.insert(id);
        }
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = registry
            .list_tasks(&TaskQuery::all(), cursor.as_deref(), 6)
            .unwrap();
        seen.extend(ids(&page));
        // Meanwhile: some go, new ones come.
        if let Some((owner, id)) = going.pop() {
            registry.remove(&owner, &id).unwrap();
        }
        let _ = registry.insert(&owners[pages % 4], request(100)).unwrap();
        pages += 1;
        assert!(pages < 50, "the walk ends");
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no task twice");
    for id in &staying {
        assert!(
            seen.contains(id),
            "{id} was stored all along and not listed"
        );
    }
}

#[test]
fn show_cancel_fail_and_purge_go_through_the_transitions() {
    let (registry, clock) = registry();
    let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
    let a = registry
        .insert(&alice, with_job(1, "sleep", 3))
        .unwrap()
        .id()
        .to_string();
    let b = registry.insert(&bob, request(2)).unwrap().id().to_string();
    let details = registry.show_task(&a).unwrap();
    assert_eq!(details.row.key.owner(), &alice);
    assert_eq!(details.job, None, "the registry keeps no job");
    assert_eq!(
        details.row.task.attempts().map(|a| (a.attempt(), a.max())),
        Some((1, 3))
    );
    assert_eq!(details.checkpoint_bytes, None);
    match registry.show_task("00000000-0000-4000-8000-000000000000") {
        Err(AdminError::NotFound { .. }) => {}
        other => panic!("{other:?}"),
    }

    let record = registry.cancel_task(&a, "alice-the-operator").unwrap();
    assert_eq!(
        (record.from, record.to),
        (TaskStatus::Working, TaskStatus::Cancelled)
    );
    assert_eq!(record.action, AdminAction::Cancel);
    let task = registry.get(&alice, &a).unwrap();
    assert_eq!(
        task.status_message(),
        Some("cancelled by admin alice-the-operator")
    );
    match registry.cancel_task(&a, "x") {
        Err(AdminError::AlreadyFinished { status, .. }) => {
            assert_eq!(status, TaskStatus::Cancelled);
        }
        other => panic!("a second cancel answered {other:?}"),
    }
    match registry.fail_task(&a, "too late", "x") {
        Err(AdminError::AlreadyFinished { status, .. }) => {
            assert_eq!(status, TaskStatus::Cancelled);
        }
        other => panic!("failing a cancelled task answered {other:?}"),
    }

    registry
        .fail_task(&b, "the backend is gone", "ops")
        .unwrap();
    let failed = registry.get(&bob, &b).unwrap();
    assert_eq!(failed.status(), TaskStatus::Failed);
    let error = failed.outcome().and_then(Outcome::as_error).unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32603, "the backend is gone")
    );
    assert_eq!(
        failed.status_message(),
        Some("failed by admin ops: the backend is gone")
    );

    match registry.hand_over_task(&b, "ops") {
        Err(AdminError::AlreadyFinished { .. }) => {}
        other => panic!("{other:?}"),
    }
    let c = registry
        .insert(&bob, with_job(3, "sleep", 3))
        .unwrap()
        .id()
        .to_string();
    match registry.hand_over_task(&c, "ops") {
        Err(AdminError::NotHandedOver { why, .. }) => assert!(why.contains("lease"), "{why}"),
        other => panic!("the registry handed over: {other:?}"),
    }
    let many = registry
        .act(&[&c, "not-an-id"], &Action::Cancel, "ops")
        .unwrap();
    assert!(many[0].1.is_ok());
    assert!(matches!(many[1].1, Err(AdminError::NotFound { .. })));

    // Purge: finished for longer than the bound only, in batches with progress.
    clock.advance(Duration::from_secs(3_600));
    let young = registry
        .insert(&alice, request(4))
        .unwrap()
        .id()
        .to_string();
    let _ = registry.cancel(&alice, &young, None).unwrap();
    let mut told = Vec::new();
    let done = registry
        .purge_finished(Duration::from_secs(60), &mut |p| told.push(*p))
        .unwrap();
    assert_eq!(done.purged, 3, "{done:?}");
    assert!(!told.is_empty());
    assert!(registry.get(&alice, &a).is_err());
    assert!(
        registry.get(&alice, &young).is_ok(),
        "finished a moment ago: kept"
    );
    assert!(
        registry.instances().unwrap().is_empty(),
        "no leases, no instances"
    );
}

#[test]
fn a_working_task_stalls_once_its_lease_lapsed_and_nothing_picks_it_up() {
    let now = Timestamp::from_unix_millis(10_000_000);
    let row = |max_attempts: Option<u32>, leased_until: Option<i64>| {
        let id = uuid::Uuid::new_v4();
        let task = crate::Task::new(crate::TaskId::from_uuid(id), now);
        let task = match max_attempts {
            Some(max) => task.with_attempts(max).into_any(),
            None => task.into_any(),
        };
        StoredRow {
            key: TaskKey::new(Owner::new("o"), id),
            position: Position { seq: 1, id },
            task,
            leased_until: leased_until.map(Timestamp::from_unix_millis),
            lease_holder: leased_until.map(|_| "web-1".to_owned()),
        }
    };
    let grace = Duration::from_secs(60);
    let stalled = TaskQuery::all().in_view(View::Stalled { grace });
    let lapsed_ago = |secs: i64| Some(now.unix_millis() - secs * 1_000);
    // Runs once, lease lapsed: nothing claims it.
    assert!(stalled.matches_row(&row(None, lapsed_ago(1)), now));
    // Last attempt, lapsed: not claimable either.
    assert!(stalled.matches_row(&row(Some(1), lapsed_ago(1)), now));
    // Claimable, lapsed a moment ago: another instance is about to claim it.
    assert!(!stalled.matches_row(&row(Some(3), lapsed_ago(1)), now));
    // Claimable, but unclaimed past the grace: no live instance claims.
    assert!(stalled.matches_row(&row(Some(3), lapsed_ago(61)), now));
    // A live lease, or none at all (driven by id): not stalled.
    assert!(!stalled.matches_row(&row(None, lapsed_ago(-30)), now));
    assert!(!stalled.matches_row(&row(None, None), now));
    // Held by: the holder's unfinished tasks only.
    let held = TaskQuery::all().held_by("web-1");
    assert!(held.matches_row(&row(None, lapsed_ago(-30)), now));
    assert!(!held.matches_row(&row(None, None), now));
    assert!(
        !TaskQuery::all()
            .held_by("web-2")
            .matches_row(&row(None, lapsed_ago(-30)), now)
    );
}

#[test]
fn ages_count_back_from_the_time_given() {
    let now = Timestamp::from_unix_millis(10_000);
    let query = TaskQuery::all().created_within(
        now,
        Some(Duration::from_millis(3_000)),
        Some(Duration::from_millis(9_000)),
    );
    assert_eq!(
        query.created_before,
        Some(Timestamp::from_unix_millis(7_000))
    );
    assert_eq!(
        query.created_after,
        Some(Timestamp::from_unix_millis(1_000))
    );
    // A bound left out keeps that side; an age past the epoch saturates.
    let kept = TaskQuery::all()
        .created_after(Timestamp::from_unix_millis(5))
        .created_within(now, Some(Duration::MAX), None);
    assert_eq!(kept.created_after, Some(Timestamp::from_unix_millis(5)));
    assert_eq!(
        kept.created_before,
        Some(Timestamp::from_unix_millis(
            10_000_i64.saturating_sub(i64::MAX)
        ))
    );
}
