//! The engine: a bounded pool of connections that the calling thread drives itself
//! ([`direct`](crate::direct)), and a small tokio runtime of the store's own for the
//! announcer's connection and the migrations (the event thread drives the listening
//! connection itself). A
//! statement is written and its answer read by the thread that runs it, waiting on the
//! connection's socket, so it works from any thread, including a worker of another async
//! runtime (where `Handle::block_on`, and the blocking `postgres` crate built on it,
//! panic).

use std::future::Future;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_tasks::Error;
use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Config, Row};

use crate::direct::{Direct, DirectPool, Failed, Unavailable};

/// The parameters of one statement, owned (they cross to the store's runtime).
pub(crate) type Params = Vec<Box<dyn ToSql + Send + Sync>>;

/// The application name of the pool's connections (`pg_stat_activity` shows it).
pub const POOL_NAME: &str = "mcp-tasks";

/// The runtime and the pool. Dropping it stops the runtime without waiting (it may be
/// dropped inside another runtime, where a blocking shutdown would panic).
pub(crate) struct Engine {
    runtime: Option<Runtime>,
    pool: DirectPool,
    pub(crate) config: Config,
    pub(crate) io_timeout: Duration,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Whether `err` means the connection is unusable (closed, reset, refused, the server
/// shutting down or starting up): the statement may be sent again on a fresh one.
pub(crate) fn is_connection_error(err: &tokio_postgres::Error) -> bool {
    if err.is_closed() {
        return true;
    }
    match err.code() {
        Some(code) => {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                ]
                .contains(code)
        }
        // No SQL state: the connection's I/O failed, or something of this side (a value
        // that does not convert), which another connection would not mend.
        None => std::error::Error::source(err).is_some_and(|source| source.is::<std::io::Error>()),
    }
}

/// Why a statement failed, as a store error keeping the client's error as its source.
enum Failure {
    /// The connection broke, or none could be had: worth one more try on a fresh one.
    Connection(Error),
    /// Anything else (the statement itself failed): final.
    Other(Error),
}

/// Counts a pooled connection in use out of the pool if it is dropped rather than given
/// back (broken, or a panic on the way).
struct InUse<'a> {
    pool: &'a DirectPool,
    given_back: bool,
}

impl InUse<'_> {
    fn give_back(mut self, direct: Direct) {
        self.given_back = true;
        self.pool.put(direct);
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        if !self.given_back {
            self.pool.discard();
        }
    }
}

impl Engine {
    /// Starts the runtime (one worker thread, for the announcer and migrations) and the
    /// pool of at most `pool_size` connections to `config`.
    pub(crate) fn start(
        mut config: Config,
        pool_size: usize,
        io_timeout: Duration,
    ) -> Result<Engine, Error> {
        // The server gives up a statement the client stopped waiting for, too.
        // (After the URL's own `options`, if any.)
        let statement_timeout = format!("-c statement_timeout={}", io_timeout.as_millis().max(1));
        let options = match config.get_options() {
            Some(own) => format!("{own} {statement_timeout}"),
            None => statement_timeout,
        };
        config
            .options(options)
            .application_name(POOL_NAME)
            .connect_timeout(io_timeout)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10));
        // The announcer and migrations only (statements run on their callers' threads).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp-tasks-postgres")
            .enable_all()
            .build()
            .map_err(|err| {
                Error::store_caused("cannot start the PostgreSQL store's runtime", err)
            })?;
        Ok(Engine {
            runtime: Some(runtime),
            pool: DirectPool::new(config.clone(), pool_size),
            config,
            io_timeout,
        })
    }

    /// Runs `future` on the store's runtime and blocks until it answers. Safe on any
    /// thread: it never enters a runtime, it only waits on a channel.
    pub(crate) fn block_on<T, F>(&self, future: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(Error::store("the PostgreSQL store is shut down"));
        };
        let (answer, answered) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = answer.send(future.await);
        });
        answered
            .recv()
            .unwrap_or_else(|_| Err(Error::store("the PostgreSQL store is shut down")))
    }

    /// Spawns `future` on the store's runtime (background work: the announcer).
    pub(crate) fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if let Some(runtime) = &self.runtime {
            runtime.spawn(future);
        }
    }

    /// Runs one statement (prepared once per connection) on the calling thread and
    /// answers its rows. A broken connection drops every idle one of the pool (all are as
    /// old as it) and the statement is sent once more on a fresh connection: statements
    /// that write carry a write id, so a replay of one that was applied answers as the
    /// first did.
    pub(crate) fn query(&self, sql: &Arc<str>, params: &Params) -> Result<Vec<Row>, Error> {
        self.query_typed(sql, &[], params)
    }

    /// [`query`](Engine::query) with the types of the statement's parameters given (the
    /// first `types.len()` of them), where the statement's text does not say them all.
    pub(crate) fn query_typed(
        &self,
        sql: &Arc<str>,
        types: &[Type],
        params: &Params,
    ) -> Result<Vec<Row>, Error> {
        let refs: Vec<&(dyn ToSql + Sync)> = params
            .iter()
            .map(|param| param.as_ref() as &(dyn ToSql + Sync))
            .collect();
        match self.once(sql, types, &refs) {
            Ok(rows) => Ok(rows),
            Err(Failure::Other(error)) => Err(error),
            Err(Failure::Connection(_)) => {
                self.pool.clear_idle();
                self.once(sql, types, &refs)
                    .map_err(|(Failure::Other(error) | Failure::Connection(error))| error)
            }
        }
    }

    /// One attempt of a statement on a pooled connection, bounded by the I/O timeout.
    fn once(
        &self,
        sql: &Arc<str>,
        types: &[Type],
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Failure> {
        let deadline = Instant::now() + self.io_timeout;
        let direct = match self.pool.get(deadline) {
            Ok(direct) => direct,
            Err(Unavailable::Busy) => {
                return Err(Failure::Other(Error::store(format!(
                    "no connection to PostgreSQL was free within the I/O timeout ({:?})",
                    self.io_timeout
                ))));
            }
            Err(Unavailable::Connect(err)) => {
                return Err(Failure::Connection(Error::store_caused(
                    "cannot get a connection to PostgreSQL",
                    err,
                )));
            }
        };
        let mut direct = direct;
        let in_use = InUse {
            pool: &self.pool,
            given_back: false,
        };
        match direct.query(sql, types, params, deadline) {
            Ok(rows) => {
                in_use.give_back(direct);
                Ok(rows)
            }
            // The connection may still carry the statement's answer: never reused
            // (dropped here, and counted out by `in_use`).
            Err(Failed::TimedOut) => Err(Failure::Connection(Error::store(format!(
                "PostgreSQL did not answer within the I/O timeout ({:?})",
                self.io_timeout
            )))),
            Err(err) if err.is_connection() => Err(Failure::Connection(Error::store_caused(
                "the connection to PostgreSQL failed",
                err,
            ))),
            Err(err) => {
                in_use.give_back(direct);
                Err(Failure::Other(Error::store_caused(
                    "PostgreSQL refused a statement of the task store",
                    err,
                )))
            }
        }
    }
}
