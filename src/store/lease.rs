//! [`Lease`]: the claim a typed handle holds on its running task in a shared store.
//!
//! A store shared by several server instances cannot see a handler die with its process:
//! the task would stay `working` until its TTL. So a backend that can (the Redis store)
//! gives the instance that creates a task for a handle a lease on it, renews it in the
//! background while the handle lives, and fails the task once the lease lapses. The
//! in-process registry needs none: its tasks die with the process that runs them.

use std::fmt;
use std::time::Duration;

use crate::error::Error;

/// What a backend does when a handle lets go of its lease: implemented by a backend's
/// lease bookkeeping and put in a [`Lease`] with [`Lease::held`].
pub trait LeaseHolder: Send + Sync {
    /// The handle is done with the task (finished it, failed it, or was dropped): stop
    /// renewing. A task still unfinished then fails when the lease lapses.
    fn end(self: Box<Self>);

    /// The handle was detached: the task stays as it is, to be driven by id, so the lease
    /// is given up in the store (it never lapses).
    fn release(self: Box<Self>);
}

/// A running task's lease, held by its [`TaskHandle`](crate::TaskHandle) for as long as
/// the handle drives the task ([`TaskStore::insert_leased`](crate::TaskStore::insert_leased)).
///
/// Backends without leases (the in-process registry, and any store by default) hand out
/// [`Lease::none`]. Dropping a lease stops its renewal.
#[must_use = "dropping a lease stops its renewal"]
pub struct Lease {
    holder: Option<Box<dyn LeaseHolder>>,
    /// The attempt of a redeliverable task this lease runs.
    attempt: Option<u32>,
}

impl Lease {
    /// No lease: the task is not watched for its handler's death.
    pub fn none() -> Self {
        Lease {
            holder: None,
            attempt: None,
        }
    }

    /// A lease a backend renews until the holder ends or releases it.
    pub fn held(holder: Box<dyn LeaseHolder>) -> Self {
        Lease {
            holder: Some(holder),
            attempt: None,
        }
    }

    /// The same lease, for attempt `attempt` of a redeliverable task: every write of the
    /// handle holding it is fenced by the attempt ([`Error::Superseded`] once the task
    /// runs another).
    pub fn for_attempt(mut self, attempt: u32) -> Self {
        self.attempt = Some(attempt);
        self
    }

    /// Whether the store renews this lease (false for [`Lease::none`]).
    #[must_use]
    pub fn is_held(&self) -> bool {
        self.holder.is_some()
    }

    /// The attempt this lease runs, for a redeliverable task.
    #[must_use]
    pub fn attempt(&self) -> Option<u32> {
        self.attempt
    }

    /// Gives the lease up in the store: the task is driven by id from now on and never
    /// lapses.
    pub(crate) fn release(mut self) {
        if let Some(holder) = self.holder.take() {
            holder.release();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(holder) = self.holder.take() {
            holder.end();
        }
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("held", &self.is_held())
            .field("attempt", &self.attempt)
            .finish()
    }
}

/// What happens to a task whose handler's instance stops renewing its lease.
///
/// The default is [`LeasePolicy::fail_after`] 40 s, renewed every 5 s: a task whose
/// instance died fails within 45 s, and a lease survives an instance losing Redis for
/// up to 35 s, longer than the default
/// outage timeout a shared store retries finishing writes for (30 s by default in the
/// Redis store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeasePolicy {
    /// The lease length and the renewal interval; `None`: no leases.
    lease: Option<(Duration, Duration)>,
}

impl Default for LeasePolicy {
    fn default() -> Self {
        LeasePolicy::fail_after(Duration::from_secs(40))
    }
}

impl LeasePolicy {
    /// Leases of this length, renewed every eighth of it: a task fails with `-32603`
    /// within `lease` plus one renewal interval of its instance's death. Choose it longer
    /// than any Redis outage an instance should ride out with its tasks running (minus
    /// one interval), and than any pause of the process (a long GC-free stop, a
    /// suspended VM): a lease that lapses fails a task that was still running.
    #[must_use]
    pub const fn fail_after(lease: Duration) -> Self {
        LeasePolicy {
            lease: Some((lease, Duration::from_nanos(lease.as_nanos() as u64 / 8))),
        }
    }

    /// The same leases, renewed at this interval (shorter: fewer missed renewals before a
    /// lease lapses, one round trip per interval and instance).
    #[must_use]
    pub const fn renewed_every(self, interval: Duration) -> Self {
        match self.lease {
            Some((lease, _)) => LeasePolicy {
                lease: Some((lease, interval)),
            },
            None => self,
        }
    }

    /// No leases: a task whose instance died stays as it was until its TTL, and with an
    /// unlimited TTL forever (requestors see it `working`). For stores whose handlers never
    /// die without finishing, or a Redis Cluster (leases keep a store-wide index, which a
    /// cluster cannot update with a task in one step).
    #[must_use]
    pub const fn leave_until_ttl() -> Self {
        LeasePolicy { lease: None }
    }

    /// The lease length, if there are leases.
    #[must_use]
    pub const fn lease(&self) -> Option<Duration> {
        match self.lease {
            Some((lease, _)) => Some(lease),
            None => None,
        }
    }

    /// The renewal interval, if there are leases.
    #[must_use]
    pub const fn renewal_interval(&self) -> Option<Duration> {
        match self.lease {
            Some((_, interval)) => Some(interval),
            None => None,
        }
    }

    /// Refuses a lease under 100 ms or a renewal interval that is zero or not shorter
    /// than the lease.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming what is wrong.
    pub fn validate(&self) -> Result<(), Error> {
        let Some((lease, interval)) = self.lease else {
            return Ok(());
        };
        if lease < Duration::from_millis(100) {
            return Err(Error::InvalidConfig(format!(
                "a lease of {lease:?} is shorter than 100 ms: every renewal would race its lapse"
            )));
        }
        if interval.is_zero() || interval >= lease {
            return Err(Error::InvalidConfig(format!(
                "the lease renewal interval {interval:?} must be above zero and shorter than \
                 the lease ({lease:?})"
            )));
        }
        Ok(())
    }
}
