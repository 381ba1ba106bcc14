//! Which tasks an operator's list holds ([`TaskQuery`], [`View`]) and where a list
//! continues ([`AdminCursor`]).

use std::time::Duration;

use crate::backend::{Position, StoredRow, TaskFilter};
use crate::clock::Timestamp;
use crate::status::TaskStatus;
use crate::store::Owner;

use super::AdminError;

/// The filters of an operator's list of tasks across owners
/// ([`TaskAdmin::list_tasks`](super::TaskAdmin::list_tasks)): a task is listed if it
/// passes every filter set. The statuses (and the statuses a [`View`] implies) are pushed
/// down to the store; the rest is checked on each task read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Only tasks in one of these statuses; `None`: any.
    pub statuses: Option<Vec<TaskStatus>>,
    /// Only tasks that run this tool: the tool a task keeps
    /// ([`TaskRequest::with_tool`](crate::TaskRequest::with_tool): `mcp-tasks-server` names
    /// it for every task, redeliverable or not), or for a task that keeps none (stored
    /// before tasks kept it) the `tool` of its job, if it has one, at one read each
    /// ([`TaskAdmin::tool_of`](super::TaskAdmin::tool_of)).
    pub tool: Option<String>,
    /// Only this owner's tasks.
    pub owner: Option<Owner>,
    /// Only redeliverable tasks that run (or ran) at least this attempt.
    pub min_attempts: Option<u32>,
    /// Only tasks created before this time.
    pub created_before: Option<Timestamp>,
    /// Only tasks created after this time.
    pub created_after: Option<Timestamp>,
    /// Only unfinished tasks whose lease this instance took.
    pub lease_holder: Option<String>,
    /// Only the tasks of this derived view.
    pub view: Option<View>,
}

/// A derived view of the tasks that need an operator's eye.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `working` tasks whose lease lapsed and that nothing will pick up: not claimable (not
    /// redeliverable, or no attempts left), or claimable but unclaimed for longer than
    /// `grace` after their lease lapsed (no live instance claims). An instance's reaper
    /// fails the first kind within a lease round; a task listed here stays listed when
    /// no instance runs one.
    Stalled {
        /// How long after its lease lapsed a claimable task counts as stalled.
        grace: Duration,
    },
    /// Tasks `input_required` for longer than this (since their last update).
    InputRequiredLongerThan(Duration),
    /// Unfinished redeliverable tasks (`working` or `input_required`) on their last
    /// attempt: if their instance stops, no other claims them (they fail). A finished task
    /// keeps no attempts, so it is never in this view: one whose attempts ran out is
    /// `failed`, with the status message `the task failed after N attempts…` (list the
    /// `failed` status to see them).
    Exhausted,
}

impl TaskQuery {
    /// Every task.
    #[must_use]
    pub fn all() -> Self {
        TaskQuery::default()
    }

    /// The same query, also keeping tasks in `status`.
    #[must_use]
    pub fn with_status(mut self, status: TaskStatus) -> Self {
        let statuses = self.statuses.get_or_insert_with(Vec::new);
        if !statuses.contains(&status) {
            statuses.push(status);
        }
        self
    }

    /// The same query, only for `owner`'s tasks.
    #[must_use]
    pub fn of_owner(mut self, owner: Owner) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The same query, only for tasks that run `tool` ([`TaskQuery::tool`]).
    #[must_use]
    pub fn of_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// The same query, only for tasks at attempt `n` or later.
    #[must_use]
    pub fn with_min_attempts(mut self, n: u32) -> Self {
        self.min_attempts = Some(n);
        self
    }

    /// The same query, only for tasks created before `at`.
    #[must_use]
    pub fn created_before(mut self, at: Timestamp) -> Self {
        self.created_before = Some(at);
        self
    }

    /// The same query, only for tasks created after `at`.
    #[must_use]
    pub fn created_after(mut self, at: Timestamp) -> Self {
        self.created_after = Some(at);
        self
    }

    /// The same query, only for tasks created longer ago than `older_than` and less long
    /// ago than `newer_than`, counted back from `now` (the store's clock,
    /// [`TaskAdmin::clock`](super::TaskAdmin::clock)); a bound left `None` leaves that
    /// side as it was.
    #[must_use]
    pub fn created_within(
        mut self,
        now: Timestamp,
        older_than: Option<Duration>,
        newer_than: Option<Duration>,
    ) -> Self {
        let ago = |age: Duration| {
            let age = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
            Timestamp::from_unix_millis(now.unix_millis().saturating_sub(age))
        };
        if let Some(age) = older_than {
            self.created_before = Some(ago(age));
        }
        if let Some(age) = newer_than {
            self.created_after = Some(ago(age));
        }
        self
    }

    /// The same query, only for tasks leased by the instance `name`.
    #[must_use]
    pub fn held_by(mut self, name: impl Into<String>) -> Self {
        self.lease_holder = Some(name.into());
        self
    }

