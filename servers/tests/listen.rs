//! `subscriptions/listen` with `notifications.taskIds` on both example servers, as a client
//! sees it: `stdio_server` over its pipes (the one channel) and `mcp_http` over HTTP/1.1
//! (a long-lived event stream answering the POST).
//!
//! Without Redis: one instance of each, alice's tasks listened to (the acknowledgement lists
//! only hers, unknown and foreign ids left out alike; one notification per change, in
//! order, the terminal one last and equal to `tasks/get`), `-32021` for a request that does
//! not declare the extension, and on stdio a cancelled listen that sends nothing more and
//! frees its place, and the result when stdin closes.
//!
//! With `--features redis`, on a throwaway `redis-server`: two instances of each transport
//! on one store, the tasks running on A and the listen on B. What B sends is checked
//! against every change the store published (a subscriber of the test's own): for each
//! task, B's notifications are that sequence from where the listen began, ending with the
//! terminal state.

mod support;

use std::collections::HashMap;
use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_tasks_servers::child::LineChild;
use serde_json::{Value, json};
use support::streamed::{self, Streamed};
use support::{Http, WAIT, ext_meta, routing_headers};

const TOKENS: &str = "alice=token-a,bob=token-b";
const ALICE: &str = "token-a";
const BOB: &str = "token-b";

