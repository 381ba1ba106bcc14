//! Task status notifications on a `subscriptions/listen` stream (SEP-2663 §Task Status
//! Notifications, on the 2026-07-28 core's `subscriptions/listen`, SEP-2575): the request's
//! `notifications.taskIds`, and the three messages of the stream.
//!
//! A server serves a listen in five steps, whatever its transport:
//! 1. [`ListenRequest::parse`] reads the filter: `-32602` for a malformed one, `-32021` for
//!    `taskIds` on a request that does not declare the extension;
//! 2. [`Watches::watch`](crate::Watches::watch) opens a watch on the ids for the caller
//!    ([`WatchError::to_jsonrpc`](crate::WatchError::to_jsonrpc) past its bounds);
//! 3. [`SubscriptionsAcknowledged`] goes first, listing only the ids the caller owns
//!    ([`Watch::task_ids`](crate::Watch::task_ids): unknown and foreign ids are left out
//!    alike);
//! 4. one [`ListenNotification`] per change, each the task exactly as `tasks/get` would
//!    show it then (no `resultType`: a notification is not a result), in order per task,
//!    the terminal one last;
//! 5. when the server ends the stream (shutdown), the [`SubscriptionsListenResult`] as the
//!    response to the listen request. A client ends it by closing the stream (HTTP) or
//!    with `notifications/cancelled` naming the request (stdio): no response follows then.
//!
//! Every message carries the listen request's JSON-RPC id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]` ([`SubscriptionMeta`]). The messages
//! are generic in that id's type: [`RequestId`] by default, or whatever a transport echoes
//! ids as (a raw JSON value that keeps the client's exact spelling).
//!
//! Changes made before the acknowledgement are not replayed: a client that may have
//! missed some reads each task once with `tasks/get` after it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::any::AnyTask;
use crate::ext::messages::{ResultTypeComplete, TasksNotificationMethod, missing_capability};
use crate::ext::task::DetailedTask;
use crate::id::TaskId;
use crate::jsonrpc::{INVALID_PARAMS, JsonRpcError, RequestId};
use crate::wire::JsonRpcVersion;

crate::wire::constant_string!(
    /// The string `"notifications/subscriptions/acknowledged"`.
    AcknowledgedMethod = super::methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED
);

/// What a `subscriptions/listen` request asks of the tasks extension: the task ids in
/// `params.notifications.taskIds`, if any. The other notification types of the filter
/// (`toolsListChanged`, …) are not the extension's and are not read here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenRequest {
    task_ids: Option<Vec<String>>,
}

impl ListenRequest {
    /// Reads the filter of a `subscriptions/listen` request with `params`; `declared` says
    /// whether the request's `_meta` declares the extension
    /// ([`declares_extension`](super::declares_extension)).
    ///
    /// # Errors
    /// `-32602` when `params.notifications` is missing or not an object, or its `taskIds`
    /// is not an array of strings; `-32021` (with `data.requiredCapabilities`) when it
    /// names `taskIds` and the request does not declare the extension.
    pub fn parse(params: Option<&Value>, declared: bool) -> Result<Self, JsonRpcError> {
        let invalid =
            |message: &str| JsonRpcError::new(INVALID_PARAMS, format!("invalid params: {message}"));
        let notifications = params
            .and_then(|params| params.get("notifications"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                invalid(
                    "subscriptions/listen needs an object `notifications`: the notifications \
                     to listen for (`taskIds` for task status notifications)",
                )
            })?;
        let task_ids = match notifications.get("taskIds") {
            None => None,
            Some(Value::Array(ids)) => Some(
                ids.iter()
                    .map(|id| id.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| invalid("`notifications.taskIds` must hold task id strings"))?,
            ),
            Some(_) => {
                return Err(invalid(
                    "`notifications.taskIds` must be an array of task id strings",
                ));
            }
        };
        if task_ids.is_some() && !declared {
            return Err(missing_capability(
                "task status notifications (notifications.taskIds) need the tasks extension: \
                 declare io.modelcontextprotocol/tasks in the request's client capabilities",
            ));
        }
        Ok(Self { task_ids })
    }

    /// The task ids asked for, if the request names `taskIds` (as written, repeats
    /// included).
    #[must_use]
    pub fn task_ids(&self) -> Option<&[String]> {
        self.task_ids.as_deref()
    }
}

/// The `_meta` of every message on a listen stream: the id of the `subscriptions/listen`
/// request that opened it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionMeta<I = RequestId> {
    /// The listen request's JSON-RPC id.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: I,
}

/// The notification types a server agreed to honour, as far as tasks go: the `taskIds` it
/// will send `notifications/tasks` for (absent when the request named none).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AcknowledgedFilter {
    /// The ids acknowledged.
    #[serde(rename = "taskIds", default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<TaskId>>,
}

/// The params of `notifications/subscriptions/acknowledged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcknowledgedParams<I = RequestId> {
    /// What the server agreed to send.
    pub notifications: AcknowledgedFilter,
    /// The subscription's id.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta<I>,
}

