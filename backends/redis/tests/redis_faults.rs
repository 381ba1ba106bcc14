//! `RedisTaskStore` under faults, on real `redis-server` processes: Redis restarted (with
//! and without persistence) under running instances, Redis stopped under a wait, a
//! write whose reply is lost on the way back, and a restarted Redis still loading its AOF.
//!
//! Each test starts its own `redis-server` (`mcp_tasks_test_support::redis`); without one on `PATH` the
//! tests say `SKIPPED` and pass. Every blocking call and every loop is bounded, and every
//! server (and the test's proxy) is stopped when its test ends, also when it fails.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mcp_tasks::{AnyTask, Error, Owner, TaskStatus, TaskStore, TtlPolicy};
use mcp_tasks_redis::{RedisStoreBuilder, RedisTaskStore};
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::support::{
    BOUND, WAKE, alice, assert_unavailable, eventually, ids, join_within, ms, recorder, req,
    terminal_changes, timed, tool_outcome, tool_result,
};

/// A generous upper bound for "answers within about its timeout": far above the timeouts
/// used here, far below a hang.
const PROMPTLY: Duration = Duration::from_secs(5);

fn builder(url: &str, prefix: &str) -> RedisStoreBuilder {
    RedisTaskStore::builder(url)
        .prefix(prefix)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
}

fn fresh_prefix() -> String {
    format!("faults-{}", uuid::Uuid::new_v4().simple())
}

fn instance(server: &RedisServer, prefix: &str) -> RedisTaskStore {
    builder(&server.url(), prefix)
        .build()
        .expect("a RedisTaskStore on the test server")
}

/// The normal (not pub/sub) client connections the server has, besides the one asking.
fn normal_clients(server: &RedisServer) -> usize {
    server
        .command(&["CLIENT", "LIST", "TYPE", "normal"])
        .lines()
        .count()
        .saturating_sub(1)
}

/// Fills the store's connection pool with several connections (as a busy server does):
/// concurrent requests each take a connection of their own.
fn fill_pool(server: &RedisServer, store: &RedisTaskStore, owner: &Owner, id: &str) -> usize {
    for _ in 0..20 {
        let barrier = Arc::new(Barrier::new(8));
        let readers: Vec<_> = (0..8)
            .map(|_| {
                let (store, owner, id) = (store.clone(), owner.clone(), id.to_owned());
                let barrier = Arc::clone(&barrier);
                thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..20 {
                        store.get(&owner, &id).unwrap();
                    }
                })
            })
            .collect();
        for reader in readers {
            join_within(reader, BOUND, "a concurrent reader");
        }
        let pooled = normal_clients(server);
        if pooled >= 3 {
            return pooled;
        }
    }
    panic!("eight concurrent readers never held three connections at once");
}

/// (a) Redis with AOF restarts under two running instances: every request after it is
/// back succeeds, the first write included, and the tasks written before are there.
#[test]
fn an_aof_redis_restart_fails_no_request_once_it_is_back() {
    let Some(mut server) = RedisServer::start_aof() else {
        return;
    };
    let prefix = fresh_prefix();
    let (a, b) = (instance(&server, &prefix), instance(&server, &prefix));
    let owner = alice();
    let before = a.insert(&owner, req(1)).unwrap().id().to_string();
    let pending = a.insert(&owner, req(2)).unwrap().id().to_string();
    fill_pool(&server, &a, &owner, &before);
    fill_pool(&server, &b, &owner, &before);
    let pooled = normal_clients(&server);
    assert!(pooled >= 6, "{pooled} pooled connections");
    eprintln!("{pooled} pooled connections before the restart");

    server.restart();

    let mut failures = Vec::new();
    let mut note = |what: &str, result: Result<AnyTask, Error>| {
        if let Err(err) = result {
            failures.push(format!("{what}: {err}"));
        }
    };
    // The first request of each instance after the restart is a write.
    for (name, store) in [("A", &a), ("B", &b)] {
        for n in 0..10 {
            note(
                &format!("create {n} on {name}"),
                store.insert(&owner, req(n)).map(AnyTask::from),
            );
        }
    }
    note(
        "complete a task created before the restart",
        b.store_result(&owner, &before, TaskStatus::Completed, tool_outcome("done")),
    );
    note(
        "input_required on a task created before",
        a.update_status(&owner, &pending, TaskStatus::InputRequired, None),
    );
    note(
        "cancel it",
        b.cancel(&owner, &pending, None).map(AnyTask::from),
    );
    note("remove it", a.remove(&owner, &pending));
    note("get", a.get(&owner, &before));
    assert!(
        failures.is_empty(),
        "{} of the requests after the restart failed: {failures:#?}",
        failures.len()
    );
    let listed = ids(&b.list(&owner, None, 100).unwrap().tasks);
    assert_eq!(listed.len(), 21, "the task from before and the 20 new ones");
    assert_eq!(listed[0], before);
    assert_eq!(
        a.get(&owner, &before).unwrap().status(),
        TaskStatus::Completed
    );
}

