//! [`Driver`]: what an engine does for the [`SharedStore`](super::SharedStore), and the
//! vocabulary of its calls.
//!
//! The contract of every method is on the method; what holds for all of them is in the
//! [module docs](super#the-driver-contract).

use std::sync::Weak;
use std::time::Duration;

use uuid::Uuid;

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::error::{Error, LimitScope};
use crate::status::TaskStatus;
use crate::store::Limits;
use crate::store::Owner;
use crate::store::copies::StoredParts;
use crate::store::lease_book::Renewal;

/// What an engine does for the [`SharedStore`](super::SharedStore): reads, a
/// version-checked write, pages, leases, a change feed. Everything above it (the state
/// machine's decisions, waits, subscribers, cursors, claims, outage handling) is the
/// shared store's, written once for every engine.
///
/// Every method blocks its thread for at most about the driver's I/O timeout (a few, when
/// it retries a broken connection) and answers [`Error::Store`] when the engine cannot
/// answer: never a state (an unreachable engine is not "no task"). The trait is
/// dyn-compatible (`Box<dyn Driver>` is a driver), so a driver may also wrap another (the
/// store test kit injects faults that way).
pub trait Driver: Send + Sync + std::fmt::Debug + 'static {
    /// The task under `key` with its version and the time it has left, or `None` if there
    /// is none (never created, removed, expired, or another owner's: the key's owner is
    /// part of its name).
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer or the task does not read as one
    /// ([`decode`](super::decode)).
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error>;

    /// Stores a new task at version 1, in one atomic step with its limit check: its status
    /// is `working`, its creation and last update are the engine's time now (answered),
    /// its expiry `ttl` after that, its creation sequence the next of its owner's (above
    /// every earlier one, see [`page`](Self::page)); with `lease`, it is leased for that
    /// long from now, for attempt 1 when it has a `job`. Its change is sent on the feed
    /// (not notified: a creation is not a status change).
    ///
    /// A replay of an insert whose reply was lost answers as the first attempt did.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer, or a task with this key exists.
    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error>;

    /// Writes `write.task` only if the stored task is at `write.version` (and its lease
    /// meets `write.condition`, and it is not finished in another status than the one
    /// written: [`Wrote::Illegal`]), as version `write.version + 1`, with the engine's time as
    /// its last update (never before the one stored; the one stored when
    /// `write.keep_updated`), its expiry moved to its creation plus its ttl when
    /// `write.ttl_changed`, leased to `write.holder` by a claim; and sends the change on the
    /// feed, notified when `write.notify`. One atomic step.
    ///
    /// A replay of a write whose reply was lost, which finds its own write (and no later
    /// one), answers [`Wrote::Written`] again without writing.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error>;

    /// Removes the task under `key` and sends its removal on the feed; answers the task as
    /// it was, or `None` if there is none. A replay of a removal whose reply was lost
    /// answers the removed task again.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error>;

    /// Up to `limit` of `owner`'s tasks, in the order of their creation sequence, after
    /// the one at `after` (from the first with `None`): a keyset page. An owner's sequence
    /// grows with every creation and is never reused, so a page continues right after the
    /// last task shown whatever was removed or expired meanwhile.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error>;

    /// Up to `limit` stored tasks of every owner after `after` (from the first with
    /// `None`), in [`Position`] order, for an operator's view of the whole store: every
    /// task stored when a walk of the pages starts and still stored when it ends is in
    /// exactly one page. The driver pushes down what it can of `filter`: it never leaves
    /// out a task the filter matches, and may return some it does not match (the store
    /// checks each row with [`TaskFilter::matches`]). It may also stop early, with fewer
    /// rows (bounding the work of one call): [`Scan::next`] says where the next page
    /// starts, `None` once the end is reached.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer, or cannot list across owners (a
    /// deployment that keeps no store-wide index, said in the message).
    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error>;

    /// The request the task under `key` was created for, as stored, or `None` if there is
    /// no such task.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn origin(&self, key: &TaskKey) -> Result<Option<StoredOrigin>, Error>;

    /// The job stored with the task under `key` (JSON text, empty for none), or `None` if
    /// there is no such task.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error>;

    /// One renewal round of this instance's leases, in one step: per call, in order,
    /// whether the lease was renewed (its deadline now plus `lease`), released (no lease
    /// any more: the task never lapses), handed over (its deadline now: it lapsed, and the
    /// change is sent on the feed as [`ChangeEvent::Claimable`]), or found gone (no such
    /// task, finished, no lease, or a lease of another attempt than the call's) or lapsed
    /// already (its deadline passed: too late to renew or hand over).
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error>;

    /// Up to `limit` unfinished tasks whose lease lapsed (any instance's), soonest
    /// deadline first; forgets what it keeps of leases of tasks gone or finished.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error>;

    /// Starts the change feed, if the engine has one: every change of every instance
    /// (inserts, writes, removals, hand-overs) reaches `sink`, in the order of each
    /// task's changes, from when the driver calls [`FeedSink::up`]; the driver calls
    /// [`FeedSink::down`] whenever changes may have gone unheard (a lost connection) and
    /// `up` once they are heard again. It stops once the sink answers that the store is
    /// gone. A driver without a feed answers [`Listening::Polling`]: the store's waits
    /// then read their task every fallback poll; one whose events may be lost by a writer
    /// that stops between its commit and its event answers [`Listening::FeedAfterCommit`]:
    /// the waits then poll too, while the feed is up.
    ///
    /// # Errors
    /// [`Error::Store`] if the feed cannot be started.
    fn listen(&self, sink: FeedSink) -> Result<Listening, Error>;

    /// The secret every instance signs cursors with: the one the storage keeps, or
    /// `mine`, kept from now on if it keeps none. Atomic: instances starting at once agree.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer, or keeps a secret it did not write.
    fn share_secret(&self, mine: u128) -> Result<u128, Error>;

    /// The engine's clock (the one every timestamp of the store comes from).
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn now(&self) -> Result<Timestamp, Error>;

    /// Housekeeping, once per lease round of every instance (deleting expired tasks,
    /// pruning indexes); a driver that needs it less often skips rounds. The default does
    /// nothing.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer (the round is tried again next time).
    fn sweep(&self) -> Result<(), Error> {
        Ok(())
    }

    /// How many times this driver lost its connections so far (a storage that forgets
    /// what it keeps on a restart makes the store ask [`share_secret`](Self::share_secret)
    /// again after one). The default, for a storage that never forgets: 0.
    fn disconnections(&self) -> u64 {
        0
    }

    /// The names of the instances an operator drained
    /// ([`set_draining`](Self::set_draining)), kept by the engine for every instance to
    /// read: a drained instance claims no task. The default, for an engine that keeps no
    /// drain flags: none.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer.
    fn drained(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// Sets (`draining`) or clears the drain flag of the instance `name`, durably (until
    /// cleared: an instance clears its own when it starts); answers whether it was set
    /// before. The default keeps no flags: clearing answers `false`, setting is refused.
    ///
    /// # Errors
    /// [`Error::Store`] if the engine cannot answer, or (the default) keeps no flags.
    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        let _ = name;
        if draining {
            Err(Error::store("this store keeps no drain flags"))
        } else {
            Ok(false)
        }
    }
}

