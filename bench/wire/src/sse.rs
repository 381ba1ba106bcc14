//! JSON-RPC messages out of an HTTP answer: a JSON body, or a `text/event-stream` whose
//! events carry one message each in their `data` lines.

use serde_json::Value;

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

/// Every JSON-RPC message of a whole answer: the body itself for JSON, each event's data
/// for an event stream (a final event without its blank line counts too).
///
/// # Errors
/// A message that is not JSON.
pub fn messages(content_type: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    if content_type.starts_with("text/event-stream") {
        let mut reader = EventReader::new();
        reader.push(body);
        reader.push(b"\n\n");
        let mut out = Vec::new();
        while let Some(data) = reader.next_data() {
            out.push(serde_json::from_str(&data).map_err(|err| format!("{err}: {data}"))?);
        }
        Ok(out)
    } else {
        let value = serde_json::from_slice(body)
            .map_err(|err| format!("{err}: {}", String::from_utf8_lossy(body)))?;
        Ok(vec![value])
    }
}

/// The answer to request `id` among `messages` (notifications and other ids skipped).
#[must_use]
pub fn answer_to(messages: Vec<Value>, id: u64) -> Option<Value> {
    messages
        .into_iter()
        .find(|message| message.get("id").and_then(Value::as_u64) == Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_body_is_one_message() {
        let body = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        let read = messages("application/json", body).unwrap();
        assert_eq!(read, vec![json!({"jsonrpc": "2.0", "id": 3, "result": {}})]);
        assert!(messages("application/json", b"nope").is_err());
    }

    #[test]
    fn an_event_stream_yields_each_data_event_and_skips_priming() {
        let body = b"id: 0\nretry: 1000\ndata:\n\n: comment\n\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{\"a\":1}}";
        let read = messages("text/event-stream", body).unwrap();
        // The priming event (an empty data line) and the comment are skipped.
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(
            answer_to(read, 7),
            Some(json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}))
        );
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
