//! The peer comparison workload (see `bench/peers/`), for this crate's registry and for a
//! floor: a bare `Mutex<HashMap>` with UUID ids doing the least work the workload needs.
//!
//! ```text
//! cargo run --release --example peer_workload -- --n 100000 --runs 3
//! ```
//!
//! Phases, each timed on its own: create N tasks, get each, two status updates each
//! (working → input_required → working), store a small `CallToolResult` each, get each
//! result, list everything page by page (10 per page, as the SDKs' stores do). Prints one JSON line per phase and
//! run: `{"impl", "n", "run", "phase", "ns_per_op"}`, and one `bytes_per_task` line per
//! implementation (heap bytes per live task without its result, counted by this binary's
//! allocator).

#[path = "../benches/support/counting.rs"]
mod counting;
#[path = "../benches/support/floor.rs"]
mod floor;

use std::hint::black_box;
use std::time::Instant;

use counting::{Counting, live_bytes};
use floor::Floor;
use mcp_tasks::TaskStore;
use mcp_tasks::{
    JsonObject, Limits, Outcome, Owner, TaskRegistry, TaskRequest, TaskStatus, TtlPolicy,
};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The page size of the official SDKs' stores, so that every implementation pages alike.
const PAGE: usize = 10;
const TTL: u64 = 60_000;

/// The operations the workload needs, for both implementations.
trait Store {
    const NAME: &'static str;
    fn create(&self, request_id: i64) -> String;
    fn get(&self, id: &str);
    fn update(&self, id: &str, status: TaskStatus);
    fn store(&self, id: &str, result: &JsonObject);
    fn result(&self, id: &str);
    /// One page; returns its size and the next cursor.
    fn list(&self, cursor: Option<&str>) -> (usize, Option<String>);
}

impl Store for Floor {
    const NAME: &'static str = "rust-floor";

    fn create(&self, _request_id: i64) -> String {
        Floor::create(self, TTL)
    }

    fn get(&self, id: &str) {
        Floor::get(self, id);
    }

    fn update(&self, id: &str, status: TaskStatus) {
        Floor::update(self, id, status);
    }

    fn store(&self, id: &str, result: &JsonObject) {
        Floor::store(self, id, result);
    }

    fn result(&self, id: &str) {
        Floor::result(self, id);
    }

    fn list(&self, cursor: Option<&str>) -> (usize, Option<String>) {
        Floor::list(self, cursor, PAGE)
    }
}

/// This crate's registry, driven by id as the SDKs' stores are.
struct Registry {
    registry: TaskRegistry,
    owner: Owner,
}

impl Default for Registry {
    fn default() -> Self {
        let registry = TaskRegistry::builder()
            .ttl_policy(TtlPolicy::new(Some(TTL)).with_max(3_600_000))
            .limits(Limits::none())
            .build()
            .unwrap();
        Self {
            registry,
            owner: Owner::new("session-1"),
        }
    }
}

impl Store for Registry {
    const NAME: &'static str = "mcp-tasks";

    fn create(&self, request_id: i64) -> String {
        let request = TaskRequest::new(request_id, "tools/call").with_ttl(Some(TTL));
        self.registry
            .insert(&self.owner, request)
            .unwrap()
            .id()
            .to_string()
    }

    fn get(&self, id: &str) {
        black_box(self.registry.get(&self.owner, id).unwrap());
    }

    fn update(&self, id: &str, status: TaskStatus) {
        black_box(
            self.registry
                .update_status(&self.owner, id, status, None)
                .unwrap(),
        );
    }

    fn store(&self, id: &str, result: &JsonObject) {
        black_box(
            self.registry
                .store_result(
                    &self.owner,
                    id,
                    TaskStatus::Completed,
                    Outcome::Result(result.clone()),
                )
                .unwrap(),
        );
    }

    fn result(&self, id: &str) {
        black_box(self.registry.result(&self.owner, id).unwrap());
    }

    fn list(&self, cursor: Option<&str>) -> (usize, Option<String>) {
        let page = self.registry.list(&self.owner, cursor, PAGE).unwrap();
        (black_box(page.tasks).len(), page.next_cursor)
    }
}

fn phase(name: &str, n: usize, run: usize, ops: usize, imp: &str, work: impl FnOnce()) {
    let start = Instant::now();
    work();
    let ns = start.elapsed().as_nanos() as f64 / ops as f64;
    println!(
        "{}",
        json!({"impl": imp, "n": n, "run": run, "phase": name, "ns_per_op": ns})
    );
}

fn workload<S: Store + Default>(n: usize, run: usize, suffix: &str) {
    let store = S::default();
    let name = format!("{}{suffix}", S::NAME);
    let result = json!({"content": [{"type": "text", "text": "done"}], "isError": false});
    let result = result.as_object().unwrap().clone();
    let mut ids = Vec::with_capacity(n);
    phase("create", n, run, n, &name, || {
        for i in 0..n {
            ids.push(store.create(i as i64));
        }
    });
    phase("get", n, run, n, &name, || {
        for id in &ids {
            store.get(id);
        }
    });
    phase("update", n, run, 2 * n, &name, || {
        for id in &ids {
            store.update(id, TaskStatus::InputRequired);
            store.update(id, TaskStatus::Working);
        }
    });
    phase("store", n, run, n, &name, || {
        for id in &ids {
            store.store(id, &result);
        }
    });
    phase("result", n, run, n, &name, || {
        for id in &ids {
            store.result(id);
        }
    });
    let mut listed = 0;
    phase("list", n, run, n, &name, || {
        let mut cursor = None;
        loop {
            let (count, next) = store.list(cursor.as_deref());
            listed += count;
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    });
    assert_eq!(listed, n, "{name}: every task listed once");
}

/// Heap bytes per live task without its result: build N tasks and count.
fn bytes_per_task<S: Store + Default>(n: usize, suffix: &str) {
    let store = S::default();
    let mut ids = Vec::with_capacity(n);
    let before = live_bytes();
    for i in 0..n {
        ids.push(store.create(i as i64));
    }
    let after = live_bytes();
    // The ids the workload keeps are the caller's, not the store's.
    let caller = (n * std::mem::size_of::<String>()
        + ids.iter().map(String::capacity).sum::<usize>()) as isize;
    let bytes = (after - before - caller) as f64 / n as f64;
    println!(
        "{}",
        json!({"impl": format!("{}{suffix}", S::NAME), "n": n, "run": 1, "phase": "bytes_per_task", "ns_per_op": bytes, "unit": "bytes"})
    );
    drop(black_box(store));
}

fn main() {
    let mut n = 100_000;
    let mut runs = 3;
    let mut only: Option<String> = None;
    let mut suffix = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(n),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            "--only" => only = args.next(),
            "--suffix" => suffix = args.next().unwrap_or_default(),
            other => {
                eprintln!(
                    "usage: peer_workload [--n N] [--runs R] [--only rust-floor|mcp-tasks] \
                     [--suffix S] (unknown argument {other})"
                );
                std::process::exit(2);
            }
        }
    }
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only == name);
    for run in 1..=runs {
        if wanted(Floor::NAME) {
            workload::<Floor>(n, run, &suffix);
        }
        if wanted(Registry::NAME) {
            workload::<Registry>(n, run, &suffix);
        }
    }
    if wanted(Floor::NAME) {
        bytes_per_task::<Floor>(n, &suffix);
    }
    if wanted(Registry::NAME) {
        bytes_per_task::<Registry>(n, &suffix);
    }
}