impl<D: Driver + ?Sized> Driver for Box<D> {
    fn read(&self, key: &TaskKey) -> Result<Option<Versioned>, Error> {
        (**self).read(key)
    }

    fn insert(&self, new: &NewTask<'_>) -> Result<Inserted, Error> {
        (**self).insert(new)
    }

    fn write(&self, write: &Write<'_>) -> Result<Wrote, Error> {
        (**self).write(write)
    }

    fn remove(&self, key: &TaskKey) -> Result<Option<AnyTask>, Error> {
        (**self).remove(key)
    }

    fn page(&self, owner: &Owner, after: Option<u64>, limit: usize) -> Result<Vec<Listed>, Error> {
        (**self).page(owner, after, limit)
    }

    fn page_all(
        &self,
        after: Option<Position>,
        filter: &TaskFilter,
        limit: usize,
    ) -> Result<Scan, Error> {
        (**self).page_all(after, filter, limit)
    }

    fn origin(&self, key: &TaskKey) -> Result<Option<StoredOrigin>, Error> {
        (**self).origin(key)
    }

    fn job(&self, key: &TaskKey) -> Result<Option<String>, Error> {
        (**self).job(key)
    }

    fn renew(&self, calls: &[LeaseCall], lease: Duration) -> Result<Vec<Renewal>, Error> {
        (**self).renew(calls, lease)
    }

