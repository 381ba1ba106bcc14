//! Memory per stored finished task over HTTP: a release `mcp_http` (in-process store, 60 s
//! TTL) gets `N` short `sleep {ms: 0}` tasks over the 2026-07-28 wire, from one keep-alive
//! client per principal (the store keeps at most 1,000 tasks per owner, so `N / 800`
//! principals of 800 tasks each), after a warm-up round of 100 tasks each; every task must
//! then still answer `tasks/get` as `completed`. Prints, on lines starting `memory:`, the
//! server's `VmRSS` before and after and `VmHWM`, its thread count, and the resident bytes
//! per finished task.
//!
//! ```text
//! cargo test --release -p mcp-tasks-http --test memory -- --ignored --nocapture
//! MCP_TASKS_MEMORY_N=40000 cargo test --release -p mcp-tasks-http --test memory -- --ignored --nocapture
//! ```
//!
//! Ignored by default: it measures (nothing is asserted on the figures), and a debug build's
//! allocations differ. The in-process counterpart is `bytes per finished task` in
//! `suites/benches/report.rs`.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Launch;
use support::v2026::{Client, meta};

/// Tasks per principal in the measured round: with the warm-up's, under the store's
/// per-owner limit (1,000).
const PER_PRINCIPAL: usize = 800;

/// Tasks per principal in the warm-up round.
const WARM_UP: usize = 100;

/// A number of `/proc/PID/status` (KiB for the memory fields).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Creates `per` `sleep {ms: 0}` tasks for each of `tokens`, one client thread per token,
/// then reads each back with `tasks/get` until it is `completed`; the elapsed time.
fn round(addr: std::net::SocketAddr, tokens: &[String], per: usize) -> Duration {
    let start = Instant::now();
    thread::scope(|scope| {
        for token in tokens {
            scope.spawn(move || {
                let mut client = Client::open(addr, token).expect("connects");
                let ids: Vec<String> = (0..per).map(|_| client.sleep_task(0)).collect();
                for id in &ids {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    loop {
                        let task =
                            client.result("tasks/get", &json!({"taskId": id, "_meta": meta()}));
                        match task["status"].as_str() {
                            Some("completed") => break,
                            Some("working") if Instant::now() < deadline => {
                                thread::sleep(Duration::from_millis(5));
                            }
                            _ => panic!("task {id}: {task}"),
                        }
                    }
                }
            });
        }
    });
    start.elapsed()
}

#[test]
#[ignore = "a measurement: run it in release, see the module documentation"]
fn resident_bytes_per_finished_task() {
    let n: usize = std::env::var("MCP_TASKS_MEMORY_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
        .max(PER_PRINCIPAL);
    let principals = n.div_ceil(PER_PRINCIPAL);
    let tokens_file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("memory-tokens-{}.txt", std::process::id()));
    let mut file = String::new();
    for p in 0..principals {
        file.push_str(&format!("p{p:03}=token-{p:03}\n"));
    }
    std::fs::write(&tokens_file, file).expect("the tokens file is written");
    let server = Launch::new()
        .env(
            "MCP_TASKS_TOKENS_FILE",
            tokens_file.to_str().expect("a UTF-8 path"),
        )
        .start();
    let _ = std::fs::remove_file(&tokens_file);
    let tokens: Vec<String> = (0..principals).map(|p| format!("token-{p:03}")).collect();

    // The warm-up, as many clients at once as the measured round: the runtime's threads
    // (and their allocator arenas), connection buffers and the store's tables grow to
    // their working size first. Its tasks stay stored throughout.
    round(server.addr, &tokens, WARM_UP);
    thread::sleep(Duration::from_millis(500));
    let before = status_kib(server.pid, "VmRSS:");
    let threads_before = status_kib(server.pid, "Threads:");

    let took = round(server.addr, &tokens, PER_PRINCIPAL);
    let stored = principals * PER_PRINCIPAL;
    // Let handlers, notifications and per-task bookkeeping settle.
    thread::sleep(Duration::from_millis(500));
    let after = status_kib(server.pid, "VmRSS:");
    let peak = status_kib(server.pid, "VmHWM:");
    let threads_after = status_kib(server.pid, "Threads:");
    let per_task = (after.saturating_sub(before) * 1024) as f64 / stored as f64;
    println!(
        "memory: {stored} finished tasks (after {} warm-up ones) created and read back by {principals} \
         clients in {:.1} s; server threads {threads_before} before, {threads_after} after",
        principals * WARM_UP,
        took.as_secs_f64()
    );
    println!(
        "memory: VmRSS before {before} KiB, after {after} KiB, VmHWM {peak} KiB: \
         {per_task:.0} resident bytes per stored finished task"
    );
    server.assert_no_panic();
}
