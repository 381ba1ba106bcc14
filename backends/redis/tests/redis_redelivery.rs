//! Redelivery on `RedisTaskStore`: a redeliverable task whose instance stops is claimed by
//! another instance for its next attempt, fenced, with its job and last checkpoint; a task
//! handed over on shutdown is claimable at once; a task whose attempts ran out fails,
//! saying how many ran.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`); without one
//! on `PATH` the tests say `SKIPPED` and pass. Instances that die are child processes of
//! this test binary, killed with `SIGKILL`. Every blocking call is bounded.

use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    AnyTask, ClaimBackoff, Error, LeasePolicy, Outcome, Redelivery, TaskHandle, TaskRequest,
    TaskStatus, TaskStore, TtlPolicy,
};
use mcp_tasks_redis::{RedisStoreBuilder, RedisTaskStore};
use mcp_tasks_test_support::child::TestChild;
use mcp_tasks_test_support::proxy::TcpProxy;
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::support::{BOUND, alice, obj, tool_result};
use serde_json::json;

/// A short lease, renewed often, and a short back-off: the tests see a death in well
/// under a second.
const LEASE: Duration = Duration::from_millis(500);
const INTERVAL: Duration = Duration::from_millis(100);
const BACKOFF: Duration = Duration::from_millis(200);

/// Set in a child process that plays a dying instance: `create` (creates a redeliverable
/// task, checkpoints, prints its id), `poison` (the same without a checkpoint: its attempt
/// counts against the bound) or `claim` (claims one task, prints its id), then
/// holds it until killed; the Redis URL and the prefix follow, space-separated.
const CHILD: &str = "MCP_TASKS_REDELIVERY_CHILD";

fn builder(url: &str, prefix: &str) -> RedisStoreBuilder {
    RedisTaskStore::builder(url)
        .prefix(prefix)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
        .lease_policy(LeasePolicy::fail_after(LEASE).renewed_every(INTERVAL))
        .claim_backoff(ClaimBackoff::new(BACKOFF, BACKOFF * 4))
}

fn instance(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    builder(&server.url(), prefix)
        .build()
        .expect("a RedisTaskStore on the test server")
}

fn fresh_prefix() -> String {
    format!("redelivery-{}", uuid::Uuid::new_v4().simple())
}

/// A `tools/call` of `sleep` that may run `max` times.
fn redeliverable(max: u32) -> TaskRequest {
    let job = obj(json!({"tool": "sleep", "arguments": {"ms": 5000}}));
    TaskRequest::new(1, "tools/call").with_redelivery(Redelivery::new(max, job))
}

/// Claims on `store` until one comes, within `limit`, sleeping in its claim wait.
fn claim_within(store: &RedisTaskStore, limit: Duration) -> Option<mcp_tasks::Claim> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(claim) = store.claim().expect("a claim answers") {
            return Some(claim);
        }
        store
            .wait_for_claimable(Some(Duration::from_millis(50)))
            .expect("the claim wait answers");
    }
    None
}

/// The child's side: see [`CHILD`]. Run as a plain test, it does nothing.
#[test]
fn child_process() {
    let Ok(config) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = config.split(' ');
    let (Some(role), Some(url), Some(prefix)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("role, url and prefix");
    };
    let store = builder(url, prefix).build().expect("the child's store");
    let _held = match role {
        "create" | "poison" => {
            let (handle, task) = store.create(&alice(), redeliverable(2)).unwrap();
            if role == "create" {
                handle.checkpoint(json!({"slept": 1500})).unwrap();
            }
            println!("TASK {}", task.id());
            handle
        }
        _ => {
            let claim = claim_within(&store, BOUND).expect("a task to claim");
            println!("TASK {}", claim.task.id());
            TaskHandle::claimed(store.clone(), claim)
        }
    };
    println!("READY");
    // Bounded: the parent kills this process long before.
    thread::sleep(Duration::from_secs(60));
}

