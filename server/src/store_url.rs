//! Stores named by a URL: which backend a URL names (its scheme), how it is opened with a
//! server's settings, and which one a command line and the environment name.
//!
//! A store URL is `memory` (this process), `redis://…`, `rediss://…` or `redis+unix://…`
//! (Redis), `postgres://…` or `postgresql://…` (PostgreSQL), `sqlite:PATH` or
//! `sqlite:///absolute/path` (an SQLite file, with no server). A program that reads its
//! store from its command line and environment ([`StoreArgs`],
//! [`Settings::from_env`](crate::Settings::from_env)) takes `--store URL` (or
//! `MCP_TASKS_STORE`), and the older `--redis URL` / `--postgres URL` (also `--redis=URL`,
//! `--postgres=URL`, `MCP_TASKS_REDIS_URL`, `MCP_TASKS_POSTGRES_URL`), and beside them
//! `--sqlite PATH` (`MCP_TASKS_SQLITE_PATH`): the command line
//! wins over the environment, and naming two stores on either is an error. Each backend is
//! built in by the cargo feature of its name (`redis`, `postgres`, `sqlite`); a server built without
//! it refuses its URL when it is built, with one line saying so.
//!
//! Whatever the backend, the same knobs set its leases and outages
//! ([`StoreSettings::from_env`]): [`LEASE_MS_ENV`], [`LEASE_RENEW_MS_ENV`],
//! [`CLAIM_BACKOFF_MS_ENV`], [`OUTAGE_MS_ENV`], and for PostgreSQL [`POSTGRES_SCHEMA_ENV`].
//! The limits on stored tasks ([`MAX_TASKS_PER_OWNER_ENV`], [`MAX_TASKS_ENV`]) are read
//! here too, and apply to every store, the in-process one included.

use std::time::Duration;

use std::sync::Arc;

use mcp_tasks::admin::TaskAdmin;
use mcp_tasks::{ClaimBackoff, LeasePolicy, Limits, TtlPolicy};

use crate::server::Store;

/// The environment variable naming the store by its URL, whatever its backend (as
/// `--store URL` does).
pub const STORE_ENV: &str = "MCP_TASKS_STORE";

/// The environment variable naming the shared Redis store (as `--redis URL` does).
pub const REDIS_URL_ENV: &str = "MCP_TASKS_REDIS_URL";

/// The environment variable naming the shared PostgreSQL store (as `--postgres URL` does).
pub const POSTGRES_URL_ENV: &str = "MCP_TASKS_POSTGRES_URL";

/// The environment variable naming the shared SQLite store's file (as `--sqlite PATH`
/// does).
pub const SQLITE_PATH_ENV: &str = "MCP_TASKS_SQLITE_PATH";

/// The environment variable naming the PostgreSQL schema the tables live in (default the
/// store's, `mcp_tasks`): instances on the same database and schema share their tasks.
pub const POSTGRES_SCHEMA_ENV: &str = "MCP_TASKS_POSTGRES_SCHEMA";

/// The environment variable that sets the shared store's lease length in milliseconds
/// (`0`: no leases, a dead instance's tasks stay until their TTL).
pub const LEASE_MS_ENV: &str = "MCP_TASKS_LEASE_MS";

/// The environment variable that sets how often a lease is renewed, in milliseconds
/// (default an eighth of the lease).
pub const LEASE_RENEW_MS_ENV: &str = "MCP_TASKS_LEASE_RENEW_MS";

/// The environment variable that sets the claim back-off's base in milliseconds: a
/// redeliverable task whose instance died waits this long before another instance claims
/// it, doubled for each attempt already run, at most [`CLAIM_BACKOFF_MAX`].
pub const CLAIM_BACKOFF_MS_ENV: &str = "MCP_TASKS_CLAIM_BACKOFF_MS";

/// The longest claim back-off.
pub const CLAIM_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// The environment variable that sets how long the shared store retries an operation
/// while its server is unreachable, in milliseconds (default 30 s), before it answers the
/// error.
pub const OUTAGE_MS_ENV: &str = "MCP_TASKS_OUTAGE_MS";

