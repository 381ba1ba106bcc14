//! [`TaskManager`]: rmcp's task runtime over an mcp-tasks [`TaskStore`].

use std::sync::Arc;

use mcp_tasks::ext::ExtDispatcher;
use mcp_tasks::{
    JsonObject, Owner, Redelivery, TaskRegistry, TaskRequest, TaskStore, TraceContext, Working,
};
use mcp_tasks_otel::{RequestSpan, Telemetry};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    GetTaskParams, GetTaskResult, InitializeResult, ResultType, TASKS_EXTENSION_ID,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};

use crate::context::{Run, TaskContext, TaskExit, TaskFuture};
use crate::redeliver::{self, Claims};
use crate::{convert, owner, telemetry};

/// Default TTL (5 minutes, in milliseconds) asked for when none is set, as rmcp's.
pub const DEFAULT_TASK_TTL_MS: u64 = 300_000;

/// Default suggested polling interval, in milliseconds, as rmcp's.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 1_000;

/// Options of a spawned task (as `rmcp::task_manager::TaskOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOptions {
    /// TTL in milliseconds; `None` asks for unlimited retention. The store's
    /// [`TtlPolicy`](mcp_tasks::TtlPolicy) bounds it.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// Initial status message.
    pub status_message: Option<String>,
    /// Redelivery: the most attempts the task may take, each on whichever instance claims
    /// it after the last one's instance stopped (see [`redeliver`](Self::redeliver));
    /// `None`: the task runs once.
    pub max_attempts: Option<u32>,
    /// The tool's name, for spans and metrics ([`TaskManager::call_tool`] cannot see it;
    /// [`TaskManager::call_registered`] reads it from the request).
    pub tool: Option<String>,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl_ms: Some(DEFAULT_TASK_TTL_MS),
            poll_interval_ms: Some(DEFAULT_POLL_INTERVAL_MS),
            status_message: None,
            max_attempts: None,
            tool: None,
        }
    }
}

impl TaskOptions {
    /// The defaults: a 5-minute TTL, a 1-second poll interval, no message.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The TTL in milliseconds; `None` asks for unlimited retention.
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: impl Into<Option<u64>>) -> Self {
        self.ttl_ms = ttl_ms.into();
        self
    }

    /// The suggested polling interval in milliseconds.
    #[must_use]
    pub fn with_poll_interval_ms(mut self, poll_interval_ms: u64) -> Self {
        self.poll_interval_ms = Some(poll_interval_ms);
        self
    }

    /// The initial status message.
    #[must_use]
    pub fn with_status_message(mut self, message: impl Into<String>) -> Self {
        self.status_message = Some(message.into());
        self
    }

    /// Names the tool the call runs, for its spans and metrics (`gen_ai.tool.name`).
    #[must_use]
    pub fn for_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Declares the task redeliverable: if the instance running it stops (dies, or hands
    /// it over on shutdown), another instance of a shared store claims it and runs the
    /// tool's registered handler again, up to `max_attempts` runs in all (clamped to
    /// `1..=`[`MAX_ATTEMPTS`](mcp_tasks::MAX_ATTEMPTS)). Only for calls of a registered
    /// handler ([`TaskManager::call_registered`]), and only for a tool that is safe to run
    /// again from the start or from its checkpoint: see the crate docs' *Redelivery*.
    #[must_use]
    pub fn redeliver(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }
}

