//! The example MCP server built on [`rmcp`] 2.2.0 (the last release with the 2025-11-25
//! task methods on `ServerHandler`), with every method delegating to a server of the
//! server library (`mcp_tasks_server::Server`) through its transport API: the tools are
//! the very tool values of the crate's own examples (`mcp_tasks_servers::tools`), built by
//! `mcp_tasks_servers::example::Options`.
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp-example   # MCP over stdio [-- --conformance]
//! ```
//!
//! What goes where:
//! - Every request becomes the library's JSON (rmcp's typed params, with the request's
//!   `_meta`) and goes to `Server::request`; the `Reply` is carried out here: answered
//!   now, run with a peer over rmcp's (`Later`), or answered and its task's handler started
//!   on the runtime (`ThenRun`). rmcp hands a call with `task` to `enqueue_task` and one
//!   without to `call_tool`: both are `tools/call` for the library, which answers the
//!   spec's `taskSupport` errors (`-32601` for `confirm` without a task and for `echo` with
//!   one). `get_tool` is left unimplemented on purpose: rmcp's own check would answer
//!   `-32602` for a forbidden task.
//! - `tasks/result` waits for the task as a future, bounded by
//!   `MCP_TASKS_RESULT_DEADLINE_MS` (default 120 000; past it `-32603`, poll and ask again)
//!   and given up when the client cancels the request.
//! - Input: a task's handler that asks records its requests in the store and waits there.
//!   A store subscriber sees the task enter `input_required` and sends each request to the
//!   client through the rmcp peer (`elicitation/create`, tagged with the related-task
//!   `_meta`), then hands the answer back with `TaskStore::respond`. If the task stops
//!   waiting (cancelled or expired) the request is withdrawn with `notifications/cancelled`.
//! - Every change of a task is sent as `notifications/tasks/status` through the peer.
//!
//! rmcp sends a response when the handler's future returns, so a handler cannot wait for
//! its `CreateTaskResult` to be written: a tool that finishes at once may have its status
//! notification overtake that result. The `CreateTaskResult` itself is the snapshot taken
//! at acceptance, always `working`.
//!
//! Environment: what `mcp_tasks_server::Settings` reads (`MCP_TASKS_PAGE_SIZE`, tasks per
//! `tasks/list` page, default 50), `MCP_TASKS_RESULT_DEADLINE_MS`, `MCP_TASKS_TRACE=<file>`
//! (appends every message read and written, `{"dir": "in" | "out", "msg": ...}`, as the
//! stdio example does).

mod trace;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks_server::mcp_tasks::protocol::{insert_related_task, tag_related_task};
use mcp_tasks_server::mcp_tasks::{
    AnyTask, InputRequired, JsonObject, JsonRpcError, Owner, RequestId, Task, TaskId, TaskStatus,
    TaskStore, jsonrpc,
};
use mcp_tasks_server::outbound;
use mcp_tasks_server::peer::{self, LogLevel};
use mcp_tasks_server::server::{Answering, Elicitation, Reply};
use mcp_tasks_server::work::Work;
use mcp_tasks_server::{Server, Store};
use mcp_tasks_servers::example::Options;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelTaskParams, CancelTaskResult,
    CancelledNotificationParam, ClientResult, CreateTaskResult, ElicitRequest, ErrorCode,
    ErrorData, GetTaskParams, GetTaskPayloadParams, GetTaskPayloadResult, GetTaskResult,
    InitializeRequestParams, InitializeResult, ListTasksResult, ListToolsResult,
    PaginatedRequestParams, ServerInfo, ServerNotification, ServerRequest, TaskStatusNotification,
    TaskStatusNotificationParam,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long a task waits for the client to answer an elicitation.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a task waiting for an answer checks whether it was cancelled meanwhile.
const STATUS_CHECK: Duration = Duration::from_millis(100);

/// The default bound on one `tasks/result` wait.
const DEFAULT_RESULT_DEADLINE: Duration = Duration::from_secs(120);

/// An rmcp error from one of ours (same code, message and data).
fn rpc_error(error: JsonRpcError) -> ErrorData {
    let code = i32::try_from(error.code).unwrap_or(jsonrpc::INTERNAL_ERROR as i32);
    ErrorData::new(ErrorCode(code), error.message, error.data)
}

fn internal(message: impl Into<String>) -> JsonRpcError {
    JsonRpcError::new(jsonrpc::INTERNAL_ERROR, message)
}

/// Converts between our wire JSON and rmcp's types, which are the same JSON.
fn convert<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|err| rpc_error(internal(format!("cannot convert a message: {err}"))))
}