    fn lapsed(&self, limit: usize) -> Result<Vec<LapsedLease>, Error> {
        (**self).lapsed(limit)
    }

    fn listen(&self, sink: FeedSink) -> Result<Listening, Error> {
        (**self).listen(sink)
    }

    fn share_secret(&self, mine: u128) -> Result<u128, Error> {
        (**self).share_secret(mine)
    }

    fn now(&self) -> Result<Timestamp, Error> {
        (**self).now()
    }

    fn sweep(&self) -> Result<(), Error> {
        (**self).sweep()
    }

    fn disconnections(&self) -> u64 {
        (**self).disconnections()
    }

    fn drained(&self) -> Result<Vec<String>, Error> {
        (**self).drained()
    }

    fn set_draining(&self, name: &str, draining: bool) -> Result<bool, Error> {
        (**self).set_draining(name, draining)
    }
}

/// How a driver names a task: its owner and its id (a UUID: only ids a store issued name
/// a task). Two owners' tasks never share a key, so a driver that names tasks by key
/// keeps owners apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    owner: Owner,
    id: Uuid,
}

impl TaskKey {
    /// The key of `owner`'s task `id`.
    #[must_use]
    pub fn new(owner: Owner, id: Uuid) -> Self {
        TaskKey { owner, id }
    }

    /// The key of the task whose owner has the [`owner_tag`](super::owner_tag) `tag` and
    /// whose id is `id` in canonical form, as a driver's event or row names it; `None` if
    /// either is not one a store wrote.
    #[must_use]
    pub fn from_tag(tag: &str, id: &str) -> Option<Self> {
        let owner = super::owner_of_tag(tag)?;
        let id = crate::id::TaskId::parse_canonical_uuid(id)?;
        Some(TaskKey { owner, id })
    }

    /// The owner.
    #[must_use]
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The id.
    #[must_use]
    pub fn id(&self) -> Uuid {
        self.id
    }

    /// The owner's [`owner_tag`](super::owner_tag), for engines that keep owners as text.
    #[must_use]
    pub fn owner_tag(&self) -> String {
        super::owner_tag(&self.owner)
    }
}

/// A task as a driver read it: at which version, and how long it has left.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    /// The version: 1 when created, one more with every write.
    pub version: u64,
    /// The task.
    pub task: AnyTask,
    /// Time left before it expires; `None` without a ttl.
    pub expires_in: Option<Duration>,
}

/// A task to insert ([`Driver::insert`]).
#[derive(Debug, Clone, Copy)]
pub struct NewTask<'a> {
    /// Its key.
    pub key: &'a TaskKey,
    /// Its record ([`encode`](super::encode); its timestamps are the engine's to set).
    pub body: &'a str,
    /// Its ttl in milliseconds from its creation; `None`: it never expires.
    pub ttl: Option<u64>,
    /// The id of the request it was created for, as JSON text.
    pub request_id: &'a str,
    /// The method of that request.
    pub method: &'a str,
    /// The job of a redeliverable task, as JSON text.
    pub job: Option<&'a str>,
    /// The lease this instance takes on it, if any.
    pub lease: Option<Duration>,
    /// The name of the instance inserting it: the lease's holder, kept while it holds it
    /// ([`StoredRow::lease_holder`]).
    pub holder: &'a str,
    /// The limits on stored tasks: the driver refuses the insert when the owner has
    /// `per_owner` tasks stored, and it may refuse it when the store holds `total` (say
    /// in its docs which it counts).
    pub limits: Limits,
}