/// The environment variable that sets how many tasks one owner (principal) may have
/// stored at once, of any status, until they expire or are removed (default 1,000;
/// `none`: no limit). It keeps one principal from filling the store for everyone else:
/// a client creating tasks faster than their TTL lets them go is refused with `-32603`
/// at this many, while other owners go on. Finished tasks count until their TTL, so the
/// limit is reached at about creation rate × TTL: raise it with the rate a principal
/// may sustain.
pub const MAX_TASKS_PER_OWNER_ENV: &str = "MCP_TASKS_MAX_TASKS_PER_OWNER";

/// The environment variable that sets how many tasks may be stored at once over all
/// owners (default 100,000; `none`: no limit). It bounds the store's memory: the
/// process's own for the in-process store, Redis's or PostgreSQL's for a shared one
/// (where the count is the store's, over every instance).
pub const MAX_TASKS_ENV: &str = "MCP_TASKS_MAX_TASKS";

/// A backend of a store shared by several server instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `RedisTaskStore` (cargo feature `redis`).
    Redis,
    /// `PostgresTaskStore` (cargo feature `postgres`).
    Postgres,
    /// `SqliteTaskStore` (cargo feature `sqlite`): a file every process on this machine
    /// that opens it shares.
    Sqlite,
}

impl Backend {
    /// Every backend, in the order the usage lines name them.
    pub const ALL: [Backend; 3] = [Backend::Redis, Backend::Postgres, Backend::Sqlite];

    /// Its name for people: `Redis`, `PostgreSQL`, `SQLite`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Backend::Redis => "Redis",
            Backend::Postgres => "PostgreSQL",
            Backend::Sqlite => "SQLite",
        }
    }

    /// The command-line flag that names its URL: `--redis`, `--postgres`, `--sqlite`
    /// (which takes the file's path).
    #[must_use]
    pub fn flag(self) -> &'static str {
        match self {
            Backend::Redis => "--redis",
            Backend::Postgres => "--postgres",
            Backend::Sqlite => "--sqlite",
        }
    }

    /// The environment variable that names its URL ([`REDIS_URL_ENV`],
    /// [`POSTGRES_URL_ENV`], [`SQLITE_PATH_ENV`]).
    #[must_use]
    pub fn url_env(self) -> &'static str {
        match self {
            Backend::Redis => REDIS_URL_ENV,
            Backend::Postgres => POSTGRES_URL_ENV,
            Backend::Sqlite => SQLITE_PATH_ENV,
        }
    }

    /// The cargo feature that builds it in: `redis`, `postgres`, `sqlite`.
    #[must_use]
    pub fn feature(self) -> &'static str {
        match self {
            Backend::Redis => "redis",
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        }
    }

    /// Examples of its URLs, for the usage line.
    #[must_use]
    pub fn example_urls(self) -> &'static str {
        match self {
            Backend::Redis => "redis://127.0.0.1:6379 or redis+unix:///path/to/redis.sock",
            Backend::Postgres => {
                "postgres://user@127.0.0.1:5432/db or postgresql:///db?host=/run/postgresql"
            }
            Backend::Sqlite => "sqlite:tasks.db or sqlite:///var/lib/mcp/tasks.db",
        }
    }
}

/// A store shared by several server instances: its backend and its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStore {
    /// Which store.
    pub backend: Backend,
    /// Where: a URL of the backend's.
    pub url: String,
}

/// Whether `url` names the in-process store (`memory`, `memory:` or `memory://`).
#[must_use]
pub fn is_memory(url: &str) -> bool {
    matches!(url.trim(), "memory" | "memory:" | "memory://")
}

