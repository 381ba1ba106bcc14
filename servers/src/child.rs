//! A server process driven over its pipes one line at a time: how the tests of this
//! package and of `suites/` talk to the `stdio_server` binary as a client would.
//!
//! It panics where a test should fail (the process cannot start, stops reading): it is a
//! test harness, not part of a server.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// A running child process whose stdin takes lines and whose stdout lines are read by a
/// thread of their own; killed when dropped, so a failed test leaves nothing behind.
pub struct LineChild {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl LineChild {
    /// Starts `program` (its stderr discarded).
    ///
    /// # Panics
    /// If the program cannot be started.
    pub fn spawn(program: impl AsRef<OsStr>) -> Self {
        Self::spawn_command(Command::new(program))
    }

    /// Starts `command` with piped stdin and stdout (stderr discarded unless the command
    /// sets it).
    ///
    /// # Panics
    /// If the command cannot be started.
    pub fn spawn_command(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("{command:?} does not start: {err}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        LineChild {
            child,
            stdin,
            lines,
        }
    }

    /// Writes `line` and a newline, and flushes.
    ///
    /// # Panics
    /// If stdin was closed or the process no longer reads.
    pub fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin
            .write_all(line)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .expect("the server reads its stdin");
    }

    /// The child's process id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The next line the process writes, or `None` if none comes within `wait` (or it
    /// ended).
    pub fn line_within(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Closes the process's stdin (end of input).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits for the process to exit, up to `wait`; returns its exit status if it did.
    pub fn exit_within(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for LineChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
