//! # mcp-tasks
//!
//! The *tasks* of the [Model Context Protocol](https://modelcontextprotocol.io) (revision
//! 2025-11-25, and the 2026-07-28 tasks extension `io.modelcontextprotocol/tasks`) as a
//! typestate API: an illegal task transition is a compile error, not a runtime surprise.
//!
//! A task's status is its type. [`Task<Working>`](Task) has exactly the transitions the
//! spec allows from `working`; a terminal [`Task<Completed>`](Task) has none:
//!
//! | from \ to | working | input_required | completed | failed | cancelled |
//! |---|---|---|---|---|---|
//! | (created) | ✓ | | | | |
//! | working | | [`require_input`](Task::require_input) | [`complete`](Task::complete) | [`fail`](Task::fail) | [`cancel`](Task::cancel) |
//! | input_required | [`resume`](Task::resume) | | [`complete`](Task::complete) | [`fail`](Task::fail) | [`cancel`](Task::cancel) |
//! | completed, failed, cancelled | | | | | |
//!
//! ```
//! use mcp_tasks::{AnyTask, InputRequests, Outcome, Task, TaskId, TaskStatus, Timestamp};
//! use serde_json::json;
//!
//! let t0 = Timestamp::parse("2025-11-25T10:30:00Z")?;
//! let task = Task::new(TaskId::random(), t0).with_ttl(Some(60_000));
//! let waiting = task.require_input(InputRequests::new(), t0.plus_millis(10));
//! let working = waiting.resume(t0.plus_millis(20));
//! let result = json!({"content": [{"type": "text", "text": "done"}]});
//! let done = working.complete(result.as_object().cloned().unwrap_or_default(), t0.plus_millis(30));
//! assert_eq!(done.status(), TaskStatus::Completed);
//!
//! // Erase to store or send it; its serde form is the protocol `Task` object.
//! let any = AnyTask::from(done);
//! let wire = serde_json::to_value(&any)?;
//! assert_eq!(wire["status"], "completed");
//! assert_eq!(wire["ttl"], 60_000);
//! // Getting the typed task back is checked.
//! assert!(Task::<mcp_tasks::Working>::try_from(any).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Finishing twice, or cancelling a finished task, does not compile:
//!
//! ```compile_fail,E0277
//! # use mcp_tasks::{Task, TaskId, Timestamp, JsonObject};
//! let done = Task::new(TaskId::random(), Timestamp::now()).complete(JsonObject::new(), Timestamp::now());
//! let again = done.complete(JsonObject::new(), Timestamp::now()); // the task is already `Completed`
//! ```
//!
//! ```compile_fail,E0277
//! # use mcp_tasks::{Task, TaskId, Timestamp, Outcome};
//! let failed = Task::new(TaskId::random(), Timestamp::now()).fail(Outcome::error(-32603, "x"), Timestamp::now());
//! let cancelled = failed.cancel(Timestamp::now()); // cannot cancel a `Failed` task
//! ```
//!
//! The `ui-tests/` folder holds one such misuse per file, with the compiler's message.
//!
//! # The parts
//! - [`Task<S>`](Task), the five status markers ([`Working`], [`InputRequired`],
//!   [`Completed`], [`Failed`], [`Cancelled`]) and their runtime twin [`TaskStatus`].
//! - [`AnyTask`]: the erased form, stored and serialized; [`AnyTask::apply`] moves tasks
//!   whose id came from the wire, checked at run time.
//! - [`Outcome`]: what a finished request produced, stored neutrally (a result, or a
//!   JSON-RPC error); each wire dialect decides how it looks.
//! - [`protocol`]: the 2025-11-25 wire dialect: messages, capabilities, and the
//!   [`Dispatcher`](protocol::Dispatcher) that answers `tasks/*`.
//! - [`ext`]: the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`), the second
//!   dialect over the same core, with its [`ExtDispatcher`](ext::ExtDispatcher).
//! - [`TaskStore`]: the one store surface (create, get, update by id, list, wait), over
//!   which the dispatchers, typed [`TaskHandle`]s and servers are written once. Two
//!   backends here: [`TaskRegistry`], in process, with owners, TTLs, cursors and blocking
//!   waits; and, in the crate `mcp-tasks-redis`, `RedisTaskStore`, shared by several
//!   server instances. [`backend`] is what a backend is built from, for anyone writing
//!   one; the crate `mcp-tasks-testkit` checks that it behaves like the registry.
//! - [`Watches`]: the changes of chosen tasks for their owner, from one store subscription
//!   per process, on any backend (a shared store's changes come from every instance): what
//!   a server serves the extension's `subscriptions/listen` with
//!   ([`ext::ListenRequest`]).
//! - [`Error`]: every refusal, with its JSON-RPC code.
//!
//! # Task ids
//! The registry's ids are random UUID v4 strings: 122 random bits drawn by the `uuid`
//! crate (feature `fast-rng`) from `rand`'s thread-local generator, ChaCha12 seeded from
//! the operating system and reseeded from it after every 64 KiB of output. They are
//! unguessable, so an id can serve as a capability when requestors cannot be identified,
//! and unique among all tasks. The registry never accepts an id from a caller.
//!
//! # Time
//! Nothing reads a hidden clock. A bare [`Task`] takes the time of each change from its
//! caller (a [`Timestamp`] or a [`Change`]); the registry takes it from its [`Clock`]
//! ([`SystemClock`] by default, [`ManualClock`] in tests). Timestamps are RFC 3339 UTC on
//! the wire; `lastUpdatedAt` never moves backwards.
//!
//! # TTL
//! A task's TTL runs from its creation, in milliseconds; `null` (`None`) is unlimited. The
//! registry's [`TtlPolicy`] sets the default, clamps requests to a maximum, and decides
//! whether unlimited retention is allowed; the effective TTL is what every `Task` object
//! shows. An expired task is gone: lookups answer as for an unknown id, lists skip it, and
//! its memory is released, lazily on access and by [`TaskRegistry::purge_expired`], whose
//! cost is proportional to what expired.
//!
//! # Concurrency
//! [`TaskRegistry`] is `Send + Sync` and cloning it shares the store. Tasks live in shards,
//! each behind one mutex: an owner's tasks spread over four of them by task id; each
//! operation on a task is one critical section of its shard, so a cancellation and a
//! completion racing on one task cannot both win: the first terminal status stays, and a
//! cancelled task never gains a result. Different requestors rarely share a lock, and
//! threads working on one requestor's tasks rarely wait for each other; a `list` page holds
//! the requestor's four locks at once. [`TaskRegistry`]'s `wait` sleeps on a per-task
//! condition variable (no polling, no lost wakeup). No user code (the clock, subscribers)
//! runs under a lock; subscribers are called in the order of each task's changes, and a
//! panicking one is contained. A [`TaskHandle`] dropped before its task finished (a handler
//! that returned early or panicked) fails the task with `-32603`, so nobody waits for it
//! forever.
#![deny(missing_docs)]

