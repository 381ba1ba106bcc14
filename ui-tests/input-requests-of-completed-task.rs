use mcp_tasks::{JsonObject, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let done = Task::new(TaskId::from("t"), now).complete(JsonObject::new(), now);
    let _ = done.input_requests();
}
