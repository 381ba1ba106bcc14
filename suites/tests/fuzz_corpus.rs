//! Replays the committed fuzz corpus through the fuzz targets' own logic, so what the
//! fuzzer found is covered by `cargo test` on stable Rust, without cargo-fuzz.
//!
//! `fuzz/harness.rs` holds the targets' logic; `fuzz/fuzz_targets/*.rs` wrap it for
//! libFuzzer and this file includes it as it is. Every file of `fuzz/corpus/<target>/`
//! (the minimized corpus, seeds included) and of `fuzz/regressions/<target>/` (inputs kept
//! on purpose, such as past crashes) goes through `<target>`. See `fuzz/README.md`.

#[path = "../../fuzz/harness.rs"]
mod harness;

use std::any::Any;
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use mcp_tasks::ext::DetailedTask;
use mcp_tasks::protocol::GetTaskPayloadResult;
use mcp_tasks::{AnyTask, TaskStatus};
use serde_json::{Value, json};

/// The corpus and regression files of `target`, sorted.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for kind in ["seeds", "corpus", "regressions"] {
        let Ok(entries) = fs::read_dir(fuzz.join(kind).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Runs every input of `target` through `run`; fails naming each input that panics.
fn replay(target: &str, run: fn(&[u8])) {
    let files = inputs(target);
    assert!(
        files.len() >= 10,
        "fuzz/corpus/{target}/ has {} files: the corpus is missing",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        // A fuzzer running meanwhile may replace files of its corpus.
        let Ok(data) = fs::read(file) else {
            continue;
        };
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
            failures.push(format!("{}: {}", file.display(), panic_message(&*panic)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} inputs of `{target}` fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn any_task_corpus() {
    replay("any_task", harness::any_task);
}

#[test]
fn messages_corpus() {
    replay("messages", harness::messages);
}

#[test]
fn dispatch_corpus() {
    replay("dispatch", harness::dispatch);
}

/// The dispatch fixture itself is sound: its snapshot is stable, and each placeholder
/// names what the harness's docs say.
#[test]
fn dispatch_fixture_is_what_the_harness_says() {
    let fixture = harness::Fixture::new();
    let snapshot = fixture.snapshot();
    assert_eq!(snapshot, fixture.snapshot());
    assert_eq!(snapshot.tasks[0].len(), harness::OWNER_LIMIT);
    assert_eq!(snapshot.len, harness::OWNER_LIMIT + 2 + 1 + 1);
    let statuses: Vec<&str> = snapshot.tasks[0]
        .iter()
        .map(|task| task.status().as_str())
        .collect();
    assert_eq!(
        statuses,
        [
            "working",
            "input_required",
            "completed",
            "failed",
            "failed",
            "cancelled"
        ]
    );
    let params = fixture.substitute(serde_json::json!({"taskId": "$2", "cursor": "$c1"}));
    assert_eq!(params["taskId"], fixture.ids[2]);
    assert_eq!(params["cursor"], fixture.cursors[1]);
}

// ---------------------------------------------------------------------------------------
// What the fuzzers found: regression tests. Ignored ones fail today; see fuzz/README.md.
// ---------------------------------------------------------------------------------------

/// Found by `any_task` (through the extension mapping): a 2025-11-25 `Task` object whose
/// `lastUpdatedAt` is before its `createdAt` is accepted as it is
/// (`src/protocol/task.rs`, `build`), so the crate holds a task that no transition can
/// produce, and that the extension's reader (`TryFrom<DetailedTask> for AnyTask`) would
/// have raised to `createdAt`: the same object reads differently in the two dialects.
#[test]
fn a_task_object_is_never_updated_before_it_was_created() {
    let text = r#"{"taskId":"t","status":"cancelled","createdAt":"2025-11-25T10:30:00Z",
        "lastUpdatedAt":"2012-11-25T10:40:00Z","ttl":60000}"#;
    match serde_json::from_str::<AnyTask>(text) {
        Err(_) => {}
        Ok(task) => assert!(
            task.last_updated_at() >= task.created_at(),
            "lastUpdatedAt {} is before createdAt {}",
            task.last_updated_at(),
            task.created_at()
        ),
    }
}

/// Found by `any_task` (through the extension mapping): reading an extension
/// `DetailedTask` of a failed task that has no `statusMessage` gives the task one (the
/// error's message: `Task::fail` fills in a diagnostic; `src/ext/task.rs`,
/// `TryFrom<DetailedTask>`), so a peer's task does not read back as it was sent.
#[test]
fn the_extension_reader_does_not_invent_a_status_message() {
    let sent: DetailedTask = serde_json::from_value(json!({
        "taskId": "t", "status": "failed", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00Z", "ttlMs": 60000,
        "error": {"code": -32603, "message": "the task failed"}
    }))
    .expect("a DetailedTask");
    let task = AnyTask::try_from(sent.clone()).expect("has its payload");
    assert_eq!(task.status(), TaskStatus::Failed);
    assert_eq!(task.status_message(), None, "a status message nobody sent");
    assert_eq!(DetailedTask::from(&task), sent);
}

/// Found by `messages` (kept as `fuzz/regressions/messages/float-one-ulp-4964e30`, input
/// `{"a":4964e30}`): in a build of this crate without serde_json's `float_roundtrip`
/// feature (any user's build: only the dev-dependency `jsonschema` turns it on, so
/// `cargo test` does not see this), a float in an opaque payload changes through text.
/// `4.964e33` parses to the float printed as `4.9640000000000003e+33`, whose text parses to
/// the float printed as `4.964e+33`: a result stored by a handler and read back by a client
/// is not the value it sent. The fix is in `Cargo.toml`:
/// `serde_json = { version = "1", features = ["float_roundtrip"] }`. This test passes under
/// `cargo test` for the reason above; the fuzz build (no dev-dependencies) shows the bug.
#[test]
fn floats_in_payloads_round_trip() {
    let sent = r#"{"a":4.964e33}"#;
    let result: GetTaskPayloadResult = serde_json::from_str(sent).expect("an object");
    let text = serde_json::to_string(&result).expect("serializes");
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("json"),
        serde_json::from_str::<Value>(sent).expect("json"),
        "{sent} came back as {text}"
    );
}
