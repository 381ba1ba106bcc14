//! The shared stores under concurrency: changes per second of 16 handlers on 2 instances,
//! on Redis and on PostgreSQL, against the engine's own throughput for one equivalent
//! command, measured by the engine's own benchmark tool in the same run.
//!
//! ```sh
//! cargo bench -p mcp-tasks-suites --features redis,postgres --bench shared_concurrency          # 3 s windows
//! cargo bench -p mcp-tasks-suites --features redis,postgres --bench shared_concurrency -- 10    # 10 s windows
//! cargo bench -p mcp-tasks-suites --features redis,postgres --bench shared_concurrency -- postgres   # one engine
//! ```
//!
//! It starts a private `redis-server` (`mcp_tasks_test_support::redis`: a unix socket, no
//! persistence) and a private PostgreSQL (`mcp_tasks_test_support::postgres`: loopback
//! TCP, `fsync` and `synchronous_commit` on, as in production). About 2 minutes.
//!
//! **The store.** Two store instances (two store objects, each with its own connections
//! and its own event subscriber or listening connection, as two servers would have) and
//! [`HANDLERS`] handler threads, half on each instance, each its own owner, running tasks
//! through their lives one after the other: create, [`UPDATES`] status updates (`working`
//! with a progress message, a handler's checkpoints), store result (`completed` with a
//! one-block tool result). **A change** is one store call that writes a task (a create, a
//! status update, a store result), counted when the call returned, i.e. once the engine
//! acknowledged it; each is one request (Redis: one `EVALSHA`, which also publishes the
//! task to the other instances; PostgreSQL: one statement, committed on its own, whose
//! event the instance's announcer sends after the commit, batched with the others it has,
//! in a `pg_notify` transaction of its own connection). A task is `UPDATES + 2` changes. Counted over a window (3 s, or the
//! seconds given) after [`WARM_UP`]; the instances are opened for it and closed after it.
//!
//! **The engine**, from as many clients, alone:
//! - Redis: `redis-benchmark -c 16 --threads 2` running `EVALSHA` of [`RAW_LUA`], the
//!   common path of the store's change script (`COMMIT` in `backends/redis/src/scripts.rs`):
//!   read the task hash's version, status and stamps, check the status, read the clock,
//!   write version, status, record, stamp and write id, `PUBLISH` the change; on a random
//!   key of 100,000, with a record as long as the store's, on the same unix socket, while
//!   two connections subscribe to its channel (as the two instances' subscribers do).
//! - PostgreSQL: `pgbench -c 16 -j 2 -M prepared` with a one-statement script: an `UPDATE`
//!   of one row by primary key (each client its own row) writing a record as long as the
//!   store's, and a `pg_notify` of it in the same statement, over loopback TCP, while two
//!   connections `LISTEN` (as the two instances do); and, for reference, the same
//!   `UPDATE` without the notification.
//!
//! The record's length is measured on a sample task of each store (the mean of its
//! lengths after create, status update and store result). [`ROUNDS`] rounds, each with a
//! store window and an engine window, the store's first in odd rounds and the engine's
//! first in even ones; a line per round as it goes, then the table: each figure's median
//! over the rounds, and the median (and range) of the rounds' ratios, store changes/s ÷
//! engine commands/s.
//!
//! It also reads the CPU time spent in each window, printed per operation (a change, a raw
//! command): the client side's (this process: handlers, instances and their subscribers or
//! listeners; and the tool it ran and waited for; from `/proc/self/stat`) and, for Redis,
//! the server's (`INFO cpu`) and the time its scripts took per call (`INFO commandstats`).
//! On a machine whose cores are the limit, the ratio follows the CPU time per operation;
//! where commits wait for the disk (PostgreSQL), it does not.
//!
//! The tools are those of the installed engines: `redis-benchmark` beside `$REDIS_SERVER`
//! or on `PATH`, `pgbench` beside PostgreSQL's server binaries or on `PATH`. Without one,
//! its line says "not measured" and a note says why; without an engine, a note says its
//! lines are skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{Limits, Owner, TaskStatus, TaskStore};
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::postgres::PostgresServer;
use mcp_tasks_test_support::redis::RedisServer;
use tokio_postgres::NoTls;