/// `_meta` of a 2026-07-28 request that does not declare the extension.
fn bare_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn rpc(id: &Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn listen_params(task_ids: &[&str], declared: bool) -> Value {
    json!({
        "notifications": {"taskIds": task_ids},
        "_meta": if declared { ext_meta() } else { bare_meta() }
    })
}

/// A message's `params` without its `_meta` (a notification's task), or a result without
/// `resultType` and `_meta` (a `tasks/get`'s task).
fn task_of(value: &Value) -> Value {
    let mut task = value.clone();
    if let Some(object) = task.as_object_mut() {
        object.remove("_meta");
        object.remove("resultType");
    }
    task
}

fn is_terminal(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// One client of a server: requests on the 2026-07-28 wire, and one listen at a time.
enum Client {
    /// `mcp_http` at `addr` as the principal of `token`; `listen` is its open stream.
    Http {
        addr: String,
        token: &'static str,
        listen: Option<Streamed>,
    },
    /// `stdio_server`; messages read while waiting for an answer wait in `pending`.
    Stdio {
        child: LineChild,
        pending: std::collections::VecDeque<Value>,
        next_id: u64,
    },
}

impl Client {
    fn http(http: &Http, token: &'static str) -> Client {
        Client::Http {
            addr: http.addr().to_owned(),
            token,
            listen: None,
        }
    }

    /// `stdio_server` with `args`, its tasks owned by `owner`.
    fn stdio(args: &[&str], owner: &str) -> Client {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stdio_server"));
        command
            .args(args)
            .env_remove("MCP_TASKS_CONFORMANCE")
            .env_remove("MCP_TASKS_REDIS_URL")
            .env("MCP_TASKS_OWNER", owner)
            .env("MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL", "1");
        Client::Stdio {
            child: LineChild::spawn_command(command),
            pending: Default::default(),
            next_id: 100,
        }
    }

    /// The head of a 2026-07-28 POST of `body` as `token` (without the final CRLF); the
    /// connection closes after the answer (or the stream).
    fn head(token: &str, body: &str) -> String {
        format!(
            "POST /mcp HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\n{}Connection: close",
            routing_headers(body)
        )
    }

    /// Sends a request and returns its response message (and the HTTP status, over HTTP).
    fn call(&mut self, method: &str, params: Value) -> (Option<u16>, Value) {
        match self {
            Client::Http { addr, token, .. } => {
                let body = rpc(&json!(1), method, params);
                let mut answer = streamed::send(addr, &Self::head(token, &body), &body);
                let mut text = String::new();
                answer.body.read_to_string(&mut text).expect("the answer");
                let message = serde_json::from_str(&text)
                    .unwrap_or_else(|err| panic!("{method}: not JSON ({err}): {text}"));
                (Some(answer.status), message)
            }
            Client::Stdio {
                child,
                pending,
                next_id,
            } => {
                *next_id += 1;
                let id = json!(*next_id);
                child.send_line(rpc(&id, method, params).as_bytes());
                loop {
                    let message = read_line(child);
                    if message.get("method").is_none() && message["id"] == id {
                        return (None, message);
                    }
                    pending.push_back(message);
                }
            }
        }
    }

    /// The result of a request that must succeed.
    fn result(&mut self, method: &str, params: Value) -> Value {
        let (status, message) = self.call(method, params);
        assert!(
            status.is_none_or(|s| s == 200) && message.get("result").is_some(),
            "{method}: HTTP {status:?}: {message}"
        );
        message["result"].clone()
    }

    /// Creates a task: a declared `tools/call` of `tool` with `arguments`; its id.
    fn create(&mut self, tool: &str, arguments: Value) -> String {
        let created = self.result(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": ext_meta()}),
        );
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().expect("a task id").to_owned()
    }

    /// Sends the listen request `id` with `params`; returns its first message (the
    /// acknowledgement, or an error response) and the HTTP status.
    fn listen(&mut self, id: u64, params: Value) -> (Option<u16>, Value) {
        let body = rpc(&json!(id), "subscriptions/listen", params);
        match self {
            Client::Http {
                addr,
                token,
                listen,
            } => {
                let mut stream = streamed::send(addr, &Self::head(token, &body), &body);
                let status = stream.status;
                let first = if stream
                    .header("content-type")
                    .is_some_and(|t| t.starts_with("text/event-stream"))
                {
                    let data = stream.next_data().expect("the acknowledgement");
                    *listen = Some(stream);
                    serde_json::from_str(&data).expect("JSON")
                } else {
                    let mut text = String::new();
                    stream.body.read_to_string(&mut text).expect("the answer");
                    serde_json::from_str(&text).expect("JSON")
                };
                (Some(status), first)
            }
            Client::Stdio { child, pending, .. } => {
                child.send_line(body.as_bytes());
                loop {
                    let message = read_line(child);
                    let mine = message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
                        == json!(id)
                        || (message.get("method").is_none() && message["id"] == json!(id));
                    if mine {
                        return (None, message);
                    }
                    pending.push_back(message);
                }
            }
        }
    }

    /// The next message of the open listen (a notification, or the listen's result).
    fn next_listened(&mut self) -> Value {
        match self {
            Client::Http { listen, .. } => {
                let stream = listen.as_mut().expect("a listen is open");
                let data = stream.next_data().expect("the stream goes on");
                serde_json::from_str(&data).expect("JSON")
            }
            Client::Stdio { child, pending, .. } => {
                pending.pop_front().unwrap_or_else(|| read_line(child))
            }
        }
    }

    /// Closes the listen (HTTP: the connection; stdio: `notifications/cancelled`).
    fn leave(&mut self, id: u64) {
        match self {
            Client::Http { listen, .. } => *listen = None,
            Client::Stdio { child, .. } => child.send_line(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": id, "reason": "done"}})
                .to_string()
                .as_bytes(),
            ),
        }
    }
}

fn read_line(child: &mut LineChild) -> Value {
    let line = child
        .line_within(WAIT)
        .expect("the server writes a line within 20 s");
    serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
}

/// What a listen delivered for each task, by id.
type Delivered = HashMap<String, Vec<Value>>;

/// Reads the listen `id` until every task of `tasks` reached a terminal status (bounded by
/// `within`), checking each message's form: `notifications/tasks` carrying the subscription
/// id, of an acknowledged task, nothing after a task's terminal state.
fn follow(client: &mut Client, id: u64, tasks: &[&str], within: Duration) -> Delivered {
    let deadline = Instant::now() + within;
    let mut delivered = Delivered::new();
    let done = |delivered: &Delivered| {
        tasks.iter().all(|task| {
            delivered
                .get(*task)
                .and_then(|seen| seen.last())
                .is_some_and(is_terminal)
        })
    };
    while !done(&delivered) {
        assert!(
            Instant::now() < deadline,
            "not every task ended: {delivered:?}"
        );
        let message = client.next_listened();
        assert_eq!(message["method"], "notifications/tasks", "{message}");
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(id),
            "{message}"
        );
        assert!(message["params"].get("resultType").is_none(), "{message}");
        let task = task_of(&message["params"]);
        let task_id = task["taskId"].as_str().expect("a task id").to_owned();
        assert!(
            tasks.contains(&task_id.as_str()),
            "an unacknowledged task: {message}"
        );
        let seen = delivered.entry(task_id).or_default();
        assert!(
            !seen.last().is_some_and(is_terminal),
            "a change after the terminal state: {message}"
        );
        seen.push(task);
    }
    delivered
}

/// The acknowledged ids of an acknowledgement.
fn acknowledged(ack: &Value, id: u64) -> Vec<String> {
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(id),
        "{ack}"
    );
    ack["params"]["notifications"]["taskIds"]
        .as_array()
        .expect("taskIds")
        .iter()
        .map(|id| id.as_str().expect("a string").to_owned())
        .collect()
}

