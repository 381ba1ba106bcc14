//! The behaviour suite of [`TaskStore`] backends, for store authors: a backend that passes
//! it behaves like the in-process [`TaskRegistry`](mcp_tasks::TaskRegistry), which is
//! held to it too.
//!
//! Implement [`Backend`] (how to build an empty store of yours with a given policy) and
//! instantiate the suite in an integration test of your crate:
//!
//! ```no_run
//! use mcp_tasks::TaskRegistry;
//! use mcp_tasks_testkit::{Backend, Config};
//!
//! /// Each call builds a new, empty store (a fresh database schema, key prefix, …).
//! struct MyBackend;
//!
//! impl Backend for MyBackend {
//!     type Store = TaskRegistry; // your store type
//!
//!     fn store(&self, config: Config) -> TaskRegistry {
//!         TaskRegistry::builder()
//!             .ttl_policy(config.ttl)
//!             .limits(config.limits)
//!             .poll_interval(config.poll_interval)
//!             .build()
//!             .expect("a valid configuration")
//!     }
//! }
//!
//! // One `#[test]` per behaviour, in the module `my_backend`. The expression is evaluated
//! // per test and may be `None` (a server that is not installed: the tests pass, skipped).
//! mcp_tasks_testkit::store_suite!(my_backend, Some(MyBackend));
//! # fn main() {}
//! ```
//!
//! What it holds a store to: owners (another owner's task is an unknown id, cursors bound
//! to their owner and revealing nothing), TTLs and expiry, keyset pagination, the per-owner
//! limit, the spec's transition table through every entry point (by id, typed handles,
//! racing writers: one terminal status wins, a cancelled task never gains a result), input
//! requests and answers, blocking waits (woken, timed out, ended by cancel, removal and
//! expiry, never by another task), subscribers (in order per task, panics contained),
//! origins, timestamps, `Arc<dyn TaskStore>`, and redelivery (checkpoints kept quietly and
//! bounded; with [`Backend::another_instance`], a task handed over by one instance claimed
//! once by the other, with its job, attempt and checkpoint, its old holder fenced out). [`suite`] lists every test;
//! [`support`] has the helpers they use, for your own tests.
//!
//! The tests spawn threads and sleep briefly; every blocking call is bounded, so a bug
//! fails a test instead of hanging the suite.

#![deny(missing_docs)]

use mcp_tasks::backend::Driver;
use mcp_tasks::{Limits, TaskStore, TtlPolicy};

pub mod admin;
pub mod drivers;
pub mod suite;
pub mod support;

/// How a test wants its store: the policies a backend's builder takes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Config {
    /// The retention policy.
    pub ttl: TtlPolicy,
    /// The limits on stored tasks.
    pub limits: Limits,
    /// The suggested poll interval for tasks whose request names none.
    pub poll_interval: Option<u64>,
}

impl Default for Config {
    /// A default TTL of 60 s, at most 10 minutes; no limits; no suggested poll interval.
    fn default() -> Self {
        Config {
            ttl: TtlPolicy::new(Some(60_000)).with_max(600_000),
            limits: Limits::none(),
            poll_interval: None,
        }
    }
}

/// Builds stores of one backend for the suite.
pub trait Backend {
    /// The store. `Clone` must share the store (as the registry's clones do), since the
    /// tests hand clones to other threads.
    type Store: TaskStore + Clone + 'static;

    /// A new, empty store with `config`'s policies. Stores from two calls share nothing
    /// (tasks, cursors): a cursor of one is refused by the other.
    fn store(&self, config: Config) -> Self::Store;

    /// A new, empty store with the default [`Config`].
    fn default_store(&self) -> Self::Store {
        self.store(Config::default())
    }

    /// Another instance of `store`'s storage, as a second server process would build it
    /// (same tasks, same cursors), for the multi-instance tests (redelivery's hand-over and
    /// claim). `None` (the default) for a store that lives in one process: those tests
    /// check what such a store promises instead (nothing is ever claimable).
    fn another_instance(&self, store: &Self::Store) -> Option<Self::Store> {
        let _ = store;
        None
    }
}

/// Builds drivers of one engine for the [`drivers`] suite.
pub trait DriverBackend {
    /// The driver.
    type Driver: Driver;

