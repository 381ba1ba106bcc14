//! JSON-RPC 2.0 framing, shared by both example servers: what one incoming message is, and
//! how an answer is written.
//!
//! The rules, the same over stdio and Streamable HTTP:
//! - a message is one JSON object with `"jsonrpc": "2.0"` (exactly that string); anything
//!   else is answered `-32600` (invalid request), bytes that are not JSON `-32700`;
//! - a request's `id` is a string or an integer, as MCP's `RequestId` says. Integers are
//!   unbounded in JSON Schema, so any integer literal is accepted (`-0`, `2^63`,
//!   `-99999999999999999999`, and `1e3` or `2.0`, which are integers too) and echoed byte
//!   for byte as the client wrote it ([`Id`]);
//! - `params`, when present, is an object or an array;
//! - an error that answers a request whose `id` could be read carries that `id`. Where the
//!   `id` cannot be read (not JSON, not an object, an `id` that is `null`, a fraction, an
//!   object ...), the error response has no `id` member at all: MCP's error response makes
//!   `id` optional and does not allow `null`;
//! - notifications and answers to the server's own requests are never answered, unless they
//!   are not JSON-RPC 2.0 (then `-32600` without an `id`).

use std::collections::HashMap;
use std::fmt;

use mcp_tasks::{JsonObject, JsonRpcError, RequestId, jsonrpc};
use serde_json::Value;
use serde_json::value::RawValue;

/// A request's `id` as the client wrote it: a JSON string or a JSON integer.
///
/// The answer echoes [`as_json`](Self::as_json), the exact text read. The task store
/// records a task's originating request as a [`RequestId`] ([`request_id`](Self::request_id)):
/// a string, an integer that fits `i64` (written in its plain form), or else the integer's
/// text as a string; that record is never sent back on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id {
    raw: Box<str>,
    key: RequestId,
}

impl Id {
    /// The id whose JSON text is `raw`, or `None` if it is not a string or an integer.
    pub fn parse(raw: &str) -> Option<Id> {
        let raw = raw.trim();
        let key = if is_plain_count(raw) {
            // The usual id (`7`): digits as `i64` prints them, read without the checks below.
            RequestId::Number(raw.parse::<i64>().ok()?)
        } else if raw.starts_with('"') {
            RequestId::String(serde_json::from_str::<String>(raw).ok()?)
        } else if is_integer_literal(raw) {
            match raw.parse::<i64>() {
                Ok(n) if n.to_string() == raw => RequestId::Number(n),
                _ => RequestId::String(raw.to_owned()),
            }
        } else {
            return None;
        };
        Some(Id {
            raw: raw.into(),
            key,
        })
    }

    /// The id exactly as the client wrote it (JSON text).
    pub fn as_json(&self) -> &str {
        &self.raw
    }

    /// The id the task store records for a task this request creates.
    pub fn request_id(&self) -> &RequestId {
        &self.key
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// Whether `text` is a non-negative integer written as `i64` prints it: 1 to 18 digits, no
/// leading zero (so it fits, and reads back as written).
fn is_plain_count(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=18).contains(&bytes.len())
        && bytes.iter().all(u8::is_ascii_digit)
        && (bytes[0] != b'0' || bytes.len() == 1)
}

/// Whether `text` is a JSON number whose value is an integer (`7`, `-0`, `1e3`, `2.50e1`),
/// however large.
fn is_integer_literal(text: &str) -> bool {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (int.len() > 1 && int.starts_with('0')) {
        return false;
    }
    if frac.is_some_and(|frac| !digits(frac)) {
        return false;
    }
    let exponent = match exponent {
        None => 0i64,
        Some(exp) => {
            let magnitude = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if !digits(magnitude) {
                return false;
            }
            // Saturates: an exponent beyond i64 is as good as infinite either way.
            let value = magnitude.parse::<i64>().unwrap_or(i64::MAX);
            if exp.starts_with('-') { -value } else { value }
        }
    };
    // The value is `digits * 10^(exponent - fraction length)`: an integer when the
    // significant fraction digits are covered by the exponent, or the negative power is
    // covered by trailing zeros (or the value is zero).
    let frac = frac.unwrap_or("").trim_end_matches('0');
    let all: String = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    if significant.is_empty() {
        return true;
    }
    let scale = exponent.saturating_sub(i64::try_from(frac.len()).unwrap_or(i64::MAX));
    let trailing_zeros = significant.len() - significant.trim_end_matches('0').len();
    scale >= 0 || i64::try_from(trailing_zeros).unwrap_or(i64::MAX) >= -scale
}

/// One message read from the client, classified.
#[derive(Debug)]
pub enum Incoming {
    /// A request: answer it, echoing `id`.
    Request {
        /// The request's id.
        id: Id,
        /// The method.
        method: String,
        /// The params (an object or an array), if any.
        params: Option<Value>,
    },
    /// A notification: never answered.
    Notification {
        /// The method.
        method: String,
        /// The params (an object or an array), if any.
        params: Option<Value>,
    },
    /// An answer to a request the server sent (it has `result` or `error`, no `method`).
    Response(JsonObject),
    /// Not a JSON-RPC 2.0 message: send [`Refusal::to_json`].
    Invalid(Refusal),
}

/// The error that answers a message that is not valid JSON-RPC 2.0.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The request's id, when it could be read.
    pub id: Option<Id>,
    /// `-32700` or `-32600`.
    pub error: JsonRpcError,
}