/// What `rmcp::task_manager::TaskManager` gives an rmcp 3.x server, on any mcp-tasks
/// [`TaskStore`]: the in-process [`TaskRegistry`] (the default), or `RedisTaskStore`
/// (feature `redis`) shared by several server instances.
///
/// Every task is bound to the owner of the request that made it (see
/// [`Principal`](crate::Principal)); `tasks/get`, `tasks/update` and `tasks/cancel` from anyone else
/// get `-32602`, as for an unknown id. Cheap to clone; clones share the store and the
/// connection owner. A server that makes one handler per connection calls
/// [`for_connection`](Self::for_connection) for each.
#[derive(Clone)]
pub struct TaskManager<T: TaskStore = TaskRegistry> {
    dispatcher: ExtDispatcher<T>,
    connection: Owner,
    answer_check: Option<AnswerCheck>,
    /// The registered handlers, the redeliverable tasks running here and the claim loop,
    /// shared by every clone.
    claims: Arc<Claims<T>>,
    /// Where spans and metrics go (nowhere by default).
    telemetry: Telemetry,
}

/// Checks one answer of a `tasks/update` against the input request it answers (see
/// [`TaskManager::with_answer_check`]): `Err` says what does not fit.
pub type AnswerCheck =
    Arc<dyn Fn(&mcp_tasks::InputRequest, &serde_json::Value) -> Result<(), String> + Send + Sync>;

impl<T: TaskStore> std::fmt::Debug for TaskManager<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManager")
            .field("store", self.dispatcher.store())
            .field("connection", &self.connection)
            .field("answer_check", &self.answer_check.is_some())
            .field("handlers", &self.claims.tools())
            .field("telemetry", &self.telemetry)
            .finish()
    }
}

impl Default for TaskManager {
    fn default() -> Self {
        Self::new(TaskRegistry::new())
    }
}

fn connection_owner() -> Owner {
    Owner::new(format!("connection:{}", mcp_tasks::TaskId::random()))
}

