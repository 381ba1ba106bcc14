//! `subscriptions/listen` with `notifications.taskIds` (MCP 2026-07-28 with the tasks
//! extension): task status pushed to the client, so that it stops polling `tasks/get`.
//! Written once for both transports; each carries the messages its own way (Streamable
//! HTTP: a long-lived `text/event-stream` answer to the POST; stdio: lines on the one
//! channel).
//!
//! One [`Listens`] per server process holds the core's [`Watches`]: a single subscription
//! on the store (a shared store delivers the changes of every instance, so a listen here
//! follows tasks running on another instance), routed by task id to the open listens of
//! each principal. A listen:
//! 1. is refused with `-32021` if it asks for `taskIds` without declaring the extension,
//!    with `-32602` past [`MAX_TASK_IDS_ENV`] ids (default 1,000) and `-32603` past
//!    [`MAX_PER_PRINCIPAL_ENV`] open listens of its principal (default 16), both with
//!    `data.limit`;
//! 2. is acknowledged first (`notifications/subscriptions/acknowledged`), listing only the
//!    ids of the caller's own tasks: unknown and foreign ids are left out alike;
//! 3. then carries one `notifications/tasks` per change of those tasks, the task exactly as
//!    `tasks/get` shows it, in order per task, the terminal one last;
//! 4. ends with the `SubscriptionsListenResult` when the server ends it (shutdown), or
//!    silently when the client leaves (closes the stream; on stdio,
//!    `notifications/cancelled` naming the listen request). Nothing of it is left then.
//!
//! Every message carries the listen request's id, exactly as the client wrote it, in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`.

