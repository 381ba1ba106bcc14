//! The claim path of `mcp-tasks-rmcp` without Redis: two managers over one store that
//! claims what is handed over to it (the registry, plus a queue of handed-over tasks and
//! the jobs, with the core's `Update::claim` deciding each claim). What one manager hands
//! over on shutdown, the other's claim loop runs as attempt 2 from the last checkpoint;
//! a claimed task whose tool has no handler there fails, saying so.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use mcp_tasks::{
    AnyTask, Attempts, Claim, Error, InputResponses, JsonObject, Lease, Owner, StoreFuture,
    Subscriber, SubscriptionId, Task, TaskOrigin, TaskPage, TaskRegistry, TaskRequest, TaskStatus,
    TaskStore, TtlPolicy, Update, Working,
};
use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions, text_result};
use rmcp::model::{CallToolRequestParams, NumberOrString};
use serde_json::{Value, json};

/// The tasks handed over and not claimed yet, and the condition their claimers wait on.
type Handed = (Mutex<VecDeque<(Owner, String)>>, Condvar);

/// The registry, claiming the tasks handed over to it.
#[derive(Clone, Default)]
struct Claiming {
    registry: TaskRegistry,
    jobs: Arc<Mutex<HashMap<String, JsonObject>>>,
    handed: Arc<Handed>,
}

impl std::fmt::Debug for Claiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claiming").finish_non_exhaustive()
    }
}

impl TaskStore for Claiming {
    fn ttl_policy(&self) -> TtlPolicy {
        self.registry.ttl_policy()
    }
    fn insert(&self, owner: &Owner, request: TaskRequest) -> Result<Task<Working>, Error> {
        self.insert_leased(owner, request).map(|(task, _)| task)
    }
    fn insert_leased(
        &self,
        owner: &Owner,
        request: TaskRequest,
    ) -> Result<(Task<Working>, Lease), Error> {
        let job = request
            .redelivery()
            .map(|redelivery| redelivery.job().clone());
        let (task, lease) = self.registry.insert_leased(owner, request)?;
        if let Some(job) = job {
            self.jobs.lock().unwrap().insert(task.id().to_string(), job);
        }
        Ok((task, lease))
    }
    fn get(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.registry.get(owner, task_id)
    }
    fn origin(&self, owner: &Owner, task_id: &str) -> Result<TaskOrigin, Error> {
        self.registry.origin(owner, task_id)
    }
    fn list(&self, owner: &Owner, cursor: Option<&str>, size: usize) -> Result<TaskPage, Error> {
        self.registry.list(owner, cursor, size)
    }
    fn update(&self, owner: &Owner, task_id: &str, update: Update) -> Result<AnyTask, Error> {
        self.registry.update(owner, task_id, update)
    }
    fn remove(&self, owner: &Owner, task_id: &str) -> Result<AnyTask, Error> {
        self.registry.remove(owner, task_id)
    }
    fn wait(&self, o: &Owner, id: &str, t: Option<Duration>) -> Result<AnyTask, Error> {
        self.registry.wait(o, id, t)
    }
    fn wait_for_input(
        &self,
        o: &Owner,
        id: &str,
        t: Option<Duration>,
    ) -> Result<InputResponses, Error> {
        self.registry.wait_for_input(o, id, t)
    }
    fn wait_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, AnyTask> {
        self.registry.wait_async(o, id)
    }
    fn wait_for_input_async<'a>(
        &'a self,
        o: &'a Owner,
        id: &'a str,
    ) -> StoreFuture<'a, InputResponses> {
        self.registry.wait_for_input_async(o, id)
    }
    fn wait_for_cancel_async<'a>(&'a self, o: &'a Owner, id: &'a str) -> StoreFuture<'a, ()> {
        self.registry.wait_for_cancel_async(o, id)
    }
    fn add_subscriber(&self, subscriber: Subscriber) -> SubscriptionId {
        self.registry.add_subscriber(subscriber)
    }
    fn unsubscribe(&self, id: SubscriptionId) -> bool {
        self.registry.unsubscribe(id)
    }

    fn claim(&self) -> Result<Option<Claim>, Error> {
        let Some((owner, id)) = self.handed.0.lock().unwrap().pop_front() else {
            return Ok(None);
        };
        let claimed = self.registry.update(&owner, &id, Update::claim())?;
        let attempts: Attempts = claimed.attempts().expect("a redeliverable task");
        let checkpoint = claimed.checkpoint().cloned();
        let task = Task::<Working>::try_from(claimed).expect("a claimed task works");
        let job = self
            .jobs
            .lock()
            .unwrap()
            .get(&id)
            .cloned()
            .unwrap_or_default();
        Ok(Some(Claim {
            owner,
            task,
            job,
            attempts,
            checkpoint,
            lease: Lease::none().for_attempt(attempts.attempt()),
        }))
    }

    fn wait_for_claimable(&self, timeout: Option<Duration>) -> Result<(), Error> {
        let (queue, ready) = &*self.handed;
        let queue = queue.lock().unwrap();
        let timeout = timeout.unwrap_or(Duration::from_secs(1));
        let _ = ready
            .wait_timeout_while(queue, timeout, |queue| queue.is_empty())
            .unwrap();
        Ok(())
    }

    fn hand_over(&self, owner: &Owner, task_id: &str) -> Result<bool, Error> {
        let task = self.registry.get(owner, task_id)?;
        if task.is_terminal() || !task.attempts().is_some_and(|a| a.left()) {
            return Ok(false);
        }
        let (queue, ready) = &*self.handed;
        queue
            .lock()
            .unwrap()
            .push_back((owner.clone(), task_id.to_owned()));
        ready.notify_all();
        Ok(true)
    }
}

