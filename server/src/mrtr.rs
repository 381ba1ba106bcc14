//! Input before (or without) a task on the 2026-07-28 wire (SEP-2322, multi round-trip
//! requests): the machinery the servers share.
//!
//! A call that needs input before it can go on answers an `InputRequiredResult` instead of
//! its result; the client calls again with the answers (`inputResponses`) and the
//! `requestState` it was given. The server reads each retry ([`RequestStates::round`],
//! which refuses a tampered, foreign or expired state with `-32602`) into the answers a
//! handler's [`Context::ask`](crate::Context::ask) reads, and turns what a handler asks
//! into the `InputRequiredResult` to send, after checking that the client declared every
//! capability the requests need (`-32021` otherwise). Every answer so far is remembered in
//! the state, so the handler, run again from the start on each retry, finds them all.
//!
//! The state is tagged with HMAC-SHA256 ([`HmacSha256`]) under a key that is random per
//! process, or read from [`REQUEST_STATE_KEY_ENV`] so that several instances behind a
//! load balancer accept each other's states. It lives [`REQUEST_STATE_TTL_ENV`]
//! milliseconds (default ten minutes).

use mcp_tasks::ext::{self, Ask, RequestStates, Round, StateMac, StateScope, TAG_LEN};
use mcp_tasks::{Error, JsonObject, JsonRpcError, Owner};

use crate::context::Rounds;
use serde_json::Value;

/// The environment variable with the key that tags the `requestState` of this server: at
/// least [`MIN_KEY_LEN`] bytes of secret text (say `openssl rand -base64 32`), the same on
/// every instance that shares a load balancer. Unset: a random key per process, so a state
/// is accepted only by the process that issued it (and not after a restart).
pub const REQUEST_STATE_KEY_ENV: &str = "MCP_TASKS_REQUEST_STATE_KEY";

/// The environment variable with how long a `requestState` is accepted, in milliseconds
/// (default [`ext::DEFAULT_LIFETIME`], ten minutes).
pub const REQUEST_STATE_TTL_ENV: &str = "MCP_TASKS_REQUEST_STATE_TTL_MS";

/// The shortest key accepted, in bytes (HMAC-SHA256's own output length).
pub const MIN_KEY_LEN: usize = 32;

/// HMAC-SHA256 under the server's key: the [`StateMac`] of a server's `requestState`.
#[derive(Clone)]
pub struct HmacSha256(Vec<u8>);

impl std::fmt::Debug for HmacSha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.write_str("HmacSha256(..)")
    }
}

impl HmacSha256 {
    /// The MAC under `key`.
    ///
    /// # Errors
    /// A message for a key shorter than [`MIN_KEY_LEN`] bytes.
    pub fn new(key: &[u8]) -> Result<Self, String> {
        if key.len() < MIN_KEY_LEN {
            return Err(format!(
                "a requestState key needs at least {MIN_KEY_LEN} bytes of secret, got {}",
                key.len()
            ));
        }
        // HMAC takes a key of any length.
        Ok(Self(key.to_vec()))
    }

    /// The MAC under a fresh random key of 64 bytes (SHA-256's block) from the operating
    /// system's generator (or, should that fail, from the seeds of the standard library's
    /// hash maps, which it reads from the same source).
    #[must_use]
    pub fn random() -> Self {
        let mut key = [0u8; 64];
        if getrandom::fill(&mut key).is_err() {
            use std::hash::{BuildHasher, Hasher};
            for chunk in key.chunks_mut(8) {
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_usize(chunk.as_ptr() as usize);
                chunk.copy_from_slice(&hasher.finish().to_le_bytes()[..chunk.len()]);
            }
        }
        Self(key.to_vec())
    }
}

impl StateMac for HmacSha256 {
    fn tag(&self, message: &[u8]) -> [u8; TAG_LEN] {
        hmac_sha256::HMAC::mac(message, &self.0)
    }
}

/// The `requestState` issuer and checker of one server.
pub type States = RequestStates<HmacSha256>;

/// The states of a server given no configuration: a random key, the default lifetime.
#[must_use]
pub fn random_states() -> States {
    RequestStates::new(HmacSha256::random())
}

/// The states of a server configured by [`REQUEST_STATE_KEY_ENV`] and
/// [`REQUEST_STATE_TTL_ENV`] (each optional).
///
/// # Errors
/// A message for a key that is too short or a lifetime that is not a positive whole number
/// of milliseconds.
pub fn states_from_env() -> Result<States, String> {
    let mac = match std::env::var(REQUEST_STATE_KEY_ENV) {
        Ok(key) if !key.is_empty() => HmacSha256::new(key.as_bytes())
            .map_err(|err| format!("{REQUEST_STATE_KEY_ENV}: {err}"))?,
        _ => HmacSha256::random(),
    };
    let states = RequestStates::new(mac);
    match std::env::var(REQUEST_STATE_TTL_ENV) {
        Err(_) => Ok(states),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(states.with_lifetime(std::time::Duration::from_millis(ms))),
            _ => Err(format!(
                "{REQUEST_STATE_TTL_ENV}=`{}` is not a positive whole number of milliseconds",
                text.chars().take(40).collect::<String>()
            )),
        },
    }
}

