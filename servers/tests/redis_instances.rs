//! The example servers on a shared Redis under faults: Redis down when a store or a server
//! starts, Redis (with AOF) restarted under two running `mcp_http` instances (the `http/`
//! crate, built with `--features redis`) with tasks in flight, and an instance killed
//! (`SIGKILL`) while it runs a task — the measurements, printed for the record.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`) where it needs
//! one; without one on `PATH` those tests say `SKIPPED` and pass. Every server process is
//! killed when its test ends, also when it fails.
#![cfg(feature = "redis")]

mod support;

use std::error::Error as _;
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::Error;
use mcp_tasks_server::mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::redis::RedisServer;
use serde_json::json;
use support::WAIT;
use support::stores::{self, Backend, Db, Down, GIVE_UP, Instance, text};

/// A Redis URL of `closed` (nothing listens there), and the error connecting to it gives,
/// as the OS words it.
fn closed_port(closed: &stores::ClosedPort) -> (String, String) {
    (format!("redis://{}", closed.addr), closed.refused.clone())
}

/// A Redis URL of a unix socket that does not exist, and the error connecting to it gives.
fn missing_socket() -> (String, String) {
    let (path, _, missing) = stores::missing_socket("redis.sock");
    (format!("redis+unix://{path}"), missing)
}

/// This process's threads named like a store's subscriber thread.
fn subscriber_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "mcp-tasks-redis")
                })
                .count()
        })
        .unwrap_or(0)
}

/// `RedisTaskStore::builder(url).build()` on a Redis that is down answers the
/// store-unavailable error, with the OS's reason as its source, at once, and leaves no
/// thread behind.
#[test]
fn building_a_store_on_a_redis_that_is_down_fails_with_its_cause() {
    let closed = stores::closed_port();
    for (url, cause) in [closed_port(&closed), missing_socket()] {
        let threads = subscriber_threads();
        let started = Instant::now();
        let result = RedisTaskStore::builder(&url).build();
        let took = started.elapsed();
        let err = match result {
            Err(err @ Error::Store { .. }) => err,
            other => panic!("{url}: expected the store-unavailable error, got {other:?}"),
        };
        assert!(took < GIVE_UP, "{url}: gave up after {took:?}");
        let source = err
            .source()
            .unwrap_or_else(|| panic!("{url}: the error keeps its cause: {err:?}"));
        assert!(
            source.to_string().contains(&cause),
            "{url}: the cause `{source}` names the OS's `{cause}`"
        );
        assert_eq!(
            subscriber_threads(),
            threads,
            "{url}: no subscriber thread is left behind"
        );
        eprintln!("{url}: Error::Store after {took:?} ({source})");
    }
}

/// Both example servers, given a Redis that is down (`stdio_server --redis URL`,
/// `mcp_http` with `MCP_TASKS_REDIS_URL`), exit 1 with one stderr line naming the URL and
/// the OS's reason, and never start serving.
#[test]
fn the_servers_exit_with_one_clear_line_when_redis_is_down() {
    let closed = stores::closed_port();
    let downs: Vec<Down> = [closed_port(&closed), missing_socket()]
        .into_iter()
        .map(|(url, cause)| Down { url, cause })
        .collect();
    stores::servers_exit_with_one_clear_line(Backend::Redis, &downs);
}

