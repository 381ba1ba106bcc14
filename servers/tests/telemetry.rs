//! What an operator sees (feature `otel`): the spans and metrics of the example server,
//! recorded by OpenTelemetry's in-memory exporters, asserted attribute by attribute; and
//! one trace across two instances for a task created on one and finished on the other
//! (two `Server`s over one store that hands tasks over as a shared store does).
#![cfg(feature = "otel")]

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use mcp_tasks::{Owner, RequestId, TaskStore};
use mcp_tasks_server::server::{Elicitation, Reply, Server, Store};
use mcp_tasks_server::telemetry::Transport;
use mcp_tasks_server::telemetry::mcp_tasks_otel::testing::{Recorder, attr};
use mcp_tasks_server::telemetry::opentelemetry::trace::{SpanKind, Status};
use mcp_tasks_servers::tools;
use mcp_tasks_test_support::handing::HandingRegistry;
use serde_json::{Value, json};

/// The client's span: the parent every server span of its requests must name.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// A server of the example tools over `store` recording into `recorder`.
fn server(recorder: &Recorder, store: Store, shared: bool) -> Server {
    let builder = Server::builder()
        .tools(tools::examples())
        .telemetry(recorder.telemetry());
    let builder = if shared {
        builder.shared_store(store)
    } else {
        builder.store(store)
    };
    builder.build().expect("the example server")
}

/// A recorder for `transport`, and a server on a fresh registry recording into it.
fn recorded(transport: Transport) -> (Recorder, Server) {
    let recorder = Recorder::new(transport.as_str());
    let store = Arc::new(mcp_tasks::TaskRegistry::default());
    let server = server(&recorder, store, false);
    (recorder, server)
}

/// A 2026-07-28 `_meta` declaring the tasks extension, carrying the client's trace.
fn traced_ext(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01"),
        "tracestate": "rojo=00f067aa0ba902b7",
        "baggage": "tenant=acme"
    });
    params
}

fn answer(reply: Reply) -> Result<Value, mcp_tasks::JsonRpcError> {
    match reply {
        Reply::Now(answer) => answer,
        Reply::Later(work) => work.run_here(Arc::new(mcp_tasks_server::peer::Mute)),
        Reply::ThenRun(created, work) => {
            work.run_here();
            Ok(created.to_value().expect("the answer reads back"))
        }
    }
}

