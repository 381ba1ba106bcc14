//! `PostgresTaskStore` against a raw round trip of the same kind of connection, in one run.
//!
//! Starts its own PostgreSQL (`mcp_tasks_test_support::postgres`: a fresh cluster on
//! loopback TCP, commits durable as in production: `fsync` and `synchronous_commit` on;
//! killed, and its directory removed, at the end). Then per round, for N tasks, it times
//! each store operation: create, get, a `tasks/list` page (pages of 20), status update,
//! status update from a second instance (one that did not write the task last), store
//! result and cancel. Interleaved with each phase, in chunks of 50 operations (so both see
//! the same load of a shared machine), it times as many raw round trips of the same kind
//! on a plain `tokio_postgres` connection to the same server (TCP, statements prepared
//! once, driven from the calling thread like the store's calls): for a read, the task's
//! row by id (`SELECT … WHERE id = $1`); for a page, the rows of the same walk's next page
//! (`SELECT … WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT 21`); for a change, a
//! one-row `UPDATE` by primary key, committed on its own (each change of the store is one
//! statement and one commit). Each phase's median ratio over the rounds is printed, `met`
//! when a read is at most 1.5× its raw round trip and a change at most 2×; and, for
//! reference, the same one-row `UPDATE` with a `pg_notify` in its transaction (every change
//! of the store sends its event so) against the plain one.
//!
//! Then the wake latency of a waiter on instance B when instance A completes its task
//! (from just before A's call to B's waiter returning; target: median at most 5 ms). The
//! changes per second of 16 handlers on 2 instances, against what `pgbench` commits, are
//! the `shared_concurrency` bench's.
//!
//! ```sh
//! cargo bench -p mcp-tasks-suites --features postgres --bench postgres_round_trips          # N = 1,000
//! cargo bench -p mcp-tasks-suites --features postgres --bench postgres_round_trips -- 100   # quick
//! ```
//!
//! Without PostgreSQL installed it says so and exits.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{Limits, Owner, TaskStatus, TaskStore};
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_test_support::postgres::PostgresServer;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Statement};

#[path = "support/tasks.rs"]
mod tasks;
use tasks::{complete, create, tool_result};

/// Rounds; each phase's median ratio is reported.
const ROUNDS: usize = 3;

/// Operations timed in a row before as many raw round trips.
const CHUNK: usize = 50;

/// Tasks per `tasks/list` page.
const PAGE: usize = 20;

/// A read is `met` at most this many times its raw round trip, a change at most that.
const READ_TARGET: f64 = 1.5;
const CHANGE_TARGET: f64 = 2.0;

/// The median wake latency across instances is `met` at most this.
const WAKE_TARGET: Duration = Duration::from_millis(5);

/// The schema the bench's instances share.
const SCHEMA: &str = "bench";

/// The kind of raw round trip a phase is compared with.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Read,
    Page,
    Change,
    /// A raw round trip itself, for reference: no target.
    Reference,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Read => "row by id",
            Kind::Page => "page",
            Kind::Change | Kind::Reference => "1-row UPDATE",
        }
    }

    fn target(self) -> Option<f64> {
        match self {
            Kind::Read | Kind::Page => Some(READ_TARGET),
            Kind::Change => Some(CHANGE_TARGET),
            Kind::Reference => None,
        }
    }
}

/// A plain connection to the server, and its prepared statements.
struct Raw {
    runtime: Runtime,
    client: Client,
    read: Statement,
    page: Statement,
    change: Statement,
    notifying: Statement,
    /// The last row of the raw page walk (`i64::MIN` before its first page).
    after: std::cell::Cell<i64>,
}

