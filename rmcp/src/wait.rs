//! Every wait of this crate, in one place.
//!
//! For now each wait runs the store's blocking call on tokio's blocking pool in short
//! slices (so an abandoned wait holds a blocking thread for at most one slice) and polls
//! between them. The core is gaining runtime-free futures for exactly these waits
//! (`TaskStore::wait_for_input_async`, `TaskHandle::cancelled`); once they land, the two
//! functions below become one call each and nothing else in the crate changes.

use std::time::Duration;

use mcp_tasks::{Error, InputResponses, Owner, TaskStore};

/// The longest one blocking slice of a wait takes.
const SLICE: Duration = Duration::from_millis(250);

/// How often [`cancel_requested`] looks at the task.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Runs a blocking store call off the async workers.
async fn blocking<T, R>(store: &T, call: impl FnOnce(&T) -> R + Send + 'static) -> R
where
    T: TaskStore + Clone + 'static,
    R: Send + 'static,
{
    let store = store.clone();
    match tokio::task::spawn_blocking(move || call(&store)).await {
        Ok(result) => result,
        // The blocking call panicked: pass the panic on, as if it had run here.
        Err(join) => std::panic::resume_unwind(join.into_panic()),
    }
}

/// Waits until every input request of the `input_required` task `task_id` is answered,
/// and takes the answers (under the handler's names).
///
/// # Errors
/// As [`TaskStore::wait_for_input`], without [`Error::Timeout`].
pub(crate) async fn input<T: TaskStore + Clone + 'static>(
    store: &T,
    owner: &Owner,
    task_id: &str,
) -> Result<InputResponses, Error> {
    loop {
        let owner = owner.clone();
        let id = task_id.to_owned();
        let slice = blocking(store, move |store| {
            store.wait_for_input(&owner, &id, Some(SLICE))
        })
        .await;
        match slice {
            Err(Error::Timeout { .. }) => {}
            other => return other,
        }
    }
}

/// Resolves once the requestor asked to cancel `task_id`, or the task is terminal or
/// gone (nothing is left to cancel then either). A store that cannot be reached says
/// nothing about the task: the wait goes on.
pub(crate) async fn cancel_requested<T: TaskStore + Clone + 'static>(
    store: &T,
    owner: &Owner,
    task_id: &str,
) {
    loop {
        let owner = owner.clone();
        let id = task_id.to_owned();
        let seen = blocking(store, move |store| store.get(&owner, &id)).await;
        match seen {
            Ok(task) if task.cancel_requested() || task.is_terminal() => return,
            Ok(_) | Err(Error::Store { .. }) => {}
            Err(_) => return,
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}
