//! `PostgresTaskStore` under faults, on a real PostgreSQL server
//! (`mcp_tasks_test_support::postgres`): PostgreSQL crashed (`SIGKILL`, then crash recovery)
//! under handlers finishing tasks and under waiters; connections dropped and reset by a
//! loopback proxy (`mcp_tasks_test_support::proxy`), and a write cut between its statement
//! and its reply; an instance's listening connection cut; an instance killed mid-task (a
//! child process of this test binary); calls from inside tokio runtimes.
//!
//! Each test starts its own server; without PostgreSQL installed the tests say `SKIPPED`
//! and pass. Every blocking call and every loop is bounded; every test prints its figures
//! (`--nocapture`) and asserts them. The tests that load the machine run alone, so that
//! the bounds of those that time something hold on two shared cores.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;
use std::time::{Duration, Instant};

use mcp_tasks::{
    AnyTask, ClaimBackoff, Error, LeasePolicy, Limits, Outcome, Owner, Redelivery, TaskHandle,
    TaskRequest, TaskStatus, TaskStore, Timestamp, TtlPolicy,
};
use mcp_tasks_postgres::{LISTENER_NAME, PostgresStoreBuilder, PostgresTaskStore};
use mcp_tasks_test_support::child::TestChild;
use mcp_tasks_test_support::postgres::PostgresServer;
use mcp_tasks_test_support::proxy::TcpProxy;
use mcp_tasks_testkit::support::{
    BOUND, WAKE, alice, eventually, ids, join_within, ms, obj, recorder, req, terminal_changes,
    tool_outcome, tool_result, waiter_wakes,
};
use serde_json::json;

/// Slack for a loaded machine on top of a computed bound.
const SLACK: Duration = Duration::from_millis(500);

/// The outage timeout of the instances that ride out a crash: far longer than the crash.
const OUTAGE: Duration = Duration::from_secs(15);

/// The fallback poll of the instances whose waits must notice changes while their
/// listening connection is down.
const FALLBACK: Duration = Duration::from_millis(250);

/// The tests that load the machine (handlers in tight loops) run alone, and the tests that
/// assert latencies only beside each other, so that the suite's own load does not blur
/// those bounds on a machine of two cores.
static LOAD: RwLock<()> = RwLock::new(());

/// Held by a test that loads the machine.
fn loading() -> RwLockWriteGuard<'static, ()> {
    LOAD.write().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a test that asserts latencies.
fn timing() -> RwLockReadGuard<'static, ()> {
    LOAD.read().unwrap_or_else(PoisonError::into_inner)
}

fn builder(url: &str, schema: &str) -> PostgresStoreBuilder {
    PostgresTaskStore::builder(url)
        .schema(schema)
        .ttl_policy(TtlPolicy::new(Some(600_000)).with_max(600_000))
        // The load runs by time, not count: a fast run creates more tasks than an
        // owner's default limit, which is not the fault under test.
        .limits(Limits::none())
}

fn fresh_schema() -> String {
    format!("faults_{}", uuid::Uuid::new_v4().simple())
}

fn instance(url: &str, schema: &str) -> PostgresTaskStore {
    builder(url, schema)
        .build()
        .expect("a PostgresTaskStore on the test server")
}

/// What a run of operations answered: how many were sent, how many answered
/// `Error::Store`, and every wrong answer (any other error, or a wrong state).
#[derive(Default)]
struct Tally {
    sent: usize,
    unavailable: usize,
    wrong: Vec<String>,
}

impl Tally {
    /// Counts `result`; answers its value if it is one.
    fn note<T: Debug>(&mut self, what: &str, result: Result<T, Error>) -> Option<T> {
        self.sent += 1;
        match result {
            Ok(value) => Some(value),
            Err(Error::Store { .. }) => {
                self.unavailable += 1;
                None
            }
            Err(other) => {
                self.wrong.push(format!("{what}: {other:?}"));
                None
            }
        }
    }

    /// Records a wrong state unless `holds`.
    fn expect(&mut self, what: &str, holds: bool) {
        if !holds {
            self.wrong.push(what.to_owned());
        }
    }

    fn add(&mut self, other: Tally) {
        self.sent += other.sent;
        self.unavailable += other.unavailable;
        self.wrong.extend(other.wrong);
    }
}

/// Whether `task` is completed with the tool result `text`.
fn completed_with(task: &AnyTask, text: &str) -> bool {
    task.status() == TaskStatus::Completed && task.outcome() == Some(&tool_outcome(text))
}

/// What one handler of [`acknowledged_results_survive_a_kill9_of_postgres`] did.
#[derive(Default)]
struct Handled {
    /// Results whose write answered `Ok`: task id, result text, when the write started
    /// and when it answered.
    acknowledged: Vec<(String, String, Instant, Instant)>,
    /// Finishing writes that answered `Error::Store`: task id and result text.
    given_up: Vec<(String, String)>,
    creates: Tally,
    finishes: Tally,
}

/// A handler: creates a task and completes it, again and again, until `stop` (or
/// [`BOUND`]).
fn handle_tasks(store: &PostgresTaskStore, owner: &Owner, h: usize, stop: &AtomicBool) -> Handled {
    let mut handled = Handled::default();
    let started = Instant::now();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) && started.elapsed() < BOUND {
        n += 1;
        let Some((handle, task)) = handled.creates.note("create", store.create(owner, req(n)))
        else {
            thread::sleep(ms(20));
            continue;
        };
        let id = task.id().to_string();
        let text = format!("handler {h}, task {n}");
        let writing = Instant::now();
        match handled
            .finishes
            .note("complete", handle.complete(tool_result(&text)))
        {
            Some(done) => {
                let done = done.into_any();
                handled.finishes.expect(
                    &format!("{id} answered {done:?}"),
                    completed_with(&done, &text),
                );
                handled
                    .acknowledged
                    .push((id, text, writing, Instant::now()));
            }
            None => handled.given_up.push((id, text)),
        }
    }
    handled
}

