//! Every wait of this crate, in one place: the core's runtime-free futures, awaited on
//! the server's runtime. No wait holds a thread: a pending wait is a registration in the
//! store (a waker), and dropping it (a cancelled request, a finished `select!`)
//! deregisters it.

use mcp_tasks::{Error, InputResponses, Owner, TaskStore};

/// Waits until every input request of the `input_required` task `task_id` is answered,
/// and takes the answers (under the handler's names).
///
/// # Errors
/// As [`TaskStore::wait_for_input_async`].
pub(crate) async fn input<T: TaskStore>(
    store: &T,
    owner: &Owner,
    task_id: &str,
) -> Result<InputResponses, Error> {
    store.wait_for_input_async(owner, task_id).await
}

/// Resolves once the requestor asked to cancel `task_id`, or the task is terminal or
/// gone (nothing is left to cancel then either). A store that cannot be reached says
/// nothing about the task: the wait goes on (each round ends after the store's outage
/// timeout).
pub(crate) async fn cancel_requested<T: TaskStore>(store: &T, owner: &Owner, task_id: &str) {
    loop {
        match store.wait_for_cancel_async(owner, task_id).await {
            Err(Error::Store { .. }) => {}
            // A cancel, a task finished otherwise (no cancel can come), or one gone.
            Ok(()) | Err(_) => return,
        }
    }
}