impl SharedStore {
    /// The store a backend's own flag or variable names (`--redis URL`, `--sqlite PATH`):
    /// `url` as given, but for SQLite, whose flag takes a path, the URL `sqlite:PATH`
    /// (so that it reads back as the same store).
    #[must_use]
    pub fn named(backend: Backend, url: String) -> Self {
        let url = match backend {
            Backend::Sqlite if !url.to_ascii_lowercase().starts_with("sqlite:") => {
                format!("sqlite:{url}")
            }
            _ => url,
        };
        SharedStore { backend, url }
    }

    /// The store `url` names, by its scheme: `redis://`, `rediss://` or `redis+unix://`
    /// (Redis); `postgres://` or `postgresql://`, or a PostgreSQL key/value string
    /// (`host=… dbname=…`); `sqlite:` (an SQLite file: [`sqlite_path`]).
    ///
    /// # Errors
    /// A URL whose scheme names no backend (its password hidden).
    pub fn parse(url: &str) -> Result<Self, String> {
        let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
        let backend = match scheme.to_ascii_lowercase().as_str() {
            "redis" | "rediss" | "redis+unix" | "unix" => Backend::Redis,
            "postgres" | "postgresql" => Backend::Postgres,
            "sqlite" => Backend::Sqlite,
            _ if !url.contains("://") && url.contains('=') => Backend::Postgres,
            _ => {
                return Err(format!(
                    "the store URL `{}` names no store: use memory, redis://…, \
                     redis+unix://…, postgres://…, postgresql://… or sqlite:PATH",
                    mcp_tasks::backend::hide_password(url)
                ));
            }
        };
        Ok(SharedStore {
            backend,
            url: url.to_owned(),
        })
    }
}

/// The shared store the command line names, read one argument at a time
/// ([`read`](Self::read)), then settled against the environment ([`choose`](Self::choose)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreArgs {
    given: Option<SharedStore>,
    /// `--store memory`: the in-process store, named explicitly.
    memory: bool,
}

impl StoreArgs {
    /// Reads `arg` if it names a store (`--store URL`, `--redis URL`, `--postgres URL`,
    /// each also as `--flag=URL`), taking a separate URL from `rest`: `Ok(true)`.
    /// `Ok(false)` for any other argument, left to the caller. The same flag twice: the
    /// last wins.
    ///
    /// # Errors
    /// A flag without a URL, a URL that names no store, or flags of two backends.
    pub fn read(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, String> {
        let generic = if arg == "--store" {
            Some(rest.next())
        } else {
            arg.strip_prefix("--store=").map(|url| Some(url.to_owned()))
        };
        if let Some(url) = generic {
            let url = url
                .filter(|url| !url.is_empty())
                .ok_or("`--store` needs a URL")?;
            if is_memory(&url) {
                self.given = None;
                self.memory = true;
            } else {
                self.given = Some(SharedStore::parse(&url)?);
                self.memory = false;
            }
            return Ok(true);
        }
        for backend in Backend::ALL {
            let flag = backend.flag();
            let url = if arg == flag {
                rest.next()
            } else if let Some(url) = arg.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                Some(url.to_owned())
            } else {
                continue;
            };
            let url = url
                .filter(|url| !url.is_empty())
                .ok_or_else(|| format!("`{flag}` needs a URL"))?;
            if let Some(other) = self.given.as_ref().filter(|g| g.backend != backend) {
                return Err(format!(
                    "`{}` and `{flag}` name two stores: give one",
                    other.backend.flag()
                ));
            }
            self.given = Some(SharedStore::named(backend, url));
            return Ok(true);
        }
        Ok(false)
    }

