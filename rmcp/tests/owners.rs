//! The crate in process: rmcp 3.11's client and server over an in-memory pipe, one server
//! shared by several connections. Owner isolation, a panicking handler, input keys that
//! are never reused, the task's policy, and a legacy session without the extension.

mod support;

use std::time::Duration;

use mcp_tasks_rmcp::TaskManager;
use mcp_tasks_server::{Context, Elicited, Exit, NoArguments, Server, TaskSupport, Tool};
use rmcp::model::{
    CancelTaskParams, GetTaskParams, InputResponses, TaskPayload, TaskStatus, UpdateTaskParams,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::*;

/// Sleeps half a minute, unless cancelled.
async fn sleep(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    ctx.sleep(Duration::from_secs(30)).await?;
    Ok("slept".into())
}

async fn panics(_ctx: Context, _: NoArguments) -> Result<String, Exit> {
    panic!("the handler panics")
}

#[derive(Deserialize, JsonSchema)]
struct Answer {
    answer: String,
}

/// Asks twice under one name.
async fn twice(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    let said = |answer: Elicited<Answer>| match answer {
        Elicited::Accept(Answer { answer }) => answer,
        Elicited::Decline | Elicited::Cancel => "nothing".to_owned(),
    };
    let first = said(ctx.elicit::<Answer>("q", "first?").await?);
    let second = said(ctx.elicit::<Answer>("q", "second?").await?);
    Ok(format!("{first} then {second}"))
}

/// A confirmation: a form of no field.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

async fn approve(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    Ok(match ctx.elicit::<Nothing>("approve", "Go?").await? {
        Elicited::Accept(Nothing {}) => "approved".into(),
        Elicited::Decline | Elicited::Cancel => "not approved".into(),
    })
}

fn manager() -> TaskManager {
    let server = Server::builder()
        .tool(
            Tool::new("approve")
                .task_support(TaskSupport::Optional)
                .run(approve),
        )
        .tool(
            Tool::new("sleep")
                .task_support(TaskSupport::Optional)
                .run(sleep),
        )
        .tool(
            Tool::new("panic")
                .task_support(TaskSupport::Optional)
                .run(panics),
        )
        .tool(
            Tool::new("twice")
                .task_support(TaskSupport::Optional)
                .asks_for_input()
                .run(twice),
        )
        .build()
        .expect("the server builds");
    TaskManager::new(server)
}

#[tokio::test]
async fn another_connection_cannot_see_update_or_cancel_a_task() {
    let shared = manager();
    let alice = connect(shared.for_connection()).await;
    let bob = connect(shared.for_connection()).await;

    let created = start_task(&alice, "sleep", json!({})).await;
    let id = created.task.task_id.clone();
    // The server's policy: a minute to live, polled every 100 ms.
    assert_eq!(created.task.ttl_ms, Some(60_000));
    assert_eq!(created.task.poll_interval_ms, Some(100));

    let get = bob
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert_eq!(code(get), -32602);
    let update = bob
        .update_task(UpdateTaskParams::new(id.clone(), InputResponses::new()))
        .await
        .unwrap_err();
    assert_eq!(code(update), -32602);
    let cancel = bob
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert_eq!(code(cancel), -32602);

    // Bob's cancel reached nothing: Alice's task still runs, and she can cancel it.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let seen = alice
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("alice sees it");
    assert_eq!(seen.task.status(), TaskStatus::Working);
    alice
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("alice may cancel");
    assert_eq!(terminal(&alice, &id).await, TaskPayload::Cancelled);
    assert_eq!(shared.running(), 0, "the cancelled handler returned");
}

#[tokio::test]
async fn a_panicking_handler_leaves_the_task_failed_and_the_server_serving() {
    let alice = connect(manager()).await;
    let created = start_task(&alice, "panic", json!({})).await;
    match terminal(&alice, &created.task.task_id).await {
        TaskPayload::Failed { error } => assert_eq!(error.get("code"), Some(&json!(-32603))),
        other => panic!("expected failed, got {other:?}"),
    }
    let again = start_task(&alice, "sleep", json!({})).await;
    assert_eq!(again.task.status, TaskStatus::Working);
}

#[tokio::test]
async fn a_name_asked_twice_gets_a_new_key_and_each_answer_reaches_its_request() {
    let alice = connect(manager()).await;
    let created = start_task(&alice, "twice", json!({})).await;
    let id = created.task.task_id;
    let mut keys = Vec::new();
    for answer in ["yes", "no"] {
        let key = poll_until(&alice, &id, |payload| match payload {
            TaskPayload::InputRequired { input_requests } => input_requests
                .keys()
                .find(|key| !keys.contains(*key))
                .cloned(),
            _ => None,
        })
        .await;
        let mut responses = InputResponses::new();
        responses.insert(
            key.clone(),
            json!({"action": "accept", "content": {"answer": answer}}),
        );
        alice
            .update_task(UpdateTaskParams::new(id.clone(), responses))
            .await
            .expect("tasks/update acknowledges");
        keys.push(key);
    }
    assert_ne!(keys[0], keys[1], "a key is never reused within a task");
    match terminal(&alice, &id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("yes then no".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_that_does_not_match_its_form_is_refused_and_the_task_keeps_waiting() {
    let alice = connect(manager()).await;
    let id = start_task(&alice, "twice", json!({})).await.task.task_id;
    let key = poll_until(&alice, &id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    })
    .await;
    let mut wrong = InputResponses::new();
    wrong.insert(
        key.clone(),
        json!({"action": "accept", "content": {"answer": 42}}),
    );
    let refused = alice
        .update_task(UpdateTaskParams::new(id.clone(), wrong))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32602);
    let still = alice
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get answers");
    assert_eq!(still.task.status(), TaskStatus::InputRequired);
    alice
        .cancel_task(CancelTaskParams::new(id))
        .await
        .expect("alice may cancel");
}

#[tokio::test]
async fn a_form_of_no_field_reaches_rmcps_client_and_is_answered() {
    let alice = connect(manager()).await;
    let id = start_task(&alice, "approve", json!({})).await.task.task_id;
    let key = poll_until(&alice, &id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    })
    .await;
    let mut responses = InputResponses::new();
    responses.insert(key, json!({"action": "accept", "content": {}}));
    alice
        .update_task(UpdateTaskParams::new(id.clone(), responses))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&alice, &id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("approved".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_legacy_session_client_without_the_extension_gets_no_task() {
    let client = connect_to(
        manager(),
        plain_client(),
        rmcp::ClientLifecycleMode::Initialize,
    )
    .await;
    // At once, with no elicitation declared, a handler that asks is refused.
    let refused = client
        .call_tool_once(call("twice", json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32602);
    // tasks/* are refused with -32021 (rmcp's gating).
    let get = client
        .get_task(GetTaskParams::new("00000000-0000-4000-8000-000000000000"))
        .await
        .unwrap_err();
    assert_eq!(code(get), -32021);
}
