//! The peer comparison workload (see `bench/peers/`), for this crate's stores and for a
//! floor: a bare `Mutex<HashMap>` with UUID ids doing the least work the workload needs.
//!
//! ```text
//! cargo run --release --example peer_workload -- --n 100000 --runs 3
//! cargo run --release --features redis --example peer_workload -- \
//!     --redis redis+unix:///tmp/redis.sock --only mcp-tasks,mcp-tasks-redis --n 5000
//! cargo run --release --features redis --example peer_workload -- \
//!     --redis redis+unix:///tmp/redis.sock --wake 200
//! ```
//!
//! Implementations: `rust-floor`, `mcp-tasks` (the in-memory `TaskRegistry`) and, with the
//! `redis` feature and `--redis URL`, `mcp-tasks-redis` (`RedisTaskStore`, a fresh key
//! prefix per run). `--only` takes a comma-separated subset.
//!
//! Phases, each timed on its own: create N tasks, get each, two status updates each
//! (working → input_required → working), store a small `CallToolResult` each, get each
//! result, list everything page by page (10 per page, as the SDKs' stores do). Prints one
//! JSON line per phase and run: `{"impl", "n", "run", "phase", "ns_per_op"}`, and one
//! `bytes_per_task` line per implementation (heap bytes per live task without its result,
//! counted by this binary's allocator; for Redis, the server's `used_memory` growth).
//!
//! `--wake SAMPLES` measures only the wake latency instead: a thread blocked in `wait` on a
//! task, completed by `store_result` from elsewhere (the same registry; for Redis, a second
//! instance on the same server and prefix), timed from just before `store_result` to the
//! waiter's return. One line per implementation: `{"impl", "n": SAMPLES, "phase":
//! "wake_latency", "median_us", "p90_us", "p99_us", "min_us", "max_us",
//! "store_result_median_us", "setup"}`.

#[path = "../benches/support/counting.rs"]
mod counting;
#[path = "../benches/support/floor.rs"]
mod floor;

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use counting::{Counting, live_bytes};
use floor::Floor;
use mcp_tasks::{
    JsonObject, Limits, Outcome, Owner, TaskRegistry, TaskRequest, TaskStatus, TaskStore, TtlPolicy,
};
#[cfg(feature = "redis")]
use mcp_tasks_redis::RedisTaskStore;
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

/// A backend of this crate's [`TaskStore`], under its name in the results.
trait Backend: TaskStore {
    const NAME: &'static str;
}

impl Backend for TaskRegistry {
    const NAME: &'static str = "mcp-tasks";
}

#[cfg(feature = "redis")]
impl Backend for RedisTaskStore {
    const NAME: &'static str = "mcp-tasks-redis";
}

/// This crate's registry (in memory) with the workload's policy: TTL 60 s, no limits.
fn registry() -> TaskRegistry {
    TaskRegistry::builder()
        .ttl_policy(ttl_policy())
        .limits(Limits::none())
        .build()
        .expect("a valid policy")
}

fn ttl_policy() -> TtlPolicy {
    TtlPolicy::new(Some(TTL)).with_max(3_600_000)
}

/// A `RedisTaskStore` on `url` with the workload's policy. Each call with a new `prefix`
/// is a fresh, empty store; two calls with the same one are two instances sharing tasks.
/// No limits: `Limits::default()` stops an owner at 1,000 tasks.
#[cfg(feature = "redis")]
fn redis_store(url: &str, prefix: &str) -> RedisTaskStore {
    RedisTaskStore::builder(url)
        .prefix(prefix)
        .ttl_policy(ttl_policy())
        .limits(Limits::none())
        .build()
        .unwrap_or_else(|err| panic!("RedisTaskStore on {url}: {err}"))
}

