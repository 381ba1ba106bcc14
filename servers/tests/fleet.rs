//! Tasks that outlive their process: a fleet of `mcp_http` instances (the `http/` crate,
//! built with `--features redis,postgres,sqlite`) on one shared store, with short leases (1000 ms,
//! renewed every 125 ms), a 1000 ms shutdown grace and a 200 ms claim back-off, driven
//! over the stateless 2026-07-28 wire (any instance answers for any task) while instances
//! are stopped and started again:
//!
//! - a rolling restart (each instance in turn gets `SIGTERM` and is started again) under a
//!   steady stream of redeliverable `sleep` tasks: none fails, none is lost, none has two
//!   results; the hand-over time and the longest time a task spent unowned are printed;
//! - the same with `SIGKILL`: every task completes, resumed within lease + renewal
//!   interval + back-off of the kill;
//! - a rolling restart with `SIGKILL` under a 2 s lease, ordered so that `sleep` tasks
//!   lose three attempts in a row, each having saved progress: every task completes (an
//!   attempt that saved progress does not count against the tool's attempts);
//! - a poison task (`abort`, test tools) that kills every instance that runs it ends
//!   `failed` after its 3 attempts, and the tasks beside it complete;
//! - a checkpointing task (`steps`) resumes after a kill from its last checkpoint: at most
//!   one step runs twice;
//! - a graceful shutdown hands a redeliverable task over and fails one that is not;
//! - a 2025-11-25 client whose instance was killed while `confirm` waited for it answers
//!   the re-run's question in a new session on the other instance.
//!
//! Every test runs on each store: `redis::NAME` on a `redis-server` of its own
//! (`mcp_tasks_test_support::redis`, feature `redis`), `postgres::NAME` in a schema of its
//! own on the test process's PostgreSQL server (`mcp_tasks_test_support::postgres`,
//! feature `postgres`), `sqlite::NAME` on an SQLite file of its own (feature `sqlite`);
//! without the server installed a test says `SKIPPED` and passes. One test runs at a time.
//!
//! The figures are printed on lines starting with `fleet: STORE:`. `MCP_TASKS_FLEET_TASKS`
//! sets the number of tasks of the two restart tests (default 60: under a minute on 2
//! cores; the figure is 200). Every process is killed when its test ends, also when
//! it fails; every loop is bounded in count and time.
#![cfg(any(feature = "redis", feature = "postgres", feature = "sqlite"))]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::stores::{Backend, Db};

/// The lease of a running task.
const LEASE: Duration = Duration::from_millis(1_000);
/// How often it is renewed.
const RENEW: Duration = Duration::from_millis(125);
/// The shutdown grace.
const GRACE: Duration = Duration::from_millis(1_000);
/// The claim back-off's base.
const BACKOFF: Duration = Duration::from_millis(200);
/// How long an instance may take to exit after `SIGTERM` (grace, hand-over, flush).
const EXIT_WITHIN: Duration = Duration::from_secs(10);
/// How long a single HTTP exchange may take.
const EXCHANGE: Duration = Duration::from_secs(10);
/// When the rolling restart stops its first instance, and how far apart the stops are.
const FIRST_STOP: Duration = Duration::from_millis(2_500);
const STOP_EVERY: Duration = Duration::from_millis(7_000);

