//! The example server both rmcp examples serve: the tools of `servers/` (`sleep`,
//! `fail`, `crash`, `confirm`, `echo`), parsed and described by `mcp_tasks_servers::tools`
//! and run here as async operations with a `TaskContext` (the `servers/` handlers block a
//! thread each; these do not).
//!
//! `sleep` is redeliverable (three attempts): its handler is registered by name, and it
//! checkpoints the time it has slept, so that over a shared store another instance
//! finishes the sleep of an instance that died, sleeping only the rest.

mod fixtures;

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::protocol::TaskSupport;
use mcp_tasks::{TaskRegistry, TaskStore};
use mcp_tasks_rmcp::{
    TaskContext, TaskExit, TaskManager, TaskOptions, declares_tasks, text_result,
};
use mcp_tasks_servers::tools::{self, CONFORMANCE_FLAG, Call, Catalog};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InputRequest,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
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
        Self { tasks, catalog }
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

fn millis(flag: &str, value: Option<String>) -> Result<Option<Duration>, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a number of milliseconds"))?;
    value
        .parse()
        .map(|ms| Some(Duration::from_millis(ms)))
        .map_err(|err| format!("{flag} {value}: {err}"))
}

/// What the command line asks of every example: the store (`--redis URL` for
/// `RedisTaskStore`, feature `redis`, with `--lease-ms MS`, `--lease-renew-ms MS` and
/// `--claim-backoff-ms MS` for its leases; else a fresh in-process registry) and the tools
/// (the examples; with `--conformance` or `MCP_TASKS_CONFORMANCE=1` the conformance
/// suite's fixtures too). Other arguments are returned.
pub fn from_args() -> Result<(Store, Catalog, Vec<String>), String> {
    let mut rest = Vec::new();
    let mut redis = None;
    let mut leases = LeaseArgs::default();
    let mut conformance = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--redis" => redis = Some(args.next().ok_or("--redis needs a url")?),
            "--lease-ms" => leases.lease = millis(&arg, args.next())?,
            "--lease-renew-ms" => leases.renew = millis(&arg, args.next())?,
            "--claim-backoff-ms" => leases.claim_backoff = millis(&arg, args.next())?,
            _ if arg == CONFORMANCE_FLAG => conformance = true,
            _ => rest.push(arg),
        }
    }
    let catalog = Catalog::chosen(conformance);
    match redis {
        None => Ok((Arc::new(TaskRegistry::new()), catalog, rest)),
        Some(url) => redis_store(&url, leases).map(|store| (store, catalog, rest)),
    }
}

#[cfg(feature = "redis")]
fn redis_store(url: &str, leases: LeaseArgs) -> Result<Store, String> {
    let mut builder = mcp_tasks_redis::RedisTaskStore::builder(url);
    if let Some(lease) = leases.lease {
        let mut policy = mcp_tasks::LeasePolicy::fail_after(lease);
        if let Some(renew) = leases.renew {
            policy = policy.renewed_every(renew);
        }
        builder = builder.lease_policy(policy);
    }
    if let Some(backoff) = leases.claim_backoff {
        builder = builder.claim_backoff(mcp_tasks::ClaimBackoff::new(backoff, backoff * 8));
    }
    builder
        .build()
        .map(|store| Arc::new(store) as Store)
        .map_err(|err| format!("cannot open redis at {url}: {err}"))
}

#[cfg(not(feature = "redis"))]
fn redis_store(_url: &str, _leases: LeaseArgs) -> Result<Store, String> {
    Err("--redis needs the `redis` feature: build with --features redis".into())
}

impl ServerHandler for ExampleServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcp-tasks-rmcp-example",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(self.catalog.instructions())
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
        // The tools that only run as tasks need the extension.
        if support == Some(TaskSupport::Required) && !declares_tasks(&context) {
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ));
        }
        if let Call::Fixture(fixture) = &mut call {
            // `test_tool_with_task` and `test_streaming_elicitation` ask for the name in
            // the call itself first (SEP-2322); `test_missing_capability` checks the
            // declared capabilities.
            let mut params = serde_json::to_value(&request)
                .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
            // rmcp keeps the request's `_meta` in the context; the fixture reads the
            // client's capabilities from there (or from `initialize`, for a session).
            params["_meta"] = json!({
                mcp_tasks::ext::META_CLIENT_CAPABILITIES: context.client_capabilities(),
            });
            if let Some(asked) = fixture.gather_input(Some(&params)).map_err(error)? {
                let asked = serde_json::from_value(asked)
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
                return Ok(CallToolResponse::InputRequired(asked));
            }
        }
        // `echo`, `greet` and the diagnostic fixtures never run as tasks.
        if support == Some(TaskSupport::Forbidden) {
            return run(call, None)
                .await
                .map(CallToolResponse::Complete)
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
