//! The secret `tasks/list` cursors are signed with: configured by the operator, or shared
//! by the instances through the engine ([`Driver::share_secret`]) and asked for again
//! after a disconnection (a storage that forgets on a restart may have lost it).
//!
//! An instance keeps two secrets: the current one, which signs new cursors, and the one it
//! held before the shared secret changed under it, so that cursors it issued before are
//! still accepted. So every instance accepts every cursor issued since the storage last
//! lost its secret, whenever it was built.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::driver::Driver;
use super::store::Inner;
use crate::error::Error;
use crate::store::{CursorKey, Owner};

/// How often, at most, a cursor this instance cannot check makes it ask for the shared
/// secret again (when it saw no disconnection meanwhile).
const SECRET_RECHECK: Duration = Duration::from_secs(1);

/// The secrets `tasks/list` cursors are signed with.
pub(crate) struct Cursors {
    /// Whether the secret is shared through the engine (else it is configured).
    shared: bool,
    state: Mutex<Secrets>,
}

struct Secrets {
    /// Signs new cursors; accepted.
    current: u128,
    /// The one held before `current`: accepted.
    previous: Option<u128>,
    /// When the shared secret was last asked for, and the disconnections seen by then.
    checked_at: Instant,
    checked_after: u64,
}

impl Cursors {
    /// The configured secret, or the one `driver` shares.
    pub(crate) fn agree(driver: &impl Driver, configured: Option<&str>) -> Result<Self, Error> {
        let (shared, current) = match configured {
            Some(passphrase) => (false, CursorKey::derive_secret(passphrase)),
            None => (true, driver.share_secret(uuid::Uuid::new_v4().as_u128())?),
        };
        Ok(Cursors {
            shared,
            state: Mutex::new(Secrets {
                current,
                previous: None,
                checked_at: Instant::now(),
                checked_after: driver.disconnections(),
            }),
        })
    }

    /// Poison policy: the critical sections only copy numbers.
    fn lock(&self) -> MutexGuard<'_, Secrets> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A cursor of `owner` naming `position`.
    pub(crate) fn encode(&self, owner: &Owner, position: u64) -> String {
        CursorKey::from_secret(self.lock().current).encode(owner, position)
    }

    /// The position `cursor` names, under either secret.
    fn decode(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
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

impl<D: Driver> Inner<D> {
    /// The disconnections this instance has seen (its driver's and its feed's).
    fn disconnections(&self) -> u64 {
        self.driver.disconnections() + self.feed.epoch()
    }

    /// Asks for the shared secret again if this instance saw a disconnection since it last
    /// did, or, when `doubt` (a cursor it cannot check), if it last did over
    /// [`SECRET_RECHECK`] ago; adopts the one answered, keeping the one it held as the
    /// previous. Answers whether the secret changed.
    pub(crate) fn recheck_secret(&self, doubt: bool) -> Result<bool, Error> {
        if !self.cursors.shared {
            return Ok(false);
        }
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
        let shared = self.driver.share_secret(mine)?;
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

    /// The position `cursor` continues after, under any secret this instance holds (asked
    /// for again once if none fits).
    pub(crate) fn decode_cursor(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        match self.cursors.decode(owner, cursor) {
            Err(err) if self.recheck_secret(true)? => {
                self.cursors.decode(owner, cursor).map_err(|_| err)
            }
            decoded => decoded,
        }
    }
}
