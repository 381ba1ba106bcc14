//! The extension's `tasks/*` answerer.

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::ext::messages::{Acknowledgement, GetTaskResult, missing_capability};
use crate::ext::methods;
use crate::jsonrpc::JsonRpcError;
use crate::registry::TaskRegistry;
use crate::store::Owner;
use crate::store::TaskStore;

/// Answers the extension's `tasks/get`, `tasks/update` and `tasks/cancel` from a
/// [`TaskStore`] (the in-process [`TaskRegistry`] unless named),
/// for any transport; `tasks/result` and `tasks/list`, which the extension removed, get
/// `-32601`.
///
/// Tasks are the store's: one created through 2025-11-25 is read and cancelled here in
/// this dialect's shape, and the other way round (the SEP's SHOULD).
#[derive(Debug, Clone)]
pub struct ExtDispatcher<T: TaskStore = TaskRegistry> {
    store: T,
}

impl ExtDispatcher {
    /// Whether `method` is a task method of this dialect (served or removed).
    #[must_use]
    pub fn handles(method: &str) -> bool {
        matches!(
            method,
            methods::TASKS_GET
                | methods::TASKS_UPDATE
                | methods::TASKS_CANCEL
                | methods::TASKS_RESULT
                | methods::TASKS_LIST
        )
    }
}

impl<T: TaskStore> ExtDispatcher<T> {
    /// A dispatcher over `store`.
    #[must_use]
    pub fn new(store: T) -> Self {
        Self { store }
    }

    /// The store this dispatcher answers from.
    #[must_use]
    pub fn store(&self) -> &T {
        &self.store
    }

    /// Answers one request from `owner`. `declared` says whether this request's `_meta`
    /// declares the extension ([`declares_extension`](super::declares_extension)).
    ///
    /// # Errors
    /// The JSON-RPC error object to send: `-32021` if the request does not declare the
    /// extension; `-32602` for an unknown, expired or foreign task or malformed params;
    /// `-32601` for `tasks/result`, `tasks/list` and any other method.
    pub fn dispatch(
        &self,
        owner: &Owner,
        method: &str,
        params: Option<&Value>,
        declared: bool,
    ) -> Result<Value, JsonRpcError> {
        let served = matches!(
            method,
            methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL
        );
        if served && !declared {
            return Err(missing_capability(format!(
                "{method} needs the tasks extension: declare \
                 io.modelcontextprotocol/tasks in the request's client capabilities"
            )));
        }
        match method {
            methods::TASKS_GET => {
                let task_id = crate::params::task_id(params)?;
                let task = self.store.get(owner, task_id)?;
                to_json(&GetTaskResult::new(&task))
            }
            methods::TASKS_UPDATE => {
                let task_id = crate::params::task_id(params)?;
                let responses = crate::params::required_object(params, "inputResponses")?;
                self.store.respond(owner, task_id, responses.clone())?;
                to_json(&Acknowledgement::default())
            }
            methods::TASKS_CANCEL => {
                let task_id = crate::params::task_id(params)?;
                self.store.request_cancel(owner, task_id)?;
                to_json(&Acknowledgement::default())
            }
            methods::TASKS_RESULT | methods::TASKS_LIST => Err(JsonRpcError::new(
                crate::jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "method not found: the tasks extension removed `{method}`; poll tasks/get, \
                     which carries the result once the task is terminal"
                ),
            )),
            other => Err(Error::MethodNotFound {
                method: other.to_owned(),
            }
            .into()),
        }
    }
}

fn to_json(value: &impl Serialize) -> Result<Value, JsonRpcError> {
    serde_json::to_value(value).map_err(|err| Error::Internal(err.to_string()).into())
}
