//! `mcp-tasks-admin`: the operator's console of an mcp-tasks store shared by server
//! instances (Redis or PostgreSQL): every owner's tasks, listed, shown, cancelled, failed,
//! handed over and purged, and the instances holding them (`mcp_tasks::admin`).
//!
//! `mcp-tasks-admin --store URL <command>` (or `MCP_TASKS_STORE=URL`); `--json` for
//! scripts. `--store http://HOST:PORT` reaches a running server's store through its admin
//! API (the `http` feature, on by default): the way to the in-process store (`memory`),
//! and to any store without its credentials, with an admin token from `--token-file PATH`,
//! `MCP_TASKS_ADMIN_TOKEN_FILE` or `MCP_TASKS_ADMIN_TOKEN`. Exit code 0 when everything asked for was done, 1 when something failed (a
//! task not found, already finished, the store unreachable), 2 for a usage error.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_tasks::admin::{Action, TaskQuery, View, owner_name};
use mcp_tasks::{Owner, TaskStatus, Timestamp};
use mcp_tasks_server::store_url::{STORE_ENV, SharedStore, StoreSettings, is_memory};
use serde_json::{Value, json};

mod console;
#[cfg(feature = "http")]
mod http;

use console::{Console, Failed, Listed, Shown, StoreConsole};

