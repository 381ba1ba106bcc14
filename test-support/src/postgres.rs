//! A private PostgreSQL server for one test: a fresh cluster (`initdb`) in a new temporary
//! directory, listening on a free port of `127.0.0.1` with `trust` authentication for the
//! user `postgres`, and killed (and reaped, and its directory removed) when the
//! [`PostgresServer`] is dropped.
//!
//! The binaries are Debian's PostgreSQL: the directory `$PG_BIN` if it is set, else
//! `pg_config --bindir`, else the highest `/usr/lib/postgresql/*/bin`, else the directory of
//! `initdb` on `PATH`. Without them, [`PostgresServer::start`] prints one `SKIPPED` line per
//! test binary, straight to the terminal (past the test harness's output capture), and
//! returns `None`, so the PostgreSQL tests pass vacuously but visibly.
//!
//! `initdb` and `postgres` refuse to run as root: a test process running as root runs them
//! as the `postgres` system user (which Debian's package creates), in a directory it owns
//! under the temporary directory (which that user must reach, as it does `/tmp`).
//!
//! Commits are durable as in production (`fsync` and `synchronous_commit` on), so
//! [`kill9`](PostgresServer::kill9) then [`restart`](PostgresServer::restart) is a crash
//! and its recovery: every acknowledged commit is still there.
//!
//! No orphan survives the test process: each server is killed on drop (also while a failing
//! test unwinds), and on Linux the postmaster also gets `SIGKILL` when the thread that
//! started it ends (`PR_SET_PDEATHSIG`), which covers a test binary that is killed
//! outright; its backends then end on their own, as they do whenever the postmaster dies.
//! So a server shared by several tests must be started by a thread that outlives them.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::orphans::die_with_parent;

/// How long a server may take to accept sessions (a fresh start or a crash recovery).
const STARTUP: Duration = Duration::from_secs(20);

/// How long a fast shutdown ([`PostgresServer::stop`]) may take before the server is killed.
const SHUTDOWN: Duration = Duration::from_secs(30);

/// How long the processes of a killed server may take to be gone.
const REAP: Duration = Duration::from_secs(10);

/// How many free ports a start tries when another process takes the port first.
const PORT_ATTEMPTS: usize = 5;

/// The address the server listens on.
const HOST: &str = "127.0.0.1";

/// The lines of the log that [`PostgresServer::log_tail`] returns.
const TAIL_LINES: usize = 40;

/// The settings every server starts with (before those given to
/// [`start_with`](PostgresServer::start_with)): commits durable as in production, room for
/// many test connections, little memory.
const DEFAULT_SETTINGS: [(&str, &str); 5] = [
    ("listen_addresses", HOST),
    ("fsync", "on"),
    ("synchronous_commit", "on"),
    ("max_connections", "200"),
    ("shared_buffers", "32MB"),
];

/// A running PostgreSQL server (a postmaster and its backends) owned by the test.
#[derive(Debug)]
pub struct PostgresServer {
    /// The postmaster.
    child: Child,
    /// The temporary directory: the cluster in `data/`, the log, the unix socket.
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// `-c` settings after the defaults.
    settings: Vec<(String, String)>,
    /// The user and group that run `postgres` when the test runs as root.
    owner: Option<(u32, u32)>,
}

/// The postmaster exited at startup because its port was taken.
struct PortTaken;

impl PostgresServer {
    /// Starts a server on a fresh cluster, or returns `None` (after saying so once) if
    /// PostgreSQL is not installed.
    ///
    /// # Panics
    /// If PostgreSQL is installed but `initdb` fails or the server does not accept sessions
    /// within 20 s: that is a broken environment, not a skipped test.
    #[must_use]
    pub fn start() -> Option<PostgresServer> {
        Self::start_with(&[])
    }