use mcp_tasks::ext::{
    self, ListenNotification, ListenRequest, SubscriptionsAcknowledged, SubscriptionsListenResult,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use mcp_tasks::{
    AnyTask, JsonRpcError, Owner, Received, RequestId, TaskId, Watch, WatchCloser, WatchLimits,
    Watches, jsonrpc,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::framing::Id;
use crate::server::{Generation, Store};
use crate::telemetry::{self, ListenGuard, Telemetry};

/// The environment variable bounding the task ids of one listen (default
/// [`WatchLimits::DEFAULT_TASK_IDS`], 1,000).
pub const MAX_TASK_IDS_ENV: &str = "MCP_TASKS_LISTEN_MAX_TASK_IDS";

/// The environment variable bounding the listens one principal holds open at once
/// (default [`WatchLimits::DEFAULT_PER_OWNER`], 16).
pub const MAX_PER_PRINCIPAL_ENV: &str = "MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL";

/// The bounds [`MAX_TASK_IDS_ENV`] and [`MAX_PER_PRINCIPAL_ENV`] set (each defaulted).
///
/// # Errors
/// A message naming a setting that is not a positive whole number.
pub fn limits_from_env() -> Result<WatchLimits, String> {
    Ok(WatchLimits::new(
        positive(MAX_TASK_IDS_ENV, WatchLimits::DEFAULT_TASK_IDS)?,
        positive(MAX_PER_PRINCIPAL_ENV, WatchLimits::DEFAULT_PER_OWNER)?,
    ))
}

/// The open listens of one server process, over its store.
#[derive(Debug, Clone)]
pub struct Listens {
    watches: Watches<Store>,
    /// Counts the open listens (a metric of [`telemetry`]).
    telemetry: Telemetry,
}

impl Listens {
    /// Listens over `store`, bounded by `limits`, counted by the telemetry [`init`]
    /// installed ([`telemetry::global`]).
    ///
    /// [`init`]: crate::telemetry::init
    #[must_use]
    pub fn new(store: Store, limits: WatchLimits) -> Self {
        Self {
            watches: Watches::with_limits(store, limits),
            telemetry: telemetry::global(),
        }
    }

    /// These listens, counted by `telemetry` (a server's own, [`Server::telemetry`])
    /// instead.
    ///
    /// [`Server::telemetry`]: crate::server::Server::telemetry
    #[must_use]
    pub fn counted_by(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Listens over `store`, bounded by [`MAX_TASK_IDS_ENV`] and [`MAX_PER_PRINCIPAL_ENV`].
    ///
    /// # Errors
    /// A message naming a setting that is not a positive whole number.
    pub fn from_env(store: Store) -> Result<Self, String> {
        Ok(Self::new(store, limits_from_env()?))
    }

    /// Whether a request is a listen these serve: `subscriptions/listen` on the
    /// 2026-07-28 wire (on 2025-11-25 the method does not exist).
    #[must_use]
    pub fn handles(method: &str, params: Option<&Value>) -> bool {
        method == ext::methods::SUBSCRIPTIONS_LISTEN
            && Generation::of(method, params) == Generation::Extension
    }

    /// Checks what can be checked of a listen request without opening it: its filter, and
    /// the extension's capability when it names `taskIds`.
    ///
    /// # Errors
    /// `-32602` for a malformed filter, `-32021` for `taskIds` without the extension.
    pub fn check(params: Option<&Value>) -> Result<(), JsonRpcError> {
        ListenRequest::parse(params, ext::declares_extension(params)).map(drop)
    }

    /// Opens the listen request `id` of `owner` with `params` (it reads each task once).
    ///
    /// # Errors
    /// The JSON-RPC error to answer instead: see the [module docs](self).
    pub fn open(
        &self,
        owner: &Owner,
        id: &Id,
        params: Option<&Value>,
    ) -> Result<Listening, JsonRpcError> {
        let request = ListenRequest::parse(params, ext::declares_extension(params))?;
        let asked = request.task_ids().unwrap_or_default();
        let watch = self
            .watches
            .watch(owner, asked)
            .map_err(|error| error.to_jsonrpc())?;
        let subscription = RawValue::from_string(id.as_json().to_owned()).map_err(|err| {
            JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("the request id cannot be echoed: {err}"),
            )
        })?;
        let acknowledged = request.task_ids().map(|_| watch.task_ids().to_vec());
        Ok(Listening {
            stream: ListenStream {
                subscription,
                acknowledged,
                _counted: self.telemetry.listen_opened(),
            },
            watch,
        })
    }

    /// Ends every open listen (a shutdown): each sends what it holds, then its result.
    pub fn close_all(&self) {
        self.watches.close_all();
    }

    /// The open listens (to look for leaks).
    #[must_use]
    pub fn open_count(&self) -> usize {
        self.watches.len()
    }

    /// The core's watches behind the listens.
    #[must_use]
    pub fn watches(&self) -> &Watches<Store> {
        &self.watches
    }
}

/// A positive whole number from the environment variable `name`, or `default` when unset.
fn positive(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(value) if value > 0 => Ok(value),
            _ => Err(format!(
                "{name}=`{}` is not a positive whole number",
                text.chars().take(40).collect::<String>()
            )),
        },
    }
}

/// An open listen: the messages of its stream ([`ListenStream`]) and the changes to send
/// ([`Watch`]: take them with `recv`, `recv_blocking`; dropping it ends the listen).
#[derive(Debug)]
pub struct Listening {
    /// Writes the stream's messages.
    pub stream: ListenStream,
    /// The changes of the acknowledged tasks.
    pub watch: Watch,
}

/// The messages of one listen stream, each one JSON-RPC message on one line, carrying the
/// listen request's id as the client wrote it.
#[derive(Debug)]
pub struct ListenStream {
    subscription: Box<RawValue>,
    /// The ids acknowledged, if the request named `taskIds`.
    acknowledged: Option<Vec<TaskId>>,
    /// Counted as an open listen while the stream lives.
    _counted: ListenGuard,
}

impl ListenStream {
    /// The listen request's id, as written.
    #[must_use]
    pub fn subscription_id(&self) -> &str {
        self.subscription.get()
    }

