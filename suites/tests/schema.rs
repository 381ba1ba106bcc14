//! Two independent cross-checks of the golden JSON in `tests/golden/cases.rs`:
//!
//! 1. every golden message validates against the official JSON schema of MCP 2025-11-25
//!    (`schema/mcp-schema-2025-11-25.json` in the repository), each against its own
//!    `$defs` entry, and the validator is shown to be live by messages it must reject;
//! 2. every golden message deserializes into the types of `rust-mcp-schema` 2.0.0 (feature
//!    `2025_11_25`), generated independently from the same schema, and re-serializing their
//!    value gives the same JSON.
//!
//! Without the schema file the first group fails: a schema check never passes unchecked.

use mcp_tasks::protocol::{
    CreateTaskResult, GetTaskResult, ListTasksResult, TaskStatusNotification,
};
use mcp_tasks::{AnyTask, Error, Task, TaskId, TaskStatus, Timestamp, Transition};
use rust_mcp_schema::mcp_2025_11_25 as theirs;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

#[path = "golden/cases.rs"]
mod cases;
use cases::{ALL, Golden, Kind};

// ---------------------------------------------------------------------------------------
// The official schema
// ---------------------------------------------------------------------------------------

/// The errors of `instance` against `$defs/<def>` of the official 2025-11-25 schema (a
/// missing schema fails the test).
fn errors(def: &str, instance: &Value) -> Vec<String> {
    mcp_tasks_suites::errors(mcp_tasks_suites::MCP_2025_11_25, def, instance)
}

#[track_caller]
fn assert_valid(def: &str, instance: &Value, what: &str) {
    let errors = errors(def, instance);
    assert!(
        errors.is_empty(),
        "{what} is not a valid {def}:\n  {}\n{instance}",
        errors.join("\n  ")
    );
}

#[track_caller]
fn assert_invalid(def: &str, instance: &Value, what: &str) {
    assert!(
        !errors(def, instance).is_empty(),
        "{what} should not be a valid {def}: {instance}"
    );
}

