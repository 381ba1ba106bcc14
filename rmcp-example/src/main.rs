//! The example MCP server built on [`rmcp`] 2.2.0, with its task methods delegating to
//! `mcp-tasks`: the registry stores the tasks, the `Dispatcher` answers `tasks/*`, and the
//! tools are the very handlers of the crate's own examples (`servers/src/tools.rs`).
//!
//! ```text
//! cargo run -p mcp-tasks-rmcp-example   # MCP over stdio [-- --conformance]
//! ```
//!
//! What goes where:
//! - `tools/call`: rmcp hands a call with `task` to [`ServerHandler::enqueue_task`] and one
//!   without to [`ServerHandler::call_tool`]. Both ask `mcp_tasks::protocol::augmentation`,
//!   so the spec's `taskSupport` errors are exact (`-32601` for `confirm` without a task and
//!   for `echo` with one). `get_tool` is left unimplemented on purpose: rmcp's own check
//!   would answer `-32602` for a forbidden task.
//! - `enqueue_task` creates the task with `Dispatcher::accept`, starts the handler on a
//!   thread with a typed `TaskHandle<Working>` and returns the `CreateTaskResult`.
//! - `get_task_info`, `list_tasks`, `cancel_task`: `Dispatcher::dispatch`.
//! - `get_task_result`: awaits `Dispatcher::result_async` (the store's future: no thread
//!   is held while the task runs), bounded by `MCP_TASKS_RESULT_DEADLINE_MS` (default
//!   120 000; past it `-32603`, poll and ask again) and given up when the client cancels
//!   the request. The answer carries
//!   `_meta["io.modelcontextprotocol/related-task"]`.
//! - Input: a handler that needs input records its requests in the registry and waits
//!   there (`TaskHandle::wait_for_input`). A subscriber sees the task enter
//!   `input_required` and sends each request to the client through the rmcp peer
//!   (`elicitation/create`, tagged with the related-task `_meta`), then hands the answer
//!   back with `TaskRegistry::respond`. If the task stops waiting (cancelled or expired)
//!   the request is withdrawn with `notifications/cancelled`.
//! - Every task change is sent as `notifications/tasks/status` through the peer.
//!
//! rmcp sends a response when the handler's future returns, so a handler cannot wait for
//! its `CreateTaskResult` to be written: a tool that finishes at once may have its status
//! notification overtake that result. The `CreateTaskResult` itself is the snapshot taken
//! at acceptance, always `working`.
//!
//! Environment: `MCP_TASKS_PAGE_SIZE` (tasks per `tasks/list` page, default 50),
//! `MCP_TASKS_RESULT_DEADLINE_MS`, `MCP_TASKS_TRACE=<file>` (appends every message read
//! and written, `{"dir": "in" | "out", "msg": ...}`, as the stdio example does).

use mcp_tasks_servers::tools::{self, Catalog};
use mcp_tasks_servers::work::Work;

mod trace;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::protocol::{
    self, Augmentation, Dispatcher, PROTOCOL_VERSION, ServerTasksCapability, augmentation,
    insert_related_task, tag_related_task,
};
use mcp_tasks::{
    AnyTask, InputRequired, JsonObject, JsonRpcError, Owner, Task, TaskId, TaskRegistry,
    TaskStatus, TtlPolicy, jsonrpc,
};
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

use tools::Call;

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

fn internal(message: impl Into<String>) -> ErrorData {
    rpc_error(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, message))
}

/// Converts between our wire JSON and rmcp's types, which are the same JSON.
fn convert<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|err| internal(format!("cannot convert a message: {err}")))
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(value)
        .map_err(|err| internal(format!("cannot serialize a message: {err}")))
}

/// The server: our dispatcher behind rmcp's handler trait.
struct TasksServer {
    dispatcher: Dispatcher,
    capabilities: ServerTasksCapability,
    /// Over stdio there is one requestor: the process that started this server.
    owner: Owner,
    result_deadline: Duration,
    /// The tools served: the examples, and with `--conformance` (or
    /// `MCP_TASKS_CONFORMANCE=1`) the conformance suite's fixtures too.
    catalog: Catalog,
}

impl TasksServer {
    fn from_env(registry: TaskRegistry, catalog: Catalog) -> Self {
        let page_size = env_number("MCP_TASKS_PAGE_SIZE")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(protocol::DEFAULT_PAGE_SIZE);
        let result_deadline = env_number("MCP_TASKS_RESULT_DEADLINE_MS")
            .map_or(DEFAULT_RESULT_DEADLINE, Duration::from_millis);
        Self {
            // The dispatcher's own timeout ends the blocking wait, so the blocking thread
            // is released at the deadline too.
            dispatcher: Dispatcher::new(registry)
                .with_page_size(page_size)
                .with_result_timeout(Some(result_deadline)),
            capabilities: ServerTasksCapability::all(),
            owner: Owner::new("rmcp-stdio"),
            result_deadline,
            catalog,
        }
    }

