//! The tasks extension dialect (`io.modelcontextprotocol/tasks`, MCP 2026-07-28): exact
//! wire shapes, validation against its official schema, its dispatcher, and tasks shared
//! with the 2025-11-25 dialect.
//!
//! The schema is read from the repository's `schema/ext-tasks-schema.json`; without it the
//! schema checks fail.

use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::ext::{
    self, Acknowledgement, CreateTaskResult, DetailedTask, ExtDispatcher, GetTaskResult,
    TaskNotification, TasksExtensionCapability,
};
use mcp_tasks::protocol::Dispatcher;
use mcp_tasks::{
    AnyTask, InputRequest, InputRequests, JsonObject, Limits, ManualClock, Outcome, Owner, Task,
    TaskId, TaskRegistry, TaskRequest, TaskStatus, Timestamp, TtlPolicy,
};
use serde_json::{Value, json};

/// Checks `instance` against `$defs/<def>` of the extension's schema (a missing schema
/// fails the test): valid or not, as `valid` says.
#[track_caller]
fn check(def: &str, instance: &Value, valid: bool) {
    let errors = mcp_tasks_suites::errors(mcp_tasks_suites::EXT_TASKS, def, instance);
    assert_eq!(errors.is_empty(), valid, "{def} {instance}: {errors:?}");
}

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn t(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn working() -> Task<mcp_tasks::Working> {
    Task::new(
        TaskId::from("786512e2-9e0d-44bd-8f29-789f320fe840"),
        t("2026-11-22T08:00:00Z"),
    )
    .with_ttl(Some(300_000))
    .with_poll_interval(Some(1_000))
}

fn elicit() -> InputRequest {
    InputRequest::elicitation(obj(json!({
        "mode": "form",
        "message": "Overwrite page 3?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    })))
}

const BASE: &str = r#""createdAt":"2026-11-22T08:00:00Z","lastUpdatedAt":"2026-11-22T08:00:02Z""#;

#[test]
fn create_task_result_is_flat_with_result_type_task() {
    let text = serde_json::to_string(&CreateTaskResult::new(&working())).unwrap();
    assert_eq!(
        text,
        r#"{"resultType":"task","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","createdAt":"2026-11-22T08:00:00Z","lastUpdatedAt":"2026-11-22T08:00:00Z","ttlMs":300000,"pollIntervalMs":1000}"#
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    check("CreateTaskResult", &value, true);
    for forbidden in [
        "ttl",
        "pollInterval",
        "task",
        "result",
        "error",
        "inputRequests",
    ] {
        assert!(
            value.get(forbidden).is_none(),
            "{forbidden} must not appear"
        );
    }
    let read: CreateTaskResult = serde_json::from_str(&text).unwrap();
    assert_eq!(read.task.status, TaskStatus::Working);
    // A tasks/get body is not a CreateTaskResult.
    let get = serde_json::to_string(&GetTaskResult::new(&working().into_any())).unwrap();
    assert!(serde_json::from_str::<CreateTaskResult>(&get).is_err());
}

#[test]
fn get_task_result_inlines_the_payload_of_each_status() {
    let at = t("2026-11-22T08:00:02Z");
    let id = r#""taskId":"786512e2-9e0d-44bd-8f29-789f320fe840""#;
    let cases: Vec<(AnyTask, String)> = vec![
        (
            {
                let mut task = working();
                task.set_status_message(None, at);
                task.into_any()
            },
            format!(
                r#"{{"resultType":"complete",{id},"status":"working",{BASE},"ttlMs":300000,"pollIntervalMs":1000}}"#
            ),
        ),
        (
            working()
                .require_input(InputRequests::new().with("confirm-1", elicit()), at)
                .into_any(),
            format!(
                r#"{{"resultType":"complete",{id},"status":"input_required",{BASE},"ttlMs":300000,"pollIntervalMs":1000,"inputRequests":{{"confirm-1":{{"method":"elicitation/create","params":{{"message":"Overwrite page 3?","mode":"form","requestedSchema":{{"properties":{{"ok":{{"type":"boolean"}}}},"required":["ok"],"type":"object"}}}}}}}}}}"#
            ),
        ),
        (
            working()
                .complete(obj(json!({"content": []})), at)
                .into_any(),
            format!(
                r#"{{"resultType":"complete",{id},"status":"completed",{BASE},"ttlMs":300000,"pollIntervalMs":1000,"result":{{"content":[],"resultType":"complete"}}}}"#
            ),
        ),
        (
            // A tool error is `failed` in 2025-11-25 but `completed` here, result inlined.
            working()
                .fail(
                    Outcome::Result(obj(json!({"content": [], "isError": true}))),
                    mcp_tasks::Change::at(at).with_message("no"),
                )
                .into_any(),
            format!(
                r#"{{"resultType":"complete",{id},"status":"completed","statusMessage":"no",{BASE},"ttlMs":300000,"pollIntervalMs":1000,"result":{{"content":[],"isError":true,"resultType":"complete"}}}}"#
            ),
        ),
        (
            working()
                .fail(Outcome::error(-32603, "disk full"), at)
                .into_any(),
            format!(
                r#"{{"resultType":"complete",{id},"status":"failed","statusMessage":"disk full",{BASE},"ttlMs":300000,"pollIntervalMs":1000,"error":{{"code":-32603,"message":"disk full"}}}}"#
            ),
        ),
        (
            working().with_ttl(None).cancel(at).into_any(),
            format!(
                r#"{{"resultType":"complete",{id},"status":"cancelled",{BASE},"ttlMs":null,"pollIntervalMs":1000}}"#
            ),
        ),
    ];
    for (task, expected) in cases {
        let text = serde_json::to_string(&GetTaskResult::new(&task)).unwrap();
        assert_eq!(text, expected);
        let value: Value = serde_json::from_str(&text).unwrap();
        check("GetTaskResult", &value, true);
        let note = serde_json::to_value(TaskNotification::new(&task)).unwrap();
        check("TaskStatusNotification", &note, true);
        assert!(
            note["params"].get("resultType").is_none(),
            "a notification is not a result"
        );
        // And back into the core.
        let read: GetTaskResult = serde_json::from_str(&text).unwrap();
        let back = AnyTask::try_from(read.task).unwrap();
        assert_eq!(back.status(), task.status(), "{expected}");
        assert_eq!(back.outcome(), task.outcome());
        assert_eq!(back.last_updated_at(), task.last_updated_at());
    }
}

#[test]
fn a_detailed_task_without_its_payload_is_refused() {
    for (status, extra) in [("completed", ""), ("failed", ""), ("input_required", "")] {
        let text = format!(
            r#"{{"taskId":"t","status":"{status}","createdAt":"2026-11-22T08:00:00Z","lastUpdatedAt":"2026-11-22T08:00:00Z","ttlMs":null{extra}}}"#
        );
        let detailed: DetailedTask = serde_json::from_str(&text).unwrap();
        let err = AnyTask::try_from(detailed).unwrap_err();
        assert!(err.to_string().contains(status), "{err}");
        check("DetailedTask", &serde_json::from_str(&text).unwrap(), false);
    }
    // ttlMs must be present (null allowed), as in the schema.
    let missing = r#"{"taskId":"t","status":"working","createdAt":"2026-11-22T08:00:00Z","lastUpdatedAt":"2026-11-22T08:00:00Z"}"#;
    assert!(serde_json::from_str::<DetailedTask>(missing).is_err());
}

#[test]
fn acknowledgements_and_the_capability_are_exact() {
    let ack = serde_json::to_value(Acknowledgement::default()).unwrap();
    assert_eq!(ack, json!({"resultType": "complete"}));
    check("UpdateTaskResult", &ack, true);
    check("CancelTaskResult", &ack, true);
    let capability = serde_json::to_value(TasksExtensionCapability).unwrap();
    assert_eq!(capability.to_string(), "{}");
    check("TasksExtensionCapability", &capability, true);
    check("TasksExtensionCapability", &json!({"list": {}}), false);
    let error = ext::missing_capability("needs the extension");
    assert_eq!(error.code, -32021);
    assert_eq!(
        error.data.unwrap(),
        json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
    );
}

#[test]
fn ttl_beyond_javascript_safe_integers_is_clamped_on_the_wire() {
    let task = working().with_ttl(Some(u64::MAX / 2)).into_any();
    let value = serde_json::to_value(GetTaskResult::new(&task)).unwrap();
    assert_eq!(value["ttlMs"], json!(9_007_199_254_740_991_u64));
    check("GetTaskResult", &value, true);
}

fn declared(task_id: &str) -> Value {
    json!({
        "taskId": task_id,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        }
    })
}

fn setup() -> (TaskRegistry, ExtDispatcher, Dispatcher, Owner) {
    let clock = ManualClock::new(t("2026-11-22T08:00:00Z"));
    let registry = TaskRegistry::builder()
        .clock(clock)
        .ttl_policy(TtlPolicy::new(Some(300_000)))
        .limits(Limits::none())
        .build()
        .unwrap();
    let ext = ExtDispatcher::new(registry.clone());
    let v1 = Dispatcher::new(registry.clone());
    (registry, ext, v1, Owner::new("alice"))
}

#[test]
fn dispatcher_requires_the_extension_and_refuses_removed_methods() {
    let (registry, ext, _, owner) = setup();
    let task = registry
        .insert(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    assert!(ext::declares_extension(Some(&declared(&id))));
    assert_eq!(
        ext::request_protocol_version(Some(&declared(&id))),
        Some("2026-07-28")
    );
    let bare = json!({"taskId": id});
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let err = ext
            .dispatch(&owner, method, Some(&bare), false)
            .unwrap_err();
        assert_eq!(err.code, -32021, "{method}");
    }
    for method in ["tasks/result", "tasks/list"] {
        assert!(ExtDispatcher::handles(method));
        let err = ext
            .dispatch(&owner, method, Some(&declared(&id)), true)
            .unwrap_err();
        assert_eq!(err.code, -32601, "{method}");
    }
    let unknown = ext
        .dispatch(
            &owner,
            "tasks/get",
            Some(&declared(&TaskId::random().to_string())),
            true,
        )
        .unwrap_err();
    assert_eq!(unknown.code, -32602);
    let foreign = ext
        .dispatch(&Owner::new("bob"), "tasks/get", Some(&declared(&id)), true)
        .unwrap_err();
    assert_eq!(foreign.code, -32602);
    let no_responses = ext
        .dispatch(&owner, "tasks/update", Some(&declared(&id)), true)
        .unwrap_err();
    assert_eq!(no_responses.code, -32602);
    assert!(no_responses.message.contains("inputResponses"));
}

#[test]
fn update_answers_the_handler_and_cancel_is_acknowledged_even_when_terminal() {
    let (registry, ext, _, owner) = setup();
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm-1", elicit()))
        .unwrap();
    let got = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(got["status"], "input_required");
    assert_eq!(
        got["inputRequests"]["confirm-1"]["method"],
        "elicitation/create"
    );
    check("GetTaskResult", &got, true);
    let mut update = declared(&id);
    update["inputResponses"] =
        json!({"confirm-1": {"action": "accept", "content": {"ok": true}}, "nope": {}});
    let ack = ext
        .dispatch(&owner, "tasks/update", Some(&update), true)
        .unwrap();
    assert_eq!(ack, json!({"resultType": "complete"}));
    // Answered: shown as working until the handler resumes; nothing outstanding.
    let got = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(got["status"], "working");
    assert!(got.get("inputRequests").is_none());
    let answers = waiting
        .wait_for_input(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(answers.get("confirm-1").unwrap()["content"]["ok"], true);
    let working = waiting.resume().unwrap();
    // Cooperative cancel: acknowledged, status unchanged, the handler sees the request.
    let ack = ext
        .dispatch(&owner, "tasks/cancel", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert!(working.cancel_requested().unwrap());
    let got = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(got["status"], "working");
    let _done = working
        .complete(obj(json!({"content": [{"type": "text", "text": "ok"}]})))
        .unwrap();
    // A cancel of a terminal task is acknowledged too, and changes nothing.
    let ack = ext
        .dispatch(&owner, "tasks/cancel", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(ack, json!({"resultType": "complete"}));
    let got = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(got["status"], "completed");
    assert_eq!(got["result"]["content"][0]["text"], "ok");
}

#[test]
fn tasks_cross_between_the_two_dialects() {
    let (registry, ext, v1, owner) = setup();
    // A tool error stored once reads as `failed` in 2025-11-25 and `completed` here.
    let task = registry
        .insert(&owner, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    registry
        .store_result(
            &owner,
            &id,
            TaskStatus::Failed,
            Outcome::Result(obj(json!({"content": [], "isError": true}))),
        )
        .unwrap();
    let old = v1
        .dispatch(&owner, "tasks/get", Some(&json!({"taskId": id})))
        .unwrap();
    assert_eq!(old["status"], "failed");
    assert!(old.get("ttl").is_some() && old.get("ttlMs").is_none());
    let new = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&id)), true)
        .unwrap();
    assert_eq!(new["status"], "completed");
    assert_eq!(new["result"]["isError"], true);
    assert!(new.get("ttlMs").is_some() && new.get("ttl").is_none());
    // A task made under 2025-11-25 is cancelled (cooperatively) from the extension, and one
    // cancelled under 2025-11-25 shows `cancelled` here.
    let (handle, task) = registry
        .create(&owner, TaskRequest::new(2, "tools/call"))
        .unwrap();
    let id = task.id().to_string();
    ext.dispatch(&owner, "tasks/cancel", Some(&declared(&id)), true)
        .unwrap();
    assert!(handle.cancel_requested().unwrap());
    let _ = handle.cancel().unwrap();
    let v1_view = v1
        .dispatch(&owner, "tasks/get", Some(&json!({"taskId": id})))
        .unwrap();
    assert_eq!(v1_view["status"], "cancelled");
    let other = registry
        .insert(&owner, TaskRequest::new(3, "tools/call"))
        .unwrap();
    let other_id = other.id().to_string();
    v1.dispatch(&owner, "tasks/cancel", Some(&json!({"taskId": other_id})))
        .unwrap();
    let ext_view = ext
        .dispatch(&owner, "tasks/get", Some(&declared(&other_id)), true)
        .unwrap();
    assert_eq!(ext_view["status"], "cancelled");
    check("GetTaskResult", &ext_view, true);
}

/// A keyed tag for these tests (the servers use HMAC-SHA256): each byte a fold of the
/// message under a key byte. Keyed, and enough to round-trip a state here.
struct FoldMac(u8);

impl ext::StateMac for FoldMac {
    fn tag(&self, message: &[u8]) -> [u8; ext::TAG_LEN] {
        let mut tag = [self.0; ext::TAG_LEN];
        for (n, byte) in message.iter().enumerate() {
            tag[n % ext::TAG_LEN] = tag[n % ext::TAG_LEN].rotate_left(3) ^ byte;
        }
        tag
    }
}

#[test]
fn an_input_required_result_is_the_core_schemas_and_its_retry_reads_back() {
    let core = |def: &str, instance: &Value| {
        mcp_tasks_suites::errors(mcp_tasks_suites::MCP_2026_07_28, def, instance)
    };
    let states = ext::RequestStates::new(FoldMac(7));
    let owner = Owner::new("alice");
    let call = json!({"name": "render", "arguments": {"page": 3}});
    let scope = ext::StateScope::of_request(&owner, "tools/call", Some(&call));
    let requests = InputRequests::new()
        .with("confirm", elicit())
        .with(
            "summary",
            InputRequest::sampling(obj(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "Sum up page 3"}}],
                "maxTokens": 100
            }))),
        )
        .with("where", InputRequest::roots());
    let round = states.round(&scope, Some(&call)).unwrap();
    let asked = states.ask(
        &scope,
        &round,
        ext::Ask::new(requests).remembering(json!({"page": 3})),
    );
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(
        core("InputRequiredResult", &wire),
        Vec::<String>::new(),
        "{wire}"
    );
    let response = json!({"jsonrpc": "2.0", "id": 7, "result": wire});
    assert_eq!(
        core("CallToolResultResponse", &response),
        Vec::<String>::new()
    );
    assert_eq!(
        core("JSONRPCResultResponse", &response),
        Vec::<String>::new()
    );
    // Only a state: still a valid result.
    let only_state = ext::InputRequiredResult::new(InputRequests::new(), Some("s".into())).unwrap();
    assert!(
        core(
            "InputRequiredResult",
            &serde_json::to_value(&only_state).unwrap()
        )
        .is_empty()
    );

    // The retry, as a client sends it, is the schema's too, and reads back.
    let mut retry = call.clone();
    retry["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}}
    });
    retry["inputResponses"] = json!({
        "confirm": {"action": "accept", "content": {"ok": true}},
        "summary": {"role": "assistant", "content": {"type": "text", "text": "A page."}, "model": "m"},
        "where": {"roots": [{"uri": "file:///docs"}]}
    });
    retry["requestState"] = wire["requestState"].clone();
    assert_eq!(core("CallToolRequestParams", &retry), Vec::<String>::new());
    let round = states.round(&scope, Some(&retry)).unwrap();
    assert_eq!(round.number(), 1);
    assert_eq!(round.data(), &json!({"page": 3}));
    assert_eq!(round.responses().len(), 3);
}

