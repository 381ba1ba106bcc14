//! Leases of a shared store: a task whose instance died fails (or, redeliverable with
//! attempts left, is claimed again), instead of staying `working` until its TTL.
//!
//! Each instance runs one lease thread that, every renewal interval:
//! 1. renews, in one driver call, the leases of every handle it holds (whatever their
//!    number), and gives up those of detached handles;
//! 2. asks the driver for lapsed leases (any instance's) and settles each
//!    ([`lapse`]): a redeliverable task with attempts left is filed as claimable once the
//!    [`ClaimBackoff`](crate::ClaimBackoff) of the attempt that stopped has passed; any
//!    other fails with `-32603`, in a write that lands only if the task is at the version
//!    read *and* its lease is still lapsed (a renewal that won the race, or any other
//!    writer, makes it step back);
//! 3. runs the driver's housekeeping ([`Driver::sweep`]).
//!
//! A claim decides the next attempt in the core ([`claim_next`]) and writes it with the
//! [`Condition::Claim`] of the driver's write: only if the lease lapsed at least the
//! back-off ago, and then with a new lease for the claiming instance, in the same step. Of
//! two instances claiming one task, the second finds a newer version, decides again on it,
//! and finds the lease held. A hand-over lapses the lease at once and tells every
//! instance (a [`ChangeEvent::Claimable`](super::ChangeEvent::Claimable)), which claims
//! without waiting for a lease round or a back-off.

use std::sync::Weak;
use std::time::{Duration, Instant};

use super::driver::{Condition, Driver, LapsedLease, LeaseCall, LeaseOp, TaskKey};
use super::settings::StoreSettings;
use super::store::{Inner, Landed};
use crate::error::Error;
use crate::store::lease_book::{Claimables, Hold, LeaseBook, Renewal};
use crate::store::versioned::{DecidedOn, Lapse, claim_next, claim_of, lapse};
use crate::store::{Claim, Owner};

/// How often a claim is decided again when other writers keep changing the task first.
const CLAIM_ATTEMPTS: usize = 8;

/// The most lapsed leases one driver call answers.
const REAP_BATCH: usize = 100;

/// The most batches of lapsed leases one round takes.
const REAP_ROUNDS: usize = 10;

/// An instance's leases: how long they last, what it holds, what it may claim.
pub(crate) struct Leases {
    pub(crate) lease: Duration,
    /// The leases this instance's handles hold.
    pub(crate) book: LeaseBook<TaskKey>,
    /// Tasks this instance may claim, with when.
    pub(crate) claimables: Claimables<TaskKey>,
}

impl Leases {
    /// The leases of a store with `settings`; `None` without leases.
    pub(crate) fn of(settings: &StoreSettings) -> Option<Self> {
        Some(Leases {
            lease: settings.leases().lease()?,
            book: LeaseBook::default(),
            claimables: Claimables::default(),
        })
    }
}

impl<D: Driver> Inner<D> {
    /// One renewal round: renews every held lease and sends pending releases, in one
    /// driver call; forgets those found gone, finished, released or lapsed.
    fn renew_leases(&self, leases: &Leases) -> Result<(), Error> {
        let round = leases.book.round();
        if round.is_empty() {
            return Ok(());
        }
        let calls: Vec<LeaseCall> = round
            .iter()
            .map(|(key, hold, attempt)| LeaseCall {
                key: key.clone(),
                op: match hold {
                    Hold::Renew => LeaseOp::Renew,
                    Hold::Release => LeaseOp::Release,
                },
                attempt: *attempt,
            })
            .collect();
        let verdicts = self.driver.renew(&calls, leases.lease)?;
        if verdicts.len() != round.len() {
            return Err(Error::store(format!(
                "a lease renewal answered {} verdicts for {} leases",
                verdicts.len(),
                round.len()
            )));
        }
        // A release asked for after this round went out is sent next round.
        leases.book.settle(round, verdicts);
        Ok(())
    }

