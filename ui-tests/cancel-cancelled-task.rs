use mcp_tasks::{Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let cancelled = Task::new(TaskId::from("t"), now).cancel(now);
    let _ = cancelled.cancel(now);
}
