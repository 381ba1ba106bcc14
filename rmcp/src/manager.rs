//! [`TaskManager`]: a [`Server`] of the server library, answering rmcp's `ServerHandler`
//! methods.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks_server::claims::ClaimLoop;
use mcp_tasks_server::mcp_tasks::{Owner, TaskId, ext};
use mcp_tasks_server::peer::Peer;
use mcp_tasks_server::running::{Ending, Running};
use mcp_tasks_server::server::{AnswerFuture, Answering, Elicitation, META_SERVER_INFO, Reply};
use mcp_tasks_server::{Generation, Server};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::runtime::Handle;

use crate::convert::{self, Kind, read};
use crate::peer::{LogLevelCell, RmcpPeer};
use crate::{owner, work};

/// How long [`TaskManager::shut_down`] waits for the claim loop to end.
const CLAIM_LOOP_END: Duration = Duration::from_millis(1_500);

/// What [`TaskManager::shut_down`] fails the tasks that are not handed over with.
const SHUT_DOWN: &str = "the server shut down before the task finished";

/// A [`Server`] of the server library (`mcp-tasks-server`) as an rmcp 3.x server: it
/// answers rmcp's `ServerHandler` methods — `tools/list`, `tools/call`, `tasks/get`,
/// `tasks/update`, `tasks/cancel`, and the methods the application added
/// ([`ServerBuilder::method`](mcp_tasks_server::ServerBuilder::method): prompts, resources,
/// completion) — through the library's routing, so the server's [`Tool`](mcp_tasks_server::Tool)s
/// run exactly as under the library's own transports: as tasks in its store, with input,
/// checkpoints and redelivery.
///
/// It is an rmcp `ServerHandler` itself (serve it as it is: `manager.serve(transport)`),
/// or the field of an application's own handler, whose tool and task methods
/// [`task_handlers!`](crate::task_handlers) writes.
///
/// Every task is bound to the owner of the request that made it ([`owner`](Self::owner));
/// another owner's `tasks/*` gets `-32602`, as for an unknown id. Cheap to clone; clones
/// share the server, its tasks and its claim loop.
#[derive(Clone)]
pub struct TaskManager {
    shared: Arc<Shared>,
    /// The owner of requests that name no principal and no session.
    connection: Owner,
    /// The log level of this session's client (2025-11-25 `logging/setLevel`).
    log_level: LogLevelCell,
}

/// What every clone shares.
struct Shared {
    server: Arc<Server>,
    /// The tasks whose handlers run here.
    running: Arc<Running>,
    /// What `server/discover` says (2026-07-28), as rmcp's `get_info`.
    info: ServerConfig,
    /// What `initialize` declares (2025-11-25).
    session: ServerCapabilities,
    /// The tools, as rmcp's `get_tool` answers them.
    tools: HashMap<String, Tool>,
    /// Turns `true` when the manager stops claiming.
    stopping: Arc<AtomicBool>,
    claims: Mutex<Option<ClaimLoop>>,
}

impl std::fmt::Debug for TaskManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManager")
            .field("server", &self.shared.server)
            .field("connection", &self.connection)
            .field("running", &self.shared.running.len())
            .finish_non_exhaustive()
    }
}

impl From<Server> for TaskManager {
    fn from(server: Server) -> Self {
        Self::new(server)
    }
}

fn connection_owner() -> Owner {
    Owner::new(format!("connection:{}", TaskId::random()))
}