/// The number of tasks of the restart tests.
fn task_count() -> usize {
    std::env::var("MCP_TASKS_FLEET_TASKS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .filter(|n| (1..=1_000).contains(n))
        .unwrap_or(60)
}

/// Locks, whatever a panicking test thread left behind.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A line an instance wrote on stderr, when the harness read it.
#[derive(Debug, Clone)]
struct Logged {
    at: Instant,
    slot: usize,
    line: String,
}

/// One running `mcp_http`.
struct Instance {
    child: Child,
    addr: String,
}

/// A few `mcp_http` instances on one shared store, each in a slot that can be emptied
/// (stopped) and filled again (started). Every instance is killed on drop.
struct Fleet {
    backend: Backend,
    /// The variables that point an instance at the store.
    store: Vec<(&'static str, String)>,
    env: Vec<(String, String)>,
    slots: Mutex<Vec<Option<Instance>>>,
    log: Arc<Mutex<Vec<Logged>>>,
}

impl Fleet {
    fn start(db: &Db, size: usize, env: &[(&str, &str)]) -> Fleet {
        let fleet = Fleet {
            backend: db.backend(),
            store: db.env(),
            env: env
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            slots: Mutex::new((0..size).map(|_| None).collect()),
            log: Arc::new(Mutex::new(Vec::new())),
        };
        for slot in 0..size {
            fleet.launch(slot);
        }
        fleet
    }

    /// Starts an instance in `slot` and waits until it listens.
    fn launch(&self, slot: usize) {
        let mut command = Command::new(support::mcp_http());
        support::stores::clear_store_env(&mut command)
            .envs(self.store.iter().map(|(name, value)| (name, value)))
            .env_remove("MCP_TASKS_CONFORMANCE")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0")
            .env("MCP_TASKS_LEASE_MS", LEASE.as_millis().to_string())
            .env("MCP_TASKS_LEASE_RENEW_MS", RENEW.as_millis().to_string())
            .env("MCP_TASKS_SHUTDOWN_MS", GRACE.as_millis().to_string())
            .env(
                "MCP_TASKS_CLAIM_BACKOFF_MS",
                BACKOFF.as_millis().to_string(),
            )
            .env("MCP_TASKS_TEST_TOOLS", "1")
            .env("RUST_LOG", "info");
        for (name, value) in &self.env {
            command.env(name, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcp_http starts");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::clone(&self.log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                lock(&log).push(Logged {
                    at: Instant::now(),
                    slot,
                    line,
                });
            }
        });
        let mut line = String::new();
        let read = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .map(str::to_owned);
        let Some(addr) = addr.filter(|_| read.is_ok()) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcp_http in slot {slot} did not start: {line:?}");
        };
        lock(&self.slots)[slot] = Some(Instance { child, addr });
    }

    /// The addresses of the instances running now.
    fn addrs(&self) -> Vec<String> {
        lock(&self.slots)
            .iter()
            .flatten()
            .map(|instance| instance.addr.clone())
            .collect()
    }

    /// The address of the instance in `slot`, if one runs.
    fn addr(&self, slot: usize) -> Option<String> {
        lock(&self.slots)[slot]
            .as_ref()
            .map(|instance| instance.addr.clone())
    }

    /// Sends `SIGTERM` to the instance in `slot` and waits for it to exit; returns when
    /// the signal was sent. The slot is empty afterwards.
    fn terminate(&self, slot: usize) -> Instant {
        let Some(mut instance) = lock(&self.slots)[slot].take() else {
            panic!("no instance in slot {slot}");
        };
        let sent = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &instance.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM: {status}");
        loop {
            if let Some(status) = instance.child.try_wait().expect("try_wait") {
                assert!(
                    status.success(),
                    "slot {slot} exits 0 after SIGTERM: {status}"
                );
                break;
            }
            if sent.elapsed() > EXIT_WITHIN {
                let _ = instance.child.kill();
                let _ = instance.child.wait();
                panic!("slot {slot} still runs {EXIT_WITHIN:?} after SIGTERM");
            }
            thread::sleep(Duration::from_millis(20));
        }
        sent
    }

    /// Kills the instance in `slot` (`SIGKILL`) and reaps it; returns when. The slot is
    /// empty afterwards.
    fn kill(&self, slot: usize) -> Instant {
        let Some(mut instance) = lock(&self.slots)[slot].take() else {
            panic!("no instance in slot {slot}");
        };
        let killed = Instant::now();
        let _ = instance.child.kill();
        let _ = instance.child.wait();
        killed
    }

    /// Starts again every instance that exited by itself (an aborted process); returns
    /// how many.
    fn restart_dead(&self) -> usize {
        let dead: Vec<usize> = {
            let mut slots = lock(&self.slots);
            slots
                .iter_mut()
                .enumerate()
                .filter_map(|(slot, instance)| {
                    let exited = instance
                        .as_mut()
                        .is_some_and(|i| i.child.try_wait().ok().flatten().is_some());
                    if exited {
                        *instance = None;
                    }
                    exited.then_some(slot)
                })
                .collect()
        };
        for &slot in &dead {
            self.launch(slot);
        }
        dead.len()
    }

    /// The stderr lines read so far.
    fn logged(&self) -> Vec<Logged> {
        lock(&self.log).clone()
    }

    /// The claims logged so far: when, by which slot, which task.
    fn claims(&self) -> Vec<(Instant, usize, String)> {
        self.logged()
            .into_iter()
            .filter(|logged| logged.line.contains("claimed: "))
            .filter_map(|logged| {
                let task = field(&logged.line, "task=")?;
                Some((logged.at, logged.slot, task))
            })
            .collect()
    }

    /// When each slot's shutdown summary line was read (the hand-over is just before it),
    /// and the line.
    fn shutdowns(&self) -> Vec<(Instant, usize, String)> {
        self.logged()
            .into_iter()
            .filter(|logged| {
                logged.line.contains("shutdown: ") && logged.line.contains("handed over")
            })
            .map(|logged| (logged.at, logged.slot, logged.line))
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for instance in lock(&self.slots).iter_mut().flatten() {
            let _ = instance.child.kill();
            let _ = instance.child.wait();
        }
    }
}

/// The value of `name` (e.g. `task=`) in a log line, up to the next space.
fn field(line: &str, name: &str) -> Option<String> {
    let start = line.find(name)? + name.len();
    let value: String = line[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ',' && *c != ':')
        .collect();
    (!value.is_empty()).then_some(value)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The fleet tests run one at a time: each starts real processes and bounds how soon a
/// task resumes, which several fleets at once on two cores would blur.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    lock(&SERIAL)
}

/// A 2026-07-28 request to the instance at `addr`, declaring the tasks extension: its
/// `result`, or what went wrong (an instance that is down, an HTTP or JSON-RPC error).
fn call(addr: &str, method: &str, params: Value) -> Result<Value, String> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let body =
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": support::ext(params)})
            .to_string();
    let target = addr
        .parse()
        .map_err(|err| format!("{addr} is not an address: {err}"))?;
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(2))
        .map_err(|err| format!("{addr}: {err}"))?;
    stream
        .set_read_timeout(Some(EXCHANGE))
        .and_then(|()| stream.set_write_timeout(Some(EXCHANGE)))
        .map_err(|err| err.to_string())?;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer token-a\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        support::routing_headers(&body),
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|err| format!("{addr}: {err}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|err| format!("{addr}: {err}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{addr}: not an HTTP answer: {answer:?}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "{addr}: {}: {body}",
            head.lines().next().unwrap_or("")
        ));
    }
    let message: Value =
        serde_json::from_str(body).map_err(|err| format!("{addr}: not JSON ({err}): {body}"))?;
    match message.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(format!("{addr}: {}", message["error"])),
    }
}

