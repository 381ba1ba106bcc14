//! [`RedisStoreBuilder`]: how an instance reaches Redis and under which prefix it shares
//! tasks; the settings every shared store takes are the core's
//! ([`StoreSettings`](mcp_tasks::backend::StoreSettings)).

use std::time::Duration;

use mcp_tasks::Error;
use mcp_tasks::backend::{SharedStore, StoreSettings};
use redis::{Client, Connection};

use crate::RedisTaskStore;
use crate::connection::{connect, store_error};
use crate::driver::RedisDriver;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "mcp-tasks";

/// The default of [`RedisStoreBuilder::outage_timeout`].
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_OUTAGE_TIMEOUT;

/// The default of [`RedisStoreBuilder::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_IO_TIMEOUT;

/// Builds a [`RedisTaskStore`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    settings: StoreSettings,
}

impl RedisTaskStore {
    /// A store on the Redis at `url` (`redis://host:port/db`, `rediss://…`,
    /// `redis+unix:///path/to/redis.sock`), with the default prefix, [`TtlPolicy`] and
    /// [`Limits`], and no suggested poll interval.
    ///
    /// [`TtlPolicy`]: mcp_tasks::TtlPolicy
    /// [`Limits`]: mcp_tasks::Limits
    ///
    /// # Errors
    /// As for [`RedisStoreBuilder::build`].
    pub fn open(url: &str) -> Result<Self, Error> {
        Self::builder(url).build()
    }

    /// A builder for a store on the Redis at `url`.
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder {
            url: url.to_owned(),
            prefix: DEFAULT_PREFIX.to_owned(),
            settings: StoreSettings::default(),
        }
    }
}

impl RedisStoreBuilder {
    /// Uses this key prefix (default [`DEFAULT_PREFIX`]); instances sharing tasks use the
    /// same one. It may not contain `{` or `}`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    mcp_tasks::store_settings_methods!(settings);

    /// Connects, agrees on the cursor secret with the other instances, and starts the
    /// subscriber thread and the lease thread; returns once its subscription is confirmed.
    ///
    /// Only the limit per owner applies (checked atomically when a task is created); the
    /// total is Redis's `maxmemory`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL, prefix or settings
    /// ([`StoreSettings::validate`]), leases on a Redis Cluster; [`Error::Store`] if Redis
    /// cannot be reached.
    pub fn build(self) -> Result<RedisTaskStore, Error> {
        let settings = self.settings.clone();
        let driver = self.build_driver()?;
        SharedStore::start(driver, settings).map(|store| RedisTaskStore { store })
    }

    /// Checks the settings and connects, without starting a store: the driver alone, for
    /// the store test kit's driver suite (or a store of your own over it).
    ///
    /// # Errors
    /// As for [`build`](Self::build).
    pub fn build_driver(self) -> Result<RedisDriver, Error> {
        self.settings.validate()?;
        if self.prefix.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "the Redis key prefix `{}` contains a brace, which would change the keys' \
                 hash slots: choose one without `{{` or `}}`",
                self.prefix
            )));
        }
        let client = Client::open(self.url.as_str()).map_err(|err| {
            Error::InvalidConfig(format!(
                "`{}` is not a Redis URL: {err}",
                redacted_url(&self.url)
            ))
        })?;
        let io_timeout = self.settings.io();
        let mut connection = connect(&client, io_timeout).map_err(store_error)?;
        let cluster = in_cluster(&mut connection).map_err(store_error)?;
        if cluster && self.settings.leases().lease().is_some() {
            return Err(Error::InvalidConfig(
                "leases keep a store-wide index that a Redis Cluster cannot update with a \
                 task in one step: use `LeasePolicy::leave_until_ttl()` on a cluster"
                    .to_owned(),
            ));
        }
        Ok(RedisDriver::new(
            client,
            connection,
            io_timeout,
            self.prefix,
            !cluster,
        ))
    }
}

/// Whether the server is a Redis Cluster node.
fn in_cluster(connection: &mut Connection) -> redis::RedisResult<bool> {
    let info: String = redis::cmd("INFO").arg("cluster").query(connection)?;
    Ok(info.lines().any(|line| line.trim() == "cluster_enabled:1"))
}

/// `url` with its password hidden, as the store reads it: a URL the `redis` crate cannot
/// parse shows its scheme alone; one it parses has its user information's password and
/// its `pass` / `password` parameters, and the password the parser read (wherever it
/// appears), replaced by `***`. For messages that name the store.
#[must_use]
pub fn redacted_url(url: &str) -> String {
    mcp_tasks::backend::redact_with(url, |url| {
        let parsed = redis::parse_redis_url(url)?;
        redis::IntoConnectionInfo::into_connection_info(url).ok()?;
        let query = parsed
            .query_pairs()
            .find(|(key, _)| key == "pass" || key == "password")
            .map(|(_, value)| value.into_owned());
        Some(parsed.password().map(str::to_owned).or(query))
    })
}
