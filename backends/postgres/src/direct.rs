//! Connections driven on the calling thread: a pooled connection's statement is written,
//! and its answer read, by the thread that asked for it, waiting on the connection's own
//! socket. No runtime, no other thread: a statement costs its round trip and nothing more
//! (handing each statement to a runtime's thread and its answer back cost about as much
//! client CPU as the statement itself, and under load the context switches were the
//! store's ceiling).
//!
//! The protocol is `tokio-postgres`'s, over a non-blocking socket of this module's
//! ([`Socket`]): the client's futures and the connection's future are polled here in turn,
//! and when neither can go on, the thread waits (`epoll`, through `mio`) until the socket
//! is ready or the statement's deadline passes. So it works on any thread, including a
//! worker of an async runtime (where entering a runtime of one's own panics).

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use mio::{Events, Interest, Token};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::{Host, LoadBalanceHosts, TargetSessionAttrs};
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::Type;
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls, Statement};

/// Why a statement on a connection failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// PostgreSQL or the connection answered an error.
    Postgres(tokio_postgres::Error),
    /// No answer before the deadline: the connection may still carry it.
    TimedOut,
    /// The connection ended (the server closed it).
    Closed,
    /// The connection could not be made.
    Connect(io::Error),
}

impl Failed {
    /// Whether the connection is unusable after this: a fresh one may succeed.
    pub(crate) fn is_connection(&self) -> bool {
        match self {
            Failed::Postgres(err) => crate::connection::is_connection_error(err),
            Failed::TimedOut | Failed::Closed | Failed::Connect(_) => true,
        }
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Postgres(err) => write!(f, "{err}"),
            Failed::TimedOut => f.write_str("no answer in time"),
            Failed::Closed => f.write_str("the connection closed"),
            Failed::Connect(err) => write!(f, "cannot connect: {err}"),
        }
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failed::Postgres(err) => Some(err),
            Failed::Connect(err) => Some(err),
            Failed::TimedOut | Failed::Closed => None,
        }
    }
}

/// A non-blocking socket to PostgreSQL, TCP or unix: a read or write that would block is
/// `Pending` (the thread driving it waits on its readiness, [`Driven::wait`]).
pub(crate) enum Socket {
    Tcp(mio::net::TcpStream),
    #[cfg(unix)]
    Unix(mio::net::UnixStream),
}

impl Socket {
    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Socket::Tcp(stream) => stream,
            #[cfg(unix)]
            Socket::Unix(stream) => stream,
        }
    }
}

