//! The store gauges' sampler (feature `otel`): one thread per telemetry (so one per
//! process with what [`init`](super::init) installed) that scans the store across owners
//! through [`TaskAdmin`] every [`StoreScan::every`], at most [`StoreScan::max_tasks`]
//! tasks a round, and hands each [`StoreCensus`] to the telemetry's
//! [`Fleet`](mcp_tasks_otel::Fleet) gauges.
//! Never on a request's path: the gauges report the last census when collected.
//!
//! A scan reads the unfinished tasks first (what the alerts are about), then the finished
//! ones, a store page ([`SCAN_BATCH`]) at a time: about `1 + tasks / 500` store calls,
//! plus one read of the job of each task the sampler has not seen before (its tool: a
//! task's never changes, so it is kept while the task is seen; a task that is not
//! redeliverable has no job, and its tool reads [`NO_TOOL`]). A scan that fails keeps the last census and
//! counts `mcp.task.store.scan.errors`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::thread;

use mcp_tasks::admin::{SCAN_BATCH, TaskAdmin, View, awaits_claim};
use mcp_tasks::backend::{Position, StoredRow, TaskFilter};
use mcp_tasks::{Error, TaskStatus, Timestamp};
use mcp_tasks_otel::{NO_TOOL, StoreCensus, WeakFleet};

use super::StoreScan;

/// The most distinct tools the gauges name; the tasks of any further tool read `_OTHER`
/// (a store shared by many servers must not grow a metric's series without bound).
pub const MAX_TOOLS: usize = 100;

/// The tool attribute of the tasks of tools beyond [`MAX_TOOLS`].
const OTHER_TOOL: &str = "_OTHER";

