//! The example servers on a shared PostgreSQL (`--postgres URL`, `MCP_TASKS_POSTGRES_URL`):
//! PostgreSQL down when a server starts, two `mcp_http` instances (the `http/` crate, built
//! with `--features postgres`) on one database and schema serving the same tasks, and an
//! instance killed (`SIGKILL`) while it runs a task.
//!
//! The instances run on the test process's PostgreSQL server
//! (`mcp_tasks_test_support::postgres::shared_url`), each test in a schema of its own
//! (`MCP_TASKS_POSTGRES_SCHEMA`); without PostgreSQL installed those tests say `SKIPPED`
//! and pass. Every server process is killed when its test ends, also when it fails.
#![cfg(feature = "postgres")]

mod support;

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::stores::{self, Backend, Db, Down, Instance, text};

/// Both example servers, given a PostgreSQL that is down (`stdio_server --postgres URL`,
/// `mcp_http` with `MCP_TASKS_POSTGRES_URL`) — a TCP port nothing listens on (the URL with
/// a password, which the line hides), a unix socket directory that does not exist — exit 1
/// with one stderr line naming the URL and the OS's reason, and never start serving.
#[test]
fn the_servers_exit_with_one_clear_line_when_postgres_is_down() {
    let closed = stores::closed_port();
    let (_, dir, missing) = stores::missing_socket(".s.PGSQL.5432");
    stores::servers_exit_with_one_clear_line(
        Backend::Postgres,
        &[
            Down {
                url: format!("postgres://postgres:hunter2@{}/postgres", closed.addr),
                cause: closed.refused.clone(),
            },
            Down {
                url: format!("postgresql:///postgres?host={dir}&user=postgres"),
                cause: missing,
            },
        ],
    );
}

/// A password holding `?`, `#` or `/` unencoded (which the PostgreSQL URL parser
/// takes as credentials, up to the `@`) never shows in `mcp_http --postgres URL`'s
/// start-up error, nor does a password in a URL its driver cannot parse: the line names
/// the URL with `***` (or its scheme alone) and says why.
#[test]
fn a_password_with_url_delimiters_never_shows_at_start_up() {
    let closed = stores::closed_port();
    let (addr, refused) = (&closed.addr, &closed.refused);
    for (url, cause) in [
        (
            format!("postgresql://user:s3c?ret@{addr}/db"),
            refused.as_str(),
        ),
        (
            format!("postgres://u:a/b#s3cr3t@{addr}/db"),
            refused.as_str(),
        ),
        (
            format!("postgres://u:s3cret@{addr}/db?nosuchoption=1"),
            "unparsable URL, not shown",
        ),
    ] {
        let mut http = std::process::Command::new(support::mcp_http());
        stores::clear_store_env(&mut http)
            .args(["--postgres", &url])
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0");
        let (status, stdout, stderr) = stores::run_to_exit(http);
        assert_eq!(status.code(), Some(1), "{url}: exits 1, got {status}");
        assert!(stdout.is_empty(), "{url}: it never served: {stdout:?}");
        assert!(
            !stderr.contains("s3c"),
            "{url}: the password shows: {stderr}"
        );
        assert!(
            stderr.contains(cause),
            "{url}: says why (`{cause}`): {stderr}"
        );
        eprintln!("{stderr}");
    }
}

/// The ids of the tasks `instance` lists (every page).
fn listed(instance: &Instance, id: u64) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut params = json!({});
    for page in 0..100 {
        let listed = instance
            .call(id + page, "tasks/list", &params)
            .expect("tasks/list");
        for task in listed["tasks"].as_array().expect("a list of tasks") {
            let id = task["taskId"].as_str().expect("a task id").to_owned();
            assert!(ids.insert(id), "a task listed twice: {listed}");
        }
        match listed.get("nextCursor").and_then(Value::as_str) {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => return ids,
        }
    }
    panic!("tasks/list never ended");
}

