//! The example server both rmcp examples serve: the tools of `servers/` (`sleep`,
//! `fail`, `crash`, `confirm`, `echo`), parsed and described by `mcp_tasks_servers::tools`
//! and run here as async operations with a `TaskContext` (the `servers/` handlers block a
//! thread each; these do not).
//!
//! `sleep` is redeliverable (three attempts): its handler is registered by name, and it
//! checkpoints the time it has slept, so that over a shared store another instance
//! finishes the sleep of an instance that died, sleeping only the rest.

mod fixtures;
mod talk;

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{ClaimBackoff, LeasePolicy, TaskRegistry, TaskStore};
use mcp_tasks_rmcp::{
    TaskContext, TaskExit, TaskManager, TaskOptions, declares_tasks, text_result,
};
use mcp_tasks_servers::peer::LogLevel;
use mcp_tasks_servers::shared::{StoreArgs, StoreSettings};
use mcp_tasks_servers::tools::{self, CONFORMANCE_FLAG, Call, Catalog};
use mcp_tasks_servers::{input_fixtures, mrtr};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult, InputRequest,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

/// The store the examples run on: picked at run time.
pub type Store = Arc<dyn TaskStore>;

/// How often a client is asked to poll a task (the example's tasks are short).
const POLL_INTERVAL_MS: u64 = 100;

/// The most runs of a `sleep`: the first, and two redeliveries.
const SLEEP_ATTEMPTS: u32 = 3;

/// How often `sleep` saves the time it has slept (one store write each).
const SLEEP_CHECKPOINT_MS: u64 = 200;

/// The example server: its tools, and a task manager over the chosen store.
#[derive(Clone)]
pub struct ExampleServer {
    pub tasks: TaskManager<Store>,
    /// The tools served.
    pub catalog: Catalog,
    /// The issuer and checker of 2026-07-28 `requestState` (SEP-2322 input rounds), keyed
    /// by `MCP_TASKS_REQUEST_STATE_KEY` or at random.
    pub states: Arc<mrtr::States>,
    /// The log level the session's client set with `logging/setLevel` (2025-11-25).
    log_level: talk::LogLevelCell,
}

impl ExampleServer {
    /// A server keeping its tasks in `store`, serving `catalog`'s tools.
    /// Call it on the tokio runtime: it starts the claim loop.
    pub fn new(store: Store, catalog: Catalog) -> Self {
        // A `tasks/update` answer that does not fit its form is refused (-32602) and the
        // task keeps waiting.
        // Spans and metrics when `main` installed an exporter (OTEL_EXPORTER_OTLP_ENDPOINT).
        let telemetry = mcp_tasks_servers::telemetry::global();
        let store = mcp_tasks_servers::telemetry::observe_store(&telemetry, store);
        let tasks = TaskManager::new(store)
            .with_answer_check(tools::check_answer)
            .with_telemetry(telemetry);
        // The redeliverable tool: every instance registers it, and claims the sleeps of
        // the instances that stopped.
        tasks.register("sleep", move |ctx| Box::pin(sleep(catalog, ctx)));
        if let Err(err) = tasks.run_claims() {
            eprintln!("the claim loop did not start: {err}");
        }
        let states = mrtr::states_from_env().unwrap_or_else(|err| {
            eprintln!("{err}; requestState is keyed at random instead");
            mrtr::random_states()
        });
        Self {
            tasks,
            catalog,
            states: Arc::new(states),
            log_level: talk::LogLevelCell::default(),
        }
    }

    /// The handler of a new session: the same tools and tasks, and a log level of its own.
    #[allow(dead_code, reason = "the stdio example has one session")]
    pub fn for_session(&self) -> Self {
        Self {
            log_level: talk::LogLevelCell::default(),
            ..self.clone()
        }
    }

    /// The SEP-2322 input round of a request with `params` (rmcp's typed params as JSON):
    /// the client's capabilities go into its `_meta` as the servers' round reads them, and
    /// what the round asks comes back as rmcp's `InputRequiredResult`.
    fn round<R: serde::de::DeserializeOwned>(
        &self,
        context: &RequestContext<RoleServer>,
        method: &str,
        params: &impl serde::Serialize,
        as_task: bool,
        gather: impl FnOnce(
            &mrtr::Before<'_>,
        ) -> Result<Option<mcp_tasks::ext::Ask>, mcp_tasks::JsonRpcError>,
    ) -> Result<Option<R>, ErrorData> {
        let internal = |err: serde_json::Error| ErrorData::internal_error(err.to_string(), None);
        let mut params = serde_json::to_value(params).map_err(internal)?;
        // rmcp keeps the request's `_meta` in the context; the round reads the client's
        // capabilities from there (or from `initialize`, for a session).
        params["_meta"] = json!({
            mcp_tasks::ext::META_CLIENT_CAPABILITIES: context.client_capabilities(),
        });
        let owner = self.tasks.owner(context);
        match mrtr::round_trip(&self.states, &owner, method, Some(&params), as_task, gather) {
            Ok(Some(asked)) => serde_json::from_value(asked).map(Some).map_err(internal),
            Ok(None) => Ok(None),
            Err(err) => Err(error(err)),
        }
    }
}

