//! The secret `tasks/list` cursors are signed with: configured by the operator, or shared
//! by the instances through Redis and re-read after a disconnection (see the crate docs,
//! "Cursors across Redis restarts").

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks::backend::CursorKey;
use mcp_tasks::{Error, Owner};
use redis::Connection;

use crate::Inner;

/// How often, at most, a cursor this instance cannot check makes it read the shared
/// cursor secret again (when it saw no disconnection meanwhile).
pub(crate) const SECRET_RECHECK: Duration = Duration::from_secs(1);

/// Shares `mine` as the cursor secret under `key` unless one is there; returns the one
/// there (one round trip, atomic).
pub(crate) fn share_secret(
    connection: &mut Connection,
    key: &str,
    mine: u128,
) -> redis::RedisResult<String> {
    let (_, shared): (Option<String>, String) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(key)
        .arg(format!("{mine:032x}"))
        .arg("NX")
        .cmd("GET")
        .arg(key)
        .query(connection)?;
    Ok(shared)
}

pub(crate) fn parse_secret(key: &str, text: &str) -> Result<u128, Error> {
    u128::from_str_radix(text, 16).map_err(|_| {
        Error::store(format!(
            "the shared cursor secret is not one this crate wrote: delete the key `{key}`"
        ))
    })
}

/// The 128-bit key of an operator's cursor secret (the core's derivation, the same in
/// every backend).
pub(crate) fn derive_secret(secret: &str) -> u128 {
    CursorKey::derive_secret(secret)
}

/// The secrets `tasks/list` cursors are signed with.
pub(crate) struct Cursors {
    /// Where the shared secret lives; `None` when the operator configured one.
    pub(crate) key: Option<String>,
    pub(crate) state: Mutex<Secrets>,
}

pub(crate) struct Secrets {
    /// Signs new cursors; accepted.
    pub(crate) current: u128,
    /// The one held before `current` (a Redis restart without persistence): accepted.
    pub(crate) previous: Option<u128>,
    /// When the shared secret was last read, and the disconnections seen by then.
    pub(crate) checked_at: Instant,
    pub(crate) checked_after: u64,
}

impl Cursors {
    pub(crate) fn fixed(secret: u128) -> Self {
        Self::new(None, secret)
    }

    pub(crate) fn shared(key: String, secret: u128) -> Self {
        Self::new(Some(key), secret)
    }

    pub(crate) fn new(key: Option<String>, secret: u128) -> Self {
        Cursors {
            key,
            state: Mutex::new(Secrets {
                current: secret,
                previous: None,
                checked_at: Instant::now(),
                checked_after: 0,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Secrets> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn encode(&self, owner: &Owner, seq: u64) -> String {
        CursorKey::from_secret(self.lock().current).encode(owner, seq)
    }

    pub(crate) fn decode(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        let (current, previous) = {
            let state = self.lock();
            (state.current, state.previous)
        };
        let first = CursorKey::from_secret(current).decode(owner, cursor);
        match previous {
            Some(previous) if first.is_err() => CursorKey::from_secret(previous)
                .decode(owner, cursor)
                .or(first),
            _ => first,
        }
    }
}

impl Inner {
    /// Reads the shared cursor secret again if this instance saw a disconnection since it
    /// last did (Redis may have restarted and lost it), or, when `doubt` (a cursor it
    /// cannot check), if it last did over [`SECRET_RECHECK`] ago. Re-shares its own secret
    /// if the key is missing, adopts the one there otherwise (keeping the one it held as
    /// the previous). Answers whether the secret changed.
    pub(crate) fn recheck_secret(&self, doubt: bool) -> Result<bool, Error> {
        let Some(key) = &self.cursors.key else {
            return Ok(false);
        };
        let seen = self.disconnections();
        let mine = {
            let state = self.cursors.lock();
            let due = state.checked_after != seen
                || (doubt && state.checked_at.elapsed() >= SECRET_RECHECK);
            if !due {
                return Ok(false);
            }
            state.current
        };
        let shared = self.with(|connection| share_secret(connection, key, mine))?;
        let shared = parse_secret(key, &shared)?;
        let mut state = self.cursors.lock();
        state.checked_at = Instant::now();
        state.checked_after = seen;
        if shared == state.current {
            return Ok(false);
        }
        state.previous = Some(state.current);
        state.current = shared;
        Ok(true)
    }

    /// The sequence number `cursor` continues after, under any secret this instance holds
    /// (read again once if none fits).
    pub(crate) fn decode_cursor(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        match self.cursors.decode(owner, cursor) {
            Err(err) if self.recheck_secret(true)? => {
                self.cursors.decode(owner, cursor).map_err(|_| err)
            }
            decoded => decoded,
        }
    }
}
