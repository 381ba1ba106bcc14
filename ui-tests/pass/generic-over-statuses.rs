//! User code can be generic over statuses through the public capability traits, and the
//! erased form converts back with a checked `TryFrom`.
use mcp_tasks::{
    AnyTask, Cancelled, NonTerminal, Task, TaskId, TaskState, TaskStatus, Timestamp, Working,
};

fn stop<S: NonTerminal>(task: Task<S>, now: Timestamp) -> Task<Cancelled> {
    task.cancel(now)
}

fn status_of<S: TaskState>(task: &Task<S>) -> TaskStatus {
    task.status()
}

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let working = Task::new(TaskId::from("t"), now);
    assert_eq!(status_of(&working), TaskStatus::Working);
    let any: AnyTask = stop(working, now).into();
    let back = Task::<Working>::try_from(any).unwrap_err().into_inner();
    assert!(Task::<Cancelled>::try_from(back).is_ok());
}