/// What an insert came to ([`Driver::insert`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// Stored, created at this time of the engine's clock.
    Created(Timestamp),
    /// Refused: this limit is reached; nothing was stored.
    Full(LimitScope),
}

/// A version-checked write ([`Driver::write`]).
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    /// The task's key.
    pub key: &'a TaskKey,
    /// The version the change was decided on: the write lands only at it.
    pub version: u64,
    /// The task to store (its status, ttl, record), as decided.
    pub task: &'a AnyTask,
    /// Its record ([`encode`](super::encode)).
    pub body: &'a str,
    /// Whether the ttl differs from the task's at `version` (its expiry moves).
    pub ttl_changed: bool,
    /// Whether the wire-visible task changed: subscribers are told.
    pub notify: bool,
    /// Whether the task's last update stays as stored (a write nobody sees on the wire may
    /// keep it); otherwise it moves to the engine's time.
    pub keep_updated: bool,
    /// What the task's lease must be for the write to land.
    pub condition: Condition,
    /// The name of the instance writing: a claim leases the task to it.
    pub holder: &'a str,
}

/// The lease condition of a write ([`Write::condition`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// None: the version alone decides.
    Free,
    /// Only while the task's lease is lapsed (its deadline passed): the verdict on a
    /// task whose instance stopped. A lease renewed meanwhile answers [`Wrote::Held`].
    Lapsed,
    /// A claim: only if the task's lease lapsed at least `backoff` ago (its deadline plus
    /// `backoff` is past; a hand-over sets the deadline to now); then, in the same step,
    /// the task is leased for `lease` from now, for `attempt`, and the write answers its
    /// job. Otherwise [`Wrote::Held`].
    Claim {
        /// How long ago the lease must have lapsed.
        backoff: Duration,
        /// The new lease.
        lease: Duration,
        /// The attempt the new lease runs.
        attempt: u32,
    },
}

/// What a version-checked write came to ([`Driver::write`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Wrote {
    /// Written: the task's last update as stored now (the engine's time of the write,
    /// unless it kept the one stored); for a claim, with the task's job (JSON text, empty
    /// for none).
    Written {
        /// The task's last update as stored.
        at: Timestamp,
        /// The job, for a claim.
        job: Option<String>,
    },
    /// Not written: the task is at another version. With the task as it is and its
    /// version, when the engine answers them in the same step (the change is then decided
    /// again without another read).
    Stale(Option<(u64, AnyTask)>),
    /// Not written: the lease condition does not hold.
    Held,
    /// Not written: there is no such task.
    Gone,
    /// Not written: the stored task is finished in this status and the write would move it
    /// to another (the driver checks this much of the spec's table itself, a guard against
    /// an instance that decides differently).
    Illegal(TaskStatus),
}

/// One task of an owner's page ([`Driver::page`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Its creation sequence.
    pub position: u64,
    /// The task.
    pub task: AnyTask,
}

/// Where a task stands in the pages of every owner's tasks ([`Driver::page_all`]): its
/// creation sequence, then its id. A later creation of the same owner stands after an
/// earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The creation sequence (an engine may keep one for the whole store).
    pub seq: u64,
    /// The task's id, for tasks of one sequence number.
    pub id: Uuid,
}

/// Which tasks a page of every owner's tasks holds ([`Driver::page_all`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskFilter {
    /// Only tasks in one of these statuses; `None`: in any.
    pub statuses: Option<Vec<TaskStatus>>,
}

impl TaskFilter {
    /// Every task.
    #[must_use]
    pub fn any() -> Self {
        TaskFilter::default()
    }

    /// The same filter, also keeping tasks in `status` (only those of the statuses named).
    #[must_use]
    pub fn with_status(mut self, status: TaskStatus) -> Self {
        let statuses = self.statuses.get_or_insert_with(Vec::new);
        if !statuses.contains(&status) {
            statuses.push(status);
        }
        self
    }

