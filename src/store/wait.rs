//! The one wait primitive of every store: blocking waits and futures, woken alike.
//!
//! A backend keeps one [`Events`] table and only [notifies](Events::notify) it, after
//! every change of a task (and [all](Events::notify_all) of it when it may have missed
//! changes). A wait, blocking or async, is written once as a *probe*: a closure that reads
//! the task and says whether the wait is over ([`Probe`]). [`block`] and [`future`] run a
//! probe the same way, as `event-listener` does: register a [`Listener`] on the task,
//! take its mark, probe, and only then sleep until the task's event fires after the mark.
//! A change made between the mark and the probe fires after the mark, so no wakeup is
//! lost.
//!
//! A listener is a count on its task's event and, for a future, one waker slot; dropping
//! it (an abandoned future included) clears both, and the last listener of a task removes
//! its event: no leak per abandoned wait.
//!
//! # Time without a runtime
//! A blocking wait sleeps on the event's condition variable with a timeout. A future has
//! no runtime to ask for a timer, so a probe that must be looked at again by a deadline
//! (the task's expiry, the end of an outage's grace) arms one entry of the store layer's
//! single timer thread (`mcp-tasks-timer`, started on first use, idle otherwise), which
//! wakes the future at that instant; dropping the future disarms it. A future has no
//! timeout of its own: callers use their runtime's.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::any::AnyTask;
use crate::error::Error;
use crate::status::TaskStatus;
use crate::store::handle_conflict;

/// A boxed future of a store's wait: `Send`, borrowing the store (and the owner and task
/// id it was asked with) for `'a`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// Poison policy: every critical section here only moves counters and wakers, and
/// completes without panicking, so the data behind a poisoned lock is consistent; the
/// guard is taken back.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a probe made of the task it read: the one question a wait asks a backend.
#[derive(Debug)]
pub enum Probe<T> {
    /// The wait is over, with this answer.
    Done(Result<T, Error>),
    /// Probe again at once (a conditional write lost a race with another writer).
    Again,
    /// Sleep until the task's event fires, or at most this long (the task's expiry).
    Wait(Option<Duration>),
}

/// What a wait for a cancel makes of `task`: done once a cancel was requested or the task
/// was cancelled; an error if it finished otherwise (no cancel can come); `None` to wait.
/// The decision of every backend's
/// [`wait_for_cancel_async`](crate::TaskStore::wait_for_cancel_async).
pub fn cancel_seen(task: &AnyTask, task_id: &str) -> Option<Result<(), Error>> {
    if task.cancel_requested() || task.status() == TaskStatus::Cancelled {
        Some(Ok(()))
    } else if task.is_terminal() {
        Some(Err(handle_conflict(task_id, task, TaskStatus::Cancelled)))
    } else {
        None
    }
}

/// The events of the tasks some wait listens to, by key (a task id, or whatever key the
/// backend names a task by): one per store.
///
/// A backend [notifies](Events::notify) the key after every change of the task it names
/// (and [every key](Events::notify_all) when it may have missed changes, as a shared
/// store does while its change feed is down); waits [listen](Events::listen) before they
/// probe.
pub struct Events<K> {
    map: Mutex<HashMap<K, Arc<Event>>>,
    /// Listeners registered now, over all keys.
    listeners: AtomicUsize,
}

impl<K> Default for Events<K> {
    fn default() -> Self {
        Events {
            map: Mutex::new(HashMap::new()),
            listeners: AtomicUsize::new(0),
        }
    }
}

/// One task's event: a generation that every notification moves on, and its sleepers.
#[derive(Default)]
struct Event {
    state: Mutex<EventState>,
    /// Blocking listeners sleep here.
    condvar: Condvar,
}

#[derive(Default)]
struct EventState {
    generation: u64,
    /// Listeners of this event (blocking and async).
    listeners: usize,
    /// The wakers of pending futures, by slot; `free` lists the empty slots.
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
}

impl Event {
    /// Moves the generation on and wakes every sleeper. Wakers run after the lock is
    /// released (a waker is user code).
    fn fire(&self) {
        let wakers: Vec<Waker> = {
            let mut state = lock(&self.state);
            state.generation = state.generation.wrapping_add(1);
            let mut wakers = Vec::new();
            let EventState { wakers: slots, .. } = &mut *state;
            // Each listener keeps its slot: it sets a waker there again when it polls.
            wakers.extend(slots.iter_mut().filter_map(Option::take));
            wakers
        };
        self.condvar.notify_all();
        for waker in wakers {
            waker.wake();
        }
    }
}