fn request(method: &str, params: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// Every `$defs` entry a golden of this kind must satisfy, with the message around it.
fn schema_checks(kind: Kind, value: &Value) -> Vec<(&'static str, Value)> {
    let response = |result: &Value| json!({"jsonrpc": "2.0", "id": 1, "result": result});
    match kind {
        Kind::Task => vec![("Task", value.clone())],
        Kind::TaskStatus => vec![("TaskStatus", value.clone())],
        Kind::TaskMetadata => vec![
            ("TaskMetadata", value.clone()),
            (
                "CallToolRequest",
                request("tools/call", &json!({"name": "analyze", "task": value})),
            ),
            ("TaskAugmentedRequestParams", json!({"task": value})),
        ],
        Kind::CreateTaskResult => vec![
            ("CreateTaskResult", value.clone()),
            ("JSONRPCResultResponse", response(value)),
        ],
        Kind::TaskIdParams => vec![
            ("GetTaskRequest", request("tasks/get", value)),
            ("GetTaskPayloadRequest", request("tasks/result", value)),
            ("CancelTaskRequest", request("tasks/cancel", value)),
        ],
        Kind::GetTaskResult => vec![
            ("GetTaskResult", value.clone()),
            ("Task", value.clone()),
            ("JSONRPCResultResponse", response(value)),
        ],
        Kind::CancelTaskResult => {
            vec![("CancelTaskResult", value.clone()), ("Task", value.clone())]
        }
        Kind::ListTasksParams => vec![
            ("PaginatedRequestParams", value.clone()),
            ("ListTasksRequest", request("tasks/list", value)),
        ],
        Kind::ListTasksResult => vec![("ListTasksResult", value.clone())],
        Kind::GetTaskPayloadResult => vec![
            ("GetTaskPayloadResult", value.clone()),
            ("CallToolResult", value.clone()),
            (
                "RelatedTaskMetadata",
                value["_meta"]["io.modelcontextprotocol/related-task"].clone(),
            ),
        ],
        Kind::TaskStatusNotification => vec![
            ("TaskStatusNotification", value.clone()),
            ("TaskStatusNotificationParams", value["params"].clone()),
            ("JSONRPCNotification", value.clone()),
            ("JSONRPCMessage", value.clone()),
        ],
        Kind::RelatedTaskMetadata => vec![("RelatedTaskMetadata", value.clone())],
        Kind::ServerTasks => vec![
            ("ServerCapabilities/properties/tasks", value.clone()),
            ("ServerCapabilities", json!({"tasks": value})),
        ],
        Kind::ClientTasks => vec![
            ("ClientCapabilities/properties/tasks", value.clone()),
            ("ClientCapabilities", json!({"tasks": value})),
        ],
        Kind::ToolExecution => vec![
            ("ToolExecution", value.clone()),
            (
                "Tool",
                json!({"name": "analyze", "inputSchema": {"type": "object"}, "execution": value}),
            ),
        ],
        Kind::Error => vec![
            ("Error", value.clone()),
            (
                "JSONRPCErrorResponse",
                json!({"jsonrpc": "2.0", "id": 1, "error": value}),
            ),
        ],
    }
}

fn parse(golden: &Golden) -> Value {
    serde_json::from_str(golden.json)
        .unwrap_or_else(|err| panic!("{} is not JSON: {err}", golden.name))
}

#[test]
fn every_golden_validates_against_its_schema_definition() {
    let mut checked = 0;
    for golden in ALL {
        let value = parse(golden);
        for (def, instance) in schema_checks(golden.kind, &value) {
            assert_valid(def, &instance, golden.name);
            checked += 1;
        }
    }
    assert!(checked > ALL.len(), "{checked} checks");
}

#[test]
fn the_schema_in_use_is_the_fixed_one_that_accepts_ttl_null() {
    let task: Value = serde_json::from_str(cases::TASK_WORKING_MINIMAL).unwrap();
    assert_eq!(task["ttl"], Value::Null);
    assert_valid("Task", &task, "a task with ttl null");
}

/// `TASK_WORKING_SPEC_EXAMPLE` with `edit` applied.
fn task_with(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut value: Value = serde_json::from_str(cases::TASK_WORKING_SPEC_EXAMPLE).unwrap();
    edit(value.as_object_mut().unwrap());
    value
}

#[test]
fn the_validator_is_live_and_agrees_with_our_parser_on_broken_tasks() {
    let broken = [
        ("no ttl", task_with(|t| drop(t.remove("ttl")))),
        ("no taskId", task_with(|t| drop(t.remove("taskId")))),
        ("no status", task_with(|t| drop(t.remove("status")))),
        ("no createdAt", task_with(|t| drop(t.remove("createdAt")))),
        (
            "no lastUpdatedAt",
            task_with(|t| drop(t.remove("lastUpdatedAt"))),
        ),
        (
            "ttl a string",
            task_with(|t| drop(t.insert("ttl".into(), json!("60000")))),
        ),
        (
            "ttl fractional",
            task_with(|t| drop(t.insert("ttl".into(), json!(1.5)))),
        ),
        (
            "pollInterval fractional",
            task_with(|t| drop(t.insert("pollInterval".into(), json!(2.5)))),
        ),
        (
            "status unknown",
            task_with(|t| drop(t.insert("status".into(), json!("done")))),
        ),
        (
            "status camelCase",
            task_with(|t| drop(t.insert("status".into(), json!("inputRequired")))),
        ),
        (
            "taskId a number",
            task_with(|t| drop(t.insert("taskId".into(), json!(42)))),
        ),
        (
            "statusMessage a number",
            task_with(|t| drop(t.insert("statusMessage".into(), json!(1)))),
        ),
    ];
    for (what, task) in broken {
        assert_invalid("Task", &task, what);
        assert!(
            serde_json::from_value::<AnyTask>(task.clone()).is_err(),
            "the schema rejects a task with {what}, so must we: {task}"
        );
    }
}

#[test]
fn the_validator_rejects_broken_messages() {
    let value = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let cases = [
        (
            "CreateTaskResult",
            json!({"_meta": {}}),
            "a CreateTaskResult without task",
        ),
        (
            "CreateTaskResult",
            json!({"task": task_with(|t| drop(t.remove("ttl")))}),
            "a CreateTaskResult whose task has no ttl",
        ),
        (
            "GetTaskRequest",
            request("tasks/get", &json!({})),
            "tasks/get without taskId",
        ),
        (
            "GetTaskRequest",
            request("tasks/list", &value(cases::TASK_ID_PARAMS)),
            "tasks/get under another method",
        ),
        (
            "ListTasksResult",
            json!({"nextCursor": "x"}),
            "a list without tasks",
        ),
        (
            "ListTasksResult",
            json!({"tasks": [{"taskId": "x"}]}),
            "a list of partial tasks",
        ),
        (
            "TaskStatusNotification",
            value(
                &cases::STATUS_NOTIFICATION
                    .replace("notifications/tasks/status", "notifications/tasks/updated"),
            ),
            "a notification with another method",
        ),
        (
            "TaskStatusNotification",
            json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {"taskId": "x"}}),
            "a notification without a full task",
        ),
        (
            "RelatedTaskMetadata",
            json!({}),
            "related-task without taskId",
        ),
        (
            "ToolExecution",
            json!({"taskSupport": "always"}),
            "an unknown taskSupport",
        ),
        (
            "ServerCapabilities",
            json!({"tasks": {"list": true}}),
            "a boolean capability leaf",
        ),
        (
            "ClientCapabilities",
            json!({"tasks": {"requests": {"sampling": {"createMessage": true}}}}),
            "a boolean capability leaf",
        ),
        ("TaskMetadata", json!({"ttl": "1m"}), "a string ttl"),
        ("Error", json!({"message": "x"}), "an error without code"),
        (
            "GetTaskPayloadResult",
            json!({"_meta": 1}),
            "a non-object _meta",
        ),
    ];
    for (def, instance, what) in cases {
        assert_invalid(def, &instance, what);
    }
}

