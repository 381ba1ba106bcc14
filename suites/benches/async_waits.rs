//! Waits at scale in one tokio runtime with two worker threads, on the in-memory registry:
//! N `tasks/result` waits (2025-11-25) and N handlers awaiting input (the extension), each
//! with the store's futures and, side by side in the same run, with the blocking waits
//! parked by `spawn_blocking` (what the rmcp 2.2 example did).
//!
//! Per approach it prints: how many waits were woken (all must be), the wake latency
//! (from the change that ends the wait to the waiter running again) at p50 and p99, the
//! heap bytes per pending wait (a counting allocator: the spawned task, the future and its
//! registration in the store), the process's threads while the waits are pending, and
//! whether any blocking-pool thread ran. The futures must wake every wait with no
//! blocking-pool thread.
//!
//! ```sh
//! cargo bench -p mcp-tasks-suites --bench async_waits            # N = 10,000
//! cargo bench -p mcp-tasks-suites --bench async_waits -- 1000    # another N
//! ```

#[path = "support/counting.rs"]
mod counting;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_tasks::{
    InputRequest, InputRequests, Limits, Outcome, Owner, TaskRegistry, TaskRequest, TaskStatus,
    TaskStore,
};
use serde_json::json;
use tokio::runtime::Runtime;

/// How the waits wait.
#[derive(Clone, Copy, PartialEq)]
enum Approach {
    /// The store's futures, awaited on the runtime's workers.
    Futures,
    /// The blocking waits, each parked on a thread of the runtime's blocking pool.
    SpawnBlocking,
}

impl Approach {
    fn name(self) -> &'static str {
        match self {
            Approach::Futures => "futures",
            Approach::SpawnBlocking => "spawn_blocking",
        }
    }
}

/// What one run measured.
struct Figures {
    woken: usize,
    p50: Duration,
    p99: Duration,
    bytes_per_wait: f64,
    rss_per_wait: f64,
    threads_pending: usize,
    blocking_threads: usize,
}

/// The runtime under test: two workers, and a blocking pool whose threads are counted.
fn runtime(started_blocking: &Arc<AtomicUsize>) -> Runtime {
    let started = Arc::clone(started_blocking);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name_fn(|| "bench-worker".to_owned())
        .on_thread_start(move || {
            // Workers are named by `thread_name_fn` too; blocking threads start beyond them.
            started.fetch_add(1, Ordering::SeqCst);
        })
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A number of this process's `/proc/self/status` (Linux), e.g. `Threads` or `VmRSS`
/// (in kB).
fn status(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let value = line.strip_prefix(field)?.strip_prefix(':')?;
                value.split_whitespace().next()?.parse().ok()
            })
        })
        .unwrap_or(0)
}

/// The threads of this process now.
fn threads() -> usize {
    status("Threads")
}

/// The resident memory of this process now, in bytes (heap, and the stacks threads use).
fn rss() -> usize {
    status("VmRSS") * 1024
}

fn registry() -> Arc<TaskRegistry> {
    Arc::new(
        TaskRegistry::builder()
            .limits(Limits::none())
            .build()
            .expect("a registry"),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Waits until `count` reaches `n` (every waiter is about to wait), then lets them
/// register.
fn until_waiting(count: &AtomicUsize, n: usize) {
    let started = Instant::now();
    while count.load(Ordering::SeqCst) < n {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the waiters did not start"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(200));
}

/// N `tasks/result` waits, then N results stored from this thread.
fn result_waits(n: usize, approach: Approach) -> Figures {
    let store = registry();
    let owner = Owner::new("bench");
    let ids: Vec<String> = (0..n)
        .map(|i| {
            store
                .insert(&owner, TaskRequest::new(i as i64, "tools/call"))
                .expect("insert")
                .id()
                .to_string()
        })
        .collect();
    let started_threads = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&started_threads);
    let ready = Arc::new(AtomicUsize::new(0));
    let heap_before = counting::live_bytes();
    let rss_before = rss();
    let waiters: Vec<_> = ids
        .iter()
        .map(|id| {
            let (store, owner, id, ready) = (
                Arc::clone(&store),
                owner.clone(),
                id.clone(),
                Arc::clone(&ready),
            );
            match approach {
                Approach::Futures => rt.spawn(async move {
                    ready.fetch_add(1, Ordering::SeqCst);
                    let task = store.wait_async(&owner, &id).await.expect("the result");
                    assert!(task.is_terminal());
                    Instant::now()
                }),
                Approach::SpawnBlocking => rt.spawn_blocking(move || {
                    ready.fetch_add(1, Ordering::SeqCst);
                    let task = store.wait(&owner, &id, None).expect("the result");
                    assert!(task.is_terminal());
                    Instant::now()
                }),
            }
        })
        .collect();
    let pending = pending(&ready, n, approach, heap_before, rss_before);
    let mut changed = Vec::with_capacity(n);
    for id in &ids {
        changed.push(Instant::now());
        store
            .store_result(
                &owner,
                id,
                TaskStatus::Completed,
                Outcome::Result(json!({"content": []}).as_object().unwrap().clone()),
            )
            .expect("store a result");
    }
    finish(rt, waiters, &changed, &pending, &started_threads)
}

/// N handlers waiting for input, then N answers from this thread.
fn input_waits(n: usize, approach: Approach) -> Figures {
    let store = registry();
    let owner = Owner::new("bench");
    let request = InputRequest::new(
        "elicitation/create",
        json!({"message": "go on?"}).as_object().unwrap().clone(),
    );
    let mut ids = Vec::with_capacity(n);
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let (handle, task) = store
            .create(&owner, TaskRequest::new(i as i64, "tools/call"))
            .expect("create");
        ids.push(task.id().to_string());
        handles.push(
            handle
                .require_input(InputRequests::new().with("go", request.clone()))
                .expect("require input"),
        );
    }
    let started_threads = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&started_threads);
    let ready = Arc::new(AtomicUsize::new(0));
    let heap_before = counting::live_bytes();
    let rss_before = rss();
    let waiters: Vec<_> = handles
        .into_iter()
        .map(|waiting| {
            let ready = Arc::clone(&ready);
            match approach {
                Approach::Futures => rt.spawn(async move {
                    ready.fetch_add(1, Ordering::SeqCst);
                    let answers = waiting.wait_for_input_async().await.expect("the answers");
                    let woke = Instant::now();
                    assert_eq!(answers.len(), 1);
                    let _ = waiting.resume().expect("resume").detach();
                    woke
                }),
                Approach::SpawnBlocking => rt.spawn_blocking(move || {
                    ready.fetch_add(1, Ordering::SeqCst);
                    let answers = waiting.wait_for_input(None).expect("the answers");
                    let woke = Instant::now();
                    assert_eq!(answers.len(), 1);
                    let _ = waiting.resume().expect("resume").detach();
                    woke
                }),
            }
        })
        .collect();
    let pending = pending(&ready, n, approach, heap_before, rss_before);
    let answer = json!({"go": {"action": "accept", "content": {}}});
    let mut changed = Vec::with_capacity(n);
    for id in &ids {
        changed.push(Instant::now());
        store
            .respond(&owner, id, answer.as_object().unwrap().clone())
            .expect("answer");
    }
    finish(rt, waiters, &changed, &pending, &started_threads)
}