impl<K: Eq + Hash + Clone> Events<K> {
    /// Registers a listener on `key`'s event (created on first use); dropping it
    /// deregisters it.
    pub fn listen(&self, key: K) -> Listener<'_, K> {
        let mut map = lock(&self.map);
        let event = Arc::clone(map.entry(key.clone()).or_default());
        // Counted under the map's lock, so the last listener leaving cannot remove the
        // event between this lookup and this count.
        lock(&event.state).listeners += 1;
        drop(map);
        self.listeners.fetch_add(1, Ordering::Relaxed);
        Listener {
            events: self,
            key,
            event,
            slot: None,
        }
    }

    /// The task under `key` changed (or is gone): wake its waits.
    pub fn notify(&self, key: &K) {
        let event = lock(&self.map).get(key).cloned();
        if let Some(event) = event {
            event.fire();
        }
    }

    /// Any task may have changed unseen: wake every wait to read again (a shared store's
    /// lost or regained change feed).
    pub fn notify_all(&self) {
        let events: Vec<Arc<Event>> = lock(&self.map).values().cloned().collect();
        for event in events {
            event.fire();
        }
    }

    /// The number of listeners registered now (pending waits, blocking or async).
    #[must_use]
    pub fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Relaxed)
    }

    /// The number of tasks with an event now.
    #[cfg(test)]
    pub(crate) fn events(&self) -> usize {
        lock(&self.map).len()
    }
}

/// A wait registered on one task's event ([`Events::listen`]); deregisters when dropped.
pub struct Listener<'a, K: Eq + Hash + Clone> {
    events: &'a Events<K>,
    key: K,
    event: Arc<Event>,
    /// This listener's waker slot, once it has polled.
    slot: Option<usize>,
}

/// Where a task's event stood when a probe began ([`Listener::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark(u64);