#[test]
fn errors_built_by_the_crate_are_valid_error_objects() {
    let t0 = Timestamp::parse("2025-11-25T10:30:00Z").unwrap();
    let done = Task::new(TaskId::from(cases::ID), t0).cancel(t0).into_any();
    let refused = done
        .clone()
        .apply(Transition::Cancel, t0)
        .expect_err("a cancelled task cannot be cancelled");
    let errors = [
        Error::TaskNotFound {
            task_id: cases::ID.into(),
        },
        Error::AlreadyTerminal {
            task: Box::new(done),
        },
        Error::from(refused),
        Error::InvalidCursor {
            reason: "not issued by this receiver",
        },
        Error::TaskRequired {
            tool: "analyze".into(),
        },
        Error::TaskNotSupported {
            tool: "analyze".into(),
        },
        Error::TaskAugmentationRequired {
            method: "tools/call".into(),
        },
        Error::Internal("boom".into()),
    ];
    for error in errors {
        let value = serde_json::to_value(error.to_jsonrpc()).unwrap();
        for (def, instance) in schema_checks(Kind::Error, &value) {
            assert_valid(def, &instance, &format!("{error:?}"));
        }
    }
}

#[test]
fn messages_built_by_the_crate_validate_for_every_status() {
    let t = |s: &str| Timestamp::parse(s).unwrap();
    let working =
        Task::new(TaskId::random(), t("2025-11-25T10:30:00.5Z")).with_poll_interval(Some(1_000));
    let waiting = working
        .clone()
        .require_input(mcp_tasks::InputRequests::new(), t("2025-11-25T10:31:00Z"));
    let tasks: Vec<AnyTask> = vec![
        working.clone().into_any(),
        waiting.clone().into_any(),
        waiting.clone().resume(t("2025-11-25T10:32:00Z")).into_any(),
        working
            .clone()
            .complete(Default::default(), t("2025-11-25T10:33:00Z"))
            .into_any(),
        working
            .clone()
            .fail(
                mcp_tasks::Outcome::error(-32603, "x"),
                t("2025-11-25T10:33:00Z"),
            )
            .into_any(),
        waiting.cancel(t("2025-11-25T10:33:00Z")).into_any(),
    ];
    for task in &tasks {
        let what = format!("{task}");
        let value = serde_json::to_value(task).unwrap();
        assert_valid("Task", &value, &what);
        // A CreateTaskResult only ever announces a working task; the schema would take
        // any status, so check the struct form with each.
        let created = serde_json::to_value(CreateTaskResult {
            task: task.clone(),
            meta: None,
        })
        .unwrap();
        assert_valid("CreateTaskResult", &created, &what);
        let get = serde_json::to_value(GetTaskResult::new(task.clone())).unwrap();
        assert_valid("GetTaskResult", &get, &what);
        let note = serde_json::to_value(TaskStatusNotification::new(task.clone())).unwrap();
        assert_valid("TaskStatusNotification", &note, &what);
    }
    let list = ListTasksResult {
        tasks,
        next_cursor: Some("c".into()),
        meta: None,
    };
    assert_valid(
        "ListTasksResult",
        &serde_json::to_value(list).unwrap(),
        "a list",
    );
}

