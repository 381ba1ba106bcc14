//! Leases and redelivery on PostgreSQL: the same contract as the Redis store's (see the
//! crate docs), on rows. A leased task's row holds the deadline of its lease; each
//! instance's lease thread, every renewal interval, renews every lease its live handles
//! hold in one call (`renew_leases`), fails the tasks whose lease lapsed (a write that
//! lands only while the lease is still lapsed), files the redeliverable ones with attempts
//! left as claimable, and deletes expired rows.

use std::sync::Weak;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{self, Claimables, DecidedOn, Lapse, LeaseBook, Renewal, owner_of_tag};
use mcp_tasks::{Claim, ClaimBackoff, Error, Owner};

use crate::Inner;
use crate::rows::{Condition, Wrote, column, millis, unexpected};

/// How often a claim is decided again when other writers keep changing the task first.
const CLAIM_ATTEMPTS: usize = 8;

/// The most lapsed leases one reaper round reads.
const REAP_BATCH: i64 = 100;

/// The most expired rows one sweep deletes.
const SWEEP_BATCH: i64 = 1_000;

/// A claimable task: its id and its owner's tag.
pub(crate) type Candidate = (uuid::Uuid, String);

/// An instance's leases: what it holds, how long they last, what it may claim.
pub(crate) struct Leases {
    pub(crate) lease: Duration,
    pub(crate) backoff: ClaimBackoff,
    pub(crate) book: LeaseBook<uuid::Uuid>,
    pub(crate) claimables: Claimables<Candidate>,
}

impl Leases {
    /// The lease length in milliseconds.
    pub(crate) fn lease_ms(&self) -> i64 {
        millis(
            u64::try_from(self.lease.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        )
    }
}

impl Inner {
    /// One renewal round, in one round trip.
    fn renew_leases(&self, leases: &Leases) -> Result<(), Error> {
        let round = leases.book.round();
        if round.is_empty() {
            return Ok(());
        }
        let ids: Vec<uuid::Uuid> = round.iter().map(|(id, _, _)| *id).collect();
        let ops: Vec<String> = round
            .iter()
            .map(|(_, hold, _)| {
                if *hold == mcp_tasks::backend::Hold::Release {
                    "r"
                } else {
                    "k"
                }
                .to_owned()
            })
            .collect();
        let attempts: Vec<Option<i32>> = round
            .iter()
            .map(|(_, _, attempt)| attempt.map(|a| i32::try_from(a).unwrap_or(i32::MAX)))
            .collect();
        let verdicts = self.renew(ids, ops, attempts, leases)?;
        if verdicts.len() != round.len() {
            return Err(unexpected("a renewal answered another number of leases"));
        }
        leases.book.settle(round, verdicts);
        Ok(())
    }

    /// Sends a renewal call; answers a verdict per lease.
    fn renew(
        &self,
        ids: Vec<uuid::Uuid>,
        ops: Vec<String>,
        attempts: Vec<Option<i32>>,
        leases: &Leases,
    ) -> Result<Vec<Renewal>, Error> {
        let rows = self.query(
            &self.sql.renew,
            vec![
                Box::new(ids),
                Box::new(ops),
                Box::new(attempts),
                Box::new(leases.lease_ms()),
                Box::new(self.channel.clone()),
            ],
        )?;
        let row = rows.first().ok_or_else(|| unexpected("no renewal"))?;
        let verdicts: Vec<String> = column(row, 0)?;
        Ok(verdicts
            .iter()
            .map(|verdict| match verdict.as_str() {
                "ok" => Renewal::Renewed,
                "released" => Renewal::Released,
                "lapsed" => Renewal::Lapsed,
                _ => Renewal::Gone,
            })
            .collect())
    }

