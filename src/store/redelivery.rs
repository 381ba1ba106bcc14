//! Redelivery: a task whose work may run again from the start, on another instance of a
//! shared store, when the instance running it stops.
//!
//! A tool opts in per task ([`TaskRequest::with_redelivery`](crate::TaskRequest::with_redelivery)),
//! with a bound on attempts and the *job*: whatever another instance needs to run the work
//! again (the tool's name, its arguments, the wire generation, the request context its
//! handler reads), kept by the store beside the task and never shown to clients. The store
//! keeps the task's [`Attempts`] and its handler's last checkpoint
//! ([`TaskHandle::checkpoint`](crate::TaskHandle::checkpoint)) in the task itself.
//!
//! When such a task's lease lapses (its instance died) or its instance hands it over
//! ([`TaskStore::hand_over`](crate::TaskStore::hand_over), on a graceful shutdown), the task
//! is not failed: it stays `working` and becomes *claimable*. Another instance claims it
//! ([`TaskStore::claim`](crate::TaskStore::claim)) atomically, with a new lease and the next
//! attempt, and runs the job's handler again with the last checkpoint ([`Claim`]). Every
//! write of the old holder is then refused ([`Error::Superseded`](crate::Error::Superseded)):
//! its lease names an attempt the task has left behind. When the attempts run out, the task
//! fails with `-32603`, saying how many ran and why the last one stopped.
//!
//! What it guarantees: the work runs **at least once per attempt** (an attempt whose
//! instance died after doing some of the work runs again from its last checkpoint), and the
//! task has **exactly one final result**: the first terminal status stays, whoever writes
//! it. A tool that declares redelivery must therefore be safe to run again from the start
//! (or from its checkpoint): idempotent, or checking what it already did.
//!
//! The in-process [`TaskRegistry`](crate::TaskRegistry) has no other instance: redelivery
//! there is a no-op (a task keeps its attempts and checkpoints, and nothing ever claims
//! it).

use std::time::Duration;

use serde_json::Value;

use crate::jsonrpc::JsonObject;
use crate::status::Working;
use crate::store::{Lease, Owner};
use crate::task::Task;

/// The most bytes a checkpoint takes, serialized as JSON: a checkpoint is a small
/// progress value (a cursor, a step number, the answers already consumed), written in the
/// task on every call.
pub const MAX_CHECKPOINT_BYTES: usize = 64 * 1024;

/// The most attempts a task may declare.
pub const MAX_ATTEMPTS: u32 = 100;

/// A task's attempts: which attempt runs it now (from 1), and how many it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attempts {
    pub(crate) attempt: u32,
    pub(crate) max: u32,
}

impl Attempts {
    /// The attempt running the task now (1 for the first run).
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts the task may take.
    #[must_use]
    pub const fn max(&self) -> u32 {
        self.max
    }

    /// Whether another attempt may follow this one.
    #[must_use]
    pub const fn left(&self) -> bool {
        self.attempt < self.max
    }
}

/// What a task that may run again keeps: the bound on attempts, and the job another
/// instance runs ([`TaskRequest::with_redelivery`](crate::TaskRequest::with_redelivery)).
#[derive(Debug, Clone, PartialEq)]
pub struct Redelivery {
    pub(crate) max_attempts: u32,
    pub(crate) job: JsonObject,
}

impl Redelivery {
    /// At most `max_attempts` runs (clamped to `1..=`[`MAX_ATTEMPTS`]; 1 means no second
    /// run, but the job is kept), each running `job`: whatever the server needs to run the
    /// work again (it is stored as given and handed back in the [`Claim`]).
    #[must_use]
    pub fn new(max_attempts: u32, job: JsonObject) -> Self {
        Redelivery {
            max_attempts: max_attempts.clamp(1, MAX_ATTEMPTS),
            job,
        }
    }

    /// The bound on attempts.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The job.
    #[must_use]
    pub fn job(&self) -> &JsonObject {
        &self.job
    }
}

/// A task claimed for its next attempt ([`TaskStore::claim`](crate::TaskStore::claim)):
/// everything a server needs to run its handler again. Turn it into the handler's handle
/// with [`TaskHandle::claimed`](crate::TaskHandle::claimed).
#[derive(Debug)]
pub struct Claim {
    /// The task's owner.
    pub owner: Owner,
    /// The task as stored after the claim (`working`; a task that was waiting for input
    /// was resumed, its unanswered requests withdrawn: the handler asks again).
    pub task: Task<Working>,
    /// The job stored with the task.
    pub job: JsonObject,
    /// This attempt and the bound.
    pub attempts: Attempts,
    /// The last checkpoint of an earlier attempt, if any.
    pub checkpoint: Option<Value>,
    /// The new lease, held by this instance for this attempt.
    pub lease: Lease,
}

/// The back-off a lapsed task waits before another instance may claim it: `base`
/// doubled for each attempt already run, at most `max` (a task handed over on shutdown
/// waits none). So a task that kills its instance every time (a poison task) is tried
/// again at a slowing pace until its attempts run out, instead of taking the fleet down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimBackoff {
    base: Duration,
    max: Duration,
}

impl Default for ClaimBackoff {
    /// 1 s, doubling, at most 60 s.
    fn default() -> Self {
        ClaimBackoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
        }
    }
}

impl ClaimBackoff {
    /// A back-off of `base`, doubling per attempt, at most `max`.
    #[must_use]
    pub const fn new(base: Duration, max: Duration) -> Self {
        ClaimBackoff { base, max }
    }

    /// The wait after attempt `attempt` (from 1) stopped: `base × 2^(attempt − 1)`, at most
    /// `max`.
    #[must_use]
    pub fn after(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.base.saturating_mul(1 << doublings).min(self.max)
    }
}

/// The message (and `-32603` error) of a task whose attempts ran out: how many ran, and why
/// the last one stopped.
#[must_use]
pub fn attempts_exhausted(attempts: Attempts, why: &str) -> String {
    format!(
        "the task failed after {} of {} attempts: the last one stopped because {why}",
        attempts.attempt, attempts.max
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_back_off_doubles_per_attempt_up_to_its_bound() {
        let second = Duration::from_secs(1);
        let backoff = ClaimBackoff::new(second, 8 * second);
        let waits: Vec<Duration> = (0..=6).map(|attempt| backoff.after(attempt)).collect();
        assert_eq!(
            waits,
            [
                second,
                second,
                2 * second,
                4 * second,
                8 * second,
                8 * second,
                8 * second
            ],
            "attempt 0 and 1 wait the base, each later one twice the one before, at most the bound"
        );
        assert_eq!(backoff.after(u32::MAX), 8 * second, "no overflow");
        let defaults = ClaimBackoff::default();
        assert_eq!(defaults.after(1), second);
        assert_eq!(defaults.after(7), Duration::from_secs(60));
    }

    #[test]
    fn attempts_say_whether_another_may_follow() {
        let attempts = Attempts { attempt: 2, max: 3 };
        assert!(attempts.left());
        assert!(!Attempts { attempt: 3, max: 3 }.left());
        assert_eq!(
            attempts_exhausted(Attempts { attempt: 3, max: 3 }, "it crashed"),
            "the task failed after 3 of 3 attempts: the last one stopped because it crashed"
        );
        assert_eq!(Redelivery::new(0, JsonObject::new()).max_attempts(), 1);
        assert_eq!(
            Redelivery::new(u32::MAX, JsonObject::new()).max_attempts(),
            MAX_ATTEMPTS
        );
    }
}