    /// The store chosen: the command line's, else the one an environment variable names
    /// ([`STORE_ENV`], [`Backend::url_env`]; unset or empty: none). `None`: the tasks live
    /// in process.
    ///
    /// # Errors
    /// No store on the command line and two variables set, or a URL that names no store.
    pub fn choose(self) -> Result<Option<SharedStore>, String> {
        if self.given.is_some() || self.memory {
            return Ok(self.given);
        }
        if let Some(url) = std::env::var(STORE_ENV).ok().filter(|url| !url.is_empty()) {
            for backend in Backend::ALL {
                if std::env::var(backend.url_env()).is_ok_and(|other| !other.is_empty()) {
                    return Err(format!(
                        "{STORE_ENV} and {} name two stores: set one",
                        backend.url_env()
                    ));
                }
            }
            return if is_memory(&url) {
                Ok(None)
            } else {
                SharedStore::parse(&url).map(Some)
            };
        }
        let mut named = Backend::ALL.into_iter().filter_map(|backend| {
            std::env::var(backend.url_env())
                .ok()
                .filter(|url| !url.is_empty())
                .map(|url| SharedStore::named(backend, url))
        });
        let first = named.next();
        if let (Some(first), Some(second)) = (&first, named.next()) {
            return Err(format!(
                "{} and {} name two stores: set one",
                first.backend.url_env(),
                second.backend.url_env()
            ));
        }
        Ok(first)
    }
}

/// How a shared store is opened: what every backend's builder takes. `None` leaves the
/// backend's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSettings {
    /// The tasks' retention policy.
    pub ttl: Option<TtlPolicy>,
    /// The poll interval suggested for tasks whose request names none.
    pub poll_interval: Option<u64>,
    /// The running tasks' leases.
    pub leases: Option<LeasePolicy>,
    /// How long a lapsed redeliverable task waits before another instance claims it.
    pub claim_backoff: Option<ClaimBackoff>,
    /// How long the store retries while its server is unreachable.
    pub outage: Option<Duration>,
    /// The PostgreSQL schema (other backends have none).
    pub postgres_schema: Option<String>,
    /// The limits on stored tasks (every store, the in-process one too).
    pub limits: Option<Limits>,
}

impl StoreSettings {
    /// The settings the environment sets: [`LEASE_MS_ENV`], [`LEASE_RENEW_MS_ENV`],
    /// [`CLAIM_BACKOFF_MS_ENV`], [`OUTAGE_MS_ENV`], [`POSTGRES_SCHEMA_ENV`],
    /// [`MAX_TASKS_PER_OWNER_ENV`], [`MAX_TASKS_ENV`]; the rest `None`.
    ///
    /// # Errors
    /// A variable that is not a whole number of milliseconds (`0` only where it means
    /// something), a lease renewed too seldom for its length, or a limit that is neither a
    /// positive whole number nor `none`.
    pub fn from_env() -> Result<Self, String> {
        let lease = env_millis(LEASE_MS_ENV, true)?;
        let renew = env_millis(LEASE_RENEW_MS_ENV, false)?;
        let leases = match (lease, renew) {
            (Some(0), _) => Some(LeasePolicy::leave_until_ttl()),
            (Some(lease), renew) => {
                let policy = LeasePolicy::fail_after(Duration::from_millis(lease));
                Some(renew.map_or(policy, |renew| {
                    policy.renewed_every(Duration::from_millis(renew))
                }))
            }
            (None, Some(renew)) => {
                Some(LeasePolicy::default().renewed_every(Duration::from_millis(renew)))
            }
            (None, None) => None,
        };
        if let Some(policy) = leases {
            policy
                .validate()
                .map_err(|err| format!("{LEASE_MS_ENV} / {LEASE_RENEW_MS_ENV}: {err}"))?;
        }
        let claim_backoff = env_millis(CLAIM_BACKOFF_MS_ENV, true)?
            .map(|base| ClaimBackoff::new(Duration::from_millis(base), CLAIM_BACKOFF_MAX));
        Ok(StoreSettings {
            leases,
            claim_backoff,
            outage: env_millis(OUTAGE_MS_ENV, false)?.map(Duration::from_millis),
            postgres_schema: std::env::var(POSTGRES_SCHEMA_ENV)
                .ok()
                .filter(|schema| !schema.is_empty()),
            limits: limits_from_env()?,
            ..StoreSettings::default()
        })
    }

