//! The admin listing across owners (`mcp_tasks::admin::TaskAdmin::list_tasks`, pages of
//! 500) against a raw scan of the same store, in one run, on Redis and PostgreSQL.
//!
//! Starts its own `redis-server` and PostgreSQL (loopback, removed at the end; PostgreSQL
//! with `synchronous_commit` off, only to load the tasks faster), stores N tasks (default
//! 100,000) of 100 owners through the store API, then per round walks every page of the
//! admin list (every task read, decoded, with its lease) and, interleaved, the raw scan:
//! on Redis `SCAN … MATCH {prefix}:*:t:* COUNT 500` with the `HGETALL` of each batch's
//! keys pipelined; on PostgreSQL the keyset `SELECT … WHERE (seq, id) > ($1, $2) ORDER BY
//! seq, id LIMIT 500` on a plain `tokio_postgres` connection (rows not decoded). Then the
//! same for a selective filter (one task in 100 cancelled: `--status cancelled`).
//!
//! ```sh
//! cargo bench -p mcp-tasks-suites --features redis,postgres --bench admin_listing          # N = 100,000
//! cargo bench -p mcp-tasks-suites --features redis,postgres --bench admin_listing -- 10000 # quick
//! ```

use std::time::{Duration, Instant};

use mcp_tasks::admin::{TaskAdmin, TaskQuery};
use mcp_tasks::{Limits, Owner, TaskRequest, TaskStatus, TaskStore};
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::postgres::PostgresServer;
use mcp_tasks_test_support::redis::RedisServer;

const PAGE: usize = 500;
const ROUNDS: usize = 3;
const OWNERS: usize = 100;
const THREADS: usize = 4;

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(100_000);
    match RedisServer::start() {
        Some(server) => redis_round(&server, n),
        None => println!("admin_listing: redis-server not found, Redis not measured"),
    }
    match PostgresServer::start_with(&[("synchronous_commit", "off")]) {
        Some(server) => postgres_round(&server, n),
        None => println!("admin_listing: PostgreSQL not found, PostgreSQL not measured"),
    }
}

/// Stores `n` tasks of [`OWNERS`] owners, one in 100 cancelled, from [`THREADS`] threads.
fn fill<S: TaskStore + Clone + Send + 'static>(store: &S, n: usize) {
    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in (t..n).step_by(THREADS) {
                    let owner = Owner::new(format!("owner-{}", i % OWNERS));
                    let id = store
                        .insert(&owner, TaskRequest::new(i as i64, "tools/call"))
                        .expect("insert")
                        .id()
                        .to_string();
                    if i % 100 == 0 {
                        let _ = store.cancel(&owner, &id, None).expect("cancel");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a filling thread");
    }
    println!("  stored {n} tasks in {:.1?}", started.elapsed());
}

/// Walks every page of `query`; answers the tasks listed and the time taken.
fn walk<S: TaskAdmin>(store: &S, query: &TaskQuery) -> (usize, Duration) {
    let started = Instant::now();
    let mut listed = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list_tasks(query, cursor.as_deref(), PAGE)
            .expect("a page");
        listed += page.rows.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return (listed, started.elapsed()),
        }
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn report(what: &str, n: usize, admin: Vec<Duration>, raw: Vec<Duration>) {
    let (admin, raw) = (median(admin), median(raw));
    println!(
        "  {what}: admin list {:.0?} ({:.1} µs/task), raw scan {:.0?} ({:.1} µs/task): {:.2}×",
        admin,
        admin.as_secs_f64() * 1e6 / n as f64,
        raw,
        raw.as_secs_f64() * 1e6 / n as f64,
        admin.as_secs_f64() / raw.as_secs_f64()
    );
}

