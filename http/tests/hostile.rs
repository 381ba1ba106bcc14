//! The hostile-input suite of issue 16: each case attacks `mcp_http` the way the old
//! tiny_http example was knocked over (huge and overflowing `Content-Length`, stalled
//! bodies, descriptor exhaustion, a burst of fresh connections, SIGTERM mid-request) and
//! asserts that the server stays up and that alice's authenticated `ping` (initialize,
//! then ping in that session) is answered within a bound, meanwhile or afterwards.
//!
//! Beyond the issue's list: stalled and silent request heads (alone and at the connection
//! cap), oversized heads, an oversized chunked body, deeply nested JSON, pipelining, a
//! flood of sessions, SSE streams against a principal's slots, and a signal right after
//! the `listening on` line.
//!
//! Requests are written by hand on `TcpStream`s (`support`), so malformed and stalled
//! ones can be sent. The cases run one at a time (`support::serial`). Run with
//! `cargo test -p mcp-tasks-http --test hostile -- --nocapture` to see what
//! each case measured.

mod support;

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{ALICE, BOB, Conn, Launch, Session, is_closed, post_head, rpc};

/// How long alice's initialize + ping may take while the server is under attack.
const ALICE_BOUND: Duration = Duration::from_secs(5);
/// How much memory the server may hold after refusing a 2 TB body (it starts at ~10 MiB).
const RSS_LIMIT_KIB: u64 = 64 * 1024;

/// What became of a hostile connection: an answer's status, or closed without one, or no
/// answer before the deadline.
#[derive(Debug, PartialEq, Eq, Clone, Copy, PartialOrd, Ord)]
enum Outcome {
    Status(u16),
    Closed,
    Silent,
}

/// Reads the answer on `conn`, waiting at most until `deadline`.
fn outcome(conn: &mut Conn, deadline: Instant) -> Outcome {
    conn.set_read_timeout(deadline.saturating_duration_since(Instant::now()));
    match conn.read_response() {
        Ok(answer) => Outcome::Status(answer.status),
        Err(err) if is_closed(&err) => Outcome::Closed,
        Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Outcome::Silent
        }
        Err(_) => Outcome::Closed,
    }
}

/// Counts of each outcome, for messages.
fn tally(outcomes: &[Outcome]) -> Vec<(Outcome, usize)> {
    let mut sorted = outcomes.to_vec();
    sorted.sort();
    let mut counts: Vec<(Outcome, usize)> = Vec::new();
    for o in sorted {
        match counts.last_mut() {
            Some((last, n)) if *last == o => *n += 1,
            _ => counts.push((o, 1)),
        }
    }
    counts
}

/// Sends a POST head with `Content-Length: length` (written as given) and `body_part`,
/// then returns the connection without completing the body.
fn stalled_post(
    addr: std::net::SocketAddr,
    token: Option<&str>,
    length: &str,
    body_part: &[u8],
) -> std::io::Result<Conn> {
    let mut conn = Conn::open(addr, Duration::from_secs(5))?;
    let mut head = post_head(addr, token, None, None);
    head.truncate(head.len() - 2);
    head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body_part);
    conn.write_raw(&bytes)?;
    Ok(conn)
}