/// (b) Redis without persistence restarts: it loses the shared cursor secret with the
/// tasks. An instance built before the restart and one built after accept each other's
/// cursors for new tasks, in both orders; the older instance still accepts its own
/// cursors from before.
#[test]
fn cursors_hold_across_a_restart_without_persistence() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let owner = alice();
    let old = instance(&server, &prefix);
    for n in 0..3 {
        let _ = old.insert(&owner, req(n)).unwrap();
    }
    let old_cursor = old
        .list(&owner, None, 1)
        .unwrap()
        .next_cursor
        .expect("a cursor");

    server.restart();
    let new = instance(&server, &prefix);
    let mut created = Vec::new();
    for n in 0..6 {
        let store = if n % 2 == 0 { &old } else { &new };
        created.push(store.insert(&owner, req(n)).unwrap().id().to_string());
        thread::sleep(ms(2));
    }
    assert_eq!(ids(&new.list(&owner, None, 100).unwrap().tasks), created);

    // The new instance's cursor continues on the old one, whose next continues on the new.
    let first = new.list(&owner, None, 2).unwrap();
    assert_eq!(ids(&first.tasks), created[..2]);
    let second = old
        .list(&owner, Some(&first.next_cursor.expect("a cursor")), 2)
        .expect("the old instance accepts the new one's cursor");
    assert_eq!(ids(&second.tasks), created[2..4]);
    let third = new
        .list(&owner, Some(&second.next_cursor.expect("a cursor")), 2)
        .expect("the new instance accepts the old one's cursor");
    assert_eq!(ids(&third.tasks), created[4..]);
    assert_eq!(third.next_cursor, None);

    // And the other way round, starting on the old instance.
    let first = old.list(&owner, None, 3).unwrap();
    let second = new
        .list(&owner, Some(&first.next_cursor.expect("a cursor")), 3)
        .expect("the new instance accepts the old one's cursor");
    assert_eq!(ids(&[first.tasks, second.tasks].concat()), created);

    // A cursor issued before the restart names a sequence number of a lost task: the old
    // instance still accepts it (the tasks after it are the new ones).
    let page = old
        .list(&owner, Some(&old_cursor), 100)
        .expect("the old instance accepts its cursor from before the restart");
    assert_eq!(ids(&page.tasks), created);
    // A forged cursor is still refused.
    let forged = format!("{}0000000000000000", &old_cursor[..16]);
    assert!(matches!(
        new.list(&owner, Some(&forged), 2),
        Err(Error::InvalidCursor { .. })
    ));
}

/// (b') With an operator's cursor secret, the instances agree through no Redis key, so
/// cursors from before a restart without persistence hold on every instance.
#[test]
fn a_configured_cursor_secret_holds_across_restarts_on_every_instance() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_prefix();
    let secret = "a long operator secret, the same everywhere";
    let configured = |server: &RedisServer| {
        builder(&server.url(), &prefix)
            .cursor_secret(secret)
            .build()
            .unwrap()
    };
    let owner = alice();
    let old = configured(&server);
    let mut created = Vec::new();
    for n in 0..4 {
        created.push(old.insert(&owner, req(n)).unwrap().id().to_string());
        thread::sleep(ms(2));
    }
    let cursor = old
        .list(&owner, None, 2)
        .unwrap()
        .next_cursor
        .expect("a cursor");
    // The cursor works on every instance with the secret, not on one without it.
    let other = configured(&server);
    assert_eq!(
        ids(&other.list(&owner, Some(&cursor), 10).unwrap().tasks),
        created[2..]
    );
    let unconfigured = instance(&server, &prefix);
    assert!(matches!(
        unconfigured.list(&owner, Some(&cursor), 10),
        Err(Error::InvalidCursor { .. })
    ));
    assert_eq!(
        server.command(&["EXISTS", &format!("{prefix}:cursor-secret")]),
        ":1",
        "only the unconfigured instance shared a secret"
    );

    server.restart();
    let new = configured(&server);
    let after = new.insert(&owner, req(9)).unwrap().id().to_string();
    for store in [&old, &new] {
        assert_eq!(
            ids(&store.list(&owner, Some(&cursor), 10).unwrap().tasks),
            vec![after.clone()],
            "a cursor from before the restart"
        );
    }

    assert!(matches!(
        builder(&server.url(), &prefix)
            .cursor_secret("too short")
            .build(),
        Err(Error::InvalidConfig(_))
    ));
}