/// Starts [`child_process`] as `role`; returns it with the id of the task it holds.
fn start_child(server: &RedisServer, prefix: &str, role: &str) -> (TestChild, String) {
    let value = format!("{role} {} {prefix}", server.url());
    let child = TestChild::start("child_process", CHILD, &value, BOUND);
    let id = child.values("TASK").pop().expect("a task id before READY");
    (child, id)
}

#[test]
fn a_handed_over_task_is_claimed_at_once_and_the_old_holder_is_fenced_out() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let (leaving, staying) = (instance(&server, &prefix), instance(&server, &prefix));
    let (old, task) = leaving.create(&alice(), redeliverable(3)).unwrap();
    let id = task.id().to_string();
    assert_eq!(old.attempt(), Some(1));
    old.checkpoint(json!({"step": 2})).unwrap();
    assert_eq!(
        staying.claim().unwrap().map(|c| c.task),
        None,
        "nothing is claimable yet"
    );
    let waiter = {
        let staying = staying.clone();
        let id = id.clone();
        thread::spawn(move || staying.wait(&alice(), &id, Some(BOUND)))
    };

    let handed_at = Instant::now();
    assert!(leaving.hand_over(&alice(), &id).unwrap(), "handed over");
    let claim = claim_within(&staying, BOUND).expect("claimed on the other instance");
    eprintln!("redelivery: hand-over to claim {:?}", handed_at.elapsed());
    assert_eq!(claim.task.id().to_string(), id, "the same task");
    assert_eq!((claim.attempts.attempt(), claim.attempts.max()), (2, 3));
    assert_eq!(claim.checkpoint, Some(json!({"step": 2})));
    assert_eq!(claim.job["tool"], "sleep");
    assert_eq!(staying.job(&alice(), &id).unwrap(), Some(claim.job.clone()));
    let seen = staying.get(&alice(), &id).unwrap();
    assert_eq!(seen.status(), TaskStatus::Working, "working throughout");
    assert!(
        seen.status_message()
            .is_some_and(|m| m.contains("attempt 2: 0 of 3 spent without progress")),
        "{:?}",
        seen.status_message()
    );
    // Nobody claims it twice.
    assert!(leaving.claim().unwrap().is_none());

    // The old holder's late result is refused; the new one's is stored, once.
    let new = TaskHandle::claimed(staying.clone(), claim);
    match old.complete(tool_result("late")) {
        Err(Error::Superseded {
            attempt: 1,
            current: 2,
            ..
        }) => {}
        other => panic!("the old holder's result went through: {other:?}"),
    }
    let _done = new.complete(tool_result("done")).unwrap();
    let finished = waiter.join().unwrap().unwrap();
    assert_eq!(finished.status(), TaskStatus::Completed);
    assert_eq!(
        finished.outcome(),
        Some(&Outcome::Result(tool_result("done")))
    );
}

#[test]
fn a_killed_instance_s_task_is_claimed_after_its_lease_and_back_off() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let survivor = instance(&server, &prefix);
    let (mut dying, id) = start_child(&server, &prefix, "create");
    // Alive, it keeps its task: nothing is claimable across several leases.
    thread::sleep(LEASE * 2);
    assert!(
        survivor.claim().unwrap().is_none(),
        "a live instance's task"
    );

    let killed = dying.kill();
    let claim = claim_within(&survivor, BOUND).expect("claimed after the death");
    let took = killed.elapsed();
    eprintln!(
        "redelivery: kill to claim {took:?} (lease {LEASE:?}, interval {INTERVAL:?}, back-off {BACKOFF:?})"
    );
    assert!(
        took <= LEASE + INTERVAL * 2 + BACKOFF + Duration::from_millis(500),
        "claimed {took:?} after the kill"
    );
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!(claim.attempts.attempt(), 2);
    assert_eq!(
        claim.checkpoint,
        Some(json!({"slept": 1500})),
        "the last checkpoint"
    );
    let handle = TaskHandle::claimed(survivor.clone(), claim);
    let _done = handle.complete(tool_result("resumed")).unwrap();
    assert_eq!(
        survivor.get(&alice(), &id).unwrap().status(),
        TaskStatus::Completed
    );
}

