//! The decisions of a store that writes with a version check (a compare-and-set on a
//! version, as the Redis and PostgreSQL stores do): decide a change on the task at a known
//! version, write it only at that version, and decide again on what the store answers when
//! another writer came first. The loops and verdicts live here once; a backend supplies
//! its reads and conditional writes.

use std::time::{Duration, Instant};

use crate::any::AnyTask;
use crate::error::{Error, shorten};
use crate::jsonrpc::JsonObject;
use crate::status::TaskStatus;
use crate::store::lease::Lease;
use crate::store::owner::Owner;
use crate::store::redelivery::{Claim, ClaimBackoff, attempts_exhausted};
use crate::store::update::{Step, Update};
use crate::task::Task;

/// How often a change is decided again when other writers keep changing the task first.
pub const MAX_DECISIONS: usize = 64;

/// The message (and `-32603` error) of a task whose lease lapsed: its instance stopped
/// renewing it before the task finished.
pub const LEASE_LAPSED: &str =
    "the server instance running the task stopped: its lease lapsed before the task finished";

/// Why the last attempt of a redeliverable task stopped when its lease lapsed.
const LAPSED_WHY: &str = "its server instance stopped (its lease lapsed)";

/// The version of a task a change was decided on, and its ttl at that version (a write
/// that changes the ttl moves the task's expiry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecidedOn<V> {
    /// The version the task was at.
    pub version: V,
    /// The task's ttl at that version.
    pub ttl: Option<u64>,
}

impl<V> DecidedOn<V> {
    /// The version `version` of `task`.
    pub fn new(version: V, task: &AnyTask) -> Self {
        DecidedOn {
            version,
            ttl: task.ttl(),
        }
    }
}

/// What a version-checked write came to.
#[derive(Debug)]
pub enum Written<V> {
    /// Written: the task as stored.
    Stored(AnyTask),
    /// Not written: another writer came first. With the task as it now is and its
    /// version, when the store answered it (else it is read again).
    Stale(Option<(V, AnyTask)>),
}

/// Decides `update` on the task `task_id` and writes it, deciding again on the task as
/// stored whenever another writer came first; answers the task as written.
///
/// `known` is the copy of the task the instance holds at its latest known version, if
/// any: the change is decided on it first, and a refusal or no-op on it is decided again
/// on a fresh `read` (the copy may be behind). `write` gets the version decided on, the
/// task decided, and whether the wire-visible task changed (a status notification is
/// due).
///
/// # Errors
/// [`Error::TaskNotFound`] if `read` finds no task; the update's own refusal, decided on
/// the task as stored; `read`'s and `write`'s errors; [`Error::Store`] if the task keeps
/// changing under [`MAX_DECISIONS`] decisions.
pub fn update_versioned<V: Copy>(
    update: &Update,
    task_id: &str,
    known: Option<(V, AnyTask)>,
    mut read: impl FnMut() -> Result<Option<(V, AnyTask)>, Error>,
    mut write: impl FnMut(DecidedOn<V>, &AnyTask, bool) -> Result<Written<V>, Error>,
) -> Result<AnyTask, Error> {
    let mut known = known.map(|(version, task)| (version, task, false));
    for _ in 0..MAX_DECISIONS {
        let (version, task, fresh) = match known.take() {
            Some(known) => known,
            None => match read()? {
                Some((version, task)) => (version, task, true),
                None => {
                    return Err(Error::TaskNotFound {
                        task_id: task_id.to_owned(),
                    });
                }
            },
        };
        let at = task.last_updated_at();
        let on = DecidedOn::new(version, &task);
        let (task, notify) = match update.clone().apply(task, at) {
            Step::Changed(task) => (task, true),
            Step::Quiet(task) => (task, false),
            Step::Unchanged(task) if fresh => return Ok(task),
            Step::Refused(_, error) if fresh => return Err(error),
            Step::Unchanged(_) | Step::Refused(..) => continue,
        };
        match write(on, &task, notify)? {
            Written::Stored(stored) => return Ok(stored),
            Written::Stale(current) => {
                known = current.map(|(version, task)| (version, task, true));
            }
        }
    }
    Err(Error::store(format!(
        "task `{}` kept changing under {MAX_DECISIONS} attempts to update it: try again",
        shorten(task_id)
    )))
}

