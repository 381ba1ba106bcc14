//! 2025-11-25 sessions: who opened each one, what its client declared, and the messages the
//! server sends it (requests and notifications) until an SSE stream carries them.
//!
//! A message waits in its session's mailbox until a stream takes it: the `tasks/result`
//! stream of the task it is about, else the standalone `GET` stream. Each message a stream
//! takes gets an event id `<stream>-<seq>` (unique in the session) and is kept in a short
//! history, so a client that lost a stream resumes it with `GET` and `Last-Event-ID`: the
//! events after that id on that stream are sent again, and never those of another stream.
//! A notification about a task whose `tasks/result` was answered before a stream took it
//! is dropped: a client without a `GET` stream does not pile them up.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::peer::LogLevel;
use crate::server::Elicitation;
use mcp_tasks::{AnyTask, JsonRpcError, TaskId, TaskStatus};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};

/// Sessions kept per principal; a new one beyond this forgets that principal's oldest.
const SESSIONS_PER_PRINCIPAL: usize = 64;

/// Events kept per session for resumption.
const HISTORY: usize = 256;

/// Messages waiting for a stream, per session; beyond it the oldest notification is
/// dropped (a client can always poll `tasks/get`). Requests are never dropped.
const QUEUED: usize = 1024;

/// A message for the client, waiting for a stream.
struct Outgoing {
    /// The task it is about, if any: the `tasks/result` stream of that task takes it first.
    related: Option<TaskId>,
    /// The stream it must go out on (the answer of a `tasks/result` whose stream broke).
    pinned: Option<u64>,
    /// A notification (may be dropped when the mailbox overflows) or a request.
    notification: bool,
    data: Arc<str>,
}

/// An event already sent, kept for resumption.
struct Sent {
    stream: u64,
    seq: u64,
    data: Arc<str>,
}

/// What a stream carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// A standalone `GET` stream: everything not claimed by a `tasks/result` stream (with
    /// several open, each message goes out on one of them).
    General,
    /// The stream answering `tasks/result` for this task: the messages about the task.
    Result(TaskId),
    /// A stream that carries only its own request's answer.
    Detached,
}

#[derive(Default)]
struct Mailbox {
    queued: VecDeque<Outgoing>,
    history: VecDeque<Sent>,
    next_stream: u64,
    next_seq: u64,
    /// Open `tasks/result` streams per task.
    result_streams: HashMap<TaskId, usize>,
    /// Status and message last notified per task (a change that leaves both is not news).
    notified: HashMap<TaskId, (TaskStatus, Option<String>)>,
    /// Input requests already forwarded: (task, key).
    forwarded: HashSet<(TaskId, String)>,
}

/// One event for a stream: its id and data.
pub struct Event {
    /// `<stream>-<seq>`.
    pub id: String,
    /// One JSON-RPC message.
    pub data: Arc<str>,
}

/// A 2025-11-25 session.
pub struct Session {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The principal that opened it; no other may use it.
    pub principal: String,
    /// Whether its client declared the `elicitation` capability (form mode).
    pub elicitation: Elicitation,
    mailbox: Mutex<Mailbox>,
    /// Woken whenever a message arrives or a stream closes.
    wake: Notify,
    /// The server's requests waiting for the client's answer, by JSON-RPC id.
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, JsonRpcError>>>>,
    next_request: AtomicU64,
    /// Set when the session ends (`DELETE`, or forgotten for a newer one).
    ended: AtomicBool,
    /// The log level the client set with `logging/setLevel`, if it did.
    log_level: Mutex<Option<LogLevel>>,
}

impl Session {
    fn new(id: String, principal: String, elicitation: Elicitation) -> Self {
        Self {
            id,
            principal,
            elicitation,
            mailbox: Mutex::new(Mailbox::default()),
            wake: Notify::new(),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            ended: AtomicBool::new(false),
            log_level: Mutex::new(None),
        }
    }

