//! Shared pieces of the heavy test suites of mcp-tasks (`tests/`, `benches/`, `examples/`
//! of this package): the official schemas they validate against.
//!
//! The schemas live in the repository's `schema/` folder (with their license notice). A
//! missing or broken schema file is a failure, never a skipped check.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use jsonschema::ValidatorMap;
use serde_json::Value;

/// The MCP schema, revision 2025-11-25.
pub const MCP_2025_11_25: &str = "mcp-schema-2025-11-25.json";
/// The MCP schema, revision 2026-07-28 (the core: `server/discover`, `tools/list`, …).
pub const MCP_2026_07_28: &str = "mcp-schema-2026-07-28.json";
/// The tasks extension `io.modelcontextprotocol/tasks`.
pub const EXT_TASKS: &str = "ext-tasks-schema.json";

/// The folder holding the official schemas.
pub fn schema_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema")
}

/// Validators for every `$defs` entry of the schema file `name` (one of the constants
/// above), keyed by JSON pointer (`#/$defs/Task`), compiled once per process.
///
/// # Panics
/// If the file is missing, is not JSON, or does not compile: a schema check that cannot
/// run must fail loudly.
pub fn validators(name: &str) -> &'static ValidatorMap {
    static MAPS: OnceLock<Mutex<HashMap<String, &'static ValidatorMap>>> = OnceLock::new();
    let mut maps = MAPS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(map) = maps.get(name) {
        return map;
    }
    let path = schema_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "the official schema {} is unreadable: {err}",
            path.display()
        )
    });
    let document: Value = serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()));
    assert_eq!(
        document["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{name} is written in the 2020-12 dialect"
    );
    let map: &'static ValidatorMap = Box::leak(Box::new(
        jsonschema::validator_map_for(&document)
            .unwrap_or_else(|err| panic!("{name} does not compile: {err}")),
    ));
    maps.insert(name.to_owned(), map);
    map
}

/// Builds the binary `name` of the example servers (`servers/`) with the cargo running
/// the tests, and returns its path.
///
/// # Panics
/// If the build fails or cargo does not name the executable.
pub fn server_binary(name: &str) -> std::path::PathBuf {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "mcp-tasks-servers", "--bin", name])
        .arg("--message-format=json")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build -p mcp-tasks-servers --bin {name} failed"
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(std::path::PathBuf::from))
        .expect("cargo names the executable")
}

/// The errors of `instance` against `$defs/<def>` of the schema file `name`, as text.
///
/// # Panics
/// As for [`validators`], and if the schema has no such definition.
pub fn errors(name: &str, def: &str, instance: &Value) -> Vec<String> {
    let pointer = format!("#/$defs/{def}");
    let validator = validators(name)
        .get(&pointer)
        .unwrap_or_else(|| panic!("{name} has no {pointer}"));
    validator
        .iter_errors(instance)
        .map(|err| format!("{} at {}", err, err.instance_path()))
        .collect()
}
