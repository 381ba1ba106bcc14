//! What the example servers share besides their tools: their command line (a store,
//! `--conformance`) and environment, and the server they build from it.

use mcp_tasks_server::{BuildError, Server, ServerBuilder, Settings};

use crate::tools;

/// The command-line flag that serves the conformance suite's fixtures too.
pub const CONFORMANCE_FLAG: &str = "--conformance";

/// The environment variable that does the same (`1`).
pub const CONFORMANCE_ENV: &str = "MCP_TASKS_CONFORMANCE";

/// The example's name, as its `Implementation` says.
pub const NAME: &str = "mcp-tasks-example";

/// What an example server's command line and environment ask for.
#[derive(Debug)]
pub struct Options {
    /// The store and the other settings of the environment.
    pub settings: Settings,
    /// Whether the conformance suite's fixtures are served too.
    pub conformance: bool,
}

impl Options {
    /// Reads `args` (the command line without the program) and the environment.
    ///
    /// # Errors
    /// A usage line for an unknown argument or a store named wrongly; a setting of the
    /// environment that cannot be used.
    pub fn parse(program: &str, args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let usage = || {
            format!(
                "usage: {program} [--store URL | --redis URL | --postgres URL | --sqlite PATH] \
                 [{CONFORMANCE_FLAG}] (or MCP_TASKS_STORE=URL, {CONFORMANCE_ENV}=1); URL: memory, \
                 redis://host:6379, redis+unix:///path/redis.sock, postgres://user@host/db, \
                 sqlite:tasks.db"
            )
        };
        let (settings, rest) =
            Settings::from_args(args).map_err(|why| format!("{why}; {}", usage()))?;
        let mut conformance = std::env::var(CONFORMANCE_ENV).is_ok_and(|value| value.trim() == "1");
        for arg in rest {
            if arg == CONFORMANCE_FLAG {
                conformance = true;
            } else {
                return Err(format!("unknown argument `{arg}`; {}", usage()));
            }
        }
        Ok(Options {
            settings,
            conformance,
        })
    }

    /// The example server: its settings, the conformance fixtures first when asked for,
    /// then the example tools, and the test-only tools when `MCP_TASKS_TEST_TOOLS=1`.
    ///
    /// # Errors
    /// The store cannot be opened, or a setting cannot be used.
    pub fn build(self) -> Result<Server, BuildError> {
        let mut builder: ServerBuilder = Server::builder()
            .name(NAME, env!("CARGO_PKG_VERSION"))
            .instructions(tools::INSTRUCTIONS)
            .settings(self.settings);
        if self.conformance {
            builder = mcp_tasks_conformance::register(builder);
        }
        builder = builder.tools(tools::examples());
        if tools::test_tools_wanted() {
            builder = builder.tools(tools::test_tools());
        }
        builder.build()
    }
}

/// Runs an example program's `run`: its log on stderr first (`RUST_LOG`, default `info`),
/// then `run`; an error is one line on stderr, `<program>: <why>`, and exit status 1.
pub fn main(program: &str, run: impl FnOnce() -> Result<(), String>) -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .target(env_logger::Target::Stderr)
        .init();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
