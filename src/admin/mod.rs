//! Operating a store: see and act on every task, across owners.
//!
//! MCP shows a requestor its own tasks. An operator of a fleet (instances sharing a Redis
//! or PostgreSQL store, or one process on the in-process registry) needs every owner's:
//! which tasks are stuck, which instance holds what, and a way to cancel, fail, hand over
//! or purge them. [`TaskAdmin`] is that view, apart from the MCP surface (no method of it
//! is reachable from a client): every [`AsSharedStore`] store (the Redis and PostgreSQL
//! stores, any driver's) and the [`TaskRegistry`](crate::TaskRegistry) implement it.
//! `mcp-tasks-admin` is its command line.
//!
//! - **List** ([`TaskAdmin::list_tasks`]): every owner's tasks in store order, filtered by
//!   a [`TaskQuery`] (statuses, tool, owner, attempts, age, lease holder, and the derived
//!   [`View`]s: stalled, input required too long, attempts exhausted). The statuses are
//!   pushed down to the store; the other filters are checked on the tasks read, and a page
//!   reads on (up to [`MAX_SCANS_PER_PAGE`] store pages) until it holds its limit, so a
//!   selective filter does not answer empty pages with more behind. Pages continue with an
//!   [`AdminCursor`]: every task stored when a walk starts and still stored when it ends is
//!   listed once, whatever changes meanwhile.
//! - **Show** ([`TaskAdmin::show_task`]): one task whole, its lease, job, checkpoint
//!   and trace.
//! - **Act** ([`TaskAdmin::cancel_task`], [`TaskAdmin::fail_task`],
//!   [`TaskAdmin::hand_over_task`], [`TaskAdmin::act`] for many): through the store's own
//!   version-checked transitions (the same [`Update`]s the protocol's `tasks/cancel` and a
//!   handler's `fail` decide), never raw writes, so the typestate holds: a finished task is
//!   left as it is and the answer says what was found ([`AdminError::AlreadyFinished`]).
//!   Cancel and fail name the operator in the task's status message; every action answers
//!   an [`AdminRecord`] for the caller to log.
//! - **Purge** ([`TaskAdmin::purge_finished`]): removes finished tasks older than a bound,
//!   a store page at a time, telling progress after each.
//! - **Instances** ([`TaskAdmin::instances`]), **drain** ([`TaskAdmin::drain`]) and
//!   **undrain** ([`TaskAdmin::undrain`]): the instances seen in the leases of unfinished
//!   tasks (an instance holding none is not seen, unless drained); a drain sets a flag in
//!   the store that the instance's claim loop honours (it claims nothing more) and hands
//!   over every task it holds. The flag holds until undrained, or until an instance of
//!   that name starts again.
//!
//! Finding a task by id alone (the operator does not know its owner) reads the store's
//! pages until it is found: one pass for any number of ids ([`TaskAdmin::act`]).

mod query;
mod report;

use std::time::Duration;

use crate::backend::{
    AsSharedStore, Driver, LeaseCall, LeaseOp, Position, Renewal, Scan, StoredRow, TaskFilter,
    TaskKey,
};
use crate::clock::Timestamp;
use crate::error::Error;
use crate::jsonrpc::INTERNAL_ERROR;
use crate::outcome::Outcome;
use crate::status::TaskStatus;
use crate::store::{StatusChange, SubscriptionId, TaskStore, Update};
use crate::{AnyTask, Transition};

pub use crate::store::{ChangeKind, ChangeWatcher};
pub use query::{AdminCursor, TaskQuery, View, awaits_claim};
pub use report::{
    AdminAction, AdminError, AdminPage, AdminRecord, DrainReport, InstanceInfo, JobSummary,
    PurgeProgress, TaskDetails, owner_name, row_json,
};

/// The most tasks one admin list page holds.
pub const MAX_ADMIN_PAGE: usize = 1_000;

/// The most store pages one admin list page reads to fill itself.
pub const MAX_SCANS_PER_PAGE: usize = 20;

/// How many tasks one read of the store's pages asks for (a list, a search by id, a
/// purge's batch).
pub const SCAN_BATCH: usize = 500;

/// The lease length a hand-over passes to a driver (a hand-over ends the lease: the length
/// is not used).
const HAND_OVER_LEASE: Duration = Duration::from_secs(30);