/// (a) PostgreSQL is killed (`SIGKILL`: postmaster and backends) while handlers complete
/// tasks, and restarted (crash recovery) under them: every result whose write answered
/// `Ok` is there after the restart, and a finishing write made during the outage lands
/// (the store retries it up to its outage timeout) or answers `Error::Store`; nothing
/// answers a wrong state.
#[test]
fn acknowledged_results_survive_a_kill9_of_postgres() {
    const HANDLERS: usize = 8;
    const SPANNING: usize = 4;
    let _load = loading();
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    let schema = fresh_schema();
    let store = builder(&server.url(), &schema)
        .outage_timeout(OUTAGE)
        .build()
        .unwrap();
    let owner = alice();
    // Tasks whose results are written once PostgreSQL is down: each such write spans the
    // outage.
    let pending: Vec<_> = (0..SPANNING)
        .map(|n| store.create(&owner, req(1_000 + n as i64)).unwrap())
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|h| {
            let (store, owner, stop) = (store.clone(), owner.clone(), Arc::clone(&stop));
            thread::spawn(move || handle_tasks(&store, &owner, h, &stop))
        })
        .collect();
    thread::sleep(ms(400));

    server.kill9();
    let killed = Instant::now();
    let spanning: Vec<_> = pending
        .into_iter()
        .enumerate()
        .map(|(n, (handle, task))| {
            let (id, text) = (task.id().to_string(), format!("spanning {n}"));
            thread::spawn(move || {
                let done = handle.complete(tool_result(&text));
                (id, text, done)
            })
        })
        .collect();
    thread::sleep(ms(700));
    server.restart();
    let outage = killed.elapsed();
    let restarted = Instant::now();
    thread::sleep(ms(600));
    stop.store(true, Ordering::SeqCst);

    let (mut creates, mut finishes) = (Tally::default(), Tally::default());
    let (mut acknowledged, mut given_up) = (Vec::new(), Vec::new());
    let mut across = 0;
    for handler in handlers {
        let handled = join_within(handler, BOUND, "a handler");
        across += handled
            .acknowledged
            .iter()
            .filter(|(_, _, started, answered)| *started < killed && *answered > restarted)
            .count();
        acknowledged.extend(
            handled
                .acknowledged
                .into_iter()
                .map(|(id, text, ..)| (id, text)),
        );
        given_up.extend(handled.given_up);
        creates.add(handled.creates);
        finishes.add(handled.finishes);
    }
    let mut spanned = Tally::default();
    for writer in spanning {
        let (id, text, done) = join_within(writer, BOUND, "a write during the outage");
        if spanned
            .note(&format!("the write of {id} during the outage"), done)
            .is_some()
        {
            acknowledged.push((id, text));
        }
    }
    let landed = spanned.sent - spanned.unavailable - spanned.wrong.len();

    // Read back on an instance built after the restart.
    let after = instance(&server.url(), &schema);
    let lost: Vec<String> = acknowledged
        .iter()
        .filter_map(|(id, text)| match after.get(&owner, id) {
            Ok(task) if completed_with(&task, text) => None,
            other => Some(format!("{id}: {other:?}")),
        })
        .collect();
    // A write given up may have landed or not: the task is working or has that result.
    for (id, text) in &given_up {
        let task = after.get(&owner, id);
        finishes.expect(
            &format!("{id} after a given-up write: {task:?}"),
            task.as_ref().is_ok_and(|task| {
                task.status() == TaskStatus::Working || completed_with(task, text)
            }),
        );
    }
    eprintln!(
        "kill -9 under {HANDLERS} handlers: outage {outage:?} (kill to restart back); \
         {} results acknowledged ({across} of the loop's writes and {landed} of {SPANNING} \
         writes made during the outage spanned it), lost {}; finishing writes answering \
         Error::Store {}, creates answering Error::Store {} of {}; wrong answers {}",
        acknowledged.len(),
        lost.len(),
        finishes.unavailable + spanned.unavailable,
        creates.unavailable,
        creates.sent,
        creates.wrong.len() + finishes.wrong.len() + spanned.wrong.len(),
    );
    assert!(lost.is_empty(), "acknowledged results lost: {lost:#?}");
    for (what, tally) in [
        ("creates", &creates),
        ("finishing writes", &finishes),
        ("writes during the outage", &spanned),
    ] {
        assert!(tally.wrong.is_empty(), "{what}: {:#?}", tally.wrong);
    }
    assert_eq!(
        landed, SPANNING,
        "the finishing writes made during an outage shorter than the outage timeout land"
    );
    assert!(acknowledged.len() > SPANNING, "the handlers got results in");
}

