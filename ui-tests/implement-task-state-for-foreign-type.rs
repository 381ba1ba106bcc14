use mcp_tasks::{AnyTask, Task, TaskState, TaskStatus};

#[derive(Debug)]
enum Paused {}

impl TaskState for Paused {
    const STATUS: TaskStatus = TaskStatus::Working;
    type Data = ();

    fn wrap(_task: Task<Self>) -> AnyTask {
        unimplemented!()
    }

    fn unwrap(any: AnyTask) -> Result<Task<Self>, AnyTask> {
        Err(any)
    }

    fn peek(_any: &AnyTask) -> Option<&Task<Self>> {
        None
    }
}

fn main() {}