/// `notifications/subscriptions/acknowledged`, as a whole JSON-RPC message: the first
/// message of a listen stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledged<I = RequestId> {
    jsonrpc: JsonRpcVersion,
    method: AcknowledgedMethod,
    /// The filter agreed to and the subscription's id.
    pub params: AcknowledgedParams<I>,
}

impl<I> SubscriptionsAcknowledged<I> {
    /// The acknowledgement of the listen request `subscription_id`, agreeing to
    /// `task_ids` (`None` when the request named no `taskIds`).
    #[must_use]
    pub fn new(subscription_id: I, task_ids: Option<Vec<TaskId>>) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            method: AcknowledgedMethod,
            params: AcknowledgedParams {
                notifications: AcknowledgedFilter { task_ids },
                meta: SubscriptionMeta { subscription_id },
            },
        }
    }
}

/// The params of `notifications/tasks` on a listen stream: the detailed task, and the
/// subscription's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListenNotificationParams<I = RequestId> {
    /// The task with the payload of its status.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// The subscription's id.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta<I>,
}

/// `notifications/tasks` on a listen stream, as a whole JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListenNotification<I = RequestId> {
    jsonrpc: JsonRpcVersion,
    method: TasksNotificationMethod,
    /// The task as it is now.
    pub params: ListenNotificationParams<I>,
}

impl<I> ListenNotification<I> {
    /// The notification of `task`'s current state on the listen stream `subscription_id`:
    /// the same detailed task `tasks/get` answers with.
    #[must_use]
    pub fn new(subscription_id: I, task: &AnyTask) -> Self {
        Self {
            jsonrpc: JsonRpcVersion,
            method: TasksNotificationMethod,
            params: ListenNotificationParams {
                task: DetailedTask::from(task),
                meta: SubscriptionMeta { subscription_id },
            },
        }
    }
}

/// The result of `subscriptions/listen`, sent only when the server ends the stream
/// (shutdown): `{"resultType": "complete", "_meta": {subscriptionId}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResult<I = RequestId> {
    #[serde(rename = "resultType")]
    result_type: ResultTypeComplete,
    /// The subscription's id (the same as the response's `id`).
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta<I>,
}

impl<I> SubscriptionsListenResult<I> {
    /// The result ending the listen stream `subscription_id`.
    #[must_use]
    pub fn new(subscription_id: I) -> Self {
        Self {
            result_type: ResultTypeComplete,
            meta: SubscriptionMeta { subscription_id },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Task, Timestamp};

    fn declared_params(notifications: Value) -> Value {
        json!({"notifications": notifications})
    }

    #[test]
    fn the_filter_is_read_and_task_ids_need_the_extension() {
        let ids = declared_params(json!({"taskIds": ["a", "b", "a"], "toolsListChanged": true}));
        let request = ListenRequest::parse(Some(&ids), true).expect("valid");
        assert_eq!(
            request.task_ids(),
            Some(&["a".to_owned(), "b".into(), "a".into()][..])
        );
        let missing = ListenRequest::parse(Some(&ids), false).expect_err("-32021");
        assert_eq!(
            missing.code,
            super::super::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        assert!(missing.data.is_some_and(|data| {
            data["requiredCapabilities"]["extensions"]
                .get(super::super::EXTENSION_ID)
                .is_some()
        }));
        // Without `taskIds`, nothing of the extension's is asked: no capability needed.
        let none = declared_params(json!({"toolsListChanged": true}));
        assert_eq!(
            ListenRequest::parse(Some(&none), false),
            Ok(ListenRequest::default())
        );
        for broken in [
            json!({}),
            json!({"notifications": []}),
            declared_params(json!({"taskIds": "a"})),
            declared_params(json!({"taskIds": [1]})),
        ] {
            let refused = ListenRequest::parse(Some(&broken), true).expect_err("-32602");
            assert_eq!(refused.code, INVALID_PARAMS, "{broken}");
        }
    }

    #[test]
    fn every_message_carries_the_subscription_id() {
        let t0 = Timestamp::parse("2026-11-22T08:00:00Z").unwrap();
        let task = Task::new(TaskId::from("t-1"), t0).cancel(t0);
        let ack =
            SubscriptionsAcknowledged::new(RequestId::from(7), Some(vec![TaskId::from("t-1")]));
        assert_eq!(
            serde_json::to_value(&ack).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": {"taskIds": ["t-1"]},
                              "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}})
        );
        let notification = ListenNotification::new("s", &task.into());
        let wire = serde_json::to_value(&notification).unwrap();
        assert_eq!(wire["method"], "notifications/tasks");
        assert_eq!(wire["params"]["status"], "cancelled");
        assert_eq!(
            wire["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "s"
        );
        assert!(wire["params"].get("resultType").is_none());
        assert_eq!(
            serde_json::to_value(SubscriptionsListenResult::new(7)).unwrap(),
            json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}})
        );
    }
}
