//! Quickstart: three tasks driven through the typestate API, printing every protocol
//! message a server would send for them (one JSON document per line on stdout; prose on
//! stderr). The example checks what it prints.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use mcp_tasks::protocol::{
    CreateTaskResult, GetTaskPayloadResult, TaskResult, TaskStatusNotification,
};
use mcp_tasks::{
    AnyTask, Change, Error, InputRequest, InputRequests, JsonObject, Outcome, Task, TaskId,
    Timestamp, jsonrpc,
};
use serde_json::{Value, json};

/// Prints one message as a line, and returns it for the checks.
fn send(message: &impl serde::Serialize) -> Result<Value, serde_json::Error> {
    let value = serde_json::to_value(message)?;
    println!("{value}");
    Ok(value)
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

fn check(condition: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if condition {
        Ok(())
    } else {
        Err(format!("quickstart check failed: {what}").into())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Timestamp::parse("2025-11-25T10:30:00Z")?;
    let at = |millis: u64| start.plus_millis(millis);

    eprintln!("1. a tool call that asks the user, then completes");
    let task = Task::new(TaskId::random(), start)
        .with_ttl(Some(60_000))
        .with_poll_interval(Some(1_000));
    let created = send(&CreateTaskResult::new(task.clone()))?;
    check(
        created["task"]["status"] == "working",
        "a new task is working",
    )?;
    check(created["task"]["ttl"] == 60_000, "the ttl is shown")?;

    let question = InputRequest::elicitation(object(json!({
        "mode": "form",
        "message": "Overwrite the file?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    })));
    let mut waiting = task.require_input(
        InputRequests::new().with("confirm-1", question),
        Change::at(at(100)).with_message("waiting for the user"),
    );
    let note = send(&TaskStatusNotification::new(waiting.clone()))?;
    check(
        note["params"]["status"] == "input_required",
        "input_required announced",
    )?;
    check(
        waiting.input_requests().len() == 1,
        "the task holds its input request",
    )?;

    // The user's answer arrives under the request's key; the handler takes it and resumes.
    let yes = object(json!({"action": "accept", "content": {"ok": true}}));
    check(
        waiting.answer([("confirm-1".to_owned(), yes.clone())], at(150)) == 1,
        "the answer is taken",
    )?;
    check(
        waiting.take_answers().get("confirm-1") == Some(&yes),
        "the handler reads the answer under its own name",
    )?;
    let working = waiting.resume(at(200));
    let polled = send(&TaskResult::new(working.clone()))?;
    check(
        polled["status"] == "working",
        "tasks/get shows working again",
    )?;
    check(
        polled.get("statusMessage").is_none(),
        "the old status message is gone",
    )?;

    let result = object(json!({"content": [{"type": "text", "text": "file overwritten"}]}));
    let done = working.complete(result, at(300));
    send(&TaskStatusNotification::new(done.clone()))?;
    // tasks/result answers with the result the completed task keeps.
    let stored = done
        .result()
        .cloned()
        .ok_or("the completed task lost its result")?;
    let payload = send(&GetTaskPayloadResult::new(stored, done.id()))?;
    check(
        payload["content"][0]["text"] == "file overwritten",
        "tasks/result is the result",
    )?;
    check(
        payload["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == done.id().to_string(),
        "tasks/result carries the related-task _meta",
    )?;

    eprintln!("2. a tool call that fails with a JSON-RPC error");
    let task = Task::new(TaskId::random(), start).with_ttl(Some(60_000));
    send(&CreateTaskResult::new(task.clone()))?;
    let failed = task.fail(
        Outcome::error(jsonrpc::INTERNAL_ERROR, "the disk is full"),
        at(50),
    );
    let polled = send(&TaskResult::new(failed.clone()))?;
    check(polled["status"] == "failed", "tasks/get shows failed")?;
    check(
        polled["statusMessage"] == "the disk is full",
        "failure diagnostics",
    )?;
    // tasks/result answers a failed-by-error task with that same error.
    let Some(Outcome::Error(error)) = failed.outcome() else {
        return Err("the failed task lost its error".into());
    };
    let response = send(&json!({"jsonrpc": "2.0", "id": 7, "error": error}))?;
    check(
        response["error"]["code"] == -32603,
        "the stored error is returned",
    )?;

    eprintln!("3. a tool call cancelled by the requestor");
    let task = Task::new(TaskId::random(), start).with_ttl(None);
    send(&CreateTaskResult::new(task.clone()))?;
    let cancelled = task.cancel(Change::at(at(10)).with_message("cancelled by the user"));
    let answer = send(&TaskResult::new(cancelled.clone()))?;
    check(
        answer["status"] == "cancelled",
        "tasks/cancel shows cancelled",
    )?;
    check(answer["ttl"].is_null(), "unlimited ttl is null, not absent")?;
    let error = Error::TaskCancelled {
        task_id: cancelled.id().to_string(),
    }
    .to_jsonrpc();
    let response = send(&json!({"jsonrpc": "2.0", "id": 9, "error": error}))?;
    check(
        response["error"]["code"] == -32602,
        "tasks/result of a cancelled task",
    )?;

    // A typed task comes back from the erased form only with the right status.
    let any = AnyTask::from(cancelled);
    check(
        Task::<mcp_tasks::Completed>::try_from(any).is_err(),
        "a cancelled task is not a completed one",
    )?;
    eprintln!("all checks passed");
    Ok(())
}