    /// The same query, only for the tasks of `view`.
    #[must_use]
    pub fn in_view(mut self, view: View) -> Self {
        self.view = Some(view);
        self
    }

    /// What the store is asked to filter itself: the statuses, narrowed by the view's.
    pub(crate) fn pushed_down(&self) -> TaskFilter {
        let implied: Option<&[TaskStatus]> = match self.view {
            Some(View::Stalled { .. }) => Some(&[TaskStatus::Working]),
            Some(View::InputRequiredLongerThan(_)) => Some(&[TaskStatus::InputRequired]),
            Some(View::Exhausted) => Some(&[TaskStatus::Working, TaskStatus::InputRequired]),
            None => None,
        };
        let statuses: Option<Vec<TaskStatus>> = match (&self.statuses, implied) {
            (Some(statuses), Some(implied)) => Some(
                statuses
                    .iter()
                    .copied()
                    .filter(|s| implied.contains(s))
                    .collect(),
            ),
            (Some(statuses), None) => Some(statuses.clone()),
            (None, Some(implied)) => Some(implied.to_vec()),
            (None, None) => None,
        };
        let mut filter = TaskFilter::any();
        if let Some(statuses) = statuses {
            // An empty list (a status and a view that exclude each other) keeps nothing.
            filter.statuses = Some(statuses);
        }
        filter
    }

    /// Whether `row` passes every filter but the tool's (which needs the job), at `now`
    /// on the store's clock.
    pub(crate) fn matches_row(&self, row: &StoredRow, now: Timestamp) -> bool {
        let task = &row.task;
        if self
            .statuses
            .as_ref()
            .is_some_and(|statuses| !statuses.contains(&task.status()))
        {
            return false;
        }
        if self
            .owner
            .as_ref()
            .is_some_and(|owner| owner != row.key.owner())
        {
            return false;
        }
        if let Some(n) = self.min_attempts
            && task.attempts().is_none_or(|a| a.attempt() < n)
        {
            return false;
        }
        if self
            .created_before
            .is_some_and(|at| task.created_at() >= at)
            || self.created_after.is_some_and(|at| task.created_at() <= at)
        {
            return false;
        }
        if let Some(holder) = &self.lease_holder
            && (task.is_terminal() || row.lease_holder.as_deref() != Some(holder.as_str()))
        {
            return false;
        }
        self.view.is_none_or(|view| view.holds(row, now))
    }
}

impl View {
    /// Whether the view holds `row`, at `now` on the store's clock.
    #[must_use]
    pub fn holds(&self, row: &StoredRow, now: Timestamp) -> bool {
        let task = &row.task;
        match *self {
            View::Stalled { grace } => is_stalled(row, now, grace),
            View::InputRequiredLongerThan(bound) => {
                task.status() == TaskStatus::InputRequired
                    && now.saturating_since(task.last_updated_at()) > bound
            }
            View::Exhausted => !task.is_terminal() && task.attempts().is_some_and(|a| !a.left()),
        }
    }
}

/// Whether `row` is a `working` task whose lease lapsed by `now` and that another
/// instance may claim (redeliverable, with attempts left): the backlog of claims.
#[must_use]
pub fn awaits_claim(row: &StoredRow, now: Timestamp) -> bool {
    row.task.status() == TaskStatus::Working
        && row.leased_until.is_some_and(|deadline| deadline <= now)
        && row.task.attempts().is_some_and(|a| a.left())
}

/// Whether `row` is a `working` task whose lease lapsed and that nothing will pick up
/// ([`View::Stalled`]).
pub(crate) fn is_stalled(row: &StoredRow, now: Timestamp, grace: Duration) -> bool {
    let task = &row.task;
    let Some(deadline) = row.leased_until else {
        return false;
    };
    if task.status() != TaskStatus::Working || deadline > now {
        return false;
    }
    !awaits_claim(row, now) || now.saturating_since(deadline) > grace
}

/// Where an operator's list continues: after a task's [`Position`] in the store. Its text
/// form (`v1.<sequence in hex>.<id>`) is opaque to operators, and not secret: the admin
/// view is every owner's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminCursor(pub Position);

impl AdminCursor {
    /// The cursor as text.
    #[must_use]
    pub fn encode(&self) -> String {
        format!("v1.{:x}.{}", self.0.seq, self.0.id.simple())
    }

    /// Reads a cursor [`encode`](Self::encode) wrote.
    ///
    /// # Errors
    /// [`AdminError::InvalidCursor`] for any other text.
    pub fn decode(text: &str) -> Result<Self, AdminError> {
        let bad = || AdminError::InvalidCursor {
            cursor: crate::error::shorten(text),
        };
        let mut parts = text.split('.');
        let (Some("v1"), Some(seq), Some(id), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        if seq.is_empty() || seq.len() > 16 || id.len() != 32 {
            return Err(bad());
        }
        let seq = u64::from_str_radix(seq, 16).map_err(|_| bad())?;
        let id = uuid::Uuid::try_parse(id).map_err(|_| bad())?;
        Ok(AdminCursor(Position { seq, id }))
    }
}
