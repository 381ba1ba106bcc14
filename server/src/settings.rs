//! What a server reads from its environment and command line, only where the program asks
//! for it ([`Settings::from_env`], applied with
//! [`ServerBuilder::settings`](crate::ServerBuilder::settings)). A server built without
//! them reads nothing from the environment.
//!
//! | variable | default | what |
//! |---|---|---|
//! | `MCP_TASKS_STORE` | `memory` | the store's URL ([`store_url`](crate::store_url)); also `MCP_TASKS_REDIS_URL`, `MCP_TASKS_POSTGRES_URL` |
//! | `MCP_TASKS_POSTGRES_SCHEMA` | `mcp_tasks` | the PostgreSQL schema |
//! | `MCP_TASKS_LEASE_MS` | 40000 | a running task's lease on a shared store (`0`: none) |
//! | `MCP_TASKS_LEASE_RENEW_MS` | an eighth of the lease | how often it is renewed |
//! | `MCP_TASKS_CLAIM_BACKOFF_MS` | 1000 | the claim back-off's base, doubled per attempt up to 60 s |
//! | `MCP_TASKS_OUTAGE_MS` | 30000 | how long a shared store retries through an outage |
//! | `MCP_TASKS_MAX_TASKS_PER_OWNER` | 1000 | stored tasks per owner (`none`: no limit) |
//! | `MCP_TASKS_MAX_TASKS` | 100000 | stored tasks in all (`none`: no limit) |
//! | `MCP_TASKS_PAGE_SIZE` | 50 | tasks per 2025-11-25 `tasks/list` page |
//! | `MCP_TASKS_REQUEST_STATE_KEY` | random | the key of a 2026-07-28 `requestState` (at least 32 bytes) |
//! | `MCP_TASKS_REQUEST_STATE_TTL_MS` | 600000 | how long a `requestState` is accepted |

use crate::mrtr::{self, States};
use crate::store_url::{StoreArgs, StoreSettings};
use crate::telemetry::StoreScan;

/// The environment variable with the number of tasks a `tasks/list` page holds.
pub const PAGE_SIZE_ENV: &str = "MCP_TASKS_PAGE_SIZE";

/// What the environment (and a command line) set for a server (see the module docs).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Settings {
    /// The store's URL, if one was named.
    pub store_url: Option<String>,
    /// The store's leases, outages and limits.
    pub store: StoreSettings,
    /// The `tasks/list` page size.
    pub page_size: Option<usize>,
    /// The `requestState` key and lifetime, if set.
    pub request_states: Option<States>,
    /// The store gauges' scans (`MCP_TASKS_METRICS_SCAN_MS`, `MCP_TASKS_METRICS_SCAN_MAX`).
    pub store_scan: StoreScan,
}

impl Settings {
    /// What the environment sets.
    ///
    /// # Errors
    /// One line naming the variable that cannot be used, and why.
    pub fn from_env() -> Result<Self, String> {
        Self::from_args(std::iter::empty()).map(|(settings, _)| settings)
    }

    /// What the command line `args` (without the program's name) and the environment set:
    /// the store named by `--store URL`, `--redis URL` or `--postgres URL` wins over the
    /// environment's. Answers the arguments it did not read, in order, for the program's
    /// own.
    ///
    /// # Errors
    /// As for [`from_env`](Self::from_env); also a store flag without a URL, or two stores
    /// named.
    pub fn from_args(
        args: impl IntoIterator<Item = String>,
    ) -> Result<(Self, Vec<String>), String> {
        let mut store = StoreArgs::default();
        let mut rest = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if !store.read(&arg, &mut args)? {
                rest.push(arg);
            }
        }
        let store_url = store.choose()?.map(|store| store.url);
        let page_size = match std::env::var(PAGE_SIZE_ENV) {
            Err(_) => None,
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(size) if size > 0 => Some(size),
                _ => {
                    return Err(format!(
                        "{PAGE_SIZE_ENV}=`{}` is not a positive whole number",
                        text.chars().take(40).collect::<String>()
                    ));
                }
            },
        };
        let request_states = if std::env::var_os(mrtr::REQUEST_STATE_KEY_ENV).is_some()
            || std::env::var_os(mrtr::REQUEST_STATE_TTL_ENV).is_some()
        {
            Some(mrtr::states_from_env()?)
        } else {
            None
        };
        Ok((
            Settings {
                store_url,
                store: StoreSettings::from_env()?,
                page_size,
                request_states,
                store_scan: StoreScan::from_env()?,
            },
            rest,
        ))
    }
}
