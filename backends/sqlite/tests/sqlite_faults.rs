//! Faults of `SqliteTaskStore` on a real file: a process killed (`SIGKILL`) under load
//! loses no acknowledged result and leaves nothing half-written; a redeliverable task
//! whose process was killed is claimed by the next process that opens the file and
//! finishes with its checkpoint; a read-only file, a full disk, a corrupt file and a file
//! of a newer schema are refused with one clear error naming the file; two processes on
//! one file see each other's tasks, and a wait in one is woken by a result the other
//! wrote (the latency is printed); processes opening a new file at once create its schema
//! once; a write lock another process holds past the I/O timeout is an error, not a hang.
//!
//! Processes that die are child processes of this test binary (the test `child_process`,
//! acting only when [`CHILD`] is set), killed with `SIGKILL`. Every loop and wait is
//! bounded.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_tasks::backend::{Driver, TaskFilter};
use mcp_tasks::{
    AnyTask, ClaimBackoff, Error, LeasePolicy, Limits, Outcome, Redelivery, TaskHandle,
    TaskRequest, TaskStatus, TaskStore, TtlPolicy,
};
use mcp_tasks_sqlite::{SqliteStoreBuilder, SqliteTaskStore};
use mcp_tasks_testkit::support::{alice, obj, tool_result};
use serde_json::json;

/// A short lease, renewed often, and a short back-off: a death is seen in about a second.
const LEASE: Duration = Duration::from_millis(500);
const INTERVAL: Duration = Duration::from_millis(100);
const BACKOFF: Duration = Duration::from_millis(200);

/// How long any one step of these tests may take.
const BOUND: Duration = Duration::from_secs(20);

/// Set in a child process: `ROLE PATH [ARG]`, see [`child_process`].
const CHILD: &str = "MCP_TASKS_SQLITE_CHILD";

fn builder(path: &Path) -> SqliteStoreBuilder {
    SqliteTaskStore::builder(path)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
        .lease_policy(LeasePolicy::fail_after(LEASE).renewed_every(INTERVAL))
        .claim_backoff(ClaimBackoff::new(BACKOFF, BACKOFF * 4))
}

fn open(path: &Path) -> SqliteTaskStore {
    builder(path)
        .build()
        .expect("a SqliteTaskStore on the file")
}

/// A `tools/call` of `sleep` that may run `max` times.
fn redeliverable(max: u32) -> TaskRequest {
    let job = obj(json!({"tool": "sleep", "arguments": {"ms": 5000}}));
    TaskRequest::new(1, "tools/call").with_redelivery(Redelivery::new(max, job))
}

fn micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

/// A child process of this binary running [`child_process`], with every line it prints.
struct Process {
    child: Child,
    lines: Receiver<String>,
}

impl Process {
    fn start(role: &str, path: &Path, arg: &str) -> Process {
        let exe = std::env::current_exe().expect("the path of this test binary");
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "child_process",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD, format!("{role} {} {arg}", path.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the child process starts");
        let stdout = child.stdout.take().expect("the child's stdout");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Process { child, lines }
    }

    /// The value of the next line `KEY value` (other lines are skipped), within `BOUND`.
    fn next(&self, key: &str) -> String {
        let deadline = Instant::now() + BOUND;
        let key = format!("{key} ");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the child printed no `{key}` line"));
            if let Some((_, value)) = line.split_once(&key) {
                return value.to_owned();
            }
        }
    }

