//! `requestState` a server can trust: authenticated, bound to the caller and the request,
//! expiring, opaque.
//!
//! The client holds the state between two rounds of a request and sends it back unchanged,
//! so what comes back is client input: a state it made up or changed could make a tool
//! believe it asked a question, or got an answer, that it never did. [`RequestStates`]
//! seals each state under the server's key and opens only what it sealed:
//!
//! - **Authenticated.** The state carries a 32-byte tag: a keyed MAC ([`StateMac`];
//!   HMAC-SHA256 in the example servers) over the state's content *and* its scope. One byte
//!   changed, a tag made up, another key (another server) and the state is refused.
//! - **Bound.** The scope is the caller ([`Owner`]), the method, the name the request
//!   targets (the tool, the prompt, the resource) and its arguments. It is never written
//!   into the state, only into the tag: a state issued to Alice for `confirm {question: A}`
//!   is refused to Bob, to another tool, and to `confirm {question: B}`, with the one same
//!   message as a forged state (no oracle).
//! - **Expiring.** The state names when it expires ([`DEFAULT_LIFETIME`] after it was
//!   issued); the time is read only once the tag has been checked.
//! - **Opaque.** The client sees `base64url(content).base64url(tag)`, which it must send
//!   back as it came. The content is not encrypted: what a tool remembers
//!   ([`Ask::remembering`]) is readable by the client, so it must not be a secret.
//!
//! Several instances behind a load balancer accept each other's states when they share the
//! key (the example servers read it from `MCP_TASKS_REQUEST_STATE_KEY`).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::ext::mrtr::{Ask, InputRequiredResult, ResultTypeInputRequired, Round};
use crate::input::InputResponses;
use crate::jsonrpc::{INVALID_PARAMS, JsonObject, JsonRpcError};
use crate::store::Owner;

/// The length of a state's tag, in bytes.
pub const TAG_LEN: usize = 32;

/// How long a state is accepted after it was issued, unless told otherwise: ten minutes,
/// time for a person to read a question and answer it.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(600);

/// The longest `requestState` opened, in bytes: a longer one is refused before any work.
pub const MAX_STATE_LEN: usize = 64 * 1024;

/// The first bytes of every MAC input: what the tag is of, and the format's version.
const DOMAIN: &[u8] = b"mcp-tasks requestState v1\0";

/// A keyed message authentication code, the server's secret inside: the same message
/// gives the same tag under the same key, and nobody without the key can compute a tag.
/// HMAC-SHA256 fits; a plain hash does not.
pub trait StateMac: Send + Sync + 'static {
    /// The tag of `message` under the key.
    fn tag(&self, message: &[u8]) -> [u8; TAG_LEN];
}

/// What a state is bound to: the caller, the method, the name the request targets, and
/// its arguments.
#[derive(Debug, Clone, Copy)]
pub struct StateScope<'a> {
    owner: &'a Owner,
    method: &'a str,
    name: &'a str,
    arguments: Option<&'a JsonObject>,
}

impl<'a> StateScope<'a> {
    /// The scope of `owner`'s `method` request targeting `name` (a tool, a prompt, a
    /// resource URI), without arguments.
    #[must_use]
    pub fn new(owner: &'a Owner, method: &'a str, name: &'a str) -> Self {
        Self {
            owner,
            method,
            name,
            arguments: None,
        }
    }

    /// The same, bound to these arguments too (absent and empty arguments are alike).
    #[must_use]
    pub fn with_arguments(mut self, arguments: &'a JsonObject) -> Self {
        self.arguments = Some(arguments);
        self
    }

