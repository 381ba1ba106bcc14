use mcp_tasks::{Outcome, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let mut failed = Task::new(TaskId::from("t"), now).fail(Outcome::error(-32603, "boom"), now);
    failed.set_status_message(Some("actually fine".into()), now);
}