/// The result of a non-blocking I/O call as a poll: `Pending` when it would block.
fn ready<T>(result: io::Result<T>) -> Poll<io::Result<T>> {
    match result {
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
        other => Poll::Ready(other),
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let read = match this {
                Socket::Tcp(stream) => stream.read(buf.initialize_unfilled()),
                #[cfg(unix)]
                Socket::Unix(stream) => stream.read(buf.initialize_unfilled()),
            };
            match read {
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                read => {
                    return ready(read).map_ok(|n| buf.advance(n));
                }
            }
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let written = match this {
                Socket::Tcp(stream) => stream.write(buf),
                #[cfg(unix)]
                Socket::Unix(stream) => stream.write(buf),
            };
            match written {
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                written => return ready(written),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        Poll::Ready(match this {
            Socket::Tcp(stream) => stream.shutdown(std::net::Shutdown::Write),
            #[cfg(unix)]
            Socket::Unix(stream) => stream.shutdown(std::net::Shutdown::Write),
        })
    }
}

/// Set when a future or the connection was woken: something moved, poll it again before
/// waiting on the socket.
#[derive(Default)]
struct Woken(AtomicBool);

impl Woken {
    /// Clears the flag, before a poll.
    fn clear(&self) {
        self.0.store(false, Ordering::Release);
    }

    /// Whether it was woken since it was cleared.
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// What drives one socket's futures on the calling thread: its readiness poller and two
/// wakers, one telling that the connection has more to do (its client queued a request)
/// and one that a future's answer moved (the connection handed it something). Apart, so
/// that a request just queued costs one pass of the connection, not a second pass of both.
struct Driven {
    poll: mio::Poll,
    events: Events,
    /// The connection's.
    stirred: Arc<Woken>,
    waker: Waker,
    /// The future's.
    answered: Arc<Woken>,
    answer_waker: Waker,
    /// The payloads of the notifications the connection received, in order, not taken
    /// yet (a listening connection's; a pooled one receives none).
    heard: Vec<String>,
}

impl Driven {
    /// A driver of `socket` (registered for readiness).
    fn new(socket: &mut Socket) -> io::Result<Driven> {
        let poll = mio::Poll::new()?;
        poll.registry().register(
            socket.source(),
            Token(0),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let stirred = Arc::new(Woken::default());
        let answered = Arc::new(Woken::default());
        Ok(Driven {
            poll,
            events: Events::with_capacity(4),
            waker: Waker::from(Arc::clone(&stirred)),
            stirred,
            answer_waker: Waker::from(Arc::clone(&answered)),
            answered,
            heard: Vec::new(),
        })
    }

    /// Polls `future` (and the `connection` its answer comes over, if it runs already)
    /// until it is done, waiting on the socket while neither can go on; `TimedOut` at
    /// `deadline`.
    fn run<T, E: Into<Failed>>(
        &mut self,
        future: impl Future<Output = Result<T, E>>,
        mut connection: Option<&mut Connection<Socket, NoTlsStream>>,
        deadline: Instant,
    ) -> Result<T, Failed> {
        let mut future = pin!(future);
        let answer_waker = self.answer_waker.clone();
        let mut answer_cx = Context::from_waker(&answer_waker);
        let waker = self.waker.clone();
        let mut cx = Context::from_waker(&waker);
        loop {
            self.answered.clear();
            if let Poll::Ready(out) = future.as_mut().poll(&mut answer_cx) {
                return out.map_err(Into::into);
            }
            if let Some(connection) = connection.as_deref_mut() {
                // Until the connection stops waking itself: it sent what the future
                // queued, and read what came.
                loop {
                    self.stirred.clear();
                    drive(connection, &mut cx, &mut self.heard)?;
                    if !self.stirred.is_set() {
                        break;
                    }
                }
            }
            if self.answered.is_set() {
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failed::TimedOut);
            }
            match self.poll.poll(&mut self.events, Some(left)) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(Failed::Connect(err)),
            }
        }
    }
}

/// Polls `connection` until it can go no further (it sends what its client queued and
/// reads what the server sent), keeping the notifications' payloads in `heard`; an error
/// once it ended.
fn drive(
    connection: &mut Connection<Socket, NoTlsStream>,
    cx: &mut Context<'_>,
    heard: &mut Vec<String>,
) -> Result<(), Failed> {
    loop {
        match connection.poll_message(cx) {
            Poll::Pending => return Ok(()),
            Poll::Ready(Some(Ok(AsyncMessage::Notification(notification)))) => {
                heard.push(notification.payload().to_owned());
            }
            Poll::Ready(Some(Ok(_))) => {}
            Poll::Ready(Some(Err(err))) => return Err(Failed::Postgres(err)),
            Poll::Ready(None) => return Err(Failed::Closed),
        }
    }
}

impl From<tokio_postgres::Error> for Failed {
    fn from(err: tokio_postgres::Error) -> Self {
        Failed::Postgres(err)
    }
}

/// One connection, driven by the thread that uses it, with the statements it prepared.
pub(crate) struct Direct {
    client: Client,
    connection: Connection<Socket, NoTlsStream>,
    driven: Driven,
    prepared: HashMap<Arc<str>, Statement>,
}

impl Direct {
    /// Connects to the first of `config`'s hosts that answers, by `deadline`: in the
    /// order given, or (`load_balance_hosts=random`) starting from a random one, so that
    /// connections spread over the hosts.
    pub(crate) fn connect(config: &Config, deadline: Instant) -> Result<Direct, Failed> {
        let hosts = config.get_hosts();
        let addrs = config.get_hostaddrs();
        let count = hosts.len().max(addrs.len());
        let first = match config.get_load_balance_hosts() {
            LoadBalanceHosts::Random if count > 1 => {
                usize::try_from(uuid::Uuid::new_v4().as_u128() % count as u128).unwrap_or(0)
            }
            _ => 0,
        };
        let mut last = Failed::Connect(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no host to connect to",
        ));
        for i in (0..count).map(|n| (first + n) % count) {
            let port = (config.get_ports().get(i))
                .or_else(|| config.get_ports().first())
                .copied()
                .unwrap_or(5432);
            let socket = match (addrs.get(i), hosts.get(i)) {
                (Some(addr), _) => tcp(config, &[SocketAddr::new(*addr, port)], deadline),
                (None, Some(Host::Tcp(name))) => (name.as_str(), port)
                    .to_socket_addrs()
                    .map_err(Failed::Connect)
                    .and_then(|found| tcp(config, &found.collect::<Vec<_>>(), deadline)),
                #[cfg(unix)]
                (None, Some(Host::Unix(dir))) => {
                    std::os::unix::net::UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                        .and_then(|stream| {
                            stream.set_nonblocking(true)?;
                            Ok(Socket::Unix(mio::net::UnixStream::from_std(stream)))
                        })
                        .map_err(Failed::Connect)
                }
                (None, None) => continue,
            };
            match socket.and_then(|socket| Direct::start(config, socket, deadline)) {
                Ok(direct) => return Ok(direct),
                Err(err) => last = err,
            }
        }
        Err(last)
    }

    /// The session on `socket`: startup, authentication, and the session check the
    /// config asks for.
    fn start(config: &Config, mut socket: Socket, deadline: Instant) -> Result<Direct, Failed> {
        let mut driven = Driven::new(&mut socket).map_err(Failed::Connect)?;
        let (client, connection) = driven.run(config.connect_raw(socket, NoTls), None, deadline)?;
        let mut direct = Direct {
            client,
            connection,
            driven,
            prepared: HashMap::new(),
        };
        if config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
            let client = &direct.client;
            let answer = direct.driven.run(
                client.simple_query("SHOW transaction_read_only"),
                Some(&mut direct.connection),
                deadline,
            )?;
            let read_only = answer.iter().any(|message| {
                matches!(message, tokio_postgres::SimpleQueryMessage::Row(row)
                    if row.get(0) == Some("on"))
            });
            if read_only {
                return Err(Failed::Connect(io::Error::other(
                    "the server is read-only (target_session_attrs=read-write)",
                )));
            }
        }
        Ok(direct)
    }

    /// Runs `sql` (prepared on this connection once, its parameters of `types` where
    /// given, the rest inferred by PostgreSQL) with `params`, by `deadline`.
    pub(crate) fn query(
        &mut self,
        sql: &Arc<str>,
        types: &[Type],
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        deadline: Instant,
    ) -> Result<Vec<tokio_postgres::Row>, Failed> {
        let statement = match self.prepared.get(sql) {
            Some(statement) => statement.clone(),
            None => {
                let client = &self.client;
                let statement = self.driven.run(
                    client.prepare_typed(sql, types),
                    Some(&mut self.connection),
                    deadline,
                )?;
                self.prepared.insert(Arc::clone(sql), statement.clone());
                statement
            }
        };
        let client = &self.client;
        self.driven.run(
            client.query(&statement, params),
            Some(&mut self.connection),
            deadline,
        )
    }

    /// Runs `sql` (one or more statements, no parameters) by `deadline`.
    pub(crate) fn batch_execute(&mut self, sql: &str, deadline: Instant) -> Result<(), Failed> {
        let client = &self.client;
        self.driven.run(
            client.batch_execute(sql),
            Some(&mut self.connection),
            deadline,
        )
    }

    /// The payloads of the notifications received by `deadline`, in order: those received
    /// already, or else the first that come (with any that came along), or none once the
    /// deadline passed.
    pub(crate) fn notifications(&mut self, deadline: Instant) -> Result<Vec<String>, Failed> {
        loop {
            let waker = self.driven.waker.clone();
            drive(
                &mut self.connection,
                &mut Context::from_waker(&waker),
                &mut self.driven.heard,
            )?;
            if !self.driven.heard.is_empty() {
                return Ok(std::mem::take(&mut self.driven.heard));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Vec::new());
            }
            match self.driven.poll.poll(&mut self.driven.events, Some(left)) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(Failed::Connect(err)),
            }
        }
    }

    /// Whether the connection is known to be unusable.
    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// A TCP connection to the first of `addrs` that accepts by `deadline`, non-blocking,
