//! Registry and serialization micro-benchmarks (criterion).
//!
//! ```text
//! cargo bench --bench registry
//! ```
//!
//! Speed targets are ratios measured in one run (see `benches/report.rs` and
//! `bench/peers/`), never timed unit tests.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use mcp_tasks::TaskStore;
use mcp_tasks::{
    AnyTask, InputRequests, JsonObject, Limits, Outcome, Owner, TaskRegistry, TaskRequest,
    TaskStatus, TtlPolicy,
};
use serde_json::json;

fn registry() -> TaskRegistry {
    TaskRegistry::builder()
        .ttl_policy(TtlPolicy::new(Some(3_600_000)).with_max(86_400_000))
        .limits(Limits::none())
        .build()
        .expect("a valid policy")
}

fn request(i: i64) -> TaskRequest {
    TaskRequest::new(i, "tools/call").with_ttl(Some(60_000))
}

fn small_result() -> JsonObject {
    json!({"content": [{"type": "text", "text": "done"}], "isError": false})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// A registry holding `n` tasks of one owner, and their ids.
fn populated(n: usize) -> (TaskRegistry, Owner, Vec<String>) {
    let registry = registry();
    let owner = Owner::new("session-1");
    let ids = (0..n)
        .map(|i| {
            registry
                .insert(&owner, request(i as i64))
                .expect("no limits")
                .id()
                .to_string()
        })
        .collect();
    (registry, owner, ids)
}

fn per_task_operations(c: &mut Criterion) {
    let mut group = c.benchmark_group("ops");
    group.bench_function("create", |b| {
        let (registry, owner, _) = populated(0);
        let mut i = 0;
        b.iter(|| {
            i += 1;
            black_box(registry.insert(&owner, request(i)).expect("no limits"))
        });
    });
    let (registry, owner, ids) = populated(10_000);
    group.bench_function("get", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % ids.len();
            black_box(registry.get(&owner, &ids[i]).expect("live"))
        });
    });
    group.bench_function("update_status", |b| {
        let mut i = 0;
        let mut status = TaskStatus::InputRequired;
        b.iter(|| {
            i = (i + 1) % ids.len();
            if i == 0 {
                status = match status {
                    TaskStatus::InputRequired => TaskStatus::Working,
                    _ => TaskStatus::InputRequired,
                };
            }
            black_box(
                registry
                    .update_status(&owner, &ids[i], status, None)
                    .expect("legal"),
            )
        });
    });
    group.bench_function("store_result_then_result", |b| {
        let result = small_result();
        let mut i = 0;
        b.iter_batched(
            || {
                i += 1;
                registry
                    .insert(&owner, request(i))
                    .expect("no limits")
                    .id()
                    .to_string()
            },
            |id| {
                registry
                    .store_result(
                        &owner,
                        &id,
                        TaskStatus::Completed,
                        Outcome::Result(result.clone()),
                    )
                    .expect("working");
                black_box(registry.result(&owner, &id).expect("finished"))
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("lifecycle", |b| {
        let (registry, owner, _) = populated(0);
        let result = small_result();
        let mut i = 0;
        b.iter(|| {
            i += 1;
            let (handle, task) = registry.create(&owner, request(i)).expect("no limits");
            let id = task.id().to_string();
            black_box(registry.get(&owner, &id).expect("live"));
            let waiting = handle.require_input(InputRequests::new()).expect("working");
            let working = waiting.resume().expect("waiting");
            drop(black_box(
                working.complete(result.clone()).expect("working"),
            ));
            black_box(registry.result(&owner, &id).expect("finished"))
        });
    });
    group.finish();
}

fn list_pages(c: &mut Criterion) {
    let mut group = c.benchmark_group("list_page_50");
    group.sample_size(30);
    for n in [1_000, 100_000, 1_000_000] {
        let (registry, owner, _) = populated(n);
        // A page from the middle of the keyset.
        let mut cursor = None;
        for _ in 0..(n / 50 / 2) {
            cursor = registry
                .list(&owner, cursor.as_deref(), 50)
                .expect("valid cursor")
                .next_cursor;
        }
        group.bench_function(format!("{n}"), |b| {
            b.iter(|| black_box(registry.list(&owner, cursor.as_deref(), 50).expect("valid")))
        });
    }
    group.finish();
}

fn serde_round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("serde");
    let registry = registry();
    let owner = Owner::new("session-1");
    let task = registry.insert(&owner, request(1)).expect("no limits");
    let task = task.into_any();
    let text = serde_json::to_string(&task).expect("serializable");
    group.bench_function("any_task_to_json", |b| {
        b.iter(|| black_box(serde_json::to_string(black_box(&task)).expect("serializable")))
    });
    group.bench_function("json_to_any_task", |b| {
        b.iter(|| black_box(serde_json::from_str::<AnyTask>(black_box(&text)).expect("valid")))
    });
    group.finish();
}

criterion_group!(benches, per_task_operations, list_pages, serde_round_trip);
criterion_main!(benches);
