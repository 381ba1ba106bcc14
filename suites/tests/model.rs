//! Model-based property test of [`TaskRegistry`] (issue 6, item 1).
//!
//! Random sequences of operations run against the real registry (on a [`ManualClock`], with
//! small TTL policies and small [`Limits`], so that expiry and limit errors happen) and
//! against a reference model written here from the spec's transition table (digest §2) and
//! the rustdoc of each registry method. After every operation both must give the same
//! answer: the same kind of result, the same error variant, fields and JSON-RPC code, the
//! same task (status, statusMessage, ttl, createdAt, lastUpdatedAt, pollInterval, stored
//! outcome, input requests), the same listed ids in the same order with a next cursor
//! exactly when more follow, the same purge count, the same `len`, and the same status
//! notifications in the same order.
//!
//! Ids are random UUIDs that the model cannot predict: it keeps, per creation index, the id
//! the registry returned (and checks that each is a fresh canonical UUID v4).
//!
//! The rules the model follows, each from the registry's documentation:
//! - a task is visible only to its exact owner; another owner, an anonymous caller, an
//!   unknown id, a string that is not a canonical UUID, an expired and a removed task all
//!   answer `TaskNotFound` (`-32602`);
//! - the TTL runs from creation; the effective TTL is the [`TtlPolicy`]'s: no request takes
//!   the default, a request is raised to the minimum (1 s unless set) and clamped to the
//!   maximum (which wins over the minimum), and unlimited retention only happens when the
//!   default is unlimited, unlimited is allowed and there is no maximum;
//! - an expired task stays counted by `len` until something removes it: a lookup of it by
//!   its owner, `purge_expired`, or the sweep of its owner's shard that `create`/`insert`
//!   and `list` make (the model's owners live in distinct shards: see
//!   [`the_models_owners_live_in_distinct_shards`]);
//! - `create`/`insert` check the per-owner limit, then the total limit; when the total is
//!   reached they sweep every shard once and retry if that removed anything;
//! - `update_status`: `completed`/`failed` are invalid params (a result is needed); the same
//!   non-terminal status is a message update; otherwise the spec's table decides: a
//!   cancelled task answers `TaskCancelled`, another terminal one `IllegalTransition`;
//! - `store_result`: `completed` takes a result, `failed` an error or a result with
//!   `isError: true`, anything else is invalid params (checked before the lookup); a stored
//!   outcome is never overwritten; a failed task without a message gets the outcome's
//!   diagnostic as its status message;
//! - `cancel` of a terminal task is `AlreadyTerminal` holding the unchanged task;
//! - `list` pages are oldest first, the page size is clamped to `1..=MAX_PAGE_SIZE`, a
//!   cursor continues after the last task of its page whatever was removed since, and a
//!   cursor of another owner or a forged one is `InvalidCursor`;
//! - the typed handle: its finishing moves are legal from either non-terminal status; its
//!   non-finishing moves need the status the handle expects, and when another writer moved
//!   the task to the other non-terminal status, the refused handle is dropped and fails
//!   the task (`-32603`); a dropped unfinished handle fails its task.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::jsonrpc::INTERNAL_ERROR;
use mcp_tasks::{
    AnyTask, Error, InputRequest, InputRequests, InputRequired, JsonObject, LimitScope, Limits,
    MAX_PAGE_SIZE, ManualClock, Outcome, Owner, RequestId, StatusChange, TaskHandle, TaskRegistry,
    TaskRequest, TaskStatus, Timestamp, TtlPolicy, Working,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRunner};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Fixed inputs
// ---------------------------------------------------------------------------------------

const T0_MILLIS: i64 = 1_764_066_600_000; // 2025-11-25T10:30:00Z

fn t0() -> Timestamp {
    Timestamp::from_unix_millis(T0_MILLIS)
}

/// Three named owners and the anonymous one.
const OWNERS: u8 = 4;

fn owner(n: u8) -> Owner {
    match n % OWNERS {
        0 => Owner::new("alice"),
        1 => Owner::new("bob"),
        2 => Owner::new("carol"),
        _ => Owner::anonymous(),
    }
}

/// A canonical UUID v4 that the registry never issues (its random bits are all zero).
const UNKNOWN_ID: &str = "00000000-0000-4000-8000-000000000000";

/// A TTL policy, as the model reads its documentation.
#[derive(Debug, Clone, Copy)]
struct Policy {
    default: Option<u64>,
    /// `None`: not set, the documented default minimum (one second) applies.
    min: Option<u64>,
    max: Option<u64>,
    unlimited: bool,
}

const DEFAULT_MIN_TTL: u64 = 1_000;

const POLICIES: [Policy; 6] = [
    Policy {
        default: Some(5_000),
        min: None,
        max: Some(20_000),
        unlimited: false,
    },
    Policy {
        default: Some(3_000),
        min: Some(0),
        max: Some(10_000),
        unlimited: false,
    },
    Policy {
        default: None,
        min: None,
        max: None,
        unlimited: true,
    },
    Policy {
        default: None,
        min: Some(500),
        max: Some(8_000),
        unlimited: true,
    },
    // A maximum below the minimum wins.
    Policy {
        default: Some(2_000),
        min: Some(5_000),
        max: Some(4_000),
        unlimited: false,
    },
    Policy {
        default: Some(1_000),
        min: None,
        max: None,
        unlimited: false,
    },
];

impl Policy {
    fn real(self) -> TtlPolicy {
        let mut policy = TtlPolicy::new(self.default).with_unlimited_allowed(self.unlimited);
        if let Some(min) = self.min {
            policy = policy.with_min(min);
        }
        if let Some(max) = self.max {
            policy = policy.with_max(max);
        }
        policy
    }

    /// The effective TTL, from `TtlPolicy`'s documentation.
    fn effective(self, requested: Option<u64>) -> Option<u64> {
        let min = self.min.unwrap_or(DEFAULT_MIN_TTL);
        match requested.or(self.default) {
            Some(ttl) => {
                let ttl = ttl.max(min);
                Some(match self.max {
                    Some(max) => ttl.min(max),
                    None => ttl,
                })
            }
            None if self.unlimited && self.max.is_none() => None,
            None => self.max,
        }
    }
}

/// A task keeps millisecond durations in 8 bytes with `u64::MAX` meaning "none", so a
/// requested `u64::MAX` is kept as `u64::MAX - 1` (the wire refuses `u64::MAX` anyway).
fn kept_millis(millis: Option<u64>) -> Option<u64> {
    millis.map(|m| m.min(u64::MAX - 1))
}

/// The spec's transition table (digest §2), written out.
fn spec_allows(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Working, InputRequired | Completed | Failed | Cancelled)
            | (InputRequired, Working | Completed | Failed | Cancelled)
    )
}

// ---------------------------------------------------------------------------------------
// Generated operations
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Config {
    policy: usize,
    limits: Limits,
    poll_interval: Option<u64>,
}

/// The id an operation names.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The task with this creation index (modulo the number created).
    Task(usize),
    /// The task created this many tasks before the last one (modulo the number created).
    Recent(u8),
    /// A string that is not the canonical form of any issued id (some are another form of
    /// a real one: uppercase, braced, without hyphens).
    Garbage(u8),
    /// A canonical UUID v4 that was never issued.
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Aim {
    target: Target,
    /// Who asks: `None` is the task's own owner.
    actor: Option<u8>,
}

/// What a finished request produced, as generated.
#[derive(Debug, Clone, Copy)]
enum Payload {
    /// A plain tool result.
    Ok(u8),
    /// A tool result with `isError: true` and a text.
    ErrorResult(u8),
    /// A tool result with `isError: false`.
    NotError(u8),
    /// A tool result with `isError: true` and no text (no diagnostic).
    BareErrorResult,
    /// A JSON-RPC error.
    RpcError(u8),
}