    /// One reaper round: fails the tasks whose lease lapsed (any instance's), and files
    /// the redeliverable ones with attempts left as candidates for a claim.
    fn reap_lapsed(&self, leases: &Leases) -> Result<usize, Error> {
        let rows = self.query(&self.sql.lapsed, vec![Box::new(REAP_BATCH)])?;
        let mut failed = 0;
        for row in &rows {
            let id: uuid::Uuid = column(row, 0)?;
            let tag: String = column(row, 1)?;
            let deadline: i64 = column(row, 2)?;
            let candidate = (id, tag);
            if leases.claimables.contains(&candidate) {
                continue;
            }
            if self.settle_lapsed(leases, candidate, deadline == 0)? {
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// Settles a task whose lease lapsed (`handed_over`: at once, by its instance): a
    /// redeliverable task with attempts left is filed as claimable, any other fails if
    /// its lease is still lapsed when the write lands ([`backend::lapse`]). Answers whether
    /// it failed the task. One attempt: a task changed or renewed meanwhile is looked at
    /// again next round.
    fn settle_lapsed(
        &self,
        leases: &Leases,
        candidate: Candidate,
        handed_over: bool,
    ) -> Result<bool, Error> {
        let Some(owner) = owner_of_tag(&candidate.1) else {
            return Ok(false);
        };
        let id = candidate.0;
        let Some(read) = self.read(&owner, id)? else {
            return Ok(false);
        };
        let on = DecidedOn::new(read.version, &read.task);
        match backend::lapse(read.task, &leases.backoff, handed_over) {
            Lapse::Claimable(wait) => {
                leases.claimables.file(candidate, Instant::now() + wait);
                Ok(false)
            }
            Lapse::Fail(task) => Ok(matches!(
                self.write(&owner, id, on, &task, true, &Condition::Lapsed)?,
                Wrote::Ok(_)
            )),
            Lapse::Nothing => Ok(false),
        }
    }

    /// Claims a due candidate, if any.
    pub(crate) fn claim_due(&self, leases: &Leases) -> Result<Option<Claim>, Error> {
        while let Some(candidate) = leases.claimables.take_due() {
            if let Some(claim) = self.claim_candidate(leases, &candidate)? {
                return Ok(Some(claim));
            }
        }
        Ok(None)
    }

    /// Claims a task for its next attempt, if its lease lapsed long enough ago and it has
    /// attempts left: a write that lands only at the version decided on and then holds a
    /// new lease; of two instances claiming at once, the second finds a newer version,
    /// decides again on it, and finds the lease held.
    fn claim_candidate(
        &self,
        leases: &Leases,
        (id, tag): &Candidate,
    ) -> Result<Option<Claim>, Error> {
        let Some(owner) = owner_of_tag(tag) else {
            return Ok(None);
        };
        let mut known = self
            .copies
            .recall(id, &id.to_string())
            .map(|(version, task)| (i64::try_from(version).unwrap_or(0), task));
        for _ in 0..CLAIM_ATTEMPTS {
            let (version, task) = match known.take() {
                Some(known) => known,
                None => match self.read(&owner, *id)? {
                    Some(read) => (read.version, read.task),
                    None => return Ok(None),
                },
            };
            let on = DecidedOn::new(version, &task);
            let Some((claimed, backoff, attempt)) = backend::claim_next(task, &leases.backoff)
            else {
                return Ok(None);
            };
            let condition = Condition::Claim {
                attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
                backoff_ms: millis(u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX)),
                lease_ms: leases.lease_ms(),
            };
            match self.write(&owner, *id, on, &claimed, true, &condition)? {
                Wrote::Claimed(stored, job) => {
                    let lease = leases.book.hold(*id, Some(attempt));
                    return backend::claim_of(owner, stored, &job, lease).map(Some);
                }
                Wrote::Ok(_) | Wrote::Stale(None) => return Ok(None),
                Wrote::Stale(Some(current)) => known = Some(current),
            }
        }
        Ok(None)
    }

    /// Hands the lease of the task `id` over: it lapses at once, and every instance is
    /// told. Answers whether it did.
    pub(crate) fn hand_over_task(
        &self,
        leases: &Leases,
        owner: &Owner,
        id: uuid::Uuid,
    ) -> Result<bool, Error> {
        let Some(attempt) = leases.book.renewing(&id) else {
            return Ok(false);
        };
        let Some(read) = self.read(owner, id)? else {
            return Ok(false);
        };
        if read.task.is_terminal() || !read.task.attempts().is_some_and(|a| a.left()) {
            return Ok(false);
        }
        let attempt = attempt.map(|a| i32::try_from(a).unwrap_or(i32::MAX));
        let verdicts = self.renew(vec![id], vec!["h".to_owned()], vec![attempt], leases)?;
        let verdict = verdicts.first().copied();
        if verdict != Some(Renewal::Renewed) {
            leases.book.forget(&id);
        }
        Ok(verdict == Some(Renewal::Released))
    }

    /// Deletes expired rows (any instance's), a batch per round.
    fn sweep(&self) -> Result<(), Error> {
        self.query(&self.sql.sweep, vec![Box::new(SWEEP_BATCH)])
            .map(|_| ())
    }
}

/// The lease thread of an instance: renews, reaps and sweeps every interval until the
/// store is dropped. A round that cannot reach PostgreSQL is tried again next interval.
pub(crate) fn run(inner: &Weak<Inner>, interval: Duration) {
    loop {
        std::thread::sleep(interval);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if let Some(leases) = &inner.leases {
            let _ = inner.renew_leases(leases);
            let _ = inner.reap_lapsed(leases);
        }
        let _ = inner.sweep();
    }
}
