use mcp_tasks::{Completed, Task, TaskId, Timestamp};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let _ = Task::<Completed> {
        id: TaskId::from("t"),
        status_message: None,
        created_at: now,
        last_updated_at: now,
        data: None,
        state: std::marker::PhantomData,
    };
}