    fn mailbox(&self) -> MutexGuard<'_, Mailbox> {
        self.mailbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the session ended: its streams close.
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.pending().clear();
        self.wake.notify_waiters();
    }

    /// Queues a notification about `related`.
    pub fn notify(&self, related: Option<&TaskId>, data: String) {
        self.queue(Outgoing {
            related: related.cloned(),
            pinned: None,
            notification: true,
            data: data.into(),
        });
    }

    /// Drops the notifications about `task` that still wait for a stream: its
    /// `tasks/result` has been answered, so they can tell the client nothing it lacks. A
    /// client that never opens a `GET` stream would otherwise keep each task's terminal
    /// status notification queued until the mailbox overflows ([`QUEUED`] per session).
    /// Requests and pinned answers stay.
    pub fn drop_notifications_about(&self, task: &TaskId) {
        self.mailbox().queued.retain(|message| {
            !(message.notification
                && message.pinned.is_none()
                && message.related.as_ref() == Some(task))
        });
    }

    /// Sends a request to the client about `related`: returns its id and text, and the
    /// receiver of the client's answer (dropping it withdraws nothing: call
    /// [`forget_request`](Self::forget_request)).
    pub fn request(
        &self,
        related: &TaskId,
        method: &str,
        params: serde_json::Map<String, Value>,
    ) -> (
        String,
        Arc<str>,
        oneshot::Receiver<Result<Value, JsonRpcError>>,
    ) {
        let (id, answered) = self.expect_answer();
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let data: Arc<str> = message.to_string().into();
        self.queue(Outgoing {
            related: Some(related.clone()),
            pinned: None,
            notification: false,
            data: Arc::clone(&data),
        });
        (id, data, answered)
    }

    /// A fresh id for a request to the client, and the receiver of its answer (the caller
    /// sends the request itself, on a stream of its own).
    pub fn expect_answer(&self) -> (String, oneshot::Receiver<Result<Value, JsonRpcError>>) {
        let id = format!(
            "server-{}",
            self.next_request.fetch_add(1, Ordering::Relaxed)
        );
        let (answer, answered) = oneshot::channel();
        self.pending().insert(id.clone(), answer);
        (id, answered)
    }

    /// The log level the client set with `logging/setLevel`, if it did.
    pub fn log_level(&self) -> Option<LogLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the level `logging/setLevel` asked for.
    pub fn set_log_level(&self, level: LogLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    /// Stops waiting for the answer to request `id`.
    pub fn forget_request(&self, id: &str) {
        self.pending().remove(id);
    }

    fn pending(
        &self,
    ) -> MutexGuard<'_, HashMap<String, oneshot::Sender<Result<Value, JsonRpcError>>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the client's answer (a JSON-RPC response) to whoever waits for it; `false` if
    /// nobody does (an unknown id, or one already answered).
    pub fn resolve(&self, id: &str, answer: Result<Value, JsonRpcError>) -> bool {
        match self.pending().remove(id) {
            Some(waiting) => waiting.send(answer).is_ok(),
            None => false,
        }
    }

    /// Marks `(task, key)` forwarded; `false` if it already was.
    pub fn forward_once(&self, task: &TaskId, key: &str) -> bool {
        self.mailbox()
            .forwarded
            .insert((task.clone(), key.to_owned()))
    }

    /// Forgets that `(task, key)` was forwarded (answered or given up).
    pub fn forwarded_done(&self, task: &TaskId, key: &str) {
        self.mailbox()
            .forwarded
            .remove(&(task.clone(), key.to_owned()));
    }

    /// Whether `task`'s change is news: its status or message differ from the last one
    /// notified. A terminal task is forgotten.
    pub fn is_news(&self, task: &AnyTask) -> bool {
        let mut mailbox = self.mailbox();
        let now = (task.status(), task.status_message().map(str::to_owned));
        if task.is_terminal() {
            return mailbox
                .notified
                .remove(task.id())
                .is_none_or(|last| last != now);
        }
        mailbox.notified.insert(task.id().clone(), now.clone()) != Some(now)
    }

    fn queue(&self, message: Outgoing) {
        {
            let mut mailbox = self.mailbox();
            if mailbox.queued.len() >= QUEUED
                && let Some(oldest) = mailbox.queued.iter().position(|m| m.notification)
            {
                mailbox.queued.remove(oldest);
                log::warn!(
                    "session {}: mailbox full: the oldest queued notification was dropped",
                    self.id
                );
            }
            mailbox.queued.push_back(message);
        }
        self.wake.notify_waiters();
    }

    /// Opens a stream with `role`, or resumes stream `resume` (from a `Last-Event-ID`),
    /// returning its number and the events to send again.
    pub fn open_stream(&self, role: &Role, resume: Option<(u64, u64)>) -> (u64, Vec<Event>) {
        let mut mailbox = self.mailbox();
        let (stream, replay) = match resume {
            Some((stream, after)) if stream < mailbox.next_stream => {
                let replay = mailbox
                    .history
                    .iter()
                    .filter(|sent| sent.stream == stream && sent.seq > after)
                    .map(|sent| Event {
                        id: format!("{}-{}", sent.stream, sent.seq),
                        data: Arc::clone(&sent.data),
                    })
                    .collect();
                (stream, replay)
            }
            _ => {
                mailbox.next_stream += 1;
                (mailbox.next_stream - 1, Vec::new())
            }
        };
        match role {
            Role::General => {}
            Role::Result(task) => *mailbox.result_streams.entry(task.clone()).or_default() += 1,
            Role::Detached => {}
        }
        drop(mailbox);
        (stream, replay)
    }

    /// Closes a stream with `role`: what it did not take goes to the others.
    pub fn close_stream(&self, role: &Role) {
        let mut mailbox = self.mailbox();
        match role {
            Role::General | Role::Detached => {}
            Role::Result(task) => {
                if let Some(open) = mailbox.result_streams.get_mut(task) {
                    *open -= 1;
                    if *open == 0 {
                        mailbox.result_streams.remove(task);
                    }
                }
            }
        }
        drop(mailbox);
        self.wake.notify_waiters();
    }

    /// Takes the messages stream `stream` (with `role`) carries now, as events.
    pub fn take(&self, stream: u64, role: &Role) -> Vec<Event> {
        let mut mailbox = self.mailbox();
        let Mailbox {
            queued,
            result_streams,
            ..
        } = &mut *mailbox;
        let mut taken = Vec::new();
        let mut index = 0;
        while index < queued.len() {
            let message = &queued[index];
            let mine = match (message.pinned, role) {
                (Some(pinned), _) => pinned == stream,
                (None, Role::Result(task)) => message.related.as_ref() == Some(task),
                (None, Role::Detached) => false,
                (None, Role::General) => message
                    .related
                    .as_ref()
                    .is_none_or(|task| !result_streams.contains_key(task)),
            };
            if mine {
                if let Some(message) = queued.remove(index) {
                    taken.push(message.data);
                }
            } else {
                index += 1;
            }
        }
        taken
            .into_iter()
            .map(|data| mailbox.record(stream, data))
            .collect()
    }

    /// Queues the answer of stream `stream`'s request after the stream broke: it goes out
    /// only when that stream is resumed.
    pub fn pin(&self, stream: u64, data: String) {
        self.queue(Outgoing {
            related: None,
            pinned: Some(stream),
            notification: false,
            data: data.into(),
        });
    }

    /// A fresh event id on stream `stream` for an event that carries no message (the
    /// priming event a client resumes from).
    pub fn mark(&self, stream: u64) -> String {
        let mut mailbox = self.mailbox();
        let seq = mailbox.next_seq;
        mailbox.next_seq += 1;
        format!("{stream}-{seq}")
    }

    /// Records the final message of stream `stream` (a response) as sent.
    pub fn record(&self, stream: u64, data: Arc<str>) -> Event {
        self.mailbox().record(stream, data)
    }

    /// A future that completes at the next [`queue`](Self::notify) or stream change; enable
    /// it before [`take`](Self::take) so nothing is missed in between.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }
}

