//! A private `redis-server` for one test: started on a unix socket in a fresh temporary
//! directory, without persistence, and killed (and reaped, and its directory removed) when
//! the [`RedisServer`] is dropped.
//!
//! Without `redis-server`
//! on `PATH` (or at `$REDIS_SERVER`), [`RedisServer::start`] prints one `SKIPPED` line per
//! test binary, straight to the terminal (past the test harness's output capture), and
//! returns `None`, so the Redis tests pass vacuously but visibly.
//!
//! No orphan survives the test process: each server is killed on drop (also while a failing
//! test unwinds), and on Linux it also gets `SIGKILL` when the thread that started it ends
//! (`PR_SET_PDEATHSIG`), which covers a test binary that is killed outright.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::orphans::die_with_parent;

/// How long a fresh server may take to answer `PING`.
const STARTUP: Duration = Duration::from_secs(10);

/// A running `redis-server` owned by the test.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    dir: PathBuf,
    socket: PathBuf,
    /// Whether it runs with AOF persistence.
    aof: bool,
}

impl RedisServer {
    /// Starts a server, or returns `None` (after saying so once) if `redis-server` is not
    /// installed.
    ///
    /// # Panics
    /// If `redis-server` exists but does not start and answer `PING` in time: that is a
    /// broken environment, not a skipped test.
    pub fn start() -> Option<RedisServer> {
        Self::start_with(false)
    }

    /// Starts a server with AOF persistence (`appendonly yes`, `appendfsync always`), so a
    /// [`restart`](Self::restart) keeps every acknowledged write; `None` as for
    /// [`start`](Self::start).
    ///
    /// # Panics
    /// As for [`start`](Self::start).
    pub fn start_aof() -> Option<RedisServer> {
        Self::start_with(true)
    }

