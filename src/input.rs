//! Input requests: what an `input_required` task waits for.
//!
//! Each request has a key and the request it stands for (`elicitation/create`,
//! `sampling/createMessage`, ...). In 2025-11-25 a server sends each one to the requestor as
//! an ordinary request carrying the related-task `_meta`; the request is data of the
//! `InputRequired` state so that the same handler can also be served by later dialects,
//! which show it inside the task.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::jsonrpc::JsonObject;

/// One request a task needs the requestor to answer: a method and its params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The request method, e.g. `elicitation/create`.
    pub method: String,
    /// The request params.
    #[serde(default)]
    pub params: JsonObject,
}

impl InputRequest {
    /// An input request with a method and params.
    #[must_use]
    pub fn new(method: impl Into<String>, params: JsonObject) -> Self {
        Self {
            method: method.into(),
            params,
        }
    }

    /// An `elicitation/create` request with these params.
    #[must_use]
    pub fn elicitation(params: JsonObject) -> Self {
        Self::new("elicitation/create", params)
    }
}

/// The input requests a task waits for, by key. Keys are chosen by the handler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputRequests(BTreeMap<String, InputRequest>);

impl InputRequests {
    /// No requests.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// These requests plus `request` under `key` (replacing a request with the same key).
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.0.insert(key.into(), request);
        self
    }

    /// The request under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&InputRequest> {
        self.0.get(key)
    }

    /// The number of requests.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no requests.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The requests in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &InputRequest)> {
        self.0.iter().map(|(key, request)| (key.as_str(), request))
    }
}

/// One shared empty set, so that moving to `input_required` without requests (as the
/// by-id `update_status` does) allocates nothing.
pub(crate) fn no_requests() -> std::sync::Arc<InputRequests> {
    static EMPTY: std::sync::OnceLock<std::sync::Arc<InputRequests>> = std::sync::OnceLock::new();
    std::sync::Arc::clone(EMPTY.get_or_init(Default::default))
}

impl<K: Into<String>> FromIterator<(K, InputRequest)> for InputRequests {
    fn from_iter<I: IntoIterator<Item = (K, InputRequest)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}