/// What the command line sets of a shared store's leases: how soon a task whose instance
/// died is seen (`--lease-ms`, `--lease-renew-ms`) and how long before another instance
/// claims it (`--claim-backoff-ms`).
#[derive(Debug, Default, Clone, Copy)]
struct LeaseArgs {
    lease: Option<Duration>,
    renew: Option<Duration>,
    claim_backoff: Option<Duration>,
}

impl LeaseArgs {
    /// A shared store's settings: the environment's knobs (as the project's servers read
    /// them), the command line's over them.
    fn settings(self) -> Result<StoreSettings, String> {
        let mut settings = StoreSettings::from_env()?;
        if let Some(lease) = self.lease {
            let policy = LeasePolicy::fail_after(lease);
            settings.leases = Some(match self.renew {
                Some(renew) => policy.renewed_every(renew),
                None => policy,
            });
        }
        if let Some(backoff) = self.claim_backoff {
            settings.claim_backoff = Some(ClaimBackoff::new(backoff, backoff * 8));
        }
        Ok(settings)
    }
}

fn millis(flag: &str, value: Option<String>) -> Result<Option<Duration>, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a number of milliseconds"))?;
    value
        .parse()
        .map(|ms| Some(Duration::from_millis(ms)))
        .map_err(|err| format!("{flag} {value}: {err}"))
}

/// What the command line asks of every example: the store (`--redis URL` or
/// `--postgres URL`, else `MCP_TASKS_REDIS_URL` or `MCP_TASKS_POSTGRES_URL`, read as the
/// project's servers read them (`mcp_tasks_servers::shared`, features `redis` and
/// `postgres`), with `--lease-ms MS`, `--lease-renew-ms MS` and `--claim-backoff-ms MS` for
/// its leases; else a fresh in-process registry; either with the limits on stored tasks of
/// `MCP_TASKS_MAX_TASKS_PER_OWNER` and `MCP_TASKS_MAX_TASKS`) and the tools (the examples; with
/// `--conformance` or `MCP_TASKS_CONFORMANCE=1` the conformance suite's fixtures too).
/// Other arguments are returned.
pub fn from_args() -> Result<(Store, Catalog, Vec<String>), String> {
    let mut rest = Vec::new();
    let mut store = StoreArgs::default();
    let mut leases = LeaseArgs::default();
    let mut conformance = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if store.read(&arg, &mut args)? {
            continue;
        }
        match arg.as_str() {
            "--lease-ms" => leases.lease = millis(&arg, args.next())?,
            "--lease-renew-ms" => leases.renew = millis(&arg, args.next())?,
            "--claim-backoff-ms" => leases.claim_backoff = millis(&arg, args.next())?,
            _ if arg == CONFORMANCE_FLAG => conformance = true,
            _ => rest.push(arg),
        }
    }
    let catalog = Catalog::chosen(conformance);
    let settings = leases.settings()?;
    match store.choose()? {
        None => {
            let registry = TaskRegistry::builder()
                .limits(settings.limits_or_default())
                .build()
                .map_err(|err| format!("cannot build the task registry: {err}"))?;
            Ok((Arc::new(registry), catalog, rest))
        }
        Some(shared) => Ok((shared.open(&settings)?, catalog, rest)),
    }
}

