//! The stdio transport, optionally recording every line read and written (the trace
//! format of the crate's stdio example, so `interop/validate_trace.py` can check it).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, Stdin, Stdout};

/// Where trace lines go.
struct Trace(Mutex<File>);

impl Trace {
    /// Records each complete line in `pending` as `{"dir": dir, "msg": ...}`.
    fn lines(&self, dir: &str, pending: &mut Vec<u8>) {
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let entry = match serde_json::from_str::<Value>(text) {
                Ok(msg) => json!({"dir": dir, "msg": msg}),
                Err(_) => json!({"dir": dir, "raw": text}),
            };
            let mut file = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(err) = writeln!(file, "{entry}") {
                eprintln!("rmcp-example: cannot write the trace: {err}");
            }
        }
    }
}

/// A reader or writer that also hands what passed through it to the trace.
pub struct Traced<T> {
    inner: T,
    pending: Vec<u8>,
    trace: Option<Arc<Trace>>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Traced<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(trace)) = (&poll, &this.trace) {
            this.pending.extend_from_slice(&buf.filled()[before..]);
            trace.lines("in", &mut this.pending);
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Traced<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(written)), Some(trace)) = (&poll, &this.trace) {
            this.pending.extend_from_slice(&buf[..*written]);
            trace.lines("out", &mut this.pending);
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Stdin and stdout for rmcp, traced into `path` (appended) when given.
pub fn stdio(path: Option<OsString>) -> io::Result<(Traced<Stdin>, Traced<Stdout>)> {
    let trace = match path {
        Some(path) => Some(Arc::new(Trace(Mutex::new(
            OpenOptions::new().create(true).append(true).open(path)?,
        )))),
        None => None,
    };
    Ok((
        Traced {
            inner: tokio::io::stdin(),
            pending: Vec::new(),
            trace: trace.clone(),
        },
        Traced {
            inner: tokio::io::stdout(),
            pending: Vec::new(),
            trace,
        },
    ))
}