/// Case 1: an unauthenticated `Content-Length: 2000000000000` with three bytes of body is
/// refused (401, or 413) without allocating it; an authenticated one gets 413 before
/// anything is read. The process stays up and small.
#[test]
fn a_two_terabyte_content_length_is_refused_without_allocating() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let before = server.rss_kib();

    let mut anonymous =
        stalled_post(server.addr, None, "2000000000000", b"{\"a").expect("the request is sent");
    anonymous.set_read_timeout(Duration::from_secs(5));
    let refused = anonymous
        .read_response()
        .unwrap_or_else(|err| panic!("unauthenticated 2 TB body: no answer: {err}"));
    assert!(
        matches!(refused.status, 401 | 413),
        "unauthenticated 2 TB body: HTTP {} (expected 401 or 413)",
        refused.status
    );
    if refused.status == 401 {
        assert!(
            refused
                .header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "a 401 names the Bearer scheme: {:?}",
            refused.headers
        );
    }
    // Go on sending the body after the refusal (8 MiB, until the server hangs up): it must
    // neither be buffered nor drained into memory.
    let chunk = vec![b' '; 64 * 1024];
    let mut sent = 0usize;
    for _ in 0..128 {
        if anonymous.write_raw(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    eprintln!("{sent} body bytes accepted after the 401");
    let mut alice = stalled_post(server.addr, Some(ALICE), "2000000000000", b"{\"a")
        .expect("the request is sent");
    let too_large = outcome(&mut alice, Instant::now() + Duration::from_secs(5));
    assert_eq!(too_large, Outcome::Status(413), "alice's 2 TB body");

    // The server must not be draining into memory now: give it a moment, then look.
    thread::sleep(Duration::from_millis(500));
    server.assert_serves_alice(ALICE_BOUND, "after two 2 TB Content-Lengths");
    drop((anonymous, alice));
    thread::sleep(Duration::from_millis(300));
    server.assert_serves_alice(ALICE_BOUND, "after the 2 TB connections closed");
    let after = server.rss_kib();
    eprintln!("VmRSS {before} KiB before the 2 TB requests, {after} KiB after");
    assert!(
        after < RSS_LIMIT_KIB,
        "VmRSS grew from {before} KiB to {after} KiB after refusing a 2 TB body"
    );
    server.assert_no_panic();
}

/// Case 2: `Content-Length: 18446744073709551615` (u64::MAX) and an overflowing
/// `99999999999999999999`, with and without a token, are 4xx; no panic.
#[test]
fn overflowing_content_lengths_are_client_errors_not_panics() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    for length in [
        "18446744073709551615",
        "99999999999999999999",
        "-1",
        "1e3",
        "0x10",
    ] {
        for token in [None, Some(ALICE)] {
            let mut conn =
                stalled_post(server.addr, token, length, b"{}").expect("the request is sent");
            let got = outcome(&mut conn, Instant::now() + Duration::from_secs(5));
            assert!(
                matches!(got, Outcome::Status(400..=499)),
                "Content-Length: {length} (token {token:?}): {got:?}, expected a 4xx"
            );
        }
        server.assert_serves_alice(ALICE_BOUND, &format!("after Content-Length: {length}"));
    }
    server.assert_no_panic();
}

/// Opens `count` connections that each send a POST head with `Content-Length: 1000` and
/// ten bytes of body, then stall.
fn stall(addr: std::net::SocketAddr, token: Option<&str>, count: usize) -> Vec<Conn> {
    let started = Instant::now();
    let mut stalled = Vec::with_capacity(count);
    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for _ in 0..count {
        let one = Instant::now();
        match stalled_post(addr, token, "1000", b"{\"jsonrpc\"") {
            Ok(conn) => stalled.push(conn),
            Err(err) => failures.push(err.to_string()),
        }
        slowest = slowest.max(one.elapsed());
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "opening {count} stalled connections took over 60 s"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {count} stalled connections could not be opened: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    eprintln!(
        "{count} stalled connections opened in {:?} (slowest {slowest:?})",
        started.elapsed()
    );
    stalled
}

/// Case 3a: 300 unauthenticated connections each send ten bytes of a 1000-byte body and
/// stall. Meanwhile alice is served, and each staller gets its 401 (the body is never
/// waited for).
#[test]
fn three_hundred_unauthenticated_stalled_bodies_do_not_freeze_the_server() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new().start();
    let mut stalled = stall(server.addr, None, 300);
    let took = server.assert_serves_alice(ALICE_BOUND, "while 300 unauthenticated bodies stall");
    eprintln!("alice served in {took:?} while 300 unauthenticated bodies stall");

    let deadline = Instant::now() + Duration::from_secs(10);
    let outcomes: Vec<Outcome> = stalled.iter_mut().map(|c| outcome(c, deadline)).collect();
    let counts = tally(&outcomes);
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Status(401)),
        "every unauthenticated staller is refused with 401 at once: {counts:?}"
    );
    server.assert_serves_alice(ALICE_BOUND, "after the 401s, stallers still connected");
    drop(stalled);
    server.assert_serves_alice(ALICE_BOUND, "after the stallers hung up");
    server.assert_no_panic();
}