    /// The scope of `owner`'s request `method` with `params`: the name is `params.name`
    /// (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`), the arguments
    /// `params.arguments` when an object.
    #[must_use]
    pub fn of_request(owner: &'a Owner, method: &'a str, params: Option<&'a Value>) -> Self {
        let member = |key: &str| params.and_then(|params| params.get(key));
        let name = member("name")
            .or_else(|| member("uri"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let scope = Self::new(owner, method, name);
        match member("arguments").and_then(Value::as_object) {
            Some(arguments) => scope.with_arguments(arguments),
            None => scope,
        }
    }

    /// The bytes the tag covers besides the state's content: each field length-prefixed,
    /// so no two scopes write the same bytes.
    fn write(&self, out: &mut Vec<u8>) {
        match self.owner.key() {
            None => field(out, b"\0"),
            Some(key) => field(out, &[b"\x01", key.as_bytes()].concat()),
        }
        field(out, self.method.as_bytes());
        field(out, self.name.as_bytes());
        let mut arguments = Vec::new();
        canonical(
            &Value::Object(self.arguments.cloned().unwrap_or_default()),
            &mut arguments,
        );
        field(out, &arguments);
    }
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// `value` as JSON with every object's keys in order, whatever order the client sent
/// them in.
fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(object) => {
            let mut members: Vec<_> = object.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (n, (key, value)) in members.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                canonical(&Value::String(key.clone()), out);
                out.push(b':');
                canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// What a sealed state holds (short names: it travels in every retry).
#[derive(Debug, Serialize, Deserialize)]
struct Content {
    /// The round that issued it (1 for the first `InputRequiredResult`).
    #[serde(rename = "r")]
    round: u32,
    /// When it expires, in Unix milliseconds.
    #[serde(rename = "x")]
    expires: i64,
    /// The keys that round asked.
    #[serde(rename = "k")]
    keys: Vec<String>,
    /// What the tool remembered.
    #[serde(rename = "d", default, skip_serializing_if = "Value::is_null")]
    data: Value,
}

/// Why a retry's `inputResponses` or `requestState` was refused; each is `-32602`
/// ([`to_jsonrpc`](Self::to_jsonrpc)), and the client may always start over by calling
/// again without them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// `inputResponses` is not an object whose every value is an object.
    #[error(
        "invalid params: `inputResponses` must be an object mapping each key to the result \
         answering it (an ElicitResult, CreateMessageResult or ListRootsResult){}",
        .key.as_deref().map(|key| format!("; `{}` is not an object", crate::error::shorten(key))).unwrap_or_default()
    )]
    InvalidResponses {
        /// The key whose answer is not an object, if that is what is wrong.
        key: Option<String>,
    },

    /// A state this server did not issue for this caller and this request (another
    /// caller's, another tool's, another server's), changed, or malformed: one message for
    /// all, so that a refusal tells nothing about other callers' states.
    #[error(
        "invalid params: `requestState` was not issued by this server for this caller and \
         this request, or was altered; send it back exactly as received, or call again \
         without `requestState` and `inputResponses` to start over"
    )]
    Refused,

    /// A state that was valid but has expired.
    #[error(
        "invalid params: `requestState` expired at {expired_at}; call again without \
         `requestState` and `inputResponses` to start over"
    )]
    Expired {
        /// When it expired.
        expired_at: Timestamp,
    },
}

impl RoundError {
    /// The JSON-RPC error to answer with (`-32602`).
    #[must_use]
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        JsonRpcError::new(INVALID_PARAMS, self.to_string())
    }
}

impl From<RoundError> for JsonRpcError {
    fn from(err: RoundError) -> Self {
        err.to_jsonrpc()
    }
}

/// Issues and checks the `requestState` of one server (or of every instance sharing its
/// key): seals what a round asked and remembers, and opens what a retry sends back.
pub struct RequestStates<M: StateMac> {
    mac: M,
    clock: Arc<dyn Clock>,
    lifetime: Duration,
}

impl<M: StateMac> std::fmt::Debug for RequestStates<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("RequestStates")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl<M: StateMac> RequestStates<M> {
    /// States tagged by `mac`, living [`DEFAULT_LIFETIME`] by the system clock.
    #[must_use]
    pub fn new(mac: M) -> Self {
        Self {
            mac,
            clock: Arc::new(SystemClock),
            lifetime: DEFAULT_LIFETIME,
        }
    }