pub mod admin;
mod any;
pub mod backend;
mod clock;
mod error;
pub mod ext;
mod id;
mod input;
pub mod jsonrpc;
mod millis;
mod outcome;
mod params;
pub mod protocol;
mod registry;
mod status;
mod store;
mod task;
mod trace;
mod wire;

pub use any::{AnyTask, StatusMismatch, Transition, TransitionError};
pub use clock::{Clock, InvalidTimestamp, ManualClock, SystemClock, Timestamp};
pub use error::{Error, LimitScope, StoreCause};
pub use id::TaskId;
pub use input::{InputRequest, InputRequests, InputResponses, Keyed};
pub use jsonrpc::{JsonObject, JsonRpcError, RequestId};
pub use outcome::Outcome;
pub use registry::{RegistryBuilder, TaskRegistry};
pub use status::{
    AwaitsInput, Buildable, CanRequireInput, CanResume, Cancelled, Completed, Failed, HasFailure,
    HasResult, InputRequired, NonTerminal, TaskState, TaskStatus, UnknownStatus, Working,
};
pub use store::{
    ATTEMPT_CEILING_FACTOR, Attempts, Claim, ClaimBackoff, Lease, LeasePolicy, Limits,
    MAX_ATTEMPTS, MAX_CHECKPOINT_BYTES, MAX_PAGE_SIZE, Owner, Redelivery, StatusChange, Step,
    StoreFuture, Subscriber, SubscriptionId, TaskHandle, TaskOrigin, TaskPage, TaskRequest,
    TaskStore, TtlPolicy, Update,
};
pub use store::{Received, Recv, Watch, WatchCloser, WatchError, WatchLimits, Watches};
pub use task::{Change, Finished, Task};
pub use trace::{MAX_BAGGAGE, MAX_TRACESTATE, TraceContext};
