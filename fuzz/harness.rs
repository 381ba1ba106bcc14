//! The logic of the fuzz targets, written once and included with `#[path]` by
//! `fuzz/fuzz_targets/*.rs` (cargo-fuzz, libFuzzer) and by `tests/fuzz_corpus.rs` (the
//! corpus replay that runs on stable `cargo test`). It may use only what the main crate's
//! tests can use: `mcp_tasks`, `serde` and `serde_json`.
//!
//! Each target takes arbitrary bytes and panics, naming the broken invariant, if and only
//! if the crate misbehaves:
//! - [`any_task`]: `AnyTask` from bytes; whatever parses round-trips, and every move of the
//!   spec's table applies or is refused correctly, at any time.
//! - [`messages`]: every protocol message type from bytes (and from the parsed `Value`);
//!   whatever parses round-trips.
//! - [`dispatch`]: the dispatchers (2025-11-25's and the tasks extension's) and
//!   `augmentation` from a method selector and a JSON params blob, against a registry
//!   holding tasks of every status for several owners: answers have the spec's codes,
//!   never show another owner's task, and a refused request leaves the registry exactly as
//!   it was.
//!
//! Both dialects' task objects are checked both ways: every `AnyTask` maps to an extension
//! `DetailedTask` that reads back, and the mapping is stable after one round.
#![allow(dead_code)]

use std::fmt::Debug;
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::ext::{self, DetailedTask, ExtDispatcher, TaskFields, TasksExtensionCapability};
use mcp_tasks::protocol::{
    Augmentation, CANCELLED_BY_REQUEST, ClientTaskRequests, ClientTasksCapability,
    CreateTaskResult, Dispatcher, ElicitationTaskRequests, GetTaskPayloadResult, ListTasksParams,
    ListTasksResult, RELATED_TASK_META_KEY, RelatedTaskMetadata, SamplingTaskRequests,
    ServerTaskRequests, ServerTasksCapability, Supported, TaskIdParams, TaskMetadata, TaskResult,
    TaskStatusNotification, TaskSupport, ToolExecution, ToolsTaskRequests, augmentation, methods,
    related_task,
};
use mcp_tasks::{
    AnyTask, Cancelled, Completed, Error, Failed, InputRequest, InputRequests, InputRequired,
    JsonObject, JsonRpcError, Limits, MAX_PAGE_SIZE, ManualClock, Outcome, Owner, RequestId, Task,
    TaskId, TaskRegistry, TaskRequest, TaskState, TaskStatus, Timestamp, Transition, TtlPolicy,
    Working,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------------------

/// `value` was parsed from fuzz input: it must serialize, and its serialized form (as a
/// `Value` and as text) must parse back to an equal value that serializes to the same JSON.
/// Returns that JSON.
pub fn round_trip<T>(value: &T) -> Value
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let wire = serde_json::to_value(value)
        .unwrap_or_else(|err| panic!("{value:?} parsed but does not serialize: {err}"));
    let again: T = serde_json::from_value(wire.clone())
        .unwrap_or_else(|err| panic!("the serialized form {wire} does not parse back: {err}"));
    assert_eq!(
        &again, value,
        "the round trip through {wire} changed the value"
    );
    let rewire = serde_json::to_value(&again).expect("a re-parsed value serializes");
    assert_eq!(
        rewire, wire,
        "serializing twice gave two different JSON values"
    );
    let text = serde_json::to_string(value).expect("serializes to text");
    let from_text: T = serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("the serialized text {text} does not parse back: {err}"));
    // Exact for floats too: the crate turns on serde_json's `float_roundtrip` (the
    // fuzzer found `4964e30` changing by one ulp without it).
    assert_eq!(
        &from_text, value,
        "the round trip through text {text} changed the value"
    );
    wire
}

/// Parses `data` as `T` from the bytes and from the already parsed `value` (the path of a
/// server that reads a `Value` first). Whatever parses round-trips, and both paths agree.
fn parse_as<T>(data: &[u8], value: Option<&Value>) -> Option<T>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let direct = serde_json::from_slice::<T>(data).ok();
    if let Some(parsed) = &direct {
        round_trip(parsed);
    }
    if let Some(value) = value {
        match T::deserialize(value) {
            Ok(via_value) => {
                round_trip(&via_value);
                if let Some(direct) = &direct {
                    assert_eq!(direct, &via_value, "bytes and Value parse differently");
                }
            }
            Err(err) => assert!(
                direct.is_none(),
                "{} parses from the bytes but not from their Value: {err}",
                std::any::type_name::<T>()
            ),
        }
    }
    direct
}

/// The JSON form of a task is the protocol `Task` object, with canonical timestamps.
pub fn check_task_wire(task: &AnyTask, wire: &Value) {
    assert_eq!(wire["taskId"], task.id().to_string(), "taskId in {wire}");
    assert_eq!(wire["status"], task.status().as_str(), "status in {wire}");
    assert!(
        wire.get("ttl").is_some(),
        "ttl is required (null when unlimited): {wire}"
    );
    assert_eq!(wire["ttl"].as_u64(), task.ttl(), "ttl in {wire}");
    assert_ne!(
        task.ttl(),
        Some(u64::MAX),
        "u64::MAX is the storage's `none`"
    );
    assert_eq!(
        wire.get("pollInterval").and_then(Value::as_u64),
        task.poll_interval(),
        "pollInterval in {wire}"
    );
    for (key, time) in [
        ("createdAt", task.created_at()),
        ("lastUpdatedAt", task.last_updated_at()),
    ] {
        let text = wire[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} in {wire}"));
        assert_eq!(text, time.to_string());
        assert!(text.ends_with('Z'), "{key} is not in UTC: {text}");
        assert_eq!(
            Timestamp::parse(text),
            Ok(time),
            "{key} does not re-parse: {text}"
        );
    }
}