    /// `notifications/subscriptions/acknowledged`: the stream's first message.
    ///
    /// # Errors
    /// If the message cannot be written (it always can).
    pub fn acknowledgement(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&SubscriptionsAcknowledged::new(
            &*self.subscription,
            self.acknowledged.clone(),
        ))
    }

    /// `notifications/tasks` with `task` as it is now.
    ///
    /// # Errors
    /// If the message cannot be written.
    pub fn notification(&self, task: &AnyTask) -> Result<String, serde_json::Error> {
        serde_json::to_string(&ListenNotification::new(&*self.subscription, task))
    }

    /// The response that ends the stream (the server ends it): the
    /// `SubscriptionsListenResult`.
    ///
    /// # Errors
    /// If the message cannot be written.
    pub fn result(&self) -> Result<String, serde_json::Error> {
        let result = serde_json::to_string(&SubscriptionsListenResult::new(&*self.subscription))?;
        Ok(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{result}}}",
            self.subscription.get()
        ))
    }
}

/// Writes one whole message (one line) to the client.
pub type LineWriter = Arc<dyn Fn(&str) + Send + Sync>;

/// The listens of one connection whose messages all travel on one channel (stdio): each
/// open listen runs on a thread of its own, which writes its notifications through the
/// connection's `send` as changes come. At most [`MAX_PER_PRINCIPAL_ENV`] run at once.
pub struct LineListens {
    listens: Listens,
    send: LineWriter,
    open: Mutex<HashMap<RequestId, Open>>,
}

/// One running listen of a [`LineListens`].
struct Open {
    closer: WatchCloser,
    /// Set when the client cancelled it: nothing more is sent, not even the result.
    cancelled: Arc<AtomicBool>,
}

