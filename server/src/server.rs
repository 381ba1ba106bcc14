//! The MCP request routing, over any transport, for both generations of MCP tasks: the
//! handshakes, `tools/list` and `tools/call` for the server's [`Tool`]s, the task methods,
//! input rounds, and the methods the application adds
//! ([`ServerBuilder::method`](crate::ServerBuilder::method)).
//!
//! # The transport API
//! A transport hands each request to [`Server::request`] (or [`Server::request_in`] in a
//! 2025-11-25 session) and carries out the [`Reply`]: an answer now, work that answers
//! ([`Answering`], run with the request's [`Peer`]), or an answer then a task's work to
//! start ([`Work`]). Over a shared store it runs [`ClaimLoop`](crate::claims::ClaimLoop)
//! with [`Server::claim`]. The library's own transports ([`stdio`](crate::stdio), `http`)
//! are written against exactly this, as a host that carries MCP its own way (another
//! framework's server, a message queue) would be.
//!
//! A request framed for 2026-07-28 (it names `io.modelcontextprotocol/protocolVersion` in
//! its `_meta`, or is `server/discover`) speaks the tasks extension; anything else speaks
//! 2025-11-25 (after `initialize`). Both read and write the same store, so a task made
//! under one generation is read and cancelled from the other, in the asker's shape.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_tasks::ext::{self, ExtDispatcher, Round, TasksExtensionCapability};
use mcp_tasks::protocol::{
    self, Augmentation, Dispatcher, PROTOCOL_VERSION, ServerTasksCapability, TaskSupport,
    augmentation,
};
use mcp_tasks::{Attempts, Claim, Outcome, Redelivery, TaskHandle, TaskRequest, TaskStore};
use mcp_tasks::{Error, JsonObject, JsonRpcError, Owner, RequestId, TaskId, jsonrpc};
use serde_json::{Value, json};

use crate::context::{Call, Context, Exit, ExitKind, Inline, Rounds};
use crate::handler::Prepared;
use crate::mrtr::{self, States};
use crate::peer::{self, LogLevel, Peer};
use crate::runner;
use crate::telemetry::{self, Telemetry};
use crate::tool::{Tool, Tools};
use crate::work::{Timer, Work};

/// A request's answer: now, from work the transport runs (with the request's peer, through
/// which it may notify and ask the client meanwhile), or now and then a task's work.
pub enum Reply {
    /// The answer is ready.
    Now(Result<Value, JsonRpcError>),
    /// Run this where its kind belongs, with the request's peer, and send what it answers.
    Later(Answering),
    /// Send this answer, then start the work in the background (a task's handler: it must
    /// not change the task before the requestor has the `CreateTaskResult`), where its
    /// kind belongs ([`Work`]).
    ThenRun(Created, Work),
}

/// The answer to a request that created a task: the task's id, and the `CreateTaskResult`
/// of the request's generation as JSON text, written once, as it goes on the wire.
#[derive(Debug, Clone)]
pub struct Created {
    task: TaskId,
    answer: Box<serde_json::value::RawValue>,
}

impl Created {
    /// `answer`, the result that tells the requestor it created `task`, written as text.
    pub(crate) fn new(
        task: TaskId,
        answer: &impl serde::Serialize,
    ) -> Result<Self, serde_json::Error> {
        Ok(Created {
            task,
            answer: serde_json::value::to_raw_value(answer)?,
        })
    }

    /// The created task's id.
    #[must_use]
    pub fn task_id(&self) -> &TaskId {
        &self.task
    }

    /// The answer as JSON text: the `result` of the request's response.
    #[must_use]
    pub fn answer_json(&self) -> &str {
        self.answer.get()
    }

    /// The answer as a value, read from its text.
    ///
    /// # Errors
    /// None in practice: the text is what `serde_json` wrote; a reading error is passed on
    /// rather than hidden.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(self.answer.get())
    }
}

/// The boxed future of an answer.
pub type AnswerFuture = Pin<Box<dyn Future<Output = Result<Value, JsonRpcError>> + Send>>;

/// Blocking work that answers a request, given the request's [`Peer`].
#[doc(hidden)]
pub type BlockingAnswer = Box<dyn FnOnce(Arc<dyn Peer>) -> Result<Value, JsonRpcError> + Send>;

/// Work that answers a request, given the request's [`Peer`].
pub enum Answering {
    /// Blocking: run it on a thread that may block.
    Blocking(BlockingAnswer),
    /// A future: poll it where futures run.
    Async(Box<dyn FnOnce(Arc<dyn Peer>) -> AnswerFuture + Send>),
}

impl Answering {
    /// Runs the work to its answer on this thread (a future with a local executor).
    pub fn run_here(self, peer: Arc<dyn Peer>) -> Result<Value, JsonRpcError> {
        match self {
            Answering::Blocking(work) => work(peer),
            Answering::Async(work) => crate::work::block_on(work(peer)),
        }
    }

    /// Whether it blocks the thread it runs on.
    #[must_use]
    pub fn is_blocking(&self) -> bool {
        matches!(self, Answering::Blocking(_))
    }

    /// The work as a future (blocking work runs on a thread of its own).
    pub fn into_future(self, peer: Arc<dyn Peer>) -> AnswerFuture {
        match self {
            Answering::Async(work) => work(peer),
            Answering::Blocking(work) => Box::pin(async move {
                crate::work::on_thread(move || work(peer))
                    .await
                    .unwrap_or_else(|panic| {
                        Err(JsonRpcError::new(
                            jsonrpc::INTERNAL_ERROR,
                            format!("the request's work panicked: {panic}"),
                        ))
                    })
            }),
        }
    }
}

/// Which generation of MCP tasks a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// MCP 2025-11-25: the tasks utility.
    V2025,
    /// MCP 2026-07-28: the tasks extension.
    Extension,
}

impl Generation {
    /// The protocol version that names the generation in a task's job.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Generation::V2025 => PROTOCOL_VERSION,
            Generation::Extension => ext::PROTOCOL_VERSION,
        }
    }

    /// The generation a job names, if any.
    #[must_use]
    pub fn named(version: &str) -> Option<Self> {
        [Generation::V2025, Generation::Extension]
            .into_iter()
            .find(|generation| generation.as_str() == version)
    }

    /// The generation of a request with `method` and `params`.
    pub fn of(method: &str, params: Option<&Value>) -> Self {
        let framed =
            ext::request_protocol_version(params).is_some_and(|v| v >= ext::PROTOCOL_VERSION);
        if method == ext::methods::SERVER_DISCOVER || framed {
            Generation::Extension
        } else {
            Generation::V2025
        }
    }
}

/// The job a redeliverable task keeps in the store
/// ([`Redelivery`]): what another instance needs to run the tool
/// again. The owner is the task's own; the rest is here.
///
/// Stored as `{"tool", "arguments", "generation", "session"?}`: the tool's name and
/// arguments as the client sent them, the wire generation of the request that created the
/// task (`2025-11-25` or `2026-07-28`), and for a 2025-11-25 task created in an HTTP
/// session, that session's id (an instance that holds the session sends it the re-run's
/// status changes and input requests).
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The tool's name.
    pub tool: String,
    /// Its arguments.
    pub arguments: JsonObject,
    /// The generation of the request that created the task.
    pub generation: Generation,
    /// The 2025-11-25 session it was created in, if any.
    pub session: Option<String>,
}

