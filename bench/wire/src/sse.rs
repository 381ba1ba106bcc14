//! JSON-RPC messages out of an HTTP answer: a JSON body, or a `text/event-stream` whose
//! events carry one message each in their `data` lines.

use std::borrow::Cow;

use crate::wire::{Message, Reading};

/// An incremental `text/event-stream` reader: bytes in, each complete event's data out.
#[derive(Debug, Default)]
pub struct EventReader {
    buffer: Vec<u8>,
}

impl EventReader {
    /// Nothing read yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes as they arrive.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The data of the next complete event that has any (its `data:` lines joined with
    /// `\n`); events without data or with empty data (priming events, comments) are
    /// skipped. `None` until
    /// one is complete.
    pub fn next_data(&mut self) -> Option<String> {
        loop {
            let end = event_end(&self.buffer)?;
            let event: Vec<u8> = self.buffer.drain(..end.0 + end.1).collect();
            let text = String::from_utf8_lossy(&event[..end.0]);
            let mut data: Option<String> = None;
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("data:") else {
                    continue;
                };
                let rest = rest.strip_prefix(' ').unwrap_or(rest);
                match &mut data {
                    Some(joined) => {
                        joined.push('\n');
                        joined.push_str(rest);
                    }
                    None => data = Some(rest.to_owned()),
                }
            }
            if let Some(data) = data
                && !data.is_empty()
            {
                return Some(data);
            }
        }
    }
}

/// Where the first event ends: its length and the length of the blank line after it
/// (`\n\n` or `\r\n\r\n`).
fn event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|pair| pair == b"\n\n");
    let crlf = buffer.windows(4).position(|quad| quad == b"\r\n\r\n");
    match (lf, crlf) {
        (Some(a), Some(b)) if b < a => Some((b, 4)),
        (Some(a), _) => Some((a, 2)),
        (None, Some(b)) => Some((b, 4)),
        (None, None) => None,
    }
}

/// The JSON text of every JSON-RPC message of a whole answer: the body itself for JSON,
/// each event's data for an event stream (a final event without its blank line counts
/// too).
///
/// # Errors
/// A JSON body that is not UTF-8.
pub fn texts<'a>(content_type: &str, body: &'a [u8]) -> Result<Vec<Cow<'a, str>>, String> {
    if content_type.starts_with("text/event-stream") {
        let mut reader = EventReader::new();
        reader.push(body);
        reader.push(b"\n\n");
        let mut out = Vec::new();
        while let Some(data) = reader.next_data() {
            out.push(Cow::Owned(data));
        }
        Ok(out)
    } else {
        std::str::from_utf8(body)
            .map(|text| vec![Cow::Borrowed(text)])
            .map_err(|err| format!("{err}: {}", String::from_utf8_lossy(body)))
    }
}

/// How a whole answer answered request `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// With a result.
    Result(Reading),
    /// With a JSON-RPC error (its JSON text).
    Error(String),
    /// With neither a result nor an error.
    Empty,
    /// Not at all: no message is the answer to `id`.
    Missing,
}

/// The answer to request `id` among the messages of a whole answer ([`texts`];
/// notifications, requests and other ids skipped).
///
/// # Errors
/// A message that is not JSON.
pub fn answer_to(content_type: &str, body: &[u8], id: u64) -> Result<Answered, String> {
    for text in texts(content_type, body)? {
        let message: Message =
            serde_json::from_str(&text).map_err(|err| format!("{err}: {text}"))?;
        if !message.answers(id) {
            continue;
        }
        return Ok(match (message.error, message.result) {
            (Some(error), _) => Answered::Error(error.get().to_owned()),
            (None, Some(result)) => Answered::Result(Reading::from(result)),
            (None, None) => Answered::Empty,
        });
    }
    Ok(Answered::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_body_is_one_message() {
        let body = br#"{"jsonrpc":"2.0","id":3,"result":{"taskId":"t","status":"working"}}"#;
        let Answered::Result(read) = answer_to("application/json", body, 3).unwrap() else {
            panic!("not a result");
        };
        assert_eq!(read.task_id.as_deref(), Some("t"));
        assert_eq!(
            answer_to("application/json", body, 4).unwrap(),
            Answered::Missing
        );
        assert!(answer_to("application/json", b"nope", 3).is_err());
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#;
        assert!(matches!(
            answer_to("application/json", error, 3).unwrap(),
            Answered::Error(text) if text.contains("-32602")
        ));
    }

    #[test]
    fn an_event_stream_yields_each_data_event_and_skips_priming() {
        let body = b"id: 0\nretry: 1000\ndata:\n\n: comment\n\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{\"content\":[]}}";
        let read = texts("text/event-stream", body).unwrap();
        // The priming event (an empty data line) and the comment are skipped.
        assert_eq!(read.len(), 2, "{read:?}");
        let Answered::Result(read) = answer_to("text/event-stream", body, 7).unwrap() else {
            panic!("not a result");
        };
        assert_eq!(read.tool_ok, Some(true));
    }

    #[test]
    fn events_are_read_as_their_bytes_arrive() {
        let mut reader = EventReader::new();
        reader.push(b"data: {\"a\"");
        assert_eq!(reader.next_data(), None);
        reader.push(b":1}\n");
        assert_eq!(reader.next_data(), None);
        reader.push(b"\ndata: 2\n\n");
        assert_eq!(reader.next_data().as_deref(), Some("{\"a\":1}"));
        assert_eq!(reader.next_data().as_deref(), Some("2"));
        assert_eq!(reader.next_data(), None);
    }
}
