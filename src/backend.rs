//! For store authors: what a [`TaskStore`](crate::TaskStore) backend is built from.
//!
//! The in-process [`TaskRegistry`](crate::TaskRegistry) and the backend crates of this
//! project (`mcp-tasks-redis`, `mcp-tasks-postgres`) are written against this module and
//! the crate's public API only, so a backend of your own (a database, a cloud service, an
//! SDK's store) has every tool they have. Prove it with the store test kit,
//! `mcp-tasks-testkit`: a backend that passes it behaves like the registry.
//!
//! # The contract
//! A backend implements the required methods of [`TaskStore`](crate::TaskStore); the rest
//! (cancel, status updates, results, answers, TTL changes) are provided on top of
//! [`update`](crate::TaskStore::update). What it must guarantee:
//!
//! - **Owners.** Every operation names the caller's [`Owner`]; a task is
//!   visible to the exact owner it was created for and to nobody else, who gets the error
//!   of an unknown id ([`Error::TaskNotFound`]). Ids are fresh
//!   [`TaskId::random`](crate::TaskId::random)s; only ids a store could have issued name
//!   anything ([`is_task_id`]).
//! - **One state machine, atomic steps.** A change is decided by the core:
//!   [`Update::apply`] on the task *as stored*, at the store's current time. The answer
//!   ([`Step`]) is written only if nobody changed the task meanwhile (a lock, a
//!   compare-and-set on a version, a conditional `UPDATE`); if someone did, decide again
//!   on what is stored now. So the first terminal status stays and a cancelled task never
//!   gains a result, on every backend.
//! - **The stored form.** [`encode`] and [`decode`] turn a task into its status, two
//!   timestamps and a JSON body and back, losslessly (input keys, answers not yet taken,
//!   the cancel-requested flag included). A backend that keeps its own clock stamps a
//!   write with [`set_last_updated_at`]. A new task carries its request's trace context
//!   (`Task::new(..).with_trace_context(request.trace_context().cloned())`); the body
//!   keeps it from then on, so a task's work continues its caller's trace on whichever
//!   instance runs it.
//! - **Cursors.** `tasks/list` pages are keyset pages over a per-owner creation sequence;
//!   [`CursorKey`] turns a position into an opaque cursor bound to its owner and back.
//!   Instances sharing tasks share the secret.
//! - **Waits.** Keep one [`Events`] table, [notify](Events::notify) a task's key after each
//!   of its changes (from any instance, if the store is shared), and write each wait once
//!   as a probe ([`Probe`]): [`block`] runs it as the blocking wait, [`future`] as the
//!   runtime-free future. The decisions are shared: [`take_answers`] for
//!   [`wait_for_input`](crate::TaskStore::wait_for_input), [`cancel_seen`] for
//!   [`wait_for_cancel_async`](crate::TaskStore::wait_for_cancel_async), a terminal task
//!   for [`wait`](crate::TaskStore::wait).
//! - **Subscribers.** A [`Notifier`] keeps them: [queue](Notifier::queue) a change where it
//!   is decided, [deliver](Notifier::deliver) outside your locks.
//! - **Leases** (stores whose tasks outlive a process). A task created by
//!   [`insert_leased`](crate::TaskStore::insert_leased) comes with a [`Lease`] the store
//!   renews while the handler's [`TaskHandle`](crate::TaskHandle) lives
//!   ([`Lease::held`] with your [`LeaseHolder`]); when it lapses the task is failed with
//!   [`LEASE_LAPSED`] by any instance, fenced so that the old holder's late writes are
//!   refused. [`LeasePolicy`] is the operator's knob. A handle's finishing writes
//!   ([`Update::finishing_target`]) carry work already done: retry them through a
//!   transient fault rather than lose them.
//! - **Stores that write with a version check** (a compare-and-set, as Redis and
//!   PostgreSQL do) share the decisions around their writes: [`update_versioned`] (decide,
//!   write at the version decided on, decide again on what the store answers),
//!   [`retry_finishing`] (a handle's finishing write through an outage), [`lapse`] (the
//!   verdict on a lapsed lease), [`claim_next`] and [`claim_of`] (a claim). And what an
//!   instance keeps: [`Copies`] of unfinished tasks at their latest version, the [`Feed`]
//!   of its waits and its change feed's state, its [`LeaseBook`] and [`Claimables`].
//! - **Faults are errors.** A store that cannot answer says [`Error::store`] or
//!   [`Error::store_caused`] (`-32603`), never a state: not "cancelled", not "gone", not
//!   "still working".

pub use crate::error::shorten;
pub use crate::store::copies::{Copies, DEFAULT_COPIES, StoredParts};
pub use crate::store::cursor::CursorKey;
pub use crate::store::feed::Feed;
pub use crate::store::lease_book::{Claimables, HeldLease, Hold, LeaseBook, Renewal};
pub use crate::store::notify::Notifier;
pub use crate::store::record::{decode, encode};
pub use crate::store::versioned::{
    DecidedOn, LEASE_LAPSED, Lapse, MAX_DECISIONS, Written, claim_next, claim_of, lapse,
    retry_finishing, update_versioned,
};
pub use crate::store::wait::{Events, Listener, Mark, Probe, block, cancel_seen, future};
pub use crate::store::{LeaseHolder, attempts_exhausted, handle_conflict, take_answers};

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::id::TaskId;
use crate::store::Owner;

#[doc(no_inline)]
pub use crate::{
    Attempts, Claim, ClaimBackoff, Error, Lease, LeasePolicy, Redelivery, Step, Update,
};

/// Whether `text` is a task id a store could have issued: the canonical lowercase,
/// hyphenated form of a UUID. Anything else names no task (answer
/// [`Error::TaskNotFound`] without asking the storage).
#[must_use]
pub fn is_task_id(text: &str) -> bool {
    TaskId::parse_canonical_uuid(text).is_some()
}

/// The tag of an owner, for stores that keep owners as text (a key, a column): `a` for
/// anonymous, else `o` and the owner's key in hex. Tags of different owners differ, and
/// are made of `[0-9a-fo]` only, so they are safe in keys, channel messages and SQL.
#[must_use]
pub fn owner_tag(owner: &Owner) -> String {
    match owner.key() {
        None => "a".to_owned(),
        Some(key) => {
            let mut tag = String::with_capacity(1 + 2 * key.len());
            tag.push('o');
            for byte in key.bytes() {
                tag.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
                tag.push(char::from(b"0123456789abcdef"[usize::from(byte & 0xf)]));
            }
            tag
        }
    }
}

/// The owner whose [`owner_tag`] is `tag`, if it is one.
#[must_use]
pub fn owner_of_tag(tag: &str) -> Option<Owner> {
    if tag == "a" {
        return Some(Owner::anonymous());
    }
    let hex = tag.strip_prefix('o')?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok().map(Owner::new)
}

/// Sets when `task` last changed, as a store that keeps time itself recorded the write
/// (never earlier than the time the task already shows: `lastUpdatedAt` does not move
/// backwards).
pub fn set_last_updated_at(task: &mut AnyTask, at: Timestamp) {
    task.set_last_updated_at(at);
}