/// A key prefix no earlier store on the same server used.
#[cfg(feature = "redis")]
fn fresh_prefix(what: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "peer-bench-{what}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A [`TaskStore`] driven by id as the SDKs' stores are, for one owner. The same code
/// drives every backend, so the in-memory registry and Redis compare like for like.
struct Tasks<B> {
    store: B,
    owner: Owner,
}

impl<B> Tasks<B> {
    fn new(store: B) -> Self {
        Self {
            store,
            owner: Owner::new("session-1"),
        }
    }
}

impl<B: Backend> Store for Tasks<B> {
    const NAME: &'static str = B::NAME;

    fn create(&self, request_id: i64) -> String {
        let request = TaskRequest::new(request_id, "tools/call").with_ttl(Some(TTL));
        self.store
            .insert(&self.owner, request)
            .unwrap()
            .id()
            .to_string()
    }

    fn get(&self, id: &str) {
        black_box(self.store.get(&self.owner, id).unwrap());
    }

    fn update(&self, id: &str, status: TaskStatus) {
        black_box(
            self.store
                .update_status(&self.owner, id, status, None)
                .unwrap(),
        );
    }

    fn store(&self, id: &str, result: &JsonObject) {
        black_box(
            self.store
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
        black_box(self.store.result(&self.owner, id).unwrap());
    }

    fn list(&self, cursor: Option<&str>) -> (usize, Option<String>) {
        let page = self.store.list(&self.owner, cursor, PAGE).unwrap();
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

fn workload<S: Store>(store: &S, n: usize, run: usize, suffix: &str) {
    let name = format!("{}{suffix}", S::NAME);
    let result = small_result();
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

fn small_result() -> JsonObject {
    json!({"content": [{"type": "text", "text": "done"}], "isError": false})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// Heap bytes per live task without its result: build N tasks and count.
fn bytes_per_task<S: Store>(store: S, n: usize, suffix: &str) {
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

/// Bytes the Redis server holds per task without its result: the growth of its
/// `used_memory` (`INFO memory`) over N creates into a fresh prefix.
#[cfg(feature = "redis")]
fn redis_bytes_per_task(url: &str, n: usize, suffix: &str) {
    fn used_memory(connection: &mut redis::Connection) -> i64 {
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query(connection)
            .expect("INFO memory");
        info.lines()
            .find_map(|line| line.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory in INFO memory")
    }
    let mut connection = redis::Client::open(url)
        .and_then(|client| client.get_connection())
        .unwrap_or_else(|err| panic!("connecting to {url}: {err}"));
    let store = Tasks::new(redis_store(url, &fresh_prefix("mem")));
    // One task first, so that the store's own keys (scripts, indexes) exist already.
    store.create(0);
    let before = used_memory(&mut connection);
    for i in 0..n {
        black_box(store.create(i as i64 + 1));
    }
    let after = used_memory(&mut connection);
    let bytes = (after - before) as f64 / n as f64;
    println!(
        "{}",
        json!({
            "impl": format!("{}{suffix}", RedisTaskStore::NAME), "n": n, "run": 1,
            "phase": "bytes_per_task", "ns_per_op": bytes, "unit": "bytes",
            "method": "growth of the Redis server's used_memory (INFO memory) over N creates, no result",
        })
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Wake latency: a thread blocked in `waiter.wait(..)` on a task that `completer`
/// completes with `store_result`, timed from just before the `store_result` call to the
/// waiter's return. For the in-memory registry both are one registry; for Redis they are
/// two instances on one server and prefix (the waiter learns of the result through its
/// instance's subscription). `samples` measured rounds after `WAKE_WARMUP` unmeasured ones;
/// each round lets the waiter `settle` into its wait before completing the task.
fn wake_latency<B>(
    name: &str,
    waiter: B,
    completer: B,
    samples: usize,
    settle: Duration,
    setup: &str,
) where
    B: TaskStore + Send + 'static,
{
    const WAKE_WARMUP: usize = 10;
    let owner = Owner::new("session-wake");
    let (to_waiter, ids) = mpsc::channel::<String>();
    let (woke, woken) = mpsc::channel::<Result<Instant, String>>();
    let waiting = {
        let owner = owner.clone();
        thread::spawn(move || {
            for id in ids {
                let outcome = waiter.wait(&owner, &id, Some(Duration::from_secs(10)));
                let at = Instant::now();
                let sent = match outcome {
                    Ok(task) if task.is_terminal() => woke.send(Ok(at)),
                    Ok(task) => woke.send(Err(format!("woke on a {:?} task", task.status()))),
                    Err(err) => woke.send(Err(err.to_string())),
                };
                sent.expect("main thread listens");
            }
        })
    };
    let result = small_result();
    let mut latencies = Vec::with_capacity(samples);
    let mut calls = Vec::with_capacity(samples);
    for i in 0..WAKE_WARMUP + samples {
        let request = TaskRequest::new(i as i64, "tools/call").with_ttl(Some(TTL));
        let id = completer
            .insert(&owner, request)
            .expect("created")
            .id()
            .to_string();
        to_waiter.send(id.clone()).expect("waiter runs");
        thread::sleep(settle);
        let start = Instant::now();
        let stored = completer.store_result(
            &owner,
            &id,
            TaskStatus::Completed,
            Outcome::Result(result.clone()),
        );
        let called = Instant::now();
        drop(black_box(stored.expect("working")));
        let returned = woken
            .recv()
            .expect("waiter answers")
            .unwrap_or_else(|err| panic!("{name}: wait failed: {err}"));
        if i >= WAKE_WARMUP {
            latencies.push(returned.saturating_duration_since(start));
            calls.push(called.saturating_duration_since(start));
        }
    }
    drop(to_waiter);
    waiting.join().expect("waiter ends");
    latencies.sort();
    calls.sort();
    println!(
        "{}",
        json!({
            "impl": name, "n": samples, "run": 1, "phase": "wake_latency",
            "median_us": micros(percentile(&latencies, 0.5)),
            "p90_us": micros(percentile(&latencies, 0.9)),
            "p99_us": micros(percentile(&latencies, 0.99)),
            "min_us": micros(latencies[0]),
            "max_us": micros(latencies[latencies.len() - 1]),
            "store_result_median_us": micros(percentile(&calls, 0.5)),
            "setup": setup,
        })
    );
}

const USAGE: &str = "usage: peer_workload [--n N] [--runs R] \
    [--only rust-floor,mcp-tasks,mcp-tasks-redis] [--suffix S] [--redis URL] [--wake SAMPLES [--settle-us US]]";

fn main() {
    let mut n = 100_000;
    let mut runs = 3;
    let mut only: Option<Vec<String>> = None;
    let mut suffix = String::new();
    let mut redis: Option<String> = None;
    let mut wake: Option<usize> = None;
    // Long enough for the waiter to block after its first read (a network round trip
    // for Redis); the same for every backend.
    let mut settle = Duration::from_micros(500);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).unwrap_or(n),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            "--only" => {
                only = args
                    .next()
                    .map(|v| v.split(',').map(str::to_owned).collect());
            }
            "--suffix" => suffix = args.next().unwrap_or_default(),
            "--redis" => redis = args.next(),
            "--wake" => wake = args.next().and_then(|v| v.parse().ok()),
            "--settle-us" => {
                if let Some(us) = args.next().and_then(|v| v.parse().ok()) {
                    settle = Duration::from_micros(us);
                }
            }
            other => {
                eprintln!("{USAGE} (unknown argument {other})");
                std::process::exit(2);
            }
        }
    }
    #[cfg(not(feature = "redis"))]
    if redis.is_some() {
        eprintln!("peer_workload: --redis needs the `redis` feature (cargo run --features redis)");
        std::process::exit(2);
    }
    let wanted = |name: &str| {
        let listed = only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name));
        // Redis only when given a server.
        listed && (name != "mcp-tasks-redis" || redis.is_some())
    };

    if let Some(samples) = wake {
        // Only the wake latency, for the stores that can wait.
        if wanted(TaskRegistry::NAME) {
            let registry = registry();
            wake_latency(
                &format!("{}{suffix}", TaskRegistry::NAME),
                registry.clone(),
                registry,
                samples,
                settle,
                "waiter and completer on one TaskRegistry (in process)",
            );
        }
        #[cfg(feature = "redis")]
        if let Some(url) = redis.as_deref().filter(|_| wanted(RedisTaskStore::NAME)) {
            let prefix = fresh_prefix("wake");
            wake_latency(
                &format!("{}{suffix}", RedisTaskStore::NAME),
                redis_store(url, &prefix),
                redis_store(url, &prefix),
                samples,
                settle,
                "two RedisTaskStore instances on one server: A waits, B stores the result",
            );
        }
        return;
    }

    for run in 1..=runs {
        if wanted(Floor::NAME) {
            workload(&Floor::default(), n, run, &suffix);
        }
        if wanted(TaskRegistry::NAME) {
            workload(&Tasks::new(registry()), n, run, &suffix);
        }
        #[cfg(feature = "redis")]
        if let Some(url) = redis.as_deref().filter(|_| wanted(RedisTaskStore::NAME)) {
            let store = Tasks::new(redis_store(url, &fresh_prefix("workload")));
            workload(&store, n, run, &suffix);
        }
    }
    if wanted(Floor::NAME) {
        bytes_per_task(Floor::default(), n, &suffix);
    }
    if wanted(TaskRegistry::NAME) {
        bytes_per_task(Tasks::new(registry()), n, &suffix);
    }
    #[cfg(feature = "redis")]
    if let Some(url) = redis.as_deref().filter(|_| wanted(RedisTaskStore::NAME)) {
        redis_bytes_per_task(url, n, &suffix);
    }
}
