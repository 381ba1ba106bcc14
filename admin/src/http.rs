//! The console through a running server's admin API (`mcp_tasks_server::http::admin`):
//! `--store http://HOST:PORT`, the admin token from `--token-file PATH` or
//! `MCP_TASKS_ADMIN_TOKEN`. The way to the in-process store (`memory`), which lives
//! inside its server, and to any other store a server serves.
//!
//! The API's answers are the documents a store URL's commands print; its errors
//! (`{"error": .., "kind": ..}`) become one-line failures. A request sends no `Origin`
//! (the API checks a browser's), so the console passes its origin check as any
//! non-browser client does; actions are `POST`s of a JSON body.

use std::time::Duration;

use mcp_tasks::Timestamp;
use mcp_tasks::admin::{Action, TaskQuery, View};
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use crate::console::{ActAnswer, Console, CreatedAges, Failed, Listed, Shown};

/// The environment variable holding the admin token (the command line has no token
/// option: `ps` would show it).
pub const TOKEN_ENV: &str = "MCP_TASKS_ADMIN_TOKEN";

/// The environment variable naming a file holding the admin token (as `--token-file`).
pub const TOKEN_FILE_ENV: &str = "MCP_TASKS_ADMIN_TOKEN_FILE";

/// How long connecting to the console may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The console of the server at a URL, reached with an admin token.
pub struct HttpConsole {
    client: Client,
    base: Url,
    token: String,
}

impl HttpConsole {
    /// The console at `url` with the token of `token_file` (else of [`TOKEN_FILE_ENV`],
    /// else [`TOKEN_ENV`]).
    ///
    /// # Errors
    /// A usage error for a URL that is not one, `https` (this build speaks plain HTTP), or
    /// no token; a failure for a token file that cannot be read.
    pub fn open(url: &str, token_file: Option<&std::path::Path>) -> Result<Self, Failed> {
        let mut base = Url::parse(url.trim())
            .map_err(|err| Failed::usage(format!("`{url}` is not a URL: {err}")))?;
        if base.scheme() == "https" {
            return Err(Failed::usage(
                "this build reaches the admin API over plain http:// only (no TLS client): \
                 reach a remote console through an SSH tunnel or a local TLS-terminating proxy, \
                 or use its store's URL",
            ));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(Failed::usage(format!(
                "`{url}`: the console's URL is http://HOST:PORT (a path prefix at most)"
            )));
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let token = token(token_file)?;
        let client = Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A purge or a drain of many tasks takes as long as it takes.
            .timeout(None)
            .user_agent(concat!("mcp-tasks-admin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| Failed::new(format!("cannot start the HTTP client: {err}")))?;
        Ok(Self {
            client,
            base,
            token,
        })
    }

    /// The URL of `path` (under `api/`), its segments percent-encoded.
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("api").extend(segments);
        }
        url
    }

    fn get(&self, segments: &[&str]) -> RequestBuilder {
        self.client.get(self.url(segments)).bearer_auth(&self.token)
    }

    fn post(&self, segments: &[&str], body: &Value) -> RequestBuilder {
        self.client
            .post(self.url(segments))
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
    }

    /// Sends `request`; the JSON of a `2xx` answer, else the API's error.
    fn send(&self, request: RequestBuilder) -> Result<Result<Value, ApiError>, Failed> {
        let response = request.send().map_err(|err| {
            Failed::new(format!(
                "cannot reach the admin API at {}: {}",
                self.base,
                error_chain(&err)
            ))
        })?;
        read(response)
    }

    /// As [`send`](Self::send), every API error a failure.
    fn call(&self, request: RequestBuilder) -> Result<Value, Failed> {
        self.send(request)?.map_err(|err| self.failed(&err))
    }

    /// The one line for an API error.
    fn failed(&self, err: &ApiError) -> Failed {
        Failed::new(match err.status {
            StatusCode::UNAUTHORIZED => format!(
                "the admin API at {} refused the token (401): {}",
                self.base, err.message
            ),
            StatusCode::FORBIDDEN => format!(
                "the admin API at {} refused the request (403): {}",
                self.base, err.message
            ),
            StatusCode::SERVICE_UNAVAILABLE => {
                format!("the server's store cannot answer (503): {}", err.message)
            }
            _ => err.message.clone(),
        })
    }
}

/// An answer of the API that is not a success.
struct ApiError {
    status: StatusCode,
    message: String,
    kind: String,
}

/// The JSON of a success, or the error the API answered.
fn read(response: Response) -> Result<Result<Value, ApiError>, Failed> {
    let status = response.status();
    let text = response
        .text()
        .map_err(|err| Failed::new(format!("the admin API's answer broke off: {err}")))?;
    let body: Option<Value> = serde_json::from_str(&text).ok();
    if status.is_success() {
        return body.map(Ok).ok_or_else(|| {
            Failed::new(format!(
                "the admin API answered {status} with a body that is not JSON (is this URL \
                 a server's admin console, MCP_TASKS_ADMIN_ADDR?)"
            ))
        });
    }
    let field = |name: &str| {
        body.as_ref()
            .and_then(|body| body.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Err(ApiError {
        status,
        message: field("error").unwrap_or_else(|| {
            format!(
                "the admin API answered {status} (is this URL a server's admin console, \
                 MCP_TASKS_ADMIN_ADDR?)"
            )
        }),
        kind: field("kind").unwrap_or_else(|| "store".to_owned()),
    }))
}

/// A duration in whole milliseconds.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// An error with its causes, in one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The admin token: the first line of the file, or the environment's.
fn token(token_file: Option<&std::path::Path>) -> Result<String, Failed> {
    let from_env_file = std::env::var_os(TOKEN_FILE_ENV).map(std::path::PathBuf::from);
    let file = token_file
        .map(std::path::Path::to_path_buf)
        .or(from_env_file);
    let token = match file {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|err| {
                Failed::new(format!(
                    "cannot read the admin token file {}: {err}",
                    path.display()
                ))
            })?
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        None => std::env::var(TOKEN_ENV)
            .map(|token| token.trim().to_owned())
            .map_err(|_| {
                Failed::usage(format!(
                    "the admin API needs an admin token: --token-file PATH (or \
                     {TOKEN_FILE_ENV}=PATH), or {TOKEN_ENV}"
                ))
            })?,
    };
    if token.is_empty() || token.chars().any(char::is_control) {
        return Err(Failed::usage(
            "the admin token is empty or holds control characters",
        ));
    }
    Ok(token)
}

impl Console for HttpConsole {
    /// This machine's clock: the API answers no clock of the store's.
    fn now(&self) -> Result<Timestamp, Failed> {
        Ok(Timestamp::now())
    }