    fn kill(&mut self) -> Instant {
        self.child.kill().expect("SIGKILL the child");
        let killed = Instant::now();
        self.child.wait().expect("the child is reaped");
        killed
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's side. `load PATH`: creates and completes tasks on two threads, printing
/// `ACK id` once each result is acknowledged, until killed. `hold PATH`: creates a
/// redeliverable task, checkpoints, prints `TASK id` and `READY`, and holds it. `finish
/// PATH ID`: reads the parent's task `ID` (prints `SEEN status`), then five times
/// creates a task, prints `TASK id`, waits for the file `PATH.go-N`, completes it and
/// prints `DONE before after` (microseconds since the epoch around the call).
/// Run as a plain test, it does nothing.
#[test]
fn child_process() {
    let Ok(config) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = config.splitn(3, ' ');
    let (Some(role), Some(path)) = (parts.next(), parts.next()) else {
        panic!("role and path");
    };
    let path = PathBuf::from(path);
    let store = builder(&path).limits(Limits::none()).build().unwrap();
    match role {
        "load" => {
            let workers: Vec<_> = (0..2)
                .map(|worker| {
                    let store = store.clone();
                    thread::spawn(move || {
                        for n in 0..100_000 {
                            let (handle, task) = store
                                .create(&alice(), TaskRequest::new(n, "tools/call"))
                                .unwrap();
                            let text = format!("result {worker}-{n}");
                            let _done = handle.complete(tool_result(&text)).unwrap();
                            println!("ACK {} {text}", task.id());
                        }
                    })
                })
                .collect();
            for worker in workers {
                let _ = worker.join();
            }
        }
        "hold" => {
            let (handle, task) = store.create(&alice(), redeliverable(3)).unwrap();
            handle.checkpoint(json!({"slept": 1500})).unwrap();
            println!("TASK {}", task.id());
            println!("READY");
            thread::sleep(Duration::from_secs(60));
            drop(handle);
        }
        "finish" => {
            let theirs = parts.next().expect("the parent's task id");
            let seen = store.get(&alice(), theirs).unwrap();
            println!("SEEN {}", seen.status());
            for round in 0..5 {
                let (handle, task) = store
                    .create(&alice(), TaskRequest::new(round, "tools/call"))
                    .unwrap();
                println!("TASK {}", task.id());
                let go = PathBuf::from(format!("{}.go-{round}", path.display()));
                let deadline = Instant::now() + BOUND;
                while !go.exists() && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(1));
                }
                let before = micros();
                let _done = handle
                    .complete(tool_result("from the other process"))
                    .unwrap();
                println!("DONE {before} {}", micros());
            }
            thread::sleep(Duration::from_secs(60));
        }
        other => panic!("unknown role {other}"),
    }
}

/// Every task in the file, through the driver's pages of every owner's tasks: each row
/// must decode (nothing half-written).
fn every_task(path: &Path) -> Vec<AnyTask> {
    let driver = SqliteTaskStore::builder(path).build_driver().unwrap();
    let (mut tasks, mut after) = (Vec::new(), None);
    loop {
        let scan = driver
            .page_all(after, &TaskFilter::any(), 500)
            .expect("every row decodes");
        tasks.extend(scan.rows.into_iter().map(|row| row.task));
        match scan.next {
            Some(next) => after = Some(next),
            None => return tasks,
        }
    }
}

#[test]
fn a_process_killed_under_load_loses_no_acknowledged_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("load.db");
    drop(open(&path));
    let mut load = Process::start("load", &path, "");
    let started = Instant::now();
    let mut acked = Vec::new();
    while acked.len() < 1_000 && started.elapsed() < BOUND {
        acked.push(load.next("ACK"));
    }
    load.kill();
    // Lines printed before the kill are still in the pipe.
    while let Ok(line) = load.lines.recv_timeout(Duration::from_millis(200)) {
        if let Some((_, value)) = line.split_once("ACK ") {
            acked.push(value.to_owned());
        }
    }
    assert!(acked.len() >= 1_000, "{} results acknowledged", acked.len());

    let store = open(&path);
    for ack in &acked {
        let (id, text) = ack.split_once(' ').unwrap();
        let task = store
            .get(&alice(), id)
            .expect("an acknowledged task is there");
        assert_eq!(task.status(), TaskStatus::Completed, "{id}");
        assert_eq!(
            task.outcome(),
            Some(&Outcome::Result(tool_result(text))),
            "{id}: its result"
        );
    }
    let all = every_task(&path);
    assert!(all.len() >= acked.len());
    let unfinished = all
        .iter()
        .filter(|task| !task.status().is_terminal())
        .count();
    assert!(
        unfinished <= 2,
        "at most one task per worker was between its create and its result"
    );
    eprintln!(
        "kill -9 under load: {} results acknowledged, all there; {} tasks in the file",
        acked.len(),
        all.len()
    );
}

