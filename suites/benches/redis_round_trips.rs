//! `RedisTaskStore` against a raw round trip of the same kind of connection, in one run.
//!
//! Starts its own `redis-server` on a unix socket in a temporary directory (killed, and the
//! directory removed, at the end), then per round, for N tasks, times each phase of the
//! store: create, get, status update, store result, get result, a `tasks/list` walk (per
//! task, pages of 50), and two changes made by a *second* instance (one that did not write
//! the task last; it runs only for these phases), a status update and a cancel.
//! Interleaved with each phase, in chunks of 50 operations (so both see the same load of a
//! shared machine), it times as many raw round trips on a plain connection to the same
//! socket: a trivial `EVALSHA` (`return 1`) and a `PING`. Each phase's median ratio over
//! the rounds is printed, and `met` when it is at most 1.5× the trivial `EVALSHA` (the
//! kind of request a change is), `missed` otherwise.
//!
//! It also counts the round trips each phase made per operation, from `INFO commandstats`
//! before and after: a round trip is one client request, i.e. an `EVALSHA` or `EVAL`, a
//! read pipeline (`HMGET` + `PTTL`, counted by its `PTTL`, which no script calls) or a
//! `PING`; the commands the scripts run inside Redis are not round trips. And it prints
//! the time Redis spent running each phase's scripts per operation (`script µs`, the
//! interleaved trivial ones included, about half a microsecond each).
//!
//! ```sh
//! cargo bench -p mcp-tasks-suites --features redis --bench redis_round_trips           # N = 5,000
//! cargo bench -p mcp-tasks-suites --features redis --bench redis_round_trips -- 1000   # another N
//! ```
//!
//! With `REDIS_ROUND_TRIPS_STATS=1` it also prints the server's `INFO commandstats` at the
//! end (the time of each command the scripts run). Without `redis-server` on `PATH` (or at
//! `$REDIS_SERVER`) it says so and exits.

use std::time::{Duration, Instant};

use mcp_tasks::{Limits, Outcome, Owner, TaskRequest, TaskStatus, TaskStore};
use mcp_tasks_redis::RedisTaskStore;
use serde_json::json;

/// Rounds; each phase's median ratio is reported.
const ROUNDS: usize = 3;

/// Operations timed in a row before as many raw round trips of each kind.
const CHUNK: usize = 50;

/// Tasks per `tasks/list` page in the list walk.
const PAGE: usize = 50;

/// A phase is `met` at most this many times a trivial `EVALSHA`.
const TARGET: f64 = 1.5;

/// The commands that are one client round trip each (see the module docs).
const ROUND_TRIP_COMMANDS: [&str; 4] = ["evalsha", "eval", "pttl", "ping"];

/// What one phase of one round measured.
struct Figures {
    /// Per operation of the phase (per task for the list walk).
    op: Duration,
    /// Per raw round trip interleaved with it.
    evalsha: Duration,
    ping: Duration,
    /// Client round trips per operation (per task for the list walk).
    round_trips: f64,
    /// Time Redis spent running the phase's scripts, per operation (per task for the list
    /// walk), from `INFO commandstats`.
    scripts: Duration,
}

impl Figures {
    fn vs_evalsha(&self) -> f64 {
        self.op.as_secs_f64() / self.evalsha.as_secs_f64()
    }

    fn vs_ping(&self) -> f64 {
        self.op.as_secs_f64() / self.ping.as_secs_f64()
    }
}

/// The raw connection and the server whose round trips are counted.
struct Raw<'s> {
    server: &'s mcp_tasks_test_support::redis::RedisServer,
    connection: redis::Connection,
    trivial: String,
}

