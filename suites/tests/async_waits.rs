//! The stores' futures (`wait_async`, `wait_for_input_async`, `TaskHandle::cancelled`) on
//! two executors, tokio and `pollster`, against both backends: the in-process registry
//! always, `RedisTaskStore` with `--features redis` (each test on its own `redis-server`;
//! without one on `PATH` those tests say `SKIPPED` and pass).
//!
//! Every await on tokio is bounded by `tokio::time::timeout`, and every `pollster` wait has
//! a thread that makes it end, so a bug fails a test instead of hanging the suite. Nothing
//! here asserts how fast anything is.

use std::future::Future;

use std::sync::Arc;
use std::task::{Context, Waker};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{
    Error, InputRequest, InputRequests, JsonObject, Outcome, Owner, TaskRegistry, TaskRequest,
    TaskStatus, TaskStore, TtlPolicy,
};
use serde_json::{Value, json};

#[path = "../benches/support/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// The bound of every await: far above any wakeup, only reached by a bug.
const BOUND: Duration = Duration::from_secs(20);

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn ask(message: &str) -> InputRequest {
    InputRequest::elicitation(obj(json!({"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {}}})))
}

fn alice() -> Owner {
    Owner::new("alice")
}

fn req(n: i64) -> TaskRequest {
    TaskRequest::new(n, "tools/call")
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

/// Polls `future` once with a waker that does nothing: whether it is pending.
fn pending_once<F: Future + Unpin>(future: &mut F) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    std::pin::Pin::new(future).poll(&mut cx).is_pending()
}

/// Runs `f` on another thread after `delay` (the other side of a wait).
fn later(delay: Duration, f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        thread::sleep(delay);
        f();
    })
}

/// Two views of one store: `first` waits, `second` changes the task (for Redis, another
/// instance on the same keys), and how many waits are pending on `first`.
trait Pair: Sized {
    type Store: TaskStore + Clone + 'static;
    fn first(&self) -> &Self::Store;
    fn second(&self) -> &Self::Store;
    fn pending(&self) -> usize;
}

struct Memory(TaskRegistry);

impl Memory {
    fn new() -> Memory {
        Memory(
            TaskRegistry::builder()
                .ttl_policy(TtlPolicy::new(Some(60_000)).with_min(1).with_max(600_000))
                .build()
                .expect("a registry"),
        )
    }
}

impl Pair for Memory {
    type Store = TaskRegistry;
    fn first(&self) -> &TaskRegistry {
        &self.0
    }
    fn second(&self) -> &TaskRegistry {
        &self.0
    }
    fn pending(&self) -> usize {
        self.0.pending_waits()
    }
}

#[cfg(feature = "redis")]
struct Redis {
    first: mcp_tasks_redis::RedisTaskStore,
    second: mcp_tasks_redis::RedisTaskStore,
    // Dropped last: the stores go first.
    _server: mcp_tasks_test_support::redis::RedisServer,
}

#[cfg(feature = "redis")]
impl Redis {
    fn start() -> Option<Redis> {
        let server = mcp_tasks_test_support::redis::RedisServer::start()?;
        let prefix = format!("async-{}", uuid::Uuid::new_v4().simple());
        let build = || {
            mcp_tasks_redis::RedisTaskStore::builder(&server.url())
                .prefix(prefix.clone())
                .ttl_policy(TtlPolicy::new(Some(60_000)).with_min(1).with_max(600_000))
                .outage_timeout(Duration::from_millis(500))
                .build()
                .expect("a RedisTaskStore on the test server")
        };
        Some(Redis {
            first: build(),
            second: build(),
            _server: server,
        })
    }
}

#[cfg(feature = "redis")]
impl Pair for Redis {
    type Store = mcp_tasks_redis::RedisTaskStore;
    fn first(&self) -> &mcp_tasks_redis::RedisTaskStore {
        &self.first
    }
    fn second(&self) -> &mcp_tasks_redis::RedisTaskStore {
        &self.second
    }
    fn pending(&self) -> usize {
        self.first.pending_waits()
    }
}

// ---------------------------------------------------------------------------------------
// The behaviours, once over any pair
// ---------------------------------------------------------------------------------------

fn result_future_wakes_on_completion_elsewhere<P: Pair>(pair: &P) {
    let owner = alice();
    let task = pair.first().insert(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    let other = pair.second().clone();
    let (o, i) = (owner.clone(), id.clone());
    let finisher = later(Duration::from_millis(50), move || {
        let outcome = Outcome::Result(obj(json!({"content": [], "isError": false})));
        other
            .store_result(&o, &i, TaskStatus::Completed, outcome)
            .unwrap();
    });
    let done = tokio_rt()
        .block_on(async { tokio::time::timeout(BOUND, pair.first().wait_async(&owner, &id)).await })
        .expect("woken before the bound")
        .unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
    assert!(done.outcome().is_some(), "the stored result comes with it");
    finisher.join().unwrap();

    // The same on the minimal executor, through `Arc<dyn TaskStore>`.
    let shared: Arc<dyn TaskStore> = Arc::new(pair.first().clone());
    let task = shared.insert(&owner, req(2)).unwrap();
    let id = task.id().to_string();
    let other = pair.second().clone();
    let (o, i) = (owner.clone(), id.clone());
    let finisher = later(Duration::from_millis(50), move || {
        let _ = other.cancel(&o, &i, None).unwrap();
    });
    let done = pollster::block_on(shared.wait_async(&owner, &id)).unwrap();
    assert_eq!(done.status(), TaskStatus::Cancelled);
    finisher.join().unwrap();
    assert_eq!(pair.pending(), 0, "resolved waits leave nothing");
}

fn input_future_wakes_on_answers<P: Pair>(pair: &P) {
    let owner = alice();
    let (handle, task) = pair.first().create(&owner, req(3)).unwrap();
    let id = task.id().to_string();
    let waiting = handle
        .require_input(InputRequests::new().with("confirm", ask("go on?")))
        .unwrap();
    let key = pair
        .second()
        .get(&owner, &id)
        .unwrap()
        .input_requests()
        .unwrap()
        .iter()
        .map(|(key, _)| key.to_owned())
        .next()
        .unwrap();
    let other = pair.second().clone();
    let (o, i, k) = (owner.clone(), id.clone(), key.clone());
    let answer = later(Duration::from_millis(50), move || {
        other
            .respond(
                &o,
                &i,
                obj(json!({ k: {"action": "accept", "content": {"n": 1}} })),
            )
            .unwrap();
    });
    let answers = tokio_rt()
        .block_on(async { tokio::time::timeout(BOUND, waiting.wait_for_input_async()).await })
        .expect("woken before the bound")
        .unwrap();
    assert_eq!(answers.get("confirm").unwrap()["content"]["n"], 1);
    answer.join().unwrap();
    // The answers were taken: nothing is left to wait for, at once.
    assert!(matches!(
        pollster::block_on(pair.first().wait_for_input_async(&owner, &id)),
        Err(Error::NothingToWaitFor { .. })
    ));

    // On the minimal executor, a cancel request ends the wait for input.
    let working = waiting.resume().unwrap();
    let waiting = working
        .require_input(InputRequests::new().with("again", ask("sure?")))
        .unwrap();
    let other = pair.second().clone();
    let (o, i) = (owner.clone(), id.clone());
    let asker = later(Duration::from_millis(50), move || {
        other.request_cancel(&o, &i).unwrap();
    });
    assert!(matches!(
        pollster::block_on(waiting.wait_for_input_async()),
        Err(Error::CancelRequested { .. })
    ));
    asker.join().unwrap();
    let _ = waiting.cancel().unwrap();
}

fn cancelled_wakes_on_a_cancel_request<P: Pair>(pair: &P) {
    let owner = alice();
    let (handle, task) = pair.first().create(&owner, req(4)).unwrap();
    let id = task.id().to_string();
    let rt = tokio_rt();
    let mut cancelled = handle.cancelled();
    assert!(pending_once(&mut cancelled), "no cancel asked yet");
    let other = pair.second().clone();
    let (o, i) = (owner.clone(), id.clone());
    let asker = later(Duration::from_millis(50), move || {
        other.request_cancel(&o, &i).unwrap();
    });
    rt.block_on(async { tokio::time::timeout(BOUND, &mut cancelled).await })
        .expect("woken before the bound")
        .unwrap();
    drop(cancelled);
    asker.join().unwrap();
    // Already asked: resolves at once, on either executor.
    pollster::block_on(handle.cancelled()).unwrap();
    let _ = handle.cancel().unwrap();

    // `tasks/cancel` itself (the status) wakes it too.
    let (handle, task) = pair.first().create(&owner, req(5)).unwrap();
    let other = pair.second().clone();
    let (o, i) = (owner.clone(), task.id().to_string());
    let canceller = later(Duration::from_millis(50), move || {
        let _ = other.cancel(&o, &i, None).unwrap();
    });
    pollster::block_on(handle.cancelled()).unwrap();
    canceller.join().unwrap();
    drop(handle);

    // A task that is gone: an error, never read as a cancel.
    let (handle, task) = pair.first().create(&owner, req(6)).unwrap();
    pair.second()
        .remove(&owner, &task.id().to_string())
        .unwrap();
    assert!(matches!(
        pollster::block_on(handle.cancelled()),
        Err(Error::TaskNotFound { .. })
    ));
    drop(handle);
}

fn a_dropped_future_deregisters<P: Pair>(pair: &P) {
    let owner = alice();
    let task = pair.first().insert(&owner, req(7)).unwrap();
    let id = task.id().to_string();
    assert_eq!(pair.pending(), 0);
    let mut futures: Vec<std::pin::Pin<Box<dyn Future<Output = bool> + '_>>> = (0..8)
        .map(|n| match n % 2 {
            0 => {
                let wait = pair.first().wait_async(&owner, &id);
                Box::pin(async { wait.await.is_ok() })
                    as std::pin::Pin<Box<dyn Future<Output = bool>>>
            }
            _ => {
                let wait = pair.first().wait_for_cancel_async(&owner, &id);
                Box::pin(async { wait.await.is_ok() })
            }
        })
        .collect();
    for future in &mut futures {
        assert!(pending_once(future));
    }
    assert_eq!(pair.pending(), 8, "each pending future is one registration");
    futures.truncate(3);
    assert_eq!(pair.pending(), 3, "dropped futures left");
    drop(futures);
    assert_eq!(pair.pending(), 0, "every dropped future left");

    // Abandoned by a runtime's timeout (the usual way to bound a wait).
    let abandoned = tokio_rt().block_on(async {
        tokio::time::timeout(
            Duration::from_millis(30),
            pair.first().wait_async(&owner, &id),
        )
        .await
    });
    assert!(abandoned.is_err(), "the task is still working");
    assert_eq!(pair.pending(), 0, "a timed-out wait left nothing");
    // And the task is as it was: a dropped wait changes nothing.
    assert_eq!(
        pair.first().get(&owner, &id).unwrap().status(),
        TaskStatus::Working
    );
}

fn expiry_resolves_task_not_found<P: Pair>(pair: &P) {
    let owner = alice();
    let task = pair
        .first()
        .insert(&owner, req(8).with_ttl(Some(300)))
        .unwrap();
    let id = task.id().to_string();
    let waited = tokio_rt()
        .block_on(async { tokio::time::timeout(BOUND, pair.first().wait_async(&owner, &id)).await })
        .expect("resolved at the task's expiry, before the bound");
    assert!(
        matches!(waited, Err(Error::TaskNotFound { .. })),
        "{waited:?}"
    );

    // On the minimal executor too, for a handler's wait for input.
    let (handle, _) = pair
        .first()
        .create(&owner, req(9).with_ttl(Some(300)))
        .unwrap();
    let waiting = handle
        .require_input(InputRequests::new().with("q", ask("?")))
        .unwrap();
    assert!(matches!(
        pollster::block_on(waiting.wait_for_input_async()),
        Err(Error::TaskNotFound { .. })
    ));
    waiting.detach();
    assert_eq!(pair.pending(), 0);
}

macro_rules! suite {
    ($module:ident, $pair:expr) => {
        mod $module {
            use super::*;
            suite!(@tests $pair;
                result_future_wakes_on_completion_elsewhere,
                input_future_wakes_on_answers,
                cancelled_wakes_on_a_cancel_request,
                a_dropped_future_deregisters,
                expiry_resolves_task_not_found,
            );
        }
    };
    (@tests $pair:expr; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                if let Some(pair) = $pair {
                    super::$test(&pair);
                }
            }
        )*
    };
}

suite!(memory, Some(Memory::new()));
#[cfg(feature = "redis")]
suite!(redis, Redis::start());

// ---------------------------------------------------------------------------------------
// Backend-specific
// ---------------------------------------------------------------------------------------

/// 10,000 futures pending on one registry (100 tasks, 100 futures each) are all woken,
/// and each pending wait's heap cost is measured (printed; run with `--nocapture
/// --test-threads=1` for an exact figure).
#[test]
fn ten_thousand_pending_futures_on_the_registry_all_wake() {
    const TASKS: usize = 100;
    const PER_TASK: usize = 100;
    let store = Memory::new().0;
    let owner = alice();
    let ids: Vec<String> = (0..TASKS)
        .map(|n| {
            store
                .insert(&owner, req(n as i64))
                .unwrap()
                .id()
                .to_string()
        })
        .collect();

    // Heap per pending wait: the boxed future and its share of the task's event.
    let before = counting::live_bytes();
    let mut futures: Vec<_> = ids
        .iter()
        .flat_map(|id| (0..PER_TASK).map(|_| store.wait_async(&owner, id)))
        .collect();
    for future in &mut futures {
        assert!(pending_once(future));
    }
    let per_wait = (counting::live_bytes() - before) as f64 / (TASKS * PER_TASK) as f64;
    println!("heap per pending wait_async on the registry: {per_wait:.0} bytes");
    assert_eq!(store.pending_waits(), TASKS * PER_TASK);
    drop(futures);
    assert_eq!(store.pending_waits(), 0);

    let rt = tokio_rt();
    let woken = rt.block_on(async {
        let store = Arc::new(store);
        let mut joins = Vec::with_capacity(TASKS * PER_TASK);
        for id in &ids {
            for _ in 0..PER_TASK {
                let (store, owner, id) = (Arc::clone(&store), owner.clone(), id.clone());
                joins.push(tokio::spawn(async move {
                    store
                        .wait_async(&owner, &id)
                        .await
                        .map(|task| task.status())
                }));
            }
        }
        let started = Instant::now();
        while store.pending_waits() < TASKS * PER_TASK {
            assert!(
                started.elapsed() < BOUND,
                "the futures never all registered"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let finisher = {
            let (store, owner, ids) = (Arc::clone(&store), owner.clone(), ids.clone());
            thread::spawn(move || {
                for id in &ids {
                    let outcome = Outcome::Result(obj(json!({"content": []})));
                    store
                        .store_result(&owner, id, TaskStatus::Completed, outcome)
                        .unwrap();
                }
            })
        };
        let mut woken = 0;
        for join in joins {
            let status = tokio::time::timeout(BOUND, join)
                .await
                .expect("every future woke")
                .expect("no panic")
                .unwrap();
            assert_eq!(status, TaskStatus::Completed);
            woken += 1;
        }
        finisher.join().unwrap();
        assert_eq!(store.pending_waits(), 0);
        woken
    });
    assert_eq!(woken, TASKS * PER_TASK);
}

/// The blocking wait and the future share one primitive: both are woken by one change,
/// and a blocking wait in progress counts as a pending wait.
#[test]
fn blocking_and_async_waits_wake_together_on_the_registry() {
    let store = Memory::new().0;
    let owner = alice();
    let id = store.insert(&owner, req(1)).unwrap().id().to_string();
    let blocking = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        thread::spawn(move || store.wait(&owner, &id, Some(BOUND)))
    };
    let started = Instant::now();
    while store.pending_waits() < 1 {
        assert!(started.elapsed() < BOUND);
        thread::sleep(Duration::from_millis(2));
    }
    let mut future = store.wait_async(&owner, &id);
    assert!(pending_once(&mut future));
    assert_eq!(store.pending_waits(), 2);
    let _ = store.cancel(&owner, &id, None).unwrap();
    assert_eq!(
        blocking.join().unwrap().unwrap().status(),
        TaskStatus::Cancelled
    );
    assert_eq!(
        pollster::block_on(future).unwrap().status(),
        TaskStatus::Cancelled
    );
    assert_eq!(store.pending_waits(), 0);
}

/// While Redis is unreachable a future resolves `Error::Store` after the store's outage
/// timeout (500 ms here), never `TaskNotFound` and never a hang.
#[cfg(feature = "redis")]
#[test]
fn a_redis_outage_resolves_a_future_with_a_store_error() {
    let Some(server) = mcp_tasks_test_support::redis::RedisServer::start() else {
        return;
    };
    let mut server = server;
    let store = mcp_tasks_redis::RedisTaskStore::builder(&server.url())
        .outage_timeout(Duration::from_millis(500))
        .io_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let owner = alice();
    let id = store.insert(&owner, req(1)).unwrap().id().to_string();
    let mut future = store.wait_async(&owner, &id);
    assert!(pending_once(&mut future));
    server.stop();
    let waited = tokio_rt()
        .block_on(async { tokio::time::timeout(BOUND, future).await })
        .expect("resolved after the outage timeout, before the bound");
    assert!(matches!(waited, Err(Error::Store { .. })), "{waited:?}");
    assert_eq!(store.pending_waits(), 0);
}

/// The 2025-11-25 `tasks/result` as a future (`Dispatcher::result_async`): the stored
/// outcome of a completed task, the error of a failed one, and `-32602` for an unknown id,
/// answered as `dispatch` answers them.
#[test]
fn the_dispatcher_answers_tasks_result_as_a_future() {
    use mcp_tasks::protocol::{Dispatcher, methods};
    let registry = TaskRegistry::new();
    let dispatcher = Dispatcher::new(registry.clone());
    let (done, task) = registry.create(&alice(), req(1)).unwrap();
    let done_id = task.id().to_string();
    let (failing, task) = registry.create(&alice(), req(2)).unwrap();
    let failing_id = task.id().to_string();
    let finisher = later(Duration::from_millis(50), move || {
        let _ = done.complete(obj(json!({"content": [], "isError": false})));
        let _ = failing.fail(Outcome::error(-32603, "it broke"));
    });
    let params = json!({"taskId": done_id});
    let answer = pollster::block_on(dispatcher.result_async(&alice(), Some(&params)));
    finisher.join().unwrap();
    let expected = dispatcher.dispatch(&alice(), methods::TASKS_RESULT, Some(&params));
    assert_eq!(answer, expected, "the future answers what dispatch answers");
    assert!(answer.is_ok_and(|payload| payload["content"] == json!([])));

    let params = json!({"taskId": failing_id});
    let answer = pollster::block_on(dispatcher.result_async(&alice(), Some(&params)));
    assert!(answer.is_err_and(|error| error.code == -32603 && error.message == "it broke"));

    let params = json!({"taskId": "no-such-task"});
    let answer = pollster::block_on(dispatcher.result_async(&alice(), Some(&params)));
    assert!(answer.is_err_and(|error| error.code == -32602));
}