/// The server: the library's routing behind rmcp's handler trait.
struct TasksServer {
    server: Arc<Server>,
    /// Over stdio there is one requestor: the process that started this server.
    owner: Owner,
    /// Whether the client declared form elicitation at `initialize`.
    elicitation: Mutex<Elicitation>,
    /// The level the client set with `logging/setLevel`.
    log_level: Arc<Mutex<Option<LogLevel>>>,
    result_deadline: Duration,
}

impl TasksServer {
    fn elicitation(&self) -> Elicitation {
        *self
            .elicitation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers `method` with `params` (rmcp's typed params, with the request's `_meta`).
    async fn route(
        &self,
        method: &str,
        params: &impl serde::Serialize,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let mut params =
            serde_json::to_value(params).map_err(|err| rpc_error(internal(err.to_string())))?;
        if !params.is_object() {
            params = json!({});
        }
        if !context.meta.0.is_empty() && params.get("_meta").is_none() {
            params["_meta"] = Value::Object(context.meta.0.clone());
        }
        let id = match serde_json::to_value(&context.id).map(serde_json::from_value::<RequestId>) {
            Ok(Ok(id)) => id,
            _ => RequestId::from(0),
        };
        let reply = self
            .server
            .request(&self.owner, &id, method, Some(params), self.elicitation());
        let answer = match reply {
            Reply::Now(answer) => answer,
            Reply::ThenRun(created, work) => {
                // An answer that cannot be given drops the work, which fails its task.
                let answer = created.to_value().map_err(|err| internal(err.to_string()));
                if answer.is_ok() {
                    start(work);
                }
                answer
            }
            Reply::Later(answering) => {
                let peer = Arc::new(RmcpPeer {
                    peer: context.peer.clone(),
                    runtime: tokio::runtime::Handle::current(),
                    log_level: Arc::clone(&self.log_level),
                });
                let work = async move {
                    match answering {
                        Answering::Blocking(work) => {
                            tokio::task::spawn_blocking(move || work(peer))
                                .await
                                .unwrap_or_else(|err| {
                                    Err(internal(format!("the work panicked: {err}")))
                                })
                        }
                        Answering::Async(work) => work(peer).await,
                    }
                };
                // A `tasks/result` waits for its task at most until the deadline.
                let deadline = if method == "tasks/result" {
                    self.result_deadline
                } else {
                    Duration::MAX
                };
                tokio::select! {
                    answer = tokio::time::timeout(deadline, work) => answer.unwrap_or_else(|_| {
                        Err(internal("the task did not finish before the deadline; poll tasks/get and ask again"))
                    }),
                    () = context.ct.cancelled() => Err(internal("the request was cancelled")),
                }
            }
        };
        answer.map_err(rpc_error)
    }
}

/// Starts a task's handler: a future on the runtime, blocking work on a thread of its own.
fn start(work: Work) {
    match work {
        Work::Async(work) => {
            tokio::spawn(work);
        }
        Work::Blocking(work) => {
            if let Err(err) = std::thread::Builder::new()
                .name("mcp-task".into())
                .spawn(work)
            {
                // The dropped handle fails the task.
                eprintln!("rmcp-example: cannot start a task thread: {err}");
            }
        }
    }
}

impl ServerHandler for TasksServer {
    fn get_info(&self) -> ServerInfo {
        let reply = self.server.request(
            &self.owner,
            &RequestId::from(0),
            "initialize",
            Some(json!({})),
            Elicitation::Undeclared,
        );
        match reply {
            Reply::Now(Ok(info)) => serde_json::from_value(info).unwrap_or_default(),
            _ => ServerInfo::default(),
        }
    }

    /// Answers in 2025-11-25 whatever the client asks for: the task methods here are that
    /// revision's.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let declared = serde_json::to_value(&request).ok();
        *self
            .elicitation
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Elicitation::declared_in(declared.as_ref());
        if context.peer.peer_info().is_none() {
            context.peer.set_peer_info(request.clone());
        }
        convert(self.route("initialize", &request, &context).await?)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        convert(self.route("tools/list", &request, &context).await?)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        convert(self.route("tools/call", &request, &context).await?)
    }

    async fn enqueue_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CreateTaskResult, ErrorData> {
        convert(self.route("tools/call", &request, &context).await?)
    }

    async fn get_task_info(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        convert(self.route("tasks/get", &request, &context).await?)
    }

