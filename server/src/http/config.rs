//! How a server serves Streamable HTTP ([`Http`]): who may call it, from which origins,
//! and the limits that keep one client from taking it down.

use std::path::PathBuf;
use std::time::Duration;

use mcp_tasks::WatchLimits;

use crate::access::Access;
use crate::listen;

use super::admin::AdminSettings;
use super::trace::Trace;

/// The environment variable with the address `mcp_http` listens on.
pub const ADDR_ENV: &str = "MCP_TASKS_HTTP_ADDR";

/// Where a server listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8808";

/// How a server serves Streamable HTTP ([`Server::into_http`](crate::Server::into_http)).
pub struct Http {
    pub(crate) access: Access,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) limits: Limits,
    pub(crate) trace: Trace,
    pub(crate) listen_limits: WatchLimits,
    pub(crate) admin: Option<AdminSettings>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("access", &self.access)
            .field("allowed_origins", &self.allowed_origins)
            .field("limits", &self.limits)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

impl Http {
    /// Requests act for the principals of `access` (bearer tokens, or the anonymous
    /// single-owner mode, loopback only); browsers of loopback origins only; the default
    /// [`Limits`]; no message trace.
    #[must_use]
    pub fn new(access: Access) -> Self {
        Self {
            access,
            allowed_origins: Vec::new(),
            limits: Limits::default(),
            trace: Trace::off(),
            listen_limits: WatchLimits::default(),
            admin: None,
        }
    }

    /// What the environment sets, for a server that listens on `addr` (the anonymous mode
    /// is refused unless it is a loopback address): `MCP_TASKS_TOKENS` or
    /// `MCP_TASKS_TOKENS_FILE` (`principal=token` entries), or `MCP_TASKS_ANONYMOUS=1`;
    /// `MCP_TASKS_ALLOWED_ORIGINS` (comma-separated); the limits ([`Limits::from_env`]);
    /// `MCP_TASKS_TRACE_DIR` (each session's messages, one JSON line each); the listen
    /// limits (`MCP_TASKS_LISTEN_MAX_TASK_IDS`, `MCP_TASKS_LISTEN_MAX_PER_PRINCIPAL`).
    ///
    /// # Errors
    /// One line for the operator: a missing or malformed setting.
    pub fn from_env(addr: &str) -> Result<Self, String> {
        let allowed_origins = std::env::var("MCP_TASKS_ALLOWED_ORIGINS")
            .map(|list| {
                list.split(',')
                    .map(|origin| origin.trim().to_owned())
                    .filter(|origin| !origin.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let trace = match std::env::var_os("MCP_TASKS_TRACE_DIR") {
            Some(dir) => Trace::into(PathBuf::from(dir))
                .map_err(|err| format!("cannot create MCP_TASKS_TRACE_DIR: {err}"))?,
            None => Trace::off(),
        };
        let access = Access::from_env(addr)?;
        let admin = AdminSettings::from_env()?;
        if let (Access::Tokens(tokens), Some(admin)) = (&access, &admin)
            && admin.tokens.shares_a_token(tokens)
        {
            return Err(
                "a token is both an MCP principal's and an admin's: give the console tokens \
                 of its own"
                    .to_owned(),
            );
        }
        Ok(Self {
            access,
            admin,
            allowed_origins,
            limits: Limits::from_env()?,
            trace,
            listen_limits: listen::limits_from_env()?,
        })
    }

    /// Serves the operator's console ([`admin`](super::admin)) on a listener of its own,
    /// as `settings` say (an admin token that is also an MCP principal's is refused when
    /// the server starts serving).
    #[must_use]
    pub fn admin(mut self, settings: AdminSettings) -> Self {
        self.admin = Some(settings);
        self
    }

    /// Browser origins allowed beside the loopback ones (`https://app.example.com`).
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = String>) -> Self {
        self.allowed_origins = origins.into_iter().collect();
        self
    }

    /// The limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Appends every message read and written to `<dir>/<session>.jsonl` (2026-07-28
    /// requests, which have no session: `ext-<principal>.jsonl`).
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn trace_dir(mut self, dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        self.trace = Trace::into(dir.into())?;
        Ok(self)
    }

    /// The bounds of `subscriptions/listen`.
    #[must_use]
    pub fn listen_limits(mut self, limits: WatchLimits) -> Self {
        self.listen_limits = limits;
        self
    }
}

/// The limits, each checked before the server allocates or works for a request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    /// Connections open at once (default 2048); beyond them [`HttpServer::serve`] stops
    /// accepting until one closes (the kernel's backlog holds the rest).
    ///
    /// [`HttpServer::serve`]: super::HttpServer::serve
    pub max_connections: usize,
    /// The largest request body (default 4 MiB); a larger `Content-Length` is refused
    /// `413` before anything is read.
    pub max_body: u64,
    /// Requests of one principal handled at once (default 32, open SSE streams included);
    /// more are refused `429` with `Retry-After`.
    pub principal_requests: usize,
    /// A request's headers must arrive within it (default 10 s), else the connection is
    /// closed; an idle keep-alive connection closes after it too.
    pub header_timeout: Duration,
    /// A body not complete within it (default 10 s) is refused `408` and its connection
    /// closed.
    pub body_timeout: Duration,
    /// At shutdown, how long in-flight requests and running tasks get to finish (default
    /// 10 s).
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 2048,
            max_body: 4 << 20,
            principal_requests: 32,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// What the environment sets over the defaults: `MCP_TASKS_MAX_CONNECTIONS`,
    /// `MCP_TASKS_MAX_BODY_BYTES`, `MCP_TASKS_PRINCIPAL_REQUESTS`,
    /// `MCP_TASKS_HEADER_TIMEOUT_MS`, `MCP_TASKS_BODY_TIMEOUT_MS`, `MCP_TASKS_SHUTDOWN_MS`.
    ///
    /// # Errors
    /// A setting that is not a positive whole number.
    pub fn from_env() -> Result<Self, String> {
        let defaults = Limits::default();
        Ok(Limits {
            max_connections: number("MCP_TASKS_MAX_CONNECTIONS", defaults.max_connections)?,
            max_body: number("MCP_TASKS_MAX_BODY_BYTES", defaults.max_body)?,
            principal_requests: number(
                "MCP_TASKS_PRINCIPAL_REQUESTS",
                defaults.principal_requests,
            )?,
            header_timeout: millis("MCP_TASKS_HEADER_TIMEOUT_MS", defaults.header_timeout)?,
            body_timeout: millis("MCP_TASKS_BODY_TIMEOUT_MS", defaults.body_timeout)?,
            shutdown_grace: millis("MCP_TASKS_SHUTDOWN_MS", defaults.shutdown_grace)?,
        })
    }
}

/// A positive number from `name`, or `default` when unset.
fn number<T: std::str::FromStr + PartialOrd + Default>(
    name: &str,
    default: T,
) -> Result<T, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse::<T>() {
            Ok(value) if value > T::default() => Ok(value),
            _ => Err(format!(
                "{name}=`{}` is not a positive whole number",
                text.chars().take(40).collect::<String>()
            )),
        },
    }
}

/// A duration in milliseconds from `name`, or `default` when unset.
fn millis(name: &str, default: Duration) -> Result<Duration, String> {
    let default_ms = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
    number(name, default_ms).map(Duration::from_millis)
}
