//! Running a claimed task again, without Redis: the example server over a store that
//! wraps the in-process registry and does what a shared store does on a hand-over
//! (`mcp_tasks_test_support::handing`: the task becomes claimable; a claim applies the
//! core's `Update::claim` and hands back the job and the checkpoint, with a lease fenced
//! by the attempt). What it checks is the
//! servers' part: the job a redeliverable tool's task keeps, `Server::claim`, and the
//! handlers' re-runs (`sleep` from its checkpoint, `confirm` asking again or finishing
//! with the answer it checkpointed), with the old holder's late writes refused.

mod support;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{
    AnyTask, JsonObject, Owner, Redelivery, RequestId, TaskHandle, TaskRequest, TaskStatus,
    TaskStore,
};
use mcp_tasks_server::server::{Elicitation, Generation, Job, Reply, Server};
use mcp_tasks_servers::tools;
use mcp_tasks_test_support::handing::HandingRegistry;
use serde_json::{Value, json};

/// The example tools over a store that hands tasks over, as a shared store's (the
/// transport API: `Server::request`, `Server::claim`).
fn server() -> (Arc<HandingRegistry>, Server) {
    let store = Arc::new(HandingRegistry::default());
    let server = Server::builder()
        .tools(tools::examples())
        .shared_store(Arc::clone(&store))
        .build()
        .expect("the example server");
    (store, server)
}

/// Starts `tool` as a 2026-07-28 task; returns its id and its first run's work.
fn start(
    server: &Server,
    owner: &Owner,
    tool: &str,
    arguments: Value,
) -> (String, thread::JoinHandle<()>) {
    let params = support::ext(json!({"name": tool, "arguments": arguments}));
    let reply = server.request(
        owner,
        &RequestId::from(1),
        "tools/call",
        Some(params),
        Elicitation::Unreachable,
    );
    let Reply::ThenRun(created, work) = reply else {
        panic!("{tool} runs as a task");
    };
    let id = created.task_id().to_string();
    let answer = created.to_value().expect("the answer reads back");
    assert_eq!(
        answer["taskId"],
        id.as_str(),
        "the answer names the task: {answer}"
    );
    (id, thread::spawn(move || work.run_here()))
}