impl Payload {
    fn result_object(self) -> JsonObject {
        let value = match self {
            Payload::Ok(n) => json!({"content": [{"type": "text", "text": format!("ok {n}")}]}),
            Payload::ErrorResult(n) => json!({
                "content": [{"type": "text", "text": format!("tool error {n}")}],
                "isError": true,
            }),
            Payload::NotError(n) => json!({
                "content": [{"type": "text", "text": format!("fine {n}")}],
                "isError": false,
            }),
            Payload::BareErrorResult => json!({
                "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                "isError": true,
            }),
            Payload::RpcError(_) => json!({}),
        };
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn outcome(self) -> Outcome {
        match self {
            Payload::RpcError(n) => Outcome::error(-32_000 - i64::from(n), format!("boom {n}")),
            other => Outcome::Result(other.result_object()),
        }
    }

    fn is_error_result(self) -> bool {
        matches!(self, Payload::ErrorResult(_) | Payload::BareErrorResult)
    }

    /// The statusMessage a failed task gets from this outcome when no message is given:
    /// the error's message, or the result's first text.
    fn diagnostic(self) -> Option<String> {
        match self {
            Payload::Ok(n) => Some(format!("ok {n}")),
            Payload::ErrorResult(n) => Some(format!("tool error {n}")),
            Payload::NotError(n) => Some(format!("fine {n}")),
            Payload::BareErrorResult => None,
            Payload::RpcError(n) => Some(format!("boom {n}")),
        }
    }
}

/// How a created task is driven.
#[derive(Debug, Clone, Copy)]
enum Driver {
    /// `insert`: by id only.
    ById,
    /// `create`, keeping the typed handle.
    Handle,
    /// `create`, then `detach` the handle at once.
    Detached,
}

#[derive(Debug, Clone)]
enum HandleAct {
    RequireInput(u8),
    Resume,
    Complete(Payload),
    Fail(Payload),
    Finish(Payload),
    Cancel,
    SetMessage(Option<u8>),
    Snapshot,
    Drop,
    Detach,
}

#[derive(Debug, Clone)]
enum Op {
    Create {
        owner: u8,
        ttl: Option<u64>,
        poll: Option<u64>,
        request: u8,
        driver: Driver,
    },
    UpdateStatus {
        aim: Aim,
        status: TaskStatus,
        message: Option<u8>,
    },
    StoreResult {
        aim: Aim,
        status: TaskStatus,
        payload: Payload,
    },
    Cancel {
        aim: Aim,
        message: Option<u8>,
    },
    Get(Aim),
    Result(Aim),
    /// `wait` with a zero timeout: a finished task at once, else `Timeout`.
    Wait(Aim),
    Origin(Aim),
    Remove(Aim),
    /// Walks every page, from the start or from a cursor issued earlier (to any owner).
    List {
        owner: u8,
        page_size: usize,
        from: Option<usize>,
    },
    BadCursor {
        owner: u8,
        kind: u8,
    },
    Advance(u64),
    /// Moves the clock to just before, at or just after a task's expiry.
    ToExpiry {
        task: usize,
        delta: u8,
    },
    Purge,
    Len,
    Handle {
        slot: usize,
        message: Option<u8>,
        act: HandleAct,
    },
}

/// Statuses for `update_status`: mostly the ones it takes.
fn update_status_strategy() -> impl Strategy<Value = TaskStatus> {
    use TaskStatus::*;
    prop::sample::select(vec![
        Working,
        Working,
        InputRequired,
        InputRequired,
        Cancelled,
        Completed,
        Failed,
    ])
}

/// Statuses for `store_result`: mostly the ones it takes.
fn store_status_strategy() -> impl Strategy<Value = TaskStatus> {
    use TaskStatus::*;
    prop::sample::select(vec![
        Completed,
        Completed,
        Completed,
        Failed,
        Failed,
        Failed,
        Working,
        InputRequired,
        Cancelled,
    ])
}

fn ttl_strategy() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(0)),
        1 => Just(Some(1)),
        1 => Just(Some(999)),
        1 => Just(Some(1_000)),
        5 => (1u64..30_000).prop_map(Some),
        1 => Just(Some(u64::MAX)),
        1 => Just(Some(u64::MAX - 1)),
        1 => Just(Some(1 << 53)),
        1 => any::<u64>().prop_map(Some),
    ]
}

fn message_strategy() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![1 => Just(None), 2 => (0u8..8).prop_map(Some)]
}

fn aim_strategy() -> impl Strategy<Value = Aim> {
    let target = prop_oneof![
        7 => any::<usize>().prop_map(Target::Task),
        7 => (0u8..4).prop_map(Target::Recent),
        1 => (0u8..5).prop_map(Target::Garbage),
        1 => Just(Target::Unknown),
    ];
    let actor = prop_oneof![8 => Just(None), 1 => (0..OWNERS).prop_map(Some)];
    (target, actor).prop_map(|(target, actor)| Aim { target, actor })
}

fn payload_strategy() -> impl Strategy<Value = Payload> {
    prop_oneof![
        3 => (0u8..4).prop_map(Payload::Ok),
        2 => (0u8..4).prop_map(Payload::ErrorResult),
        1 => (0u8..4).prop_map(Payload::NotError),
        1 => Just(Payload::BareErrorResult),
        2 => (0u8..4).prop_map(Payload::RpcError),
    ]
}