impl ServerHandler for ExampleServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        if self.catalog.logs() {
            capabilities.logging = Some(rmcp::model::JsonObject::new());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "mcp-tasks-rmcp-example",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.catalog.instructions())
    }

    /// `initialize` opens a 2025-11-25 session: the tasks extension, which belongs to
    /// 2026-07-28 (`server/discover`), is not declared there.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
            .map(mcp_tasks_rmcp::without_tasks_extension)
    }

    /// `logging/setLevel` (2025-11-25, with the conformance fixtures, whose
    /// `test_tool_with_logging` logs): the level holds for the session. 2026-07-28 has no
    /// such method (a request asks for its level in `_meta`).
    #[expect(
        deprecated,
        reason = "logging is 2025-11-25's; SEP-2577 deprecates it for 2026-07-28"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.catalog.logs() || talk::is_2026(&context) {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        let request = serde_json::to_value(&request)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let level = LogLevel::requested(Some(&request)).map_err(error)?;
        talk::write(&self.log_level, level);
        Ok(())
    }

    /// `server/discover` (2026-07-28): as `mcp_http`, the example declares `prompts` and
    /// `resources` there and answers their lists empty (below), so that a 2026-07-28
    /// client may list and cache them; `initialize` (2025-11-25) declares neither.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        info.capabilities.prompts = Some(Default::default());
        info.capabilities.resources = Some(Default::default());
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    // On 2026-07-28 the example answers the lists it has nothing for with empty, cacheable
    // lists (rmcp adds the caching hints), as `mcp_http` does; on 2025-11-25 they stay
    // unknown methods (-32601), as there.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        // With the conformance flag, the prompt of `input-required-result-non-tool-request`.
        if !self.catalog.conformance() {
            return empty_on_2026::<rmcp::model::ListPromptsRequestMethod, _>(&context);
        }
        let prompts = serde_json::from_value(Value::Array(input_fixtures::prompts()))
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        empty_on_2026::<rmcp::model::ListResourcesRequestMethod, _>(&context)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        empty_on_2026::<rmcp::model::ListResourceTemplatesRequestMethod, _>(&context)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = serde_json::from_value(self.catalog.list())
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let mut call = self
            .catalog
            .parse(&request.name, &arguments)
            .map_err(error)?;
        let support = self.catalog.task_support(call.name());
        let declared = declares_tasks(&context);
        // The tools that only run as tasks need the extension, unless they can ask for
        // their input in rounds and run at once (`confirm`), which 2026-07-28 has.
        let rounds = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if support == Some(TaskSupport::Required) && !declared && !(rounds && call.asks_inline()) {
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        // A call may ask for input first (SEP-2322): `confirm` without a task, the
        // fixtures that need a name, the `input-required-result-*` fixtures.
        let as_task = declared && support != Some(TaskSupport::Forbidden);
        if let Some(asked) = self.round(&context, "tools/call", &request, as_task, |before| {
            call.gather(before)
        })? {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        // A fixture that reports or asks while it runs inline talks through rmcp's peer; as
        // a task it would report nothing (no progress or log notifications on tasks).
        if call.talks() && !as_task {
            return talk::run(call, &context, self.log_level.clone())
                .await
                .map(CallToolResponse::Complete);
        }
        // `echo`, `greet`, the diagnostic fixtures and an answered `confirm` without the
        // extension never run as tasks.
        if support == Some(TaskSupport::Forbidden) || !as_task && call.asks_inline() {
            // Marked complete: 2026-07-28 requires `resultType` (rmcp clears it for older
            // sessions).
            return run(call, None)
                .await
                .map(|result| CallToolResponse::Complete(mcp_tasks_rmcp::complete(result)))
                .map_err(exit);
        }
        let options = TaskOptions::new()
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .for_tool(call.name());
        if let Call::Sleep(_) = call {
            // Its registered handler runs it, here or, redelivered, on another instance.
            let options = options.redeliver(SLEEP_ATTEMPTS);
            return self
                .tasks
                .call_registered(&request, &context, options)
                .await;
        }
        self.tasks
            .call_tool(&context, options, move |ctx| Box::pin(run(call, Some(ctx))))
            .await
    }

    /// The conformance prompt, which asks for its context in an input round first.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if !(self.catalog.conformance() && request.name == input_fixtures::PROMPT) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt `{}`",
                    request.name.chars().take(80).collect::<String>()
                ),
                None,
            ));
        }
        let mut got = None;
        let asked = self.round(&context, "prompts/get", &request, false, |before| {
            Ok(match input_fixtures::prompt(before)? {
                Ok(result) => {
                    got = Some(result);
                    None
                }
                Err(ask) => Some(ask),
            })
        })?;
        if let Some(asked) = asked {
            return Ok(GetPromptResponse::InputRequired(asked));
        }
        let result =
            got.ok_or_else(|| ErrorData::internal_error("the prompt gave nothing", None))?;
        let mut result: rmcp::model::GetPromptResult = serde_json::from_value(result)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        // 2026-07-28 requires `resultType` (rmcp clears it for older sessions).
        result
            .result_type
            .get_or_insert(rmcp::model::ResultType::COMPLETE);
        Ok(GetPromptResponse::Complete(result))
    }

    mcp_tasks_rmcp::task_handlers!(tasks);
}

