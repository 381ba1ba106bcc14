//! The floor every benchmark compares against: the least work the peer workload needs, in
//! plain Rust, with none of what a task store owes its callers beyond holding the data.
//!
//! What it does: a bare `Mutex<HashMap<String, _>>` keyed by UUID v4 id strings, holding
//! the protocol `Task` fields (status, message, two millisecond stamps, TTL, poll
//! interval) and the result, with the creation order in a `Vec` for pagination by index.
//!
//! What it does not do: no owners (every caller sees every task), no TTL expiry (the TTL
//! is stored, never enforced), no state machine (any status may follow any other, except
//! that [`Floor::store_moved`] refuses to overwrite a terminal task), no opaque or
//! tamper-proof cursor (the cursor is the index in clear), no waiters to wake, no
//! subscribers to notify, no limits, no request id or method kept. A `get` or `list` hands
//! out a copy of the task fields, as a store must; a `result` hands out a deep copy of the
//! stored JSON (it has no way to share it).
//!
//! Two ways to store a result, so that a reader can see what a copy costs:
//! [`Floor::store`] copies the caller's JSON (the caller keeps its own), while
//! [`Floor::store_moved`] takes the caller's `serde_json::Value` and moves it into the
//! entry, after checking that the task is not terminal yet: no copy at all.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;

use mcp_tasks::{JsonObject, TaskStatus};
use serde_json::Value;

/// The floor store: see the module documentation for what it does and does not do.
#[derive(Default)]
pub struct Floor {
    inner: Mutex<FloorInner>,
}

#[derive(Default)]
struct FloorInner {
    tasks: HashMap<String, FloorTask>,
    order: Vec<String>,
}

struct FloorTask {
    task: FloorTaskObject,
    result: Option<Value>,
}

/// The protocol `Task` fields: what `get` and `list` hand out (never the result).
#[derive(Clone)]
#[allow(dead_code)] // the fields a task must hold; the workload reads few of them back
struct FloorTaskObject {
    status: TaskStatus,
    status_message: Option<String>,
    created_at: i64,
    last_updated_at: i64,
    ttl: Option<u64>,
    poll_interval: Option<u64>,
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[allow(dead_code)] // each benchmark binary uses some of these
impl Floor {
    /// A new `working` task: a fresh UUID v4 string id, kept in the map and the order.
    pub fn create(&self, ttl: u64) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let now = now_millis();
        let task = FloorTask {
            task: FloorTaskObject {
                status: TaskStatus::Working,
                status_message: None,
                created_at: now,
                last_updated_at: now,
                ttl: Some(ttl),
                poll_interval: None,
            },
            result: None,
        };
        let mut inner = self.inner.lock().expect("no panics while locked");
        inner.tasks.insert(id.clone(), task);
        inner.order.push(id.clone());
        id
    }

    /// A copy of the task fields (no owner check: there are no owners).
    pub fn get(&self, id: &str) {
        let inner = self.inner.lock().expect("not poisoned");
        black_box(inner.tasks.get(id).map(|task| task.task.clone()));
    }

    /// Sets the status and the update stamp, with no check of the move.
    pub fn update(&self, id: &str, status: TaskStatus) {
        let mut inner = self.inner.lock().expect("not poisoned");
        if let Some(task) = inner.tasks.get_mut(id) {
            task.task.status = status;
            task.task.last_updated_at = now_millis();
        }
    }

    /// Stores a copy of `result` (a deep clone of the caller's JSON, under the lock) and
    /// marks the task completed, whatever its status was.
    pub fn store(&self, id: &str, result: &JsonObject) {
        let mut inner = self.inner.lock().expect("not poisoned");
        if let Some(task) = inner.tasks.get_mut(id) {
            task.task.status = TaskStatus::Completed;
            task.task.last_updated_at = now_millis();
            task.result = Some(Value::Object(result.clone()));
        }
    }

    /// The moving floor: checks that the task exists and is not terminal yet, then moves
    /// the caller's `result` into the entry (no copy) and marks the task completed.
    /// Returns whether it was stored.
    pub fn store_moved(&self, id: &str, result: Value) -> bool {
        let mut inner = self.inner.lock().expect("not poisoned");
        match inner.tasks.get_mut(id) {
            Some(task) if !task.task.status.is_terminal() => {
                task.task.status = TaskStatus::Completed;
                task.task.last_updated_at = now_millis();
                task.result = Some(result);
                true
            }
            _ => false,
        }
    }

    /// A deep copy of the stored result, if any.
    pub fn result(&self, id: &str) {
        let inner = self.inner.lock().expect("not poisoned");
        black_box(inner.tasks.get(id).and_then(|task| task.result.clone()));
    }

    /// One page of `page` tasks after index `cursor`; returns its size and the next cursor.
    pub fn list(&self, cursor: Option<&str>, page: usize) -> (usize, Option<String>) {
        let start: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
        let inner = self.inner.lock().expect("not poisoned");
        let tasks: Vec<FloorTaskObject> = inner
            .order
            .iter()
            .skip(start)
            .take(page)
            .filter_map(|id| inner.tasks.get(id).map(|task| task.task.clone()))
            .collect();
        let next = start + tasks.len();
        let more = next < inner.order.len();
        (black_box(tasks).len(), more.then(|| next.to_string()))
    }
}