fn handle_act_strategy() -> impl Strategy<Value = HandleAct> {
    prop_oneof![
        3 => (0u8..3).prop_map(HandleAct::RequireInput),
        3 => Just(HandleAct::Resume),
        2 => payload_strategy().prop_map(HandleAct::Complete),
        2 => payload_strategy().prop_map(HandleAct::Fail),
        2 => payload_strategy().prop_map(HandleAct::Finish),
        2 => Just(HandleAct::Cancel),
        2 => message_strategy().prop_map(HandleAct::SetMessage),
        1 => Just(HandleAct::Snapshot),
        1 => Just(HandleAct::Drop),
        1 => Just(HandleAct::Detach),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let create = (
        0..OWNERS,
        ttl_strategy(),
        prop_oneof![3 => Just(None), 1 => (0u64..10_000).prop_map(Some), 1 => Just(Some(u64::MAX))],
        any::<u8>(),
        prop_oneof![
            Just(Driver::ById),
            Just(Driver::Handle),
            Just(Driver::Detached)
        ],
    )
        .prop_map(|(owner, ttl, poll, request, driver)| Op::Create {
            owner,
            ttl,
            poll,
            request,
            driver,
        });
    let update = (aim_strategy(), update_status_strategy(), message_strategy()).prop_map(
        |(aim, status, message)| Op::UpdateStatus {
            aim,
            status,
            message,
        },
    );
    // Mostly the status that fits the payload, sometimes any.
    let store = (
        aim_strategy(),
        prop_oneof![2 => Just(None), 1 => store_status_strategy().prop_map(Some)],
        payload_strategy(),
    )
        .prop_map(|(aim, status, payload)| Op::StoreResult {
            aim,
            status: status.unwrap_or(match payload {
                Payload::Ok(_) | Payload::NotError(_) => TaskStatus::Completed,
                _ => TaskStatus::Failed,
            }),
            payload,
        });
    let cancel =
        (aim_strategy(), message_strategy()).prop_map(|(aim, message)| Op::Cancel { aim, message });
    let page_size = prop_oneof![8 => 0usize..=4, 1 => Just(MAX_PAGE_SIZE), 1 => Just(usize::MAX)];
    let list = (
        0..OWNERS,
        page_size,
        prop_oneof![2 => Just(None), 1 => any::<usize>().prop_map(Some)],
    )
        .prop_map(|(owner, page_size, from)| Op::List {
            owner,
            page_size,
            from,
        });
    let bad_cursor = (0..OWNERS, 0u8..5).prop_map(|(owner, kind)| Op::BadCursor { owner, kind });
    let advance = prop_oneof![
        1 => Just(0u64),
        1 => Just(1u64),
        1 => Just(999u64),
        1 => Just(1_000u64),
        2 => 0u64..6_000,
        1 => Just(20_001u64),
    ]
    .prop_map(Op::Advance);
    let to_expiry = (any::<usize>(), 0u8..3).prop_map(|(task, delta)| Op::ToExpiry { task, delta });
    let handle = (any::<usize>(), message_strategy(), handle_act_strategy())
        .prop_map(|(slot, message, act)| Op::Handle { slot, message, act });
    prop_oneof![
        8 => create.boxed(),
        6 => update.boxed(),
        5 => store.boxed(),
        4 => cancel.boxed(),
        3 => aim_strategy().prop_map(Op::Get).boxed(),
        2 => aim_strategy().prop_map(Op::Result).boxed(),
        2 => aim_strategy().prop_map(Op::Wait).boxed(),
        1 => aim_strategy().prop_map(Op::Origin).boxed(),
        2 => aim_strategy().prop_map(Op::Remove).boxed(),
        4 => list.boxed(),
        1 => bad_cursor.boxed(),
        4 => advance.boxed(),
        2 => to_expiry.boxed(),
        2 => Just(Op::Purge).boxed(),
        1 => Just(Op::Len).boxed(),
        8 => handle.boxed(),
    ]
}

fn config_strategy() -> impl Strategy<Value = Config> {
    (
        0..POLICIES.len(),
        prop_oneof![1 => Just(None), 3 => (1usize..=5).prop_map(Some)],
        prop_oneof![1 => Just(None), 3 => (1usize..=10).prop_map(Some)],
        prop_oneof![Just(None), Just(Some(250u64))],
    )
        .prop_map(|(policy, per_owner, total, poll_interval)| Config {
            policy,
            limits: Limits { per_owner, total },
            poll_interval,
        })
}

// ---------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------

/// What the model knows of a stored outcome.
#[derive(Debug, Clone, PartialEq)]
enum MOutcome {
    Exact(Outcome),
    /// A dropped handle's failure: a `-32603` error whose message is also the task's
    /// status message (the wording is the registry's).
    Abandoned,
}

#[derive(Debug, Clone)]
struct MTask {
    id: String,
    owner: u8,
    status: TaskStatus,
    message: Option<String>,
    created: i64,
    updated: i64,
    ttl: Option<u64>,
    poll: Option<u64>,
    outcome: Option<MOutcome>,
    input_requests: usize,
    request_id: RequestId,
    method: &'static str,
    /// Still held by the registry (not removed or swept; it may have expired).
    stored: bool,
}

/// The model's answer when it is an error.
#[derive(Debug, Clone, PartialEq)]
enum MErr {
    NotFound(String),
    /// Holds the index of the unchanged task.
    AlreadyTerminal(usize),
    /// `to: None` when the model does not check `to` (see
    /// [`a_refused_handle_move_names_the_status_it_would_have_led_to`]).
    Illegal {
        id: String,
        from: TaskStatus,
        to: Option<TaskStatus>,
    },
    Cancelled(String),
    NotFinished(String, TaskStatus),
    InvalidCursor,
    InvalidParams,
    Limit(usize, LimitScope),
    Timeout(String),
}

impl MErr {
    fn code(&self) -> i64 {
        match self {
            MErr::Limit(..) | MErr::Timeout(_) => -32_603,
            _ => -32_602,
        }
    }
}

struct Cursor {
    owner: u8,
    /// Creation index of the last task of the page that issued it.
    after: usize,
    text: String,
}

struct Model {
    policy: Policy,
    limits: Limits,
    poll_interval: Option<u64>,
    now: i64,
    tasks: Vec<MTask>,
    cursors: Vec<Cursor>,
    /// Status notifications expected since the last check: owner and task.
    notes: Vec<(u8, MTask)>,
}

const METHODS: [&str; 3] = ["tools/call", "sampling/createMessage", "elicitation/create"];

impl Model {
    fn new(config: &Config) -> Self {
        Model {
            policy: POLICIES[config.policy],
            limits: config.limits,
            poll_interval: config.poll_interval,
            now: T0_MILLIS,
            tasks: Vec::new(),
            cursors: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn expired(&self, index: usize) -> bool {
        let task = &self.tasks[index];
        let age = u128::try_from(self.now - task.created).unwrap_or(0);
        task.ttl.is_some_and(|ttl| age >= u128::from(ttl))
    }

    /// Whether `actor` sees task `index`; a look at an expired task of `actor`'s removes it.
    fn visible(&mut self, actor: u8, index: usize) -> bool {
        if !self.tasks[index].stored || self.tasks[index].owner != actor {
            return false;
        }
        if self.expired(index) {
            self.tasks[index].stored = false;
            count("event: an expired task removed by a look at it");
            return false;
        }
        true
    }

    /// Removes expired tasks of `owner` (its shard), returning how many.
    fn sweep(&mut self, owner: Option<u8>) -> usize {
        let mut swept = 0;
        for index in 0..self.tasks.len() {
            if self.tasks[index].stored
                && owner.is_none_or(|o| self.tasks[index].owner == o)
                && self.expired(index)
            {
                self.tasks[index].stored = false;
                swept += 1;
            }
        }
        if swept > 0 {
            count(if owner.is_some() {
                "event: expired tasks swept from a shard"
            } else {
                "event: expired tasks swept from every shard"
            });
        }
        swept
    }

    fn stored(&self) -> usize {
        self.tasks.iter().filter(|t| t.stored).count()
    }

    fn owned(&self, owner: u8) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.stored && t.owner == owner)
            .count()
    }

    /// Whether a new task may be stored for `owner`.
    fn admit(&mut self, owner: u8) -> Result<(), MErr> {
        for attempt in 0..2 {
            self.sweep(Some(owner));
            if let Some(limit) = self.limits.per_owner
                && self.owned(owner) >= limit
            {
                return Err(MErr::Limit(limit, LimitScope::PerOwner));
            }
            if let Some(limit) = self.limits.total
                && self.stored() >= limit
            {
                if attempt == 0 && self.sweep(None) > 0 {
                    continue;
                }
                return Err(MErr::Limit(limit, LimitScope::Total));
            }
            return Ok(());
        }
        unreachable!("the second attempt always answers")
    }

    fn change(
        &mut self,
        index: usize,
        status: TaskStatus,
        message: Option<String>,
        outcome: Option<MOutcome>,
    ) {
        let now = self.now;
        let task = &mut self.tasks[index];
        if task.status != status {
            assert!(
                spec_allows(task.status, status),
                "model bug: {task:?} -> {status}"
            );
            task.input_requests = 0;
        }
        task.status = status;
        task.message = message;
        if outcome.is_some() {
            task.outcome = outcome;
        }
        task.updated = task.updated.max(now);
        let note = (task.owner, task.clone());
        self.notes.push(note);
    }

    /// The error of a move the table refuses from terminal `from`.
    fn refused(id: &str, from: TaskStatus, to: Option<TaskStatus>) -> MErr {
        if from == TaskStatus::Cancelled {
            MErr::Cancelled(id.to_owned())
        } else {
            MErr::Illegal {
                id: id.to_owned(),
                from,
                to,
            }
        }
    }

    fn lookup(&mut self, actor: u8, id: &str, index: Option<usize>) -> Result<usize, MErr> {
        match index {
            Some(index) if self.visible(actor, index) => Ok(index),
            _ => Err(MErr::NotFound(id.to_owned())),
        }
    }

    fn update_status(
        &mut self,
        actor: u8,
        id: &str,
        index: Option<usize>,
        status: TaskStatus,
        message: Option<String>,
    ) -> Result<usize, MErr> {
        if matches!(status, TaskStatus::Completed | TaskStatus::Failed) {
            return Err(MErr::InvalidParams);
        }
        let index = self.lookup(actor, id, index)?;
        let from = self.tasks[index].status;
        if from == status && !from.is_terminal() {
            self.change(index, status, message, None);
            return Ok(index);
        }
        if !spec_allows(from, status) {
            return Err(Self::refused(id, from, Some(status)));
        }
        self.change(index, status, message, None);
        Ok(index)
    }

    fn store_result(
        &mut self,
        actor: u8,
        id: &str,
        index: Option<usize>,
        status: TaskStatus,
        payload: Payload,
    ) -> Result<usize, MErr> {
        let message = match (status, payload) {
            (TaskStatus::Completed, Payload::RpcError(_)) => return Err(MErr::InvalidParams),
            // A result that reports an error is a failure, never a completion.
            (TaskStatus::Completed, payload) if payload.is_error_result() => {
                return Err(MErr::InvalidParams);
            }
            (TaskStatus::Completed, _) => None,
            (TaskStatus::Failed, Payload::RpcError(_)) => payload.diagnostic(),
            (TaskStatus::Failed, payload) if payload.is_error_result() => payload.diagnostic(),
            _ => return Err(MErr::InvalidParams),
        };
        let index = self.lookup(actor, id, index)?;
        let from = self.tasks[index].status;
        if !spec_allows(from, status) {
            return Err(Self::refused(id, from, Some(status)));
        }
        self.change(
            index,
            status,
            message,
            Some(MOutcome::Exact(payload.outcome())),
        );
        Ok(index)
    }

    fn cancel(
        &mut self,
        actor: u8,
        id: &str,
        index: Option<usize>,
        message: Option<String>,
    ) -> Result<usize, MErr> {
        let index = self.lookup(actor, id, index)?;
        if self.tasks[index].status.is_terminal() {
            return Err(MErr::AlreadyTerminal(index));
        }
        self.change(index, TaskStatus::Cancelled, message, None);
        Ok(index)
    }

    /// A handle's finishing move (legal from either non-terminal status).
    fn finish(
        &mut self,
        index: usize,
        to: TaskStatus,
        message: Option<String>,
        outcome: Option<Outcome>,
    ) -> Result<usize, MErr> {
        let (owner, id) = (self.tasks[index].owner, self.tasks[index].id.clone());
        let index = self.lookup(owner, &id, Some(index))?;
        let from = self.tasks[index].status;
        if from.is_terminal() {
            return Err(Self::refused(&id, from, Some(to)));
        }
        self.change(index, to, message, outcome.map(MOutcome::Exact));
        Ok(index)
    }

    /// A handle's non-finishing move from `expected` to `to`.
    fn step(
        &mut self,
        index: usize,
        expected: TaskStatus,
        to: TaskStatus,
        message: Option<String>,
        input_requests: usize,
    ) -> Result<usize, MErr> {
        let (owner, id) = (self.tasks[index].owner, self.tasks[index].id.clone());
        let index = self.lookup(owner, &id, Some(index))?;
        let from = self.tasks[index].status;
        if from != expected {
            // `to` is not checked: see the ignored regression test.
            let error = Self::refused(&id, from, None);
            if !from.is_terminal() {
                // The refused handle stays armed and is dropped: it fails the task.
                self.abandon(index);
            }
            return Err(error);
        }
        self.change(index, to, message, None);
        self.tasks[index].input_requests = input_requests;
        if let Some((_, note)) = self.notes.last_mut() {
            note.input_requests = input_requests;
        }
        Ok(index)
    }

    fn set_message(
        &mut self,
        index: usize,
        expected: TaskStatus,
        message: Option<String>,
    ) -> Result<(), MErr> {
        let (owner, id) = (self.tasks[index].owner, self.tasks[index].id.clone());
        let index = self.lookup(owner, &id, Some(index))?;
        let from = self.tasks[index].status;
        if from != expected {
            return Err(Self::refused(&id, from, Some(expected)));
        }
        self.change(index, expected, message, None);
        Ok(())
    }

    /// A dropped handle of an unfinished task fails it.
    fn abandon(&mut self, index: usize) {
        let owner = self.tasks[index].owner;
        if self.visible(owner, index) && !self.tasks[index].status.is_terminal() {
            count("event: a dropped handle failed its task");
            self.change(index, TaskStatus::Failed, None, Some(MOutcome::Abandoned));
        }
    }

    /// One page: the creation indexes listed, and the index the next cursor continues
    /// after (if more follow).
    fn page(
        &mut self,
        owner: u8,
        after: Option<usize>,
        page_size: usize,
    ) -> (Vec<usize>, Option<usize>) {
        self.sweep(Some(owner));
        let size = page_size.clamp(1, MAX_PAGE_SIZE);
        let rest: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].stored && self.tasks[i].owner == owner)
            .filter(|&i| after.is_none_or(|a| i > a))
            .collect();
        let page: Vec<usize> = rest.iter().copied().take(size).collect();
        let next = (rest.len() > size).then(|| page[page.len() - 1]);
        (page, next)
    }
}

