//! [`ServerBuilder`]: a server's tools, methods and store, checked once when it is built.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use mcp_tasks::admin::TaskAdmin;
use mcp_tasks::{JsonObject, Limits, TaskRegistry, TaskStore, TtlPolicy};
use serde_json::Value;

use crate::context::{Context, Exit};
use crate::mrtr::{self, States};
use crate::server::{Identity, MethodHandler, Parts, Server, Store};
use crate::settings::Settings;
use crate::store_url::{self, StoreSettings};
use crate::telemetry::{self, StoreScan, Telemetry};
use crate::tool::{Tool, ToolError, Tools};

/// How long tasks live unless their request says otherwise (ms): a minute.
pub const DEFAULT_TTL_MS: u64 = 60_000;

/// The longest a task may live (ms): an hour.
pub const MAX_TTL_MS: u64 = 3_600_000;

/// The polling interval suggested to clients (ms).
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 100;

/// Why a server could not be built: one line for its operator, naming the tool, method or
/// store at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tool that cannot be served.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A method the server serves itself, or one added twice.
    #[error("the method `{method}` {why}")]
    Method {
        /// The method.
        method: String,
        /// Why it cannot be added.
        why: &'static str,
    },
    /// The store could not be opened, or its URL names a backend this build leaves out.
    #[error("{0}")]
    Store(String),
    /// A setting that cannot be used.
    #[error("{0}")]
    Setting(String),
}

/// The methods a server serves itself: an application cannot add them.
const SERVED: [&str; 14] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/result",
    "tasks/update",
    "server/discover",
    "subscriptions/listen",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
];

/// Where the tasks live, as given to the builder.
enum StoreChoice {
    /// The in-process registry (the default).
    Memory,
    /// A store given as it is.
    Given { store: Store, shared: bool },
    /// A store to open from its URL when the server is built.
    Url(String),
}

/// A server being declared ([`Server::builder`]): its name, tools, methods and store.
#[must_use = "a builder does nothing until `build`"]
pub struct ServerBuilder {
    identity: Identity,
    tools: Vec<Tool>,
    methods: Vec<(String, MethodHandler)>,
    capabilities: JsonObject,
    logging: bool,
    store: StoreChoice,
    store_settings: StoreSettings,
    page_size: usize,
    states: Option<Result<States, String>>,
    telemetry: Option<Telemetry>,
    store_scan: StoreScan,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("name", &self.identity.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a server: name it, give it its tools, and [`build`](ServerBuilder::build) it.
    /// By default its tasks live in this process (a [`TaskRegistry`]) for a minute unless
    /// their request says otherwise (an hour at most), and nothing is read from the
    /// environment ([`ServerBuilder::settings`] applies what [`Settings::from_env`] read).
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            identity: Identity {
                name: "mcp-tasks-server".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                title: None,
                instructions: None,
            },
            tools: Vec::new(),
            methods: Vec::new(),
            capabilities: JsonObject::new(),
            logging: false,
            store: StoreChoice::Memory,
            store_settings: StoreSettings::default(),
            page_size: mcp_tasks::protocol::DEFAULT_PAGE_SIZE,
            states: None,
            telemetry: None,
            store_scan: StoreScan::default(),
        }
    }
}

