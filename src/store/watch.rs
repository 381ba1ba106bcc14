//! [`Watches`]: the changes of chosen tasks, for the requestor who owns them, from one store
//! subscription per process (what a server serves `subscriptions/listen` with).

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::any::AnyTask;
use crate::error::Error;
use crate::id::TaskId;
use crate::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, JsonRpcError};
use crate::store::{Owner, StatusChange, SubscriptionId, TaskStore};

/// Poison policy: every critical section here only moves map entries, counters, queued
/// tasks and wakers, and cannot panic half-way through (no user code runs under a lock),
/// so the data behind a poisoned lock is consistent; the guard is taken back.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bounds of [`Watches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchLimits {
    max_task_ids: usize,
    max_per_owner: usize,
}

impl WatchLimits {
    /// The default bound on task ids per watch.
    pub const DEFAULT_TASK_IDS: usize = 1_000;
    /// The default bound on an owner's open watches.
    pub const DEFAULT_PER_OWNER: usize = 16;

    /// At most `max_task_ids` ids per watch and `max_per_owner` open watches per owner
    /// (each at least 1).
    #[must_use]
    pub fn new(max_task_ids: usize, max_per_owner: usize) -> Self {
        Self {
            max_task_ids: max_task_ids.max(1),
            max_per_owner: max_per_owner.max(1),
        }
    }

    /// The most task ids one watch follows.
    #[must_use]
    pub fn max_task_ids(&self) -> usize {
        self.max_task_ids
    }

    /// The most watches one owner holds at once.
    #[must_use]
    pub fn max_per_owner(&self) -> usize {
        self.max_per_owner
    }
}

impl Default for WatchLimits {
    fn default() -> Self {
        Self::new(Self::DEFAULT_TASK_IDS, Self::DEFAULT_PER_OWNER)
    }
}

/// Why a watch was not opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// More task ids than one watch follows. `-32602`.
    ///
    /// Split them over several watches, or raise the bound.
    #[error("too many task ids: a subscription follows at most {limit}, and {asked} were given")]
    TooManyTaskIds {
        /// The bound.
        limit: usize,
        /// How many were given.
        asked: usize,
    },
    /// The owner holds the most watches allowed. `-32603` (the request is valid; the
    /// server takes no more of them now).
    ///
    /// End one (a listening client closes one of its streams) and try again.
    #[error("too many subscriptions: this requestor has {limit} open, the most allowed")]
    TooManyWatches {
        /// The bound.
        limit: usize,
    },
    /// The store could not be read to find the owner's tasks; nothing was opened.
    #[error(transparent)]
    Store(#[from] Error),
}

impl WatchError {
    /// The JSON-RPC error to answer with: `-32602` for too many ids and `-32603` for too
    /// many watches (both with `data.limit`), the store's own error otherwise.
    #[must_use]
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        match self {
            WatchError::TooManyTaskIds { limit, .. } => {
                JsonRpcError::new(INVALID_PARAMS, format!("invalid params: {self}"))
                    .with_data(json!({ "limit": limit }))
            }
            WatchError::TooManyWatches { limit } => {
                JsonRpcError::new(INTERNAL_ERROR, self.to_string())
                    .with_data(json!({ "limit": limit }))
            }
            WatchError::Store(error) => error.to_jsonrpc(),
        }
    }
}

/// What [`Watch::recv_blocking`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// A followed task changed: this is the task now.
    Change(AnyTask),
    /// Nothing changed within the timeout.
    Idle,
    /// The watch was closed ([`WatchCloser::close`], [`Watches::close_all`]) and everything
    /// it held has been taken.
    Closed,
}