// ---------------------------------------------------------------------------------------
// The real side
// ---------------------------------------------------------------------------------------

enum AnyHandle {
    Working(TaskHandle<Working, TaskRegistry>),
    InputRequired(TaskHandle<InputRequired, TaskRegistry>),
}

impl AnyHandle {
    fn with_message(self, message: String) -> Self {
        match self {
            AnyHandle::Working(h) => AnyHandle::Working(h.with_message(message)),
            AnyHandle::InputRequired(h) => AnyHandle::InputRequired(h.with_message(message)),
        }
    }

    fn expected(&self) -> TaskStatus {
        match self {
            AnyHandle::Working(_) => TaskStatus::Working,
            AnyHandle::InputRequired(_) => TaskStatus::InputRequired,
        }
    }
}

impl fmt::Debug for AnyHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyHandle::Working(h) => h.fmt(f),
            AnyHandle::InputRequired(h) => h.fmt(f),
        }
    }
}

struct Slot {
    task: usize,
    /// The message the handle's next move leaves (from `with_message`).
    pending: Option<String>,
    handle: AnyHandle,
}

struct Harness {
    registry: TaskRegistry,
    clock: ManualClock,
    log: Arc<Mutex<Vec<StatusChange>>>,
    slots: Vec<Slot>,
    model: Model,
    ids: HashSet<String>,
}