impl<T: TaskStore + Clone + 'static> TaskManager<T> {
    /// A manager keeping its tasks in `store`.
    #[must_use]
    pub fn new(store: T) -> Self {
        Self {
            dispatcher: ExtDispatcher::new(store),
            connection: connection_owner(),
            answer_check: None,
            claims: Arc::default(),
            telemetry: Telemetry::default(),
        }
    }

    /// The same manager, recording spans and metrics into `telemetry`
    /// (`mcp_tasks_otel`: the MCP semantic conventions' spans of `tools/call`,
    /// `tasks/get`, `tasks/update` and `tasks/cancel`, and each task's work as an
    /// `execute_tool` span in the trace of the call that created it, also when another
    /// instance claims it). The context is stored with the task; give the manager a store
    /// wrapped by [`Telemetry::observe`] for the store's metrics and the task ids on the
    /// request spans. Call it before [`run_claims`](Self::run_claims).
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// The same manager, checking every answer of a `tasks/update` against the input
    /// request it answers before any is delivered: if one does not fit, the whole update
    /// is refused with `-32602` and the task keeps waiting (the client can answer
    /// again). Answers to unknown or already answered keys are ignored, as always.
    #[must_use]
    pub fn with_answer_check(
        mut self,
        check: impl Fn(&mcp_tasks::InputRequest, &serde_json::Value) -> Result<(), String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.answer_check = Some(Arc::new(check));
        self
    }

    /// The same store, with a new connection owner: for a handler serving another
    /// connection, whose requests carry no principal or session.
    #[must_use]
    pub fn for_connection(&self) -> Self {
        Self {
            dispatcher: self.dispatcher.clone(),
            connection: connection_owner(),
            answer_check: self.answer_check.clone(),
            claims: Arc::clone(&self.claims),
            telemetry: self.telemetry.clone(),
        }
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &T {
        self.dispatcher.store()
    }

    /// The owner of the tasks `context`'s request makes and may see.
    #[must_use]
    pub fn owner(&self, context: &RequestContext<RoleServer>) -> Owner {
        owner::resolve(context, &self.connection)
    }

    /// Creates a task for `owner` and runs `make_future`'s operation with it on tokio.
    /// The task is stored before this returns (so `tasks/get` finds it); its result,
    /// error or cancellation is stored through the task's typed handle when the
    /// operation ends, and an operation that panics leaves the task `failed` (`-32603`).
    ///
    /// # Errors
    /// The store's refusal (a limit reached: `-32603` with its reason), or its outage;
    /// `-32603` for options that [`redeliver`](TaskOptions::redeliver) (a closure cannot
    /// run on another instance: register the handler and use
    /// [`spawn_registered`](Self::spawn_registered)).
    pub fn spawn<F>(
        &self,
        owner: &Owner,
        request_id: &rmcp::model::RequestId,
        options: TaskOptions,
        make_future: F,
    ) -> Result<CreateTaskResult, ErrorData>
    where
        F: FnOnce(TaskContext<T>) -> TaskFuture,
    {
        self.spawn_in(&Origin::untraced(owner, request_id), options, make_future)
    }

    /// [`spawn`](Self::spawn) for a request in `origin`.
    fn spawn_in<F>(
        &self,
        origin: &Origin<'_>,
        options: TaskOptions,
        make_future: F,
    ) -> Result<CreateTaskResult, ErrorData>
    where
        F: FnOnce(TaskContext<T>) -> TaskFuture,
    {
        if options.max_attempts.is_some() {
            return Err(closure_redelivered());
        }
        self.start(
            origin,
            options,
            None,
            Run::first(JsonObject::new()),
            make_future,
        )
    }

    /// Creates a task for `owner` running the handler registered for `request`'s tool
    /// ([`register`](Self::register)), whose context holds the call's arguments; with
    /// [`TaskOptions::redeliver`] the task stores its job (the tool, its arguments, the
    /// wire generation) so that another instance can run it again.
    ///
    /// # Errors
    /// `-32602` if no handler is registered for the tool; as [`spawn`](Self::spawn)
    /// otherwise.
    pub fn spawn_registered(
        &self,
        owner: &Owner,
        request_id: &rmcp::model::RequestId,
        request: &CallToolRequestParams,
        options: TaskOptions,
    ) -> Result<CreateTaskResult, ErrorData> {
        self.spawn_registered_in(&Origin::untraced(owner, request_id), request, options)
    }

    /// [`spawn_registered`](Self::spawn_registered) for a request in `origin`.
    fn spawn_registered_in(
        &self,
        origin: &Origin<'_>,
        request: &CallToolRequestParams,
        options: TaskOptions,
    ) -> Result<CreateTaskResult, ErrorData> {
        let handler = self.registered(request)?;
        let redelivery = options
            .max_attempts
            .map(|max| Redelivery::new(max, redeliver::job(request)));
        let run = Run::first(request.arguments.clone().unwrap_or_default());
        self.start(origin, options, redelivery, run, move |ctx| handler(ctx))
    }

    /// Creates the task (keeping the trace context of its request) and launches its
    /// operation, in a span that is the child of the request's.
    fn start<F>(
        &self,
        origin: &Origin<'_>,
        options: TaskOptions,
        redelivery: Option<Redelivery>,
        run: Run,
        make_future: F,
    ) -> Result<CreateTaskResult, ErrorData>
    where
        F: FnOnce(TaskContext<T>) -> TaskFuture,
    {
        let (owner, store) = (origin.owner, self.store());
        let mut request = TaskRequest::new(convert::request_id(origin.request_id), "tools/call")
            .with_ttl(options.ttl_ms)
            .with_poll_interval(options.poll_interval_ms)
            .with_trace_context(origin.trace.clone());
        if let Some(redelivery) = redelivery {
            request = request.with_redelivery(redelivery);
        }
        let (handle, mut task) = store.create(owner, request).map_err(convert::store_error)?;
        if let Some(message) = options.status_message {
            handle
                .set_status_message(Some(message))
                .map_err(convert::store_error)?;
            task = store
                .get(owner, &handle.id().to_string())
                .and_then(|task| {
                    mcp_tasks::Task::<Working>::try_from(task)
                        .map_err(|err| mcp_tasks::Error::Internal(err.to_string()))
                })
                .map_err(convert::store_error)?;
        }
        let created = convert::rewire(&mcp_tasks::ext::CreateTaskResult::new(&task))?;
        let run = Run {
            attempt: handle.attempt().unwrap_or(1),
            ..run
        };
        let attempt = origin
            .span
            .created(handle.id(), owner, Arc::new(store.clone()));
        let context = TaskContext::task(store.clone(), handle, run);
        self.claims.launch(
            &tokio::runtime::Handle::current(),
            context,
            make_future,
            attempt,
        );
        Ok(created)
    }

    /// Answers a `tools/call` the way the extension wants, deciding per call: when the
    /// request declared `io.modelcontextprotocol/tasks`, the operation becomes a task
    /// ([`spawn`](Self::spawn)) and the answer is `CallToolResponse::Task`; otherwise it
    /// runs inline and its result is the answer (its context's `request_input` then
    /// fails with `-32021`, and `cancelled()` follows the request's cancellation).
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn) (options that [`redeliver`](TaskOptions::redeliver) are
    /// refused: use [`call_registered`](Self::call_registered)); inline, the operation's
    /// error (`TaskExit::Cancelled` is reported as a `-32603` "request cancelled").
    pub async fn call_tool<F>(
        &self,
        context: &RequestContext<RoleServer>,
        options: TaskOptions,
        make_future: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(TaskContext<T>) -> TaskFuture,
    {
        if options.max_attempts.is_some() {
            return Err(closure_redelivered());
        }
        let span = telemetry::request(
            &self.telemetry,
            context,
            "tools/call",
            options.tool.as_deref(),
        );
        let answer = if declares_tasks(context) {
            let owner = self.owner(context);
            span.in_scope(|| {
                let origin = Origin::of(&owner, context, &span);
                self.spawn_in(&origin, options, make_future)
            })
            .map(CallToolResponse::Task)
        } else {
            let inline = TaskContext::inline(context.ct.clone(), JsonObject::new());
            inline_answer(span.in_scope_async(make_future(inline)).await)
        };
        span.end(telemetry::ending(&answer));
        answer
    }

    /// Answers a `tools/call` with the handler registered for its tool
    /// ([`register`](Self::register)), deciding per call as
    /// [`call_tool`](Self::call_tool) does: a task ([`spawn_registered`](Self::spawn_registered),
    /// stored with its job if `options` [`redeliver`](TaskOptions::redeliver)) when the
    /// request declared the extension, else inline (where redelivery does not apply).
    ///
    /// # Errors
    /// `-32602` if no handler is registered for the tool; as
    /// [`call_tool`](Self::call_tool) otherwise.
    pub async fn call_registered(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        options: TaskOptions,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = telemetry::request(&self.telemetry, context, "tools/call", Some(&request.name));
        let answer = if declares_tasks(context) {
            let owner = self.owner(context);
            span.in_scope(|| {
                let origin = Origin::of(&owner, context, &span);
                self.spawn_registered_in(&origin, request, options)
            })
            .map(CallToolResponse::Task)
        } else {
            match self.registered(request) {
                Ok(handler) => {
                    let arguments = request.arguments.clone().unwrap_or_default();
                    let inline = TaskContext::inline(context.ct.clone(), arguments);
                    inline_answer(span.in_scope_async(handler(inline)).await)
                }
                Err(error) => Err(error),
            }
        };
        span.end(telemetry::ending(&answer));
        answer
    }

    /// Registers `handler` as the operation of the tool `tool`, for
    /// [`call_registered`](Self::call_registered) and for the tasks of that tool this
    /// instance claims ([`run_claims`](Self::run_claims)); it replaces a handler
    /// registered before under the same name. Every clone of this manager shares the
    /// handlers.
    ///
    /// The handler is called once per run, with a [`TaskContext`] holding the call's
    /// [`arguments`](TaskContext::arguments), the [`attempt`](TaskContext::attempt) and
    /// the last [`checkpoint`](TaskContext::checkpoint). Every instance serving a
    /// redeliverable tool over one store must register the same handlers: a task
    /// claimed by an instance without its tool's handler fails with `-32603`.
    pub fn register(
        &self,
        tool: impl Into<String>,
        handler: impl Fn(TaskContext<T>) -> TaskFuture + Send + Sync + 'static,
    ) {
        self.claims.register(tool.into(), Arc::new(handler));
    }

    /// Starts this manager's claim loop (shared by its clones; a second call does
    /// nothing): on a thread of its own it claims the redeliverable tasks whose instance
    /// stopped ([`TaskStore::claim`]), sleeping in [`TaskStore::wait_for_claimable`]
    /// between claims, and runs each on the current tokio runtime with its tool's
    /// registered handler, as a fresh call's. Call it once the handlers are registered.
    /// The in-process [`TaskRegistry`] never has anything to claim.
    ///
    /// # Errors
    /// [`mcp_tasks::Error::InvalidConfig`] if no handler is registered (the loop would
    /// claim tasks it cannot run) or if called outside a tokio runtime;
    /// [`mcp_tasks::Error::Internal`] if the thread cannot be started.
    pub fn run_claims(&self) -> Result<(), mcp_tasks::Error> {
        if self.claims.tools().is_empty() {
            return Err(mcp_tasks::Error::InvalidConfig(
                "no handler is registered: the claim loop would claim tasks it cannot run"
                    .to_owned(),
            ));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            mcp_tasks::Error::InvalidConfig("run_claims needs a tokio runtime".to_owned())
        })?;
        if !self.claims.start() {
            return Ok(());
        }
        let (claims, store) = (Arc::clone(&self.claims), self.store().clone());
        let telemetry = self.telemetry.clone();
        std::thread::Builder::new()
            .name("mcp-tasks-claims".to_owned())
            .spawn(move || claims.claim_loop(store, runtime, &telemetry))
            .map(drop)
            .map_err(|err| {
                mcp_tasks::Error::Internal(format!("the claim loop cannot start: {err}"))
            })
    }

    /// For a graceful shutdown: stops claiming, and hands every redeliverable task
    /// running here over to another instance ([`TaskStore::hand_over`]) instead of
    /// letting it fail when the process ends: another instance claims it at once and runs
    /// its next attempt. Their operations here are stopped. Answers how many were handed
    /// over; the others (tasks that run once, a store that cannot hand over, such as the
    /// registry) run on and end as before. A redeliverable call arriving afterwards is
    /// handed over as soon as it is created. One store write per task.
    pub fn hand_over_running(&self) -> usize {
        self.claims.hand_over_running()
    }

    /// The handler registered for `request`'s tool.
    fn registered(
        &self,
        request: &CallToolRequestParams,
    ) -> Result<redeliver::Handler<T>, ErrorData> {
        self.claims.handler(&request.name).ok_or_else(|| {
            ErrorData::invalid_params(
                format!("no handler is registered for the tool `{}`", request.name),
                None,
            )
        })
    }

    /// Answers `tasks/get` for `context`'s owner ([`get_task_for`](Self::get_task_for)).
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub async fn get_task(
        &self,
        request: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        telemetry::traced(
            &self.telemetry,
            context,
            mcp_tasks::ext::methods::TASKS_GET,
            || self.get_task_for(&self.owner(context), &request),
        )
    }

    /// Answers `tasks/update` for `context`'s owner
    /// ([`update_task_for`](Self::update_task_for)).
    ///
    /// # Errors
    /// As [`update_task_for`](Self::update_task_for).
    pub async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        telemetry::traced(
            &self.telemetry,
            context,
            mcp_tasks::ext::methods::TASKS_UPDATE,
            || self.update_task_for(&self.owner(context), &request),
        )
    }

    /// Answers `tasks/cancel` for `context`'s owner
    /// ([`cancel_task_for`](Self::cancel_task_for)).
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        telemetry::traced(
            &self.telemetry,
            context,
            mcp_tasks::ext::methods::TASKS_CANCEL,
            || self.cancel_task_for(&self.owner(context), &request),
        )
    }

    /// `tasks/get` for `owner`: the task with the payload of its status (its input
    /// requests, its result or its error).
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub fn get_task_for(
        &self,
        owner: &Owner,
        request: &GetTaskParams,
    ) -> Result<GetTaskResult, ErrorData> {
        let answer = self.dispatch(owner, mcp_tasks::ext::methods::TASKS_GET, request)?;
        serde_json::from_value(answer).map_err(convert::internal)
    }

    /// `tasks/update` for `owner`: the answers reach the operation waiting in
    /// [`TaskContext::request_input`]; unknown or already answered keys are ignored.
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task, or (with
    /// [`with_answer_check`](Self::with_answer_check)) an answer that does not fit.
    pub fn update_task_for(
        &self,
        owner: &Owner,
        request: &UpdateTaskParams,
    ) -> Result<(), ErrorData> {
        if let Some(check) = &self.answer_check {
            self.check_answers(check, owner, request)?;
        }
        self.dispatch(owner, mcp_tasks::ext::methods::TASKS_UPDATE, request)
            .map(drop)
    }

    /// `tasks/cancel` for `owner`: cooperative, as the extension says; the operation
    /// sees it in [`TaskContext::cancelled`] and decides. Acknowledged for a task that
    /// is already terminal too.
    ///
    /// # Errors
    /// `-32602` for an unknown, expired or foreign task.
    pub fn cancel_task_for(
        &self,
        owner: &Owner,
        request: &CancelTaskParams,
    ) -> Result<(), ErrorData> {
        self.dispatch(owner, mcp_tasks::ext::methods::TASKS_CANCEL, request)
            .map(drop)
    }

    /// Refuses the update if an answer to an outstanding request does not fit it. An
    /// unknown or foreign task is left to the dispatch (`-32602` there).
    fn check_answers(
        &self,
        check: &AnswerCheck,
        owner: &Owner,
        request: &UpdateTaskParams,
    ) -> Result<(), ErrorData> {
        let Ok(task) = self.store().get(owner, &request.task_id) else {
            return Ok(());
        };
        let Some(outstanding) = task.input_requests() else {
            return Ok(());
        };
        for (key, answer) in &request.input_responses {
            if let Some(asked) = outstanding.get(key)
                && let Err(why) = check(asked, answer)
            {
                return Err(ErrorData::invalid_params(
                    format!(
                        "invalid params: the answer to `{key}` does not fit its request: {why}"
                    ),
                    None,
                ));
            }
        }
        Ok(())
    }

    /// One `tasks/*` request through the core's extension dialect. rmcp has already
    /// refused a request that did not declare the extension (`-32021`) before calling
    /// the handler method.
    fn dispatch(
        &self,
        owner: &Owner,
        method: &str,
        params: &impl serde::Serialize,
    ) -> Result<serde_json::Value, ErrorData> {
        let params = serde_json::to_value(params).map_err(convert::internal)?;
        self.dispatcher
            .dispatch(owner, method, Some(&params), true)
            .map_err(convert::error)
    }
}

