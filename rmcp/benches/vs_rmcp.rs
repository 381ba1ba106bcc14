//! rmcp 3.11's own `TaskManager` against `mcp_tasks_rmcp::TaskManager` (on the in-process
//! registry) on the same tool workload, phase by phase, in one tokio runtime with two
//! worker threads. Not a test: it prints times and ratios.
//!
//! ```text
//! cargo bench -p mcp-tasks-rmcp --bench vs_rmcp [-- N]
//! ```
//!
//! Phases, each over N tasks (default 1000):
//! - `create`: spawn N tasks whose operation asks for one input;
//! - `get`: one `tasks/get` per task (once all are `input_required`);
//! - `update+finish`: one `tasks/update` per task, until every task is `completed`;
//! - `cancel+settle`: N more tasks waiting for a cancel, one `tasks/cancel` each, until
//!   every one is `cancelled`.
//!
//! Settling is observed by polling `tasks/get` over the tasks still open, as a client
//! would, and counts in the phase; rmcp's manager sweeps every stored task on each call,
//! so its cost grows with the number of tasks. mcp-tasks-rmcp's waits still run on tokio's blocking pool (src/wait.rs) until the
//! core's async waits land; `update+finish` and `cancel+settle` measure that.

use std::time::{Duration, Instant};

use mcp_tasks::{Limits, Owner, TaskRegistry};
use rmcp::model::{
    CallToolResult, CancelTaskParams, ContentBlock, GetTaskParams, InputRequest, NumberOrString,
    TaskStatus, UpdateTaskParams,
};
use serde_json::json;

fn request() -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "go?", "requestedSchema": {"type": "object", "properties": {}}}
    }))
    .expect("an elicitation")
}

fn done() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text("done")])
}

fn answer() -> rmcp::model::InputResponses {
    let mut answers = rmcp::model::InputResponses::new();
    answers.insert("k".into(), json!({"action": "accept", "content": {}}));
    answers
}

#[derive(Default, Debug)]
struct Phases {
    create: Duration,
    get: Duration,
    update: Duration,
    cancel: Duration,
}

/// Waits until `status(id)` is `want` for every id; the time is part of the phase.
async fn until_all(ids: &[String], want: TaskStatus, status: impl Fn(&str) -> TaskStatus) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut left: Vec<&String> = ids.iter().collect();
    while !left.is_empty() {
        left.retain(|id| status(id) != want);
        if Instant::now() > deadline {
            panic!("{} tasks never reached {want:?}", left.len());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn rmcp_side(n: usize) -> Phases {
    use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
    let manager = TaskManager::new();
    let mut phases = Phases::default();
    let status = |id: &str| {
        manager
            .get_task(id)
            .map(|t| t.status())
            .unwrap_or(TaskStatus::Failed)
    };

    let started = Instant::now();
    let ids: Vec<String> = (0..n)
        .map(|_| {
            manager
                .spawn(TaskOptions::default(), |ctx| {
                    Box::pin(async move {
                        ctx.request_input("k", request()).await?;
                        Ok::<_, TaskExit>(done())
                    })
                })
                .task_id
        })
        .collect();
    phases.create = started.elapsed();
    until_all(&ids, TaskStatus::InputRequired, status).await;

    let started = Instant::now();
    for id in &ids {
        manager.get_task(id).expect("tasks/get");
    }
    phases.get = started.elapsed();

    let started = Instant::now();
    for id in &ids {
        manager.update_task(id, answer()).expect("tasks/update");
    }
    until_all(&ids, TaskStatus::Completed, status).await;
    phases.update = started.elapsed();

    let waiting: Vec<String> = (0..n)
        .map(|_| {
            manager
                .spawn(TaskOptions::default(), |ctx| {
                    Box::pin(async move {
                        ctx.cancelled().await;
                        Err(TaskExit::Cancelled)
                    })
                })
                .task_id
        })
        .collect();
    let started = Instant::now();
    for id in &waiting {
        manager.cancel_task(id).expect("tasks/cancel");
    }
    until_all(&waiting, TaskStatus::Cancelled, status).await;
    phases.cancel = started.elapsed();
    phases
}

async fn ours(n: usize) -> Phases {
    use mcp_tasks_rmcp::{TaskExit, TaskManager, TaskOptions};
    let registry = TaskRegistry::builder()
        .limits(Limits::none())
        .build()
        .expect("a registry");
    let manager = TaskManager::new(registry);
    let owner = Owner::new("bench");
    let mut phases = Phases::default();
    let status = |id: &str| {
        manager
            .get_task_for(&owner, &GetTaskParams::new(id))
            .map(|t| t.task.status())
            .unwrap_or(TaskStatus::Failed)
    };
    let spawn_asking = |i: usize| {
        manager
            .spawn(
                &owner,
                &NumberOrString::Number(i as i64),
                TaskOptions::default(),
                |ctx| {
                    Box::pin(async move {
                        ctx.request_input("k", request()).await?;
                        Ok::<_, TaskExit>(done())
                    })
                },
            )
            .expect("spawn")
            .task
            .task_id
    };

    let started = Instant::now();
    let ids: Vec<String> = (0..n).map(spawn_asking).collect();
    phases.create = started.elapsed();
    until_all(&ids, TaskStatus::InputRequired, status).await;

    let started = Instant::now();
    for id in &ids {
        manager
            .get_task_for(&owner, &GetTaskParams::new(id.clone()))
            .expect("tasks/get");
    }
    phases.get = started.elapsed();

    let started = Instant::now();
    for id in &ids {
        manager
            .update_task_for(&owner, &UpdateTaskParams::new(id.clone(), answer()))
            .expect("tasks/update");
    }
    until_all(&ids, TaskStatus::Completed, status).await;
    phases.update = started.elapsed();

    let waiting: Vec<String> = (0..n)
        .map(|i| {
            manager
                .spawn(
                    &owner,
                    &NumberOrString::Number(i as i64),
                    TaskOptions::default(),
                    |ctx| {
                        Box::pin(async move {
                            ctx.cancelled().await;
                            Err(TaskExit::Cancelled)
                        })
                    },
                )
                .expect("spawn")
                .task
                .task_id
        })
        .collect();
    let started = Instant::now();
    for id in &waiting {
        manager
            .cancel_task_for(&owner, &CancelTaskParams::new(id.clone()))
            .expect("tasks/cancel");
    }
    until_all(&waiting, TaskStatus::Cancelled, status).await;
    phases.cancel = started.elapsed();
    phases
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let theirs = runtime.block_on(rmcp_side(n));
    let mine = runtime.block_on(ours(n));
    println!("{n} tasks per phase, tokio with 2 workers, in-process registry");
    println!(
        "{:<15} {:>14} {:>16} {:>8}",
        "phase", "rmcp (ms)", "mcp-tasks (ms)", "ratio"
    );
    for (name, a, b) in [
        ("create", theirs.create, mine.create),
        ("get", theirs.get, mine.get),
        ("update+finish", theirs.update, mine.update),
        ("cancel+settle", theirs.cancel, mine.cancel),
    ] {
        println!(
            "{name:<15} {:>14.2} {:>16.2} {:>8.2}",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64().max(1e-9)
        );
    }
}