// Coverage statistics: `MODEL_STATS=1 cargo test --test model -- --nocapture` prints how
// often each operation got each answer, to show that the generated cases reach every rule.
thread_local! {
    static STATS: std::cell::RefCell<std::collections::BTreeMap<String, usize>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
    static ANSWER: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

fn count(what: impl Into<String>) {
    STATS.with(|stats| *stats.borrow_mut().entry(what.into()).or_default() += 1);
}

fn error_name(error: &Error) -> &'static str {
    match error {
        Error::TaskNotFound { .. } => "TaskNotFound",
        Error::AlreadyTerminal { .. } => "AlreadyTerminal",
        Error::IllegalTransition { .. } => "IllegalTransition",
        Error::TaskCancelled { .. } => "TaskCancelled",
        Error::NotFinished { .. } => "NotFinished",
        Error::InvalidCursor { .. } => "InvalidCursor",
        Error::InvalidParams { .. } => "InvalidParams",
        Error::LimitExceeded {
            scope: LimitScope::PerOwner,
            ..
        } => "LimitExceeded(per owner)",
        Error::LimitExceeded { .. } => "LimitExceeded(total)",
        Error::Timeout { .. } => "Timeout",
        _ => "other error",
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Create {
            driver: Driver::ById,
            ..
        } => "insert",
        Op::Create { .. } => "create",
        Op::UpdateStatus { .. } => "update_status",
        Op::StoreResult { .. } => "store_result",
        Op::Cancel { .. } => "cancel",
        Op::Get(_) => "get",
        Op::Result(_) => "result",
        Op::Wait(_) => "wait",
        Op::Origin(_) => "origin",
        Op::Remove(_) => "remove",
        Op::List { .. } => "list",
        Op::BadCursor { .. } => "list (bad cursor)",
        Op::Advance(_) => "advance",
        Op::ToExpiry { .. } => "advance to an expiry",
        Op::Purge => "purge_expired",
        Op::Len => "len",
        Op::Handle { act, .. } => match act {
            HandleAct::RequireInput(_) => "handle.require_input",
            HandleAct::Resume => "handle.resume",
            HandleAct::Complete(_) => "handle.complete",
            HandleAct::Fail(_) => "handle.fail",
            HandleAct::Finish(_) => "handle.finish",
            HandleAct::Cancel => "handle.cancel",
            HandleAct::SetMessage(_) => "handle.set_status_message",
            HandleAct::Snapshot => "handle.snapshot",
            HandleAct::Drop => "handle dropped",
            HandleAct::Detach => "handle.detach",
        },
    }
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

fn message_text(n: Option<u8>) -> Option<String> {
    n.map(|n| format!("message {n}"))
}

fn is_canonical_uuid_v4(id: &str) -> bool {
    let bytes = id.as_bytes();
    id.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
        && bytes[14] == b'4'
        && matches!(bytes[19], b'8' | b'9' | b'a' | b'b')
}

fn check_task(real: &AnyTask, model: &MTask, ctx: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(real.id().to_string(), model.id.clone(), "{}: id", ctx);
    prop_assert_eq!(real.status(), model.status, "{}: status of {:?}", ctx, real);
    prop_assert_eq!(
        real.created_at(),
        Timestamp::from_unix_millis(model.created),
        "{}: createdAt",
        ctx
    );
    prop_assert_eq!(
        real.last_updated_at(),
        Timestamp::from_unix_millis(model.updated),
        "{}: lastUpdatedAt",
        ctx
    );
    prop_assert_eq!(real.ttl(), model.ttl, "{}: ttl", ctx);
    prop_assert_eq!(real.poll_interval(), model.poll, "{}: pollInterval", ctx);
    prop_assert_eq!(
        real.input_requests().map(InputRequests::len),
        (model.status == TaskStatus::InputRequired).then_some(model.input_requests),
        "{}: input requests",
        ctx
    );
    match &model.outcome {
        Some(MOutcome::Abandoned) => {
            let error = real.outcome().and_then(Outcome::as_error);
            prop_assert!(
                error.is_some_and(|e| e.code == INTERNAL_ERROR),
                "{}: a dropped handle's failure is -32603: {:?}",
                ctx,
                real.outcome()
            );
            let error = error.map(|e| e.message.as_str());
            prop_assert!(error.is_some_and(|m| !m.is_empty()), "{}: message", ctx);
            prop_assert_eq!(real.status_message(), error, "{}: statusMessage", ctx);
        }
        Some(MOutcome::Exact(outcome)) => {
            prop_assert_eq!(real.outcome(), Some(outcome), "{}: outcome", ctx);
            prop_assert_eq!(
                real.status_message(),
                model.message.as_deref(),
                "{}: statusMessage",
                ctx
            );
        }
        None => {
            prop_assert_eq!(real.outcome(), None, "{}: outcome", ctx);
            prop_assert_eq!(
                real.status_message(),
                model.message.as_deref(),
                "{}: statusMessage",
                ctx
            );
        }
    }
    Ok(())
}

fn check_err(model: &Model, real: &Error, want: &MErr, ctx: &str) -> Result<(), TestCaseError> {
    ANSWER.with(|answer| answer.set(Some(error_name(real))));
    prop_assert_eq!(real.code(), want.code(), "{}: code of {:?}", ctx, real);
    prop_assert_eq!(real.to_jsonrpc().code, want.code(), "{}: wire code", ctx);
    let matches = match (real, want) {
        (Error::TaskNotFound { task_id }, MErr::NotFound(id)) => task_id == id,
        (Error::AlreadyTerminal { task }, MErr::AlreadyTerminal(index)) => {
            check_task(task, &model.tasks[*index], ctx)?;
            true
        }
        (
            Error::IllegalTransition {
                task_id, from, to, ..
            },
            MErr::Illegal {
                id,
                from: want_from,
                to: want_to,
            },
        ) => task_id == id && from == want_from && want_to.is_none_or(|t| t == *to),
        (Error::TaskCancelled { task_id }, MErr::Cancelled(id)) => task_id == id,
        (Error::NotFinished { task_id, status }, MErr::NotFinished(id, want_status)) => {
            task_id == id && status == want_status
        }
        (Error::InvalidCursor { .. }, MErr::InvalidCursor)
        | (Error::InvalidParams { .. }, MErr::InvalidParams) => true,
        (Error::LimitExceeded { limit, scope }, MErr::Limit(want_limit, want_scope)) => {
            limit == want_limit && scope == want_scope
        }
        (Error::Timeout { task_id, .. }, MErr::Timeout(id)) => task_id == id,
        _ => false,
    };
    prop_assert!(
        matches,
        "{}: registry said {:?}, model {:?}",
        ctx,
        real,
        want
    );
    Ok(())
}

impl Harness {
    fn new(config: &Config) -> Self {
        let clock = ManualClock::new(t0());
        let registry = TaskRegistry::builder()
            .clock(clock.clone())
            .ttl_policy(POLICIES[config.policy].real())
            .limits(config.limits)
            .poll_interval(config.poll_interval)
            .build()
            .expect("every policy of the model is valid");
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        registry.subscribe(move |change: &StatusChange| {
            sink.lock().unwrap().push(change.clone());
        });
        Harness {
            registry,
            clock,
            log,
            slots: Vec::new(),
            model: Model::new(config),
            ids: HashSet::new(),
        }
    }

    /// The actor, the id string and the creation index an aim names.
    fn resolve(&self, aim: Aim) -> (u8, String, Option<usize>) {
        let tasks = &self.model.tasks;
        match aim.target {
            Target::Task(n) if !tasks.is_empty() => {
                let index = n % tasks.len();
                let actor = aim.actor.unwrap_or(tasks[index].owner);
                (actor, tasks[index].id.clone(), Some(index))
            }
            Target::Recent(n) if !tasks.is_empty() => {
                let index = tasks.len() - 1 - usize::from(n) % tasks.len();
                let actor = aim.actor.unwrap_or(tasks[index].owner);
                (actor, tasks[index].id.clone(), Some(index))
            }
            Target::Task(_) | Target::Recent(_) | Target::Unknown => {
                (aim.actor.unwrap_or(0), UNKNOWN_ID.into(), None)
            }
            Target::Garbage(kind) => {
                let base = tasks.last().map_or(UNKNOWN_ID, |t| t.id.as_str());
                let id = match kind {
                    0 => String::new(),
                    1 => "not-a-task-id".to_owned(),
                    2 => base.to_uppercase(),
                    3 => format!("{{{base}}}"),
                    _ => base.replace('-', ""),
                };
                (aim.actor.unwrap_or(0), id, None)
            }
        }
    }

    fn answer(
        &self,
        real: Result<AnyTask, Error>,
        want: Result<usize, MErr>,
        ctx: &str,
    ) -> Result<(), TestCaseError> {
        match (real, want) {
            (Ok(task), Ok(index)) => check_task(&task, &self.model.tasks[index], ctx),
            (Err(err), Err(want)) => check_err(&self.model, &err, &want, ctx),
            (real, want) => Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
        }
    }

    /// Compares the notifications delivered since the last check, and `len`.
    fn check_passive(&mut self, ctx: &str) -> Result<(), TestCaseError> {
        let delivered = std::mem::take(&mut *self.log.lock().unwrap());
        let expected = std::mem::take(&mut self.model.notes);
        prop_assert_eq!(
            delivered.len(),
            expected.len(),
            "{}: notifications {:?} vs model {:?}",
            ctx,
            delivered,
            expected
        );
        for (change, (owner_index, task)) in delivered.iter().zip(&expected) {
            prop_assert_eq!(
                &change.owner,
                &owner(*owner_index),
                "{}: notified owner",
                ctx
            );
            check_task(&change.task, task, &format!("{ctx} (notification)"))?;
        }
        prop_assert_eq!(self.registry.len(), self.model.stored(), "{}: len", ctx);
        prop_assert_eq!(
            self.registry.is_empty(),
            self.model.stored() == 0,
            "{}",
            ctx
        );
        Ok(())
    }

    fn run(&mut self, op: &Op, ctx: &str) -> Result<(), TestCaseError> {
        match *op {
            Op::Create {
                owner: o,
                ttl,
                poll,
                request,
                driver,
            } => self.create(o, ttl, poll, request, driver, ctx),
            Op::UpdateStatus {
                aim,
                status,
                message,
            } => {
                let (actor, id, index) = self.resolve(aim);
                let real =
                    self.registry
                        .update_status(&owner(actor), &id, status, message_text(message));
                let want =
                    self.model
                        .update_status(actor, &id, index, status, message_text(message));
                self.answer(real, want, ctx)
            }
            Op::StoreResult {
                aim,
                status,
                payload,
            } => {
                let (actor, id, index) = self.resolve(aim);
                let real =
                    self.registry
                        .store_result(&owner(actor), &id, status, payload.outcome());
                let want = self.model.store_result(actor, &id, index, status, payload);
                self.answer(real, want, ctx)
            }
            Op::Cancel { aim, message } => {
                let (actor, id, index) = self.resolve(aim);
                let real = self
                    .registry
                    .cancel(&owner(actor), &id, message_text(message))
                    .map(|task| task.into_any());
                let want = self.model.cancel(actor, &id, index, message_text(message));
                self.answer(real, want, ctx)
            }
            Op::Get(aim) => {
                let (actor, id, index) = self.resolve(aim);
                let real = self.registry.get(&owner(actor), &id);
                let want = self.model.lookup(actor, &id, index);
                self.answer(real, want, ctx)
            }
            Op::Result(aim) => {
                let (actor, id, index) = self.resolve(aim);
                let real = self.registry.result(&owner(actor), &id);
                let want = self.model.lookup(actor, &id, index).and_then(|i| {
                    let status = self.model.tasks[i].status;
                    if status.is_terminal() {
                        Ok(i)
                    } else {
                        Err(MErr::NotFinished(id.clone(), status))
                    }
                });
                self.answer(real, want, ctx)
            }
            Op::Wait(aim) => {
                let (actor, id, index) = self.resolve(aim);
                let real = self.registry.wait(&owner(actor), &id, Some(Duration::ZERO));
                let want = self.model.lookup(actor, &id, index).and_then(|i| {
                    if self.model.tasks[i].status.is_terminal() {
                        Ok(i)
                    } else {
                        Err(MErr::Timeout(id.clone()))
                    }
                });
                self.answer(real, want, ctx)
            }
            Op::Origin(aim) => {
                let (actor, id, index) = self.resolve(aim);
                let real = self.registry.origin(&owner(actor), &id);
                let want = self.model.lookup(actor, &id, index);
                match (real, want) {
                    (Ok(origin), Ok(i)) => {
                        let task = &self.model.tasks[i];
                        prop_assert_eq!(&origin.request_id, &task.request_id, "{}", ctx);
                        prop_assert_eq!(&*origin.method, task.method, "{}", ctx);
                        Ok(())
                    }
                    (Err(err), Err(want)) => check_err(&self.model, &err, &want, ctx),
                    (real, want) => Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
                }
            }
            Op::Remove(aim) => {
                let (actor, id, index) = self.resolve(aim);
                let real = self.registry.remove(&owner(actor), &id);
                let want = self.model.lookup(actor, &id, index).inspect(|&i| {
                    self.model.tasks[i].stored = false;
                });
                self.answer(real, want, ctx)
            }
            Op::List {
                owner: o,
                page_size,
                from,
            } => {
                let start = match from {
                    Some(n) if !self.model.cursors.is_empty() => {
                        let cursor = &self.model.cursors[n % self.model.cursors.len()];
                        Some((cursor.owner, cursor.after, cursor.text.clone()))
                    }
                    _ => None,
                };
                match start {
                    Some((cursor_owner, _, text)) if cursor_owner != o => {
                        let real = self.registry.list(&owner(o), Some(&text), page_size);
                        match real {
                            Err(err) => check_err(&self.model, &err, &MErr::InvalidCursor, ctx),
                            Ok(page) => Err(fail(format!(
                                "{ctx}: another owner's cursor was accepted: {page:?}"
                            ))),
                        }
                    }
                    Some((_, after, text)) => self.walk(o, Some((after, text)), page_size, ctx),
                    None => self.walk(o, None, page_size, ctx),
                }
            }
            Op::BadCursor { owner: o, kind } => {
                let text = match (kind, self.model.cursors.last()) {
                    (0, _) => String::new(),
                    (1, _) => "not a cursor".to_owned(),
                    (2, Some(c)) => format!("{}0", c.text),
                    (3, Some(c)) => {
                        // The same sequence number with another tag.
                        let mut bytes = c.text.clone().into_bytes();
                        let last = bytes.len() - 1;
                        bytes[last] = if bytes[last] == b'0' { b'1' } else { b'0' };
                        String::from_utf8(bytes).unwrap()
                    }
                    (4, Some(c)) if c.text.bytes().any(|b| b.is_ascii_alphabetic()) => {
                        c.text.to_uppercase()
                    }
                    _ => "g".repeat(32),
                };
                match self.registry.list(&owner(o), Some(&text), 3) {
                    Err(err) => check_err(&self.model, &err, &MErr::InvalidCursor, ctx),
                    Ok(page) => Err(fail(format!("{ctx}: cursor {text:?} accepted: {page:?}"))),
                }
            }
            Op::Advance(millis) => {
                self.clock.advance(Duration::from_millis(millis));
                self.model.now += i64::try_from(millis).unwrap();
                Ok(())
            }
            Op::ToExpiry { task, delta } => {
                if self.model.tasks.is_empty() {
                    return Ok(());
                }
                let task = &self.model.tasks[task % self.model.tasks.len()];
                let Some(ttl) = task.ttl.and_then(|ttl| i64::try_from(ttl).ok()) else {
                    return Ok(());
                };
                let target = task.created + ttl + i64::from(delta) - 1;
                let step = target - self.model.now;
                if (1..10_000_000).contains(&step) {
                    self.clock
                        .advance(Duration::from_millis(u64::try_from(step).unwrap()));
                    self.model.now = target;
                }
                Ok(())
            }
            Op::Purge => {
                let real = self.registry.purge_expired();
                let want = self.model.sweep(None);
                prop_assert_eq!(real, want, "{}: purged", ctx);
                Ok(())
            }
            Op::Len => Ok(()), // compared after every operation
            Op::Handle {
                slot,
                message,
                ref act,
            } => self.handle(slot, message, act, ctx),
        }
    }

    fn create(
        &mut self,
        o: u8,
        ttl: Option<u64>,
        poll: Option<u64>,
        request: u8,
        driver: Driver,
        ctx: &str,
    ) -> Result<(), TestCaseError> {
        let request_id = if request.is_multiple_of(2) {
            RequestId::Number(i64::from(request))
        } else {
            RequestId::String(format!("req-{request}"))
        };
        let method = METHODS[usize::from(request) % METHODS.len()];
        let request_of = || {
            TaskRequest::new(request_id.clone(), method)
                .with_ttl(ttl)
                .with_poll_interval(poll)
        };
        let (real, handle) = match driver {
            Driver::ById => (self.registry.insert(&owner(o), request_of()), None),
            Driver::Handle | Driver::Detached => {
                match self.registry.create(&owner(o), request_of()) {
                    Ok((handle, task)) => (Ok(task), Some(handle)),
                    Err(err) => (Err(err), None),
                }
            }
        };
        let want = self.model.admit(o);
        let task = match (real, want) {
            (Err(err), Err(want)) => return check_err(&self.model, &err, &want, ctx),
            (Ok(task), Ok(())) => task,
            (real, want) => return Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
        };
        let id = task.id().to_string();
        prop_assert!(is_canonical_uuid_v4(&id), "{}: id {}", ctx, id);
        prop_assert!(
            self.ids.insert(id.clone()),
            "{}: id {} issued twice",
            ctx,
            id
        );
        let now = self.model.now;
        self.model.tasks.push(MTask {
            id,
            owner: o,
            status: TaskStatus::Working,
            message: None,
            created: now,
            updated: now,
            ttl: kept_millis(self.model.policy.effective(ttl)),
            poll: kept_millis(poll.or(self.model.poll_interval)),
            outcome: None,
            input_requests: 0,
            request_id,
            method,
            stored: true,
        });
        let index = self.model.tasks.len() - 1;
        check_task(&task.into_any(), &self.model.tasks[index], ctx)?;
        match (driver, handle) {
            (Driver::Handle, Some(handle)) => self.slots.push(Slot {
                task: index,
                pending: None,
                handle: AnyHandle::Working(handle),
            }),
            (_, Some(handle)) => {
                let id = handle.detach();
                prop_assert_eq!(
                    id.to_string(),
                    self.model.tasks[index].id.clone(),
                    "{}",
                    ctx
                );
            }
            (_, None) => {}
        }
        Ok(())
    }

    /// Lists every page of `o`'s tasks, from the start or after a cursor of `o`'s.
    fn walk(
        &mut self,
        o: u8,
        start: Option<(usize, String)>,
        page_size: usize,
        ctx: &str,
    ) -> Result<(), TestCaseError> {
        let (mut after, mut cursor) = match start {
            Some((after, text)) => (Some(after), Some(text)),
            None => (None, None),
        };
        for page_number in 0..=self.model.tasks.len() + 1 {
            let ctx = format!("{ctx} page {page_number}");
            let page = self
                .registry
                .list(&owner(o), cursor.as_deref(), page_size)
                .map_err(|err| fail(format!("{ctx}: list refused: {err:?}")))?;
            let (want, next) = self.model.page(o, after, page_size);
            let got_ids: Vec<String> = page.tasks.iter().map(|t| t.id().to_string()).collect();
            let want_ids: Vec<String> = want
                .iter()
                .map(|&i| self.model.tasks[i].id.clone())
                .collect();
            prop_assert_eq!(got_ids, want_ids, "{}: listed ids", &ctx);
            for (task, &index) in page.tasks.iter().zip(&want) {
                check_task(task, &self.model.tasks[index], &ctx)?;
            }
            match (page.next_cursor, next) {
                (None, None) => return Ok(()),
                (Some(text), Some(last)) => {
                    if self.model.cursors.len() == 32 {
                        self.model.cursors.remove(0);
                    }
                    self.model.cursors.push(Cursor {
                        owner: o,
                        after: last,
                        text: text.clone(),
                    });
                    after = Some(last);
                    cursor = Some(text);
                }
                (got, want) => {
                    return Err(fail(format!(
                        "{ctx}: next cursor {got:?}, model continues after {want:?}"
                    )));
                }
            }
        }
        Err(fail(format!("{ctx}: the pages never end")))
    }

    fn handle(
        &mut self,
        slot: usize,
        message: Option<u8>,
        act: &HandleAct,
        ctx: &str,
    ) -> Result<(), TestCaseError> {
        if self.slots.is_empty() {
            return Ok(());
        }
        let mut slot = self.slots.swap_remove(slot % self.slots.len());
        if let Some(text) = message_text(message) {
            slot.handle = slot.handle.with_message(text.clone());
            slot.pending = Some(text);
        }
        let index = slot.task;
        let expected = slot.handle.expected();
        let owner_index = self.model.tasks[index].owner;
        match act {
            HandleAct::Snapshot => {
                let real = match &slot.handle {
                    AnyHandle::Working(h) => h.snapshot(),
                    AnyHandle::InputRequired(h) => h.snapshot(),
                };
                let id = self.model.tasks[index].id.clone();
                let want = self.model.lookup(owner_index, &id, Some(index));
                self.slots.push(slot);
                self.answer(real, want, ctx)
            }
            HandleAct::SetMessage(text) => {
                let real = match &slot.handle {
                    AnyHandle::Working(h) => h.set_status_message(message_text(*text)),
                    AnyHandle::InputRequired(h) => h.set_status_message(message_text(*text)),
                };
                let want = self.model.set_message(index, expected, message_text(*text));
                self.slots.push(slot);
                match (real, want) {
                    (Ok(()), Ok(())) => Ok(()),
                    (Err(err), Err(want)) => check_err(&self.model, &err, &want, ctx),
                    (real, want) => Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
                }
            }
            HandleAct::Detach => {
                let id = match slot.handle {
                    AnyHandle::Working(h) => h.detach(),
                    AnyHandle::InputRequired(h) => h.detach(),
                };
                prop_assert_eq!(
                    id.to_string(),
                    self.model.tasks[index].id.clone(),
                    "{}",
                    ctx
                );
                Ok(())
            }
            HandleAct::Drop => {
                drop(slot.handle);
                self.model.abandon(index);
                Ok(())
            }
            HandleAct::RequireInput(count) => {
                let AnyHandle::Working(h) = slot.handle else {
                    // Not a move of this typestate: the handle is kept as it was.
                    self.slots.push(slot);
                    return Ok(());
                };
                let mut requests = InputRequests::new();
                for n in 0..*count {
                    let params = JsonObject::from_iter([("n".to_owned(), json!(n))]);
                    requests = requests.with(format!("q{n}"), InputRequest::elicitation(params));
                }
                let real = h.require_input(requests);
                let want = self.model.step(
                    index,
                    TaskStatus::Working,
                    TaskStatus::InputRequired,
                    slot.pending.take(),
                    usize::from(*count),
                );
                match (real, want) {
                    (Ok(h), Ok(_)) => {
                        self.slots.push(Slot {
                            task: index,
                            pending: None,
                            handle: AnyHandle::InputRequired(h),
                        });
                        Ok(())
                    }
                    (Err(err), Err(want)) => check_err(&self.model, &err, &want, ctx),
                    (real, want) => Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
                }
            }
            HandleAct::Resume => {
                let AnyHandle::InputRequired(h) = slot.handle else {
                    self.slots.push(slot);
                    return Ok(());
                };
                let real = h.resume();
                let want = self.model.step(
                    index,
                    TaskStatus::InputRequired,
                    TaskStatus::Working,
                    slot.pending.take(),
                    0,
                );
                match (real, want) {
                    (Ok(h), Ok(_)) => {
                        self.slots.push(Slot {
                            task: index,
                            pending: None,
                            handle: AnyHandle::Working(h),
                        });
                        Ok(())
                    }
                    (Err(err), Err(want)) => check_err(&self.model, &err, &want, ctx),
                    (real, want) => Err(fail(format!("{ctx}: registry {real:?}, model {want:?}"))),
                }
            }
            HandleAct::Complete(payload) => {
                let result = payload.result_object();
                let real = match slot.handle {
                    AnyHandle::Working(h) => h.complete(result.clone()),
                    AnyHandle::InputRequired(h) => h.complete(result.clone()),
                }
                .map(|t| t.into_any());
                let want = self.model.finish(
                    index,
                    TaskStatus::Completed,
                    slot.pending,
                    Some(Outcome::Result(result)),
                );
                self.answer(real, want, ctx)
            }
            HandleAct::Fail(payload) => {
                let outcome = payload.outcome();
                let real = match slot.handle {
                    AnyHandle::Working(h) => h.fail(outcome.clone()),
                    AnyHandle::InputRequired(h) => h.fail(outcome.clone()),
                }
                .map(|t| t.into_any());
                let want = if matches!(outcome, Outcome::Result(_)) && !payload.is_error_result() {
                    // Refused before the registry is touched; the spent handle was armed,
                    // so dropping it failed the task.
                    self.model.abandon(index);
                    Err(MErr::InvalidParams)
                } else {
                    let message = slot.pending.or_else(|| payload.diagnostic());
                    self.model
                        .finish(index, TaskStatus::Failed, message, Some(outcome))
                };
                self.answer(real, want, ctx)
            }
            HandleAct::Finish(payload) => {
                let result = payload.result_object();
                let real = match slot.handle {
                    AnyHandle::Working(h) => h.finish(result.clone()),
                    AnyHandle::InputRequired(h) => h.finish(result.clone()),
                }
                .map(|finished| match finished {
                    mcp_tasks::Finished::Completed(t) => t.into_any(),
                    mcp_tasks::Finished::Failed(t) => t.into_any(),
                });
                let want = if payload.is_error_result() {
                    let message = slot.pending.or_else(|| payload.diagnostic());
                    self.model.finish(
                        index,
                        TaskStatus::Failed,
                        message,
                        Some(Outcome::Result(result)),
                    )
                } else {
                    self.model.finish(
                        index,
                        TaskStatus::Completed,
                        slot.pending,
                        Some(Outcome::Result(result)),
                    )
                };
                self.answer(real, want, ctx)
            }
            HandleAct::Cancel => {
                let real = match slot.handle {
                    AnyHandle::Working(h) => h.cancel(),
                    AnyHandle::InputRequired(h) => h.cancel(),
                }
                .map(|t| t.into_any());
                let want = self
                    .model
                    .finish(index, TaskStatus::Cancelled, slot.pending, None);
                self.answer(real, want, ctx)
            }
        }
    }

    /// After the last operation: drop the remaining handles, then look at every task and
    /// sweep what expired.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        for slot in std::mem::take(&mut self.slots) {
            drop(slot.handle);
            self.model.abandon(slot.task);
        }
        self.check_passive("dropping the remaining handles")?;
        for index in 0..self.model.tasks.len() {
            let (o, id) = (
                self.model.tasks[index].owner,
                self.model.tasks[index].id.clone(),
            );
            let real = self.registry.get(&owner(o), &id);
            let want = self.model.lookup(o, &id, Some(index));
            self.answer(real, want, &format!("final get of task {index}"))?;
        }
        let purged = self.registry.purge_expired();
        prop_assert_eq!(purged, self.model.sweep(None), "final purge");
        self.check_passive("the end")
    }
}

