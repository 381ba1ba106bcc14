//! `mcp_http` pointed at a collector: a tiny OTLP/HTTP receiver in the test takes what
//! the server exports with `OTEL_EXPORTER_OTLP_ENDPOINT` set, decodes it as a collector
//! would (protobuf), and checks the spans of a task created with the client's
//! `traceparent` (the call, its work, the `tasks/result` of the session) and the
//! metrics, all flushed by a graceful SIGTERM.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::json;
use support::{ALICE, Conn, Launch, Session};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";
/// The trace of a client's HTTP instrumentation (the `traceparent` header).
const HEADER_TRACE: &str = "5c0ffee0d15ea5e5ba5eba11f00dcafe";
const HEADER_SPAN: &str = "1234567890abcdef";

/// What the receiver was sent: (path, body) per request.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on a free loopback port: answers 200 to every POST and keeps
/// the bodies. It stops with the test process.
fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
    let received: Received = Arc::default();
    let kept = Arc::clone(&received);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = Arc::clone(&kept);
            thread::spawn(move || serve(stream, &kept));
        }
    });
    (endpoint, received)
}

/// One keep-alive connection of the exporter.
fn serve(stream: TcpStream, kept: &Received) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut writer = match stream.try_clone() {
        Ok(writer) => writer,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        kept.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((path, body));
        let answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(n)) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn mcp_http_exports_the_spans_and_metrics_of_a_task_over_otlp() {
    let (endpoint, received) = receiver();
    let mut server = Launch::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "mcp-http-under-test")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "60000")
        .start();
    assert!(
        server
            .stderr()
            .contains("telemetry: spans and metrics exported over OTLP/HTTP")
            || {
                thread::sleep(Duration::from_millis(200));
                server.stderr().contains("exported over OTLP/HTTP")
            },
        "{}",
        server.stderr()
    );
    let mut session =
        Session::open(server.addr, ALICE, Duration::from_secs(10)).expect("a session");
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let created = session
        .request(
            "tools/call",
            json!({
                "name": "sleep",
                "arguments": {"ms": 20},
                "task": {},
                "_meta": {"traceparent": traceparent}
            }),
        )
        .expect("a task");
    let task = created["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let result = session
        .request("tasks/result", json!({"taskId": task}))
        .expect("its result");
    assert_eq!(result["isError"], false, "{result}");
    // A client with ordinary HTTP instrumentation: the W3C `traceparent` header, no `_meta`
    // trace; then both, where `_meta` wins.
    let header_traceparent = format!("00-{HEADER_TRACE}-{HEADER_SPAN}-01");
    let mut conn = Conn::open(server.addr, Duration::from_secs(10)).expect("connects");
    for (id, text, meta) in [
        (90, "from the header", json!({})),
        (91, "from _meta", json!({"traceparent": traceparent})),
    ] {
        let body = support::rpc(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}, "_meta": meta}),
        );
        let head = support::post_head(
            server.addr,
            Some(ALICE),
            Some(&session.id),
            Some(body.len() as u64),
        )
        .replace(
            "\r\n\r\n",
            &format!("\r\ntraceparent: {header_traceparent}\r\n\r\n"),
        );
        conn.write_raw(format!("{head}{body}").as_bytes())
            .expect("posted");
        let answer = conn.read_response().expect("answered");
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    // Graceful: the exporters flush as the process ends.
    server.signal(libc::SIGTERM);
    assert!(
        server.wait_exit(Duration::from_secs(20)).is_some(),
        "mcp_http exits on SIGTERM"
    );

    let deadline = Instant::now() + Duration::from_secs(5);
    let (mut spans, mut metrics, mut resource) = (Vec::new(), Vec::new(), HashMap::new());
    loop {
        spans.clear();
        metrics.clear();
        for (path, body) in received.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            match path.as_str() {
                "/v1/traces" => {
                    let request =
                        ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP traces");
                    for resource_spans in request.resource_spans {
                        if let Some(found) = &resource_spans.resource {
                            resource = attributes(&found.attributes);
                        }
                        for scope in resource_spans.scope_spans {
                            spans.extend(scope.spans);
                        }
                    }
                }
                "/v1/metrics" => {
                    let request =
                        ExportMetricsServiceRequest::decode(body.as_slice()).expect("OTLP metrics");
                    for resource_metrics in request.resource_metrics {
                        for scope in resource_metrics.scope_metrics {
                            metrics.extend(scope.metrics.into_iter().map(|metric| metric.name));
                        }
                    }
                }
                other => panic!("an OTLP path: {other}"),
            }
        }
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
        let complete = [
            "tools/call sleep",
            "execute_tool sleep",
            "tasks/result",
            "tools/call echo",
        ]
        .iter()
        .all(|name| names.contains(name))
            && metrics.iter().any(|name| name == "mcp.task.finished");
        if complete || Instant::now() > deadline {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let span = |name: &str| {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| {
                let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
                panic!("no span {name} exported; got {names:?}")
            })
    };
    assert_eq!(
        resource.get("service.name").map(String::as_str),
        Some("mcp-http-under-test")
    );
    let call = span("tools/call sleep");
    assert_eq!(hex(&call.trace_id), TRACE);
    assert_eq!(hex(&call.parent_span_id), CLIENT_SPAN);
    let call_attributes = attributes(&call.attributes);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", "2025-11-25"),
        ("gen_ai.tool.name", "sleep"),
        ("mcp.session.id", session.id.as_str()),
        ("mcp.task.id", task.as_str()),
    ] {
        assert_eq!(
            call_attributes.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    let echoes: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "tools/call echo")
        .collect();
    assert_eq!(echoes.len(), 2, "both echoes are spans");
    let traces: Vec<(String, String)> = echoes
        .iter()
        .map(|span| (hex(&span.trace_id), hex(&span.parent_span_id)))
        .collect();
    assert!(
        traces.contains(&(HEADER_TRACE.to_owned(), HEADER_SPAN.to_owned())),
        "the header's trace is joined without `_meta`: {traces:?}"
    );
    assert!(
        traces.contains(&(TRACE.to_owned(), CLIENT_SPAN.to_owned())),
        "`_meta` wins over the header: {traces:?}"
    );
    let work = span("execute_tool sleep");
    assert_eq!(
        hex(&work.trace_id),
        TRACE,
        "the work is in the caller's trace"
    );
    assert_eq!(work.parent_span_id, call.span_id);
    assert_eq!(
        attributes(&work.attributes)
            .get("mcp.task.status")
            .map(String::as_str),
        Some("completed")
    );
    let result = span("tasks/result");
    let result_attributes = attributes(&result.attributes);
    assert_eq!(result_attributes.get("mcp.task.id"), Some(&task));
    assert_eq!(result_attributes.get("mcp.session.id"), Some(&session.id));
    assert_eq!(
        result
            .links
            .iter()
            .map(|link| hex(&link.trace_id))
            .collect::<Vec<_>>(),
        [TRACE],
        "tasks/result links to the task's trace"
    );
    for metric in [
        "mcp.server.operation.duration",
        "mcp.task.created",
        "mcp.task.finished",
        "mcp.task.duration",
        "mcp.task.store.operation.duration",
    ] {
        assert!(
            metrics.iter().any(|name| name == metric),
            "{metric} in {metrics:?}"
        );
    }
}

