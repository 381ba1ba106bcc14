//! What the admin operations answer: their errors ([`AdminError`]), the record of each
//! action ([`AdminRecord`]), a task shown whole ([`TaskDetails`]), and the reports of the
//! store-wide operations.

use std::fmt;

use crate::backend::{Position, StoredRow};
use crate::clock::Timestamp;
use crate::error::{Error, shorten};
use crate::status::TaskStatus;
use crate::store::Owner;

/// Why an admin operation on a task did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// No task of any owner has this id (never created, removed, expired, or not an id a
    /// store issues).
    #[error("no task `{task_id}` in the store")]
    NotFound {
        /// The id asked for.
        task_id: String,
    },
    /// The task is finished already: nothing was changed, and this is what was found.
    #[error("task `{task_id}` is already `{status}`: left as it is")]
    AlreadyFinished {
        /// The task.
        task_id: String,
        /// Its terminal status.
        status: TaskStatus,
    },
    /// The task cannot be handed over to another instance (why is said).
    #[error("task `{task_id}` cannot be handed over: {why}")]
    NotHandedOver {
        /// The task.
        task_id: String,
        /// Why: not redeliverable, no attempts left, finished, not leased, lapsed already.
        why: String,
    },
    /// A cursor that is not one an admin list issued.
    #[error("`{cursor}` is not a cursor of the admin list: pass the one a page answered")]
    InvalidCursor {
        /// The cursor (shortened).
        cursor: String,
    },
    /// The store lives in one process (the in-process registry): it has no instances to
    /// drain.
    #[error("this store lives in one process: it has no instances to drain")]
    NoInstances,
    /// The store could not answer, or refused the change (its own error).
    #[error(transparent)]
    Store(#[from] Error),
}

/// What an admin action did: who did what to which task, from which status to which, at
/// what time of the store's clock. The library writes no log (the core has no logger): the
/// caller logs it. Cancel and fail also name the actor in the task's status message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminRecord {
    /// Who acted (the operator's name).
    pub actor: String,
    /// What was done.
    pub action: AdminAction,
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub owner: Owner,
    /// Its status before.
    pub from: TaskStatus,
    /// Its status after (the same for a hand-over).
    pub to: TaskStatus,
    /// When, on the store's clock.
    pub at: Timestamp,
}

/// An admin action ([`AdminRecord::action`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdminAction {
    /// Cancelled (`tasks/cancel`'s transition).
    Cancel,
    /// Failed with `-32603` and a reason.
    Fail,
    /// Its lease handed over: another instance claims it.
    HandOver,
    /// Removed, finished and older than the purge's bound.
    Purge,
}

impl AdminAction {
    /// The action's name: `cancel`, `fail`, `hand-over`, `purge`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            AdminAction::Cancel => "cancel",
            AdminAction::Fail => "fail",
            AdminAction::HandOver => "hand-over",
            AdminAction::Purge => "purge",
        }
    }
}

impl fmt::Display for AdminRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "admin {} did {} on task {} of {} ({} -> {}) at {}",
            self.actor,
            self.action.as_str(),
            self.task_id,
            owner_name(&self.owner),
            self.from,
            self.to,
            self.at
        )
    }
}

/// An owner as an operator reads it: its key, or `(anonymous)`.
#[must_use]
pub fn owner_name(owner: &Owner) -> String {
    match owner.key() {
        Some(key) => shorten(key),
        None => "(anonymous)".to_owned(),
    }
}

/// One task shown whole ([`TaskAdmin::show_task`](super::TaskAdmin::show_task)).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskDetails {
    /// The task as stored (its wire view is its serde form), its owner, position and
    /// lease.
    pub row: StoredRow,
    /// Whether it has a job (it is redeliverable), and the job's tool if it names one.
    pub job: Option<JobSummary>,
    /// The size of its checkpoint, serialized, if it has one.
    pub checkpoint_bytes: Option<usize>,
    /// The trace id of the trace context it keeps, if any.
    pub trace_id: Option<String>,
}

/// What [`TaskDetails`] says of a task's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSummary {
    /// The job's `tool`, if it names one.
    pub tool: Option<String>,
}

/// One instance seen in the store's leases or drain flags
/// ([`TaskAdmin::instances`](super::TaskAdmin::instances)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceInfo {
    /// Its name (`StoreSettings::instance_name`).
    pub name: String,
    /// Unfinished tasks whose lease it took.
    pub tasks: usize,
    /// Of those, leases still running (deadline ahead): it renewed them lately.
    pub live_leases: usize,
    /// The latest deadline of its leases.
    pub latest_deadline: Option<Timestamp>,
    /// Whether it looks alive: at least one of its leases is still running.
    pub alive: bool,
    /// Whether an operator drained it ([`TaskAdmin::drain`](super::TaskAdmin::drain)): it
    /// claims no task.
    pub draining: bool,
}