fn run_case(config: &Config, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut harness = Harness::new(config);
    for (n, op) in ops.iter().enumerate() {
        let ctx = format!("op #{n} {op:?}");
        ANSWER.with(std::cell::Cell::take);
        harness.run(op, &ctx)?;
        let answer = ANSWER.with(|answer| answer.take()).unwrap_or("ok");
        count(format!("{}: {answer}", op_name(op)));
        harness.check_passive(&ctx)?;
    }
    harness.finish()
}

/// The registry and the model agree on every answer, over 10,000 random sequences.
#[test]
fn registry_agrees_with_the_model() {
    let config = ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        // ChaCha (the default) reseeds for every arm of every `prop_oneof!`, which costs
        // ten times the run of the case itself in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let cases = (
        config_strategy(),
        prop::collection::vec(op_strategy(), 1..40),
    );
    let result = runner.run(&cases, |(config, ops)| run_case(&config, &ops));
    if std::env::var_os("MODEL_STATS").is_some() {
        STATS.with(|stats| {
            for (what, n) in stats.borrow().iter() {
                println!("{n:>8}  {what}");
            }
        });
    }
    if let Err(error) = result {
        panic!("{error}");
    }
}

// ---------------------------------------------------------------------------------------
// Checks of the model's assumptions, and regressions it found
// ---------------------------------------------------------------------------------------

