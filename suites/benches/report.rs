//! The measurements criterion does not express, printed as ratios from one run:
//!
//! - wake latency of a thread blocked in `TaskRegistry::wait`, from the completing call
//!   to the waiter's return (median and 99th percentile);
//! - two threads hammering one registry (mixed create / get / complete) against one thread;
//! - heap bytes per live task, without its result, for the registry and the floor;
//! - one 50-task `list` page from 1k tasks against one from 1M.
//!
//! ```text
//! cargo bench --bench report
//! ```

#[path = "support/counting.rs"]
mod counting;
#[path = "support/floor.rs"]
mod floor;

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use counting::{Counting, live_bytes};
use floor::Floor;
use mcp_tasks::TaskStore;
use mcp_tasks::{
    JsonObject, Limits, Outcome, Owner, TaskRegistry, TaskRequest, TaskStatus, TtlPolicy,
};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn registry() -> TaskRegistry {
    TaskRegistry::builder()
        .ttl_policy(TtlPolicy::new(Some(3_600_000)).with_max(86_400_000))
        .limits(Limits::none())
        .build()
        .expect("a valid policy")
}

fn request(i: usize) -> TaskRequest {
    TaskRequest::new(i as i64, "tools/call").with_ttl(Some(60_000))
}

fn small_result() -> JsonObject {
    json!({"content": [{"type": "text", "text": "done"}], "isError": false})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// One waiter thread; for each task the main thread completes it once the waiter is
/// (very likely) asleep, and the waiter reports when `wait` returned.
fn wake_latency(rounds: usize) {
    let registry = registry();
    let owner = Owner::new("session-1");
    let (for_waiter, ids) = mpsc::channel::<String>();
    let (woke, woken) = mpsc::channel::<Instant>();
    let waiter = {
        let registry = registry.clone();
        let owner = owner.clone();
        thread::spawn(move || {
            for id in ids {
                let task = registry
                    .wait(&owner, &id, Some(Duration::from_secs(10)))
                    .expect("completed");
                let at = Instant::now();
                assert!(task.is_terminal());
                woke.send(at).expect("main thread listens");
            }
        })
    };
    let result = small_result();
    let mut latencies = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let (handle, task) = registry.create(&owner, request(i)).expect("no limits");
        for_waiter.send(task.id().to_string()).expect("waiter runs");
        // Let the waiter reach the condition variable.
        thread::sleep(Duration::from_micros(300));
        let start = Instant::now();
        drop(black_box(handle.complete(result.clone()).expect("working")));
        let returned = woken.recv().expect("waiter answers");
        latencies.push(returned.saturating_duration_since(start));
    }
    drop(for_waiter);
    waiter.join().expect("waiter ends");
    latencies.sort();
    println!(
        "wake latency ({rounds} waits): median {:.1} µs, p99 {:.1} µs (target: median <= 50 µs)",
        percentile(&latencies, 0.5).as_secs_f64() * 1e6,
        percentile(&latencies, 0.99).as_secs_f64() * 1e6,
    );
}

/// `ops` rounds of create, get and complete on `registry`, under a per-thread owner.
fn hammer(registry: &TaskRegistry, thread: usize, ops: usize) {
    let owner = Owner::new(format!("session-{thread}"));
    let result = small_result();
    for i in 0..ops {
        let task = registry.insert(&owner, request(i)).expect("no limits");
        let id = task.id().to_string();
        black_box(registry.get(&owner, &id).expect("live"));
        black_box(
            registry
                .store_result(
                    &owner,
                    &id,
                    TaskStatus::Completed,
                    Outcome::Result(result.clone()),
                )
                .expect("working"),
        );
    }
}

fn threads(ops: usize) {
    let single = {
        let registry = registry();
        let start = Instant::now();
        hammer(&registry, 0, ops);
        ops as f64 / start.elapsed().as_secs_f64()
    };
    let double = {
        let registry = registry();
        let start = Instant::now();
        thread::scope(|scope| {
            for t in 0..2 {
                let registry = &registry;
                scope.spawn(move || hammer(registry, t, ops));
            }
        });
        (2 * ops) as f64 / start.elapsed().as_secs_f64()
    };
    println!(
        "throughput (create+get+complete rounds/s): 1 thread {single:.0}, 2 threads {double:.0}, ratio {:.2} (target: >= 1.00)",
        double / single
    );
}

fn bytes_per_task(n: usize) {
    let registry_bytes = {
        let registry = registry();
        let owner = Owner::new("session-1");
        let before = live_bytes();
        for i in 0..n {
            drop(black_box(
                registry.insert(&owner, request(i)).expect("no limits"),
            ));
        }
        let bytes = (live_bytes() - before) as f64 / n as f64;
        drop(black_box(registry));
        bytes
    };
    let floor_bytes = {
        let floor = Floor::default();
        let before = live_bytes();
        for _ in 0..n {
            // The id handed back is the caller's (freed here), not the store's.
            drop(black_box(floor.create(60_000)));
        }
        let bytes = (live_bytes() - before) as f64 / n as f64;
        drop(black_box(floor));
        bytes
    };
    println!(
        "bytes per live task (n = {n}): registry {registry_bytes:.0}, floor {floor_bytes:.0}, ratio {:.2} (target: <= 1.25)",
        registry_bytes / floor_bytes
    );
}

/// The median time of one 50-task `list` page from the middle of `n` tasks.
fn list_page(n: usize) -> Duration {
    let registry = registry();
    let owner = Owner::new("session-1");
    for i in 0..n {
        drop(black_box(
            registry.insert(&owner, request(i)).expect("no limits"),
        ));
    }
    let mut cursor = None;
    for _ in 0..(n / 50 / 2) {
        cursor = registry
            .list(&owner, cursor.as_deref(), 50)
            .expect("valid cursor")
            .next_cursor;
    }
    let mut times: Vec<Duration> = (0..500)
        .map(|_| {
            let start = Instant::now();
            black_box(registry.list(&owner, cursor.as_deref(), 50).expect("valid"));
            start.elapsed()
        })
        .collect();
    times.sort();
    percentile(&times, 0.5)
}

fn list_pages(small: usize, large: usize) {
    let small_page = list_page(small);
    let large_page = list_page(large);
    println!(
        "one 50-task list page: {:.1} µs from {small} tasks, {:.1} µs from {large}, ratio {:.2} (target: <= 2.00)",
        small_page.as_secs_f64() * 1e6,
        large_page.as_secs_f64() * 1e6,
        large_page.as_secs_f64() / small_page.as_secs_f64()
    );
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep it quick then.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let scale = if quick { 10 } else { 1 };
    wake_latency(2_000 / scale);
    threads(200_000 / scale);
    for n in [100_000 / scale, 1_000_000 / scale] {
        bytes_per_task(n);
    }
    list_pages(1_000, 1_000_000 / scale);
}
