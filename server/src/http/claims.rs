//! The claim loop of this instance ([`crate::claims`]): over a shared store,
//! the redeliverable tasks of instances that stopped are claimed and run again here, on
//! the runtime's blocking pool, and recorded as running here (so that a shutdown hands
//! them over in turn). A 2025-11-25 task whose session lives on this instance gets that
//! session's status notifications and input requests again; anyone else reads the task
//! with `tasks/get` (or waits with `tasks/result`) as before.

use std::sync::Arc;

use crate::claims::ClaimLoop;
use crate::server::{Claimed, Generation};

use super::App;

/// Starts the claim loop, which stops once the server starts shutting down.
///
/// # Errors
/// The loop's thread cannot be started.
pub fn start(app: &Arc<App>) -> Result<ClaimLoop, String> {
    let runtime = tokio::runtime::Handle::current();
    let shutdown = app.shutdown.clone();
    let for_run = Arc::clone(app);
    ClaimLoop::start(
        Arc::clone(&app.server),
        move || *shutdown.borrow(),
        move |claimed| run(&for_run, &runtime, claimed),
        |warning| log::warn!("claim loop: {warning}"),
    )
    .map_err(|err| format!("cannot start the claim loop: {err}"))
}

/// Records `claimed` as running here and starts its handler (`body::spawn`).
fn run(app: &Arc<App>, runtime: &tokio::runtime::Handle, claimed: Claimed) {
    let session = match &claimed.job {
        Ok(job) if job.generation == Generation::V2025 => job
            .session
            .as_deref()
            .zip(claimed.owner.key())
            .and_then(|(session, principal)| app.sessions.get(session, principal)),
        _ => None,
    };
    match &claimed.job {
        Ok(job) => log::info!(
            "claimed: `{}`, {}{} task={}",
            job.tool,
            claimed.attempts,
            if session.is_some() {
                ", for a session of this instance"
            } else {
                ""
            },
            claimed.task
        ),
        Err(why) => log::warn!(
            "claimed a task whose job cannot run here: {why} task={}",
            claimed.task
        ),
    }
    let task = claimed.task.clone();
    app.tasks.claimed(
        task.clone(),
        claimed.owner.clone(),
        session.as_ref(),
        claimed.attempts.attempt(),
    );
    let tasks = Arc::clone(&app.tasks);
    let work = claimed
        .into_work()
        .then(move || tasks.handler_returned(&task));
    // Claims exist over a shared store only.
    super::body::spawn(runtime, super::body::for_store(work, true));
}
