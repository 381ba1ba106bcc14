//! The example servers on a shared store (Redis, PostgreSQL or an SQLite file), for the
//! tests of each: a database of the test's own, `mcp_http` instances on it with a 2025-11-25 session, and
//! the checks both stores must pass (a store that is down at start-up, an instance killed
//! mid-task).

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub use mcp_tasks_server::store_url::Backend;
use mcp_tasks_server::store_url::{POSTGRES_SCHEMA_ENV, STORE_ENV, redacted};
use mcp_tasks_test_support::postgres;
use mcp_tasks_test_support::redis::RedisServer;
use serde_json::{Value, json};

use super::Http;

/// How long a server may take to give up on a store that is down: far above a store's
/// connect timeout, far below a hang.
pub const GIVE_UP: Duration = Duration::from_secs(15);

/// A shared store's database for one test: a `redis-server` of its own, a fresh schema
/// on the test process's PostgreSQL server (`postgres::shared_url`), or an SQLite file in
/// a fresh directory. Dropping it stops the `redis-server` and removes the SQLite file's
/// directory; a schema stays until the PostgreSQL server stops with the process.
pub struct Db {
    backend: Backend,
    url: String,
    schema: Option<String>,
    redis: Option<RedisServer>,
    dir: Option<std::path::PathBuf>,
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Db {
    /// A database for `backend`, or `None` (after a `SKIPPED` line) where its server is not
    /// installed.
    pub fn start(backend: Backend) -> Option<Db> {
        match backend {
            Backend::Redis => RedisServer::start().map(Db::on_redis),
            Backend::Postgres => Some(Db {
                backend,
                url: postgres::shared_url()?,
                schema: Some(format!("t{}", uuid::Uuid::new_v4().simple())),
                redis: None,
                dir: None,
            }),
            Backend::Sqlite => {
                let dir = std::env::temp_dir()
                    .join(format!("mcpt-sqlite-{}", uuid::Uuid::new_v4().simple()));
                std::fs::create_dir_all(&dir).expect("a directory for the SQLite file");
                Some(Db {
                    backend,
                    url: format!("sqlite:{}", dir.join("tasks.db").display()),
                    schema: None,
                    redis: None,
                    dir: Some(dir),
                })
            }
        }
    }

    /// The database of a `redis-server` the test started.
    pub fn on_redis(redis: RedisServer) -> Db {
        Db {
            backend: Backend::Redis,
            url: redis.url(),
            schema: None,
            redis: Some(redis),
            dir: None,
        }
    }

    /// The `redis-server` behind a Redis database (to stop and resume it).
    ///
    /// # Panics
    /// On a PostgreSQL database.
    pub fn redis(&mut self) -> &mut RedisServer {
        self.redis.as_mut().expect("a Redis database")
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The environment that points a server at this database: the backend's URL variable
    /// (for SQLite, `MCP_TASKS_STORE=sqlite:PATH`), and for PostgreSQL the schema.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let name = match self.backend {
            Backend::Sqlite => STORE_ENV,
            backend => backend.url_env(),
        };
        let mut env = vec![(name, self.url.clone())];
        if let Some(schema) = &self.schema {
            env.push((POSTGRES_SCHEMA_ENV, schema.clone()));
        }
        env
    }
}

/// Removes from `command` every variable that names a shared store (so only the test's
/// choice applies).
pub fn clear_store_env(command: &mut Command) -> &mut Command {
    for backend in Backend::ALL {
        command.env_remove(backend.url_env());
    }
    command
        .env_remove(STORE_ENV)
        .env_remove(POSTGRES_SCHEMA_ENV)
}

/// A child process, killed (and reaped) on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a server binary that should exit at once; returns its status, stdout and stderr.
pub fn run_to_exit(mut command: Command) -> (ExitStatus, String, String) {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server binary starts");
    let mut running = Running(child);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < GIVE_UP,
            "the server still runs after {GIVE_UP:?} without its store"
        );
        thread::sleep(Duration::from_millis(10));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let child = &mut running.0;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stdout, stderr)
}

/// A loopback port nothing listens on and nothing else may take while this lives: the
/// local end of a connection this holds open. A port only released after a bind would do
/// until another test's server (a PostgreSQL or `redis-server` of its own on a port that
/// was free a moment ago) took it, when a connection would reach that server instead of
/// being refused.
pub struct ClosedPort {
    /// The address, `127.0.0.1:PORT`.
    pub addr: String,
    /// The error connecting to it gives, as the OS words it.
    pub refused: String,
    _held: (TcpStream, TcpStream),
}

