//! A task's life on any store, for the shared stores' benches: create it, complete it, and
//! the tool result it completes with.

use mcp_tasks::{JsonObject, Outcome, Owner, TaskRequest, TaskStatus, TaskStore};
use serde_json::json;

/// Creates the `n`th task of `owner` on `store`; answers its id.
pub fn create(store: &impl TaskStore, owner: &Owner, n: usize) -> String {
    let request = TaskRequest::new(i64::try_from(n).unwrap_or(i64::MAX), "tools/call");
    store
        .insert(owner, request)
        .expect("create")
        .id()
        .to_string()
}

/// Completes the task `id` of `owner` with `result`.
pub fn complete(store: &impl TaskStore, owner: &Owner, id: &str, result: &JsonObject) {
    let outcome = Outcome::Result(result.clone());
    let _ = store
        .store_result(owner, id, TaskStatus::Completed, outcome)
        .expect("store result");
}

/// A tool's result of one text block.
pub fn tool_result(text: &str) -> JsonObject {
    let result = json!({"content": [{"type": "text", "text": text}]});
    result.as_object().cloned().expect("an object")
}
