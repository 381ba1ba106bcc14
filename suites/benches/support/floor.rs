//! The floor every benchmark compares against: a bare `Mutex<HashMap>` keyed by UUID id
//! strings, holding the protocol `Task` fields and the result, with the creation order in a
//! `Vec` for pagination by index. No owners, no TTL, no notifications, no checks beyond
//! "the task exists": the least work the peer workload needs.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Mutex;

use mcp_tasks::{JsonObject, TaskStatus};
use serde_json::Value;

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

    pub fn get(&self, id: &str) {
        let inner = self.inner.lock().expect("not poisoned");
        black_box(inner.tasks.get(id).map(|task| task.task.clone()));
    }

    pub fn update(&self, id: &str, status: TaskStatus) {
        let mut inner = self.inner.lock().expect("not poisoned");
        if let Some(task) = inner.tasks.get_mut(id) {
            task.task.status = status;
            task.task.last_updated_at = now_millis();
        }
    }

    pub fn store(&self, id: &str, result: &JsonObject) {
        let mut inner = self.inner.lock().expect("not poisoned");
        if let Some(task) = inner.tasks.get_mut(id) {
            task.task.status = TaskStatus::Completed;
            task.task.last_updated_at = now_millis();
            task.result = Some(Value::Object(result.clone()));
        }
    }

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