    fn dispatch<T: DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, ErrorData> {
        let answer = self
            .dispatcher
            .dispatch(&self.owner, method, Some(&params))
            .map_err(rpc_error)?;
        convert(answer)
    }

    /// Reads a `tools/call` and decides how to run it (the spec's `taskSupport` rules).
    fn plan(&self, request: &CallToolRequestParams) -> Result<(Call, Augmentation), ErrorData> {
        let Some(support) = self.catalog.task_support(&request.name) else {
            return Err(rpc_error(JsonRpcError::new(
                jsonrpc::INVALID_PARAMS,
                format!("invalid params: unknown tool `{}`", request.name),
            )));
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        let call = self
            .catalog
            .parse(&request.name, &arguments)
            .map_err(rpc_error)?;
        let Value::Object(params) = to_json(request)? else {
            return Err(internal("tools/call params are not an object"));
        };
        Ok((
            call,
            augmentation(support, self.capabilities.tools_call(), &params),
        ))
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
}

impl ServerHandler for TasksServer {
    fn get_info(&self) -> ServerInfo {
        let info = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}, "tasks": self.capabilities},
            "serverInfo": {"name": "mcp-tasks-rmcp-example", "version": env!("CARGO_PKG_VERSION")},
            "instructions": self.catalog.instructions()
        });
        serde_json::from_value(info).unwrap_or_default()
    }

    /// Answers in 2025-11-25 whatever the client asks for: the task methods here are that
    /// revision's.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if context.peer.peer_info().is_none() {
            context.peer.set_peer_info(request);
        }
        Ok(self.get_info())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        convert(json!({"tools": self.catalog.list()}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.plan(&request)? {
            (_, Augmentation::Refuse(error)) => Err(rpc_error(error.to_jsonrpc())),
            (call, Augmentation::Normal) => {
                let result = tokio::task::spawn_blocking(move || call.run())
                    .await
                    .map_err(|err| internal(format!("the tool panicked: {err}")))?
                    .map_err(rpc_error)?;
                convert(Value::Object(result))
            }
            (_, Augmentation::Task { .. }) => {
                Err(internal("a call without `task` cannot be a task"))
            }
        }
    }

    async fn enqueue_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CreateTaskResult, ErrorData> {
        let (call, ttl) = match self.plan(&request)? {
            (_, Augmentation::Refuse(error)) => return Err(rpc_error(error.to_jsonrpc())),
            (call, Augmentation::Task { ttl }) => (call, ttl),
            (_, Augmentation::Normal) => {
                return Err(internal("this call cannot run as a task"));
            }
        };
        let request_id = convert(to_json(&context.id)?)?;
        let (handle, created) = self
            .dispatcher
            .accept(&self.owner, request_id, "tools/call", ttl)
            .map_err(|error| rpc_error(error.to_jsonrpc()))?;
        // A handler that waits as a future (sleep, confirm) runs on the runtime; one that
        // blocks gets a thread of its own, not one of the runtime's. If that cannot start,
        // the dropped handle fails the task.
        match call.task_work(handle, None) {
            Work::Async(work) => {
                tokio::spawn(work);
            }
            Work::Blocking(work) => {
                let spawned = std::thread::Builder::new()
                    .name("mcp-task".into())
                    .spawn(work);
                if let Err(err) = spawned {
                    eprintln!("rmcp-example: cannot start a task thread: {err}");
                }
            }
        }
        convert(to_json(&created)?)
    }

    async fn get_task_info(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.dispatch(
            protocol::methods::TASKS_GET,
            json!({"taskId": request.task_id}),
        )
    }

    async fn list_tasks(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListTasksResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        self.dispatch(protocol::methods::TASKS_LIST, json!({"cursor": cursor}))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CancelTaskResult, ErrorData> {
        self.dispatch(
            protocol::methods::TASKS_CANCEL,
            json!({"taskId": request.task_id}),
        )
    }

    async fn get_task_result(
        &self,
        request: GetTaskPayloadParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskPayloadResult, ErrorData> {
        let task_id = request.task_id;
        let params = json!({"taskId": task_id});
        // The store's future: no thread is held while the task runs, and dropping it (the
        // deadline, a cancelled request) deregisters the wait.
        let wait = self.dispatcher.result_async(&self.owner, Some(&params));
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.result_deadline, wait) => match answer {
                Ok(answer) => answer.map_err(rpc_error)?,
                Err(_) => return Err(internal("the task did not finish before the deadline; poll tasks/get and ask again")),
            },
            () = context.ct.cancelled() => return Err(internal("the request was cancelled")),
        };
        let Value::Object(mut payload) = answer else {
            return Err(internal("tasks/result payload is not an object"));
        };
        // The dispatcher tags the payload already; make sure the MUST holds anyway.
        let meta = payload
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(meta) = meta
            && !meta.contains_key(protocol::RELATED_TASK_META_KEY)
            && let Ok(id) = task_id.parse()
        {
            insert_related_task(meta, &id);
        }
        Ok(GetTaskPayloadResult::new(Value::Object(payload)))
    }
}