/// The extreme times every time computation must survive.
fn extreme_times(task: &AnyTask) -> [Timestamp; 6] {
    [
        Timestamp::from_unix_millis(i64::MIN),
        Timestamp::from_unix_millis(-1),
        Timestamp::UNIX_EPOCH,
        task.created_at(),
        task.last_updated_at(),
        Timestamp::from_unix_millis(i64::MAX),
    ]
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

fn transitions() -> [Transition; 6] {
    [
        Transition::RequireInput(InputRequests::new().with(
            "ask",
            InputRequest::elicitation(object(json!({"message": "?"}))),
        )),
        Transition::Resume,
        Transition::Complete(object(json!({"content": []}))),
        Transition::Fail(Outcome::error(-32000, "boom")),
        Transition::Fail(Outcome::Result(object(json!({"isError": true})))),
        Transition::Cancel,
    ]
}

/// The typed view of `task` exists exactly for its status.
fn check_typed<S: TaskState>(task: &AnyTask) {
    let typed = Task::<S>::try_from(task.clone());
    assert_eq!(typed.is_ok(), task.status() == S::STATUS);
    assert_eq!(task.as_task::<S>().is_some(), task.status() == S::STATUS);
    match typed {
        Ok(typed) => assert_eq!(&typed.into_any(), task),
        Err(mismatch) => {
            let _ = mismatch.to_string();
            assert_eq!(&mismatch.into_inner(), task);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Target `any_task`
// ---------------------------------------------------------------------------------------

/// `AnyTask` from arbitrary bytes.
pub fn any_task(data: &[u8]) {
    let Ok(task) = serde_json::from_slice::<AnyTask>(data) else {
        return;
    };
    let wire = round_trip(&task);
    check_task_wire(&task, &wire);
    // The `Task` object carries no payload.
    assert_eq!(task.outcome(), None);
    if let Some(requests) = task.input_requests() {
        assert!(requests.is_empty());
    }
    check_typed::<Working>(&task);
    check_typed::<InputRequired>(&task);
    check_typed::<Completed>(&task);
    check_typed::<Failed>(&task);
    check_typed::<Cancelled>(&task);
    let _ = task.to_string();
    check_ext_mapping(&task);

    if let Some(end) = task.expires_at() {
        assert!(end >= task.created_at(), "expiry before creation");
        assert!(task.is_expired(end));
    } else {
        assert_eq!(task.ttl(), None);
    }
    for now in extreme_times(&task) {
        let _ = task.is_expired(now);
        // Every move of the spec's table, at every extreme time.
        for transition in transitions() {
            let from = task.status();
            let to = transition.target();
            match task.clone().apply(transition, now) {
                Ok(next) => {
                    assert!(from.can_transition_to(to), "{from} -> {to} was applied");
                    assert_eq!(next.status(), to);
                    assert_eq!(next.id(), task.id());
                    assert_eq!(next.created_at(), task.created_at());
                    assert_eq!(next.ttl(), task.ttl());
                    assert_eq!(next.poll_interval(), task.poll_interval());
                    assert!(next.last_updated_at() >= task.last_updated_at());
                    let next_wire = serde_json::to_value(&next).expect("serializes");
                    check_task_wire(&next, &next_wire);
                    check_ext_mapping(&next);
                    // The wire form of the moved task is itself a valid task.
                    let reread: AnyTask =
                        serde_json::from_value(next_wire.clone()).expect("re-parses");
                    assert_eq!(
                        serde_json::to_value(&reread).expect("serializes"),
                        next_wire
                    );
                }
                Err(err) => {
                    assert!(!from.can_transition_to(to), "{from} -> {to} was refused");
                    assert_eq!(err.from(), from);
                    assert_eq!(*err.task, task, "a refused move changed the task");
                    let error = Error::from(&err);
                    assert_eq!(error.code(), -32602);
                    round_trip(&error.to_jsonrpc());
                }
            }
        }
        let mut updated = task.clone();
        match updated.set_status_message(Some("update".to_owned()), now) {
            Ok(()) => {
                assert!(!task.is_terminal());
                assert_eq!(updated.status_message(), Some("update"));
                assert!(updated.last_updated_at() >= task.last_updated_at());
            }
            Err(_) => {
                assert!(task.is_terminal());
                assert_eq!(updated, task, "a refused message update changed the task");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Target `messages`
// ---------------------------------------------------------------------------------------

/// Every protocol message type from arbitrary bytes.
pub fn messages(data: &[u8]) {
    let value = serde_json::from_slice::<Value>(data).ok();
    let value = value.as_ref();

    if let Some(meta) = parse_as::<TaskMetadata>(data, value) {
        assert_ne!(meta.ttl, Some(u64::MAX));
    }
    if let Some(created) = parse_as::<CreateTaskResult>(data, value) {
        let wire = serde_json::to_value(&created).expect("serializes");
        check_task_wire(&created.task, &wire["task"]);
        let _ = created.model_immediate_response();
    }
    if let Some(params) = parse_as::<TaskIdParams>(data, value) {
        let wire = serde_json::to_value(&params).expect("serializes");
        assert_eq!(wire["taskId"], params.task_id.to_string());
    }
    if let Some(result) = parse_as::<TaskResult>(data, value) {
        let wire = serde_json::to_value(&result).expect("serializes");
        check_task_wire(&result.task, &wire);
    }
    parse_as::<ListTasksParams>(data, value);
    if let Some(list) = parse_as::<ListTasksResult>(data, value) {
        let wire = serde_json::to_value(&list).expect("serializes");
        for (task, task_wire) in list
            .tasks
            .iter()
            .zip(wire["tasks"].as_array().expect("tasks"))
        {
            check_task_wire(task, task_wire);
        }
    }
    if let Some(payload) = parse_as::<GetTaskPayloadResult>(data, value) {
        let _ = payload.task_id();
        // Tagging a result with a task keeps its other members and names that task.
        let id = TaskId::random();
        let tagged = GetTaskPayloadResult::new(payload.as_object().clone(), &id);
        assert_eq!(tagged.task_id(), Some(id));
        for (key, member) in payload.as_object() {
            if key != "_meta" {
                assert_eq!(tagged.as_object().get(key), Some(member));
            }
        }
        round_trip(&tagged);
    }
    if let Some(notification) = parse_as::<TaskStatusNotification>(data, value) {
        let wire = serde_json::to_value(&notification).expect("serializes");
        assert_eq!(wire["jsonrpc"], "2.0");
        assert_eq!(wire["method"], methods::TASKS_STATUS);
        check_task_wire(&notification.params.task, &wire["params"]);
    }
    if let Some(caps) = parse_as::<ServerTasksCapability>(data, value) {
        let _ = caps.tools_call();
    }
    parse_as::<ServerTaskRequests>(data, value);
    parse_as::<ToolsTaskRequests>(data, value);
    parse_as::<ClientTasksCapability>(data, value);
    parse_as::<ClientTaskRequests>(data, value);
    parse_as::<SamplingTaskRequests>(data, value);
    parse_as::<ElicitationTaskRequests>(data, value);
    parse_as::<Supported>(data, value);
    parse_as::<TaskSupport>(data, value);
    if let Some(execution) = parse_as::<ToolExecution>(data, value) {
        let _ = execution.task_support();
    }
    if let Some(error) = parse_as::<JsonRpcError>(data, value) {
        let _ = error.to_string();
    }
    if let Some(id) = parse_as::<RequestId>(data, value) {
        let _ = id.to_string();
    }
    parse_as::<RelatedTaskMetadata>(data, value);
    parse_as::<InputRequest>(data, value);
    parse_as::<InputRequests>(data, value);
    parse_as::<Timestamp>(data, value);

    if let Some(status) = parse_as::<TaskStatus>(data, value) {
        assert_eq!(status.as_str().parse::<TaskStatus>(), Ok(status));
    }
    if let Some(Value::String(text)) = value {
        // Every id round-trips exactly, and so does every status string that parses.
        let id: TaskId = serde_json::from_value(Value::String(text.clone())).expect("any string");
        assert_eq!(&id.to_string(), text);
        assert_eq!(
            serde_json::to_value(&id).expect("serializes"),
            Value::String(text.clone())
        );
        if let Ok(status) = text.parse::<TaskStatus>() {
            assert_eq!(status.as_str(), text);
        }
    }
    if let Some(Value::Object(meta)) = value {
        let _ = related_task(meta);
    }

    // The tasks extension's messages.
    parse_as::<ext::CreateTaskResult>(data, value);
    parse_as::<ext::GetTaskResult>(data, value);
    parse_as::<ext::Acknowledgement>(data, value);
    parse_as::<ext::UpdateTaskParams>(data, value);
    parse_as::<ext::TaskNotificationParams>(data, value);
    parse_as::<ext::TaskNotification>(data, value);
    parse_as::<TasksExtensionCapability>(data, value);
    parse_as::<TaskFields>(data, value);
    if let Some(detailed) = parse_as::<DetailedTask>(data, value) {
        check_detailed(detailed);
    }
    if value.is_some() {
        let _ = ext::declares_extension(value);
        let _ = ext::request_protocol_version(value);
    }

    let any = parse_as::<AnyTask>(data, value);
    let status = any.as_ref().map(AnyTask::status);
    check_typed_parse::<Working>(data, value, status);
    check_typed_parse::<InputRequired>(data, value, status);
    check_typed_parse::<Completed>(data, value, status);
    check_typed_parse::<Failed>(data, value, status);
    check_typed_parse::<Cancelled>(data, value, status);
}

/// `Task<S>` parses exactly when `AnyTask` parses with status `S`.
fn check_typed_parse<S: TaskState>(data: &[u8], value: Option<&Value>, any: Option<TaskStatus>) {
    let typed = parse_as::<Task<S>>(data, value);
    assert_eq!(
        typed.is_some(),
        any == Some(S::STATUS),
        "Task<{}> and AnyTask ({any:?}) disagree",
        S::STATUS
    );
}

/// The largest integer the extension's schema allows.
const MAX_SAFE: u64 = (1 << 53) - 1;

/// A `DetailedTask` from a peer reads into a task exactly when it carries the payload of
/// its status.
fn check_detailed(detailed: DetailedTask) {
    let status = detailed.task.status;
    let has_payload = match status {
        TaskStatus::InputRequired => detailed.input_requests.is_some(),
        TaskStatus::Completed => detailed.result.is_some(),
        TaskStatus::Failed => detailed.error.is_some(),
        TaskStatus::Working | TaskStatus::Cancelled => true,
    };
    match AnyTask::try_from(detailed) {
        Ok(task) => {
            assert!(
                has_payload,
                "a `{status}` DetailedTask without its payload was read"
            );
            assert!(task.last_updated_at() >= task.created_at());
            check_ext_mapping(&task);
        }
        Err(missing) => {
            assert!(
                !has_payload,
                "a `{status}` DetailedTask with its payload was refused"
            );
            assert_eq!(missing.status, status);
            let _ = missing.to_string();
        }
    }
}

/// Every task maps to an extension `DetailedTask` that serializes, reads back into a task,
/// and maps to the same `DetailedTask` again.
pub fn check_ext_mapping(task: &AnyTask) {
    let detailed = DetailedTask::from(task);
    assert_eq!(detailed.task.task_id, *task.id());
    assert_eq!(detailed.task.status, ext::wire_status(task));
    for millis in [detailed.task.ttl_ms, detailed.task.poll_interval_ms] {
        assert!(
            millis.is_none_or(|millis| millis <= MAX_SAFE),
            "beyond 2^53 - 1"
        );
    }
    round_trip(&detailed);
    let again = AnyTask::try_from(detailed.clone())
        .unwrap_or_else(|err| panic!("a DetailedTask this crate wrote does not read: {err}"));
    assert_eq!(again.id(), task.id());
    // Reading normalizes one thing: `lastUpdatedAt` is never earlier than `createdAt`.
    // Besides that the mapping is stable.
    let mut expected = detailed.clone();
    expected.task.last_updated_at = expected.task.last_updated_at.max(expected.task.created_at);
    let mapped = DetailedTask::from(&again);
    assert_eq!(
        mapped, expected,
        "DetailedTask -> AnyTask -> DetailedTask changed it"
    );
    let stable = AnyTask::try_from(mapped.clone()).expect("reads again");
    assert_eq!(
        DetailedTask::from(&stable),
        mapped,
        "the second round changed it"
    );
    round_trip(&ext::GetTaskResult::new(task));
    round_trip(&ext::TaskNotification::new(task));
    if let Ok(working) = Task::<Working>::try_from(task.clone()) {
        let created = ext::CreateTaskResult::new(&working);
        assert_eq!(created.task, detailed.task);
        round_trip(&created);
    }
}

// ---------------------------------------------------------------------------------------
// Target `dispatch`
// ---------------------------------------------------------------------------------------

/// The code of the JSON-RPC error stored in the fixture's failed task.
pub const FAILED_CODE: i64 = -32000;
/// The message of that error.
pub const FAILED_MESSAGE: &str = "tool exploded";
/// The per-owner limit; the fixture's first owner (alice) is at it.
pub const OWNER_LIMIT: usize = 6;

const TASK_METHODS: [&str; 4] = [
    methods::TASKS_GET,
    methods::TASKS_LIST,
    methods::TASKS_CANCEL,
    methods::TASKS_RESULT,
];

const EXT_METHODS: [&str; 5] = [
    ext::methods::TASKS_GET,
    ext::methods::TASKS_UPDATE,
    ext::methods::TASKS_CANCEL,
    ext::methods::TASKS_LIST,
    ext::methods::TASKS_RESULT,
];

const OTHER_METHODS: [&str; 8] = [
    "",
    "tasks/get ",
    "TASKS/GET",
    "tasks/create",
    methods::TASKS_STATUS,
    "tools/call",
    "ping",
    "tasks/get\0",
];

const PAGE_SIZES: [usize; 8] = [0, 1, 2, 3, 50, MAX_PAGE_SIZE, MAX_PAGE_SIZE + 1, usize::MAX];

/// All tasks of every fixture owner (as `list` pages and `get` show them) and the number
/// of stored tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Per owner, in the order of [`Fixture::owners`].
    pub tasks: Vec<Vec<AnyTask>>,
    /// `TaskRegistry::len`.
    pub len: usize,
}

/// A registry with tasks of every status for several owners, on a stopped clock.
pub struct Fixture {
    /// A dispatcher over the registry (pages of 2, `tasks/result` never blocks).
    pub dispatcher: Dispatcher,
    /// alice (at the per-owner limit), bob, the anonymous owner, and `Owner::new("")`.
    pub owners: Vec<Owner>,
    /// What `"$0"`..`"$9"` stand for in params: alice's working, input_required, completed,
    /// failed (error), failed (isError result) and cancelled tasks, bob's working task,
    /// the anonymous owner's working task, an expired task and a removed one of alice's.
    /// `"$a"`, `"$b"`, `"$n"` and `"$U"` stand for bob's completed task, `Owner::new("")`'s
    /// completed task, an id never issued and the uppercase form of alice's working task's
    /// id; `"$L"` for a 64 KiB string.
    pub ids: Vec<String>,
    /// What `"$c0"`..`"$c2"` stand for: alice's cursors after her first and second task,
    /// and bob's after his first.
    pub cursors: Vec<String>,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixture {
    /// Builds the registry and its tasks.
    pub fn new() -> Self {
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_764_066_600_000));
        let registry = TaskRegistry::builder()
            .clock(clock.clone())
            .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(600_000))
            .limits(Limits {
                per_owner: Some(OWNER_LIMIT),
                total: Some(64),
            })
            .poll_interval(Some(500))
            .build()
            .expect("a valid policy");
        let alice = Owner::new("alice");
        let bob = Owner::new("bob");
        let anonymous = Owner::anonymous();
        let empty = Owner::new("");
        let new = |owner: &Owner, ttl: Option<u64>| {
            registry
                .insert(owner, TaskRequest::new(1, "tools/call").with_ttl(ttl))
                .expect("under the limits")
                .id()
                .to_string()
        };
        let text = |text: &str, is_error: bool| {
            object(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
        };
        // Expired: created with the shortest TTL the policy grants, then the clock moves
        // on (and stops again) past its end.
        let expired = new(&alice, Some(1));
        clock.advance(Duration::from_secs(2));
        let removed = new(&alice, None);
        registry.remove(&alice, &removed).expect("removes");
        let working = new(&alice, None);
        // Waits for one elicitation, keyed "ask".
        let (handle, _) = registry
            .create(
                &alice,
                TaskRequest::new(2, "tools/call").with_ttl(Some(30_000)),
            )
            .expect("under the limits");
        let input = handle
            .with_message("waiting")
            .require_input(InputRequests::new().with(
                "ask",
                InputRequest::elicitation(object(json!({"message": "ok?"}))),
            ))
            .expect("working -> input_required")
            .detach()
            .to_string();
        let completed = new(&alice, Some(600_000));
        registry
            .store_result(
                &alice,
                &completed,
                TaskStatus::Completed,
                Outcome::Result(text("done", false)),
            )
            .expect("completes");
        let failed_error = new(&alice, None);
        registry
            .store_result(
                &alice,
                &failed_error,
                TaskStatus::Failed,
                Outcome::error(FAILED_CODE, FAILED_MESSAGE),
            )
            .expect("fails");
        let failed_result = new(&alice, None);
        registry
            .store_result(
                &alice,
                &failed_result,
                TaskStatus::Failed,
                Outcome::Result(text("bad", true)),
            )
            .expect("fails");
        let cancelled = new(&alice, None);
        let _ = registry.cancel(&alice, &cancelled, None).expect("cancels");
        let bob_working = new(&bob, None);
        let bob_completed = new(&bob, Some(1_000));
        registry
            .store_result(
                &bob,
                &bob_completed,
                TaskStatus::Completed,
                Outcome::Result(text("bob", false)),
            )
            .expect("completes");
        let anonymous_working = new(&anonymous, None);
        let empty_completed = new(&empty, None);
        registry
            .store_result(
                &empty,
                &empty_completed,
                TaskStatus::Completed,
                Outcome::Result(JsonObject::new()),
            )
            .expect("completes");
        let cursor = |owner: &Owner, after: Option<&str>| {
            registry
                .list(owner, after, 1)
                .expect("own cursor")
                .next_cursor
                .expect("more tasks follow")
        };
        registry.purge_expired();
        let first = cursor(&alice, None);
        let second = cursor(&alice, Some(&first));
        let bob_first = cursor(&bob, None);
        let ids = vec![
            working.clone(),
            input,
            completed,
            failed_error,
            failed_result,
            cancelled,
            bob_working,
            anonymous_working,
            expired,
            removed,
            bob_completed,
            empty_completed,
            TaskId::random().to_string(),
            working.to_uppercase(),
        ];
        Fixture {
            dispatcher: Dispatcher::new(registry)
                .with_page_size(2)
                .with_result_timeout(Some(Duration::ZERO)),
            owners: vec![alice, bob, anonymous, empty],
            ids,
            cursors: vec![first, second, bob_first],
        }
    }

    /// The registry.
    pub fn registry(&self) -> &TaskRegistry {
        self.dispatcher.store()
    }

    /// Every task of every owner, read through `list` (pages of 2, following the cursors)
    /// and checked against `get`.
    pub fn snapshot(&self) -> Snapshot {
        let registry = self.registry();
        let tasks = self
            .owners
            .iter()
            .map(|owner| {
                let mut tasks = Vec::new();
                let mut cursor: Option<String> = None;
                for _ in 0..=OWNER_LIMIT + 64 {
                    let page = registry
                        .list(owner, cursor.as_deref(), 2)
                        .expect("the registry refused its own cursor");
                    tasks.extend(page.tasks);
                    match page.next_cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                for task in &tasks {
                    let got = registry
                        .get(owner, &task.id().to_string())
                        .expect("a listed task is visible to its owner");
                    assert_eq!(&got, task, "get and list disagree");
                }
                tasks
            })
            .collect();
        Snapshot {
            tasks,
            len: registry.len(),
        }
    }

    /// `params` with the placeholders (`"$0"`, `"$c1"`, `"$L"`...) replaced.
    pub fn substitute(&self, params: Value) -> Value {
        match params {
            Value::String(text) => Value::String(self.placeholder(&text).unwrap_or(text)),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| self.substitute(item))
                    .collect(),
            ),
            Value::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(key, member)| (key, self.substitute(member)))
                    .collect(),
            ),
            other => other,
        }
    }

    fn placeholder(&self, text: &str) -> Option<String> {
        let rest = text.strip_prefix('$')?;
        let index = |digits: &str| {
            digits.bytes().fold(0usize, |n, b| {
                n.wrapping_mul(10)
                    .wrapping_add(usize::from(b.wrapping_sub(b'0') % 10))
            })
        };
        match rest.as_bytes().first()? {
            b'0'..=b'9' => Some(self.ids[index(rest) % self.ids.len()].clone()),
            b'a' => Some(self.ids[10].clone()),
            b'b' => Some(self.ids[11].clone()),
            b'n' => Some(self.ids[12].clone()),
            b'U' => Some(self.ids[13].clone()),
            b'c' => Some(self.cursors[index(&rest[1..]) % self.cursors.len()].clone()),
            b'L' => Some("a".repeat(64 * 1024)),
            _ => None,
        }
    }
}

/// The dispatcher from arbitrary bytes: `[selector, options, params...]`.
///
/// `selector % 8`: 0-3 one of the four task methods with the params blob; 4 the method is
/// the blob's first line and the params the rest; 5 `augmentation` (and `accept`) on the
/// blob; 6 a near-miss method name; 7 a task method without params. `options`: bits 0-1
/// the caller (alice, bob, anonymous, `""`), bits 2-4 the page size, bit 5 whether
/// `tasks.requests.tools.call` is declared, bit 7 a 1 ms `tasks/result` wait instead of
/// none. The blob must be JSON; strings in it may be placeholders (see [`Fixture`]).
pub fn dispatch(data: &[u8]) {
    let [selector, options, blob @ ..] = data else {
        return;
    };
    let (selector, options) = (*selector, *options);
    let fixture = Fixture::new();
    if selector % 8 == 5 {
        return augment(&fixture, options, blob);
    }
    let extension = selector & 0x08 != 0;
    let methods: &[&str] = if extension {
        &EXT_METHODS
    } else {
        &TASK_METHODS
    };
    let (method, params): (String, &[u8]) = match selector % 8 {
        4 => {
            let end = blob.iter().position(|&b| b == b'\n').unwrap_or(blob.len());
            let method = String::from_utf8_lossy(&blob[..end]).into_owned();
            (method, blob.get(end + 1..).unwrap_or_default())
        }
        6 => (OTHER_METHODS[usize::from(options >> 5)].to_owned(), blob),
        7 => (
            methods[usize::from(options >> 5) % methods.len()].to_owned(),
            &[],
        ),
        n => (methods[usize::from(n)].to_owned(), blob),
    };
    let params = if params.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(params) {
            Ok(params) => Some(fixture.substitute(params)),
            Err(_) => return,
        }
    };
    let caller = usize::from(options & 3);
    if extension {
        let declared = options & 0x40 != 0 || ext::declares_extension(params.as_ref());
        return check_ext_dispatch(&fixture, caller, &method, params.as_ref(), declared);
    }
    let wait = if options & 0x80 == 0 { 0 } else { 1 };
    let page_size = PAGE_SIZES[usize::from(options >> 2) % 8];
    let dispatcher = fixture
        .dispatcher
        .clone()
        .with_page_size(page_size)
        .with_result_timeout(Some(Duration::from_millis(wait)));
    check_dispatch(
        &fixture,
        &dispatcher,
        page_size,
        caller,
        &method,
        params.as_ref(),
    );
}

/// Dispatches one request of the tasks extension and checks the answer against the
/// registry before and after.
pub fn check_ext_dispatch(
    fixture: &Fixture,
    caller: usize,
    method: &str,
    params: Option<&Value>,
    declared: bool,
) {
    let dispatcher = ExtDispatcher::new(fixture.registry().clone());
    let owner = &fixture.owners[caller];
    let before = fixture.snapshot();
    let answer = dispatcher.dispatch(owner, method, params, declared);
    let after = fixture.snapshot();
    let served = matches!(
        method,
        ext::methods::TASKS_GET | ext::methods::TASKS_UPDATE | ext::methods::TASKS_CANCEL
    );
    let answer = match answer {
        Err(error) => {
            assert_eq!(
                before, after,
                "a refused {method} changed the registry: {error:?}"
            );
            assert!(!error.message.is_empty(), "an empty error message");
            assert!(
                error.message.len() <= 400,
                "an error message echoes too much"
            );
            round_trip(&error);
            match error.code {
                ext::MISSING_REQUIRED_CLIENT_CAPABILITY => assert!(served && !declared),
                -32601 => assert!(!served, "{method} is served but got -32601"),
                -32602 => assert!(served && declared, "{method:?}: -32602"),
                code => panic!("{method} answered the unexpected code {code}: {error:?}"),
            }
            return;
        }
        Ok(answer) => answer,
    };
    assert!(
        served && declared,
        "{method:?} (declared: {declared}) was answered: {answer}"
    );
    // Nothing is created, removed or moved to another status, and other owners' tasks
    // are untouched.
    assert_eq!(before.len, after.len);
    for (index, (was, is)) in before.tasks.iter().zip(&after.tasks).enumerate() {
        if index != caller {
            assert_eq!(was, is, "{method} changed another owner's task");
        }
        let ids_statuses = |tasks: &[AnyTask]| -> Vec<(TaskId, TaskStatus)> {
            tasks
                .iter()
                .map(|task| (task.id().clone(), task.status()))
                .collect()
        };
        assert_eq!(ids_statuses(was), ids_statuses(is), "{method} moved a task");
    }
    let task_id = params
        .and_then(|params| params.get("taskId"))
        .and_then(Value::as_str)
        .expect("an answered request names its task");
    let stored = before.tasks[caller]
        .iter()
        .find(|task| task.id().to_string() == task_id)
        .unwrap_or_else(|| panic!("{method} answered about {task_id}, not the caller's"));
    for (was, is) in before.tasks[caller].iter().zip(&after.tasks[caller]) {
        if was.id() != stored.id() {
            assert_eq!(was, is, "{method} changed a task it did not name");
        }
    }
    if method == ext::methods::TASKS_GET {
        assert_eq!(before, after, "tasks/get changed the registry");
        assert_eq!(
            answer,
            serde_json::to_value(ext::GetTaskResult::new(stored)).expect("json")
        );
        let _: ext::GetTaskResult = serde_json::from_value(answer).expect("a GetTaskResult");
    } else {
        assert_eq!(answer, json!({"resultType": "complete"}));
    }
}

/// Dispatches one request and checks the answer against the registry before and after.
pub fn check_dispatch(
    fixture: &Fixture,
    dispatcher: &Dispatcher,
    page_size: usize,
    caller: usize,
    method: &str,
    params: Option<&Value>,
) {
    let owner = &fixture.owners[caller];
    let before = fixture.snapshot();
    let answer = dispatcher.dispatch(owner, method, params);
    let after = fixture.snapshot();
    let mine = &before.tasks[caller];
    let handled = Dispatcher::handles(method);
    let result = match answer {
        Err(error) => {
            assert_eq!(
                before, after,
                "a refused {method} changed the registry: {error:?}"
            );
            assert!(!error.message.is_empty(), "an empty error message");
            assert!(
                error.message.len() <= 400,
                "an error message of {} bytes echoes too much of the input",
                error.message.len()
            );
            round_trip(&error);
            match error.code {
                -32602 => assert!(handled, "{method:?} is no task method but got -32602"),
                -32601 => assert!(!handled, "{method} is a task method but got -32601"),
                -32603 => {
                    assert_eq!(method, methods::TASKS_RESULT, "-32603: {}", error.message);
                    assert!(
                        error.message.contains("did not finish"),
                        "{}",
                        error.message
                    );
                }
                FAILED_CODE => {
                    assert_eq!(method, methods::TASKS_RESULT);
                    assert_eq!(error.message, FAILED_MESSAGE);
                    assert!(
                        mine.iter()
                            .any(|task| task.id().to_string() == fixture.ids[3]),
                        "another owner's stored error was returned"
                    );
                }
                code => panic!("{method} answered the unexpected code {code}: {error:?}"),
            }
            return;
        }
        Ok(result) => result,
    };
    assert!(
        handled,
        "{method:?} is no task method but was answered: {result}"
    );
    let find_mine = |id: &TaskId| {
        mine.iter().find(|task| task.id() == id).unwrap_or_else(|| {
            panic!("{method} answered about task {id}, which the caller does not own")
        })
    };
    match method {
        methods::TASKS_GET => {
            assert_eq!(before, after, "tasks/get changed the registry");
            let got: TaskResult = serde_json::from_value(result.clone()).expect("a TaskResult");
            assert_eq!(got.meta, None, "tasks/get carries no _meta");
            let stored = find_mine(got.task.id());
            assert_eq!(serde_json::to_value(stored).expect("serializes"), result);
        }
        methods::TASKS_CANCEL => {
            let got: TaskResult = serde_json::from_value(result.clone()).expect("a TaskResult");
            assert_eq!(got.task.status(), TaskStatus::Cancelled);
            assert_eq!(got.task.status_message(), Some(CANCELLED_BY_REQUEST));
            let stored = find_mine(got.task.id());
            assert!(!stored.is_terminal(), "a terminal task was cancelled");
            // Exactly that task changed, to what the answer shows.
            let mut expected = before.clone();
            let slot = expected.tasks[caller]
                .iter_mut()
                .find(|task| task.id() == stored.id())
                .expect("listed");
            let now = after.tasks[caller]
                .iter()
                .find(|task| task.id() == stored.id())
                .expect("a cancelled task is still listed");
            assert_eq!(serde_json::to_value(now).expect("serializes"), result);
            assert_eq!(now.created_at(), stored.created_at());
            assert_eq!(now.ttl(), stored.ttl());
            *slot = now.clone();
            assert_eq!(expected, after, "tasks/cancel changed more than its task");
        }
        methods::TASKS_RESULT => {
            assert_eq!(before, after, "tasks/result changed the registry");
            let payload: GetTaskPayloadResult =
                serde_json::from_value(result.clone()).expect("an object");
            let id = payload
                .task_id()
                .expect("tasks/result names its task in _meta");
            let stored = find_mine(&id);
            let Some(Outcome::Result(stored_result)) = stored.outcome() else {
                panic!("tasks/result answered a result for {stored}, which has none");
            };
            for (key, member) in stored_result {
                if key != "_meta" {
                    assert_eq!(payload.as_object().get(key), Some(member));
                }
            }
            assert!(result["_meta"].get(RELATED_TASK_META_KEY).is_some());
        }
        methods::TASKS_LIST => {
            assert_eq!(before, after, "tasks/list changed the registry");
            let from_start = match params {
                None | Some(Value::Null) => true,
                Some(params) => params.get("cursor").is_none_or(Value::is_null),
            };
            check_list(dispatcher, owner, mine, result, from_start, page_size);
        }
        other => unreachable!("{other} is handled but not a task method"),
    }
}

/// A `tasks/list` page and all pages after it: the caller's own tasks, in order, each once,
/// no page larger than the page size, `nextCursor` present exactly when more follow.
fn check_list(
    dispatcher: &Dispatcher,
    owner: &Owner,
    mine: &[AnyTask],
    first: Value,
    from_start: bool,
    page_size: usize,
) {
    let wire_mine: Vec<Value> = mine
        .iter()
        .map(|task| serde_json::to_value(task).expect("serializes"))
        .collect();
    let mut seen: Vec<Value> = Vec::new();
    let mut page = first;
    for _ in 0..=mine.len() {
        let list: ListTasksResult =
            serde_json::from_value(page.clone()).expect("a ListTasksResult");
        assert!(
            list.tasks.len() <= page_size.clamp(1, MAX_PAGE_SIZE),
            "page too large"
        );
        seen.extend(page["tasks"].as_array().expect("tasks").iter().cloned());
        let Some(cursor) = list.next_cursor else {
            let start = wire_mine
                .len()
                .checked_sub(seen.len())
                .expect("more tasks than owned");
            assert!(
                !from_start || start == 0,
                "a first page did not start at the first task"
            );
            assert_eq!(
                seen,
                wire_mine[start..],
                "pages are not the caller's tasks in order"
            );
            return;
        };
        assert!(!list.tasks.is_empty(), "an empty page with a nextCursor");
        page = dispatcher
            .dispatch(owner, methods::TASKS_LIST, Some(&json!({"cursor": cursor})))
            .expect("the registry refused its own nextCursor");
    }
    panic!("more pages than tasks");
}

/// What `augmentation` must decide, read from the spec.
#[derive(Debug, PartialEq)]
enum Expected {
    Normal,
    Task(Option<u64>),
    Refuse(i64, &'static str),
}

/// A whole, non-negative number of milliseconds below `u64::MAX` (the storage's `none`).
fn whole_millis(value: &Value) -> Option<u64> {
    let number = value.as_number()?;
    if let Some(n) = number.as_u64() {
        return (n != u64::MAX).then_some(n);
    }
    if number.is_i64() {
        return None;
    }
    let f = number.as_f64()?;
    (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
}

fn expected_augmentation(support: TaskSupport, declared: bool, params: &JsonObject) -> Expected {
    if !declared {
        return Expected::Normal;
    }
    let task = match params.get("task") {
        None | Some(Value::Null) => None,
        Some(Value::Object(task)) => match task.get("ttl") {
            None | Some(Value::Null) => Some(None),
            Some(ttl) => match whole_millis(ttl) {
                Some(ttl) => Some(Some(ttl)),
                None => return Expected::Refuse(-32602, "`task.ttl`"),
            },
        },
        Some(_) => return Expected::Refuse(-32602, "`task` must be an object"),
    };
    match (support, task) {
        (TaskSupport::Forbidden, Some(_)) => Expected::Refuse(-32601, "does not support tasks"),
        (TaskSupport::Required, None) => Expected::Refuse(-32601, "must be called as a task"),
        (_, Some(ttl)) => Expected::Task(ttl),
        (_, None) => Expected::Normal,
    }
}

/// `augmentation` on arbitrary params, then `accept` for what it makes a task.
fn augment(fixture: &Fixture, options: u8, blob: &[u8]) {
    let Ok(Value::Object(params)) = serde_json::from_slice::<Value>(blob) else {
        return;
    };
    let support = [
        TaskSupport::Forbidden,
        TaskSupport::Optional,
        TaskSupport::Required,
    ][usize::from(options >> 2) % 3];
    let declared = options & 0x20 != 0;
    let decision = augmentation(support, declared, &params);
    let expected = expected_augmentation(support, declared, &params);
    let ttl = match (&decision, &expected) {
        (Augmentation::Normal, Expected::Normal) => return,
        (Augmentation::Task { ttl }, Expected::Task(want)) if ttl == want => *ttl,
        (Augmentation::Refuse(error), Expected::Refuse(code, fragment))
            if error.code() == *code && error.to_string().contains(fragment) =>
        {
            assert!(
                error.to_string().len() <= 400,
                "the refusal echoes too much"
            );
            return;
        }
        _ => panic!(
            "augmentation({support:?}, {declared}) decided {decision:?}, expected {expected:?}"
        ),
    };
    let caller = usize::from(options & 3);
    let owner = &fixture.owners[caller];
    let before = fixture.snapshot();
    let accepted = fixture
        .dispatcher
        .accept(owner, RequestId::from(7), "tools/call", ttl);
    let after = fixture.snapshot();
    match accepted {
        Ok((handle, created)) => {
            let id = handle.detach();
            let wire = round_trip(&created);
            check_task_wire(&created.task, &wire["task"]);
            assert_eq!(created.task.id(), &id);
            assert_eq!(created.task.status(), TaskStatus::Working);
            assert_eq!(
                created.task.ttl(),
                fixture.registry().ttl_policy().effective(ttl)
            );
            assert!(
                created.task.ttl().is_some_and(|ttl| ttl <= 600_000),
                "ttl not clamped"
            );
            let mut expected = before.clone();
            expected.tasks[caller].push(created.task.clone());
            expected.len += 1;
            assert_eq!(expected, after, "accept changed more than its new task");
        }
        Err(error) => {
            assert_eq!(before, after, "a refused accept changed the registry");
            assert!(matches!(error, Error::LimitExceeded { .. }), "{error:?}");
            assert_eq!(error.code(), -32603);
            assert!(caller == 0, "only alice is at her limit, not {owner:?}");
        }
    }
}