/// Case 3b: 300 connections of bob's (authenticated) each stall their body, with
/// `MCP_TASKS_BODY_TIMEOUT_MS=1000`: each gets 408 (its body timed out) or 429 (beyond bob's
/// 32 concurrent requests) or is closed, and alice is served meanwhile.
#[test]
fn three_hundred_authenticated_stalled_bodies_time_out_and_alice_is_served() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new()
        .env("MCP_TASKS_BODY_TIMEOUT_MS", "1000")
        .start();
    // The first 32 take all of bob's request slots; alice is served while the last of them
    // still stalls (its body timer has just started), then again beside all 300.
    let opened = Instant::now();
    let mut stalled = stall(server.addr, Some(BOB), 32);
    let took = server.assert_serves_alice(ALICE_BOUND, "while bob's 32 slots hold stalled bodies");
    eprintln!(
        "alice served in {took:?} while bob's slots hold stalled bodies ({:?} after the first)",
        opened.elapsed()
    );
    stalled.extend(stall(server.addr, Some(BOB), 268));
    let took = server.assert_serves_alice(ALICE_BOUND, "while 300 of bob's bodies stall");
    eprintln!(
        "alice served in {took:?} beside 300 of bob's stalled bodies ({:?} after the first)",
        opened.elapsed()
    );

    let deadline = Instant::now() + Duration::from_secs(15);
    let outcomes: Vec<Outcome> = stalled.iter_mut().map(|c| outcome(c, deadline)).collect();
    let counts = tally(&outcomes);
    eprintln!("bob's stalled bodies ended as {counts:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Outcome::Status(408 | 429) | Outcome::Closed)),
        "each stalled body gets 408 or 429 or is closed, within 15 s: {counts:?}"
    );
    assert!(
        outcomes.contains(&Outcome::Status(408)) || outcomes.contains(&Outcome::Closed),
        "the stalled bodies that held a slot time out: {counts:?}"
    );
    server.assert_serves_alice(ALICE_BOUND, "after bob's stalled bodies timed out");
    // Bob's slots came back: his own requests are served again.
    let mut bob = Session::open(server.addr, BOB, ALICE_BOUND)
        .unwrap_or_else(|err| panic!("bob's slots are freed after the timeouts: {err}"));
    bob.request("ping", json!({}))
        .unwrap_or_else(|err| panic!("bob's ping after the timeouts: {err}"));
    drop(stalled);
    server.assert_no_panic();
}

/// Case 4: with `RLIMIT_NOFILE` 256 (soft and hard), 300 idle connections exhaust the
/// server's descriptors; it backs off instead of exiting, and once they close it serves
/// alice within a few seconds.
#[test]
fn descriptor_exhaustion_is_survived() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new().nofile(256).start();
    server.assert_serves_alice(ALICE_BOUND, "before the descriptors run out");

    let started = Instant::now();
    let mut idle = Vec::new();
    let mut refused = 0;
    for _ in 0..300 {
        match TcpStream::connect_timeout(&server.addr, Duration::from_millis(500)) {
            Ok(stream) => idle.push(stream),
            Err(_) => refused += 1,
        }
        if started.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    eprintln!(
        "{} idle connections open, {refused} connects failed, in {:?}",
        idle.len(),
        started.elapsed()
    );
    // Let the server accept until it runs out of descriptors and back off a few times.
    thread::sleep(Duration::from_millis(1500));
    if let Err(err) = server.alive() {
        panic!("with 300 idle connections and 256 descriptors: {err}");
    }
    drop(idle);

    let took = server.assert_serves_alice(ALICE_BOUND, "once the idle connections closed");
    eprintln!("alice served {took:?} after the idle connections closed");
    let stderr = server.stderr();
    assert!(
        stderr.contains("backing off"),
        "stderr shows the accept back-off:\n{}",
        support::tail(&stderr, 40)
    );
    server.assert_no_panic();
}

