//! The transport-independent answerer of `tasks/*` requests, and the decision for
//! task-augmented `tools/call`.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::any::AnyTask;
use crate::error::Error;
use crate::jsonrpc::{JsonObject, JsonRpcError, RequestId};
use crate::outcome::Outcome;
use crate::protocol::capabilities::TaskSupport;
use crate::protocol::messages::{
    CreateTaskResult, GetTaskPayloadResult, ListTasksResult, TaskResult,
};
use crate::protocol::methods;
use crate::registry::TaskRegistry;
use crate::status::Working;
use crate::store::Owner;
use crate::store::{TaskHandle, TaskRequest, TaskStore};

/// The default number of tasks per `tasks/list` page.
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// The status message a task gets when `tasks/cancel` cancels it.
pub const CANCELLED_BY_REQUEST: &str = "The task was cancelled by request.";

/// Answers `tasks/get`, `tasks/list`, `tasks/cancel` and `tasks/result` for any transport,
/// from any [`TaskStore`] (the in-process [`TaskRegistry`] unless named).
///
/// Give it the method, the params and the caller's [`Owner`]; it returns the result JSON or
/// the JSON-RPC error object to send. `tasks/result` blocks the calling thread until the
/// task is terminal (or expires): call it on a thread that may block.
///
/// Params are read liberally: unknown members (a stray `task`, a related-task `_meta`,
/// which never overrides `taskId`) are ignored, and `tasks/list` may come without params.
/// Malformed params get `-32602` with a message naming the field.
#[derive(Debug, Clone)]
pub struct Dispatcher<T: TaskStore = TaskRegistry> {
    store: T,
    page_size: usize,
    result_timeout: Option<Duration>,
}

impl Dispatcher {
    /// Whether `method` is one of the four request methods this dispatcher answers.
    #[must_use]
    pub fn handles(method: &str) -> bool {
        matches!(
            method,
            methods::TASKS_GET
                | methods::TASKS_LIST
                | methods::TASKS_CANCEL
                | methods::TASKS_RESULT
        )
    }
}

impl<T: TaskStore> Dispatcher<T> {
    /// A dispatcher over `store`, with pages of [`DEFAULT_PAGE_SIZE`] tasks and no
    /// timeout on `tasks/result` besides the task's own expiry.
    #[must_use]
    pub fn new(store: T) -> Self {
        Self {
            store,
            page_size: DEFAULT_PAGE_SIZE,
            result_timeout: None,
        }
    }

    /// The same dispatcher with `page_size` tasks per `tasks/list` page.
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// The same dispatcher, bounding each `tasks/result` wait by `timeout` (answered with
    /// `-32603` when it passes; the requestor can poll `tasks/get` or ask again).
    #[must_use]
    pub fn with_result_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.result_timeout = timeout;
        self
    }

    /// The store this dispatcher answers from.
    #[must_use]
    pub fn store(&self) -> &T {
        &self.store
    }

    /// Answers one `tasks/*` request from `owner`.
    ///
    /// # Errors
    /// The JSON-RPC error object to send: `-32602` for an unknown, expired or foreign task,
    /// an invalid cursor, the cancellation of a terminal task, or malformed params; the
    /// stored error of a task that failed with one (`tasks/result`); `-32601` for a method
    /// that is not a task method.
    pub fn dispatch(
        &self,
        owner: &Owner,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Value, JsonRpcError> {
        match method {
            methods::TASKS_GET => {
                let task_id = task_id_param(params)?;
                let task = self.store.get(owner, task_id)?;
                to_json(&TaskResult::new(task))
            }
            methods::TASKS_LIST => {
                let cursor = cursor_param(params)?;
                let page = self.store.list(owner, cursor, self.page_size)?;
                to_json(&ListTasksResult {
                    tasks: page.tasks,
                    next_cursor: page.next_cursor,
                    meta: None,
                })
            }
            methods::TASKS_CANCEL => {
                let task_id = task_id_param(params)?;
                let task =
                    self.store
                        .cancel(owner, task_id, Some(CANCELLED_BY_REQUEST.to_owned()))?;
                to_json(&TaskResult::new(task))
            }
            methods::TASKS_RESULT => {
                let task_id = task_id_param(params)?;
                let task = self.store.wait(owner, task_id, self.result_timeout)?;
                payload(&task)
            }
            other => Err(Error::MethodNotFound {
                method: other.to_owned(),
            }
            .into()),
        }
    }

    /// `tasks/result` as a future: resolves once the task is terminal, with what
    /// [`dispatch`](Self::dispatch) answers for `tasks/result`, holding no thread while it
    /// waits ([`TaskStore::wait_async`]). The dispatcher's result timeout does not apply:
    /// bound it with the runtime's timeout; dropping it deregisters the wait.
    ///
    /// # Errors
    /// As `tasks/result` through [`dispatch`](Self::dispatch), without the timeout's.
    pub async fn result_async(
        &self,
        owner: &Owner,
        params: Option<&Value>,
    ) -> Result<Value, JsonRpcError> {
        let task_id = task_id_param(params)?;
        let task = self.store.wait_async(owner, task_id).await?;
        payload(&task)
    }

    /// Accepts a task-augmented request: creates its task for `owner` and returns the
    /// handle for the handler and the `CreateTaskResult` to send at once.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] if the store's limits are reached.
    pub fn accept(
        &self,
        owner: &Owner,
        request_id: RequestId,
        method: &str,
        ttl: Option<u64>,
    ) -> Result<(TaskHandle<Working, T>, CreateTaskResult), Error>
    where
        T: Clone,
    {
        let (handle, task) = self
            .store
            .create(owner, TaskRequest::new(request_id, method).with_ttl(ttl))?;
        Ok((handle, CreateTaskResult::new(task)))
    }
}