impl Refusal {
    fn new(id: Option<Id>, code: i64, message: &str) -> Self {
        Refusal {
            id,
            error: JsonRpcError::new(code, message),
        }
    }

    /// `-32600` for a message no one could answer by id (`id` omitted).
    pub fn invalid_request(message: &str) -> Self {
        Self::new(None, jsonrpc::INVALID_REQUEST, message)
    }

    /// The error response, as one line of JSON.
    pub fn to_json(&self) -> String {
        response(self.id.as_ref(), &Err(self.error.clone()))
    }
}

/// Reads one message (the bytes of one stdio line or one HTTP body).
pub fn parse(bytes: &[u8]) -> Incoming {
    // The common case in one pass over the envelope: a request or notification whose
    // members are read as written, only `params` as a JSON value. Anything else (an
    // answer, a message that is wrong in any way) takes the long way, which says exactly
    // what is wrong.
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Some(fast) = parse_request(text)
    {
        return fast;
    }
    parse_slowly(bytes)
}

/// The members of a message's envelope: each as written but `params`, read as a value in
/// the same pass. A member given twice fails the read (the long way then says what the
/// message is).
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
}

/// A member that is there, whatever its value (`null` too): `Some`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A request or notification that is right in every way, read from its envelope's raw
/// members; `None` for anything else.
fn parse_request(text: &str) -> Option<Incoming> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let members: Envelope<'_> = serde_json::from_str(text).ok()?;
    if members.jsonrpc?.get() != "\"2.0\"" {
        return None;
    }
    let method = members.method?.get();
    if !method.starts_with('"') {
        return None;
    }
    let method: String = serde_json::from_str(method).ok()?;
    let params = members.params;
    if params
        .as_ref()
        .is_some_and(|params| !params.is_object() && !params.is_array())
    {
        return None;
    }
    match members.id {
        None => Some(Incoming::Notification { method, params }),
        Some(raw) => Some(Incoming::Request {
            id: Id::parse(raw.get())?,
            method,
            params,
        }),
    }
}

/// [`parse`], the long way: every member looked at, every fault named.
fn parse_slowly(bytes: &[u8]) -> Incoming {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            return Incoming::Invalid(Refusal::new(
                None,
                jsonrpc::PARSE_ERROR,
                &format!("parse error: {err}"),
            ));
        }
    };
    let message: Value = match serde_json::from_str(text) {
        Ok(message) => message,
        Err(err) => {
            return Incoming::Invalid(Refusal::new(
                None,
                jsonrpc::PARSE_ERROR,
                &format!("parse error: {err}"),
            ));
        }
    };
    let Value::Object(mut message) = message else {
        let message = if message.is_array() {
            "invalid request: send one JSON-RPC object per line or POST body (batches are not \
             supported)"
        } else {
            "invalid request: send one JSON-RPC object per line or POST body"
        };
        return Incoming::Invalid(Refusal::invalid_request(message));
    };
    // The id as written: a second look at the same text, which parsed as an object above.
    let id = match message.get("id") {
        None => None,
        Some(_) => {
            let raw = serde_json::from_str::<HashMap<String, &RawValue>>(text)
                .ok()
                .and_then(|members| members.get("id").and_then(|raw| Id::parse(raw.get())));
            match raw {
                Some(id) => Some(id),
                None if has_method(&message) => {
                    return Incoming::Invalid(Refusal::invalid_request(
                        "invalid request: `id` must be a string or an integer",
                    ));
                }
                // An answer to one of the server's requests: its id is the server's own.
                None => None,
            }
        }
    };
    let method = match message.remove("method") {
        Some(Value::String(method)) => Some(method),
        Some(_) => {
            return Incoming::Invalid(Refusal::new(
                id,
                jsonrpc::INVALID_REQUEST,
                "invalid request: `method` must be a string",
            ));
        }
        None if message.contains_key("result") || message.contains_key("error") => None,
        None => {
            return Incoming::Invalid(Refusal::invalid_request("invalid request: no `method`"));
        }
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Incoming::Invalid(Refusal::new(
            id.filter(|_| method.is_some()),
            jsonrpc::INVALID_REQUEST,
            "invalid request: `jsonrpc` must be the string \"2.0\"",
        ));
    }
    let Some(method) = method else {
        return Incoming::Response(message);
    };
    let params = message.remove("params");
    if params
        .as_ref()
        .is_some_and(|params| !params.is_object() && !params.is_array())
    {
        return Incoming::Invalid(Refusal::new(
            id,
            jsonrpc::INVALID_REQUEST,
            "invalid request: `params` must be an object",
        ));
    }
    match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    }
}