    /// Whether `task` is one the filter keeps.
    #[must_use]
    pub fn matches(&self, task: &AnyTask) -> bool {
        self.statuses
            .as_ref()
            .is_none_or(|statuses| statuses.contains(&task.status()))
    }
}

/// One stored task of a page of every owner's tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRow {
    /// Its key (its owner).
    pub key: TaskKey,
    /// Where it stands.
    pub position: Position,
    /// The task.
    pub task: AnyTask,
    /// The deadline of its lease, while an unfinished task has one (the epoch for a task
    /// handed over).
    pub leased_until: Option<Timestamp>,
    /// The instance that took that lease ([`StoreSettings::instance_name`](super::StoreSettings::instance_name)), while it has one.
    pub lease_holder: Option<String>,
}

/// A page of every owner's tasks ([`Driver::page_all`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// The tasks, in position order.
    pub rows: Vec<StoredRow>,
    /// Where the next page starts (after this position); `None`: nothing follows.
    pub next: Option<Position>,
}

/// The request a task was created for, as a driver keeps it ([`Driver::origin`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOrigin {
    /// The request id as JSON text.
    pub request_id: String,
    /// The method.
    pub method: String,
}

/// One lease of a renewal round ([`Driver::renew`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseCall {
    /// The task.
    pub key: TaskKey,
    /// What to do with its lease.
    pub op: LeaseOp,
    /// The attempt this instance's lease runs (`None` for a task that runs once): a lease
    /// of another attempt is not this instance's ([`Renewal::Gone`]).
    pub attempt: Option<u32>,
}

/// What a renewal round does with one lease ([`LeaseCall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseOp {
    /// Renew it.
    Renew,
    /// Give it up: the task is driven by id from now on.
    Release,
    /// Let it lapse now, and tell every instance that the task is claimable.
    HandOver,
}

impl LeaseOp {
    /// The op as the in-repo engines' scripts and functions take it: `k` (keep: renew),
    /// `r` (release) or `h` (hand over).
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            LeaseOp::Renew => "k",
            LeaseOp::Release => "r",
            LeaseOp::HandOver => "h",
        }
    }
}

/// A lapsed lease ([`Driver::lapsed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LapsedLease {
    /// The task.
    pub key: TaskKey,
    /// Whether its instance handed it over (rather than stopped renewing it).
    pub handed_over: bool,
}

/// Whether a driver feeds the store its changes ([`Driver::listen`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listening {
    /// It does: waits sleep until their task's change (polling only while the feed is
    /// down).
    Feed,
    /// It does, but sends a change's event after the write committed, apart from it (so
    /// that events do not serialize the engine's commits): a writer that stops in between
    /// loses that event, so waits also read their task every fallback poll while the feed
    /// is up, and sleep until their task's change or that poll, whichever comes first.
    FeedAfterCommit,
    /// It has no feed: waits read their task every fallback poll.
    Polling,
}

/// One change a driver's feed carries ([`FeedSink`]).
#[derive(Debug, Clone)]
pub enum ChangeEvent {
    /// The task under `key` was inserted or written, at `version`; `notify` when the
    /// wire-visible task changed; with its stored parts when they fit in the event.
    Written {
        /// The task.
        key: TaskKey,
        /// Its version now.
        version: u64,
        /// Whether subscribers are told.
        notify: bool,
        /// The task as stored, if the event carries it.
        parts: Option<StoredParts>,
    },
    /// The task under `key` was removed.
    Removed {
        /// The task.
        key: TaskKey,
    },
    /// The task under `key` was handed over by its instance: claimable now.
    Claimable {
        /// The task.
        key: TaskKey,
    },
}

impl ChangeEvent {
    /// The task the event is about.
    #[must_use]
    pub fn key(&self) -> &TaskKey {
        match self {
            ChangeEvent::Written { key, .. }
            | ChangeEvent::Removed { key }
            | ChangeEvent::Claimable { key } => key,
        }
    }

