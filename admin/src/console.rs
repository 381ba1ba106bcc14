//! The console's seam: what a command asks of the tasks' store, answered as the JSON
//! documents the command prints (`--json` as they are, tables made from them), so that
//! each command has one path whether the store is reached directly ([`StoreConsole`], a
//! [`TaskAdmin`] over a store URL) or through a running server's admin API
//! (`crate::http::HttpConsole`).

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::admin::{Action, AdminError, InstanceInfo, TaskAdmin, TaskQuery, row_json};
use mcp_tasks::{Outcome, Timestamp};
use serde_json::{Value, json};

/// A failure to report in one line: exit code 1, or 2 for a usage error.
#[derive(Debug)]
pub struct Failed {
    /// What to say (after `mcp-tasks-admin: `).
    pub message: String,
    /// A usage error (exit code 2) rather than a failure (exit code 1).
    pub usage: bool,
}

impl Failed {
    /// A failure (exit code 1).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: false,
        }
    }

    /// A usage error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: true,
        }
    }
}

impl From<AdminError> for Failed {
    fn from(err: AdminError) -> Self {
        Failed::new(err.to_string())
    }
}

impl From<mcp_tasks::Error> for Failed {
    fn from(err: mcp_tasks::Error) -> Self {
        Failed::new(err.to_string())
    }
}

/// One page of a list.
pub struct Listed {
    /// `{"tasks": [row…], "nextCursor": …}`, rows as [`row_json`] makes them.
    pub doc: Value,
    /// How many stored tasks were read to fill the page, when the store tells.
    pub examined: Option<usize>,
}

/// One task shown whole.
pub struct Shown {
    /// [`TaskDetails::to_json`](mcp_tasks::admin::TaskDetails::to_json).
    pub doc: Value,
    /// The outcome of a finished task, for people (`error -32603: …`, `a result`), when
    /// known: the JSON view does not carry it.
    pub outcome: Option<String>,
}

/// The answer for one task of an action: its record's JSON, or the error's message and
/// kind (`not_found`, `already_finished`, `not_handed_over`, `store`).
pub type ActAnswer = (String, Result<Value, (String, String)>);

/// The bounds on a task's age a list may set: created longer ago than the first, and less
/// long ago than the second.
pub type CreatedAges = (Option<Duration>, Option<Duration>);

/// What the commands ask of a store.
pub trait Console {
    /// The time the ages of a table count from.
    ///
    /// # Errors
    /// When the store cannot answer.
    fn now(&self) -> Result<Timestamp, Failed>;

    /// One page of every owner's tasks that `query` keeps and, by `ages`, created longer
    /// ago than its first and less long ago than its second (on the store's clock),
    /// after `cursor`.
    ///
    /// # Errors
    /// A cursor no list issued, a store that cannot answer.
    fn list(
        &self,
        query: &TaskQuery,
        ages: CreatedAges,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Listed, Failed>;

    /// One task whole.
    ///
    /// # Errors
    /// An unknown task, a store that cannot answer.
    fn show(&self, id: &str) -> Result<Shown, Failed>;

    /// `action` on each of `ids`, answered task by task.
    ///
    /// # Errors
    /// Only what stops every task (the store or the console unreachable, refused).
    fn act(&self, ids: &[String], action: &Action, actor: &str) -> Result<Vec<ActAnswer>, Failed>;

    /// Removes the finished tasks last updated more than `older_than` ago; `progress`
    /// hears `(examined, purged)` as it goes when the store tells; answers the totals.
    ///
    /// # Errors
    /// A store that cannot answer.
    fn purge(
        &self,
        older_than: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(usize, usize), Failed>;

    /// The instances, as [`InstanceInfo::to_json`] shows them.
    ///
    /// # Errors
    /// A store that cannot answer.
    fn instances(&self) -> Result<Vec<Value>, Failed>;

    /// Drains the instance `name`: [`DrainReport::to_json`](mcp_tasks::admin::DrainReport::to_json).
    ///
    /// # Errors
    /// A store of one process, a store that cannot answer.
    fn drain(&self, name: &str, actor: &str) -> Result<Value, Failed>;

    /// Ends the drain of `name`; answers whether it was drained.
    ///
    /// # Errors
    /// A store of one process, a store that cannot answer.
    fn undrain(&self, name: &str) -> Result<bool, Failed>;
}

/// An error's kind, for scripts.
pub fn kind(err: &AdminError) -> &'static str {
    match err {
        AdminError::NotFound { .. } => "not_found",
        AdminError::AlreadyFinished { .. } => "already_finished",
        AdminError::NotHandedOver { .. } => "not_handed_over",
        AdminError::InvalidCursor { .. } => "invalid_cursor",
        AdminError::NoInstances => "no_instances",
        _ => "store",
    }
}

/// The console over a store reached directly.
pub struct StoreConsole(pub Arc<dyn TaskAdmin>);

impl Console for StoreConsole {
    fn now(&self) -> Result<Timestamp, Failed> {
        Ok(self.0.clock()?)
    }

    fn list(
        &self,
        query: &TaskQuery,
        (older_than, newer_than): CreatedAges,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Listed, Failed> {
        let mut query = query.clone();
        if older_than.is_some() || newer_than.is_some() {
            query = query.created_within(self.0.clock()?, older_than, newer_than);
        }
        let page = self.0.list_tasks(&query, cursor, limit)?;
        Ok(Listed {
            doc: json!({
                "tasks": page.rows.iter().map(row_json).collect::<Vec<_>>(),
                "nextCursor": page.next_cursor,
            }),
            examined: Some(page.examined),
        })
    }

    fn show(&self, id: &str) -> Result<Shown, Failed> {
        let details = self.0.show_task(id)?;
        let outcome = match details.row.task.outcome() {
            Some(Outcome::Error(error)) => Some(format!("error {}: {}", error.code, error.message)),
            Some(Outcome::Result(_)) => Some("a result".to_owned()),
            _ => None,
        };
        Ok(Shown {
            doc: details.to_json(),
            outcome,
        })
    }

    fn act(&self, ids: &[String], action: &Action, actor: &str) -> Result<Vec<ActAnswer>, Failed> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        Ok(self
            .0
            .act(&ids, action, actor)?
            .into_iter()
            .map(|(id, answer)| {
                let answer = answer
                    .map(|record| record.to_json())
                    .map_err(|err| (err.to_string(), kind(&err).to_owned()));
                (id, answer)
            })
            .collect())
    }

    fn purge(
        &self,
        older_than: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(usize, usize), Failed> {
        let done = self.0.purge_finished(older_than, &mut |p| {
            progress(p.examined, p.purged);
        })?;
        Ok((done.examined, done.purged))
    }

    fn instances(&self) -> Result<Vec<Value>, Failed> {
        Ok(self
            .0
            .instances()?
            .iter()
            .map(InstanceInfo::to_json)
            .collect())
    }

    fn drain(&self, name: &str, actor: &str) -> Result<Value, Failed> {
        Ok(self.0.drain(name, actor)?.to_json())
    }

    fn undrain(&self, name: &str) -> Result<bool, Failed> {
        Ok(self.0.undrain(name)?)
    }
}
