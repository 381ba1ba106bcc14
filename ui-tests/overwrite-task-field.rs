use mcp_tasks::{Task, TaskId, Timestamp};

fn main() {
    let mut task = Task::new(TaskId::from("t"), Timestamp::UNIX_EPOCH);
    task.id = TaskId::from("someone-else");
}
