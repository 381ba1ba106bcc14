//! The example servers on a shared Redis under faults: Redis down when a store or a server
//! starts, Redis (with AOF) restarted under two running `mcp_http` instances (the `http/`
//! crate, built with `--features redis`) with tasks in flight, and an instance killed
//! (`SIGKILL`) while it runs a task — the issue's measurements, printed for the record.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`) where it needs
//! one; without one on `PATH` those tests say `SKIPPED` and pass. Every server process is
//! killed when its test ends, also when it fails.
#![cfg(feature = "redis")]

mod support;

use std::error::Error as _;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::Error;
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::redis::RedisServer;
use serde_json::{Value, json};
use support::{Http, WAIT};

/// How long a store or a server may take to give up on a Redis that is down: far above
/// the store's connect timeout (5 s at most), far below a hang.
const GIVE_UP: Duration = Duration::from_secs(15);

/// A loopback port nothing listens on (bound, then released), and the error connecting to
/// it gives, as the OS words it.
fn closed_port() -> (String, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let refused = TcpStream::connect(addr).expect_err("nothing listens on a released port");
    (format!("redis://{addr}"), refused.to_string())
}

/// A unix socket path that does not exist, and the error connecting to it gives.
fn missing_socket() -> (String, String) {
    let path = std::env::temp_dir().join(format!(
        "mcpt-no-redis-{}.sock",
        uuid::Uuid::new_v4().simple()
    ));
    let missing = UnixStream::connect(&path).expect_err("no socket there");
    (
        format!("redis+unix://{}", path.display()),
        missing.to_string(),
    )
}

/// This process's threads named like a store's subscriber thread.
fn subscriber_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "mcp-tasks-redis")
                })
                .count()
        })
        .unwrap_or(0)
}

/// `RedisTaskStore::builder(url).build()` on a Redis that is down answers the
/// store-unavailable error, with the OS's reason as its source, at once, and leaves no
/// thread behind.
#[test]
fn building_a_store_on_a_redis_that_is_down_fails_with_its_cause() {
    for (url, cause) in [closed_port(), missing_socket()] {
        let threads = subscriber_threads();
        let started = Instant::now();
        let result = RedisTaskStore::builder(&url).build();
        let took = started.elapsed();
        let err = match result {
            Err(err @ Error::Store { .. }) => err,
            other => panic!("{url}: expected the store-unavailable error, got {other:?}"),
        };
        assert!(took < GIVE_UP, "{url}: gave up after {took:?}");
        let source = err
            .source()
            .unwrap_or_else(|| panic!("{url}: the error keeps its cause: {err:?}"));
        assert!(
            source.to_string().contains(&cause),
            "{url}: the cause `{source}` names the OS's `{cause}`"
        );
        assert_eq!(
            subscriber_threads(),
            threads,
            "{url}: no subscriber thread is left behind"
        );
        eprintln!("{url}: Error::Store after {took:?} ({source})");
    }
}

/// A child process, killed (and reaped) on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a server binary that should exit at once; returns its status and stderr and
/// whether it printed anything on stdout.
fn run_to_exit(mut command: Command) -> (ExitStatus, String, String) {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server binary starts");
    let mut running = Running(child);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < GIVE_UP,
            "the server still runs after {GIVE_UP:?} without its Redis"
        );
        thread::sleep(Duration::from_millis(10));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    running
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    running
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stdout, stderr)
}

/// Both example servers, given a Redis that is down (`stdio_server --redis URL`,
/// `mcp_http` with `MCP_TASKS_REDIS_URL`), exit non-zero with one stderr line naming the
/// URL and the OS's reason, and never start serving.
#[test]
fn the_servers_exit_with_one_clear_line_when_redis_is_down() {
    for (url, cause) in [closed_port(), missing_socket()] {
        let mut stdio = Command::new(env!("CARGO_BIN_EXE_stdio_server"));
        stdio
            .arg("--redis")
            .arg(&url)
            .env_remove("MCP_TASKS_REDIS_URL");
        let mut http = Command::new(support::mcp_http());
        http.env("MCP_TASKS_REDIS_URL", &url)
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0");
        for (name, command) in [("stdio_server", stdio), ("mcp_http", http)] {
            let (status, stdout, stderr) = run_to_exit(command);
            assert!(
                !status.success(),
                "{name} on {url}: exits non-zero, got {status}"
            );
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(
                lines.len(),
                1,
                "{name} on {url}: one stderr line: {stderr:?}"
            );
            let line = lines[0];
            assert!(
                line.contains(&url),
                "{name}: the line names the URL: {line}"
            );
            assert!(
                line.contains(&cause),
                "{name}: the line says why (`{cause}`): {line}"
            );
            assert!(
                !line.contains('"'),
                "{name}: the line is not a quoted string: {line}"
            );
            assert!(
                stdout.is_empty(),
                "{name}: it never started serving: {stdout:?}"
            );
            eprintln!("{name}: {status}: {line}");
        }
    }
}

