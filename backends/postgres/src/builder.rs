//! [`PostgresStoreBuilder`]: how an instance connects, what it shares, and its timeouts.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::backend::{Claimables, Copies, CursorKey, Feed, LeaseBook, Notifier};
use mcp_tasks::{ClaimBackoff, Error, LeasePolicy, Limits, TtlPolicy};
use tokio_postgres::Config;

use crate::connection::Engine;
use crate::lease::Leases;
use crate::statements::Statements;
use crate::{Inner, PostgresTaskStore, events, lease, schema};

/// The schema the store's tables live in unless [`schema`](PostgresStoreBuilder::schema)
/// names another.
pub const DEFAULT_SCHEMA: &str = "mcp_tasks";

/// How long one statement may take before the store answers [`Error::Store`], by default.
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a finishing write is retried, and a wait waits, while PostgreSQL cannot be
/// reached, by default.
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a wait reads its task while the listening connection is down, by default.
pub const DEFAULT_FALLBACK_POLL: Duration = Duration::from_secs(1);

/// The most connections an instance's pool opens, by default (besides its one listening
/// connection).
pub const DEFAULT_POOL_SIZE: usize = 16;

/// Builds a [`PostgresTaskStore`] ([`PostgresTaskStore::builder`]).
#[derive(Debug, Clone)]
#[must_use]
pub struct PostgresStoreBuilder {
    url: String,
    schema: String,
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursor_secret: Option<String>,
    outage_timeout: Duration,
    io_timeout: Duration,
    fallback_poll: Duration,
    pool_size: usize,
    leases: LeasePolicy,
    claim_backoff: ClaimBackoff,
    migrate: bool,
}

impl PostgresTaskStore {
    /// Opens the store at `url` with the default settings (see [`builder`](Self::builder)).
    ///
    /// # Errors
    /// As for [`PostgresStoreBuilder::build`].
    pub fn open(url: &str) -> Result<Self, Error> {
        Self::builder(url).build()
    }

    /// A builder for the store at `url`: a PostgreSQL connection URL
    /// (`postgres://user:password@host:5432/database`, `host=/run/postgresql` for a unix
    /// socket; TLS is not supported: use a local socket, a private network or a TLS
    /// sidecar).
    pub fn builder(url: &str) -> PostgresStoreBuilder {
        PostgresStoreBuilder {
            url: url.to_owned(),
            schema: DEFAULT_SCHEMA.to_owned(),
            ttl: TtlPolicy::default(),
            limits: Limits::default(),
            poll_interval: None,
            cursor_secret: None,
            outage_timeout: DEFAULT_OUTAGE_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            fallback_poll: DEFAULT_FALLBACK_POLL,
            pool_size: DEFAULT_POOL_SIZE,
            leases: LeasePolicy::default(),
            claim_backoff: ClaimBackoff::default(),
            migrate: true,
        }
    }
}

