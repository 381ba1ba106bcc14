//! Leases: a task whose instance died fails, instead of staying `working` until its TTL.
//!
//! A task created for a typed handle ([`TaskStore::create`](mcp_tasks::TaskStore::create))
//! carries in its hash the deadline `l` of a lease, and a member in the store-wide lease
//! index (a sorted set of task keys by deadline), both written by the creating script.
//! Each instance runs one lease thread that, every renewal interval:
//! 1. renews, in one round trip, the leases of every handle it holds (whatever their
//!    number), and gives up those of detached handles;
//! 2. asks the index for lapsed leases and fails each such task with `-32603`, in a commit
//!    that writes only if the task is at the version it decided on *and* its lease is still
//!    lapsed: a renewal that won the race, or any other writer, makes it step back.
//!
//! So a task whose instance died (or lost Redis for longer than the lease) fails within
//! the lease plus one interval, told to every instance's waiters and subscribers like any
//! change. A lease that lapsed is never renewed again: the instance that held it learns
//! on its next renewal and stops; if its handler finishes later, its write finds the task
//! failed (a newer version) and is refused, so the verdict stands.
//!
//! # Redelivery
//! A redeliverable task with attempts left is not failed when its lease lapses: it is a
//! *candidate* for a claim. Every instance's lease thread files the lapsed ones it sees
//! (due after the [`ClaimBackoff`] of the attempt that stopped), and a hand-over (the lease
//! set to lapse at once, told on the channel) files one due now on every instance. A
//! claim decides the next attempt ([`Update::claim`]) and writes it with the `claim`
//! condition of the commit script: only if the lease lapsed at least the back-off ago,
//! and then with a new lease for the claiming instance, in the same step. Of two instances
//! claiming one task, the second finds a newer version, decides again on it, and finds the
//! lease held. A redeliverable task whose attempts ran out fails when its last lease
//! lapses, with a message that says how many ran.
//!
//! What an instance keeps in memory is the core's: a [`LeaseBook`] of the leases its
//! handles hold, and the [`Claimables`] it heard of. The `RENEW` script takes a lease's
//! attempt as text, `''` for a task that runs once.

use std::sync::Weak;
use std::time::{Duration, Instant};

use mcp_tasks::backend::{self, Claimables, DecidedOn, Hold, Lapse, LeaseBook, Renewal};
use mcp_tasks::{Claim, ClaimBackoff, Error, LeasePolicy};

use crate::Inner;
use crate::keys::{Keys, owner_of_tag};
use crate::writes::{Condition, Wrote, unexpected};

/// How often a claim is decided again when other writers keep changing the task first.
const CLAIM_ATTEMPTS: usize = 8;

/// The most lapsed leases one reaper round fails (the rest wait for the next round).
const REAP_BATCH: usize = 100;

/// The most batches of lapsed leases one reaper round takes.
const REAP_ROUNDS: usize = 10;

/// An instance's leases: what it holds, how long they last, what it may claim.
pub(crate) struct Leases {
    /// The store-wide lease index.
    pub(crate) index: String,
    lease: Duration,
    /// The leases this instance's handles hold, by task key.
    pub(crate) book: LeaseBook<String>,
    backoff: ClaimBackoff,
    /// Tasks this instance may claim, by task key, with when.
    pub(crate) claimables: Claimables<String>,
}

impl Leases {
    /// The leases of a store with `prefix`, per `policy`; `None` without leases.
    pub(crate) fn new(prefix: &str, policy: LeasePolicy, backoff: ClaimBackoff) -> Option<Self> {
        let lease = policy.lease()?;
        Some(Leases {
            index: format!("{prefix}:leases"),
            lease,
            book: LeaseBook::default(),
            backoff,
            claimables: Claimables::default(),
        })
    }

    /// The lease length in milliseconds, as the scripts take it.
    pub(crate) fn lease_ms(&self) -> String {
        self.lease.as_millis().max(1).to_string()
    }
}

/// A lease's attempt as the `RENEW` script takes it: `''` for a task that runs once.
fn attempt_arg(attempt: Option<u32>) -> String {
    attempt
        .map(|attempt| attempt.to_string())
        .unwrap_or_default()
}

/// What the `RENEW` script answered for one lease.
fn renewal(verdict: &str) -> Renewal {
    match verdict {
        "ok" => Renewal::Renewed,
        "released" => Renewal::Released,
        "lapsed" => Renewal::Lapsed,
        _ => Renewal::Gone,
    }
}

impl Inner {
    /// One renewal round: renews every held lease and sends pending releases, in one
    /// round trip; forgets those found gone, finished, released or lapsed.
    fn renew_leases(&self, leases: &Leases) -> Result<(), Error> {
        let round = leases.book.round();
        if round.is_empty() {
            return Ok(());
        }
        let verdicts: Vec<String> = self.with(|connection| {
            let mut invocation = self.renew.key(&leases.index);
            invocation.arg(leases.lease_ms()).arg(&self.channel);
            for (key, hold, attempt) in &round {
                invocation
                    .arg(key)
                    .arg(if *hold == Hold::Release { "r" } else { "k" })
                    .arg(attempt_arg(*attempt));
            }
            invocation.invoke(connection)
        })?;
        if verdicts.len() != round.len() {
            return Err(unexpected(&verdicts));
        }
        // A release asked for after this round went out is sent next round.
        leases
            .book
            .settle(round, verdicts.iter().map(|verdict| renewal(verdict)));
        Ok(())
    }