impl<K: Eq + Hash + Clone> Listener<'_, K> {
    /// Marks where the event stands: take it before probing.
    #[must_use]
    pub fn mark(&self) -> Mark {
        Mark(lock(&self.event.state).generation)
    }

    /// Sleeps until the event fires after `mark`, or `bound` passes (a blocking wait's
    /// sleep; [`block`] is the whole loop).
    pub fn sleep(&self, mark: Mark, bound: Option<Duration>) {
        let started = Instant::now();
        let mut state = lock(&self.event.state);
        while state.generation == mark.0 {
            state = match bound {
                None => self
                    .event
                    .condvar
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(bound) => {
                    let Some(left) = bound.checked_sub(started.elapsed()) else {
                        return;
                    };
                    self.event
                        .condvar
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    /// Ready if the event fired after `mark`; otherwise registers the context's waker,
    /// in the same critical section as the check, so no firing is lost.
    fn poll_fired(&mut self, mark: Mark, cx: &Context<'_>) -> Poll<()> {
        let mut state = lock(&self.event.state);
        if state.generation != mark.0 {
            return Poll::Ready(());
        }
        let slot = match self.slot {
            Some(slot) => slot,
            None => match state.free.pop() {
                Some(slot) => slot,
                None => {
                    state.wakers.push(None);
                    state.wakers.len() - 1
                }
            },
        };
        self.slot = Some(slot);
        match &mut state.wakers[slot] {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            place => *place = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<K: Eq + Hash + Clone> Drop for Listener<'_, K> {
    fn drop(&mut self) {
        let mut map = lock(&self.events.map);
        let mut state = lock(&self.event.state);
        if let Some(slot) = self.slot
            && let Some(place) = state.wakers.get_mut(slot)
        {
            *place = None;
            state.free.push(slot);
        }
        state.listeners -= 1;
        if state.listeners == 0 {
            drop(state);
            if map
                .get(&self.key)
                .is_some_and(|event| Arc::ptr_eq(event, &self.event))
            {
                map.remove(&self.key);
                if map.len() < map.capacity() / 4 {
                    let len = map.len();
                    map.shrink_to(len * 2);
                }
            }
        }
        drop(map);
        self.events.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs a blocking wait: probe, and sleep between probes until the task's event fires,
/// the probe's bound passes, or `timeout` passes (then [`Error::Timeout`] naming
/// `task_id`).
///
/// # Errors
/// What the probe answers, or [`Error::Timeout`].
pub fn block<K: Eq + Hash + Clone, T>(
    listener: &Listener<'_, K>,
    task_id: &str,
    timeout: Option<Duration>,
    mut probe: impl FnMut() -> Probe<T>,
) -> Result<T, Error> {
    let started = Instant::now();
    loop {
        let mark = listener.mark();
        let bound = match probe() {
            Probe::Done(answer) => return answer,
            Probe::Again => continue,
            Probe::Wait(bound) => bound,
        };
        let left = match timeout {
            Some(timeout) => match timeout.checked_sub(started.elapsed()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => {
                    return Err(Error::Timeout {
                        task_id: task_id.to_owned(),
                        waited: started.elapsed(),
                    });
                }
            },
            None => None,
        };
        listener.sleep(mark, bound.into_iter().chain(left).min());
    }
}

/// The same wait as a future: each poll probes (the probe runs inline, so a backend's
/// probe must be short: the registry's takes its lock, Redis's is one round trip), and a
/// pending future sleeps on the task's event and, if the probe gave a bound, on the timer.
pub fn future<'a, K, T, P>(listener: Listener<'a, K>, probe: P) -> StoreFuture<'a, T>
where
    K: Eq + Hash + Clone + Send + Sync + Unpin + 'a,
    T: Send + 'a,
    P: FnMut() -> Probe<T> + Send + Unpin + 'a,
{
    Box::pin(Wait {
        listener,
        probe,
        alarm: None,
    })
}

struct Wait<'a, K: Eq + Hash + Clone, P> {
    listener: Listener<'a, K>,
    probe: P,
    alarm: Option<Alarm>,
}

impl<K, T, P> Future for Wait<'_, K, P>
where
    K: Eq + Hash + Clone + Unpin,
    P: FnMut() -> Probe<T> + Unpin,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            let mark = this.listener.mark();
            match (this.probe)() {
                Probe::Done(answer) => {
                    this.alarm = None;
                    return Poll::Ready(answer);
                }
                Probe::Again => {}
                Probe::Wait(bound) => {
                    this.alarm = match bound {
                        Some(bound) => match Alarm::set(Instant::now() + bound, cx.waker()) {
                            Ok(alarm) => Some(alarm),
                            Err(error) => return Poll::Ready(Err(error)),
                        },
                        None => None,
                    };
                    if this.listener.poll_fired(mark, cx).is_pending() {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

/// The store layer's one timer: wakes futures at instants (task expiry, outage grace).
struct Timer {
    state: Mutex<TimerState>,
    condvar: Condvar,
}

#[derive(Default)]
struct TimerState {
    due: BTreeMap<(Instant, u64), Waker>,
    next: u64,
}

/// The timer, with its thread started on first use; `None` if the thread could not be
/// started (every wait that needs it then answers an error instead of sleeping forever).
static TIMER: LazyLock<Option<&'static Timer>> = LazyLock::new(|| {
    // One per process, for the life of the process.
    let timer: &'static Timer = Box::leak(Box::new(Timer {
        state: Mutex::new(TimerState::default()),
        condvar: Condvar::new(),
    }));
    std::thread::Builder::new()
        .name("mcp-tasks-timer".to_owned())
        .spawn(move || timer.run())
        .ok()
        .map(|_| timer)
});

impl Timer {
    fn run(&self) {
        let mut state = lock(&self.state);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = state.due.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                drop(state);
                for waker in due {
                    waker.wake();
                }
                state = lock(&self.state);
                continue;
            }
            state = match state.due.keys().next() {
                Some(&(at, _)) => {
                    self.condvar
                        .wait_timeout(state, at.saturating_duration_since(now))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .condvar
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

/// One armed entry of the timer; disarmed when dropped.
struct Alarm {
    at: (Instant, u64),
}

impl Alarm {
    fn set(at: Instant, waker: &Waker) -> Result<Alarm, Error> {
        let Some(timer) = *TIMER else {
            return Err(Error::Internal(
                "cannot start the timer thread that wakes waits at a task's expiry".to_owned(),
            ));
        };
        let mut state = lock(&timer.state);
        let key = (at, state.next);
        state.next += 1;
        let first = state.due.keys().next().is_none_or(|&first| key < first);
        state.due.insert(key, waker.clone());
        drop(state);
        if first {
            timer.condvar.notify_one();
        }
        Ok(Alarm { at: key })
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        if let Some(timer) = *TIMER {
            lock(&timer.state).due.remove(&self.at);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::task::Wake;

    use super::*;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_firing_after_the_mark_wakes_a_future_and_a_dropped_one_leaves_nothing() {
        let events: Events<u32> = Events::default();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let cx = Context::from_waker(&waker);
        let mut listener = events.listen(7);
        let mark = listener.mark();
        assert!(listener.poll_fired(mark, &cx).is_pending());
        events.notify(&8);
        assert!(!flag.0.load(Ordering::SeqCst), "another task's event");
        events.notify(&7);
        assert!(flag.0.load(Ordering::SeqCst), "woken");
        assert!(listener.poll_fired(mark, &cx).is_ready());

        let mark = listener.mark();
        assert!(listener.poll_fired(mark, &cx).is_pending());
        let other = events.listen(7);
        assert_eq!(events.listeners(), 2);
        drop(listener);
        assert_eq!(events.events(), 1, "a listener is left");
        drop(other);
        assert_eq!(events.listeners(), 0);
        assert_eq!(events.events(), 0, "the last listener removed the event");
    }

    #[test]
    fn the_timer_wakes_at_its_instant_and_a_dropped_alarm_never() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let dropped = Arc::new(Flag(AtomicBool::new(false)));
        let never = Alarm::set(
            Instant::now() + Duration::from_millis(20),
            &Waker::from(Arc::clone(&dropped)),
        )
        .unwrap();
        drop(never);
        let _alarm = Alarm::set(Instant::now() + Duration::from_millis(40), &waker).unwrap();
        let started = Instant::now();
        while !flag.0.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(flag.0.load(Ordering::SeqCst), "the alarm never rang");
        assert!(!dropped.0.load(Ordering::SeqCst), "a disarmed alarm rang");
    }
}