/// without Nagle's delay (a statement is one small write that waits for its answer), with
/// the config's keepalives (so that an idle pooled connection whose peer vanished is
/// found closed).
fn tcp(config: &Config, addrs: &[SocketAddr], deadline: Instant) -> Result<Socket, Failed> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to");
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failed::TimedOut);
        }
        match std::net::TcpStream::connect_timeout(addr, left).and_then(|stream| {
            stream.set_nodelay(true)?;
            if config.get_keepalives() {
                let keepalive =
                    socket2::TcpKeepalive::new().with_time(config.get_keepalives_idle());
                socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive)?;
            }
            stream.set_nonblocking(true)?;
            Ok(stream)
        }) {
            Ok(stream) => return Ok(Socket::Tcp(mio::net::TcpStream::from_std(stream))),
            Err(err) => last = err,
        }
    }
    Err(Failed::Connect(last))
}

/// A bounded pool of [`Direct`] connections: a call takes an idle one (or opens one while
/// fewer than the bound are open, or waits for one), uses it on its own thread, and gives
/// it back.
pub(crate) struct DirectPool {
    config: Config,
    bound: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
}

struct PoolState {
    idle: Vec<Direct>,
    /// Connections open: idle, in use, or being opened.
    open: usize,
    /// Callers waiting for a connection to be given back (so that one given back when none
    /// waits costs no wake-up call: a `Condvar`'s notify is a system call even then).
    waiting: usize,
}