/// The changes of chosen tasks, for the requestor who owns them, from one store
/// subscription per process. What a server serves `subscriptions/listen` with, on any
/// backend: a shared store's subscribers see the changes made by every instance, so a
/// watch on one instance follows tasks that run on another.
///
/// A server keeps one [`Watches`] over its store. Each [`Watch`] is one owner's set of task
/// ids; the hub holds **one** subscriber on the store while watches are open (from the
/// first that follows a task; none otherwise), and routes each change by task id to the watches of that task and owner: a
/// change costs one map lookup, whatever the number of watches. A dropped [`Watch`] leaves
/// nothing behind: its routes, its count against the owner's bound, and, with the last
/// one, the store subscription go with it.
///
/// # What a watch guarantees
/// - **Register, then read.** [`Watches::watch`] routes the ids before it reads the tasks,
///   so every change made after the reads is delivered; a change made meanwhile may be
///   delivered too (it is real, and in order).
/// - **Only the owner's tasks.** The ids that are not the owner's tasks (unknown, expired,
///   removed, or another owner's) are dropped, all alike, and are not in
///   [`Watch::task_ids`]; no change of another owner's task is ever delivered.
/// - **In order per task, the terminal state last.** Changes arrive in the order the
///   store delivers them (the order of each task's changes); a task's route is dropped
///   with its terminal change, so nothing follows it (a later TTL change of a finished
///   task is not delivered).
/// - **Bounded.** A watch follows at most [`WatchLimits::max_task_ids`] ids, an owner
///   holds at most [`WatchLimits::max_per_owner`] watches at once, and a watch buffers at
///   most twice its ids plus 16 changes: a consumer that falls that far behind gets each
///   task's latest state in place of the older ones still queued (never an older state
///   after a newer one; a terminal state is never dropped).
/// - **No lost wakeup, no runtime.** [`Watch::recv`] is a future woken by the change
///   itself (cancel-safe: dropping it takes nothing), [`Watch::recv_blocking`] its blocking
///   twin; both are fed from the store's delivery thread, which only queues.
///
/// `Clone` shares the hub.
#[derive(Debug)]
pub struct Watches<T: TaskStore> {
    store: T,
    hub: Arc<Hub>,
}

impl<T: TaskStore + Clone> Clone for Watches<T> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            hub: Arc::clone(&self.hub),
        }
    }
}

impl<T: TaskStore + Clone + 'static> Watches<T> {
    /// Watches over `store`, with the default [`WatchLimits`]. Nothing is subscribed until
    /// the first watch follows a task.
    #[must_use]
    pub fn new(store: T) -> Self {
        Self::with_limits(store, WatchLimits::default())
    }

    /// Watches over `store` bounded by `limits`.
    #[must_use]
    pub fn with_limits(store: T, limits: WatchLimits) -> Self {
        let hub = Arc::new(Hub {
            link: Box::new(store.clone()),
            limits,
            subscription: Mutex::new(None),
            routes: Mutex::new(Routes::default()),
        });
        Self { store, hub }
    }
}

impl<T: TaskStore> Watches<T> {
    /// The store watched.
    #[must_use]
    pub fn store(&self) -> &T {
        &self.store
    }

    /// The bounds.
    #[must_use]
    pub fn limits(&self) -> WatchLimits {
        self.hub.limits
    }

    /// Opens a watch for `owner` on `task_ids`: routes them, reads each task, and keeps
    /// the ids of `owner`'s tasks ([`Watch::task_ids`], in the order given, without
    /// repeats). Ids of no task of `owner`'s are dropped without a word, unknown and
    /// foreign alike. An empty list opens a watch that follows nothing (it still counts
    /// against the owner's bound).
    ///
    /// One read per id (a round trip each on a shared store), outside every lock.
    ///
    /// # Errors
    /// [`WatchError::TooManyTaskIds`] and [`WatchError::TooManyWatches`] past the
    /// [`WatchLimits`] (nothing is read); [`WatchError::Store`] if a read fails (a task
    /// cannot be said to be the owner's or not: nothing is opened).
    pub fn watch<S: AsRef<str>>(&self, owner: &Owner, task_ids: &[S]) -> Result<Watch, WatchError> {
        let limits = self.hub.limits;
        if task_ids.len() > limits.max_task_ids {
            return Err(WatchError::TooManyTaskIds {
                limit: limits.max_task_ids,
                asked: task_ids.len(),
            });
        }
        let mut seen = HashSet::with_capacity(task_ids.len());
        let wanted: Vec<TaskId> = task_ids
            .iter()
            .map(|id| TaskId::from(id.as_ref()))
            .filter(|id| seen.insert(id.clone()))
            .collect();
        let mut watch = self.hub.open(&self.hub, owner, &wanted)?;
        let mut mine = Vec::with_capacity(wanted.len());
        for id in wanted {
            match self.store.get(owner, &id.to_string()) {
                Ok(task) => {
                    if task.is_terminal() {
                        // Nothing more will change: it is acknowledged, but not routed.
                        self.hub.unroute(watch.number, std::slice::from_ref(&id));
                    }
                    mine.push(id);
                }
                Err(Error::TaskNotFound { .. }) => {
                    self.hub.unroute(watch.number, std::slice::from_ref(&id));
                    // Anything queued for it meanwhile (it expired, or was removed, after
                    // a change) goes too: only acknowledged tasks are ever delivered.
                    watch.inbox.forget(&id);
                }
                // Dropping the watch removes every route it holds.
                Err(error) => return Err(WatchError::Store(error)),
            }
        }
        watch.task_ids = mine;
        Ok(watch)
    }

