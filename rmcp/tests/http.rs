//! rmcp 3.11's own client over Streamable HTTP against the `rmcp_http` example: the task
//! flows, owners from bearer tokens (one owner's task is invisible to another's token,
//! and visible to another token of the same owner), the refusals, and the inline answer
//! for a client without the extension.

mod spawned;
mod support;

use std::process::Stdio;

use rmcp::ClientLifecycleMode;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, InputResponses, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use serde_json::json;
use spawned::*;
use support::*;
use tokio::process::Command;

const TOKENS: [&str; 6] = [
    "--token",
    "t-alice=alice",
    "--token",
    "t-alice-2=alice",
    "--token",
    "t-bob=bob",
];

#[tokio::test]
async fn tasks_complete_take_input_and_cancel_over_http() {
    let server = start_http(&TOKENS).await;
    let alice = tasks(&server, "t-alice").await;

    let sleep = start_task(&alice, "sleep", json!({"ms": 50})).await;
    match terminal(&alice, &sleep.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("slept 50 ms".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }

    let confirm = start_task(&alice, "confirm", json!({"question": "go?"})).await;
    let key = poll_until(&alice, &confirm.task.task_id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    })
    .await;
    let mut responses = InputResponses::new();
    responses.insert(
        key,
        json!({"action": "accept", "content": {"answer": "go"}}),
    );
    alice
        .update_task(UpdateTaskParams::new(
            confirm.task.task_id.clone(),
            responses,
        ))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&alice, &confirm.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(
                text_of(&result),
                ("the user answered: go".to_owned(), false)
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }

    let long = start_task(&alice, "sleep", json!({"ms": 30_000})).await;
    alice
        .cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
        .await
        .expect("tasks/cancel acknowledges");
    assert_eq!(
        terminal(&alice, &long.task.task_id).await,
        TaskPayload::Cancelled
    );

    let crash = start_task(&alice, "crash", json!({})).await;
    match terminal(&alice, &crash.task.task_id).await {
        TaskPayload::Failed { error } => assert_eq!(error.get("code"), Some(&json!(-32603))),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_belongs_to_the_owner_of_the_token_not_to_the_connection() {
    let server = start_http(&TOKENS).await;
    let alice = tasks(&server, "t-alice").await;
    let alice_again = tasks(&server, "t-alice-2").await;
    let bob = tasks(&server, "t-bob").await;

    let created = start_task(&alice, "sleep", json!({"ms": 30_000})).await;
    let id = created.task.task_id;

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

    // Another token of the same owner, on another connection, sees and cancels it.
    let seen = alice_again
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("the same owner sees the task");
    assert_eq!(seen.task.status(), TaskStatus::Working);
    alice_again
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("the same owner may cancel");
    assert_eq!(terminal(&alice, &id).await, TaskPayload::Cancelled);
}

#[tokio::test]
async fn a_request_without_a_valid_token_is_refused() {
    let server = start_http(&TOKENS).await;
    assert!(
        connect_http(&server, None, tasks_client(), discover())
            .await
            .is_err()
    );
    assert!(
        connect_http(&server, Some("wrong"), tasks_client(), discover())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_client_without_the_extension_gets_the_result_inline_over_http() {
    let server = start_http(&TOKENS).await;
    let plain = connect_http(
        &server,
        Some("t-bob"),
        plain_client(),
        ClientLifecycleMode::Initialize,
    )
    .await
    .expect("a legacy client connects");
    match plain.call_tool_once(call("sleep", json!({"ms": 10}))).await {
        Ok(CallToolResponse::Complete(result)) => {
            let result = serde_json::to_value(result).expect("serializes");
            let result = result.as_object().cloned().unwrap_or_default();
            assert_eq!(text_of(&result), ("slept 10 ms".to_owned(), false));
        }
        other => panic!("expected an inline result, got {other:?}"),
    }
}

#[tokio::test]
async fn anonymous_mode_serves_one_owner_and_only_on_loopback() {
    let server = start_http(&["--anonymous"]).await;
    let first = connect_http(&server, None, tasks_client(), discover())
        .await
        .expect("anonymous mode needs no token");
    let second = connect_http(&server, None, tasks_client(), discover())
        .await
        .expect("anonymous mode needs no token");
    let created = start_task(&first, "sleep", json!({"ms": 10})).await;
    // One owner: the other client sees the task.
    let payload = terminal(&second, &created.task.task_id).await;
    assert_eq!(payload.status(), TaskStatus::Completed);

    let status = Command::new(example("rmcp_http"))
        .args(["--anonymous", "--listen", "0.0.0.0:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .expect("the example runs");
    assert_eq!(
        status.code(),
        Some(2),
        "anonymous mode off loopback is refused"
    );
}
