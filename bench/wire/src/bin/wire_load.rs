//! `wire_load`: the load generator of the wire benchmark. N concurrent clients, each on
//! its own keep-alive HTTP/1.1 connection, each in a loop: `tools/call` of `sleep {ms}` as
//! a task, then `tasks/get` every `--poll-ms` until the task is terminal, then its result
//! (`tasks/result` on 2025-11-25; on 2026-07-28 the terminal `tasks/get` carries it).
//! With `--mode listen` (2026-07-28, a server that serves `subscriptions/listen` with
//! `notifications.taskIds`), a client opens a listen on its new task instead of polling
//! (see the README for its exact steps).
//!
//! ```text
//! wire_load --url http://127.0.0.1:PORT/mcp --wire 2025-11-25|2026-07-28 \
//!     [--mode poll|listen] [--clients 100] [--ms 0] [--duration 10] [--warmup 2] \
//!     [--poll-ms 50] [--ttl-ms 60000] [--token-prefix tok- --principals 100] \
//!     [--pid SERVER_PID] [--label NAME] [--workers 2] [--timeout 30] \
//!     [--setup-timeout 120]
//! ```
//!
//! Prints one JSON line on stdout (the cell's figures; see the README) and exits 1 if any
//! request failed, 2 on a usage error. Everything else goes to stderr.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue,
};
use hyper::{Method, Uri};
use hyper_util::rt::TokioIo;
use mcp_tasks_wire_bench::procfs;
use mcp_tasks_wire_bench::sse::{self, Answered, EventReader};
use mcp_tasks_wire_bench::stats::Samples;
use mcp_tasks_wire_bench::wire::{self, Params, Reading, Wire};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// How clients follow their tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Poll,
    Listen,
}

#[derive(Debug, Clone)]
struct Args {
    addr: SocketAddr,
    /// `Host`, as a header value (built once).
    host: HeaderValue,
    /// The endpoint's path, parsed once.
    path: Uri,
    wire: Wire,
    mode: Mode,
    clients: usize,
    ms: u64,
    duration: Duration,
    warmup: Duration,
    poll: Duration,
    ttl_ms: u64,
    token_prefix: Option<String>,
    principals: usize,
    pid: Option<u32>,
    label: String,
    workers: usize,
    timeout: Duration,
    setup_timeout: Duration,
}

const USAGE: &str = "usage: wire_load --url http://HOST:PORT/PATH --wire 2025-11-25|2026-07-28 \
    [--mode poll|listen] [--clients N] [--ms MS] [--duration S] [--warmup S] [--poll-ms MS] \
    [--ttl-ms MS] [--token-prefix P --principals K] [--pid PID] [--label NAME] [--workers W] \
    [--timeout S] [--setup-timeout S]";