impl std::fmt::Debug for LineListens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineListens")
            .field("listens", &self.listens)
            .field("open", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl LineListens {
    /// The listens of a connection that writes with `send`.
    #[must_use]
    pub fn new(listens: Listens, send: LineWriter) -> Arc<Self> {
        Arc::new(Self {
            listens,
            send,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Poison policy: the map's critical sections only insert, look up and remove, so it
    /// stays consistent; the guard is taken back.
    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serves the listen request `id` of `owner`: sends its acknowledgement and starts the
    /// thread that sends its notifications.
    ///
    /// # Errors
    /// The JSON-RPC error to answer instead (see the [module docs](self)); `-32600` for the
    /// id of a listen still open on this connection.
    pub fn listen(
        self: &Arc<Self>,
        owner: &Owner,
        id: &Id,
        params: Option<&Value>,
    ) -> Result<(), JsonRpcError> {
        let key = id.request_id().clone();
        if self.lock().contains_key(&key) {
            return Err(JsonRpcError::new(
                jsonrpc::INVALID_REQUEST,
                "invalid request: a subscriptions/listen with this id is open on this \
                 connection; give each request its own id",
            ));
        }
        let listening = self.listens.open(owner, id, params)?;
        let ack = listening.stream.acknowledgement().map_err(|err| {
            JsonRpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("cannot acknowledge: {err}"),
            )
        })?;
        let cancelled = Arc::new(AtomicBool::new(false));
        {
            let mut open = self.lock();
            if open.contains_key(&key) {
                return Err(JsonRpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "invalid request: a subscriptions/listen with this id is open",
                ));
            }
            open.insert(
                key.clone(),
                Open {
                    closer: listening.watch.closer(),
                    cancelled: Arc::clone(&cancelled),
                },
            );
        }
        // The acknowledgement goes out before the thread that sends the notifications starts.
        (self.send)(&ack);
        let this = Arc::downgrade(self);
        let send = Arc::clone(&self.send);
        let started = std::thread::Builder::new()
            .name("mcp-tasks-listen".into())
            .spawn(move || run(listening, &send, &cancelled, &this, &key));
        if let Err(err) = started {
            // The listening moved into the closure is dropped with it: nothing stays open.
            eprintln!("listen: cannot start a thread: {err}");
        }
        Ok(())
    }

    /// The client's `notifications/cancelled` for `request_id`: if it names an open listen,
    /// that listen ends at once, with nothing more sent (not even a response); answers
    /// whether it did.
    pub fn cancel(&self, request_id: &RequestId) -> bool {
        let open = self.lock();
        let Some(listen) = open.get(request_id) else {
            return false;
        };
        listen.cancelled.store(true, Ordering::SeqCst);
        listen.closer.close();
        true
    }

    /// Ends every listen (the connection is closing): each sends what it holds, then its
    /// result. Waits up to `within` for them to be sent; answers whether they were.
    pub fn close_all(&self, within: Duration) -> bool {
        self.listens.close_all();
        let deadline = Instant::now() + within;
        while !self.lock().is_empty() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// The listens open now.
    #[must_use]
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }
}

/// A listen's thread: sends each change, then the result if the server ended it.
fn run(
    listening: Listening,
    send: &LineWriter,
    cancelled: &AtomicBool,
    listens: &Weak<LineListens>,
    key: &RequestId,
) {
    let Listening { stream, mut watch } = listening;
    loop {
        match watch.recv_blocking(None) {
            Received::Change(_) if cancelled.load(Ordering::SeqCst) => {}
            Received::Change(task) => match stream.notification(&task) {
                Ok(line) => send(&line),
                Err(err) => eprintln!("listen: cannot write a notification: {err}"),
            },
            Received::Idle => {}
            Received::Closed => {
                if !cancelled.load(Ordering::SeqCst) {
                    match stream.result() {
                        Ok(line) => send(&line),
                        Err(err) => eprintln!("listen: cannot write the result: {err}"),
                    }
                }
                break;
            }
        }
    }
    drop(watch);
    if let Some(listens) = listens.upgrade() {
        listens.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_tasks::{TaskRegistry, TaskRequest, TaskStore};
    use serde_json::json;

    use super::*;

    fn params(task_ids: &[&str], declared: bool) -> Value {
        let mut capabilities = json!({});
        if declared {
            capabilities = json!({"extensions": {ext::EXTENSION_ID: {}}});
        }
        json!({
            "notifications": {"taskIds": task_ids},
            "_meta": {
                ext::META_PROTOCOL_VERSION: ext::PROTOCOL_VERSION,
                ext::META_CLIENT_CAPABILITIES: capabilities
            }
        })
    }

    #[test]
    fn a_listen_acknowledges_only_its_owners_tasks_and_echoes_the_id_as_written() {
        let store: Store = Arc::new(TaskRegistry::new());
        let (alice, bob) = (Owner::new("alice"), Owner::new("bob"));
        let mine = store
            .insert(&alice, TaskRequest::new(1, "tools/call"))
            .unwrap();
        let theirs = store
            .insert(&bob, TaskRequest::new(1, "tools/call"))
            .unwrap();
        let listens = Listens::new(Arc::clone(&store), WatchLimits::new(3, 1));
        let (mine, theirs) = (mine.id().to_string(), theirs.id().to_string());
        let params = params(&[&mine, &theirs, "unknown"], true);
        assert!(Listens::handles("subscriptions/listen", Some(&params)));
        assert!(
            !Listens::handles("subscriptions/listen", None),
            "2025-11-25"
        );
        let id = Id::parse("1e3").expect("an integer id");
        let listening = listens.open(&alice, &id, Some(&params)).expect("opened");
        let ack: Value =
            serde_json::from_str(&listening.stream.acknowledgement().unwrap()).unwrap();
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!([mine]));
        let result = listening.stream.result().unwrap();
        assert!(
            result.contains("\"id\":1e3")
                && result.contains("\"io.modelcontextprotocol/subscriptionId\":1e3"),
            "{result}"
        );
        let refused = listens
            .open(&alice, &id, Some(&params))
            .expect_err("one per principal");
        assert_eq!(
            (refused.code, refused.data),
            (jsonrpc::INTERNAL_ERROR, Some(json!({"limit": 1})))
        );
        drop(listening);
        assert_eq!(listens.open_count(), 0);
        let undeclared = listens
            .open(&alice, &id, Some(&super::tests::params(&[&mine], false)))
            .expect_err("-32021");
        assert_eq!(undeclared.code, ext::MISSING_REQUIRED_CLIENT_CAPABILITY);
        let many = super::tests::params(&["a", "b", "c", "d"], true);
        let refused = listens
            .open(&alice, &id, Some(&many))
            .expect_err("too many ids");
        assert_eq!(refused.code, jsonrpc::INVALID_PARAMS);
        assert_eq!(listens.open_count(), 0, "a refused listen leaves nothing");
    }
}
