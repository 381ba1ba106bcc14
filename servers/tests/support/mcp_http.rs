//! Driving `mcp_http` (the HTTP front, package `mcp-tasks-http`) from the tests of other
//! packages: finding or building it, and the routing headers its 2026-07-28 wire requires.
//! Shared by `servers/tests` and `suites/tests/servers_2026.rs` (through `#[path]`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The environment variable naming a prebuilt `mcp_http` (built with the `redis`,
/// `postgres` and `sqlite` features) for the tests to run instead of building one: CI builds the whole
/// workspace once and sets it, so no test builds the HTTP stack a second time with other
/// features.
pub const BIN_ENV: &str = "MCP_TASKS_HTTP_BIN";

/// The `mcp_http` to run: the one [`BIN_ENV`] names, or one built now with
/// `cargo build -p mcp-tasks-http --features redis,postgres,sqlite` (the one build serves the tests
/// with and without a shared store: without a store's URL it keeps tasks in process),
/// hard-linked to `mcp_http.<name>` (`name` says whose it is) so that a later build with
/// other features, which replaces `mcp_http`, does not change the binary the caller runs.
/// `CARGO_TARGET_DIR` is honoured: the nested cargo inherits it and runs from the
/// repository root.
///
/// # Panics
/// If cargo cannot run or the build fails, or [`BIN_ENV`] names no file (the test cannot
/// go on).
pub fn build(name: &str) -> PathBuf {
    if let Some(prebuilt) = std::env::var_os(BIN_ENV) {
        let prebuilt = PathBuf::from(prebuilt);
        assert!(
            prebuilt.is_file(),
            "{BIN_ENV}={} names no file",
            prebuilt.display()
        );
        return prebuilt;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    command.current_dir(&repo).args([
        "build",
        "--quiet",
        "-p",
        "mcp-tasks-http",
        "--features",
        "redis,postgres,sqlite",
        "--bin",
        "mcp_http",
        "--message-format=json-render-diagnostics",
    ]);
    let shown = "cargo build -p mcp-tasks-http --features redis,postgres,sqlite";
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|err| panic!("{shown}: cannot run cargo: {err}"));
    assert!(output.status.success(), "{shown} failed");
    let built = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == "mcp_http")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("{shown} named no mcp_http executable"));
    let own = built.with_extension(name);
    let staged = built.with_extension(format!("{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    std::fs::hard_link(&built, &staged)
        .or_else(|_| std::fs::copy(&built, &staged).map(drop))
        .unwrap_or_else(|err| {
            panic!(
                "cannot link {} to {}: {err}",
                built.display(),
                staged.display()
            )
        });
    std::fs::rename(&staged, &own).unwrap_or_else(|err| {
        panic!(
            "cannot rename {} to {}: {err}",
            staged.display(),
            own.display()
        )
    });
    own
}

/// The routing headers the 2026-07-28 wire requires of a request (SEP-2243), as header
/// lines: `Mcp-Method` with the body's method, and `Mcp-Name` with what its params name (a
/// tool, a resource, a task). Nothing for a body that is not a JSON request.
pub fn routing_headers(body: &str) -> String {
    let message: Value = serde_json::from_str(body).unwrap_or_default();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return String::new();
    };
    let named = ["name", "uri", "taskId"]
        .iter()
        .find_map(|member| message.get("params")?.get(member)?.as_str())
        .map_or_else(String::new, |name| format!("Mcp-Name: {name}\r\n"));
    format!("Mcp-Method: {method}\r\n{named}")
}
