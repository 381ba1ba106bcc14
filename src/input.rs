//! Input requests: what an `input_required` task waits for, and the answers to them.
//!
//! Each request has a key and the request it stands for (`elicitation/create`,
//! `sampling/createMessage`, ...). The requests are data of the `InputRequired` state, so
//! one handler serves every wire dialect: in 2025-11-25 the server sends each request to
//! the requestor as an ordinary request carrying the related-task `_meta` and hands the
//! answer back with [`TaskRegistry::respond`](crate::TaskRegistry::respond); in the tasks
//! extension the requests appear in `tasks/get` and the answers arrive in `tasks/update`.
//!
//! Keys are unique over the task's whole life: a handler names its requests, and a name
//! the task already used gets a suffix (`confirm`, then `confirm-2`) on the wire. The
//! handler reads the answers under its own names ([`InputResponses`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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

    /// A `sampling/createMessage` request with these params.
    #[must_use]
    pub fn sampling(params: JsonObject) -> Self {
        Self::new("sampling/createMessage", params)
    }

    /// A `roots/list` request.
    #[must_use]
    pub fn roots() -> Self {
        Self::new("roots/list", JsonObject::new())
    }

    /// The client capability a requestor must have declared before it may be sent this
    /// request: `elicitation`, `sampling` or `roots` (`None` for another method).
    #[must_use]
    pub fn capability(&self) -> Option<&'static str> {
        match self.method.as_str() {
            "elicitation/create" => Some("elicitation"),
            "sampling/createMessage" => Some("sampling"),
            "roots/list" => Some("roots"),
            _ => None,
        }
    }
}

/// Values by string key, in key order: a task's input requests ([`InputRequests`]) and
/// the answers to them ([`InputResponses`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Keyed<T>(BTreeMap<String, T>);

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Keyed(BTreeMap::new())
    }
}

impl<T> Keyed<T> {
    /// None.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// These plus `value` under `key` (replacing a value with the same key).
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: T) -> Self {
        self.0.insert(key.into(), value);
        self
    }

    /// The value under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.get(key)
    }

    /// Takes the value under `key`.
    pub fn remove(&mut self, key: &str) -> Option<T> {
        self.0.remove(key)
    }

    /// The number of values.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.0.iter().map(|(key, value)| (key.as_str(), value))
    }
}

impl<K: Into<String>, T> FromIterator<(K, T)> for Keyed<T> {
    fn from_iter<I: IntoIterator<Item = (K, T)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// The input requests a task waits for, by key. The handler names them; on the wire a
/// name the task already used gets a suffix, so keys are unique for the task's life.
pub type InputRequests = Keyed<InputRequest>;

/// The answers to a task's input requests, under the names the handler gave them.
pub type InputResponses = Keyed<JsonObject>;

/// What a task keeps across `working` and `input_required`: the wire keys it ever issued
/// (so none is reused), whether the requestor asked for cancellation, and for a task that
/// may run again ([`Redelivery`](crate::Redelivery)) its attempts and its handler's last
/// checkpoint. None of it is shown on the wire.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    pub(crate) issued: BTreeSet<String>,
    pub(crate) cancel_requested: bool,
    pub(crate) attempts: Option<crate::store::Attempts>,
    pub(crate) checkpoint: Option<Arc<serde_json::Value>>,
}

/// The data of a `working` task: nothing until it has asked for input or been asked to
/// cancel (so a fresh task carries one null pointer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkingData(pub(crate) Option<Arc<Progress>>);

impl WorkingData {
    pub(crate) fn progress(&self) -> Option<&Progress> {
        self.0.as_deref()
    }

    pub(crate) fn progress_mut(&mut self) -> &mut Progress {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
}

/// The data of an `input_required` task: the requests still outstanding (by wire key),
/// the names the handler gave them, the answers received and not yet taken, and the
/// progress carried over from `working`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputState {
    pub(crate) outstanding: InputRequests,
    pub(crate) names: BTreeMap<String, String>,
    pub(crate) answers: BTreeMap<String, JsonObject>,
    pub(crate) progress: Progress,
}

impl InputState {
    /// Issues `requests`, giving each a key never used before by this task. Issuing no
    /// request on a fresh task (as the by-id `update_status` does) shares one empty state
    /// instead of allocating: one per thread, so that threads do not all count references
    /// on one cache line.
    pub(crate) fn issue_shared(requests: InputRequests, progress: Progress) -> Arc<Self> {
        thread_local! {
            static EMPTY: Arc<InputState> = Arc::default();
        }
        if requests.is_empty() && progress == Progress::default() {
            return EMPTY.with(Arc::clone);
        }
        Arc::new(Self::issue(requests, progress))
    }

    fn issue(requests: InputRequests, mut progress: Progress) -> Self {
        let mut state = InputState::default();
        for (name, request) in requests.0 {
            let mut key = name.clone();
            let mut n = 1;
            while progress.issued.contains(&key) {
                n += 1;
                key = format!("{name}-{n}");
            }
            progress.issued.insert(key.clone());
            state.outstanding.0.insert(key.clone(), request);
            state.names.insert(key, name);
        }
        state.progress = progress;
        state
    }

    /// Records the answers to outstanding requests; answers to unknown or already
    /// answered keys are ignored. Returns how many were taken.
    pub(crate) fn answer(
        &mut self,
        responses: impl IntoIterator<Item = (String, JsonObject)>,
    ) -> usize {
        let mut taken = 0;
        for (key, answer) in responses {
            if self.outstanding.0.remove(&key).is_some() {
                self.answers.insert(key, answer);
                taken += 1;
            }
        }
        taken
    }

    /// Whether every request is answered (and the answers not yet taken).
    pub(crate) fn all_answered(&self) -> bool {
        self.outstanding.is_empty() && !self.answers.is_empty()
    }

    /// Takes the answers, under the handler's names.
    pub(crate) fn take_answers(&mut self) -> InputResponses {
        let answers = std::mem::take(&mut self.answers);
        Keyed(
            answers
                .into_iter()
                .map(|(key, answer)| {
                    let name = self.names.get(&key).cloned().unwrap_or(key);
                    (name, answer)
                })
                .collect(),
        )
    }
}
