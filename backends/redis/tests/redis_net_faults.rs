//! `RedisTaskStore` under network faults, through a loopback TCP proxy
//! (`mcp_tasks_test_support::proxy`) between one instance and a real `redis-server`: the link paused
//! (bytes held both ways), every connection dropped, every connection reset (RST), and a
//! write whose connection is reset after Redis applied it but before its reply arrived.
//! A second instance talks to Redis directly and sees what the first one did.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`); without one on `PATH` the
//! tests say `SKIPPED` and pass. Every blocking call and every loop is bounded, and every
//! server and proxy is stopped when its test ends, also when it fails.

use std::error::Error as _;
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{AnyTask, Error, Owner, TaskStatus, TaskStore, TtlPolicy};
use mcp_tasks_redis::{RedisStoreBuilder, RedisTaskStore};
use mcp_tasks_test_support::proxy::TcpProxy;
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::support::{
    BOUND, alice, eventually, join_within, ms, recorder, req, terminal_changes, tool_outcome,
    waiter_wakes,
};

/// The I/O timeout of the instance behind the proxy.
const IO: Duration = Duration::from_millis(300);

/// Its outage timeout.
const OUTAGE: Duration = Duration::from_millis(1500);

/// Slack for a loaded machine on top of a computed bound.
const SLACK: Duration = Duration::from_secs(2);

/// The most a read or write may take while the link is paused: the request, a fresh
/// connection and the retry, each bounded by the I/O timeout.
fn paused_bound() -> Duration {
    IO * 4 + SLACK
}

fn builder(url: &str, prefix: &str) -> RedisStoreBuilder {
    RedisTaskStore::builder(url)
        .prefix(prefix)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
}

fn fresh_prefix() -> String {
    format!("netfaults-{}", uuid::Uuid::new_v4().simple())
}

/// An instance reaching Redis through `proxy`, with short I/O and outage timeouts.
fn proxied(proxy: &TcpProxy, prefix: &str) -> RedisTaskStore {
    builder(&proxy.url(), prefix)
        .io_timeout(IO)
        .outage_timeout(OUTAGE)
        .build()
        .expect("a RedisTaskStore through the proxy")
}

/// An instance on the server's own socket.
/// An instance through the proxy with a long I/O timeout, so that what answers a change
/// whose connection was cut is its replay, not a timeout.
fn replaying(proxy: &TcpProxy, prefix: &str) -> RedisTaskStore {
    builder(&proxy.url(), prefix)
        .io_timeout(Duration::from_secs(5))
        .build()
        .expect("a RedisTaskStore through the proxy")
}

fn direct(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    builder(&server.url(), prefix)
        .build()
        .expect("a RedisTaskStore on the test server")
}

/// Asserts the store-unavailable error; a read's or write's (not a wait's, which may end on
/// the outage timeout) keeps the Redis client's error as its source.
#[track_caller]
fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) {
    let err = mcp_tasks_testkit::support::assert_unavailable(result, what);
    assert!(
        what.contains("wait") || err.source().is_some(),
        "{what}: the Redis error is its source: {err:?}"
    );
}

/// Runs `f`, asserting it answers the store-unavailable error within `bound`.
#[track_caller]
fn unavailable_within<T: std::fmt::Debug>(
    what: &str,
    bound: Duration,
    f: impl FnOnce() -> Result<T, Error>,
) -> Duration {
    let started = Instant::now();
    let result = f();
    let took = started.elapsed();
    assert_unavailable(result, what);
    assert!(
        took <= bound,
        "{what}: answered after {took:?}, bound {bound:?}"
    );
    took
}

/// A hash field of alice's task `id`, read straight from Redis.
fn field(server: &RedisServer, prefix: &str, id: &str, name: &str) -> String {
    server.command(&["HGET", &format!("{prefix}:{{o616c696365}}:t:{id}"), name])
}

/// A batch of every kind of request on `store`: creates, reads, a list, changes and a
/// removal. Returns the failures (what, error).
fn batch(store: &RedisTaskStore, owner: &Owner, rounds: i64) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut sent = 0;
    let mut note = |what: String, result: Result<AnyTask, Error>| {
        sent += 1;
        if let Err(err) = result {
            failures.push(format!("{what}: {err}"));
        }
    };
    for n in 0..rounds {
        let created = store.insert(owner, req(n)).map(AnyTask::from);
        let id = match &created {
            Ok(task) => task.id().to_string(),
            Err(_) => String::new(),
        };
        note(format!("create {n}"), created);
        if id.is_empty() {
            continue;
        }
        note(format!("get {n}"), store.get(owner, &id));
        note(
            format!("input_required {n}"),
            store.update_status(owner, &id, TaskStatus::InputRequired, None),
        );
        note(
            format!("working {n}"),
            store.update_status(owner, &id, TaskStatus::Working, None),
        );
        note(
            format!("complete {n}"),
            store.store_result(owner, &id, TaskStatus::Completed, tool_outcome("done")),
        );
        note(format!("remove {n}"), store.remove(owner, &id));
    }
    let listed = store.list(owner, None, 10).map(|page| page.tasks.len());
    sent += 1;
    if let Err(err) = listed {
        failures.push(format!("list: {err}"));
    }
    (sent, failures)
}

