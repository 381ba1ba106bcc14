//! Golden JSON for every status and every message type of the 2025-11-25 tasks utility.
//!
//! The expected strings live in `tests/golden/cases.rs`, written by hand from the spec.
//! Each value here is built through the public API (real transitions, pinned timestamps),
//! serialized compactly and compared byte for byte; then the golden string is read back,
//! compared with the built value and serialized again.

use std::fmt::Debug;

use mcp_tasks::protocol::{
    CancelTaskResult, ClientTaskRequests, ClientTasksCapability, CreateTaskResult,
    ElicitationTaskRequests, GetTaskPayloadResult, GetTaskResult, ListTasksParams, ListTasksResult,
    MODEL_IMMEDIATE_RESPONSE_META_KEY, RELATED_TASK_META_KEY, RelatedTaskMetadata,
    SamplingTaskRequests, ServerTaskRequests, ServerTasksCapability, Supported, TaskIdParams,
    TaskMetadata, TaskResult, TaskStatusNotification, TaskSupport, ToolExecution,
    ToolsTaskRequests, insert_related_task, related_task, related_task_meta,
};
use mcp_tasks::{
    AnyTask, Cancelled, Change, Completed, Error, Failed, Finished, InputRequest, InputRequests,
    InputRequired, JsonObject, JsonRpcError, Outcome, Task, TaskId, TaskState, TaskStatus,
    Timestamp, Transition, Working,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[path = "golden/cases.rs"]
mod cases;
use cases::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn ts(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap_or_else(|err| panic!("{text}: {err}"))
}

/// A time on the day of the spec's examples, `hh:mm:ss` UTC.
fn at(hms: &str) -> Timestamp {
    ts(&format!("2025-11-25T{hms}Z"))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn tool_result(text: &str, is_error: bool) -> JsonObject {
    object(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
}

/// `value` serializes to exactly `golden`; `golden` reads back as a value equal to
/// `value` that serializes to `golden` again.
#[track_caller]
fn assert_golden<T>(value: &T, golden: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let json = serde_json::to_string(value).expect("serializes");
    assert_eq!(json, golden, "serialization differs from the golden string");
    let back: T = serde_json::from_str(golden)
        .unwrap_or_else(|err| panic!("golden string does not deserialize: {err}\n{golden}"));
    assert_eq!(&back, value, "golden string reads as a different value");
    assert_eq!(serde_json::to_string(&back).expect("serializes"), golden);
}

/// `input` reads as a value that serializes to `normalized`.
#[track_caller]
fn assert_reads_as<T>(input: &str, normalized: &str) -> T
where
    T: Serialize + DeserializeOwned,
{
    let value: T = serde_json::from_str(input)
        .unwrap_or_else(|err| panic!("input does not deserialize: {err}\n{input}"));
    assert_eq!(
        serde_json::to_string(&value).expect("serializes"),
        normalized
    );
    value
}

#[track_caller]
fn rejected<T: DeserializeOwned + Debug>(input: &str) -> String {
    match serde_json::from_str::<T>(input) {
        Ok(value) => panic!("accepted {input} as {value:?}"),
        Err(err) => err.to_string(),
    }
}

/// The fields a `Task` object shows on the wire.
type Wire = (
    TaskId,
    TaskStatus,
    Option<String>,
    Timestamp,
    Timestamp,
    Option<u64>,
    Option<u64>,
);

fn wire<S: TaskState>(task: &Task<S>) -> Wire {
    (
        task.id().clone(),
        task.status(),
        task.status_message().map(str::to_owned),
        task.created_at(),
        task.last_updated_at(),
        task.ttl(),
        task.poll_interval(),
    )
}

fn any_wire(task: &AnyTask) -> Wire {
    (
        task.id().clone(),
        task.status(),
        task.status_message().map(str::to_owned),
        task.created_at(),
        task.last_updated_at(),
        task.ttl(),
        task.poll_interval(),
    )
}

/// Golden check for a task. A `Task` object never carries a task's payload (input
/// requests, result, error), so what is compared after reading back is the wire fields.
#[track_caller]
fn assert_task_golden<S: TaskState>(task: &Task<S>, golden: &str) -> Task<S> {
    assert_eq!(serde_json::to_string(task).unwrap(), golden, "Task<S>");
    let any = task.clone().into_any();
    assert_eq!(serde_json::to_string(&any).unwrap(), golden, "AnyTask");

    let typed: Task<S> = serde_json::from_str(golden)
        .unwrap_or_else(|err| panic!("golden does not read as Task<{}>: {err}", S::STATUS));
    assert_eq!(wire(&typed), wire(task));
    assert_eq!(serde_json::to_string(&typed).unwrap(), golden);

    let any: AnyTask = serde_json::from_str(golden).unwrap();
    assert_eq!(any.status(), S::STATUS);
    assert_eq!(any_wire(&any), wire(task));
    assert!(any.as_task::<S>().is_some());
    assert_eq!(serde_json::to_string(&any).unwrap(), golden);
    typed
}

// ---------------------------------------------------------------------------------------
// Tasks built through real transitions
// ---------------------------------------------------------------------------------------

fn fresh() -> Task<Working> {
    Task::new(TaskId::from(ID), at("10:30:00"))
}

fn fresh_with_retention() -> Task<Working> {
    fresh()
        .with_ttl(Some(60_000))
        .with_poll_interval(Some(5_000))
}

fn spec_example() -> Task<Working> {
    let mut task = fresh_with_retention();
    task.set_status_message(
        Some("The operation is now in progress.".into()),
        at("10:40:00"),
    );
    task
}

fn confirmation() -> InputRequests {
    InputRequests::new().with(
        "confirm",
        InputRequest::elicitation(object(json!({
            "message": "Delete 3 files?",
            "requestedSchema": {"type": "object", "properties": {}}
        }))),
    )
}

fn waiting() -> Task<InputRequired> {
    fresh_with_retention().require_input(
        confirmation(),
        Change::at(at("10:35:00")).with_message("Waiting for the user to confirm the deletion."),
    )
}

fn completed() -> Task<Completed> {
    Task::new(TaskId::from(TEXT_ID), ts("2025-11-25T10:30:00.123Z"))
        .with_ttl(Some(3_600_000))
        .require_input(confirmation(), at("10:30:10"))
        .resume(at("10:30:20"))
        .complete(
            tool_result("Found 3 matching files.", false),
            Change::at(ts("2025-11-25T10:31:02.123456789Z"))
                .with_message("Found 3 matching files."),
        )
}

fn completed_from_input_required() -> Task<Completed> {
    Task::new(TaskId::from(ID2), at("10:30:00"))
        .with_poll_interval(Some(2_000))
        .require_input(confirmation(), at("10:40:00"))
        .complete(tool_result("done", false), at("10:45:00"))
}

fn failed_with_error() -> Task<Failed> {
    fresh_with_retention().fail(
        Outcome::error(-32603, "Upstream service unavailable"),
        at("10:50:00"),
    )
}

fn failed_with_is_error() -> Task<Failed> {
    match fresh_with_retention().finish(
        tool_result("File not found: report.pdf", true),
        at("10:50:00"),
    ) {
        Finished::Failed(task) => task,
        Finished::Completed(task) => panic!("isError: true completed the task: {task:?}"),
    }
}

fn cancelled() -> Task<Cancelled> {
    waiting().cancel(Change::at(at("10:36:00")).with_message("Cancelled by the user."))
}

fn cancelled_bare() -> Task<Cancelled> {
    Task::new(TaskId::from(TEXT_ID), at("10:30:00")).cancel(at("10:31:00"))
}

// ---------------------------------------------------------------------------------------
// The Task object in each status
// ---------------------------------------------------------------------------------------

#[test]
fn working_task_emits_ttl_null_when_unlimited() {
    let task = fresh();
    let back = assert_task_golden(&task, TASK_WORKING_MINIMAL);
    assert_eq!(
        back, task,
        "a working task carries nothing beyond its wire fields"
    );
    let value: Value = serde_json::from_str(&serde_json::to_string(&task).unwrap()).unwrap();
    assert_eq!(
        value.get("ttl"),
        Some(&Value::Null),
        "`ttl` must be present as null"
    );
    assert!(value.get("statusMessage").is_none());
    assert!(value.get("pollInterval").is_none());
}

#[test]
fn working_task_matches_the_spec_example() {
    let task = spec_example();
    let back = assert_task_golden(&task, TASK_WORKING_SPEC_EXAMPLE);
    assert_eq!(back, task);
    assert_eq!(task.created_at(), at("10:30:00"));
    assert_eq!(task.last_updated_at(), at("10:40:00"));
}

#[test]
fn input_required_task_via_require_input() {
    let task = waiting();
    assert_eq!(task.input_requests(), &confirmation());
    let back = assert_task_golden(&task, TASK_INPUT_REQUIRED);
    assert!(
        back.input_requests().is_empty(),
        "a Task object does not carry the input requests"
    );
}

#[test]
fn completed_task_via_input_required_and_resume_with_fractional_timestamps() {
    let task = completed();
    assert_eq!(
        task.result(),
        Some(&tool_result("Found 3 matching files.", false))
    );
    assert_eq!(
        task.last_updated_at().unix_nanos() % 1_000_000_000,
        123_456_789
    );
    let back = assert_task_golden(&task, TASK_COMPLETED);
    assert_eq!(
        back.result(),
        None,
        "a Task object does not carry the result"
    );
    assert_eq!(back.created_at(), ts("2025-11-25T10:30:00.123Z"));
    assert_eq!(back.last_updated_at(), task.last_updated_at());
}

#[test]
fn completed_task_directly_from_input_required() {
    let _ = assert_task_golden(
        &completed_from_input_required(),
        TASK_COMPLETED_FROM_INPUT_REQUIRED,
    );
}

#[test]
fn failed_task_with_an_error_outcome() {
    let task = failed_with_error();
    assert_eq!(
        task.outcome(),
        Some(&Outcome::error(-32603, "Upstream service unavailable"))
    );
    let back = assert_task_golden(&task, TASK_FAILED_WITH_ERROR);
    assert_eq!(back.outcome(), None);
}

#[test]
fn failed_task_with_an_is_error_result() {
    let task = failed_with_is_error();
    let outcome = task.outcome().expect("the failing result is kept");
    assert!(outcome.is_error_result());
    let _ = assert_task_golden(&task, TASK_FAILED_WITH_IS_ERROR);
}

#[test]
fn cancelled_task_with_and_without_reason() {
    let task = cancelled();
    let back = assert_task_golden(&task, TASK_CANCELLED);
    assert_eq!(back, task);
    let bare = cancelled_bare();
    let back = assert_task_golden(&bare, TASK_CANCELLED_BARE);
    assert_eq!(back, bare);
}

#[test]
fn status_strings_are_the_five_of_the_spec() {
    let expected = [
        (TaskStatus::Working, STATUS_WORKING),
        (TaskStatus::InputRequired, STATUS_INPUT_REQUIRED),
        (TaskStatus::Completed, STATUS_COMPLETED),
        (TaskStatus::Failed, STATUS_FAILED),
        (TaskStatus::Cancelled, STATUS_CANCELLED),
    ];
    for (status, golden) in expected {
        assert_golden(&status, golden);
        let bare = golden.trim_matches('"');
        assert_eq!(status.as_str(), bare);
        assert_eq!(status.to_string(), bare);
        assert_eq!(bare.parse::<TaskStatus>(), Ok(status));
    }
    assert_eq!(
        TaskStatus::ALL.map(|s| s.as_str()),
        [
            "working",
            "input_required",
            "completed",
            "failed",
            "cancelled"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// What a Task object must not read as
// ---------------------------------------------------------------------------------------

/// `json` (a task in status `actual`) must not read as a `Task<S>` unless `S` is `actual`,
/// and the refusal names both statuses.
fn check_typed<S: TaskState>(json: &str, actual: TaskStatus) {
    let result = serde_json::from_str::<Task<S>>(json);
    if S::STATUS == actual {
        assert!(result.is_ok(), "Task<{}> refused its own JSON", S::STATUS);
        return;
    }
    let message = result
        .expect_err("a typed task read JSON of another status")
        .to_string();
    assert!(
        message.contains(&format!("`{}`", S::STATUS)) && message.contains(&format!("`{actual}`")),
        "the error should name `{}` and `{actual}`: {message}",
        S::STATUS
    );
}

#[test]
fn typed_task_refuses_json_of_another_status() {
    let goldens = [
        (TASK_WORKING_MINIMAL, TaskStatus::Working),
        (TASK_INPUT_REQUIRED, TaskStatus::InputRequired),
        (TASK_COMPLETED, TaskStatus::Completed),
        (TASK_FAILED_WITH_ERROR, TaskStatus::Failed),
        (TASK_CANCELLED, TaskStatus::Cancelled),
    ];
    for (json, actual) in goldens {
        check_typed::<Working>(json, actual);
        check_typed::<InputRequired>(json, actual);
        check_typed::<Completed>(json, actual);
        check_typed::<Failed>(json, actual);
        check_typed::<Cancelled>(json, actual);
    }
    let message = rejected::<Task<Completed>>(TASK_WORKING_MINIMAL);
    assert!(message.contains("expected a `completed` task"), "{message}");
    assert!(message.contains("is `working`"), "{message}");
}

/// `golden` with `key` removed.
fn without(golden: &str, key: &str) -> String {
    let mut value: Value = serde_json::from_str(golden).unwrap();
    value
        .as_object_mut()
        .unwrap()
        .remove(key)
        .expect("key present");
    value.to_string()
}

/// `golden` with `key` set to `raw` (a JSON literal, inserted verbatim).
fn with_raw(golden: &str, key: &str, raw: &str) -> String {
    let needle = format!("\"{key}\":");
    let start = golden.find(&needle).expect("key present") + needle.len();
    let end = start + golden[start..].find([',', '}']).expect("a scalar member");
    format!("{}{raw}{}", &golden[..start], &golden[end..])
}

#[test]
fn missing_required_members_are_rejected() {
    for key in ["ttl", "taskId", "status", "createdAt", "lastUpdatedAt"] {
        let input = without(TASK_WORKING_SPEC_EXAMPLE, key);
        let message = rejected::<AnyTask>(&input);
        assert!(
            message.contains(&format!("missing field `{key}`")),
            "{message}"
        );
        let message = rejected::<Task<Working>>(&input);
        assert!(
            message.contains(&format!("missing field `{key}`")),
            "{message}"
        );
        let message = rejected::<GetTaskResult>(&input);
        assert!(message.contains(key), "{message}");
        rejected::<CreateTaskResult>(&format!("{{\"task\":{input}}}"));
    }
    // The optional members may go.
    for key in ["statusMessage", "pollInterval"] {
        let task: AnyTask = serde_json::from_str(&without(TASK_WORKING_SPEC_EXAMPLE, key)).unwrap();
        assert_eq!(task.status(), TaskStatus::Working);
    }
}

#[test]
fn ttl_must_be_a_non_negative_integer_or_null() {
    assert_eq!(
        with_raw(TASK_WORKING_SPEC_EXAMPLE, "ttl", "null"),
        TASK_WORKING_SPEC_EXAMPLE.replace("\"ttl\":60000", "\"ttl\":null")
    );
    for bad in [
        "-1",
        "1.5",
        "60000.5",
        "18446744073709551616",
        "1e30",
        "\"60000\"",
        "true",
        "{}",
    ] {
        let input = with_raw(TASK_WORKING_SPEC_EXAMPLE, "ttl", bad);
        let message = rejected::<AnyTask>(&input);
        assert!(!message.is_empty());
        rejected::<GetTaskResult>(&input);
        rejected::<TaskStatusNotification>(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{input}}}"#
        ));
    }
    // u64::MAX is out of range (it marks "unlimited" internally) and is refused, not
    // silently changed; the largest retention below it reads and is kept exactly.
    rejected::<AnyTask>(&with_raw(
        TASK_WORKING_SPEC_EXAMPLE,
        "ttl",
        "18446744073709551615",
    ));
    let input = with_raw(TASK_WORKING_SPEC_EXAMPLE, "ttl", "18446744073709551614");
    let task: AnyTask = serde_json::from_str(&input).unwrap();
    assert_eq!(task.ttl(), Some(u64::MAX - 1));
    assert_eq!(serde_json::to_string(&task).unwrap(), input);
}

#[test]
fn poll_interval_must_be_a_non_negative_integer() {
    for bad in ["-1", "2.5", "\"5000\"", "null"] {
        let input = with_raw(TASK_WORKING_SPEC_EXAMPLE, "pollInterval", bad);
        if bad == "null" {
            // `pollInterval` is optional: an explicit null reads as absent.
            let task: AnyTask = serde_json::from_str(&input).unwrap();
            assert_eq!(task.poll_interval(), None);
            continue;
        }
        rejected::<AnyTask>(&input);
    }
}

#[test]
fn unknown_members_are_tolerated() {
    let task: AnyTask = assert_reads_as(
        TASK_WITH_UNKNOWN_FIELDS,
        TASK_WITH_UNKNOWN_FIELDS_NORMALIZED,
    );
    assert_eq!(task.id(), &TaskId::from("task-7"));
    assert_eq!(task.ttl(), Some(30_000));
    let _: Task<Working> = assert_reads_as(
        TASK_WITH_UNKNOWN_FIELDS,
        TASK_WITH_UNKNOWN_FIELDS_NORMALIZED,
    );
}

#[test]
fn timestamps_with_offsets_read_as_utc() {
    let task: AnyTask = assert_reads_as(
        TASK_WITH_OFFSET_TIMESTAMPS,
        TASK_WITH_OFFSET_TIMESTAMPS_NORMALIZED,
    );
    assert_eq!(task.created_at(), at("10:30:00"));
    assert_eq!(task.last_updated_at(), at("10:40:00"));
    let task: AnyTask = serde_json::from_str(TASK_WITH_OFFSET_TIMESTAMPS_NORMALIZED).unwrap();
    assert_eq!(
        serde_json::to_string(&task).unwrap(),
        TASK_WITH_OFFSET_TIMESTAMPS_NORMALIZED
    );
}

#[test]
fn timestamps_that_are_not_rfc3339_are_rejected() {
    for bad in [
        "\"2025-11-25 10:30:00\"",
        "\"2025-11-25T10:30:00\"",
        "\"2025-11-25\"",
        "\"yesterday\"",
        "1764066600",
        "null",
    ] {
        let input = with_raw(TASK_WORKING_MINIMAL, "createdAt", bad);
        let message = rejected::<AnyTask>(&input);
        if bad.starts_with('"') {
            assert!(message.contains("RFC 3339"), "{message}");
        }
    }
}

#[test]
fn unknown_status_strings_are_rejected_with_a_clear_message() {
    for bad in [
        "done",
        "Working",
        "inputRequired",
        "input-required",
        "canceled",
        "",
    ] {
        let input = with_raw(TASK_WORKING_MINIMAL, "status", &format!("\"{bad}\""));
        let message = rejected::<AnyTask>(&input);
        assert!(message.contains(&format!("`{bad}`")), "{message}");
        assert!(
            message.contains("working") && message.contains("input_required"),
            "the message should list the valid statuses: {message}"
        );
        let message = rejected::<TaskStatus>(&format!("\"{bad}\""));
        assert!(message.contains(&format!("`{bad}`")), "{message}");
        let err = bad.parse::<TaskStatus>().unwrap_err();
        assert!(err.to_string().contains("unknown task status"), "{err}");
    }
}

// ---------------------------------------------------------------------------------------
// Task-augmented requests and CreateTaskResult
// ---------------------------------------------------------------------------------------

#[test]
fn task_metadata() {
    assert_golden(&TaskMetadata::default(), TASK_METADATA_EMPTY);
    assert_golden(&TaskMetadata { ttl: Some(60_000) }, TASK_METADATA_TTL);
    rejected::<TaskMetadata>(r#"{"ttl":-5}"#);
    rejected::<TaskMetadata>(r#"{"ttl":1.5}"#);
}

#[test]
fn create_task_result_nests_the_task() {
    let result = CreateTaskResult::new(spec_example());
    assert_eq!(result.model_immediate_response(), None);
    assert_golden(&result, CREATE_TASK_RESULT);
    assert_eq!(result.task.status(), TaskStatus::Working);
}

#[test]
fn create_task_result_with_a_model_immediate_response() {
    let result = CreateTaskResult::new(fresh())
        .with_model_immediate_response("The analysis has started and will take a few minutes.");
    assert_golden(&result, CREATE_TASK_RESULT_WITH_IMMEDIATE_RESPONSE);
    let back: CreateTaskResult =
        serde_json::from_str(CREATE_TASK_RESULT_WITH_IMMEDIATE_RESPONSE).unwrap();
    assert_eq!(
        back.model_immediate_response(),
        Some("The analysis has started and will take a few minutes.")
    );
    assert_eq!(
        MODEL_IMMEDIATE_RESPONSE_META_KEY,
        "io.modelcontextprotocol/model-immediate-response"
    );
}

// ---------------------------------------------------------------------------------------
// tasks/get, tasks/result, tasks/cancel, tasks/list
// ---------------------------------------------------------------------------------------

#[test]
fn task_id_params_for_get_result_and_cancel() {
    let params = TaskIdParams {
        task_id: TaskId::from(ID),
    };
    assert_golden(&params, TASK_ID_PARAMS);
    let get: mcp_tasks::protocol::GetTaskParams = serde_json::from_str(TASK_ID_PARAMS).unwrap();
    let result: mcp_tasks::protocol::GetTaskPayloadParams =
        serde_json::from_str(TASK_ID_PARAMS).unwrap();
    let cancel: mcp_tasks::protocol::CancelTaskParams =
        serde_json::from_str(TASK_ID_PARAMS).unwrap();
    assert_eq!([&get, &result, &cancel], [&params; 3]);
    rejected::<TaskIdParams>("{}");
    rejected::<TaskIdParams>(r#"{"taskId":42}"#);
}

#[test]
fn task_id_params_ignore_a_stray_task_and_the_related_task_meta() {
    let params: TaskIdParams = assert_reads_as(TASK_ID_PARAMS_WITH_NOISE, TASK_ID_PARAMS);
    assert_eq!(params.task_id, TaskId::from(ID), "the taskId param wins");
}

#[test]
fn get_task_result_puts_the_task_fields_at_the_top_level() {
    let result: GetTaskResult = TaskResult::new(waiting());
    let json = serde_json::to_string(&result).unwrap();
    assert_eq!(json, GET_TASK_RESULT);
    let back: GetTaskResult = serde_json::from_str(GET_TASK_RESULT).unwrap();
    assert_eq!(back.meta, None);
    assert_eq!(any_wire(&back.task), wire(&waiting()));
    assert_eq!(serde_json::to_string(&back).unwrap(), GET_TASK_RESULT);

    let with_meta = TaskResult {
        task: fresh().into_any(),
        meta: Some(object(json!({"com.example/served-by": "node-3"}))),
    };
    assert_golden(&with_meta, GET_TASK_RESULT_WITH_META);
}

#[test]
fn cancel_task_result_shows_the_cancelled_task() {
    let result: CancelTaskResult = TaskResult::new(cancelled());
    assert_golden(&result, CANCEL_TASK_RESULT);
    assert_eq!(result.task.status(), TaskStatus::Cancelled);
}

#[test]
fn list_tasks_params() {
    assert_golden(&ListTasksParams::default(), LIST_TASKS_PARAMS_EMPTY);
    assert_golden(
        &ListTasksParams {
            cursor: Some("eyJwYWdlIjoyfQ".into()),
            meta: None,
        },
        LIST_TASKS_PARAMS_CURSOR,
    );
    assert_golden(
        &ListTasksParams {
            cursor: Some("eyJwYWdlIjoyfQ".into()),
            meta: Some(object(json!({"progressToken": 7}))),
        },
        LIST_TASKS_PARAMS_CURSOR_META,
    );
}

#[test]
fn list_tasks_result_with_and_without_next_cursor() {
    let page = ListTasksResult {
        tasks: vec![
            spec_example().into_any(),
            completed_from_input_required().into_any(),
        ],
        next_cursor: Some("eyJwYWdlIjozfQ".into()),
        meta: None,
    };
    assert_eq!(serde_json::to_string(&page).unwrap(), LIST_TASKS_RESULT);
    let back: ListTasksResult = serde_json::from_str(LIST_TASKS_RESULT).unwrap();
    assert_eq!(
        back.tasks.iter().map(any_wire).collect::<Vec<_>>(),
        page.tasks.iter().map(any_wire).collect::<Vec<_>>()
    );
    assert_eq!(back.next_cursor, page.next_cursor);
    assert_eq!(serde_json::to_string(&back).unwrap(), LIST_TASKS_RESULT);

    let last = ListTasksResult {
        tasks: vec![cancelled_bare().into_any()],
        next_cursor: None,
        meta: None,
    };
    assert_golden(&last, LIST_TASKS_RESULT_LAST_PAGE);
    let empty = ListTasksResult {
        tasks: vec![],
        next_cursor: None,
        meta: None,
    };
    assert_golden(&empty, LIST_TASKS_RESULT_EMPTY);
    rejected::<ListTasksResult>("{}");
}

#[test]
fn payload_result_adds_the_related_task_meta() {
    let task = completed();
    let result = task
        .result()
        .expect("a completed task keeps its result")
        .clone();
    let payload = GetTaskPayloadResult::new(result, task.id());
    assert_golden(&payload, PAYLOAD_RESULT);
    assert_eq!(payload.task_id(), Some(TaskId::from(TEXT_ID)));
    assert_eq!(
        payload.as_object().get("content"),
        tool_result("Found 3 matching files.", false).get("content")
    );
}

#[test]
fn payload_result_keeps_an_existing_meta_key() {
    let result = object(json!({
        "content": [{"type": "text", "text": "Found 3 matching files."}],
        "structuredContent": {"count": 3},
        "_meta": {"com.example/trace": "abc"}
    }));
    let payload = GetTaskPayloadResult::new(result, &TaskId::from(TEXT_ID));
    assert_golden(&payload, PAYLOAD_RESULT_KEEPS_META);
    let meta = payload.as_object()["_meta"].as_object().unwrap();
    assert_eq!(meta["com.example/trace"], "abc");
}

#[test]
fn payload_result_replaces_a_stale_related_task() {
    let mut result = tool_result("Found 3 matching files.", false);
    result.insert(
        "_meta".into(),
        Value::Object(related_task_meta(&TaskId::from(ID2))),
    );
    let payload = GetTaskPayloadResult::new(result, &TaskId::from(TEXT_ID));
    assert_golden(&payload, PAYLOAD_RESULT);
}

#[test]
fn payload_result_of_an_is_error_failure_is_the_call_tool_result() {
    let task = failed_with_is_error();
    let Some(Outcome::Result(result)) = task.outcome() else {
        panic!("the failure was a result: {:?}", task.outcome());
    };
    let payload = GetTaskPayloadResult::new(result.clone(), task.id());
    assert_golden(&payload, PAYLOAD_RESULT_IS_ERROR);
    assert_eq!(payload.into_object()["isError"], true);
}

// ---------------------------------------------------------------------------------------
// notifications/tasks/status
// ---------------------------------------------------------------------------------------

fn notified_task() -> Task<Completed> {
    fresh_with_retention().complete(tool_result("ok", false), at("10:50:00"))
}

#[test]
fn status_notification_is_a_whole_json_rpc_message() {
    let notification = TaskStatusNotification::new(notified_task());
    assert_eq!(
        serde_json::to_string(&notification).unwrap(),
        STATUS_NOTIFICATION
    );
    let back: TaskStatusNotification = serde_json::from_str(STATUS_NOTIFICATION).unwrap();
    assert_eq!(back.params.meta, None);
    assert_eq!(any_wire(&back.params.task), wire(&notified_task()));
    assert_eq!(serde_json::to_string(&back).unwrap(), STATUS_NOTIFICATION);
    // Built from the wire form of the task, the notification is equal outright.
    let from_wire: AnyTask = serde_json::from_str(TASK_FAILED_WITH_ERROR).unwrap();
    let notification = TaskStatusNotification::new(from_wire);
    let json = serde_json::to_string(&notification).unwrap();
    assert_eq!(
        serde_json::from_str::<TaskStatusNotification>(&json).unwrap(),
        notification
    );
}

#[test]
fn status_notification_rejects_another_method_or_version() {
    let wrong_method =
        STATUS_NOTIFICATION.replace("notifications/tasks/status", "notifications/tasks/updated");
    let message = rejected::<TaskStatusNotification>(&wrong_method);
    assert!(message.contains("notifications/tasks/status"), "{message}");
    rejected::<TaskStatusNotification>(&STATUS_NOTIFICATION.replace("\"2.0\"", "\"1.0\""));
    rejected::<TaskStatusNotification>(&without(STATUS_NOTIFICATION, "jsonrpc"));
    rejected::<TaskStatusNotification>(&without(STATUS_NOTIFICATION, "params"));
}

// ---------------------------------------------------------------------------------------
// _meta helpers
// ---------------------------------------------------------------------------------------

#[test]
fn related_task_metadata_and_helpers() {
    let related = RelatedTaskMetadata {
        task_id: TaskId::from(ID),
    };
    assert_golden(&related, RELATED_TASK);
    assert_eq!(
        RELATED_TASK_META_KEY,
        "io.modelcontextprotocol/related-task"
    );

    let meta = related_task_meta(&TaskId::from(ID));
    assert_eq!(serde_json::to_string(&meta).unwrap(), RELATED_TASK_META);
    assert_eq!(related_task(&meta), Some(TaskId::from(ID)));

    let mut meta = object(json!({"progressToken": "p-1"}));
    assert_eq!(related_task(&meta), None);
    insert_related_task(&mut meta, &TaskId::from(ID2));
    insert_related_task(&mut meta, &TaskId::from(ID));
    assert_eq!(
        related_task(&meta),
        Some(TaskId::from(ID)),
        "the later id replaces"
    );
    assert_eq!(
        Value::Object(meta),
        json!({
            "progressToken": "p-1",
            "io.modelcontextprotocol/related-task": {"taskId": ID}
        })
    );

    let malformed = object(json!({"io.modelcontextprotocol/related-task": {"taskId": 7}}));
    assert_eq!(related_task(&malformed), None);
    rejected::<RelatedTaskMetadata>("{}");
}

// ---------------------------------------------------------------------------------------
// Capabilities and execution.taskSupport
// ---------------------------------------------------------------------------------------

#[test]
fn server_capability_all() {
    let all = ServerTasksCapability::all();
    assert!(all.tools_call());
    assert_golden(&all, SERVER_TASKS_ALL);
    let by_hand = ServerTasksCapability {
        list: Some(Supported),
        cancel: Some(Supported),
        requests: Some(ServerTaskRequests {
            tools: Some(ToolsTaskRequests {
                call: Some(Supported),
            }),
        }),
    };
    assert_eq!(by_hand, all);
    let none = ServerTasksCapability::default();
    assert!(!none.tools_call());
    assert_golden(&none, SERVER_TASKS_EMPTY);
}

#[test]
fn capability_leaves_with_members_read_as_present() {
    let caps: ServerTasksCapability = assert_reads_as(
        SERVER_TASKS_LEAVES_WITH_MEMBERS,
        SERVER_TASKS_LEAVES_WITH_MEMBERS_NORMALIZED,
    );
    assert_eq!(caps.list, Some(Supported));
    assert_eq!(caps.cancel, None);
    assert!(caps.tools_call());
    // Leaves are objects, not booleans.
    rejected::<ServerTasksCapability>(r#"{"list":true}"#);
}

#[test]
fn capability_keys_of_later_revisions_are_tolerated() {
    let server: ServerTasksCapability = assert_reads_as(
        r#"{"requests":{"tools":{"call":{}},"prompts":{"get":{}}},"x-vendor":{}}"#,
        r#"{"requests":{"tools":{"call":{}}}}"#,
    );
    assert!(server.tools_call());
    let client: ClientTasksCapability = assert_reads_as(
        r#"{"requests":{"roots":{"list":{}},"elicitation":{"create":{},"x":{}}}}"#,
        CLIENT_TASKS_ELICITATION_ONLY,
    );
    assert!(client.list.is_none());
}

#[test]
fn client_capability_with_sampling_and_elicitation() {
    let all = ClientTasksCapability {
        list: Some(Supported),
        cancel: Some(Supported),
        requests: Some(ClientTaskRequests {
            sampling: Some(SamplingTaskRequests {
                create_message: Some(Supported),
            }),
            elicitation: Some(ElicitationTaskRequests {
                create: Some(Supported),
            }),
        }),
    };
    assert_golden(&all, CLIENT_TASKS_ALL);
    let elicitation_only = ClientTasksCapability {
        requests: Some(ClientTaskRequests {
            sampling: None,
            elicitation: Some(ElicitationTaskRequests {
                create: Some(Supported),
            }),
        }),
        ..ClientTasksCapability::default()
    };
    assert_golden(&elicitation_only, CLIENT_TASKS_ELICITATION_ONLY);
}

#[test]
fn tool_execution_task_support() {
    let absent = ToolExecution::default();
    assert_eq!(
        absent.task_support(),
        TaskSupport::Forbidden,
        "absent means forbidden"
    );
    assert_golden(&absent, TOOL_EXECUTION_ABSENT);
    assert_eq!(TaskSupport::default(), TaskSupport::Forbidden);

    for (support, golden) in [
        (TaskSupport::Forbidden, TOOL_EXECUTION_FORBIDDEN),
        (TaskSupport::Optional, TOOL_EXECUTION_OPTIONAL),
        (TaskSupport::Required, TOOL_EXECUTION_REQUIRED),
    ] {
        let execution = ToolExecution::new(support);
        assert_eq!(execution.task_support(), support);
        assert_golden(&execution, golden);
    }
    assert_eq!(
        serde_json::to_string(&TaskSupport::Optional).unwrap(),
        r#""optional""#
    );
    rejected::<ToolExecution>(r#"{"taskSupport":"always"}"#);
    rejected::<ToolExecution>(r#"{"taskSupport":"Optional"}"#);
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

#[test]
fn jsonrpc_error_objects() {
    assert_golden(
        &JsonRpcError::new(-32602, "Failed to retrieve task: Task not found"),
        JSONRPC_ERROR,
    );
    let with_data = JsonRpcError::new(
        -32602,
        "Cannot cancel task: already in terminal status 'completed'",
    )
    .with_data(json!({"taskId": ID, "status": "completed"}));
    assert_golden(&with_data, JSONRPC_ERROR_WITH_DATA);
}

/// `error` as JSON, with its `message` taken out and returned.
fn split_message(error: &JsonRpcError) -> (Value, String) {
    let mut value = serde_json::to_value(error).unwrap();
    let message = value
        .as_object_mut()
        .unwrap()
        .remove("message")
        .and_then(|m| m.as_str().map(str::to_owned))
        .expect("a message string");
    (value, message)
}

#[test]
fn already_terminal_error_names_the_task_and_its_status() {
    let error = Error::AlreadyTerminal {
        task: Box::new(notified_task().into_any()),
    };
    assert_eq!(error.code(), -32602);
    let rpc = error.to_jsonrpc();
    let (value, message) = split_message(&rpc);
    let data: Value = serde_json::from_str(ALREADY_TERMINAL_DATA).unwrap();
    assert_eq!(value, json!({"code": -32602, "data": data}));
    assert_eq!(
        serde_json::to_string(rpc.data.as_ref().unwrap()).unwrap(),
        ALREADY_TERMINAL_DATA
    );
    assert!(
        message.contains(ID) && message.contains("completed"),
        "{message}"
    );
    assert!(message.contains("cancel"), "{message}");
    assert_eq!(JsonRpcError::from(error), rpc);
}

#[test]
fn task_cancelled_error_names_the_task_and_its_status() {
    let cancelled = cancelled_bare().into_any();
    let refused = cancelled
        .apply(
            Transition::Complete(tool_result("late", false)),
            at("10:32:00"),
        )
        .expect_err("a cancelled task never completes");
    let error = Error::from(refused);
    assert!(
        matches!(&error, Error::TaskCancelled { task_id } if task_id == TEXT_ID),
        "{error:?}"
    );
    let rpc = error.to_jsonrpc();
    let (value, message) = split_message(&rpc);
    let data: Value = serde_json::from_str(TASK_CANCELLED_DATA).unwrap();
    assert_eq!(value, json!({"code": -32602, "data": data}));
    assert_eq!(
        serde_json::to_string(rpc.data.as_ref().unwrap()).unwrap(),
        TASK_CANCELLED_DATA
    );
    assert!(
        message.contains(TEXT_ID) && message.contains("cancelled"),
        "{message}"
    );
}