fn has_method(message: &JsonObject) -> bool {
    message.contains_key("method")
}

/// A response, as one line of JSON: `{"jsonrpc":"2.0","id":<as written>,"result"|"error":…}`,
/// without `id` when there is none to echo.
pub fn response(id: Option<&Id>, answer: &Result<Value, JsonRpcError>) -> String {
    // Written in one buffer: the envelope around the answer serialized in place.
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",");
    if let Some(id) = id {
        out.extend_from_slice(b"\"id\":");
        out.extend_from_slice(id.as_json().as_bytes());
        out.push(b',');
    }
    match answer {
        Ok(result) => {
            out.extend_from_slice(b"\"result\":");
            // A `Value` always serializes (its map keys are strings).
            let _ = serde_json::to_writer(&mut out, result);
        }
        Err(error) => {
            out.extend_from_slice(b"\"error\":");
            let start = out.len();
            if serde_json::to_writer(&mut out, error).is_err() {
                out.truncate(start);
                out.extend_from_slice(
                    format!(
                        "{{\"code\":{},\"message\":\"the error could not be written\"}}",
                        jsonrpc::INTERNAL_ERROR
                    )
                    .as_bytes(),
                );
            }
        }
    }
    out.push(b'}');
    // Every piece is UTF-8: the id's text, fixed ASCII, and serde_json's output.
    String::from_utf8(out).unwrap_or_default()
}

/// A response whose result is `result`, JSON text already written: as [`response`] with
/// `Ok` of that value.
pub fn result_response(id: Option<&Id>, result: &str) -> String {
    let mut out = String::with_capacity(32 + result.len());
    out.push_str("{\"jsonrpc\":\"2.0\",");
    if let Some(id) = id {
        out.push_str("\"id\":");
        out.push_str(id.as_json());
        out.push(',');
    }
    out.push_str("\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_reading_agrees_with_the_long_way() {
        let messages = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}}"#,
            r#"{"jsonrpc":"2.0","id":"a\u0037","method":"ping"}"#,
            r#"{"method":"ping","jsonrpc":"2.0","id":-99999999999999999999}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            r#"{"jsonrpc":"2.0","id":2,"m\u0065thod":"escaped"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#,
            r#" {"jsonrpc":"2.0","id":2,"method":"x","params":{} } "#,
        ];
        for text in messages {
            let fast = parse_request(text).unwrap_or_else(|| panic!("one pass: {text}"));
            assert_eq!(
                format!("{fast:?}"),
                format!("{:?}", parse_slowly(text.as_bytes())),
                "{text}"
            );
        }
        // Everything else takes the long way.
        for text in [
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"a","method":"b"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x""#,
        ] {
            assert!(parse_request(text).is_none(), "{text}");
        }
    }

    #[test]
    fn integer_literals_are_ids_and_fractions_are_not() {
        for ok in [
            "0",
            "-0",
            "7",
            "9223372036854775808",
            "-99999999999999999999",
            "1e3",
            "2.0",
            "2.50e1",
            "0.0e-5",
            "100e-2",
        ] {
            assert!(Id::parse(ok).is_some(), "{ok} is an integer");
        }
        for bad in [
            "1.5", "1e-1", "25e-2", "01", "-", "1.", ".5", "1e", "true", "null", "{}", "[]",
        ] {
            assert!(Id::parse(bad).is_none(), "{bad} is not an id");
        }
    }

    #[test]
    fn ids_map_to_the_store_s_request_ids() {
        let plain = Id::parse("42").expect("an id");
        assert_eq!(plain.request_id(), &RequestId::Number(42));
        for (text, n) in [("0", 0), ("123456789012345678", 123_456_789_012_345_678)] {
            let id = Id::parse(text).expect("an id");
            assert_eq!(id.request_id(), &RequestId::Number(n));
            assert_eq!(id.as_json(), text);
        }
        let negative = Id::parse("-0").expect("an id");
        assert_eq!(negative.request_id(), &RequestId::String("-0".into()));
        let big = Id::parse("9223372036854775808").expect("an id");
        assert_eq!(
            big.request_id(),
            &RequestId::String("9223372036854775808".into())
        );
        let text = Id::parse(r#""a\u0037""#).expect("an id");
        assert_eq!(text.request_id(), &RequestId::String("a7".into()));
        assert_eq!(text.as_json(), r#""a\u0037""#);
    }
}