/// A [`ClosedPort`].
pub fn closed_port() -> ClosedPort {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    drop(listener);
    let addr = client.local_addr().unwrap();
    let refused = TcpStream::connect(addr).expect_err("nothing listens on a connection's own port");
    ClosedPort {
        addr: addr.to_string(),
        refused: refused.to_string(),
        _held: (client, server),
    }
}

/// A unix socket path in a directory that does not exist (`file` in it), its directory,
/// and the error connecting to it gives.
pub fn missing_socket(file: &str) -> (String, String, String) {
    let dir = std::env::temp_dir().join(format!("mcpt-no-store-{}", uuid::Uuid::new_v4().simple()));
    let path = dir.join(file);
    let missing = UnixStream::connect(&path).expect_err("no socket there");
    (
        path.display().to_string(),
        dir.display().to_string(),
        missing.to_string(),
    )
}

/// A store that is down: its URL, and the reason the OS gives for not reaching it.
pub struct Down {
    pub url: String,
    pub cause: String,
}

/// Both example servers, given a `backend` store that is down at each of `downs`
/// (`stdio_server FLAG URL`, `mcp_http` with the backend's URL variable), exit 1 with one
/// stderr line naming the URL (its password hidden) and the OS's reason, and never start
/// serving.
pub fn servers_exit_with_one_clear_line(backend: Backend, downs: &[Down]) {
    for Down { url, cause } in downs {
        let shown = redacted(url);
        let mut stdio = Command::new(env!("CARGO_BIN_EXE_stdio_server"));
        clear_store_env(&mut stdio).arg(backend.flag()).arg(url);
        let mut http = Command::new(super::mcp_http());
        clear_store_env(&mut http)
            .env(backend.url_env(), url)
            .env("MCP_TASKS_TOKENS", "alice=token-a")
            .env_remove("MCP_TASKS_TOKENS_FILE")
            .env("MCP_TASKS_HTTP_ADDR", "127.0.0.1:0");
        for (name, command) in [("stdio_server", stdio), ("mcp_http", http)] {
            let (status, stdout, stderr) = run_to_exit(command);
            assert_eq!(
                status.code(),
                Some(1),
                "{name} on {url}: exits 1, got {status}"
            );
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(
                lines.len(),
                1,
                "{name} on {url}: one stderr line: {stderr:?}"
            );
            let line = lines[0];
            assert!(
                line.contains(&shown),
                "{name}: the line names the URL: {line}"
            );
            if shown != *url {
                assert!(!line.contains(url.as_str()), "{name}: no password: {line}");
            }
            assert!(
                line.contains(cause),
                "{name}: the line says why (`{cause}`): {line}"
            );
            assert!(
                !line.contains('"'),
                "{name}: the line is not a quoted string: {line}"
            );
            assert!(
                stdout.is_empty(),
                "{name}: it never started serving: {stdout:?}"
            );
            eprintln!("{name}: {status}: {line}");
        }
    }
}