/// What `tasks/result` answers for a terminal task: its stored outcome. See the module
/// docs of [`protocol`](crate::protocol) for the cancelled case.
fn payload(task: &AnyTask) -> Result<Value, JsonRpcError> {
    match (task, task.outcome()) {
        (_, Some(Outcome::Result(result))) => {
            to_json(&GetTaskPayloadResult::new(result.clone(), task.id()))
        }
        (_, Some(Outcome::Error(error))) => Err(error.clone()),
        (AnyTask::Cancelled(_), None) => Err(Error::TaskCancelled {
            task_id: task.id().to_string(),
        }
        .into()),
        (other, None) => {
            Err(Error::Internal(format!("{other} has no stored outcome to return")).into())
        }
    }
}

fn to_json(value: &impl Serialize) -> Result<Value, JsonRpcError> {
    serde_json::to_value(value).map_err(|err| Error::Internal(err.to_string()).into())
}

fn task_id_param(params: Option<&Value>) -> Result<&str, JsonRpcError> {
    crate::params::task_id(params).map_err(JsonRpcError::from)
}

fn cursor_param(params: Option<&Value>) -> Result<Option<&str>, JsonRpcError> {
    crate::params::optional_string(params, "cursor").map_err(JsonRpcError::from)
}

/// How to run an incoming `tools/call` ([`augmentation`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Augmentation {
    /// Run it as a task: create the task (with this requested TTL) and answer with a
    /// `CreateTaskResult`.
    Task {
        /// The `ttl` of the `task` param, if any.
        ttl: Option<u64>,
    },
    /// Run it as a normal request and answer with its result (any `task` param ignored).
    Normal,
    /// Refuse it with this error (`-32601` for a task-support mismatch).
    Refuse(Error),
}

/// Decides how to run a `tools/call` whose params are `params`, for a tool with
/// `task_support`, on a server that did (or did not) declare `tasks.requests.tools.call`.
///
/// - Capability not declared: [`Augmentation::Normal`], ignoring `task` (the spec's MUST).
/// - `forbidden` with `task`: refused, `-32601`. Without: normal.
/// - `optional`: a task if `task` is present, normal otherwise.
/// - `required` without `task`: refused, `-32601`. With: a task.
///
/// A `task` param that is not an object (or `null`), or whose `ttl` is not a non-negative
/// integer, is refused with `-32602`.
#[must_use]
pub fn augmentation(
    task_support: TaskSupport,
    tools_call_declared: bool,
    params: &JsonObject,
) -> Augmentation {
    if !tools_call_declared {
        return Augmentation::Normal;
    }
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let ttl = match params.get("task") {
        None | Some(Value::Null) => None,
        Some(Value::Object(task)) => match task.get("ttl") {
            None | Some(Value::Null) => Some(None),
            Some(ttl) => match crate::millis::from_value(ttl) {
                Some(ttl) => Some(Some(ttl)),
                None => {
                    return Augmentation::Refuse(Error::invalid_params(
                        "`task.ttl` must be a non-negative integer number of milliseconds",
                    ));
                }
            },
        },
        Some(_) => {
            return Augmentation::Refuse(Error::invalid_params("`task` must be an object"));
        }
    };
    match (task_support, ttl) {
        (TaskSupport::Forbidden, Some(_)) => Augmentation::Refuse(Error::TaskNotSupported { tool }),
        (TaskSupport::Required, None) => Augmentation::Refuse(Error::TaskRequired { tool }),
        (TaskSupport::Optional | TaskSupport::Required, Some(ttl)) => Augmentation::Task { ttl },
        (TaskSupport::Forbidden | TaskSupport::Optional, None) => Augmentation::Normal,
    }
}
