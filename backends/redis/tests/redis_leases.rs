//! Leases of `RedisTaskStore`, on real `redis-server` processes: a task whose instance is
//! killed (`SIGKILL`, a child process of this test binary) fails within the lease plus one
//! renewal interval and wakes every instance's waiters; a live holder keeps its task for
//! as long as it runs; a stale holder cannot overwrite the verdict; a detached handle
//! gives its lease up; what the renewals cost.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`); without one on `PATH` the
//! tests say `SKIPPED` and pass. Every wait and loop is bounded, and every process a test
//! starts is killed when it ends, also when it fails.

use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    AnyTask, Error, InputRequests, LeasePolicy, Outcome, Owner, TaskHandle, TaskStatus, TaskStore,
    TtlPolicy, Working,
};
use mcp_tasks_redis::{RedisStoreBuilder, RedisTaskStore};
use mcp_tasks_test_support::child::TestChild;
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::support::{BOUND, alice, ask, eventually, ms, req, tool_result};

/// The lease of these tests, and its renewal interval.
const LEASE: Duration = Duration::from_millis(1_000);
const INTERVAL: Duration = Duration::from_millis(250);

/// Set in the child process that holds tasks until it is killed: the Redis URL and the
/// key prefix, separated by a space.
const HOLDER: &str = "MCP_TASKS_LEASE_HOLDER";

fn builder(url: &str, prefix: &str) -> RedisStoreBuilder {
    RedisTaskStore::builder(url)
        .prefix(prefix)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
        .lease_policy(LeasePolicy::fail_after(LEASE).renewed_every(INTERVAL))
}

fn fresh_prefix() -> String {
    format!("leases-{}", uuid::Uuid::new_v4().simple())
}

fn instance(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    builder(&server.url(), prefix)
        .build()
        .expect("a RedisTaskStore on the test server")
}

/// A server, and two instances on it: the one that holds a new task, and another.
struct Two {
    server: RedisServer,
    prefix: String,
    other: RedisTaskStore,
}

/// [`Two`] instances, the handle of a task the first one created, and the task's id.
fn two_with_task() -> Option<(Two, TaskHandle<Working, RedisTaskStore>, String)> {
    let server = RedisServer::start()?;
    let prefix = fresh_prefix();
    let holder = instance(&server, &prefix);
    let other = instance(&server, &prefix);
    let (handle, task) = holder.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    Some((
        Two {
            server,
            prefix,
            other,
        },
        handle,
        id,
    ))
}

/// The Redis key of `owner`'s task `id` (the layout of the store's module docs).
fn task_key(prefix: &str, owner: &Owner, id: &str) -> String {
    let hex: String = owner
        .key()
        .expect("a named owner")
        .bytes()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("{prefix}:{{o{hex}}}:t:{id}")
}

/// The integer reply of a Redis command.
fn int(server: &RedisServer, args: &[&str]) -> i64 {
    let reply = server.command(args);
    reply
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap_or_else(|_| panic!("{args:?} answered {reply:?}, not an integer"))
}

/// Whether `task` failed with the lapsed lease's `-32603` error.
fn failed_by_lapse(task: &AnyTask) -> bool {
    let AnyTask::Failed(failed) = task else {
        return false;
    };
    matches!(failed.outcome(), Some(Outcome::Error(error))
        if error.code == INTERNAL_ERROR && error.message.contains("server instance running the task stopped"))
}

/// The child's side of [`a_killed_instance_fails_its_tasks_within_lease_and_interval`]:
/// when run with [`HOLDER`] set, creates a working and an `input_required` task with
/// handles, prints their ids, and holds them (renewing their leases) until it is killed.
/// Run as a plain test, it does nothing.
#[test]
fn holder_process() {
    let Ok(config) = std::env::var(HOLDER) else {
        return;
    };
    let (url, prefix) = config.split_once(' ').expect("url and prefix");
    let store = builder(url, prefix).build().expect("the holder's store");
    let (working, task) = store.create(&alice(), req(1)).unwrap();
    println!("TASK {}", task.id());
    let (asking, task) = store.create(&alice(), req(2)).unwrap();
    let waiting = asking
        .require_input(InputRequests::new().with("go", ask("carry on?")))
        .unwrap();
    println!("TASK {}", task.id());
    println!("READY");
    // Bounded: the parent kills this process long before.
    thread::sleep(Duration::from_secs(60));
    drop((working, waiting));
}

