//! [`Lease`]: the claim a typed handle holds on its running task in a shared store.
//!
//! A store shared by several server instances cannot see a handler die with its process:
//! the task would stay `working` until its TTL. So a backend that can (the Redis store)
//! gives the instance that creates a task for a handle a lease on it, renews it in the
//! background while the handle lives, and fails the task once the lease lapses. The
//! in-process registry needs none: its tasks die with the process that runs them.

use std::fmt;

/// What a backend does when a handle lets go of its lease.
pub(crate) trait LeaseHolder: Send + Sync {
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
pub struct Lease(Option<Box<dyn LeaseHolder>>);

impl Lease {
    /// No lease: the task is not watched for its handler's death.
    pub fn none() -> Self {
        Lease(None)
    }

    /// A lease a backend renews until the holder ends or releases it.
    #[cfg(feature = "redis")]
    pub(crate) fn held(holder: Box<dyn LeaseHolder>) -> Self {
        Lease(Some(holder))
    }

    /// Whether the store renews this lease (false for [`Lease::none`]).
    #[must_use]
    pub fn is_held(&self) -> bool {
        self.0.is_some()
    }

    /// Gives the lease up in the store: the task is driven by id from now on and never
    /// lapses.
    pub(crate) fn release(mut self) {
        if let Some(holder) = self.0.take() {
            holder.release();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(holder) = self.0.take() {
            holder.end();
        }
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("held", &self.is_held())
            .finish()
    }
}