fn until(store: &HandingRegistry, owner: &Owner, id: &str, status: TaskStatus) -> AnyTask {
    let started = Instant::now();
    loop {
        let task = store.get(owner, id).expect("the task");
        if task.status() == status {
            return task;
        }
        assert!(
            started.elapsed() < support::WAIT,
            "{id} never reached {status}: {task:?}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn text(task: &AnyTask) -> String {
    match task.outcome() {
        Some(mcp_tasks::Outcome::Result(result)) => result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        other => panic!("a result, got {other:?}"),
    }
}

/// A `sleep` handed over once it saved its first checkpoint (after a second) resumes from
/// it on the claim: the job names the tool, its arguments and the generation; the re-run
/// sleeps only the rest; the first run's late result is refused; the task has one result.
#[test]
fn a_claimed_sleep_sleeps_only_the_rest() {
    let (store, server) = server();
    let owner = Owner::new("alice");
    let (id, first) = start(&server, &owner, "sleep", json!({"ms": 4_000}));
    let job = store.job(&owner, &id).unwrap().expect("sleep keeps a job");
    assert_eq!(
        Job::from_object(&job),
        Ok(Job {
            tool: "sleep".into(),
            arguments: json!({"ms": 4_000}).as_object().unwrap().clone(),
            generation: Generation::Extension,
            session: None,
        })
    );
    // Handed over once its first checkpoint is saved (not after a fixed time: a loaded
    // machine may oversleep this thread).
    let started = Instant::now();
    while store.get(&owner, &id).unwrap().checkpoint().is_none() {
        assert!(started.elapsed() < support::WAIT, "no checkpoint saved");
        thread::sleep(Duration::from_millis(10));
    }
    assert!(
        store.hand_over(&owner, &id).unwrap(),
        "a running sleep is handed over"
    );
    let claimed = server
        .claim()
        .unwrap()
        .expect("the handed-over task is claimable");
    assert_eq!(claimed.task.to_string(), id);
    assert_eq!((claimed.attempts.attempt(), claimed.attempts.max()), (2, 3));
    let resumed = Instant::now();
    claimed.run();
    let took = resumed.elapsed();
    first.join().expect("the first run ends");
    let task = store.get(&owner, &id).unwrap();
    eprintln!(
        "a claimed sleep of 4000 ms, handed over after its checkpoint: the re-run took {took:?}"
    );
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(text(&task), "slept 4000 ms");
    assert!(
        took < Duration::from_millis(3_500),
        "the re-run starts from the checkpoint (about 1000 ms slept), took {took:?}"
    );
    assert!(server.claim().unwrap().is_none(), "nothing more to claim");
}

/// A `confirm` handed over while it waits for input is claimed as `working`; the re-run
/// asks again under a new key and finishes with that answer.
#[test]
fn a_claimed_confirm_asks_again() {
    let (store, server) = server();
    let owner = Owner::new("alice");
    let (id, first) = start(&server, &owner, "confirm", json!({"question": "go?"}));
    let waiting = until(&store, &owner, &id, TaskStatus::InputRequired);
    let old_keys: Vec<String> = waiting
        .input_requests()
        .expect("requests")
        .iter()
        .map(|(key, _)| key.to_owned())
        .collect();
    assert!(store.hand_over(&owner, &id).unwrap());
    let claimed = server.claim().unwrap().expect("claimable");
    assert_eq!(
        store.get(&owner, &id).unwrap().status(),
        TaskStatus::Working,
        "claimed as working"
    );
    let rerun = thread::spawn(move || claimed.run());
    // The first run sees its task runs elsewhere within a second, and stops without
    // taking the re-run's answers.
    let claimed_at = Instant::now();
    first.join().expect("the first run stops");
    assert!(
        claimed_at.elapsed() < Duration::from_secs(3),
        "the first run stopped {:?} after the claim",
        claimed_at.elapsed()
    );
    let asked = until(&store, &owner, &id, TaskStatus::InputRequired);
    let keys: Vec<String> = asked
        .input_requests()
        .expect("requests")
        .iter()
        .map(|(key, _)| key.to_owned())
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(
        !old_keys.contains(&keys[0]),
        "a new key: {keys:?} after {old_keys:?}"
    );
    let mut answers = JsonObject::new();
    answers.insert(
        keys[0].clone(),
        json!({"action": "accept", "content": {"answer": "yes"}}),
    );
    store.respond(&owner, &id, answers).unwrap();
    rerun.join().expect("the re-run ends");
    let task = until(&store, &owner, &id, TaskStatus::Completed);
    assert_eq!(text(&task), "the user answered: yes");
}

/// A `confirm` re-run with the answer it checkpointed finishes with it, never asking
/// again.
#[test]
fn a_confirm_rerun_with_its_answer_does_not_ask_again() {
    let (store, server) = server();
    let owner = Owner::new("alice");
    let job = Job {
        tool: "confirm".into(),
        arguments: json!({"question": "go?"}).as_object().unwrap().clone(),
        generation: Generation::Extension,
        session: None,
    };
    let request = TaskRequest::new(1, "tools/call")
        .with_redelivery(Redelivery::new(tools::ATTEMPTS, job.to_object()));
    let (handle, task): (TaskHandle<_, _>, _) = store.create(&owner, request).unwrap();
    let id = task.id().to_string();
    // What the first run saved once it read the answer, before its instance stopped.
    handle
        .checkpoint(json!({"accept": {"answer": "yes"}}))
        .unwrap();
    assert!(store.hand_over(&owner, &id).unwrap());
    drop(handle.detach());
    let claimed = server.claim().unwrap().expect("claimable");
    claimed.run();
    let done = store.get(&owner, &id).unwrap();
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert_eq!(text(&done), "the user answered: yes");
}

/// A task that runs once (`fail`, `crash`, `echo`, the fixtures) keeps no job and is never
/// handed over.
#[test]
fn a_task_that_runs_once_is_not_handed_over() {
    let (store, server) = server();
    let owner = Owner::new("alice");
    let (id, first) = start(&server, &owner, "fail", json!({}));
    first.join().unwrap();
    assert_eq!(store.job(&owner, &id).unwrap(), None);
    assert!(!store.hand_over(&owner, &id).unwrap());
    assert!(server.claim().unwrap().is_none());
}