#[path = "support/tasks.rs"]
mod tasks;
use tasks::{complete, create, tool_result};

/// Handler threads, spread evenly over [`INSTANCES`], and the engine tools' clients.
const HANDLERS: usize = 16;
const INSTANCES: usize = 2;

/// Status updates per task, between its create and its result.
const UPDATES: usize = 2;

/// Rounds; each alternates the store's window and the engine's.
const ROUNDS: usize = 5;

/// The default window, in seconds (the first argument sets another).
const WINDOW_SECS: u64 = 3;

/// How long the handlers run before the window starts (connections, statements, caches).
const WARM_UP: Duration = Duration::from_millis(500);

/// The Redis store's key prefix and the PostgreSQL store's schema.
const PREFIX: &str = "bench";

/// Keys `redis-benchmark` spreads its writes over (`-r`).
const RAW_KEYS: usize = 100_000;

/// The raw Redis change: the common path of the store's `COMMIT` script. KEYS: the hash.
/// ARGV: the record, the channel, the write id.
const RAW_LUA: &str = r"
local current = redis.call('HMGET', KEYS[1], 'v', 's', 'c', 'u', 'w')
if current[2] == 'completed' then
  return {'illegal', current[2]}
end
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local version = string.format('%.0f', (tonumber(current[1]) or 0) + 1)
redis.call('HSET', KEYS[1], 'v', version, 's', 'working', 'b', ARGV[1], 'u', now, 'w', ARGV[3])
redis.call('PUBLISH', ARGV[2], KEYS[1] .. '\n' .. version .. '\nworking\n' .. now .. '\n'
  .. ARGV[1])
return {'ok', now}
";

/// The raw PostgreSQL change, with its notification and without; `:body` is the record.
const RAW_NOTIFYING_SQL: &str = "WITH changed AS (UPDATE raw_changes SET n = n + 1, body = \
    :body WHERE id = :client_id RETURNING n) SELECT pg_notify('raw_changes', :body) FROM \
    changed;\n";
const RAW_PLAIN_SQL: &str = "UPDATE raw_changes SET n = n + 1, body = :body WHERE id = \
    :client_id;\n";

/// How the table names them.
const RAW_NOTIFYING_LINE: &str = "1-row `UPDATE` by primary key + `pg_notify` (pgbench)";
const RAW_PLAIN_LINE: &str = "1-row `UPDATE` by primary key, no notification (pgbench)";

/// What the handlers did per second over one window.
#[derive(Clone, Copy)]
struct Rate {
    changes: f64,
    tasks: f64,
    /// What the clients and the engine spent meanwhile.
    busy: Busy,
}

/// What was spent so far at one moment: CPU seconds of the client side (this process, and
/// the tools it ran and waited for), and where it is measured (Redis) the server's.
struct Usage {
    at: Instant,
    client: f64,
    server: Option<ServerUsage>,
}

/// What a Redis server spent so far: CPU seconds (`INFO cpu`), and its scripts' calls
/// and microseconds (`INFO commandstats`).
struct ServerUsage {
    cpu: f64,
    calls: u64,
    usec: u64,
}

impl Usage {
    fn now(server: Option<ServerUsage>) -> Usage {
        Usage {
            at: Instant::now(),
            client: client_cpu(),
            server,
        }
    }
}

/// What was spent over a window: the client side's CPU time in cores (1.0: one core busy
/// all the window long), and where measured the server's, and its microseconds per
/// script call.
#[derive(Clone, Copy)]
struct Busy {
    client: f64,
    server: Option<(f64, f64)>,
}

