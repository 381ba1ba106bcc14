use mcp_tasks::{JsonObject, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let mut working = Task::new(TaskId::from("t"), now);
    let _ = working.answer([("confirm".to_owned(), JsonObject::new())], now);
}