/// (b) PostgreSQL is killed and restarted while waiters wait on one instance; the tasks are
/// then finished through another: every waiter answers within its bound, never `Timeout`,
/// "not found" or another status: with the result, or with `Error::Store` if its bound
/// ends during the outage.
#[test]
fn waiters_ride_out_a_crash_and_restart_of_postgres() {
    const WAITERS: usize = 8;
    const WAIT: Duration = Duration::from_secs(20);
    /// The bound of the waiters whose bound ends during the outage (one per task too).
    const SHORT: Duration = Duration::from_millis(700);
    let _load = timing();
    let Some(mut server) = PostgresServer::start() else {
        return;
    };
    let schema = fresh_schema();
    let waiting = builder(&server.url(), &schema)
        .outage_timeout(OUTAGE)
        .fallback_poll(FALLBACK)
        .build()
        .unwrap();
    // Built before the crash: its pooled connections are dead after it.
    let finisher = instance(&server.url(), &schema);
    let owner = alice();
    let ids: Vec<String> = (0..WAITERS)
        .map(|n| {
            let task = waiting.insert(&owner, req(n as i64)).unwrap();
            task.id().to_string()
        })
        .collect();
    let waiters: Vec<_> = [WAIT, SHORT]
        .into_iter()
        .flat_map(|bound| ids.iter().enumerate().map(move |(n, id)| (n, id, bound)))
        .map(|(n, id, bound)| {
            let (store, owner, id) = (waiting.clone(), owner.clone(), id.clone());
            let waiter = thread::spawn(move || {
                let started = Instant::now();
                let answer = store.wait(&owner, &id, Some(bound));
                (answer, started.elapsed(), Instant::now())
            });
            (n, bound, waiter)
        })
        .collect();
    thread::sleep(ms(100));
    assert!(
        waiters.iter().all(|(.., waiter)| !waiter.is_finished()),
        "the waiters wait while the tasks work"
    );

    server.kill9();
    let killed = Instant::now();
    thread::sleep(ms(600));
    server.restart();
    let restarted = Instant::now();
    for (n, id) in ids.iter().enumerate() {
        finisher
            .store_result(
                &owner,
                id,
                TaskStatus::Completed,
                tool_outcome(&format!("after {n}")),
            )
            .expect("a result written after the restart");
    }
    let finished = Instant::now();

    let (mut answers, mut cut_short) = (Tally::default(), Tally::default());
    let mut last = restarted;
    let mut slowest_short = Duration::ZERO;
    for (n, bound, waiter) in waiters {
        let (answer, waited, woke) = join_within(waiter, bound + SLACK * 2, "a waiter");
        let what = format!("waiter {n} (bound {bound:?})");
        if bound == SHORT {
            slowest_short = slowest_short.max(waited);
            cut_short.expect(
                &format!("{what}: answered after {waited:?}"),
                waited <= bound + SLACK,
            );
            // Its bound ended during the outage: the store cannot tell, and says so.
            cut_short.note(&what, answer.map(|task| task.status()));
            continue;
        }
        last = last.max(woke);
        answers.expect(
            &format!("{what}: answered after {waited:?}"),
            waited <= bound + SLACK,
        );
        if let Some(task) = answers.note(&what, answer) {
            answers.expect(
                &format!("{what}: {task:?}"),
                completed_with(&task, &format!("after {n}")),
            );
        }
    }
    eprintln!(
        "restart under {} waiters: outage {:?}; of the {WAITERS} waiters bounded by {WAIT:?}: \
         {} results, {} Error::Store, {} wrong, the last answered {:?} after the restart, {:?} \
         after the last result was written (fallback poll {FALLBACK:?}); of the {WAITERS} \
         bounded by {SHORT:?} (ending in the outage): {} Error::Store, the slowest answered \
         after {slowest_short:?}",
        WAITERS * 2,
        restarted - killed,
        (answers.sent - answers.unavailable).saturating_sub(answers.wrong.len()),
        answers.unavailable,
        answers.wrong.len(),
        last - restarted,
        last.saturating_duration_since(finished),
        cut_short.unavailable,
    );
    assert!(answers.wrong.is_empty(), "{:#?}", answers.wrong);
    assert_eq!(
        answers.unavailable, 0,
        "an outage shorter than the outage timeout ends no wait"
    );
    assert!(
        last.saturating_duration_since(finished) <= FALLBACK + SLACK * 2,
        "the last waiter answered {:?} after the last result",
        last.saturating_duration_since(finished)
    );
    assert!(cut_short.wrong.is_empty(), "{:#?}", cut_short.wrong);
    assert_eq!(
        cut_short.unavailable, WAITERS,
        "a wait whose bound ends in the outage answers Error::Store"
    );
}

/// The unix socket of `server` (the proxy's upstream).
fn socket(server: &PostgresServer) -> PathBuf {
    let dir = server.data_dir();
    let dir = dir.parent().expect("the server's directory");
    dir.join(format!(".s.PGSQL.{}", server.port()))
}

/// The URL of the database `postgres` through `proxy`.
fn through(proxy: &TcpProxy) -> String {
    let address = proxy.url();
    let address = address.trim_start_matches("redis://");
    format!("postgres://postgres@{address}/postgres")
}

/// The version column of the task `id`, read with `psql`.
fn version(server: &PostgresServer, schema: &str, id: &str) -> String {
    server.psql(&format!(
        "SELECT version FROM {schema}.tasks WHERE id = '{id}'"
    ))
}

/// Runs `write` on its own thread while the proxy holds every reply, waits until PostgreSQL
/// `applied` it, then resets every connection (the write's reply is lost with its
/// connection), holds every byte for `outage` more (the write's replay on a fresh
/// connection is lost too, if the outage is longer than the I/O timeout) and lets
/// everything through again; answers what `write` answered, and how many connections were
/// reset.
#[track_caller]
fn reply_cut<T: Send + 'static>(
    proxy: &TcpProxy,
    what: &str,
    write: impl FnOnce() -> T + Send + 'static,
    applied: impl FnMut() -> bool,
    outage: Duration,
) -> (T, usize) {
    proxy.hold_replies();
    let writer = thread::spawn(write);
    eventually(&format!("PostgreSQL applied the {what}"), applied);
    if !outage.is_zero() {
        proxy.pause();
    }
    let reset = proxy.reset_all();
    thread::sleep(outage);
    proxy.resume();
    assert!(reset >= 1, "the {what}'s connection was reset");
    (join_within(writer, BOUND, what), reset)
}