    /// Starts a server like [`start`](Self::start) with more settings (`-c name=value`,
    /// after the defaults, which they may override), kept for [`restart`](Self::restart).
    ///
    /// # Panics
    /// As for [`start`](Self::start); also if a setting is refused.
    #[must_use]
    pub fn start_with(settings: &[(&str, &str)]) -> Option<PostgresServer> {
        let Some(bin) = bin_dir() else {
            skip_notice(
                "PostgreSQL's initdb and postgres not found ($PG_BIN, pg_config --bindir, \
                 /usr/lib/postgresql/*/bin, PATH)",
            );
            return None;
        };
        let owner = if sys::geteuid() == 0 {
            let Some(ids) = system_user("postgres") else {
                skip_notice("running as root and no `postgres` user in /etc/passwd to run initdb");
                return None;
            };
            Some(ids)
        } else {
            None
        };
        let dir = fresh_dir(owner);
        initdb(bin, &dir, owner);
        let settings: Vec<(String, String)> = settings
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let port = free_port();
        let (child, mut since) = spawn(bin, &dir, port, &settings, owner).unwrap_or_else(|err| {
            let _ = std::fs::remove_dir_all(&dir);
            panic!("cannot start {}: {err}", bin.join("postgres").display());
        });
        let mut server = PostgresServer {
            child,
            dir,
            bin: bin.to_owned(),
            port,
            settings,
            owner,
        };
        let mut attempts = 1;
        while server.await_ready(since).is_err() {
            assert!(
                attempts < PORT_ATTEMPTS,
                "postgres found its port taken {PORT_ATTEMPTS} times; its log:\n{}",
                server.log_tail()
            );
            attempts += 1;
            server.port = free_port();
            since = server.launch();
        }
        Some(server)
    }

    /// The URL of the database `postgres` as the user `postgres`
    /// (`postgres://postgres@127.0.0.1:PORT/postgres`).
    #[must_use]
    pub fn url(&self) -> String {
        self.database_url("postgres")
    }

    /// The host the server listens on: `127.0.0.1`.
    #[must_use]
    pub fn host(&self) -> &str {
        HOST
    }