/// The model sweeps an owner's expired tasks where the registry sweeps a shard; that is
/// the same only if the four owners live in distinct shards. Checked by behaviour: a sweep
/// of one owner's shard must not touch another owner's expired task.
#[test]
fn the_models_owners_live_in_distinct_shards() {
    for a in 0..OWNERS {
        for b in 0..OWNERS {
            if a == b {
                continue;
            }
            let clock = ManualClock::new(t0());
            let registry = TaskRegistry::builder()
                .clock(clock.clone())
                .ttl_policy(TtlPolicy::new(Some(1_000)))
                .limits(Limits::none())
                .build()
                .unwrap();
            let _ = registry
                .insert(&owner(a), TaskRequest::new(1, "tools/call"))
                .unwrap();
            clock.advance(Duration::from_millis(1_000));
            registry.list(&owner(b), None, 10).unwrap();
            assert_eq!(
                registry.len(),
                1,
                "{:?} and {:?} share a shard: pick other owner names for the model",
                owner(a),
                owner(b)
            );
            registry.list(&owner(a), None, 10).unwrap();
            assert_eq!(registry.len(), 0, "a list sweeps its owner's expired tasks");
        }
    }
}

/// `Error::IllegalTransition::to` is documented as "the status the move would have led
/// to". When a handle's non-finishing move is refused because another writer moved the
/// task, `to` is the status the *handle expected* (its own typestate), not the target of
/// the move: `require_input` on a `TaskHandle<Working>` whose task is `input_required`
/// reports `input_required -> working`, a move nobody asked for.
#[test]
fn a_refused_handle_move_names_the_status_it_would_have_led_to() {
    let registry = TaskRegistry::builder()
        .clock(ManualClock::new(t0()))
        .build()
        .unwrap();
    let alice = Owner::new("alice");
    let (handle, task) = registry
        .create(&alice, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    registry
        .update_status(&alice, &id, TaskStatus::InputRequired, None)
        .unwrap();
    let err = handle.require_input(InputRequests::new()).unwrap_err();
    match err {
        Error::IllegalTransition { from, to, .. } => {
            assert_eq!(from, TaskStatus::InputRequired);
            assert_eq!(to, TaskStatus::InputRequired, "the target of require_input");
        }
        other => panic!("{other:?}"),
    }
}

/// The spec (digest §2 and §6, TASKS L721 and L839): a tool call whose `CallToolResult`
/// has `isError: true` did not complete successfully, and its task is `failed`.
/// `store_result` refuses `failed` with a result that lacks `isError: true`, but stores the
/// converse, `completed` with an `isError: true` result of a `tools/call` task, so a
/// requestor polling `tasks/get` sees `completed` for a failed tool call.
#[test]
fn a_tool_result_that_reports_an_error_is_not_stored_as_completed() {
    let registry = TaskRegistry::builder()
        .clock(ManualClock::new(t0()))
        .build()
        .unwrap();
    let alice = Owner::new("alice");
    let id = registry
        .insert(&alice, TaskRequest::new(1, "tools/call"))
        .unwrap()
        .id()
        .to_string();
    let failing = Payload::ErrorResult(0).outcome();
    let stored = registry.store_result(&alice, &id, TaskStatus::Completed, failing);
    assert!(
        stored.is_err(),
        "stored as completed: {:?}",
        registry.get(&alice, &id)
    );
    assert_eq!(
        registry.get(&alice, &id).unwrap().status(),
        TaskStatus::Working
    );
}

/// The converse through the typed handle: `TaskHandle::fail` documents its outcome as "a
/// JSON-RPC error, or a result that reports one", and `store_result` enforces exactly
/// that, but the handle stores a plain successful result as the outcome of a `failed`
/// task (whose `tasks/result` is then a success without `isError`).
#[test]
fn a_handle_fails_a_task_only_with_an_outcome_that_reports_the_failure() {
    let registry = TaskRegistry::builder()
        .clock(ManualClock::new(t0()))
        .build()
        .unwrap();
    let alice = Owner::new("alice");
    let (handle, _) = registry
        .create(&alice, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let failed = handle.fail(Payload::Ok(0).outcome());
    assert!(failed.is_err(), "stored: {failed:?}");
}