/// (c) A write whose connection is reset after PostgreSQL applied it, before its reply came
/// back, is sent again on a fresh connection with the same write id, and the replay
/// answers as the first write would have: a commit is not refused as an illegal
/// transition and moves the task one version, a create makes one task, a removal is not
/// "not found"; and the replay sends no second notification (and none at all if the
/// replay was lost too: the instance announces only the writes it saw commit).
#[test]
fn a_write_cut_between_statement_and_reply_is_applied_once() {
    /// The I/O timeout of the instance whose writes are cut.
    const CUT_IO: Duration = Duration::from_secs(2);
    let _load = timing();
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(&socket(&server));
    let schema = fresh_schema();
    let direct = instance(&server.url(), &schema);
    let (seen, _) = recorder(&direct);
    // One pooled connection (whose statements are prepared below, so that the statement
    // held is the write itself), no lease rounds (nothing else writes on it), and an I/O
    // timeout far above a write's wait to be applied: the reset, not a timeout, is what
    // ends the write.
    let cut = builder(&through(&proxy), &schema)
        .pool_size(1)
        .io_timeout(CUT_IO)
        .lease_policy(LeasePolicy::leave_until_ttl())
        .build()
        .unwrap();
    let owner = alice();
    // Prepares the writes on the pooled connection (a fresh one after each reset).
    let warm = || {
        let warm = cut.insert(&owner, req(0)).unwrap().id().to_string();
        cut.store_result(&owner, &warm, TaskStatus::Completed, tool_outcome("warm"))
            .unwrap();
        cut.remove(&owner, &warm).unwrap();
    };
    warm();
    let id = cut.insert(&owner, req(1)).unwrap().id().to_string();
    assert_eq!(version(&server, &schema, &id), "1");

    // A commit.
    let (done, reset) = reply_cut(
        &proxy,
        "commit",
        {
            let (cut, owner, id) = (cut.clone(), owner.clone(), id.clone());
            move || cut.store_result(&owner, &id, TaskStatus::Completed, tool_outcome("once"))
        },
        || version(&server, &schema, &id) == "2",
        Duration::ZERO,
    );
    let done = done.expect("the commit whose reply was cut answers the task");
    assert!(completed_with(&done, "once"), "{done:?}");
    assert_eq!(version(&server, &schema, &id), "2", "one version step");
    assert_eq!(direct.get(&owner, &id).unwrap(), done);
    assert_eq!(
        terminal_changes(&seen, &done),
        1,
        "the replay notified nobody"
    );

    // A create.
    warm();
    let before = direct.list(&owner, None, 100).unwrap().tasks.len();
    let (created, _) = reply_cut(
        &proxy,
        "create",
        {
            let (cut, owner) = (cut.clone(), owner.clone());
            move || cut.insert(&owner, req(2))
        },
        || direct.list(&owner, None, 100).unwrap().tasks.len() == before + 1,
        Duration::ZERO,
    );
    let created = created.expect("the create whose reply was cut answers the task");
    let listed = direct.list(&owner, None, 100).unwrap().tasks;
    assert_eq!(listed.len(), before + 1, "exactly one task was created");
    assert_eq!(listed.last().map(AnyTask::id), Some(created.id()));
    let created = created.id().to_string();
    assert_eq!(version(&server, &schema, &created), "1");

    // A removal.
    warm();
    let (removed, _) = reply_cut(
        &proxy,
        "removal",
        {
            let (cut, owner, id) = (cut.clone(), owner.clone(), id.clone());
            move || cut.remove(&owner, &id)
        },
        || version(&server, &schema, &id).is_empty(),
        Duration::ZERO,
    );
    let removed = removed.expect("the removal whose reply was cut answers the task");
    assert_eq!(removed, done);
    assert!(matches!(
        direct.get(&owner, &id),
        Err(Error::TaskNotFound { .. })
    ));

    // A handler's result whose reply is cut, and whose replay on a fresh connection is lost
    // too (the link stays down past the I/O timeout): the store tries the finishing write
    // again once the link is back, finds the task as that write left it, and answers it
    // (not the illegal transition a second result would be).
    warm();
    let (handle, task) = cut.create(&owner, req(3)).unwrap();
    let id = task.id().to_string();
    let started = Instant::now();
    let (done, _) = reply_cut(
        &proxy,
        "result",
        move || handle.complete(tool_result("late")),
        || version(&server, &schema, &id) == "2",
        CUT_IO + ms(500),
    );
    let took = started.elapsed();
    let done = done
        .expect("the result whose reply and replay were lost answers the task")
        .into_any();
    assert!(completed_with(&done, "late"), "{done:?}");
    assert_eq!(version(&server, &schema, &id), "2", "one version step");
    // At most one notification: none here, in fact, since the instance never learned that
    // its write committed (the reply and the replay were both lost), so it announced
    // nothing; other instances' waits read the task at their fallback poll.
    thread::sleep(ms(200));
    let told = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|change| change.task.id() == done.id() && change.task.is_terminal())
        .count();
    assert!(told <= 1, "at most one notification: {told}");
    assert_eq!(direct.get(&owner, &done.id().to_string()).unwrap(), done);
    eprintln!(
        "writes cut between statement and reply ({reset} connections reset at the commit): \
         the commit, the create and the removal each applied once, the replays answered as \
         the writes; a handler's result whose replay was lost too answered the completed \
         task after {took:?} (I/O timeout {CUT_IO:?})"
    );
}