/// What the pool could not give.
pub(crate) enum Unavailable {
    /// Every connection stayed in use until the deadline.
    Busy,
    /// A new connection could not be made.
    Connect(Failed),
}

impl DirectPool {
    pub(crate) fn new(config: Config, bound: usize) -> Self {
        DirectPool {
            config,
            bound: bound.max(1),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection, a new one, or one given back by `deadline`.
    pub(crate) fn get(&self, deadline: Instant) -> Result<Direct, Unavailable> {
        let mut state = self.lock();
        loop {
            while let Some(direct) = state.idle.pop() {
                if !direct.is_closed() {
                    return Ok(direct);
                }
                state.open -= 1;
            }
            if state.open < self.bound {
                state.open += 1;
                drop(state);
                return Direct::connect(&self.config, deadline).map_err(|err| {
                    self.discard();
                    Unavailable::Connect(err)
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Unavailable::Busy);
            }
            state.waiting += 1;
            state = (self.freed.wait_timeout(state, left))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            state.waiting -= 1;
        }
    }

    /// Gives `direct` back.
    pub(crate) fn put(&self, direct: Direct) {
        let mut state = self.lock();
        state.idle.push(direct);
        let waiting = state.waiting > 0;
        drop(state);
        if waiting {
            self.freed.notify_one();
        }
    }

    /// Counts out a connection that was dropped (broken, or possibly carrying an answer).
    pub(crate) fn discard(&self) {
        let mut state = self.lock();
        state.open -= 1;
        let waiting = state.waiting > 0;
        drop(state);
        if waiting {
            self.freed.notify_one();
        }
    }

    /// Closes every idle connection (they are as old as one found broken).
    pub(crate) fn clear_idle(&self) {
        let idle = {
            let mut state = self.lock();
            state.open -= state.idle.len();
            std::mem::take(&mut state.idle)
        };
        drop(idle);
        self.freed.notify_all();
    }
}
