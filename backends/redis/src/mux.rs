//! The shared connection of an instance's changes: the requests of concurrent callers are
//! written together and their replies read in order (see the crate docs, "Connections").
//!
//! No thread of its own does the I/O. A caller queues its packed command; if no caller is
//! on the connection, it takes the connection (it *leads*): it writes every queued command
//! in one write, reads their replies in order and hands each to its caller, then passes
//! the lead to the first caller that queued meanwhile, whose command goes out with all the
//! others queued by then. Redis so reads a batch of commands in one go and answers them
//! in one write, as it does for a benchmark tool's many connections, rather than being
//! woken for each command on a connection of its own.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use redis::{Connection, RedisResult, Value};

use crate::driver::RedisDriver;

/// One instance's shared connection and its queue.
#[derive(Default)]
pub(crate) struct Mux {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The packed commands waiting to be written, back to back.
    queued: Vec<u8>,
    /// Their callers, in the same order.
    callers: Vec<Arc<Slot>>,
    /// Whether a caller leads (writes and reads on the connection) now.
    leading: bool,
    /// The connection while no caller leads; `None` until the first request, and after
    /// one broke (the next leader connects).
    connection: Option<Connection>,
}

/// Where a queued caller waits for its reply, or to lead.
#[derive(Default)]
struct Slot {
    outcome: Mutex<Option<Outcome>>,
    ready: Condvar,
}

enum Outcome {
    Reply(RedisResult<Value>),
    /// The caller's command is still queued, and it leads now.
    Lead,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    fn give(&self, outcome: Outcome) {
        *lock(&self.outcome) = Some(outcome);
        self.ready.notify_one();
    }

    fn wait(&self) -> Outcome {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(outcome) = outcome.take() {
                return outcome;
            }
            outcome = self
                .ready
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Mux {
    /// Sends `cmd` on the shared connection and answers its reply, a server error as a
    /// [`Value::ServerError`]. An error means the connection failed (it could not be
    /// made, a write or read failed or timed out): the connection is dropped, and every
    /// request written with this one fails the same way.
    pub(crate) fn request(&self, driver: &RedisDriver, cmd: &redis::Cmd) -> RedisResult<Value> {
        let slot = Arc::new(Slot::default());
        let mut state = lock(&self.state);
        cmd.write_packed_command(&mut state.queued);
        state.callers.push(Arc::clone(&slot));
        if state.leading {
            drop(state);
            match slot.wait() {
                Outcome::Reply(reply) => return reply,
                Outcome::Lead => state = lock(&self.state),
            }
        }
        state.leading = true;
        let queued = std::mem::take(&mut state.queued);
        let callers = std::mem::take(&mut state.callers);
        let connection = state.connection.take();
        drop(state);
        let (connection, mut queued) = self.serve(driver, connection, queued, &callers);
        let mut state = lock(&self.state);
        state.connection = connection;
        if state.queued.is_empty() {
            // Keep the buffer for the next batch.
            queued.clear();
            state.queued = queued;
        }
        match state.callers.first() {
            Some(next) => next.give(Outcome::Lead),
            None => state.leading = false,
        }
        drop(state);
        // A leader's own command was in the batch it sent, so this is its reply.
        match slot.wait() {
            Outcome::Reply(reply) => reply,
            Outcome::Lead => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "the shared connection lost a request",
            ))),
        }
    }

    /// Writes `queued` (the commands of `callers`) on `connection`, or a fresh one, and
    /// hands each caller its reply; the connection if it is still sound, and the buffer.
    fn serve(
        &self,
        driver: &RedisDriver,
        connection: Option<Connection>,
        queued: Vec<u8>,
        callers: &[Arc<Slot>],
    ) -> (Option<Connection>, Vec<u8>) {
        let mut connection = match connection {
            Some(connection) => connection,
            None => match crate::connection::connect(&driver.client, driver.io_timeout) {
                Ok(connection) => connection,
                Err(err) => {
                    fail(callers, &err);
                    return (None, queued);
                }
            },
        };
        if let Err(err) = connection.send_packed_command(&queued) {
            driver.broke();
            fail(callers, &err);
            return (None, queued);
        }
        for (answered, caller) in callers.iter().enumerate() {
            match reply(&mut connection) {
                Ok(value) => caller.give(Outcome::Reply(Ok(value))),
                Err(err) => {
                    // The rest of the replies cannot be told apart any more.
                    driver.broke();
                    fail(&callers[answered..], &err);
                    return (None, queued);
                }
            }
        }
        (Some(connection), queued)
    }
}

/// The next reply on `connection`, past any RESP3 push message.
fn reply(connection: &mut Connection) -> RedisResult<Value> {
    loop {
        match connection.recv_response()? {
            Value::Push { .. } => {}
            value => return Ok(value),
        }
    }
}

fn fail(callers: &[Arc<Slot>], err: &redis::RedisError) {
    for caller in callers {
        caller.give(Outcome::Reply(Err(err.clone())));
    }
}
