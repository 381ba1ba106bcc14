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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use mcp_tasks::backend::{LEASE_LAPSED, LeaseHolder};
use mcp_tasks::{Error, Lease, LeasePolicy, Step, Update};

use crate::Inner;
use crate::keys::{Keys, owner_of_tag};
use crate::writes::{DecidedOn, Written, unexpected};

/// The most lapsed leases one reaper round fails (the rest wait for the next round).
const REAP_BATCH: usize = 100;

/// The most batches of lapsed leases one reaper round takes.
const REAP_ROUNDS: usize = 10;

/// An instance's leases: what it holds, and how long they last.
pub(crate) struct Leases {
    /// The store-wide lease index.
    pub(crate) index: String,
    lease: Duration,
    book: Arc<Book>,
}

/// The leases this instance's handles hold, by task key.
#[derive(Default)]
struct Book {
    held: Mutex<HashMap<String, Hold>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Renew it.
    Renew,
    /// Give it up (the handle was detached), then forget it.
    Release,
}

impl Book {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Hold>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A handle's hold on one lease.
struct Holder {
    book: Arc<Book>,
    key: String,
}

impl LeaseHolder for Holder {
    fn end(self: Box<Self>) {
        let mut held = self.book.lock();
        // A release not sent yet stays: the task must not lapse.
        if held.get(&self.key) == Some(&Hold::Renew) {
            held.remove(&self.key);
        }
    }

    fn release(self: Box<Self>) {
        self.book.lock().insert(self.key.clone(), Hold::Release);
    }
}

impl Leases {
    /// The leases of a store with `prefix`, per `policy`; `None` without leases.
    pub(crate) fn new(prefix: &str, policy: LeasePolicy) -> Option<Self> {
        let lease = policy.lease()?;
        Some(Leases {
            index: format!("{prefix}:leases"),
            lease,
            book: Arc::default(),
        })
    }

    /// The lease length in milliseconds, as the scripts take it.
    pub(crate) fn lease_ms(&self) -> String {
        self.lease.as_millis().max(1).to_string()
    }

    /// Starts holding the lease of the task under `key` (just created with one).
    pub(crate) fn hold(&self, key: String) -> Lease {
        self.book.lock().insert(key.clone(), Hold::Renew);
        Lease::held(Box::new(Holder {
            book: Arc::clone(&self.book),
            key,
        }))
    }

    /// How many leases this instance holds (renewing or releasing).
    pub(crate) fn held(&self) -> usize {
        self.book.lock().len()
    }
}

impl Inner {
    /// One renewal round: renews every held lease and sends pending releases, in one
    /// round trip; forgets those found gone, finished, released or lapsed.
    fn renew_leases(&self, leases: &Leases) -> Result<(), Error> {
        let batch: Vec<(String, Hold)> = leases
            .book
            .lock()
            .iter()
            .map(|(key, hold)| (key.clone(), *hold))
            .collect();
        if batch.is_empty() {
            return Ok(());
        }
        let verdicts: Vec<String> = self.with(|connection| {
            let mut invocation = self.renew.key(&leases.index);
            invocation.arg(leases.lease_ms());
            for (key, hold) in &batch {
                invocation
                    .arg(key)
                    .arg(if *hold == Hold::Release { "r" } else { "k" });
            }
            invocation.invoke(connection)
        })?;
        if verdicts.len() != batch.len() {
            return Err(unexpected(&verdicts));
        }
        let mut held = leases.book.lock();
        for ((key, sent), verdict) in batch.into_iter().zip(verdicts) {
            let done = match verdict.as_str() {
                "ok" => false,
                // A release asked for after this round went out is sent next round.
                "released" => held.get(&key) == Some(&sent),
                _ => true,
            };
            if done {
                held.remove(&key);
            }
        }
        Ok(())
    }

    /// One reaper round: fails the tasks whose lease lapsed (any instance's).
    fn reap_lapsed(&self, leases: &Leases) -> Result<usize, Error> {
        let mut failed = 0;
        for _ in 0..REAP_ROUNDS {
            let lapsed: Vec<String> = self.with(|connection| {
                self.lapsed
                    .key(&leases.index)
                    .arg(REAP_BATCH)
                    .invoke(connection)
            })?;
            for key in &lapsed {
                if self.fail_lapsed(key)? {
                    failed += 1;
                }
            }
            if lapsed.len() < REAP_BATCH {
                break;
            }
        }
        Ok(failed)
    }

    /// Fails the task under `key` if its lease is still lapsed when the write lands;
    /// answers whether it did. One attempt: a task changed or renewed meanwhile is looked
    /// at again next round, if its lease is still lapsed then.
    fn fail_lapsed(&self, key: &str) -> Result<bool, Error> {
        let Some((keys, id)) = self.parse_task_key(key) else {
            return Ok(false);
        };
        let Some(read) = self.read(&keys, id)? else {
            return Ok(false);
        };
        let at = read.task.last_updated_at();
        let on = DecidedOn::new(read.version, &read.task);
        let task = match Update::abandon(LEASE_LAPSED).apply(read.task, at) {
            Step::Changed(task) | Step::Quiet(task) => task,
            Step::Unchanged(_) | Step::Refused(..) => return Ok(false),
        };
        Ok(matches!(
            self.write(&keys, id, on, &task, true, "lapsed")?,
            Written::Ok(_)
        ))
    }

    /// The owner keys and id of a task key (`{prefix}:{tag}:t:{id}`).
    fn parse_task_key<'k>(&self, key: &'k str) -> Option<(Keys, &'k str)> {
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