fn parse_args() -> Result<Args, String> {
    let mut url = None;
    let mut wire = None;
    let mut args = Args {
        addr: ([127, 0, 0, 1], 0).into(),
        host: HeaderValue::from_static("127.0.0.1"),
        path: Uri::from_static("/"),
        wire: Wire::V2025,
        mode: Mode::Poll,
        clients: 100,
        ms: 0,
        duration: Duration::from_secs(10),
        warmup: Duration::from_secs(2),
        poll: Duration::from_millis(50),
        ttl_ms: 60_000,
        token_prefix: None,
        principals: 100,
        pid: None,
        label: String::new(),
        workers: 2,
        timeout: Duration::from_secs(30),
        setup_timeout: Duration::from_secs(120),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))
        };
        let number = |text: String| -> Result<u64, String> {
            text.parse().map_err(|err| format!("{flag} {text}: {err}"))
        };
        let seconds = |text: String| -> Result<Duration, String> {
            let secs: f64 = text
                .parse()
                .map_err(|err| format!("{flag} {text}: {err}"))?;
            Duration::try_from_secs_f64(secs).map_err(|err| format!("{flag} {text}: {err}"))
        };
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--wire" => wire = Some(Wire::parse(&value()?)?),
            "--mode" => {
                args.mode = match value()?.as_str() {
                    "poll" => Mode::Poll,
                    "listen" => Mode::Listen,
                    other => return Err(format!("--mode {other}: poll or listen")),
                }
            }
            "--clients" => args.clients = usize::try_from(number(value()?)?).unwrap_or(1),
            "--ms" => args.ms = number(value()?)?,
            "--duration" => args.duration = seconds(value()?)?,
            "--warmup" => args.warmup = seconds(value()?)?,
            "--poll-ms" => args.poll = Duration::from_millis(number(value()?)?),
            "--ttl-ms" => args.ttl_ms = number(value()?)?,
            "--token-prefix" => args.token_prefix = Some(value()?),
            "--principals" => args.principals = usize::try_from(number(value()?)?).unwrap_or(1),
            "--pid" => {
                args.pid = Some(u32::try_from(number(value()?)?).map_err(|e| e.to_string())?)
            }
            "--label" => args.label = value()?,
            "--workers" => args.workers = usize::try_from(number(value()?)?).unwrap_or(1),
            "--timeout" => args.timeout = seconds(value()?)?,
            "--setup-timeout" => args.setup_timeout = seconds(value()?)?,
            other => return Err(format!("unknown argument {other}; {USAGE}")),
        }
    }
    let url = url.ok_or_else(|| format!("--url is required; {USAGE}"))?;
    args.wire = wire.ok_or_else(|| format!("--wire is required; {USAGE}"))?;
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--url {url}: only http:// (loopback) is served"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    args.addr = authority
        .parse()
        .map_err(|err| format!("--url {url}: the host must be an IP:PORT ({err})"))?;
    if !args.addr.ip().is_loopback() {
        return Err(format!("--url {url}: loopback addresses only"));
    }
    args.host = HeaderValue::from_str(authority).map_err(|err| format!("--url {url}: {err}"))?;
    args.path = if path.is_empty() {
        Uri::from_static("/")
    } else {
        path.parse().map_err(|err| format!("--url {url}: {err}"))?
    };
    if args.mode == Mode::Listen && args.wire != Wire::V2026 {
        return Err("--mode listen needs --wire 2026-07-28".into());
    }
    if args.clients == 0 || args.principals == 0 || args.workers == 0 {
        return Err("--clients, --principals and --workers must be positive".into());
    }
    Ok(args)
}

/// What every client shares: the clock of the cell, the counters and the errors.
struct Shared {
    args: Args,
    /// The first client starts here.
    begun: Instant,
    /// The measured window, set once every client is ready and the warm-up is over:
    /// measuring starts at the first instant and ends at the second; clients stop at
    /// their next step after it.
    window: OnceLock<(Instant, Instant)>,
    /// Clients connected (and, on 2025-11-25, with their session open), or failed to.
    ready: AtomicUsize,
    /// Woken when the last client is ready.
    all_ready: Notify,
    /// Turns `true` when every client is ready: they start their tasks.
    go: watch::Sender<bool>,
    created: AtomicU64,
    requests: AtomicU64,
    errors: AtomicU64,
    error_samples: Mutex<Vec<String>>,
}

impl Shared {
    fn error(&self, what: String) {
        let n = self.errors.fetch_add(1, Ordering::Relaxed);
        let what = format!("at {:.2} s: {what}", self.begun.elapsed().as_secs_f64());
        if n < 5 {
            eprintln!("wire_load: error: {what}");
            if let Ok(mut samples) = self.error_samples.lock() {
                samples.push(what);
            }
        }
    }

    fn in_window(&self, at: Instant) -> bool {
        self.window
            .get()
            .is_some_and(|(start, end)| at >= *start && at < *end)
    }