/// (c) Redis is stopped: a wait answers the store-unavailable error within about its
/// timeout (never `Timeout`, which would read as "the task is still working"), whether it
/// starts during the outage or was already waiting; a wait without a timeout (or with a
/// longer one) ends at the store's outage timeout. Once Redis is back, waits work again.
#[test]
fn a_wait_during_an_outage_answers_store_unavailable_within_its_timeout() {
    let Some(mut server) = RedisServer::start_aof() else {
        return;
    };
    let prefix = fresh_prefix();
    // The default outage timeout (30 s): waits with a timeout end at their deadline.
    let store = instance(&server, &prefix);
    assert!(matches!(
        builder(&server.url(), &prefix)
            .outage_timeout(Duration::ZERO)
            .build(),
        Err(Error::InvalidConfig(_))
    ));
    // A short one: waits without a timeout end at it.
    let short = builder(&server.url(), &prefix)
        .outage_timeout(ms(300))
        .build()
        .unwrap();
    let owner = alice();
    let id = store.insert(&owner, req(1)).unwrap().id().to_string();

    // Already waiting when Redis goes away.
    let sleeper = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        timed(move || store.wait(&owner, &id, Some(ms(1500))))
    };
    thread::sleep(ms(200));
    assert!(
        !sleeper.is_finished(),
        "the waiter blocks while the task works"
    );
    server.stop();
    let (result, waited) = join_within(sleeper, BOUND, "a waiter during an outage");
    // A read during the outage fails at once, with the Redis client's error as its source.
    let read = store.get(&owner, &id).unwrap_err();
    assert!(
        std::error::Error::source(&read).is_some(),
        "the store error keeps its cause: {read:?}"
    );
    assert_unavailable::<()>(Err(read), "a read during an outage");
    assert_unavailable(result, "a waiter that was waiting when Redis stopped");
    assert!(waited < PROMPTLY, "it answered after {waited:?}");

    // Started during the outage, with a timeout, then without one; several times, so both
    // "the subscriber has not noticed yet" and "it has" are met.
    for round in 0..5 {
        let started = Instant::now();
        let result = store.wait(&owner, &id, Some(ms(500)));
        let waited = started.elapsed();
        assert_unavailable(result, &format!("a wait with a timeout, round {round}"));
        assert!(
            waited < PROMPTLY,
            "round {round}: answered after {waited:?}"
        );

        let started = Instant::now();
        let result = short.wait(&owner, &id, None);
        let waited = started.elapsed();
        assert_unavailable(result, &format!("a wait without a timeout, round {round}"));
        assert!(
            waited < PROMPTLY,
            "round {round}: answered after {waited:?}"
        );

        let started = Instant::now();
        let result = short.wait(&owner, &id, Some(BOUND));
        let waited = started.elapsed();
        assert_unavailable(
            result,
            &format!("a wait with a long timeout, round {round}"),
        );
        assert!(
            waited < PROMPTLY,
            "round {round}: answered after {waited:?}"
        );
        thread::sleep(ms(100));
    }

    server.resume();
    // Back: a wait on the working task reaches its own timeout again (bounded retries
    // while the subscriber reconnects), and a completion ends it.
    let started = Instant::now();
    loop {
        match store.wait(&owner, &id, Some(ms(100))) {
            Err(Error::Timeout { .. }) => break,
            Err(Error::Store { .. }) if started.elapsed() < BOUND => thread::sleep(ms(50)),
            other => panic!("a wait after Redis came back: {other:?}"),
        }
    }
    let waiter = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        thread::spawn(move || store.wait(&owner, &id, Some(BOUND)))
    };
    thread::sleep(ms(50));
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("back"))
        .unwrap();
    assert_eq!(
        join_within(waiter, WAKE, "a waiter after the outage").unwrap(),
        done
    );
}