impl Busy {
    fn between(before: &Usage, after: &Usage) -> Busy {
        let seconds = after.at.duration_since(before.at).as_secs_f64();
        let server = before.server.as_ref().zip(after.server.as_ref());
        Busy {
            client: (after.client - before.client) / seconds,
            server: server.map(|(before, after)| {
                let calls = after.calls.saturating_sub(before.calls).max(1);
                let usec = after.usec.saturating_sub(before.usec) as f64;
                ((after.cpu - before.cpu) / seconds, usec / calls as f64)
            }),
        }
    }
}

/// The CPU seconds (user and system) of this process so far, and of the children it
/// waited for (`/proc/self/stat`, in the kernel's 100 ticks a second).
fn client_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command's name, in parentheses: fields 3 on; utime, stime, cutime and
    // cstime are fields 14 to 17.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after_name
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|n| n.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

/// One line of the table: an engine's store against one raw command, every round.
struct Line {
    engine: String,
    command: &'static str,
    store: Vec<Rate>,
    /// `None` when the engine's tool is missing.
    raw: Option<Vec<f64>>,
    /// What was spent in the raw windows.
    raw_busy: Vec<Busy>,
}

/// What could not be measured, for the notes under the table.
type Notes = Vec<String>;

fn main() {
    let window = Duration::from_secs(
        std::env::args()
            .skip(1)
            .find_map(|arg| arg.parse().ok())
            .unwrap_or(WINDOW_SECS)
            .max(1),
    );
    // `redis` or `postgres` among the arguments: that engine alone.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg == "redis" || arg == "postgres")
        .collect();
    let runs = |engine: &str| only.is_empty() || only.iter().any(|arg| arg == engine);
    let mut lines = Vec::new();
    let mut notes = Notes::new();
    if runs("redis") {
        match RedisServer::start() {
            Some(server) => lines.push(redis(&server, window, &mut notes)),
            None => notes.push("redis-server not found: no Redis line".to_owned()),
        }
    }
    if runs("postgres") {
        match PostgresServer::start() {
            Some(server) => lines.extend(postgres(&server, window, &mut notes)),
            None => notes.push("PostgreSQL not found: no PostgreSQL lines".to_owned()),
        }
    }
    report(&lines, &notes, window);
}

/// The Redis line.
fn redis(server: &RedisServer, window: Duration, notes: &mut Notes) -> Line {
    let url = server.url();
    let open = || {
        RedisTaskStore::builder(&url)
            .prefix(PREFIX)
            .limits(Limits::none())
            .build()
            .expect("a store on the bench's redis-server")
    };
    let record = record_len(&open(), |owner, id| {
        let tag = mcp_tasks::backend::owner_tag(owner);
        let length = server.command(&["HSTRLEN", &format!("{PREFIX}:{{{tag}}}:t:{id}"), "b"]);
        length
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("HSTRLEN answered {length}"))
    });
    println!("Redis: a task's record is {record} bytes (mean over its life)");
    let sha = server.command(&["SCRIPT", "LOAD", RAW_LUA]);
    let benchmark = RedisBenchmark {
        program: RedisServer::client("redis-benchmark"),
        server,
        url: &url,
        sha: &sha,
        record: "x".repeat(record),
    };
    let version = server.command(&["INFO", "server"]);
    let version = version
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim();
    // A first run warms the server up and sizes the next ones to the window.
    let mut per_second = benchmark.run(10_000);
    if per_second.is_none() {
        notes.push(format!(
            "{} not found: no raw Redis figure",
            benchmark.program.display()
        ));
    }
    let (mut store, mut raw, mut raw_busy) = (Vec::new(), Vec::new(), Vec::new());
    // Alone: the instances' connections are gone (`CLIENT LIST` shows this one).
    let alone = || server.command(&["CLIENT", "LIST"]).lines().count() == 1;
    let usage = || Usage::now(Some(redis_usage(server)));
    for round in 0..ROUNDS {
        let (rate, busy) = alternate(
            round,
            || handlers(&open, &alone, &usage, window, round),
            || {
                let last = per_second?;
                let requests = (last * window.as_secs_f64()) as usize;
                let before = usage();
                per_second = benchmark.run(requests.max(10_000));
                let busy = Busy::between(&before, &usage());
                raw.extend(per_second);
                raw_busy.push(busy);
                Some(busy)
            },
        );
        store.push(rate);
        print_round("Redis", round, rate, &[("EVALSHA", per_second, busy)]);
    }
    Line {
        engine: format!("Redis {version}"),
        command: "`EVALSHA`: read-check-write of one hash + `PUBLISH` (redis-benchmark)",
        store,
        raw: (!raw.is_empty()).then_some(raw),
        raw_busy,
    }
}

