//! The library in process: rmcp 3.11's client and server over an in-memory pipe, one
//! store shared by several connections. Owner isolation, a panicking operation,
//! lifetime-unique input keys, and the task options.

mod support;

use std::time::Duration;

use mcp_tasks::TaskRegistry;
use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions, text_result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, InputRequest,
    InputResponses, ServerConfig, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use support::*;

#[derive(Clone)]
struct Server {
    tasks: TaskManager,
}

fn ask(message: &str) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}
        }
    }))
    .expect("an elicitation request")
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        tasks_server_config()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let options = TaskOptions::new()
            .with_poll_interval_ms(10)
            .with_ttl_ms(60_000)
            .with_status_message("queued");
        match request.name.as_ref() {
            "sleep" => {
                self.tasks
                    .call_tool(&context, options, |ctx| {
                        Box::pin(async move {
                            tokio::select! {
                                () = ctx.cancelled() => Err(TaskExit::Cancelled),
                                () = tokio::time::sleep(Duration::from_secs(30)) => {
                                    Ok(text_result("slept", false))
                                }
                            }
                        })
                    })
                    .await
            }
            "panic" => {
                self.tasks
                    .call_tool(&context, options, |_ctx| {
                        Box::pin(async move { panic!("the operation panics") })
                    })
                    .await
            }
            // Asks twice under the same name: the keys on the wire differ.
            "twice" => {
                self.tasks
                    .call_tool(&context, options, |ctx| {
                        Box::pin(async move {
                            let first = ctx.request_input("q", ask("first?")).await?;
                            let second = ctx.request_input("q", ask("second?")).await?;
                            let said = |answer: &serde_json::Value| {
                                answer["content"]["answer"]
                                    .as_str()
                                    .unwrap_or("")
                                    .to_owned()
                            };
                            Ok(text_result(
                                format!("{} then {}", said(&first), said(&second)),
                                false,
                            ))
                        })
                    })
                    .await
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }

    mcp_tasks_rmcp::task_handlers!(tasks);
}

/// A client connected through an in-memory pipe to a handler on `tasks`.
async fn connect(tasks: TaskManager) -> Client {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = (Server { tasks }).serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    tasks_client()
        .serve(client_side)
        .await
        .expect("the client connects")
}

#[tokio::test]
async fn another_connection_cannot_see_update_or_cancel_a_task() {
    let shared = TaskManager::new(TaskRegistry::new());
    let alice = connect(shared.for_connection()).await;
    let bob = connect(shared.for_connection()).await;

    let created = start_task(&alice, "sleep", json!({})).await;
    let id = created.task.task_id.clone();
    assert_eq!(created.task.status_message.as_deref(), Some("queued"));
    assert_eq!(created.task.ttl_ms, Some(60_000));

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
}

#[tokio::test]
async fn a_panicking_operation_leaves_the_task_failed() {
    let alice = connect(TaskManager::default()).await;
    let created = start_task(&alice, "panic", json!({})).await;
    match terminal(&alice, &created.task.task_id).await {
        TaskPayload::Failed { error } => assert_eq!(error.get("code"), Some(&json!(-32603))),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_name_asked_twice_gets_a_new_key_and_each_answer_reaches_its_request() {
    let alice = connect(TaskManager::default()).await;
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
async fn a_legacy_session_client_without_the_extension_gets_no_task() {
    let (server_side, client_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let server = Server {
            tasks: TaskManager::default(),
        };
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let client = plain_client().serve(client_side).await.expect("connects");
    // `twice` needs input: inline, that is the missing capability.
    let refused = client
        .call_tool_once(call("twice", json!({})))
        .await
        .unwrap_err();
    assert_eq!(code(refused), -32021);
}