/// Who asks for a task, in which request: the owner, the request's id, its span and the
/// trace context the task keeps.
struct Origin<'a> {
    owner: &'a Owner,
    request_id: &'a rmcp::model::RequestId,
    span: &'a RequestSpan,
    trace: Option<TraceContext>,
}

/// The span of a request made without one ([`TaskManager::spawn`] called directly).
static UNTRACED: std::sync::LazyLock<RequestSpan> = std::sync::LazyLock::new(RequestSpan::default);

impl<'a> Origin<'a> {
    /// A request whose context the manager has: its span's context is the task's.
    fn of(
        owner: &'a Owner,
        context: &'a RequestContext<RoleServer>,
        span: &'a RequestSpan,
    ) -> Self {
        Origin {
            owner,
            request_id: &context.id,
            span,
            trace: span.trace_context(Some(&context.meta.0.0)),
        }
    }

    /// A task made outside a request the manager sees.
    fn untraced(owner: &'a Owner, request_id: &'a rmcp::model::RequestId) -> Self {
        Origin {
            owner,
            request_id,
            span: &UNTRACED,
            trace: None,
        }
    }
}

/// The answer to a call run inline.
fn inline_answer(exit: Result<CallToolResult, TaskExit>) -> Result<CallToolResponse, ErrorData> {
    match exit {
        Ok(result) => Ok(CallToolResponse::Complete(complete(result))),
        Err(TaskExit::Error(error)) => Err(error),
        Err(TaskExit::Cancelled) => Err(ErrorData::internal_error("request cancelled", None)),
    }
}