    /// The TCP port the server listens on (the same across restarts).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id of the postmaster (the last one, if it is not running).
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The cluster's data directory (`data/` in the server's temporary directory).
    #[must_use]
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Whether the postmaster is running (it has not exited, been killed or stopped).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Crashes the server: `SIGKILL` to the postmaster (its process group) and to every
    /// backend, without any shutdown, as a power cut or the OOM killer would; then waits
    /// until they are all gone. The cluster stays for [`restart`](Self::restart), which
    /// recovers it from the WAL.
    ///
    /// # Panics
    /// If a process of the server is still alive 10 s later.
    pub fn kill9(&mut self) {
        assert!(
            self.kill_all(),
            "processes of the PostgreSQL cluster in {} survived SIGKILL",
            self.dir.display()
        );
    }

    /// Stops the server with a fast shutdown (`SIGINT`: sessions are ended, a shutdown
    /// checkpoint is written) and waits until it is gone; after 30 s it is killed instead.
    /// The cluster stays for [`restart`](Self::restart).
    ///
    /// # Panics
    /// If a process of the server is still alive after that.
    pub fn stop(&mut self) {
        if self.is_running() {
            sys::signal(self.child.id(), sys::SIGINT);
            let started = Instant::now();
            while matches!(self.child.try_wait(), Ok(None)) && started.elapsed() < SHUTDOWN {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.kill9();
    }

    /// Starts the server again on the same cluster and port, with the same settings, and
    /// waits until it accepts sessions: after [`kill9`](Self::kill9) that includes the
    /// crash recovery. A server still running is [stopped](Self::stop) first.
    ///
    /// # Panics
    /// If it does not accept sessions within 20 s, or its port was taken meanwhile.
    pub fn restart(&mut self) {
        if self.is_running() {
            self.stop();
        }
        let since = self.launch();
        if self.await_ready(since).is_err() {
            panic!(
                "port {} was taken while postgres was down; its log:\n{}",
                self.port,
                self.log_tail()
            );
        }
    }

    /// Creates the database `name` (owned by `postgres`) and returns its URL: a database
    /// per test keeps tests that share a server apart.
    ///
    /// # Panics
    /// If `psql` fails (the database exists already, the server is down).
    #[must_use = "the URL is the way to the new database"]
    pub fn create_database(&self, name: &str) -> String {
        self.psql(&format!(
            "CREATE DATABASE \"{}\"",
            name.replace('"', "\"\"")
        ));
        self.database_url(name)
    }

    /// Runs SQL with `psql` in the database `postgres` and returns what it prints: the rows
    /// of the last statement, one a line, columns separated by `|`, without headers, command
    /// tags or the last newline (`select 1` gives `1`).
    ///
    /// # Panics
    /// If `psql` fails (an SQL error, the server is down), with its stderr.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("postgres", sql)
    }

    /// Runs SQL with `psql` like [`psql`](Self::psql), in the database `database`.
    ///
    /// # Panics
    /// As for [`psql`](Self::psql).
    pub fn psql_in(&self, database: &str, sql: &str) -> String {
        let output = Command::new(self.client("psql"))
            .args(["-X", "-q", "-A", "-t", "-h", HOST, "-U", "postgres"])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-d")
            .arg(database)
            .arg("-c")
            .arg(sql)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|err| panic!("cannot run psql: {err}"));
        assert!(
            output.status.success(),
            "psql -c {sql:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let mut stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if stdout.ends_with('\n') {
            stdout.pop();
        }
        stdout
    }

    /// Freezes the backend process `pid` of this server (`SIGSTOP`), one of
    /// `pg_stat_activity`'s: its connection stays open and nothing answers on it, as with a
    /// hung session. It runs again (`SIGCONT`) when the guard is dropped, also when a test
    /// fails.
    ///
    /// # Panics
    /// If `pid` is the postmaster's (freeze a backend, not the server).
    #[must_use = "the backend runs again when the guard is dropped"]
    pub fn freeze_backend(&self, pid: u32) -> FrozenBackend {
        assert_ne!(pid, self.pid(), "freeze a backend, not the postmaster");
        sys::signal(pid, sys::SIGSTOP);
        FrozenBackend { pid }
    }

    /// The last lines of the server's log (`postgres.log` in its temporary directory), for
    /// assertions and failure messages.
    #[must_use]
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }

    fn database_url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@{HOST}:{}/{}",
            self.port,
            percent_encode(database)
        )
    }

    /// A client program of the same installation (`psql`, `pgbench`), else the one of
    /// that name on `PATH` (which may not exist: running it then fails with `NotFound`).
    #[must_use]
    pub fn client(&self, name: &str) -> PathBuf {
        let program = self.bin.join(name);
        if program.is_file() {
            program
        } else {
            PathBuf::from(name)
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("postgres.log")
    }

    /// Spawns the postmaster again (on `self.port`); returns where its log starts.
    fn launch(&mut self) -> u64 {
        let (child, since) = spawn(&self.bin, &self.dir, self.port, &self.settings, self.owner)
            .unwrap_or_else(|err| panic!("cannot restart postgres: {err}"));
        self.child = child;
        since
    }

    /// Waits until the postmaster spawned last is ready (its `postmaster.pid` says so) and
    /// a session starts; `Err` if it exited because its port was taken (its log from
    /// `since` says so).
    fn await_ready(&mut self, since: u64) -> Result<(), PortTaken> {
        let started = Instant::now();
        loop {
            if self.says_ready() && session(self.port).is_some_and(end_session) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let _ = self.kill_all();
                let log = self.log_since(since);
                if log.contains("could not bind") || log.contains("could not create any TCP/IP") {
                    return Err(PortTaken);
                }
                panic!("postgres exited at startup ({status}); its log:\n{log}");
            }
            assert!(
                started.elapsed() < STARTUP,
                "postgres did not accept sessions on {HOST}:{} within {STARTUP:?}; its log:\n{}",
                self.port,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `postmaster.pid` names this postmaster, on this port, as ready (not still
    /// starting or recovering): so the session that follows is with this server, not with
    /// another one that took the port.
    fn says_ready(&self) -> bool {
        let Ok(status) = std::fs::read_to_string(self.data_dir().join("postmaster.pid")) else {
            return false;
        };
        let lines: Vec<&str> = status.lines().map(str::trim).collect();
        lines.first() == Some(&self.child.id().to_string().as_str())
            && lines.get(3) == Some(&self.port.to_string().as_str())
            && lines.get(7) == Some(&"ready")
    }

    fn log_since(&self, since: u64) -> String {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        let since = usize::try_from(since).unwrap_or(usize::MAX).min(log.len());
        String::from_utf8_lossy(&log[since..]).into_owned()
    }

    /// Kills the postmaster (its process group, then itself) and reaps it, then every
    /// other process of the cluster, until none is alive; whether that happened within
    /// 10 s.
    ///
    /// PostgreSQL makes each backend the leader of its own session (`setsid`, so the
    /// postmaster can signal a backend's children), so the postmaster's group holds the
    /// postmaster alone. The backends are found by their working directory instead: every
    /// process of the cluster runs in its data directory.
    fn kill_all(&mut self) -> bool {
        if matches!(self.child.try_wait(), Ok(None)) {
            // Not reaped yet, so the id is still this postmaster's.
            sys::signal_group(self.child.id(), sys::SIGKILL);
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let started = Instant::now();
        loop {
            let left = processes_in(&self.dir);
            if left.is_empty() {
                return true;
            }
            if started.elapsed() > REAP {
                return false;
            }
            for pid in left {
                sys::signal(pid, sys::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The one server of the test process ([`shared_url`]).
static SHARED: std::sync::Mutex<Option<PostgresServer>> = std::sync::Mutex::new(None);

/// The URL of one server shared by every test of the process that asks, started on first
/// use, or `None` (after the `SKIPPED` line) if PostgreSQL is not installed. Tests keep
/// apart by database or schema; they must not crash or stop it (start their own for that).
///
/// It is started by a thread that lives as long as the process (so `PR_SET_PDEATHSIG`
/// fires only when the process ends), and stopped, with its directory removed, when the
/// process exits (`atexit`).
///
/// # Panics
/// As for [`PostgresServer::start`].
#[must_use]
pub fn shared_url() -> Option<String> {
    static URL: OnceLock<Option<String>> = OnceLock::new();
    URL.get_or_init(|| {
        let (started, url) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("shared-postgres".into())
            .spawn(move || {
                let server = PostgresServer::start();
                let url = server.as_ref().map(PostgresServer::url);
                if let Some(server) = server {
                    *SHARED
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(server);
                    sys::at_exit(stop_shared);
                }
                let _ = started.send(url);
                loop {
                    std::thread::park();
                }
            })
            .expect("a thread for the shared PostgreSQL server");
        url.recv()
            .expect("the shared PostgreSQL server started or skipped")
    })
    .clone()
}

/// Runs SQL with `psql` on the shared server ([`shared_url`], started first if need be), as
/// [`PostgresServer::psql`] does; `None` if PostgreSQL is not installed.
///
/// # Panics
/// As for [`PostgresServer::psql`].
#[must_use]
pub fn shared_psql(sql: &str) -> Option<String> {
    shared_url()?;
    let shared = SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    shared.as_ref().map(|server| server.psql(sql))
}

/// Stops the shared server at process exit (kills it, removes its directory).
extern "C" fn stop_shared() {
    if let Ok(mut shared) = SHARED.lock() {
        drop(shared.take());
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.kill_all();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory of the PostgreSQL server binaries, looked for once (see the module docs).
fn bin_dir() -> Option<&'static Path> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(find_bin_dir).as_deref()
}

fn find_bin_dir() -> Option<PathBuf> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("PG_BIN") {
        // Chosen explicitly: that one or none.
        let dir = PathBuf::from(dir);
        return has_server(&dir).then_some(dir);
    }
    // Debian's pg_config comes with libpq-dev too, and names a directory without a server.
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output()
        && output.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if has_server(&dir) {
            return Some(dir);
        }
    }
    let highest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: Vec<u32> = entry
                .file_name()
                .to_str()?
                .split('.')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            let dir = entry.path().join("bin");
            has_server(&dir).then_some((version, dir))
        })
        .max();
    if let Some((_, dir)) = highest {
        return Some(dir);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let initdb = dir.join("initdb");
        if !initdb.is_file() {
            return None;
        }
        // Debian links the binaries into PATH; the installation is where they point.
        let real = std::fs::canonicalize(&initdb)
            .ok()
            .and_then(|real| real.parent().map(Path::to_owned))
            .filter(|real| has_server(real));
        real.or_else(|| has_server(&dir).then_some(dir))
    })
}

/// The user and group ids of the system user `name`, from `/etc/passwd`.
fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let _password = fields.next()?;
        Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
    })
}

/// Runs `command` as `owner` (when the test runs as root), in `dir`.
fn run_as(command: &mut Command, dir: &Path, owner: Option<(u32, u32)>) {
    command.current_dir(dir);
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}

/// Creates the cluster in `dir/data` (user `postgres`, `trust` authentication, UTF-8, no
/// locale; `--no-sync`, as the cluster is new and throwaway).
///
/// # Panics
/// If `initdb` fails, with its output (the directory is removed first).
fn initdb(bin: &Path, dir: &Path, owner: Option<(u32, u32)>) {
    let mut command = Command::new(bin.join("initdb"));
    command
        .arg("-D")
        .arg(dir.join("data"))
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ])
        .stdin(Stdio::null());
    run_as(&mut command, dir, owner);
    let result = command.output();
    let failure = match result {
        Ok(output) if output.status.success() => return,
        Ok(output) => format!(
            "{}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(err) => err.to_string(),
    };
    let _ = std::fs::remove_dir_all(dir);
    panic!("initdb in {} failed: {failure}", dir.display());
}

/// Spawns the postmaster on the cluster in `dir/data`, listening on `port` and on a unix
/// socket in `dir`, its output appended to `dir/postgres.log`; returns it and the length
/// of the log before it.
fn spawn(
    bin: &Path,
    dir: &Path,
    port: u16,
    settings: &[(String, String)],
    owner: Option<(u32, u32)>,
) -> io::Result<(Child, u64)> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("postgres.log"))?;
    let since = log.metadata()?.len();
    let mut command = Command::new(bin.join("postgres"));
    command
        .arg("-D")
        .arg(dir.join("data"))
        .arg("-p")
        .arg(port.to_string())
        .arg("-k")
        .arg(dir);
    let defaults = DEFAULT_SETTINGS.iter().map(|&(name, value)| (name, value));
    let extra = settings
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    for (name, value) in defaults.chain(extra) {
        command.arg("-c").arg(format!("{name}={value}"));
    }
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own process group: a Ctrl-C at the terminal is for the test binary, whose
        // end takes the server along (below, and on drop).
        .process_group(0);
    run_as(&mut command, dir, owner);
    die_with_parent(&mut command);
    Ok((command.spawn()?, since))
}