/// What `server` has spent so far: CPU (`used_cpu_user` + `used_cpu_sys`) and `EVALSHA`s.
fn redis_usage(server: &RedisServer) -> ServerUsage {
    let info = server.command(&["INFO", "cpu"]);
    let seconds = |field: &str| -> f64 {
        info.lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in INFO cpu: {info}"))
    };
    ServerUsage {
        cpu: seconds("used_cpu_user") + seconds("used_cpu_sys"),
        calls: server.command_stat(&["evalsha"], "calls"),
        usec: server.command_stat(&["evalsha"], "usec"),
    }
}

/// `redis-benchmark` running the raw change on the bench's server.
struct RedisBenchmark<'a> {
    program: PathBuf,
    server: &'a RedisServer,
    url: &'a str,
    sha: &'a str,
    record: String,
}

impl RedisBenchmark<'_> {
    /// Runs `requests` raw changes from [`HANDLERS`] clients while two connections
    /// subscribe to their channel; their rate, or `None` if the tool is missing.
    fn run(&self, requests: usize) -> Option<f64> {
        const CHANNEL: &str = "raw:events";
        let subscribers = Subscribers::start(self.server, self.url, CHANNEL);
        let output = Command::new(&self.program)
            .arg("-s")
            .arg(self.server.socket())
            .args(["-c", &HANDLERS.to_string(), "-n", &requests.to_string()])
            .args(["--threads", &INSTANCES.to_string()])
            .args(["-r", &RAW_KEYS.to_string(), "--csv"])
            .args(["EVALSHA", self.sha, "1", "raw:__rand_int__", &self.record])
            .args([CHANNEL, "00000000-0000-4000-8000-000000000000"])
            .output();
        let heard = subscribers.finish();
        let stdout = tool_stdout(&self.program, output)?;
        assert!(
            heard.iter().all(|&n| n == requests as u64),
            "each subscriber hears every change: {heard:?} of {requests}"
        );
        // `"test","rps",…` then `"EVALSHA …","12345.67",…`
        let rate = stdout
            .lines()
            .last()
            .and_then(|line| line.split("\",\"").nth(1))
            .and_then(|rps| rps.parse().ok());
        Some(rate.unwrap_or_else(|| panic!("no rate in redis-benchmark's output: {stdout}")))
    }
}

/// What an engine's tool that ran (`output`) printed, or `None` if it is not installed.
///
/// # Panics
/// If it could not be run or failed.
fn tool_stdout(program: &Path, output: std::io::Result<Output>) -> Option<String> {
    let output = match output {
        Ok(output) => output,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => panic!("cannot run {}: {err}", program.display()),
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{} failed ({}): {stdout}{}",
        program.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Some(stdout)
}

/// Connections subscribed to a channel, each reading (and counting) its messages.
struct Subscribers {
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<u64>>,
}

impl Subscribers {
    /// [`INSTANCES`] subscribers of `channel`, returned once the server counts them all.
    fn start(server: &RedisServer, url: &str, channel: &str) -> Subscribers {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..INSTANCES)
            .map(|_| {
                let client = redis::Client::open(url).expect("a client for a subscriber");
                let (stop, channel) = (Arc::clone(&stop), channel.to_owned());
                thread::spawn(move || {
                    let mut connection = client.get_connection().expect("a subscriber");
                    let mut pubsub = connection.as_pubsub();
                    pubsub.subscribe(&channel).expect("SUBSCRIBE");
                    pubsub
                        .set_read_timeout(Some(Duration::from_millis(50)))
                        .expect("a read timeout");
                    let mut heard = 0;
                    loop {
                        match pubsub.get_message() {
                            Ok(_) => heard += 1,
                            Err(err) if err.is_timeout() => {
                                if stop.load(Ordering::Relaxed) {
                                    return heard;
                                }
                            }
                            Err(err) => panic!("a subscriber's connection failed: {err}"),
                        }
                    }
                })
            })
            .collect();
        // `channel` and `:2`
        let all = format!(":{INSTANCES}");
        settle("the subscribers subscribe", || {
            let subscribed = server.command(&["PUBSUB", "NUMSUB", channel]);
            subscribed.lines().last() == Some(&all)
        });
        Subscribers { stop, threads }
    }

    /// Stops them once each has read what was published; how many messages each heard.
    fn finish(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let threads = self.threads.into_iter();
        threads.map(|t| t.join().expect("a subscriber")).collect()
    }
}