/// A round of every kind of request on `store` for `owner`, noting what each answered in
/// `tally`, and what was acknowledged in `ledger` (task id, and its acknowledged end:
/// `None` while working, `Some(true)` completed with its text, `Some(false)` removed).
fn round(
    store: &PostgresTaskStore,
    owner: &Owner,
    n: i64,
    tally: &mut Tally,
    ledger: &mut Vec<(String, String, Option<bool>)>,
) {
    let Some(task) = tally.note("create", store.insert(owner, req(n))) else {
        return;
    };
    let id = task.id().to_string();
    let text = format!("result {n}");
    ledger.push((id.clone(), text.clone(), None));
    if let Some(task) = tally.note("get", store.get(owner, &id)) {
        tally.expect(
            &format!("get {id}: {task:?}"),
            task.status() == TaskStatus::Working,
        );
    }
    for status in [TaskStatus::InputRequired, TaskStatus::Working] {
        let moved = store.update_status(owner, &id, status, None);
        if let Some(task) = tally.note(&format!("{status} {id}"), moved) {
            tally.expect(&format!("{status} {id}: {task:?}"), task.status() == status);
        }
    }
    let done = store.store_result(owner, &id, TaskStatus::Completed, tool_outcome(&text));
    let Some(done) = tally.note(&format!("complete {id}"), done) else {
        return;
    };
    tally.expect(
        &format!("complete {id}: {done:?}"),
        completed_with(&done, &text),
    );
    if let Some(entry) = ledger.last_mut() {
        entry.2 = Some(true);
    }
    if let Some(removed) = tally.note(&format!("remove {id}"), store.remove(owner, &id)) {
        tally.expect(&format!("remove {id}: {removed:?}"), removed == done);
        if let Some(entry) = ledger.last_mut() {
            entry.2 = Some(false);
        }
    }
    if n % 4 == 0 {
        tally.note("list", store.list(owner, None, 10));
    }
}

/// (c') Requests run while a proxy between an instance and PostgreSQL drops and resets
/// every connection (its pooled ones and its listening one), again and again: each answers
/// `Ok` or `Error::Store`, never a wrong state; once the proxy heals, every request
/// succeeds, waiters wake both ways, and no write that answered `Ok` is lost.
#[test]
fn requests_through_dropped_and_reset_connections_answer_ok_or_store_error() {
    const WORKERS: usize = 2;
    const CUTS: usize = 12;
    let _load = loading();
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let proxy = TcpProxy::start(&socket(&server));
    let schema = fresh_schema();
    let direct = instance(&server.url(), &schema);
    let cut = builder(&through(&proxy), &schema)
        .io_timeout(ms(500))
        .outage_timeout(Duration::from_secs(2))
        .fallback_poll(FALLBACK)
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (cut, stop) = (cut.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let owner = Owner::new(format!("worker-{w}"));
                let (mut tally, mut ledger) = (Tally::default(), Vec::new());
                let started = Instant::now();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) && started.elapsed() < BOUND {
                    n += 1;
                    round(&cut, &owner, n, &mut tally, &mut ledger);
                }
                (owner, tally, ledger)
            })
        })
        .collect();
    let mut ended = 0;
    for n in 0..CUTS {
        thread::sleep(ms(100));
        ended += if n % 2 == 0 {
            proxy.drop_all()
        } else {
            proxy.reset_all()
        };
    }
    stop.store(true, Ordering::SeqCst);
    let mut during = Tally::default();
    let mut ledgers = Vec::new();
    for worker in workers {
        let (owner, tally, ledger) = join_within(worker, BOUND, "a worker");
        during.add(tally);
        ledgers.push((owner, ledger));
    }

    // Healed: nothing fails.
    let owner = alice();
    let mut after = Tally::default();
    let mut ledger = Vec::new();
    for n in 0..5 {
        round(&cut, &owner, n, &mut after, &mut ledger);
    }
    ledgers.push((owner.clone(), ledger));
    eventually("the instance listens again", || cut.listening());
    waiter_wakes(&cut, &direct, &owner, "from the cut instance");
    waiter_wakes(&direct, &cut, &owner, "from the direct instance");

    // Every acknowledged write is there, read on the instance that was never cut.
    let mut lost = Vec::new();
    for (owner, ledger) in &ledgers {
        for (id, text, end) in ledger {
            let task = direct.get(owner, id);
            let kept = match (end, &task) {
                (Some(false), Err(Error::TaskNotFound { .. })) => true,
                (Some(true), Ok(task)) => completed_with(task, text),
                // Completed, and removed by a removal that answered `Error::Store`.
                (Some(true), Err(Error::TaskNotFound { .. })) => true,
                // Its result may have landed although its write answered `Error::Store`.
                (None, Ok(task)) => !task.is_terminal() || completed_with(task, text),
                _ => false,
            };
            if !kept {
                lost.push(format!("{id} ({end:?}): {task:?}"));
            }
        }
    }
    eprintln!(
        "{CUTS} cuts ({ended} connections dropped or reset) under {WORKERS} workers: {} \
         requests, {} answered Error::Store, {} wrong; after the proxy healed {} requests, \
         {} failed; acknowledged writes lost: {}",
        during.sent,
        during.unavailable,
        during.wrong.len(),
        after.sent,
        after.unavailable + after.wrong.len(),
        lost.len(),
    );
    assert!(during.wrong.is_empty(), "{:#?}", during.wrong);
    assert_eq!(
        (after.unavailable, after.wrong),
        (0, Vec::<String>::new()),
        "requests after the proxy healed"
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:#?}");
    assert!(ended >= CUTS, "every cut ended connections: {ended}");
}

