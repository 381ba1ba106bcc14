//! The store's tasks across owners, as gauges an operator alerts on: what a periodic scan of
//! the store found last ([`StoreCensus`]), observed by OpenTelemetry's observable gauges at
//! each collection ([`Fleet`]).
//!
//! Nothing is observed before the first scan that succeeded, and a scan that fails leaves
//! the last values as they were (and counts `mcp.task.store.scan.errors`): a store fault
//! never reads as an empty store.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcp_tasks::TaskStatus;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Meter};

/// What one scan of the store found (every owner's tasks, up to the scan's cap).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreCensus {
    /// Tasks by status and tool (the tool of a redeliverable task's job; a task without a
    /// job names none: [`NO_TOOL`]).
    pub tasks: Vec<(TaskStatus, String, u64)>,
    /// How long ago the oldest `working` task was created, in seconds (0 with none).
    pub oldest_working_age: f64,
    /// `working` tasks whose lease lapsed and that another instance may claim
    /// (redeliverable, attempts left): the claim backlog.
    pub awaiting_claim: u64,
    /// `working` tasks whose lease lapsed and that nothing picks up (the admin view
    /// `stalled`).
    pub stalled: u64,
    /// Redeliverable tasks with no attempts left (the admin view `exhausted`).
    pub exhausted: u64,
    /// How many tasks the scan read.
    pub scanned: u64,
    /// Whether the scan stopped at its cap with tasks left unread (then every count is a
    /// lower bound).
    pub truncated: bool,
}

/// The `gen_ai.tool.name` of tasks whose store keeps no job (not redeliverable): the
/// store does not say which tool they run.
pub const NO_TOOL: &str = "_unknown";

/// The last census and the instruments that report it.
#[derive(Default)]
struct State {
    last: Mutex<Option<Arc<StoreCensus>>>,
    sampling: AtomicBool,
}

impl State {
    fn last(&self) -> Option<Arc<StoreCensus>> {
        // Poison policy: the census is only ever replaced whole.
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The store gauges of one [`Telemetry`](crate::Telemetry): where a sampler puts each
/// census ([`record`](Self::record)) or says a scan failed
/// ([`scan_failed`](Self::scan_failed)). Cloning shares it.
#[derive(Clone)]
pub struct Fleet {
    state: Arc<State>,
    errors: Counter<u64>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("last", &self.state.last())
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// Registers the gauges on `meter`, observing nothing until the first census.
    pub(crate) fn register(meter: &Meter) -> Self {
        let state = Arc::new(State::default());
        // The callbacks do not keep the census alive: the telemetry does.
        let gauge = |name: &'static str,
                     unit: &'static str,
                     description: &'static str,
                     value: fn(&StoreCensus) -> u64| {
            let state = Arc::downgrade(&state);
            meter
                .u64_observable_gauge(name)
                .with_unit(unit)
                .with_description(description)
                .with_callback(move |observer| {
                    if let Some(census) = state.upgrade().and_then(|state| state.last()) {
                        observer.observe(value(&census), &[]);
                    }
                })
                .build()
        };
        let kept = Arc::downgrade(&state);
        meter
            .u64_observable_gauge("mcp.task.store.tasks")
            .with_unit("{task}")
            .with_description("Stored tasks of every owner, by status and tool (last scan).")
            .with_callback(move |observer| {
                if let Some(census) = kept.upgrade().and_then(|state| state.last()) {
                    for (status, tool, count) in &census.tasks {
                        observer.observe(
                            *count,
                            &[
                                KeyValue::new("mcp.task.status", status.as_str()),
                                KeyValue::new("gen_ai.tool.name", tool.clone()),
                            ],
                        );
                    }
                }
            })
            .build();
        let kept = Arc::downgrade(&state);
        meter
            .f64_observable_gauge("mcp.task.store.oldest_working.age")
            .with_unit("s")
            .with_description("How long ago the oldest working task was created (last scan).")
            .with_callback(move |observer| {
                if let Some(census) = kept.upgrade().and_then(|state| state.last()) {
                    observer.observe(census.oldest_working_age, &[]);
                }
            })
            .build();
        gauge(
            "mcp.task.store.awaiting_claim",
            "{task}",
            "Working tasks whose lease lapsed, redeliverable, awaiting a claim (last scan).",
            |census| census.awaiting_claim,
        );
        gauge(
            "mcp.task.store.stalled",
            "{task}",
            "Working tasks whose lease lapsed and that nothing picks up (last scan).",
            |census| census.stalled,
        );
        gauge(
            "mcp.task.store.exhausted",
            "{task}",
            "Redeliverable tasks with no attempts left (last scan).",
            |census| census.exhausted,
        );
        gauge(
            "mcp.task.store.scan.tasks",
            "{task}",
            "Tasks the last scan of the store read.",
            |census| census.scanned,
        );
        gauge(
            "mcp.task.store.scan.truncated",
            "1",
            "1 if the last scan stopped at its cap with tasks unread (counts are lower bounds).",
            |census| u64::from(census.truncated),
        );
        let errors = meter
            .u64_counter("mcp.task.store.scan.errors")
            .with_unit("{scan}")
            .with_description(
                "Scans of the store that failed (the store gauges keep their last values).",
            )
            .build();
        Fleet { state, errors }
    }

    /// Reports `census` from now on.
    pub fn record(&self, census: StoreCensus) {
        *self
            .state
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(census));
    }

    /// Counts a scan that failed; the gauges keep the last census.
    pub fn scan_failed(&self) {
        self.errors.add(1, &[]);
    }

    /// The census reported now, if a scan succeeded yet.
    #[must_use]
    pub fn last(&self) -> Option<Arc<StoreCensus>> {
        self.state.last()
    }

    /// Claims the sampling of this telemetry: `true` the first time only, so that one
    /// sampler feeds it however many servers record into it.
    #[must_use]
    pub fn claim_sampling(&self) -> bool {
        !self.state.sampling.swap(true, Ordering::SeqCst)
    }

    /// A handle that does not keep the gauges alive: a sampler holds it, and stops when
    /// its telemetry is dropped.
    #[must_use]
    pub fn downgrade(&self) -> WeakFleet {
        WeakFleet {
            state: Arc::downgrade(&self.state),
            errors: self.errors.clone(),
        }
    }
}

/// A [`Fleet`] that may be gone ([`Fleet::downgrade`]).
#[derive(Clone)]
pub struct WeakFleet {
    state: Weak<State>,
    errors: Counter<u64>,
}

impl std::fmt::Debug for WeakFleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakFleet").finish_non_exhaustive()
    }
}

impl WeakFleet {
    /// The gauges, if their telemetry still lives.
    #[must_use]
    pub fn upgrade(&self) -> Option<Fleet> {
        self.state.upgrade().map(|state| Fleet {
            state,
            errors: self.errors.clone(),
        })
    }
}
