//! Every path of the spec's transition table compiles.
use mcp_tasks::{
    Change, Finished, InputRequests, JsonObject, Outcome, Task, TaskId, TaskStatus, Timestamp,
};

fn main() {
    let now = Timestamp::UNIX_EPOCH;
    let working = Task::new(TaskId::from("t"), now).with_ttl(Some(60_000));

    let waiting = working.clone().require_input(InputRequests::new(), now);
    assert_eq!(waiting.clone().resume(now).status(), TaskStatus::Working);
    assert_eq!(
        waiting.clone().complete(JsonObject::new(), now).status(),
        TaskStatus::Completed
    );
    assert_eq!(
        waiting
            .clone()
            .fail(Outcome::error(-32603, "x"), now)
            .status(),
        TaskStatus::Failed
    );
    assert_eq!(waiting.cancel(now).status(), TaskStatus::Cancelled);

    assert_eq!(
        working.clone().complete(JsonObject::new(), now).status(),
        TaskStatus::Completed
    );
    assert_eq!(
        working
            .clone()
            .fail(Outcome::error(-32603, "x"), now)
            .status(),
        TaskStatus::Failed
    );
    assert!(matches!(
        working.clone().finish(JsonObject::new(), now),
        Finished::Completed(_)
    ));

    let mut working = working;
    working.set_status_message(Some("halfway".into()), now);
    let cancelled = working.cancel(Change::at(now).with_message("stopped"));
    assert_eq!(cancelled.status_message(), Some("stopped"));
}