    /// The limits on stored tasks: the environment's, else [`Limits::default`].
    #[must_use]
    pub fn limits_or_default(&self) -> Limits {
        self.limits.unwrap_or_default()
    }
}

/// The limits [`MAX_TASKS_PER_OWNER_ENV`] and [`MAX_TASKS_ENV`] set, over
/// [`Limits::default`]; `None` if neither is set.
fn limits_from_env() -> Result<Option<Limits>, String> {
    let per_owner = env_limit(MAX_TASKS_PER_OWNER_ENV)?;
    let total = env_limit(MAX_TASKS_ENV)?;
    if per_owner.is_none() && total.is_none() {
        return Ok(None);
    }
    let default = Limits::default();
    Ok(Some(Limits {
        per_owner: per_owner.unwrap_or(default.per_owner),
        total: total.unwrap_or(default.total),
    }))
}

/// A limit from the environment variable `name`, if set: `Some(Some(n))` for a positive
/// whole number, `Some(None)` for `none` (no limit).
fn env_limit(name: &str) -> Result<Option<Option<usize>>, String> {
    let Ok(text) = std::env::var(name) else {
        return Ok(None);
    };
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(Some(None));
    }
    match text.parse::<usize>() {
        Ok(limit) if limit > 0 => Ok(Some(Some(limit))),
        _ => Err(format!(
            "{name}=`{}` is neither a positive whole number of tasks nor `none`",
            text.chars().take(40).collect::<String>()
        )),
    }
}

/// A whole number of milliseconds from the environment variable `name`, if set; `0` only
/// if `zero_ok`.
fn env_millis(name: &str, zero_ok: bool) -> Result<Option<u64>, String> {
    let Ok(text) = std::env::var(name) else {
        return Ok(None);
    };
    match text.trim().parse::<u64>() {
        Ok(millis) if millis > 0 || zero_ok => Ok(Some(millis)),
        _ => Err(format!(
            "{name}=`{}` is not a {}whole number of milliseconds",
            text.chars().take(40).collect::<String>(),
            if zero_ok { "" } else { "positive " }
        )),
    }
}

/// Applies `settings` to a backend's store builder and builds the store: one body for
/// every backend, whose builders have the same methods and no common trait.
#[cfg(any(feature = "redis", feature = "postgres", feature = "sqlite"))]
macro_rules! build_with {
    ($builder:expr, $settings:expr) => {{
        let settings: &StoreSettings = $settings;
        let mut builder = $builder.poll_interval(settings.poll_interval);
        if let Some(ttl) = settings.ttl {
            builder = builder.ttl_policy(ttl);
        }
        if let Some(leases) = settings.leases {
            builder = builder.lease_policy(leases);
        }
        if let Some(backoff) = settings.claim_backoff {
            builder = builder.claim_backoff(backoff);
        }
        if let Some(outage) = settings.outage {
            builder = builder.outage_timeout(outage);
        }
        if let Some(limits) = settings.limits {
            builder = builder.limits(limits);
        }
        builder.build()
    }};
}

impl SharedStore {
    /// Opens the store with `settings` (an instance's connections, listener and threads).
    ///
    /// # Errors
    /// One line for the operator: the backend, the URL (its password hidden) and why the
    /// store could not be opened, with the cause the backend gave (refused, no such socket,
    /// timed out); or, for a server built without the backend's feature, which feature.
    pub fn open(&self, settings: &StoreSettings) -> Result<Store, String> {
        self.open_as(settings, None).map(|store| store as Store)
    }

    /// Opens the store as [`open`](Self::open) does, for an operator's console: as a
    /// [`TaskAdmin`] (every owner's tasks), under the instance name `instance` (the name
    /// its writes and hand-overs are made under).
    ///
    /// # Errors
    /// As for [`open`](Self::open).
    pub fn open_admin(
        &self,
        settings: &StoreSettings,
        instance: &str,
    ) -> Result<Arc<dyn TaskAdmin>, String> {
        self.open_as(settings, Some(instance))
    }