/// Opens a session as `postgres` on the database `postgres` (the protocol's startup
/// message, `trust` authentication) and returns its connection once the server says it is
/// ready for queries; `None` if it refuses (still starting, recovering, shutting down) or
/// cannot be reached.
fn session(port: u16) -> Option<TcpStream> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    // Protocol 3.0, then name/value pairs, each NUL-terminated, then a NUL.
    let mut body = 196_608_u32.to_be_bytes().to_vec();
    for field in ["user", "postgres", "database", "postgres", ""] {
        body.extend_from_slice(field.as_bytes());
        body.push(0);
    }
    let length = u32::try_from(body.len() + 4).ok()?;
    let mut startup = length.to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    stream.write_all(&startup).ok()?;
    loop {
        let mut head = [0u8; 5];
        stream.read_exact(&mut head).ok()?;
        let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let length = usize::try_from(length).ok()?.checked_sub(4)?;
        if length > 1 << 20 {
            return None;
        }
        let mut message = vec![0u8; length];
        stream.read_exact(&mut message).ok()?;
        match head[0] {
            b'Z' => return Some(stream),
            // Anything but authentication ok (0) would need a password.
            b'R' if message.get(..4) != Some(&[0, 0, 0, 0]) => return None,
            b'E' => return None,
            _ => {}
        }
    }
}