    /// One reaper round: settles the tasks whose lease lapsed (any instance's), a batch
    /// after another while batches come back full of tasks it did not file yet.
    fn reap_lapsed(&self, leases: &Leases) -> Result<(), Error> {
        for _ in 0..REAP_ROUNDS {
            let lapsed = self.driver.lapsed(REAP_BATCH)?;
            let mut settled = 0;
            for LapsedLease { key, handed_over } in &lapsed {
                // A candidate filed already is not read again every round.
                if leases.claimables.contains(key) {
                    continue;
                }
                settled += 1;
                self.settle_lapsed(leases, key, *handed_over)?;
            }
            if lapsed.len() < REAP_BATCH || settled == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Settles the task under `key`, whose lease lapsed (`handed_over`: at once, by its
    /// instance): a redeliverable task with attempts left is filed as claimable (due after
    /// the back-off, at once if handed over); any other task fails, if its lease is still
    /// lapsed when the write lands ([`lapse`]). One attempt: a task changed or renewed
    /// meanwhile is looked at again next round.
    fn settle_lapsed(
        &self,
        leases: &Leases,
        key: &TaskKey,
        handed_over: bool,
    ) -> Result<(), Error> {
        let Some(read) = self.driver.read(key)? else {
            return Ok(());
        };
        let on = DecidedOn::new(read.version, &read.task);
        match lapse(read.task, &self.settings.backoff(), handed_over) {
            Lapse::Claimable(wait) => {
                leases.claimables.file(key.clone(), Instant::now() + wait);
            }
            Lapse::Fail(task) => {
                self.write(key, on, &task, true, Condition::Lapsed)?;
            }
            Lapse::Nothing => {}
        }
        Ok(())
    }

    /// Claims a due candidate, if any, unless an operator drained this instance (read
    /// from the driver before the first claim of each call: a task handed over by a drain
    /// is heard of after its flag was set, so it is never claimed back here); a drained
    /// instance drops its due candidates (a lease round files them again while they are
    /// still unclaimed).
    pub(crate) fn claim_due(&self, leases: &Leases) -> Result<Option<Claim>, Error> {
        let mut checked = false;
        while let Some(key) = leases.claimables.take_due() {
            if !checked {
                checked = true;
                let drained = match self.driver.drained() {
                    Ok(drained) => drained,
                    Err(err) => {
                        leases.claimables.file(key, Instant::now());
                        return Err(err);
                    }
                };
                if drained.iter().any(|name| name == self.settings.instance()) {
                    while leases.claimables.take_due().is_some() {}
                    return Ok(None);
                }
            }
            if let Some(claim) = self.claim_key(leases, key)? {
                return Ok(Some(claim));
            }
        }
        Ok(None)
    }

    /// Claims the task under `key` for its next attempt, if its lease lapsed long enough
    /// ago and it has attempts left ([`claim_next`]): one write when this instance knows
    /// the task's latest version.
    fn claim_key(&self, leases: &Leases, key: TaskKey) -> Result<Option<Claim>, Error> {
        let mut known = self.copies.recall(&key, &key.id().to_string());
        for _ in 0..CLAIM_ATTEMPTS {
            let (version, task) = match known.take() {
                Some(known) => known,
                None => match self.driver.read(&key)? {
                    Some(read) => (read.version, read.task),
                    None => return Ok(None),
                },
            };
            let on = DecidedOn::new(version, &task);
            let Some((claimed, backoff, attempt)) = claim_next(task, &self.settings.backoff())
            else {
                return Ok(None);
            };
            let condition = Condition::Claim {
                backoff,
                lease: leases.lease,
                attempt,
            };
            match self.write(&key, on, &claimed, true, condition)? {
                Landed::Stored(stored, job) => {
                    let owner: Owner = key.owner().clone();
                    let lease = leases.book.hold(key, Some(attempt));
                    return claim_of(owner, stored, job.as_deref().unwrap_or_default(), lease)
                        .map(Some);
                }
                Landed::Held | Landed::Stale(None) => return Ok(None),
                Landed::Stale(Some(current)) => known = Some(current),
            }
        }
        Ok(None)
    }

    /// Hands the lease of `owner`'s task `task_id` over (see
    /// [`TaskStore::hand_over`](crate::TaskStore::hand_over)): it lapses at once, and every
    /// instance is told. Answers whether it did.
    pub(crate) fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        let key = self.key(owner, task_id)?;
        let Some(leases) = &self.leases else {
            return Ok(false);
        };
        let Some(attempt) = leases.book.renewing(&key) else {
            return Ok(false);
        };
        let Some(read) = self.driver.read(&key)? else {
            return Ok(false);
        };
        if read.task.is_terminal() || !read.task.attempts().is_some_and(|a| a.left()) {
            return Ok(false);
        }
        let call = LeaseCall {
            key: key.clone(),
            op: LeaseOp::HandOver,
            attempt,
        };
        let verdict = self
            .driver
            .renew(std::slice::from_ref(&call), leases.lease)?
            .first()
            .copied();
        if verdict != Some(Renewal::Renewed) {
            leases.book.forget(&key);
        }
        Ok(verdict == Some(Renewal::Released))
    }
}

/// The lease thread of an instance: renews and reaps every interval, and runs the
/// driver's housekeeping, until the store is dropped. A round that cannot reach the engine
/// is simply tried again next interval.
pub(crate) fn run<D: Driver>(inner: &Weak<Inner<D>>, interval: Duration) {
    loop {
        std::thread::sleep(interval);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if let Some(leases) = &inner.leases {
            let _ = inner.renew_leases(leases);
            let _ = inner.reap_lapsed(leases);
        }
        let _ = inner.driver.sweep();
    }
}
