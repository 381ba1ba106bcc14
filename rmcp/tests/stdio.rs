//! rmcp 3.11's own client against the `rmcp_stdio` example: every tasks flow of the
//! extension through rmcp's task methods (`call_tool_once`, `get_task`, `update_task`,
//! `cancel_task`), and the inline answer a client without the extension gets.

mod spawned;
mod support;

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, InputResponses, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use serde_json::json;
use spawned::*;
use support::*;

#[tokio::test]
async fn a_tool_becomes_a_task_and_completes_with_its_result_inlined() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let created = start_task(&client, "sleep", json!({"ms": 100})).await;
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.poll_interval_ms, Some(100));
    // Durable before the answer: the very first tasks/get finds it.
    let first = client
        .get_task(GetTaskParams::new(created.task.task_id.clone()))
        .await
        .expect("the task exists as soon as call_tool answered");
    assert_eq!(first.task.task.task_id, created.task.task_id);
    match terminal(&client, &created.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("slept 100 ms".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_tool_error_completes_and_a_jsonrpc_error_fails() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let fail = start_task(&client, "fail", json!({})).await;
    match terminal(&client, &fail.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(
                text_of(&result),
                ("the fail tool always fails".to_owned(), true)
            );
        }
        other => panic!("a tool error is `completed` in the extension, got {other:?}"),
    }
    let crash = start_task(&client, "crash", json!({})).await;
    match terminal(&client, &crash.task.task_id).await {
        TaskPayload::Failed { error } => {
            assert_eq!(error.get("code"), Some(&json!(-32603)));
            assert_eq!(
                error.get("message"),
                Some(&json!("the crash tool always crashes"))
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn input_is_asked_in_tasks_get_and_answered_with_tasks_update() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let created = start_task(&client, "confirm", json!({"question": "proceed?"})).await;
    let task_id = created.task.task_id;
    let requests = poll_until(&client, &task_id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => Some(input_requests.clone()),
        TaskPayload::Working => None,
        other => panic!("ended {:?} before asking for input", other.status()),
    })
    .await;
    let (key, request) = requests.iter().next().expect("one input request");
    assert_eq!(requests.len(), 1);
    let request = serde_json::to_value(request).expect("the request serializes");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "proceed?");

    // An answer to an unknown key is ignored: the task still waits.
    let mut stray = InputResponses::new();
    stray.insert(
        "no-such-key".into(),
        json!({"action": "accept", "content": {"answer": "x"}}),
    );
    client
        .update_task(UpdateTaskParams::new(task_id.clone(), stray))
        .await
        .expect("tasks/update acknowledges");
    let still = client
        .get_task(GetTaskParams::new(task_id.clone()))
        .await
        .expect("tasks/get answers");
    assert_eq!(still.task.status(), TaskStatus::InputRequired);

    let mut responses = InputResponses::new();
    responses.insert(
        key.clone(),
        json!({"action": "accept", "content": {"answer": "yes"}}),
    );
    client
        .update_task(UpdateTaskParams::new(task_id.clone(), responses))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&client, &task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(
                text_of(&result),
                ("the user answered: yes".to_owned(), false)
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_is_refused_and_the_task_keeps_waiting() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let created = start_task(&client, "confirm", json!({"question": "proceed?"})).await;
    let task_id = created.task.task_id;
    let key = poll_until(&client, &task_id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    })
    .await;
    let mut wrong = InputResponses::new();
    wrong.insert(
        key.clone(),
        json!({"action": "accept", "content": {"answer": 42}}),
    );
    let refused = client
        .update_task(UpdateTaskParams::new(task_id.clone(), wrong))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32602);
    let still = client
        .get_task(GetTaskParams::new(task_id.clone()))
        .await
        .expect("tasks/get answers");
    assert_eq!(still.task.status(), TaskStatus::InputRequired);

    let mut right = InputResponses::new();
    right.insert(key, json!({"action": "decline"}));
    client
        .update_task(UpdateTaskParams::new(task_id.clone(), right))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&client, &task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("the user declined".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn tools_list_names_the_example_tools_alone_by_default() {
    let client = spawn_stdio_with(&[], tasks_client(), discover()).await;
    let tools = client.list_all_tools().await.expect("tools/list answers");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["sleep", "fail", "crash", "confirm", "echo"]);
    let refused = client
        .call_tool(call("greet", json!({"name": "x"})))
        .await
        .expect_err("no fixture without --conformance");
    assert!(refused.to_string().contains("unknown tool"), "{refused}");
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn tools_list_names_the_conformance_fixtures_with_the_flag() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let tools = client.list_all_tools().await.expect("tools/list answers");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for wanted in [
        "sleep",
        "fail",
        "crash",
        "confirm",
        "echo",
        "greet",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
        "test_tool_with_task",
    ] {
        assert!(names.contains(&wanted), "no `{wanted}` among {names:?}");
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn cancel_stops_a_running_tool_and_a_tool_waiting_for_input() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let long = start_task(&client, "sleep", json!({"ms": 30_000})).await;
    let asked = Instant::now();
    client
        .cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
        .await
        .expect("tasks/cancel acknowledges");
    assert_eq!(
        terminal(&client, &long.task.task_id).await,
        TaskPayload::Cancelled
    );
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "cancel took {:?}",
        asked.elapsed()
    );

    let waiting = start_task(&client, "confirm", json!({"question": "proceed?"})).await;
    poll_until(&client, &waiting.task.task_id, |payload| {
        matches!(payload, TaskPayload::InputRequired { .. }).then_some(())
    })
    .await;
    client
        .cancel_task(CancelTaskParams::new(waiting.task.task_id.clone()))
        .await
        .expect("tasks/cancel acknowledges");
    assert_eq!(
        terminal(&client, &waiting.task.task_id).await,
        TaskPayload::Cancelled
    );

    // Cancelling a finished task is still acknowledged and changes nothing.
    client
        .cancel_task(CancelTaskParams::new(waiting.task.task_id.clone()))
        .await
        .expect("tasks/cancel of a terminal task acknowledges");
    assert_eq!(
        terminal(&client, &waiting.task.task_id).await,
        TaskPayload::Cancelled
    );
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn unknown_task_ids_are_invalid_params() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let id = "00000000-0000-4000-8000-000000000000";
    let get = client.get_task(GetTaskParams::new(id)).await.unwrap_err();
    assert_eq!(code(get), -32602);
    let update = client
        .update_task(UpdateTaskParams::new(id, InputResponses::new()))
        .await
        .unwrap_err();
    assert_eq!(code(update), -32602);
    let cancel = client
        .cancel_task(CancelTaskParams::new(id))
        .await
        .unwrap_err();
    assert_eq!(code(cancel), -32602);
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn echo_never_becomes_a_task() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    match client
        .call_tool_once(call("echo", json!({"text": "hello"})))
        .await
    {
        Ok(CallToolResponse::Complete(result)) => {
            let result = serde_json::to_value(result).expect("serializes");
            let result = result.as_object().cloned().unwrap_or_default();
            assert_eq!(text_of(&result), ("hello".to_owned(), false));
        }
        other => panic!("expected an inline result, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_client_without_the_extension_gets_the_result_inline() {
    // rmcp's default lifecycle: a legacy `initialize`, no tasks extension declared.
    let client = spawn_stdio(plain_client(), rmcp::ClientLifecycleMode::Initialize).await;
    match client
        .call_tool_once(call("sleep", json!({"ms": 10})))
        .await
    {
        Ok(CallToolResponse::Complete(result)) => {
            let result = serde_json::to_value(result).expect("serializes");
            let result = result.as_object().cloned().unwrap_or_default();
            assert_eq!(text_of(&result), ("slept 10 ms".to_owned(), false));
        }
        other => panic!("expected an inline result, got {other:?}"),
    }
    // A tool that only runs as a task cannot run in a 2025-11-25 session, whose tasks rmcp
    // does not carry: -32601, as the 2025-11-25 spec answers a call that needs a task.
    let confirm = client
        .call_tool_once(call("confirm", json!({"question": "?"})))
        .await
        .unwrap_err();
    assert_eq!(code(confirm), -32601);
    // tasks/* are refused with -32021 (rmcp's gating).
    let get = client
        .get_task(GetTaskParams::new("00000000-0000-4000-8000-000000000000"))
        .await
        .unwrap_err();
    assert_eq!(code(get), -32021);
    client.cancel().await.expect("the client closes");
}