    /// A new driver on fresh, empty storage (a fresh database schema, key prefix, …):
    /// drivers from two calls share nothing.
    fn driver(&self) -> Self::Driver;

    /// Another driver on the storage of `driver`, as a second server process would build
    /// it (same tasks, same leases, same feed).
    fn another(&self, driver: &Self::Driver) -> Self::Driver;
}

/// Instantiates every test of the [`drivers`] suite for one engine, each a `#[test]` in a
/// module of its own named `$module`. `$backend` is an expression of type `Option<B>`
/// where `B: DriverBackend`, evaluated once per test; `None` skips the test (it passes),
/// for an engine whose server is not installed.
///
/// ```no_run
/// use mcp_tasks_testkit::DriverBackend;
/// # use mcp_tasks::backend::*;
/// # #[derive(Debug)] struct MyDriver;
/// # impl Driver for MyDriver {
/// #   fn read(&self, _: &TaskKey) -> Result<Option<Versioned>, mcp_tasks::Error> { todo!() }
/// #   fn insert(&self, _: &NewTask<'_>) -> Result<Inserted, mcp_tasks::Error> { todo!() }
/// #   fn write(&self, _: &Write<'_>) -> Result<Wrote, mcp_tasks::Error> { todo!() }
/// #   fn remove(&self, _: &TaskKey) -> Result<Option<mcp_tasks::AnyTask>, mcp_tasks::Error> { todo!() }
/// #   fn page(&self, _: &mcp_tasks::Owner, _: Option<u64>, _: usize) -> Result<Vec<Listed>, mcp_tasks::Error> { todo!() }
/// #   fn page_all(&self, _: Option<Position>, _: &TaskFilter, _: usize) -> Result<Scan, mcp_tasks::Error> { todo!() }
/// #   fn origin(&self, _: &TaskKey) -> Result<Option<StoredOrigin>, mcp_tasks::Error> { todo!() }
/// #   fn job(&self, _: &TaskKey) -> Result<Option<String>, mcp_tasks::Error> { todo!() }
/// #   fn renew(&self, _: &[LeaseCall], _: std::time::Duration) -> Result<Vec<Renewal>, mcp_tasks::Error> { todo!() }
/// #   fn lapsed(&self, _: usize) -> Result<Vec<LapsedLease>, mcp_tasks::Error> { todo!() }
/// #   fn listen(&self, _: FeedSink) -> Result<Listening, mcp_tasks::Error> { todo!() }
/// #   fn share_secret(&self, _: u128) -> Result<u128, mcp_tasks::Error> { todo!() }
/// #   fn now(&self) -> Result<mcp_tasks::Timestamp, mcp_tasks::Error> { todo!() }
/// # }
///
/// /// Each call connects to a fresh, empty storage of the engine.
/// struct Mine;
///
/// impl DriverBackend for Mine {
///     type Driver = MyDriver;
///     fn driver(&self) -> MyDriver { MyDriver }
///     fn another(&self, _: &MyDriver) -> MyDriver { MyDriver }
/// }
///
/// mcp_tasks_testkit::driver_suite!(my_engine, Some(Mine));
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! driver_suite {
    ($module:ident, $backend:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::driver_suite!(@tests $backend;
            a_driver_reads_what_it_inserts,
            a_write_lands_only_at_the_version_it_was_decided_on,
            a_write_that_changes_the_ttl_moves_the_expiry,
            a_removal_answers_the_task_once,
            an_owners_pages_follow_creation,
            pages_of_every_owner_hold_each_task_once,
            the_per_owner_limit_is_checked_with_the_insert,
            leases_renew_release_lapse_and_hand_over,
            a_claim_lands_only_after_the_back_off_and_takes_a_new_lease,
            a_quiet_write_may_keep_the_last_update,
            changes_reach_every_instances_feed_in_order,
            the_cursor_secret_is_shared_once,
            the_engines_clock_moves_forward,
            a_no_op_decided_on_a_stale_copy_is_decided_again,
            a_refusal_decided_on_a_stale_copy_is_decided_again,
            a_finishing_write_whose_reply_was_lost_lands_once,
            a_finishing_write_rides_out_an_outage_and_gives_up_after_it,
            a_store_that_cannot_read_answers_errors_never_states,
            a_lapsed_task_waits_its_claim_backoff_doubling_per_attempt,
            a_task_that_saves_progress_runs_up_to_its_ceiling,
            a_lapsed_task_that_runs_once_fails,
            a_handed_over_task_is_claimed_at_once,
            only_a_task_with_attempts_left_is_handed_over,
            a_change_after_the_instances_own_write_is_one_write,
            a_store_reports_its_waits_feed_and_name,
            leases_given_up_are_no_longer_renewed,
            a_lease_round_fails_every_lapsed_task,
            a_short_batch_of_lapsed_leases_is_asked_for_once,
            cursors_follow_the_secret_the_storage_keeps,
            );
        }
    };
    (@tests $backend:expr; $($test:ident),+ $(,)?) => {
        $(
            #[test]
            fn $test() {
                if let Some(backend) = $backend {
                    $crate::drivers::$test(&backend);
                }
            }
        )+
    };
}

