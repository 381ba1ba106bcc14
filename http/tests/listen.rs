//! `subscriptions/listen` on `mcp_http`, what the server keeps and when it ends: the bounds
//! (`MCP_TASKS_LISTEN_MAX_TASK_IDS`, `MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL`) with their
//! errors, a client that leaves taking everything of its listen with it (the count against
//! its bound, the routes, the store subscription, the task feeding the stream: the server's
//! debug log says what is left after each), the `SubscriptionsListenResult` at shutdown
//! after the ends of the tasks running there, and `406` for a client that does not take an
//! event stream.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::v2026::{Client, Listen, listen_params, meta};
use support::{ALICE, BOB, Launch, Server};

/// How long the server may take to notice a closed stream and clean up after it.
const CLEANUP: Duration = Duration::from_secs(5);

/// Waits until the server's log has a line containing `wanted`.
fn logged(server: &Server, wanted: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if server.stderr().contains(wanted) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The log line of the listen that ended last says this when nothing is left.
const NOTHING_LEFT: &str = "ended: 0 open, 0 routes, store subscription: none";

#[test]
fn listens_are_bounded_and_a_closed_one_leaves_nothing_behind() {
    let server = Launch::new()
        .env("MCP_TASKS_LISTEN_MAX_TASK_IDS", "3")
        .env("MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL", "2")
        .env("RUST_LOG", "info,mcp_tasks_server=debug")
        .start();
    let addr = server.addr;
    let mut alice = Client::open(addr, ALICE).expect("alice connects");
    let tasks: Vec<String> = (0..3).map(|_| alice.sleep_task(60_000)).collect();

    // Past the ids bound: -32602, naming it.
    let mut four = tasks.clone();
    four.push("another".into());
    let refused = Listen::refused(addr, ALICE, 1, &listen_params(&four, true), true);
    let message = refused.message().unwrap();
    assert_eq!(refused.status, 200, "{message}");
    assert_eq!(message["error"]["code"], -32602, "{message}");
    assert_eq!(message["error"]["data"]["limit"], 3, "{message}");

    // Two listens at most for alice; bob has a bound of his own.
    let mut open: Vec<Listen> = (0..2)
        .map(|n| {
            let mut listen = Listen::open(addr, ALICE, 10 + n, &listen_params(&tasks, true));
            let ack = listen.next_message().unwrap().expect("acknowledged");
            assert_eq!(ack["params"]["notifications"]["taskIds"], json!(tasks));
            listen
        })
        .collect();
    let refused = Listen::refused(addr, ALICE, 12, &listen_params(&tasks, true), true);
    let message = refused.message().unwrap();
    assert_eq!(message["error"]["code"], -32603, "{message}");
    assert_eq!(message["error"]["data"]["limit"], 2, "{message}");
    let mut bobs = Listen::open(addr, BOB, 13, &listen_params(&tasks, true));
    let ack = bobs.next_message().unwrap().expect("acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([]),
        "alice's tasks are not bob's"
    );

    // Alice closes one stream and opens others in its place, again and again: each
    // closed one gives its place back.
    for round in 0..20 {
        drop(open.pop());
        let deadline = Instant::now() + CLEANUP;
        let listen = loop {
            match Listen::start(addr, ALICE, 100 + round, &listen_params(&tasks, true), true) {
                Ok(Ok(mut listen)) => {
                    let ack = listen.next_message().unwrap().expect("acknowledged");
                    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
                    break listen;
                }
                Ok(Err(refused)) => {
                    let message = refused.message().unwrap();
                    assert_eq!(message["error"]["code"], -32603, "{message}");
                }
                Err(err) => panic!("round {round}: {err}"),
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: the closed listen kept its place"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        open.push(listen);
    }

    // Everyone leaves: nothing of any listen is left.
    drop((open, bobs));
    assert!(
        logged(&server, NOTHING_LEFT, CLEANUP),
        "the server kept something of the closed listens; its log:\n{}",
        support::tail(&server.stderr(), 20)
    );
    server.assert_no_panic();
}

#[test]
fn at_shutdown_a_listen_gets_the_ends_of_the_tasks_then_its_result() {
    let mut server = Launch::new().env("MCP_TASKS_SHUTDOWN_MS", "1000").start();
    let addr = server.addr;
    let mut alice = Client::open(addr, ALICE).expect("alice connects");
    let quick = alice.sleep_task(400);
    let long = alice.sleep_task(60_000);
    let mut listen = Listen::open(
        addr,
        ALICE,
        7,
        &listen_params(&[quick.clone(), long.clone()], true),
    );
    listen.set_timeout(Duration::from_secs(20));
    let ack = listen.next_message().unwrap().expect("acknowledged");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    std::thread::sleep(Duration::from_millis(200));
    server.signal(libc::SIGTERM);
    let mut messages = Vec::new();
    while let Some(message) = listen.next_message().expect("the stream reads to its end") {
        messages.push(message);
    }
    let last = messages.pop().expect("the stream ends with a message");
    assert_eq!(
        last,
        json!({"jsonrpc": "2.0", "id": 7, "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7}
        }}),
        "the listen's result closes the stream"
    );
    let ends: Vec<(String, String)> = messages
        .iter()
        .map(|message| {
            assert_eq!(message["method"], "notifications/tasks", "{message}");
            (
                message["params"]["taskId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                message["params"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [(quick, "completed".to_owned()), (long, "failed".to_owned())],
        "the quick task finished; the long one was failed at the deadline, before the result"
    );
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(
        status.is_some_and(|status| status.success()),
        "exits 0: {status:?}"
    );
    server.assert_no_panic();
}

#[test]
fn a_listen_needs_an_event_stream_and_the_extension() {
    let server = Launch::new().start();
    let params = listen_params(&["t".to_owned()], true);
    let refused = Listen::refused(server.addr, ALICE, 3, &params, false);
    let message = refused.message().unwrap();
    assert_eq!(refused.status, 406, "{message}");
    assert_eq!(message["id"], 3);
    assert_eq!(message["error"]["code"], -32600, "{message}");
    let refused = Listen::refused(
        server.addr,
        ALICE,
        4,
        &listen_params(&["t".to_owned()], false),
        true,
    );
    let message = refused.message().unwrap();
    assert_eq!(refused.status, 400, "{message}");
    assert_eq!(message["error"]["code"], -32021, "{message}");
    // Without `taskIds` the extension is not needed: an empty acknowledgement.
    let mut bare = Listen::open(
        server.addr,
        ALICE,
        5,
        &json!({"notifications": {}, "_meta": meta()}),
    );
    let ack = bare.next_message().unwrap().expect("acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({}));
}