/// The PostgreSQL lines: the raw change with its notification, and without.
fn postgres(server: &PostgresServer, window: Duration, notes: &mut Notes) -> Vec<Line> {
    let url = server.url();
    let open = || {
        PostgresTaskStore::builder(&url)
            .schema(PREFIX)
            .limits(Limits::none())
            .build()
            .expect("a store on the bench's PostgreSQL")
    };
    let record = record_len(&open(), |_, id| {
        let sql = format!("SELECT octet_length(body) FROM {PREFIX}.tasks WHERE id = '{id}'");
        let length = server.psql(&sql);
        length
            .parse()
            .unwrap_or_else(|_| panic!("{sql} answered {length}"))
    });
    println!("PostgreSQL: a task's record is {record} bytes (mean over its life)");
    server.psql(&format!(
        "CREATE TABLE raw_changes (id integer PRIMARY KEY, n bigint NOT NULL, body text NOT \
         NULL); INSERT INTO raw_changes SELECT g, 0, '' FROM generate_series(0, {}) g",
        HANDLERS - 1
    ));
    let scripts = Scripts::new();
    let bench = PgBench {
        program: server.client("pgbench"),
        server,
        body: format!("body={}", "x".repeat(record)),
        seconds: window.as_secs(),
    };
    let (notifying, plain) = (
        scripts.write("notifying.sql", RAW_NOTIFYING_SQL),
        scripts.write("plain.sql", RAW_PLAIN_SQL),
    );
    // The raw changes with a notification, and without.
    let commands = [
        ("UPDATE + pg_notify", notifying, RAW_NOTIFYING_LINE),
        ("UPDATE", plain, RAW_PLAIN_LINE),
    ];
    let mut store = Vec::new();
    let mut raw: [(Vec<f64>, Vec<Busy>); 2] = Default::default();
    // Alone: the instances' connections are gone (`psql`'s is the only session).
    let alone = || {
        let others = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client \
            backend' AND pid <> pg_backend_pid()";
        server.psql(others) == "0"
    };
    let usage = || Usage::now(None);
    'rounds: for round in 0..ROUNDS {
        let (rate, measured) = alternate(
            round,
            || handlers(&open, &alone, &usage, window, round),
            || {
                commands.each_ref().map(|(_, script, _)| {
                    let before = usage();
                    // The store's instances listen while they change tasks; so here.
                    let listeners = Listeners::start(&url);
                    let per_second = bench.run(script);
                    drop(listeners);
                    (per_second, Busy::between(&before, &usage()))
                })
            },
        );
        store.push(rate);
        let named: Vec<_> = (commands.iter().zip(&measured))
            .map(|((name, ..), &(per_second, busy))| (*name, per_second, Some(busy)))
            .collect();
        print_round("PostgreSQL", round, rate, &named);
        for ((per_second, busy), (all, all_busy)) in measured.into_iter().zip(&mut raw) {
            let Some(per_second) = per_second else {
                notes.push(format!(
                    "{} not found: no raw PostgreSQL figures",
                    bench.program.display()
                ));
                break 'rounds;
            };
            all.push(per_second);
            all_busy.push(busy);
        }
    }
    let version = server.psql("SHOW server_version");
    let version = version.split_whitespace().next().unwrap_or("?");
    (commands.into_iter().zip(raw))
        .map(|((.., command), (raw, raw_busy))| Line {
            engine: format!("PostgreSQL {version}"),
            command,
            store: store.clone(),
            raw: (!raw.is_empty()).then_some(raw),
            raw_busy,
        })
        .collect()
}

