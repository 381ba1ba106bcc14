//! The benchmark of issue 25: one client following 1,000 running tasks on one `mcp_http`,
//! first by polling `tasks/get` at the advertised `pollIntervalMs`, then by one
//! `subscriptions/listen` on all of them, in one run. For each way: the requests sent to
//! follow the tasks (their creation aside, the same 1,000 `tools/call` in both), the
//! server's CPU time while following (user + system, from `/proc/<pid>/stat`), and the
//! latency from each task's terminal change (its `lastUpdatedAt`, millisecond precision,
//! same host clock) to the client holding it. Figures on lines starting `listen-vs-poll:`
//! (visible with `--nocapture`).
//!
//! The tasks are the test-only `steps {n: 1, ms}` (one sleep, then the result: a single
//! change each, and no work while they sleep), with durations spread over half a second so
//! that their ends do not all coincide; the server runs at most 512 handlers at once (the
//! runtime's blocking threads), so they end in two waves. The poller keeps the advertised
//! interval per task over four keep-alive connections (one client, as an SDK's pool would).

mod support;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::Timestamp;
use serde_json::{Value, json};
use support::v2026::{Client, Listen, listen_params, meta};
use support::{ALICE, BOB, Launch, quantile};

const TASKS: usize = 1_000;
/// Each task sleeps this long, plus up to [`SPREAD_MS`]: far longer than creating them
/// all takes, so none ends before it is followed.
const BASE_MS: u64 = 3_000;
const SPREAD_MS: u64 = 500;
/// The connections of the client (creating and polling).
const POLLERS: usize = 4;
/// The bound on following the tasks, in either way.
const BOUND: Duration = Duration::from_secs(60);

/// The server's CPU time so far (user + system).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The fields after the command name (which may hold spaces) start with the state
    // (field 3); utime and stime are fields 14 and 15, in clock ticks.
    let after = &stat[stat.rfind(')').expect("a command name") + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf only reads a configuration value.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    Duration::from_millis(ticks * 1000 / per_second.max(1))
}

/// How long ago `task`'s last change was (its `lastUpdatedAt`), seen now.
fn since_change(task: &Value) -> Duration {
    let changed = task["lastUpdatedAt"]
        .as_str()
        .and_then(|at| Timestamp::parse(at).ok())
        .unwrap_or_else(|| panic!("no lastUpdatedAt: {task}"));
    Timestamp::now().saturating_since(changed)
}

fn is_terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// Creates the tasks over [`POLLERS`] connections of the principal of `token`; their ids
/// and the advertised poll interval.
fn create(addr: std::net::SocketAddr, token: &'static str) -> (Vec<String>, Duration) {
    let creators: Vec<_> = (0..POLLERS as u64)
        .map(|lane| {
            thread::spawn(move || {
                let mut client = Client::open(addr, token).expect("the client connects");
                let mut interval = None;
                let ids: Vec<String> = (lane..TASKS as u64)
                    .step_by(POLLERS)
                    .map(|n| {
                        let ms = BASE_MS + n * 7919 % SPREAD_MS;
                        let created = client.result(
                            "tools/call",
                            &json!({"name": "steps", "arguments": {"n": 1, "ms": ms}, "_meta": meta()}),
                        );
                        interval = created["pollIntervalMs"].as_u64();
                        created["taskId"].as_str().expect("a task").to_owned()
                    })
                    .collect();
                (ids, interval)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(TASKS);
    let mut interval = None;
    for creator in creators {
        let (ids, advertised) = creator.join().expect("a creator");
        all.extend(ids);
        interval = interval.or(advertised);
    }
    let interval = interval.expect("the server advertises pollIntervalMs");
    (all, Duration::from_millis(interval))
}

/// What following the tasks one way cost.
struct Figures {
    requests: u64,
    /// The advertised poll interval.
    interval: Duration,
    cpu: Duration,
    wall: Duration,
    latencies: Vec<Duration>,
}

impl Figures {
    fn print(&self, mode: &str) {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "listen-vs-poll: {mode:<6} {} requests to follow {TASKS} tasks, server CPU {}, \
             change->client p50 {} p95 {} max {}, followed in {:.2} s",
            self.requests,
            ms(self.cpu),
            ms(quantile(&sorted, 0.5)),
            ms(quantile(&sorted, 0.95)),
            ms(sorted.last().copied().unwrap_or_default()),
            self.wall.as_secs_f64()
        );
    }
}

/// Polls every task at `interval` until all are terminal, over [`POLLERS`] connections.
fn poll(
    addr: std::net::SocketAddr,
    token: &'static str,
    ids: Vec<String>,
    interval: Duration,
) -> (u64, Vec<Duration>) {
    let shares: Vec<Vec<String>> = (0..POLLERS)
        .map(|n| ids.iter().skip(n).step_by(POLLERS).cloned().collect())
        .collect();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(TASKS)));
    let pollers: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let latencies = Arc::clone(&latencies);
            thread::spawn(move || {
                let mut client = Client::open(addr, token).expect("a poller connects");
                let started = Instant::now();
                // Each task's next poll, due at once.
                let mut due: Vec<(Instant, String)> =
                    share.into_iter().map(|id| (started, id)).collect();
                while !due.is_empty() {
                    assert!(
                        started.elapsed() < BOUND,
                        "polling did not end within {BOUND:?}"
                    );
                    due.sort_by_key(|(at, _)| *at);
                    let wait = due[0].0.saturating_duration_since(Instant::now());
                    if !wait.is_zero() {
                        thread::sleep(wait);
                    }
                    let (_, id) = due.remove(0);
                    let polled = Instant::now();
                    let task = client.result("tasks/get", &json!({"taskId": id, "_meta": meta()}));
                    if is_terminal(&task) {
                        latencies.lock().unwrap().push(since_change(&task));
                    } else {
                        due.push((polled + interval, id));
                    }
                }
                client.sent
            })
        })
        .collect();
    let requests = pollers
        .into_iter()
        .map(|poller| poller.join().expect("a poller"))
        .sum();
    let latencies = Arc::try_unwrap(latencies)
        .expect("pollers done")
        .into_inner()
        .unwrap();
    (requests, latencies)
}

