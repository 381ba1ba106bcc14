//! What rmcp 3.11 allows of `subscriptions/listen` with `notifications.taskIds` (SEP-2663,
//! task status notifications), checked against its model so that a release that changes
//! it is noticed (see the README, "Task status notifications"):
//! - its `SubscriptionFilter` has no `taskIds`: the ids of a listen request are dropped
//!   when rmcp reads it, so a server built on rmcp cannot know which tasks to follow (nor
//!   refuse `-32021` to a request that names them without the extension), and an rmcp
//!   client cannot read which ids a server acknowledged;
//! - its model does read a `notifications/tasks` as the core's servers (`mcp_http`,
//!   `stdio_server`) send it, the subscription id included: an rmcp client can take them
//!   as they come.

use mcp_tasks::ext::{ListenNotification, SubscriptionsAcknowledged};
use mcp_tasks::{AnyTask, RequestId, Task, TaskId, Timestamp};
use rmcp::model::{ServerJsonRpcMessage, SubscriptionsListenRequestParams};
use serde_json::{Value, json};

#[test]
fn rmcp_drops_the_task_ids_of_a_listen_request_and_of_its_acknowledgement() {
    let params = json!({
        "notifications": {"taskIds": ["786512e2-9e0d-44bd-8f29-789f320fe840"], "toolsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        }
    });
    let read: SubscriptionsListenRequestParams =
        serde_json::from_value(params).expect("rmcp reads the request");
    let filter = serde_json::to_value(&read.notifications).expect("JSON");
    assert_eq!(
        filter,
        json!({"toolsListChanged": true}),
        "rmcp keeps taskIds now: serve subscriptions/listen through it (README)"
    );

    let ack = serde_json::to_value(SubscriptionsAcknowledged::new(
        RequestId::from(4),
        Some(vec![TaskId::from("786512e2-9e0d-44bd-8f29-789f320fe840")]),
    ))
    .expect("JSON");
    let read: ServerJsonRpcMessage = serde_json::from_value(ack).expect("rmcp reads the ack");
    let back = serde_json::to_value(&read).expect("JSON");
    assert_eq!(
        back["params"]["notifications"],
        json!({}),
        "an rmcp client cannot see the acknowledged task ids"
    );
}

#[test]
fn rmcp_reads_the_task_notifications_of_a_listen_stream_whole() {
    let t0 = Timestamp::parse("2026-11-22T08:00:00Z").expect("a timestamp");
    let task: AnyTask = Task::new(TaskId::from("786512e2-9e0d-44bd-8f29-789f320fe840"), t0)
        .with_ttl(Some(60_000))
        .complete(
            json!({"content": [{"type": "text", "text": "done"}]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            t0.plus_millis(5),
        )
        .into();
    let sent: Value =
        serde_json::to_value(ListenNotification::new(RequestId::from(4), &task)).expect("JSON");
    let read: ServerJsonRpcMessage =
        serde_json::from_value(sent.clone()).expect("rmcp reads notifications/tasks");
    assert_eq!(
        serde_json::to_value(&read).expect("JSON"),
        sent,
        "nothing lost, the subscription id included"
    );
}