/// `sleep`'s registered handler, for every run of a call: it reads the arguments from
/// the context, resumes from the time the last attempt checkpointed, and checkpoints
/// every [`SLEEP_CHECKPOINT_MS`]; cancellable throughout.
async fn sleep(catalog: Catalog, ctx: TaskContext<Store>) -> Result<CallToolResult, TaskExit> {
    let Call::Sleep(ms) = catalog.parse("sleep", ctx.arguments()).map_err(error)? else {
        return Err(TaskExit::Error(ErrorData::internal_error(
            "`sleep` parsed as another tool",
            None,
        )));
    };
    let mut slept = ctx
        .checkpoint()
        .and_then(|checkpoint| checkpoint.get("sleptMs"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(ms);
    while slept < ms {
        let step = (ms - slept).min(SLEEP_CHECKPOINT_MS);
        tokio::select! {
            () = ctx.cancelled() => return Err(TaskExit::Cancelled),
            () = tokio::time::sleep(Duration::from_millis(step)) => {}
        }
        slept += step;
        if slept < ms {
            ctx.save_checkpoint(json!({"sleptMs": slept}))?;
        }
    }
    let text = match ctx.attempt() {
        1 => format!("slept {ms} ms"),
        attempt => format!("slept {ms} ms, finished by attempt {attempt}"),
    };
    Ok(text_result(text, false))
}

/// A call's operation (`sleep` runs through its registered handler instead).
async fn run(call: Call, ctx: Option<TaskContext<Store>>) -> Result<CallToolResult, TaskExit> {
    match call {
        Call::Sleep(_) => Err(TaskExit::Error(ErrorData::internal_error(
            "`sleep` runs through its registered handler",
            None,
        ))),
        Call::Fail => Ok(text_result("the fail tool always fails", true)),
        Call::Crash => Err(TaskExit::Error(ErrorData::internal_error(
            "the crash tool always crashes",
            None,
        ))),
        Call::Echo(text) => Ok(text_result(text, false)),
        Call::Fixture(fixture) => fixtures::run(fixture, ctx).await,
        // Answered in input rounds: the shared result as rmcp's type.
        call @ (Call::Confirmed { .. } | Call::Input(_)) => call
            .run()
            .map_err(error)
            .and_then(|result| {
                serde_json::from_value(Value::Object(result))
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))
            })
            .map_err(TaskExit::Error),
        Call::Confirm(question) => match ctx {
            Some(ctx) => confirm(&ctx, &question).await,
            // Only `echo` runs without a context; `confirm` inline gets a context whose
            // `request_input` answers -32021.
            None => Err(TaskExit::Error(
                ErrorData::missing_required_client_capability(
                    rmcp::model::ClientCapabilities::builder()
                        .enable_tasks()
                        .build(),
                ),
            )),
        },
    }
}

/// Asks the user (one form-mode elicitation) and reports the answer; an answer that does
/// not match the form fails the task with `-32602`.
async fn confirm(ctx: &TaskContext<Store>, question: &str) -> Result<CallToolResult, TaskExit> {
    let wire = json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": question, "requestedSchema": tools::confirm_schema()},
    });
    let checked: mcp_tasks::InputRequest = serde_json::from_value(wire.clone())
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    let request: InputRequest = serde_json::from_value(wire)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    ctx.set_status_message("waiting for the user's answer");
    let answer = ctx.request_input("confirm", request).await?;
    if let Err(why) = tools::check_answer(&checked, &answer) {
        return Err(TaskExit::Error(ErrorData::invalid_params(
            format!(
                "invalid params: the answer to `confirm` does not match the requested schema: {why}"
            ),
            None,
        )));
    }
    let text = match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let said = answer
                .pointer("/content/answer")
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!("the user answered: {said}")
        }
        Some("decline") => "the user declined".to_owned(),
        _ => "the user cancelled".to_owned(),
    };
    Ok(text_result(text, false))
}

/// An empty list on 2026-07-28; `-32601` (method `M`) on 2025-11-25.
fn empty_on_2026<M: rmcp::model::ConstString, R: Default>(
    context: &RequestContext<RoleServer>,
) -> Result<R, ErrorData> {
    if talk::is_2026(context) {
        Ok(R::default())
    } else {
        Err(ErrorData::method_not_found::<M>())
    }
}

fn error(error: mcp_tasks::JsonRpcError) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode(i32::try_from(error.code).unwrap_or(-32603)),
        error.message,
        error.data,
    )
}

fn exit(exit: TaskExit) -> ErrorData {
    match exit {
        TaskExit::Error(error) => error,
        TaskExit::Cancelled => ErrorData::internal_error("request cancelled", None),
    }
}
