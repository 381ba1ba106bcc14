//! [`RedisStoreBuilder`]: the settings of a store and what `build` checks before it
//! connects.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::backend::{Copies, Feed, Notifier};
use mcp_tasks::{ClaimBackoff, Error, LeasePolicy, Limits, TtlPolicy};
use redis::{Client, Connection, Script};

use crate::connection::{connect, store_error};
use crate::cursors::{Cursors, derive_secret, parse_secret, share_secret};
use crate::lease::Leases;
use crate::{Inner, RedisTaskStore};
use crate::{lease, scripts, waiters};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "mcp-tasks";

/// The default of [`RedisStoreBuilder::outage_timeout`].
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default of [`RedisStoreBuilder::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a connection attempt takes (or the I/O timeout, if shorter).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest outage timeout (a longer one is cut to this).
pub(crate) const MAX_OUTAGE_TIMEOUT: Duration = Duration::from_secs(86_400);

/// Builds a [`RedisTaskStore`].
#[derive(Clone)]
#[must_use]
pub struct RedisStoreBuilder {
    url: String,
    prefix: String,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursor_secret: Option<String>,
    outage_timeout: Duration,
    io_timeout: Duration,
    leases: LeasePolicy,
    claim_backoff: ClaimBackoff,
}

impl fmt::Debug for RedisStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStoreBuilder")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("limits", &self.limits)
            .field("poll_interval", &self.poll_interval)
            .field(
                "cursor_secret",
                &self.cursor_secret.as_ref().map(|_| "<configured>"),
            )
            .field("outage_timeout", &self.outage_timeout)
            .field("io_timeout", &self.io_timeout)
            .field("leases", &self.leases)
            .field("claim_backoff", &self.claim_backoff)
            .finish()
    }
}

impl RedisTaskStore {
    /// A store on the Redis at `url` (`redis://host:port/db`, `rediss://…`,
    /// `redis+unix:///path/to/redis.sock`), with the default prefix, [`TtlPolicy`] and
    /// [`Limits`], and no suggested poll interval.
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
            ttl: TtlPolicy::default(),
            limits: Limits::default(),
            poll_interval: None,
            cursor_secret: None,
            outage_timeout: DEFAULT_OUTAGE_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            leases: LeasePolicy::default(),
            claim_backoff: ClaimBackoff::default(),
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

    /// Uses this retention policy.
    pub fn ttl_policy(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// Uses these limits. Only the limit per owner applies (checked atomically when a task
    /// is created); the total is Redis's `maxmemory`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Suggests this poll interval (milliseconds) for tasks whose request names none.
    pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Signs `tasks/list` cursors with this secret (at least 16 characters; every instance
    /// must use the same): the recommended setup for several instances, since cursors then
    /// hold across any Redis restart and instances never have to agree on a secret through
    /// Redis. Without it, the instances share a random secret through Redis (see the
    /// [crate docs](crate#cursors-across-redis-restarts)).
    pub fn cursor_secret(mut self, secret: impl Into<String>) -> Self {
        self.cursor_secret = Some(secret.into());
        self
    }

    /// How long a wait (`tasks/result`, a handler's wait for input) waits for Redis to come
    /// back when it finds the store's subscription down, before it answers
    /// [`Error::Store`] (default [`DEFAULT_OUTAGE_TIMEOUT`]). A wait with a shorter timeout
    /// answers [`Error::Store`] at its timeout instead; no wait outlasts an outage by
    /// more than this. A typed handle's finishing write (`complete`, `fail`, `cancel`) is
    /// retried through an outage for as long. Zero is refused; more than a day is cut to a
    /// day.
    pub fn outage_timeout(mut self, outage_timeout: Duration) -> Self {
        self.outage_timeout = outage_timeout;
        self
    }

    /// How long a request waits for Redis's answer (default [`DEFAULT_IO_TIMEOUT`]) before
    /// its connection counts as broken (and the request is retried once, see the
    /// [crate docs](crate#faults)); connecting takes at most this long too, and at most
    /// 5 s. The subscriber connection is checked with a `PING` when idle for a second and
    /// counts as lost when the answer takes longer than this. So a Redis that hangs
    /// (stopped, or cut off without closing its connections) is noticed like one that
    /// went away. Zero is refused.
    pub fn io_timeout(mut self, io_timeout: Duration) -> Self {
        self.io_timeout = io_timeout;
        self
    }

    /// What happens to a task whose instance stops renewing its lease (it died, or lost
    /// Redis for longer than the lease): by default it fails with `-32603` 40 s after the
    /// last renewal at the latest (see [`LeasePolicy`] and the
    /// [crate docs](crate#dead-instances)).
    pub fn lease_policy(mut self, leases: LeasePolicy) -> Self {
        self.leases = leases;
        self
    }

    /// How long a redeliverable task whose instance stopped waits before another instance
    /// may claim it (default [`ClaimBackoff::default`]: 1 s after the first attempt,
    /// doubling, at most 60 s; a task handed over on shutdown waits none). Longer: a task
    /// that kills its instance every time (a poison task) takes down instances more
    /// slowly; shorter: a crashed instance's tasks resume sooner. See the
    /// [crate docs](crate#redelivery).
    pub fn claim_backoff(mut self, backoff: ClaimBackoff) -> Self {
        self.claim_backoff = backoff;
        self
    }

    /// Connects, agrees on the cursor secret with the other instances, and starts the
    /// subscriber thread; returns once its subscription is confirmed.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL, prefix or TTL policy, a zero I/O or outage timeout
    /// or a cursor secret shorter than 16 characters, a lease under 100 ms or not longer
    /// than its renewal interval, leases on a Redis Cluster; [`Error::Store`] if Redis
    /// cannot be reached.
    pub fn build(self) -> Result<RedisTaskStore, Error> {
        self.ttl.validate()?;
        self.leases.validate()?;
        if self.prefix.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "the Redis key prefix `{}` contains a brace, which would change the keys' \
                 hash slots: choose one without `{{` or `}}`",
                self.prefix
            )));
        }
        let client = Client::open(self.url.as_str()).map_err(|err| {
            Error::InvalidConfig(format!("`{}` is not a Redis URL: {err}", self.url))
        })?;
        if self.io_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "the Redis store's I/O timeout is zero: no request could be answered".to_owned(),
            ));
        }
        if self.outage_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "the Redis store's outage timeout is zero: every wait would fail at once"
                    .to_owned(),
            ));
        }
        if self
            .cursor_secret
            .as_ref()
            .is_some_and(|secret| secret.chars().count() < 16)
        {
            return Err(Error::InvalidConfig(
                "the cursor secret is shorter than 16 characters: use a long random one".to_owned(),
            ));
        }
        let mut connection = connect(&client, self.io_timeout).map_err(store_error)?;
        if self.leases.lease().is_some() && in_cluster(&mut connection).map_err(store_error)? {
            return Err(Error::InvalidConfig(
                "leases keep a store-wide index that a Redis Cluster cannot update with a \
                 task in one step: use `LeasePolicy::leave_until_ttl()` on a cluster"
                    .to_owned(),
            ));
        }
        let secret_key = format!("{}:cursor-secret", self.prefix);
        let cursors = match &self.cursor_secret {
            Some(secret) => Cursors::fixed(derive_secret(secret)),
            None => {
                let mine = uuid::Uuid::new_v4().as_u128();
                let shared =
                    share_secret(&mut connection, &secret_key, mine).map_err(store_error)?;
                let secret = parse_secret(&secret_key, &shared)?;
                Cursors::shared(secret_key, secret)
            }
        };
        let leases = Leases::new(&self.prefix, self.leases, self.claim_backoff);
        let inner = Arc::new(Inner {
            client,
            pool: Mutex::new(vec![connection]),
            broken: AtomicU64::new(0),
            outage_timeout: self.outage_timeout.min(MAX_OUTAGE_TIMEOUT),
            io_timeout: self.io_timeout,
            channel: format!("{}:events", self.prefix),
            prefix: self.prefix,
            ttl: self.ttl,
            per_owner: self.limits.per_owner,
            poll_interval: self.poll_interval,
            cursors,
            feed: Feed::default(),
            notifier: Notifier::default(),
            copies: Copies::default(),
            leases,
            create: Script::new(&scripts::source(scripts::CREATE)),
            commit: Script::new(&scripts::source(scripts::COMMIT)),
            remove: Script::new(&scripts::source(scripts::REMOVE)),
            list: Script::new(&scripts::source(scripts::LIST)),
            renew: Script::new(&scripts::source(scripts::RENEW)),
            lapsed: Script::new(&scripts::source(scripts::LAPSED)),
        });
        let weak = Arc::downgrade(&inner);
        let client = inner.client.clone();
        let channel = inner.channel.clone();
        let io_timeout = self.io_timeout;
        std::thread::Builder::new()
            .name("mcp-tasks-redis".into())
            .spawn(move || waiters::run(&client, &channel, &weak, io_timeout))
            .map_err(|err| Error::store_caused("cannot start the subscriber thread", err))?;
        if let Some(interval) = self.leases.renewal_interval() {
            let weak = Arc::downgrade(&inner);
            std::thread::Builder::new()
                .name("mcp-tasks-leases".into())
                .spawn(move || lease::run(&weak, interval))
                .map_err(|err| Error::store_caused("cannot start the lease thread", err))?;
        }
        // Subscribers registered right after `build` must see every change from then on.
        if !inner.feed.wait_live(Duration::from_secs(5)) {
            return Err(Error::store(format!(
                "could not subscribe to `{}` within 5 s",
                inner.channel
            )));
        }
        Ok(RedisTaskStore { inner })
    }
}

/// Whether the server is a Redis Cluster node.
pub(crate) fn in_cluster(connection: &mut Connection) -> redis::RedisResult<bool> {
    let info: String = redis::cmd("INFO").arg("cluster").query(connection)?;
    Ok(info.lines().any(|line| line.trim() == "cluster_enabled:1"))
}
