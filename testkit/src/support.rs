//! Small helpers of the suite, for a backend's own tests too: JSON and request builders,
//! the usual owners, and bounded joins and waits (so that a bug fails a test instead of
//! hanging it).

use std::fmt::Debug;
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::{
    AnyTask, Error, InputRequest, JsonObject, Outcome, Owner, StatusChange, SubscriptionId,
    TaskRequest, TaskStore,
};
use serde_json::{Value, json};

/// The timeout of every wait that is expected to end by an event: never reached when the
/// store works.
pub const BOUND: Duration = Duration::from_secs(30);

/// How soon an event must end such a wait (much less than [`BOUND`], so that a lost wakeup
/// cannot hide behind a waiter that times out, looks again and finds the task finished).
pub const WAKE: Duration = Duration::from_secs(5);

/// `millis` milliseconds.
pub fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The JSON object `value` is.
///
/// # Panics
/// If `value` is not an object.
pub fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A `CallToolResult` with one text block.
pub fn tool_result(text: &str) -> JsonObject {
    obj(json!({"content": [{"type": "text", "text": text}]}))
}

/// The outcome of a tool call that returned [`tool_result`]`(text)`.
pub fn tool_outcome(text: &str) -> Outcome {
    Outcome::Result(tool_result(text))
}

/// A failing `CallToolResult` (`isError`) with one text block.
pub fn error_result(text: &str) -> JsonObject {
    obj(json!({"content": [{"type": "text", "text": text}], "isError": true}))
}

/// A form elicitation asking `message`, without fields.
pub fn ask(message: &str) -> InputRequest {
    InputRequest::elicitation(obj(json!({"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {}}})))
}

/// An accepted elicitation answer.
pub fn accept(answer: &str) -> Value {
    json!({"action": "accept", "content": {"answer": answer}})
}

/// A `tools/call` request with id `n`.
pub fn req(n: i64) -> TaskRequest {
    TaskRequest::new(n, "tools/call")
}

/// The owner `alice`.
pub fn alice() -> Owner {
    Owner::new("alice")
}

/// The owner `bob`.
pub fn bob() -> Owner {
    Owner::new("bob")
}

/// The ids of `tasks`, in order.
pub fn ids(tasks: &[AnyTask]) -> Vec<String> {
    tasks.iter().map(|task| task.id().to_string()).collect()
}

/// The keys of the open input requests of `task` (none unless it is `input_required`).
pub fn input_keys(task: &AnyTask) -> Vec<String> {
    task.input_requests()
        .map(|requests| requests.iter().map(|(key, _)| key.to_owned()).collect())
        .unwrap_or_default()
}

/// `TaskNotFound` for `id`, with its code and the id it names.
#[track_caller]
pub fn assert_not_found<T: Debug>(result: Result<T, Error>, id: &str, what: &str) {
    match result {
        Err(err @ Error::TaskNotFound { .. }) => {
            assert_eq!(err.code(), -32602, "{what}");
            let Error::TaskNotFound { task_id } = err else {
                unreachable!()
            };
            assert_eq!(task_id, id, "{what}: the error names the id asked for");
        }
        other => panic!("{what}: expected TaskNotFound for `{id}`, got {other:?}"),
    }
}

/// Joins `handle`, failing the test if the thread is still running after `limit`; a panic
/// of the thread goes on in the caller's.
#[track_caller]
pub fn join_within<T>(handle: JoinHandle<T>, limit: Duration, what: &str) -> T {
    let started = Instant::now();
    while !handle.is_finished() {
        assert!(
            started.elapsed() < limit,
            "{what}: still blocked after {limit:?} (a deadlock or a lost wakeup)"
        );
        thread::sleep(ms(1));
    }
    match handle.join() {
        Ok(value) => value,
        Err(panic) => {
            eprintln!("{what}: the thread panicked");
            std::panic::resume_unwind(panic)
        }
    }
}

/// Waits (bounded by [`WAKE`]) until `done` holds; fails the test otherwise.
#[track_caller]
pub fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < WAKE, "{what}: not within {WAKE:?}");
        thread::sleep(ms(2));
    }
}

/// A waiter on `store` for the task `id` (timeout [`BOUND`]), in its own thread.
pub fn spawn_wait<S: TaskStore + Clone + 'static>(
    store: &S,
    owner: &Owner,
    id: &str,
) -> JoinHandle<Result<AnyTask, Error>> {
    let (store, owner, id) = (store.clone(), owner.clone(), id.to_owned());
    thread::spawn(move || store.wait(&owner, &id, Some(BOUND)))
}

/// Runs `f` on its own thread once all parties of `barrier` are there (to start a race).
pub fn spawn_at_barrier<T: Send + 'static>(
    barrier: &Arc<Barrier>,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let barrier = Arc::clone(barrier);
    thread::spawn(move || {
        barrier.wait();
        f()
    })
}