    /// The same, with states living `lifetime` (at least a millisecond).
    #[must_use]
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime.max(Duration::from_millis(1));
        self
    }

    /// The same, reading the time from `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How long a state is accepted after it was issued.
    #[must_use]
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Reads the earlier rounds of a request with `params` in `scope`: its
    /// `inputResponses` and, if it carries one, its `requestState`, checked. Without a state
    /// it is round 0 and every answer is passed on; with one, the round that issued it, the
    /// answers to what that round asked, and what it remembered.
    ///
    /// # Errors
    /// [`RoundError::InvalidResponses`] for `inputResponses` that is not an object of
    /// objects (`null` included); [`RoundError::Refused`] for a state that is not a string,
    /// too long, malformed, altered, or issued for another scope or under another key;
    /// [`RoundError::Expired`] for one past its time.
    pub fn round(
        &self,
        scope: &StateScope<'_>,
        params: Option<&Value>,
    ) -> Result<Round, RoundError> {
        let member = |key: &str| params.and_then(|params| params.get(key));
        let responses = match member("inputResponses") {
            None => InputResponses::new(),
            Some(Value::Object(responses)) => {
                let mut read = InputResponses::new();
                for (key, answer) in responses {
                    let Value::Object(answer) = answer else {
                        return Err(RoundError::InvalidResponses {
                            key: Some(key.clone()),
                        });
                    };
                    read = read.with(key.clone(), answer.clone());
                }
                read
            }
            Some(_) => return Err(RoundError::InvalidResponses { key: None }),
        };
        let state = match member("requestState") {
            None => {
                return Ok(Round {
                    number: 0,
                    responses,
                    data: Value::Null,
                });
            }
            Some(Value::String(state)) => state,
            Some(_) => return Err(RoundError::Refused),
        };
        let content = self.open(scope, state)?;
        let responses: InputResponses = content
            .keys
            .iter()
            .filter_map(|key| Some((key.clone(), responses.get(key)?.clone())))
            .collect();
        Ok(Round {
            number: content.round,
            responses,
            data: content.data,
        })
    }

    /// The `InputRequiredResult` asking what `ask` asks, after `round`, in `scope`: its
    /// `requestState` remembers the keys asked, the tool's data and the round's number, and
    /// expires one lifetime from now.
    #[must_use]
    pub fn ask(&self, scope: &StateScope<'_>, round: &Round, ask: Ask) -> InputRequiredResult {
        let Ask { requests, data } = ask;
        let content = Content {
            round: round.number.saturating_add(1),
            expires: self
                .clock
                .now()
                .plus_millis(u64::try_from(self.lifetime.as_millis()).unwrap_or(u64::MAX))
                .unix_millis(),
            keys: requests.iter().map(|(key, _)| key.to_owned()).collect(),
            data,
        };
        let state = self.seal(scope, &content);
        // With a state, the result always asks something (no `NothingAsked` to handle).
        InputRequiredResult {
            result_type: ResultTypeInputRequired,
            input_requests: requests,
            request_state: Some(state),
            meta: None,
        }
    }

    fn seal(&self, scope: &StateScope<'_>, content: &Content) -> String {
        // A `Content` is plain data: serializing it cannot fail.
        let body = serde_json::to_vec(content).unwrap_or_default();
        let tag = self.mac.tag(&mac_input(scope, &body));
        format!("{}.{}", encode(&body), encode(&tag))
    }

    fn open(&self, scope: &StateScope<'_>, state: &str) -> Result<Content, RoundError> {
        if state.len() > MAX_STATE_LEN {
            return Err(RoundError::Refused);
        }
        let (body, tag) = state.split_once('.').ok_or(RoundError::Refused)?;
        let (Some(body), Some(tag)) = (decode(body), decode(tag)) else {
            return Err(RoundError::Refused);
        };
        let expected = self.mac.tag(&mac_input(scope, &body));
        if !same_tag(&expected, &tag) {
            return Err(RoundError::Refused);
        }
        // Authentic from here on: only this server could have written it.
        let content: Content = serde_json::from_slice(&body).map_err(|_| RoundError::Refused)?;
        if self.clock.now().unix_millis() >= content.expires {
            return Err(RoundError::Expired {
                expired_at: Timestamp::from_unix_millis(content.expires),
            });
        }
        Ok(content)
    }
}