/// Listens on every task until all are terminal.
fn listen(addr: std::net::SocketAddr, token: &str, ids: &[String]) -> (u64, Vec<Duration>) {
    let mut listen = Listen::open(addr, token, 1, &listen_params(ids, true));
    listen.set_timeout(BOUND);
    let ack = listen.next_message().unwrap().expect("acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"]
            .as_array()
            .map(Vec::len),
        Some(TASKS),
        "every task acknowledged"
    );
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(TASKS);
    while latencies.len() < TASKS {
        assert!(
            started.elapsed() < BOUND,
            "listening did not end within {BOUND:?}"
        );
        let message = listen
            .next_message()
            .expect("the stream reads")
            .expect("the stream goes on");
        let task = &message["params"];
        if is_terminal(task) {
            latencies.push(since_change(task));
        }
    }
    (1, latencies)
}

/// Follows a fresh set of tasks of the principal of `token` one way, measuring it (a
/// principal holds at most 1,000 tasks at once: each way has its own).
fn follow(
    server: &support::Server,
    token: &'static str,
    way: impl FnOnce(std::net::SocketAddr, Vec<String>, Duration) -> (u64, Vec<Duration>),
) -> Figures {
    let created = Instant::now();
    let (ids, interval) = create(server.addr, token);
    let creating = created.elapsed();
    assert!(
        creating < Duration::from_millis(BASE_MS) / 2,
        "creating {TASKS} tasks took {creating:?}: too slow for the tasks' {BASE_MS} ms"
    );
    let cpu = cpu_time(server.pid);
    let started = Instant::now();
    let (requests, latencies) = way(server.addr, ids, interval);
    let figures = Figures {
        requests,
        interval,
        cpu: cpu_time(server.pid).saturating_sub(cpu),
        wall: started.elapsed(),
        latencies,
    };
    assert_eq!(figures.latencies.len(), TASKS, "every task's end was seen");
    println!(
        "listen-vs-poll: created {TASKS} tasks in {:.2} s",
        creating.as_secs_f64()
    );
    figures
}

#[test]
fn following_a_thousand_tasks_by_listening_costs_one_request_and_less_cpu_than_polling() {
    let _serial = support::serial();
    let server = Launch::new().env("MCP_TASKS_TEST_TOOLS", "1").start();
    let polled = follow(&server, ALICE, |addr, ids, interval| {
        poll(addr, ALICE, ids, interval)
    });
    // The first run's handlers are all gone before the second starts.
    thread::sleep(Duration::from_millis(200));
    let listened = follow(&server, BOB, |addr, ids, _| listen(addr, BOB, &ids));
    polled.print("poll");
    listened.print("listen");
    println!(
        "listen-vs-poll: the poller sent {:.0} requests/s; the advertised interval asks up to \
         {:.0}/s while all {TASKS} tasks run (the client falls behind when the server cannot \
         answer that fast, and each end is seen later)",
        polled.requests as f64 / polled.wall.as_secs_f64(),
        TASKS as f64 / polled.interval.as_secs_f64(),
    );
    let median = |figures: &Figures| {
        let mut sorted = figures.latencies.clone();
        sorted.sort();
        quantile(&sorted, 0.5)
    };
    println!(
        "listen-vs-poll: listening sent {}x fewer requests, used {:.1}x less server CPU, \
         and told each end {:.1}x sooner (median)",
        polled.requests / listened.requests.max(1),
        polled.cpu.as_secs_f64() / listened.cpu.as_secs_f64().max(0.001),
        median(&polled).as_secs_f64() / median(&listened).as_secs_f64().max(0.0001),
    );
    assert_eq!(listened.requests, 1, "one listen follows every task");
    assert!(
        polled.requests >= TASKS as u64,
        "each task was polled at least once"
    );
    assert!(
        listened.cpu < polled.cpu,
        "listening costs the server less CPU than polling"
    );
    assert!(
        median(&listened) < median(&polled),
        "a listener learns of an end sooner than a poller"
    );
    server.assert_no_panic();
}