impl Job {
    /// The job as the store keeps it.
    #[must_use]
    pub fn to_object(&self) -> JsonObject {
        let mut job = JsonObject::new();
        job.insert("tool".into(), Value::String(self.tool.clone()));
        job.insert("arguments".into(), Value::Object(self.arguments.clone()));
        job.insert(
            "generation".into(),
            Value::String(self.generation.as_str().to_owned()),
        );
        if let Some(session) = &self.session {
            job.insert("session".into(), Value::String(session.clone()));
        }
        job
    }

    /// Reads a job the store kept.
    ///
    /// # Errors
    /// What is missing or mistyped, in a few words.
    pub fn from_object(job: &JsonObject) -> Result<Self, String> {
        let tool = job
            .get("tool")
            .and_then(Value::as_str)
            .ok_or("the job names no tool")?;
        let arguments = match job.get("arguments") {
            Some(Value::Object(arguments)) => arguments.clone(),
            None => JsonObject::new(),
            Some(_) => return Err("the job's arguments are not an object".into()),
        };
        let generation = job
            .get("generation")
            .and_then(Value::as_str)
            .and_then(Generation::named)
            .ok_or("the job names no known generation")?;
        let session = job
            .get("session")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Job {
            tool: tool.to_owned(),
            arguments,
            generation,
            session,
        })
    }
}

/// A task this instance claimed for its next attempt ([`Server::claim`]), ready to run.
pub struct Claimed {
    /// The task.
    pub task: TaskId,
    /// Its owner.
    pub owner: Owner,
    /// This attempt and the bound.
    pub attempts: Attempts,
    /// The job, if it could be read (otherwise the work fails the task).
    pub job: Result<Job, String>,
    work: Work,
}

impl Claimed {
    /// Runs the tool's handler again, from the last checkpoint, to the task's end, on this
    /// thread (it blocks).
    pub fn run(self) {
        self.work.run_here();
    }

    /// The same as [`run`](Self::run), as work for the transport to start where its kind
    /// belongs.
    #[must_use]
    pub fn into_work(self) -> Work {
        self.work
    }
}

impl std::fmt::Debug for Claimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claimed")
            .field("task", &self.task)
            .field("owner", &self.owner)
            .field("attempts", &self.attempts)
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

/// The task store a server serves from: any [`TaskStore`], shared behind an `Arc`.
pub type Store = Arc<dyn TaskStore>;

/// How long a 2026-07-28 client may cache `server/discover` and `tools/list` (ms): both
/// are fixed for the life of the process, so a few minutes of caching cost nothing, and
/// a restarted (perhaps rebuilt) server is seen again soon.
pub const CACHE_TTL_MS: u64 = 300_000;

/// The cache scope of `server/discover` and the lists: `public`, because none depends on
/// who asks (no per-principal tools, capabilities or instructions), so a shared cache may
/// serve them across authorization contexts.
pub const CACHE_SCOPE: &str = "public";

/// Where a 2026-07-28 result names the server (`ResultMetaObject`).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// How the requestor of a 2025-11-25 task can be asked for input, on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elicitation {
    /// The transport forwards `elicitation/create` and the client declared the
    /// `elicitation` capability (form mode) at `initialize`.
    Declared,
    /// The transport could forward it, but the client did not declare `elicitation`: a
    /// tool that asks for input (`confirm`) is refused at `tools/call` with `-32602`,
    /// naming the missing capability in the message and in `data.requiredCapabilities`.
    Undeclared,
    /// The transport cannot send requests to the client (Streamable HTTP in JSON-only
    /// mode): such a task fails as soon as it asks.
    Unreachable,
}

impl Elicitation {
    /// The client capabilities this tells of, as a handler's context reads them.
    pub(crate) fn capabilities(self) -> Value {
        match self {
            Elicitation::Declared => json!({"elicitation": {}}),
            Elicitation::Undeclared | Elicitation::Unreachable => json!({}),
        }
    }

    /// What a client declared in its `initialize` params: `capabilities.elicitation` is an
    /// object that allows form mode (it names `form`, or is empty, which 2025-11-25 reads
    /// as form mode).
    pub fn declared_in(initialize_params: Option<&Value>) -> Self {
        let elicitation = initialize_params
            .and_then(|params| params.get("capabilities"))
            .and_then(|capabilities| capabilities.get("elicitation"))
            .and_then(Value::as_object);
        let form = elicitation.is_some_and(|modes| {
            modes.get("form").is_some_and(Value::is_object)
                || (!modes.contains_key("form") && !modes.contains_key("url"))
        });
        if form {
            Elicitation::Declared
        } else {
            Elicitation::Undeclared
        }
    }
}

/// The `-32602` for a tool that needs input from a client that did not declare
/// `elicitation`.
fn elicitation_undeclared(tool: &str) -> JsonRpcError {
    invalid(&format!(
        "the `{tool}` tool asks the user through `elicitation/create` (form mode), and this \
         client did not declare the `elicitation` capability at initialize"
    ))
    .with_data(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
}

/// The boxed future of a method the application serves ([`ServerBuilder::method`]).
pub(crate) type MethodFuture = Pin<Box<dyn Future<Output = Result<Value, Exit>> + Send>>;

/// A method the application serves: its handler, erased.
pub(crate) type MethodHandler =
    Arc<dyn Fn(Context, Option<Value>) -> MethodFuture + Send + Sync + 'static>;

/// Who the server is: its `Implementation` and its instructions.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) title: Option<String>,
    pub(crate) instructions: Option<String>,
}

impl Identity {
    fn implementation(&self) -> Value {
        let mut info = json!({"name": self.name, "version": self.version});
        if let Some(title) = &self.title {
            info["title"] = json!(title);
        }
        info
    }
}

/// A server: its tools and methods, over a task store, for both generations of MCP tasks.
/// Built with [`Server::builder`], served by a transport ([`Server::serve_stdio`], or
/// Streamable HTTP with the `http` feature).
pub struct Server {
    v1: Dispatcher<Store>,
    ext: ExtDispatcher<Store>,
    capabilities: ServerTasksCapability,
    identity: Identity,
    tools: Tools,
    methods: std::collections::HashMap<String, MethodHandler>,
    /// Capabilities the application's methods add (`prompts`, `resources`, ...).
    extra_capabilities: JsonObject,
    /// Whether `logging/setLevel` is served and `logging` declared (2025-11-25).
    logging: bool,
    /// Tasks created through 2025-11-25, whose input requests the transport forwards as
    /// server-to-client requests.
    v1_tasks: Mutex<HashSet<TaskId>>,
    /// Whether the store is shared with other instances.
    shared: bool,
    /// The store as an operator sees it (every owner's tasks), when the builder opened it.
    admin: Option<Arc<dyn mcp_tasks::admin::TaskAdmin>>,
    /// The issuer and checker of 2026-07-28 `requestState` ([`mrtr`]).
    states: Arc<States>,
    /// Where spans and metrics go.
    telemetry: Telemetry,
    /// Where handlers' waits come from.
    timer: Arc<dyn Timer>,
    /// The tasks whose handlers run here, by id: what a hand-over goes through.
    live: Arc<Mutex<std::collections::HashMap<TaskId, std::sync::Weak<crate::context::Inner>>>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.identity.name)
            .field(
                "tools",
                &self.tools.iter().map(Tool::name).collect::<Vec<_>>(),
            )
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

