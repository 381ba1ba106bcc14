use mcp_tasks::{Outcome, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let cancelled = Task::new(TaskId::from("t"), now).cancel(now);
    let _ = cancelled.fail(Outcome::error(-32603, "too late"), now);
}