/// (d) One instance's listening connection is cut (its backend terminated) and kept from
/// coming back (its role may not log in): a waiter on that instance still sees a change
/// made through another instance within the fallback poll, and once the role may log in
/// again, the instance listens again and waits are woken by notifications.
#[test]
fn a_waiter_whose_listener_is_cut_wakes_within_the_fallback_poll() {
    let _load = timing();
    let Some(server) = PostgresServer::start() else {
        return;
    };
    server.psql("CREATE ROLE cut_off LOGIN SUPERUSER");
    let schema = fresh_schema();
    let finisher = instance(&server.url(), &schema);
    let cut_url = format!("postgres://cut_off@127.0.0.1:{}/postgres", server.port());
    let cut = builder(&cut_url, &schema)
        .fallback_poll(FALLBACK)
        .build()
        .unwrap();
    assert!(cut.listening());
    let owner = alice();
    let id = finisher.insert(&owner, req(1)).unwrap().id().to_string();
    let waiter = {
        let (cut, owner, id) = (cut.clone(), owner.clone(), id.clone());
        thread::spawn(move || (cut.wait(&owner, &id, Some(BOUND)), Instant::now()))
    };
    thread::sleep(ms(100));
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the task works"
    );

    server.psql("ALTER ROLE cut_off NOLOGIN");
    let terminated = server.psql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE application_name = '{LISTENER_NAME}' AND usename = 'cut_off'"
    ));
    assert_eq!(terminated, "1", "the instance's listening connection");
    eventually("the instance knows it no longer listens", || {
        !cut.listening()
    });
    // The waiter is polling by now; the notification of this change is lost to it.
    thread::sleep(ms(50));
    let finished = Instant::now();
    finisher
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("unheard"))
        .unwrap();
    let (answer, woke) = join_within(waiter, BOUND, "the waiter whose listener was cut");
    let latency = woke - finished;
    let task = answer.expect("the waiter gets the task");
    assert!(completed_with(&task, "unheard"), "{task:?}");
    assert!(
        !cut.listening(),
        "still not listening: the waiter woke by polling"
    );

    server.psql("ALTER ROLE cut_off LOGIN");
    let allowed = Instant::now();
    eventually("the instance listens again", || cut.listening());
    let back = allowed.elapsed();
    // Listening: a wait sleeps until a notification (no more polling), which comes.
    let id = finisher.insert(&owner, req(2)).unwrap().id().to_string();
    let waiter = {
        let (cut, owner, id) = (cut.clone(), owner.clone(), id.clone());
        thread::spawn(move || (cut.wait(&owner, &id, Some(BOUND)), Instant::now()))
    };
    thread::sleep(ms(100));
    let finished_again = Instant::now();
    finisher
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("heard"))
        .unwrap();
    let (answer, woke) = join_within(waiter, BOUND, "the waiter after the listener is back");
    let notified = woke - finished_again;
    assert!(completed_with(&answer.unwrap(), "heard"));
    eprintln!(
        "listener cut: the waiter woke {latency:?} after the change (fallback poll \
         {FALLBACK:?}); listening again {back:?} after logins were allowed; then a waiter \
         woke {notified:?} after the change (notified)"
    );
    assert!(
        latency <= FALLBACK + SLACK,
        "the waiter woke {latency:?} after the change, beyond the fallback poll"
    );
    assert!(notified <= WAKE, "notified {notified:?} after the change");
}

/// (d') One instance's listening connection hangs (its backend frozen with `SIGSTOP`:
/// open, silent): a waiter on that instance is answered within about two seconds of a
/// change made through another instance (a second of silence, then a check bounded to a
/// second, then a fresh listening connection), not after the 10 s I/O timeout.
#[test]
fn a_waiter_whose_listener_hangs_wakes_within_seconds() {
    let _load = timing();
    let Some(server) = PostgresServer::start() else {
        return;
    };
    server.psql("CREATE ROLE hung LOGIN SUPERUSER");
    let schema = fresh_schema();
    let finisher = instance(&server.url(), &schema);
    let hung_url = format!("postgres://hung@127.0.0.1:{}/postgres", server.port());
    let hung = builder(&hung_url, &schema)
        .fallback_poll(FALLBACK)
        .build()
        .unwrap();
    assert!(hung.listening());
    let pid: u32 = server
        .psql(&format!(
            "SELECT pid FROM pg_stat_activity \
             WHERE application_name = '{LISTENER_NAME}' AND usename = 'hung'"
        ))
        .parse()
        .expect("the instance's listening backend");
    let owner = alice();
    let id = finisher.insert(&owner, req(1)).unwrap().id().to_string();
    let waiter = {
        let (hung, owner, id) = (hung.clone(), owner.clone(), id.clone());
        thread::spawn(move || (hung.wait(&owner, &id, Some(BOUND)), Instant::now()))
    };
    thread::sleep(ms(100));
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the task works"
    );

    let frozen = server.freeze_backend(pid);
    let finished = Instant::now();
    finisher
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("unheard"))
        .unwrap();
    let (answer, woke) = join_within(waiter, BOUND, "the waiter whose listener hangs");
    let latency = woke - finished;
    drop(frozen);
    let task = answer.expect("the waiter gets the task");
    assert!(completed_with(&task, "unheard"), "{task:?}");
    eventually("the instance listens again", || hung.listening());
    eprintln!("listener hung: the waiter woke {latency:?} after the change");
    assert!(
        latency <= Duration::from_secs(2) + FALLBACK + SLACK,
        "the waiter woke {latency:?} after the change: a hung listener must cost about \
         what a lost one does"
    );
}