impl TaskManager {
    /// Serves `server` through rmcp. Call it on the tokio runtime rmcp serves on: the
    /// handlers wait on its timer, and over a store shared with other instances
    /// ([`Server::is_shared`]) the claim loop starts, which runs the redeliverable tasks of
    /// instances that stopped again here, on that runtime (outside a runtime the handlers
    /// wait on the library's runtime-free timer, and no claim loop can start: an error
    /// says so in the log).
    #[must_use]
    pub fn new(server: Server) -> Self {
        // The handlers' waits on the runtime's timer, as over the library's HTTP.
        let server = match Handle::try_current() {
            Ok(runtime) => server.with_timer(Arc::new(work::TokioTimer(runtime))),
            Err(_) => server,
        };
        let server = Arc::new(server);
        let shared = Arc::new(Shared {
            info: info(&server),
            session: session_capabilities(&server),
            tools: tools(&server),
            running: Arc::new(Running::new()),
            stopping: Arc::new(AtomicBool::new(false)),
            claims: Mutex::new(None),
            server,
        });
        if shared.server.is_shared() {
            start_claims(&shared);
        }
        Self {
            shared,
            connection: connection_owner(),
            log_level: LogLevelCell::default(),
        }
    }

    /// The same server for another session of the same connection owner: its own
    /// `logging/setLevel`. What a Streamable HTTP service factory returns
    /// (`move || Ok(manager.for_session())`), where every request carries its owner (a
    /// [`Principal`](crate::Principal), or its session).
    #[must_use]
    pub fn for_session(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            connection: self.connection.clone(),
            log_level: LogLevelCell::default(),
        }
    }

    /// The same server for another connection, whose requests name no principal or
    /// session: a new connection owner, and its own `logging/setLevel`.
    #[must_use]
    pub fn for_connection(&self) -> Self {
        Self {
            connection: connection_owner(),
            ..self.for_session()
        }
    }

    /// The server.
    #[must_use]
    pub fn server(&self) -> &Server {
        &self.shared.server
    }

    /// The owner of the tasks `context`'s request makes and may see: its
    /// [`Principal`](crate::Principal) (`principal:<name>`), else its Streamable HTTP
    /// session (`session:<Mcp-Session-Id>`), else this handler's connection.
    #[must_use]
    pub fn owner(&self, context: &RequestContext<RoleServer>) -> Owner {
        owner::resolve(context, &self.connection)
    }

    /// What rmcp's `get_info` answers: the server's name, instructions and capabilities as
    /// its `server/discover` says them (tools, the tasks extension, what its methods add).
    #[must_use]
    pub fn info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    /// The capabilities a 2025-11-25 `initialize` declares: the server's own for that
    /// revision, without the tasks extension, which belongs to 2026-07-28
    /// (`server/discover`), and without 2025-11-25 `tasks`, which rmcp 3.x does not carry.
    #[must_use]
    pub fn session_capabilities(&self) -> ServerCapabilities {
        self.shared.session.clone()
    }

    /// The tool `name`, as rmcp's `get_tool` answers it (rmcp's Streamable HTTP service
    /// checks a 2026-07-28 call's `Mcp-Param-*` headers against its input schema).
    #[must_use]
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools.get(name).cloned()
    }

    /// How many tasks have a handler running here.
    #[must_use]
    pub fn running(&self) -> usize {
        self.shared.running.len()
    }

    /// `tools/list`.
    ///
    /// # Errors
    /// As the server answers.
    pub async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        read(self.answer("tools/list", &request, context).await?)
    }

    /// `tools/call`: the tool's handler runs as a task when the request declared the tasks
    /// extension and the tool allows it (the answer is the task), at once otherwise (its
    /// result, or on 2026-07-28 the input it asks for first).
    ///
    /// # Errors
    /// As the server answers: `-32602` for an unknown tool or arguments that do not fit
    /// it, `-32021` for a tool that only runs as a task, the handler's own error.
    pub async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let answer = self.answer("tools/call", &request, context).await?;
        Ok(match convert::kind(&answer) {
            Kind::Task => CallToolResponse::Task(read(answer)?),
            Kind::InputRequired => CallToolResponse::InputRequired(read(answer)?),
            Kind::Complete => CallToolResponse::Complete(read(answer)?),
        })
    }

    /// `tasks/get`: the task with what its status carries (its input requests, its result
    /// or its error).
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub async fn get_task(
        &self,
        request: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        read(self.extension("tasks/get", &request, context).await?)
    }

    /// `tasks/update`: the answers reach the handler waiting for them.
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task, or an answer that does not match
    /// the request it answers (the task keeps waiting).
    pub async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extension("tasks/update", &request, context)
            .await
            .map(drop)
    }

    /// `tasks/cancel`: the task is `cancelled` at once, whatever its handler does.
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extension("tasks/cancel", &request, context)
            .await
            .map(drop)
    }

    /// `prompts/list`, if the server serves it.
    ///
    /// # Errors
    /// `-32601` without a method for it; else as the method answers.
    pub async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        read(self.answer("prompts/list", &request, context).await?)
    }

    /// `prompts/get`, if the server serves it: the prompt, or on 2026-07-28 the input it
    /// asks for first.
    ///
    /// # Errors
    /// As [`list_prompts`](Self::list_prompts).
    pub async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let answer = self.answer("prompts/get", &request, context).await?;
        Ok(match convert::kind(&answer) {
            Kind::InputRequired => GetPromptResponse::InputRequired(read(answer)?),
            Kind::Complete | Kind::Task => GetPromptResponse::Complete(read(answer)?),
        })
    }

    /// `resources/list`, if the server serves it.
    ///
    /// # Errors
    /// As [`list_prompts`](Self::list_prompts).
    pub async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        read(self.answer("resources/list", &request, context).await?)
    }

    /// `resources/templates/list`, if the server serves it.
    ///
    /// # Errors
    /// As [`list_prompts`](Self::list_prompts).
    pub async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        read(
            self.answer("resources/templates/list", &request, context)
                .await?,
        )
    }

    /// `resources/read`, if the server serves it: the resource, or on 2026-07-28 the input
    /// it asks for first.
    ///
    /// # Errors
    /// As [`list_prompts`](Self::list_prompts).
    pub async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let answer = self.answer("resources/read", &request, context).await?;
        Ok(match convert::kind(&answer) {
            Kind::InputRequired => ReadResourceResponse::InputRequired(read(answer)?),
            Kind::Complete | Kind::Task => ReadResourceResponse::Complete(read(answer)?),
        })
    }

    /// `completion/complete`, if the server serves it.
    ///
    /// # Errors
    /// As [`list_prompts`](Self::list_prompts).
    pub async fn complete(
        &self,
        request: CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        read(
            self.answer("completion/complete", &request, context)
                .await?,
        )
    }

    /// `logging/setLevel` (2025-11-25, for a server built with
    /// [`logging`](mcp_tasks_server::ServerBuilder::logging)): the level holds for this
    /// session.
    ///
    /// # Errors
    /// `-32601` for a server without logging, and on 2026-07-28 (a request asks for its
    /// level in its `_meta` there); `-32602` for an unknown level.
    #[allow(
        deprecated,
        reason = "logging is 2025-11-25's; SEP-2577 deprecates it for 2026-07-28"
    )]
    pub async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.answer("logging/setLevel", &request, context)
            .await
            .map(drop)
    }

    /// Any request the server answers, by its method and params (rmcp's typed params, or
    /// JSON): what `on_custom_request` hands on.
    ///
    /// # Errors
    /// As the server answers.
    pub async fn answer(
        &self,
        method: &str,
        params: &impl Serialize,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let params = convert::params(params, context, false)?;
        self.route(method, params, context).await
    }

    /// A method of the tasks extension: framed as 2026-07-28 whatever the session (rmcp
    /// has checked that the client declared the extension).
    async fn extension(
        &self,
        method: &str,
        params: &impl Serialize,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let params = convert::params(params, context, true)?;
        self.route(method, params, context).await
    }

    /// Hands `params` of `method` to the server's routing and carries out its reply on the
    /// current runtime.
    async fn route(
        &self,
        method: &str,
        params: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let server = &self.shared.server;
        let runtime = Handle::current();
        let in_place = work::in_place(&runtime, server.is_shared());
        let owner = self.owner(context);
        let id = convert::request_id(&context.id);
        let capabilities = context
            .client_capabilities()
            .and_then(|capabilities| serde_json::to_value(capabilities).ok())
            .unwrap_or_else(|| json!({}));
        let elicitation = Elicitation::declared_in(Some(&json!({"capabilities": capabilities})));
        let extension = Generation::of(method, Some(&params)) == Generation::Extension;
        let reply = work::store_call(in_place, || {
            server.request(&owner, &id, method, Some(params), elicitation)
        });
        match reply {
            Reply::Now(answer) => answer.map_err(convert::error),
            // The task's handler starts as the answer goes back: rmcp sends it once this
            // returns, and the client reads the task as `working` from it whatever the
            // handler did meanwhile.
            Reply::ThenRun(created, task) => {
                // An answer that cannot be given drops the work, which fails its task.
                let answer = created
                    .to_value()
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                let task = self.shared.running.track(&owner, &created, task);
                work::spawn(&runtime, task, server.is_shared());
                Ok(answer)
            }
            Reply::Later(answering) => {
                let (peer, outbox) = RmcpPeer::new(capabilities, self.log_level.clone(), extension);
                let peer = Arc::new(peer);
                let answer = answer_future(answering, Arc::clone(&peer) as Arc<dyn Peer>, in_place);
                let forwarding = outbox.forward(context.peer.clone());
                tokio::pin!(forwarding);
                let mut answer = answer;
                let mut forwarded = false;
                let answered = loop {
                    tokio::select! {
                        answered = &mut answer => break Some(answered),
                        () = context.ct.cancelled() => break None,
                        () = &mut forwarding, if !forwarded => forwarded = true,
                    }
                };
                // What the handler queued goes out before its answer.
                peer.close();
                if !forwarded {
                    forwarding.await;
                }
                match answered {
                    Some(answer) => answer.map_err(convert::error),
                    None => Err(ErrorData::internal_error("request cancelled", None)),
                }
            }
        }
    }

    /// Stops claiming, and hands every redeliverable task running here over to another
    /// instance of the shared store, which claims it at once and runs its next attempt
    /// (from its last checkpoint); the other tasks run on. Answers the tasks handed over
    /// (none on the in-process registry, which has no other instance). For a shutdown
    /// that also ends the others, see [`shut_down`](Self::shut_down).
    pub fn hand_over_running(&self) -> Vec<TaskId> {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.running.hand_over(&self.shared.server)
    }

    /// A graceful shutdown: stops claiming, lets the tasks running here finish for
    /// `grace`, then hands the redeliverable ones still running over to another instance
    /// of the shared store and fails the others with `-32603`, so that their requestors
    /// are answered. Answers which were handed over and which failed.
    pub async fn shut_down(&self, grace: Duration) -> Ending {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while !self.shared.running.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let claims = self
            .shared
            .claims
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (running, server) = (
            Arc::clone(&self.shared.running),
            Arc::clone(&self.shared.server),
        );
        tokio::task::spawn_blocking(move || {
            if let Some(claims) = claims
                && !claims.join_within(CLAIM_LOOP_END)
            {
                log::warn!("the claim loop did not end in time");
            }
            running.end_all(&server, SHUT_DOWN)
        })
        .await
        .unwrap_or_default()
    }
}

