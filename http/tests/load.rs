//! The load case of issue 16: 1,000 concurrent keep-alive clients of 100 principals (ten
//! each, from a tokens file), each doing initialize, a task-augmented `sleep {ms: 10}`,
//! `tasks/get` and `tasks/result` against one `mcp_http`. Every request must be answered
//! with 200 and a JSON-RPC result, all within 60 s; the latency quantiles are printed on
//! lines starting `load:` (visible with `--nocapture`): the TCP connect apart from the
//! requests, since connects that overflow the listen queue wait 1 s for a SYN retransmit,
//! and how many did.

mod support;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::{Launch, Session};

const CLIENTS: usize = 1000;
const PRINCIPALS: usize = 100;
/// The whole run, from the first connect to the last answer.
const BOUND: Duration = Duration::from_secs(60);
/// One request's answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// What is timed for each client: the TCP connect, then each request (the notification
/// `notifications/initialized` is answered 202).
const KINDS: [&str; 6] = [
    "connect",
    "initialize",
    "initialized",
    "tools/call",
    "tasks/get",
    "tasks/result",
];

/// Milliseconds with one decimal.
fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The machine's `TcpExt: ListenOverflows` counter (`/proc/net/netstat`): connections
/// refused because a listen queue was full; their SYNs are retransmitted after 1 s.
fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut lines = netstat.lines();
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if !names.starts_with("TcpExt:") {
            continue;
        }
        let at = names
            .split_whitespace()
            .position(|n| n == "ListenOverflows")?;
        return values.split_whitespace().nth(at)?.parse().ok();
    }
    None
}

#[test]
fn a_thousand_keep_alive_clients_each_run_a_task() {
    let nofile = support::raise_own_nofile();
    assert!(
        nofile >= 2 * CLIENTS as u64 + 64,
        "the test needs {} descriptors, RLIMIT_NOFILE allows {nofile}",
        2 * CLIENTS + 64
    );
    let tokens = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("load-tokens-{}.txt", std::process::id()));
    let mut file = String::from("# 100 principals for the load test\n");
    for p in 0..PRINCIPALS {
        file.push_str(&format!("p{p:03}=token-{p:03}\n"));
    }
    std::fs::write(&tokens, file).expect("the tokens file is written");
    let mut server = Launch::new()
        .env(
            "MCP_TASKS_TOKENS_FILE",
            tokens.to_str().expect("a UTF-8 path"),
        )
        .start();
    let _ = std::fs::remove_file(&tokens);
    let addr = server.addr;

    let barrier = Arc::new(Barrier::new(CLIENTS + 1));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let barrier = Arc::clone(&barrier);
            thread::Builder::new()
                .name(format!("client-{n}"))
                .stack_size(256 * 1024)
                .spawn(move || {
                    let token = format!("token-{:03}", n % PRINCIPALS);
                    barrier.wait();
                    let mut session = Session::open(addr, &token, REQUEST_TIMEOUT)
                        .map_err(|err| format!("client {n}: {err}"))?;
                    let [connect, initialize, initialized] = session.opening;
                    let [call, get, result] = support::sleep_task_round(&mut session, 10)
                        .map_err(|err| format!("client {n}: {err}"))?;
                    Ok::<[Duration; 6], String>([
                        connect,
                        initialize,
                        initialized,
                        call,
                        get,
                        result,
                    ])
                })
                .expect("a client thread")
        })
        .collect();
    let overflows_before = listen_overflows();
    barrier.wait();
    let started = Instant::now();
    let outcomes: Vec<Result<[Duration; 6], String>> = clients
        .into_iter()
        .map(|c| {
            c.join()
                .unwrap_or_else(|_| Err("a client thread panicked".into()))
        })
        .collect();
    let wall = started.elapsed();

    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    let done: Vec<[Duration; 6]> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok().copied())
        .collect();
    println!(
        "load: {CLIENTS} clients of {PRINCIPALS} principals, {} requests answered, {} clients failed, wall {}",
        done.len() * (KINDS.len() - 1),
        failures.len(),
        ms(wall)
    );
    let mut all = Vec::new();
    for (k, kind) in KINDS.iter().enumerate() {
        let mut samples: Vec<Duration> = done.iter().map(|d| d[k]).collect();
        samples.sort();
        println!(
            "load: {kind:<12} p50 {:>9}  p90 {:>9}  p99 {:>9}  max {:>9}",
            ms(support::quantile(&samples, 0.50)),
            ms(support::quantile(&samples, 0.90)),
            ms(support::quantile(&samples, 0.99)),
            ms(samples.last().copied().unwrap_or_default()),
        );
        if k > 0 {
            all.extend(samples);
        }
    }
    all.sort();
    println!(
        "load: {:<12} p50 {:>9}  p90 {:>9}  p99 {:>9}  max {:>9}",
        "all requests",
        ms(support::quantile(&all, 0.50)),
        ms(support::quantile(&all, 0.90)),
        ms(support::quantile(&all, 0.99)),
        ms(all.last().copied().unwrap_or_default()),
    );
    println!("load: server VmRSS after the run {} KiB", server.rss_kib());
    let slow_connects = done
        .iter()
        .filter(|d| d[0] >= Duration::from_secs(1))
        .count();
    let overflows = overflows_before
        .zip(listen_overflows())
        .map_or_else(|| "?".to_owned(), |(a, b)| b.saturating_sub(a).to_string());
    println!(
        "load: {slow_connects} connects took 1 s or more (a SYN retransmitted); \
         listen queue overflows on this machine during the run: {overflows}"
    );

    assert!(
        failures.is_empty(),
        "{} of {CLIENTS} clients failed, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(wall <= BOUND, "the load took {wall:?}, over {BOUND:?}");
    server
        .alive()
        .unwrap_or_else(|err| panic!("after the load: {err}"));
    server.assert_no_panic();
}