fn mac_input(scope: &StateScope<'_>, body: &[u8]) -> Vec<u8> {
    let mut input = Vec::with_capacity(DOMAIN.len() + body.len() + 128);
    input.extend_from_slice(DOMAIN);
    scope.write(&mut input);
    field(&mut input, body);
    input
}

/// Whether two tags are equal, in time that does not depend on where they differ.
fn same_tag(expected: &[u8], given: &[u8]) -> bool {
    if expected.len() != given.len() {
        return false;
    }
    let diff = expected
        .iter()
        .zip(given)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b));
    std::hint::black_box(diff) == 0
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 §5).
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let bits = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((bits >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// The bytes of canonical unpadded base64url text, or `None` (any other text, including
/// another spelling of the same bytes).
fn decode(text: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for chunk in text.as_bytes().chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= u32::from(sextet(c)?) << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((bits >> (16 - 8 * i)) as u8);
        }
    }
    (encode(&out) == text).then_some(out)
}

#[cfg(test)]
mod tests {
    use std::hash::{Hash, Hasher};

    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::input::{InputRequest, InputRequests};

    /// A keyed tag for the tests: SipHash under the key, stretched to 32 bytes. Not a MAC to
    /// deploy (its output is 64 bits repeated), but keyed, which is all these tests need.
    struct TestMac(u64);

    impl StateMac for TestMac {
        fn tag(&self, message: &[u8]) -> [u8; TAG_LEN] {
            #[allow(deprecated)]
            let mut hasher = std::hash::SipHasher::new_with_keys(self.0, !self.0);
            message.hash(&mut hasher);
            let half = hasher.finish().to_be_bytes();
            let mut tag = [0; TAG_LEN];
            for (n, byte) in tag.iter_mut().enumerate() {
                *byte = half[n % 8];
            }
            tag
        }
    }

    fn states(clock: &ManualClock) -> RequestStates<TestMac> {
        RequestStates::new(TestMac(7)).with_clock(clock.clone())
    }

