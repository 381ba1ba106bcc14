//! The example binaries as the workspace's tests run them (`rmcp_stdio`, `rmcp_http`,
//! built by `cargo test` with the examples, with the same features), with rmcp's client.
//! Workspace only: the examples serve the repository's example tools.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;

use rmcp::model::ClientConfig;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{Client, LIMIT, discover, tasks_client};

/// The example binary `name`, built by `cargo test` with the examples.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p mcp-tasks-rmcp --examples` \
         (plain `cargo test` does)",
        path.display()
    );
    path
}

/// Spawns the stdio example (with `--conformance`: the tests call the fixtures too) and
/// connects `config` to it with `lifecycle`.
pub async fn spawn_stdio(config: ClientConfig, lifecycle: ClientLifecycleMode) -> Client {
    spawn_stdio_with(&["--conformance"], config, lifecycle).await
}

/// Spawns the stdio example with `args` and connects `config` to it with `lifecycle`.
pub async fn spawn_stdio_with(
    args: &[&str],
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> Client {
    let mut command = Command::new(example("rmcp_stdio"));
    command
        .args(args)
        .env_remove("MCP_TASKS_CONFORMANCE")
        .env_remove("MCP_TASKS_STORE");
    let transport = TokioChildProcess::new(command).expect("the stdio example starts");
    tokio::time::timeout(LIMIT, config.serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the lifecycle answers in time")
        .expect("rmcp accepts the example's lifecycle answer")
}

/// A running `rmcp_http` example and its endpoint; killed when dropped.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    /// Kills the instance at once (`SIGKILL`: no hand-over, its leases lapse) and reaps it.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("the example can be killed");
    }

    /// Asks the instance to stop (`SIGTERM`: it hands its redeliverable tasks over) and
    /// waits until it exited.
    pub async fn terminate(&mut self) {
        let pid = self.child.id().expect("the example is running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("`kill` runs");
        assert!(sent.success(), "SIGTERM was not sent");
        tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("the example exits in time")
            .expect("the example is reaped");
    }
}

/// Starts `rmcp_http` on a free loopback port with `args` (and `env`).
pub async fn start_http(args: &[&str]) -> Server {
    start_http_with(args, &[]).await
}

/// Starts `rmcp_http` on a free loopback port with `args` and the environment `env`.
pub async fn start_http_with(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut command = Command::new(example("rmcp_http"));
    command
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("MCP_TASKS_ANONYMOUS")
        .env_remove("MCP_TASKS_CONFORMANCE")
        .env_remove("MCP_TASKS_STORE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the http example starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(LIMIT, BufReader::new(stdout).read_line(&mut line))
        .await
        .expect("the example announces its address in time")
        .expect("its stdout is readable");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| {
            panic!(
                "rmcp_http did not start (first line {line:?}; its stderr is above): an \
                 example built without this test's features? `cargo test` builds the \
                 examples with the same features, `cargo test --test NAME` does not"
            )
        })
        .to_owned();
    Server { child, url }
}

/// `config` connected to `server` with `token`, in `lifecycle`.
pub async fn connect_http(
    server: &Server,
    token: Option<&str>,
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, String> {
    let mut transport = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    if let Some(token) = token {
        transport = transport.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(transport);
    tokio::time::timeout(LIMIT, config.serve_with_lifecycle(transport, lifecycle))
        .await
        .map_err(|_| "no lifecycle answer in time".to_owned())?
        .map_err(|err| err.to_string())
}

/// A 2026-07-28 client declaring the extension, connected to `server` with `token`.
pub async fn tasks(server: &Server, token: &str) -> Client {
    connect_http(server, Some(token), tasks_client(), discover())
        .await
        .expect("a client with a valid token connects")
}