/// Forwards a waiting task's input requests to the client as `elicitation/create`
/// (tagged with the related-task `_meta`), each once, and hands the answers back to the
/// registry, where the handler waits for them.
#[derive(Clone)]
struct Input {
    peer: Peer<RoleServer>,
    registry: TaskRegistry,
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
                let answer = match input.ask(&owner, &task_id, &method, params).await {
                    Ok(answer) => answer,
                    Err(err) => {
                        // No usable answer: to the handler this is a dismissed request.
                        eprintln!("rmcp-example: task {task_id}: {err}");
                        let mut dismissed = JsonObject::new();
                        dismissed.insert("action".into(), json!("cancel"));
                        dismissed
                    }
                };
                let mut responses = JsonObject::new();
                responses.insert(marker.1.clone(), Value::Object(answer));
                if let Err(err) = input.registry.respond(&owner, &task_id, responses) {
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
    ) -> Result<JsonObject, JsonRpcError> {
        if method != "elicitation/create" {
            return Err(JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("this server cannot send `{method}` to the client"),
            ));
        }
        let params = serde_json::from_value(Value::Object(params)).map_err(|err| {
            JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("bad elicitation request: {err}"),
            )
        })?;
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
                        Ok(Ok(ClientResult::ElicitResult(result))) => match serde_json::to_value(result) {
                            Ok(Value::Object(answer)) => Ok(answer),
                            _ => Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the client's answer was not an object")),
                        },
                        Ok(Ok(_)) => Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the client answered with something else than an elicitation result")),
                        Ok(Err(err)) => Err(service_error(err)),
                        Err(_) => Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the connection to the client closed")),
                    };
                }
                _ = check.tick() => {
                    let waiting = self
                        .registry
                        .get(owner, task_id)
                        .is_ok_and(|task| task.status() == TaskStatus::InputRequired);
                    if !waiting {
                        let withdrawn = CancelledNotificationParam::new(
                            Some(id),
                            Some("the task no longer waits for this input".into()),
                        );
                        let _ = self.peer.notify_cancelled(withdrawn).await;
                        return Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, "the task stopped waiting for the client's answer"));
                    }
                }
                () = &mut deadline => {
                    return Err(JsonRpcError::new(jsonrpc::INTERNAL_ERROR, format!("the client did not answer `{method}`")));
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
        other => JsonRpcError::new(
            jsonrpc::INTERNAL_ERROR,
            format!("the request to the client failed: {other}"),
        ),
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
    let registry = TaskRegistry::builder()
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(3_600_000))
        .poll_interval(Some(100))
        .build()?;

    // Changes come from any thread; one task of the runtime handles them in order.
    let (changes, mut forward) = mpsc::unbounded_channel();
    registry.subscribe(move |change| {
        let _ = changes.send((change.owner.clone(), change.task.clone()));
    });

    let transport = trace::stdio(std::env::var_os("MCP_TASKS_TRACE"))?;
    let mut conformance = false;
    for arg in std::env::args().skip(1) {
        if arg == tools::CONFORMANCE_FLAG {
            conformance = true;
        } else {
            return Err(
                format!("unknown argument `{arg}`; usage: rmcp-example [--conformance]").into(),
            );
        }
    }
    let server = TasksServer::from_env(registry.clone(), Catalog::chosen(conformance));
    eprintln!("rmcp-example: ready (MCP {PROTOCOL_VERSION} over stdio, rmcp 2.2.0)");
    let running = server.serve(transport).await?;

    let input = Input {
        peer: running.peer().clone(),
        registry,
        forwarded: Arc::default(),
    };
    tokio::spawn(async move {
        while let Some((owner, task)) = forward.recv().await {
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