/// `GET /metrics` with `MCP_TASKS_PROMETHEUS=1` (no collector): the metrics in
/// Prometheus' text format, behind the bearer token like `/mcp`, with the store gauges of
/// the sampler (`MCP_TASKS_METRICS_SCAN_MS`).
#[test]
fn mcp_http_serves_the_metrics_to_a_prometheus_scrape_behind_its_tokens() {
    let server = Launch::new()
        .env("MCP_TASKS_PROMETHEUS", "1")
        .env("MCP_TASKS_METRICS_SCAN_MS", "50")
        .start();
    let mut session =
        Session::open(server.addr, ALICE, Duration::from_secs(10)).expect("a session");
    let created = session
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
        )
        .expect("a task");
    let task = created["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    session
        .request("tasks/result", json!({"taskId": task}))
        .expect("its result");
    let scrape = |token: Option<&str>| {
        let mut conn = Conn::open(server.addr, Duration::from_secs(10)).expect("a connection");
        let authorization = token
            .map(|token| format!("Authorization: Bearer {token}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "GET /metrics HTTP/1.1\r\nHost: {}\r\n{authorization}Connection: close\r\n\r\n",
            server.addr
        );
        conn.write_raw(head.as_bytes()).expect("sent");
        conn.read_response().expect("an answer")
    };
    assert_eq!(scrape(None).status, 401, "the same access checks as /mcp");
    let answer = scrape(Some(ALICE));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    for expected in [
        "# TYPE mcp_server_operation_duration_seconds histogram",
        "mcp_task_created_total{",
        "# TYPE mcp_task_running gauge",
        "mcp_task_store_operation_duration_seconds_bucket{",
    ] {
        assert!(text.contains(expected), "{expected} in:\n{text}");
    }
    let created_line = text
        .lines()
        .find(|line| line.starts_with("mcp_task_created_total{"))
        .expect("a created line");
    assert!(
        created_line.contains("gen_ai_tool_name=\"sleep\"") && created_line.ends_with(" 1"),
        "{created_line}"
    );
    assert!(
        text.lines().any(
            |line| line.starts_with("mcp_server_operation_duration_seconds_count{")
                && line.contains("mcp_method_name=\"tools/call\"")
        ),
        "{text}"
    );

    // The store gauges: the completed task under its tool (every task keeps the tool it
    // runs, on every store), once a scan saw it.
    let started = Instant::now();
    let text = loop {
        let text = scrape(Some(ALICE)).text();
        let stored = text.lines().any(|line| {
            line.starts_with("mcp_task_store_tasks{")
                && line.contains("mcp_task_status=\"completed\"")
                && line.contains("gen_ai_tool_name=\"sleep\"")
                && line.ends_with(" 1")
        });
        if stored {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no store gauge in:\n{text}"
        );
        thread::sleep(Duration::from_millis(50));
    };
    for expected in [
        "# TYPE mcp_task_store_tasks gauge",
        "# TYPE mcp_task_store_oldest_working_age_seconds gauge",
        "mcp_task_store_oldest_working_age_seconds 0",
        "mcp_task_store_awaiting_claim 0",
        "mcp_task_store_stalled 0",
        "mcp_task_store_exhausted 0",
        "mcp_task_store_scan_tasks 1",
        "mcp_task_store_scan_truncated 0",
    ] {
        assert!(
            text.lines().any(|line| line == expected),
            "{expected} in:\n{text}"
        );
    }
}