/// One task round per client, 25 clients at once, each on a fresh keep-alive connection
/// (initialize, a task-augmented `sleep {ms: 50}`, `tasks/get`, `tasks/result`, 20 s per
/// request); the sessions come back still connected, or the failures.
fn burst(addr: std::net::SocketAddr) -> Result<Vec<Session>, Vec<String>> {
    let barrier = Arc::new(Barrier::new(25));
    let clients: Vec<_> = (0..25)
        .map(|n| {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                let mut session = Session::open(addr, ALICE, Duration::from_secs(20))
                    .map_err(|err| format!("client {n}: {err}"))?;
                support::sleep_task_round(&mut session, 50)
                    .map_err(|err| format!("client {n}: {err}"))?;
                Ok::<Session, String>(session)
            })
        })
        .collect();
    let mut sessions = Vec::new();
    let mut failures = Vec::new();
    for client in clients {
        match client.join() {
            Ok(Ok(session)) => sessions.push(session),
            Ok(Err(err)) => failures.push(err),
            Err(_) => failures.push("a client thread panicked".into()),
        }
    }
    if failures.is_empty() {
        Ok(sessions)
    } else {
        Err(failures)
    }
}

/// Case 5: a burst of 25 fresh keep-alive connections, each running a task round; then,
/// with those 25 connections left open and idle (as a client's connection pool leaves
/// them), a second burst of 25 fresh ones. Every request is answered (20 s each).
#[test]
fn a_burst_of_twenty_five_connections_is_answered() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let started = Instant::now();
    let idle = burst(server.addr).unwrap_or_else(|failures| {
        panic!("first burst: {} of 25 failed: {failures:?}", failures.len())
    });
    let first = started.elapsed();
    let started = Instant::now();
    let second = burst(server.addr).unwrap_or_else(|failures| {
        panic!(
            "second burst, 25 idle keep-alive connections open: {} of 25 failed: {failures:?}",
            failures.len()
        )
    });
    eprintln!(
        "25-connection bursts: {first:?}, then {:?} beside 25 idle connections",
        started.elapsed()
    );
    server.assert_serves_alice(ALICE_BOUND, "after the bursts, 50 connections idle");
    drop((idle, second));
    server.assert_no_panic();
}

/// Case 7: SIGTERM while alice's `tasks/result` waits on a long sleep task and while a
/// ping is in flight (its body half sent): the ping is answered, new connections are not
/// served, the process exits 0 within the grace period (`MCP_TASKS_SHUTDOWN_MS=2000`), and
/// stderr says how the running task ended.
#[test]
fn sigterm_finishes_in_flight_requests_and_exits_within_the_grace() {
    let _serial = support::serial();
    let mut server = Launch::new().env("MCP_TASKS_SHUTDOWN_MS", "2000").start();
    let addr = server.addr;
    let mut waiter = Session::open(addr, ALICE, Duration::from_secs(10)).expect("alice's session");
    let created = waiter
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 60000}, "task": {}}),
        )
        .expect("a long sleep task");
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let session = waiter.id.clone();
    let running = task_id.clone();
    // tasks/result blocks on its own connection until the task ends (or the server goes).
    let blocked = thread::spawn(move || {
        let start = Instant::now();
        let mut conn = Conn::open(addr, Duration::from_secs(10)).map_err(|e| e.to_string())?;
        let answer = conn.post(
            Some(ALICE),
            Some(&session),
            &rpc(7, "tasks/result", json!({"taskId": task_id})),
        );
        Ok::<_, String>((start.elapsed(), answer.map(|a| (a.status, a.message()))))
    });

    // A ping in flight: head and half the body now, the rest after SIGTERM.
    let ping = rpc(8, "ping", json!({}));
    let (first, rest) = ping.split_at(ping.len() / 2);
    let mut in_flight = Conn::open(addr, Duration::from_secs(10)).expect("connect");
    let head = post_head(addr, Some(ALICE), Some(&waiter.id), Some(ping.len() as u64));
    in_flight
        .write_raw(format!("{head}{first}").as_bytes())
        .expect("half a ping");
    thread::sleep(Duration::from_millis(300));

    let signalled = Instant::now();
    server.signal(libc::SIGTERM);
    thread::sleep(Duration::from_millis(300));
    in_flight
        .write_raw(rest.as_bytes())
        .expect("the rest of the ping");
    let answered = in_flight.read_response();

    // A connection made after SIGTERM is not served.
    let late = match Conn::open(addr, Duration::from_secs(2)) {
        Err(err) => format!("refused ({err})"),
        Ok(mut conn) => match conn.post(
            Some(ALICE),
            None,
            &rpc(1, "initialize", support::initialize_params("late")),
        ) {
            Ok(answer) if answer.status == 200 => {
                panic!(
                    "a connection made after SIGTERM was served: {}",
                    answer.text()
                )
            }
            Ok(answer) => format!("answered {}", answer.status),
            Err(err) => format!("closed ({err})"),
        },
    };

    let status = server.wait_exit(Duration::from_secs(5));
    let exited_after = signalled.elapsed();
    let stderr = server.stderr();
    let answered = answered.unwrap_or_else(|err| {
        panic!("the in-flight ping got no answer after SIGTERM: {err}; stderr:\n{stderr}")
    });
    let pong = answered.message().expect("a JSON-RPC answer to the ping");
    assert!(
        answered.status == 200 && pong["id"] == 8 && pong["result"].is_object(),
        "the in-flight ping is answered: HTTP {} {pong}",
        answered.status
    );
    let status = status.unwrap_or_else(|| {
        panic!(
            "mcp_http still running {exited_after:?} after SIGTERM (grace 2 s); stderr:\n{stderr}"
        )
    });
    assert!(
        status.success(),
        "mcp_http exits 0 after SIGTERM, got {status}; stderr:\n{stderr}"
    );
    // The grace period, plus a little for the last answers to be flushed.
    assert!(
        exited_after <= Duration::from_millis(3500),
        "mcp_http took {exited_after:?} to exit after SIGTERM (grace 2 s); stderr:\n{stderr}"
    );
    let (waited, result) = blocked
        .join()
        .expect("the tasks/result thread")
        .expect("tasks/result was sent");
    eprintln!(
        "SIGTERM: exited {status} after {exited_after:?}; late connection {late}; \
         tasks/result ended after {waited:?} with {result:?}"
    );
    // The blocked tasks/result is answered with the task's end: it could not finish
    // within the grace, so it failed, and the waiter is told so.
    let (code, message) = result.unwrap_or_else(|err| {
        panic!("the blocked tasks/result got no answer at shutdown: {err}; stderr:\n{stderr}")
    });
    let message = message.unwrap_or_else(|err| panic!("tasks/result at shutdown: {err}"));
    assert!(
        code == 200 && message["id"] == 7 && message["error"]["code"] == -32603,
        "tasks/result at shutdown answers the task's failure (-32603): HTTP {code} {message}"
    );
    // The operator is told which running task failed (or finished).
    assert!(
        stderr
            .lines()
            .any(|line| line.contains("shutdown") && line.contains(&running)),
        "stderr names the running task and how it ended:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "mcp_http panicked:\n{stderr}");
    // Nothing is listening any more.
    let mut probe = [0u8; 1];
    if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        assert!(
            !matches!(stream.read(&mut probe), Ok(1)),
            "something still answers on {addr} after exit"
        );
    }
}

