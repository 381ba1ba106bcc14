//! Leases and redelivery on PostgreSQL: the same contract as the Redis store's (see the
//! crate docs), on rows. A leased task's row holds the deadline of its lease; each
//! instance's lease thread, every renewal interval, renews every lease its live handles
//! hold in one call (`renew_leases`), fails the tasks whose lease lapsed (a write that
//! lands only while the lease is still lapsed), files the redeliverable ones with attempts
//! left as claimable, and deletes expired rows.

use std::sync::Weak;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{
    Claimables, LEASE_LAPSED, LeaseBook, Renewal, attempts_exhausted, owner_of_tag,
};
use mcp_tasks::{AnyTask, Claim, ClaimBackoff, Error, JsonObject, Owner, Step, Task, Update};

use crate::Inner;
use crate::rows::{Condition, DecidedOn, Written, column, millis, unexpected};

/// Why the last attempt of a redeliverable task stopped when its lease lapsed.
const LAPSED_WHY: &str = "its server instance stopped (its lease lapsed)";

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

    /// Settles a task whose lease lapsed (`handed_over`: at once, by its instance); see
    /// the Redis store's reaper, which this follows.
    fn settle_lapsed(
        &self,
        leases: &Leases,
        candidate: (uuid::Uuid, String),
        handed_over: bool,
    ) -> Result<bool, Error> {
        let Some(owner) = owner_of_tag(&candidate.1) else {
            return Ok(false);
        };
        let id = candidate.0;
        let Some(read) = self.read(&owner, id)? else {
            return Ok(false);
        };
        let message = match read.task.attempts() {
            Some(attempts) if attempts.left() && !read.task.is_terminal() => {
                let wait = if handed_over {
                    Duration::ZERO
                } else {
                    leases.backoff.after(attempts.attempt())
                };
                leases.claimables.file(candidate, Instant::now() + wait);
                return Ok(false);
            }
            Some(attempts) => attempts_exhausted(attempts, LAPSED_WHY),
            None => LEASE_LAPSED.to_owned(),
        };
        let at = read.task.last_updated_at();
        let on = DecidedOn::new(read.version, &read.task);
        let task = match Update::abandon(&message).apply(read.task, at) {
            Step::Changed(task) | Step::Quiet(task) => task,
            Step::Unchanged(_) | Step::Refused(..) => return Ok(false),
        };
        Ok(matches!(
            self.write(&owner, id, on, &task, true, &Condition::Lapsed)?,
            Written::Ok(_)
        ))
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
    /// attempts left.
    fn claim_candidate(
        &self,
        leases: &Leases,
        (id, tag): &Candidate,
    ) -> Result<Option<Claim>, Error> {
        let Some(owner) = owner_of_tag(tag) else {
            return Ok(None);
        };
        let mut known = self.copies.recall(id, &id.to_string());
        for _ in 0..CLAIM_ATTEMPTS {
            let (version, task) = match known.take() {
                Some((version, task)) => (i64::try_from(version).unwrap_or(i64::MAX), task),
                None => match self.read(&owner, *id)? {
                    Some(read) => (read.version, read.task),
                    None => return Ok(None),
                },
            };
            let Some(stopped) = task.attempts() else {
                return Ok(None);
            };
            let at = task.last_updated_at();
            let on = DecidedOn::new(version, &task);
            let claimed = match Update::claim().apply(task, at) {
                Step::Changed(task) | Step::Quiet(task) => task,
                Step::Unchanged(_) | Step::Refused(..) => return Ok(None),
            };
            let Some(next) = claimed.attempts() else {
                return Ok(None);
            };
            let condition = Condition::Claim {
                attempt: i32::try_from(next.attempt()).unwrap_or(i32::MAX),
                backoff_ms: millis(
                    u64::try_from(leases.backoff.after(stopped.attempt()).as_millis())
                        .unwrap_or(u64::MAX),
                ),
                lease_ms: leases.lease_ms(),
            };
            match self.write(&owner, *id, on, &claimed, true, &condition)? {
                Written::Claimed(stored, job) => {
                    return self.claimed(leases, *id, owner, stored, &job).map(Some);
                }
                Written::Ok(_) | Written::Stale(None) => return Ok(None),
                Written::Stale(Some((version, task))) => {
                    known = Some((u64::try_from(version).unwrap_or(0), task));
                }
            }
        }
        Ok(None)
    }

    /// The claim of a task just claimed: this instance holds its lease now.
    fn claimed(
        &self,
        leases: &Leases,
        id: uuid::Uuid,
        owner: Owner,
        stored: AnyTask,
        job: &str,
    ) -> Result<Claim, Error> {
        let attempts = stored
            .attempts()
            .ok_or_else(|| Error::store(format!("claimed task `{id}` has no attempts")))?;
        let checkpoint = stored.checkpoint().cloned();
        let job: JsonObject = if job.is_empty() {
            JsonObject::new()
        } else {
            serde_json::from_str(job)
                .map_err(|err| Error::store(format!("task `{id}` has a bad job: {err}")))?
        };
        let lease = leases.book.hold(id, Some(attempts.attempt()));
        let task = Task::try_from(stored).map_err(|err| Error::store(err.to_string()))?;
        Ok(Claim {
            owner,
            task,
            job,
            attempts,
            checkpoint,
            lease,
        })
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