/// Starts [`holder_process`] in a child of this test binary; returns it with the ids of
/// the tasks it holds.
fn start_holder(server: &RedisServer, prefix: &str) -> (TestChild, Vec<String>) {
    let value = format!("{} {prefix}", server.url());
    let holder = TestChild::start("holder_process", HOLDER, &value, BOUND);
    let ids = holder.values("TASK");
    (holder, ids)
}

#[test]
fn a_killed_instance_fails_its_tasks_within_lease_and_interval() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // Two surviving instances, each with a waiter on each task.
    let others = [instance(&server, &prefix), instance(&server, &prefix)];
    let (mut holder, ids) = start_holder(&server, &prefix);
    assert_eq!(ids.len(), 2, "the holder created two tasks");

    // Alive, the holder keeps its tasks past several leases.
    thread::sleep(LEASE * 2);
    let statuses: Vec<TaskStatus> = ids
        .iter()
        .map(|id| others[0].get(&alice(), id).unwrap().status())
        .collect();
    assert_eq!(
        statuses,
        [TaskStatus::Working, TaskStatus::InputRequired],
        "renewed leases keep the tasks as their handler left them"
    );

    let waiters: Vec<_> = others
        .iter()
        .flat_map(|store| ids.iter().map(move |id| (store.clone(), id.clone())))
        .map(|(store, id)| {
            thread::spawn(move || {
                let task = store.wait(&alice(), &id, Some(BOUND));
                (task, Instant::now())
            })
        })
        .collect();
    thread::sleep(ms(50));
    assert!(
        waiters.iter().all(|waiter| !waiter.is_finished()),
        "the waiters wait while the holder lives"
    );

    let killed = holder.kill();

    let mut slowest = Duration::ZERO;
    for waiter in waiters {
        let (task, woke) = mcp_tasks_testkit::support::join_within(
            waiter,
            BOUND,
            "a waiter of a dead instance's task",
        );
        let task = task.expect("the waiter gets the task");
        assert!(
            failed_by_lapse(&task),
            "the task failed with the lapsed lease's -32603 error: {task:?}"
        );
        slowest = slowest.max(woke.duration_since(killed));
    }
    eprintln!(
        "lease {LEASE:?}, renewal interval {INTERVAL:?}: SIGKILL to the last waiter woken \
         on the other instances: {slowest:?}"
    );
    // The bound the store promises, and scheduling slack for a loaded machine.
    assert!(
        slowest <= LEASE + INTERVAL + ms(500),
        "failed {slowest:?} after the kill, beyond lease + interval ({:?})",
        LEASE + INTERVAL
    );
}

#[test]
fn a_live_holder_keeps_its_task_through_many_leases_and_input() {
    let Some((two, handle, id)) = two_with_task() else {
        return;
    };
    thread::sleep(LEASE * 2);
    let waiting = handle
        .require_input(InputRequests::new().with("go", ask("carry on?")))
        .expect("the task is still the holder's to move");
    thread::sleep(LEASE * 2);
    two.other
        .respond(
            &alice(),
            &id,
            mcp_tasks_testkit::support::obj(
                serde_json::json!({"go": mcp_tasks_testkit::support::accept("yes")}),
            ),
        )
        .unwrap();
    let answers = waiting.wait_for_input(Some(BOUND)).unwrap();
    assert_eq!(answers.len(), 1);
    let working = waiting.resume().unwrap();
    thread::sleep(LEASE * 2);
    let done = working.complete(tool_result("done")).unwrap();
    assert_eq!(
        two.other.get(&alice(), &id).unwrap(),
        done.into_any(),
        "the result the live holder stored"
    );
    // The finished task leaves the lease index once its last deadline passes.
    let index = format!("{}:leases", two.prefix);
    eventually("the lease index forgets the finished task", || {
        int(&two.server, &["ZCARD", &index]) == 0
    });
}

#[test]
fn a_stale_holder_cannot_overwrite_the_verdict() {
    let Some((two, handle, id)) = two_with_task() else {
        return;
    };
    // The holder "lost Redis for longer than the lease": its lease is in the past.
    let _ = two
        .server
        .command(&["HSET", &task_key(&two.prefix, &alice(), &id), "l", "0"]);
    let verdict = two.other.wait(&alice(), &id, Some(BOUND)).unwrap();
    assert!(failed_by_lapse(&verdict), "lapsed: {verdict:?}");
    match handle.complete(tool_result("late")) {
        Err(Error::IllegalTransition { from, .. }) => assert_eq!(from, TaskStatus::Failed),
        unexpected => panic!("the stale holder's result must be refused, got {unexpected:?}"),
    }
    assert_eq!(
        two.other.get(&alice(), &id).unwrap(),
        verdict,
        "the verdict stands"
    );
}