/// Case 7b: the `listening on` line is the readiness signal, so a supervisor may stop the
/// server right after it: SIGTERM (and SIGINT) then still shut down gracefully (exit 0,
/// "shutting down" logged) instead of killing the process with the signal's default action.
#[test]
fn a_signal_right_after_the_listening_line_is_graceful() {
    let _serial = support::serial();
    for (name, signal) in [("SIGTERM", libc::SIGTERM), ("SIGINT", libc::SIGINT)] {
        for round in 0..5 {
            let mut server = Launch::new().env("MCP_TASKS_SHUTDOWN_MS", "2000").start();
            server.signal(signal);
            let status = server.wait_exit(Duration::from_secs(5));
            let stderr = server.stderr();
            let status = status.unwrap_or_else(|| {
                panic!("{name} (round {round}): still running 5 s later; stderr:\n{stderr}")
            });
            assert!(
                status.success(),
                "{name} right after the listening line (round {round}) ended mcp_http with \
                 {status}, not a graceful exit 0; stderr:\n{stderr}"
            );
            assert!(
                stderr.contains(&format!("{name}: shutting down")),
                "{name} (round {round}): stderr says it shuts down:\n{stderr}"
            );
        }
    }
}

/// Opens `count` connections that each send the start of a request head and stall before
/// its blank line (slowloris).
fn stall_headers(addr: std::net::SocketAddr, count: usize) -> Vec<Conn> {
    let started = Instant::now();
    let mut stalled = Vec::with_capacity(count);
    for n in 0..count {
        let mut conn = Conn::open(addr, Duration::from_secs(5))
            .unwrap_or_else(|err| panic!("slow connection {n}: {err}"));
        conn.write_raw(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
            .unwrap_or_else(|err| panic!("slow connection {n}: {err}"));
        stalled.push(conn);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "opening {count} slow connections took over 60 s"
        );
    }
    stalled
}