/// Answers the `confirm` task `task` once it asks, through `client` (over stdio the
/// notifications read meanwhile wait for the listen's reader; over HTTP each request is a
/// connection of its own).
fn answer_confirm(client: &mut Client, task: &str) {
    let mut asked = Value::Null;
    let deadline = Instant::now() + WAIT;
    while asked.is_null() {
        assert!(Instant::now() < deadline, "confirm never asked");
        let got = client.result("tasks/get", json!({"taskId": task, "_meta": ext_meta()}));
        if got["status"] == "input_required" {
            asked = got["inputRequests"]["confirm"].clone();
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    client.result(
        "tasks/update",
        json!({
            "taskId": task,
            "inputResponses": {"confirm": {"action": "accept", "content": {"answer": "yes"}}},
            "_meta": ext_meta()
        }),
    );
}

/// Each task's last notification is what `tasks/get` answers now.
fn ends_as_tasks_get(client: &mut Client, delivered: &Delivered) {
    for (task, seen) in delivered {
        let got = client.result("tasks/get", json!({"taskId": task, "_meta": ext_meta()}));
        assert_eq!(seen.last(), Some(&task_of(&got)), "task {task}");
    }
}

/// The single-instance scenario over one server: alice's tasks, bob's task and an unknown
/// id listened to by alice. `bob` is `None` where the transport has one owner (stdio).
fn one_instance(alice: &mut Client, bob: Option<&mut Client>) {
    let sleeps = [
        alice.create("sleep", json!({"ms": 1500})),
        alice.create("sleep", json!({"ms": 1000})),
    ];
    let confirm = alice.create("confirm", json!({"question": "go?"}));
    let foreign = bob.map(|bob| bob.create("sleep", json!({"ms": 300})));
    let unknown = uuid::Uuid::new_v4().to_string();
    let mut asked: Vec<&str> = vec![&sleeps[0], &unknown, &sleeps[1], &confirm];
    asked.extend(foreign.as_deref());
    let (status, ack) = alice.listen(7, listen_params(&asked, true));
    assert!(status.is_none_or(|s| s == 200), "{ack}");
    let mine = [sleeps[0].as_str(), sleeps[1].as_str(), confirm.as_str()];
    assert_eq!(
        acknowledged(&ack, 7),
        mine,
        "only alice's ids, in the order asked"
    );
    answer_confirm(alice, &confirm);
    let delivered = follow(alice, 7, &mine, WAIT);
    for task in &sleeps {
        let seen = &delivered[task];
        assert_eq!(seen.len(), 1, "a sleep changes once: {seen:?}");
        assert_eq!(seen[0]["result"]["content"][0]["type"], "text");
    }
    let statuses: Vec<&str> = delivered[&confirm]
        .iter()
        .filter_map(|task| task["status"].as_str())
        .collect();
    assert_eq!(statuses.last(), Some(&"completed"), "{statuses:?}");
    let at = |task: &Value| {
        task["lastUpdatedAt"]
            .as_str()
            .and_then(|at| mcp_tasks::Timestamp::parse(at).ok())
            .unwrap_or_else(|| panic!("no lastUpdatedAt: {task}"))
    };
    for pair in delivered[&confirm].windows(2) {
        assert!(at(&pair[0]) <= at(&pair[1]), "in order: {pair:?}");
    }
    ends_as_tasks_get(alice, &delivered);
    alice.leave(7);
}

#[test]
fn a_listen_over_http_gets_its_owners_changes_and_nothing_of_others() {
    let http = Http::start_with(&[("MCP_TASKS_TOKENS", TOKENS)]);
    let mut alice = Client::http(&http, ALICE);
    let mut bob = Client::http(&http, BOB);
    one_instance(&mut alice, Some(&mut bob));

    // Unknown and foreign ids are acknowledged alike: not at all.
    let theirs = bob.create("sleep", json!({"ms": 10}));
    let unknown = uuid::Uuid::new_v4().to_string();
    let mut acks = Vec::new();
    for (n, id) in [&theirs, &unknown].into_iter().enumerate() {
        let mut client = Client::http(&http, ALICE);
        let (status, ack) = client.listen(20 + n as u64, listen_params(&[id], true));
        assert_eq!(status, Some(200));
        assert_eq!(acknowledged(&ack, 20 + n as u64), Vec::<String>::new());
        acks.push(task_of(&ack["params"]));
    }
    assert_eq!(
        acks[0], acks[1],
        "nothing tells a foreign id from an unknown one"
    );

    // Task notifications need the extension declared on the listen request.
    let (status, refused) = alice.listen(30, listen_params(&[&theirs], false));
    assert_eq!(status, Some(400), "{refused}");
    assert_eq!(refused["id"], 30);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}),
    );
}