/// (d'') A change committed whose event was never sent (its instance stopped between the
/// commit and its announcement: played by committing it with `commit_task` and no
/// channel, as an instance does, and announcing nothing) reaches a waiter on another
/// instance by its fallback poll, while that instance's listening connection is up.
#[test]
fn a_change_whose_event_was_never_sent_is_read_within_the_fallback_poll() {
    let _load = timing();
    let Some(server) = PostgresServer::start() else {
        return;
    };
    let schema = fresh_schema();
    let creator = instance(&server.url(), &schema);
    let waiting = builder(&server.url(), &schema)
        .fallback_poll(FALLBACK)
        .build()
        .unwrap();
    let owner = alice();
    let id = creator.insert(&owner, req(1)).unwrap().id().to_string();
    let waiter = {
        let (waiting, owner, id) = (waiting.clone(), owner.clone(), id.clone());
        thread::spawn(move || (waiting.wait(&owner, &id, Some(BOUND)), Instant::now()))
    };
    thread::sleep(ms(100));
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the task works"
    );
    let finished = Instant::now();
    let outcome = server.psql(&format!(
        "SELECT c.outcome FROM \"{schema}\".tasks t, \"{schema}\".commit_task(t.id, t.owner, \
         t.version, 'cancelled', t.body, false, NULL, true, gen_random_uuid(), '', NULL, NULL, \
         NULL, NULL, false, NULL) c WHERE t.id = '{id}'"
    ));
    assert_eq!(outcome, "ok", "the change committed, unannounced");
    let (answer, woke) = join_within(waiter, BOUND, "the waiter of an unannounced change");
    let latency = woke - finished;
    let task = answer.expect("the waiter gets the task");
    assert_eq!(task.status(), TaskStatus::Cancelled, "{task:?}");
    assert!(waiting.listening(), "it woke by polling, while listening");
    eprintln!(
        "an unannounced change: the waiter woke {latency:?} after it (fallback poll \
         {FALLBACK:?})"
    );
    assert!(
        latency <= FALLBACK + SLACK,
        "the waiter woke {latency:?} after the change, beyond the fallback poll"
    );
}

/// The lease of the instances of (e), and its renewal interval and claim back-off.
const LEASE: Duration = Duration::from_secs(1);
const INTERVAL: Duration = Duration::from_millis(250);
const BACKOFF: Duration = Duration::from_millis(200);

/// Set in the child process that plays an instance killed mid-task: `once` (creates a
/// task) or `redelivered` (creates a redeliverable task and checkpoints it), then the
/// PostgreSQL URL and the schema, space-separated. It prints the task's id, then holds
/// the task until it is killed.
const CHILD: &str = "MCP_TASKS_PG_FAULTS_CHILD";

fn leased(url: &str, schema: &str) -> PostgresStoreBuilder {
    builder(url, schema)
        .lease_policy(LeasePolicy::fail_after(LEASE).renewed_every(INTERVAL))
        .claim_backoff(ClaimBackoff::new(BACKOFF, BACKOFF * 4))
}

/// A `tools/call` of `sleep` that may run twice.
fn redeliverable() -> TaskRequest {
    let job = obj(json!({"tool": "sleep", "arguments": {"ms": 60_000}}));
    TaskRequest::new(1, "tools/call").with_redelivery(Redelivery::new(2, job))
}

/// The child's side: see [`CHILD`]. Run as a plain test, it does nothing.
#[test]
fn child_process() {
    let Ok(config) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = config.split(' ');
    let (Some(role), Some(url), Some(schema)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("a role, a URL and a schema in {CHILD}");
    };
    let store = leased(url, schema).build().expect("the child's store");
    let (handle, task) = if role == "redelivered" {
        let (handle, task) = store.create(&alice(), redeliverable()).unwrap();
        handle.checkpoint(json!({"slept": 1_500})).unwrap();
        (handle, task)
    } else {
        store.create(&alice(), req(1)).unwrap()
    };
    println!("TASK {}", task.id());
    println!("READY");
    // Bounded: the parent kills this process long before.
    thread::sleep(Duration::from_secs(60));
    drop(handle);
}

/// A server, an instance on it (with short leases), and a child process playing another
/// instance (see [`CHILD`]) as `role`, with the id of the task it holds.
fn survivor_and_child(
    role: &str,
) -> Option<(PostgresServer, PostgresTaskStore, TestChild, String)> {
    let server = PostgresServer::start()?;
    let schema = fresh_schema();
    let survivor = leased(&server.url(), &schema).build().unwrap();
    let value = format!("{role} {} {schema}", server.url());
    let child = TestChild::start("child_process", CHILD, &value, BOUND);
    let id = child.values("TASK").pop().expect("the child's task");
    Some((server, survivor, child, id))
}