    /// Opens the store with `settings`, under the instance name `instance` if given (else
    /// the backend's default): one body for [`open`](Self::open) and
    /// [`open_admin`](Self::open_admin).
    #[cfg_attr(
        not(any(feature = "redis", feature = "postgres", feature = "sqlite")),
        allow(unused_variables)
    )]
    pub(crate) fn open_as(
        &self,
        settings: &StoreSettings,
        instance: Option<&str>,
    ) -> Result<Arc<dyn TaskAdmin>, String> {
        /// Names the instance, when asked to.
        #[cfg(any(feature = "redis", feature = "postgres", feature = "sqlite"))]
        macro_rules! named {
            ($builder:expr) => {{
                let builder = $builder;
                match instance {
                    Some(name) => builder.instance_name(name),
                    None => builder,
                }
            }};
        }
        let url = &self.url;
        let opened: Option<Result<Arc<dyn TaskAdmin>, mcp_tasks::Error>> = match self.backend {
            #[cfg(feature = "redis")]
            Backend::Redis => Some(
                build_with!(
                    named!(mcp_tasks_redis::RedisTaskStore::builder(url)),
                    settings
                )
                .map(|store| Arc::new(store) as Arc<dyn TaskAdmin>),
            ),
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                let builder = named!(mcp_tasks_postgres::PostgresTaskStore::builder(url));
                let builder = match &settings.postgres_schema {
                    Some(schema) => builder.schema(schema),
                    None => builder,
                };
                Some(
                    build_with!(builder, settings)
                        .map(|store| Arc::new(store) as Arc<dyn TaskAdmin>),
                )
            }
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Some(
                build_with!(
                    named!(mcp_tasks_sqlite::SqliteTaskStore::builder(sqlite_path(url))),
                    settings
                )
                .map(|store| Arc::new(store) as Arc<dyn TaskAdmin>),
            ),
            // Reached only for a backend this build leaves out.
            #[allow(unreachable_patterns)]
            _ => None,
        };
        self.opened(opened)
    }

    /// What opening the store came to, as one line for the operator.
    fn opened<T>(&self, opened: Option<Result<T, mcp_tasks::Error>>) -> Result<T, String> {
        let url = &self.url;
        let backend = self.backend;
        match opened {
            Some(Ok(store)) => Ok(store),
            // The store's own message may quote the URL (a URL it cannot parse): hidden too.
            Some(Err(err)) => Err(format!(
                "cannot open the {} task store at {}: {}",
                backend.name(),
                redacted(url),
                with_causes(&err)
            )
            .replace(url.as_str(), &redacted(url))),
            None => Err(format!(
                "a {} store was asked for ({}), but this server was built without the cargo \
                 feature `{}`: rebuild it with `--features {}`",
                backend.name(),
                redacted(url),
                backend.feature(),
                backend.feature()
            )),
        }
    }
}

/// The file an SQLite store URL names: `sqlite:PATH` is `PATH` (relative to the working
/// directory, or absolute), `sqlite:///abs/path` is `/abs/path` (`sqlite://rel` is `rel`);
/// anything else (the path `--sqlite` and [`SQLITE_PATH_ENV`] give) is the path itself.
#[must_use]
pub fn sqlite_path(url: &str) -> &str {
    let path = url
        .strip_prefix("sqlite:")
        .or_else(|| url.strip_prefix("SQLITE:"))
        .unwrap_or(url);
    path.strip_prefix("//").unwrap_or(path)
}

/// `err`'s message, then in parentheses its causes, each once: a cause whose text the line
/// already holds (a client error that repeats its own source) is not written again.
fn with_causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut causes = String::new();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !causes.contains(&text) {
            if !causes.is_empty() {
                causes.push_str(": ");
            }
            causes.push_str(&text);
        }
        source = cause.source();
    }
    if causes.is_empty() {
        err.to_string()
    } else {
        format!("{err} ({causes})")
    }
}