/// Paused link: reads, writes, a new wait and a wait already blocked all answer the
/// store-unavailable error within their bounds (never `Timeout`, never a hang); once the
/// link resumes, no request fails and waiters on both instances wake.
#[test]
fn a_paused_link_answers_store_unavailable_then_nothing_fails() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    let prefix = fresh_prefix();
    let (a, b) = (proxied(&proxy, &prefix), direct(&server, &prefix));
    let owner = alice();
    let mine = a.insert(&owner, req(1)).unwrap().id().to_string();
    let theirs = b.insert(&owner, req(2)).unwrap().id().to_string();
    // Already waiting on A (with a timeout longer than the outage timeout) when the link
    // stops.
    let blocked = {
        let (a, owner, id) = (a.clone(), owner.clone(), theirs.clone());
        mcp_tasks_testkit::support::timed(move || a.wait(&owner, &id, Some(ms(10_000))))
    };
    thread::sleep(ms(100));
    assert!(
        !blocked.is_finished(),
        "the waiter blocks while the task works"
    );

    proxy.pause();
    let read = unavailable_within("a read", paused_bound(), || a.get(&owner, &mine));
    assert!(
        read >= IO,
        "a read fails only once its I/O timeout passed: {read:?}"
    );
    unavailable_within("a create", paused_bound(), || a.insert(&owner, req(3)));
    unavailable_within("a change", paused_bound(), || {
        a.update_status(&owner, &mine, TaskStatus::InputRequired, None)
    });
    unavailable_within("a list", paused_bound(), || a.list(&owner, None, 10));
    // A wait with a timeout shorter than the outage timeout, and one without any.
    unavailable_within("a wait with a timeout", ms(800) + paused_bound(), || {
        a.wait(&owner, &theirs, Some(ms(800)))
    });
    unavailable_within("a wait without a timeout", OUTAGE + paused_bound(), || {
        a.wait(&owner, &theirs, None)
    });
    let (result, waited) = join_within(blocked, BOUND, "the waiter blocked before the pause");
    assert_unavailable(result, "the waiter blocked before the pause");
    assert!(
        waited <= OUTAGE + paused_bound() + ms(100),
        "it answered after {waited:?}"
    );
    // B never went through the proxy: it works throughout.
    assert_eq!(b.get(&owner, &mine).unwrap().status(), TaskStatus::Working);
    eprintln!("paused link: a read failed after {read:?}, the blocked waiter after {waited:?}");

    proxy.resume();
    let (sent, failures) = batch(&a, &owner, 5);
    assert!(
        failures.is_empty(),
        "{} of {sent} requests after the link resumed failed: {failures:#?}",
        failures.len()
    );
    eprintln!("paused link: 0 of {sent} requests failed after it resumed");
    waiter_wakes(&a, &b, &owner, "from A");
    waiter_wakes(&b, &a, &owner, "from B");
}

/// Every connection of the instance dropped (end-of-file) or reset (RST), pooled ones and
/// its subscription: no request afterwards fails, and waiters on both instances wake.
fn cut_every_connection(reset: bool) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    let prefix = fresh_prefix();
    let (a, b) = (proxied(&proxy, &prefix), direct(&server, &prefix));
    let owner = alice();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    // Several pooled connections, as a busy server has.
    let readers: Vec<_> = (0..6)
        .map(|_| {
            let (a, owner, id) = (a.clone(), owner.clone(), id.clone());
            thread::spawn(move || {
                for _ in 0..30 {
                    a.get(&owner, &id).unwrap();
                }
            })
        })
        .collect();
    for reader in readers {
        join_within(reader, BOUND, "a concurrent reader");
    }
    let before = proxy.open();
    assert!(
        before >= 2,
        "a pooled connection and the subscription: {before}"
    );
    let accepted = proxy.accepted();

    let cut = if reset {
        proxy.reset_all()
    } else {
        proxy.drop_all()
    };
    assert_eq!(cut, before, "every open connection was cut");
    let (sent, failures) = batch(&a, &owner, 5);
    assert!(
        failures.is_empty(),
        "{} of {sent} requests after the cut failed: {failures:#?}",
        failures.len()
    );
    assert!(
        proxy.accepted() > accepted,
        "the instance connected again through the proxy"
    );
    let kind = if reset { "reset" } else { "dropped" };
    eprintln!("{cut} connections {kind}: 0 of {sent} requests failed after it");
    waiter_wakes(&a, &b, &owner, "from A");
    waiter_wakes(&b, &a, &owner, "from B");
    // The instance's subscription came back through the proxy: B's change reached A's
    // subscribers too.
    let (seen, _) = recorder(&a);
    let last = b.insert(&owner, req(7)).unwrap().id().to_string();
    let changed = b
        .update_status(&owner, &last, TaskStatus::InputRequired, None)
        .unwrap();
    eventually("A's subscribers see B's change", || {
        seen.lock()
            .unwrap()
            .iter()
            .any(|change| change.task == changed)
    });
}

