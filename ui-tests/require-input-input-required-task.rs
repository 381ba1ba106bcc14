use mcp_tasks::{InputRequests, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let waiting = Task::new(TaskId::from("t"), now).require_input(InputRequests::new(), now);
    let _ = waiting.require_input(InputRequests::new(), now);
}