fn redis_round(server: &RedisServer, n: usize) {
    println!("Redis, {n} tasks of {OWNERS} owners, pages of {PAGE}:");
    let url = server.url();
    let store = RedisTaskStore::builder(&url)
        .prefix("bench")
        .limits(Limits::none())
        .build()
        .expect("a store on the bench's redis-server");
    fill(&store, n);
    let client = redis::Client::open(url.as_str()).expect("a raw client");
    let mut connection = client.get_connection().expect("a raw connection");
    let mut raw_scan = |only_cancelled: bool| -> (usize, Duration) {
        let started = Instant::now();
        let mut cursor = 0u64;
        let mut seen = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("bench:*:t:*")
                .arg("COUNT")
                .arg(PAGE)
                .query(&mut connection)
                .expect("SCAN");
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("HGETALL").arg(key);
            }
            let rows: Vec<std::collections::HashMap<String, String>> =
                pipe.query(&mut connection).expect("HGETALL");
            seen += rows
                .iter()
                .filter(|row| {
                    !only_cancelled || row.get("s").map(String::as_str) == Some("cancelled")
                })
                .count();
            cursor = next;
            if cursor == 0 {
                return (seen, started.elapsed());
            }
        }
    };
    for (what, query, only) in [
        ("every task", TaskQuery::all(), false),
        (
            "cancelled only (1 in 100)",
            TaskQuery::all().with_status(TaskStatus::Cancelled),
            true,
        ),
    ] {
        let (mut admin, mut raw) = (Vec::new(), Vec::new());
        let mut counts = (0, 0);
        for _ in 0..ROUNDS {
            let (listed, took) = walk(&store, &query);
            admin.push(took);
            let (scanned, took) = raw_scan(only);
            raw.push(took);
            counts = (listed, scanned);
        }
        assert_eq!(counts.0, counts.1, "both read every task");
        report(what, counts.0.max(1), admin, raw);
    }
}

fn postgres_round(server: &PostgresServer, n: usize) {
    println!("PostgreSQL, {n} tasks of {OWNERS} owners, pages of {PAGE}:");
    let url = server.url();
    let store = PostgresTaskStore::builder(&url)
        .schema("bench")
        .limits(Limits::none())
        .build()
        .expect("a store on the bench's PostgreSQL");
    fill(&store, n);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the raw connection");
    let client = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("a raw connection");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    });
    let statement = runtime
        .block_on(client.prepare(
            "SELECT id, owner, seq, status, body, created, updated, lease, lease_holder \
             FROM bench.tasks WHERE (seq, id) > ($1, $2) \
             AND ($3::text[] IS NULL OR status = ANY($3)) ORDER BY seq, id LIMIT 500",
        ))
        .expect("prepare the raw page");
    let raw_scan = |statuses: Option<Vec<String>>| -> (usize, Duration) {
        let started = Instant::now();
        let (mut seq, mut id) = (i64::MIN, uuid::Uuid::nil());
        let mut seen = 0;
        loop {
            let rows = runtime
                .block_on(client.query(&statement, &[&seq, &id, &statuses]))
                .expect("a raw page");
            seen += rows.len();
            let Some(last) = rows.last() else {
                return (seen, started.elapsed());
            };
            seq = last.get(2);
            id = last.get(0);
            if rows.len() < PAGE {
                return (seen, started.elapsed());
            }
        }
    };
    for (what, query, statuses) in [
        ("every task", TaskQuery::all(), None),
        (
            "cancelled only (1 in 100)",
            TaskQuery::all().with_status(TaskStatus::Cancelled),
            Some(vec!["cancelled".to_owned()]),
        ),
    ] {
        let (mut admin, mut raw) = (Vec::new(), Vec::new());
        let mut counts = (0, 0);
        for _ in 0..ROUNDS {
            let (listed, took) = walk(&store, &query);
            admin.push(took);
            let (scanned, took) = raw_scan(statuses.clone());
            raw.push(took);
            counts = (listed, scanned);
        }
        assert_eq!(counts.0, counts.1, "both read every task");
        report(what, counts.0.max(1), admin, raw);
    }
}
