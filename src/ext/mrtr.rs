//! Input before a task, or without one (SEP-2322, multi round-trip requests): a
//! `tools/call` (or `prompts/get`, `resources/read`) answered with an
//! [`InputRequiredResult`] instead of its result, and retried by the client with the
//! answers (`inputResponses`) and the server's `requestState`.
//!
//! The requests and answers are the ones tasks use ([`InputRequests`], [`InputResponses`]):
//! one vocabulary whether a tool asks before it runs, while it runs inline, or from inside a
//! task (`inputRequests` in `tasks/get`, answered by `tasks/update`). The two key spaces are
//! separate: a round's keys and a task's keys never meet.
//!
//! A round is read with [`RequestStates::round`](super::RequestStates::round), which checks
//! the `requestState` the retry carries (authenticated, bound to the caller and the request,
//! unexpired) and hands the tool a [`Round`]: the answers to what the previous round asked,
//! and what it chose to remember. A tool that needs more answers returns an [`Ask`], which
//! [`RequestStates::ask`](super::RequestStates::ask) turns into the `InputRequiredResult`,
//! sealing the next state.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::{InputRequests, InputResponses, Keyed};
use crate::jsonrpc::JsonObject;

crate::wire::constant_string!(
    /// `"input_required"`: the `resultType` of an `InputRequiredResult`.
    ResultTypeInputRequired = "input_required"
);

/// The answer to a request that cannot finish without more input: the requests the
/// client must answer (`inputRequests`) and the state it must send back unchanged
/// (`requestState`) when it calls again. At least one of them is present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRequiredResult {
    #[serde(rename = "resultType")]
    pub(crate) result_type: ResultTypeInputRequired,
    #[serde(rename = "inputRequests", skip_serializing_if = "Keyed::is_empty")]
    pub(crate) input_requests: InputRequests,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// An [`InputRequiredResult`] with neither input requests nor a request state, which the
/// schema forbids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an InputRequiredResult must carry `inputRequests` or a `requestState`")]
pub struct NothingAsked;

impl InputRequiredResult {
    /// The result asking `requests`, with the `request_state` to send back, if any.
    ///
    /// # Errors
    /// [`NothingAsked`] if `requests` is empty and there is no state.
    pub fn new(
        requests: InputRequests,
        request_state: Option<String>,
    ) -> Result<Self, NothingAsked> {
        if requests.is_empty() && request_state.is_none() {
            return Err(NothingAsked);
        }
        Ok(Self {
            result_type: ResultTypeInputRequired,
            input_requests: requests,
            request_state,
            meta: None,
        })
    }

    /// The requests the client must answer, by key (empty if the result carries only a
    /// state).
    #[must_use]
    pub fn input_requests(&self) -> &InputRequests {
        &self.input_requests
    }

    /// The state the client sends back unchanged, if any.
    #[must_use]
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }
}

impl<'de> Deserialize<'de> for InputRequiredResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(rename = "resultType")]
            _result_type: ResultTypeInputRequired,
            #[serde(rename = "inputRequests", default)]
            input_requests: Option<InputRequests>,
            #[serde(rename = "requestState", default)]
            request_state: Option<String>,
            #[serde(rename = "_meta", default)]
            meta: Option<JsonObject>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let mut result = Self::new(raw.input_requests.unwrap_or_default(), raw.request_state)
            .map_err(serde::de::Error::custom)?;
        result.meta = raw.meta;
        Ok(result)
    }
}

/// What a tool asks before it can go on: the requests, by key, and what the next round
/// should remember (sealed into its `requestState`, handed back as [`Round::data`]).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Ask {
    pub(crate) requests: InputRequests,
    pub(crate) data: Value,
}

impl Ask {
    /// Asks `requests`, remembering nothing.
    pub fn new(requests: InputRequests) -> Self {
        Self {
            requests,
            data: Value::Null,
        }
    }

