//! `mcp-tasks-admin` against a real store: tasks of several owners created through the
//! store API, then listed, shown, cancelled, failed, handed over and purged through the
//! command line, and the store checked. Redis on a private `redis-server`, PostgreSQL on
//! the binary's private cluster (a fresh schema), SQLite in a temporary file; without
//! redis-server or PostgreSQL installed, its test says `SKIPPED` and passes.

use std::process::Command;
use std::time::Duration;

use mcp_tasks::{JsonObject, Outcome, Owner, Redelivery, TaskRequest, TaskStatus, TaskStore};
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_sqlite::SqliteTaskStore;
use mcp_tasks_test_support::postgres::shared_url;
use mcp_tasks_test_support::redis::RedisServer;
use serde_json::{Value, json};
use support::{admin, ok_json, stderr, stdout, task_ids};

mod support;

fn job(tool: &str) -> JsonObject {
    let Value::Object(job) = json!({"tool": tool, "arguments": {}}) else {
        unreachable!()
    };
    job
}

/// The whole console against `store` (and the console reaching the same storage with
/// `url` and `env`).
fn console<S: TaskStore + Clone + 'static>(store: &S, url: &str, env: &[(&str, &str)]) {
    let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
    let (handle, leased) = store
        .create(
            &alice,
            TaskRequest::new(1, "tools/call").with_redelivery(Redelivery::new(3, job("fetch"))),
        )
        .unwrap();
    let leased = leased.id().to_string();
    let mut alices = vec![leased.clone()];
    for n in 2..4 {
        // The first runs once, and keeps its tool: listed by it too.
        let request = match n {
            2 => TaskRequest::new(n, "tools/call").with_tool("fetch"),
            _ => TaskRequest::new(n, "tools/call"),
        };
        let task = store.insert(&alice, request).unwrap();
        alices.push(task.id().to_string());
    }
    let mut bobs = Vec::new();
    for n in 4..6 {
        let task = store
            .insert(&bob, TaskRequest::new(n, "tools/call"))
            .unwrap();
        bobs.push(task.id().to_string());
    }
    let _ = store.cancel(&bob, &bobs[1], None).unwrap();

    // List: every owner's, filtered, paged.
    let all = ok_json(&admin(url, env, &["--json", "list"]));
    assert_eq!(task_ids(&all).len(), 5);
    assert_eq!(all["nextCursor"], Value::Null);
    let of_bob = ok_json(&admin(url, env, &["--json", "list", "--owner", "bob"]));
    assert_eq!(task_ids(&of_bob), bobs);
    let cancelled = ok_json(&admin(
        url,
        env,
        &["list", "--json", "--status", "cancelled"],
    ));
    assert_eq!(task_ids(&cancelled), vec![bobs[1].clone()]);
    // The leased one keeps no tool (created without one): its job names it.
    let fetchers = ok_json(&admin(url, env, &["--json", "list", "--tool", "fetch"]));
    assert_eq!(task_ids(&fetchers), vec![leased.clone(), alices[1].clone()]);
    let first = ok_json(&admin(url, env, &["--json", "list", "--limit", "3"]));
    assert_eq!(task_ids(&first).len(), 3);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("more follow")
        .to_owned();
    let rest = ok_json(&admin(url, env, &["--json", "list", "--cursor", &cursor]));
    assert_eq!(task_ids(&rest).len(), 2);
    let table = stdout(&admin(url, env, &["list"]));
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains("alice") && table.contains("cancelled"),
        "{table}"
    );
    let bad = admin(url, env, &["list", "--cursor", "nonsense"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("not a cursor"), "{}", stderr(&bad));

    // Show.
    let shown = ok_json(&admin(url, env, &["--json", "show", &leased]));
    assert_eq!(shown["owner"], "alice");
    assert_eq!(shown["hasJob"], true);
    assert_eq!(shown["tool"], "fetch");
    assert_eq!(
        (shown["attempt"].as_u64(), shown["maxAttempts"].as_u64()),
        (Some(1), Some(3))
    );
    assert!(shown["leaseHolder"].is_string(), "{shown}");
    assert_eq!(shown["task"]["taskId"], leased.as_str());
    let instances = ok_json(&admin(url, env, &["--json", "instances"]));
    assert_eq!(instances[0]["name"], shown["leaseHolder"]);
    assert_eq!(instances[0]["tasks"], 1);
    let shown = stdout(&admin(url, env, &["show", &alices[1]]));
    assert!(
        shown.contains("owner") && shown.contains("alice"),
        "{shown}"
    );
    let unknown = admin(url, env, &["show", "00000000-0000-4000-8000-000000000000"]);
    assert_eq!(unknown.status.code(), Some(1));

    // Cancel a working task and a finished one, in one call.
    let cancel = admin(url, env, &["cancel", &alices[1], &bobs[1], "--as", "ops"]);
    assert_eq!(cancel.status.code(), Some(1), "one of them was finished");
    assert!(
        stdout(&cancel).contains("admin ops did cancel"),
        "{}",
        stdout(&cancel)
    );
    assert!(
        stderr(&cancel).contains("already `cancelled`"),
        "{}",
        stderr(&cancel)
    );
    let task = store.get(&alice, &alices[1]).unwrap();
    assert_eq!(task.status(), TaskStatus::Cancelled);
    assert_eq!(task.status_message(), Some("cancelled by admin ops"));

    // Fail with a reason.
    let failed = ok_json(&admin(
        url,
        env,
        &[
            "--json",
            "fail",
            &bobs[0],
            "--reason",
            "upstream gone",
            "--as",
            "ops",
        ],
    ));
    assert_eq!(failed[0]["to"], "failed");
    let task = store.get(&bob, &bobs[0]).unwrap();
    let error = task.outcome().and_then(Outcome::as_error).unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32603, "upstream gone")
    );

    // Hand over the leased task: the next lease round of its instance finds it lapsed.
    let handed = admin(url, env, &["hand-over", &leased, "--as", "ops"]);
    assert!(handed.status.success(), "{}", stderr(&handed));
    let shown = ok_json(&admin(url, env, &["--json", "show", &leased]));
    let lapsed = ok_json(&admin(
        url,
        env,
        &[
            "--json",
            "list",
            "--holder",
            shown["leaseHolder"].as_str().unwrap(),
        ],
    ));
    assert_eq!(task_ids(&lapsed), vec![leased.clone()]);
    let again = admin(url, env, &["hand-over", &leased]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("lapsed already"),
        "{}",
        stderr(&again)
    );

    // Drain the instance that held it: flagged (its lapsed task is not handed over
    // again), listed as draining, then undrained.
    let holder = shown["leaseHolder"].as_str().unwrap();
    let drained = ok_json(&admin(
        url,
        env,
        &["--json", "drain", holder, "--as", "ops"],
    ));
    assert_eq!(drained["wasDraining"], false, "{drained}");
    assert_eq!(drained["handedOver"].as_array().map(Vec::len), Some(0));
    let instances = ok_json(&admin(url, env, &["--json", "instances"]));
    let listed = instances
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == holder)
        .expect("the drained instance is listed");
    assert_eq!(listed["draining"], true, "{instances}");
    let table = stdout(&admin(url, env, &["instances"]));
    assert!(table.contains("DRAINING"), "{table}");
    let undrained = stdout(&admin(url, env, &["undrain", holder]));
    assert!(undrained.contains("drained no more"), "{undrained}");
    let undrained = stdout(&admin(url, env, &["undrain", holder]));
    assert!(undrained.contains("was not drained"), "{undrained}");

    // Purge the finished ones (cancelled twice, failed once).
    std::thread::sleep(Duration::from_millis(20));
    let purged = ok_json(&admin(
        url,
        env,
        &["--json", "purge", "--older-than", "10ms"],
    ));
    assert_eq!(purged["purged"], 3, "{purged}");
    assert!(store.get(&bob, &bobs[0]).is_err());
    assert_eq!(
        store.get(&alice, &alices[2]).unwrap().status(),
        TaskStatus::Working
    );
    drop(handle);

    // Usage errors: exit 2.
    let usage = admin(url, env, &["cancel", &alices[2]]);
    assert_eq!(usage.status.code(), Some(2), "no --as");
    let usage = admin(url, env, &["purge", "--older-than", "soon"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(
        stderr(&usage).contains("not a duration"),
        "{}",
        stderr(&usage)
    );
}

#[test]
fn the_console_on_redis() {
    let Some(server) = RedisServer::start() else {
        eprintln!("SKIPPED: no redis-server");
        return;
    };
    let store = RedisTaskStore::builder(&server.url()).build().unwrap();
    console(&store, &server.url(), &[]);
}

#[test]
fn the_console_on_postgres() {
    let Some(url) = shared_url() else {
        eprintln!("SKIPPED: no PostgreSQL");
        return;
    };
    let schema = format!("admin_{}", uuid::Uuid::new_v4().simple());
    let store = PostgresTaskStore::builder(&url)
        .schema(&schema)
        .build()
        .unwrap();
    console(&store, &url, &[("MCP_TASKS_POSTGRES_SCHEMA", &schema)]);
}

#[test]
fn the_console_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = SqliteTaskStore::builder(&path).build().unwrap();
    console(&store, &format!("sqlite:{}", path.display()), &[]);
}

#[test]
fn no_store_or_the_in_process_one_is_a_one_line_failure() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks-admin"))
        .env_remove("MCP_TASKS_STORE")
        .arg("instances")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("no store"), "{}", stderr(&output));
    let output = admin("memory", &[], &["instances"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output).lines().count(), 1);
    let output = admin("ftp://nowhere", &[], &["instances"]);
    assert_eq!(output.status.code(), Some(1));
}