    /// One reaper round: fails the tasks whose lease lapsed (any instance's), and files
    /// the redeliverable ones with attempts left as candidates for a claim.
    fn reap_lapsed(&self, leases: &Leases) -> Result<usize, Error> {
        let mut failed = 0;
        for _ in 0..REAP_ROUNDS {
            let lapsed: Vec<String> = self.with(|connection| {
                self.lapsed
                    .key(&leases.index)
                    .arg(REAP_BATCH)
                    .invoke(connection)
            })?;
            for pair in lapsed.chunks(2) {
                let [key, deadline] = pair else {
                    return Err(unexpected(&lapsed));
                };
                // A candidate filed already is not read again every round.
                if leases.claimables.contains(key) {
                    continue;
                }
                if self.settle_lapsed(leases, key, deadline == "0")? {
                    failed += 1;
                }
            }
            if lapsed.len() < 2 * REAP_BATCH {
                break;
            }
        }
        Ok(failed)
    }

    /// Settles the task under `key`, whose lease lapsed (`handed_over`: at once, by its
    /// instance): a redeliverable task with attempts left is filed as a candidate (due
    /// after the back-off, at once if handed over); any other task fails, if its lease is
    /// still lapsed when the write lands ([`backend::lapse`]). Answers whether it failed
    /// the task. One attempt: a task changed or renewed meanwhile is looked at again next
    /// round.
    fn settle_lapsed(&self, leases: &Leases, key: &str, handed_over: bool) -> Result<bool, Error> {
        let Some((keys, id)) = self.parse_task_key(key) else {
            return Ok(false);
        };
        let Some(read) = self.read(&keys, id)? else {
            return Ok(false);
        };
        let on = DecidedOn::new(read.version, &read.task);
        match backend::lapse(read.task, &leases.backoff, handed_over) {
            Lapse::Claimable(wait) => {
                leases
                    .claimables
                    .file(key.to_owned(), Instant::now() + wait);
                Ok(false)
            }
            Lapse::Fail(task) => Ok(matches!(
                self.write(&keys, id, on, &task, true, &Condition::Lapsed)?,
                Wrote::Ok(_)
            )),
            Lapse::Nothing => Ok(false),
        }
    }

    /// Claims a due candidate, if any (see the module docs).
    pub(crate) fn claim_due(&self, leases: &Leases) -> Result<Option<Claim>, Error> {
        while let Some(key) = leases.claimables.take_due() {
            if let Some(claim) = self.claim_key(leases, key)? {
                return Ok(Some(claim));
            }
        }
        Ok(None)
    }

    /// Claims the task under `key` for its next attempt, if its lease lapsed long enough
    /// ago and it has attempts left ([`backend::claim_next`]).
    fn claim_key(&self, leases: &Leases, key: String) -> Result<Option<Claim>, Error> {
        let Some((keys, id)) = self.parse_task_key(&key) else {
            return Ok(None);
        };
        let Some(owner) = owner_of_tag(&keys.tag) else {
            return Ok(None);
        };
        let lease_ms = leases.lease_ms();
        let mut known = self.copies.recall(&key, id);
        for _ in 0..CLAIM_ATTEMPTS {
            let (version, task) = match known.take() {
                Some(known) => known,
                None => match self.read(&keys, id)? {
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
                attempt,
                index: &leases.index,
                backoff_ms: u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                lease_ms: &lease_ms,
            };
            match self.write(&keys, id, on, &claimed, true, &condition)? {
                Wrote::Claimed(stored, job) => {
                    let lease = leases.book.hold(key, Some(attempt));
                    return backend::claim_of(owner, stored, &job, lease).map(Some);
                }
                Wrote::Ok(_) | Wrote::Stale(None) => return Ok(None),
                Wrote::Stale(Some(current)) => known = Some(current),
            }
        }
        Ok(None)
    }

    /// Hands the lease of the task under `key` over (see [`TaskStore::hand_over`]): it
    /// lapses at once, and every instance is told. Answers whether it did.
    ///
    /// [`TaskStore::hand_over`]: mcp_tasks::TaskStore::hand_over
    pub(crate) fn hand_over_key(
        &self,
        leases: &Leases,
        keys: &Keys,
        id: &str,
    ) -> Result<bool, Error> {
        let key = keys.task(id);
        let Some(attempt) = leases.book.renewing(&key) else {
            return Ok(false);
        };
        let Some(read) = self.read(keys, id)? else {
            return Ok(false);
        };
        if read.task.is_terminal() || !read.task.attempts().is_some_and(|a| a.left()) {
            return Ok(false);
        }
        let verdicts: Vec<String> = self.with(|connection| {
            self.renew
                .key(&leases.index)
                .arg(leases.lease_ms())
                .arg(&self.channel)
                .arg(&key)
                .arg("h")
                .arg(attempt_arg(attempt))
                .invoke(connection)
        })?;
        let verdict = verdicts.first().map(|verdict| renewal(verdict));
        if verdict != Some(Renewal::Renewed) {
            leases.book.forget(&key);
        }
        Ok(verdict == Some(Renewal::Released))
    }

    /// The owner keys and id of a task key (`{prefix}:{tag}:t:{id}`).
    pub(crate) fn parse_task_key<'k>(&self, key: &'k str) -> Option<(Keys, &'k str)> {
        let rest = key.strip_prefix(&self.prefix)?.strip_prefix(":{")?;
        let (tag, id) = rest.split_once("}:t:")?;
        owner_of_tag(tag)?;
        Some((Keys::new(&self.prefix, tag.to_owned()), id))
    }
}

/// The lease thread of an instance: renews and reaps every interval until the store is
/// dropped. A round that cannot reach Redis is simply tried again next interval.
pub(crate) fn run(inner: &Weak<Inner>, interval: Duration) {
    loop {
        std::thread::sleep(interval);
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Some(leases) = &inner.leases else {
            return;
        };
        let _ = inner.renew_leases(leases);
        let _ = inner.reap_lapsed(leases);
    }
}