/// Case 9 (slowloris): 300 connections send half a request head and stall, with
/// `MCP_TASKS_HEADER_TIMEOUT_MS=1000`: alice is served meanwhile, and each slow connection
/// is closed (or answered 408) once its headers are late.
#[test]
fn three_hundred_stalled_request_heads_are_closed_at_the_header_timeout() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new()
        .env("MCP_TASKS_HEADER_TIMEOUT_MS", "1000")
        .start();
    let mut stalled = stall_headers(server.addr, 300);
    let took = server.assert_serves_alice(ALICE_BOUND, "while 300 request heads stall");
    eprintln!("alice served in {took:?} while 300 request heads stall");
    let deadline = Instant::now() + Duration::from_secs(15);
    let outcomes: Vec<Outcome> = stalled.iter_mut().map(|c| outcome(c, deadline)).collect();
    let counts = tally(&outcomes);
    eprintln!("stalled request heads ended as {counts:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Outcome::Closed | Outcome::Status(408))),
        "each stalled head is closed (or 408) within 15 s: {counts:?}"
    );
    server.assert_serves_alice(ALICE_BOUND, "after the stalled heads were closed");
    server.assert_no_panic();
}

/// Case 10: at the connection cap (`MCP_TASKS_MAX_CONNECTIONS=64`), 200 stalled request
/// heads hold every slot; the header timeout (1 s) frees them in turn, so the server
/// neither dies nor wedges: alice, queued behind them, is served within a few rounds of
/// the timeout.
#[test]
fn stalled_heads_at_the_connection_cap_drain_and_alice_is_served() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new()
        .env("MCP_TASKS_MAX_CONNECTIONS", "64")
        .env("MCP_TASKS_HEADER_TIMEOUT_MS", "1000")
        .start();
    let stalled = stall_headers(server.addr, 200);
    // 200 heads, 64 at a time, 1 s each: about 4 rounds before alice's turn.
    let took = server.assert_serves_alice(
        Duration::from_secs(15),
        "behind 200 stalled heads at a cap of 64 connections",
    );
    eprintln!("alice served in {took:?} behind 200 stalled heads at a cap of 64");
    drop(stalled);
    server.assert_serves_alice(ALICE_BOUND, "after the stalled heads hung up");
    server.assert_no_panic();
}

/// Case 11: oversized request heads (one 1 MiB header; 20,000 small headers), with and
/// without a token, are refused (431/400) or closed; memory stays small.
#[test]
fn oversized_request_heads_are_refused() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let addr = server.addr;
    let big = format!("X-Big: {}\r\n", "a".repeat(1 << 20));
    let many: String = (0..20_000).map(|n| format!("X-H{n}: v\r\n")).collect();
    for (what, extra) in [("a 1 MiB header", &big), ("20,000 headers", &many)] {
        for token in [None, Some(ALICE)] {
            let mut conn = Conn::open(addr, Duration::from_secs(5)).expect("connect");
            let auth = token
                .map(|t| format!("Authorization: Bearer {t}\r\n"))
                .unwrap_or_default();
            let body = rpc(1, "initialize", support::initialize_params("big"));
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n{body}",
                body.len()
            );
            // The server may close before it has read everything: a failed write is fine.
            let _ = conn.write_raw(request.as_bytes());
            let got = outcome(&mut conn, Instant::now() + Duration::from_secs(10));
            assert!(
                matches!(got, Outcome::Status(400 | 413 | 431) | Outcome::Closed),
                "{what} (token {token:?}): {got:?}, expected 431/400 or a closed connection"
            );
        }
        server.assert_serves_alice(ALICE_BOUND, &format!("after {what}"));
    }
    let rss = server.rss_kib();
    assert!(rss < RSS_LIMIT_KIB, "VmRSS {rss} KiB after oversized heads");
    server.assert_no_panic();
}

