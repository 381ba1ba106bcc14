//! Each reader that exists in one status only compiles in that status: the legal twins of
//! `result-of-*`, `outcome-of-*`, `answer-*`, `input-requests-of-*`, `wait-for-input-on-*`
//! and `with-ttl-on-*`.
use std::time::Duration;

use mcp_tasks::{
    InputRequest, InputRequests, JsonObject, Outcome, Owner, Task, TaskId, TaskRegistry,
    TaskRequest, TaskStore, Timestamp,
};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let working = Task::new(TaskId::from("t"), now)
        .with_ttl(Some(60_000))
        .with_poll_interval(Some(1_000));
    assert_eq!(working.ttl(), Some(60_000));

    let ask = InputRequests::new().with("confirm", InputRequest::new("ping", JsonObject::new()));
    let mut waiting = working.clone().require_input(ask, now);
    assert_eq!(waiting.input_requests().len(), 1);
    assert_eq!(
        waiting.answer([("confirm".to_owned(), JsonObject::new())], now),
        1
    );
    assert!(waiting.all_answered());
    assert!(waiting.take_answers().get("confirm").is_some());

    let done = working.clone().complete(JsonObject::new(), now);
    assert_eq!(done.result(), Some(&JsonObject::new()));
    let failed = working.fail(Outcome::error(-32603, "boom"), now);
    assert!(matches!(failed.outcome(), Some(Outcome::Error(_))));

    let registry = TaskRegistry::new();
    let alice = Owner::new("alice");
    let (handle, task) = registry
        .create(&alice, TaskRequest::new(1, "tools/call"))
        .unwrap();
    let ask = InputRequests::new().with("confirm", InputRequest::new("ping", JsonObject::new()));
    let waiting = handle.require_input(ask).unwrap();
    let mut answers = JsonObject::new();
    answers.insert("confirm".to_owned(), serde_json::json!({}));
    registry
        .respond(&alice, &task.id().to_string(), answers)
        .unwrap();
    let answers = waiting.wait_for_input(Some(Duration::ZERO)).unwrap();
    assert!(answers.get("confirm").is_some());
    assert!(waiting.cancel().is_ok());
}