/// Two `mcp_http` instances on one database and schema serve the same tasks: a `sleep`
/// created through A is `working` through B, B's `tasks/result` waits for it and answers
/// its result (A's handler wrote it); a `fail` created through B reads `failed` through A;
/// both instances list the same tasks; a long `sleep` created through A is cancelled
/// through B, which A then says, and A's waiter on it is answered.
#[test]
fn two_http_instances_on_one_database_serve_the_same_tasks() {
    const SLEEP_MS: u64 = 1_200;
    let Some(db) = Db::start(Backend::Postgres) else {
        return;
    };
    let (a, b) = (Instance::start(&db), Instance::start(&db));

    let sleep = a.create(1, "sleep", &json!({"ms": SLEEP_MS}));
    let created = Instant::now();
    let task = b.call(2, "tasks/get", &json!({"taskId": sleep})).unwrap();
    assert_eq!(task["status"], "working", "B reads A's task: {task}");
    let result = b
        .call(3, "tasks/result", &json!({"taskId": sleep}))
        .expect("B's tasks/result answers A's task");
    let waited = created.elapsed();
    assert_eq!(
        text(&result),
        Some(format!("slept {SLEEP_MS} ms").as_str()),
        "{result}"
    );
    assert!(
        waited >= Duration::from_millis(SLEEP_MS) - Duration::from_millis(100),
        "B's tasks/result waited for the task ({waited:?})"
    );
    let task = a.call(4, "tasks/get", &json!({"taskId": sleep})).unwrap();
    assert_eq!(task["status"], "completed", "{task}");

    let fail = b.create(5, "fail", &json!({}));
    let mut failed = Value::Null;
    for n in 0..100 {
        failed = a
            .call(6 + n, "tasks/get", &json!({"taskId": fail}))
            .unwrap();
        if failed["status"] != "working" {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(failed["status"], "failed", "A reads B's task: {failed}");
    let result = a
        .call(110, "tasks/result", &json!({"taskId": fail}))
        .unwrap();
    assert_eq!(result["isError"], true, "{result}");

    let long = a.create(111, "sleep", &json!({"ms": 30_000}));
    let (on_a, on_b) = (listed(&a, 200), listed(&b, 300));
    assert_eq!(on_a, on_b, "both instances list the same tasks");
    for id in [&sleep, &fail, &long] {
        assert!(on_b.contains(id.as_str()), "{id} listed: {on_b:?}");
    }

    let (waiter, cancelled, woke) = thread::scope(|scope| {
        // A's waiter waits for the long sleep.
        let waiter = a.awaiting(scope, 400, &long, Duration::from_millis(200));
        let cancelled_at = Instant::now();
        let cancelled = b.call(401, "tasks/cancel", &json!({"taskId": long}));
        let (waiter, woke) = waiter.join().expect("the waiter thread");
        (
            waiter,
            cancelled,
            woke.saturating_duration_since(cancelled_at),
        )
    });
    let cancelled = cancelled.expect("B cancels A's task");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // The cancelled task's answer: its error, or a result saying so.
    let waiter = waiter.unwrap_or_else(Value::String);
    assert!(
        woke < Duration::from_secs(5),
        "A's waiter answered {woke:?} after the cancel"
    );
    let task = a.call(402, "tasks/get", &json!({"taskId": long})).unwrap();
    assert_eq!(task["status"], "cancelled", "A says B's cancel: {task}");
    let again = a.call(403, "tasks/cancel", &json!({"taskId": long}));
    assert!(
        again.as_ref().is_err_and(|err| err.contains("-32602")),
        "a second cancel is refused: {again:?}"
    );
    eprintln!(
        "PostgreSQL: 2 mcp_http instances on one schema: tasks/result through B answered A's \
         {SLEEP_MS} ms sleep after {waited:?}; {} tasks listed alike; A's waiter answered \
         {woke:?} after B's cancel: {waiter}",
        on_a.len()
    );
}

/// An instance killed (`SIGKILL`) while it runs a task that runs once: the other
/// instance's waiter gets it failed within the lease plus one renewal interval
/// ([`stores::a_killed_instance_fails_its_task_on_the_other`]).
#[test]
fn a_killed_instance_fails_its_task_on_the_other_within_lease_and_interval() {
    if let Some(db) = Db::start(Backend::Postgres) {
        stores::a_killed_instance_fails_its_task_on_the_other(&db);
    }
}