    /// The number of open watches.
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.hub.routes).watches.len()
    }

    /// Whether no watch is open.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of (task, watch) routes held now: the followed tasks not yet terminal.
    #[must_use]
    pub fn routes(&self) -> usize {
        lock(&self.hub.routes).by_task.values().map(Vec::len).sum()
    }

    /// Whether the hub holds its subscription on the store now (only while watches are
    /// open, from the first that follows a task).
    #[must_use]
    pub fn is_subscribed(&self) -> bool {
        lock(&self.hub.subscription).is_some()
    }

    /// Closes every open watch (a server shutting down): each yields what it holds, then
    /// ends ([`Received::Closed`], `None` from [`Watch::recv`]). A watch opened afterwards
    /// starts closed.
    pub fn close_all(&self) {
        let inboxes: Vec<Arc<Inbox>> = {
            let mut routes = lock(&self.hub.routes);
            routes.closing = true;
            routes
                .watches
                .values()
                .map(|entry| Arc::clone(&entry.inbox))
                .collect()
        };
        for inbox in inboxes {
            inbox.close();
        }
    }
}

/// What the hub needs of the store: to subscribe and unsubscribe (a `dyn TaskStore` would
/// do, but would tie the watches to the store's type).
trait Link: Send + Sync + std::fmt::Debug {
    fn subscribe(&self, hub: Weak<Hub>) -> SubscriptionId;
    fn unsubscribe(&self, id: SubscriptionId);
}

impl<T: TaskStore + 'static> Link for T {
    fn subscribe(&self, hub: Weak<Hub>) -> SubscriptionId {
        self.add_subscriber(Arc::new(move |change: &StatusChange| {
            if let Some(hub) = hub.upgrade() {
                hub.route(change);
            }
        }))
    }

    fn unsubscribe(&self, id: SubscriptionId) {
        TaskStore::unsubscribe(self, id);
    }
}

#[derive(Debug)]
struct Hub {
    link: Box<dyn Link>,
    limits: WatchLimits,
    /// The store subscription, while watches are open. Taken before `routes`
    /// whenever both are held; the store's delivery thread never takes it.
    subscription: Mutex<Option<SubscriptionId>>,
    routes: Mutex<Routes>,
}

#[derive(Debug, Default)]
struct Routes {
    /// The watches following each task (few: usually one).
    by_task: HashMap<TaskId, Vec<u64>>,
    /// The open watches by number.
    watches: HashMap<u64, Entry>,
    /// Open watches per owner.
    per_owner: HashMap<Owner, usize>,
    next: u64,
    /// Set by [`Watches::close_all`]: new watches start closed.
    closing: bool,
}

#[derive(Debug)]
struct Entry {
    owner: Owner,
    inbox: Arc<Inbox>,
    /// The tasks it is routed for (not yet terminal).
    tasks: HashSet<TaskId>,
}

impl Routes {
    /// Drops the route of `number` for `task`.
    fn unroute(&mut self, number: u64, task: &TaskId) {
        if let Some(numbers) = self.by_task.get_mut(task) {
            numbers.retain(|n| *n != number);
            if numbers.is_empty() {
                self.by_task.remove(task);
            }
        }
    }