/// What a subscriber recorded: every change it was told, in order.
pub type Seen = Arc<Mutex<Vec<StatusChange>>>;

/// Subscribes a recorder to `store`.
pub fn recorder<S: TaskStore>(store: &S) -> (Seen, SubscriptionId) {
    let seen: Seen = Arc::default();
    let sink = Arc::clone(&seen);
    let id = store.subscribe(move |change| sink.lock().unwrap().push(change.clone()));
    (seen, id)
}

/// Waits (bounded by [`WAKE`]) until `seen` holds the change to `done`, then a moment more,
/// and answers how many changes of `done`'s task to a terminal status it holds: one,
/// unless a write that was replayed (its reply lost) told the subscribers again.
#[track_caller]
pub fn terminal_changes(seen: &Seen, done: &AnyTask) -> usize {
    eventually("the subscriber is told of the finished task", || {
        seen.lock()
            .unwrap()
            .iter()
            .any(|change| change.task == *done)
    });
    thread::sleep(ms(200));
    seen.lock()
        .unwrap()
        .iter()
        .filter(|change| change.task.id() == done.id() && change.task.is_terminal())
        .count()
}

/// A waiter on `waiter` for a task created on `worker`, which `worker` then completes with
/// the tool result `text`: the waiter wakes with that result. For two instances of a
/// shared store, called both ways: each hears the other's changes.
#[track_caller]
pub fn waiter_wakes<S: TaskStore + Clone + 'static>(
    worker: &S,
    waiter: &S,
    owner: &Owner,
    text: &str,
) {
    let id = worker.insert(owner, req(99)).unwrap().id().to_string();
    let waiting = spawn_wait(waiter, owner, &id);
    thread::sleep(ms(100));
    assert!(
        !waiting.is_finished(),
        "the waiter blocks while the task works"
    );
    worker
        .store_result(
            owner,
            &id,
            mcp_tasks::TaskStatus::Completed,
            tool_outcome(text),
        )
        .unwrap();
    let woke = join_within(waiting, BOUND, "a waiter on the other instance")
        .expect("the waiter gets the completed task");
    assert_eq!(woke.status(), mcp_tasks::TaskStatus::Completed);
    assert_eq!(
        woke.outcome(),
        Some(&tool_outcome(text)),
        "the waiter gets the result written on the other instance"
    );
}

/// Every task id of `owner` in `store`, walking all pages of `page_size`.
pub fn list_all<S: TaskStore + ?Sized>(store: &S, owner: &Owner, page_size: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100_000 {
        let page = store.list(owner, cursor.as_deref(), page_size).unwrap();
        all.extend(ids(&page.tasks));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
    panic!("pagination never ends");
}

/// `n` waiters on the task `id` (each with [`spawn_wait`]), checked to have started and to
/// block.
pub fn blocked_waiters<S: TaskStore + Clone + 'static>(
    store: &S,
    owner: &Owner,
    id: &str,
    n: usize,
) -> Vec<JoinHandle<Result<AnyTask, Error>>> {
    let waiters: Vec<_> = (0..n).map(|_| spawn_wait(store, owner, id)).collect();
    thread::sleep(ms(50));
    assert!(
        waiters.iter().all(|waiter| !waiter.is_finished()),
        "waiters return only once the task is terminal"
    );
    waiters
}

/// Runs `f` on its own thread, started now; the thread answers what `f` returned and how
/// long it took.
pub fn timed<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<(T, Duration)> {
    thread::spawn(move || {
        let started = Instant::now();
        (f(), started.elapsed())
    })
}

/// Asserts the store-unavailable error (`Error::Store`, `-32603`, never a state) and
/// returns it.
#[track_caller]
pub fn assert_unavailable<T: Debug>(result: Result<T, Error>, what: &str) -> Error {
    match result {
        Err(err @ Error::Store { .. }) => {
            assert_eq!(err.code(), mcp_tasks::jsonrpc::INTERNAL_ERROR, "{what}");
            err
        }
        other => panic!("{what}: expected the store-unavailable error, got {other:?}"),
    }
}

/// Claims on `store` until one comes (bounded by `limit`); answers it and when.
#[track_caller]
pub(crate) fn claim_within<S: TaskStore>(
    store: &S,
    limit: Duration,
) -> (mcp_tasks::Claim, Instant) {
    let started = Instant::now();
    loop {
        if let Some(claim) = store.claim().unwrap() {
            return (claim, Instant::now());
        }
        assert!(started.elapsed() < limit, "not claimed within {limit:?}");
        store.wait_for_claimable(Some(ms(20))).unwrap();
    }
}