/// Runs `update`'s write (`attempt`), and if it is a handle's finishing write
/// ([`Update::finishing_target`]), which carries work already done, tries it again through
/// a store outage with backoff (10 ms doubling to 1 s) until it lands, the task turns out
/// gone or moved on, or `outage_timeout` passes. An earlier try that landed although its
/// answer was lost shows as the task already in the target status: then the task as
/// stored (`get`) is the answer.
///
/// # Errors
/// `attempt`'s error; [`Error::Store`] saying that the finishing write was given up.
pub fn retry_finishing(
    update: &Update,
    outage_timeout: Duration,
    mut attempt: impl FnMut() -> Result<AnyTask, Error>,
    get: impl FnOnce() -> Result<AnyTask, Error>,
) -> Result<AnyTask, Error> {
    let Some(target) = update.finishing_target() else {
        return attempt();
    };
    let deadline = Instant::now() + outage_timeout;
    let mut backoff = Duration::from_millis(10);
    let mut tries = 1;
    loop {
        match attempt() {
            Err(Error::Store { .. }) if Instant::now() + backoff < deadline => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
                tries += 1;
            }
            Err(Error::Store { message, cause }) if tries > 1 => {
                return Err(Error::Store {
                    message: format!(
                        "{message} (the task's finishing write was tried {tries} times over \
                         {outage_timeout:?}, then given up)"
                    ),
                    cause,
                });
            }
            Err(Error::IllegalTransition { from, .. }) if tries > 1 && from == target => {
                return get();
            }
            other => return other,
        }
    }
}

/// What becomes of a task whose lease lapsed ([`lapse`]).
#[derive(Debug)]
pub enum Lapse {
    /// A redeliverable task with attempts left: claimable once this much time has passed
    /// (the [`ClaimBackoff`] of the attempt that stopped; none after a hand-over).
    Claimable(Duration),
    /// Any other unfinished task: fail it with this task, decided (write it only while
    /// its lease is still lapsed).
    Fail(AnyTask),
    /// Nothing to do (finished already).
    Nothing,
}

/// The verdict on `task`, whose lease lapsed (`handed_over`: at once, by its instance).
#[must_use]
pub fn lapse(task: AnyTask, backoff: &ClaimBackoff, handed_over: bool) -> Lapse {
    let message = match task.attempts() {
        Some(attempts) if attempts.left() && !task.is_terminal() => {
            return Lapse::Claimable(if handed_over {
                Duration::ZERO
            } else {
                backoff.after(attempts.counted())
            });
        }
        Some(attempts) => attempts_exhausted(attempts, LAPSED_WHY),
        None => LEASE_LAPSED.to_owned(),
    };
    let at = task.last_updated_at();
    match Update::abandon(&message).apply(task, at) {
        Step::Changed(task) | Step::Quiet(task) => Lapse::Fail(task),
        Step::Unchanged(_) | Step::Refused(..) => Lapse::Nothing,
    }
}

/// The next attempt of a claimable task, decided on `task` ([`Update::claim`]): the task
/// as claimed, how long ago the stopped attempt's lease must have lapsed (its back-off),
/// and the attempt the claim runs. `None` if the task is not claimable.
#[must_use]
pub fn claim_next(task: AnyTask, backoff: &ClaimBackoff) -> Option<(AnyTask, Duration, u32)> {
    // The back-off doubles per attempt counted: one that saved progress is no poison.
    let stopped = task.attempts()?.counted();
    let at = task.last_updated_at();
    let claimed = match Update::claim().apply(task, at) {
        Step::Changed(task) | Step::Quiet(task) => task,
        Step::Unchanged(_) | Step::Refused(..) => return None,
    };
    let next = claimed.attempts()?.attempt();
    Some((claimed, backoff.after(stopped), next))
}

