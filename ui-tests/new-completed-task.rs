use mcp_tasks::{Completed, Task, TaskId, Timestamp};

fn main() {
    let _ = Task::<Completed>::new(TaskId::from("t"), Timestamp::UNIX_EPOCH);
}