// ---------------------------------------------------------------------------------------
// rust-mcp-schema 2.0.0
// ---------------------------------------------------------------------------------------

/// `json` read as their `T` and written back.
fn through<T: DeserializeOwned + Serialize>(golden: &Golden) -> Value {
    let value: T = serde_json::from_str(golden.json).unwrap_or_else(|err| {
        panic!(
            "{} does not read as rust-mcp-schema's {}: {err}",
            golden.name,
            std::any::type_name::<T>()
        )
    });
    serde_json::to_value(value).unwrap()
}

/// Every rust-mcp-schema type a golden of this kind must read as, written back.
fn their_round_trips(golden: &Golden) -> Vec<Value> {
    match golden.kind {
        Kind::Task => vec![through::<theirs::Task>(golden)],
        Kind::TaskStatus => vec![through::<theirs::TaskStatus>(golden)],
        Kind::TaskMetadata => vec![through::<theirs::TaskMetadata>(golden)],
        Kind::CreateTaskResult => vec![through::<theirs::CreateTaskResult>(golden)],
        Kind::TaskIdParams => vec![
            through::<theirs::GetTaskParams>(golden),
            through::<theirs::GetTaskPayloadParams>(golden),
            through::<theirs::CancelTaskParams>(golden),
        ],
        Kind::GetTaskResult => vec![through::<theirs::GetTaskResult>(golden)],
        Kind::CancelTaskResult => vec![through::<theirs::CancelTaskResult>(golden)],
        Kind::ListTasksParams => vec![through::<theirs::PaginatedRequestParams>(golden)],
        Kind::ListTasksResult => vec![through::<theirs::ListTasksResult>(golden)],
        Kind::GetTaskPayloadResult => vec![
            through::<theirs::GetTaskPayloadResult>(golden),
            through::<theirs::CallToolResult>(golden),
        ],
        Kind::TaskStatusNotification => vec![through::<theirs::TaskStatusNotification>(golden)],
        Kind::RelatedTaskMetadata => vec![through::<theirs::RelatedTaskMetadata>(golden)],
        Kind::ServerTasks => vec![through::<theirs::ServerTasks>(golden)],
        Kind::ClientTasks => vec![through::<theirs::ClientTasks>(golden)],
        Kind::ToolExecution => vec![through::<theirs::ToolExecution>(golden)],
        Kind::Error => vec![through::<theirs::RpcError>(golden)],
    }
}