/// The refusal of a redeliverable call given as a closure.
fn closure_redelivered() -> ErrorData {
    ErrorData::internal_error(
        "a redeliverable call must run a registered handler (another instance cannot run a \
         closure): register it with TaskManager::register and call TaskManager::call_registered",
        None,
    )
}

/// Whether `context`'s request declared the tasks extension (per request, or at
/// `initialize` for a legacy session), as rmcp reads it.
#[must_use]
pub fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// `result`, marked `resultType: "complete"`. rmcp sends the field to 2026-07-28 peers,
/// whose schema requires it, and strips it for older ones; but a `CallToolResult` read
/// from JSON that lacks the field (a result built as JSON, as the servers' shared tools
/// build theirs) has none, and would go out without it on 2026-07-28.
#[must_use]
pub fn complete(mut result: CallToolResult) -> CallToolResult {
    result.result_type.get_or_insert(ResultType::COMPLETE);
    result
}

/// A `CallToolResult` from its JSON, marked complete ([`complete`]).
///
/// # Errors
/// `-32603` when `result` is not a `CallToolResult`.
pub fn tool_result(result: JsonObject) -> Result<CallToolResult, ErrorData> {
    serde_json::from_value(serde_json::Value::Object(result))
        .map(complete)
        .map_err(convert::internal)
}

