//! A server driven in process, as a client would over stdio: for tests of your tools
//! ([`LineClient`]). It speaks newline-delimited JSON-RPC to [`Server::serve_lines`] over
//! in-memory pipes; the server runs on a thread of its own until the client is dropped.
//!
//! ```
//! use mcp_tasks_server::testing::LineClient;
//! use mcp_tasks_server::{Context, Exit, Server, Tool};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! async fn hello(_ctx: Context, _: mcp_tasks_server::NoArguments) -> Result<String, Exit> {
//!     Ok("hello".into())
//! }
//! let server = Server::builder().tool(Tool::new("hello").run(hello)).build()?;
//! let mut client = LineClient::start(server);
//! let answer = client.request("tools/call", json!({"name": "hello"}));
//! assert_eq!(answer["result"]["content"][0]["text"], "hello");
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server::Server;
use crate::stdio::Stdio;

/// How long [`LineClient::request`] waits for an answer.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// A client of a server running in this process (see the [module docs](self)).
pub struct LineClient {
    to_server: Option<Sender<Vec<u8>>>,
    from_server: Receiver<String>,
    /// Messages read while waiting for something else (notifications, requests, other
    /// answers), in order.
    held: VecDeque<Value>,
    next_id: u64,
    server: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for LineClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineClient")
            .field("held", &self.held.len())
            .finish_non_exhaustive()
    }
}

impl LineClient {
    /// Starts `server` on a thread, serving this client (as the stdio requestor `stdio`).
    #[must_use]
    pub fn start(server: Server) -> Self {
        Self::start_with(server, Stdio::new())
    }

    /// Starts `server` on a thread, serving this client as `stdio` says.
    #[must_use]
    pub fn start_with(server: Server, stdio: Stdio) -> Self {
        let (to_server, input) = mpsc::channel::<Vec<u8>>();
        let (output, from_server) = mpsc::channel::<String>();
        let thread = std::thread::spawn(move || {
            server.serve_lines(
                io::BufReader::new(ChannelReader {
                    lines: input,
                    pending: VecDeque::new(),
                }),
                ChannelWriter {
                    lines: output,
                    partial: Vec::new(),
                },
                stdio,
            )
        });
        Self {
            to_server: Some(to_server),
            from_server,
            held: VecDeque::new(),
            next_id: 1,
            server: Some(thread),
        }
    }

    /// Sends one message (a request, a notification, an answer) as it is.
    pub fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends one line of bytes, as it is (a newline is added).
    pub fn send_raw(&mut self, line: &[u8]) {
        if let Some(to_server) = &self.to_server {
            let mut line = line.to_vec();
            line.push(b'\n');
            // A server that stopped reading: the next read says so.
            let _ = to_server.send(line);
        }
    }

    /// Sends a request of `method` with `params` and waits for its answer (at most
    /// [`ANSWER_WITHIN`]); other messages read meanwhile are kept for [`next`](Self::next).
    ///
    /// # Panics
    /// No answer came in time: this is a test helper.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&json!(id))
            .unwrap_or_else(|| panic!("no answer to `{method}` (id {id}) within {ANSWER_WITHIN:?}"))
    }

    /// Waits for the answer to request `id` (at most [`ANSWER_WITHIN`]), keeping the other
    /// messages read meanwhile.
    pub fn answer(&mut self, id: &Value) -> Option<Value> {
        if let Some(at) = self
            .held
            .iter()
            .position(|message| is_answer_to(message, id))
        {
            return self.held.remove(at);
        }
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let message = self.read_until(deadline)?;
            if is_answer_to(&message, id) {
                return Some(message);
            }
            self.held.push_back(message);
        }
    }

    /// The next message the server sent that no [`request`](Self::request) took (a
    /// notification, a request to the client, an answer), waiting at most `within`.
    pub fn next(&mut self, within: Duration) -> Option<Value> {
        if let Some(message) = self.held.pop_front() {
            return Some(message);
        }
        self.read_until(Instant::now() + within)
    }

    fn read_until(&mut self, deadline: Instant) -> Option<Value> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from_server.recv_timeout(left) {
                Ok(line) => match serde_json::from_str(&line) {
                    Ok(message) => return Some(message),
                    Err(_) => continue,
                },
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Closes the server's input and waits (at most `within`) for it to end.
    ///
    /// # Errors
    /// The server's own, or a timeout.
    pub fn close(mut self, within: Duration) -> io::Result<()> {
        self.to_server = None;
        let deadline = Instant::now() + within;
        let Some(thread) = self.server.take() else {
            return Ok(());
        };
        while !thread.is_finished() {
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the server did not end in time",
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the server's thread panicked")))
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        // Closing the input ends the server; its thread is left to finish on its own.
        self.to_server = None;
    }
}

fn is_answer_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

/// The server's input: lines from the client's channel.
struct ChannelReader {
    lines: Receiver<Vec<u8>>,
    pending: VecDeque<u8>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            match self.lines.recv() {
                Ok(line) => self.pending.extend(line),
                // The client is gone: the end of the input.
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len());
        for (slot, byte) in buf.iter_mut().zip(self.pending.drain(..n)) {
            *slot = byte;
        }
        Ok(n)
    }
}

/// The server's output: whole lines to the client's channel.
struct ChannelWriter {
    lines: Sender<String>,
    partial: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line[..end]).into_owned();
            // A client that went away reads nothing more.
            let _ = self.lines.send(line);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