/// A page of an operator's list ([`TaskAdmin::list_tasks`](super::TaskAdmin::list_tasks)).
#[derive(Debug, Clone, PartialEq)]
pub struct AdminPage {
    /// The tasks, in store position order.
    pub rows: Vec<StoredRow>,
    /// Where the next page starts; `None` once the store was read to its end.
    pub next_cursor: Option<String>,
    /// How many stored tasks were read to fill this page (filters left the rest out).
    pub examined: usize,
}

/// How far a purge got ([`TaskAdmin::purge_finished`](super::TaskAdmin::purge_finished)),
/// told after each batch and answered at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PurgeProgress {
    /// Finished tasks read so far.
    pub examined: usize,
    /// Of those, removed.
    pub purged: usize,
    /// Where the purge stands in the store (its last batch's end).
    pub at: Option<Position>,
}

/// What a drain did ([`TaskAdmin::drain`](super::TaskAdmin::drain)).
#[derive(Debug)]
pub struct DrainReport {
    /// Whether the instance was drained already (its flag was set before).
    pub was_draining: bool,
    /// The tasks handed over.
    pub handed_over: Vec<AdminRecord>,
    /// The instance's tasks that could not be (not redeliverable, no attempts left):
    /// they stay with it, and fail if it stops.
    pub kept: Vec<AdminError>,
}

/// The JSON an operator's tools show of one listed task (the console's `list --json` and
/// its HTTP API): its id, owner (`null` for the anonymous one), status and message,
/// timestamps, attempt and bound, lease holder and deadline.
#[must_use]
pub fn row_json(row: &StoredRow) -> serde_json::Value {
    let task = &row.task;
    serde_json::json!({
        "taskId": row.key.id().to_string(),
        "owner": row.key.owner().key(),
        "status": task.status(),
        "statusMessage": task.status_message(),
        "createdAt": task.created_at().to_string(),
        "lastUpdatedAt": task.last_updated_at().to_string(),
        "attempt": task.attempts().map(|a| a.attempt()),
        "maxAttempts": task.attempts().map(|a| a.max()),
        "leaseHolder": row.lease_holder,
        "leasedUntil": row.leased_until.map(|at| at.to_string()),
    })
}

impl TaskDetails {
    /// The JSON an operator's tools show of a task whole: [`row_json`], the task's wire
    /// view (`task`), whether it keeps a job, the tool it runs (the one it keeps, else its
    /// job's), its checkpoint's size and its trace id.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = row_json(&self.row);
        if let serde_json::Value::Object(map) = &mut value {
            map.insert(
                "task".into(),
                serde_json::to_value(&self.row.task).unwrap_or(serde_json::Value::Null),
            );
            map.insert("hasJob".into(), self.job.is_some().into());
            let tool = match self.row.task.tool() {
                Some(tool) => Some(tool.to_owned()),
                None => self.job.as_ref().and_then(|job| job.tool.clone()),
            };
            map.insert("tool".into(), tool.into());
            map.insert("checkpointBytes".into(), self.checkpoint_bytes.into());
            map.insert("traceId".into(), self.trace_id.clone().into());
        }
        value
    }
}

impl InstanceInfo {
    /// The JSON an operator's tools show of an instance: its name, tasks, live leases,
    /// latest deadline, whether it looks alive and whether it is drained.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "tasks": self.tasks,
            "liveLeases": self.live_leases,
            "latestDeadline": self.latest_deadline.map(|at| at.to_string()),
            "alive": self.alive,
            "draining": self.draining,
        })
    }
}

impl DrainReport {
    /// The JSON an operator's tools show of a drain: whether the instance was drained
    /// already, the records of the tasks handed over, and why the others were kept.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "wasDraining": self.was_draining,
            "handedOver": self.handed_over.iter().map(AdminRecord::to_json).collect::<Vec<_>>(),
            "kept": self.kept.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })
    }
}

impl AdminRecord {
    /// The JSON an operator's tools show of an action done: the task, its owner, the
    /// action, who did it, the statuses before and after, and when.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "taskId": self.task_id,
            "owner": self.owner.key(),
            "action": self.action.as_str(),
            "actor": self.actor,
            "from": self.from,
            "to": self.to,
            "at": self.at.to_string(),
        })
    }
}