/// Instantiates every test of the [`suite`] for one backend, each a `#[test]` in a module
/// of its own named `$module`. `$backend` is an expression of type `Option<B>` where
/// `B: Backend`, evaluated once per test; `None` skips the test (it passes), for a backend
/// whose server is not installed.
#[macro_export]
macro_rules! store_suite {
    ($module:ident, $backend:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::store_suite!(@tests $backend;
            create_and_get_round_trip,
            ttl_and_poll_interval_come_from_the_policy,
            other_owners_see_the_error_of_an_unknown_id,
            update_status_follows_the_transition_table,
            the_first_terminal_state_wins,
            a_cancelled_task_never_gains_a_result,
            a_handler_gets_input_answered_from_another_thread,
            a_dropped_unfinished_handle_fails_its_task,
            a_handle_of_a_removed_task_changes_nothing,
            handle_fail_finish_and_cancel_store_their_outcome,
            a_handle_copes_with_another_writer,
            request_cancel_wakes_the_handler_waiting_for_input,
            wait_blocks_until_another_thread_finishes_the_task,
            wait_ends_with_cancel_and_remove,
            wait_times_out,
            waiters_of_one_task_are_not_woken_by_another,
            wait_on_an_expiring_task_returns_not_found,
            set_ttl_is_bounded_by_the_policy_and_moves_the_expiry,
            keyset_pagination_never_skips_or_repeats,
            cursors_are_bound_to_owner_and_store,
            the_per_owner_limit_refuses_and_creates_nothing,
            subscribers_see_status_changes_in_order,
            message_changes_are_told_and_refused_changes_are_not,
            a_dropped_handle_is_told_once,
            notifications_stay_in_order_per_task_across_threads,
            a_handler_panic_with_a_panicking_subscriber_does_not_abort,
            unsubscribed_and_panicking_subscribers,
            origin_returns_the_request_id_and_method,
            last_updated_at_moves_forward_from_created_at,
            racing_cancel_and_result_have_one_winner,
            a_shared_dyn_store_is_a_store,
            cursors_reveal_nothing_of_other_owners,
            checkpoints_are_kept_quietly_and_bounded,
            a_checkpoint_leaves_the_wire_view_and_last_update_as_they_were,
            a_cancel_request_and_answers_taken_leave_last_update_as_it_was,
            a_handed_over_task_is_claimed_once_and_fences_its_old_holder,
            );
        }
    };
    (@tests $backend:expr; $($test:ident),+ $(,)?) => {
        $(
            #[test]
            fn $test() {
                if let Some(backend) = $backend {
                    $crate::suite::$test(&backend);
                }
            }
        )+
    };
}

/// Instantiates every test of the [`admin`] suite for one backend whose store is a
/// [`TaskAdmin`](mcp_tasks::admin::TaskAdmin), each a `#[test]` in a module of its own
/// named `$module`; `$backend` as for [`store_suite!`].
#[macro_export]
macro_rules! admin_suite {
    ($module:ident, $backend:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::admin_suite!(@tests $backend;
            admin_lists_across_owners_with_filters_and_pages,
            admin_shows_cancels_and_fails,
            admin_hands_over_and_drains,
            admin_purges_finished_tasks,
            admin_watch_tells_creations_and_changes,
            admin_drain_stops_the_claim_loop,
            );
        }
    };
    (@tests $backend:expr; $($test:ident),+ $(,)?) => {
        $(
            #[test]
            fn $test() {
                if let Some(backend) = $backend {
                    $crate::admin::$test(&backend);
                }
            }
        )+
    };
}
