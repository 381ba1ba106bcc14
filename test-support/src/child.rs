//! A child process of the running test binary that plays a part a test then kills, such as
//! a server instance that dies (`SIGKILL`) while its handler runs a task.
//!
//! The child runs one test of the same binary (`--exact NAME`), which acts only when the
//! environment variable the parent sets is there (run as a plain test, it does nothing).
//! It prints lines `KEY value` (the ids of the tasks it holds, say), then `READY`, and
//! holds on until it is killed. The child is killed and reaped when its [`TestChild`] is
//! dropped, also while a failing test unwinds.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A child process running one test of this test binary.
#[derive(Debug)]
pub struct TestChild {
    child: Child,
    /// The lines it printed up to `READY`.
    printed: Vec<String>,
}

impl TestChild {
    /// Runs the test `test` of this binary in a child process with `var` set to `value`,
    /// and waits until it prints `READY`.
    ///
    /// # Panics
    /// If the child cannot be started, or does not print `READY` within `limit`.
    #[must_use]
    pub fn start(test: &str, var: &str, value: &str, limit: Duration) -> TestChild {
        let exe = std::env::current_exe().expect("the path of this test binary");
        let mut child = Command::new(exe)
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .env(var, value)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the child process starts");
        let stdout = child.stdout.take().expect("the child's stdout");
        let mut started = TestChild {
            child,
            printed: Vec::new(),
        };
        let (lines, received) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = received
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the child running `{test}` printed no READY"));
            // The harness's `test NAME ... ` may precede a line.
            if line.ends_with("READY") {
                return started;
            }
            started.printed.push(line);
        }
    }

    /// The values of the lines `KEY value` it printed before `READY`, in order.
    #[must_use]
    pub fn values(&self, key: &str) -> Vec<String> {
        let key = format!("{key} ");
        self.printed
            .iter()
            .filter_map(|line| line.split_once(&key).map(|(_, value)| value.to_owned()))
            .collect()
    }

    /// Kills the child (`SIGKILL`) and reaps it; answers when it was killed.
    ///
    /// # Panics
    /// If it cannot be killed or reaped.
    pub fn kill(&mut self) -> Instant {
        self.child.kill().expect("SIGKILL the child");
        let killed = Instant::now();
        self.child.wait().expect("the child is reaped");
        killed
    }
}

impl Drop for TestChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