    /// Whether `at` is before the end of the window (or the window is not set yet).
    fn before_end(&self, at: Instant) -> bool {
        self.window.get().is_none_or(|(_, end)| at < *end)
    }

    fn over(&self) -> bool {
        !self.before_end(Instant::now())
    }

    /// One more client is ready (or gave up).
    fn one_ready(&self) {
        if self.ready.fetch_add(1, Ordering::AcqRel) + 1 == self.args.clients {
            self.all_ready.notify_one();
        }
    }
}

/// One client's figures inside the window.
#[derive(Default)]
struct Figures {
    tasks: u64,
    gets: Samples,
    calls: Samples,
    whole: Samples,
}

/// One HTTP answer, read whole.
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &HeaderName) -> Option<&HeaderValue> {
        self.headers.get(name)
    }

    fn content_type(&self) -> &str {
        self.header(&CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

type Link = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// A keep-alive connection, opened again if the server closed it. Its connection future
/// is polled by the client's own task while a request is out (not spawned as a task of
/// its own): one wake-up per answer instead of a hand-off between two tasks, which at
/// 10,000 clients on two cores made the load generator, not the server, the limit.
struct Conn {
    shared: Arc<Shared>,
    link: Option<(SendRequest<Full<Bytes>>, Link)>,
}

async fn open(addr: SocketAddr) -> Result<(SendRequest<Full<Bytes>>, Link), String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|err| format!("connect: {err}"))?;
    stream
        .set_nodelay(true)
        .map_err(|err| format!("TCP_NODELAY: {err}"))?;
    http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| format!("handshake: {err}"))
}

impl Conn {
    fn new(shared: Arc<Shared>) -> Self {
        Self { shared, link: None }
    }