#[test]
fn a_listen_over_stdio_shares_the_channel_and_ends_cleanly() {
    let mut alice = Client::stdio(&[], "alice");
    one_instance(&mut alice, None);

    // The listen was cancelled above: its place is free again (one per principal here),
    // once its thread has ended.
    let task = alice.create("sleep", json!({"ms": 200}));
    let deadline = Instant::now() + WAIT;
    let ack = loop {
        let (_, first) = alice.listen(8, listen_params(&[&task], true));
        if first.get("error").is_none() {
            break first;
        }
        assert_eq!(first["error"]["code"], -32603, "{first}");
        assert!(
            Instant::now() < deadline,
            "the cancelled listen kept its place"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(acknowledged(&ack, 8), std::slice::from_ref(&task));
    // A second listen is past the bound of one, with a clear error.
    let (_, refused) = alice.listen(9, listen_params(&[], true));
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], 1, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too many subscriptions")),
        "{refused}"
    );
    let (_, refused) = alice.listen(10, listen_params(&[&task], false));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    let delivered = follow(&mut alice, 8, &[&task], WAIT);
    assert_eq!(delivered[&task].len(), 1);
    // stdin closes: the open listen ends with its result, then the server exits.
    let Client::Stdio { mut child, .. } = alice else {
        panic!("a stdio client")
    };
    child.close_stdin();
    let result = read_line(&mut child);
    assert_eq!(
        result,
        json!({"jsonrpc": "2.0", "id": 8, "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 8}
        }})
    );
}

/// Two instances on one Redis: tasks run on A (alice's, and one of bob's), alice listens
/// on B.
#[cfg(feature = "redis")]
mod shared {
    use std::sync::{Arc, Mutex};

    use mcp_tasks::TaskStore;
    use mcp_tasks::ext::DetailedTask;
    use mcp_tasks_server::mcp_tasks_redis::RedisTaskStore;
    use mcp_tasks_test_support::redis::RedisServer;

    use super::*;

