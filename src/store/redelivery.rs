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

/// How many times its bound a task may run in all, however much progress each run saves
/// (see [`Attempts`]): the ceiling that keeps a task which saves progress and then dies,
/// every time, from running forever.
pub const ATTEMPT_CEILING_FACTOR: u32 = 4;

/// A task's attempts: which attempt runs it now (from 1), how many it may take, and how
/// many of the earlier ones counted against that bound.
///
/// **An attempt that saves progress does not count.** An attempt counts against the bound
/// ([`max`](Self::max)) only if it saved no new checkpoint (one that differs from the
/// checkpoint it started from) before it stopped: a task whose instances die under it
/// while it makes progress (a rolling restart, a crash, a lease lost in a pause) is not
/// taken for a poison task, while one that dies before saving anything (a poison task)
/// still fails after its bound. So that nothing runs forever, a task runs at most
/// [`ceiling`](Self::ceiling) times in all ([`ATTEMPT_CEILING_FACTOR`] times its bound),
/// progress or not; a task declared with one attempt never runs again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attempts {
    pub(crate) attempt: u32,
    pub(crate) max: u32,
    /// Earlier attempts that counted against `max` (they saved no progress).
    pub(crate) spent: u32,
    /// Whether this attempt saved progress (a new checkpoint) since it started.
    pub(crate) progressed: bool,
}

impl Attempts {
    /// The first attempt of at most `max` (already clamped).
    pub(crate) const fn first(max: u32) -> Self {
        Attempts {
            attempt: 1,
            max,
            spent: 0,
            progressed: false,
        }
    }

    /// The attempt running the task now (1 for the first run).
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts without progress the task may take.
    #[must_use]
    pub const fn max(&self) -> u32 {
        self.max
    }

    /// How many earlier attempts counted against [`max`](Self::max): those that stopped
    /// without saving progress.
    #[must_use]
    pub const fn spent(&self) -> u32 {
        self.spent
    }

    /// Whether this attempt saved progress (a checkpoint that differs from the one it
    /// started from): if it stops now, it does not count against the bound.
    #[must_use]
    pub const fn progressed(&self) -> bool {
        self.progressed
    }

    /// The attempts counted against the bound if this one stopped now: the earlier ones
    /// that did, and this one unless it saved progress.
    #[must_use]
    pub const fn counted(&self) -> u32 {
        self.spent + if self.progressed { 0 } else { 1 }
    }

    /// The most attempts the task runs in all, progress or not: [`ATTEMPT_CEILING_FACTOR`]
    /// times its bound (1 for a task declared with one attempt: it never runs again).
    #[must_use]
    pub const fn ceiling(&self) -> u32 {
        if self.max <= 1 {
            self.max
        } else {
            self.max.saturating_mul(ATTEMPT_CEILING_FACTOR)
        }
    }

    /// Whether another attempt may follow this one: fewer than [`max`](Self::max) attempts
    /// counted (this one included, unless it saved progress), and fewer than
    /// [`ceiling`](Self::ceiling) ran.
    #[must_use]
    pub const fn left(&self) -> bool {
        self.counted() < self.max && self.attempt < self.ceiling()
    }

    /// Whether the attempts ran out at the ceiling (rather than at the bound: each run
    /// but fewer than [`max`](Self::max) saved progress).
    #[must_use]
    pub const fn at_ceiling(&self) -> bool {
        self.counted() < self.max && self.attempt >= self.ceiling()
    }

    /// The attempt after this one, if another may follow ([`left`](Self::left)).
    pub(crate) const fn next(&self) -> Option<Self> {
        if !self.left() {
            return None;
        }
        Some(Attempts {
            attempt: self.attempt + 1,
            max: self.max,
            spent: self.counted(),
            progressed: false,
        })
    }

    /// This attempt, having saved progress.
    pub(crate) const fn with_progress(self) -> Self {
        Attempts {
            progressed: true,
            ..self
        }
    }
}

/// `attempt 2 of 3` while every earlier attempt counted; `attempt 5: 1 of 3 spent
/// without progress` once some did not.
impl std::fmt::Display for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.spent + 1 == self.attempt {
            write!(f, "attempt {} of {}", self.attempt, self.max)
        } else {
            write!(
                f,
                "attempt {}: {} of {} spent without progress",
                self.attempt, self.spent, self.max
            )
        }
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