    fn build(
        &self,
        request: &wire::Request,
        token: Option<&HeaderValue>,
        session: Option<&HeaderValue>,
    ) -> hyper::Request<Full<Bytes>> {
        let args = &self.shared.args;
        let mut built = hyper::Request::new(Full::new(request.body.clone()));
        *built.method_mut() = Method::POST;
        *built.uri_mut() = args.path.clone();
        let headers = built.headers_mut();
        headers.reserve(8);
        headers.insert(HOST, args.host.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(token) = token {
            headers.insert(AUTHORIZATION, token.clone());
        }
        if let Some(session) = session {
            headers.insert(wire::SESSION_ID, session.clone());
        }
        for (name, value) in &request.headers {
            headers.insert(name.clone(), value.clone());
        }
        built
    }

    /// Sends `request` and reads the whole answer (bounded by `--timeout`).
    async fn send(
        &mut self,
        request: &wire::Request,
        token: Option<&HeaderValue>,
        session: Option<&HeaderValue>,
    ) -> Result<Answer, String> {
        let timeout = self.shared.args.timeout;
        self.send_within(request, token, session, timeout).await
    }

    /// [`Conn::send`] bounded by `timeout`.
    async fn send_within(
        &mut self,
        request: &wire::Request,
        token: Option<&HeaderValue>,
        session: Option<&HeaderValue>,
        timeout: Duration,
    ) -> Result<Answer, String> {
        let built = self.build(request, token, session);
        match tokio::time::timeout(timeout, self.exchange(built)).await {
            Ok(answer) => answer,
            Err(_) => {
                // The connection's state is unknown now: start over on the next request.
                self.link = None;
                Err(format!("{}: no answer within {timeout:?}", request.method))
            }
        }
    }

    /// Opens the connection unless it is open.
    async fn connect(&mut self) -> Result<(), String> {
        if self.link.is_none() {
            self.link = Some(open(self.shared.args.addr).await?);
        }
        Ok(())
    }

    async fn exchange(&mut self, request: hyper::Request<Full<Bytes>>) -> Result<Answer, String> {
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        self.connect().await?;
        let (sender, connection) = self.link.as_mut().ok_or("no connection")?;
        let exchange = async {
            sender
                .ready()
                .await
                .map_err(|err| format!("connection: {}", chain(&err)))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|err| format!("send: {}", chain(&err)))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|err| format!("body: {}", chain(&err)))?
                .to_bytes();
            Ok(Answer {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        let (answer, closed) = {
            tokio::pin!(exchange);
            let closed = tokio::select! {
                biased;
                answer = &mut exchange => return answer,
                closed = connection => closed,
            };
            // The connection ended (the server closed it): what it read is in the
            // answer's channels, or the exchange fails; either way the next request
            // reconnects.
            (exchange.await, closed)
        };
        self.link = None;
        match (answer, closed) {
            (Ok(answer), _) => Ok(answer),
            (Err(why), Ok(())) => Err(why),
            (Err(why), Err(err)) => Err(format!("{why} (connection: {})", chain(&err))),
        }
    }
}

/// An error with its causes, `outer: inner: ...` (hyper's own text is terse).
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What the answer to request `id` shows, or why there is none.
fn result_of(method: &str, id: u64, answer: &Answer) -> Result<Reading, String> {
    let text = || {
        String::from_utf8_lossy(&answer.body)
            .chars()
            .take(300)
            .collect::<String>()
    };
    if answer.status != 200 {
        return Err(format!("{method}: HTTP {}: {}", answer.status, text()));
    }
    match sse::answer_to(answer.content_type(), &answer.body, id)
        .map_err(|err| format!("{method}: {err}"))?
    {
        Answered::Result(reading) => Ok(reading),
        Answered::Error(error) => Err(format!("{method}: JSON-RPC error {error}")),
        Answered::Empty => Err(format!("{method}: no result: {}", text())),
        Answered::Missing => Err(format!("{method}: no answer to id {id}: {}", text())),
    }
}

/// One simulated client.
struct Client {
    shared: Arc<Shared>,
    conn: Conn,
    /// `Authorization: Bearer <token>`.
    token: Option<HeaderValue>,
    session: Option<HeaderValue>,
    next_id: u64,
    figures: Figures,
}

impl Client {
    async fn call(&mut self, method: &'static str, params: Params<'_>) -> Result<Reading, String> {
        self.next_id += 1;
        let id = self.next_id;
        let request = wire::request(self.shared.args.wire, id, method, params)?;
        let answer = self
            .conn
            .send(&request, self.token.as_ref(), self.session.as_ref())
            .await?;
        result_of(method, id, &answer)
    }

    /// 2025-11-25: `initialize`, then `notifications/initialized`.
    async fn open_session(&mut self) -> Result<(), String> {
        self.next_id += 1;
        let id = self.next_id;
        let params = wire::initialize_params();
        let params = Params::members(&params);
        let request = wire::request(Wire::V2025, id, "initialize", params)?;
        // Opening sessions is setup, bounded by --setup-timeout: a server may take long to
        // open many at once (the TypeScript SDK builds a server per session).
        let setup = self.shared.args.setup_timeout;
        let answer = self
            .conn
            .send_within(&request, self.token.as_ref(), None, setup)
            .await?;
        result_of("initialize", id, &answer)?;
        self.session = Some(
            answer
                .header(&wire::SESSION_ID)
                .cloned()
                .ok_or("initialize: no Mcp-Session-Id")?,
        );
        let initialized = wire::notification(Wire::V2025, "notifications/initialized");
        let answer = self
            .conn
            .send_within(
                &initialized,
                self.token.as_ref(),
                self.session.as_ref(),
                setup,
            )
            .await?;
        if answer.status != 202 && answer.status != 200 {
            return Err(format!(
                "notifications/initialized: HTTP {} (expected 202)",
                answer.status
            ));
        }
        Ok(())
    }

    /// `tasks/get`, timed; the task.
    async fn get(&mut self, task_id: &str) -> Result<Reading, String> {
        let sent = Instant::now();
        let task = self.call("tasks/get", wire::task_params(task_id)).await?;
        let done = Instant::now();
        if self.shared.in_window(done) {
            self.figures.gets.push_micros((done - sent).as_micros());
        }
        Ok(task)
    }

    /// One whole task; `Ok(false)` if the cell ended while it ran.
    async fn one_task(&mut self) -> Result<bool, String> {
        let shared = Arc::clone(&self.shared);
        let args = &shared.args;
        let started = Instant::now();
        let created = self
            .call(
                "tools/call",
                wire::sleep_call(args.wire, args.ms, args.ttl_ms),
            )
            .await?;
        let answered = Instant::now();
        let Some(task_id) = created.task_id else {
            return Err(format!("tools/call: not a task: {created:?}"));
        };
        if shared.before_end(answered) {
            shared.created.fetch_add(1, Ordering::Relaxed);
        }
        if shared.in_window(answered) {
            self.figures
                .calls
                .push_micros((answered - started).as_micros());
        }
        let terminal = match args.mode {
            Mode::Poll => self.poll(&task_id).await?,
            Mode::Listen => self.listen(&task_id).await?,
        };
        let Some(terminal) = terminal else {
            return Ok(false);
        };
        if terminal.status.as_deref() != Some("completed") {
            return Err(format!("task {task_id} ended: {terminal:?}"));
        }
        let result = match args.wire {
            Wire::V2025 => {
                self.call("tasks/result", wire::task_params(&task_id))
                    .await?
            }
            Wire::V2026 if terminal.carries_result => terminal,
            Wire::V2026 => {
                return Err(format!("the terminal task carries no result: {terminal:?}"));
            }
        };
        if result.tool_ok != Some(true) {
            return Err(format!(
                "task {task_id}: not a successful tool result: {result:?}"
            ));
        }
        let finished = Instant::now();
        if shared.in_window(finished) {
            self.figures.tasks += 1;
            self.figures
                .whole
                .push_micros((finished - started).as_micros());
        }
        Ok(true)
    }

    /// Polls until terminal; `None` if the cell ended first.
    async fn poll(&mut self, task_id: &str) -> Result<Option<Reading>, String> {
        loop {
            tokio::time::sleep(self.shared.args.poll).await;
            if self.shared.over() {
                return Ok(None);
            }
            let task = self.get(task_id).await?;
            if task.is_terminal() {
                return Ok(Some(task));
            }
        }
    }

    /// Listens on the task: opens `subscriptions/listen` on a connection of its own, reads
    /// the acknowledgement, reads the task once with `tasks/get` (a task that ended before
    /// the listen was routed sends nothing more), then reads `notifications/tasks` until
    /// the terminal one. The stream is closed by dropping its connection.
    async fn listen(&mut self, task_id: &str) -> Result<Option<Reading>, String> {
        let shared = Arc::clone(&self.shared);
        let args = &shared.args;
        self.next_id += 1;
        let id = self.next_id;
        let notifications = json!({"taskIds": [task_id]});
        let mut members = serde_json::Map::new();
        members.insert("notifications".to_owned(), notifications);
        let params = Params::members(&members);
        let request = wire::request(Wire::V2026, id, "subscriptions/listen", params)?;
        let stream_conn = Conn::new(Arc::clone(&shared));
        let built = stream_conn.build(&request, self.token.as_ref(), None);
        shared.requests.fetch_add(1, Ordering::Relaxed);
        let (mut sender, connection) = open(args.addr).await?;
        // The stream is read for long: its connection runs as a task of its own, ended
        // when the stream is dropped.
        let driver = Driver(tokio::spawn(async move {
            let _ = connection.await;
        }));
        let response = tokio::time::timeout(args.timeout, async {
            sender
                .ready()
                .await
                .map_err(|err| format!("listen: {err}"))?;
            sender
                .send_request(built)
                .await
                .map_err(|err| format!("listen: {err}"))
        })
        .await
        .map_err(|_| "listen: no answer".to_owned())??;
        let status = response.status();
        if status != 200 {
            let body = response.into_body().collect().await.map(|b| b.to_bytes());
            return Err(format!("listen: HTTP {status}: {body:?}"));
        }
        let mut events = Events {
            body: response.into_body(),
            reader: EventReader::new(),
            _driver: driver,
        };
        let ack = tokio::time::timeout(args.timeout, events.next())
            .await
            .map_err(|_| "listen: no acknowledgement".to_owned())??;
        let ack: Value =
            serde_json::from_str(&ack).map_err(|err| format!("listen event: {err}"))?;
        let acknowledged = ack["params"]["notifications"]["taskIds"]
            .as_array()
            .is_some_and(|ids| ids.iter().any(|known| known == task_id));
        if !acknowledged {
            return Err(format!("listen: the task is not acknowledged: {ack}"));
        }
        let task = self.get(task_id).await?;
        if task.is_terminal() {
            return Ok(Some(task));
        }
        loop {
            let end = shared
                .window
                .get()
                .map_or_else(Instant::now, |(_, end)| *end);
            let bound = end.max(Instant::now()) + args.timeout;
            let data = tokio::time::timeout_at(bound.into(), events.next())
                .await
                .map_err(|_| "listen: no terminal notification".to_owned())??;
            let message: wire::Message =
                serde_json::from_str(&data).map_err(|err| format!("listen event: {err}"))?;
            if message.method.as_deref() != Some("notifications/tasks") {
                continue;
            }
            let task = Reading::from(
                message
                    .params
                    .ok_or_else(|| format!("notifications/tasks without params: {data}"))?,
            );
            if task.is_terminal() {
                return Ok(Some(task));
            }
        }
    }

    async fn run(mut self, delay: Duration) -> Figures {
        tokio::time::sleep(delay).await;
        let mut go = self.shared.go.subscribe();
        let setup = match self.shared.args.wire {
            Wire::V2025 => self.open_session().await,
            Wire::V2026 => self.conn.connect().await,
        };
        self.shared.one_ready();
        if let Err(why) = setup {
            self.shared.error(why);
            return self.figures;
        }
        // Every client starts its tasks at once, when all are ready: opening sessions is
        // not mixed with the load.
        if go.wait_for(|go| *go).await.is_err() {
            return self.figures;
        }
        while !self.shared.over() {
            match self.one_task().await {
                Ok(true) => {}
                Ok(false) => break,
                Err(why) => {
                    self.shared.error(why);
                    // Keep the load going, without spinning on a server that refuses.
                    tokio::time::sleep(self.shared.args.poll).await;
                }
            }
        }
        self.figures
    }
}

/// A spawned connection task, aborted when dropped.
struct Driver(JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The messages of a listen stream, as they arrive.
struct Events {
    body: Incoming,
    reader: EventReader,
    _driver: Driver,
}

impl Events {
    /// The next event's data (one JSON-RPC message).
    async fn next(&mut self) -> Result<String, String> {
        loop {
            if let Some(data) = self.reader.next_data() {
                return Ok(data);
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(bytes) = frame.data_ref() {
                        self.reader.push(bytes);
                    }
                }
                Some(Err(err)) => return Err(format!("listen stream: {err}")),
                None => return Err("listen stream ended".into()),
            }
        }
    }
}

/// Raises the soft limit of open files to the hard one (1,000 clients, and their
/// listen streams, need more than the usual 1,024).
fn raise_nofile() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct passed, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit);
        }
    }
}

