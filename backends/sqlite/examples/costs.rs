//! What the SQLite store's operations cost, beside what SQLite itself costs for one row on
//! the same disk with the same settings (WAL, the same `synchronous`): a task's create, a
//! `tasks/get`, its result written (`complete`) and read (`tasks/result` of a finished
//! task), against a raw one-row `INSERT` (one commit) and a `SELECT` by primary key.
//!
//! ```text
//! cargo run --release -p mcp-tasks-sqlite --example costs            # FULL and NORMAL
//! cargo run --release -p mcp-tasks-sqlite --example costs -- 2000    # 2000 tasks a run
//! ```
//!
//! The file lives in a fresh directory under the current directory (a real disk, not a
//! `tmpfs` /tmp where a flush costs nothing); it is removed at the end.

use std::time::{Duration, Instant};

use mcp_tasks::{Limits, Owner, TaskRequest, TaskStore};
use mcp_tasks_sqlite::{SqliteTaskStore, Synchronous};
use serde_json::json;

fn per(total: Duration, n: usize) -> String {
    let micros = total.as_secs_f64() * 1e6 / n as f64;
    format!("{micros:8.1} µs")
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1_000);
    let dir = std::env::current_dir()
        .unwrap()
        .join(format!(".costs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let path = dir.join(format!("{synchronous:?}.db"));
        let store = SqliteTaskStore::builder(&path)
            .synchronous(synchronous)
            .limits(Limits::none())
            .build()
            .unwrap();
        let alice = Owner::new("alice");
        let result = json!({"content": [{"type": "text", "text": "done"}]});
        let result = result.as_object().unwrap().clone();

        let started = Instant::now();
        let mut made = Vec::with_capacity(n);
        for i in 0..n {
            made.push(
                store
                    .create(
                        &alice,
                        TaskRequest::new(i64::try_from(i).unwrap(), "tools/call"),
                    )
                    .unwrap(),
            );
        }
        let create = started.elapsed();
        let ids: Vec<String> = made.iter().map(|(_, task)| task.id().to_string()).collect();

        let started = Instant::now();
        for id in &ids {
            store.get(&alice, id).unwrap();
        }
        let get = started.elapsed();

        let started = Instant::now();
        for (handle, _) in made {
            let _done = handle.complete(result.clone()).unwrap();
        }
        let complete = started.elapsed();

        let started = Instant::now();
        for id in &ids {
            store.result(&alice, id).unwrap();
        }
        let read_result = started.elapsed();
        drop(store);

        // SQLite alone, on the same disk, with the same settings.
        let raw_path = dir.join(format!("{synchronous:?}-raw.db"));
        let raw = rusqlite::Connection::open(&raw_path).unwrap();
        raw.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        raw.pragma_update(
            None,
            "synchronous",
            match synchronous {
                Synchronous::Full => "FULL",
                Synchronous::Normal => "NORMAL",
            },
        )
        .unwrap();
        raw.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        let body = "x".repeat(300);
        let started = Instant::now();
        for id in &ids {
            raw.prepare_cached("INSERT INTO t (id, body) VALUES (?1, ?2)")
                .unwrap()
                .execute((id, &body))
                .unwrap();
        }
        let insert = started.elapsed();
        let started = Instant::now();
        for id in &ids {
            let _: String = raw
                .prepare_cached("SELECT body FROM t WHERE id = ?1")
                .unwrap()
                .query_row([id], |row| row.get(0))
                .unwrap();
        }
        let select = started.elapsed();

        println!("synchronous={synchronous:?}, {n} tasks, one thread, per operation:");
        println!(
            "  create         {}   raw INSERT (one commit) {}",
            per(create, n),
            per(insert, n)
        );
        println!(
            "  tasks/get      {}   raw SELECT by key       {}",
            per(get, n),
            per(select, n)
        );
        println!("  complete       {}", per(complete, n));
        println!("  tasks/result   {}", per(read_result, n));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
