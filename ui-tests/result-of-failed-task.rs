use mcp_tasks::{Outcome, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let failed = Task::new(TaskId::from("t"), now).fail(Outcome::error(-32603, "boom"), now);
    let _ = failed.result();
}