    /// Reads the event text both in-repo engines send (from their scripts or functions),
    /// lines joined by `\n`: `tag\nid\nnotify\nversion\nstatus\ncreated\nupdated\nrecord`
    /// for a write (`notify` is `1` or `0`; `created` and `updated` are Unix milliseconds;
    /// the last three may be left out when the record would not fit: then the event
    /// carries no parts), `tag\nid\n0` for a removal, and `tag\nid\nclaimable` for a
    /// hand-over, where `tag` is the [`owner_tag`](super::owner_tag) and `id` the task's
    /// canonical id. `None` for anything else.
    #[must_use]
    pub fn parse(payload: &str) -> Option<Self> {
        let mut parts = payload.splitn(8, '\n');
        let (tag, id, notify) = (parts.next()?, parts.next()?, parts.next()?);
        let key = TaskKey::from_tag(tag, id)?;
        if notify == "claimable" {
            return Some(ChangeEvent::Claimable { key });
        }
        let notify = match notify {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        let (Some(version), Some(status)) = (parts.next(), parts.next()) else {
            return Some(ChangeEvent::Removed { key });
        };
        let version = version.parse().ok()?;
        // Parts that do not read are left out: the task is read when a change needs it.
        let parts = match (parts.next(), parts.next(), parts.next()) {
            (Some(created), Some(updated), Some(body)) => {
                match (created.parse(), updated.parse()) {
                    (Ok(created), Ok(updated)) => Some(StoredParts {
                        status: status.to_owned(),
                        created,
                        updated,
                        body: body.to_owned(),
                    }),
                    _ => None,
                }
            }
            _ => None,
        };
        Some(ChangeEvent::Written {
            key,
            version,
            notify,
            parts,
        })
    }
}

/// What a driver's feed tells the store ([`FeedSink::send`]).
#[derive(Debug, Clone)]
pub enum FeedEvent {
    /// The feed is up: changes from now on are heard.
    Up,
    /// The feed is down: changes may go unheard until it is up again.
    Down,
    /// A change.
    Change(ChangeEvent),
}

/// What receives a feed's events: the store (or a test's recorder).
pub trait FeedTarget: Send + Sync {
    /// Takes one event, on the driver's feed thread (keep it short).
    fn receive(&self, event: FeedEvent);
}

/// Where a driver's feed delivers ([`Driver::listen`]): the store, held weakly, so that
/// the feed stops once the store is dropped. `Clone` shares it.
#[derive(Clone)]
pub struct FeedSink {
    target: Weak<dyn FeedTarget>,
}

impl std::fmt::Debug for FeedSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedSink")
            .field("open", &!self.is_closed())
            .finish()
    }
}

impl FeedSink {
    /// A sink delivering to `target` while it lives.
    #[must_use]
    pub fn new(target: Weak<dyn FeedTarget>) -> Self {
        FeedSink { target }
    }

    /// Delivers `event`; answers `false` once the target is gone (stop the feed).
    pub fn send(&self, event: FeedEvent) -> bool {
        match self.target.upgrade() {
            Some(target) => {
                target.receive(event);
                true
            }
            None => false,
        }
    }

    /// The feed is up ([`FeedEvent::Up`]); `false` once the target is gone.
    pub fn up(&self) -> bool {
        self.send(FeedEvent::Up)
    }

    /// The feed is down ([`FeedEvent::Down`]); `false` once the target is gone.
    pub fn down(&self) -> bool {
        self.send(FeedEvent::Down)
    }

    /// Delivers the change `payload` names in the text form [`ChangeEvent::parse`] reads
    /// (text that is not one is ignored); `false` once the target is gone.
    pub fn message(&self, payload: &str) -> bool {
        match ChangeEvent::parse(payload) {
            Some(change) => self.send(FeedEvent::Change(change)),
            None => !self.is_closed(),
        }
    }

    /// Whether the target is gone.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.target.strong_count() == 0
    }
}