impl Raw {
    fn connect(url: &str) -> Raw {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the raw connection");
        let client = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(url, NoTls)
                .await
                .expect("a raw connection");
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client
        });
        runtime
            .block_on(client.batch_execute(
                "CREATE TABLE raw_changes (id integer PRIMARY KEY, n bigint NOT NULL); \
                 INSERT INTO raw_changes SELECT g, 0 FROM generate_series(1, 16) g",
            ))
            .expect("the raw change's table");
        let prepare = |sql: &str| {
            runtime
                .block_on(client.prepare(sql))
                .expect("a raw statement")
        };
        let read = prepare(&format!(
            "SELECT version, status, body, created, updated FROM {SCHEMA}.tasks WHERE id = $1"
        ));
        // The rows of the store's page, and one more (whether there is a next page).
        let page = prepare(&format!(
            "SELECT id, seq, status, body, created, updated FROM {SCHEMA}.tasks \
             WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT {}",
            PAGE + 1
        ));
        let change = prepare("UPDATE raw_changes SET n = n + 1 WHERE id = 1");
        let notifying = prepare(
            "WITH changed AS (UPDATE raw_changes SET n = n + 1 WHERE id = 1 RETURNING n) \
             SELECT pg_notify('raw_changes', n::text) FROM changed",
        );
        Raw {
            runtime,
            client,
            read,
            page,
            change,
            notifying,
            after: std::cell::Cell::new(i64::MIN),
        }
    }

    fn block_on<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(future)
    }

    /// The task's row by id.
    fn read(&self, id: uuid::Uuid) {
        let rows = self.block_on(self.client.query(&self.read, &[&id]));
        assert_eq!(rows.expect("a raw read").len(), 1);
    }

    /// The next page of the owner tagged `tag`, walking its tasks as a `tasks/list` walk
    /// does (the walk starts over once it ran out of tasks).
    fn page(&self, tag: &str) {
        let rows = self.block_on(self.client.query(&self.page, &[&tag, &self.after.get()]));
        let rows = rows.expect("a raw page");
        let last = rows
            .iter()
            .take(PAGE)
            .last()
            .map(|row| row.get::<_, i64>(1));
        self.after.set(last.unwrap_or(i64::MIN));
    }

    /// A one-row update, committed.
    fn change(&self) {
        let changed = self.block_on(self.client.execute(&self.change, &[]));
        assert_eq!(changed.expect("a raw change"), 1);
    }

    /// A one-row update with a notification, committed.
    fn change_notifying(&self) {
        let changed = self.block_on(self.client.query(&self.notifying, &[]));
        assert_eq!(changed.expect("a raw change").len(), 1);
    }
}

/// Runs `ops` operations of `f` (given the operation's index), interleaved by chunks with
/// as many raw round trips `raw` (given the same index).
fn measure(ops: usize, raw: &dyn Fn(usize), f: &mut dyn FnMut(usize)) -> Figures {
    let (mut op, mut raw_time) = (Duration::ZERO, Duration::ZERO);
    for start in (0..ops).step_by(CHUNK) {
        let end = (start + CHUNK).min(ops);
        let t = Instant::now();
        for i in start..end {
            raw(i);
        }
        raw_time += t.elapsed();
        let t = Instant::now();
        for i in start..end {
            f(i);
        }
        op += t.elapsed();
    }
    let ops = u32::try_from(ops).expect("a bench-sized count");
    Figures {
        op: op / ops,
        raw: raw_time / ops,
    }
}

/// What one phase of one round measured, per operation.
struct Figures {
    op: Duration,
    raw: Duration,
}

impl Figures {
    fn ratio(&self) -> f64 {
        self.op.as_secs_f64() / self.raw.as_secs_f64()
    }
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1_000)
        .max(PAGE);
    let Some(server) = PostgresServer::start() else {
        println!("postgres_round_trips: PostgreSQL not found, nothing measured");
        return;
    };
    let url = server.url();
    let open = || {
        PostgresTaskStore::builder(&url)
            .schema(SCHEMA)
            .limits(Limits::none())
            .build()
            .expect("a store on the bench's PostgreSQL")
    };
    let (store, other) = (open(), open());
    let raw = Raw::connect(&url);
    let result = tool_result("done");

    let mut phases: Vec<(&'static str, Kind, Vec<Figures>)> = Vec::new();
    let mut record = |name: &'static str, kind: Kind, figures: Figures| match phases
        .iter_mut()
        .find(|(known, ..)| *known == name)
    {
        Some((.., all)) => all.push(figures),
        None => phases.push((name, kind, vec![figures])),
    };
    for round in 0..ROUNDS {
        let owner = Owner::new(format!("bench-{round}"));
        let tag = mcp_tasks::backend::owner_tag(&owner);
        let mut ids: Vec<String> = Vec::with_capacity(n);
        let change = |_: usize| raw.change();
        record(
            "create",
            Kind::Change,
            measure(n, &change, &mut |i| ids.push(create(&store, &owner, i))),
        );
        let uuids: Vec<uuid::Uuid> = ids
            .iter()
            .map(|id| uuid::Uuid::parse_str(id).expect("a task id is a UUID"))
            .collect();
        record(
            "get",
            Kind::Read,
            measure(n, &|i| raw.read(uuids[i]), &mut |i| {
                let task = store.get(&owner, &ids[i]).expect("get");
                assert_eq!(task.status(), TaskStatus::Working);
            }),
        );
        let mut cursor: Option<String> = None;
        let mut seen = 0;
        record(
            "list page",
            Kind::Page,
            measure(n / PAGE, &|_| raw.page(&tag), &mut |_| {
                let page = store.list(&owner, cursor.as_deref(), PAGE).expect("a page");
                seen += page.tasks.len();
                cursor = page.next_cursor;
            }),
        );
        assert_eq!(seen, n / PAGE * PAGE, "the walk saw each task once");
        for (name, instance, message) in [
            ("status update", &store, "halfway"),
            ("status update, other instance", &other, "there"),
        ] {
            record(
                name,
                Kind::Change,
                measure(n, &change, &mut |i| {
                    let status = Some(message.to_owned());
                    let _ = instance
                        .update_status(&owner, &ids[i], TaskStatus::Working, status)
                        .expect(name);
                }),
            );
        }
        record(
            "store result",
            Kind::Change,
            measure(n, &change, &mut |i| {
                complete(&store, &owner, &ids[i], &result);
            }),
        );
        let working: Vec<String> = (0..n).map(|i| create(&store, &owner, i)).collect();
        record(
            "cancel",
            Kind::Change,
            measure(n, &change, &mut |i| {
                let _ = store.cancel(&owner, &working[i], None).expect("cancel");
            }),
        );
        record(
            "raw UPDATE with a pg_notify",
            Kind::Reference,
            measure(n, &change, &mut |_| raw.change_notifying()),
        );
    }

    println!(
        "PostgresTaskStore on loopback TCP (fsync on), n = {n}, median of {ROUNDS} rounds; raw \
         round trips of the same kind on one plain tokio_postgres connection to the same \
         server, interleaved by chunks of {CHUNK}"
    );
    println!(
        "{:<32} {:>9} {:>9}  {:<13} {:>8}  target",
        "phase", "µs/op", "raw µs", "raw", "ratio"
    );
    for (name, kind, mut all) in phases {
        all.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()));
        let median = &all[all.len() / 2];
        let ratio = median.ratio();
        let verdict = match kind.target() {
            Some(target) if ratio <= target => format!("≤ {target}×: met"),
            Some(target) => format!("≤ {target}×: missed"),
            None => "(reference)".to_owned(),
        };
        println!(
            "{name:<32} {:>9.1} {:>9.1}  {:<13} {ratio:>7.2}×  {verdict}",
            median.op.as_secs_f64() * 1e6,
            median.raw.as_secs_f64() * 1e6,
            kind.name(),
        );
    }

    wake_latency(&store, &other, (n / 5).clamp(20, 500));
    drop((store, other, raw));
    drop(server);
}