/// Checks `instance` against `$defs/<def>` of the 2026-07-28 core schema.
#[track_caller]
fn check_core(def: &str, instance: &Value) {
    let errors = mcp_tasks_suites::errors(mcp_tasks_suites::MCP_2026_07_28, def, instance);
    assert!(errors.is_empty(), "{def} {instance}: {errors:?}");
}

#[test]
fn listen_messages_validate_against_the_core_and_the_extension() {
    use mcp_tasks::RequestId;
    use mcp_tasks::ext::{
        ListenNotification, ListenRequest, SubscriptionsAcknowledged, SubscriptionsListenResult,
    };
    let at = t("2026-11-22T08:00:02Z");
    // The request a client sends, and what the server reads of it.
    let params = json!({
        "notifications": {"taskIds": ["786512e2-9e0d-44bd-8f29-789f320fe840", "other"]},
        "_meta": declared("x")["_meta"].clone()
    });
    let request =
        json!({"jsonrpc": "2.0", "id": 12, "method": "subscriptions/listen", "params": params});
    check_core("SubscriptionsListenRequest", &request);
    check(
        "TaskSubscriptionNotifications",
        &params["notifications"],
        true,
    );
    let read = ListenRequest::parse(Some(&params), true).unwrap();
    assert_eq!(read.task_ids().map(<[String]>::len), Some(2));
    let refused = ListenRequest::parse(Some(&params), false).unwrap_err();
    check_core(
        "MissingRequiredClientCapabilityError",
        &json!({"jsonrpc": "2.0", "id": 12, "error": refused}),
    );

    // The stream: the acknowledgement, a notification per status, the result.
    for id in [RequestId::from(12), RequestId::from("listen-1")] {
        let ack = serde_json::to_value(SubscriptionsAcknowledged::new(
            id.clone(),
            Some(vec![TaskId::from("786512e2-9e0d-44bd-8f29-789f320fe840")]),
        ))
        .unwrap();
        check_core("SubscriptionsAcknowledgedNotification", &ack);
        check_core("ServerNotification", &ack);
        check(
            "TaskSubscriptionAcknowledgedNotifications",
            &ack["params"]["notifications"],
            true,
        );
        let tasks = [
            working().into_any(),
            working()
                .require_input(InputRequests::new().with("confirm-1", elicit()), at)
                .into_any(),
            working()
                .complete(obj(json!({"content": []})), at)
                .into_any(),
            working()
                .fail(Outcome::error(-32603, "disk full"), at)
                .into_any(),
            working().cancel(at).into_any(),
        ];
        for task in &tasks {
            let note = serde_json::to_value(ListenNotification::new(id.clone(), task)).unwrap();
            check("TaskStatusNotification", &note, true);
            check_core("JSONRPCNotification", &note);
            check_core("NotificationParams", &note["params"]);
            assert_eq!(
                note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                serde_json::to_value(&id).unwrap()
            );
            // Exactly what tasks/get answers, but for `resultType` and `_meta`.
            let mut got = serde_json::to_value(GetTaskResult::new(task)).unwrap();
            got.as_object_mut().unwrap().remove("resultType");
            let mut params = note["params"].clone();
            params.as_object_mut().unwrap().remove("_meta");
            assert_eq!(params, got);
        }
        let result = serde_json::to_value(SubscriptionsListenResult::new(id.clone())).unwrap();
        check_core("SubscriptionsListenResult", &result);
        check_core(
            "SubscriptionsListenResultResponse",
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }
}