#[test]
fn dropped_connections_fail_no_request() {
    cut_every_connection(false);
}

#[test]
fn reset_connections_fail_no_request() {
    cut_every_connection(true);
}

/// The harness's reset is a real TCP reset: a client of the proxy reads `ECONNRESET`, not
/// end-of-file (so the test above is not a second drop test).
#[test]
fn the_proxy_resets_with_an_rst() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    let addr = proxy.url().trim_start_matches("redis://").to_owned();
    for reset in [false, true] {
        let mut client = TcpStream::connect(&addr).unwrap();
        client.set_read_timeout(Some(BOUND)).unwrap();
        eventually("the proxy has the connection", || proxy.open() == 1);
        let cut = if reset {
            proxy.reset_all()
        } else {
            proxy.drop_all()
        };
        assert_eq!(cut, 1);
        let mut buf = [0u8; 16];
        match client.read(&mut buf) {
            Ok(0) => assert!(!reset, "a reset connection reads end-of-file"),
            Err(err) if err.kind() == ErrorKind::ConnectionReset => {
                assert!(reset, "a dropped connection reads a reset");
            }
            other => panic!("unexpected read after the cut: {other:?}"),
        }
    }
}

/// A write whose connection is reset after Redis applied it, before its reply came back:
/// the instance replays it on a fresh connection, the replay is recognized, and the task
/// moved exactly once (version up by one, one change published); for a create, exactly
/// one task exists.
#[test]
fn a_write_reset_midway_is_applied_exactly_once() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    let prefix = fresh_prefix();
    let a = replaying(&proxy, &prefix);
    let b = direct(&server, &prefix);
    let (seen, _) = recorder(&b);
    let owner = alice();
    // Every script is loaded once, so the replies held below are the scripts' own.
    let warm = a.insert(&owner, req(0)).unwrap().id().to_string();
    a.store_result(&owner, &warm, TaskStatus::Completed, tool_outcome("warm"))
        .unwrap();
    a.remove(&owner, &warm).unwrap();
    let id = a.insert(&owner, req(1)).unwrap().id().to_string();
    assert_eq!(field(&server, &prefix, &id, "v"), "1");

    // A commit.
    proxy.hold_replies();
    let writer = {
        let (a, owner, id) = (a.clone(), owner.clone(), id.clone());
        thread::spawn(move || {
            a.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("once"))
        })
    };
    eventually("Redis applied the commit", || {
        field(&server, &prefix, &id, "v") == "2"
    });
    let reset = proxy.reset_all();
    assert!(reset >= 1, "the writer's connection was reset");
    proxy.resume();
    let done = join_within(writer, BOUND, "the writer")
        .expect("the commit whose connection was reset answers the task");
    assert_eq!(done.status(), TaskStatus::Completed);
    assert_eq!(done.outcome(), Some(&tool_outcome("once")));
    assert_eq!(field(&server, &prefix, &id, "v"), "2", "one version step");
    assert_eq!(b.get(&owner, &id).unwrap(), done);
    assert_eq!(
        terminal_changes(&seen, &done),
        1,
        "the replay published nothing"
    );

    // A create.
    let before = b.list(&owner, None, 100).unwrap().tasks.len();
    proxy.hold_replies();
    let creator = {
        let (a, owner) = (a.clone(), owner.clone());
        thread::spawn(move || a.insert(&owner, req(2)))
    };
    eventually("Redis applied the create", || {
        b.list(&owner, None, 100).unwrap().tasks.len() == before + 1
    });
    assert!(proxy.reset_all() >= 1, "the creator's connection was reset");
    proxy.resume();
    let created = join_within(creator, BOUND, "the creator")
        .expect("the create whose connection was reset answers the task");
    let listed = b.list(&owner, None, 100).unwrap().tasks;
    assert_eq!(listed.len(), before + 1, "exactly one task was created");
    assert_eq!(listed.last().unwrap().id(), created.id());
    assert_eq!(field(&server, &prefix, &created.id().to_string(), "v"), "1");
}