#[test]
fn a_redeliverable_task_of_a_killed_process_is_claimed_by_the_next_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redelivery.db");
    drop(open(&path));
    let mut holding = Process::start("hold", &path, "");
    let id = holding.next("TASK");
    let killed = holding.kill();

    // The next process to open the file: its lease thread finds the lapsed lease.
    let next = open(&path);
    let claim = loop {
        if let Some(claim) = next.claim().unwrap() {
            break claim;
        }
        assert!(killed.elapsed() < BOUND, "claimed within {BOUND:?}");
        next.wait_for_claimable(Some(Duration::from_millis(50)))
            .unwrap();
    };
    eprintln!(
        "restart: the killed process's task claimed {:?} after the kill (lease {LEASE:?}, \
         back-off {BACKOFF:?})",
        killed.elapsed()
    );
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!(claim.attempts.attempt(), 2);
    assert_eq!(claim.checkpoint, Some(json!({"slept": 1500})));
    assert_eq!(claim.job["tool"], "sleep");
    let handle = TaskHandle::claimed(next.clone(), claim);
    let _done = handle.complete(tool_result("resumed")).unwrap();
    drop(next);
    let reopened = open(&path);
    let task = reopened.get(&alice(), &id).unwrap();
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(
        task.outcome(),
        Some(&Outcome::Result(tool_result("resumed")))
    );
}

/// Whether this process may write where the permissions say it may not (root).
fn ignores_permissions(dir: &Path) -> bool {
    let locked = dir.join("locked");
    std::fs::create_dir(&locked).unwrap();
    set_mode(&locked, 0o555);
    let wrote = std::fs::write(locked.join("probe"), b"x").is_ok();
    set_mode(&locked, 0o755);
    wrote
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[track_caller]
fn refused(built: Result<SqliteTaskStore, Error>, path: &Path, words: &str) -> String {
    match built {
        Err(error @ Error::Store { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains(&path.display().to_string()) && message.contains(words),
                "{message}"
            );
            assert_eq!(message.lines().count(), 1, "one line: {message}");
            message
        }
        other => panic!("opened: {other:?}"),
    }
}

#[test]
fn a_read_only_file_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read-only.db");
    let store = open(&path);
    let (handle, task) = store
        .create(&alice(), TaskRequest::new(1, "tools/call"))
        .unwrap();
    let _done = handle.complete(tool_result("kept")).unwrap();
    drop(store);

    set_mode(&path, 0o444);
    let message = refused(builder(&path).build(), &path, "read-only");
    eprintln!("read-only file: {message}");
    if !ignores_permissions(dir.path()) {
        // A directory it may not write: SQLite cannot keep its -wal and -shm files there.
        set_mode(&path, 0o644);
        let locked = dir.path().join("locked");
        let inside = locked.join("tasks.db");
        drop(open(&inside));
        set_mode(&locked, 0o555);
        let result = builder(&inside).build();
        set_mode(&locked, 0o755);
        match result {
            Err(Error::Store { .. }) => {}
            other => panic!("opened in a read-only directory: {other:?}"),
        }
    }
    set_mode(&path, 0o644);
    let store = open(&path);
    let kept = store.get(&alice(), &task.id().to_string()).unwrap();
    assert_eq!(kept.outcome(), Some(&Outcome::Result(tool_result("kept"))));
}

#[test]
fn a_full_disk_refuses_the_change_and_writes_nothing_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.db");
    let store = builder(&path)
        .max_page_count(64)
        .outage_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (working, task) = store
        .create(&alice(), TaskRequest::new(0, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let before = store.get(&alice(), &id).unwrap();
    // A result larger than the file may grow: refused, and the task is as it was.
    let huge = "x".repeat(400_000);
    let full = working.complete(tool_result(&huge));
    match &full {
        Err(error @ Error::Store { .. }) => {
            assert!(error.to_string().contains("full"), "{error}");
            eprintln!("full disk: {error}");
        }
        other => panic!("a result past the file's limit: {other:?}"),
    }
    assert_eq!(
        store.get(&alice(), &id).unwrap(),
        before,
        "nothing of it written"
    );

    // Creates fill the file until one is refused; every earlier task reads as written.
    let (mut made, mut handles) = (Vec::new(), Vec::new());
    let refusal = loop {
        assert!(made.len() < 20_000, "the file never filled");
        let request = TaskRequest::new(1, "tools/call");
        match store.create(&alice(), request) {
            Ok((handle, task)) => {
                made.push(task.id().to_string());
                handles.push(handle);
            }
            Err(error) => break error,
        }
    };
    assert!(
        matches!(refusal, Error::Store { .. }) && refusal.to_string().contains("full"),
        "{refusal}"
    );
    for id in &made {
        assert_eq!(
            store.get(&alice(), id).unwrap().status(),
            TaskStatus::Working
        );
    }
    assert_eq!(
        every_task(&path).len(),
        made.len() + 1,
        "no half-written task"
    );
}

#[test]
fn a_corrupt_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let message = refused(builder(&path).build(), &path, "not an SQLite database");
    eprintln!("corrupt file: {message}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage, "left untouched");
}

#[test]
fn a_file_of_a_newer_schema_or_another_application_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    drop(open(&path));
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let message = refused(builder(&path).build(), &path, "newer");
    eprintln!("newer schema: {message}");

    let foreign = dir.path().join("foreign.db");
    let connection = rusqlite::Connection::open(&foreign).unwrap();
    connection
        .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(connection);
    refused(builder(&foreign).build(), &foreign, "another application");
}