/// The message (and `-32603` error) of a task whose attempts ran out: how many ran (and,
/// at the [ceiling](Attempts::ceiling), that it was reached), and why the last one
/// stopped.
#[must_use]
pub fn attempts_exhausted(attempts: Attempts, why: &str) -> String {
    let ran = attempts.attempt;
    if attempts.at_ceiling() {
        return format!(
            "the task failed after {ran} attempts (ceiling): it runs at most {} times, even \
             when its attempts save progress; the last one stopped because {why}",
            attempts.ceiling()
        );
    }
    let counted = attempts.counted();
    let spared = if ran > counted {
        format!(" without progress ({ran} in all)")
    } else {
        String::new()
    };
    format!(
        "the task failed after {counted} of {} attempts{spared}: the last one stopped because \
         {why}",
        attempts.max
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
        let attempts = Attempts {
            attempt: 2,
            ..Attempts::first(3)
        };
        assert!(attempts.left());
        let last = Attempts {
            attempt: 3,
            spent: 2,
            ..Attempts::first(3)
        };
        assert!(!last.left());
        assert_eq!(
            attempts_exhausted(last, "it crashed"),
            "the task failed after 3 of 3 attempts: the last one stopped because it crashed"
        );
        assert_eq!(Redelivery::new(0, JsonObject::new()).max_attempts(), 1);
        assert_eq!(
            Redelivery::new(u32::MAX, JsonObject::new()).max_attempts(),
            MAX_ATTEMPTS
        );
    }

    /// Runs attempts from the first of `max`, each saving progress or not as `progress`
    /// says, until none is left; answers the last one.
    fn run(max: u32, mut progress: impl FnMut(u32) -> bool) -> Attempts {
        let mut attempts = Attempts::first(max);
        loop {
            if progress(attempts.attempt) {
                attempts = attempts.with_progress();
            }
            match attempts.next() {
                Some(next) => {
                    assert_eq!(next.attempt, attempts.attempt + 1);
                    assert!(!next.progressed, "a new attempt has saved nothing yet");
                    attempts = next;
                }
                None => return attempts,
            }
            assert!(attempts.attempt <= 1_000, "runs forever");
        }
    }

    #[test]
    fn attempts_without_progress_run_out_at_the_bound() {
        let last = run(3, |_| false);
        assert_eq!((last.attempt(), last.counted(), last.spent()), (3, 3, 2));
        assert!(!last.at_ceiling());
        assert_eq!(
            attempts_exhausted(last, "it crashed"),
            "the task failed after 3 of 3 attempts: the last one stopped because it crashed"
        );
    }

    #[test]
    fn an_attempt_that_saves_progress_does_not_count() {
        // Progress in attempts 1 and 3: they do not count; 2, 4 and 5 do.
        let last = run(3, |attempt| attempt == 1 || attempt == 3);
        assert_eq!((last.attempt(), last.counted()), (5, 3));
        assert!(!last.at_ceiling());
        assert_eq!(
            attempts_exhausted(last, "it crashed"),
            "the task failed after 3 of 3 attempts without progress (5 in all): the last one \
             stopped because it crashed"
        );
        // The attempt running now, having saved progress, leaves room for another.
        let saved = Attempts {
            attempt: 3,
            spent: 2,
            ..Attempts::first(3)
        };
        assert!(
            !saved.left(),
            "without progress, the third of three is the last"
        );
        assert!(saved.with_progress().left(), "with it, another may follow");
        assert_eq!(saved.with_progress().next().map(|a| a.spent), Some(2));
    }

    #[test]
    fn attempts_that_always_save_progress_stop_at_the_ceiling() {
        assert_eq!(ATTEMPT_CEILING_FACTOR, 4);
        let last = run(3, |_| true);
        assert_eq!(last.ceiling(), 12);
        assert_eq!((last.attempt(), last.counted()), (12, 0));
        assert!(last.at_ceiling());
        assert_eq!(
            attempts_exhausted(last, "it crashed"),
            "the task failed after 12 attempts (ceiling): it runs at most 12 times, even when \
             its attempts save progress; the last one stopped because it crashed"
        );
        // Progress but the last: the ceiling still holds.
        let last = run(3, |attempt| attempt < 12);
        assert_eq!(last.attempt(), 12);
        assert!(last.at_ceiling());
        // A task declared with one attempt never runs again, progress or not.
        let once = run(1, |_| true);
        assert_eq!((once.attempt(), once.ceiling()), (1, 1));
        // The largest bound's ceiling does not overflow.
        assert_eq!(Attempts::first(MAX_ATTEMPTS).ceiling(), MAX_ATTEMPTS * 4);
    }

    #[test]
    fn attempts_read_as_their_count() {
        assert_eq!(Attempts::first(3).to_string(), "attempt 1 of 3");
        let counted = Attempts {
            attempt: 2,
            spent: 1,
            ..Attempts::first(3)
        };
        assert_eq!(counted.to_string(), "attempt 2 of 3");
        let spared = Attempts {
            attempt: 5,
            spent: 1,
            ..Attempts::first(3)
        };
        assert_eq!(
            spared.to_string(),
            "attempt 5: 1 of 3 spent without progress"
        );
    }
}
