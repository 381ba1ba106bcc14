//! Compile-fail tests: every misuse in `ui-tests/*.rs` (the handler API's misuses) must be refused by the compiler with
//! the message in its `.stderr` snapshot, and every file in `ui-tests/pass/` must compile
//! and run.
//!
//! Compiler messages change between releases, so the snapshots belong to the project's
//! toolchain (rustc 1.95). On any other compiler the test is skipped with a message.
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test --test ui`, then review them.

use std::io::Write as _;
use std::process::Command;

/// The compiler release the `.stderr` snapshots were written by.
const SNAPSHOT_RUSTC: &str = "rustc 1.95.";

/// The `rustc --version` line of the compiler cargo uses, if it can be run.
fn rustc_version() -> Option<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("--version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[test]
fn ui() {
    match rustc_version() {
        Some(version) if version.starts_with(SNAPSHOT_RUSTC) => {}
        other => {
            // Straight to stderr: libtest would swallow `eprintln!` of a passing test.
            let _ = writeln!(
                std::io::stderr(),
                "skipped: the ui snapshots are written by {SNAPSHOT_RUSTC}x, this compiler is {}",
                other
                    .as_deref()
                    .unwrap_or("unknown (`rustc --version` failed)")
            );
            return;
        }
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("ui-tests/*.rs");
    t.pass("ui-tests/pass/*.rs");
}
