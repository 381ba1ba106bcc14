use mcp_tasks::{JsonObject, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let working = Task::new(TaskId::from("t"), now);
    let _cancelled = working.cancel(now);
    let _completed = working.complete(JsonObject::new(), now);
}