/// Ends a session cleanly (`Terminate`), so the log shows no broken connection; `true`.
fn end_session(mut stream: TcpStream) -> bool {
    let _ = stream.write_all(&[b'X', 0, 0, 0, 4]);
    true
}

/// The live processes (not zombies) whose working directory is in `dir`: those of the
/// cluster in `dir/data` (the postmaster and every process it starts run there). Found in
/// `/proc`; none where there is no `/proc`.
fn processes_in(dir: &Path) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            // A zombie's working directory cannot be read: it holds nothing any more.
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            cwd.starts_with(dir).then_some(pid)
        })
        .collect()
}

/// A port of `127.0.0.1` that was free a moment ago (bound to port 0, then released).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("bind a free port on 127.0.0.1")
}

/// A new, empty directory for one server, owned by `owner` when the test runs as root
/// (short, to keep the socket path under the 108-byte limit of unix socket addresses).
fn fresh_dir(owner: Option<(u32, u32)>) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "mcpt-pg-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).expect("create a temporary directory for postgres");
    // The processes' working directories read from /proc are canonical.
    let dir = std::fs::canonicalize(&dir).expect("canonicalize the temporary directory");
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .expect("give the temporary directory to the postgres user");
    }
    dir
}

/// `name` as a URL path segment: unreserved characters as they are, every other byte
/// percent-encoded.
fn percent_encode(name: &str) -> String {
    name.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// Says once per test binary that the PostgreSQL tests are skipped, and why, on the real
/// stderr (the harness captures `eprintln!` of passing tests; a direct write is shown).
fn skip_notice(why: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::SeqCst) {
        let _ = writeln!(
            io::stderr(),
            "SKIPPED: {why} (install Debian's postgresql to run the PostgreSQL store tests); \
             the PostgreSQL tests of this binary pass without running"
        );
    }
}