fn mib(kib: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let kib = kib as f64;
    kib / 1024.0
}

fn round(value: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (value * scale).round() / scale
}

async fn run(args: Args) -> Result<(Value, u64), String> {
    let pid = args.pid;
    let before = pid.map(procfs::status).transpose()?;
    let begun = Instant::now();
    let shared = Arc::new(Shared {
        begun,
        window: OnceLock::new(),
        ready: AtomicUsize::new(0),
        all_ready: Notify::new(),
        go: watch::Sender::new(false),
        args: args.clone(),
        created: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        error_samples: Mutex::new(Vec::new()),
    });
    // Connects spread over the first half of the warm-up (at most 1 s), so that the
    // server's listen queue does not overflow.
    let spread = (args.warmup / 2).min(Duration::from_secs(1));
    let n = u32::try_from(args.clients).unwrap_or(u32::MAX);
    let mut clients: Vec<JoinHandle<Figures>> = Vec::with_capacity(args.clients);
    for i in 0..args.clients {
        let token = match &args.token_prefix {
            Some(prefix) => {
                let value = format!("Bearer {prefix}{}", i % args.principals);
                Some(HeaderValue::from_str(&value).map_err(|err| format!("{value}: {err}"))?)
            }
            None => None,
        };
        let client = Client {
            shared: Arc::clone(&shared),
            conn: Conn::new(Arc::clone(&shared)),
            token,
            session: None,
            next_id: 0,
            figures: Figures::default(),
        };
        let delay = spread * u32::try_from(i).unwrap_or(0) / n;
        clients.push(tokio::spawn(client.run(delay)));
    }

    // Every client connected (2025-11-25: with its session), then the warm-up, then the
    // window.
    let setup_bound = begun + args.setup_timeout;
    while shared.ready.load(Ordering::Acquire) < args.clients {
        let woken = shared.all_ready.notified();
        if shared.ready.load(Ordering::Acquire) >= args.clients {
            break;
        }
        if tokio::time::timeout_at(setup_bound.into(), woken)
            .await
            .is_err()
        {
            return Err(format!(
                "only {} of {} clients were ready within --setup-timeout {:?}",
                shared.ready.load(Ordering::Acquire),
                args.clients,
                args.setup_timeout
            ));
        }
    }
    let setup = begun.elapsed();
    shared.go.send_replace(true);
    tokio::time::sleep(args.warmup).await;
    let start = Instant::now();
    let end = start + args.duration;
    shared
        .window
        .set((start, end))
        .map_err(|_| "the window was set twice")?;
    let cpu_start = pid.map(procfs::cpu_seconds).transpose()?;
    let own_start = procfs::cpu_seconds(std::process::id()).ok();
    let machine_start = procfs::machine_seconds().ok();
    let requests_start = shared.requests.load(Ordering::Relaxed);
    tokio::time::sleep_until(end.into()).await;
    let cpu_end = pid.map(procfs::cpu_seconds).transpose()?;
    let own_end = procfs::cpu_seconds(std::process::id()).ok();
    let machine_end = procfs::machine_seconds().ok();
    let after = pid.map(procfs::status).transpose()?;
    let requests_window = shared.requests.load(Ordering::Relaxed) - requests_start;

    // Clients stop at their next step; a request still out is waited for at most
    // `--timeout` past its poll, then abandoned.
    let mut all = Figures::default();
    let bound = Instant::now() + args.timeout + args.poll + Duration::from_millis(args.ms);
    for client in clients {
        let abort = client.abort_handle();
        match tokio::time::timeout_at(bound.into(), client).await {
            Ok(Ok(figures)) => {
                all.tasks += figures.tasks;
                all.gets.merge(figures.gets);
                all.calls.merge(figures.calls);
                all.whole.merge(figures.whole);
            }
            Ok(Err(err)) => shared.error(format!("a client panicked: {err}")),
            Err(_) => {
                abort.abort();
                shared.error("a client did not stop in time".into());
            }
        }
    }

    let secs = args.duration.as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let tasks = all.tasks as f64;
    let created = shared.created.load(Ordering::Relaxed);
    #[allow(clippy::cast_precision_loss)]
    let created_f = created as f64;
    let (get_p50, get_p99) = all.gets.p50_p99_ms();
    let (call_p50, call_p99) = all.calls.p50_p99_ms();
    let (task_p50, task_p99) = all.whole.p50_p99_ms();
    let cpu = match (cpu_start, cpu_end) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let machine = match (machine_start, machine_end) {
        (Some((busy_a, total_a)), Some((busy_b, total_b))) if total_b > total_a => {
            Some((busy_b - busy_a, total_b - total_a))
        }
        _ => None,
    };
    let per_1k = |x: f64, n: f64| (n > 0.0).then(|| round(x / n * 1000.0, 4));
    let errors = shared.errors.load(Ordering::Relaxed);
    let error_samples = shared
        .error_samples
        .lock()
        .map(|samples| samples.clone())
        .unwrap_or_default();
    #[allow(clippy::cast_precision_loss)]
    let line = json!({
        "impl": args.label,
        "wire": args.wire.version(),
        "mode": match args.mode { Mode::Poll => "poll", Mode::Listen => "listen" },
        "clients": args.clients,
        "ms": args.ms,
        "poll_ms": args.poll.as_millis() as u64,
        "duration_s": secs,
        "warmup_s": args.warmup.as_secs_f64(),
        // From the first client's start until every client was connected (2025-11-25:
        // had its session open); the clients then start their tasks together.
        "setup_s": round(setup.as_secs_f64(), 2),
        "principals": args.token_prefix.as_ref().map(|_| args.principals.min(args.clients)),
        "tasks": all.tasks,
        "tasks_per_s": round(tasks / secs, 1),
        "requests_per_task": (tasks > 0.0).then(|| round(requests_window as f64 / tasks, 2)),
        "gets": all.gets.len(),
        "get_p50_ms": get_p50,
        "get_p99_ms": get_p99,
        "call_p50_ms": call_p50,
        "call_p99_ms": call_p99,
        "task_p50_ms": task_p50,
        "task_p99_ms": task_p99,
        "server_cpu_s": cpu.map(|c| round(c, 3)),
        "cpu_s_per_1k_tasks": cpu.and_then(|c| per_1k(c, tasks)),
        // The load generator's own CPU in the window: near the machine's cores, it (not
        // the server) may be the limit.
        "load_cpu_s": own_start.zip(own_end).map(|(a, b)| round(b - a, 3)),
        // The machine's CPUs in the window: how busy they were, and how much of them went
        // to processes other than the server and the load generator (another tenant's
        // build makes the cell noisy).
        "machine_busy_pct": machine.map(|(busy, total)| round(busy / total * 100.0, 1)),
        "others_pct": machine.zip(own_start.zip(own_end)).zip(cpu).map(|(((busy, total), (a, b)), server)| {
            round((busy - (b - a) - server).max(0.0) / total * 100.0, 1)
        }),
        "created": created,
        "rss_start_mib": before.map(|s| round(mib(s.rss_kib), 1)),
        "rss_end_mib": after.map(|s| round(mib(s.rss_kib), 1)),
        "peak_rss_mib": after.map(|s| round(mib(s.peak_rss_kib), 1)),
        "rss_mib_per_1k_created": match (before, after) {
            (Some(b), Some(a)) => per_1k(mib(a.rss_kib.saturating_sub(b.rss_kib)), created_f),
            _ => None,
        },
        "threads_end": after.map(|s| s.threads),
        "errors": errors,
        "error_samples": error_samples,
    });
    let elapsed = begun.elapsed();
    eprintln!("wire_load: cell done in {:.1} s", elapsed.as_secs_f64());
    Ok((line, errors))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("wire_load: {why}");
            return ExitCode::from(2);
        }
    };
    raise_nofile();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("wire_load: runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok((line, errors)) => {
            println!("{line}");
            if errors > 0 {
                eprintln!("wire_load: {errors} request(s) failed: the cell is not valid");
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(why) => {
            eprintln!("wire_load: {why}");
            ExitCode::FAILURE
        }
    }
}