    /// The same, remembering `data` for the next round (it travels to the client and back,
    /// integrity-protected but readable: no secrets).
    pub fn remembering(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    /// The requests.
    #[must_use]
    pub fn requests(&self) -> &InputRequests {
        &self.requests
    }

    /// What the next round remembers (`null`: nothing).
    #[must_use]
    pub fn data(&self) -> &Value {
        &self.data
    }
}

/// A request's earlier rounds, as its retry showed them and once checked: the answers to
/// what the previous round asked, and what it remembered.
///
/// Round 0 is a call without a (valid) `requestState`: the first, or a client that dropped
/// the state. Its `inputResponses`, if any, are passed on as they came (answers nobody
/// asked for are client input like the arguments); from round 1 on, only the answers to
/// the keys the previous round asked are kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    pub(crate) number: u32,
    pub(crate) responses: InputResponses,
    pub(crate) data: Value,
}

impl Round {
    /// The first round: nothing asked yet, nothing answered (what a 2025-11-25 request, which
    /// has no rounds, is).
    #[must_use]
    pub fn first() -> Self {
        Self::default()
    }

    /// How many rounds came before, as the verified state says (0 without one).
    #[must_use]
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Whether no verified earlier round exists.
    #[must_use]
    pub fn is_first(&self) -> bool {
        self.number == 0
    }

    /// The answers, by key.
    #[must_use]
    pub fn responses(&self) -> &InputResponses {
        &self.responses
    }

    /// The answer under `key`, if any.
    #[must_use]
    pub fn response(&self, key: &str) -> Option<&JsonObject> {
        self.responses.get(key)
    }

    /// What the previous round remembered (`null`: nothing, or round 0).
    #[must_use]
    pub fn data(&self) -> &Value {
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::InputRequest;
    use serde_json::json;

    fn elicitation() -> InputRequest {
        InputRequest::elicitation(
            json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
    }

    #[test]
    fn the_wire_form_is_the_schemas_and_reads_back() {
        let requests = InputRequests::new().with("user_name", elicitation());
        let result = InputRequiredResult::new(requests.clone(), Some("s.t".into())).unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire,
            json!({
                "resultType": "input_required",
                "inputRequests": {"user_name": {"method": "elicitation/create", "params": {
                    "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}
                }}},
                "requestState": "s.t"
            })
        );
        let back: InputRequiredResult = serde_json::from_value(wire).unwrap();
        assert_eq!(back, result);
        assert_eq!(back.input_requests(), &requests);
        assert_eq!(back.request_state(), Some("s.t"));

        let only_state = InputRequiredResult::new(InputRequests::new(), Some("s".into())).unwrap();
        assert_eq!(
            serde_json::to_value(&only_state).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
        assert!(only_state.input_requests().is_empty());
    }

    #[test]
    fn a_result_that_asks_nothing_cannot_be_made_or_read() {
        assert_eq!(
            InputRequiredResult::new(InputRequests::new(), None),
            Err(NothingAsked)
        );
        for wire in [
            json!({"resultType": "input_required"}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"resultType": "complete", "requestState": "s"}),
        ] {
            assert!(
                serde_json::from_value::<InputRequiredResult>(wire.clone()).is_err(),
                "{wire}"
            );
        }
    }

    #[test]
    fn each_input_request_names_the_capability_it_needs() {
        use crate::ext::{capability_required, declares_capability};
        assert_eq!(elicitation().capability(), Some("elicitation"));
        assert_eq!(
            InputRequest::sampling(JsonObject::new()).capability(),
            Some("sampling")
        );
        assert_eq!(InputRequest::roots().capability(), Some("roots"));
        assert_eq!(
            InputRequest::new("x/y", JsonObject::new()).capability(),
            None
        );

        let params = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": true}}});
        assert!(declares_capability(Some(&params), "sampling"));
        assert!(
            !declares_capability(Some(&params), "roots"),
            "not an object"
        );
        assert!(!declares_capability(Some(&params), "elicitation"));
        assert!(!declares_capability(None, "sampling"));
        let error = capability_required("elicitation", "asks the user");
        assert_eq!(error.code, crate::ext::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"elicitation": {}}}))
        );
    }
}
