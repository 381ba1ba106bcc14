use mcp_tasks::{Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let working = Task::new(TaskId::from("t"), now);
    let _ = working.resume(now);
}