/// A `tools/call` that runs as a task: the request's span is the client's child and
/// names the tool and the task; the work is its child, in the same trace, and ends with
/// the task's status; a later `tasks/get` (in a trace of its own) links to the work's.
#[test]
fn a_task_is_one_trace_from_the_call_to_its_end_and_polls_link_to_it() {
    let (recorder, server) = recorded(Transport::Http);
    let owner = Owner::new("alice");
    let params = traced_ext(json!({"name": "sleep", "arguments": {"ms": 5}}));
    let reply = server.request(
        &owner,
        &RequestId::from(7),
        "tools/call",
        Some(params),
        Elicitation::Unreachable,
    );
    let created = answer(reply).expect("a CreateTaskResult");
    let task = created["taskId"].as_str().expect("a task id").to_owned();

    let call = recorder.span("tools/call sleep");
    assert_eq!(call.span_kind, SpanKind::Server);
    assert_eq!(call.span_context.trace_id().to_string(), TRACE);
    assert_eq!(call.parent_span_id.to_string(), CLIENT_SPAN);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", "2026-07-28"),
        ("gen_ai.tool.name", "sleep"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "7"),
        ("network.transport", "tcp"),
        ("network.protocol.name", "http"),
        ("mcp.task.id", task.as_str()),
        ("mcp.task.status", "working"),
    ] {
        assert_eq!(
            attr(&call, key).as_deref(),
            Some(value),
            "{key} on {call:?}"
        );
    }
    assert_eq!(attr(&call, "mcp.session.id"), None, "never on 2026-07-28");
    assert_eq!(attr(&call, "error.type"), None);

    let work = recorder.span("execute_tool sleep");
    assert_eq!(work.span_kind, SpanKind::Internal);
    assert_eq!(work.span_context.trace_id().to_string(), TRACE);
    assert_eq!(
        work.parent_span_id,
        call.span_context.span_id(),
        "the work is the call's child"
    );
    assert_eq!(attr(&work, "mcp.task.id").as_deref(), Some(task.as_str()));
    assert_eq!(attr(&work, "mcp.task.attempt").as_deref(), Some("1"));
    assert_eq!(attr(&work, "mcp.task.status").as_deref(), Some("completed"));

    // The task keeps the call's context, with the client's baggage (never on the wire).
    let stored = server.store().get(&owner, &task).expect("the task");
    let kept = stored.trace_context().expect("a kept context");
    assert_eq!(kept.trace_id(), TRACE);
    assert!(
        kept.traceparent()
            .contains(&call.span_context.span_id().to_string())
    );
    assert_eq!(kept.baggage(), Some("tenant=acme"));

    // A poll in a trace of its own links to the task's.
    let get = json!({"taskId": task, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }});
    let polled = answer(server.request(
        &owner,
        &RequestId::from("poll-1"),
        "tasks/get",
        Some(get),
        Elicitation::Unreachable,
    ))
    .expect("the task");
    assert_eq!(polled["status"], "completed");
    let poll = recorder.span("tasks/get");
    assert_ne!(poll.span_context.trace_id().to_string(), TRACE);
    assert_eq!(attr(&poll, "jsonrpc.request.id").as_deref(), Some("poll-1"));
    assert_eq!(attr(&poll, "mcp.task.id").as_deref(), Some(task.as_str()));
    assert_eq!(attr(&poll, "mcp.task.status").as_deref(), Some("completed"));
    let links: Vec<_> = poll
        .links
        .iter()
        .map(|link| link.span_context.trace_id().to_string())
        .collect();
    assert_eq!(links, [TRACE], "tasks/get links to the task's trace");

    // Metrics: the conventions' duration, and the tasks'.
    assert_eq!(
        recorder.value(
            "mcp.server.operation.duration",
            &[
                ("mcp.method.name", "tools/call"),
                ("gen_ai.tool.name", "sleep"),
                ("mcp.protocol.version", "2026-07-28")
            ]
        ),
        1.0
    );
    assert_eq!(
        recorder.value(
            "mcp.server.operation.duration",
            &[("mcp.method.name", "tasks/get")]
        ),
        1.0
    );
    assert_eq!(
        recorder.value("mcp.task.created", &[("gen_ai.tool.name", "sleep")]),
        1.0
    );
    assert_eq!(
        recorder.value(
            "mcp.task.finished",
            &[
                ("gen_ai.tool.name", "sleep"),
                ("mcp.task.status", "completed")
            ]
        ),
        1.0
    );
    assert_eq!(
        recorder.value("mcp.task.duration", &[("mcp.task.status", "completed")]),
        1.0
    );
    assert_eq!(
        recorder.value("mcp.task.running", &[("gen_ai.tool.name", "sleep")]),
        0.0
    );
    let backend = [("mcp.task.store.backend", "TaskRegistry")];
    for operation in ["insert_leased", "get", "update"] {
        let count = recorder.value(
            "mcp.task.store.operation.duration",
            &[backend[0], ("mcp.task.store.operation", operation)],
        );
        assert!(count >= 1.0, "{operation}: {count}");
    }
}