/// (c') Redis hangs (frozen: connections open, no answers): requests answer the
/// store-unavailable error within a few I/O timeouts (the try, a connection, the retry),
/// the subscription counts as lost once a `PING` goes unanswered, and waits without a
/// timeout end at the outage timeout; once Redis answers again, so does the store.
#[test]
fn a_hung_redis_is_noticed_like_a_lost_one() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = builder(&server.url(), &fresh_prefix())
        .io_timeout(ms(300))
        .outage_timeout(ms(300))
        .build()
        .unwrap();
    let owner = alice();
    let id = store.insert(&owner, req(1)).unwrap().id().to_string();
    let sleeper = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        thread::spawn(move || store.wait(&owner, &id, None))
    };
    thread::sleep(ms(200));
    assert!(
        !sleeper.is_finished(),
        "the waiter blocks while the task works"
    );

    server.freeze();
    // Thawed even if an assertion fails, so that the server can be killed and reaped.
    struct Thaw<'a>(&'a RedisServer);
    impl Drop for Thaw<'_> {
        fn drop(&mut self) {
            self.0.thaw();
        }
    }
    let thaw = Thaw(&server);
    let reader = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        timed(move || store.get(&owner, &id))
    };
    let (read, took) = join_within(reader, BOUND, "a read from a hung Redis");
    assert_unavailable(read, "a read from a hung Redis");
    assert!(took < PROMPTLY, "the read answered after {took:?}");
    let (result, waited) = {
        let started = Instant::now();
        let result = join_within(sleeper, BOUND, "a waiter on a hung Redis");
        (result, started.elapsed())
    };
    assert_unavailable(result, "a waiter without a timeout on a hung Redis");
    assert!(waited < PROMPTLY, "the waiter answered after {waited:?}");

    drop(thaw);
    let started = Instant::now();
    loop {
        match store.get(&owner, &id) {
            Ok(task) => {
                assert_eq!(task.status(), TaskStatus::Working);
                break;
            }
            Err(Error::Store { .. }) if started.elapsed() < BOUND => thread::sleep(ms(50)),
            other => panic!("a read after Redis answers again: {other:?}"),
        }
    }
}

/// A unix-socket proxy in front of a `redis-server` that can lose one reply: the request
/// reaches Redis and is applied, then the connection is cut before the reply gets back,
/// as when a connection dies at the wrong moment.
struct Proxy {
    path: PathBuf,
    /// The start of the next reply to lose, when armed.
    lose: Arc<Mutex<Option<&'static [u8]>>>,
    lost: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Proxy {
    fn start(upstream: &Path) -> Proxy {
        let path = upstream.with_file_name("proxy.sock");
        let listener = UnixListener::bind(&path).expect("bind the proxy's socket");
        let lose: Arc<Mutex<Option<&'static [u8]>>> = Arc::default();
        let lost = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (upstream, lose, lost, stop) = (
                upstream.to_owned(),
                Arc::clone(&lose),
                Arc::clone(&lost),
                Arc::clone(&stop),
            );
            thread::spawn(move || {
                for client in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let (Ok(client), Ok(server)) = (client, UnixStream::connect(&upstream)) else {
                        continue;
                    };
                    forward(client, server, Arc::clone(&lose), Arc::clone(&lost));
                }
            })
        };
        Proxy {
            path,
            lose,
            lost,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn url(&self) -> String {
        format!("redis+unix://{}", self.path.display())
    }

    /// Loses the next reply that starts with `prefix`.
    fn lose_next(&self, prefix: &'static [u8]) {
        *self.lose.lock().unwrap() = Some(prefix);
    }

    fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }
}