/// A JSON-RPC request with `id`.
fn rpc(id: u64, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// An `mcp_http` instance on Redis, with an initialized 2025-11-25 session.
struct Instance {
    http: Http,
    session: String,
}

impl Instance {
    fn start(url: &str) -> Instance {
        Self::start_leased(url, "")
    }

    /// An instance whose running tasks hold leases of `lease_ms` (`""`: the default),
    /// serving the conformance fixtures too (`slow_compute` is a long task that runs once).
    fn start_leased(url: &str, lease_ms: &str) -> Instance {
        let mut env = vec![("MCP_TASKS_REDIS_URL", url), ("MCP_TASKS_CONFORMANCE", "1")];
        if !lease_ms.is_empty() {
            env.push(("MCP_TASKS_LEASE_MS", lease_ms));
        }
        let http = Http::start_with(&env);
        let answer = http.post(&rpc(
            0,
            "initialize",
            &json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "redis-instances", "version": "0"}
            }),
        ));
        assert_eq!(answer.status, 200, "initialize: {}", answer.body);
        let session = answer.session.expect("initialize issues a session");
        let initialized = http.post_in(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(&session),
        );
        assert!(
            initialized.status < 300,
            "initialized: {}",
            initialized.status
        );
        Instance { http, session }
    }

    /// The request's JSON-RPC answer, or what went wrong (HTTP status, JSON-RPC error).
    fn call(&self, id: u64, method: &str, params: &Value) -> Result<Value, String> {
        let answer = self
            .http
            .post_in(&rpc(id, method, params), Some(&self.session));
        if answer.status != 200 {
            return Err(format!("{method}: HTTP {}: {}", answer.status, answer.body));
        }
        let body: Value = serde_json::from_str(&answer.body)
            .map_err(|err| format!("{method}: not JSON ({err}): {}", answer.body))?;
        match body.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("{method}: {}", body["error"])),
        }
    }
}

/// The text of a `CallToolResult`'s first content block.
fn text(result: &Value) -> Option<&str> {
    result["content"][0]["text"].as_str()
}

/// The issue's measurement: two `mcp_http` instances on one Redis with AOF
/// (`appendfsync always`), 12 `sleep` tasks running on A with a `tasks/result` waiter on B
/// for each, Redis killed and started again 0.3 s later on the same AOF while they run
/// (about half of them finish during the outage). Every task reaches `completed` with its
/// result, on both instances; every waiter wakes with it; no request after Redis returned
/// fails.
#[test]
fn two_http_instances_lose_nothing_across_a_redis_restart() {
    const TASKS: u64 = 12;
    let Some(mut redis) = RedisServer::start_aof() else {
        return;
    };
    let url = redis.url();
    let (a, b) = (Instance::start(&url), Instance::start(&url));

    // Task n sleeps 200 + 40 n ms: the restart below falls in the middle of their ends.
    let created_at = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..TASKS {
        let ms = 200 + 40 * n;
        let created = a
            .call(
                n + 1,
                "tools/call",
                &json!({"name": "sleep", "arguments": {"ms": ms}, "task": {"ttl": 600_000}}),
            )
            .expect("A creates the task");
        assert_eq!(created["task"]["status"], "working", "{created}");
        let id = created["task"]["taskId"]
            .as_str()
            .expect("a task id")
            .to_owned();
        tasks.push((id, format!("slept {ms} ms")));
    }

    let outcome = thread::scope(|scope| {
        let waiters: Vec<_> = tasks
            .iter()
            .enumerate()
            .map(|(n, (id, _))| {
                let b = &b;
                scope.spawn(move || {
                    let answer = b.call(100 + n as u64, "tasks/result", &json!({"taskId": id}));
                    (answer, Instant::now())
                })
            })
            .collect();
        // The waiters are blocked on B before Redis goes, and most tasks still run (on a
        // loaded machine the first ones may be done already).
        thread::sleep(Duration::from_millis(100));
        let finished = waiters.iter().filter(|w| w.is_finished()).count();
        assert!(
            finished <= TASKS as usize / 2,
            "{finished} of {TASKS} tasks finished before the restart"
        );
        let stopped_at = Instant::now();
        redis.stop();
        thread::sleep(Duration::from_millis(300));
        redis.resume();
        let back_at = Instant::now();
        let answers: Vec<_> = waiters
            .into_iter()
            .map(|waiter| waiter.join().expect("a waiter thread"))
            .collect();
        (stopped_at, back_at, answers)
    });
    let (stopped_at, back_at, answers) = outcome;
    let down = back_at - stopped_at;

    let mut failed_after = Vec::new();
    let mut not_woken = 0;
    let mut last_wake = Duration::ZERO;
    for ((id, expected), (answer, at)) in tasks.iter().zip(&answers) {
        match answer {
            Ok(result) if text(result) == Some(expected) => {
                last_wake = last_wake.max(at.saturating_duration_since(back_at));
            }
            Ok(result) => {
                not_woken += 1;
                failed_after.push(format!("tasks/result {id} on B: unexpected {result}"));
            }
            Err(err) => {
                not_woken += 1;
                failed_after.push(format!("tasks/result {id} on B: {err}"));
            }
        }
    }
    // Afterwards, on both instances: each task completed, with its result.
    let mut lost = 0;
    let mut next_id = 1000;
    for (id, expected) in &tasks {
        let mut complete = true;
        for (name, instance) in [("A", &a), ("B", &b)] {
            next_id += 1;
            match instance.call(next_id, "tasks/get", &json!({"taskId": id})) {
                Ok(task) if task["status"] == "completed" => {}
                Ok(task) => {
                    complete = false;
                    failed_after.push(format!("tasks/get {id} on {name}: {task}"));
                }
                Err(err) => {
                    complete = false;
                    failed_after.push(format!("tasks/get {id} on {name}: {err}"));
                }
            }
        }
        next_id += 1;
        match a.call(next_id, "tasks/result", &json!({"taskId": id})) {
            Ok(result) if text(&result) == Some(expected) => {}
            Ok(result) => {
                complete = false;
                failed_after.push(format!("tasks/result {id} on A: {result}"));
            }
            Err(err) => {
                complete = false;
                failed_after.push(format!("tasks/result {id} on A: {err}"));
            }
        }
        if !complete {
            lost += 1;
        }
    }
    let requests_after = answers.len() + tasks.len() * 3;
    eprintln!(
        "redis (AOF, appendfsync always) down {down:?} (killed, restarted 0.3 s later) under \
         2 mcp_http instances, {TASKS} sleep tasks created {:?} before it: results lost \
         {lost} of {TASKS}, waiters on the other instance not woken {not_woken} of {TASKS}, \
         failed requests after Redis returned {} of {requests_after}; last waiter woke \
         {last_wake:?} after Redis was back",
        stopped_at - created_at,
        failed_after.len()
    );
    assert!(
        failed_after.is_empty(),
        "{} requests failed after Redis returned: {failed_after:#?}",
        failed_after.len()
    );
    assert_eq!(lost, 0, "results lost");
    assert_eq!(not_woken, 0, "waiters that did not wake");
    assert!(last_wake < WAIT, "every waiter woke within {WAIT:?}");
}