    /// Every change the store publishes, per task, as the detailed task.
    fn record(url: &str) -> (RedisTaskStore, Arc<Mutex<Delivered>>) {
        let store = RedisTaskStore::builder(url)
            .build()
            .expect("the test's store");
        let changes = Arc::new(Mutex::new(Delivered::new()));
        let sink = Arc::clone(&changes);
        store.subscribe(move |change| {
            let task = serde_json::to_value(DetailedTask::from(&change.task)).expect("JSON");
            sink.lock()
                .unwrap()
                .entry(change.task.id().to_string())
                .or_default()
                .push(task);
        });
        (store, changes)
    }

    /// The scenario: `a` (alice on A) runs two sleeps and a confirm, `bob` (on A) a sleep;
    /// alice listens on B (`b`) and answers the confirm through B.
    fn across(a: &mut Client, bob: &mut Client, b: &mut Client, url: &str) {
        let (_store, published) = record(url);
        let sleeps = [
            a.create("sleep", json!({"ms": 2500})),
            a.create("sleep", json!({"ms": 2000})),
        ];
        let confirm = a.create("confirm", json!({"question": "go?"}));
        let foreign = bob.create("sleep", json!({"ms": 300}));
        let unknown = uuid::Uuid::new_v4().to_string();
        let (status, ack) = b.listen(
            11,
            listen_params(
                &[&foreign, &sleeps[0], &unknown, &confirm, &sleeps[1]],
                true,
            ),
        );
        assert!(status.is_none_or(|s| s == 200), "{ack}");
        let mine = [sleeps[0].as_str(), confirm.as_str(), sleeps[1].as_str()];
        assert_eq!(acknowledged(&ack, 11), mine);
        answer_confirm(b, &confirm);
        let delivered = follow(b, 11, &mine, 2 * WAIT);
        // The test's own subscriber hears each change beside B's: give it the moment it
        // may lag behind B's delivery (bounded) before comparing.
        let heard_all = |published: &Delivered| {
            mine.iter().all(|task| {
                published
                    .get(*task)
                    .and_then(|changes| changes.last())
                    .is_some_and(|last| {
                        matches!(
                            last["status"].as_str(),
                            Some("completed" | "failed" | "cancelled")
                        )
                    })
            })
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !heard_all(&published.lock().unwrap()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let published = published.lock().unwrap().clone();
        assert!(
            published.contains_key(&foreign),
            "bob's task changed meanwhile, and B said nothing of it"
        );
        for task in mine {
            let all = &published[task];
            let seen = &delivered[task];
            // From where the listen began, every change, in order: only a change made
            // before the acknowledgement (the confirm asking) may be missing.
            assert!(
                all.ends_with(seen) && seen.len() + 1 >= all.len(),
                "task {task}: B sent {seen:#?}\nthe store published {all:#?}"
            );
            assert!(seen.last().is_some_and(is_terminal));
        }
        assert_eq!(delivered[sleeps[0].as_str()].len(), 1);
        assert!(
            delivered[&confirm].len() >= 2,
            "the confirm resumes, then completes: {:?}",
            delivered[&confirm]
        );
        ends_as_tasks_get(b, &delivered);
        eprintln!(
            "listen across instances: {} changes of 3 tasks run on A, all delivered by B",
            delivered.values().map(Vec::len).sum::<usize>()
        );
    }

    #[test]
    fn a_listen_on_http_instance_b_follows_tasks_running_on_a() {
        let Some(redis) = RedisServer::start() else {
            return;
        };
        let url = redis.url();
        let env = [
            ("MCP_TASKS_TOKENS", TOKENS),
            ("MCP_TASKS_REDIS_URL", url.as_str()),
        ];
        let (a, b) = (Http::start_with(&env), Http::start_with(&env));
        across(
            &mut Client::http(&a, ALICE),
            &mut Client::http(&a, BOB),
            &mut Client::http(&b, ALICE),
            &url,
        );
    }

    #[test]
    fn a_listen_on_stdio_instance_b_follows_tasks_running_on_a() {
        let Some(redis) = RedisServer::start() else {
            return;
        };
        let url = redis.url();
        let args = ["--redis", url.as_str()];
        across(
            &mut Client::stdio(&args, "alice"),
            &mut Client::stdio(&args, "bob"),
            &mut Client::stdio(&args, "alice"),
            &url,
        );
    }
}