    /// Gives memory back once most entries are gone.
    fn shrink(&mut self) {
        fn shrink<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>) {
            if map.len() < map.capacity() / 4 {
                map.shrink_to(map.len() * 2);
            }
        }
        shrink(&mut self.by_task);
        shrink(&mut self.watches);
        shrink(&mut self.per_owner);
    }
}

impl Hub {
    /// Registers a watch of `owner` routed for `tasks` (the store subscription first, if
    /// it follows any), bounded by the limits.
    fn open(&self, this: &Arc<Hub>, owner: &Owner, tasks: &[TaskId]) -> Result<Watch, WatchError> {
        let mut subscription = lock(&self.subscription);
        let mut routes = lock(&self.routes);
        let open = routes.per_owner.get(owner).copied().unwrap_or(0);
        if open >= self.limits.max_per_owner {
            return Err(WatchError::TooManyWatches {
                limit: self.limits.max_per_owner,
            });
        }
        if !tasks.is_empty() && subscription.is_none() {
            // The store calls the hub outside its own locks and never under ours, and the
            // hub's router takes only `routes`: subscribing here cannot deadlock.
            *subscription = Some(self.link.subscribe(Arc::downgrade(this)));
        }
        routes.next += 1;
        let number = routes.next;
        let inbox = Arc::new(Inbox::new(2 * tasks.len() + 16));
        if routes.closing {
            inbox.close();
        }
        for task in tasks {
            routes.by_task.entry(task.clone()).or_default().push(number);
        }
        *routes.per_owner.entry(owner.clone()).or_default() += 1;
        routes.watches.insert(
            number,
            Entry {
                owner: owner.clone(),
                inbox: Arc::clone(&inbox),
                tasks: tasks.iter().cloned().collect(),
            },
        );
        Ok(Watch {
            hub: Arc::clone(this),
            number,
            inbox,
            owner: owner.clone(),
            task_ids: Vec::new(),
        })
    }

    /// Drops the routes of watch `number` for `tasks`.
    fn unroute(&self, number: u64, tasks: &[TaskId]) {
        let mut routes = lock(&self.routes);
        for task in tasks {
            routes.unroute(number, task);
            if let Some(entry) = routes.watches.get_mut(&number) {
                entry.tasks.remove(task);
            }
        }
    }

    /// Removes watch `number`; with the last one, the store subscription.
    fn remove(&self, number: u64) {
        let mut subscription = lock(&self.subscription);
        let last = {
            let mut routes = lock(&self.routes);
            if let Some(entry) = routes.watches.remove(&number) {
                for task in &entry.tasks {
                    routes.unroute(number, task);
                }
                if let Some(count) = routes.per_owner.get_mut(&entry.owner) {
                    *count -= 1;
                    if *count == 0 {
                        routes.per_owner.remove(&entry.owner);
                    }
                }
            }
            routes.shrink();
            routes.watches.is_empty()
        };
        if last && let Some(id) = subscription.take() {
            self.link.unsubscribe(id);
        }
    }

    /// Delivers `change` to the watches of its task and owner, in the store's order. The
    /// queues are filled under the routing lock (so two deliveries cannot swap places);
    /// the consumers are woken after it.
    fn route(&self, change: &StatusChange) {
        let task = change.task.id();
        let terminal = change.task.is_terminal();
        let mut wakers = Vec::new();
        {
            let mut routes = lock(&self.routes);
            let Some(numbers) = routes.by_task.get(task) else {
                return;
            };
            let mut done = Vec::new();
            for number in numbers {
                if let Some(entry) = routes.watches.get(number)
                    && entry.owner == change.owner
                {
                    wakers.extend(entry.inbox.push(change.task.clone()));
                    if terminal {
                        done.push(*number);
                    }
                }
            }
            // A terminal state is a task's last: nothing follows it on any watch.
            for number in done {
                routes.unroute(number, task);
                if let Some(entry) = routes.watches.get_mut(&number) {
                    entry.tasks.remove(task);
                }
            }
        }
        for waker in wakers {
            waker.wake();
        }
    }
}

