//! Small helpers shared by the integration tests: JSON and request builders, the usual
//! owners, and bounded joins and waits (so that a bug fails a test instead of hanging the
//! suite).
//!
//! Include it with `#[path = "support/common.rs"] mod common;` and import what the test
//! binary uses. (Stores' behaviour suites use `mcp_tasks_testkit::support`, whose helpers
//! these are a few of: the core's own tests cannot depend on the kit, which depends on the
//! core.)

// Each test binary is a crate of its own and uses only some of these helpers; without this,
// the others would be `dead_code` warnings (errors under `clippy -D warnings`) there.
#![allow(dead_code)]

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::{AnyTask, Error, InputRequest, JsonObject, Outcome, Owner, TaskRequest, TaskStore};
use serde_json::{Value, json};

/// The timeout of every wait that is expected to end by an event: never reached when the
/// store works.
pub const BOUND: Duration = Duration::from_secs(30);

/// How soon an event must end such a wait (much less than [`BOUND`], so that a lost wakeup
/// cannot hide behind a waiter that times out, looks again and finds the task finished).
pub const WAKE: Duration = Duration::from_secs(5);

pub fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

pub fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A `CallToolResult` with one text block.
pub fn tool_result(text: &str) -> JsonObject {
    obj(json!({"content": [{"type": "text", "text": text}]}))
}

/// The outcome of a tool call that returned [`tool_result`]`(text)`.
pub fn tool_outcome(text: &str) -> Outcome {
    Outcome::Result(tool_result(text))
}

/// A form elicitation asking `message`, without fields.
pub fn ask(message: &str) -> InputRequest {
    InputRequest::elicitation(obj(json!({"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {}}})))
}

/// An accepted elicitation answer.
pub fn accept(answer: &str) -> Value {
    json!({"action": "accept", "content": {"answer": answer}})
}

/// A `tools/call` request with id `n`.
pub fn req(n: i64) -> TaskRequest {
    TaskRequest::new(n, "tools/call")
}

/// The ids of `tasks`, in order.
pub fn ids(tasks: &[AnyTask]) -> Vec<String> {
    tasks.iter().map(|task| task.id().to_string()).collect()
}

/// The keys of the open input requests of `task` (none unless it is `input_required`).
pub fn input_keys(task: &AnyTask) -> Vec<String> {
    task.input_requests()
        .map(|requests| requests.iter().map(|(key, _)| key.to_owned()).collect())
        .unwrap_or_default()
}

/// Joins `handle`, failing the test if the thread is still running after `limit`; a panic
/// of the thread goes on in the caller's.
#[track_caller]
pub fn join_within<T>(handle: JoinHandle<T>, limit: Duration, what: &str) -> T {
    let started = Instant::now();
    while !handle.is_finished() {
        assert!(
            started.elapsed() < limit,
            "{what}: still blocked after {limit:?} (a deadlock or a lost wakeup)"
        );
        thread::sleep(ms(1));
    }
    match handle.join() {
        Ok(value) => value,
        Err(panic) => {
            eprintln!("{what}: the thread panicked");
            std::panic::resume_unwind(panic)
        }
    }
}

/// A waiter on `store` for the task `id` (timeout [`BOUND`]), in its own thread.
pub fn spawn_wait<S: TaskStore + Clone + 'static>(
    store: &S,
    owner: &Owner,
    id: &str,
) -> JoinHandle<Result<AnyTask, Error>> {
    let (store, owner, id) = (store.clone(), owner.clone(), id.to_owned());
    thread::spawn(move || store.wait(&owner, &id, Some(BOUND)))
}

/// Every task id of `owner` in `store`, walking all pages of `page_size`.
pub fn list_all<S: TaskStore + ?Sized>(store: &S, owner: &Owner, page_size: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100_000 {
        let page = store.list(owner, cursor.as_deref(), page_size).unwrap();
        all.extend(ids(&page.tasks));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
    panic!("pagination never ends");
}

/// `n` waiters on the task `id` (each with [`spawn_wait`]), checked to have started and to
/// block.
pub fn blocked_waiters<S: TaskStore + Clone + 'static>(
    store: &S,
    owner: &Owner,
    id: &str,
    n: usize,
) -> Vec<JoinHandle<Result<AnyTask, Error>>> {
    let waiters: Vec<_> = (0..n).map(|_| spawn_wait(store, owner, id)).collect();
    thread::sleep(ms(50));
    assert!(
        waiters.iter().all(|waiter| !waiter.is_finished()),
        "waiters return only once the task is terminal"
    );
    waiters
}