/// A call's earlier rounds as its retry shows them, checked: the verified round, and the
/// answers a handler reads ([`Rounds`]): what earlier rounds remembered, then this retry's.
///
/// # Errors
/// `-32602` for malformed `inputResponses` or a refused `requestState` (tampered, foreign,
/// expired).
pub(crate) fn rounds(
    states: &States,
    owner: &Owner,
    method: &str,
    params: Option<&Value>,
) -> Result<(Round, Rounds), JsonRpcError> {
    let scope = StateScope::of_request(owner, method, params);
    let round = states.round(&scope, params)?;
    let mut answers = match round.data() {
        Value::Object(remembered) => remembered.clone(),
        _ => JsonObject::new(),
    };
    for (key, answer) in round.responses().iter() {
        answers.insert(key.to_owned(), Value::Object(answer.clone()));
    }
    let rounds = Rounds {
        number: round.number(),
        answers,
    };
    Ok((round, rounds))
}

/// The `InputRequiredResult` asking what `ask` asks, after `round`, for `owner`'s request
/// `method` with `params`.
///
/// # Errors
/// `-32021` (naming it in `data.requiredCapabilities`) when a request asked needs a
/// capability the client did not declare.
pub(crate) fn asked(
    states: &States,
    owner: &Owner,
    method: &str,
    params: Option<&Value>,
    round: &Round,
    ask: Ask,
) -> Result<Value, JsonRpcError> {
    let undeclared = ask
        .requests()
        .iter()
        .find_map(|(key, request)| Some((key, request.capability()?)))
        .filter(|(_, capability)| !ext::declares_capability(params, capability));
    if let Some((key, capability)) = undeclared {
        return Err(ext::capability_required(
            capability,
            format!(
                "this request needs input (`{key}`: `{}`), which needs the `{capability}` \
                 client capability: declare it in \
                 `_meta[\"io.modelcontextprotocol/clientCapabilities\"]`",
                ask.requests()
                    .get(key)
                    .map_or("", |request| request.method.as_str())
            ),
        ));
    }
    let scope = StateScope::of_request(owner, method, params);
    let asked = states.ask(&scope, round, ask);
    serde_json::to_value(asked).map_err(|err| Error::Internal(err.to_string()).to_jsonrpc())
}

#[cfg(test)]
mod tests {
    use mcp_tasks::{InputRequest, InputRequests};
    use serde_json::json;

    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // RFC 4231, test case 6 (a key longer than the block).
        let key = [0xaa; 131];
        let mac = HmacSha256::new(&key).expect("a long key");
        let tag = mac.tag(b"Test Using Larger Than Block-Size Key - Hash Key First");
        let hex: String = tag.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(
            hex,
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert!(HmacSha256::new(b"short").is_err());
        assert_eq!(format!("{mac:?}"), "HmacSha256(..)");
        assert_ne!(
            HmacSha256::random().tag(b"x"),
            HmacSha256::random().tag(b"x")
        );
    }

    #[test]
    fn a_round_asks_then_carries_the_answers_and_needs_the_capability() {
        let states = random_states();
        let owner = Owner::new("alice");
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let call = json!({"name": "t", "_meta": meta});
        let form =
            json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}});
        let form: JsonObject = form.as_object().cloned().unwrap_or_default();
        let ask =
            || Ask::new(InputRequests::new().with("name", InputRequest::elicitation(form.clone())));
        let (round, first) = rounds(&states, &owner, "tools/call", Some(&call)).expect("round 0");
        assert_eq!(first.number, 0);
        let asked = asked(&states, &owner, "tools/call", Some(&call), &round, ask()).expect("asks");
        assert_eq!(asked["resultType"], "input_required");
        let mut retry = call.clone();
        retry["inputResponses"] = json!({"name": {"action": "accept", "content": {}}});
        retry["requestState"] = asked["requestState"].clone();
        let (_, second) = rounds(&states, &owner, "tools/call", Some(&retry)).expect("round 1");
        assert_eq!(second.number, 1);
        assert_eq!(second.answers["name"]["action"], "accept");
        // Another caller cannot use the state.
        let error = rounds(&states, &Owner::new("bob"), "tools/call", Some(&retry))
            .err()
            .expect("refused");
        assert_eq!(error.code, mcp_tasks::jsonrpc::INVALID_PARAMS);

        let undeclared =
            json!({"name": "t", "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}});
        let error = asked_for(&states, &owner, &undeclared, ask()).expect_err("undeclared");
        assert_eq!(error.code, ext::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"elicitation": {}}}))
        );
    }

    fn asked_for(
        states: &States,
        owner: &Owner,
        params: &Value,
        ask: Ask,
    ) -> Result<Value, JsonRpcError> {
        let (round, _) = rounds(states, owner, "tools/call", Some(params))?;
        asked(states, owner, "tools/call", Some(params), &round, ask)
    }
}