/// `pgbench` on the bench's server.
struct PgBench<'a> {
    program: PathBuf,
    server: &'a PostgresServer,
    /// `-D body=…`: the record.
    body: String,
    seconds: u64,
}

impl PgBench<'_> {
    /// Runs `script` from [`HANDLERS`] clients for the window; transactions per second, or
    /// `None` if the tool is missing.
    fn run(&self, script: &Path) -> Option<f64> {
        let output = Command::new(&self.program)
            .args(["-h", self.server.host(), "-p"])
            .arg(self.server.port().to_string())
            .args(["-U", "postgres", "-n", "-M", "prepared"])
            .args(["-c", &HANDLERS.to_string(), "-j", &INSTANCES.to_string()])
            .args(["-T", &self.seconds.to_string(), "-D", &self.body, "-f"])
            .arg(script)
            .arg("postgres")
            .output();
        let stdout = tool_stdout(&self.program, output)?;
        // `tps = 612.345678 (without initial connection time)`
        let tps = stdout
            .lines()
            .find_map(|line| line.strip_prefix("tps = "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|tps| tps.parse().ok());
        Some(tps.unwrap_or_else(|| panic!("no tps in pgbench's output: {stdout}")))
    }
}

/// [`INSTANCES`] connections listening on the raw changes' channel, reading its
/// notifications as they come; they end when this is dropped.
struct Listeners {
    _clients: Vec<tokio_postgres::Client>,
    _runtime: tokio::runtime::Runtime,
}

impl Listeners {
    fn start(url: &str) -> Listeners {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the listeners");
        let clients = (0..INSTANCES)
            .map(|_| {
                runtime.block_on(async {
                    let (client, mut connection) = tokio_postgres::connect(url, NoTls)
                        .await
                        .expect("a listening connection");
                    // Reads every message, notifications included, until the client ends.
                    tokio::spawn(async move {
                        let mut next = std::future::poll_fn(|cx| connection.poll_message(cx));
                        while let Some(Ok(_)) = (&mut next).await {}
                    });
                    client
                        .batch_execute("LISTEN raw_changes")
                        .await
                        .expect("LISTEN");
                    client
                })
            })
            .collect();
        Listeners {
            _clients: clients,
            _runtime: runtime,
        }
    }
}

/// A private directory of pgbench scripts, removed at the end.
struct Scripts(PathBuf);

impl Scripts {
    fn new() -> Scripts {
        let dir = std::env::temp_dir().join(format!("mcpt-pgbench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the pgbench scripts");
        Scripts(dir)
    }

    fn write(&self, name: &str, sql: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, sql).expect("a pgbench script");
        path
    }
}

impl Drop for Scripts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the store's window and the engine's, the store first in even rounds and the engine
/// first in odd ones (so that neither always follows the other's aftermath: background
/// writes, autovacuum, a busier allocator).
fn alternate<R>(round: usize, store: impl FnOnce() -> Rate, raw: impl FnOnce() -> R) -> (Rate, R) {
    if round.is_multiple_of(2) {
        let rate = store();
        (rate, raw())
    } else {
        let raw = raw();
        (store(), raw)
    }
}

