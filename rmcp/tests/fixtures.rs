//! The conformance fixtures of the stdio example through rmcp's own client: several
//! input requests answered one at a time, and the input_required round of a call that
//! then becomes a task.

mod spawned;
mod support;

use rmcp::model::{CallToolResponse, InputResponses, TaskPayload};
use serde_json::json;
use spawned::*;
use support::*;

#[tokio::test]
async fn two_questions_at_once_can_be_answered_one_by_one() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let created = start_task(&client, "multi_input", json!({})).await;
    let id = created.task.task_id;
    let both = poll_until(&client, &id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } => {
            Some(input_requests.keys().cloned().collect::<Vec<_>>())
        }
        _ => None,
    })
    .await;
    assert_eq!(both, ["confirm", "name"]);

    let mut first = InputResponses::new();
    first.insert(
        "name".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    client
        .update_task(rmcp::model::UpdateTaskParams::new(id.clone(), first))
        .await
        .expect("tasks/update acknowledges");
    let left = poll_until(&client, &id, |payload| match payload {
        TaskPayload::InputRequired { input_requests } if input_requests.len() == 1 => {
            Some(input_requests.keys().cloned().collect::<Vec<_>>())
        }
        TaskPayload::InputRequired { .. } => None,
        other => panic!("left input_required early: {other:?}"),
    })
    .await;
    assert_eq!(left, ["confirm"]);

    let mut second = InputResponses::new();
    second.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    client
        .update_task(rmcp::model::UpdateTaskParams::new(id.clone(), second))
        .await
        .expect("tasks/update acknowledges");
    match terminal(&client, &id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(
                text_of(&result),
                ("name: Ada, confirmed: true".to_owned(), false)
            );
        }
        other => panic!("expected completed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_call_asks_for_input_first_and_becomes_a_task_on_the_retry() {
    let client = spawn_stdio(tasks_client(), discover()).await;
    let asked = match client
        .call_tool_once(call("test_tool_with_task", json!({})))
        .await
    {
        Ok(CallToolResponse::InputRequired(asked)) => asked,
        other => panic!("expected an input_required result, got {other:?}"),
    };
    let requests = asked.input_requests.expect("the question is in the result");
    assert!(requests.contains_key("user_name"), "{requests:?}");

    // A wrong answer is -32602 and makes no task.
    let mut wrong = InputResponses::new();
    wrong.insert(
        "user_name".into(),
        json!({"action": "accept", "content": {"name": 7}}),
    );
    let refused = client
        .call_tool_once(call("test_tool_with_task", json!({})).with_input_responses(wrong))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32602);

    let mut answer = InputResponses::new();
    answer.insert(
        "user_name".into(),
        json!({"action": "accept", "content": {"name": "Alice"}}),
    );
    let created = match client
        .call_tool_once(call("test_tool_with_task", json!({})).with_input_responses(answer))
        .await
    {
        Ok(CallToolResponse::Task(created)) => created,
        other => panic!("expected a task on the retry, got {other:?}"),
    };
    match terminal(&client, &created.task.task_id).await {
        TaskPayload::Completed { result } => {
            assert_eq!(text_of(&result), ("Hello, Alice!".to_owned(), false));
        }
        other => panic!("expected completed, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_task_only_fixture_is_refused_without_the_extension() {
    let client = spawn_stdio(plain_client(), rmcp::ClientLifecycleMode::Initialize).await;
    let refused = client
        .call_tool_once(call("failing_job", json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32601);
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn confirm_asks_in_a_round_for_a_2026_client_without_the_extension() {
    // 2026-07-28 (server/discover), form elicitation, no tasks extension.
    let mut config = tasks_client();
    config.capabilities.extensions = None;
    let client = spawn_stdio(config, discover()).await;
    let question = || call("confirm", json!({"question": "Deploy?"}));
    let asked = match client.call_tool_once(question()).await {
        Ok(CallToolResponse::InputRequired(asked)) => asked,
        other => panic!("expected an input_required result, got {other:?}"),
    };
    let requests = asked.input_requests.expect("the question is in the result");
    assert!(requests.contains_key("confirm"), "{requests:?}");
    let state = asked.request_state.expect("a requestState");

    let mut answer = InputResponses::new();
    answer.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"answer": "yes"}}),
    );
    // A changed state is -32602.
    let mut forged = question().with_input_responses(answer.clone());
    forged.request_state = Some(format!("{state}-TAMPERED"));
    assert_eq!(
        code(client.call_tool_once(forged).await.unwrap_err()),
        -32602
    );

    let mut retry = question().with_input_responses(answer);
    retry.request_state = Some(state);
    match client.call_tool_once(retry).await {
        Ok(CallToolResponse::Complete(result)) => {
            let result = serde_json::to_value(result).expect("serializes");
            let result = result.as_object().cloned().unwrap_or_default();
            assert_eq!(
                text_of(&result),
                ("the user answered: yes".to_owned(), false)
            );
        }
        other => panic!("expected the answer inline, got {other:?}"),
    }
    client.cancel().await.expect("the client closes");
}