impl ServerBuilder {
    /// The server's name and version, as its `Implementation` says.
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.identity.name = name.into();
        self.identity.version = version.into();
        self
    }

    /// A human-readable name for the server.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.identity.title = Some(title.into());
        self
    }

    /// What the server tells a client it is about (`instructions`).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.identity.instructions = Some(instructions.into());
        self
    }

    /// Serves `tool`.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Serves each of `tools`, in order.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Answers `method` (one the server does not serve itself: `prompts/list`,
    /// `prompts/get`, `resources/list`, `resources/read`, `completion/complete`, ...) with
    /// `handler`: an async function of a [`Context`] (as a call running at once has one:
    /// it may ask for input, in rounds on 2026-07-28) and the request's `params`, answering
    /// the result. Declare what it adds with [`capability`](Self::capability). A method
    /// no handler serves is `-32601`.
    pub fn method<F, Fut>(mut self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Context, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, Exit>> + Send + 'static,
    {
        let handler: MethodHandler =
            Arc::new(move |context, params| Box::pin(handler(context, params)));
        self.methods.push((method.into(), handler));
        self
    }

    /// Declares the capability `name` (`prompts`, `resources`, `completions`, ...) with
    /// `value` in `initialize` and `server/discover`, for the methods added with
    /// [`method`](Self::method).
    pub fn capability(mut self, name: impl Into<String>, value: Value) -> Self {
        self.capabilities.insert(name.into(), value);
        self
    }

    /// Serves `logging/setLevel` and declares `logging` (2025-11-25), for handlers that
    /// log to their client ([`Context::log`]).
    pub fn logging(mut self) -> Self {
        self.logging = true;
        self
    }

    /// Keeps the tasks in `store`, used by this instance alone (nothing is claimed from
    /// it, so a redeliverable tool's task is given its attempts but no job to run again);
    /// for a store several instances share, use [`shared_store`](Self::shared_store).
    pub fn store(mut self, store: impl TaskStore + 'static) -> Self {
        self.store = StoreChoice::Given {
            store: Arc::new(store),
            shared: false,
        };
        self
    }

    /// Keeps the tasks in `store`, shared with other instances: the server claims the
    /// redeliverable tasks of instances that stopped and runs them again, and hands its own
    /// over when it shuts down.
    pub fn shared_store(mut self, store: impl TaskStore + 'static) -> Self {
        self.store = StoreChoice::Given {
            store: Arc::new(store),
            shared: true,
        };
        self
    }

    /// Keeps the tasks in the store `url` names, opened when the server is built: `memory`
    /// (this process), `redis://…`, `rediss://…` or `redis+unix://…` (feature `redis`),
    /// `postgres://…` or `postgresql://…` (feature `postgres`), `sqlite:PATH` (feature
    /// `sqlite`: a file on this machine). A shared store's tasks are
    /// claimed and handed over as for [`shared_store`](Self::shared_store).
    pub fn store_url(mut self, url: impl Into<String>) -> Self {
        self.store = StoreChoice::Url(url.into());
        self
    }

    /// The tasks' retention policy (every store this builder opens).
    pub fn ttl_policy(mut self, policy: TtlPolicy) -> Self {
        self.store_settings.ttl = Some(policy);
        self
    }

    /// The limits on stored tasks, per owner and in all (every store this builder opens).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.store_settings.limits = Some(limits);
        self
    }

    /// How many tasks a 2025-11-25 `tasks/list` page holds.
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// The key that tags a 2026-07-28 `requestState` (at least 32 bytes of secret): give
    /// every instance behind one load balancer the same one. Unset: random per process.
    pub fn request_state_key(mut self, key: &[u8]) -> Self {
        self.states = Some(
            mrtr::HmacSha256::new(key)
                .map(mcp_tasks::ext::RequestStates::new)
                .map_err(|why| format!("the requestState key: {why}")),
        );
        self
    }

    /// Applies what the environment set ([`Settings::from_env`]): the store (its URL, leases,
    /// outages, limits), the page size, the `requestState` key and lifetime.
    pub fn settings(mut self, settings: Settings) -> Self {
        if let Some(url) = settings.store_url {
            self.store = StoreChoice::Url(url);
        }
        let defaults = std::mem::take(&mut self.store_settings);
        self.store_settings = StoreSettings {
            ttl: defaults.ttl,
            poll_interval: defaults.poll_interval,
            ..settings.store
        };
        if self.store_settings.limits.is_none() {
            self.store_settings.limits = defaults.limits;
        }
        if let Some(page_size) = settings.page_size {
            self.page_size = page_size.max(1);
        }
        if let Some(states) = settings.request_states {
            self.states = Some(Ok(states));
        }
        self.store_scan = settings.store_scan;
        self
    }

    /// How the store gauges are sampled (feature `otel`, with telemetry that records):
    /// by default a scan every 15 s of at most 10,000 tasks ([`StoreScan`]). Only a store
    /// this builder opens is scanned (`memory` or a store URL), by one sampler per
    /// telemetry however many servers record into it.
    pub fn store_scan(mut self, scan: StoreScan) -> Self {
        self.store_scan = scan;
        self
    }

    /// Records spans and metrics into `telemetry` (feature `otel`; by default what
    /// [`telemetry::init`] installed).
    pub fn telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The server.
    ///
    /// # Errors
    /// Two tools with one name, a tool name MCP does not allow, a redeliverable tool whose
    /// attempts are out of bounds or that never runs as a task, a method the server
    /// serves itself (or added twice), a `requestState` key that is too short, a store
    /// that cannot be opened: each names what is at fault.
    pub fn build(self) -> Result<Server, BuildError> {
        let tools = Tools::new(self.tools)?;
        let states = match self.states {
            None => mrtr::random_states(),
            Some(states) => states.map_err(BuildError::Setting)?,
        };
        let mut methods = HashMap::with_capacity(self.methods.len());
        for (method, handler) in self.methods {
            if SERVED.contains(&method.as_str()) {
                return Err(BuildError::Method {
                    method,
                    why: "is served by the server itself",
                });
            }
            if methods.insert(method.clone(), handler).is_some() {
                return Err(BuildError::Method {
                    method,
                    why: "was added twice",
                });
            }
        }
        let mut store_settings = self.store_settings;
        store_settings
            .ttl
            .get_or_insert_with(|| TtlPolicy::new(Some(DEFAULT_TTL_MS)).with_max(MAX_TTL_MS));
        store_settings
            .poll_interval
            .get_or_insert(DEFAULT_POLL_INTERVAL_MS);
        // The store as an operator's console sees it too (every owner's tasks), when the
        // builder opened it: a store given as a `TaskStore` has no such view.
        let (store, admin, shared): (Store, Option<Arc<dyn TaskAdmin>>, bool) = match self.store {
            StoreChoice::Given { store, shared } => (store, None, shared),
            StoreChoice::Memory => {
                let registry = registry(&store_settings)?;
                (Arc::clone(&registry) as Store, Some(registry), false)
            }
            StoreChoice::Url(url) if store_url::is_memory(&url) => {
                let registry = registry(&store_settings)?;
                (Arc::clone(&registry) as Store, Some(registry), false)
            }
            StoreChoice::Url(url) => {
                let opened = store_url::SharedStore::parse(&url)
                    .map_err(BuildError::Store)?
                    .open_as(&store_settings, None)
                    .map_err(BuildError::Store)?;
                (Arc::clone(&opened) as Store, Some(opened), true)
            }
        };
        let telemetry = self.telemetry.unwrap_or_else(telemetry::global);
        if let Some(admin) = &admin {
            telemetry::sample_store(&telemetry, Arc::clone(admin), self.store_scan);
        }
        Ok(Server::from_parts(Parts {
            store,
            admin,
            shared,
            identity: self.identity,
            tools,
            methods,
            extra_capabilities: self.capabilities,
            logging: self.logging,
            page_size: self.page_size,
            states,
            telemetry,
            timer: Arc::new(crate::work::RuntimeFreeTimer),
        }))
    }
}

/// The in-process registry, with the builder's policy and limits.
fn registry(settings: &StoreSettings) -> Result<Arc<dyn TaskAdmin>, BuildError> {
    let mut builder = TaskRegistry::builder()
        .poll_interval(settings.poll_interval)
        .limits(settings.limits_or_default());
    if let Some(ttl) = settings.ttl {
        builder = builder.ttl_policy(ttl);
    }
    let registry = builder
        .build()
        .map_err(|err| BuildError::Setting(format!("cannot build the task registry: {err}")))?;
    Ok(Arc::new(registry))
}