impl Raw<'_> {
    /// Runs `ops` operations of `f` (given the operation's index), interleaved by chunks
    /// with as many raw `EVALSHA` and `PING`; `per` tasks per operation.
    fn measure(&mut self, ops: usize, per: usize, f: &mut dyn FnMut(usize)) -> Figures {
        let before = round_trips(self.server);
        let scripts_before = script_micros(self.server);
        let (mut op, mut evalsha, mut ping) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for start in (0..ops).step_by(CHUNK) {
            let end = (start + CHUNK).min(ops);
            let t = Instant::now();
            for _ in start..end {
                let one: i64 = redis::cmd("EVALSHA")
                    .arg(&self.trivial)
                    .arg(0)
                    .query(&mut self.connection)
                    .expect("EVALSHA");
                assert_eq!(one, 1);
            }
            evalsha += t.elapsed();
            let t = Instant::now();
            for i in start..end {
                f(i);
            }
            op += t.elapsed();
            let t = Instant::now();
            for _ in start..end {
                let pong: String = redis::cmd("PING")
                    .query(&mut self.connection)
                    .expect("PING");
                assert_eq!(pong, "PONG");
            }
            ping += t.elapsed();
        }
        let made = round_trips(self.server) - before - 2 * ops as u64;
        // The trivial scripts interleaved count too (about a microsecond each).
        let scripts = script_micros(self.server) - scripts_before;
        let ops32 = u32::try_from(ops).expect("a bench-sized count");
        let per32 = u32::try_from(per).expect("a page size");
        Figures {
            op: op / ops32 / per32,
            evalsha: evalsha / ops32,
            ping: ping / ops32,
            round_trips: made as f64 / (ops * per) as f64,
            scripts: Duration::from_micros(scripts) / ops32 / per32,
        }
    }
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(5_000);
    let Some(server) = mcp_tasks_test_support::redis::RedisServer::start() else {
        println!("redis_round_trips: redis-server not found, nothing measured");
        return;
    };
    let url = server.url();
    let open = || {
        RedisTaskStore::builder(&url)
            .limits(Limits::none())
            .build()
            .expect("a store on the bench's redis-server")
    };
    let store = open();
    let client = redis::Client::open(url.as_str()).expect("a client for the raw round trips");
    let mut connection = client.get_connection().expect("a raw connection");
    let trivial: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query(&mut connection)
        .expect("load the trivial script");
    let mut raw = Raw {
        server: &server,
        connection,
        trivial,
    };
    let owner = Owner::new("bench");
    let result = json!({"content": [{"type": "text", "text": "done"}]});
    let result = result.as_object().cloned().expect("an object");

    let mut phases: Vec<(&'static str, Vec<Figures>)> = Vec::new();
    let mut record = |name: &'static str, figures: Figures| match phases
        .iter_mut()
        .find(|(known, _)| *known == name)
    {
        Some((_, all)) => all.push(figures),
        None => phases.push((name, vec![figures])),
    };
    for round in 0..ROUNDS {
        let mut ids = Vec::with_capacity(n);
        record(
            "create",
            raw.measure(n, 1, &mut |i| {
                let task = store
                    .insert(&owner, TaskRequest::new(i as i64, "tools/call"))
                    .expect("create");
                ids.push(task.id().to_string());
            }),
        );
        record(
            "get",
            raw.measure(n, 1, &mut |i| {
                let task = store.get(&owner, &ids[i]).expect("get");
                assert_eq!(task.status(), TaskStatus::Working);
            }),
        );
        record(
            "status update",
            raw.measure(n, 1, &mut |i| {
                let _ = store
                    .update_status(&owner, &ids[i], TaskStatus::Working, Some("halfway".into()))
                    .expect("status update");
            }),
        );
        record(
            "store result",
            raw.measure(n, 1, &mut |i| {
                let outcome = Outcome::Result(result.clone());
                let _ = store
                    .store_result(&owner, &ids[i], TaskStatus::Completed, outcome)
                    .expect("store result");
            }),
        );
        record(
            "get result",
            raw.measure(n, 1, &mut |i| {
                let task = store.result(&owner, &ids[i]).expect("get result");
                assert_eq!(task.status(), TaskStatus::Completed);
            }),
        );
        let listing = Owner::new(format!("list-{round}"));
        for i in 0..n {
            let _ = store
                .insert(&listing, TaskRequest::new(i as i64, "tools/call"))
                .expect("create for the list walk");
        }
        let mut cursor: Option<String> = None;
        let mut seen = 0;
        record(
            "list walk, per task",
            raw.measure(n.div_ceil(PAGE), PAGE, &mut |_| {
                let page = store
                    .list(&listing, cursor.as_deref(), PAGE)
                    .expect("a page");
                seen += page.tasks.len();
                cursor = page.next_cursor;
            }),
        );
        assert_eq!(seen, n, "the walk saw every task once");
        // A second instance on the same Redis and prefix, only for the phases that need it
        // (on one machine its subscriber thread takes a share of the cores).
        let other = open();
        let theirs: Vec<String> = (0..n)
            .map(|i| {
                let task = store
                    .insert(&owner, TaskRequest::new(i as i64, "tools/call"))
                    .expect("create for the other instance");
                task.id().to_string()
            })
            .collect();
        record(
            "status update (other instance)",
            raw.measure(n, 1, &mut |i| {
                let _ = other
                    .update_status(
                        &owner,
                        &theirs[i],
                        TaskStatus::Working,
                        Some("there".into()),
                    )
                    .expect("status update by another instance");
            }),
        );
        // The first instance writes them last again before the other one cancels them.
        for id in &theirs {
            let _ = store
                .update_status(&owner, id, TaskStatus::Working, Some("back".into()))
                .expect("status update");
        }
        record(
            "cancel (other instance)",
            raw.measure(n, 1, &mut |i| {
                let _ = other
                    .cancel(&owner, &theirs[i], None)
                    .expect("cancel by another instance");
            }),
        );
        drop(other);
    }

    println!(
        "RedisTaskStore on a unix socket, n = {n}, median of {ROUNDS} rounds; raw round \
         trips on one plain connection to the same server, interleaved by chunks of {CHUNK}"
    );
    println!(
        "{:<32} {:>9} {:>12} {:>9} {:>11} {:>11} {:>11}  target ≤ {TARGET}× EVALSHA",
        "phase", "µs/op", "EVALSHA µs", "PING µs", "× EVALSHA", "round trips", "script µs"
    );
    for (name, mut all) in phases {
        all.sort_by(|a, b| a.vs_evalsha().total_cmp(&b.vs_evalsha()));
        let median = &all[all.len() / 2];
        let ratio = median.vs_evalsha();
        let verdict = if ratio <= TARGET { "met" } else { "missed" };
        println!(
            "{name:<32} {:>9.1} {:>12.1} {:>9.1} {ratio:>10.2}× {:>11.2} {:>11.1}  {verdict} \
             ({:.2}× PING)",
            median.op.as_secs_f64() * 1e6,
            median.evalsha.as_secs_f64() * 1e6,
            median.ping.as_secs_f64() * 1e6,
            median.round_trips,
            median.scripts.as_secs_f64() * 1e6,
            median.vs_ping(),
        );
    }
    if std::env::var_os("REDIS_ROUND_TRIPS_STATS").is_some() {
        println!("{}", server.command(&["INFO", "commandstats"]));
    }
    drop(store);
    drop(server);
}

/// The microseconds Redis spent in `EVALSHA` and `EVAL` so far (their inner commands
/// included).
fn script_micros(server: &mcp_tasks_test_support::redis::RedisServer) -> u64 {
    server.command_stat(&["evalsha", "eval"], "usec")
}

/// The client round trips the server has answered so far (see the module docs).
fn round_trips(server: &mcp_tasks_test_support::redis::RedisServer) -> u64 {
    server.command_stat(&ROUND_TRIP_COMMANDS, "calls")
}
