//! The lossless stored form of a task, for backends that keep tasks outside the process.
//!
//! A task is stored as its status, its two timestamps (as Unix milliseconds, so that a
//! backend can write them from its own clock and compare them in queries) and a *body*:
//! a short JSON text holding everything else, including what never goes on the wire (the
//! input keys a task issued, answers not yet taken, the cancel-requested flag). [`encode`]
//! writes the body; [`decode`] rebuilds the exact task from the parts, checked: parts this
//! crate did not write are [`Error::Store`], never a made-up task.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::error::Error;
use crate::id::TaskId;
use crate::input::{InputRequests, InputState, Progress, WorkingData};
use crate::jsonrpc::{JsonObject, JsonRpcError};
use crate::millis::OptMillis;
use crate::outcome::{Kept, Outcome};
use crate::status::{TaskState, TaskStatus};
use crate::task::Task;
use crate::trace::TraceContext;

/// Everything of a task but its id, status and timestamps, in short keys.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    ttl: Option<u64>,
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    poll_interval: Option<u64>,
    /// The requestor asked to cancel.
    #[serde(rename = "x", default, skip_serializing_if = "is_false")]
    cancel_requested: bool,
    /// Every input key the task ever issued.
    #[serde(rename = "k", default, skip_serializing_if = "BTreeSet::is_empty")]
    issued: BTreeSet<String>,
    /// Outstanding input requests, by wire key.
    #[serde(rename = "q", default, skip_serializing_if = "Option::is_none")]
    outstanding: Option<InputRequests>,
    /// The handler's names of the wire keys.
    #[serde(rename = "n", default, skip_serializing_if = "BTreeMap::is_empty")]
    names: BTreeMap<String, String>,
    /// Answers received and not yet taken, by wire key.
    #[serde(rename = "a", default, skip_serializing_if = "BTreeMap::is_empty")]
    answers: BTreeMap<String, JsonObject>,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    error: Option<JsonRpcError>,
    /// A redeliverable task's attempt and bound.
    #[serde(rename = "ra", default, skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(rename = "rm", default, skip_serializing_if = "Option::is_none")]
    max_attempts: Option<u32>,
    /// Of the earlier attempts, those that counted against the bound (saved no progress);
    /// missing (a task stored before it was kept): every earlier attempt.
    #[serde(rename = "rs", default, skip_serializing_if = "Option::is_none")]
    spent: Option<u32>,
    /// The attempt running now saved progress.
    #[serde(rename = "rp", default, skip_serializing_if = "is_false")]
    progressed: bool,
    /// The handler's last checkpoint.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    checkpoint: Option<serde_json::Value>,
    /// The trace context of the creating request: `traceparent`, `tracestate`, `baggage`.
    #[serde(rename = "tc", default, skip_serializing_if = "Option::is_none")]
    trace: Option<StoredTrace>,
    /// The tool the task runs, if its creator named one.
    #[serde(rename = "tl", default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
}

/// A [`TraceContext`] as stored; read back through its checks (a part that no longer
/// passes them is dropped, never an error: it is telemetry, not the task).
#[derive(Debug, Serialize, Deserialize)]
struct StoredTrace {
    p: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<String>,
}

impl StoredTrace {
    fn of(trace: &TraceContext) -> Self {
        StoredTrace {
            p: trace.traceparent().to_owned(),
            s: trace.tracestate().map(str::to_owned),
            b: trace.baggage().map(str::to_owned),
        }
    }