/// Scans one store across owners into [`StoreCensus`]es, remembering the tools of the
/// tasks it saw (a task's tool never changes: its job is read once).
pub struct Sampler {
    admin: Arc<dyn TaskAdmin>,
    scan: StoreScan,
    tools: HashMap<u128, Arc<str>>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("scan", &self.scan)
            .field("tools_known", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// What one round counts, before it becomes a census.
#[derive(Default)]
struct Counts {
    by: HashMap<(TaskStatus, Arc<str>), u64>,
    tools: HashSet<Arc<str>>,
    oldest_working: Option<Timestamp>,
    awaiting_claim: u64,
    stalled: u64,
    exhausted: u64,
    scanned: u64,
}

impl Sampler {
    /// A sampler of `admin` scanning as `scan` says.
    #[must_use]
    pub fn new(admin: Arc<dyn TaskAdmin>, scan: StoreScan) -> Self {
        Sampler {
            admin,
            scan,
            tools: HashMap::new(),
        }
    }

    /// One scan of the store: every owner's tasks, unfinished first, up to
    /// [`StoreScan::max_tasks`].
    ///
    /// # Errors
    /// [`Error::Store`] if the store cannot answer (nothing of the round is kept).
    pub fn scan(&mut self) -> Result<StoreCensus, Error> {
        let now = self.admin.clock()?;
        let passes = [
            TaskFilter::any()
                .with_status(TaskStatus::Working)
                .with_status(TaskStatus::InputRequired),
            TaskFilter::any()
                .with_status(TaskStatus::Completed)
                .with_status(TaskStatus::Failed)
                .with_status(TaskStatus::Cancelled),
        ];
        let mut counts = Counts::default();
        let mut seen: HashMap<u128, Arc<str>> = HashMap::with_capacity(self.tools.len());
        let mut truncated = false;
        let max = u64::try_from(self.scan.max_tasks).unwrap_or(u64::MAX);
        'passes: for (at, filter) in passes.iter().enumerate() {
            if counts.scanned >= max {
                truncated = self.any_in(None, &passes[at..])?;
                break;
            }
            let mut after: Option<Position> = None;
            loop {
                let budget = usize::try_from(max - counts.scanned).unwrap_or(usize::MAX);
                let limit = budget.min(SCAN_BATCH);
                let page = self.admin.scan(after, filter, limit)?;
                for row in page.rows.iter().take(limit) {
                    let tool = self.tool_of(row, &mut seen)?;
                    counts.add(row, tool, now, self.scan.stalled_grace);
                }
                let Some(next) = page.next else {
                    break;
                };
                after = Some(next);
                if counts.scanned >= max {
                    truncated = self.any_in(after, &passes[at..])?;
                    break 'passes;
                }
            }
        }
        self.tools = seen;
        Ok(counts.census(now, truncated))
    }

    /// Whether a task is left unread: in the first of `passes` after `after`, or in the
    /// others (a page of one task each, at most; a page empty with more behind counts).
    fn any_in(&self, mut after: Option<Position>, passes: &[TaskFilter]) -> Result<bool, Error> {
        for filter in passes {
            let page = self.admin.scan(after.take(), filter, 1)?;
            if !page.rows.is_empty() || page.next.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The tool of `row`'s task, from what earlier rounds read or the store.
    fn tool_of(
        &self,
        row: &StoredRow,
        seen: &mut HashMap<u128, Arc<str>>,
    ) -> Result<Arc<str>, Error> {
        // A finished task shows no attempts, but its job (if it had one) is still stored.
        let id = row.key.id().as_u128();
        if let Some(tool) = self.tools.get(&id).or_else(|| seen.get(&id)) {
            let tool = Arc::clone(tool);
            seen.insert(id, Arc::clone(&tool));
            return Ok(tool);
        }
        // The tool the task keeps, or (a task stored before tasks kept it) its job's.
        let tool: Arc<str> = Arc::from(self.admin.tool_of(row)?.as_deref().unwrap_or(NO_TOOL));
        seen.insert(id, Arc::clone(&tool));
        Ok(tool)
    }

    /// Samples on a thread of its own into `fleet` until its telemetry is dropped: a scan
    /// now, then one every [`StoreScan::every`].
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(mut self, fleet: WeakFleet) -> std::io::Result<thread::JoinHandle<()>> {
        thread::Builder::new()
            .name("mcp-tasks-sampler".to_owned())
            .spawn(move || {
                let mut failing = false;
                loop {
                    let Some(fleet) = fleet.upgrade() else {
                        return;
                    };
                    match self.scan() {
                        Ok(census) => {
                            if failing {
                                log::info!("the store scan of the task gauges works again");
                                failing = false;
                            }
                            fleet.record(census);
                        }
                        Err(err) => {
                            fleet.scan_failed();
                            if !failing {
                                log::warn!(
                                    "the store scan of the task gauges failed (they keep their last values): {err}"
                                );
                                failing = true;
                            }
                        }
                    }
                    drop(fleet);
                    thread::sleep(self.scan.every);
                }
            })
    }
}

impl Counts {
    fn add(&mut self, row: &StoredRow, tool: Arc<str>, now: Timestamp, grace: std::time::Duration) {
        self.scanned += 1;
        let status = row.task.status();
        let tool = if self.tools.contains(&tool) {
            tool
        } else if self.tools.len() < MAX_TOOLS {
            self.tools.insert(Arc::clone(&tool));
            tool
        } else {
            Arc::from(OTHER_TOOL)
        };
        *self.by.entry((status, tool)).or_default() += 1;
        if status == TaskStatus::Working {
            let created = row.task.created_at();
            self.oldest_working = Some(self.oldest_working.map_or(created, |t| t.min(created)));
        }
        if awaits_claim(row, now) {
            self.awaiting_claim += 1;
        }
        if (View::Stalled { grace }).holds(row, now) {
            self.stalled += 1;
        }
        if View::Exhausted.holds(row, now) {
            self.exhausted += 1;
        }
    }

    fn census(self, now: Timestamp, truncated: bool) -> StoreCensus {
        let mut tasks: Vec<(TaskStatus, String, u64)> = self
            .by
            .into_iter()
            .map(|((status, tool), count)| (status, tool.to_string(), count))
            .collect();
        tasks.sort();
        StoreCensus {
            tasks,
            oldest_working_age: self
                .oldest_working
                .map_or(0.0, |oldest| now.saturating_since(oldest).as_secs_f64()),
            awaiting_claim: self.awaiting_claim,
            stalled: self.stalled,
            exhausted: self.exhausted,
            scanned: self.scanned,
            truncated,
        }
    }
}