    fn question() -> InputRequests {
        InputRequests::new().with(
            "confirm",
            InputRequest::elicitation(
                json!({"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
    }

    fn retry(state: &str, responses: Value) -> Value {
        json!({"name": "confirm", "arguments": {"question": "A?"}, "requestState": state, "inputResponses": responses})
    }

    fn first_state(states: &RequestStates<TestMac>, scope: &StateScope<'_>) -> String {
        let asked = states.ask(
            scope,
            &Round::first(),
            Ask::new(question()).remembering(json!({"step": 1})),
        );
        asked.request_state().unwrap_or_default().to_owned()
    }

    #[test]
    fn base64url_round_trips_and_refuses_other_spellings() {
        for bytes in [
            &b""[..],
            b"f",
            b"fo",
            b"foo",
            b"foob",
            b"fooba",
            b"foobar",
            &[0xff; 7],
        ] {
            let text = encode(bytes);
            assert!(!text.contains('='), "{text}");
            assert_eq!(decode(&text).as_deref(), Some(bytes), "{text}");
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        // Non-zero trailing bits spell the same bytes another way: refused.
        assert_eq!(decode("Zh"), None);
        assert_eq!(decode("Zg"), Some(b"f".to_vec()));
        for bad in ["Z", "Zg=", "Zm9v+", "Zm9v/", "Zm 9"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_state_round_trips_with_the_answers_it_asked_for() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_000_000));
        let states = states(&clock);
        let alice = Owner::new("alice");
        let params = retry("", json!({}));
        let scope = StateScope::of_request(&alice, "tools/call", Some(&params));
        let asked = states.ask(
            &scope,
            &Round::first(),
            Ask::new(question()).remembering(json!({"step": 1})),
        );
        assert_eq!(asked.input_requests(), &question());
        let state = asked.request_state().expect("a state").to_owned();
        assert!(state.len() < 200, "{state}");

        let answers = json!({"confirm": {"action": "accept"}, "extra": {"action": "decline"}});
        let params = retry(&state, answers);
        let scope = StateScope::of_request(&alice, "tools/call", Some(&params));
        let round = states.round(&scope, Some(&params)).expect("accepted");
        assert_eq!(round.number(), 1);
        assert!(!round.is_first());
        assert_eq!(round.data(), &json!({"step": 1}));
        assert_eq!(round.responses().len(), 1, "only the key asked");
        assert_eq!(round.response("confirm").unwrap()["action"], "accept");

        // The next round's state differs and counts on.
        let next = states.ask(&scope, &round, Ask::new(question()));
        let next_state = next.request_state().unwrap();
        assert_ne!(next_state, state);
        let params = retry(next_state, json!({}));
        let round = states.round(&scope, Some(&params)).expect("accepted");
        assert_eq!((round.number(), round.data()), (2, &Value::Null));
    }

    #[test]
    fn round_zero_passes_every_answer_on() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(0));
        let states = states(&clock);
        let owner = Owner::anonymous();
        let params = json!({"name": "t", "inputResponses": {"a": {"action": "accept"}, "b": {}}});
        let scope = StateScope::of_request(&owner, "tools/call", Some(&params));
        let round = states.round(&scope, Some(&params)).unwrap();
        assert!(round.is_first());
        assert_eq!(round.responses().len(), 2);
        assert_eq!(states.round(&scope, None).unwrap(), Round::first());
    }

    #[test]
    fn malformed_answers_are_refused_naming_the_key() {
        let states = states(&ManualClock::new(Timestamp::UNIX_EPOCH));
        let owner = Owner::anonymous();
        let scope = StateScope::new(&owner, "tools/call", "t");
        for (responses, key) in [
            (json!(null), None),
            (json!([1]), None),
            (json!({"user_name": 12345}), Some("user_name".to_owned())),
        ] {
            let params = json!({"name": "t", "inputResponses": responses});
            let error = states.round(&scope, Some(&params)).unwrap_err();
            assert_eq!(error, RoundError::InvalidResponses { key: key.clone() });
            let wire = error.to_jsonrpc();
            assert_eq!(wire.code, INVALID_PARAMS);
            assert!(wire.message.contains("inputResponses"), "{}", wire.message);
            if let Some(key) = key {
                assert!(wire.message.contains(&key), "{}", wire.message);
            }
        }
    }

    #[test]
    fn a_tampered_forged_or_foreign_state_is_refused_alike() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(5_000));
        let states = states(&clock);
        let alice = Owner::new("alice");
        let arguments = json!({"question": "A?"});
        let arguments = arguments.as_object().unwrap();
        let scope = StateScope::new(&alice, "tools/call", "confirm").with_arguments(arguments);
        let state = first_state(&states, &scope);
        assert!(
            states
                .round(&scope, Some(&json!({"requestState": state})))
                .is_ok()
        );

        let (body, tag) = state.split_once('.').unwrap();
        let mut flipped = decode(body).unwrap();
        flipped[2] ^= 1;
        let bob = Owner::new("bob");
        let nobody = Owner::anonymous();
        let other_question = json!({"question": "B?"});
        let other_question = other_question.as_object().unwrap();
        let refused: Vec<(String, StateScope<'_>)> = vec![
            (format!("{state}-TAMPERED"), scope),
            (format!("{}.{tag}", encode(&flipped)), scope),
            (format!("{body}.{}", encode(&[0; TAG_LEN])), scope),
            (body.to_owned(), scope),
            (String::new(), scope),
            ("a.b.c".to_owned(), scope),
            ("é".repeat(MAX_STATE_LEN), scope),
            (
                state.clone(),
                StateScope::new(&bob, "tools/call", "confirm").with_arguments(arguments),
            ),
            (
                state.clone(),
                StateScope::new(&nobody, "tools/call", "confirm").with_arguments(arguments),
            ),
            (
                state.clone(),
                StateScope::new(&alice, "tools/call", "other").with_arguments(arguments),
            ),
            (
                state.clone(),
                StateScope::new(&alice, "prompts/get", "confirm").with_arguments(arguments),
            ),
            (
                state.clone(),
                StateScope::new(&alice, "tools/call", "confirm").with_arguments(other_question),
            ),
            (
                state.clone(),
                StateScope::new(&alice, "tools/call", "confirm"),
            ),
        ];
        for (given, scope) in refused {
            let params = json!({"requestState": given});
            assert_eq!(
                states.round(&scope, Some(&params)),
                Err(RoundError::Refused),
                "{given:.60} for {scope:?}"
            );
        }
        // Another key (another server) refuses it too.
        let elsewhere = RequestStates::new(TestMac(8)).with_clock(clock.clone());
        assert_eq!(
            elsewhere.round(&scope, Some(&json!({"requestState": state}))),
            Err(RoundError::Refused)
        );
        // A state must be a string.
        assert_eq!(
            states.round(&scope, Some(&json!({"requestState": 3}))),
            Err(RoundError::Refused)
        );
        assert!(
            RoundError::Refused
                .to_jsonrpc()
                .message
                .contains("requestState")
        );
    }

