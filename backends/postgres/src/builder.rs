//! [`PostgresStoreBuilder`]: how an instance reaches PostgreSQL, in which schema it shares
//! tasks, its pool and its migrations; the settings every shared store takes are the
//! core's ([`StoreSettings`](mcp_tasks::backend::StoreSettings)).

use std::str::FromStr;
use std::time::Duration;

use mcp_tasks::Error;
use mcp_tasks::backend::{SharedStore, StoreSettings};
use tokio_postgres::Config;

use crate::connection::Engine;
use crate::driver::PostgresDriver;
use crate::{PostgresTaskStore, schema};

/// The schema the store's tables live in unless [`schema`](PostgresStoreBuilder::schema)
/// names another.
pub const DEFAULT_SCHEMA: &str = "mcp_tasks";

/// How long one statement may take before the store answers [`Error::Store`], by default.
pub const DEFAULT_IO_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_IO_TIMEOUT;

/// How long a finishing write is retried, and a wait waits, while PostgreSQL cannot be
/// reached, by default.
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = mcp_tasks::backend::DEFAULT_OUTAGE_TIMEOUT;

/// How often a wait reads its task while the listening connection is down, by default.
pub const DEFAULT_FALLBACK_POLL: Duration = mcp_tasks::backend::DEFAULT_FALLBACK_POLL;

/// The most connections an instance's pool opens, by default (besides its one listening
/// connection).
pub const DEFAULT_POOL_SIZE: usize = 16;

/// Builds a [`PostgresTaskStore`] ([`PostgresTaskStore::builder`]).
#[derive(Debug, Clone)]
#[must_use]
pub struct PostgresStoreBuilder {
    url: String,
    schema: String,
    pool_size: usize,
    migrate: bool,
    settings: StoreSettings,
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
            pool_size: DEFAULT_POOL_SIZE,
            migrate: true,
            settings: StoreSettings::default(),
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

    /// The most pooled connections (default [`DEFAULT_POOL_SIZE`]); calls beyond wait for
    /// one, up to the I/O timeout.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
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

    mcp_tasks::store_settings_methods!(settings);

    /// Connects, applies (or checks) the schema, agrees on the cursor secret, and starts
    /// the listening connection and the lease thread; returns once it listens (so
    /// subscribers registered right after see every change).
    ///
    /// Only the per-owner limit applies (counted exactly, in the creating call): a total
    /// over all owners would make every create wait for every other; bound the table with
    /// the TTL policy instead.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a bad URL, schema name, pool size or settings
    /// ([`StoreSettings::validate`]); [`Error::Store`] if PostgreSQL cannot be reached, or
    /// the schema is not at this build's version.
    pub fn build(self) -> Result<PostgresTaskStore, Error> {
        let settings = self.settings.clone();
        let driver = self.build_driver()?;
        SharedStore::start(driver, settings).map(|store| PostgresTaskStore { store })
    }

    /// Checks the settings, connects and applies (or checks) the schema, without starting
    /// a store: the driver alone, for the store test kit's driver suite (or a store of
    /// your own over it).
    ///
    /// # Errors
    /// As for [`build`](Self::build).
    pub fn build_driver(self) -> Result<PostgresDriver, Error> {
        self.settings.validate()?;
        let config = parse_url(&self.url)?;
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
        if self.pool_size == 0 {
            return Err(Error::InvalidConfig(
                "the PostgreSQL store's pool size is zero: no statement could run".to_owned(),
            ));
        }
        let engine = Engine::start(config, self.pool_size, self.settings.io())?;
        prepare_schema(&engine, &self.schema, self.migrate)?;
        Ok(PostgresDriver::new(engine, self.schema))
    }
}

/// Applies the migrations (`migrate`) or checks that the schema is at this build's
/// version; answers that version.
pub(crate) fn prepare_schema(engine: &Engine, schema: &str, migrate: bool) -> Result<i32, Error> {
    let config = engine.config.clone();
    let io_timeout = engine.io_timeout;
    let schema = schema.to_owned();
    engine.block_on(async move {
        let (mut client, connection) =
            tokio::time::timeout(io_timeout, config.connect(tokio_postgres::NoTls))
                .await
                .map_err(|_| Error::store("connecting to PostgreSQL timed out"))?
                .map_err(|err| Error::store_caused("cannot connect to PostgreSQL", err))?;
        // Driven on the runtime until the client is dropped (the connection closes then).
        tokio::spawn(connection);
        if migrate {
            schema::migrate(&mut client, &schema).await
        } else {
            schema::check(&client, &schema).await
        }
        .map_err(Error::store)
    })
}

/// `url` parsed as the driver connects with it.
///
/// # Errors
/// [`Error::InvalidConfig`] saying why it does not parse, without quoting it (it may hold a
/// password).
pub(crate) fn parse_url(url: &str) -> Result<Config, Error> {
    Config::from_str(url).map_err(|err| {
        Error::InvalidConfig(format!(
            "`{}` is not a PostgreSQL URL: {err}",
            mcp_tasks::backend::unparsable(url)
        ))
    })
}

/// `url` with its password hidden, as the store reads it: a URL or key/value string that
/// `tokio-postgres` cannot parse shows its scheme alone; one it parses has its user
/// information's password, its `password` parameter, and the password the parser read
/// (wherever it appears) replaced by `***`. For messages that name the store.
#[must_use]
pub fn redacted_url(url: &str) -> String {
    mcp_tasks::backend::redact_with(url, |url| {
        let config = Config::from_str(url).ok()?;
        Some(
            config
                .get_password()
                .map(|password| String::from_utf8_lossy(password).into_owned()),
        )
    })
}
