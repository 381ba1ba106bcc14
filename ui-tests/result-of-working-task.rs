use mcp_tasks::{Task, TaskId, Timestamp};

fn main() {
    let working = Task::new(TaskId::from("t"), Timestamp::UNIX_EPOCH);
    let _ = working.result();
}