/// (e) An instance is killed (`SIGKILL`) while its handler runs a task: a waiter on a
/// surviving instance sees the task failed (its lease lapsed) within the lease and one
/// renewal interval.
#[test]
fn a_killed_instance_s_task_fails_within_lease_and_interval() {
    let _load = timing();
    let Some((_server, survivor, mut child, id)) = survivor_and_child("once") else {
        return;
    };
    // Alive, the child keeps its task past its lease.
    thread::sleep(LEASE + INTERVAL * 2);
    assert_eq!(
        survivor.get(&alice(), &id).unwrap().status(),
        TaskStatus::Working,
        "renewed, the lease holds"
    );
    let waiter = {
        let (survivor, id) = (survivor.clone(), id.clone());
        thread::spawn(move || (survivor.wait(&alice(), &id, Some(BOUND)), Instant::now()))
    };
    thread::sleep(ms(50));
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the child lives"
    );

    let killed = child.kill();
    let killed_at = Timestamp::now();
    let (answer, woke) = join_within(waiter, BOUND, "the waiter on a killed instance's task");
    let took = woke - killed;
    let task = answer.expect("the waiter gets the task");
    eprintln!(
        "lease {LEASE:?}, renewal interval {INTERVAL:?}: SIGKILL to the waiter on the \
         survivor seeing the task failed: {took:?} (failed by the survivor's reaper {:?} \
         after the kill, by PostgreSQL's clock)",
        task.last_updated_at().saturating_since(killed_at)
    );
    let AnyTask::Failed(failed) = &task else {
        panic!("the task failed, not {task:?}");
    };
    assert!(
        matches!(failed.outcome(), Some(Outcome::Error(error))
            if error.message == mcp_tasks::backend::LEASE_LAPSED),
        "failed because its lease lapsed: {task:?}"
    );
    assert!(
        took <= LEASE + INTERVAL + SLACK,
        "failed {took:?} after the kill, beyond lease + interval ({:?})",
        LEASE + INTERVAL
    );
}

/// (e') The same with a redeliverable task: the surviving instance claims it instead, for
/// attempt 2, with the job and the last checkpoint, and its result is the task's.
#[test]
fn a_killed_instance_s_redeliverable_task_is_claimed_with_its_checkpoint() {
    let _load = timing();
    let Some((_server, survivor, mut child, id)) = survivor_and_child("redelivered") else {
        return;
    };
    assert!(
        survivor.claim().unwrap().is_none(),
        "a live instance's task"
    );

    let killed = child.kill();
    let claim = loop {
        if let Some(claim) = survivor.claim().expect("a claim answers") {
            break claim;
        }
        assert!(
            killed.elapsed() < BOUND,
            "nothing claimable after {BOUND:?}"
        );
        survivor
            .wait_for_claimable(Some(ms(50)))
            .expect("the claim wait answers");
    };
    let took = killed.elapsed();
    eprintln!(
        "redelivery: SIGKILL to the claim on the survivor {took:?} (lease {LEASE:?}, interval \
         {INTERVAL:?}, back-off {BACKOFF:?})"
    );
    assert_eq!(claim.task.id().to_string(), id);
    assert_eq!((claim.attempts.attempt(), claim.attempts.max()), (2, 2));
    assert_eq!(claim.checkpoint, Some(json!({"slept": 1_500})));
    assert_eq!(claim.job["tool"], "sleep");
    assert_eq!(
        survivor.get(&alice(), &id).unwrap().status(),
        TaskStatus::Working,
        "working throughout"
    );
    assert!(
        took <= LEASE + INTERVAL * 2 + BACKOFF + SLACK,
        "claimed {took:?} after the kill"
    );
    let handle = TaskHandle::claimed(survivor.clone(), claim);
    let done = handle.complete(tool_result("resumed")).unwrap();
    assert!(completed_with(
        &survivor.get(&alice(), &id).unwrap(),
        "resumed"
    ));
    assert!(completed_with(&done.into_any(), "resumed"));
}

/// (f) Every kind of call from inside a tokio runtime: none panics (the store runs its
/// statements on a runtime of its own, and never blocks on the caller's), a wait's future
/// is woken on the caller's runtime, and dropping the store there is fine.
async fn calls_inside_tokio(server: &PostgresServer) {
    let store = instance(&server.url(), &fresh_schema());
    let owner = alice();
    let id = store.insert(&owner, req(1)).unwrap().id().to_string();
    assert_eq!(
        store.get(&owner, &id).unwrap().status(),
        TaskStatus::Working
    );
    let asked = store
        .update_status(&owner, &id, TaskStatus::InputRequired, None)
        .unwrap();
    assert_eq!(asked.status(), TaskStatus::InputRequired);
    let page = store.list(&owner, None, 10).unwrap();
    assert_eq!(ids(&page.tasks), vec![id.clone()]);
    assert!(matches!(
        store.wait(&owner, &id, Some(ms(100))),
        Err(Error::Timeout { .. })
    ));
    let waiting = {
        let (store, owner, id) = (store.clone(), owner.clone(), id.clone());
        tokio::spawn(async move { store.wait_async(&owner, &id).await })
    };
    tokio::time::sleep(ms(100)).await;
    assert!(
        !waiting.is_finished(),
        "the future waits while the task works"
    );
    let done = store
        .store_result(&owner, &id, TaskStatus::Completed, tool_outcome("async"))
        .unwrap();
    let woke = tokio::time::timeout(WAKE, waiting)
        .await
        .expect("the future is woken")
        .expect("the waiting task did not panic")
        .expect("the future answers the task");
    assert_eq!(woke, done);
    // A clone dropped in a task of the runtime, the last one in the test's future.
    let clone = store.clone();
    tokio::spawn(async move { drop(clone) }).await.unwrap();
    drop(store);
    // Another store whose last reference goes in a task of the runtime.
    let other = instance(&server.url(), &fresh_schema());
    tokio::spawn(async move {
        let _ = other.insert(&alice(), req(2)).unwrap();
        drop(other);
    })
    .await
    .expect("dropping the store in a task of the runtime does not panic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_from_a_multi_thread_runtime_do_not_panic() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    calls_inside_tokio(&server).await;
}

#[tokio::test(flavor = "current_thread")]
async fn calls_from_a_current_thread_runtime_do_not_panic() {
    let Some(server) = PostgresServer::start() else {
        return;
    };
    calls_inside_tokio(&server).await;
}
