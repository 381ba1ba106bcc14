//! The 2026-07-28 wire (stateless, the tasks extension) for the listen tests and the
//! listen-vs-poll benchmark: requests on one keep-alive connection, and a
//! `subscriptions/listen` stream read event by event.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Conn, Response, event_data};

/// The `_meta` of a request that declares the tasks extension.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    })
}

/// The params of a listen on `task_ids`, declaring the extension or not.
pub fn listen_params(task_ids: &[String], declared: bool) -> Value {
    let mut meta = meta();
    if !declared {
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    json!({"notifications": {"taskIds": task_ids}, "_meta": meta})
}

/// A whole 2026-07-28 POST of request `id`: its routing headers (`Mcp-Method`, and
/// `Mcp-Name` for a tool or task), `Accept` with or without `text/event-stream`.
pub fn request(
    addr: SocketAddr,
    token: &str,
    id: u64,
    method: &str,
    params: &Value,
    sse: bool,
) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let name = ["name", "taskId"]
        .iter()
        .find_map(|member| params.get(member)?.as_str())
        .map_or_else(String::new, |name| format!("Mcp-Name: {name}\r\n"));
    let accept = if sse {
        "application/json, text/event-stream"
    } else {
        "application/json"
    };
    let mut bytes = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: {accept}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// A client of one principal on one keep-alive connection, counting its requests.
pub struct Client {
    conn: Conn,
    addr: SocketAddr,
    token: String,
    next_id: u64,
    /// Requests sent so far.
    pub sent: u64,
}

impl Client {
    /// Connects as the principal of `token`.
    pub fn open(addr: SocketAddr, token: &str) -> io::Result<Client> {
        Ok(Client {
            conn: Conn::open(addr, Duration::from_secs(30))?,
            addr,
            token: token.to_owned(),
            next_id: 0,
            sent: 0,
        })
    }

    /// Sends a request; the whole HTTP answer.
    pub fn call(&mut self, method: &str, params: &Value) -> io::Result<Response> {
        self.next_id += 1;
        self.sent += 1;
        let bytes = request(self.addr, &self.token, self.next_id, method, params, false);
        self.conn.write_raw(&bytes)?;
        let answer = self.conn.read_response()?;
        if answer.closes() {
            self.conn = Conn::open(self.addr, Duration::from_secs(30))?;
        }
        Ok(answer)
    }

    /// A request that must succeed: its `result`.
    pub fn result(&mut self, method: &str, params: &Value) -> Value {
        let answer = self
            .call(method, params)
            .unwrap_or_else(|err| panic!("{method}: {err}"));
        let message = answer
            .message()
            .unwrap_or_else(|err| panic!("{method}: {err}"));
        assert_eq!(answer.status, 200, "{method}: {message}");
        message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method}: {message}"))
    }

    /// Starts a `sleep {ms}` task; its id.
    pub fn sleep_task(&mut self, ms: u64) -> String {
        let created = self.result(
            "tools/call",
            &json!({"name": "sleep", "arguments": {"ms": ms}, "_meta": meta()}),
        );
        created["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("not a CreateTaskResult: {created}"))
            .to_owned()
    }
}

/// An open `subscriptions/listen` stream.
pub struct Listen {
    conn: Conn,
    buffer: Vec<u8>,
}

impl Listen {
    /// Sends the listen request `id` (accepting an event stream if `sse`): the stream, or
    /// the whole answer that refused it.
    pub fn start(
        addr: SocketAddr,
        token: &str,
        id: u64,
        params: &Value,
        sse: bool,
    ) -> io::Result<Result<Listen, Response>> {
        let mut conn = Conn::open(addr, Duration::from_secs(30))?;
        conn.write_raw(&request(
            addr,
            token,
            id,
            "subscriptions/listen",
            params,
            sse,
        ))?;
        Ok(conn.read_stream_head()?.map(|_| Listen {
            conn,
            buffer: Vec::new(),
        }))
    }

    /// A listen that must open.
    pub fn open(addr: SocketAddr, token: &str, id: u64, params: &Value) -> Listen {
        match Self::start(addr, token, id, params, true) {
            Ok(Ok(listen)) => listen,
            Ok(Err(refused)) => panic!(
                "listen {id} refused: HTTP {}: {}",
                refused.status,
                refused.text()
            ),
            Err(err) => panic!("listen {id}: {err}"),
        }
    }

    /// A listen that must be refused: the answer.
    pub fn refused(addr: SocketAddr, token: &str, id: u64, params: &Value, sse: bool) -> Response {
        match Self::start(addr, token, id, params, sse) {
            Ok(Err(refused)) => refused,
            Ok(Ok(_)) => panic!("listen {id} was opened"),
            Err(err) => panic!("listen {id}: {err}"),
        }
    }

    /// Waits at most `timeout` for each read from now on.
    pub fn set_timeout(&self, timeout: Duration) {
        self.conn.set_read_timeout(timeout);
    }

    /// The next message of the stream (comments skipped); `None` once it ended.
    pub fn next_message(&mut self) -> io::Result<Option<Value>> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let Some(data) = event_data(&String::from_utf8_lossy(&event)) else {
                    continue;
                };
                let message = serde_json::from_str(&data)
                    .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
                return Ok(Some(message));
            }
            match self.conn.read_chunk()? {
                Some(chunk) => self.buffer.extend_from_slice(&chunk),
                None => return Ok(None),
            }
        }
    }
}
