//! Connections to Redis: a pool of request connections, each bounded by the I/O timeout,
//! the changes sent on the shared connection ([`mux`](crate::mux)), and the one retry of
//! a request whose connection broke (see the crate docs, "Connections" and "Faults").

use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks::Error;
use redis::{Client, Connection};

use crate::driver::RedisDriver;

/// The longest a connection attempt takes (or the I/O timeout, if shorter).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection whose every request is answered within `io_timeout` or fails.
pub(crate) fn connect(client: &Client, io_timeout: Duration) -> redis::RedisResult<Connection> {
    let connection = client.get_connection_with_timeout(io_timeout.min(CONNECT_TIMEOUT))?;
    connection.set_read_timeout(Some(io_timeout))?;
    connection.set_write_timeout(Some(io_timeout))?;
    Ok(connection)
}

/// A Redis client's error as the store-unavailable error, keeping it as the source.
pub(crate) fn store_error(err: redis::RedisError) -> Error {
    let message = if err.is_timeout() {
        "Redis did not answer in time"
    } else if is_broken(&err) {
        "the connection to Redis failed"
    } else {
        "Redis refused the request"
    };
    Error::store_caused(message, err)
}

/// Whether a failed request leaves its connection unusable (and the others of the pool
/// suspect): an I/O error or a dropped connection.
pub(crate) fn is_broken(err: &redis::RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_unrecoverable_error()
}

impl RedisDriver {
    /// Runs `f` on a pooled connection (a fresh one if none is pooled). If the connection
    /// breaks (Redis restarted, or the connection was cut), every pooled connection is
    /// dropped, since they are all as old as the broken one, and `f` runs once more on a
    /// fresh connection; a fresh connection that broke while it was being made counts as
    /// the first attempt the same way, as it does for a change
    /// ([`change`](Self::change)). Replaying a write is safe: every script recognizes its
    /// own write id and answers as the first attempt did (see [`scripts`](crate::scripts)).
    pub(crate) fn with<T>(
        &self,
        mut f: impl FnMut(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, Error> {
        let first = match self.pool().pop() {
            Some(connection) => Ok(connection),
            None => connect(&self.client, self.io_timeout),
        };
        let (mut connection, mut result) = match first {
            Ok(mut connection) => {
                let result = self.when_ready(&mut connection, &mut f);
                (Some(connection), result)
            }
            Err(err) => (None, Err(err)),
        };
        if let Err(err) = &result
            && is_broken(err)
        {
            if connection.is_some() {
                self.broke();
            }
            let mut fresh = self.connect()?;
            result = self.when_ready(&mut fresh, &mut f);
            connection = Some(fresh);
        }
        match (&result, connection) {
            (Err(err), Some(_)) if is_broken(err) => self.broke(),
            (_, Some(connection)) => self.pool().push(connection),
            (_, None) => {}
        }
        result.map_err(store_error)
    }

    /// Runs `cmd`, an `EVALSHA` of `script` (a create or a commit), on the instance's
    /// shared connection, with the faults handled as [`with`](Self::with) does: sent once
    /// more if its connection broke, again with backoff while Redis cannot serve yet, and
    /// after loading the script where Redis does not know it (`NOSCRIPT`: a restarted or
    /// flushed Redis), as [`Script::invoke`](redis::Script::invoke) does.
    pub(crate) fn change<T: redis::FromRedisValue>(
        &self,
        script: &redis::Script,
        cmd: &redis::Cmd,
    ) -> Result<T, Error> {
        let attempt = || {
            self.when_ready(&mut (), &mut |_| {
                match self.mux.request(self, cmd)?.extract_error() {
                    Err(err)
                        if err.kind()
                            == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                    {
                        self.with(|connection| script.load(connection))
                            .map_err(|_| err)?;
                        self.mux.request(self, cmd)?.extract_error()
                    }
                    reply => reply,
                }
                .and_then(|value| Ok(redis::from_redis_value(value)?))
            })
        };
        let mut result = attempt();
        if let Err(err) = &result
            && is_broken(err)
        {
            result = attempt();
        }
        result.map_err(store_error)
    }

    /// Runs `f` on `connection`, again (with backoff, for up to the I/O timeout) while
    /// Redis answers that it cannot serve yet and the request was not run: `LOADING` (a
    /// restarted Redis reading its AOF), `MASTERDOWN`, `TRYAGAIN`.
    pub(crate) fn when_ready<C, T>(
        &self,
        connection: &mut C,
        f: &mut impl FnMut(&mut C) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let deadline = Instant::now() + self.io_timeout;
        let mut backoff = Duration::from_millis(10);
        loop {
            match f(connection) {
                Err(err)
                    if matches!(err.retry_method(), redis::RetryMethod::WaitAndRetry)
                        && Instant::now() + backoff < deadline =>
                {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_millis(200));
                }
                result => return result,
            }
        }
    }

    pub(crate) fn pool(&self) -> MutexGuard<'_, Vec<Connection>> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection broke: forget the pooled ones.
    pub(crate) fn broke(&self) {
        self.broken.fetch_add(1, Ordering::Relaxed);
        self.pool().clear();
    }

    pub(crate) fn connect(&self) -> Result<Connection, Error> {
        connect(&self.client, self.io_timeout).map_err(store_error)
    }
}