/// What the builder hands the server.
pub(crate) struct Parts {
    pub(crate) store: Store,
    pub(crate) admin: Option<Arc<dyn mcp_tasks::admin::TaskAdmin>>,
    pub(crate) shared: bool,
    pub(crate) identity: Identity,
    pub(crate) tools: Tools,
    pub(crate) methods: std::collections::HashMap<String, MethodHandler>,
    pub(crate) extra_capabilities: JsonObject,
    pub(crate) logging: bool,
    pub(crate) page_size: usize,
    pub(crate) states: States,
    pub(crate) telemetry: Telemetry,
    pub(crate) timer: Arc<dyn Timer>,
}

impl Server {
    pub(crate) fn from_parts(parts: Parts) -> Self {
        let store = telemetry::observe_store(&parts.telemetry, parts.store);
        Self {
            telemetry: parts.telemetry,
            shared: parts.shared,
            admin: parts.admin,
            v1: Dispatcher::new(store.clone()).with_page_size(parts.page_size),
            ext: ExtDispatcher::new(store),
            capabilities: ServerTasksCapability::all(),
            identity: parts.identity,
            tools: parts.tools,
            methods: parts.methods,
            extra_capabilities: parts.extra_capabilities,
            logging: parts.logging,
            v1_tasks: Mutex::new(HashSet::new()),
            states: Arc::new(parts.states),
            live: Arc::default(),
            timer: parts.timer,
        }
    }

    /// The store as an operator's console sees it (every owner's tasks): the store the
    /// builder opened (the in-process registry, or a store URL's); `None` for a store given
    /// as a [`TaskStore`].
    #[must_use]
    pub fn admin_store(&self) -> Option<&Arc<dyn mcp_tasks::admin::TaskAdmin>> {
        self.admin.as_ref()
    }

    /// The same server, its handlers waiting on `timer` (a transport on an async runtime
    /// gives the runtime's).
    #[must_use]
    pub fn with_timer(mut self, timer: Arc<dyn Timer>) -> Self {
        self.timer = timer;
        self
    }