/// A manager on `store` with `count` registered: it counts to `to` in steps of 50 ms,
/// checkpointing each step, resuming from the last checkpoint.
fn counting(store: &Claiming) -> TaskManager<Claiming> {
    let tasks = TaskManager::new(store.clone());
    tasks.register("count", |ctx| {
        Box::pin(async move {
            let to = ctx
                .arguments()
                .get("to")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let from = ctx
                .checkpoint()
                .and_then(|checkpoint| checkpoint.get("at"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            for at in from + 1..=to {
                tokio::select! {
                    () = ctx.cancelled() => return Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
                ctx.save_checkpoint(json!({"at": at}))?;
            }
            let text = format!("counted {from}..{to} on attempt {}", ctx.attempt());
            Ok(text_result(text, false))
        })
    });
    tasks
}

fn count_to(to: u64) -> CallToolRequestParams {
    let mut request = CallToolRequestParams::new("count");
    request.arguments = json!({"to": to}).as_object().cloned();
    request
}

/// Polls the store until `found` picks something out of the task.
async fn poll<T>(
    store: &Claiming,
    owner: &Owner,
    id: &str,
    found: impl Fn(&AnyTask) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let task = store.get(owner, id).expect("the task is stored");
            if let Some(found) = found(&task) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("the task reached the awaited state in time")
}

/// The task's result or error, as text to search.
fn outcome_text(task: &AnyTask) -> String {
    format!("{:?}", task.outcome())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_handed_over_on_shutdown_runs_on_as_attempt_2_from_its_checkpoint() {
    let store = Claiming::default();
    let first = counting(&store);
    let second = counting(&store);
    second.run_claims().expect("a handler is registered");
    let owner = Owner::new("alice");
    let created = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &count_to(20),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let id = created.task.task_id;
    // Let the first manager count a little.
    poll(&store, &owner, &id, |task| {
        task.checkpoint()
            .and_then(|checkpoint| checkpoint.get("at"))
            .and_then(Value::as_u64)
            .filter(|at| *at >= 3)
    })
    .await;

    assert_eq!(first.hand_over_running(), 1);
    let message = poll(&store, &owner, &id, |task| {
        assert!(!task.is_terminal(), "ended before its redelivery: {task:?}");
        task.status_message()
            .filter(|message| message.contains("attempt 2"))
            .map(str::to_owned)
    })
    .await;
    assert!(message.contains("attempt 2 of 3"), "{message}");

    let done = poll(&store, &owner, &id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    let text = outcome_text(&done);
    assert!(text.contains("on attempt 2"), "{text}");
    assert!(
        !text.contains("counted 0.."),
        "attempt 2 resumes from the checkpoint: {text}"
    );
    // The first manager's handler was stopped: nothing writes over the one result.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(store.get(&owner, &id).unwrap(), done);
    // A stopped manager hands a new redeliverable call over at once.
    let late = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(2),
            &count_to(2),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let late = poll(&store, &owner, &late.task.task_id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert!(
        outcome_text(&late).contains("counted 0..2 on attempt 2"),
        "{late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_task_whose_tool_has_no_handler_here_fails_saying_so() {
    let store = Claiming::default();
    let first = counting(&store);
    let other = TaskManager::new(store.clone());
    other.register("something-else", |_ctx| {
        Box::pin(async { Ok(text_result("never", false)) })
    });
    other.run_claims().expect("a handler is registered");
    let owner = Owner::new("alice");
    let created = first
        .spawn_registered(
            &owner,
            &NumberOrString::Number(1),
            &count_to(100),
            TaskOptions::new().redeliver(3),
        )
        .expect("the task is created");
    let id = created.task.task_id;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(first.hand_over_running(), 1);
    let done = poll(&store, &owner, &id, |task| {
        task.is_terminal().then(|| task.clone())
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Failed);
    let text = outcome_text(&done);
    assert!(text.contains("no handler for its tool `count`"), "{text}");
}