/// The few system calls needed, declared here (the crate does not depend on `libc`).
/// A backend [frozen](PostgresServer::freeze_backend) until this is dropped.
#[derive(Debug)]
pub struct FrozenBackend {
    pid: u32,
}

impl Drop for FrozenBackend {
    fn drop(&mut self) {
        sys::signal(self.pid, sys::SIGCONT);
    }
}

mod sys {
    use std::ffi::c_int;

    pub(super) const SIGINT: c_int = 2;
    pub(super) const SIGKILL: c_int = 9;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    pub(super) const SIGCONT: c_int = 18;
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    pub(super) const SIGSTOP: c_int = 19;
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    pub(super) const SIGCONT: c_int = 19;
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    pub(super) const SIGSTOP: c_int = 17;

    unsafe extern "C" {
        /// The effective user id (`uid_t` is `u32` on the unix systems Rust supports).
        pub(super) safe fn geteuid() -> u32;
        safe fn kill(pid: c_int, signal: c_int) -> c_int;
        safe fn atexit(callback: extern "C" fn()) -> c_int;
    }

    /// Runs `callback` when the process exits normally.
    pub(super) fn at_exit(callback: extern "C" fn()) {
        let _ = atexit(callback);
    }

    /// Sends `signal` to the process `pid` (ignoring failure: it may be gone).
    pub(super) fn signal(pid: u32, signal: c_int) {
        if let Ok(pid) = c_int::try_from(pid) {
            let _ = kill(pid, signal);
        }
    }

