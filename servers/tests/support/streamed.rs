//! An HTTP/1.1 response read as a stream: the head at once, the body (de-chunked) on
//! demand, and its server-sent events one by one.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use super::WAIT;

/// An HTTP response whose head was read; its body (de-chunked) is read on demand.
pub struct Streamed {
    /// The HTTP status.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: BufReader<Box<dyn Read>>,
}

/// The payload of a `Transfer-Encoding: chunked` body.
struct Chunked {
    inner: BufReader<TcpStream>,
    /// Bytes left in the current chunk.
    left: usize,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                self.done = true;
                return Ok(0);
            }
            let size = size.trim();
            let size = size.split(';').next().unwrap_or(size);
            self.left = usize::from_str_radix(size, 16).map_err(|err| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("chunk size {size:?}: {err}"),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let read = self.inner.read(&mut buf[..want])?;
        if read == 0 {
            self.done = true;
            return Ok(0);
        }
        self.left -= read;
        if self.left == 0 {
            let mut crlf = String::new();
            self.inner.read_line(&mut crlf)?;
        }
        Ok(read)
    }
}

impl Streamed {
    /// The value of header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The next SSE event's `data` (its lines joined), skipping comments and events
    /// without data (the priming event); `None` once the stream ends.
    pub fn next_data(&mut self) -> Option<String> {
        let mut data: Vec<String> = Vec::new();
        loop {
            let mut line = String::new();
            let read = self
                .body
                .read_line(&mut line)
                .expect("the stream is readable");
            if read == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                let joined = data.join("\n");
                if !joined.trim().is_empty() {
                    return Some(joined);
                }
                data.clear();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
    }

    /// The next message of the stream (an event's JSON data) for which `want` holds; the
    /// messages before it go to `seen`.
    ///
    /// # Panics
    /// If the stream ends first (naming `what` was awaited, and what came), or an event's
    /// data is not JSON.
    pub fn next_message(
        &mut self,
        seen: &mut Vec<serde_json::Value>,
        what: &str,
        want: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        loop {
            let data = self
                .next_data()
                .unwrap_or_else(|| panic!("the stream ended before {what}: {seen:?}"));
            let message: serde_json::Value = serde_json::from_str(&data).expect("JSON data");
            if want(&message) {
                return message;
            }
            seen.push(message);
        }
    }

    /// The raw lines of the stream until `want` holds for one, or the stream ends.
    pub fn lines_until(&mut self, want: impl Fn(&str) -> bool) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self.body.read_line(&mut line).expect("readable") == 0 {
                return lines;
            }
            let done = want(&line);
            lines.push(line);
            if done {
                return lines;
            }
        }
    }
}

/// Sends `head` (the request line and headers, without the blank line) and `body`, and
/// reads the response's head.
pub fn send(addr: &str, head: &str, body: &str) -> Streamed {
    let mut stream = TcpStream::connect(addr).expect("the server accepts");
    stream.set_read_timeout(Some(WAIT)).expect("a timeout");
    write!(
        stream,
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("the server reads");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("a status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    let body: Box<dyn Read> = if chunked {
        Box::new(Chunked {
            inner: reader,
            left: 0,
            done: false,
        })
    } else {
        Box::new(reader)
    };
    Streamed {
        status,
        headers,
        body: BufReader::new(body),
    }
}