/// Copies requests to the server and replies back; cuts both connections instead of
/// passing on a reply to lose. The threads end when either side closes.
fn forward(
    client: UnixStream,
    server: UnixStream,
    lose: Arc<Mutex<Option<&'static [u8]>>>,
    lost: Arc<AtomicUsize>,
) {
    let (Ok(mut client_in), Ok(mut server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    thread::spawn(move || {
        let _ = std::io::copy(&mut client_in, &mut server_out);
        let _ = server_out.shutdown(Shutdown::Both);
    });
    thread::spawn(move || {
        let (mut server, mut client) = (server, client);
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match server.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buffer[..n];
            let cut = {
                let mut lose = lose.lock().unwrap();
                match *lose {
                    Some(prefix) if chunk.starts_with(prefix) => {
                        *lose = None;
                        true
                    }
                    _ => false,
                }
            };
            if cut {
                lost.fetch_add(1, Ordering::SeqCst);
                break;
            }
            if client.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
    });
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which sees `stop`.
        let _ = UnixStream::connect(&self.path);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// (d) A write whose reply is lost is sent again on a fresh connection; the replay
/// recognizes the write that landed and answers as it did: a create is not `exists`, a
/// commit is not `stale` (nor re-decided into an error), a remove is not "not found";
/// and it changes nothing more (one version step, one notification).
#[test]
fn a_write_whose_reply_was_lost_is_replayed_exactly() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = Proxy::start(server.socket());
    let prefix = fresh_prefix();
    let store = builder(&proxy.url(), &prefix).build().unwrap();
    let observer = instance(&server, &prefix);
    let (seen, _) = recorder(&observer);
    let owner = alice();
    // Every script is loaded once, so the replies below are the scripts' own.
    let warm = store.insert(&owner, req(0)).unwrap().id().to_string();
    store
        .store_result(&owner, &warm, TaskStatus::Completed, tool_outcome("warm"))
        .unwrap();
    store.remove(&owner, &warm).unwrap();
    let field = |id: &str, name: &str| {
        server.command(&["HGET", &format!("{prefix}:{{o616c696365}}:t:{id}"), name])
    };

    // CREATE and COMMIT answer `{'ok', time}`.
    proxy.lose_next(b"*2\r\n$2\r\nok\r\n");
    let created = store
        .insert(&owner, req(1))
        .expect("a create whose reply was lost");
    assert_eq!(proxy.lost(), 1, "the create's reply was lost");
    let id = created.id().to_string();
    assert_eq!(
        ids(&observer.list(&owner, None, 10).unwrap().tasks),
        vec![id.clone()]
    );
    assert_eq!(field(&id, "v"), "1");
    assert_eq!(
        observer.get(&owner, &id).unwrap(),
        created.clone().into_any()
    );

    proxy.lose_next(b"*2\r\n$2\r\nok\r\n");
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("once"))
        .expect("a commit whose reply was lost");
    assert_eq!(proxy.lost(), 2, "the commit's reply was lost");
    assert_eq!(done.status(), TaskStatus::Completed);
    assert_eq!(field(&id, "v"), "2", "one version step");
    assert_eq!(observer.get(&owner, &id).unwrap(), done);
    assert_eq!(
        terminal_changes(&seen, &done),
        1,
        "the replay published nothing"
    );

    // REMOVE answers the task's four fields.
    proxy.lose_next(b"*4\r\n");
    let removed = store
        .remove(&owner, &id)
        .expect("a remove whose reply was lost");
    assert_eq!(proxy.lost(), 3, "the remove's reply was lost");
    assert_eq!(removed, done);
    assert!(matches!(
        observer.get(&owner, &id),
        Err(Error::TaskNotFound { .. })
    ));
    assert!(observer.list(&owner, None, 10).unwrap().tasks.is_empty());
}

/// A handle's reads during an outage are the store-unavailable error, never "cancelled" or
/// "gone": a handler can tell the difference, keep working, and finish once Redis (with
/// AOF) is back; the result reaches a waiter on another instance.
#[test]
fn a_handler_tells_an_outage_from_a_cancel_and_finishes_after_it() {
    let Some(mut server) = RedisServer::start_aof() else {
        return;
    };
    let prefix = fresh_prefix();
    let (a, b) = (instance(&server, &prefix), instance(&server, &prefix));
    let owner = alice();
    let (handle, task) = a.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();
    assert_eq!(handle.current_status().unwrap(), TaskStatus::Working);
    assert!(!handle.cancel_requested().unwrap());

    server.stop();
    assert_unavailable(handle.current_status(), "the status during the outage");
    assert_unavailable(
        handle.cancel_requested(),
        "the cancel flag during the outage",
    );
    server.resume();

    // Once Redis answers again, the handler's reads and its result go through.
    eventually("the handle reads the task again", || {
        handle.current_status().ok() == Some(TaskStatus::Working)
    });
    assert!(
        !handle.cancel_requested().unwrap(),
        "nobody asked to cancel"
    );
    let done = handle.complete(tool_result("after the outage")).unwrap();
    assert_eq!(done.status(), TaskStatus::Completed);
    let seen = b.wait(&owner, &id, Some(BOUND)).unwrap();
    assert_eq!(seen.status(), TaskStatus::Completed);
    assert_eq!(seen.outcome(), done.clone().into_any().outcome());
}

/// A handle's finishing write made while Redis is down is tried again until Redis is back,
/// and lands: nothing a handler finished is lost to an outage shorter than the store's
/// outage timeout. A longer outage gives the write up with the store-unavailable error.
#[test]
fn a_finishing_write_during_an_outage_lands_once_redis_is_back() {
    let Some(mut server) = RedisServer::start_aof() else {
        return;
    };
    let prefix = fresh_prefix();
    let a = builder(&server.url(), &prefix)
        .outage_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let b = instance(&server, &prefix);
    let owner = alice();
    let (handle, task) = a.create(&owner, req(1)).unwrap();
    let id = task.id().to_string();

    server.stop();
    let finishing = thread::spawn(move || handle.complete(tool_result("done in the outage")));
    thread::sleep(Duration::from_millis(300));
    assert!(!finishing.is_finished(), "the write waits for Redis");
    server.resume();
    let done = join_within(finishing, BOUND, "the finishing write").expect("it lands");
    assert_eq!(done.status(), TaskStatus::Completed);
    let seen = b.wait(&owner, &id, Some(BOUND)).unwrap();
    assert_eq!(seen.status(), TaskStatus::Completed);
    assert_eq!(seen.outcome(), Some(&tool_outcome("done in the outage")));

    // Past the outage timeout, the write is given up, and says so.
    let short = builder(&server.url(), &prefix)
        .outage_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let (handle, _) = short.create(&owner, req(2)).unwrap();
    server.stop();
    let started = Instant::now();
    let given_up = handle.complete(tool_result("too late"));
    assert!(
        started.elapsed() < PROMPTLY,
        "given up within about the outage timeout"
    );
    match given_up {
        Err(Error::Store { message, .. }) => {
            assert!(message.contains("given up"), "{message}")
        }
        other => panic!("expected the store-unavailable error, got {other:?}"),
    }
    server.resume();
}

/// A restarted Redis answers `-LOADING` while it reads its AOF (nothing is run): requests
/// then wait for it (up to the I/O timeout) instead of failing.
#[test]
fn requests_wait_for_a_redis_still_loading_its_aof() {
    let Some(mut server) = RedisServer::start_aof() else {
        return;
    };
    let prefix = fresh_prefix();
    let store = instance(&server, &prefix);
    let task = store.insert(&alice(), req(1)).unwrap();
    let id = task.id().to_string();
    // Enough data that loading it takes a while.
    assert_eq!(
        server.command(&["DEBUG", "POPULATE", "1500000"]).trim(),
        "+OK"
    );
    let _ = server.command(&["BGREWRITEAOF"]);
    let started = Instant::now();
    while !server
        .command(&["INFO", "persistence"])
        .contains("aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0")
    {
        assert!(started.elapsed() < BOUND, "the AOF rewrite did not end");
        thread::sleep(ms(20));
    }
    server.stop();
    server.resume_loading();
    let loading = server.command(&["PING"]);
    assert!(
        loading.starts_with("-LOADING"),
        "the restarted server answers {loading:?}, not -LOADING: the test proves nothing"
    );
    // Answered once Redis has loaded (not `Store`), the task as it was.
    let read = store
        .get(&alice(), &id)
        .expect("a read waits for the AOF to load");
    assert_eq!(read.status(), TaskStatus::Working);
    let done = store
        .store_result(&alice(), &id, TaskStatus::Completed, tool_outcome("done"))
        .expect("a write after the load");
    assert_eq!(done.status(), TaskStatus::Completed);
}