    fn start_with(aof: bool) -> Option<RedisServer> {
        let program = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        let dir = fresh_dir();
        let socket = dir.join("redis.sock");
        let child = match spawn(&program, &dir, &socket, aof) {
            Ok(child) => child,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let _ = std::fs::remove_dir_all(&dir);
                skip_notice(&program.to_string_lossy());
                return None;
            }
            Err(err) => {
                let _ = std::fs::remove_dir_all(&dir);
                panic!("cannot start {}: {err}", program.to_string_lossy());
            }
        };
        let mut server = RedisServer {
            child,
            dir,
            socket,
            aof,
        };
        server.await_ping();
        Some(server)
    }

    /// Freezes the server (`SIGSTOP`): its connections stay open and nothing answers, as
    /// with a hung Redis or one cut off without closing its connections.
    ///
    /// # Panics
    /// If `kill` cannot be run.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a [frozen](Self::freeze) server run again (`SIGCONT`).
    ///
    /// # Panics
    /// If `kill` cannot be run.
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} failed: {status}");
    }

    /// Kills the server (`SIGKILL`: no shutdown save, clients see their connections drop)
    /// and waits until it is gone; its directory stays for [`resume`](Self::resume).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A killed server leaves its socket file behind; connecting then is refused.
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Starts the server again on the same socket and directory (with AOF, it loads what
    /// it had acknowledged; without, it starts empty) and waits until it answers `PING`.
    ///
    /// # Panics
    /// If it does not start and answer in time.
    pub fn resume(&mut self) {
        let program = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        self.child = spawn(&program, &self.dir, &self.socket, self.aof)
            .unwrap_or_else(|err| panic!("cannot restart {}: {err}", program.to_string_lossy()));
        self.await_ping();
    }

    /// Starts the server again like [`resume`](Self::resume), but returns as soon as it
    /// accepts connections, while it may still be loading its AOF (answering `-LOADING`).
    ///
    /// # Panics
    /// If it does not start listening in time.
    pub fn resume_loading(&mut self) {
        let program = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        self.child = spawn(&program, &self.dir, &self.socket, self.aof)
            .unwrap_or_else(|err| panic!("cannot restart {}: {err}", program.to_string_lossy()));
        let started = Instant::now();
        while UnixStream::connect(&self.socket).is_err() {
            assert!(
                started.elapsed() < STARTUP,
                "redis-server did not listen within {STARTUP:?}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// [`stop`](Self::stop), then [`resume`](Self::resume).
    pub fn restart(&mut self) {
        self.stop();
        self.resume();
    }

    /// The URL of the server for `RedisTaskStore` (`redis+unix:///…/redis.sock`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    /// A client program of the same installation (`redis-benchmark`, `redis-cli`): the one
    /// beside `$REDIS_SERVER` when that is a path and has it, else the one of that name on
    /// `PATH` (which may not exist: running it then fails with `NotFound`).
    #[must_use]
    pub fn client(name: &str) -> PathBuf {
        let beside = std::env::var_os("REDIS_SERVER")
            .map(PathBuf::from)
            .and_then(|server| server.parent().map(|dir| dir.join(name)))
            .filter(|program| program.parent() != Some(Path::new("")))
            .filter(|program| program.is_file());
        beside.unwrap_or_else(|| PathBuf::from(name))
    }

    /// The path of the server's unix socket.
    #[must_use]
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends one command on a fresh connection and returns the reply as text: a simple
    /// string or error as it stands (`+OK`, `-ERR …`), an integer as `:N`, a bulk string as
    /// its contents, and an array's elements joined with newlines.
    ///
    /// # Panics
    /// If the server cannot be reached.
    #[must_use]
    pub fn command(&self, args: &[&str]) -> String {
        let stream = UnixStream::connect(&self.socket).expect("connect to the test redis-server");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("set a read timeout");
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        (&stream)
            .write_all(request.as_bytes())
            .expect("send a command to the test redis-server");
        let mut reader = BufReader::new(&stream);
        read_reply(&mut reader).expect("read a reply from the test redis-server")
    }

    /// The sum of one field (`calls`, `usec`) of `INFO commandstats` over `commands` (in
    /// lower case: `evalsha`, `eval`): e.g. how many `EVALSHA` the server ran so far, and the
    /// microseconds they took (the commands their scripts call included).
    ///
    /// # Panics
    /// If the server cannot be reached.
    #[must_use]
    pub fn command_stat(&self, commands: &[&str], field: &str) -> u64 {
        let stats = self.command(&["INFO", "commandstats"]);
        stats
            .lines()
            .filter_map(|line| {
                let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
                if !commands.contains(&name) {
                    return None;
                }
                let value = rest.split(',').find_map(|kv| {
                    let (key, value) = kv.split_once('=')?;
                    (key == field).then_some(value)
                })?;
                value.parse::<u64>().ok()
            })
            .sum()
    }

    /// Kills every pub/sub connection (`CLIENT KILL TYPE pubsub`); returns how many.
    #[must_use]
    pub fn kill_pubsub_clients(&self) -> usize {
        let reply = self.command(&["CLIENT", "KILL", "TYPE", "pubsub"]);
        reply
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected CLIENT KILL reply: {reply}"))
    }

    /// The names of the current pub/sub connections (`CLIENT LIST TYPE pubsub`).
    #[must_use]
    pub fn pubsub_client_names(&self) -> Vec<String> {
        self.command(&["CLIENT", "LIST", "TYPE", "pubsub"])
            .lines()
            .filter_map(|line| {
                line.split(' ')
                    .find_map(|field| field.strip_prefix("name="))
                    .map(str::to_owned)
            })
            .collect()
    }

    fn await_ping(&mut self) {
        let started = Instant::now();
        loop {
            if ping(&self.socket) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "redis-server exited at startup ({status}); its log:\n{}",
                    self.log()
                );
            }
            if started.elapsed() > STARTUP {
                panic!(
                    "redis-server did not answer PING on {} within {STARTUP:?}; its log:\n{}",
                    self.socket.display(),
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Spawns `redis-server` on `socket` in `dir`, with AOF (`appendfsync always`) or without
/// any persistence.
fn spawn(program: &std::ffi::OsStr, dir: &Path, socket: &Path, aof: bool) -> io::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("redis.log"))?;
    let mut command = Command::new(program);
    command
        .arg("--port")
        .arg("0")
        .arg("--unixsocket")
        .arg(socket)
        .arg("--unixsocketperm")
        .arg("700")
        .arg("--save")
        .arg("")
        .arg("--appendonly")
        .arg(if aof { "yes" } else { "no" })
        .arg("--appendfsync")
        .arg("always")
        // `DEBUG POPULATE` fills a server quickly (on a private unix socket).
        .arg("--enable-debug-command")
        .arg("local")
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    die_with_parent(&mut command);
    command.spawn()
}

/// Whether the server on `socket` answers `PING` with `+PONG`.
fn ping(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

/// Reads one RESP reply as text (see [`RedisServer::command`]).
fn read_reply(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let line = line.trim_end_matches(['\r', '\n']).to_owned();
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("bad reply: {line}"));
    match line.as_bytes().first() {
        Some(b'+' | b'-' | b':') => Ok(line),
        Some(b'$') => {
            let len: i64 = line[1..].parse().map_err(|_| bad())?;
            let Ok(len) = usize::try_from(len) else {
                return Ok(String::new());
            };
            let mut data = vec![0u8; len + 2];
            reader.read_exact(&mut data)?;
            data.truncate(len);
            Ok(String::from_utf8_lossy(&data).into_owned())
        }
        Some(b'*') => {
            let len: i64 = line[1..].parse().map_err(|_| bad())?;
            let mut items = Vec::new();
            for _ in 0..len.max(0) {
                items.push(read_reply(reader)?);
            }
            Ok(items.join("\n"))
        }
        _ => Err(bad()),
    }
}

/// A new, empty directory for one server (short, to keep the socket path under the
/// 108-byte limit of unix socket addresses).
fn fresh_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let base = if Path::new("/tmp").is_dir() {
        PathBuf::from("/tmp")
    } else {
        std::env::temp_dir()
    };
    let name = format!(
        "mcpt-redis-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let dir = base.join(name);
    std::fs::create_dir_all(&dir).expect("create a temporary directory for redis-server");
    dir
}

/// Says once per test binary that the Redis tests are skipped, on the real stderr (the
/// harness captures `eprintln!` of passing tests; a direct write is shown).
fn skip_notice(program: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::SeqCst) {
        let _ = writeln!(
            io::stderr(),
            "SKIPPED: {program} not on PATH (install Debian's redis-server to run the Redis \
             store tests); the Redis tests of this binary pass without running"
        );
    }
}