/// A JSON-RPC request with `id`.
pub fn rpc(id: u64, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The text of a `CallToolResult`'s first content block.
pub fn text(result: &Value) -> Option<&str> {
    result["content"][0]["text"].as_str()
}

/// An `mcp_http` instance on a shared store, with an initialized 2025-11-25 session.
pub struct Instance {
    pub http: Http,
    session: String,
}

impl Instance {
    /// An instance on `db` with the default leases.
    pub fn start(db: &Db) -> Instance {
        Self::start_leased(db, "")
    }

    /// An instance on `db` whose running tasks hold leases of `lease_ms` (`""`: the
    /// default), serving the conformance fixtures too (`slow_compute` is a long task that
    /// runs once).
    pub fn start_leased(db: &Db, lease_ms: &str) -> Instance {
        let lease = if lease_ms.is_empty() {
            Vec::new()
        } else {
            vec![("MCP_TASKS_LEASE_MS", lease_ms.to_owned())]
        };
        Self::start_with(db, &lease)
    }

    /// An instance on `db` with `more` in its environment, serving the conformance
    /// fixtures too.
    pub fn start_with(db: &Db, more: &[(&'static str, String)]) -> Instance {
        let mut env = db.env();
        env.push(("MCP_TASKS_CONFORMANCE", "1".to_owned()));
        env.extend(more.iter().cloned());
        let http = Http::start_with(&env);
        let answer = http.post(&rpc(
            0,
            "initialize",
            &json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "shared-store-instances", "version": "0"}
            }),
        ));
        assert_eq!(answer.status, 200, "initialize: {}", answer.body);
        let session = answer.session.expect("initialize issues a session");
        let initialized = http.post_in(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Some(&session),
        );
        assert!(
            initialized.status < 300,
            "initialized: {}",
            initialized.status
        );
        Instance { http, session }
    }

    /// The request's JSON-RPC answer, or what went wrong (HTTP status, JSON-RPC error).
    pub fn call(&self, id: u64, method: &str, params: &Value) -> Result<Value, String> {
        let answer = self
            .http
            .post_in(&rpc(id, method, params), Some(&self.session));
        if answer.status != 200 {
            return Err(format!("{method}: HTTP {}: {}", answer.status, answer.body));
        }
        let body: Value = serde_json::from_str(&answer.body)
            .map_err(|err| format!("{method}: not JSON ({err}): {}", answer.body))?;
        match body.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("{method}: {}", body["error"])),
        }
    }

    /// A `tasks/result` of `task` (request `id`) through this instance, on a thread of
    /// `scope`, checked to be still waiting `pause` later: join it for the answer and
    /// when it came.
    pub fn awaiting<'scope, 'env>(
        &'env self,
        scope: &'scope thread::Scope<'scope, 'env>,
        id: u64,
        task: &'env str,
        pause: Duration,
    ) -> thread::ScopedJoinHandle<'scope, (Result<Value, String>, Instant)> {
        let waiter = scope.spawn(move || {
            let answer = self.call(id, "tasks/result", &json!({"taskId": task}));
            (answer, Instant::now())
        });
        thread::sleep(pause);
        assert!(!waiter.is_finished(), "tasks/result of {task} waits");
        waiter
    }

    /// Creates a task of `tool` and answers its id.
    pub fn create(&self, id: u64, tool: &str, arguments: &Value) -> String {
        let created = self
            .call(
                id,
                "tools/call",
                &json!({"name": tool, "arguments": arguments, "task": {"ttl": 600_000}}),
            )
            .unwrap_or_else(|err| panic!("{tool} as a task: {err}"));
        assert_eq!(created["task"]["status"], "working", "{created}");
        created["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task id: {created}"))
            .to_owned()
    }
}

/// An instance killed (`SIGKILL`) while it runs a task that is not redeliverable (the
/// conformance fixture `slow_compute` runs once): with 1 s leases (renewed every 125 ms),
/// the other instance's `tasks/result` waiter gets the task failed with the lease's
/// `-32603` within the lease plus one renewal interval, and `tasks/get` there says
/// `failed`. (A redeliverable task runs again instead: `tests/fleet.rs`.)
pub fn a_killed_instance_fails_its_task_on_the_other(db: &Db) {
    const LEASE: Duration = Duration::from_millis(1_000);
    const INTERVAL: Duration = Duration::from_millis(125);
    let lease_ms = LEASE.as_millis().to_string();
    let (a, b) = (
        Instance::start_leased(db, &lease_ms),
        Instance::start_leased(db, &lease_ms),
    );
    let id = a.create(1, "slow_compute", &json!({"seconds": 60}));
    // Alive, A keeps the task past its lease.
    thread::sleep(LEASE * 2);
    let task = b.call(2, "tasks/get", &json!({"taskId": id})).unwrap();
    assert_eq!(task["status"], "working", "{task}");

    let (answer, killed, woke) = thread::scope(|scope| {
        // The waiter waits while A lives.
        let waiter = b.awaiting(scope, 3, &id, Duration::from_millis(100));
        let Instance { http, .. } = a;
        let killed = Instant::now();
        drop(http); // SIGKILL, then reaped
        let (answer, woke) = waiter.join().expect("the waiter thread");
        (answer, killed, woke)
    });
    let elapsed = woke.saturating_duration_since(killed);
    eprintln!(
        "{}: mcp_http killed with SIGKILL mid-task (lease {LEASE:?}, renewed every \
         {INTERVAL:?}): the other instance's tasks/result answered {elapsed:?} later",
        db.backend().name()
    );
    let error = answer.expect_err("tasks/result of a failed task is its error");
    assert!(
        error.contains("-32603") && error.contains("server instance running the task stopped"),
        "{error}"
    );
    let task = b.call(4, "tasks/get", &json!({"taskId": id})).unwrap();
    assert_eq!(task["status"], "failed", "{task}");
    assert!(
        elapsed <= LEASE + INTERVAL + Duration::from_millis(500),
        "failed {elapsed:?} after the kill, beyond lease + interval ({:?})",
        LEASE + INTERVAL
    );
}