#[test]
fn a_detached_handle_gives_its_lease_up() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let holder = instance(&server, &prefix);
    let (handle, task) = holder.create(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    let key = task_key(&prefix, &alice(), &id);
    assert_eq!(int(&server, &["HEXISTS", &key, "l"]), 1);
    handle.detach();
    eventually("the detached task's lease is given up", || {
        int(&server, &["HEXISTS", &key, "l"]) == 0
    });
    thread::sleep(LEASE + INTERVAL * 2);
    assert_eq!(
        holder.get(&alice(), &id).unwrap().status(),
        TaskStatus::Working,
        "a task driven by id never lapses"
    );
    holder
        .store_result(
            &alice(),
            &id,
            TaskStatus::Completed,
            mcp_tasks_testkit::support::tool_outcome("by id"),
        )
        .unwrap();
}

#[test]
fn tasks_created_by_id_or_without_leases_carry_none() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let leased = instance(&server, &prefix);
    let by_id = leased.insert(&alice(), req(1)).unwrap();
    let unleased = builder(&server.url(), &prefix)
        .lease_policy(LeasePolicy::leave_until_ttl())
        .build()
        .unwrap();
    let (handle, task) = unleased.create(&alice(), req(2)).unwrap();
    for id in [by_id.id().to_string(), task.id().to_string()] {
        let key = task_key(&prefix, &alice(), &id);
        assert_eq!(int(&server, &["HEXISTS", &key, "l"]), 0, "{id}");
    }
    assert_eq!(
        int(&server, &["EXISTS", &format!("{prefix}:leases")]),
        0,
        "no lease index"
    );
    thread::sleep(LEASE + INTERVAL * 2);
    assert_eq!(
        leased
            .get(&alice(), &by_id.id().to_string())
            .unwrap()
            .status(),
        TaskStatus::Working
    );
    let done = handle.complete(tool_result("done")).unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
}

#[test]
fn bad_lease_policies_are_refused() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    for (policy, what) in [
        (LeasePolicy::fail_after(ms(50)), "a 50 ms lease"),
        (
            LeasePolicy::fail_after(ms(500)).renewed_every(ms(500)),
            "an interval as long as the lease",
        ),
        (
            LeasePolicy::fail_after(ms(500)).renewed_every(Duration::ZERO),
            "a zero interval",
        ),
    ] {
        match builder(&server.url(), &fresh_prefix())
            .lease_policy(policy)
            .build()
        {
            Err(Error::InvalidConfig(message)) => assert!(message.contains("lease"), "{message}"),
            other => panic!("{what} must be refused, got {other:?}"),
        }
    }
}

/// The cost of leases: renewals and the lapse check take a fixed number of round trips
/// per interval and instance, whatever the number of running tasks.
#[test]
fn renewals_cost_round_trips_per_interval_not_per_task() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let interval = ms(100);
    let store = builder(&server.url(), &prefix)
        .lease_policy(LeasePolicy::fail_after(ms(2_000)).renewed_every(interval))
        .build()
        .unwrap();
    let handles: Vec<_> = (0..50)
        .map(|n| store.create(&alice(), req(n)).unwrap().0)
        .collect();
    let window = Duration::from_secs(2);
    let _ = server.command(&["CONFIG", "RESETSTAT"]);
    let started = Instant::now();
    thread::sleep(window);
    let stats = server.command(&["INFO", "commandstats"]);
    let elapsed = started.elapsed();
    let calls = stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse::<u64>().ok())
        .unwrap_or(0);
    let intervals = elapsed.as_secs_f64() / interval.as_secs_f64();
    let per_second = calls as f64 / elapsed.as_secs_f64();
    eprintln!(
        "leases: {calls} round trips in {elapsed:?} for {} running tasks at a {interval:?} \
         interval: {:.1} per interval, {per_second:.1}/s for the instance, {:.3}/s per \
         running task",
        handles.len(),
        calls as f64 / intervals,
        per_second / handles.len() as f64,
    );
    assert!(calls > 0, "the leases were renewed");
    assert!(
        calls as f64 <= 2.0 * (intervals + 2.0),
        "{calls} round trips in {intervals:.1} intervals: more than two per interval"
    );
    for handle in handles {
        assert!(
            handle
                .complete(tool_result("done"))
                .unwrap()
                .status()
                .is_terminal()
        );
    }
}
