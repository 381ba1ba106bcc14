//! A TCP proxy on loopback between a store instance and a test `redis-server` (which
//! listens on a unix socket): the instance connects to `redis://127.0.0.1:PORT`, and the
//! test can [pause](TcpProxy::pause) the link (bytes held both ways, connections open),
//! [hold only the replies](TcpProxy::hold_replies), [drop](TcpProxy::drop_all) every
//! connection (both sides closed, the instance reads end-of-file) or
//! [reset](TcpProxy::reset_all) them (`SO_LINGER` 0, then closed: the instance gets a TCP
//! RST, `ECONNRESET`).
//!
//! Every thread it starts reads
//! and writes with short timeouts and checks its connection's state between them, so each
//! ends within tens of milliseconds of a drop, a reset or the proxy's own drop, which joins
//! them all (also while a failing test unwinds).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How often a blocked pump looks at its connection's state.
const TICK: Duration = Duration::from_millis(10);

/// A connection's state.
const OPEN: u8 = 0;
const DROPPED: u8 = 1;
const RESET: u8 = 2;

/// What the proxy forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// Everything, both ways.
    Open,
    /// Nothing: bytes are held both ways.
    Paused,
    /// Requests reach Redis, replies are held.
    RepliesHeld,
}

/// One proxied connection: the instance's side (TCP) and Redis's side (unix socket).
struct Link {
    client: TcpStream,
    upstream: UnixStream,
    state: Arc<AtomicU8>,
}

impl Link {
    /// Closes both sides: the instance reads end-of-file.
    fn drop_now(&self) {
        if self.state.swap(DROPPED, Ordering::SeqCst) == OPEN {
            let _ = self.client.shutdown(Shutdown::Both);
            let _ = self.upstream.shutdown(Shutdown::Both);
        }
    }

    /// Resets the instance's side: `SO_LINGER` 0, and the socket closes (with an RST) as
    /// soon as its last handle (this one and the pumps' copies) is dropped. Redis's side is
    /// closed normally.
    fn reset_now(&self) {
        if self.state.swap(RESET, Ordering::SeqCst) == OPEN {
            set_linger_zero(&self.client);
            let _ = self.upstream.shutdown(Shutdown::Both);
        }
    }
}

struct Shared {
    upstream: PathBuf,
    flow: Mutex<Flow>,
    changed: Condvar,
    stop: AtomicBool,
    links: Mutex<Vec<Link>>,
    pumps: Mutex<Vec<JoinHandle<()>>>,
    accepted: AtomicUsize,
    /// Bytes read from Redis and not yet passed on (held replies).
    held_replies: AtomicUsize,
}

impl Shared {
    fn set_flow(&self, flow: Flow) {
        *self.flow.lock().unwrap_or_else(PoisonError::into_inner) = flow;
        self.changed.notify_all();
    }

    /// Waits while bytes going this way are held; `false` if the connection ended
    /// meanwhile.
    fn wait_to_pass(&self, to_redis: bool, state: &AtomicU8) -> bool {
        let mut flow = self.flow.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.load(Ordering::SeqCst) != OPEN || self.stop.load(Ordering::SeqCst) {
                return false;
            }
            let held = match *flow {
                Flow::Open => false,
                Flow::Paused => true,
                Flow::RepliesHeld => !to_redis,
            };
            if !held {
                return true;
            }
            flow = self
                .changed
                .wait_timeout(flow, TICK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The proxy: a loopback TCP listener forwarding to a unix socket.
pub struct TcpProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl TcpProxy {
    /// A proxy on a free loopback port to the unix socket `upstream`, forwarding.
    ///
    /// # Panics
    /// If it cannot listen on loopback.
    pub fn start(upstream: &Path) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen on loopback");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the proxy's address");
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            flow: Mutex::new(Flow::Open),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            links: Mutex::new(Vec::new()),
            pumps: Mutex::new(Vec::new()),
            accepted: AtomicUsize::new(0),
            held_replies: AtomicUsize::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || accept_loop(&listener, &shared))
        };
        TcpProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The URL an instance uses to reach Redis through the proxy.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Holds every byte, both ways, on every connection (new ones too), until
    /// [`resume`](Self::resume).
    pub fn pause(&self) {
        self.shared.set_flow(Flow::Paused);
    }

    /// Lets requests through but holds every reply, until [`resume`](Self::resume).
    pub fn hold_replies(&self) {
        self.shared.set_flow(Flow::RepliesHeld);
    }

    /// Forwards everything again; held bytes of connections still open go on.
    pub fn resume(&self) {
        self.shared.set_flow(Flow::Open);
    }

    /// Closes every current connection on both sides; returns how many were open.
    pub fn drop_all(&self) -> usize {
        self.end_all(Link::drop_now)
    }

    /// Resets every current connection (the instance gets an RST); returns how many.
    pub fn reset_all(&self) -> usize {
        self.end_all(Link::reset_now)
    }

    fn end_all(&self, end: fn(&Link)) -> usize {
        let links: Vec<Link> = std::mem::take(
            &mut *self
                .shared
                .links
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut ended = 0;
        for link in &links {
            if link.state.load(Ordering::SeqCst) == OPEN {
                ended += 1;
            }
            end(link);
        }
        self.shared.held_replies.store(0, Ordering::SeqCst);
        ended
    }

    /// How many connections the proxy has accepted so far.
    #[must_use]
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many connections are open now.
    #[must_use]
    pub fn open(&self) -> usize {
        self.shared
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|link| link.state.load(Ordering::SeqCst) == OPEN)
            .count()
    }