/// The measurement: two `mcp_http` instances on one Redis with AOF
/// (`appendfsync always`), 12 `sleep` tasks running on A with a `tasks/result` waiter on B
/// for each, Redis killed and started again 0.3 s later on the same AOF while they run
/// (about half of them finish during the outage). Every task reaches `completed` with its
/// result, on both instances; every waiter wakes with it; no request after Redis returned
/// fails.
#[test]
fn two_http_instances_lose_nothing_across_a_redis_restart() {
    const TASKS: u64 = 12;
    let Some(redis) = RedisServer::start_aof() else {
        return;
    };
    let mut db = Db::on_redis(redis);
    let (a, b) = (Instance::start(&db), Instance::start(&db));

    // Task n sleeps 200 + 40 n ms: the restart below falls in the middle of their ends.
    let created_at = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..TASKS {
        let ms = 200 + 40 * n;
        let created = a
            .call(
                n + 1,
                "tools/call",
                &json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": 600_000}}),
            )
            .expect("A creates the task");
        assert_eq!(created["task"]["status"], "working", "{created}");
        let id = created["task"]["taskId"]
            .as_str()
            .expect("a task id")
            .to_owned();
        tasks.push((id, format!("slept {ms} ms")));
    }

    let outcome = thread::scope(|scope| {
        let waiters: Vec<_> = tasks
            .iter()
            .enumerate()
            .map(|(n, (id, _))| {
                let b = &b;
                scope.spawn(move || {
                    let answer = b.call(100 + n as u64, "tasks/result", &json!({"taskId": id}));
                    (answer, Instant::now())
                })
            })
            .collect();
        // The waiters are blocked on B before Redis goes, and most tasks still run (on a
        // loaded machine the first ones may be done already).
        thread::sleep(Duration::from_millis(100));
        let finished = waiters.iter().filter(|w| w.is_finished()).count();
        assert!(
            finished <= TASKS as usize / 2,
            "{finished} of {TASKS} tasks finished before the restart"
        );
        let stopped_at = Instant::now();
        db.redis().stop();
        thread::sleep(Duration::from_millis(300));
        db.redis().resume();
        let back_at = Instant::now();
        let answers: Vec<_> = waiters
            .into_iter()
            .map(|waiter| waiter.join().expect("a waiter thread"))
            .collect();
        (stopped_at, back_at, answers)
    });
    let (stopped_at, back_at, answers) = outcome;
    let down = back_at - stopped_at;

    let mut failed_after = Vec::new();
    let mut not_woken = 0;
    let mut last_wake = Duration::ZERO;
    for ((id, expected), (answer, at)) in tasks.iter().zip(&answers) {
        match answer {
            Ok(result) if text(result) == Some(expected) => {
                last_wake = last_wake.max(at.saturating_duration_since(back_at));
            }
            Ok(result) => {
                not_woken += 1;
                failed_after.push(format!("tasks/result {id} on B: unexpected {result}"));
            }
            Err(err) => {
                not_woken += 1;
                failed_after.push(format!("tasks/result {id} on B: {err}"));
            }
        }
    }
    // Afterwards, on both instances: each task completed, with its result.
    let mut lost = 0;
    let mut next_id = 1000;
    for (id, expected) in &tasks {
        let mut complete = true;
        for (name, instance) in [("A", &a), ("B", &b)] {
            next_id += 1;
            match instance.call(next_id, "tasks/get", &json!({"taskId": id})) {
                Ok(task) if task["status"] == "completed" => {}
                Ok(task) => {
                    complete = false;
                    failed_after.push(format!("tasks/get {id} on {name}: {task}"));
                }
                Err(err) => {
                    complete = false;
                    failed_after.push(format!("tasks/get {id} on {name}: {err}"));
                }
            }
        }
        next_id += 1;
        match a.call(next_id, "tasks/result", &json!({"taskId": id})) {
            Ok(result) if text(&result) == Some(expected) => {}
            Ok(result) => {
                complete = false;
                failed_after.push(format!("tasks/result {id} on A: {result}"));
            }
            Err(err) => {
                complete = false;
                failed_after.push(format!("tasks/result {id} on A: {err}"));
            }
        }
        if !complete {
            lost += 1;
        }
    }
    let requests_after = answers.len() + tasks.len() * 3;
    eprintln!(
        "redis (AOF, appendfsync always) down {down:?} (killed, restarted 0.3 s later) under \
         2 mcp_http instances, {TASKS} sleep tasks created {:?} before it: results lost \
         {lost} of {TASKS}, waiters on the other instance not woken {not_woken} of {TASKS}, \
         failed requests after Redis returned {} of {requests_after}; last waiter woke \
         {last_wake:?} after Redis was back",
        stopped_at - created_at,
        failed_after.len()
    );
    assert!(
        failed_after.is_empty(),
        "{} requests failed after Redis returned: {failed_after:#?}",
        failed_after.len()
    );
    assert_eq!(lost, 0, "results lost");
    assert_eq!(not_woken, 0, "waiters that did not wake");
    assert!(last_wake < WAIT, "every waiter woke within {WAIT:?}");
}

/// An instance killed (`SIGKILL`) while it runs a task that runs once: the other
/// instance's waiter gets it failed within the lease plus one renewal interval
/// ([`stores::a_killed_instance_fails_its_task_on_the_other`]).
#[test]
fn a_killed_instance_fails_its_task_on_the_other_within_lease_and_interval() {
    if let Some(db) = Db::start(Backend::Redis) {
        stores::a_killed_instance_fails_its_task_on_the_other(&db);
    }
}