#[test]
fn two_processes_see_each_others_tasks_and_a_result_wakes_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let store = open(&path);
    let (_mine, task) = store
        .create(&alice(), TaskRequest::new(1, "tools/call"))
        .unwrap();
    let other = Process::start("finish", &path, &task.id().to_string());
    assert_eq!(
        other.next("SEEN"),
        "working",
        "the other process sees this one's task"
    );
    let mut latencies = Vec::new();
    for round in 0..5 {
        let id = other.next("TASK");
        let theirs = store.get(&alice(), &id).unwrap();
        assert_eq!(
            theirs.status(),
            TaskStatus::Working,
            "this process sees theirs"
        );
        let waiter = {
            let (store, id) = (store.clone(), id.clone());
            thread::spawn(move || {
                let task = store.wait(&alice(), &id, Some(BOUND));
                (task, micros())
            })
        };
        thread::sleep(Duration::from_millis(50));
        std::fs::write(format!("{}.go-{round}", path.display()), b"go").unwrap();
        let (task, woken) = waiter.join().unwrap();
        let task = task.unwrap();
        assert_eq!(task.status(), TaskStatus::Completed);
        let done = other.next("DONE");
        let (_, after) = done.split_once(' ').unwrap();
        let after: u128 = after.parse().unwrap();
        latencies.push(woken.saturating_sub(after));
    }
    latencies.sort_unstable();
    eprintln!(
        "cross-process wake-up (result acknowledged in one process to the wait returning in \
         the other), microseconds: {latencies:?}"
    );
    assert!(
        latencies[latencies.len() - 1] < 1_000_000,
        "woken within a second: {latencies:?}"
    );
}

#[test]
fn processes_opening_a_new_file_at_once_create_its_schema_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("at-once.db");
    let stores: Vec<SqliteTaskStore> = thread::scope(|scope| {
        let opening: Vec<_> = (0..6).map(|_| scope.spawn(|| open(&path))).collect();
        opening.into_iter().map(|one| one.join().unwrap()).collect()
    });
    let (_handle, task) = stores[0]
        .create(&alice(), TaskRequest::new(1, "tools/call"))
        .unwrap();
    for store in &stores {
        assert_eq!(
            store
                .get(&alice(), &task.id().to_string())
                .unwrap()
                .status(),
            TaskStatus::Working
        );
    }
}

#[test]
fn a_write_lock_held_past_the_io_timeout_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let store = builder(&path)
        .io_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (_before, task) = store
        .create(&alice(), TaskRequest::new(1, "tools/call"))
        .unwrap();
    // Another process's long write transaction.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = Instant::now();
    let refused = store.create(&alice(), TaskRequest::new(2, "tools/call"));
    let took = started.elapsed();
    match refused {
        Err(error @ Error::Store { .. }) => {
            assert!(error.to_string().contains("write lock"), "{error}");
            eprintln!("write lock held: refused after {took:?}: {error}");
        }
        other => panic!("created under another's write lock: {other:?}"),
    }
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // Reads go on meanwhile (WAL), and writes once the lock is released.
    assert_eq!(
        store
            .get(&alice(), &task.id().to_string())
            .unwrap()
            .status(),
        TaskStatus::Working
    );
    other.execute_batch("ROLLBACK").unwrap();
    let (_after, _) = store
        .create(&alice(), TaskRequest::new(3, "tools/call"))
        .unwrap();
}