impl Mailbox {
    fn record(&mut self, stream: u64, data: Arc<str>) -> Event {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(Sent {
            stream,
            seq,
            data: Arc::clone(&data),
        });
        Event {
            id: format!("{stream}-{seq}"),
            data,
        }
    }
}

/// Parses a `Last-Event-ID` this server issued: `(stream, seq)`.
pub fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    let (stream, seq) = text.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// The sessions of this server, each bound to the principal that opened it.
#[derive(Default)]
pub struct Sessions {
    inner: Mutex<SessionsInner>,
}

#[derive(Default)]
struct SessionsInner {
    by_id: HashMap<String, Arc<Session>>,
    by_principal: HashMap<String, VecDeque<String>>,
}

impl Sessions {
    fn inner(&self) -> MutexGuard<'_, SessionsInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a new session for `principal`.
    pub fn open(&self, principal: &str, elicitation: Elicitation) -> Arc<Session> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let session = Arc::new(Session::new(id.clone(), principal.to_owned(), elicitation));
        let mut inner = self.inner();
        let SessionsInner {
            by_id,
            by_principal,
        } = &mut *inner;
        let mine = by_principal.entry(principal.to_owned()).or_default();
        if mine.len() >= SESSIONS_PER_PRINCIPAL
            && let Some(oldest) = mine.pop_front()
            && let Some(forgotten) = by_id.remove(&oldest)
        {
            forgotten.end();
        }
        mine.push_back(id.clone());
        by_id.insert(id, Arc::clone(&session));
        session
    }

    /// The session `id` if `principal` opened it.
    pub fn get(&self, id: &str, principal: &str) -> Option<Arc<Session>> {
        self.inner()
            .by_id
            .get(id)
            .filter(|session| session.principal == principal)
            .cloned()
    }

    /// Ends session `id` of `principal`; `false` if there is no such session.
    pub fn end(&self, id: &str, principal: &str) -> bool {
        let mut inner = self.inner();
        if inner.by_id.get(id).is_none_or(|s| s.principal != principal) {
            return false;
        }
        if let Some(session) = inner.by_id.remove(id) {
            session.end();
        }
        if let Some(mine) = inner.by_principal.get_mut(principal) {
            mine.retain(|known| known != id);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new("s".into(), "alice".into(), Elicitation::Declared)
    }

    fn data(events: &[Event]) -> Vec<&str> {
        events.iter().map(|event| &*event.data).collect()
    }

    #[test]
    fn a_tasks_result_stream_takes_the_messages_about_its_task_first() {
        let session = session();
        let (task, other) = (TaskId::from("t-1"), TaskId::from("t-2"));
        let (general, _) = session.open_stream(&Role::General, None);
        let (result, _) = session.open_stream(&Role::Result(task.clone()), None);
        session.notify(Some(&task), "about t-1".into());
        session.notify(Some(&other), "about t-2".into());
        session.notify(None, "about nothing".into());
        assert_eq!(
            data(&session.take(result, &Role::Result(task.clone()))),
            ["about t-1"]
        );
        assert_eq!(
            data(&session.take(general, &Role::General)),
            ["about t-2", "about nothing"]
        );
        // Once the result stream is closed, the standalone stream takes the task's messages.
        session.close_stream(&Role::Result(task.clone()));
        session.notify(Some(&task), "later about t-1".into());
        assert_eq!(
            data(&session.take(general, &Role::General)),
            ["later about t-1"]
        );
    }

    #[test]
    fn a_resumed_stream_gets_its_own_events_again_and_its_pinned_answer() {
        let session = session();
        let (first, _) = session.open_stream(&Role::General, None);
        session.notify(None, "one".into());
        session.notify(None, "two".into());
        let sent = session.take(first, &Role::General);
        let (other, _) = session.open_stream(&Role::Detached, None);
        session.pin(other, "the answer".into());
        assert!(
            session.take(first, &Role::General).is_empty(),
            "a pinned answer is not the general stream's"
        );
        let (stream, seq) = parse_event_id(&sent[0].id).expect("an id this session issued");
        let (resumed, replay) = session.open_stream(&Role::General, Some((stream, seq)));
        assert_eq!(resumed, first);
        assert_eq!(data(&replay), ["two"]);
        let (detached, replay) = session.open_stream(&Role::General, Some((other, 0)));
        assert!(replay.is_empty());
        assert_eq!(
            data(&session.take(detached, &Role::General)),
            ["the answer"]
        );
    }

    #[test]
    fn event_ids_are_unique_in_a_session_and_unknown_ones_open_a_new_stream() {
        let session = session();
        let (a, _) = session.open_stream(&Role::General, None);
        let (b, _) = session.open_stream(&Role::General, None);
        assert_ne!(a, b);
        let ids = [session.mark(a), session.mark(b), session.mark(a)];
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3);
        let (fresh, replay) = session.open_stream(&Role::General, Some((99, 0)));
        assert!(fresh > b && replay.is_empty());
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id(" 3-4 "), Some((3, 4)));
    }

    #[test]
    fn a_full_mailbox_drops_its_oldest_notification_never_a_request() {
        let session = session();
        let task = TaskId::from("t");
        let (_id, _text, _answer) =
            session.request(&task, "elicitation/create", serde_json::Map::new());
        for n in 0..QUEUED + 5 {
            session.notify(None, format!("n{n}"));
        }
        let (stream, _) = session.open_stream(&Role::General, None);
        let taken = session.take(stream, &Role::General);
        assert_eq!(taken.len(), QUEUED);
        assert!(taken[0].data.contains("elicitation/create"));
        assert_eq!(&*taken[1].data, "n6");
    }

    #[test]
    fn notifications_about_a_task_whose_result_was_answered_are_dropped_requests_stay() {
        let session = session();
        let (task, other) = (TaskId::from("t-1"), TaskId::from("t-2"));
        session.notify(Some(&task), "about t-1".into());
        let (_id, _text, _answer) =
            session.request(&task, "elicitation/create", serde_json::Map::new());
        session.notify(Some(&other), "about t-2".into());
        session.notify(None, "about nothing".into());
        session.drop_notifications_about(&task);
        let (stream, _) = session.open_stream(&Role::General, None);
        let taken = session.take(stream, &Role::General);
        assert_eq!(taken.len(), 3);
        assert!(taken[0].data.contains("elicitation/create"));
        assert_eq!(data(&taken[1..]), ["about t-2", "about nothing"]);
    }

    #[test]
    fn answers_reach_their_request_once_and_sessions_their_principal() {
        let session = session();
        let (id, _text, mut answer) = session.request(
            &TaskId::from("t"),
            "elicitation/create",
            serde_json::Map::new(),
        );
        assert!(session.resolve(&id, Ok(Value::Null)));
        assert!(!session.resolve(&id, Ok(Value::Null)));
        assert!(matches!(answer.try_recv(), Ok(Ok(Value::Null))));
        let sessions = Sessions::default();
        let opened = sessions.open("alice", Elicitation::Undeclared);
        assert!(sessions.get(&opened.id, "bob").is_none());
        assert!(!sessions.end(&opened.id, "bob"));
        assert!(sessions.end(&opened.id, "alice"));
        assert!(opened.has_ended() && sessions.get(&opened.id, "alice").is_none());
    }
}