/// An operator's view of a whole store, across owners (see the [module docs](self)).
///
/// A store implements the first three methods (a page of every owner's tasks, its clock,
/// a hand-over of any instance's lease); the operations are written once over them and
/// the store's [`TaskStore`] transitions.
pub trait TaskAdmin: TaskStore {
    /// Up to `limit` stored tasks of every owner after `after`, in [`Position`] order,
    /// only those `filter` matches, with their leases; [`Scan::next`] says where the next
    /// page starts (`None` at the end). A page may hold fewer than `limit` with more
    /// behind.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn scan(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error>;

    /// The store's clock (the one its timestamps come from).
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn clock(&self) -> Result<Timestamp, Error>;

    /// Lets the lease of `row`'s task lapse now, whichever instance holds it, and tells
    /// every instance it is claimable; answers whether it did (a store without leases, a
    /// lease renewed for another attempt, or one lapsed already: `false`).
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn release_lease(&self, row: &StoredRow) -> Result<bool, Error>;

    /// The names of the instances drained ([`drain`](Self::drain)) and not yet resumed
    /// ([`undrain`](Self::undrain)), as the store keeps them. The default: none.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn drained(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// Sets or clears the drain flag of the instance `name`; answers whether it was set
    /// before. The default, for a store of one process (no instances): refused.
    ///
    /// # Errors
    /// [`AdminError::NoInstances`] for a store of one process; [`AdminError::Store`].
    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, AdminError> {
        let _ = (name, draining);
        Err(AdminError::NoInstances)
    }

    /// Registers `watcher` for every creation and every status change of every owner's
    /// tasks (from any instance of a shared store: what its change feed hears), called as
    /// a [`Subscriber`](crate::Subscriber) is; [`TaskStore::unsubscribe`] removes it. An
    /// operator's live view: new tasks are pushed, not polled for.
    ///
    /// The default, for a store that cannot tell creations: its status changes only.
    fn watch(&self, watcher: ChangeWatcher) -> SubscriptionId {
        self.add_subscriber(std::sync::Arc::new(move |change: &StatusChange| {
            watcher(change, ChangeKind::Changed);
        }))
    }

