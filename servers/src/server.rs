//! The MCP request routing shared by the example servers, over any transport, for both
//! generations of MCP tasks.
//!
//! A request framed for 2026-07-28 (it names `io.modelcontextprotocol/protocolVersion` in
//! its `_meta`, or is `server/discover`) speaks the tasks extension; anything else speaks
//! 2025-11-25 (after `initialize`). Both read and write the same registry, so a task made
//! under one generation is read and cancelled from the other, in the asker's shape.
//!
//! The tasks live in process (a `TaskRegistry`), or, given a shared store's URL
//! (`--redis URL` or `--postgres URL` on the command line, or `MCP_TASKS_REDIS_URL` or
//! `MCP_TASKS_POSTGRES_URL`; see [`shared`](crate::shared)), in a `RedisTaskStore` or a
//! `PostgresTaskStore` that several server instances share (cargo features `redis`,
//! `postgres`): a task created through one instance is read, awaited, listed and cancelled
//! through any other.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_tasks::ext::{self, ExtDispatcher, TasksExtensionCapability};
use mcp_tasks::protocol::{
    self, Augmentation, Dispatcher, PROTOCOL_VERSION, ServerTasksCapability, TaskSupport,
    augmentation,
};
use mcp_tasks::{Attempts, Claim, Outcome, Redelivery, TaskHandle, TaskRequest, TaskStore};
use mcp_tasks::{
    Error, JsonObject, JsonRpcError, Owner, RequestId, TaskId, TaskRegistry, TtlPolicy, jsonrpc,
};
use serde_json::{Value, json};

use crate::input_fixtures;
use crate::mrtr::{self, States};
use crate::peer::{self, Caller, Talk};
use crate::shared::{Backend, SharedStore, StoreArgs, StoreSettings};
use crate::telemetry::{self, Telemetry};
use crate::tools::{self, Catalog, Invocation};
use crate::work::Work;

/// A request's answer: now, or from work the transport runs on a thread that may block.
pub enum Reply {
    /// The answer is ready.
    Now(Result<Value, JsonRpcError>),
    /// Run this (it may block) and send what it returns.
    Later(Box<dyn FnOnce() -> Result<Value, JsonRpcError> + Send>),
    /// Send this answer, then start the work in the background (a task's handler: it must
    /// not change the task before the requestor has the `CreateTaskResult`), where its
    /// kind belongs ([`Work`]).
    ThenRun(Value, Work),
    /// Run this (it may block) with the request's [`Peer`](peer::Peer), through which it
    /// notifies and asks the client meanwhile (a tool that reports progress, logs or asks
    /// for sampling or elicitation; `logging/setLevel`), and send what it returns.
    Talk(Talk),
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
    /// The job, if it could be read (otherwise [`run`](Claimed::run) fails the task).
    pub job: Result<Job, String>,
    work: Work,
}