/// The wake latency of a waiter on `waiting` (instance B) for tasks that `completing`
/// (instance A) completes: `samples` rounds, each once the waiter sleeps in its wait.
fn wake_latency(completing: &PostgresTaskStore, waiting: &PostgresTaskStore, samples: usize) {
    let owner = Owner::new("wake");
    let (to_waiter, ids) = mpsc::channel::<String>();
    let (woke, woken) = mpsc::channel::<Instant>();
    let waiter = {
        let (waiting, owner) = (waiting.clone(), owner.clone());
        thread::spawn(move || {
            for id in ids {
                let task = waiting
                    .wait(&owner, &id, Some(Duration::from_secs(10)))
                    .expect("the waiter gets the task");
                let at = Instant::now();
                assert!(task.is_terminal(), "woke on a {:?} task", task.status());
                woke.send(at).expect("the bench listens");
            }
        })
    };
    let result = tool_result("woke");
    let (mut latencies, mut after_call) = (Vec::new(), Vec::new());
    for i in 0..samples + 5 {
        let id = create(completing, &owner, i);
        to_waiter.send(id.clone()).expect("the waiter runs");
        let asleep = Instant::now();
        while waiting.pending_waits() == 0 {
            assert!(
                asleep.elapsed() < Duration::from_secs(10),
                "the waiter never waited"
            );
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(1));
        let start = Instant::now();
        complete(completing, &owner, &id, &result);
        let called = Instant::now();
        let returned = woken
            .recv_timeout(Duration::from_secs(10))
            .expect("the waiter wakes");
        // The first rounds warm the connections and the statements up.
        if i >= 5 {
            latencies.push(returned.saturating_duration_since(start));
            after_call.push(returned.saturating_duration_since(called));
        }
    }
    drop(to_waiter);
    waiter.join().expect("the waiter ends");
    latencies.sort();
    after_call.sort();
    let median = latencies[latencies.len() / 2];
    let verdict = if median <= WAKE_TARGET {
        "met"
    } else {
        "missed"
    };
    println!(
        "wake latency across instances ({samples} waits; waiter on B, result stored on A): \
         median {:.2} ms, p90 {:.2} ms, max {:.2} ms from just before A's call (target: \
         median ≤ {} ms: {verdict}); median {:.2} ms after A's call returned",
        millis(median),
        millis(latencies[latencies.len() * 9 / 10]),
        millis(latencies[latencies.len() - 1]),
        WAKE_TARGET.as_millis(),
        millis(after_call[after_call.len() / 2]),
    );
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
