//! The server's configuration, read once from the environment at start-up.

use std::path::PathBuf;
use std::time::Duration;

use mcp_tasks_servers::access::Access;

/// Where to listen unless `MCP_TASKS_HTTP_ADDR` says otherwise.
const DEFAULT_ADDR: &str = "127.0.0.1:8808";

/// Everything the server reads from its environment.
pub struct Config {
    /// `MCP_TASKS_HTTP_ADDR`.
    pub addr: String,
    /// Bearer principals, or the anonymous loopback mode.
    pub access: Access,
    /// `MCP_TASKS_ALLOWED_ORIGINS`: origins allowed beside the loopback ones.
    pub extra_origins: Vec<String>,
    /// `MCP_TASKS_TRACE_DIR`: where each session's messages are appended, if anywhere.
    pub trace_dir: Option<PathBuf>,
    /// The limits that keep one client from taking the server down.
    pub limits: Limits,
}

/// The limits, each checked before the server allocates or works for a request.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `MCP_TASKS_MAX_CONNECTIONS` (default 2048): connections open at once; beyond them the
    /// server stops accepting until one closes (the kernel's backlog holds the rest).
    pub max_connections: usize,
    /// `MCP_TASKS_MAX_BODY_BYTES` (default 4 MiB): the largest request body; a larger
    /// `Content-Length` is refused `413` before anything is read.
    pub max_body: u64,
    /// `MCP_TASKS_PRINCIPAL_REQUESTS` (default 32): requests of one principal handled at
    /// once (open SSE streams included); more are refused `429` with `Retry-After`.
    pub principal_requests: usize,
    /// `MCP_TASKS_HEADER_TIMEOUT_MS` (default 10 s): a request's headers must arrive within
    /// it, else the connection is closed; the clock runs from the moment the connection
    /// waits for a request, so an idle keep-alive connection closes after it too.
    pub header_timeout: Duration,
    /// `MCP_TASKS_BODY_TIMEOUT_MS` (default 10 s): a body not complete within it is refused
    /// `408` and its connection closed.
    pub body_timeout: Duration,
    /// `MCP_TASKS_SHUTDOWN_MS` (default 10 s): on SIGTERM or SIGINT, how long in-flight
    /// requests and running tasks get to finish.
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

impl Config {
    /// Reads the configuration.
    ///
    /// # Errors
    /// One line for the operator: a missing or malformed setting.
    pub fn from_env() -> Result<Self, String> {
        let addr = std::env::var("MCP_TASKS_HTTP_ADDR").unwrap_or_else(|_| DEFAULT_ADDR.to_owned());
        let access = Access::from_env(&addr)?;
        let extra_origins = std::env::var("MCP_TASKS_ALLOWED_ORIGINS")
            .map(|list| {
                list.split(',')
                    .map(|origin| origin.trim().to_owned())
                    .filter(|origin| !origin.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let trace_dir = std::env::var_os("MCP_TASKS_TRACE_DIR").map(PathBuf::from);
        let defaults = Limits::default();
        let limits = Limits {
            max_connections: number("MCP_TASKS_MAX_CONNECTIONS", defaults.max_connections)?,
            max_body: number("MCP_TASKS_MAX_BODY_BYTES", defaults.max_body)?,
            principal_requests: number(
                "MCP_TASKS_PRINCIPAL_REQUESTS",
                defaults.principal_requests,
            )?,
            header_timeout: millis("MCP_TASKS_HEADER_TIMEOUT_MS", defaults.header_timeout)?,
            body_timeout: millis("MCP_TASKS_BODY_TIMEOUT_MS", defaults.body_timeout)?,
            shutdown_grace: millis("MCP_TASKS_SHUTDOWN_MS", defaults.shutdown_grace)?,
        };
        Ok(Self {
            addr,
            access,
            extra_origins,
            trace_dir,
            limits,
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