impl Claimed {
    /// Runs the tool's handler again, from the last checkpoint, to the task's end, on this
    /// thread (it blocks). A job that cannot be run here (unknown tool, unreadable) fails
    /// the task with `-32603` saying why.
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

/// The task store the example serves from: picked at run time.
pub type Store = Arc<dyn TaskStore>;

/// How long tasks live by default (ms).
const DEFAULT_TTL_MS: u64 = 60_000;
/// The longest a task may live (ms).
const MAX_TTL_MS: u64 = 3_600_000;
/// The suggested polling interval (ms).
const POLL_INTERVAL_MS: u64 = 100;

/// How long a 2026-07-28 client may cache `server/discover` and `tools/list` (ms): both
/// are fixed for the life of the process, so a few minutes of caching cost nothing, and
/// a restarted (perhaps rebuilt) server is seen again soon.
pub const CACHE_TTL_MS: u64 = 300_000;

/// The cache scope of `server/discover` and `tools/list`: `public`, because neither
/// depends on who asks (no per-principal tools, capabilities or instructions), so a
/// shared cache may serve them across authorization contexts.
pub const CACHE_SCOPE: &str = "public";

/// The example's name, as its `Implementation` says.
const SERVER_NAME: &str = "mcp-tasks-example";

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

/// The server's `Implementation`.
fn server_info() -> Value {
    json!({"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// What the example's command line and environment ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The shared store: `--redis URL` or `--postgres URL` (also `--redis=URL`,
    /// `--postgres=URL`), else `MCP_TASKS_REDIS_URL` or `MCP_TASKS_POSTGRES_URL` (unset or
    /// empty: none, the tasks live in process); see [`StoreArgs`].
    pub store: Option<SharedStore>,
    /// The tools: the examples, and with `--conformance` (or `MCP_TASKS_CONFORMANCE=1`) the
    /// conformance suite's fixtures too.
    pub catalog: Catalog,
}

impl Options {
    /// Reads the process's command line and environment.
    ///
    /// # Errors
    /// A message for an unknown argument, a `--redis` or `--postgres` without a URL, or
    /// two stores named.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// Reads `args` (the command line without the program) and the environment.
    ///
    /// # Errors
    /// As for [`from_env`](Self::from_env).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut args = args.into_iter();
        let mut store = StoreArgs::default();
        let mut conformance = false;
        while let Some(arg) = args.next() {
            if arg == tools::CONFORMANCE_FLAG {
                conformance = true;
            } else if !store
                .read(&arg, &mut args)
                .map_err(|why| format!("{why}; {}", usage()))?
            {
                return Err(format!("unknown argument `{arg}`; {}", usage()));
            }
        }
        Ok(Options {
            store: store
                .choose()
                .map_err(|why| format!("{why}; {}", usage()))?,
            catalog: Catalog::chosen(conformance),
        })
    }
}

/// The running example's name (its binary's file stem).
pub(crate) fn example_name() -> String {
    std::env::args()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .and_then(|stem| stem.to_str())
        .map_or_else(|| "stdio_server".to_owned(), str::to_owned)
}

fn usage() -> String {
    let [redis, postgres] = Backend::ALL;
    format!(
        "usage: {} [{} URL | {} URL] [{}] (or {}=URL or {}=URL, {}=1), URL e.g. {}, or {}; \
         {} serves the conformance suite's fixture tools too",
        example_name(),
        redis.flag(),
        postgres.flag(),
        tools::CONFORMANCE_FLAG,
        redis.url_env(),
        postgres.url_env(),
        tools::CONFORMANCE_ENV,
        redis.example_urls(),
        postgres.example_urls(),
        tools::CONFORMANCE_FLAG
    )
}

/// The tasks' retention policy, whatever the store.
fn ttl_policy() -> TtlPolicy {
    TtlPolicy::new(Some(DEFAULT_TTL_MS)).with_max(MAX_TTL_MS)
}

/// The in-process store, or the shared store `shared`, with the example's TTL policy and
/// poll interval, and the knobs of the environment ([`StoreSettings::from_env`]).
fn open_store(shared: Option<&SharedStore>) -> Result<Store, String> {
    let settings = StoreSettings {
        ttl: Some(ttl_policy()),
        poll_interval: Some(POLL_INTERVAL_MS),
        ..StoreSettings::from_env()?
    };
    let Some(shared) = shared else {
        let registry = TaskRegistry::builder()
            .ttl_policy(ttl_policy())
            .poll_interval(Some(POLL_INTERVAL_MS))
            .limits(settings.limits_or_default())
            .build()
            .map_err(|err| format!("cannot build the task registry: {err}"))?;
        return Ok(Arc::new(registry));
    };
    shared.open(&settings)
}

/// Why a server could not start: one line for its operator. `Debug` shows the same line
/// (unquoted), so a `main` returning it prints `Error: <line>`.
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

/// The example server: tools, tasks in both generations, and their handshakes.
pub struct Server {
    v1: Dispatcher<Store>,
    ext: ExtDispatcher<Store>,
    capabilities: ServerTasksCapability,
    /// The tools served.
    catalog: Catalog,
    /// Tasks created through 2025-11-25, whose input requests the transport forwards as
    /// server-to-client requests.
    v1_tasks: Mutex<HashSet<TaskId>>,
    /// Whether the store is shared with other instances.
    shared: bool,
    /// The issuer and checker of 2026-07-28 `requestState` ([`mrtr`]).
    states: States,
    /// Where spans and metrics go.
    telemetry: Telemetry,
}

impl Server {
    /// A server whose `tasks/list` pages hold `MCP_TASKS_PAGE_SIZE` tasks (default 50);
    /// tasks live 60 s by default and at most an hour, and suggest polling every 100 ms.
    /// They live in process, or in the shared store named by `--redis URL`,
    /// `--postgres URL`, `MCP_TASKS_REDIS_URL` or `MCP_TASKS_POSTGRES_URL`;
    /// `--conformance` serves the conformance suite's fixtures too ([`Options`]).
    ///
    /// # Errors
    /// A message for a bad command line, a store that cannot be opened, or a store's URL
    /// given to an example built without that backend's feature.
    pub fn from_env() -> Result<Self, StartupError> {
        let page_size = std::env::var("MCP_TASKS_PAGE_SIZE")
            .ok()
            .and_then(|size| size.parse().ok())
            .unwrap_or(protocol::DEFAULT_PAGE_SIZE);
        let options = Options::from_env().map_err(StartupError)?;
        let store = open_store(options.store.as_ref()).map_err(StartupError)?;
        let states = mrtr::states_from_env().map_err(StartupError)?;
        Ok(Self::new(store, options.catalog, options.store.is_some())
            .with_page_size(page_size)
            .with_request_states(states))
    }

    /// A server of `catalog` over `store` (`shared`: other instances share it, so tasks
    /// may be claimed here), with the default `tasks/list` page size. For tests and
    /// embedders; the example binaries use [`from_env`](Self::from_env).
    #[must_use]
    pub fn new(store: Store, catalog: Catalog, shared: bool) -> Self {
        Self::observed(store, catalog, shared, telemetry::global())
    }

    /// [`new`](Self::new), recording spans and metrics into `telemetry` (whose store
    /// wrapper times every store call).
    #[must_use]
    pub fn observed(store: Store, catalog: Catalog, shared: bool, telemetry: Telemetry) -> Self {
        let store = telemetry::observe_store(&telemetry, store);
        Self {
            telemetry,
            shared,
            v1: Dispatcher::new(store.clone()),
            ext: ExtDispatcher::new(store),
            capabilities: ServerTasksCapability::all(),
            catalog,
            v1_tasks: Mutex::new(HashSet::new()),
            states: mrtr::random_states(),
        }
    }

    /// The same server, issuing and checking 2026-07-28 `requestState` with `states` (by
    /// default a random key per server: [`mrtr::states_from_env`] reads a shared one).
    #[must_use]
    pub fn with_request_states(mut self, states: States) -> Self {
        self.states = states;
        self
    }

    /// The same server, with `tasks/list` pages of `page_size` tasks.
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.v1 = self.v1.with_page_size(page_size);
        self
    }

    /// Where the server's spans and metrics go (for a transport's own spans, and the
    /// `subscriptions/listen` count).
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The tools this server serves.
    pub fn catalog(&self) -> Catalog {
        self.catalog
    }

    /// The store behind the server (to subscribe to status changes).
    pub fn store(&self) -> &Store {
        self.v1.store()
    }

    /// The 2025-11-25 dispatcher (for `tasks/result` as a future,
    /// [`Dispatcher::result_async`]).
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
            self.catalog,
        );
        let reply = operation.in_scope(|| match generation {
            Generation::V2025 => self.request_v1(owner, id, method, params, elicitation, session),
            Generation::Extension => self.request_ext(owner, id, method, params),
        });
        operation.reply(reply, owner, self.store())
    }

    /// Whether the tasks live in a store shared with other instances: only then
    /// can a task be claimed here for its next attempt ([`claim`](Self::claim)).
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
        let call = job.as_ref().map_err(Clone::clone).and_then(|job| {
            self.catalog
                .invocation(&job.tool, &job.arguments)
                .map_err(|error| error.message)
        });
        let tool = job.as_ref().map_or("_OTHER", |job| job.tool.as_str());
        self.telemetry.redelivered(tool);
        let run = self.telemetry.task_run(
            tool,
            &task,
            attempts.attempt(),
            claim.task.trace_context(),
            &owner,
            self.store().clone(),
        );
        let handle = TaskHandle::claimed(self.store().clone(), claim);
        let work = match call {
            Ok(call) => telemetry::traced(run, call.task_work(handle, checkpoint)),
            Err(why) => Work::blocking(move || {
                let id = handle.id().clone();
                let failed = handle.fail(Outcome::error(
                    jsonrpc::INTERNAL_ERROR,
                    format!("the task cannot run again on this server instance: {why}"),
                ));
                if let Err(err) = failed {
                    eprintln!("task {id}: {err}");
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
            "initialize" => Reply::Now(Ok(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": self.catalog.capabilities_v1(json!({"tools": {}, "tasks": self.capabilities})),
                "serverInfo": server_info(),
                "instructions": self.catalog.instructions()
            }))),
            "logging/setLevel" if self.catalog.logs() => Reply::Talk(peer::set_level(params)),
            "ping" => Reply::Now(Ok(json!({}))),
            "tools/list" => Reply::Now(Ok(json!({"tools": self.catalog.list()}))),
            "tools/call" => {
                let call = match parse_call(self.catalog, params.as_ref()) {
                    Ok(call) => call,
                    Err(error) => return Reply::Now(Err(error)),
                };
                let Some(params) = params.as_ref().and_then(Value::as_object) else {
                    return Reply::Now(Err(invalid("tools/call needs an object `params`")));
                };
                match augmentation(call.1, self.capabilities.tools_call(), params) {
                    Augmentation::Refuse(error) => Reply::Now(Err(error.to_jsonrpc())),
                    Augmentation::Normal => inline(
                        call.0,
                        Some(Value::Object(params.clone())),
                        Generation::V2025,
                    ),
                    Augmentation::Task { .. }
                        if call.0.asks_for_input() && elicitation == Elicitation::Undeclared =>
                    {
                        Reply::Now(Err(elicitation_undeclared(call.0.name())))
                    }
                    Augmentation::Task { ttl } => {
                        let request = task_request(
                            &call.0,
                            id,
                            params.get("arguments"),
                            Generation::V2025,
                            session,
                        )
                        .with_ttl(ttl)
                        .with_trace_context(telemetry::task_trace_context(
                            params.get("_meta").and_then(Value::as_object),
                        ));
                        match self.v1.store().create(owner, request) {
                            Ok((handle, task)) => {
                                self.v1_tasks().insert(handle.id().clone());
                                match serde_json::to_value(protocol::CreateTaskResult::new(task)) {
                                    Ok(created) => {
                                        let call = call.0;
                                        Reply::ThenRun(created, call.task_work(handle, None))
                                    }
                                    // Dropping the handle fails the task: nobody waits on it forever.
                                    Err(err) => Reply::Now(Err(
                                        Error::Internal(err.to_string()).to_jsonrpc()
                                    )),
                                }
                            }
                            Err(error) => Reply::Now(Err(error.to_jsonrpc())),
                        }
                    }
                }
            }
            method if Dispatcher::handles(method) => {
                if method == protocol::methods::TASKS_RESULT {
                    let dispatcher = self.v1.clone();
                    let owner = owner.clone();
                    Reply::Later(Box::new(move || {
                        dispatcher.dispatch(
                            &owner,
                            protocol::methods::TASKS_RESULT,
                            params.as_ref(),
                        )
                    }))
                } else {
                    Reply::Now(self.v1.dispatch(owner, method, params.as_ref()))
                }
            }
            other => Reply::Now(Err(Error::MethodNotFound {
                method: other.to_owned(),
            }
            .to_jsonrpc())),
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
            ext::methods::SERVER_DISCOVER => Ok(json!({
                "supportedVersions": [ext::PROTOCOL_VERSION],
                "capabilities": {
                    "tools": {},
                    "prompts": {},
                    "resources": {},
                    "extensions": {ext::EXTENSION_ID: TasksExtensionCapability}
                },
                "instructions": self.catalog.instructions(),
                "ttlMs": CACHE_TTL_MS,
                "cacheScope": CACHE_SCOPE,
                "_meta": {META_SERVER_INFO: server_info()}
            })),
            // 2026-07-28 has no `ping` (nor `initialize`): both are unknown methods there.
            "tools/list" => {
                // The 2026-07-28 Tool has no `execution`: running as a task is server policy.
                let mut tools = self.catalog.list();
                if let Some(tools) = tools.as_array_mut() {
                    for tool in tools {
                        if let Some(tool) = tool.as_object_mut() {
                            tool.remove("execution");
                        }
                    }
                }
                Ok(cacheable(json!({"tools": tools})))
            }
            "tools/call" => return self.call_tool_ext(owner, id, params, declared),
            // The example has no prompts and no resources: empty, cacheable lists.
            "prompts/list" => {
                let prompts = if self.catalog.conformance() {
                    input_fixtures::prompts()
                } else {
                    Vec::new()
                };
                Ok(cacheable(json!({"prompts": prompts})))
            }
            "prompts/get" => return self.get_prompt_ext(owner, params),
            "resources/list" => Ok(cacheable(json!({"resources": []}))),
            "resources/templates/list" => Ok(cacheable(json!({"resourceTemplates": []}))),
            "resources/read" => Err(JsonRpcError::new(
                RESOURCE_NOT_FOUND,
                "resource not found: this server has no resources",
            )),
            ext::methods::TASKS_UPDATE if declared => self
                .check_answers(owner, params.as_ref())
                .and_then(|()| self.ext.dispatch(owner, method, params.as_ref(), declared)),
            method if ExtDispatcher::handles(method) => {
                self.ext.dispatch(owner, method, params.as_ref(), declared)
            }
            other => Err(Error::MethodNotFound {
                method: other.to_owned(),
            }
            .to_jsonrpc()),
        };
        Reply::Now(answer.map(complete))
    }

    /// The server decides: a tool that can run as a task does so for a client that
    /// declared the extension on this request; otherwise it runs at once, or, if it only
    /// runs as a task, is refused with `-32021` (unless it can get its input in rounds and
    /// run at once instead: `confirm`). Either way a tool may first ask for input through
    /// an `InputRequiredResult` ([`mrtr::round_trip`]), and the retry that brings the
    /// answers runs it or creates its task. A legacy `params.task` is ignored.
    fn call_tool_ext(
        &self,
        owner: &Owner,
        id: &RequestId,
        params: Option<Value>,
        declared: bool,
    ) -> Reply {
        let (mut call, support) = match parse_call(self.catalog, params.as_ref()) {
            Ok(call) => call,
            Err(error) => return Reply::Now(Err(error)),
        };
        let as_task = match (support, declared) {
            (TaskSupport::Optional | TaskSupport::Required, true) => true,
            (TaskSupport::Required, false) if !call.asks_inline() => {
                return Reply::Now(Err(ext::missing_capability(
                    "this tool only runs as a task: declare the io.modelcontextprotocol/tasks extension",
                )));
            }
            _ => false,
        };
        let round = mrtr::round_trip(
            &self.states,
            owner,
            "tools/call",
            params.as_ref(),
            as_task,
            |before| call.gather(before),
        );
        match round {
            Ok(None) => {}
            Ok(Some(asked)) => return Reply::Now(Ok(asked)),
            Err(error) => return Reply::Now(Err(error)),
        }
        if !as_task {
            return inline(call, params, Generation::Extension);
        }
        let request = task_request(
            &call,
            id,
            params.as_ref().and_then(|params| params.get("arguments")),
            Generation::Extension,
            None,
        )
        .with_trace_context(telemetry::task_trace_context(
            params
                .as_ref()
                .and_then(|params| params.get("_meta"))
                .and_then(Value::as_object),
        ));
        match self.ext.store().create(owner, request) {
            Ok((handle, task)) => match serde_json::to_value(ext::CreateTaskResult::new(&task)) {
                Ok(created) => Reply::ThenRun(created, call.task_work(handle, None)),
                Err(err) => Reply::Now(Err(Error::Internal(err.to_string()).to_jsonrpc())),
            },
            Err(error) => Reply::Now(Err(error.to_jsonrpc())),
        }
    }

    /// `prompts/get` on 2026-07-28: the conformance fixture's prompt, which asks for its
    /// context in an input round first; any other name is `-32602`.
    fn get_prompt_ext(&self, owner: &Owner, params: Option<Value>) -> Reply {
        let name = params
            .as_ref()
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str);
        if !(self.catalog.conformance() && name == Some(input_fixtures::PROMPT)) {
            let name: String = name.unwrap_or_default().chars().take(80).collect();
            return Reply::Now(Err(invalid(&format!("unknown prompt `{name}`"))));
        }
        let mut got = None;
        let round = mrtr::round_trip(
            &self.states,
            owner,
            "prompts/get",
            params.as_ref(),
            false,
            |before| match input_fixtures::prompt(before)? {
                Ok(result) => {
                    got = Some(result);
                    Ok(None)
                }
                Err(ask) => Ok(Some(ask)),
            },
        );
        Reply::Now(match (round, got) {
            (Ok(Some(asked)), _) => Ok(asked),
            (Ok(None), Some(result)) => Ok(complete(result)),
            (Ok(None), None) => Err(Error::Internal("the prompt gave nothing".into()).to_jsonrpc()),
            (Err(error), _) => Err(error),
        })
    }
}