/// The changes waiting for one watch's consumer.
#[derive(Debug)]
struct Inbox {
    state: Mutex<InboxState>,
    ready: Condvar,
}

#[derive(Debug)]
struct InboxState {
    queue: VecDeque<AnyTask>,
    /// Beyond it, older states of a task with a newer one queued are dropped.
    capacity: usize,
    closed: bool,
    /// The pending [`Recv`]'s waker.
    waker: Option<Waker>,
}

impl Inbox {
    fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(InboxState {
                queue: VecDeque::new(),
                capacity,
                closed: false,
                waker: None,
            }),
            ready: Condvar::new(),
        }
    }

    /// Queues `task`; returns the waker to wake (after every lock is released).
    fn push(&self, task: AnyTask) -> Option<Waker> {
        let mut state = lock(&self.state);
        if state.closed {
            return None;
        }
        state.queue.push_back(task);
        if state.queue.len() > state.capacity {
            coalesce(&mut state.queue);
        }
        self.ready.notify_one();
        state.waker.take()
    }

    /// Drops what is queued for `task`.
    fn forget(&self, task: &TaskId) {
        lock(&self.state).queue.retain(|queued| queued.id() != task);
    }

    /// Takes no more changes; the consumer takes what is queued, then learns it ended.
    fn close(&self) {
        let waker = {
            let mut state = lock(&self.state);
            state.closed = true;
            self.ready.notify_one();
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Drops the oldest queued state whose task has a newer one queued. The capacity exceeds
/// the number of tasks a watch follows, so an overfull queue always has one.
fn coalesce(queue: &mut VecDeque<AnyTask>) {
    let mut last: HashMap<&TaskId, usize> = HashMap::with_capacity(queue.len());
    for (at, task) in queue.iter().enumerate() {
        last.insert(task.id(), at);
    }
    let stale = queue
        .iter()
        .enumerate()
        .find(|(at, task)| last.get(task.id()).is_some_and(|newest| newest > at))
        .map(|(at, _)| at);
    if let Some(at) = stale {
        queue.remove(at);
    }
}

/// One owner's watch on a set of tasks ([`Watches::watch`]): their changes, in order, until
/// it is closed or dropped. Dropping it removes everything it registered.
#[must_use = "a watch follows nothing once dropped"]
#[derive(Debug)]
pub struct Watch {
    hub: Arc<Hub>,
    number: u64,
    inbox: Arc<Inbox>,
    owner: Owner,
    task_ids: Vec<TaskId>,
}

impl Watch {
    /// The ids followed: those of the owner's tasks among the ids asked for, in their
    /// order (the list a `notifications/subscriptions/acknowledged` carries).
    #[must_use]
    pub fn task_ids(&self) -> &[TaskId] {
        &self.task_ids
    }

    /// The owner whose tasks are followed.
    #[must_use]
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The next change, if one is queued, without waiting; `None` also once closed.
    pub fn try_recv(&mut self) -> Option<AnyTask> {
        lock(&self.inbox.state).queue.pop_front()
    }

    /// Waits up to `timeout` (for ever with `None`) for the next change.
    pub fn recv_blocking(&mut self, timeout: Option<Duration>) -> Received {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let mut state = lock(&self.inbox.state);
        loop {
            if let Some(task) = state.queue.pop_front() {
                return Received::Change(task);
            }
            if state.closed {
                return Received::Closed;
            }
            state = match deadline {
                None => self
                    .inbox
                    .ready
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Received::Idle;
                    }
                    self.inbox
                        .ready
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// The next change, as a future: `Some(task)`, or `None` once the watch is closed and
    /// emptied. Cancel-safe: a dropped future takes nothing.
    pub fn recv(&mut self) -> Recv<'_> {
        Recv { watch: self }
    }

    /// A handle that closes this watch from elsewhere (another thread, a client's cancel).
    #[must_use]
    pub fn closer(&self) -> WatchCloser {
        WatchCloser {
            inbox: Arc::clone(&self.inbox),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.hub.remove(self.number);
    }
}

/// Closes a [`Watch`] ([`Watch::closer`]): it takes no more changes, and its consumer ends
/// once it has taken those queued.
#[derive(Debug, Clone)]
pub struct WatchCloser {
    inbox: Arc<Inbox>,
}

impl WatchCloser {
    /// Closes the watch.
    pub fn close(&self) {
        self.inbox.close();
    }
}

/// The future of [`Watch::recv`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Recv<'a> {
    watch: &'a mut Watch,
}

impl Future for Recv<'_> {
    type Output = Option<AnyTask>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.watch.inbox.state);
        if let Some(task) = state.queue.pop_front() {
            return Poll::Ready(Some(task));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for Recv<'_> {
    fn drop(&mut self) {
        lock(&self.watch.inbox.state).waker = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Update;
    use crate::{TaskRegistry, TaskRequest, TaskStatus};

    fn task_of(registry: &TaskRegistry, owner: &Owner) -> TaskId {
        registry
            .insert(owner, TaskRequest::new(1, "tools/call"))
            .expect("created")
            .id()
            .clone()
    }

    #[test]
    fn a_watch_gets_its_owners_changes_in_order_and_nothing_after_the_terminal_one() {
        let registry = TaskRegistry::new();
        let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
        let mine = task_of(&registry, &alice);
        let theirs = task_of(&registry, &bob);
        let watches = Watches::new(registry.clone());
        assert!(
            !watches.is_subscribed(),
            "nothing is subscribed before a watch"
        );
        let unknown = TaskId::random().to_string();
        let asked = [
            mine.to_string(),
            theirs.to_string(),
            unknown,
            mine.to_string(),
        ];
        let mut watch = watches.watch(&alice, &asked).expect("opened");
        assert_eq!(watch.task_ids(), std::slice::from_ref(&mine));
        assert!(watches.is_subscribed());
        assert_eq!(watches.routes(), 1, "foreign and unknown ids are unrouted");

        let id = mine.to_string();
        registry
            .update_status(&alice, &id, TaskStatus::Working, Some("one".into()))
            .unwrap();
        registry
            .update(&bob, &theirs.to_string(), Update::cancel(None))
            .unwrap();
        let _cancelled = registry.cancel(&alice, &id, Some("done".into())).unwrap();
        // A finished task's TTL may still change: it is not delivered.
        registry.set_ttl(&alice, &id, Some(5_000)).unwrap();

        let Received::Change(first) = watch.recv_blocking(Some(Duration::ZERO)) else {
            panic!("the status message change is delivered");
        };
        assert_eq!(first.status_message(), Some("one"));
        let Received::Change(last) = watch.recv_blocking(Some(Duration::ZERO)) else {
            panic!("the cancellation is delivered");
        };
        assert_eq!(last.status(), TaskStatus::Cancelled);
        assert_eq!(watch.recv_blocking(Some(Duration::ZERO)), Received::Idle);
        assert_eq!(watches.routes(), 0, "a terminal task is no longer routed");
        drop(watch);
        assert!(watches.is_empty());
        assert!(
            !watches.is_subscribed(),
            "no watch left, no store subscription"
        );
    }

    /// A registry with `n` tasks of alice's, their ids.
    fn alices_tasks(n: usize) -> (TaskRegistry, Owner, Vec<String>) {
        let registry = TaskRegistry::new();
        let owner = Owner::new("alice");
        let tasks = (0..n)
            .map(|_| task_of(&registry, &owner).to_string())
            .collect();
        (registry, owner, tasks)
    }

    /// `n` watches of `owner` on `tasks`, each within the bounds.
    fn open_watches<T: TaskStore + Clone + 'static>(
        watches: &Watches<T>,
        owner: &Owner,
        tasks: &[String],
        n: usize,
    ) -> Vec<Watch> {
        (0..n)
            .map(|_| watches.watch(owner, tasks).expect("within the bounds"))
            .collect()
    }

    #[test]
    fn many_watches_share_one_subscription_and_leave_nothing_when_dropped() {
        let (registry, owner, tasks) = alices_tasks(3);
        let watches = Watches::with_limits(registry.clone(), WatchLimits::new(2, 3));
        let open = open_watches(&watches, &owner, &tasks[..2], 3);
        assert!(watches.is_subscribed(), "one subscription for all");
        assert_eq!(
            watches.watch(&owner, &tasks[..1]).map(drop),
            Err(WatchError::TooManyWatches { limit: 3 })
        );
        assert_eq!(
            watches.watch(&Owner::new("bob"), &tasks).map(drop),
            Err(WatchError::TooManyTaskIds { limit: 2, asked: 3 })
        );
        // Another owner has bounds of its own.
        let bobs = watches
            .watch(&Owner::new("bob"), &tasks[..2])
            .expect("bob's first");
        assert!(bobs.task_ids().is_empty(), "alice's tasks are not bob's");
        drop(bobs);
        assert_eq!(watches.routes(), 6);
        drop(open);
        assert!(watches.is_empty());
        assert_eq!(watches.routes(), 0);
        assert!(
            !watches.is_subscribed(),
            "the last watch takes the subscription with it"
        );
        // And the owner may open as many again.
        let again = open_watches(&watches, &owner, &tasks[..1], 3);
        assert!(watches.is_subscribed());
        drop(again);
        assert!(!watches.is_subscribed());
    }

    #[test]
    fn a_slow_consumer_gets_each_tasks_latest_state_in_order() {
        let (registry, owner, tasks) = alices_tasks(2);
        let watches = Watches::new(registry.clone());
        let mut watch = watches.watch(&owner, &tasks).expect("opened");
        // Capacity 2 * 2 + 16 = 20: 40 changes of the first task, then the second's end.
        for n in 0..40 {
            registry
                .update_status(&owner, &tasks[0], TaskStatus::Working, Some(format!("{n}")))
                .unwrap();
        }
        let _cancelled = registry.cancel(&owner, &tasks[1], None).unwrap();
        let _cancelled = registry.cancel(&owner, &tasks[0], None).unwrap();
        let mut seen = Vec::new();
        while let Some(task) = watch.try_recv() {
            seen.push((
                task.id().to_string(),
                task.status_message().map(str::to_owned),
            ));
        }
        assert!(seen.len() <= 20, "bounded: {}", seen.len());
        let first: Vec<u32> = seen
            .iter()
            .filter(|(id, _)| *id == tasks[0])
            .filter_map(|(_, message)| message.as_deref()?.parse().ok())
            .collect();
        assert!(first.windows(2).all(|w| w[0] < w[1]), "in order: {first:?}");
        assert_eq!(first.last(), Some(&39), "the latest working state is kept");
        assert_eq!(seen.iter().filter(|(id, _)| *id == tasks[1]).count(), 1);
        assert_eq!(
            seen.last().map(|(id, _)| id.as_str()),
            Some(tasks[0].as_str())
        );
    }

    #[test]
    fn the_future_wakes_on_a_change_and_ends_when_closed() {
        let registry = TaskRegistry::new();
        let owner = Owner::new("alice");
        let task = task_of(&registry, &owner).to_string();
        let watches = Watches::new(registry.clone());
        let mut watch = watches.watch(&owner, &[&task]).expect("opened");
        let closer = watch.closer();
        let worker = {
            let (registry, owner, task) = (registry.clone(), owner.clone(), task.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                let _cancelled = registry.cancel(&owner, &task, None).unwrap();
                std::thread::sleep(Duration::from_millis(20));
                closer.close();
            })
        };
        let first = block_on(watch.recv());
        assert_eq!(first.map(|t| t.status()), Some(TaskStatus::Cancelled));
        assert_eq!(block_on(watch.recv()), None, "closed");
        worker.join().unwrap();
        watches.close_all();
        let mut late = watches.watch(&owner, &[&task]).expect("opened");
        assert_eq!(
            late.recv_blocking(None),
            Received::Closed,
            "closing: starts closed"
        );
    }

    /// A minimal executor: polls on the current thread, parked between wakes.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            std::thread::park();
        }
    }
}