/// An instance killed (`SIGKILL`) while it runs a task that is not redeliverable (the
/// conformance fixture `slow_compute` runs once): with 1 s leases (renewed every 125 ms),
/// the other instance's `tasks/result` waiter gets the task failed with the lease's
/// `-32603` within the lease plus one renewal interval, and `tasks/get` there says
/// `failed`. (A redeliverable task runs again instead: `tests/fleet.rs`.)
#[test]
fn a_killed_instance_fails_its_task_on_the_other_within_lease_and_interval() {
    const LEASE: Duration = Duration::from_millis(1_000);
    const INTERVAL: Duration = Duration::from_millis(125);
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let url = redis.url();
    let lease_ms = LEASE.as_millis().to_string();
    let (a, b) = (
        Instance::start_leased(&url, &lease_ms),
        Instance::start_leased(&url, &lease_ms),
    );
    let created = a
        .call(
            1,
            "tools/call",
            &json!({"name": "slow_compute", "arguments": {"seconds": 60}, "task": {"ttl": 600_000}}),
        )
        .expect("A creates the task");
    let id = created["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    // Alive, A keeps the task past its lease.
    thread::sleep(LEASE * 2);
    let task = b.call(2, "tasks/get", &json!({"taskId": id})).unwrap();
    assert_eq!(task["status"], "working", "{task}");

    let (answer, killed, woke) = thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let answer = b.call(3, "tasks/result", &json!({"taskId": id}));
            (answer, Instant::now())
        });
        thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "the waiter waits while A lives");
        let Instance { http, .. } = a;
        let killed = Instant::now();
        drop(http); // SIGKILL, then reaped
        let (answer, woke) = waiter.join().expect("the waiter thread");
        (answer, killed, woke)
    });
    let elapsed = woke.saturating_duration_since(killed);
    eprintln!(
        "mcp_http killed with SIGKILL mid-task (lease {LEASE:?}, renewed every \
         {INTERVAL:?}): the other instance's tasks/result answered {elapsed:?} later"
    );
    let error = answer.expect_err("tasks/result of a failed task is its error");
    assert!(
        error.contains("-32603") && error.contains("server instance running the task stopped"),
        "{error}"
    );
    let task = b.call(4, "tasks/get", &json!({"taskId": id})).unwrap();
    assert_eq!(task["status"], "failed", "{task}");
    assert!(
        elapsed <= LEASE + INTERVAL + Duration::from_millis(500),
        "failed {elapsed:?} after the kill, beyond lease + interval ({:?})",
        LEASE + INTERVAL
    );
}
