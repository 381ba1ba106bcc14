//! Accepting connections (capped, and backing off when descriptors run out) and shutting
//! down gracefully.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use super::App;
use super::service::McpService;

/// The first back-off after an accept error that a retry can cure (out of descriptors,
/// memory or buffers); it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The listen backlog: connections the kernel completes before the server accepts them.
const BACKLOG: u32 = 4096;

/// How long the connections get, after the tasks' deadline, to send what they still owe.
const FLUSH: Duration = Duration::from_millis(500);

/// How long the changes of the tasks ended at shutdown get to come back through a shared
/// store's feed before the listens end.
const LISTEN_SETTLE: Duration = Duration::from_millis(200);

/// How long the claim loop may take to end beyond the grace period (it looks at the
/// shutdown at least once per idle wait of a second).
const CLAIM_LOOP_END: Duration = Duration::from_millis(1_500);

/// Raises the soft limit on open descriptors to the hard limit (best effort): a server
/// holding thousands of connections needs more than the usual 1,024.
pub fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the plain struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0
            && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) != 0 {
                log::warn!(
                    "cannot raise the descriptor limit: {}",
                    io::Error::last_os_error()
                );
            }
        }
    }
}

/// Whether an accept error is a shortage that passes (descriptors, memory, buffers): back
/// off and retry. Anything else concerns one connection only: skip it.
fn is_shortage(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Serves `listener` until `shutdown` completes; the connections still open then are
/// shut down gracefully by [`shut_down`].
pub(crate) async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    let connections = Arc::new(Semaphore::new(app.limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut backoff = FIRST_BACKOFF;
    tokio::pin!(shutdown);
    let service = McpService::new(Arc::clone(&app), true);
    loop {
        // At the cap, stop accepting until a connection closes.
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => {
                log::info!("shutting down");
                break;
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => {
                log::info!("shutting down");
                break;
            }
        };
        let (stream, _) = match accepted {
            Ok(accepted) => {
                backoff = FIRST_BACKOFF;
                accepted
            }
            Err(err) if is_shortage(&err) => {
                log::warn!("cannot accept a connection ({err}): backing off {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            Err(err) => {
                log::debug!("a connection failed before it was accepted: {err}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(app.limits.header_timeout)
            .keep_alive(true)
            .serve_connection(
                TokioIo::new(stream),
                TowerToHyperService::new(service.clone()),
            );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                log::debug!("connection ended: {err}");
            }
            drop(permit);
        });
    }
    drop(listener);
    // Idle connections close now; busy ones after their response.
    *lock(&app.connections) = Some(tokio::spawn(graceful.shutdown()));
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Stops the streams and the claim loop, gives requests and tasks the grace period, hands
/// the redeliverable tasks still running over to another instance and fails the others,
/// ends the listens (after those changes), and lets the connections send what they owe.
pub(crate) async fn shut_down(app: &Arc<App>, stop: &watch::Sender<bool>) {
    let grace = app.limits.shutdown_grace;
    let running_at_start = app.tasks.handlers_running();
    // The claim loop sees this and claims nothing more.
    let _ = stop.send(true);
    let claims = app
        .claims
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let claims_ended = tokio::task::spawn_blocking(move || {
        claims.is_none_or(|claims| claims.join_within(grace + CLAIM_LOOP_END))
    });
    let connections = lock(&app.connections).take();
    let deadline = tokio::time::Instant::now() + grace;
    while app.tasks.handlers_running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A task claimed while the loop was stopping is running here now, and ended below.
    if !claims_ended.await.unwrap_or(false) {
        log::warn!("shutdown: the claim loop did not end in time");
    }
    let (server, tasks) = (Arc::clone(&app.server), Arc::clone(&app.tasks));
    let ending = tokio::task::spawn_blocking(move || {
        tasks.end_all(&server, "the server shut down before the task finished")
    })
    .await
    .unwrap_or_default();
    let (handed, failed) = (ending.handed_over.len(), ending.failed.len());
    let finished = running_at_start.saturating_sub(handed + failed);
    let ids = |tasks: &[mcp_tasks::TaskId]| {
        tasks
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    log::info!(
        "shutdown: {finished} running task(s) finished within the grace period, {handed} \
         handed over to another instance{}{}, {failed} failed at the deadline{}{}",
        if handed > 0 { ": " } else { "" },
        ids(&ending.handed_over),
        if failed > 0 { ": " } else { "" },
        ids(&ending.failed),
    );
    // The listens carry those ends, then their result: over a shared store a change comes
    // back through the store's feed, so it gets a moment to arrive.
    if app.listens.open_count() > 0 && app.server.is_shared() {
        tokio::time::sleep(LISTEN_SETTLE).await;
    }
    app.listens.close_all();
    // Their waiters are answered now; give the connections a moment to send it.
    let rest = deadline.saturating_duration_since(tokio::time::Instant::now()) + FLUSH;
    if let Some(connections) = connections
        && tokio::time::timeout(rest, connections).await.is_err()
    {
        log::info!("shutdown: connections still open after the grace period were closed");
    }
}

/// A future that completes on SIGTERM or SIGINT. The signals are listened for from this
/// call on (call it before saying the server listens, so that a signal sent right after
/// shuts it down gracefully instead of killing it); inside a tokio runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind| match signal(kind) {
        Ok(signal) => Some(signal),
        Err(err) => {
            log::warn!("cannot listen for a signal ({err}): shut down with SIGKILL");
            None
        }
    };
    let (mut term, mut int) = (
        listen(SignalKind::terminate()),
        listen(SignalKind::interrupt()),
    );
    async move {
        async fn next(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let name = tokio::select! {
            () = next(term.as_mut()) => "SIGTERM",
            () = next(int.as_mut()) => "SIGINT",
        };
        log::info!("{name}: shutting down");
    }
}

/// Binds `addr` with a listen backlog of 4,096 (the usual 128 makes a burst of clients
/// wait for SYN retransmits).
///
/// # Errors
/// The address does not resolve or cannot be bound.
pub async fn bind(addr: &str) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(addr).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr).and_then(|()| socket.listen(BACKLOG)) {
            Ok(listener) => return Ok(listener),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "the address resolves to nothing")
    }))
}
