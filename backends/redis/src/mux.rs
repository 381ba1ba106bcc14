//! The shared connection of an instance's changes: the requests of concurrent callers are
//! written together and their replies read in order (see the crate docs, "Connections").
//!
//! No thread of its own does the I/O. A caller queues its packed command; if no caller is
//! on the connection, it takes the connection (it *leads*) and writes every queued
//! command in one write. The first caller of that batch then leads: it reads the batch's
//! replies in order, hands each to its caller, writes what was queued meanwhile in one
//! write and passes the lead to the first caller of that batch; with nothing queued, it
//! leaves the connection to the next caller. Redis so reads a batch of commands in one go
//! and answers them in one write, as it does for a benchmark tool's many connections,
//! rather than being woken for each command on a connection of its own, and it runs a
//! batch while the lead passes to the caller that reads it.

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
    /// The caller leads now: it reads the replies of the callers whose commands were
    /// just written on the connection, in order (its own among them), or, with no
    /// connection (the last one failed), connects and writes what is queued.
    Read(Option<Connection>, Vec<Arc<Slot>>),
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
        if !state.leading {
            state.leading = true;
            let connection = state.connection.take();
            drop(state);
            self.lead(driver, connection, Vec::new());
        } else {
            drop(state);
        }
        loop {
            match slot.wait() {
                Outcome::Reply(reply) => return reply,
                Outcome::Read(connection, written) => self.lead(driver, connection, written),
            }
        }
    }

    /// Leads: reads the replies of `written` (written on `connection`) and hands each to
    /// its caller, then writes what was queued meanwhile, in one write, and passes the
    /// reading of its replies to the first of their callers; or, with nothing queued,
    /// leaves the connection for the next caller.
    fn lead(
        &self,
        driver: &RedisDriver,
        mut connection: Option<Connection>,
        mut written: Vec<Arc<Slot>>,
    ) {
        if let Some(open) = &mut connection {
            for (answered, caller) in written.iter().enumerate() {
                match reply(open) {
                    Ok(value) => caller.give(Outcome::Reply(Ok(value))),
                    Err(err) => {
                        // The rest of the replies cannot be told apart any more.
                        driver.broke();
                        fail(&written[answered..], &err);
                        connection = None;
                        break;
                    }
                }
            }
        }
        written.clear();
        let mut state = lock(&self.state);
        if state.callers.is_empty() {
            state.connection = connection;
            state.leading = false;
            return;
        }
        let mut queued = std::mem::take(&mut state.queued);
        let callers = std::mem::replace(&mut state.callers, written);
        drop(state);
        let mut open = match connection {
            Some(open) => open,
            None => match crate::connection::connect(&driver.client, driver.io_timeout) {
                Ok(open) => open,
                Err(err) => {
                    fail(&callers, &err);
                    return self.pass();
                }
            },
        };
        let sent = open.send_packed_command(&queued);
        queued.clear();
        let mut state = lock(&self.state);
        if state.queued.is_empty() {
            // Keep the buffer for the next batch.
            state.queued = queued;
        }
        drop(state);
        match sent {
            Ok(()) => {
                // Not empty: the queue was not.
                let reader = Arc::clone(&callers[0]);
                reader.give(Outcome::Read(Some(open), callers));
            }
            Err(err) => {
                driver.broke();
                fail(&callers, &err);
                self.pass();
            }
        }
    }

    /// After a failed connection: the first caller queued meanwhile leads (connects and
    /// writes), or no caller does.
    fn pass(&self) {
        let mut state = lock(&self.state);
        match state.callers.first() {
            Some(next) => next.give(Outcome::Read(None, Vec::new())),
            None => state.leading = false,
        }
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