/// The future of a request's work, given its peer: blocking work on the runtime's
/// blocking pool, a future as it is (in place over a shared store).
fn answer_future(answering: Answering, peer: Arc<dyn Peer>, in_place: bool) -> AnswerFuture {
    match answering {
        Answering::Blocking(work) => Box::pin(async move {
            tokio::task::spawn_blocking(move || work(peer))
                .await
                .unwrap_or_else(|panic| {
                    Err(convert::internal(format!(
                        "the request's work panicked: {panic}"
                    )))
                })
        }),
        Answering::Async(work) if in_place => Box::pin(work::InPlace(work(peer))),
        Answering::Async(work) => work(peer),
    }
}

/// Starts the claim loop of a manager over a shared store, on the current runtime.
fn start_claims(shared: &Arc<Shared>) {
    let Ok(runtime) = Handle::try_current() else {
        log::error!(
            "TaskManager::new was called outside a tokio runtime: the tasks of stopped \
             instances are not claimed here"
        );
        return;
    };
    let stopping = Arc::clone(&shared.stopping);
    let running = Arc::clone(&shared.running);
    let started = ClaimLoop::start(
        Arc::clone(&shared.server),
        move || stopping.load(Ordering::SeqCst),
        move |claimed| {
            match &claimed.job {
                Ok(job) => log::info!(
                    "claimed task {}: `{}`, {}",
                    claimed.task,
                    job.tool,
                    claimed.attempts
                ),
                Err(why) => log::warn!(
                    "claimed task {} whose job cannot run here: {why}",
                    claimed.task
                ),
            }
            work::spawn(&runtime, running.track_claimed(claimed), true);
        },
        |warning| log::warn!("claim loop: {warning}"),
    );
    match started {
        Ok(claims) => {
            *shared.claims.lock().unwrap_or_else(PoisonError::into_inner) = Some(claims);
        }
        Err(err) => log::error!(
            "cannot start the claim loop ({err}): the tasks of stopped instances are not \
             claimed here"
        ),
    }
}