/// rust-mcp-schema 2.0.0 declares `Task.ttl` and `TaskStatusNotificationParams.ttl` as
/// `Option<Option<i64>>` with `#[serde(default, skip_serializing_if = "Option::is_none")]`:
/// `"ttl": null` reads as the outer `None` and is then left out when written, which the
/// schema forbids (`ttl` is required). Their `GetTaskResult`/`CancelTaskResult` keep it.
/// Where that quirk applies, the missing `ttl` is put back before comparing.
fn restore_dropped_ttl(kind: Kind, ours: &Value, theirs: &mut Value) {
    fn restore(ours: &Value, theirs: &mut Value) {
        if let (Some(ours), Some(theirs)) = (ours.as_object(), theirs.as_object_mut())
            && ours.get("ttl") == Some(&Value::Null)
            && !theirs.contains_key("ttl")
        {
            theirs.insert("ttl".into(), Value::Null);
        }
    }
    match kind {
        Kind::Task => restore(ours, theirs),
        Kind::CreateTaskResult => restore(&ours["task"], &mut theirs["task"]),
        Kind::TaskStatusNotification => restore(&ours["params"], &mut theirs["params"]),
        Kind::ListTasksResult => {
            if let (Some(ours), Some(theirs)) =
                (ours["tasks"].as_array(), theirs["tasks"].as_array_mut())
            {
                for (ours, theirs) in ours.iter().zip(theirs) {
                    restore(ours, theirs);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn every_golden_reads_as_rust_mcp_schema_and_writes_back_the_same() {
    for golden in ALL {
        let ours = parse(golden);
        for mut written in their_round_trips(golden) {
            if !golden.canonical {
                // An input with members we drop on purpose: reading is what matters.
                continue;
            }
            restore_dropped_ttl(golden.kind, &ours, &mut written);
            assert_eq!(
                written, ours,
                "{}: rust-mcp-schema writes back different JSON",
                golden.name
            );
        }
    }
}

#[test]
fn rust_mcp_schema_reads_status_and_ttl_like_we_do() {
    let task: theirs::Task = serde_json::from_str(cases::TASK_WORKING_SPEC_EXAMPLE).unwrap();
    assert_eq!(task.status, theirs::TaskStatus::Working);
    assert_eq!(task.ttl, Some(Some(60_000)));
    assert_eq!(task.poll_interval, Some(5_000));
    let task: theirs::Task = serde_json::from_str(cases::TASK_INPUT_REQUIRED).unwrap();
    assert_eq!(task.status, theirs::TaskStatus::InputRequired);

    let get: theirs::GetTaskResult = serde_json::from_str(cases::TASK_WORKING_MINIMAL).unwrap();
    assert_eq!(get.ttl, None, "ttl null is unlimited");
    assert_eq!(get.task_id, cases::ID);

    let execution: theirs::ToolExecution =
        serde_json::from_str(cases::TOOL_EXECUTION_ABSENT).unwrap();
    assert!(execution.task_support.is_none());
    let execution: theirs::ToolExecution =
        serde_json::from_str(cases::TOOL_EXECUTION_REQUIRED).unwrap();
    assert_eq!(
        execution.task_support,
        Some(theirs::ToolExecutionTaskSupport::Required)
    );

    let caps: theirs::ServerTasks =
        serde_json::from_str(cases::SERVER_TASKS_LEAVES_WITH_MEMBERS).unwrap();
    assert!(caps.list.is_some() && caps.cancel.is_none());
    assert!(
        caps.requests
            .and_then(|r| r.tools)
            .and_then(|t| t.call)
            .is_some()
    );
}

#[test]
fn messages_written_by_rust_mcp_schema_read_as_ours() {
    let their_task = theirs::Task {
        created_at: "2025-11-25T10:30:00Z".into(),
        last_updated_at: "2025-11-25T10:40:00Z".into(),
        poll_interval: Some(5_000),
        status: theirs::TaskStatus::InputRequired,
        status_message: Some("Need a decision.".into()),
        task_id: cases::ID2.into(),
        ttl: Some(Some(60_000)),
    };
    let created = theirs::CreateTaskResult {
        meta: None,
        task: their_task.clone(),
    };
    let ours: CreateTaskResult =
        serde_json::from_value(serde_json::to_value(&created).unwrap()).unwrap();
    assert_eq!(ours.task.status(), TaskStatus::InputRequired);
    assert_eq!(ours.task.id(), &TaskId::from(cases::ID2));
    assert_eq!(ours.task.ttl(), Some(60_000));
    assert_eq!(ours.task.status_message(), Some("Need a decision."));

    let list = theirs::ListTasksResult {
        meta: None,
        next_cursor: None,
        tasks: vec![theirs::Task {
            status: theirs::TaskStatus::Cancelled,
            ..their_task
        }],
    };
    let ours: ListTasksResult =
        serde_json::from_value(serde_json::to_value(&list).unwrap()).unwrap();
    assert_eq!(ours.tasks[0].status(), TaskStatus::Cancelled);
    assert_eq!(ours.next_cursor, None);
}