    async fn list_tasks(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListTasksResult, ErrorData> {
        convert(self.route("tasks/list", &request, &context).await?)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CancelTaskResult, ErrorData> {
        convert(self.route("tasks/cancel", &request, &context).await?)
    }

    async fn get_task_result(
        &self,
        request: GetTaskPayloadParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskPayloadResult, ErrorData> {
        let answer = self.route("tasks/result", &request, &context).await?;
        let Value::Object(mut payload) = answer else {
            return Err(rpc_error(internal("tasks/result payload is not an object")));
        };
        // The library tags the payload already; make sure the MUST holds anyway.
        let meta = payload
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta
            && !meta.contains_key(mcp_tasks_server::mcp_tasks::protocol::RELATED_TASK_META_KEY)
            && let Ok(id) = request.task_id.parse()
        {
            insert_related_task(meta, &id);
        }
        Ok(GetTaskPayloadResult::new(Value::Object(payload)))
    }
}

/// rmcp's peer as the library's, for a call running at once: notifications and requests
/// are sent on the runtime.
struct RmcpPeer {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    log_level: Arc<Mutex<Option<LogLevel>>>,
}

impl peer::Peer for RmcpPeer {
    fn notify(&self, method: &str, params: Value) {
        match serde_json::from_value::<ServerNotification>(
            json!({"method": method, "params": params}),
        ) {
            Ok(notification) => {
                let send = || {
                    self.runtime
                        .block_on(self.peer.send_notification(notification))
                };
                // In order: sent before the call's answer.
                let sent = if tokio::runtime::Handle::try_current().is_ok() {
                    tokio::task::block_in_place(send)
                } else {
                    send()
                };
                if let Err(err) = sent {
                    eprintln!("rmcp-example: `{method}` was not sent: {err}");
                }
            }
            Err(err) => {
                eprintln!("rmcp-example: `{method}` is not a notification rmcp sends: {err}")
            }
        }
    }

    fn request(&self, method: &str, params: Value) -> peer::Answer {
        let request =
            serde_json::from_value::<ServerRequest>(json!({"method": method, "params": params}));
        let request = match request {
            Ok(request) => request,
            Err(err) => {
                let error = internal(format!("`{method}` is not a request rmcp sends: {err}"));
                return Box::pin(std::future::ready(Err(error)));
            }
        };
        let (answer, answered) = tokio::sync::oneshot::channel();
        let peer = self.peer.clone();
        self.runtime.spawn(async move {
            let got = tokio::time::timeout(ANSWER_TIMEOUT, peer.send_request(request)).await;
            let _ = answer.send(match got {
                Ok(Ok(result)) => {
                    serde_json::to_value(result).map_err(|err| internal(err.to_string()))
                }
                Ok(Err(err)) => Err(service_error(err)),
                Err(_) => Err(internal("the client did not answer in time")),
            });
        });
        Box::pin(async move {
            answered
                .await
                .unwrap_or_else(|_| Err(internal("the connection to the client closed")))
        })
    }

    fn log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn set_log_level(&self, level: LogLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }
}

/// Forwards a waiting task's input requests to the client as `elicitation/create`
/// (tagged with the related-task `_meta`), each once, and hands the answers back to the
/// store, where the handler waits for them.
#[derive(Clone)]
struct Input {
    peer: Peer<RoleServer>,
    store: Store,
    forwarded: Arc<Mutex<HashSet<(TaskId, String)>>>,
}

impl Input {
    fn forwarded(&self) -> std::sync::MutexGuard<'_, HashSet<(TaskId, String)>> {
        self.forwarded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn forward(&self, owner: &Owner, task: &Task<InputRequired>) {
        for (key, request) in task.input_requests().iter() {
            let marker = (task.id().clone(), key.to_owned());
            if !self.forwarded().insert(marker.clone()) {
                continue;
            }
            let mut params = request.params.clone();
            tag_related_task(&mut params, task.id());
            let (input, owner, method) = (self.clone(), owner.clone(), request.method.clone());
            tokio::spawn(async move {
                let task_id = marker.0.to_string();
                let answer = input.ask(&owner, &task_id, &method, params).await;
                let mut responses = JsonObject::new();
                responses.insert(
                    marker.1.clone(),
                    Value::Object(outbound::input_response(answer)),
                );
                if let Err(err) = input.store.respond(&owner, &task_id, responses) {
                    eprintln!("rmcp-example: task {task_id}: {err}");
                }
                input.forwarded().remove(&marker);
            });
        }
    }

    /// Sends one request to the client and waits for the answer, withdrawing the request
    /// (`notifications/cancelled`) if the task stops waiting meanwhile.
    async fn ask(
        &self,
        owner: &Owner,
        task_id: &str,
        method: &str,
        params: JsonObject,
    ) -> Result<Value, JsonRpcError> {
        if method != "elicitation/create" {
            return Err(internal(format!(
                "this server cannot send `{method}` to the client"
            )));
        }
        let params = serde_json::from_value(Value::Object(params))
            .map_err(|err| internal(format!("bad elicitation request: {err}")))?;
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(service_error)?;
        let id = handle.id.clone();
        let mut answered = handle.rx;
        let deadline = tokio::time::sleep(ANSWER_TIMEOUT);
        tokio::pin!(deadline);
        let mut check = tokio::time::interval(STATUS_CHECK);
        loop {
            tokio::select! {
                answer = &mut answered => {
                    return match answer {
                        Ok(Ok(ClientResult::ElicitResult(result))) => {
                            serde_json::to_value(result).map_err(|err| internal(err.to_string()))
                        }
                        Ok(Ok(_)) => Err(internal("the client answered with something else than an elicitation result")),
                        Ok(Err(err)) => Err(service_error(err)),
                        Err(_) => Err(internal("the connection to the client closed")),
                    };
                }
                _ = check.tick() => {
                    let waiting = self
                        .store
                        .get(owner, task_id)
                        .is_ok_and(|task| task.status() == TaskStatus::InputRequired);
                    if !waiting {
                        let withdrawn = CancelledNotificationParam::new(
                            Some(id),
                            Some("the task no longer waits for this input".into()),
                        );
                        let _ = self.peer.notify_cancelled(withdrawn).await;
                        return Err(internal("the task stopped waiting for the client's answer"));
                    }
                }
                () = &mut deadline => {
                    return Err(internal(format!("the client did not answer `{method}`")));
                }
            }
        }
    }
}

fn service_error(err: ServiceError) -> JsonRpcError {
    match err {
        ServiceError::McpError(error) => JsonRpcError {
            code: i64::from(error.code.0),
            message: error.message.into_owned(),
            data: error.data,
        },
        other => internal(format!("the request to the client failed: {other}")),
    }
}

/// A task's wire form as the params of `notifications/tasks/status` (no related-task
/// `_meta`, as the spec asks).
fn status_notification(task: &AnyTask) -> Result<ServerNotification, String> {
    let task = serde_json::to_value(task).map_err(|err| err.to_string())?;
    let params: TaskStatusNotificationParam =
        serde_json::from_value(task).map_err(|err| err.to_string())?;
    Ok(ServerNotification::TaskStatusNotification(
        TaskStatusNotification::new(params),
    ))
}

async fn serve() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let options = Options::parse("rmcp-example", std::env::args().skip(1))?;
    let server = Arc::new(options.build()?);
    let store = server.store().clone();

    // Changes come from any thread; one task of the runtime handles them in order.
    let (changes, mut forward) = mpsc::unbounded_channel();
    TaskStore::subscribe(&store, move |change| {
        let _ = changes.send((change.owner.clone(), change.task.clone()));
    });

    let transport = trace::stdio(std::env::var_os("MCP_TASKS_TRACE"))?;
    let result_deadline = std::env::var("MCP_TASKS_RESULT_DEADLINE_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .map_or(DEFAULT_RESULT_DEADLINE, Duration::from_millis);
    let handler = TasksServer {
        server: Arc::clone(&server),
        owner: Owner::new("rmcp-stdio"),
        elicitation: Mutex::new(Elicitation::Undeclared),
        log_level: Arc::default(),
        result_deadline,
    };
    eprintln!("rmcp-example: ready (MCP 2025-11-25 over stdio, rmcp 2.2.0)");
    let running = handler.serve(transport).await?;

    let input = Input {
        peer: running.peer().clone(),
        store,
        forwarded: Arc::default(),
    };
    tokio::spawn(async move {
        while let Some((owner, task)) = forward.recv().await {
            // Tasks created through 2025-11-25: all of this server's.
            if !server.is_v1_task(task.id()) {
                continue;
            }
            if let AnyTask::InputRequired(waiting) = &task {
                input.forward(&owner, waiting);
            }
            match status_notification(&task) {
                Ok(notification) => {
                    if input.peer.send_notification(notification).await.is_err() {
                        break;
                    }
                }
                Err(err) => eprintln!("rmcp-example: cannot convert a status notification: {err}"),
            }
            if task.is_terminal() {
                server.forget_task(task.id());
            }
        }
    });

    let reason = running.waiting().await?;
    eprintln!("rmcp-example: connection closed ({reason:?}), shutting down");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(serve());
    // Task threads and pending waits end with the process, as over plain stdio.
    runtime.shutdown_background();
    result
}