/// `url` with its password, if any, replaced by `***`, read as its store reads it: with
/// the backend built in, by the backend's own parser (`tokio-postgres`'s, the `redis`
/// crate's), and a URL that parser refuses shows its scheme alone, never the rest; else
/// on the side of hiding too much ([`hide_password`](mcp_tasks::backend::hide_password):
/// the user information's password up to the last `@`, and `password=` / `pass=`
/// parameters, quoted or not).
#[must_use]
pub fn redacted(url: &str) -> String {
    match SharedStore::parse(url).map(|store| store.backend) {
        #[cfg(feature = "redis")]
        Ok(Backend::Redis) => mcp_tasks_redis::redacted_url(url),
        #[cfg(feature = "postgres")]
        Ok(Backend::Postgres) => mcp_tasks_postgres::redacted_url(url),
        _ => mcp_tasks::backend::hide_password(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(args: &[&str]) -> Result<(StoreArgs, Vec<String>), String> {
        let mut store = StoreArgs::default();
        let mut others = Vec::new();
        let mut args = args.iter().map(|arg| (*arg).to_owned());
        while let Some(arg) = args.next() {
            if !store.read(&arg, &mut args)? {
                others.push(arg);
            }
        }
        Ok((store, others))
    }

    #[test]
    fn a_flag_names_its_backend_with_its_url_joined_or_apart() {
        for (args, backend, url) in [
            (&["--redis", "redis://h"][..], Backend::Redis, "redis://h"),
            (&["--redis=redis://h"][..], Backend::Redis, "redis://h"),
            (
                &["--postgres", "postgres://h/db"][..],
                Backend::Postgres,
                "postgres://h/db",
            ),
            (
                &["--postgres=host=/run/pg dbname=x"][..],
                Backend::Postgres,
                "host=/run/pg dbname=x",
            ),
            (
                &["--redis", "redis://a", "--redis", "redis://b"][..],
                Backend::Redis,
                "redis://b",
            ),
        ] {
            let (store, others) = read_all(args).unwrap();
            assert!(others.is_empty(), "{args:?}");
            let given = store.given.expect("a store");
            assert_eq!(
                (given.backend, given.url.as_str()),
                (backend, url),
                "{args:?}"
            );
        }
        let (store, others) = read_all(&["--conformance", "--postgresql"]).unwrap();
        assert_eq!(store, StoreArgs::default());
        assert_eq!(others, ["--conformance", "--postgresql"]);
    }

    #[test]
    fn an_sqlite_url_names_a_file() {
        for (url, path) in [
            ("sqlite:tasks.db", "tasks.db"),
            ("sqlite:///var/lib/mcp/tasks.db", "/var/lib/mcp/tasks.db"),
            ("sqlite://tasks.db", "tasks.db"),
            ("sqlite:/tmp/t.db", "/tmp/t.db"),
        ] {
            let shared = SharedStore::parse(url).unwrap();
            assert_eq!(shared.backend, Backend::Sqlite, "{url}");
            assert_eq!(sqlite_path(&shared.url), path, "{url}");
        }
        let (store, _) = read_all(&["--sqlite", "data/tasks.db"]).unwrap();
        let given = store.given.expect("a store");
        assert_eq!(given.backend, Backend::Sqlite);
        assert_eq!(
            given.url, "sqlite:data/tasks.db",
            "reads back as the same store"
        );
        assert_eq!(SharedStore::parse(&given.url).unwrap(), given);
        assert_eq!(sqlite_path(&given.url), "data/tasks.db");
    }

    #[test]
    fn a_flag_without_a_url_or_two_backends_are_refused() {
        for (args, error) in [
            (&["--redis"][..], "`--redis` needs a URL"),
            (&["--postgres="][..], "`--postgres` needs a URL"),
            (&["--postgres", ""][..], "`--postgres` needs a URL"),
            (
                &["--redis", "redis://h", "--postgres=postgres://h"][..],
                "`--redis` and `--postgres` name two stores: give one",
            ),
        ] {
            assert_eq!(read_all(args).err().as_deref(), Some(error), "{args:?}");
        }
    }

    #[test]
    fn a_password_is_never_shown() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
            (
                "postgres://mcp:pa:ss@h/db?connect_timeout=1",
                "postgres://mcp:***@h/db?connect_timeout=1",
            ),
            ("postgres://mcp@h/db", "postgres://mcp@h/db"),
            (
                "postgres://h/db?user=u&password=pw&connect_timeout=1",
                "postgres://h/db?user=u&password=***&connect_timeout=1",
            ),
            (
                "host=h password=pw dbname=d",
                "host=h password=*** dbname=d",
            ),
            (
                "host=h password='p w\\'x' dbname=d",
                "host=h password=*** dbname=d",
            ),
            ("redis+unix:///tmp/r.sock", "redis+unix:///tmp/r.sock"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn a_password_holding_url_delimiters_is_never_shown() {
        // What each parser reads as the password varies (tokio-postgres: up to the first
        // `@`; the url crate: up to the last `@` before `/`, `?`, `#`), so none of it shows.
        for url in [
            "postgresql://user:s3c?ret@host/db",
            "postgres://u:a/b#s3cret@h/db",
            "postgres://u:s3c@ret@h/db",
            "postgres://u:s3c/ret@h:5432/db?application_name=x",
            "redis://:s3c?ret@h:6379/0",
            "redis://u:a/b#s3cret@h/0",
            "redis://:s3c@ret@h:6379",
            "redis+unix:///tmp/r.sock?pass=s3cret&db=1",
            "host=h password = s3cret dbname=d",
            "frob://u:s3c?ret@h/x",
        ] {
            let shown = redacted(url);
            assert!(!shown.contains("s3c"), "{url} shown as {shown}");
            let named = SharedStore::parse(url).map_or_else(|err| err, |_| String::new());
            assert!(!named.contains("s3c"), "{url}: {named}");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_url_its_driver_cannot_parse_is_not_shown() {
        assert_eq!(
            redacted("postgres://u:s3cret@127.0.0.1:notaport/db"),
            "postgres://(unparsable URL, not shown)"
        );
        assert_eq!(
            redacted("host=h password=s3cret nosuchkey=1"),
            "(unparsable connection string, not shown)"
        );
        // It parses: the user information's password is hidden, the rest shown.
        assert_eq!(
            redacted("postgresql://user:s3c?ret@host/db"),
            "postgresql://user:***@host/db"
        );
    }

    #[cfg(feature = "redis")]
    #[test]
    fn a_redis_url_its_driver_cannot_parse_is_not_shown() {
        assert_eq!(
            redacted("redis://:s3c?ret@h:6379/0"),
            "redis://(unparsable URL, not shown)"
        );
        assert_eq!(
            redacted("redis://:s3cret@h:6379/0"),
            "redis://:***@h:6379/0"
        );
    }

    #[test]
    fn a_password_in_the_stores_own_message_is_hidden_too() {
        let url = "postgres://u:s3cret@127.0.0.1:notaport/db";
        let shared = SharedStore {
            backend: Backend::Postgres,
            url: url.to_owned(),
        };
        let Err(line) = shared.open(&StoreSettings::default()) else {
            panic!("a URL that does not parse opens no store");
        };
        assert!(!line.contains("s3cret"), "{line}");
        let shown = if cfg!(feature = "postgres") {
            "postgres://(unparsable URL, not shown)"
        } else {
            "postgres://u:***@127.0.0.1:notaport/db"
        };
        assert!(line.contains(shown), "{line}");
    }

    #[test]
    fn causes_are_told_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let err = mcp_tasks::Error::store_caused("cannot connect", io);
        assert_eq!(
            with_causes(&err),
            "task store unavailable: cannot connect; retry when the store is reachable again \
             (refused)"
        );
        let bare = mcp_tasks::Error::store("no");
        assert_eq!(with_causes(&bare), bare.to_string());
    }
}