impl Server {
    /// Refuses (`-32602`) a `tasks/update` whose answer to an outstanding input request
    /// does not match what was asked ([`tools::check_answer`]); the task keeps waiting.
    /// Anything else (an unknown task, malformed params, a late answer) is left to the
    /// dispatcher.
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
                tools::check_answer(request, answer).map_err(|why| {
                    invalid(&format!(
                        "`inputResponses.{key}` does not match the request it answers: {why}"
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// The JSON-RPC code of a `resources/read` for a resource the server does not have.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A list result a 2026-07-28 client may cache: `ttlMs` and `cacheScope` (SEP-2549).
fn cacheable(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object.insert("ttlMs".into(), json!(CACHE_TTL_MS));
        object.insert("cacheScope".into(), json!(CACHE_SCOPE));
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

/// The reply of a call that runs at once, in `generation`: with the request's peer if it
/// talks to the client meanwhile ([`Invocation::talks`]).
fn inline(call: Invocation, params: Option<Value>, generation: Generation) -> Reply {
    let answer = move |result: JsonObject| match generation {
        Generation::V2025 => Value::Object(result),
        Generation::Extension => complete(Value::Object(result)),
    };
    if !call.talks() {
        return Reply::Later(Box::new(move || call.run().map(answer)));
    }
    Reply::Talk(Box::new(move |peer| {
        let caller = match generation {
            Generation::V2025 => Caller::v1(peer, params.as_ref()),
            Generation::Extension => Caller::ext(peer, params.as_ref()),
        };
        call.run_talking(&caller).map(answer)
    }))
}

/// What the store is asked for a task running `call`, requested with `arguments` in
/// `generation` (in 2025-11-25 `session`, if any): a redeliverable tool's task keeps its
/// [`Job`] and its bound on attempts ([`Invocation::redelivery`]); the others run once. One store
/// call creates the task either way.
fn task_request(
    call: &Invocation,
    id: &RequestId,
    arguments: Option<&Value>,
    generation: Generation,
    session: Option<&str>,
) -> TaskRequest {
    let request = TaskRequest::new(id.clone(), "tools/call");
    let Some(attempts) = call.redelivery() else {
        return request;
    };
    let job = Job {
        tool: call.name().to_owned(),
        arguments: arguments
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        generation,
        session: session.map(str::to_owned),
    };
    request.with_redelivery(Redelivery::new(attempts, job.to_object()))
}

/// The tool call and its task support, checked before any work starts.
fn parse_call(
    catalog: Catalog,
    params: Option<&Value>,
) -> Result<(Invocation, TaskSupport), JsonRpcError> {
    let params = params
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("tools/call needs an object `params`"))?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("missing string `name`"))?;
    let support = catalog
        .task_support(name)
        .ok_or_else(|| tools::unknown_tool(name))?;
    let arguments = match params.get("arguments") {
        Some(Value::Object(arguments)) => arguments.clone(),
        None | Some(Value::Null) => JsonObject::new(),
        Some(_) => return Err(invalid("`arguments` must be an object")),
    };
    Ok((catalog.invocation(name, &arguments)?, support))
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

    #[test]
    fn only_redeliverable_tools_ask_for_redelivery_with_their_job() {
        let id = RequestId::from(7);
        let arguments = json!({"ms": 10});
        let sleep = Catalog::Examples
            .invocation("sleep", arguments.as_object().unwrap())
            .unwrap_or_else(|err| panic!("{err:?}"));
        let request = task_request(
            &sleep,
            &id,
            Some(&arguments),
            Generation::V2025,
            Some("s-1"),
        );
        let redelivery = request.redelivery().expect("sleep is redeliverable");
        assert_eq!(redelivery.max_attempts(), tools::ATTEMPTS);
        let job = Job::from_object(redelivery.job()).unwrap();
        assert_eq!(
            (job.tool.as_str(), job.session.as_deref()),
            ("sleep", Some("s-1"))
        );
        assert_eq!(job.arguments["ms"], 10);
        let fail = Catalog::Examples
            .invocation("fail", &JsonObject::new())
            .unwrap_or_else(|err| panic!("{err:?}"));
        let request = task_request(&fail, &id, None, Generation::Extension, None);
        assert!(request.redelivery().is_none(), "fail runs once");
    }
}
