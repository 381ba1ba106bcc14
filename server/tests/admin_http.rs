//! The operator's console over HTTP (`mcp_tasks_server::http::admin`), in process: a
//! server on the in-process registry with one MCP principal (alice) and one admin
//! principal (ops), each on its own loopback listener; requests written by hand on
//! `TcpStream`s (one per request, `Connection: close`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mcp_tasks::{Owner, TaskRequest, TaskStore};
use mcp_tasks_server::Server;
use mcp_tasks_server::access::{Access, Tokens};
use mcp_tasks_server::http::{AdminSettings, Http, bind};
use serde_json::Value;

const ALICE: &str = "alice-token-0123456789";
const OPS: &str = "ops-token-0123456789";

/// What one request answered: its status, headers (lower-case names) and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}", self.body))
    }
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(text.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> Answer {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|value| vec![("Authorization", value)])
        .unwrap_or_default();
    request(addr, "GET", path, &headers, "")
}

fn post(addr: SocketAddr, path: &str, body: &str) -> Answer {
    let bearer = format!("Bearer {OPS}");
    request(
        addr,
        "POST",
        path,
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

/// A server with alice's MCP token and ops' admin token; answers the MCP and admin
/// addresses, and the store (the registry the builder opened).
async fn start() -> (
    SocketAddr,
    SocketAddr,
    std::sync::Arc<dyn mcp_tasks::admin::TaskAdmin>,
) {
    let server = Server::builder().build().expect("a server");
    let store = server
        .admin_store()
        .cloned()
        .expect("the registry as an admin store");
    let tokens = Tokens::parse(&format!("alice={ALICE}")).unwrap();
    let admin_tokens = Tokens::parse(&format!("ops={OPS}")).unwrap();
    let http =
        Http::new(Access::Tokens(tokens)).admin(AdminSettings::new("127.0.0.1:0", admin_tokens));
    let mut served = server.into_http(http);
    let admin = served
        .bind_admin()
        .await
        .unwrap()
        .expect("the console's address");
    let listener = bind("127.0.0.1:0").await.unwrap();
    let mcp = listener.local_addr().unwrap();
    tokio::spawn(served.serve_until(listener, std::future::pending()));
    (mcp, admin, store)
}

fn create(store: &dyn mcp_tasks::admin::TaskAdmin, owner: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            store
                .insert(&Owner::new(owner), TaskRequest::new(i as i64, "tools/call"))
                .unwrap()
                .id()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_wants_an_admin_token_and_the_mcp_endpoint_refuses_it() {
    let (mcp, admin, _store) = start().await;
    tokio::task::spawn_blocking(move || {
        let none = get(admin, "/api/tasks", None);
        assert_eq!(none.status, 401);
        assert!(
            none.head.contains("www-authenticate: bearer"),
            "{}",
            none.head
        );
        assert_eq!(none.json()["kind"], "unauthorized");
        assert_eq!(
            get(admin, "/api/tasks", Some(ALICE)).status,
            401,
            "an MCP token"
        );
        assert_eq!(get(admin, "/api/counts", Some("nonsense")).status, 401);
        assert_eq!(get(admin, "/api/tasks", Some(OPS)).status, 200);
        // The page itself holds no data: served without a token, under a strict policy.
        let page = get(admin, "/", None);
        assert_eq!(page.status, 200);
        assert!(
            page.head
                .contains("content-security-policy: default-src 'none'")
        );
        assert!(page.body.contains("<html"), "{}", page.body);
        // The MCP endpoint knows no admin token.
        let bearer = format!("Bearer {OPS}");
        let refused = request(
            mcp,
            "POST",
            "/mcp",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        );
        assert_eq!(refused.status, 401, "{}", refused.body);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_listed_shown_counted_and_cancelled_once() {
    let (_mcp, admin, store) = start().await;
    tokio::task::spawn_blocking(move || {
        let ids = create(&*store, "alice", 5);
        create(&*store, "bob", 1);
        // A task that runs once, naming its tool: listed and counted by it.
        let sleeper = store
            .insert(
                &Owner::new("bob"),
                TaskRequest::new(9, "tools/call").with_tool("sleep"),
            )
            .unwrap()
            .id()
            .to_string();
        let page = get(admin, "/api/tasks?limit=3", Some(OPS)).json();
        assert_eq!(page["tasks"].as_array().unwrap().len(), 3);
        let cursor = page["nextCursor"].as_str().expect("a next page").to_owned();
        let rest = get(
            admin,
            &format!("/api/tasks?limit=3&cursor={cursor}"),
            Some(OPS),
        )
        .json();
        assert_eq!(rest["tasks"].as_array().unwrap().len(), 3);
        let alice = get(admin, "/api/tasks?owner=alice&status=working", Some(OPS)).json();
        assert_eq!(alice["tasks"].as_array().unwrap().len(), 5);
        assert!(
            alice["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["owner"] == "alice")
        );

        let counts = get(admin, "/api/counts", Some(OPS)).json();
        assert_eq!(counts["total"], 7);
        assert_eq!(counts["byStatus"]["working"], 7);
        assert_eq!(counts["lastHour"]["created"][59], 7);
        assert_eq!(counts["byTool"], serde_json::json!({"sleep": 1}));
        let sleepers = get(admin, "/api/tasks?tool=sleep", Some(OPS)).json();
        assert_eq!(sleepers["tasks"][0]["taskId"], sleeper.as_str());
        assert_eq!(sleepers["tasks"][0]["tool"], "sleep");
        assert_eq!(sleepers["tasks"].as_array().unwrap().len(), 1);

        let shown = get(admin, &format!("/api/tasks/{}", ids[0]), Some(OPS));
        assert_eq!(shown.status, 200);
        assert_eq!(shown.json()["owner"], "alice");
        assert_eq!(get(admin, "/api/tasks/no-such-task", Some(OPS)).status, 404);

        let cancelled = post(admin, &format!("/api/tasks/{}/cancel", ids[0]), "{}");
        assert_eq!(cancelled.status, 200, "{}", cancelled.body);
        let record = cancelled.json();
        assert_eq!(
            (record["actor"].as_str(), record["to"].as_str()),
            (Some("ops"), Some("cancelled"))
        );
        let task = store.get(&Owner::new("alice"), &ids[0]).unwrap();
        assert_eq!(task.status().as_str(), "cancelled");
        assert!(task.status_message().unwrap_or_default().contains("ops"));

        let again = post(admin, &format!("/api/tasks/{}/cancel", ids[0]), "{}");
        assert_eq!(again.status, 409);
        assert_eq!(again.json()["kind"], "already_finished");
        assert_eq!(again.json()["status"], "cancelled");

        let failed = post(
            admin,
            &format!("/api/tasks/{}/fail", ids[1]),
            r#"{"reason":"<script>x</script>"}"#,
        );
        assert_eq!(failed.status, 200, "{}", failed.body);
        let no_reason = post(admin, &format!("/api/tasks/{}/fail", ids[2]), "{}");
        assert_eq!(
            (no_reason.status, no_reason.json()["parameter"].as_str()),
            (400, Some("reason"))
        );
        assert_eq!(
            post(admin, "/api/tasks/no-such-task/cancel", "{}").status,
            404
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_naming_what() {
    let (_mcp, admin, store) = start().await;
    tokio::task::spawn_blocking(move || {
        let ids = create(&*store, "alice", 1);
        let cursor = get(admin, "/api/tasks?cursor=not-a-cursor", Some(OPS));
        assert_eq!(cursor.status, 400);
        assert_eq!(cursor.json()["parameter"], "cursor");
        let status = get(admin, "/api/tasks?status=sleeping", Some(OPS));
        assert_eq!(
            (status.status, status.json()["parameter"].as_str()),
            (400, Some("status"))
        );
        assert_eq!(
            get(admin, "/api/tasks?limit=0", Some(OPS)).json()["parameter"],
            "limit"
        );
        assert_eq!(
            get(admin, "/api/tasks?colour=red", Some(OPS)).json()["parameter"],
            "colour"
        );
        // CSRF: an action is a POST of JSON; a GET or a form is refused, and changes nothing.
        let path = format!("/api/tasks/{}/cancel", ids[0]);
        assert_eq!(get(admin, &path, Some(OPS)).status, 405);
        let bearer = format!("Bearer {OPS}");
        let form = request(
            admin,
            "POST",
            &path,
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            "",
        );
        assert_eq!(form.status, 415);
        let foreign = request(
            admin,
            "POST",
            &path,
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
                ("Origin", "https://evil.example"),
            ],
            "{}",
        );
        assert_eq!(foreign.status, 403);
        let task = store.get(&Owner::new("alice"), &ids[0]).unwrap();
        assert_eq!(task.status().as_str(), "working");
        assert_eq!(get(admin, "/nowhere", Some(OPS)).status, 404);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_tells_each_creation_and_change() {
    let (_mcp, admin, store) = start().await;
    tokio::task::spawn_blocking(move || {
        let ids = create(&*store, "alice", 1);
        let mut stream = TcpStream::connect(admin).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        write!(
            stream,
            "GET /api/events HTTP/1.1\r\nHost: {admin}\r\nAuthorization: Bearer {OPS}\r\n\r\n"
        )
        .unwrap();
        let mut seen = String::new();
        let mut buf = [0_u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut cancelled = false;
        let mut created = None;
        while Instant::now() < deadline && !seen.contains("\"status\":\"cancelled\"") {
            if let Ok(n) = stream.read(&mut buf) {
                assert!(n > 0, "the stream closed: {seen}");
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            if !cancelled && seen.contains("event: ready") {
                let made = store
                    .insert(
                        &Owner::new("bob"),
                        TaskRequest::new(7, "tools/call").with_tool("sleep"),
                    )
                    .unwrap();
                created = Some(made.id().to_string());
                let _ = store.cancel(&Owner::new("alice"), &ids[0], None).unwrap();
                cancelled = true;
            }
        }
        // The new task is pushed too, before the cancel that followed it.
        let created = created.expect("created once the stream was ready");
        let at_creation = seen
            .find(&format!("\"taskId\":\"{created}\""))
            .unwrap_or_else(|| panic!("no event of the new task: {seen}"));
        let line = seen[..at_creation].rfind("data:").unwrap();
        let event = &seen[line..seen[at_creation..]
            .find('\n')
            .map_or(seen.len(), |n| at_creation + n)];
        assert!(event.contains("\"change\":\"created\""), "{seen}");
        assert!(event.contains("\"tool\":\"sleep\""), "{seen}");
        assert!(
            at_creation < seen.find("\"status\":\"cancelled\"").unwrap(),
            "{seen}"
        );
        assert!(
            seen.to_ascii_lowercase()
                .contains("content-type: text/event-stream"),
            "{seen}"
        );
        assert!(seen.contains("event: task"), "{seen}");
        assert!(
            seen.contains(&ids[0]) && seen.contains("\"status\":\"cancelled\""),
            "{seen}"
        );
    })
    .await
    .unwrap();
}

#[test]
fn an_admin_token_may_not_be_an_mcp_token() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = Server::builder().build().unwrap();
        let tokens = Tokens::parse(&format!("alice={ALICE}")).unwrap();
        let same = Tokens::parse(&format!("ops={ALICE}")).unwrap();
        let http = Http::new(Access::Tokens(tokens)).admin(AdminSettings::new("127.0.0.1:0", same));
        let served = server.into_http(http);
        let listener = bind("127.0.0.1:0").await.unwrap();
        let err = served
            .serve_until(listener, std::future::pending())
            .await
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("both an MCP principal's and an admin's"),
            "{err}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_drain_and_purge_on_the_registry() {
    let (_mcp, admin, store) = start().await;
    tokio::task::spawn_blocking(move || {
        let ids = create(&*store, "alice", 3);
        let instances = get(admin, "/api/instances", Some(OPS));
        assert_eq!(instances.status, 200);
        assert_eq!(instances.json()["instances"], serde_json::json!([]));
        // One process: no instance to drain.
        let drain = post(admin, "/api/instances/web-1/drain", "{}");
        assert_eq!(
            (drain.status, drain.json()["kind"].as_str()),
            (409, Some("no_instances"))
        );
        assert_eq!(
            get(admin, "/api/instances/web-1/drain", Some(OPS)).status,
            405
        );

        let _ = store.cancel(&Owner::new("alice"), &ids[0], None).unwrap();
        let _ = store.cancel(&Owner::new("alice"), &ids[1], None).unwrap();
        let kept = post(admin, "/api/purge", r#"{"olderThanMs": 3600000}"#).json();
        assert_eq!(
            (kept["examined"].as_u64(), kept["purged"].as_u64()),
            (Some(2), Some(0))
        );
        std::thread::sleep(Duration::from_millis(5));
        let purged = post(admin, "/api/purge", r#"{"olderThanMs": 1}"#);
        assert_eq!(purged.status, 200, "{}", purged.body);
        assert_eq!(purged.json()["purged"], 2);
        assert_eq!(purged.json()["actor"], "ops");
        assert!(store.get(&Owner::new("alice"), &ids[0]).is_err(), "purged");
        assert_eq!(
            store
                .get(&Owner::new("alice"), &ids[2])
                .unwrap()
                .status()
                .as_str(),
            "working"
        );

        // Bad input: named; CSRF rules as for the tasks' actions.
        for body in ["{}", r#"{"olderThanMs": -1}"#, r#"{"olderThanMs": "1h"}"#] {
            let bad = post(admin, "/api/purge", body);
            assert_eq!(
                (bad.status, bad.json()["parameter"].as_str()),
                (400, Some("olderThanMs")),
                "{body}"
            );
        }
        assert_eq!(get(admin, "/api/purge", Some(OPS)).status, 405);
        let bearer = format!("Bearer {OPS}");
        let form = request(
            admin,
            "POST",
            "/api/purge",
            &[("Authorization", &bearer), ("Content-Type", "text/plain")],
            r#"{"olderThanMs": 0}"#,
        );
        assert_eq!(form.status, 415);
        let foreign = request(
            admin,
            "POST",
            "/api/instances/web-1/drain",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
                ("Origin", "https://evil.example"),
            ],
            "{}",
        );
        assert_eq!(foreign.status, 403);
        let anonymous = request(
            admin,
            "POST",
            "/api/purge",
            &[("Content-Type", "application/json")],
            r#"{"olderThanMs": 0}"#,
        );
        assert_eq!(anonymous.status, 401);
        assert!(store.get(&Owner::new("alice"), &ids[2]).is_ok());
    })
    .await
    .unwrap();
}

/// Drain and undrain over HTTP on a shared store (SQLite in a temporary file): the
/// instance holding a redeliverable task is listed, drained (the task handed over, the
/// instance listed as draining), then undrained.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_are_drained_and_undrained_on_a_shared_store() {
    use mcp_tasks::Redelivery;

    let dir = std::env::temp_dir().join(format!(
        "mcp-tasks-admin-http-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let server = Server::builder()
        .store_url(format!("sqlite:{}", dir.join("tasks.db").display()))
        .build()
        .expect("a server on SQLite");
    let store = server.admin_store().cloned().expect("an admin store");
    let admin_tokens = Tokens::parse(&format!("ops={OPS}")).unwrap();
    let tokens = Tokens::parse(&format!("alice={ALICE}")).unwrap();
    let http =
        Http::new(Access::Tokens(tokens)).admin(AdminSettings::new("127.0.0.1:0", admin_tokens));
    let mut served = server.into_http(http);
    let admin = served.bind_admin().await.unwrap().expect("the console");
    let listener = bind("127.0.0.1:0").await.unwrap();
    tokio::spawn(served.serve_until(listener, std::future::pending()));
    tokio::task::spawn_blocking(move || {
        let serde_json::Value::Object(job) = serde_json::json!({"tool": "fetch"}) else {
            unreachable!()
        };
        let (task, _lease) = store
            .insert_leased(
                &Owner::new("alice"),
                TaskRequest::new(1, "tools/call").with_redelivery(Redelivery::new(3, job)),
            )
            .unwrap();
        let instances = get(admin, "/api/instances", Some(OPS)).json();
        let name = instances["instances"][0]["name"]
            .as_str()
            .expect("the instance holding the task")
            .to_owned();
        assert_eq!(instances["instances"][0]["tasks"], 1);
        assert_eq!(instances["instances"][0]["draining"], false);

        let drained = post(admin, &format!("/api/instances/{name}/drain"), "{}");
        assert_eq!(drained.status, 200, "{}", drained.body);
        let report = drained.json();
        assert_eq!(report["wasDraining"], false);
        assert_eq!(report["handedOver"][0]["taskId"], task.id().to_string());
        assert_eq!(report["handedOver"][0]["actor"], "ops");
        let instances = get(admin, "/api/instances", Some(OPS)).json();
        assert!(
            instances["instances"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["name"] == name.as_str() && i["draining"] == true),
            "{instances}"
        );
        let undrained = post(admin, &format!("/api/instances/{name}/undrain"), "{}").json();
        assert_eq!(undrained["wasDraining"], true);
        let again = post(admin, &format!("/api/instances/{name}/undrain"), "{}").json();
        assert_eq!(again["wasDraining"], false);
    })
    .await
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