/// The answer of `method` with `params` when the server answers it at once (the server's
/// description, which depends on nothing but the server).
fn describe(server: &Server, method: &str, params: Value) -> Option<Value> {
    let owner = Owner::new("mcp-tasks-rmcp");
    let id = mcp_tasks_server::mcp_tasks::RequestId::from(0);
    match server.request(&owner, &id, method, Some(params), Elicitation::Undeclared) {
        Reply::Now(Ok(answer)) => Some(answer),
        _ => None,
    }
}

/// The params of a 2026-07-28 request that names nothing else.
fn framed() -> Value {
    json!({"_meta": {ext::META_PROTOCOL_VERSION: ext::PROTOCOL_VERSION}})
}

/// What `server/discover` says, as rmcp's `ServerConfig`.
fn info(server: &Server) -> ServerConfig {
    let discover = describe(server, ext::methods::SERVER_DISCOVER, framed()).unwrap_or_default();
    let capabilities =
        serde_json::from_value(discover["capabilities"].clone()).unwrap_or_else(|_| {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build()
        });
    let mut config = ServerConfig::new(capabilities);
    if let Ok(implementation) =
        serde_json::from_value::<Implementation>(discover["_meta"][META_SERVER_INFO].clone())
    {
        config = config.with_server_info(implementation);
    }
    if let Some(instructions) = discover["instructions"].as_str() {
        config = config.with_instructions(instructions);
    }
    config
}

/// What `initialize` declares, without 2025-11-25 `tasks`.
fn session_capabilities(server: &Server) -> ServerCapabilities {
    let initialize = describe(server, "initialize", json!({})).unwrap_or_default();
    let mut capabilities = initialize["capabilities"].clone();
    if let Some(capabilities) = capabilities.as_object_mut() {
        capabilities.remove("tasks");
    }
    serde_json::from_value(capabilities)
        .unwrap_or_else(|_| ServerCapabilities::builder().enable_tools().build())
}

/// The tools as rmcp's type, by name.
fn tools(server: &Server) -> HashMap<String, Tool> {
    let listed = describe(server, "tools/list", framed()).unwrap_or_default();
    let tools: Vec<Tool> = serde_json::from_value(listed["tools"].clone()).unwrap_or_default();
    tools
        .into_iter()
        .map(|tool| (tool.name.to_string(), tool))
        .collect()
}