    /// How many reply bytes are held now (read from Redis, not yet passed on).
    #[must_use]
    pub fn held_replies(&self) -> usize {
        self.shared.held_replies.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.drop_all();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let pumps = std::mem::take(
            &mut *self
                .shared
                .pumps
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for pump in pumps {
            let _ = pump.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                // Redis gone: the instance's connection is closed at once.
                if let Ok(upstream) = UnixStream::connect(&shared.upstream) {
                    let _ = start_link(shared, client, upstream);
                }
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => thread::sleep(TICK),
            Err(_) => thread::sleep(TICK),
        }
    }
}

fn start_link(shared: &Arc<Shared>, client: TcpStream, upstream: UnixStream) -> io::Result<()> {
    client.set_nonblocking(false)?;
    client.set_nodelay(true)?;
    client.set_read_timeout(Some(TICK))?;
    client.set_write_timeout(Some(TICK))?;
    upstream.set_read_timeout(Some(TICK))?;
    upstream.set_write_timeout(Some(TICK))?;
    let state = Arc::new(AtomicU8::new(OPEN));
    let link = Link {
        client: client.try_clone()?,
        upstream: upstream.try_clone()?,
        state: Arc::clone(&state),
    };
    let up = {
        let (shared, state) = (Arc::clone(shared), Arc::clone(&state));
        let (from, to) = (client.try_clone()?, upstream.try_clone()?);
        thread::spawn(move || pump(&shared, &state, from, to, true))
    };
    let down = {
        let (shared, state) = (Arc::clone(shared), Arc::clone(&state));
        thread::spawn(move || pump(&shared, &state, upstream, client, false))
    };
    shared
        .links
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(link);
    shared
        .pumps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend([up, down]);
    Ok(())
}

/// Copies `from` to `to` (towards Redis if `to_redis`), holding bytes while the flow says
/// so, until either side closes or the connection is ended by the test. A side closing on
/// its own closes the other (as a real network path would).
fn pump(
    shared: &Shared,
    state: &AtomicU8,
    mut from: impl Read,
    mut to: impl Write + Shutdown2,
    to_redis: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    'copy: while state.load(Ordering::SeqCst) == OPEN && !shared.stop.load(Ordering::SeqCst) {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => break,
        };
        if !to_redis {
            shared.held_replies.fetch_add(n, Ordering::SeqCst);
        }
        let passed = shared.wait_to_pass(to_redis, state);
        if !to_redis {
            let _ = shared
                .held_replies
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                    Some(h.saturating_sub(n))
                });
        }
        if !passed {
            break;
        }
        let mut written = 0;
        while written < n {
            if state.load(Ordering::SeqCst) != OPEN {
                break 'copy;
            }
            match to.write(&buf[written..n]) {
                Ok(0) => break 'copy,
                Ok(k) => written += k,
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => break 'copy,
            }
        }
    }
    // Ended by a side (not by a reset, whose RST must not be preceded by a FIN): close
    // both sides.
    let _ = state.compare_exchange(OPEN, DROPPED, Ordering::SeqCst, Ordering::SeqCst);
    if state.load(Ordering::SeqCst) == DROPPED {
        to.shutdown_both();
    }
}

/// Shutting down either kind of stream.
trait Shutdown2 {
    fn shutdown_both(&self);
}

impl Shutdown2 for TcpStream {
    fn shutdown_both(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

impl Shutdown2 for UnixStream {
    fn shutdown_both(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

/// Sets `SO_LINGER` to on with a zero timeout, so closing the socket sends an RST instead
/// of a FIN (std's `TcpStream::set_linger` is unstable; the call is made directly).
fn set_linger_zero(stream: &TcpStream) {
    use std::ffi::{c_int, c_void};
    use std::os::fd::AsRawFd;

    #[repr(C)]
    struct Linger {
        l_onoff: c_int,
        l_linger: c_int,
    }
    #[cfg(target_os = "linux")]
    const SOL_SOCKET: c_int = 1;
    #[cfg(target_os = "linux")]
    const SO_LINGER: c_int = 13;
    #[cfg(not(target_os = "linux"))]
    const SOL_SOCKET: c_int = 0xffff;
    #[cfg(not(target_os = "linux"))]
    const SO_LINGER: c_int = 0x0080;
    unsafe extern "C" {
        fn setsockopt(
            socket: c_int,
            level: c_int,
            name: c_int,
            value: *const c_void,
            len: u32,
        ) -> c_int;
    }
    let linger = Linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is an open socket owned by `stream`, and `linger` is a valid
    // `struct linger` of the size passed, alive for the call.
    let rc = unsafe {
        setsockopt(
            stream.as_raw_fd(),
            SOL_SOCKET,
            SO_LINGER,
            std::ptr::from_ref(&linger).cast(),
            u32::try_from(std::mem::size_of::<Linger>()).expect("a small struct"),
        )
    };
    assert_eq!(
        rc,
        0,
        "setsockopt(SO_LINGER): {}",
        io::Error::last_os_error()
    );
}