    #[test]
    fn the_scope_ignores_the_order_of_argument_keys() {
        let states = states(&ManualClock::new(Timestamp::UNIX_EPOCH));
        let owner = Owner::anonymous();
        let one: JsonObject =
            serde_json::from_str(r#"{"a": 1, "b": {"y": [1, 2], "x": "é"}}"#).unwrap();
        let two: JsonObject =
            serde_json::from_str(r#"{"b": {"x": "é", "y": [1, 2]}, "a": 1}"#).unwrap();
        let state = first_state(
            &states,
            &StateScope::new(&owner, "tools/call", "t").with_arguments(&one),
        );
        let scope = StateScope::new(&owner, "tools/call", "t").with_arguments(&two);
        assert!(
            states
                .round(&scope, Some(&json!({"requestState": state})))
                .is_ok()
        );
        let empty = JsonObject::new();
        let state = first_state(&states, &StateScope::new(&owner, "tools/call", "t"));
        let scope = StateScope::new(&owner, "tools/call", "t").with_arguments(&empty);
        assert!(
            states
                .round(&scope, Some(&json!({"requestState": state})))
                .is_ok()
        );
    }

    #[test]
    fn a_state_expires_after_its_lifetime() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(10_000));
        let states = states(&clock).with_lifetime(Duration::from_secs(60));
        assert_eq!(states.lifetime(), Duration::from_secs(60));
        let owner = Owner::new("alice");
        let scope = StateScope::new(&owner, "tools/call", "t");
        let state = first_state(&states, &scope);
        let params = json!({"requestState": state});
        clock.advance(Duration::from_millis(59_999));
        assert!(states.round(&scope, Some(&params)).is_ok());
        clock.advance(Duration::from_millis(1));
        let expired = states.round(&scope, Some(&params)).unwrap_err();
        assert_eq!(
            expired,
            RoundError::Expired {
                expired_at: Timestamp::from_unix_millis(70_000)
            }
        );
        let message = expired.to_jsonrpc().message;
        assert!(
            message.contains("expired at 1970-01-01T00:01:10Z"),
            "{message}"
        );
        assert!(format!("{states:?}").contains("lifetime"));
    }
}
