//! `mcp-tasks-admin --store http://…` against a real `mcp_http` on its in-process store
//! (`memory`, which no store URL reaches): tasks of two owners created through MCP, then
//! listed (filtered, paged), shown and cancelled through the server's admin API, and the
//! API's refusals (a wrong token, an unknown task) said in one line with exit code 1.
//! The server is the one `MCP_TASKS_HTTP_BIN` names, else one built now.
#![cfg(feature = "http")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use support::{admin, ok_json, stderr, stdout, task_ids};

mod support;

#[allow(dead_code)]
#[path = "../../servers/tests/support/mcp_http.rs"]
mod mcp_http;

const ADMIN_TOKEN: &str = "admin-secret-7f3a";

/// `mcp_http` with the console on, killed (and reaped) on drop.
struct Server {
    child: Child,
    /// `http://HOST:PORT` of `/mcp`.
    mcp: String,
    /// `http://HOST:PORT` of the console.
    console: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start() -> Self {
        let mut child = Command::new(mcp_http::build("admin-tests"))
            .env_clear()
            .env("MCP_TASKS_TOKENS", "alice=token-a,bob=token-b")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0")
            .env("MCP_TASKS_ADMIN_ADDR", "127.0.0.1:0")
            .env("MCP_TASKS_ADMIN_TOKENS", format!("ops={ADMIN_TOKEN}"))
            .env("MCP_TASKS_MAX_TASKS_PER_OWNER", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mcp_http starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut line = || lines.next().expect("a line").expect("UTF-8");
        let first = line();
        let mcp = first
            .strip_prefix("listening on ")
            .and_then(|url| url.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
            .to_owned();
        let second = line();
        let console = second
            .strip_prefix("operator's console on ")
            .map(|url| url.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| panic!("unexpected second line: {second:?}"));
        Server {
            child,
            mcp,
            console,
        }
    }

    /// POSTs one message to `/mcp` as the principal of `token`, in `session`.
    fn post(
        &self,
        token: &str,
        session: Option<&str>,
        message: &Value,
    ) -> reqwest::blocking::Response {
        let mut request = reqwest::blocking::Client::new()
            .post(format!("{}/mcp", self.mcp))
            .bearer_auth(token)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        request.send().expect("the server answers")
    }

    /// Creates a task of the principal of `token` that sleeps for a minute; its id.
    fn sleeping_task(&self, token: &str) -> String {
        let answer = self.post(
            token,
            None,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "admin-http", "version": "0"}
            }}),
        );
        assert_eq!(answer.status(), 200);
        let session = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .expect("initialize issues a session")
            .to_owned();
        let initialized = self.post(
            token,
            Some(&session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(initialized.status(), 202);
        let created = self.post(
            token,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "sleep", "arguments": {"ms": 60_000}, "task": {"ttl": 600_000}
            }}),
        );
        assert_eq!(created.status(), 200);
        let created: Value = serde_json::from_str(&created.text().expect("a body")).expect("JSON");
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
            .to_owned()
    }
}