/// The answer to `initialize` of a server that declares the tasks extension in its
/// `get_info` (`enable_tasks`), without the extension: `initialize` opens a 2025-11-25 (or
/// older) session, and the extension belongs to 2026-07-28, where a client learns of it
/// from `server/discover`. rmcp's default `initialize` answers `get_info` as it is; a
/// server overrides it with this:
///
/// ```no_run
/// # use rmcp::{ErrorData, ServerHandler, model::*, service::{RequestContext, RoleServer}};
/// # struct Server;
/// impl ServerHandler for Server {
///     async fn initialize(
///         &self,
///         request: InitializeRequestParams,
///         context: RequestContext<RoleServer>,
///     ) -> Result<InitializeResult, ErrorData> {
///         context.peer.set_peer_info(request.clone());
///         self.negotiate_initialize(&request)
///             .map(mcp_tasks_rmcp::without_tasks_extension)
///     }
/// #   fn get_info(&self) -> ServerConfig { ServerConfig::default() }
/// }
/// ```
///
/// rmcp still gates `tasks/*` on `get_info`, so the extension keeps working for requests
/// that declare it.
#[must_use]
pub fn without_tasks_extension(mut result: InitializeResult) -> InitializeResult {
    if let Some(extensions) = &mut result.capabilities.extensions {
        extensions.remove(TASKS_EXTENSION_ID);
        if extensions.is_empty() {
            result.capabilities.extensions = None;
        }
    }
    result
}

/// A tool result with one text block, for operations that only report text.
#[must_use]
pub fn text_result(text: impl Into<String>, is_error: bool) -> CallToolResult {
    let content = vec![rmcp::model::ContentBlock::text(text.into())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}