    fn read(self) -> Option<Arc<TraceContext>> {
        TraceContext::new(&self.p)
            .map(|trace| {
                trace
                    .with_tracestate(self.s.as_deref())
                    .with_baggage(self.b.as_deref())
            })
            .map(Arc::new)
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(flag: &bool) -> bool {
    !flag
}

/// The body of `task`: everything but its id, status and timestamps, as JSON text.
#[must_use]
pub fn encode(task: &AnyTask) -> String {
    let mut record = Record {
        message: task.status_message().map(str::to_owned),
        ttl: task.ttl(),
        poll_interval: task.poll_interval(),
        trace: task.trace_context().map(StoredTrace::of),
        tool: task.tool().map(str::to_owned),
        ..Record::default()
    };
    let mut progress = |p: &Progress| {
        record.cancel_requested = p.cancel_requested;
        record.issued = p.issued.clone();
        record.attempt = p.attempts.map(|attempts| attempts.attempt);
        record.max_attempts = p.attempts.map(|attempts| attempts.max);
        record.spent = p.attempts.map(|attempts| attempts.spent);
        record.progressed = p.attempts.is_some_and(|attempts| attempts.progressed);
        record.checkpoint = p.checkpoint.as_deref().cloned();
    };
    match task {
        AnyTask::Working(task) => {
            if let Some(p) = task.data.progress() {
                progress(p);
            }
        }
        AnyTask::InputRequired(task) => {
            progress(&task.data.progress);
            record.outstanding = Some(task.data.outstanding.clone());
            record.names = task.data.names.clone();
            record.answers = task.data.answers.clone();
        }
        AnyTask::Completed(task) => set_outcome(&mut record, task.data.as_ref().map(Kept::get)),
        AnyTask::Failed(task) => set_outcome(&mut record, task.data.as_ref().map(Kept::get)),
        AnyTask::Cancelled(_) => {}
    }
    // A record of strings, numbers, booleans and JSON values always serializes.
    serde_json::to_string(&record).unwrap_or_default()
}

fn set_outcome(record: &mut Record, outcome: Option<&Outcome>) {
    match outcome {
        Some(Outcome::Result(result)) => record.result = Some(result.clone()),
        Some(Outcome::Error(error)) => record.error = Some(error.clone()),
        None => {}
    }
}

/// The task `id` from its stored parts: its status (as on the wire), its creation and last
/// update times (Unix milliseconds; a last update before the creation reads as the
/// creation) and the body [`encode`] wrote.
///
/// # Errors
/// [`Error::Store`] if the parts are not a task this crate wrote.
pub fn decode(
    id: &str,
    status: &str,
    created: i64,
    updated: i64,
    body: &str,
) -> Result<AnyTask, Error> {
    let corrupt = |what: String| Error::store(format!("task `{id}` is unreadable: {what}"));
    let status: TaskStatus = status.parse().map_err(|err| corrupt(format!("{err}")))?;
    let record: Record = serde_json::from_str(body).map_err(|err| corrupt(err.to_string()))?;
    let attempts = match (record.attempt, record.max_attempts) {
        (Some(attempt), Some(max)) if attempt >= 1 && max >= 1 => {
            let attempts = crate::store::Attempts {
                attempt,
                max,
                // Stored before progress was kept: every earlier attempt counted.
                spent: record.spent.unwrap_or(attempt - 1),
                progressed: record.progressed,
            };
            let fits =
                attempt <= attempts.ceiling() && attempts.spent < attempt && attempts.spent < max;
            if !fits {
                return Err(corrupt("an attempt outside its bound".to_owned()));
            }
            Some(attempts)
        }
        (None, None) => None,
        _ => return Err(corrupt("an attempt outside its bound".to_owned())),
    };
    let progress = Progress {
        issued: record.issued,
        cancel_requested: record.cancel_requested,
        attempts,
        checkpoint: record.checkpoint.map(Arc::new),
    };
    let outcome = match (record.result, record.error) {
        (Some(result), None) => Some(Kept::new(Outcome::Result(result))),
        (None, Some(error)) => Some(Kept::new(Outcome::Error(error))),
        (None, None) => None,
        (Some(_), Some(_)) => return Err(corrupt("both a result and an error".to_owned())),
    };
    let created_at = Timestamp::from_unix_millis(created);
    let base = Base {
        id: TaskId::from(id),
        status_message: record.message.map(Arc::from),
        created_at,
        last_updated_at: Timestamp::from_unix_millis(updated.max(created)),
        ttl: OptMillis::new(record.ttl),
        poll_interval: OptMillis::new(record.poll_interval),
        trace: record.trace.and_then(StoredTrace::read),
        tool: record.tool.map(Arc::from),
    };
    Ok(match status {
        TaskStatus::Working => {
            let fresh = progress == Progress::default();
            base.with::<crate::status::Working>(WorkingData((!fresh).then(|| Arc::new(progress))))
                .into_any()
        }
        TaskStatus::InputRequired => base
            .with::<crate::status::InputRequired>(Arc::new(InputState {
                outstanding: record.outstanding.unwrap_or_default(),
                names: record.names,
                answers: record.answers,
                progress,
            }))
            .into_any(),
        TaskStatus::Completed => base.with::<crate::status::Completed>(outcome).into_any(),
        TaskStatus::Failed => base.with::<crate::status::Failed>(outcome).into_any(),
        TaskStatus::Cancelled => base.with::<crate::status::Cancelled>(()).into_any(),
    })
}

/// The fields every status has.
struct Base {
    id: TaskId,
    status_message: Option<Arc<str>>,
    created_at: Timestamp,
    last_updated_at: Timestamp,
    ttl: OptMillis,
    poll_interval: OptMillis,
    trace: Option<Arc<TraceContext>>,
    tool: Option<Arc<str>>,
}

impl Base {
    fn with<S: TaskState>(self, data: S::Data) -> Task<S> {
        Task {
            id: self.id,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            trace: self.trace,
            tool: self.tool,
            data,
            state: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::any::Transition;
    use crate::input::InputRequest;
    use crate::store::{Step, Update};
    use crate::task::Change;
    use serde_json::json;

    fn round_trip(task: AnyTask) {
        let body = encode(&task);
        let back = decode(
            &task.id().to_string(),
            task.status().as_str(),
            task.created_at().unix_millis(),
            task.last_updated_at().unix_millis(),
            &body,
        )
        .unwrap();
        assert_eq!(back, task, "{body}");
    }

    #[test]
    fn every_status_round_trips_with_its_data() {
        let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
        let new = || {
            Task::new(TaskId::random(), t0)
                .with_ttl(Some(60_000))
                .with_poll_interval(Some(100))
        };
        round_trip(new().into_any());
        let traced = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .map(|trace| {
                trace
                    .with_tracestate(Some("rojo=1"))
                    .with_baggage(Some("k=v"))
            });
        round_trip(new().with_trace_context(traced.clone()).into_any());
        let finished = new()
            .with_trace_context(traced)
            .complete(JsonObject::new(), t0.plus_millis(1))
            .into_any();
        assert!(finished.trace_context().is_some(), "kept when it finishes");
        round_trip(finished);
        let tooled = new().with_tool(Some("fetch"));
        round_trip(tooled.clone().into_any());
        let cancelled = tooled.cancel(t0.plus_millis(1)).into_any();
        assert_eq!(cancelled.tool(), Some("fetch"), "kept when it finishes");
        round_trip(cancelled);
        let mut redelivered = new().with_attempts(3).into_any();
        if let Step::Quiet(task) = Update::checkpoint(json!({"step": 2}))
            .unwrap()
            .apply(redelivered.clone(), t0.plus_millis(1))
        {
            redelivered = task;
        }
        assert!(redelivered.checkpoint().is_some());
        round_trip(redelivered.clone());
        if let Step::Changed(task) = Update::claim().apply(redelivered, t0.plus_millis(2)) {
            round_trip(task);
        } else {
            panic!("claimed");
        }
        let mut asked = new();
        asked.request_cancel();
        round_trip(asked.clone().into_any());
        let requests =
            InputRequests::new().with("confirm", InputRequest::elicitation(JsonObject::new()));
        let mut waiting = new().require_input(requests, Change::at(t0.plus_millis(2)));
        let answer = json!({"action": "accept"}).as_object().cloned().unwrap();
        waiting.answer([("confirm".to_owned(), answer)], t0.plus_millis(3));
        round_trip(waiting.clone().into_any());
        let again = waiting.resume(t0.plus_millis(4)).require_input(
            InputRequests::new().with("confirm", InputRequest::elicitation(JsonObject::new())),
            t0.plus_millis(5),
        );
        round_trip(again.into_any());
        let result = json!({"content": [], "big": 1.0e300, "n": u64::MAX});
        round_trip(
            new()
                .complete(result.as_object().cloned().unwrap(), t0.plus_millis(6))
                .into_any(),
        );
        round_trip(
            new()
                .fail(
                    Outcome::error(-32000, "boom"),
                    Change::at(t0).with_message("x"),
                )
                .into_any(),
        );
        round_trip(new().cancel(t0.plus_millis(7)).into_any());
        let any = AnyTask::from(asked)
            .apply(Transition::Cancel, Change::at(t0.plus_millis(8)))
            .unwrap();
        round_trip(any);
    }

    #[test]
    fn attempts_stored_before_progress_was_kept_read_as_all_counted() {
        let read = |body: &str| decode("t", "working", 0, 0, body).map(|task| task.attempts());
        // No `rs`: every earlier attempt counted, as before.
        let old = read(r#"{"ra":2,"rm":3}"#).unwrap().unwrap();
        assert_eq!(
            (old.attempt(), old.spent(), old.progressed()),
            (2, 1, false)
        );
        let new = read(r#"{"ra":5,"rm":3,"rs":1,"rp":true}"#)
            .unwrap()
            .unwrap();
        assert_eq!((new.attempt(), new.spent(), new.progressed()), (5, 1, true));
        for body in [
            // Past the bound without a count of those spared.
            r#"{"ra":4,"rm":3}"#,
            // Past the ceiling.
            r#"{"ra":13,"rm":3,"rs":0}"#,
            // More spent than ran, or than the bound allows.
            r#"{"ra":2,"rm":3,"rs":2}"#,
            r#"{"ra":5,"rm":3,"rs":3}"#,
            r#"{"ra":0,"rm":3}"#,
        ] {
            assert!(
                matches!(read(body), Err(Error::Store { .. })),
                "{body}: {:?}",
                read(body)
            );
        }
    }

    #[test]
    fn unreadable_parts_are_a_store_error() {
        for (status, body) in [
            ("done", "{}"),
            ("working", "nope"),
            ("completed", r#"{"r":{},"e":{"code":1,"message":"m"}}"#),
        ] {
            let err = decode("t", status, 0, 0, body).unwrap_err();
            assert!(matches!(err, Error::Store { .. }), "{status} {body}: {err}");
        }
    }
}