#[test]
fn a_task_whose_attempts_run_out_fails_saying_how_many_ran() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let watcher = instance(&server, &prefix);
    // Attempt 1 dies, attempt 2 (of 2) is claimed by another instance that dies too, and
    // neither saved progress: a poison task. The surviving instance fails it and claims
    // nothing.
    let (mut first, id) = start_child(&server, &prefix, "poison");
    let _ = first.kill();
    let (mut second, claimed) = start_child(&server, &prefix, "claim");
    assert_eq!(
        claimed, id,
        "the second instance claimed the first one's task"
    );
    let _ = second.kill();
    let failed = watcher.wait(&alice(), &id, Some(BOUND)).unwrap();
    let AnyTask::Failed(failed) = failed else {
        panic!("failed, not {failed:?}");
    };
    let Some(Outcome::Error(error)) = failed.outcome() else {
        panic!("a JSON-RPC error");
    };
    assert_eq!(error.code, INTERNAL_ERROR);
    assert!(
        error.message.contains("after 2 of 2 attempts") && error.message.contains("lease"),
        "{}",
        error.message
    );
    assert!(watcher.claim().unwrap().is_none(), "nothing left to claim");
}

#[test]
fn a_task_that_runs_once_fails_on_lapse_and_is_never_handed_over() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let (one, other) = (instance(&server, &prefix), instance(&server, &prefix));
    let (handle, task) = one
        .create(&alice(), TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    assert_eq!(handle.attempt(), None);
    assert!(!one.hand_over(&alice(), &id).unwrap(), "not redeliverable");
    assert_eq!(other.job(&alice(), &id).unwrap(), None);
    assert!(
        handle.checkpoint(json!({"n": 1})).is_ok(),
        "checkpoints work anyway"
    );
    let big = serde_json::Value::String("x".repeat(mcp_tasks::MAX_CHECKPOINT_BYTES));
    assert!(matches!(
        handle.checkpoint(big),
        Err(Error::InvalidParams { .. })
    ));
    drop(handle);
    assert!(other.claim().unwrap().is_none());
}

#[test]
fn an_old_holder_neither_renews_nor_releases_the_new_holder_s_lease() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    // The old instance reaches Redis through a proxy, to be cut off (a partition) while its
    // task's lease lapses and another instance claims the task.
    let proxy = TcpProxy::start(server.socket());
    let old_instance = builder(&proxy.url(), &prefix)
        .io_timeout(Duration::from_millis(300))
        .build()
        .expect("the old instance, through the proxy");
    let new_instance = instance(&server, &prefix);
    let (old, task) = old_instance.create(&alice(), redeliverable(3)).unwrap();
    let id = task.id().to_string();
    proxy.pause();
    let claim = claim_within(&new_instance, BOUND).expect("claimed while the old one is cut off");
    assert_eq!(claim.attempts.attempt(), 2);
    let new = TaskHandle::claimed(new_instance.clone(), claim);
    // The old holder comes back: its renewals must not touch the new holder's lease, and
    // letting go of its handle must not give that lease up.
    proxy.resume();
    thread::sleep(INTERVAL * 5);
    let _ = old.detach();
    thread::sleep(INTERVAL * 5);
    let key = format!("{prefix}:{{o{}}}:t:{id}", hex("alice"));
    let lease = server.command(&["HGET", &key, "l"]);
    assert!(
        lease
            .lines()
            .any(|line| line.trim().parse::<u64>().is_ok_and(|l| l > 0)),
        "the new holder's lease is still there: {lease:?}"
    );
    let filed = server.command(&["ZSCORE", &format!("{prefix}:leases"), &key]);
    assert!(
        !filed.contains("nil") && !filed.trim().is_empty(),
        "{filed:?}"
    );
    let _done = new.complete(tool_result("done")).unwrap();
    drop(old_instance);
}

/// The hex form of an owner key, as the store's key layout names it.
fn hex(key: &str) -> String {
    key.bytes().map(|byte| format!("{byte:02x}")).collect()
}