/// The [`Claim`] of a task just claimed for `owner`: the task as stored, its job as the
/// store keeps it (JSON text, empty for none) and the lease the claiming instance holds.
///
/// # Errors
/// [`Error::Store`] for a claimed task without attempts, not `working`, or with a job
/// that is not a JSON object.
pub fn claim_of(owner: Owner, stored: AnyTask, job: &str, lease: Lease) -> Result<Claim, Error> {
    let id = stored.id().to_string();
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
    if stored.status() != TaskStatus::Working {
        return Err(Error::store(format!(
            "claimed task `{id}` is `{}`, not `working`",
            stored.status()
        )));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::TaskId;
    use crate::outcome::Outcome;

    fn working() -> AnyTask {
        Task::new(
            TaskId::random(),
            crate::clock::Timestamp::from_unix_millis(1_000),
        )
        .into_any()
    }

    #[test]
    fn a_stale_write_is_decided_again_on_what_the_store_answers() {
        let stored = working();
        let id = stored.id().to_string();
        let mut writes = Vec::new();
        let answer = update_versioned(
            &Update::cancel(None),
            &id,
            Some((1_u64, stored.clone())),
            || panic!("the store answered the task: no read"),
            |on, task, notify| {
                writes.push((on.version, task.status(), notify));
                Ok(if on.version == 1 {
                    Written::Stale(Some((2, stored.clone())))
                } else {
                    Written::Stored(task.clone())
                })
            },
        )
        .expect("cancelled");
        assert_eq!(answer.status(), TaskStatus::Cancelled);
        assert_eq!(
            writes,
            [
                (1, TaskStatus::Cancelled, true),
                (2, TaskStatus::Cancelled, true)
            ]
        );
    }

    #[test]
    fn a_refusal_on_a_copy_is_decided_again_on_a_fresh_read() {
        let copy = working();
        let id = copy.id().to_string();
        let at = copy.last_updated_at();
        // The copy is behind: the store has the task completed already.
        let Step::Changed(done) = Update::result(
            TaskStatus::Completed,
            Outcome::Result(serde_json::Map::new()),
        )
        .expect("a result")
        .apply(copy.clone(), at) else {
            panic!("completes");
        };
        let mut reads = 0;
        let refused = update_versioned(
            &Update::cancel(None),
            &id,
            Some((1_u64, done.clone())),
            || {
                reads += 1;
                Ok(Some((2, done.clone())))
            },
            |_, _, _| panic!("nothing to write"),
        )
        .expect_err("a finished task cannot be cancelled");
        assert!(
            matches!(refused, Error::AlreadyTerminal { .. }),
            "{refused:?}"
        );
        assert_eq!(reads, 1, "decided again on a fresh read before refusing");
        let gone = update_versioned::<u64>(
            &Update::cancel(None),
            &id,
            None,
            || Ok(None),
            |_, _, _| panic!("nothing to write"),
        );
        assert!(matches!(gone, Err(Error::TaskNotFound { .. })));
    }

    #[test]
    fn a_no_op_on_a_copy_is_decided_again_on_a_fresh_read() {
        let copy = working();
        let id = copy.id().to_string();
        let at = copy.last_updated_at();
        // The copy is behind: the store has the task waiting for an answer.
        let requests = crate::input::InputRequests::new().with(
            "confirm",
            crate::input::InputRequest::elicitation(JsonObject::new()),
        );
        let AnyTask::Working(task) = copy.clone() else {
            panic!("working");
        };
        let waiting = task.require_input(requests, at).into_any();
        let answer = match serde_json::json!({"confirm": {"action": "accept"}}) {
            serde_json::Value::Object(answer) => answer,
            _ => unreachable!(),
        };
        let mut reads = 0;
        let mut writes = Vec::new();
        let answered = update_versioned(
            &Update::respond(answer),
            &id,
            Some((1_u64, copy.clone())),
            || {
                reads += 1;
                Ok(Some((2, waiting.clone())))
            },
            |on, task, notify| {
                writes.push((on.version, notify));
                Ok(Written::Stored(task.clone()))
            },
        )
        .expect("answered");
        assert_eq!(reads, 1, "decided again on a fresh read");
        assert_eq!(writes, [(2, true)], "written at the version read");
        assert_eq!(answered.status(), TaskStatus::InputRequired);
        assert!(answered.input_requests().is_some_and(|r| r.is_empty()));
        // Unchanged on a fresh read: answered as it is, without a write.
        let unchanged = update_versioned(
            &Update::respond(JsonObject::new()),
            &id,
            None,
            || Ok(Some((2, waiting.clone()))),
            |_, _, _| panic!("nothing to write"),
        )
        .expect("unchanged");
        assert_eq!(unchanged, waiting);
    }

    #[test]
    fn a_task_that_keeps_changing_gives_up_after_so_many_decisions() {
        let task = working();
        let id = task.id().to_string();
        let mut writes = 0;
        let error = update_versioned(
            &Update::cancel(None),
            &id,
            Some((1_u64, task.clone())),
            || panic!("the store answers the task"),
            |on, _, _| {
                writes += 1;
                Ok(Written::Stale(Some((on.version + 1, task.clone()))))
            },
        )
        .expect_err("it kept changing");
        assert!(matches!(error, Error::Store { .. }), "{error:?}");
        assert_eq!(writes, MAX_DECISIONS);
    }

    #[test]
    fn a_finishing_write_that_landed_before_its_lost_reply_answers_the_task_as_stored() {
        let task = working();
        let target = TaskStatus::Completed;
        let finishing = Update::end(crate::any::Transition::Complete(JsonObject::new()), None);
        assert_eq!(finishing.finishing_target(), Some(target));
        let conflict = || Error::IllegalTransition {
            task_id: task.id().to_string(),
            from: target,
            to: target,
            message: "finished already".to_owned(),
        };
        // The first try's reply was lost; the second finds the task finished as meant.
        let mut tries = 0;
        let stored = retry_finishing(
            &finishing,
            Duration::from_secs(5),
            || {
                tries += 1;
                if tries == 1 {
                    Err(Error::store("the reply was lost"))
                } else {
                    Err(conflict())
                }
            },
            || Ok(task.clone()),
        )
        .expect("the task as stored");
        assert_eq!((tries, stored), (2, task.clone()));
        // Without a try before, the same refusal is someone else's finish: an error.
        let refused = retry_finishing(
            &finishing,
            Duration::from_secs(5),
            || Err(conflict()),
            || panic!("not read"),
        );
        assert!(matches!(refused, Err(Error::IllegalTransition { .. })));
        // A refusal from another status after a lost reply is an error too.
        let mut tries = 0;
        let other = retry_finishing(
            &finishing,
            Duration::from_secs(5),
            || {
                tries += 1;
                if tries == 1 {
                    Err(Error::store("the reply was lost"))
                } else {
                    Err(Error::IllegalTransition {
                        task_id: task.id().to_string(),
                        from: TaskStatus::Failed,
                        to: target,
                        message: "failed meanwhile".to_owned(),
                    })
                }
            },
            || panic!("not read"),
        );
        assert!(matches!(
            other,
            Err(Error::IllegalTransition {
                from: TaskStatus::Failed,
                ..
            })
        ));
        // No time for a second try: the first try's error, as it was.
        let mut tries = 0;
        let first = retry_finishing(
            &finishing,
            Duration::from_millis(5),
            || {
                tries += 1;
                Err(Error::store("unreachable"))
            },
            || panic!("not read"),
        );
        match first {
            Err(Error::Store { message, .. }) => assert_eq!(message, "unreachable"),
            other => panic!("the first try's error: {other:?}"),
        }
        assert_eq!(tries, 1);
        // Any other update is tried once.
        let mut tries = 0;
        let once = retry_finishing(
            &Update::cancel(None),
            Duration::from_secs(5),
            || {
                tries += 1;
                Err(Error::store("unreachable"))
            },
            || panic!("not read"),
        );
        assert!(matches!(once, Err(Error::Store { .. })));
        assert_eq!(tries, 1);
    }

    #[test]
    fn a_finishing_write_backs_off_doubling_and_gives_up_within_the_outage_timeout() {
        let finishing = Update::end(crate::any::Transition::Complete(JsonObject::new()), None);
        let outage = Duration::from_millis(300);
        let mut tries = Vec::new();
        let started = Instant::now();
        let given_up = retry_finishing(
            &finishing,
            outage,
            || {
                tries.push(started.elapsed());
                Err(Error::store("unreachable"))
            },
            || panic!("not read"),
        );
        let elapsed = started.elapsed();
        match given_up {
            Err(Error::Store { message, .. }) => {
                assert!(message.contains("given up"), "{message}");
                assert!(
                    message.contains(&format!("tried {} times", tries.len())),
                    "{message}"
                );
            }
            other => panic!("given up: {other:?}"),
        }
        // 10, 20, 40 and 80 ms apart; the next wait (160 ms) would pass the timeout (a slow
        // machine may get there a try sooner).
        assert!((3..=5).contains(&tries.len()), "{tries:?}");
        for (wait, pair) in [10, 20, 40, 80].into_iter().zip(tries.windows(2)) {
            assert!(
                pair[1] - pair[0] >= Duration::from_millis(wait),
                "waited {wait} ms or more: {tries:?}"
            );
        }
        assert!(elapsed < outage, "given up within the timeout: {elapsed:?}");
    }

    #[test]
    fn a_lapse_files_a_task_with_attempts_left_and_fails_any_other() {
        let backoff = ClaimBackoff::default();
        assert!(
            matches!(lapse(working(), &backoff, false), Lapse::Fail(task) if task.status() == TaskStatus::Failed)
        );
        let redeliverable = Task::new(
            TaskId::random(),
            crate::clock::Timestamp::from_unix_millis(1_000),
        )
        .with_attempts(3)
        .into_any();
        assert!(
            matches!(lapse(redeliverable.clone(), &backoff, true), Lapse::Claimable(wait) if wait.is_zero())
        );
        assert!(
            matches!(lapse(redeliverable.clone(), &backoff, false), Lapse::Claimable(wait) if wait == backoff.after(1))
        );
        let (claimed, after, attempt) = claim_next(redeliverable, &backoff).expect("claimable");
        assert_eq!((after, attempt), (backoff.after(1), 2));
        assert_eq!(claimed.attempts().map(|a| a.attempt()), Some(2));
        assert!(
            claim_next(working(), &backoff).is_none(),
            "a task that runs once is never claimed"
        );
    }

    #[test]
    fn a_lapsed_last_attempt_that_saved_progress_is_claimable_again() {
        let backoff = ClaimBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let t0 = crate::clock::Timestamp::from_unix_millis(1_000);
        let first = Task::new(TaskId::random(), t0).with_attempts(2).into_any();
        let (last, after, attempt) = claim_next(first, &backoff).expect("claimable");
        assert_eq!((after, attempt), (backoff.after(1), 2));
        // The last of two attempts, without progress: the task fails.
        match lapse(last.clone(), &backoff, false) {
            Lapse::Fail(task) => assert_eq!(
                task.status_message(),
                Some(
                    "the task failed after 2 of 2 attempts: the last one stopped because its \
                     server instance stopped (its lease lapsed)"
                )
            ),
            other => panic!("fails: {other:?}"),
        }
        // Having saved progress, it is claimable again, after the back-off of the one
        // attempt counted.
        let Step::Quiet(saved) = Update::checkpoint(serde_json::json!({"step": 1}))
            .unwrap()
            .apply(last, t0)
        else {
            panic!("saved");
        };
        assert!(
            matches!(lapse(saved.clone(), &backoff, false), Lapse::Claimable(wait) if wait == backoff.after(1))
        );
        let (claimed, after, attempt) = claim_next(saved, &backoff).expect("claimable");
        assert_eq!((after, attempt), (backoff.after(1), 3));
        assert_eq!(claimed.attempts().map(|a| a.spent()), Some(1));
        // Its third attempt, without progress, is the last: the second one counted.
        let Lapse::Fail(failed) = lapse(claimed, &backoff, false) else {
            panic!("fails");
        };
        assert!(
            failed
                .status_message()
                .is_some_and(|m| m.contains("after 2 of 2 attempts without progress (3 in all)")),
            "{:?}",
            failed.status_message()
        );
    }
}