    /// Sends `signal` to the process group `pgid` (ignoring failure: it may be gone).
    pub(super) fn signal_group(pgid: u32, signal: c_int) {
        if let Ok(pgid) = c_int::try_from(pgid)
            && pgid > 1
        {
            let _ = kill(-pgid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live processes that name `dir` in their command line or run in it.
    fn traces_of(dir: &Path) -> Vec<String> {
        let dir = dir.to_string_lossy().into_owned();
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| name.parse::<u32>().is_ok())
            })
            .filter_map(|entry| {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                let cwd = std::fs::read_link(entry.path().join("cwd"))
                    .map(|cwd| cwd.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (cmdline.contains(&dir) || cwd.starts_with(&dir)).then(|| {
                    format!(
                        "{}: {cmdline} (in {cwd})",
                        entry.file_name().to_string_lossy()
                    )
                })
            })
            .collect()
    }

    /// Whether the process `pid` is gone or a zombie.
    fn is_dead(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z'))
            })
            .unwrap_or(true)
    }

    #[test]
    fn an_acknowledged_commit_survives_kill9_and_crash_recovery() {
        let Some(mut pg) = PostgresServer::start() else {
            return;
        };
        assert_eq!(pg.psql("select 1"), "1");
        assert_eq!(pg.psql("show fsync"), "on");
        assert_eq!(pg.psql("show synchronous_commit"), "on");
        pg.psql("create table kept (v text); insert into kept values ('acknowledged')");
        let (port, before) = (pg.port(), pg.pid());
        // A session open at the crash: its backend goes down with the rest.
        let open = session(port).expect("a session");

        pg.kill9();
        assert!(!pg.is_running());
        assert!(is_dead(before));
        assert!(processes_in(&pg.dir).is_empty(), "{:?}", traces_of(&pg.dir));
        drop(open);

        pg.restart();
        assert!(pg.is_running());
        assert_eq!(pg.port(), port);
        assert_ne!(pg.pid(), before);
        assert!(
            pg.log_tail()
                .contains("not properly shut down; automatic recovery in progress"),
            "{}",
            pg.log_tail()
        );
        assert_eq!(pg.psql("select v from kept"), "acknowledged");
        assert_eq!(
            pg.url(),
            format!("postgres://postgres@127.0.0.1:{port}/postgres")
        );
    }

    #[test]
    fn settings_and_databases_outlive_a_stop_and_a_restart() {
        let Some(mut pg) = PostgresServer::start_with(&[("work_mem", "8MB")]) else {
            return;
        };
        assert_eq!(pg.psql("show work_mem"), "8MB");
        assert_eq!(pg.psql("show max_connections"), "200");
        let url = pg.create_database("one \"test\"");
        assert_eq!(
            url,
            format!(
                "postgres://postgres@127.0.0.1:{}/one%20%22test%22",
                pg.port()
            )
        );
        pg.psql_in(
            "one \"test\"",
            "create table t (n int); insert into t values (1), (2)",
        );

        pg.stop();
        assert!(!pg.is_running());
        assert!(processes_in(&pg.dir).is_empty(), "{:?}", traces_of(&pg.dir));
        pg.restart();
        assert_eq!(pg.psql("show work_mem"), "8MB");
        assert_eq!(
            pg.psql_in("one \"test\"", "select n, n * 10 from t order by n"),
            "1|10\n2|20"
        );
        // A clean shutdown needs no recovery.
        assert!(
            !pg.log_tail().contains("automatic recovery"),
            "{}",
            pg.log_tail()
        );
    }

    #[test]
    fn drop_ends_every_process_and_removes_the_directory() {
        let Some(pg) = PostgresServer::start() else {
            return;
        };
        let dir = pg.dir.clone();
        let open = session(pg.port()).expect("a session");
        assert!(traces_of(&dir).len() > 1, "a postmaster and its processes");

        drop(pg);
        assert!(!dir.exists());
        assert_eq!(traces_of(&dir), Vec::<String>::new());
        drop(open);
    }

    #[test]
    fn the_postmaster_dies_with_the_thread_that_started_it() {
        let started = std::thread::spawn(|| {
            let pg = PostgresServer::start()?;
            let left = (pg.pid(), pg.dir.clone());
            // As if the test binary were killed: no drop.
            std::mem::forget(pg);
            Some(left)
        });
        let Some((pid, dir)) = started.join().expect("the starting thread") else {
            return;
        };
        let since = Instant::now();
        // The postmaster at once; its processes then end on their own.
        while !(is_dead(pid) && processes_in(&dir).is_empty()) && since.elapsed() < REAP {
            std::thread::sleep(Duration::from_millis(10));
        }
        let traces = traces_of(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(is_dead(pid));
        assert_eq!(traces, Vec::<String>::new());
    }
}