/// Case 12: a chunked body (no `Content-Length`) larger than `MCP_TASKS_MAX_BODY_BYTES`
/// is refused with 413 once the limit is passed, not buffered whole.
#[test]
fn a_chunked_body_over_the_limit_is_refused() {
    let _serial = support::serial();
    let mut server = Launch::new()
        .env("MCP_TASKS_MAX_BODY_BYTES", "65536")
        .start();
    let addr = server.addr;
    let mut session = Session::open(addr, ALICE, ALICE_BOUND).expect("alice's session");
    session.request("ping", json!({})).expect("ping");
    let mut conn = Conn::open(addr, Duration::from_secs(10)).expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        session.id
    );
    conn.write_raw(head.as_bytes()).expect("the head");
    let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, " ".repeat(16 * 1024));
    // 1 MiB in 16 KiB chunks, never terminated; the server may stop reading at 64 KiB.
    for _ in 0..64 {
        if conn.write_raw(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let got = outcome(&mut conn, Instant::now() + Duration::from_secs(10));
    assert_eq!(
        got,
        Outcome::Status(413),
        "a 1 MiB chunked body over a 64 KiB limit"
    );
    server.assert_serves_alice(ALICE_BOUND, "after the chunked body");
    server.assert_no_panic();
}

/// Case 13: JSON nested 100,000 levels deep (within the body limit) is a parse error for
/// the client, not a stack overflow of the server.
#[test]
fn deeply_nested_json_is_a_parse_error() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let addr = server.addr;
    let session = Session::open(addr, ALICE, ALICE_BOUND).expect("alice's session");
    let depth = 100_000;
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{}{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    for (what, body) in [("bare", "[".repeat(depth)), ("in params", nested)] {
        let mut conn = Conn::open(addr, ALICE_BOUND).expect("connect");
        let answer = conn
            .post(Some(ALICE), Some(&session.id), &body)
            .unwrap_or_else(|err| {
                panic!(
                    "JSON nested {depth} deep ({what}): no answer ({err}); stderr:\n{}",
                    support::tail(&server.stderr(), 20)
                )
            });
        assert!(
            (400..500).contains(&answer.status) || answer.status == 200,
            "JSON nested {depth} deep ({what}): HTTP {} {}",
            answer.status,
            answer.text()
        );
        let message = answer.message().expect("a JSON-RPC answer");
        assert!(
            message["error"]["code"].is_i64(),
            "JSON nested {depth} deep ({what}) is refused with a JSON-RPC error: {message}"
        );
        server.assert_serves_alice(ALICE_BOUND, &format!("after JSON nested {depth} deep"));
    }
    server.assert_no_panic();
}

/// Case 14: 50 pings pipelined in one write on one keep-alive connection are each
/// answered, in order.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let addr = server.addr;
    let session = Session::open(addr, ALICE, ALICE_BOUND).expect("alice's session");
    let mut conn = Conn::open(addr, Duration::from_secs(20)).expect("connect");
    let mut batch = String::new();
    for id in 100..150 {
        let body = rpc(id, "ping", json!({}));
        batch.push_str(&post_head(
            addr,
            Some(ALICE),
            Some(&session.id),
            Some(body.len() as u64),
        ));
        batch.push_str(&body);
    }
    conn.write_raw(batch.as_bytes())
        .expect("50 pipelined pings");
    for id in 100..150 {
        let answer = conn
            .read_response()
            .unwrap_or_else(|err| panic!("pipelined ping {id}: {err}"));
        let message = answer.message().expect("a JSON-RPC answer");
        assert!(
            answer.status == 200 && message["id"] == id && message["result"].is_object(),
            "pipelined ping {id}: HTTP {} {message}",
            answer.status
        );
    }
    server.assert_serves_alice(ALICE_BOUND, "after the pipelined pings");
    server.assert_no_panic();
}