/// Failures carry `error.type`: `tool_error` for a result with `isError`, the JSON-RPC
/// code (also as `rpc.response.status_code`) for an error; a 2025-11-25 request in a
/// session names it; an unknown method is `_OTHER` in metrics.
#[test]
fn failures_say_their_type_and_sessions_appear_only_where_they_exist() {
    let (recorder, server) = recorded(Transport::Stdio);
    let owner = Owner::new("bob");
    let call = |name: &str, id: i64| {
        let params = json!({"name": name, "arguments": {}});
        answer(server.request_in(
            &owner,
            &RequestId::from(id),
            "tools/call",
            Some(params),
            Elicitation::Undeclared,
            Some("s-1"),
        ))
    };
    let failed = call("fail", 1).expect("a tool result");
    assert_eq!(failed["isError"], true);
    let span = recorder.span("tools/call fail");
    assert_eq!(attr(&span, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(attr(&span, "rpc.response.status_code"), None);
    assert!(matches!(span.status, Status::Error { .. }));
    assert_eq!(attr(&span, "mcp.session.id").as_deref(), Some("s-1"));
    assert_eq!(
        attr(&span, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(attr(&span, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(attr(&span, "network.protocol.name"), None);

    let crashed = call("crash", 2).expect_err("a JSON-RPC error");
    let span = recorder.span("tools/call crash");
    let code = crashed.code.to_string();
    assert_eq!(attr(&span, "error.type"), Some(code.clone()));
    assert_eq!(attr(&span, "rpc.response.status_code"), Some(code.clone()));
    match &span.status {
        Status::Error { description } => assert_eq!(description.as_ref(), crashed.message),
        other => panic!("an error status, got {other:?}"),
    }

    let unknown = answer(server.request(
        &owner,
        &RequestId::from(3),
        "no/such",
        None,
        Elicitation::Undeclared,
    ))
    .expect_err("-32601");
    assert_eq!(unknown.code, -32601);
    assert_eq!(
        attr(&recorder.span("no/such"), "error.type").as_deref(),
        Some("-32601")
    );
    assert_eq!(
        recorder.value(
            "mcp.server.operation.duration",
            &[("mcp.method.name", "_OTHER"), ("error.type", "-32601")]
        ),
        1.0
    );
    assert_eq!(
        recorder.value(
            "mcp.server.operation.duration",
            &[("gen_ai.tool.name", "crash"), ("error.type", code.as_str())]
        ),
        1.0
    );
    // A task whose tool fails ends its work span with the type too.
    let params = json!({"name": "fail", "arguments": {}, "task": {}});
    let created = answer(server.request_in(
        &owner,
        &RequestId::from(4),
        "tools/call",
        Some(params),
        Elicitation::Undeclared,
        Some("s-1"),
    ))
    .expect("created");
    assert!(created["task"]["taskId"].is_string(), "{created}");
    let work = recorder.span("execute_tool fail");
    assert_eq!(attr(&work, "mcp.task.status").as_deref(), Some("failed"));
    assert_eq!(attr(&work, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(
        recorder.value(
            "mcp.task.finished",
            &[("gen_ai.tool.name", "fail"), ("mcp.task.status", "failed")]
        ),
        1.0
    );
}

/// A task created on one instance and finished on another is one trace: the client's
/// call, the first attempt on instance A, and the second attempt that instance B claimed
/// (its parent is the call's span, read from the task as stored).
#[test]
fn a_task_handed_over_to_another_instance_stays_in_its_trace() {
    let store = Arc::new(HandingRegistry::default());
    let (a, b) = (
        Recorder::new(Transport::Http.as_str()),
        Recorder::new(Transport::Http.as_str()),
    );
    let first = server(&a, Arc::clone(&store) as Store, true);
    let second = server(&b, Arc::clone(&store) as Store, true);
    let owner = Owner::new("carol");
    let params = traced_ext(json!({"name": "sleep", "arguments": {"ms": 300}}));
    let Reply::ThenRun(created, work) = first.request(
        &owner,
        &RequestId::from(1),
        "tools/call",
        Some(params),
        Elicitation::Unreachable,
    ) else {
        panic!("sleep runs as a task");
    };
    let task = created.task_id().to_string();
    let running = thread::spawn(move || work.run_here());
    thread::sleep(Duration::from_millis(50));
    assert!(store.hand_over(&owner, &task).expect("handed over"));
    let claimed = second
        .claim()
        .expect("a claim")
        .expect("the handed-over task");
    claimed.run();
    running.join().expect("the first attempt stops");
    assert_eq!(
        second
            .store()
            .get(&owner, &task)
            .expect("the task")
            .status(),
        mcp_tasks::TaskStatus::Completed
    );

    let call = a.span("tools/call sleep");
    let first_attempt = a.span("execute_tool sleep");
    let second_attempt = b.span("execute_tool sleep");
    for span in [&call, &first_attempt, &second_attempt] {
        assert_eq!(
            span.span_context.trace_id().to_string(),
            TRACE,
            "{}: one trace",
            span.name
        );
    }
    assert_eq!(
        attr(&first_attempt, "mcp.task.attempt").as_deref(),
        Some("1")
    );
    assert_eq!(
        attr(&second_attempt, "mcp.task.attempt").as_deref(),
        Some("2")
    );
    assert_eq!(
        second_attempt.parent_span_id,
        call.span_context.span_id(),
        "B continues A's call"
    );
    assert!(second_attempt.parent_span_is_remote);
    assert_eq!(
        attr(&second_attempt, "mcp.task.id").as_deref(),
        Some(task.as_str())
    );
    assert_eq!(
        attr(&second_attempt, "mcp.task.status").as_deref(),
        Some("completed")
    );
    assert_eq!(
        b.value("mcp.task.redeliveries", &[("gen_ai.tool.name", "sleep")]),
        1.0
    );
    assert_eq!(
        b.value(
            "mcp.task.store.operation.duration",
            &[
                ("mcp.task.store.backend", "HandingRegistry"),
                ("mcp.task.store.operation", "claim")
            ]
        ),
        1.0
    );
}

#[test]
fn open_listens_are_counted_while_their_streams_live() {
    use mcp_tasks::WatchLimits;
    use mcp_tasks_server::framing::Id;
    use mcp_tasks_server::listen::Listens;

    let (recorder, server) = recorded(Transport::Http);
    let listens = Listens::new(server.store().clone(), WatchLimits::default())
        .counted_by(server.telemetry().clone());
    let alice = Owner::new("alice");
    let params = json!({
        "notifications": {"taskIds": []},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        }
    });
    let open = |id: u64| {
        listens
            .open(
                &alice,
                &Id::parse(&id.to_string()).expect("an id"),
                Some(&params),
            )
            .expect("a listen")
    };
    let first = open(1);
    let second = open(2);
    assert_eq!(recorder.value("mcp.task.listen.subscriptions", &[]), 2.0);
    drop(first);
    assert_eq!(recorder.value("mcp.task.listen.subscriptions", &[]), 1.0);
    drop(second);
    assert_eq!(recorder.value("mcp.task.listen.subscriptions", &[]), 0.0);
}

/// How the store gauges' tests sample: often, all tasks, stalled as soon as a lease lapsed.
fn quick_scan() -> mcp_tasks_server::telemetry::StoreScan {
    mcp_tasks_server::telemetry::StoreScan {
        every: Duration::from_millis(40),
        max_tasks: 10_000,
        stalled_grace: Duration::ZERO,
    }
}

/// Waits (at most 10 s) until `ready` holds of `recorder`'s metrics.
fn until(recorder: &Recorder, what: &str, ready: impl Fn(&Recorder) -> bool) {
    let started = std::time::Instant::now();
    while !ready(recorder) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not within 10 s: {what}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Creates a task of `tool` with `arguments` for `owner` and answers its id and its work
/// (not run).
fn created_task(
    server: &Server,
    owner: &Owner,
    id: i64,
    tool: &str,
    arguments: Value,
) -> (String, mcp_tasks_server::work::Work) {
    let params = json!({"name": tool, "arguments": arguments, "task": {}});
    let Reply::ThenRun(created, work) = server.request(
        owner,
        &RequestId::from(id),
        "tools/call",
        Some(params),
        Elicitation::Undeclared,
    ) else {
        panic!("{tool} runs as a task");
    };
    let task = created.task_id().to_string();
    let answer = created.to_value().expect("the answer reads back");
    assert_eq!(answer["task"]["taskId"], task.as_str(), "{answer}");
    (task, work)
}

/// The store gauges over a task registry: tasks by status and tool across owners (every
/// task keeps its tool, though the registry keeps no job), the oldest working task's age.
#[test]
fn the_store_gauges_count_every_owners_tasks_by_status_and_tool() {
    let recorder = Recorder::new(Transport::Http.as_str());
    let server = Server::builder()
        .tools(tools::examples())
        .telemetry(recorder.telemetry())
        .store_scan(quick_scan())
        .build()
        .expect("the example server");
    let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
    let (_, done) = created_task(&server, &alice, 1, "sleep", json!({"ms": 1}));
    done.run_here();
    let (_, failed) = created_task(&server, &bob, 2, "fail", json!({}));
    failed.run_here();
    let (_, running) = created_task(&server, &bob, 3, "sleep", json!({"ms": 60_000}));
    let (cancelled, _kept) = created_task(&server, &alice, 4, "sleep", json!({"ms": 60_000}));
    let _ = server
        .store()
        .cancel(&alice, &cancelled, None)
        .expect("cancelled");
    thread::sleep(Duration::from_millis(50));
    let tasks = |recorder: &Recorder, status: &str, tool: &str| {
        recorder.value(
            "mcp.task.store.tasks",
            &[("mcp.task.status", status), ("gen_ai.tool.name", tool)],
        )
    };
    // A registry keeps no job; each task keeps its tool all the same.
    let by_tool = [
        ("working", "sleep"),
        ("completed", "sleep"),
        ("failed", "fail"),
        ("cancelled", "sleep"),
    ];
    until(&recorder, "one task in each status, by its tool", |r| {
        r.value("mcp.task.store.scan.tasks", &[]) == 4.0
            && by_tool
                .iter()
                .all(|(status, tool)| tasks(r, status, tool) == 1.0)
    });
    assert_eq!(recorder.value("mcp.task.store.tasks", &[]), 4.0);
    let age = recorder.value("mcp.task.store.oldest_working.age", &[]);
    assert!(age > 0.0 && age < 60.0, "oldest working age {age}");
    // A registry has no leases: nothing awaits a claim or stalls.
    assert_eq!(recorder.value("mcp.task.store.awaiting_claim", &[]), 0.0);
    assert_eq!(recorder.value("mcp.task.store.stalled", &[]), 0.0);
    assert_eq!(recorder.value("mcp.task.store.scan.truncated", &[]), 0.0);
    assert_eq!(recorder.value("mcp.task.store.scan.errors", &[]), 0.0);
    drop(running);
}

/// A scan capped below the store's tasks reads the unfinished first and says it stopped.
#[test]
fn a_capped_scan_reads_the_unfinished_tasks_first_and_says_it_was_truncated() {
    let recorder = Recorder::new(Transport::Http.as_str());
    let server = Server::builder()
        .tools(tools::examples())
        .telemetry(recorder.telemetry())
        .store_scan(mcp_tasks_server::telemetry::StoreScan {
            max_tasks: 2,
            ..quick_scan()
        })
        .build()
        .expect("the example server");
    let owner = Owner::new("alice");
    for n in 0..3 {
        let (_, done) = created_task(&server, &owner, n, "sleep", json!({"ms": 1}));
        done.run_here();
    }
    let (_, running) = created_task(&server, &owner, 9, "sleep", json!({"ms": 60_000}));
    until(&recorder, "a truncated scan", |r| {
        r.value("mcp.task.store.scan.truncated", &[]) == 1.0
            && r.value("mcp.task.store.scan.tasks", &[]) == 2.0
            && r.value("mcp.task.store.tasks", &[("mcp.task.status", "working")]) == 1.0
    });
    assert_eq!(
        recorder.value("mcp.task.store.tasks", &[("mcp.task.status", "working")]),
        1.0,
        "the working task is read first"
    );
    assert_eq!(
        recorder.value("mcp.task.store.tasks", &[("mcp.task.status", "completed")]),
        1.0
    );
    drop(running);
}

/// The store gauges over a shared Redis: tasks by status and tool across owners, a task
/// handed over and unclaimed (awaiting a claim, and stalled with no grace), one on its last
/// attempt (exhausted); then Redis stops: the scans fail and are counted, and the gauges
/// keep their last values (never zeros); back up, the scans work again.
#[cfg(feature = "redis")]
#[test]
fn the_store_gauges_see_claims_stalls_and_exhaustion_and_keep_their_values_when_redis_stops() {
    use mcp_tasks_server::store_url::{SharedStore, StoreSettings};
    use mcp_tasks_test_support::redis::RedisServer;

    let Some(mut redis) = RedisServer::start_aof() else {
        eprintln!("SKIPPED: no redis-server");
        return;
    };
    let url = redis.url();
    let recorder = Recorder::new(Transport::Http.as_str());
    let server = Server::builder()
        .tools(tools::examples())
        .telemetry(recorder.telemetry())
        .store_url(url.clone())
        .store_scan(quick_scan())
        .build()
        .expect("the example server on Redis");
    let admin = SharedStore::parse(&url)
        .expect("the URL")
        .open_admin(&StoreSettings::default(), "ops")
        .expect("an admin store");
    let (alice, bob, carol) = (Owner::new("alice"), Owner::new("bob"), Owner::new("carol"));
    let (_, done) = created_task(&server, &bob, 1, "sleep", json!({"ms": 1}));
    done.run_here();
    let (_, failed) = created_task(&server, &bob, 2, "fail", json!({}));
    failed.run_here();
    let (cancelled, _cancelled_work) =
        created_task(&server, &carol, 3, "sleep", json!({"ms": 60_000}));
    admin.cancel_task(&cancelled, "ops").expect("cancelled");
    // On its last attempt: handed over and claimed twice.
    let (last, _first_attempt) = created_task(&server, &alice, 4, "sleep", json!({"ms": 60_000}));
    let mut claims = Vec::new();
    for _ in 0..2 {
        admin.hand_over_task(&last, "ops").expect("handed over");
        let started = std::time::Instant::now();
        let claimed = loop {
            if let Some(claimed) = server.claim().expect("a claim") {
                break claimed;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "not claimable");
            thread::sleep(Duration::from_millis(20));
        };
        claims.push(claimed);
    }
    // Handed over and left unclaimed.
    let (waiting, _waiting_work) = created_task(&server, &alice, 5, "sleep", json!({"ms": 60_000}));
    admin.hand_over_task(&waiting, "ops").expect("handed over");

    let tasks = |recorder: &Recorder, status: &str, tool: &str| {
        recorder.value(
            "mcp.task.store.tasks",
            &[("mcp.task.status", status), ("gen_ai.tool.name", tool)],
        )
    };
    until(&recorder, "the handed-over task awaiting a claim", |r| {
        r.value("mcp.task.store.scan.tasks", &[]) == 5.0
            && r.value("mcp.task.store.awaiting_claim", &[]) == 1.0
            && r.value("mcp.task.store.stalled", &[]) == 1.0
    });
    assert_eq!(tasks(&recorder, "working", "sleep"), 2.0);
    assert_eq!(tasks(&recorder, "completed", "sleep"), 1.0);
    assert_eq!(tasks(&recorder, "cancelled", "sleep"), 1.0);
    assert_eq!(
        tasks(&recorder, "failed", "fail"),
        1.0,
        "fail runs once (no job), and keeps its tool"
    );
    assert_eq!(recorder.value("mcp.task.store.exhausted", &[]), 1.0);
    let age = recorder.value("mcp.task.store.oldest_working.age", &[]);
    assert!(
        (0.0..60.0).contains(&age) && age > 0.0,
        "oldest working age {age}"
    );
    assert_eq!(recorder.value("mcp.task.store.scan.errors", &[]), 0.0);

    // Redis stops: the scans fail, the gauges keep what they said.
    redis.stop();
    until(&recorder, "two failed scans", |r| {
        r.value("mcp.task.store.scan.errors", &[]) >= 2.0
    });
    assert_eq!(tasks(&recorder, "working", "sleep"), 2.0);
    assert_eq!(recorder.value("mcp.task.store.tasks", &[]), 5.0);
    assert_eq!(recorder.value("mcp.task.store.awaiting_claim", &[]), 1.0);
    assert_eq!(recorder.value("mcp.task.store.stalled", &[]), 1.0);
    assert_eq!(recorder.value("mcp.task.store.exhausted", &[]), 1.0);
    assert_eq!(recorder.value("mcp.task.store.scan.tasks", &[]), 5.0);

    // Back up (with what it had: AOF): the scans work again, the errors stay counted.
    redis.resume();
    let errors = recorder.value("mcp.task.store.scan.errors", &[]);
    let (_, again) = created_task(&server, &bob, 6, "sleep", json!({"ms": 1}));
    again.run_here();
    // (A scan running while it finished may have read it working: wait for the next.)
    until(&recorder, "a scan after the restart", |r| {
        r.value("mcp.task.store.scan.tasks", &[]) == 6.0 && tasks(r, "completed", "sleep") == 2.0
    });
    assert!(recorder.value("mcp.task.store.scan.errors", &[]) >= errors);
    drop(claims);
}

/// The sampler's cost, for the record (`--release -- --ignored --nocapture`): one scan of
/// 10,000 tasks on Redis (20 owners; a third working, the rest cancelled; no task has a
/// job), cold (every task's job read once) and warm (tools known), in time and Redis
/// commands (each a round trip: the store does not pipeline), with a plain pass over the
/// store's pages (no job reads) and an idle period as baselines.
#[cfg(feature = "redis")]
#[test]
#[ignore = "a measurement: run it with --release -- --ignored --nocapture"]
fn measure_one_scan_of_10000_tasks_on_redis() {
    use mcp_tasks::admin::SCAN_BATCH;
    use mcp_tasks::backend::TaskFilter;
    use mcp_tasks_server::store_url::{SharedStore, StoreSettings};
    use mcp_tasks_server::telemetry::sampler::Sampler;
    use mcp_tasks_test_support::redis::RedisServer;
    use std::time::Instant;

    let Some(redis) = RedisServer::start() else {
        eprintln!("SKIPPED: no redis-server");
        return;
    };
    let admin = SharedStore::parse(&redis.url())
        .expect("the URL")
        .open_admin(&StoreSettings::default(), "bench")
        .expect("a store");
    let owners: Vec<Owner> = (0..20).map(|n| Owner::new(format!("owner-{n}"))).collect();
    for n in 0..10_000_i64 {
        let owner = &owners[usize::try_from(n).expect("small") % owners.len()];
        let task = admin
            .insert(owner, mcp_tasks::TaskRequest::new(n, "tools/call"))
            .expect("inserted");
        if n % 3 != 0 {
            let _ = admin
                .cancel(owner, &task.id().to_string(), None)
                .expect("cancelled");
        }
    }
    // Every command the server ran, by name (those a script calls included).
    let commands = || -> std::collections::BTreeMap<String, u64> {
        redis
            .command(&["INFO", "commandstats"])
            .lines()
            .filter_map(|line| {
                let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                let calls = rest.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
                Some((name.to_owned(), calls.parse().ok()?))
            })
            .collect()
    };
    let measure = |what: &str, f: &mut dyn FnMut()| {
        let before = commands();
        let started = Instant::now();
        f();
        let took = started.elapsed();
        let after = commands();
        let mut sent: Vec<String> = after
            .iter()
            .filter(|(name, _)| name.as_str() != "info")
            .filter_map(|(name, calls)| {
                let delta = calls - before.get(name).copied().unwrap_or(0);
                (delta > 0).then(|| format!("{name}={delta}"))
            })
            .collect();
        sent.sort();
        eprintln!("{what}: {took:?}, Redis commands {}", sent.join(" "));
    };
    measure("idle 100 ms (baseline)", &mut || {
        thread::sleep(Duration::from_millis(100));
    });
    measure("ping (one round trip)", &mut || {
        let _ = redis.command(&["PING"]);
    });
    measure("pages only (baseline: clock + page_all)", &mut || {
        let _ = admin.clock().expect("the clock");
        let mut after = None;
        let mut read = 0;
        loop {
            let page = admin
                .scan(after, &TaskFilter::any(), SCAN_BATCH)
                .expect("a page");
            read += page.rows.len();
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(read, 10_000);
    });
    let mut sampler = Sampler::new(admin.clone(), quick_scan());
    measure("sampler scan, cold (every job read)", &mut || {
        let census = sampler.scan().expect("a census");
        assert_eq!(census.scanned, 10_000);
        assert!(!census.truncated);
    });
    measure("sampler scan, warm (tools known)", &mut || {
        let census = sampler.scan().expect("a census");
        assert_eq!(census.scanned, 10_000);
    });
    let mut capped = Sampler::new(
        admin,
        mcp_tasks_server::telemetry::StoreScan {
            max_tasks: 1_000,
            ..quick_scan()
        },
    );
    let _ = capped.scan().expect("a census");
    measure("sampler scan capped at 1,000, warm", &mut || {
        let census = capped.scan().expect("a census");
        assert!(census.truncated);
    });
}