/// Creates a task of `tool` through the instance in `slot` if it runs, else through the
/// next one that does; retries while instances come and go, for at most 30 s.
fn create(fleet: &Fleet, slot: usize, tool: &str, arguments: &Value) -> (String, usize) {
    create_between(fleet, slot, tool, arguments, || {})
}

/// [`create`], calling `between` before each try (to start instances again, say).
fn create_between(
    fleet: &Fleet,
    slot: usize,
    tool: &str,
    arguments: &Value,
    mut between: impl FnMut(),
) -> (String, usize) {
    let size = lock(&fleet.slots).len();
    let started = Instant::now();
    let mut last = String::from("no instance was running");
    for attempt in 0.. {
        if started.elapsed() > Duration::from_secs(30) {
            break;
        }
        between();
        let slot = (slot + attempt) % size;
        if let Some(addr) = fleet.addr(slot) {
            match call(
                &addr,
                "tools/call",
                json!({"name": tool, "arguments": arguments}),
            ) {
                Ok(created) => {
                    let id = created["taskId"]
                        .as_str()
                        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
                        .to_owned();
                    return (id, slot);
                }
                Err(err) => last = err,
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
    panic!("no instance created the task within 30 s; the last answer: {last}");
}

/// A task's end as a client saw it.
#[derive(Debug, Clone, PartialEq)]
enum End {
    /// `completed`, with its result's text.
    Completed(String),
    /// `failed`, with its error.
    Failed(Value),
    /// Any other final status (`cancelled`).
    Other(Value),
}

/// The final state of `task` through a random running instance, or `None` while it runs
/// (or no instance answers right now).
fn final_state(fleet: &Fleet, task: &str, pick: u64) -> Option<End> {
    let addrs = fleet.addrs();
    if addrs.is_empty() {
        return None;
    }
    let addr = &addrs[(pick % addrs.len() as u64) as usize];
    let got = call(addr, "tasks/get", json!({"taskId": task})).ok()?;
    match got["status"].as_str() {
        Some("completed") => Some(End::Completed(
            got["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )),
        Some("failed") => Some(End::Failed(got["error"].clone())),
        Some("working" | "input_required") => None,
        _ => Some(End::Other(got)),
    }
}

/// A small deterministic generator (the same figures on every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// How a restart test stops its instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Term,
    Kill,
}

/// What the restart tests measure.
struct Figures {
    completed: usize,
    failed: Vec<String>,
    lost: Vec<String>,
    twice: Vec<String>,
    /// When each instance was stopped (for `SIGTERM`: when its hand-over was logged).
    stops: Vec<(Instant, usize)>,
}

/// N `sleep` tasks of 2–8 s, created round-robin at a steady rate, each awaited through
/// a random instance, while each of three instances in turn is stopped (`how`) and
/// started again.
fn restart_under_load(backend: Backend, how: Stop) -> Option<(Fleet, Figures)> {
    let db = Db::start(backend)?;
    let fleet = Fleet::start(&db, 3, &[]);
    let count = task_count();
    let mut lcg = Lcg(0x5eed_f1ee7);
    let sleeps: Vec<u64> = (0..count).map(|_| 2_000 + lcg.next() % 6_000).collect();
    // The creations spread over the restarts. The stops are STOP_EVERY apart: a task (at
    // most 8 s of sleep, plus about 2 s per resumption) lives through at most two of them,
    // so it needs at most 3 attempts, the bound `sleep` declares.
    let rate =
        Duration::from_millis((STOP_EVERY.as_millis() as u64 * 3 / count as u64).clamp(20, 500));
    let began = Instant::now();
    let done = AtomicBool::new(false);
    let tasks: Mutex<Vec<(String, u64, Instant)>> = Mutex::new(Vec::new());
    let ends: Mutex<HashMap<String, (End, Instant)>> = Mutex::new(HashMap::new());
    let mut stops = Vec::new();
    thread::scope(|scope| {
        // The client: creates the tasks.
        let creator = scope.spawn(|| {
            for (n, ms) in sleeps.iter().enumerate() {
                let (id, _) = create(&fleet, n % 3, "sleep", &json!({"ms": ms}));
                lock(&tasks).push((id, *ms, Instant::now()));
                thread::sleep(rate);
            }
        });
        // Four pollers wait on the tasks through random instances.
        let pollers: Vec<_> = (0..4u64)
            .map(|poller| {
                let (fleet, tasks, ends, done) = (&fleet, &tasks, &ends, &done);
                scope.spawn(move || {
                    let mut pick = poller;
                    let started = Instant::now();
                    while !done.load(Ordering::SeqCst)
                        && started.elapsed() < Duration::from_secs(120)
                    {
                        let mine: Vec<String> = lock(tasks)
                            .iter()
                            .enumerate()
                            .filter(|(n, _)| *n as u64 % 4 == poller)
                            .map(|(_, (id, _, _))| id.clone())
                            .filter(|id| !lock(ends).contains_key(id))
                            .collect();
                        for id in mine {
                            pick = pick.wrapping_add(1);
                            if let Some(end) = final_state(fleet, &id, pick) {
                                lock(ends).insert(id, (end, Instant::now()));
                            }
                        }
                        thread::sleep(Duration::from_millis(250));
                    }
                })
            })
            .collect();
        // The rolling restart: each instance in turn.
        for slot in 0..3u32 {
            let at = began + FIRST_STOP + STOP_EVERY * slot;
            thread::sleep(at.saturating_duration_since(Instant::now()));
            let slot = slot as usize;
            let stopped = match how {
                Stop::Term => fleet.terminate(slot),
                Stop::Kill => fleet.kill(slot),
            };
            stops.push((stopped, slot));
            fleet.launch(slot);
        }
        creator.join().expect("the creator");
        // Every task gets its sleep, three lease lapses and back-offs, and a margin.
        let deadline = Instant::now() + Duration::from_secs(8 + 3 * 2 + 10);
        while Instant::now() < deadline && lock(&ends).len() < count {
            thread::sleep(Duration::from_millis(100));
        }
        done.store(true, Ordering::SeqCst);
        for poller in pollers {
            poller.join().expect("a poller");
        }
    });
    let tasks = tasks.into_inner().unwrap_or_else(PoisonError::into_inner);
    let ends = ends.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut figures = Figures {
        completed: 0,
        failed: Vec::new(),
        lost: Vec::new(),
        twice: Vec::new(),
        stops,
    };
    for (n, (id, ms, _)) in tasks.iter().enumerate() {
        let Some((end, _)) = ends.get(id) else {
            figures.lost.push(id.clone());
            continue;
        };
        match end {
            End::Completed(text) if *text == format!("slept {ms} ms") => figures.completed += 1,
            End::Completed(text) => figures
                .twice
                .push(format!("{id}: unexpected result {text:?}")),
            other => figures.failed.push(format!("{id}: {other:?}")),
        }
        // Read once more through another instance: the final result never changes.
        if let Some(again) = final_state(&fleet, id, n as u64 + 1)
            && again != *end
        {
            figures
                .twice
                .push(format!("{id}: first {end:?}, then {again:?}"));
        }
    }
    if how == Stop::Term {
        // The stop that matters for a hand-over is the hand-over itself.
        let shutdowns = fleet.shutdowns();
        for (at, slot) in &mut figures.stops {
            if let Some((logged, _, _)) = shutdowns
                .iter()
                .find(|(logged, s, _)| s == slot && logged >= at)
            {
                *at = *logged;
            }
        }
    }
    drop(db);
    Some((fleet, figures))
}

/// Per stop: the time to the first claim after it, and the longest time a task spent
/// unowned (from the stop to its claim, for the claims before the next stop).
fn unowned(fleet: &Fleet, stops: &[(Instant, usize)]) -> Vec<(Duration, Duration, usize)> {
    let claims = fleet.claims();
    stops
        .iter()
        .enumerate()
        .map(|(n, (at, _))| {
            let next = stops.get(n + 1).map(|(next, _)| *next);
            let after: Vec<Duration> = claims
                .iter()
                .filter(|(claimed, _, _)| claimed >= at && next.is_none_or(|next| *claimed < next))
                .map(|(claimed, _, _)| claimed.saturating_duration_since(*at))
                .collect();
            let first = after.iter().min().copied().unwrap_or_default();
            let longest = after.iter().max().copied().unwrap_or_default();
            (first, longest, after.len())
        })
        .collect()
}

/// The superseded writes the instances refused (an old holder's late checkpoint or
/// result), as their logs say.
fn refused_late_writes(fleet: &Fleet) -> usize {
    fleet
        .logged()
        .iter()
        .filter(|logged| logged.line.contains("no longer owns it"))
        .count()
}

fn report(how: &str, fleet: &Fleet, figures: &Figures) -> Vec<(Duration, Duration, usize)> {
    let per_stop = unowned(fleet, &figures.stops);
    // Unowned: after a kill, from the kill to the claim; after a graceful stop, from the
    // hand-over to the claim, per task (a stop's window also holds the next stop's claims).
    let longest = if how == "SIGTERM" {
        hand_over_to_claim(fleet).into_iter().max()
    } else {
        per_stop.iter().map(|(_, l, _)| *l).max()
    }
    .unwrap_or_default();
    let store = fleet.backend.name();
    eprintln!(
        "fleet: {store}: {how}: {} tasks: completed {}, failed {}, lost {}, twice {}; claims {}; \
         late writes refused {}; longest unowned {longest:?}",
        figures.completed + figures.failed.len() + figures.lost.len(),
        figures.completed,
        figures.failed.len(),
        figures.lost.len(),
        figures.twice.len(),
        fleet.claims().len(),
        refused_late_writes(fleet),
    );
    for ((first, longest, claims), (_, slot)) in per_stop.iter().zip(&figures.stops) {
        eprintln!(
            "fleet: {store}: {how}: slot {slot}: {claims} claim(s) before the next stop, first {first:?} and last {longest:?} after the {}",
            if how == "SIGTERM" {
                "hand-over"
            } else {
                "kill"
            }
        );
    }
    if how == "SIGTERM" {
        for (_, slot, line) in fleet.shutdowns() {
            let summary = line.split("shutdown: ").nth(1).unwrap_or(&line);
            let summary: String = summary.chars().take(160).collect();
            eprintln!("fleet: {store}: SIGTERM: slot {slot}: shutdown: {summary}");
        }
        let mut handovers = hand_over_to_claim(fleet);
        handovers.sort();
        if let (Some(first), Some(last)) = (handovers.first(), handovers.last()) {
            eprintln!(
                "fleet: {store}: SIGTERM: hand-over to claim, per task handed over ({}): median {:?}, \
                 max {last:?}, min {first:?}",
                handovers.len(),
                handovers[handovers.len() / 2]
            );
        }
    }
    per_stop
}

/// For each task a shutdown handed over: the time from that instance's shutdown line
/// (read just after its hand-overs) to the task's next claim on another instance.
fn hand_over_to_claim(fleet: &Fleet) -> Vec<Duration> {
    let claims = fleet.claims();
    let mut times = Vec::new();
    for (at, slot, line) in fleet.shutdowns() {
        let handed = line
            .split("handed over")
            .nth(1)
            .and_then(|rest| rest.split(" failed").next())
            .unwrap_or("");
        for id in handed
            .split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
            .filter(|word| word.len() == 36)
        {
            if let Some((claimed, _, _)) = claims
                .iter()
                .filter(|(claimed, by, task)| {
                    task == id && *by != slot && *claimed + Duration::from_secs(1) >= at
                })
                .min_by_key(|(claimed, _, _)| *claimed)
            {
                times.push(claimed.saturating_duration_since(at));
            }
        }
    }
    times
}

/// A rolling restart with `SIGTERM`: every redeliverable task still running after the
/// grace is handed over and finished elsewhere; none fails, none is lost, none has two
/// results.
fn a_rolling_restart_with_sigterm_loses_no_task(backend: Backend) {
    let _serial = one_at_a_time();
    let Some((fleet, figures)) = restart_under_load(backend, Stop::Term) else {
        return;
    };
    report("SIGTERM", &fleet, &figures);
    assert!(figures.failed.is_empty(), "failed: {:#?}", figures.failed);
    assert!(figures.lost.is_empty(), "lost: {:#?}", figures.lost);
    assert!(figures.twice.is_empty(), "twice: {:#?}", figures.twice);
}

/// The same with `SIGKILL`: every task completes, resumed on another instance within the
/// lease, one renewal interval and the back-off of the kill (plus scheduling slack).
fn every_task_completes_when_instances_are_killed(backend: Backend) {
    let _serial = one_at_a_time();
    let Some((fleet, figures)) = restart_under_load(backend, Stop::Kill) else {
        return;
    };
    let per_stop = report("SIGKILL", &fleet, &figures);
    assert!(figures.failed.is_empty(), "failed: {:#?}", figures.failed);
    assert!(figures.lost.is_empty(), "lost: {:#?}", figures.lost);
    assert!(figures.twice.is_empty(), "twice: {:#?}", figures.twice);
    let bound = LEASE + RENEW + BACKOFF;
    for (first, _, claims) in per_stop {
        if claims > 0 {
            eprintln!(
                "fleet: {}: SIGKILL: kill to resume {first:?} (bound {bound:?})",
                backend.name()
            );
            assert!(
                first <= bound + Duration::from_millis(750),
                "resumed {first:?} after the kill, beyond lease + interval + back-off ({bound:?})"
            );
        }
    }
}

/// The lease of the progress roll: long against how often the roll kills (as in the
/// field, where a lease outlives a pause), so a task may lose several attempts in a row.
const PROGRESS_LEASE: &str = "2000";
/// Its renewal interval.
const PROGRESS_RENEW: &str = "250";
/// How far apart the progress roll kills its instances (each attempt claimed after a kill
/// runs about half of it before the next kill: long enough to save progress).
const KILL_EVERY: Duration = Duration::from_millis(5_000);
/// The number of tasks of the progress roll (`MCP_TASKS_FLEET_PROGRESS_TASKS`, default
/// 150: created in a few seconds, before the first kill).
fn progress_task_count() -> usize {
    std::env::var("MCP_TASKS_FLEET_PROGRESS_TASKS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .filter(|n| (1..=1_000).contains(n))
        .unwrap_or(150)
}

/// A rolling restart with `SIGKILL` under a 2 s lease: `sleep` tasks of 2–8 s, which
/// checkpoint every second, all created before the first kill; each of the three instances
/// in turn is killed (5 s apart) and started again. The order and the restarts make a task
/// lose three attempts in a row: the first instance killed stays down until after the
/// second kill, the second one killed is the one that claimed more of the first one's
/// tasks, and its tasks can then only go to the third, killed next. Each of those attempts
/// saved progress, so none counts against `sleep`'s 3 attempts and every task completes
/// (counted, every task that ran a fourth attempt failed "after 3 of 3 attempts"). Prints
/// how many tasks ran more than 3 attempts.
fn a_rolling_kill_fails_no_task_that_saves_progress(backend: Backend) {
    let _serial = one_at_a_time();
    let Some(db) = Db::start(backend) else {
        return;
    };
    let fleet = Fleet::start(
        &db,
        3,
        &[
            ("MCP_TASKS_LEASE_MS", PROGRESS_LEASE),
            ("MCP_TASKS_LEASE_RENEW_MS", PROGRESS_RENEW),
        ],
    );
    let count = progress_task_count();
    let mut lcg = Lcg(0x0bad_5eed_f1ee_7001);
    let began = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..count {
        let ms = 2_000 + lcg.next() % 6_000;
        let (id, _) = create(&fleet, n % 3, "sleep", &json!({"ms": ms}));
        tasks.push((id, ms));
    }
    let created = began.elapsed();
    thread::sleep(Duration::from_millis(500));
    let until = |at: Instant| thread::sleep(at.saturating_duration_since(Instant::now()));
    let roll = fleet.kill(0);
    until(roll + KILL_EVERY);
    // The second to go: the one that claimed more of the first one's tasks.
    let claimed_by = |slot: usize| {
        fleet
            .claims()
            .iter()
            .filter(|(at, by, _)| *at >= roll && *by == slot)
            .count()
    };
    let (second, third) = if claimed_by(1) >= claimed_by(2) {
        (1, 2)
    } else {
        (2, 1)
    };
    fleet.kill(second);
    // The first comes back only once the third claimed the second's tasks.
    until(roll + KILL_EVERY + KILL_EVERY * 3 / 5);
    fleet.launch(0);
    until(roll + KILL_EVERY * 2);
    fleet.kill(third);
    until(roll + KILL_EVERY * 2 + KILL_EVERY * 3 / 5);
    fleet.launch(second);
    fleet.launch(third);
    let mut ends: HashMap<String, End> = HashMap::new();
    let mut pick = 0;
    let deadline = Instant::now() + Duration::from_secs(45);
    while Instant::now() < deadline && ends.len() < count {
        for (id, _) in &tasks {
            if !ends.contains_key(id) {
                pick += 1;
                if let Some(end) = final_state(&fleet, id, pick) {
                    ends.insert(id.clone(), end);
                }
            }
        }
        thread::sleep(Duration::from_millis(250));
    }
    let took = began.elapsed();
    let mut claims: HashMap<String, usize> = HashMap::new();
    for (_, _, task) in fleet.claims() {
        *claims.entry(task).or_default() += 1;
    }
    // Claimed three times or more: ran a fourth attempt, or more.
    let past_three = claims.values().filter(|&&n| n >= 3).count();
    let most = claims.values().max().copied().unwrap_or_default() + 1;
    let (mut completed, mut failed, mut lost) = (0, Vec::new(), Vec::new());
    for (id, ms) in &tasks {
        match ends.get(id) {
            Some(End::Completed(text)) if *text == format!("slept {ms} ms") => completed += 1,
            Some(other) => failed.push(format!(
                "{id} ({ms} ms, {} claims): {other:?}",
                claims.get(id).copied().unwrap_or_default()
            )),
            None => lost.push(id.clone()),
        }
    }
    eprintln!(
        "fleet: {}: progress roll: {count} tasks (created in {created:?}): completed {completed}, \
         failed {}, lost {}; claims {}, {past_three} task(s) ran more than 3 attempts (at most \
         {most}); took {took:?}",
        backend.name(),
        failed.len(),
        lost.len(),
        claims.values().sum::<usize>(),
    );
    assert!(failed.is_empty(), "failed: {failed:#?}");
    assert!(lost.is_empty(), "lost: {lost:#?}");
    assert_eq!(completed, count);
}

/// A poison task: `abort` aborts every instance that runs it. The harness starts dead
/// instances again; the task is tried 3 times, at a slowing pace, then fails with
/// `-32603` naming its attempts, while the `sleep` tasks beside it complete.
fn a_poison_task_fails_after_its_attempts_and_the_fleet_goes_on(backend: Backend) {
    let _serial = one_at_a_time();
    let Some(db) = Db::start(backend) else {
        return;
    };
    let fleet = Fleet::start(&db, 3, &[]);
    let (poison, _) = create(&fleet, 0, "abort", &json!({}));
    // After the poison's first run took slot 0 down, beside it: a sleep lives through at
    // most the poison's two other runs, so it needs at most its 3 attempts. The poison's
    // other runs may take the other two down meanwhile (on a slow machine, before the
    // sleeps are in): what died is started again between tries.
    thread::sleep(Duration::from_millis(300));
    let mut sleeps = Vec::new();
    let mut restarts = 0;
    for n in 0..6 {
        let ms = 2_000 + 300 * n as u64;
        let (id, _) = create_between(&fleet, 1 + n % 2, "sleep", &json!({"ms": ms}), || {
            restarts += fleet.restart_dead();
        });
        sleeps.push((id, ms));
    }
    let started = Instant::now();
    let mut ends: BTreeMap<String, End> = BTreeMap::new();
    let mut pick = 0;
    while started.elapsed() < Duration::from_secs(45) && ends.len() < sleeps.len() + 1 {
        restarts += fleet.restart_dead();
        for id in std::iter::once(&poison).chain(sleeps.iter().map(|(id, _)| id)) {
            if !ends.contains_key(id) {
                pick += 1;
                if let Some(end) = final_state(&fleet, id, pick) {
                    ends.insert(id.clone(), end);
                }
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    let took = started.elapsed();
    let claims = fleet
        .claims()
        .iter()
        .filter(|(_, _, task)| *task == poison)
        .count();
    eprintln!(
        "fleet: {}: poison: ended after {took:?}, {restarts} instance(s) restarted, {claims} claim(s) \
         of the poison task; its end: {:?}",
        backend.name(),
        ends.get(&poison)
    );
    match ends.get(&poison) {
        Some(End::Failed(error)) => {
            let message = error["message"].as_str().unwrap_or_default();
            assert_eq!(error["code"], -32603, "{error}");
            assert!(message.contains("3 of 3 attempts"), "{error}");
        }
        other => panic!("the poison task ends failed, got {other:?}"),
    }
    assert!(
        restarts >= 3,
        "every attempt took an instance down: {restarts}"
    );
    for (id, ms) in &sleeps {
        assert_eq!(
            ends.get(id),
            Some(&End::Completed(format!("slept {ms} ms"))),
            "{id} completes beside the poison task"
        );
    }
}

/// A checkpointing task (`steps`: 10 steps of 300 ms, a checkpoint after each) on an
/// instance killed mid-way resumes on the other from its last checkpoint: every step
/// runs, at most one twice, and the re-run starts past the first step.
fn a_rerun_starts_from_the_last_checkpoint(backend: Backend) {
    let _serial = one_at_a_time();
    let Some(db) = Db::start(backend) else {
        return;
    };
    let record: PathBuf =
        std::env::temp_dir().join(format!("mcpt-steps-{}.txt", uuid::Uuid::new_v4().simple()));
    let file = record.display().to_string();
    let fleet = Fleet::start(&db, 2, &[("MCP_TASKS_TEST_STEPS_FILE", &file)]);
    let (task, slot) = create(&fleet, 0, "steps", &json!({"n": 10, "ms": 300}));
    thread::sleep(Duration::from_millis(1_200));
    let killed = fleet.kill(slot);
    let mut end = None;
    let mut pick = 0;
    while killed.elapsed() < Duration::from_secs(30) && end.is_none() {
        pick += 1;
        end = final_state(&fleet, &task, pick);
        thread::sleep(Duration::from_millis(100));
    }
    let steps = std::fs::read_to_string(&record).unwrap_or_default();
    let _ = std::fs::remove_file(&record);
    let mut starts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for line in steps.lines().filter(|line| line.starts_with(&task)) {
        let mut words = line.split_whitespace().skip(1);
        let (Some(step), Some(attempt)) = (
            words.next().and_then(|w| w.parse().ok()),
            words.next().and_then(|w| w.parse().ok()),
        ) else {
            panic!("a step line: {line}");
        };
        starts.entry(step).or_default().push(attempt);
    }
    let twice: Vec<u64> = starts
        .iter()
        .filter(|(_, attempts)| attempts.len() > 1)
        .map(|(step, _)| *step)
        .collect();
    let rerun_from = starts
        .iter()
        .find(|(_, attempts)| attempts.contains(&2))
        .map(|(step, _)| *step);
    eprintln!(
        "fleet: {}: checkpoint: killed after 1.2 s; the re-run started at step {rerun_from:?}; steps \
         run twice: {twice:?}; end: {end:?}",
        backend.name()
    );
    assert_eq!(end, Some(End::Completed("ran 10 steps".into())), "{steps}");
    assert_eq!(
        starts.keys().copied().collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>(),
        "every step ran: {steps}"
    );
    assert!(
        twice.len() <= 1,
        "at most one step ran twice: {twice:?}\n{steps}"
    );
    assert!(
        rerun_from.is_some_and(|step| step > 0),
        "the re-run starts from the checkpoint, not from zero: {steps}"
    );
}

/// A graceful shutdown with two tasks still running after the grace: the redeliverable
/// `sleep` is handed over and completed by the other instance at once (no lease lapse, no
/// back-off); the conformance fixture `slow_compute`, which runs once, fails with the
/// shutdown's `-32603` as before. The shutdown line says so.
fn a_graceful_shutdown_hands_over_what_may_run_again_and_fails_the_rest(backend: Backend) {
    let _serial = one_at_a_time();
    let Some(db) = Db::start(backend) else {
        return;
    };
    let fleet = Fleet::start(&db, 2, &[("MCP_TASKS_CONFORMANCE", "1")]);
    let a = fleet.addr(0).expect("slot 0 runs");
    let created = |tool: &str, arguments: Value| {
        let created = call(
            &a,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .expect("A creates the task");
        created["taskId"].as_str().expect("a task id").to_owned()
    };
    let sleep = created("sleep", json!({"ms": 4_000}));
    let once = created("slow_compute", json!({"seconds": 60}));
    thread::sleep(Duration::from_millis(300));
    let signalled = fleet.terminate(0);
    let exited = signalled.elapsed();
    let mut ends: HashMap<String, End> = HashMap::new();
    let mut pick = 0;
    while signalled.elapsed() < Duration::from_secs(20) && ends.len() < 2 {
        for id in [&sleep, &once] {
            if !ends.contains_key(id) {
                pick += 1;
                if let Some(end) = final_state(&fleet, id, pick) {
                    ends.insert(id.clone(), end);
                }
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    let shutdown = fleet
        .shutdowns()
        .into_iter()
        .map(|(_, _, line)| line)
        .next()
        .unwrap_or_default();
    let claimed = fleet
        .claims()
        .into_iter()
        .find(|(_, _, task)| *task == sleep)
        .map(|(at, slot, _)| (at.saturating_duration_since(signalled), slot));
    eprintln!(
        "fleet: {}: graceful: exited {exited:?} after SIGTERM; the sleep task claimed {claimed:?} \
         after it; ends {ends:?}; {shutdown}",
        backend.name()
    );
    assert_eq!(
        ends.get(&sleep),
        Some(&End::Completed("slept 4000 ms".into())),
        "the redeliverable task completes elsewhere"
    );
    match ends.get(&once) {
        Some(End::Failed(error)) => {
            assert_eq!(error["code"], -32603, "{error}");
            assert!(
                error["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("shut down")),
                "{error}"
            );
        }
        other => panic!("the task that runs once fails at shutdown, got {other:?}"),
    }
    assert!(
        shutdown.contains("1 handed over") && shutdown.contains(&sleep) && shutdown.contains(&once),
        "the shutdown line counts and names both: {shutdown}"
    );
    let (after, slot) = claimed.expect("the other instance claimed the sleep task");
    assert_eq!(slot, 1, "the other instance claims it");
    assert!(
        after < GRACE + LEASE,
        "claimed {after:?} after SIGTERM: at the hand-over, not at a lease lapse"
    );
}

/// POSTs a 2025-11-25 message as alice to the instance at `addr` (in `session`, if any),
/// accepting JSON and SSE.
fn post_2025(addr: &str, session: Option<&str>, message: &Value) -> support::streamed::Streamed {
    let session = session.map_or_else(String::new, |id| {
        format!("\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25")
    });
    support::streamed::send(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nAuthorization: Bearer token-a\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close{session}"
        ),
        &message.to_string(),
    )
}

/// The JSON answer of a 2025-11-25 request.
fn answer_2025(addr: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let mut answer = post_2025(
        addr,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    );
    let mut body = String::new();
    answer.body.read_to_string(&mut body).expect("readable");
    assert_eq!(answer.status, 200, "{method}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|err| panic!("{method}: not JSON ({err}): {body}"))
}

/// A 2025-11-25 session of alice's on the instance at `addr`, declaring `elicitation`.
fn session_2025(addr: &str) -> String {
    let mut answer = post_2025(
        addr,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "fleet", "version": "0"}
        }}),
    );
    assert_eq!(answer.status, 200, "initialize");
    let session = answer
        .header("mcp-session-id")
        .expect("initialize issues a session")
        .to_owned();
    let mut rest = String::new();
    let _ = answer.body.read_to_string(&mut rest);
    let initialized = post_2025(
        addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(initialized.status, 202, "notifications/initialized");
    session
}

/// A 2025-11-25 `confirm` whose instance is killed while it waits for the user: the task
/// is claimed by the other instance and asks again there. The client, whose session went
/// with the killed instance, opens a new session on the other and waits with
/// `tasks/result`: the new session adopts the task, its stream carries the re-run's
/// `elicitation/create`, and the answer POSTed back finishes the task with it.
fn a_2025_client_answers_a_rerun_in_a_new_session(backend: Backend) {
    let _serial = one_at_a_time();
    let Some(db) = Db::start(backend) else {
        return;
    };
    let fleet = Fleet::start(&db, 2, &[]);
    let (a, b) = (
        fleet.addr(0).expect("slot 0"),
        fleet.addr(1).expect("slot 1"),
    );
    let first = session_2025(&a);
    let created = answer_2025(
        &a,
        &first,
        2,
        "tools/call",
        json!({"name": "confirm", "arguments": {"question": "go?"}, "task": {"ttl": 120_000}}),
    );
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let waiting = |addr: &str, session: &str| {
        let started = Instant::now();
        loop {
            let got = answer_2025(addr, session, 3, "tasks/get", json!({"taskId": task}));
            if got["result"]["status"] == "input_required" {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the task never waited for input: {got}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    };
    waiting(&a, &first);
    let killed = fleet.kill(0);
    // The other instance claims it and the re-run asks again.
    let second = session_2025(&b);
    let started = Instant::now();
    while !fleet
        .claims()
        .iter()
        .any(|(_, _, claimed)| *claimed == task)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the task was never claimed"
        );
        thread::sleep(Duration::from_millis(50));
    }
    waiting(&b, &second);
    let mut stream = post_2025(
        &b,
        Some(&second),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": {"taskId": task}}),
    );
    assert_eq!(stream.status, 200);
    assert_eq!(
        stream.header("content-type"),
        Some("text/event-stream"),
        "the new session's tasks/result streams the adopted task"
    );
    let mut seen = Vec::new();
    let asked = stream.next_message(&mut seen, "the question", |message| {
        message["method"] == "elicitation/create"
    });
    let asked_after = killed.elapsed();
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"answer": "yes"}}});
    let accepted = post_2025(&b, Some(&second), &reply);
    assert_eq!(accepted.status, 202);
    let answer = stream.next_message(&mut seen, "the answer", |message| {
        message.get("method").is_none()
    });
    eprintln!(
        "fleet: {}: 2025-11-25 re-run: asked again in the new session {asked_after:?} after the \
         kill; answer {answer}",
        backend.name()
    );
    assert_eq!(answer["id"], 9, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "the user answered: yes",
        "{answer}"
    );
}

/// Each test, on each store built in: `redis::NAME`, `postgres::NAME` and `sqlite::NAME`.
macro_rules! on_each_store {
    ($($test:ident),* $(,)?) => {
        #[cfg(feature = "redis")]
        mod redis {
            $(#[test]
            fn $test() {
                super::$test(super::Backend::Redis);
            })*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(#[test]
            fn $test() {
                super::$test(super::Backend::Postgres);
            })*
        }
        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(#[test]
            fn $test() {
                super::$test(super::Backend::Sqlite);
            })*
        }
    };
}

on_each_store!(
    a_rolling_restart_with_sigterm_loses_no_task,
    every_task_completes_when_instances_are_killed,
    a_rolling_kill_fails_no_task_that_saves_progress,
    a_poison_task_fails_after_its_attempts_and_the_fleet_goes_on,
    a_rerun_starts_from_the_last_checkpoint,
    a_graceful_shutdown_hands_over_what_may_run_again_and_fails_the_rest,
    a_2025_client_answers_a_rerun_in_a_new_session,
);