/// Case 15: one principal opening 3,000 sessions (initialize, never DELETE) does not grow
/// the server without bound: its oldest sessions are forgotten, memory stays small, and
/// another principal is served.
#[test]
fn a_flood_of_sessions_stays_bounded() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let addr = server.addr;
    let before = server.rss_kib();
    let mut conn = Conn::open(addr, Duration::from_secs(10)).expect("connect");
    let mut first = None;
    let started = Instant::now();
    for n in 0..3000 {
        let answer = conn
            .post(
                Some(BOB),
                None,
                &rpc(n, "initialize", support::initialize_params("flood")),
            )
            .unwrap_or_else(|err| panic!("initialize {n}: {err}"));
        assert_eq!(answer.status, 200, "initialize {n}: {}", answer.text());
        if first.is_none() {
            first = answer.header("mcp-session-id").map(str::to_owned);
        }
        if answer.closes() {
            conn = Conn::open(addr, Duration::from_secs(10)).expect("reconnect");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "3,000 initializes took over 120 s"
        );
    }
    let after = server.rss_kib();
    eprintln!(
        "3,000 sessions of bob in {:?}: VmRSS {before} KiB before, {after} KiB after",
        started.elapsed()
    );
    assert!(
        after < before + 64 * 1024,
        "VmRSS grew from {before} KiB to {after} KiB over 3,000 sessions"
    );
    let first = first.expect("a session id");
    let stale = conn
        .post(Some(BOB), Some(&first), &rpc(9, "ping", json!({})))
        .expect("an answer for the oldest session");
    assert_eq!(
        stale.status,
        404,
        "the oldest of 3,000 sessions is forgotten: {}",
        stale.text()
    );
    server.assert_serves_alice(ALICE_BOUND, "after bob's 3,000 sessions");
    server.assert_no_panic();
}

/// Case 16: at the connection cap (`MCP_TASKS_MAX_CONNECTIONS=64`), 200 connections that
/// send nothing at all hold every slot; the header timeout (1 s) must cover a request
/// that has not started either, so they are closed in turn and alice, queued behind them,
/// is served.
#[test]
fn silent_connections_at_the_cap_are_closed_and_alice_is_served() {
    let _serial = support::serial();
    support::raise_own_nofile();
    let mut server = Launch::new()
        .env("MCP_TASKS_MAX_CONNECTIONS", "64")
        .env("MCP_TASKS_HEADER_TIMEOUT_MS", "1000")
        .start();
    let mut silent = Vec::new();
    for n in 0..200 {
        silent.push(
            TcpStream::connect_timeout(&server.addr, Duration::from_secs(5))
                .unwrap_or_else(|err| panic!("silent connection {n}: {err}")),
        );
    }
    let took = server.assert_serves_alice(
        Duration::from_secs(15),
        "behind 200 silent connections at a cap of 64",
    );
    eprintln!("alice served in {took:?} behind 200 silent connections at a cap of 64");
    drop(silent);
    server.assert_no_panic();
}

/// Case 17: bob opens 60 sessions and a standalone SSE stream (`GET /mcp`) in each: the
/// streams count against his 32 concurrent requests (the rest get 429), so long-lived
/// streams cannot take the server from alice. (A second `GET` in one session replaces the
/// first, which ends, so one session holds at most one.)
#[test]
fn a_principal_cannot_hold_more_streams_than_its_slots() {
    let _serial = support::serial();
    let mut server = Launch::new().start();
    let addr = server.addr;
    let mut streams = Vec::new();
    let mut statuses = Vec::new();
    // The sessions first: once the streams hold his slots, bob's initialize is 429 too.
    let sessions: Vec<Session> = (0..60)
        .map(|n| {
            Session::open(addr, BOB, ALICE_BOUND)
                .unwrap_or_else(|err| panic!("bob's session {n}: {err}"))
        })
        .collect();
    for (n, bob) in sessions.into_iter().enumerate() {
        let mut conn = Conn::open(addr, Duration::from_secs(5)).expect("connect");
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {BOB}\r\n\
             Accept: text/event-stream\r\nMcp-Session-Id: {}\r\n\
             MCP-Protocol-Version: {}\r\n\r\n",
            bob.id,
            support::VERSION
        );
        conn.write_raw(request.as_bytes())
            .unwrap_or_else(|err| panic!("stream {n}: {err}"));
        let status = conn
            .read_head()
            .unwrap_or_else(|err| panic!("stream {n}: no answer head: {err}"));
        statuses.push(status);
        streams.push((conn, bob));
    }
    let open = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    eprintln!("bob's 60 GET streams: {open} open, {refused} refused 429");
    assert!(
        open == 32 && refused == 28,
        "bob's streams beyond his 32 slots are refused 429: {open} open, {refused} 429, {statuses:?}"
    );
    server.assert_serves_alice(ALICE_BOUND, "beside bob's 32 open streams");
    drop(streams);
    server.assert_no_panic();
}