fn token_file(dir: &Path, token: &str) -> String {
    let path = dir.join("admin-token");
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn the_console_reaches_a_servers_in_process_store_through_its_admin_api() {
    let server = Server::start();
    let url = server.console.clone();
    let url = url.as_str();
    let alices = [
        server.sleeping_task("token-a"),
        server.sleeping_task("token-a"),
    ];
    let bobs = [server.sleeping_task("token-b")];
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(dir.path(), ADMIN_TOKEN);
    let with_file = |args: &[&str]| {
        let mut all = vec!["--token-file", file.as_str()];
        all.extend_from_slice(args);
        admin(url, &[], &all)
    };

    // List: every owner's, by owner, by status, paged.
    let all = ok_json(&with_file(&["--json", "list"]));
    let mut listed = task_ids(&all);
    listed.sort();
    let mut created: Vec<String> = alices.iter().chain(&bobs).cloned().collect();
    created.sort();
    assert_eq!(listed, created);
    assert_eq!(all["nextCursor"], Value::Null);
    let of_bob = ok_json(&with_file(&["--json", "list", "--owner", "bob"]));
    assert_eq!(task_ids(&of_bob), bobs);
    assert_eq!(of_bob["tasks"][0]["owner"], "bob");
    let first = ok_json(&with_file(&[
        "--json", "list", "--status", "working", "--limit", "2",
    ]));
    assert_eq!(task_ids(&first).len(), 2);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("more follow")
        .to_owned();
    let rest = ok_json(&with_file(&[
        "--json", "list", "--status", "working", "--cursor", &cursor,
    ]));
    assert_eq!(task_ids(&rest).len(), 1);
    assert_eq!(rest["nextCursor"], Value::Null);
    let mut paged: Vec<String> = task_ids(&first)
        .into_iter()
        .chain(task_ids(&rest))
        .collect();
    paged.sort();
    assert_eq!(paged, created);
    // The table, with the token from the environment this time.
    let table = admin(url, &[("MCP_TASKS_ADMIN_TOKEN", ADMIN_TOKEN)], &["list"]);
    let table = stdout(&table);
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains("alice") && table.contains("bob") && table.contains("working"),
        "{table}"
    );
    assert!(table.contains("3 tasks; end of the store"), "{table}");
    // The other filters, sent as the API's parameters.
    let recent = ok_json(&with_file(&["--json", "list", "--newer-than", "1h"]));
    assert_eq!(task_ids(&recent).len(), 3);
    let old = ok_json(&with_file(&["--json", "list", "--older-than", "1h"]));
    assert_eq!(task_ids(&old), Vec::<String>::new());
    let held = ok_json(&with_file(&["--json", "list", "--holder", "somewhere"]));
    assert_eq!(task_ids(&held), Vec::<String>::new());

    // Show.
    let shown = ok_json(&with_file(&["--json", "show", &alices[0]]));
    assert_eq!(shown["taskId"], alices[0].as_str());
    assert_eq!(shown["owner"], "alice");
    assert_eq!(shown["status"], "working");
    assert_eq!(shown["tool"], "sleep");
    let shown = stdout(&with_file(&["show", &bobs[0]]));
    assert!(shown.contains("owner") && shown.contains("bob"), "{shown}");

    // Cancel one: recorded under the admin principal, and the task is cancelled.
    let done = ok_json(&with_file(&[
        "--json", "cancel", &alices[1], "--as", "someone",
    ]));
    assert_eq!(done[0]["taskId"], alices[1].as_str());
    assert_eq!(done[0]["to"], "cancelled");
    assert_eq!(done[0]["actor"], "ops");
    let shown = ok_json(&with_file(&["--json", "show", &alices[1]]));
    assert_eq!(shown["status"], "cancelled");
    let cancelled = ok_json(&with_file(&["--json", "list", "--status", "cancelled"]));
    assert_eq!(task_ids(&cancelled), vec![alices[1].clone()]);
    let others = ok_json(&with_file(&["--json", "show", &alices[0]]));
    assert_eq!(others["status"], "working");
    // Again: already finished, said, exit code 1; the other id still acted on.
    let again = with_file(&["cancel", &alices[1], &bobs[0], "--as", "ops"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("already `cancelled`"),
        "{}",
        stderr(&again)
    );
    assert!(stdout(&again).contains(&bobs[0]), "{}", stdout(&again));

    // An unknown task: the API's 404 in one line.
    let unknown_id = "00000000-0000-4000-8000-000000000000";
    let unknown = with_file(&["show", unknown_id]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown).trim(),
        format!("mcp-tasks-admin: no task `{unknown_id}` in the store")
    );
    let unknown = with_file(&["--json", "cancel", unknown_id, "--as", "ops"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        serde_json::from_slice::<Value>(&unknown.stdout).unwrap()[0]["kind"],
        "not_found"
    );

    // A wrong token, an MCP principal's token, no token at all.
    for token in ["not-the-token", "token-a"] {
        let refused = admin(url, &[("MCP_TASKS_ADMIN_TOKEN", token)], &["list"]);
        assert_eq!(refused.status.code(), Some(1));
        let said = stderr(&refused);
        assert!(
            said.starts_with("mcp-tasks-admin: the admin API at")
                && said.contains("refused the token (401)")
                && said.lines().count() == 1,
            "{said}"
        );
        assert!(!said.contains(token), "{said}");
    }
    let missing = admin(url, &[], &["list"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("--token-file"),
        "{}",
        stderr(&missing)
    );

    // Nothing listening there: one line, exit code 1.
    drop(server);
    let gone = with_file(&["list"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        stderr(&gone).contains("cannot reach the admin API"),
        "{}",
        stderr(&gone)
    );
}

#[test]
fn the_in_process_store_is_refused_with_the_way_to_reach_it() {
    let refused = admin("memory", &[], &["list"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = stderr(&refused);
    assert!(said.contains("--store http://HOST:PORT"), "{said}");
    let https = admin(
        "https://127.0.0.1:1",
        &[("MCP_TASKS_ADMIN_TOKEN", "x")],
        &["list"],
    );
    assert_eq!(https.status.code(), Some(2), "{}", stderr(&https));
}
