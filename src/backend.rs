//! For store authors: write a [`Driver`], and the [`SharedStore`] over it is your store.
//!
//! A store shared by several server instances (a database, a key-value server, a file
//! several processes open) is one engine-specific piece and one that is the same for every
//! engine. The engine's piece is a [`Driver`]: read a task, write it only at the version a
//! change was decided on, insert and remove, page an owner's tasks (and every owner's),
//! renew leases and say which lapsed, and feed the changes of every instance (or have the
//! store poll). The rest is the [`SharedStore`], written once here: the state machine's
//! decisions ([`Update::apply`] on the task as stored, written through the version check),
//! waits, subscribers, cursors, limits, leases and claims, and the handling of outages.
//! `mcp-tasks-redis`, `mcp-tasks-postgres` and `mcp-tasks-sqlite` are drivers written
//! against this module and the crate's public API only, so a driver of your own has every
//! tool they have. Prove it with the store test kit, `mcp-tasks-testkit`: its
//! `driver_suite!` holds a driver to the contract below, and its `store_suite!` holds the
//! store over it to the registry's behaviour.
//!
//! A backend crate wraps the store in a type of its own, with its constructors:
//!
//! ```ignore
//! #[derive(Clone, Debug)]
//! pub struct MyTaskStore(SharedStore<MyDriver>);
//!
//! impl AsSharedStore for MyTaskStore { // and so a `TaskStore`
//!     type Driver = MyDriver;
//!     fn shared_store(&self) -> &SharedStore<MyDriver> { &self.0 }
//! }
//!
//! impl MyBuilder {
//!     // `ttl_policy`, `limits`, `outage_timeout`, `lease_policy`, … on a `StoreSettings`.
//!     mcp_tasks::store_settings_methods!(settings);
//!
//!     pub fn build(self) -> Result<MyTaskStore, Error> {
//!         self.settings.validate()?;
//!         let driver = MyDriver::connect(&self.url, self.settings.io())?;
//!         SharedStore::start(driver, self.settings).map(MyTaskStore)
//!     }
//! }
//! ```
//!
//! # The driver contract
//! What every method of a [`Driver`] must do is on the method; what holds for all:
//!
//! - **Keys and owners.** A task is named by its [`TaskKey`]: its owner and its id (a
//!   UUID a store issued: ids that are not one never reach a driver). The owner is part of
//!   the name, so another owner's task does not exist for a key (`read` answers `None`).
//!   Engines that keep owners as text use [`owner_tag`] (and [`owner_of_tag`] back).
//! - **The stored form.** A task is its status, two timestamps (Unix milliseconds, from the
//!   engine's clock: [`Driver::now`]) and its record, [`encode`]d by the store and read
//!   back with [`decode`], losslessly. Beside it the engine keeps its version (1 at
//!   insert, one more per write), its expiry (creation plus ttl: an expired task is gone
//!   for every read, page and write at once, whenever its storage is freed), its owner's
//!   creation sequence, the request id and method it was created for, its job, and its
//!   lease (deadline and attempt), none of them on the wire.
//! - **One version check, atomic.** [`Driver::write`] lands only at the version the change
//!   was decided on (and, for the lease conditions, only while the lease is as the
//!   [`Condition`] says), in one atomic step with its feed event; otherwise it changes
//!   nothing and answers what it found ([`Wrote`]). The store decides every change again
//!   on what is stored now, so the first terminal status stays and a cancelled task never
//!   gains a result, on every engine, under any number of instances.
//! - **Replays are exact.** A driver that sends a request again after its connection broke
//!   (the first attempt may or may not have been applied) makes the replay answer as the
//!   first attempt did when it was applied: an insert answers the task, a write
//!   [`Wrote::Written`], a removal the removed task. A write id kept with what it wrote is
//!   the usual way.
//! - **Changes are fed, in order.** Every insert, write, removal and hand-over of any
//!   instance reaches every instance's [`FeedSink`] ([`Driver::listen`]), in the order of
//!   each task's changes, as a [`ChangeEvent`] (the text form [`ChangeEvent::parse`] reads
//!   is the in-repo engines'); a feed that may have missed changes says so
//!   ([`FeedSink::down`]). A driver without a feed answers [`Listening::Polling`] and the
//!   store's waits poll ([`StoreSettings::fallback_poll`]); one that sends a change's event
//!   after the write committed, apart from it (an event lost if its writer stops in
//!   between; each instance's events in the order its writes were answered), answers
//!   [`Listening::FeedAfterCommit`] and the waits poll while the feed is up too.
//! - **Leases.** A lease is a deadline on the engine's clock, the attempt it runs and the
//!   name of the instance that took it ([`NewTask::holder`], [`Write::holder`] for a
//!   claim). [`Driver::renew`] renews, releases or hands over many in one step;
//!   [`Driver::lapsed`] lists the unfinished tasks whose deadline passed (any instance's).
//! - **Time.** A write stamps the task's last update with the engine's time, never
//!   before the one stored, or keeps the one stored when asked ([`Write::keep_updated`]).
//! - **Every owner's tasks.** [`Driver::page_all`] walks the whole store by [`Position`]
//!   (an operator's view), each stored task in one page, with its lease's deadline and
//!   holder; it pushes down what it can of the [`TaskFilter`] and bounds the work of a
//!   call.
//! - **Drain flags** (optional: default bodies). [`Driver::set_draining`] keeps an
//!   operator's drain of an instance, by name, durably; [`Driver::drained`] lists them. The
//!   store reads them before it claims (a drained instance claims nothing) and clears its
//!   own when it starts. A driver that keeps none refuses to set one.
//! - **Faults are errors.** A driver that cannot answer says [`Error::Store`] (with
//!   [`Error::store_caused`], keeping the client's error as the source), never a state:
//!   not "no task", not "stale". The store retries what may be retried (a wait's read, a
//!   handle's finishing write) up to the outage timeout, and answers the error after.
//! - **Bounded calls.** Every call answers within about the I/O timeout
//!   ([`StoreSettings::io_timeout`]), a few when a broken connection is retried.
//! - **Limits.** [`Driver::insert`] checks the per-owner limit atomically with the insert
//!   and may check the total ([`NewTask::limits`]).
//!
//! # What the shared store guarantees
//! With such a driver, a [`SharedStore`] keeps every guarantee of the in-process
//! [`TaskRegistry`](crate::TaskRegistry) across instances, and these:
//!
//! - **A change is one round trip** in the common case: each instance keeps copies of the
//!   unfinished tasks at their latest version (as it wrote them or as its feed told it),
//!   decides a change on the copy and writes it at that version; a refused write answers
//!   the task as it is ([`Wrote::Stale`]) and the change is decided again on that. A
//!   no-op or refusal decided on a copy is decided again on a fresh read before it is
//!   answered (the copy may be behind).
//! - **Waits** register before they read (no lost wake-up), sleep until their task's change
//!   is heard, its expiry, or, while the feed is down, the fallback poll; while the engine
//!   cannot be read, they answer [`Error::Store`] at their timeout or after the outage
//!   timeout, never [`Error::Timeout`] (which would read as "still working").
//! - **Finished work is not lost to an outage.** A typed handle's finishing write
//!   ([`Update::finishing_target`]) is retried with back-off (10 ms doubling to 1 s) until
//!   it lands, the task turns out gone or moved on, or the outage timeout passes; a retry
//!   that finds the task already in the status it was moving to (an earlier try landed,
//!   its answer lost) answers the task as stored: exactly one result.
//! - **Leases and redelivery.** A task created for a typed handle is leased
//!   ([`LeasePolicy`]); each instance's lease thread renews its leases in one driver call
//!   per interval, fails the tasks whose lease lapsed (a write that lands only while the
//!   lease is still lapsed, [`LEASE_LAPSED`]) and files redeliverable ones with attempts
//!   left as claimable after their [`ClaimBackoff`]; a claim is a write that lands only at
//!   the version decided on and once the back-off passed, and takes a new lease in the
//!   same step; the old holder's writes are refused from then on ([`Error::Superseded`]).
//! - **A drained instance claims nothing**: a task an operator's drain hands over is
//!   claimed by another instance ([`TaskAdmin::drain`](crate::admin::TaskAdmin::drain)).
//! - **Cursors** are keyset positions of the owner's creation sequence, encrypted and
//!   tagged per owner ([`CursorKey`]) under a secret every instance shares (configured, or
//!   kept by the engine: [`Driver::share_secret`]).
//!
//! # Writing a store without a driver
//! A store that does not fit the seam (one that lives in one process, as the registry)
//! implements [`TaskStore`](crate::TaskStore) itself with the building blocks here: the
//! shared transition function ([`Update::apply`]), the stored form, the cursor codec, the
//! subscribers ([`Notifier`]) and the one wait primitive ([`Events`], [`Probe`], [`block`],
//! [`future`]), with the decisions of the waits ([`take_answers`], [`cancel_seen`]).

mod cursors;
mod driver;
mod leases;
mod settings;
mod store;
mod urls;
mod waits;

#[doc(inline)]
pub use crate::store_settings_methods;
pub use driver::{
    ChangeEvent, Condition, Driver, FeedEvent, FeedSink, FeedTarget, Inserted, LapsedLease,
    LeaseCall, LeaseOp, Listed, Listening, NewTask, Position, Scan, StoredOrigin, StoredRow,
    TaskFilter, TaskKey, Versioned, Write, Wrote,
};
pub use settings::{
    DEFAULT_FALLBACK_POLL, DEFAULT_IO_TIMEOUT, DEFAULT_OUTAGE_TIMEOUT, MAX_OUTAGE_TIMEOUT,
    StoreSettings,
};
pub use store::{AsSharedStore, SharedStore};
pub use urls::{hide_password, redact_with, unparsable};

pub use crate::error::shorten;
pub use crate::store::copies::StoredParts;
pub use crate::store::cursor::CursorKey;
pub use crate::store::lease_book::Renewal;
pub use crate::store::notify::Notifier;
pub use crate::store::record::{decode, encode};
pub use crate::store::versioned::{LEASE_LAPSED, MAX_DECISIONS};
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