    fn list(
        &self,
        query: &TaskQuery,
        (older_than, newer_than): CreatedAges,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Listed, Failed> {
        let mut url = self.url(&["tasks"]);
        {
            let mut pairs = url.query_pairs_mut();
            for status in query.statuses.iter().flatten() {
                pairs.append_pair("status", status.as_str());
            }
            if let Some(tool) = &query.tool {
                pairs.append_pair("tool", tool);
            }
            if let Some(owner) = &query.owner {
                pairs.append_pair("owner", owner.key().unwrap_or("-"));
            }
            if let Some(min) = query.min_attempts {
                pairs.append_pair("minAttempts", &min.to_string());
            }
            // Ages: the server counts them on the store's clock.
            if let Some(age) = older_than {
                pairs.append_pair("olderThanMs", &millis(age).to_string());
            }
            if let Some(age) = newer_than {
                pairs.append_pair("newerThanMs", &millis(age).to_string());
            }
            if let Some(holder) = &query.lease_holder {
                pairs.append_pair("holder", holder);
            }
            match &query.view {
                Some(View::Stalled { grace }) => {
                    pairs.append_pair("stalledGraceMs", &millis(*grace).to_string());
                }
                Some(View::InputRequiredLongerThan(bound)) => {
                    pairs.append_pair("inputRequiredLongerThanMs", &millis(*bound).to_string());
                }
                Some(View::Exhausted) => {
                    pairs.append_pair("exhausted", "true");
                }
                None => {}
            }
            if let Some(cursor) = cursor {
                pairs.append_pair("cursor", cursor);
            }
            pairs.append_pair("limit", &limit.to_string());
        }
        let doc = self.call(self.client.get(url).bearer_auth(&self.token))?;
        Ok(Listed {
            doc,
            examined: None,
        })
    }

    fn show(&self, id: &str) -> Result<Shown, Failed> {
        Ok(Shown {
            doc: self.call(self.get(&["tasks", id]))?,
            outcome: None,
        })
    }

    fn act(&self, ids: &[String], action: &Action, _actor: &str) -> Result<Vec<ActAnswer>, Failed> {
        let (segment, body) = match action {
            Action::Cancel => ("cancel", json!({})),
            Action::Fail { reason } => ("fail", json!({"reason": reason})),
            Action::HandOver => ("hand-over", json!({})),
        };
        let mut answers = Vec::with_capacity(ids.len());
        for id in ids {
            let answer = match self.send(self.post(&["tasks", id, segment], &body))? {
                Ok(record) => Ok(record),
                // The task's own trouble: said, and the others still acted on.
                Err(err) if matches!(err.status, StatusCode::NOT_FOUND | StatusCode::CONFLICT) => {
                    Err((err.message, err.kind))
                }
                Err(err) => return Err(self.failed(&err)),
            };
            answers.push((id.clone(), answer));
        }
        Ok(answers)
    }

    fn purge(
        &self,
        older_than: Duration,
        _progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(usize, usize), Failed> {
        let done = self.call(self.post(&["purge"], &json!({"olderThanMs": millis(older_than)})))?;
        let count = |name: &str| {
            done.get(name)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0)
        };
        Ok((count("examined"), count("purged")))
    }

    fn instances(&self) -> Result<Vec<Value>, Failed> {
        let answer = self.call(self.get(&["instances"]))?;
        match answer.get("instances") {
            Some(Value::Array(instances)) => Ok(instances.clone()),
            _ => Err(Failed::new(
                "the admin API's instances answer holds no `instances` list",
            )),
        }
    }

    fn drain(&self, name: &str, _actor: &str) -> Result<Value, Failed> {
        let mut report = self.call(self.post(&["instances", name, "drain"], &json!({})))?;
        // The same document a store URL's drain prints.
        if let Value::Object(map) = &mut report {
            map.remove("name");
        }
        Ok(report)
    }

    fn undrain(&self, name: &str) -> Result<bool, Failed> {
        let answer = self.call(self.post(&["instances", name, "undrain"], &json!({})))?;
        Ok(answer
            .get("wasDraining")
            .and_then(Value::as_bool)
            .unwrap_or(false))
    }
}