impl PostgresStoreBuilder {
    /// The schema the tables live in (default [`DEFAULT_SCHEMA`]): instances on the same
    /// database and schema serve the same tasks.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The retention policy (default [`TtlPolicy::default`]).
    pub fn ttl_policy(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// The limits (default [`Limits::default`]); only the per-owner limit applies (counted
    /// exactly, in the creating call). A total over all owners would make every create
    /// wait for every other: bound the table with the TTL policy instead.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The poll interval suggested for tasks whose request names none.
    pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// The secret `tasks/list` cursors are signed with (at least 16 characters). Without
    /// one, the first instance stores a random secret in the schema's `settings` table
    /// and every instance reads it from there.
    pub fn cursor_secret(mut self, secret: impl Into<String>) -> Self {
        self.cursor_secret = Some(secret.into());
        self
    }

    /// How long a finishing write is retried, and a wait waits for the store, while
    /// PostgreSQL cannot be reached (default [`DEFAULT_OUTAGE_TIMEOUT`]).
    pub fn outage_timeout(mut self, outage_timeout: Duration) -> Self {
        self.outage_timeout = outage_timeout;
        self
    }

    /// How long a connection may take to open and a statement to answer (default
    /// [`DEFAULT_IO_TIMEOUT`]); also how long a call waits for a free pooled connection.
    pub fn io_timeout(mut self, io_timeout: Duration) -> Self {
        self.io_timeout = io_timeout;
        self
    }

    /// How often a wait reads its task while the listening connection is down (default
    /// [`DEFAULT_FALLBACK_POLL`]): notifications are lost while it is, so waits poll
    /// until it is back, then read once more.
    pub fn fallback_poll(mut self, every: Duration) -> Self {
        self.fallback_poll = every;
        self
    }

    /// The most pooled connections (default [`DEFAULT_POOL_SIZE`]); calls beyond wait for
    /// one, up to the I/O timeout.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// The policy of running tasks' leases (default [`LeasePolicy::default`]).
    pub fn lease_policy(mut self, leases: LeasePolicy) -> Self {
        self.leases = leases;
        self
    }

    /// How long a redeliverable task whose instance stopped waits before another claims
    /// it (default [`ClaimBackoff::default`]).
    pub fn claim_backoff(mut self, backoff: ClaimBackoff) -> Self {
        self.claim_backoff = backoff;
        self
    }

    /// Whether [`build`](Self::build) applies the schema's migrations (default `true`).
    /// Turn it off where the application's database role may not create tables, and run
    /// [`PostgresTaskStore::migrate`] once with a role that may (a deploy step); `build`
    /// then checks that the schema is at this build's version.
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// Connects, applies (or checks) the schema, agrees on the cursor secret, and starts
    /// the listening connection; returns once it listens (so subscribers registered right
    /// after see every change), and the lease thread.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL, schema name, TTL policy or lease policy, a
    /// zero timeout or pool size, a cursor secret shorter than 16 characters;
    /// [`Error::Store`] if PostgreSQL cannot be reached, or the schema is not at this
    /// build's version.
    pub fn build(self) -> Result<PostgresTaskStore, Error> {
        self.ttl.validate()?;
        self.leases.validate()?;
        let config = Config::from_str(&self.url).map_err(|err| {
            Error::InvalidConfig(format!("`{}` is not a PostgreSQL URL: {err}", self.url))
        })?;
        if self.schema.is_empty()
            || self.schema.len() > 40
            || !self
                .schema
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
        {
            return Err(Error::InvalidConfig(format!(
                "the schema name `{}` must be 1 to 40 of [a-z0-9_]",
                self.schema
            )));
        }
        for (what, value) in [
            ("I/O timeout", self.io_timeout),
            ("outage timeout", self.outage_timeout),
            ("fallback poll", self.fallback_poll),
        ] {
            if value.is_zero() {
                return Err(Error::InvalidConfig(format!(
                    "the PostgreSQL store's {what} is zero"
                )));
            }
        }
        if self.pool_size == 0 {
            return Err(Error::InvalidConfig(
                "the PostgreSQL store's pool size is zero: no statement could run".to_owned(),
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
        let engine = Engine::start(config, self.pool_size, self.io_timeout)?;
        let sql = Statements::new(&self.schema);
        prepare_schema(&engine, &self.schema, self.migrate)?;
        let cursors = match &self.cursor_secret {
            Some(secret) => CursorKey::from_passphrase(secret),
            None => {
                let mine = format!("{:032x}", uuid::Uuid::new_v4().as_u128());
                let rows = engine.query(Arc::clone(&sql.share_secret), vec![Box::new(mine)])?;
                let shared: String = rows
                    .first()
                    .map(|row| row.get(0))
                    .ok_or_else(|| Error::store("the cursor secret could not be shared"))?;
                let secret = u128::from_str_radix(&shared, 16).map_err(|_| {
                    Error::store(format!(
                        "the cursor secret in `{}.settings` is not one this crate wrote: delete it",
                        self.schema
                    ))
                })?;
                CursorKey::from_secret(secret)
            }
        };
        let leases = self.leases.lease().map(|lease| Leases {
            lease,
            backoff: self.claim_backoff,
            book: LeaseBook::default(),
            claimables: Claimables::default(),
        });
        let inner = Arc::new(Inner {
            channel: format!("mcp_tasks_{}", self.schema),
            schema: self.schema,
            engine,
            sql,
            outage_timeout: self.outage_timeout,
            fallback_poll: self.fallback_poll,
            ttl: self.ttl,
            per_owner: self.limits.per_owner,
            poll_interval: self.poll_interval,
            cursors,
            feed: Feed::default(),
            notifier: Notifier::default(),
            copies: Copies::default(),
            leases,
        });
        events::start(&inner)?;
        // Without leases the thread still deletes expired rows now and then.
        let interval = self
            .leases
            .renewal_interval()
            .unwrap_or(Duration::from_secs(5));
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("mcp-tasks-pg-leases".into())
            .spawn(move || lease::run(&weak, interval))
            .map_err(|err| Error::store_caused("cannot start the lease thread", err))?;
        // Subscribers registered right after `build` must see every change from then on.
        if !inner.feed.wait_live(self.io_timeout) {
            return Err(Error::store(format!(
                "could not LISTEN on `{}` within {:?}",
                inner.channel, self.io_timeout
            )));
        }
        Ok(PostgresTaskStore { inner })
    }
}

/// Applies the migrations (`migrate`) or checks that the schema is at this build's
/// version; answers that version.
pub(crate) fn prepare_schema(engine: &Engine, schema: &str, migrate: bool) -> Result<i32, Error> {
    let pool = engine.pool.clone();
    let schema = schema.to_owned();
    engine.block_on(async move {
        let mut client = pool
            .get()
            .await
            .map_err(|err| Error::store_caused("cannot connect to PostgreSQL", err))?;
        if migrate {
            schema::migrate(&mut client, &schema).await
        } else {
            schema::check(&client, &schema).await
        }
        .map_err(Error::store)
    })
}