/// An instance built while the link is paused (Redis hung at start-up) answers the
/// store-unavailable error, with its source, within its I/O timeout's bounds.
#[test]
fn building_on_a_hung_redis_answers_store_unavailable() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    proxy.pause();
    let took = unavailable_within("building an instance", paused_bound(), || {
        builder(&proxy.url(), &fresh_prefix())
            .io_timeout(IO)
            .build()
    });
    eprintln!("building on a hung Redis failed after {took:?}");
    proxy.resume();
    // Once it answers, building works.
    let store = proxied(&proxy, &fresh_prefix());
    assert_eq!(
        store.insert(&alice(), req(1)).unwrap().into_any().status(),
        TaskStatus::Working
    );
}

/// Changes from many threads of one instance share its connection of changes (written
/// together, answered in order): each caller gets its own reply, also while every
/// connection is reset again and again under them (each change in flight is sent once
/// more, together, on a fresh connection). A request fails only with the store-unavailable
/// error, when a second reset meets its replay (rare: resets come every 50 ms), and never
/// answers another caller's task or a wrong state.
#[test]
fn concurrent_changes_each_get_their_own_reply_through_resets() {
    /// What one handler saw: requests answered, requests that failed with the
    /// store-unavailable error, and anything else (wrong answers, other errors).
    #[derive(Default)]
    struct Seen {
        answered: usize,
        unavailable: usize,
        wrong: Vec<String>,
    }
    impl Seen {
        /// Counts `result`, whose answer must pass `right`; the answer, if right.
        fn check<T: std::fmt::Debug>(
            &mut self,
            what: &str,
            result: Result<T, Error>,
            right: impl FnOnce(&T) -> bool,
        ) -> Option<T> {
            match result {
                Ok(answer) if right(&answer) => {
                    self.answered += 1;
                    Some(answer)
                }
                Err(Error::Store { .. }) => {
                    self.unavailable += 1;
                    None
                }
                other => {
                    self.wrong.push(format!("{what}: {other:?}"));
                    None
                }
            }
        }
    }

    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(server.socket());
    let prefix = fresh_prefix();
    let a = replaying(&proxy, &prefix);
    let handlers: Vec<_> = (0..8)
        .map(|h| {
            let a = a.clone();
            thread::spawn(move || {
                let owner = Owner::new(format!("handler-{h}"));
                let mut seen = Seen::default();
                for i in 0..40 {
                    let mine = format!("handler {h}, task {i}");
                    let Some(task) = seen.check(&mine, a.insert(&owner, req(i)), |_| true) else {
                        continue;
                    };
                    let id = task.id().to_string();
                    let updated =
                        a.update_status(&owner, &id, TaskStatus::InputRequired, Some(mine.clone()));
                    seen.check(&mine, updated, |task| {
                        task.id().to_string() == id && task.status_message() == Some(mine.as_str())
                    });
                    let done =
                        a.store_result(&owner, &id, TaskStatus::Completed, tool_outcome(&mine));
                    if seen
                        .check(&mine, done, |task| {
                            task.id().to_string() == id
                                && task.outcome() == Some(&tool_outcome(&mine))
                        })
                        .is_some()
                    {
                        seen.check(&mine, a.get(&owner, &id), |task| {
                            task.status() == TaskStatus::Completed
                                && task.outcome() == Some(&tool_outcome(&mine))
                        });
                    }
                }
                seen
            })
        })
        .collect();
    // Resets until the handlers are done.
    let (started, mut resets) = (Instant::now(), 0);
    while !handlers.iter().all(thread::JoinHandle::is_finished) && started.elapsed() < BOUND {
        thread::sleep(ms(50));
        resets += proxy.reset_all();
    }
    let seen: Vec<Seen> = handlers
        .into_iter()
        .map(|handler| join_within(handler, BOUND * 2, "a handler"))
        .collect();
    let wrong: Vec<&String> = seen.iter().flat_map(|seen| &seen.wrong).collect();
    assert!(wrong.is_empty(), "wrong answers: {wrong:#?}");
    let answered: usize = seen.iter().map(|seen| seen.answered).sum();
    let unavailable: usize = seen.iter().map(|seen| seen.unavailable).sum();
    assert!(resets > 0, "no connection was reset");
    assert!(
        unavailable * 10 <= answered,
        "{unavailable} requests failed against {answered} answered under {resets} resets: \
         a reset should cost a replay, not the request"
    );
    eprintln!(
        "{resets} connections reset under 8 handlers: {answered} requests answered, \
         {unavailable} unavailable"
    );
}