/// Waits (up to 10 s) until `done` says that `what` happened.
fn settle(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not so: {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// The mean length of a task's record on `store` after its create, a status update and
/// its result, as `stored` reads it (given the owner and the task id).
fn record_len<S: TaskStore>(store: &S, stored: impl Fn(&Owner, &str) -> usize) -> usize {
    let owner = Owner::new("sample");
    let id = create(store, &owner, 0);
    let created = stored(&owner, &id);
    let _ = store
        .update_status(&owner, &id, TaskStatus::Working, Some(progress(1)))
        .expect("status update");
    let updated = stored(&owner, &id);
    complete(store, &owner, &id, &tool_result("done"));
    (created + updated + stored(&owner, &id)) / 3
}

/// The message of a task's `step`th status update.
fn progress(step: usize) -> String {
    format!("step {step} of {UPDATES}")
}

/// [`HANDLERS`] handlers on [`INSTANCES`] instances that `open` opens for [`WARM_UP`] and
/// then `window`: what they did per second in the window, and what was spent meanwhile
/// (`usage`). The instances are closed at the end, and it returns
/// once `alone` says their connections are gone (so that the engine is measured alone).
fn handlers<S: TaskStore + Clone + 'static>(
    open: &dyn Fn() -> S,
    alone: &dyn Fn() -> bool,
    usage: &dyn Fn() -> Usage,
    window: Duration,
    round: usize,
) -> Rate {
    let instances: Vec<S> = (0..INSTANCES).map(|_| open()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let changes = Arc::new(AtomicU64::new(0));
    let tasks = Arc::new(AtomicU64::new(0));
    let result = tool_result("done");
    let threads: Vec<_> = (0..HANDLERS)
        .map(|h| {
            let store = instances[h % INSTANCES].clone();
            let (stop, result) = (Arc::clone(&stop), result.clone());
            let (changes, tasks) = (Arc::clone(&changes), Arc::clone(&tasks));
            thread::spawn(move || {
                let owner = Owner::new(format!("handler-{round}-{h}"));
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let id = create(&store, &owner, i);
                    changes.fetch_add(1, Ordering::Relaxed);
                    for step in 1..=UPDATES {
                        let message = Some(progress(step));
                        let _ = store
                            .update_status(&owner, &id, TaskStatus::Working, message)
                            .expect("status update");
                        changes.fetch_add(1, Ordering::Relaxed);
                    }
                    complete(&store, &owner, &id, &result);
                    changes.fetch_add(1, Ordering::Relaxed);
                    tasks.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    thread::sleep(WARM_UP);
    let counts = || {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed) as f64;
        (Instant::now(), load(&changes), load(&tasks))
    };
    let (started, changes_before, tasks_before) = counts();
    let spent = usage();
    thread::sleep(window);
    let (ended, changes_after, tasks_after) = counts();
    let busy = Busy::between(&spent, &usage());
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("a handler");
    }
    drop(instances);
    settle("the closed instances' connections are gone", alone);
    let seconds = ended.duration_since(started).as_secs_f64();
    Rate {
        changes: (changes_after - changes_before) / seconds,
        tasks: (tasks_after - tasks_before) / seconds,
        busy,
    }
}

/// Prints the table: each figure's median over the rounds, and the median and range of
/// each round's ratio.
fn report(lines: &[Line], notes: &Notes, window: Duration) {
    println!(
        "Shared stores under concurrency: {HANDLERS} handlers on {INSTANCES} instances \
         (create, {UPDATES} status updates, store result per task; a change is one \
         acknowledged write of a task), against {HANDLERS} clients of the engine's own \
         benchmark tool; {ROUNDS} rounds of {} s each, alternating; medians.",
        window.as_secs()
    );
    println!("Machine: {}.", machine());
    println!(
        "Command: cargo bench -p mcp-tasks-suites --features redis,postgres --bench \
         shared_concurrency{}",
        if window.as_secs() == WINDOW_SECS {
            String::new()
        } else {
            format!(" -- {}", window.as_secs())
        }
    );
    println!();
    println!(
        "| engine | store changes/s | store tasks/s | raw command, {HANDLERS} clients | raw \
         commands/s | store / raw (range) |"
    );
    println!("|---|---:|---:|---|---:|---:|");
    for line in lines {
        let changes = median(line.store.iter().map(|rate| rate.changes));
        let tasks = median(line.store.iter().map(|rate| rate.tasks));
        let (raw, ratio) = match &line.raw {
            Some(raw) => {
                let ratios: Vec<f64> = line
                    .store
                    .iter()
                    .zip(raw)
                    .map(|(store, raw)| store.changes / raw)
                    .collect();
                let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
                let high = ratios.iter().copied().fold(0.0, f64::max);
                (
                    grouped(median(raw.iter().copied())),
                    format!(
                        "{:.2}× ({low:.2}–{high:.2})",
                        median(ratios.iter().copied())
                    ),
                )
            }
            None => ("not measured".to_owned(), "—".to_owned()),
        };
        println!(
            "| {} | {} | {} | {} | {raw} | {ratio} |",
            line.engine,
            grouped(changes),
            grouped(tasks),
            line.command,
        );
    }
    println!("\nCPU time per operation, medians:");
    for line in lines {
        let store: Vec<Cost> = (line.store.iter())
            .map(|rate| Cost::of(rate.busy, rate.changes))
            .collect();
        let raw: Vec<Cost> = (line.raw_busy.iter())
            .zip(line.raw.iter().flatten())
            .map(|(busy, per_second)| Cost::of(*busy, *per_second))
            .collect();
        let raw = if raw.is_empty() {
            "not measured".to_owned()
        } else {
            Cost::median(&raw).to_string()
        };
        println!(
            "- {}, against {}: store {} per change; raw {raw} per command",
            line.engine,
            line.command,
            Cost::median(&store)
        );
    }
    for note in notes {
        println!("\nNote: {note}.");
    }
}

/// Prints what one round measured, as it goes (the table gives the medians).
fn print_round(engine: &str, round: usize, store: Rate, raw: &[(&str, Option<f64>, Option<Busy>)]) {
    let mut line = format!(
        "{engine}, round {}: store {} changes/s ({})",
        round + 1,
        grouped(store.changes),
        Cost::of(store.busy, store.changes)
    );
    for (command, per_second, busy) in raw {
        if let (Some(per_second), Some(busy)) = (per_second, busy) {
            line.push_str(&format!(
                "; raw {command} {}/s ({}) ({:.2}×)",
                grouped(*per_second),
                Cost::of(*busy, *per_second),
                store.changes / per_second
            ));
        }
    }
    println!("{line}");
}

/// What one operation (a change, a raw command) cost in a window: CPU microseconds of the
/// client side, and where measured of the server, and the microseconds its script took.
#[derive(Clone, Copy)]
struct Cost {
    client: f64,
    server: Option<(f64, f64)>,
}

impl Cost {
    fn of(busy: Busy, per_second: f64) -> Cost {
        let micros = |cores: f64| cores * 1e6 / per_second;
        Cost {
            client: micros(busy.client),
            server: busy.server.map(|(cores, script)| (micros(cores), script)),
        }
    }

    /// The median of each figure.
    fn median(all: &[Cost]) -> Cost {
        let server: Vec<(f64, f64)> = all.iter().filter_map(|cost| cost.server).collect();
        Cost {
            client: median(all.iter().map(|cost| cost.client)),
            server: (!server.is_empty()).then(|| {
                let cpu = median(server.iter().map(|(cpu, _)| *cpu));
                (cpu, median(server.iter().map(|(_, script)| *script)))
            }),
        }
    }
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client {:.1} µs", self.client)?;
        if let Some((cpu, script)) = self.server {
            write!(f, ", server {cpu:.1} µs ({script:.1} µs in the script)")?;
        }
        Ok(())
    }
}

/// The median of `values` (the upper one of an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `n` rounded, with thousands separated by commas.
fn grouped(n: f64) -> String {
    let digits = format!("{:.0}", n.round());
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The cores this process may use, the CPU model and the kernel.
fn machine() -> String {
    let cores = thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
        .map_or("unknown CPU", |(_, model)| model.trim());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} cores (nproc), {model}, Linux {}", kernel.trim())
}