/// The operator's console of an mcp-tasks store: every owner's tasks.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-tasks-admin",
    version,
    after_help = "Over a server's admin console (--store http://HOST:PORT): the admin token \
        comes from --token-file PATH, MCP_TASKS_ADMIN_TOKEN_FILE or MCP_TASKS_ADMIN_TOKEN; \
        actions are recorded under the token's admin principal (not --as); purge shows no \
        progress. Plain http:// only: \
        reach a remote console through an SSH tunnel.\n\nExit codes: 0 done, 1 something \
        failed (a task not found or finished, the store or console unreachable, a token \
        refused), 2 a usage error."
)]
struct Cli {
    /// The store: redis://…, rediss://…, redis+unix://…, postgres://…, postgresql://…,
    /// sqlite:PATH, or a running server's admin console, http://HOST:PORT (its
    /// MCP_TASKS_ADMIN_ADDR; the way to its in-process store), with an admin token.
    #[arg(long, env = STORE_ENV, value_name = "URL", global = true)]
    store: Option<String>,
    /// With an http:// store: the file whose first line is the admin token (or set
    /// MCP_TASKS_ADMIN_TOKEN_FILE, or the token itself in MCP_TASKS_ADMIN_TOKEN; no option
    /// takes the token itself, which `ps` would show).
    #[arg(long, value_name = "PATH", global = true)]
    token_file: Option<std::path::PathBuf>,
    /// Print JSON (one document) instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every owner's tasks, oldest first, filtered.
    List(ListArgs),
    /// Show one task whole.
    Show {
        /// The task id.
        id: String,
    },
    /// Cancel tasks (as `tasks/cancel` does); a finished task is left as it is.
    Cancel {
        /// The task ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Who cancels (written in the task's status message; over an http:// console, the
        /// admin token's principal is written instead).
        #[arg(long = "as", value_name = "NAME")]
        actor: String,
    },
    /// Fail tasks with a JSON-RPC error -32603 whose message is the reason.
    Fail {
        /// The task ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Why: the error's message.
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Who fails them (written in the task's status message; over an http:// console,
        /// the admin token's principal is written instead).
        #[arg(long = "as", value_name = "NAME")]
        actor: String,
    },
    /// Let the lease of running redeliverable tasks lapse now: another instance claims them.
    HandOver {
        /// The task ids.
        #[arg(required = true)]
        ids: Vec<String>,
        /// Who hands them over (for the record).
        #[arg(long = "as", value_name = "NAME", default_value = "operator")]
        actor: String,
    },
    /// Remove finished tasks last updated longer ago than a bound.
    Purge {
        /// The bound: 90s, 15m, 12h, 7d.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: Duration,
    },
    /// The instances seen in the leases of unfinished tasks, and the drained ones.
    Instances,
    /// Stop an instance claiming tasks (a flag in the store its claim loop honours) and
    /// hand over every task it holds; `undrain` (or its restart) ends it.
    Drain {
        /// The instance's name (as `instances` lists it).
        name: String,
        /// Who drains it (for the record).
        #[arg(long = "as", value_name = "NAME", default_value = "operator")]
        actor: String,
    },
    /// End a drain: the instance claims tasks again.
    Undrain {
        /// The instance's name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    /// Only tasks in this status (repeat for several): working, input_required,
    /// completed, failed, cancelled.
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    status: Vec<TaskStatus>,
    /// Only tasks that run this tool (the name a task keeps; for a task stored before
    /// tasks kept it, its job's: redeliverable tasks only).
    #[arg(long)]
    tool: Option<String>,
    /// Only this owner's tasks (its key; `-` for the anonymous owner).
    #[arg(long)]
    owner: Option<String>,
    /// Only tasks at this attempt or later.
    #[arg(long, value_name = "N")]
    min_attempts: Option<u32>,
    /// Only tasks created longer ago than this (90s, 15m, 12h, 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    older_than: Option<Duration>,
    /// Only tasks created less long ago than this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    newer_than: Option<Duration>,
    /// Only unfinished tasks leased by this instance.
    #[arg(long, value_name = "NAME")]
    holder: Option<String>,
    /// Only working tasks whose lease lapsed and that nothing picks up.
    #[arg(long, conflicts_with_all = ["exhausted", "input_required_longer_than"])]
    stalled: bool,
    /// With --stalled: how long a claimable task may stay unclaimed after its lease lapsed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    grace: Duration,
    /// Only tasks waiting for input for longer than this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "exhausted")]
    input_required_longer_than: Option<Duration>,
    /// Only redeliverable tasks with no attempts left.
    #[arg(long)]
    exhausted: bool,
    /// The most tasks to print (1 to 1000).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=1000))]
    limit: u16,
    /// Continue after the page that printed this cursor.
    #[arg(long)]
    cursor: Option<String>,
}

/// A duration such as `500ms`, `90s`, `15m`, `12h` or `7d`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 90s, 15m, 12h or 7d"))?;
    let millis = match unit {
        "ms" => 1,
        "s" | "" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("`{text}`: the unit is one of ms, s, m, h, d")),
    };
    number
        .checked_mul(millis)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{text}` is too long"))
}

fn parse_status(text: &str) -> Result<TaskStatus, String> {
    text.parse::<TaskStatus>().map_err(|_| {
        format!("`{text}` is not a status: working, input_required, completed, failed, cancelled")
    })
}

fn main() -> ExitCode {
    // clap exits with 2 on a usage error, 0 for --help and --version.
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(failed) => {
            eprintln!("mcp-tasks-admin: {}", failed.message);
            ExitCode::from(if failed.usage { 2 } else { 1 })
        }
    }
}

/// Opens the store (or the server's admin API) the command line or the environment names.
fn open(cli: &Cli) -> Result<Box<dyn Console>, Failed> {
    let Some(url) = cli.store.as_deref() else {
        return Err(Failed::new(format!(
            "no store: pass --store URL or set {STORE_ENV} (redis://…, postgres://…, \
             sqlite:PATH, or a server's admin console http://HOST:PORT)"
        )));
    };
    if is_http_url(url) {
        return open_http(url, cli.token_file.as_deref());
    }
    if is_memory(url) {
        return Err(Failed::new(
            "the in-process store (`memory`) lives inside its server's process: reach it \
             through that server's admin console, --store http://HOST:PORT (the server's \
             MCP_TASKS_ADMIN_ADDR) with an admin token (--token-file PATH or \
             MCP_TASKS_ADMIN_TOKEN)",
        ));
    }
    let store = SharedStore::parse(url).map_err(Failed::new)?;
    let settings = StoreSettings::from_env().map_err(Failed::new)?;
    let instance = format!("mcp-tasks-admin-{}", std::process::id());
    let admin = store
        .open_admin(&settings, &instance)
        .map_err(Failed::new)?;
    Ok(Box::new(StoreConsole(admin)))
}

/// Whether `url` names a server's admin console rather than a store.
fn is_http_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

#[cfg(feature = "http")]
fn open_http(url: &str, token_file: Option<&std::path::Path>) -> Result<Box<dyn Console>, Failed> {
    Ok(Box::new(http::HttpConsole::open(url, token_file)?))
}

#[cfg(not(feature = "http"))]
fn open_http(url: &str, _: Option<&std::path::Path>) -> Result<Box<dyn Console>, Failed> {
    Err(Failed::usage(format!(
        "`{url}`: this build has no HTTP client (build mcp-tasks-admin with its `http` \
         feature to reach a server's admin console)"
    )))
}

/// Runs the command; `Ok(false)` when part of it failed (said on stderr).
fn run(cli: Cli) -> Result<bool, Failed> {
    let console = open(&cli)?;
    let console = &*console;
    let json = cli.json;
    match cli.command {
        Command::List(args) => list(console, &args, json),
        Command::Show { id } => {
            let shown = console.show(&id)?;
            if json {
                print_json(&shown.doc);
            } else {
                print_details(&shown);
            }
            Ok(true)
        }
        Command::Cancel { ids, actor } => act(console, &ids, &Action::Cancel, &actor, json),
        Command::Fail { ids, reason, actor } => {
            act(console, &ids, &Action::Fail { reason }, &actor, json)
        }
        Command::HandOver { ids, actor } => act(console, &ids, &Action::HandOver, &actor, json),
        Command::Purge { older_than } => {
            let started = std::time::Instant::now();
            let (examined, purged) = console.purge(older_than, &mut |examined, purged| {
                if started.elapsed() > Duration::from_secs(1) {
                    eprintln!("purge: {examined} finished tasks read, {purged} removed");
                }
            })?;
            if json {
                print_json(&json!({"examined": examined, "purged": purged}));
            } else {
                println!(
                    "purged {purged} of {examined} finished tasks (finished more than {} ago)",
                    human(older_than)
                );
            }
            Ok(true)
        }
        Command::Instances => {
            let instances = console.instances()?;
            if json {
                print_json(&Value::Array(instances));
            } else {
                print_instances(&instances);
            }
            Ok(true)
        }
        Command::Drain { name, actor } => {
            let report = console.drain(&name, &actor)?;
            if json {
                print_json(&report);
            } else {
                for record in report["handedOver"].as_array().into_iter().flatten() {
                    println!(
                        "handed over {} ({})",
                        text(&record["taskId"]),
                        owner_of(&record["owner"])
                    );
                }
                let kept = report["kept"].as_array().map_or(&[][..], Vec::as_slice);
                for reason in kept {
                    println!("kept: {}", text(reason));
                }
                let handed_over = report["handedOver"].as_array().map_or(0, Vec::len);
                println!(
                    "{}: draining{} (it claims no task until `undrain` or its restart); \
                     {} tasks handed over, {} kept (they run there to their end)",
                    name,
                    if report["wasDraining"] == true {
                        " already"
                    } else {
                        ""
                    },
                    handed_over,
                    kept.len()
                );
            }
            Ok(true)
        }
        Command::Undrain { name } => {
            let was = console.undrain(&name)?;
            if json {
                print_json(&json!({"name": name, "wasDraining": was}));
            } else if was {
                println!("{name}: drained no more (it claims tasks again)");
            } else {
                println!("{name}: was not drained");
            }
            Ok(true)
        }
    }
}

fn list(console: &dyn Console, args: &ListArgs, json: bool) -> Result<bool, Failed> {
    let mut query = TaskQuery::all();
    for status in &args.status {
        query = query.with_status(*status);
    }
    query.tool.clone_from(&args.tool);
    query.owner = args.owner.as_deref().map(|key| match key {
        "-" => Owner::anonymous(),
        key => Owner::new(key),
    });
    query.min_attempts = args.min_attempts;
    query.lease_holder.clone_from(&args.holder);
    query.view = if args.stalled {
        Some(View::Stalled { grace: args.grace })
    } else if let Some(bound) = args.input_required_longer_than {
        Some(View::InputRequiredLongerThan(bound))
    } else if args.exhausted {
        Some(View::Exhausted)
    } else {
        None
    };
    let page = console.list(
        &query,
        (args.older_than, args.newer_than),
        args.cursor.as_deref(),
        usize::from(args.limit),
    )?;
    let now = console.now()?;
    if json {
        print_json(&page.doc);
    } else {
        print_page(&page, now);
    }
    Ok(true)
}

fn act(
    console: &dyn Console,
    ids: &[String],
    action: &Action,
    actor: &str,
    json: bool,
) -> Result<bool, Failed> {
    let answers = console.act(ids, action, actor)?;
    let all_done = answers.iter().all(|(_, answer)| answer.is_ok());
    if json {
        print_json(&Value::Array(
            answers
                .iter()
                .map(|(id, answer)| match answer {
                    Ok(record) => record.clone(),
                    Err((error, kind)) => json!({"taskId": id, "error": error, "kind": kind}),
                })
                .collect(),
        ));
    } else {
        for (_, answer) in &answers {
            match answer {
                Ok(record) => println!(
                    "admin {} did {} on task {} of {} ({} -> {}) at {}",
                    text(&record["actor"]),
                    text(&record["action"]),
                    text(&record["taskId"]),
                    owner_of(&record["owner"]),
                    text(&record["from"]),
                    text(&record["to"]),
                    text(&record["at"])
                ),
                Err((error, _)) => eprintln!("mcp-tasks-admin: {error}"),
            }
        }
    }
    Ok(all_done)
}

/// A JSON string as it is, another value as JSON, `-` for none.
fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// An owner's key (`null`: the anonymous owner) as an operator reads it.
fn owner_of(value: &Value) -> String {
    owner_name(&match value.as_str() {
        Some(key) => Owner::new(key),
        None => Owner::anonymous(),
    })
}

/// A timestamp of the JSON documents.
fn time(value: &Value) -> Option<Timestamp> {
    value.as_str().and_then(|text| Timestamp::parse(text).ok())
}

/// How long ago `value` was, for people; `-` when it is no timestamp.
fn ago(value: &Value, now: Timestamp) -> String {
    time(value).map_or("-".to_owned(), |at| human(now.saturating_since(at)))
}

fn print_json(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, value);
    let _ = writeln!(out);
}

/// A duration for people: `42s`, `5m`, `3h`, `2d`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..7_200 => format!("{}m", s / 60),
        7_200..172_800 => format!("{}h", s / 3_600),
        _ => format!("{}d", s / 86_400),
    }
}

fn print_page(page: &Listed, now: Timestamp) {
    let mut lines = vec![[
        "ID".to_owned(),
        "OWNER".to_owned(),
        "STATUS".to_owned(),
        "ATTEMPT".to_owned(),
        "HOLDER".to_owned(),
        "LEASE".to_owned(),
        "AGE".to_owned(),
        "UPDATED".to_owned(),
    ]];
    let rows = page.doc["tasks"].as_array().map_or(&[][..], Vec::as_slice);
    for row in rows {
        let lease = match time(&row["leasedUntil"]) {
            None => "-".to_owned(),
            Some(at) if at > now => format!("{} left", human(at.saturating_since(now))),
            Some(at) => format!("lapsed {} ago", human(now.saturating_since(at))),
        };
        lines.push([
            text(&row["taskId"]),
            owner_of(&row["owner"]),
            text(&row["status"]),
            match (row["attempt"].as_u64(), row["maxAttempts"].as_u64()) {
                (Some(attempt), Some(max)) => format!("{attempt}/{max}"),
                _ => "-".to_owned(),
            },
            text(&row["leaseHolder"]),
            lease,
            ago(&row["createdAt"], now),
            format!("{} ago", ago(&row["lastUpdatedAt"], now)),
        ]);
    }
    print_table(&lines);
    let read = page
        .examined
        .map_or(String::new(), |examined| format!(" ({examined} read)"));
    match page.doc["nextCursor"].as_str() {
        Some(cursor) => println!("{} tasks{read}; more: --cursor {cursor}", rows.len()),
        None => println!("{} tasks{read}; end of the store", rows.len()),
    }
}

fn print_table<const N: usize>(lines: &[[String; N]]) {
    let mut widths = [0; N];
    for line in lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let mut text = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i + 1 == N {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
}

fn print_details(shown: &Shown) {
    let doc = &shown.doc;
    let mut lines: Vec<[String; 2]> = vec![
        ["task".into(), text(&doc["taskId"])],
        ["owner".into(), owner_of(&doc["owner"])],
        ["status".into(), text(&doc["status"])],
        ["message".into(), text(&doc["statusMessage"])],
        ["created".into(), text(&doc["createdAt"])],
        ["updated".into(), text(&doc["lastUpdatedAt"])],
        [
            "attempts".into(),
            match (doc["attempt"].as_u64(), doc["maxAttempts"].as_u64()) {
                (Some(attempt), Some(max)) => format!("{attempt} of {max}"),
                _ => "- (runs once)".to_owned(),
            },
        ],
        [
            "lease".into(),
            match (doc["leaseHolder"].as_str(), doc["leasedUntil"].as_str()) {
                (Some(holder), Some(until)) => format!("{holder} until {until}"),
                (None, Some(until)) => format!("until {until}"),
                _ => "-".to_owned(),
            },
        ],
        [
            "job".into(),
            if doc["hasJob"] == true {
                format!("tool {}", doc["tool"].as_str().unwrap_or("(none named)"))
            } else {
                "-".to_owned()
            },
        ],
        [
            "checkpoint".into(),
            doc["checkpointBytes"]
                .as_u64()
                .map_or("-".to_owned(), |n| format!("{n} bytes")),
        ],
        ["trace".into(), text(&doc["traceId"])],
    ];
    if let Some(outcome) = &shown.outcome {
        lines.push(["outcome".into(), outcome.clone()]);
    }
    print_table(&lines);
}

fn print_instances(instances: &[Value]) {
    let mut lines = vec![[
        "INSTANCE".to_owned(),
        "TASKS".to_owned(),
        "LIVE LEASES".to_owned(),
        "LATEST DEADLINE".to_owned(),
        "ALIVE".to_owned(),
        "DRAINING".to_owned(),
    ]];
    let yes = |value: &Value| if *value == true { "yes" } else { "no" }.to_owned();
    for instance in instances {
        lines.push([
            text(&instance["name"]),
            text(&instance["tasks"]),
            text(&instance["liveLeases"]),
            text(&instance["latestDeadline"]),
            yes(&instance["alive"]),
            yes(&instance["draining"]),
        ]);
    }
    print_table(&lines);
}
