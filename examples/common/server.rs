//! The MCP request routing shared by the example servers, over any transport.

use std::sync::Arc;

use mcp_tasks::protocol::{
    self, Augmentation, Dispatcher, PROTOCOL_VERSION, ServerTasksCapability, augmentation,
};
use mcp_tasks::{
    Error, JsonObject, JsonRpcError, Owner, RequestId, TaskRegistry, TtlPolicy, jsonrpc,
};
use serde_json::{Value, json};

use super::tools::{self, Call, InputChannel};

/// A request's answer: now, or from work the transport runs on a thread that may block.
pub enum Reply {
    /// The answer is ready.
    Now(Result<Value, JsonRpcError>),
    /// Run this (it may block) and send what it returns.
    Later(Box<dyn FnOnce() -> Result<Value, JsonRpcError> + Send>),
    /// Send this answer, then run the work in the background (a task's handler: it must
    /// not change the task before the requestor has the `CreateTaskResult`).
    ThenRun(Value, Box<dyn FnOnce() + Send>),
}

/// The example server: tools, tasks, and the 2025-11-25 handshake.
pub struct Server {
    dispatcher: Dispatcher,
    capabilities: ServerTasksCapability,
}

impl Server {
    /// A server whose `tasks/list` pages hold `MCP_TASKS_PAGE_SIZE` tasks (default 50);
    /// tasks live 60 s by default and at most an hour, and suggest polling every 100 ms.
    pub fn from_env() -> Result<Self, Error> {
        let page_size = std::env::var("MCP_TASKS_PAGE_SIZE")
            .ok()
            .and_then(|size| size.parse().ok())
            .unwrap_or(protocol::DEFAULT_PAGE_SIZE);
        let registry = TaskRegistry::builder()
            .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(3_600_000))
            .poll_interval(Some(100))
            .build()?;
        Ok(Self {
            dispatcher: Dispatcher::new(registry).with_page_size(page_size),
            capabilities: ServerTasksCapability::all(),
        })
    }

    /// The registry behind the server (to subscribe to status changes).
    pub fn registry(&self) -> &TaskRegistry {
        self.dispatcher.registry()
    }

    /// Answers one request from `owner`. `input` reaches the requestor for elicitation.
    pub fn request(
        &self,
        owner: &Owner,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        input: Arc<dyn InputChannel>,
    ) -> Reply {
        match method {
            "initialize" => Reply::Now(Ok(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}, "tasks": self.capabilities},
                "serverInfo": {"name": "mcp-tasks-example", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Tools: sleep, fail, confirm (task only), echo (never a task)."
            }))),
            "ping" => Reply::Now(Ok(json!({}))),
            "tools/list" => Reply::Now(Ok(json!({"tools": tools::list()}))),
            "tools/call" => self.call_tool(owner, id, params, input),
            method if Dispatcher::handles(method) => {
                if method == protocol::methods::TASKS_RESULT {
                    let dispatcher = self.dispatcher.clone();
                    let owner = owner.clone();
                    Reply::Later(Box::new(move || {
                        dispatcher.dispatch(
                            &owner,
                            protocol::methods::TASKS_RESULT,
                            params.as_ref(),
                        )
                    }))
                } else {
                    Reply::Now(self.dispatcher.dispatch(owner, method, params.as_ref()))
                }
            }
            other => Reply::Now(Err(Error::MethodNotFound {
                method: other.to_owned(),
            }
            .to_jsonrpc())),
        }
    }

    fn call_tool(
        &self,
        owner: &Owner,
        id: &RequestId,
        params: Option<Value>,
        input: Arc<dyn InputChannel>,
    ) -> Reply {
        let params = match params {
            Some(Value::Object(params)) => params,
            _ => return Reply::Now(Err(invalid("tools/call needs an object `params`"))),
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Reply::Now(Err(invalid("missing string `name`")));
        };
        let Some(support) = tools::task_support(name) else {
            return Reply::Now(Err(invalid(&format!("unknown tool `{name}`"))));
        };
        let arguments = match params.get("arguments") {
            Some(Value::Object(arguments)) => arguments.clone(),
            None | Some(Value::Null) => JsonObject::new(),
            Some(_) => return Reply::Now(Err(invalid("`arguments` must be an object"))),
        };
        let call = match Call::parse(name, &arguments) {
            Ok(call) => call,
            Err(error) => return Reply::Now(Err(error)),
        };
        match augmentation(support, self.capabilities.tools_call(), &params) {
            Augmentation::Refuse(error) => Reply::Now(Err(error.to_jsonrpc())),
            Augmentation::Normal => Reply::Later(Box::new(move || call.run().map(Value::Object))),
            Augmentation::Task { ttl } => {
                match self.dispatcher.accept(owner, id.clone(), "tools/call", ttl) {
                    Ok((handle, created)) => match serde_json::to_value(created) {
                        Ok(created) => Reply::ThenRun(
                            created,
                            Box::new(move || call.run_task(handle, input.as_ref())),
                        ),
                        // Dropping the handle fails the task: nobody can wait on it forever.
                        Err(err) => Reply::Now(Err(Error::Internal(err.to_string()).to_jsonrpc())),
                    },
                    Err(error) => Reply::Now(Err(error.to_jsonrpc())),
                }
            }
        }
    }
}

fn invalid(message: &str) -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INVALID_PARAMS,
        format!("invalid params: {message}"),
    )
}