    /// One page of every owner's tasks that `query` keeps, after `cursor` (from the first
    /// with `None`), at most `limit` (clamped to `1..=`[`MAX_ADMIN_PAGE`]).
    ///
    /// # Errors
    /// [`AdminError::InvalidCursor`] for a cursor no list issued; [`AdminError::Store`].
    fn list_tasks(
        &self,
        query: &TaskQuery,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<AdminPage, AdminError> {
        let limit = limit.clamp(1, MAX_ADMIN_PAGE);
        let mut after = cursor
            .map(AdminCursor::decode)
            .transpose()?
            .map(|cursor| cursor.0);
        let filter = query.pushed_down();
        let now = self.clock()?;
        let mut rows = Vec::with_capacity(limit);
        let mut examined = 0;
        for _ in 0..MAX_SCANS_PER_PAGE {
            let scan = self.scan(after, &filter, SCAN_BATCH.max(limit))?;
            let mut read = scan.rows.into_iter();
            for row in read.by_ref() {
                examined += 1;
                let position = row.position;
                if query.matches_row(&row, now) && self.has_tool(&row, query.tool.as_deref())? {
                    rows.push(row);
                }
                if rows.len() == limit {
                    // Full: the next page starts after the last task read.
                    after = Some(position);
                    break;
                }
            }
            if rows.len() == limit {
                let more = read.next().is_some() || scan.next.is_some();
                return Ok(AdminPage {
                    rows,
                    next_cursor: more
                        .then(|| after.map(|at| AdminCursor(at).encode()))
                        .flatten(),
                    examined,
                });
            }
            match scan.next {
                Some(next) => after = Some(next),
                None => {
                    return Ok(AdminPage {
                        rows,
                        next_cursor: None,
                        examined,
                    });
                }
            }
        }
        // Read as far as one page may: continue from there.
        Ok(AdminPage {
            rows,
            next_cursor: after.map(|at| AdminCursor(at).encode()),
            examined,
        })
    }

    /// Whether `row`'s task runs `tool` ([`tool_of`](Self::tool_of); always, without a
    /// tool to match).
    ///
    /// # Errors
    /// [`Error::Store`] if the job cannot be read.
    fn has_tool(&self, row: &StoredRow, tool: Option<&str>) -> Result<bool, Error> {
        match tool {
            None => Ok(true),
            Some(tool) => Ok(self.tool_of(row)?.as_deref() == Some(tool)),
        }
    }

    /// The tool `row`'s task runs: the one it keeps ([`Task::tool`](crate::Task::tool),
    /// named by its creator, as `mcp-tasks-server` does for every task); for a task that
    /// keeps none (stored before tasks kept it, or created without one), the `tool` of its
    /// job if it has one, at the cost of one read (an unfinished task that runs once has
    /// no job: not read).
    ///
    /// # Errors
    /// [`Error::Store`] if the job cannot be read.
    fn tool_of(&self, row: &StoredRow) -> Result<Option<String>, Error> {
        if let Some(tool) = row.task.tool() {
            return Ok(Some(tool.to_owned()));
        }
        if !row.task.is_terminal() && row.task.attempts().is_none() {
            return Ok(None);
        }
        match self.job(row.key.owner(), &row.key.id().to_string()) {
            Ok(job) => Ok(job
                .as_ref()
                .and_then(|job| job.get("tool"))
                .and_then(|tool| tool.as_str())
                .map(str::to_owned)),
            // Removed or expired since it was read.
            Err(Error::TaskNotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// The stored tasks with these ids, whoever owns them, in one pass over the store's
    /// pages (ending as soon as every id is found); ids not found are left out.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn find_tasks(&self, ids: &[&str]) -> Result<Vec<StoredRow>, Error> {
        let mut wanted: Vec<uuid::Uuid> = ids
            .iter()
            .filter_map(|id| crate::id::TaskId::parse_canonical_uuid(id))
            .collect();
        let mut found = Vec::new();
        let mut after = None;
        while !wanted.is_empty() {
            let scan = self.scan(after, &TaskFilter::any(), SCAN_BATCH)?;
            for row in scan.rows {
                if let Some(at) = wanted.iter().position(|id| *id == row.key.id()) {
                    wanted.swap_remove(at);
                    found.push(row);
                }
            }
            match scan.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        Ok(found)
    }

    /// The task `task_id` whole, whoever owns it.
    ///
    /// # Errors
    /// [`AdminError::NotFound`]; [`AdminError::Store`].
    fn show_task(&self, task_id: &str) -> Result<TaskDetails, AdminError> {
        let row = self
            .find_tasks(&[task_id])?
            .pop()
            .ok_or_else(|| not_found(task_id))?;
        let job = match self.job(row.key.owner(), task_id) {
            Ok(job) => job.map(|job| JobSummary {
                tool: job.get("tool").and_then(|t| t.as_str()).map(str::to_owned),
            }),
            Err(Error::TaskNotFound { .. }) => return Err(not_found(task_id)),
            Err(err) => return Err(err.into()),
        };
        let checkpoint_bytes = row
            .task
            .checkpoint()
            .map(|value| serde_json::to_vec(value).map_or(0, |bytes| bytes.len()));
        let trace_id = row.task.trace_context().map(|t| t.trace_id().to_owned());
        Ok(TaskDetails {
            row,
            job,
            checkpoint_bytes,
            trace_id,
        })
    }

    /// Cancels `task_id` as `tasks/cancel` does, with the status message
    /// `cancelled by admin <actor>`.
    ///
    /// # Errors
    /// [`AdminError::NotFound`]; [`AdminError::AlreadyFinished`] for a finished task (left
    /// as it is); [`AdminError::Store`].
    fn cancel_task(&self, task_id: &str, actor: &str) -> Result<AdminRecord, AdminError> {
        let row = self
            .find_tasks(&[task_id])?
            .pop()
            .ok_or_else(|| not_found(task_id))?;
        act_on(self, &row, &Action::Cancel, actor)
    }

    /// Fails `task_id` with a JSON-RPC error `-32603` whose message is `reason`, and the
    /// status message `failed by admin <actor>: <reason>`.
    ///
    /// # Errors
    /// As for [`cancel_task`](Self::cancel_task).
    fn fail_task(
        &self,
        task_id: &str,
        reason: &str,
        actor: &str,
    ) -> Result<AdminRecord, AdminError> {
        let row = self
            .find_tasks(&[task_id])?
            .pop()
            .ok_or_else(|| not_found(task_id))?;
        let action = Action::Fail {
            reason: reason.to_owned(),
        };
        act_on(self, &row, &action, actor)
    }

    /// Hands `task_id` over: its lease lapses now, so another instance claims it for its
    /// next attempt at once. Only an unfinished, redeliverable task with attempts left and
    /// a running lease; its handler, still running where it was, is superseded once the
    /// task is claimed.
    ///
    /// # Errors
    /// [`AdminError::NotFound`]; [`AdminError::AlreadyFinished`];
    /// [`AdminError::NotHandedOver`] (why is said); [`AdminError::Store`].
    fn hand_over_task(&self, task_id: &str, actor: &str) -> Result<AdminRecord, AdminError> {
        let row = self
            .find_tasks(&[task_id])?
            .pop()
            .ok_or_else(|| not_found(task_id))?;
        act_on(self, &row, &Action::HandOver, actor)
    }

    /// Does `action` to each of `ids` (found in one pass over the store), answering per id,
    /// in the order given.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot be read to find them (an action's own failure
    /// is its id's answer).
    fn act(&self, ids: &[&str], action: &Action, actor: &str) -> Result<Vec<Acted>, Error> {
        let rows = self.find_tasks(ids)?;
        Ok(ids
            .iter()
            .map(|&id| {
                let answer = match rows.iter().find(|row| row.key.id().to_string() == id) {
                    Some(row) => act_on(self, row, action, actor),
                    None => Err(not_found(id)),
                };
                (id.to_owned(), answer)
            })
            .collect())
    }

    /// Removes every finished task last updated more than `older_than` ago (on the store's
    /// clock), a store page ([`SCAN_BATCH`]) at a time, calling `progress` after each
    /// page; answers the totals.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer (what was purged so far stays purged).
    fn purge_finished(
        &self,
        older_than: Duration,
        progress: &mut dyn FnMut(&PurgeProgress),
    ) -> Result<PurgeProgress, Error> {
        let now = self.clock()?;
        let filter = TaskFilter::any()
            .with_status(TaskStatus::Completed)
            .with_status(TaskStatus::Failed)
            .with_status(TaskStatus::Cancelled);
        let mut done = PurgeProgress::default();
        loop {
            let scan = self.scan(done.at, &filter, SCAN_BATCH)?;
            for row in &scan.rows {
                done.examined += 1;
                if row.task.is_terminal()
                    && now.saturating_since(row.task.last_updated_at()) > older_than
                {
                    match self.remove(row.key.owner(), &row.key.id().to_string()) {
                        Ok(_) => done.purged += 1,
                        // Removed or expired meanwhile.
                        Err(Error::TaskNotFound { .. }) => {}
                        Err(err) => return Err(err),
                    }
                }
            }
            done.at = scan.next.or(done.at);
            progress(&done);
            if scan.next.is_none() {
                return Ok(done);
            }
        }
    }

    /// The instances seen in the leases of the store's unfinished tasks, and the drained
    /// ones, by name, with how many tasks each holds (one read of every unfinished task).
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer.
    fn instances(&self) -> Result<Vec<InstanceInfo>, Error> {
        let now = self.clock()?;
        let mut seen: Vec<InstanceInfo> = Vec::new();
        self.each_unfinished(&mut |row| {
            let Some(holder) = &row.lease_holder else {
                return Ok(());
            };
            let at = match seen.iter().position(|i| i.name == *holder) {
                Some(at) => at,
                None => {
                    seen.push(InstanceInfo {
                        name: holder.clone(),
                        tasks: 0,
                        live_leases: 0,
                        latest_deadline: None,
                        alive: false,
                        draining: false,
                    });
                    seen.len() - 1
                }
            };
            let instance = &mut seen[at];
            instance.tasks += 1;
            if let Some(deadline) = row.leased_until {
                if deadline > now {
                    instance.live_leases += 1;
                    instance.alive = true;
                }
                instance.latest_deadline = instance.latest_deadline.max(Some(deadline));
            }
            Ok(())
        })?;
        for name in self.drained()? {
            match seen.iter_mut().find(|i| i.name == name) {
                Some(instance) => instance.draining = true,
                None => seen.push(InstanceInfo {
                    name,
                    tasks: 0,
                    live_leases: 0,
                    latest_deadline: None,
                    alive: false,
                    draining: true,
                }),
            }
        }
        seen.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(seen)
    }

    /// Drains the instance `name`: sets its drain flag in the store, so that its claim loop
    /// claims nothing from now on (no task handed over, no task whose instance stopped),
    /// then hands over every task it holds that can be (redeliverable, with attempts left,
    /// leased): other instances claim them. The instance keeps serving its clients (a task
    /// created through it runs there) and running the tasks it keeps. The flag holds until
    /// [`undrain`](Self::undrain), or until an instance of that name starts again.
    ///
    /// # Errors
    /// [`AdminError::NoInstances`] for a store of one process; [`AdminError::Store`] if the
    /// store cannot be read (a task's own refusal is in the report).
    fn drain(&self, name: &str, actor: &str) -> Result<DrainReport, AdminError> {
        let already = self.set_draining(name, true)?;
        let mut held = Vec::new();
        self.each_unfinished(&mut |row| {
            if row.lease_holder.as_deref() == Some(name) {
                held.push(row.clone());
            }
            Ok(())
        })?;
        let mut report = DrainReport {
            was_draining: already,
            handed_over: Vec::new(),
            kept: Vec::new(),
        };
        for row in &held {
            match act_on(self, row, &Action::HandOver, actor) {
                Ok(record) => report.handed_over.push(record),
                Err(AdminError::Store(err)) => return Err(err.into()),
                Err(refused) => report.kept.push(refused),
            }
        }
        Ok(report)
    }

    /// Ends a drain of the instance `name`: its claim loop claims again. Answers whether it
    /// was drained.
    ///
    /// # Errors
    /// [`AdminError::NoInstances`] for a store of one process; [`AdminError::Store`].
    fn undrain(&self, name: &str) -> Result<bool, AdminError> {
        self.set_draining(name, false)
    }

    /// Calls `each` on every unfinished task of the store, a page at a time.
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer, or `each`'s error.
    fn each_unfinished(
        &self,
        each: &mut dyn FnMut(&StoredRow) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let filter = TaskFilter::any()
            .with_status(TaskStatus::Working)
            .with_status(TaskStatus::InputRequired);
        let mut after = None;
        loop {
            let scan = self.scan(after, &filter, SCAN_BATCH)?;
            for row in &scan.rows {
                each(row)?;
            }
            match scan.next {
                Some(next) => after = Some(next),
                None => return Ok(()),
            }
        }
    }
}

/// One id's answer of [`TaskAdmin::act`]: the id as given, and what the action did.
pub type Acted = (String, Result<AdminRecord, AdminError>);

/// An action on tasks ([`TaskAdmin::act`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Cancel ([`TaskAdmin::cancel_task`]).
    Cancel,
    /// Fail with `-32603` and this reason ([`TaskAdmin::fail_task`]).
    Fail {
        /// The reason: the error's message.
        reason: String,
    },
    /// Hand over ([`TaskAdmin::hand_over_task`]).
    HandOver,
}

fn not_found(task_id: &str) -> AdminError {
    AdminError::NotFound {
        task_id: crate::error::shorten(task_id),
    }
}

/// Does `action` to the task of `row` (as found by a scan; decided again on the task as
/// stored by the store's transition).
fn act_on<A: TaskAdmin + ?Sized>(
    admin: &A,
    row: &StoredRow,
    action: &Action,
    actor: &str,
) -> Result<AdminRecord, AdminError> {
    let owner = row.key.owner();
    let task_id = row.key.id().to_string();
    let finished = |status: TaskStatus| AdminError::AlreadyFinished {
        task_id: task_id.clone(),
        status,
    };
    let decided: Result<AnyTask, Error> = match action {
        Action::Cancel => admin
            .cancel(owner, &task_id, Some(format!("cancelled by admin {actor}")))
            .map(AnyTask::from),
        Action::Fail { reason } => {
            let transition = Transition::Fail(Outcome::error(INTERNAL_ERROR, reason.as_str()));
            let message = format!("failed by admin {actor}: {reason}");
            admin.update(owner, &task_id, Update::end(transition, Some(message)))
        }
        Action::HandOver => {
            let refused = |why: &str| AdminError::NotHandedOver {
                task_id: task_id.clone(),
                why: why.to_owned(),
            };
            let now = admin.clock()?;
            let task = &row.task;
            if task.is_terminal() {
                return Err(finished(task.status()));
            }
            match task.attempts() {
                None => return Err(refused("it is not redeliverable")),
                Some(attempts) if !attempts.left() => {
                    return Err(refused("it has no attempts left"));
                }
                Some(_) => {}
            }
            match row.leased_until {
                None => return Err(refused("no instance holds a lease on it")),
                Some(deadline) if deadline <= now => {
                    return Err(refused(
                        "its lease lapsed already: another instance claims it",
                    ));
                }
                Some(_) => {}
            }
            if !admin.release_lease(row)? {
                return Err(refused(
                    "its lease changed meanwhile (renewed for another attempt, or lapsed)",
                ));
            }
            Ok(task.clone())
        }
    };
    match decided {
        Ok(task) => Ok(AdminRecord {
            actor: actor.to_owned(),
            action: match action {
                Action::Cancel => AdminAction::Cancel,
                Action::Fail { .. } => AdminAction::Fail,
                Action::HandOver => AdminAction::HandOver,
            },
            task_id,
            owner: owner.clone(),
            from: row.task.status(),
            to: task.status(),
            at: match action {
                Action::HandOver => admin.clock()?,
                _ => task.last_updated_at(),
            },
        }),
        Err(Error::AlreadyTerminal { task }) => Err(finished(task.status())),
        Err(Error::TaskCancelled { .. }) => Err(finished(TaskStatus::Cancelled)),
        Err(Error::IllegalTransition { from, .. }) if from.is_terminal() => Err(finished(from)),
        Err(Error::TaskNotFound { .. }) => Err(not_found(&task_id)),
        Err(err) => Err(err.into()),
    }
}

/// Every store over a driver: its driver's pages of every owner's tasks, its clock, and
/// its renewal's hand-over.
impl<T: AsSharedStore> TaskAdmin for T {
    fn scan(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        let mut scan = self
            .shared_store()
            .driver()
            .page_all(after, filter, limit)?;
        // The driver may answer tasks the filter does not keep.
        scan.rows.retain(|row| filter.matches(&row.task));
        Ok(scan)
    }

    fn clock(&self) -> Result<Timestamp, Error> {
        self.shared_store().driver().now()
    }

    fn release_lease(&self, row: &StoredRow) -> Result<bool, Error> {
        let call = LeaseCall {
            key: row.key.clone(),
            op: LeaseOp::HandOver,
            attempt: row.task.attempts().map(|a| a.attempt()),
        };
        let lease = self
            .shared_store()
            .settings()
            .leases()
            .lease()
            .unwrap_or(HAND_OVER_LEASE);
        let verdicts = self
            .shared_store()
            .driver()
            .renew(std::slice::from_ref(&call), lease)?;
        Ok(verdicts.first() == Some(&Renewal::Released))
    }

    fn watch(&self, watcher: ChangeWatcher) -> SubscriptionId {
        self.shared_store().watch(watcher)
    }

    fn drained(&self) -> Result<Vec<String>, Error> {
        self.shared_store().driver().drained()
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, AdminError> {
        Ok(self.shared_store().driver().set_draining(name, draining)?)
    }
}

/// The in-process registry: its tasks in creation order; no leases (nothing to hand over,
/// no instances).
impl TaskAdmin for crate::TaskRegistry {
    fn scan(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        let limit = limit.max(1);
        // Sequence numbers are the registry's, one per task: the id never breaks a tie.
        let (found, last) = self.every_owner_after(after.map(|at| at.seq), limit);
        let mut rows = Vec::with_capacity(found.len());
        for (seq, owner, task) in found {
            let Some(id) = task.id().as_uuid() else {
                continue;
            };
            if filter.matches(&task) {
                rows.push(StoredRow {
                    key: TaskKey::new(owner, id),
                    position: Position { seq, id },
                    task,
                    leased_until: None,
                    lease_holder: None,
                });
            }
        }
        Ok(Scan {
            rows,
            next: last.map(|seq| Position {
                seq,
                id: uuid::Uuid::max(),
            }),
        })
    }

    fn clock(&self) -> Result<Timestamp, Error> {
        Ok(self.now())
    }

    fn release_lease(&self, _row: &StoredRow) -> Result<bool, Error> {
        Ok(false)
    }

    fn watch(&self, watcher: ChangeWatcher) -> SubscriptionId {
        self.watch_every(watcher)
    }
}

#[cfg(test)]
mod tests;