/// Joins the waiters and computes the figures.
fn finish(
    rt: Runtime,
    waiters: Vec<tokio::task::JoinHandle<Instant>>,
    changed: &[Instant],
    pending: &Pending,
    started_threads: &AtomicUsize,
) -> Figures {
    let woke: Vec<Instant> = rt.block_on(async {
        let mut woke = Vec::with_capacity(waiters.len());
        for waiter in waiters {
            woke.push(
                tokio::time::timeout(Duration::from_secs(120), waiter)
                    .await
                    .expect("every wait is woken")
                    .expect("a waiter"),
            );
        }
        woke
    });
    let mut latencies: Vec<Duration> = woke
        .iter()
        .zip(changed)
        .map(|(woke, changed)| woke.saturating_duration_since(*changed))
        .collect();
    latencies.sort();
    let blocking_threads = started_threads.load(Ordering::SeqCst).saturating_sub(2);
    drop(rt);
    Figures {
        woken: woke.len(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        bytes_per_wait: pending.bytes_per_wait,
        rss_per_wait: pending.rss_per_wait,
        threads_pending: pending.threads_pending,
        blocking_threads,
    }
}

/// Once every waiter waits (the blocking pool runs at most 512 waits at once; the
/// others queue), what they hold.
fn pending(
    ready: &AtomicUsize,
    n: usize,
    approach: Approach,
    heap_before: isize,
    rss_before: usize,
) -> Pending {
    let waiting = match approach {
        Approach::Futures => n,
        Approach::SpawnBlocking => n.min(512),
    };
    until_waiting(ready, waiting);
    Pending {
        bytes_per_wait: (counting::live_bytes() - heap_before) as f64 / n as f64,
        rss_per_wait: rss().saturating_sub(rss_before) as f64 / n as f64,
        threads_pending: threads(),
    }
}

/// What was measured while the waits were pending.
struct Pending {
    bytes_per_wait: f64,
    rss_per_wait: f64,
    threads_pending: usize,
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(10_000);
    println!("async waits: N = {n}, tokio multi-thread runtime with 2 workers, in-memory registry");
    println!(
        "| wait | approach | woken | p50 | p99 | heap B / pending wait | RSS B / pending wait | threads while pending | blocking-pool threads |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for (wait, run) in [
        (
            "tasks/result",
            result_waits as fn(usize, Approach) -> Figures,
        ),
        ("input (extension)", input_waits),
    ] {
        for approach in [Approach::Futures, Approach::SpawnBlocking] {
            let figures = run(n, approach);
            println!(
                "| {wait} | {} | {} | {:?} | {:?} | {:.0} | {:.0} | {} | {} |",
                approach.name(),
                figures.woken,
                figures.p50,
                figures.p99,
                figures.bytes_per_wait,
                figures.rss_per_wait,
                figures.threads_pending,
                figures.blocking_threads,
            );
            if approach == Approach::Futures {
                verdicts.push((wait, figures.woken == n && figures.blocking_threads == 0));
            }
        }
    }
    for (wait, met) in verdicts {
        println!(
            "target: {wait}: every one of {n} futures woken, no blocking-pool thread: {}",
            if met { "met" } else { "MISSED" }
        );
    }
}