    /// The work of `context`'s task, recorded as running here until it ends.
    fn run_task(&self, prepared: Prepared, context: Context) -> Work {
        // Only a shared store's tasks are handed over.
        let Some(id) = context.task_id().cloned().filter(|_| self.shared) else {
            return runner::task(prepared, context);
        };
        let weak = context.downgrade();
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), weak.clone());
        let live = Arc::clone(&self.live);
        runner::task(prepared, context).then(move || {
            let mut live = live.lock().unwrap_or_else(PoisonError::into_inner);
            // A task claimed back here meanwhile has a newer entry: keep it.
            if live.get(&id).is_some_and(|entry| entry.ptr_eq(&weak)) {
                live.remove(&id);
            }
        })
    }

    /// Hands `owner`'s task `task` over to another instance of the shared store (a graceful
    /// shutdown's move for a redeliverable task): through the handle of its handler if it
    /// runs here — the handle is spent by the hand-over, so nothing that handler does later
    /// is written, and the next attempt runs elsewhere — else by id
    /// ([`TaskStore::hand_over`]). Answers whether it was handed over (a task that runs
    /// once, or has no attempts left, is not).
    ///
    /// # Errors
    /// The store's failure.
    pub fn hand_over(&self, owner: &Owner, task: &TaskId) -> Result<bool, Error> {
        let running = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(task)
            .and_then(Context::upgrade);
        match running.and_then(|context| context.hand_over()) {
            Some(handed) => handed,
            None => self.store().hand_over(owner, &task.to_string()),
        }
    }

    /// Where the server's spans and metrics go.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The tools served.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The tool named `name`, if the server serves it.
    #[must_use]
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// The store behind the server.
    #[must_use]
    pub fn store(&self) -> &Store {
        self.v1.store()
    }

    /// The 2025-11-25 dispatcher (for `tasks/result` as a future).
    pub fn dispatcher(&self) -> &Dispatcher<Store> {
        &self.v1
    }

    /// Whether `task` was created through 2025-11-25 (its input travels as requests to the
    /// client).
    pub fn is_v1_task(&self, task: &TaskId) -> bool {
        self.v1_tasks().contains(task)
    }

    fn v1_tasks(&self) -> std::sync::MutexGuard<'_, HashSet<TaskId>> {
        self.v1_tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets a finished task's generation.
    pub fn forget_task(&self, task: &TaskId) {
        self.v1_tasks().remove(task);
    }

    /// Answers one request from `owner`; `elicitation` says whether a 2025-11-25 task may
    /// ask this connection's client for input.
    pub fn request(
        &self,
        owner: &Owner,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        elicitation: Elicitation,
    ) -> Reply {
        self.request_in(owner, id, method, params, elicitation, None)
    }

    /// [`request`](Self::request), in the 2025-11-25 session `session` of a transport that
    /// has sessions: a redeliverable task created by the request names it in its [`Job`],
    /// so that an instance holding the session sends it the re-run's changes.
    pub fn request_in(
        &self,
        owner: &Owner,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        elicitation: Elicitation,
        session: Option<&str>,
    ) -> Reply {
        let generation = Generation::of(method, params.as_ref());
        let operation = telemetry::Operation::start(
            &self.telemetry,
            method,
            id,
            params.as_ref(),
            generation.as_str(),
            session,
            &self.tools,
        );
        let reply = operation.in_scope(|| match generation {
            Generation::V2025 => self.request_v1(owner, id, method, params, elicitation, session),
            Generation::Extension => self.request_ext(owner, id, method, params),
        });
        operation.reply(reply, owner, self.store())
    }

    /// The answer of a `tasks/get` of either generation, its result as JSON text serialized
    /// straight from the stored task (no `Value` tree between), when that is all the
    /// request needs: nothing observes it (telemetry off) and it is well formed; the
    /// store's refusal (an unknown task ...) is the error [`request`](Self::request) would
    /// answer. `None` for anything else: `request` answers it. Only the HTTP front uses it
    /// (and the tests).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn task_get_text(
        &self,
        owner: &Owner,
        method: &str,
        params: Option<&Value>,
    ) -> Option<Result<String, JsonRpcError>> {
        if self.telemetry.is_enabled() {
            return None;
        }
        let generation = Generation::of(method, params);
        let get = match generation {
            Generation::Extension => ext::methods::TASKS_GET,
            Generation::V2025 => protocol::methods::TASKS_GET,
        };
        if method != get {
            return None;
        }
        let task_id = match params? {
            Value::Object(params) => params.get("taskId")?.as_str()?,
            _ => return None,
        };
        let written = |text: serde_json::Result<String>| {
            text.map_err(|err| Error::Internal(err.to_string()).to_jsonrpc())
        };
        Some(match generation {
            Generation::Extension => {
                if !ext::declares_extension(params) {
                    return None;
                }
                match self.ext.store().get(owner, task_id) {
                    Ok(task) => written(crate::merged::ext_get_text(&task)),
                    Err(error) => Err(error.to_jsonrpc()),
                }
            }
            Generation::V2025 => match self.v1.store().get(owner, task_id) {
                Ok(task) => written(serde_json::to_string(&protocol::GetTaskResult::new(task))),
                Err(error) => Err(error.to_jsonrpc()),
            },
        })
    }

    /// The result of a 2025-11-25 `tasks/result` for a task that has already completed
    /// with a result, as JSON text serialized straight from the stored result (no
    /// `serde_json::Value` tree between), when that is all the request needs: nothing
    /// observes it (telemetry off) and it names the task. `None` for anything else (a task
    /// still running, ended with an error or cancelled, unknown, ...):
    /// [`Dispatcher::result_async`] answers it. Only the HTTP front uses it (and the tests).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn task_result_text(&self, owner: &Owner, params: Option<&Value>) -> Option<String> {
        if self.telemetry.is_enabled() {
            return None;
        }
        let task_id = params?.get("taskId")?.as_str()?;
        let task = self.v1.store().get(owner, task_id).ok()?;
        completed_payload_text(&task)
    }

    /// What a 2025-11-25 `tasks/result` for `task_id` finds of its task in one read of the
    /// store: still running, or to be answered at once, with (while nothing observes it:
    /// telemetry off) the answer's result text when the task completed with a result. Only
    /// the HTTP front uses it, to choose between streaming the wait and answering at once
    /// without reading the task twice.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn task_result_state(&self, owner: &Owner, task_id: &str) -> ResultState {
        let Ok(task) = self.v1.store().get(owner, task_id) else {
            return ResultState::Now(None);
        };
        if !task.is_terminal() {
            return ResultState::Running;
        }
        if self.telemetry.is_enabled() {
            return ResultState::Now(None);
        }
        ResultState::Now(completed_payload_text(&task))
    }

    /// Whether the tasks live in a store shared with other instances: only then can a task
    /// be claimed here for its next attempt ([`claim`](Self::claim)).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Claims one task whose instance stopped (its lease lapsed, or it was handed over) for
    /// its next attempt here ([`TaskStore::claim`]), if any: the returned [`Claimed`] runs
    /// the job's handler again from the last checkpoint.
    ///
    /// # Errors
    /// The store's failure ([`Error::Store`]): retry later.
    pub fn claim(&self) -> Result<Option<Claimed>, Error> {
        let Some(claim) = self.store().claim()? else {
            return Ok(None);
        };
        Ok(Some(self.claimed(claim)))
    }

    /// The work of a claimed task: its job's tool, run again with the claim's checkpoint.
    fn claimed(&self, claim: Claim) -> Claimed {
        let task = claim.task.id().clone();
        let owner = claim.owner.clone();
        let attempts = claim.attempts;
        let job = Job::from_object(&claim.job);
        let checkpoint = claim.checkpoint.clone();
        let message = claim.task.status_message().map(str::to_owned);
        let prepared = job.as_ref().map_err(Clone::clone).and_then(|job| {
            let tool = self
                .tools
                .get(&job.tool)
                .ok_or_else(|| format!("this instance does not serve the tool `{}`", job.tool))?;
            let prepared = tool
                .inner
                .handler
                .prepare(tool.name(), job.arguments.clone())
                .map_err(|error| error.message)?;
            Ok((tool.clone(), prepared, job.generation))
        });
        let tool_name = job.as_ref().map_or("_OTHER", |job| job.tool.as_str());
        self.telemetry.redelivered(tool_name);
        let run = self.telemetry.task_run(
            tool_name,
            &task,
            attempts.attempt(),
            claim.task.trace_context(),
            &owner,
            self.store().clone(),
        );
        let handle = TaskHandle::claimed(self.store().clone(), claim);
        let work = match prepared {
            Ok((tool, prepared, generation)) => {
                let context = Context::task(
                    Call {
                        timer: Arc::clone(&self.timer),
                        tool: Arc::from(tool.name()),
                        owner: owner.clone(),
                        generation,
                        capabilities: Value::Object(JsonObject::new()),
                        answer_timeout: tool.inner.answer_timeout,
                    },
                    handle,
                    self.store().clone(),
                    attempts.attempt(),
                    checkpoint,
                    JsonObject::new(),
                    message,
                );
                telemetry::traced(run, self.run_task(prepared, context))
            }
            Err(why) => Work::blocking(move || {
                let id = handle.id().clone();
                let failed = handle.fail(Outcome::error(
                    jsonrpc::INTERNAL_ERROR,
                    format!("the task cannot run again on this server instance: {why}"),
                ));
                if let Err(err) = failed {
                    log::warn!("task {id}: {err}");
                }
            }),
        };
        Claimed {
            task,
            owner,
            attempts,
            job,
            work,
        }
    }

    /// The capabilities of a 2025-11-25 `initialize` answer.
    fn capabilities_v1(&self) -> Value {
        let mut capabilities = self.extra_capabilities.clone();
        capabilities.insert("tools".into(), json!({}));
        capabilities.insert("tasks".into(), json!(self.capabilities));
        if self.logging {
            capabilities.insert("logging".into(), json!({}));
        }
        Value::Object(capabilities)
    }

    fn request_v1(
        &self,
        owner: &Owner,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        elicitation: Elicitation,
        session: Option<&str>,
    ) -> Reply {
        match method {
            "initialize" => {
                let mut answer = json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": self.capabilities_v1(),
                    "serverInfo": self.identity.implementation(),
                });
                if let Some(instructions) = &self.identity.instructions {
                    answer["instructions"] = json!(instructions);
                }
                Reply::Now(Ok(answer))
            }
            "logging/setLevel" if self.logging => {
                Reply::Later(Answering::Blocking(Box::new(move |peer| {
                    let level = LogLevel::requested(params.as_ref())?;
                    peer.set_log_level(level);
                    Ok(json!({}))
                })))
            }
            "ping" => Reply::Now(Ok(json!({}))),
            "tools/list" => Reply::Now(Ok(json!({"tools": self.tools.list(true)}))),
            "tools/call" => self.call_tool_v1(owner, id, params, elicitation, session),
            method if Dispatcher::handles(method) => {
                if method == protocol::methods::TASKS_RESULT {
                    let dispatcher = self.v1.clone();
                    let owner = owner.clone();
                    Reply::Later(Answering::Async(Box::new(move |_peer| {
                        Box::pin(
                            async move { dispatcher.result_async(&owner, params.as_ref()).await },
                        )
                    })))
                } else {
                    Reply::Now(self.v1.dispatch(owner, method, params.as_ref()))
                }
            }
            other => self.method(owner, other, params, Generation::V2025, elicitation),
        }
    }

    /// A `tools/call` on 2025-11-25: the client asks for a task when the tool allows it.
    fn call_tool_v1(
        &self,
        owner: &Owner,
        id: &RequestId,
        params: Option<Value>,
        elicitation: Elicitation,
        session: Option<&str>,
    ) -> Reply {
        // The arguments are taken out of `params` (nothing here reads them there again).
        let mut params = params;
        let (tool, arguments) = match self.check_call(params.as_ref()) {
            Ok((tool, _)) => (tool, take_arguments(params.as_mut())),
            Err(error) => return Reply::Now(Err(error)),
        };
        let Some(object) = params.as_ref().and_then(Value::as_object) else {
            return Reply::Now(Err(invalid("tools/call needs an object `params`")));
        };
        let decided = augmentation(tool.task_support(), self.capabilities.tools_call(), object);
        if let Augmentation::Refuse(error) = decided {
            return Reply::Now(Err(error.to_jsonrpc()));
        }
        // The handler takes the arguments; a copy is kept only for a shared store's job.
        let job_arguments = self.shared.then(|| arguments.clone());
        let prepared = match tool.inner.handler.prepare(tool.name(), arguments) {
            Ok(prepared) => prepared,
            Err(error) => return Reply::Now(Err(error)),
        };
        let capabilities = elicitation.capabilities();
        match decided {
            Augmentation::Task { .. }
                if tool.asks_for_input() && elicitation == Elicitation::Undeclared =>
            {
                Reply::Now(Err(elicitation_undeclared(tool.name())))
            }
            Augmentation::Task { ttl } => {
                let request = task_request(&tool, id, job_arguments, Generation::V2025, session)
                    .with_ttl(ttl)
                    .with_trace_context(telemetry::task_trace_context(
                        object.get("_meta").and_then(Value::as_object),
                    ));
                match self.v1.store().create(owner, request) {
                    Ok((handle, task)) => {
                        self.v1_tasks().insert(handle.id().clone());
                        let id = handle.id().clone();
                        match Created::new(id, &protocol::CreateTaskResult::new(task)) {
                            Ok(created) => {
                                let work = self.task_work(
                                    &tool,
                                    owner,
                                    Generation::V2025,
                                    capabilities,
                                    prepared,
                                    handle,
                                    JsonObject::new(),
                                );
                                Reply::ThenRun(created, work)
                            }
                            // Dropping the handle fails the task: nobody waits on it forever.
                            Err(err) => {
                                Reply::Now(Err(Error::Internal(err.to_string()).to_jsonrpc()))
                            }
                        }
                    }
                    Err(error) => Reply::Now(Err(error.to_jsonrpc())),
                }
            }
            // Refused above.
            Augmentation::Normal | Augmentation::Refuse(_) => self.inline(
                &tool,
                owner,
                prepared,
                params,
                Generation::V2025,
                capabilities,
                None,
            ),
        }
    }

    /// A 2026-07-28 request: every result carries `resultType`, and tasks follow the
    /// extension. The legacy `tasks` capability is never advertised here.
    fn request_ext(
        &self,
        owner: &Owner,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
    ) -> Reply {
        let declared = ext::declares_extension(params.as_ref());
        let answer = match method {
            // A `CacheableResult` (SEP-2549); the server names itself in `_meta`.
            ext::methods::SERVER_DISCOVER => {
                let mut capabilities = self.extra_capabilities.clone();
                capabilities.insert("tools".into(), json!({}));
                capabilities.insert(
                    "extensions".into(),
                    json!({ext::EXTENSION_ID: TasksExtensionCapability}),
                );
                let mut answer = json!({
                    "supportedVersions": [ext::PROTOCOL_VERSION],
                    "capabilities": capabilities,
                    "ttlMs": CACHE_TTL_MS,
                    "cacheScope": CACHE_SCOPE,
                    "_meta": {META_SERVER_INFO: self.identity.implementation()}
                });
                if let Some(instructions) = &self.identity.instructions {
                    answer["instructions"] = json!(instructions);
                }
                Ok(answer)
            }
            // 2026-07-28 has no `ping` (nor `initialize`): both are unknown methods there.
            // The 2026-07-28 Tool has no `execution`: running as a task is server policy.
            "tools/list" => Ok(cacheable(json!({"tools": self.tools.list(false)}))),
            "tools/call" => return self.call_tool_ext(owner, id, params, declared),
            ext::methods::TASKS_UPDATE if declared => self
                .check_answers(owner, params.as_ref())
                .and_then(|()| self.ext.dispatch(owner, method, params.as_ref(), declared)),
            method if ExtDispatcher::handles(method) => {
                self.ext.dispatch(owner, method, params.as_ref(), declared)
            }
            other => {
                return self.method(
                    owner,
                    other,
                    params,
                    Generation::Extension,
                    Elicitation::Unreachable,
                );
            }
        };
        Reply::Now(answer.map(complete))
    }

    /// The server decides: a tool that can run as a task does so for a client that
    /// declared the extension on this request; otherwise it runs at once, or, if it only
    /// runs as a task, is refused with `-32021` (unless it asks its input in rounds instead:
    /// [`ToolBuilder::rounds_without_task`](crate::ToolBuilder::rounds_without_task)). A
    /// tool that asks first ([`ToolBuilder::ask_first`](crate::ToolBuilder::ask_first))
    /// asks in rounds before its task is created; a call at once asks in rounds whenever
    /// its handler asks. A legacy `params.task` is ignored.
    fn call_tool_ext(
        &self,
        owner: &Owner,
        id: &RequestId,
        params: Option<Value>,
        declared: bool,
    ) -> Reply {
        let (tool, arguments) = match self.parse_call(params.as_ref()) {
            Ok(call) => call,
            Err(error) => return Reply::Now(Err(error)),
        };
        let as_task = match (tool.task_support(), declared) {
            (TaskSupport::Optional | TaskSupport::Required, true) => true,
            (TaskSupport::Required, false) if !tool.inner.rounds_without_task => {
                return Reply::Now(Err(ext::missing_capability(
                    "this tool only runs as a task: declare the io.modelcontextprotocol/tasks extension",
                )));
            }
            _ => false,
        };
        // The handler takes the arguments; a copy is kept only for what reads them again:
        // the tool's questions asked first, a shared store's job.
        let kept = if self.shared || tool.inner.ask_first.is_some() {
            arguments.clone()
        } else {
            JsonObject::new()
        };
        let prepared = match tool.inner.handler.prepare(tool.name(), arguments) {
            Ok(prepared) => prepared,
            Err(error) => return Reply::Now(Err(error)),
        };
        let arguments = kept;
        let capabilities = ext_capabilities(params.as_ref());
        let (round, rounds) = match mrtr::rounds(&self.states, owner, "tools/call", params.as_ref())
        {
            Ok(read) => read,
            Err(error) => return Reply::Now(Err(error)),
        };
        if !as_task {
            return self.inline(
                &tool,
                owner,
                prepared,
                params,
                Generation::Extension,
                capabilities,
                Some((round, rounds)),
            );
        }
        // What the tool asks first is asked in rounds, before the task exists.
        let mut first = JsonObject::new();
        if let Some(ask_first) = &tool.inner.ask_first {
            let mut missing = mcp_tasks::InputRequests::new();
            for (key, request) in ask_first(&arguments).iter() {
                match rounds.answers.get(key) {
                    Some(answer) => match crate::answers::checked_response(key, request, answer) {
                        Ok(answer) => {
                            first.insert(key.to_owned(), answer);
                        }
                        Err(error) => return Reply::Now(Err(error)),
                    },
                    None => missing = missing.with(key, request.clone()),
                }
            }
            if !missing.is_empty() {
                let ask = ext::Ask::new(missing).remembering(Value::Object(first));
                return Reply::Now(mrtr::asked(
                    &self.states,
                    owner,
                    "tools/call",
                    params.as_ref(),
                    &round,
                    ask,
                ));
            }
        }
        // The job's copy of the arguments, only for a shared store.
        let job_arguments = self.shared.then_some(arguments);
        let request = task_request(&tool, id, job_arguments, Generation::Extension, None)
            .with_trace_context(telemetry::task_trace_context(
                params
                    .as_ref()
                    .and_then(|params| params.get("_meta"))
                    .and_then(Value::as_object),
            ));
        match self.ext.store().create(owner, request) {
            Ok((handle, task)) => {
                match Created::new(handle.id().clone(), &ext::CreateTaskResult::new(&task)) {
                    Ok(created) => {
                        let work = self.task_work(
                            &tool,
                            owner,
                            Generation::Extension,
                            capabilities,
                            prepared,
                            handle,
                            first,
                        );
                        Reply::ThenRun(created, work)
                    }
                    Err(err) => Reply::Now(Err(Error::Internal(err.to_string()).to_jsonrpc())),
                }
            }
            Err(error) => Reply::Now(Err(error.to_jsonrpc())),
        }
    }

    /// The work of a task just created for `tool`, with the answers asked first.
    #[allow(clippy::too_many_arguments)]
    fn task_work(
        &self,
        tool: &Tool,
        owner: &Owner,
        generation: Generation,
        capabilities: Value,
        prepared: Prepared,
        handle: TaskHandle<mcp_tasks::Working, Store>,
        first: JsonObject,
    ) -> Work {
        let context = Context::task(
            Call {
                timer: Arc::clone(&self.timer),
                tool: Arc::from(tool.name()),
                owner: owner.clone(),
                generation,
                capabilities,
                answer_timeout: tool.inner.answer_timeout,
            },
            handle,
            self.store().clone(),
            1,
            None,
            first,
            None,
        );
        self.run_task(prepared, context)
    }

    /// The reply of a call that runs at once: its handler, with the request's peer and (on
    /// 2026-07-28) its input rounds; a handler that asks for input there gets the
    /// `InputRequiredResult` sent.
    #[allow(clippy::too_many_arguments)]
    fn inline(
        &self,
        tool: &Tool,
        owner: &Owner,
        prepared: Prepared,
        params: Option<Value>,
        generation: Generation,
        capabilities: Value,
        rounds: Option<(Round, Rounds)>,
    ) -> Reply {
        let call = Call {
            timer: Arc::clone(&self.timer),
            tool: Arc::from(tool.name()),
            owner: owner.clone(),
            generation,
            capabilities,
            answer_timeout: tool.inner.answer_timeout,
        };
        let answer = Answer {
            states: Arc::clone(&self.states),
            owner: owner.clone(),
            method: Arc::from("tools/call"),
            generation,
        };
        let blocking = prepared.is_blocking();
        let start = move |peer: Arc<dyn Peer>| {
            let (context, round) = inline_context(call, peer, params.as_ref(), rounds);
            (context, round, params)
        };
        if blocking {
            Reply::Later(Answering::Blocking(Box::new(move |peer| {
                let (context, round, params) = start(peer);
                let produced = runner::inline_blocking(prepared, context);
                answer.answer(produced, round.as_ref(), params.as_ref())
            })))
        } else {
            Reply::Later(Answering::Async(Box::new(move |peer| {
                let (context, round, params) = start(peer);
                Box::pin(async move {
                    let produced = runner::inline_async(prepared, context).await;
                    answer.answer(produced, round.as_ref(), params.as_ref())
                })
            })))
        }
    }

    /// A method the server does not serve itself: the application's, if it added one
    /// ([`ServerBuilder::method`]), else `-32601`.
    fn method(
        &self,
        owner: &Owner,
        method: &str,
        params: Option<Value>,
        generation: Generation,
        elicitation: Elicitation,
    ) -> Reply {
        let Some(handler) = self.methods.get(method) else {
            return Reply::Now(Err(Error::MethodNotFound {
                method: method.to_owned(),
            }
            .to_jsonrpc()));
        };
        let handler = Arc::clone(handler);
        let (rounds, capabilities) = match generation {
            Generation::V2025 => (None, elicitation.capabilities()),
            Generation::Extension => {
                match mrtr::rounds(&self.states, owner, method, params.as_ref()) {
                    Ok(read) => (Some(read), ext_capabilities(params.as_ref())),
                    Err(error) => return Reply::Now(Err(error)),
                }
            }
        };
        let method: Arc<str> = Arc::from(method);
        let call = Call {
            timer: Arc::clone(&self.timer),
            tool: Arc::clone(&method),
            owner: owner.clone(),
            generation,
            capabilities,
            answer_timeout: crate::tool::DEFAULT_ANSWER_TIMEOUT,
        };
        let answer = Answer {
            states: Arc::clone(&self.states),
            owner: owner.clone(),
            method: Arc::clone(&method),
            generation,
        };
        Reply::Later(Answering::Async(Box::new(move |peer| {
            let (context, round) = inline_context(call, peer, params.as_ref(), rounds);
            let future = handler(context, params.clone());
            Box::pin(async move {
                let produced = crate::handler::CatchUnwind(Box::pin(future))
                    .await
                    .unwrap_or_else(|panic| {
                        Err(Exit::error(crate::handler::panicked(&method, &panic)))
                    });
                let produced = produced.map(|value| match value {
                    Value::Object(object) => runner::Answered::Result(object),
                    other => runner::Answered::Result({
                        let mut object = JsonObject::new();
                        object.insert("value".into(), other);
                        object
                    }),
                });
                answer.answer(produced, round.as_ref(), params.as_ref())
            })
        })))
    }

    /// The tool a `tools/call` names, and its arguments (`{}` when absent).
    fn parse_call(&self, params: Option<&Value>) -> Result<(Tool, JsonObject), JsonRpcError> {
        let (tool, arguments) = self.check_call(params)?;
        Ok((tool, arguments.cloned().unwrap_or_default()))
    }

    /// A `tools/call`'s tool and its arguments (`None`: none, or `null`), checked.
    fn check_call<'p>(
        &self,
        params: Option<&'p Value>,
    ) -> Result<(Tool, Option<&'p JsonObject>), JsonRpcError> {
        let params = params
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("tools/call needs an object `params`"))?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("missing string `name`"))?;
        let tool = self.tools.get(name).ok_or_else(|| unknown_tool(name))?;
        let arguments = match params.get("arguments") {
            Some(Value::Object(arguments)) => Some(arguments),
            None | Some(Value::Null) => None,
            Some(_) => return Err(invalid("`arguments` must be an object")),
        };
        Ok((tool.clone(), arguments))
    }

    /// Refuses (`-32602`) a `tasks/update` whose answer to an outstanding input request
    /// does not match what was asked; the task keeps waiting. Anything else (an unknown
    /// task, malformed params, a late answer) is left to the dispatcher.
    fn check_answers(&self, owner: &Owner, params: Option<&Value>) -> Result<(), JsonRpcError> {
        let Some(params) = params else { return Ok(()) };
        let (Some(task_id), Some(responses)) = (
            params.get("taskId").and_then(Value::as_str),
            params.get("inputResponses").and_then(Value::as_object),
        ) else {
            return Ok(());
        };
        let Ok(task) = self.ext.store().get(owner, task_id) else {
            return Ok(());
        };
        let Some(requests) = task.input_requests() else {
            return Ok(());
        };
        for (key, answer) in responses {
            if let Some(request) = requests.get(key) {
                crate::answers::check(request, answer).map_err(|why| {
                    invalid(&format!(
                        "`inputResponses.{key}` does not match the request it answers: {why}"
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// The context of a call running at once with the request's `peer`, and (on 2026-07-28) the
/// round its retry carried.
fn inline_context(
    call: Call,
    peer: Arc<dyn Peer>,
    params: Option<&Value>,
    rounds: Option<(Round, Rounds)>,
) -> (Context, Option<Round>) {
    let (round, rounds) = match rounds {
        Some((round, rounds)) => (Some(round), Some(rounds)),
        None => (None, None),
    };
    let extension = call.generation == Generation::Extension;
    let inline = Inline {
        progress_token: peer::progress_token(params),
        log_level: peer::log_level(Some(&*peer), params, extension),
        peer: Some(peer),
        rounds,
    };
    (Context::inline(call, inline), round)
}

/// How a call running at once is answered: its result, or for an exit its error, or on
/// 2026-07-28 the `InputRequiredResult` of what it asked.
struct Answer {
    states: Arc<States>,
    owner: Owner,
    method: Arc<str>,
    generation: Generation,
}

impl Answer {
    fn answer(
        &self,
        produced: Result<runner::Answered, Exit>,
        round: Option<&Round>,
        params: Option<&Value>,
    ) -> Result<Value, JsonRpcError> {
        match produced {
            Ok(runner::Answered::Result(result)) => Ok(match self.generation {
                Generation::V2025 => Value::Object(result),
                Generation::Extension => {
                    let result = Value::Object(result);
                    if self.method.ends_with("/list") {
                        complete(cacheable_if_missing(result))
                    } else {
                        complete(result)
                    }
                }
            }),
            Err(exit) => match (exit.into_kind(), round) {
                (ExitKind::Ask(ask), Some(round)) => {
                    mrtr::asked(&self.states, &self.owner, &self.method, params, round, ask)
                }
                (kind, _) => Err(Exit::from_kind(kind).into_jsonrpc()),
            },
        }
    }
}

/// The capabilities a 2026-07-28 request declares for its client, in its `_meta`.
fn ext_capabilities(params: Option<&Value>) -> Value {
    params
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get(ext::META_CLIENT_CAPABILITIES))
        .filter(|capabilities| capabilities.is_object())
        .cloned()
        .unwrap_or_else(|| Value::Object(JsonObject::new()))
}

/// A list result a 2026-07-28 client may cache: `ttlMs` and `cacheScope` (SEP-2549).
fn cacheable(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.insert("ttlMs".into(), json!(CACHE_TTL_MS));
        object.insert("cacheScope".into(), json!(CACHE_SCOPE));
    }
    result
}

/// The same, keeping what the result already says.
fn cacheable_if_missing(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.entry("ttlMs").or_insert_with(|| json!(CACHE_TTL_MS));
        object
            .entry("cacheScope")
            .or_insert_with(|| json!(CACHE_SCOPE));
    }
    result
}

/// A 2026-07-28 result: `resultType: "complete"` unless it already names its type.
fn complete(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".into()));
    }
    result
}

/// The `arguments` of a `tools/call`'s `params` checked by [`Server::check_call`], taken
/// out of them: the object, or an empty one for none or `null`.
fn take_arguments(params: Option<&mut Value>) -> JsonObject {
    match params
        .and_then(Value::as_object_mut)
        .and_then(|params| params.remove("arguments"))
    {
        Some(Value::Object(arguments)) => arguments,
        _ => JsonObject::new(),
    }
}

/// What [`Server::task_result_state`] finds of a 2025-11-25 `tasks/result`'s task.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
#[derive(Debug)]
pub(crate) enum ResultState {
    /// Not terminal yet: the answer waits for it.
    Running,
    /// Answered at once: with the result as JSON text when it can be written straight
    /// from the stored result; `None` when the dispatcher answers (terminal without such a
    /// result, telemetry on, unknown to the owner, or the store failed).
    Now(Option<String>),
}

/// The 2025-11-25 `tasks/result` answer's result as JSON text, written straight from
/// `task`'s stored result: `None` unless the task finished with a result (not an error).
fn completed_payload_text(task: &mcp_tasks::AnyTask) -> Option<String> {
    crate::merged::payload_text(&task.result_json()?, task.id()).ok()
}

/// What the store is asked for a task running `tool`, requested in `generation` (in
/// 2025-11-25 `session`, if any): every task keeps its tool's name (for an operator's
/// view); a redeliverable tool's task keeps its bound on attempts and, given
/// `job_arguments` (the caller's copy of the arguments, made only for a shared store, where
/// another instance may run the job), its [`Job`]; the others run once. One store call
/// creates the task either way.
fn task_request(
    tool: &Tool,
    id: &RequestId,
    job_arguments: Option<JsonObject>,
    generation: Generation,
    session: Option<&str>,
) -> TaskRequest {
    let request = TaskRequest::new(id.clone(), "tools/call").with_tool(tool.name());
    let Some(attempts) = tool.redelivery() else {
        return request;
    };
    let Some(arguments) = job_arguments else {
        // Only another instance of a shared store runs a job (a store of this instance
        // alone keeps the attempts and nothing more): none is built for it.
        return request.with_redelivery(Redelivery::new(attempts, JsonObject::new()));
    };
    let job = Job {
        tool: tool.name().to_owned(),
        arguments,
        generation,
        session: session.map(str::to_owned),
    };
    request.with_redelivery(Redelivery::new(attempts, job.to_object()))
}

/// `-32602` for a tool this server does not have, echoing at most 80 bytes of its name.
pub(crate) fn unknown_tool(name: &str) -> JsonRpcError {
    let mut end = name.len().min(80);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let more = if end < name.len() { "…" } else { "" };
    invalid(&format!("unknown tool `{}{more}`", &name[..end]))
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INVALID_PARAMS,
        format!("invalid params: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer `request` gives, as the JSON text of its result or its error.
    fn requested(server: &Server, owner: &Owner, params: &Value) -> Result<Value, JsonRpcError> {
        match server.request(
            owner,
            &RequestId::Number(1),
            "tasks/get",
            Some(params.clone()),
            Elicitation::Undeclared,
        ) {
            Reply::Now(answer) => answer,
            _ => panic!("tasks/get is answered at once"),
        }
    }

    #[test]
    fn a_created_task_is_answered_with_its_generations_create_task_result() {
        async fn hello(_ctx: Context, _: crate::NoArguments) -> Result<String, Exit> {
            Ok("hello".into())
        }
        let server = Server::builder()
            .tool(
                Tool::new("hello")
                    .task_support(crate::TaskSupport::Required)
                    .run(hello),
            )
            .build()
            .expect("a server");
        let alice = Owner::new("alice");
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": ext::PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {ext::EXTENSION_ID: {}}},
        });
        for (params, session) in [
            (json!({"name": "hello", "task": {}}), Some("s-1")),
            (json!({"name": "hello", "_meta": meta}), None),
        ] {
            let reply = server.request_in(
                &alice,
                &RequestId::Number(1),
                "tools/call",
                Some(params.clone()),
                Elicitation::Undeclared,
                session,
            );
            let Reply::ThenRun(created, _work) = reply else {
                panic!("a task is created: {params}");
            };
            let id = created.task_id().to_string();
            let stored = server.store().get(&alice, &id).expect("the task is stored");
            let mcp_tasks::AnyTask::Working(working) = &stored else {
                panic!("a new task is working: {stored:?}");
            };
            let answer: Value = serde_json::from_str(created.answer_json()).expect("JSON text");
            assert_eq!(created.to_value().expect("reads back"), answer);
            let expected = match session {
                Some(_) => serde_json::to_value(protocol::CreateTaskResult::new(working.clone())),
                None => serde_json::to_value(ext::CreateTaskResult::new(working)),
            }
            .expect("the typed result");
            assert_eq!(answer, expected, "{params}");
        }
    }

    #[test]
    fn a_tasks_get_written_from_the_task_answers_what_the_request_answers() {
        let server = Server::builder().build().expect("a server");
        let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
        let (handle, task) = server
            .store()
            .create(&alice, TaskRequest::new(RequestId::Number(7), "tools/call"))
            .expect("a task");
        let id = task.id().to_string();
        let mut result = JsonObject::new();
        result.insert("content".into(), json!([{"type": "text", "text": "done"}]));
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": ext::PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {ext::EXTENSION_ID: {}}},
        });
        let mut working = Some(handle);
        for finished in [false, true] {
            if finished && let Some(handle) = working.take() {
                drop(handle.finish(result.clone()).expect("finished"));
            }
            for params in [
                json!({"taskId": id}),
                json!({"taskId": id, "_meta": meta}),
                json!({"taskId": "0a0b0c0d-0000-4000-8000-000000000000", "_meta": meta}),
                json!({"taskId": "0a0b0c0d-0000-4000-8000-000000000000"}),
            ] {
                for owner in [&alice, &bob] {
                    let fast = server
                        .task_get_text(owner, "tasks/get", Some(&params))
                        .expect("a well-formed tasks/get is written from the task");
                    let fast = fast.map(|text| {
                        serde_json::from_str::<Value>(&text).expect("the result is JSON")
                    });
                    assert_eq!(fast, requested(&server, owner, &params), "{params}");
                }
            }
        }
        // Anything else goes the usual way.
        for params in [
            json!({}),
            json!({"taskId": 7}),
            json!({"taskId": id, "_meta": {"io.modelcontextprotocol/protocolVersion": ext::PROTOCOL_VERSION}}),
        ] {
            assert!(
                server
                    .task_get_text(&alice, "tasks/get", Some(&params))
                    .is_none()
            );
        }
        assert!(server.task_get_text(&alice, "tasks/get", None).is_none());
        assert!(
            server
                .task_get_text(&alice, "tasks/cancel", Some(&json!({"taskId": id})))
                .is_none()
        );
    }

    #[test]
    fn a_tasks_result_written_from_the_result_answers_what_the_dispatcher_answers() {
        let server = Server::builder().build().expect("a server");
        let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
        let create = || {
            server
                .store()
                .create(&alice, TaskRequest::new(RequestId::Number(7), "tools/call"))
                .expect("a task")
        };
        let mut result = JsonObject::new();
        result.insert("content".into(), json!([{"type": "text", "text": "done"}]));
        result.insert("_meta".into(), json!({"kept": true}));
        let (handle, task) = create();
        let params = json!({"taskId": task.id().to_string()});
        assert!(
            server.task_result_text(&alice, Some(&params)).is_none(),
            "a task still working is waited for the usual way"
        );
        drop(handle.finish(result).expect("finished"));
        let fast = server
            .task_result_text(&alice, Some(&params))
            .expect("a completed task's result is written from it");
        let usual = crate::work::block_on(server.dispatcher().result_async(&alice, Some(&params)))
            .expect("the dispatcher answers the result");
        assert_eq!(serde_json::to_string(&usual).unwrap(), fast);
        // Anything else goes the usual way: another owner, an error, a cancel, no task id.
        assert!(server.task_result_text(&bob, Some(&params)).is_none());
        let (failing, failed) = create();
        drop(
            failing
                .fail(Outcome::error(jsonrpc::INTERNAL_ERROR, "broken"))
                .expect("failed"),
        );
        let (cancelling, cancelled) = create();
        drop(cancelling.cancel().expect("cancelled"));
        for task in [failed, cancelled] {
            let params = json!({"taskId": task.id().to_string()});
            assert!(server.task_result_text(&alice, Some(&params)).is_none());
        }
        assert!(server.task_result_text(&alice, Some(&json!({}))).is_none());
        assert!(server.task_result_text(&alice, None).is_none());
    }

    #[test]
    fn a_job_reads_back_as_written_and_names_its_generation_by_version() {
        let mut arguments = JsonObject::new();
        arguments.insert("ms".into(), json!(1500));
        for (generation, version, session) in [
            (Generation::V2025, "2025-11-25", Some("s-1".to_owned())),
            (Generation::Extension, "2026-07-28", None),
        ] {
            let job = Job {
                tool: "sleep".into(),
                arguments: arguments.clone(),
                generation,
                session,
            };
            let stored = job.to_object();
            assert_eq!(stored["generation"], version);
            assert_eq!(stored.contains_key("session"), job.session.is_some());
            assert_eq!(Job::from_object(&stored), Ok(job));
        }
        for broken in [
            json!({"arguments": {}, "generation": "2026-07-28"}),
            json!({"tool": "sleep", "arguments": [], "generation": "2026-07-28"}),
            json!({"tool": "sleep", "generation": "2024-11-05"}),
        ] {
            let broken = broken.as_object().unwrap().clone();
            assert!(Job::from_object(&broken).is_err(), "{broken:?}");
        }
    }
}
