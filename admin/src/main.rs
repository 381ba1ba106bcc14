//! `mcp-tasks-admin`: the operator's console of an mcp-tasks store shared by server
//! instances (Redis or PostgreSQL): every owner's tasks, listed, shown, cancelled, failed,
//! handed over and purged, and the instances holding them (`mcp_tasks::admin`).
//!
//! `mcp-tasks-admin --store URL <command>` (or `MCP_TASKS_STORE=URL`); `--json` for
//! scripts. Exit code 0 when everything asked for was done, 1 when something failed (a
//! task not found, already finished, the store unreachable), 2 for a usage error.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_tasks::admin::{
    Action, AdminError, AdminPage, InstanceInfo, TaskAdmin, TaskDetails, TaskQuery, View,
    owner_name,
};
use mcp_tasks::{Owner, TaskStatus, Timestamp};
use mcp_tasks_server::store_url::{STORE_ENV, SharedStore, StoreSettings, is_memory};
use serde_json::{Value, json};

/// The operator's console of an mcp-tasks store: every owner's tasks.
#[derive(Debug, Parser)]
#[command(name = "mcp-tasks-admin", version)]
struct Cli {
    /// The store: redis://…, rediss://…, redis+unix://…, postgres://…, postgresql://… or sqlite:PATH
    #[arg(long, env = STORE_ENV, value_name = "URL", global = true)]
    store: Option<String>,
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
        /// Who cancels (written in the task's status message).
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
        /// Who fails them (written in the task's status message).
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

/// A failure to report in one line (exit code 1).
struct Failed(String);

impl From<AdminError> for Failed {
    fn from(err: AdminError) -> Self {
        Failed(err.to_string())
    }
}

impl From<mcp_tasks::Error> for Failed {
    fn from(err: mcp_tasks::Error) -> Self {
        Failed(err.to_string())
    }
}

fn main() -> ExitCode {
    // clap exits with 2 on a usage error, 0 for --help and --version.
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Failed(message)) => {
            eprintln!("mcp-tasks-admin: {message}");
            ExitCode::from(1)
        }
    }
}

/// Opens the store the command line (or the environment) names.
fn open(url: Option<&str>) -> Result<Arc<dyn TaskAdmin>, Failed> {
    let Some(url) = url else {
        return Err(Failed(format!(
            "no store: pass --store URL or set {STORE_ENV} (redis://…, postgres://…, sqlite:PATH)"
        )));
    };
    if is_memory(url) {
        return Err(Failed(
            "the in-process store (`memory`) lives inside its server's process: the console \
             reaches shared stores only (redis://…, postgres://…, sqlite:PATH)"
                .to_owned(),
        ));
    }
    let store = SharedStore::parse(url).map_err(Failed)?;
    let settings = StoreSettings::from_env().map_err(Failed)?;
    let instance = format!("mcp-tasks-admin-{}", std::process::id());
    store.open_admin(&settings, &instance).map_err(Failed)
}

/// Runs the command; `Ok(false)` when part of it failed (said on stderr).
fn run(cli: Cli) -> Result<bool, Failed> {
    let admin = open(cli.store.as_deref())?;
    let admin = &*admin;
    let json = cli.json;
    match cli.command {
        Command::List(args) => list(admin, &args, json),
        Command::Show { id } => {
            let details = admin.show_task(&id)?;
            if json {
                print_json(&details.to_json());
            } else {
                print_details(&details);
            }
            Ok(true)
        }
        Command::Cancel { ids, actor } => act(admin, &ids, &Action::Cancel, &actor, json),
        Command::Fail { ids, reason, actor } => {
            act(admin, &ids, &Action::Fail { reason }, &actor, json)
        }
        Command::HandOver { ids, actor } => act(admin, &ids, &Action::HandOver, &actor, json),
        Command::Purge { older_than } => {
            let started = std::time::Instant::now();
            let done = admin.purge_finished(older_than, &mut |p| {
                if started.elapsed() > Duration::from_secs(1) {
                    eprintln!(
                        "purge: {} finished tasks read, {} removed",
                        p.examined, p.purged
                    );
                }
            })?;
            if json {
                print_json(&json!({"examined": done.examined, "purged": done.purged}));
            } else {
                println!(
                    "purged {} of {} finished tasks (finished more than {} ago)",
                    done.purged,
                    done.examined,
                    human(older_than)
                );
            }
            Ok(true)
        }
        Command::Instances => {
            let instances = admin.instances()?;
            if json {
                print_json(&Value::Array(
                    instances.iter().map(InstanceInfo::to_json).collect(),
                ));
            } else {
                print_instances(&instances);
            }
            Ok(true)
        }
        Command::Drain { name, actor } => {
            let report = admin.drain(&name, &actor)?;
            if json {
                print_json(&report.to_json());
            } else {
                for record in &report.handed_over {
                    println!(
                        "handed over {} ({})",
                        record.task_id,
                        owner_name(&record.owner)
                    );
                }
                for kept in &report.kept {
                    println!("kept: {kept}");
                }
                println!(
                    "{}: draining{} (it claims no task until `undrain` or its restart); \
                     {} tasks handed over, {} kept (they run there to their end)",
                    name,
                    if report.was_draining { " already" } else { "" },
                    report.handed_over.len(),
                    report.kept.len()
                );
            }
            Ok(true)
        }
        Command::Undrain { name } => {
            let was = admin.undrain(&name)?;
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

fn list(admin: &dyn TaskAdmin, args: &ListArgs, json: bool) -> Result<bool, Failed> {
    let now = admin.clock()?;
    let ago = |d: Duration| {
        Timestamp::from_unix_millis(
            now.unix_millis()
                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    };
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
    query.created_before = args.older_than.map(ago);
    query.created_after = args.newer_than.map(ago);
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
    let page = admin.list_tasks(&query, args.cursor.as_deref(), usize::from(args.limit))?;
    if json {
        print_json(&json!({
            "tasks": page.rows.iter().map(mcp_tasks::admin::row_json).collect::<Vec<_>>(),
            "nextCursor": page.next_cursor,
        }));
    } else {
        print_page(&page, now);
    }
    Ok(true)
}

fn act(
    admin: &dyn TaskAdmin,
    ids: &[String],
    action: &Action,
    actor: &str,
    json: bool,
) -> Result<bool, Failed> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let answers = admin.act(&ids, action, actor)?;
    let all_done = answers.iter().all(|(_, answer)| answer.is_ok());
    if json {
        print_json(&Value::Array(
            answers
                .iter()
                .map(|(id, answer)| match answer {
                    Ok(record) => record.to_json(),
                    Err(err) => json!({"taskId": id, "error": err.to_string(), "kind": kind(err)}),
                })
                .collect(),
        ));
    } else {
        for (_, answer) in &answers {
            match answer {
                Ok(record) => println!("{record}"),
                Err(err) => eprintln!("mcp-tasks-admin: {err}"),
            }
        }
    }
    Ok(all_done)
}

/// An error's kind, for scripts.
fn kind(err: &AdminError) -> &'static str {
    match err {
        AdminError::NotFound { .. } => "not_found",
        AdminError::AlreadyFinished { .. } => "already_finished",
        AdminError::NotHandedOver { .. } => "not_handed_over",
        AdminError::InvalidCursor { .. } => "invalid_cursor",
        AdminError::NoInstances => "no_instances",
        _ => "store",
    }
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

fn print_page(page: &AdminPage, now: Timestamp) {
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
    for row in &page.rows {
        let task = &row.task;
        let lease = match row.leased_until {
            None => "-".to_owned(),
            Some(at) if at > now => format!("{} left", human(at.saturating_since(now))),
            Some(at) => format!("lapsed {} ago", human(now.saturating_since(at))),
        };
        lines.push([
            row.key.id().to_string(),
            owner_name(row.key.owner()),
            task.status().to_string(),
            task.attempts()
                .map_or("-".to_owned(), |a| format!("{}/{}", a.attempt(), a.max())),
            row.lease_holder.clone().unwrap_or_else(|| "-".to_owned()),
            lease,
            human(now.saturating_since(task.created_at())),
            format!(
                "{} ago",
                human(now.saturating_since(task.last_updated_at()))
            ),
        ]);
    }
    print_table(&lines);
    match &page.next_cursor {
        Some(cursor) => println!(
            "{} tasks ({} read); more: --cursor {cursor}",
            page.rows.len(),
            page.examined
        ),
        None => println!(
            "{} tasks ({} read); end of the store",
            page.rows.len(),
            page.examined
        ),
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

fn print_details(details: &TaskDetails) {
    let row = &details.row;
    let task = &row.task;
    let mut lines: Vec<[String; 2]> = vec![
        ["task".into(), row.key.id().to_string()],
        ["owner".into(), owner_name(row.key.owner())],
        ["status".into(), task.status().to_string()],
        [
            "message".into(),
            task.status_message().unwrap_or("-").to_owned(),
        ],
        ["created".into(), task.created_at().to_string()],
        ["updated".into(), task.last_updated_at().to_string()],
        [
            "attempts".into(),
            task.attempts().map_or("- (runs once)".to_owned(), |a| {
                format!("{} of {}", a.attempt(), a.max())
            }),
        ],
        [
            "lease".into(),
            match (&row.lease_holder, row.leased_until) {
                (Some(holder), Some(until)) => format!("{holder} until {until}"),
                (None, Some(until)) => format!("until {until}"),
                _ => "-".to_owned(),
            },
        ],
        [
            "job".into(),
            match &details.job {
                None => "-".to_owned(),
                Some(job) => format!("tool {}", job.tool.as_deref().unwrap_or("(none named)")),
            },
        ],
        [
            "checkpoint".into(),
            details
                .checkpoint_bytes
                .map_or("-".to_owned(), |n| format!("{n} bytes")),
        ],
        [
            "trace".into(),
            details.trace_id.clone().unwrap_or_else(|| "-".to_owned()),
        ],
    ];
    match task.outcome() {
        Some(mcp_tasks::Outcome::Error(error)) => {
            lines.push([
                "outcome".into(),
                format!("error {}: {}", error.code, error.message),
            ]);
        }
        Some(mcp_tasks::Outcome::Result(_)) => lines.push(["outcome".into(), "a result".into()]),
        _ => {}
    }
    print_table(&lines);
}

fn print_instances(instances: &[InstanceInfo]) {
    let mut lines = vec![[
        "INSTANCE".to_owned(),
        "TASKS".to_owned(),
        "LIVE LEASES".to_owned(),
        "LATEST DEADLINE".to_owned(),
        "ALIVE".to_owned(),
        "DRAINING".to_owned(),
    ]];
    for instance in instances {
        lines.push([
            instance.name.clone(),
            instance.tasks.to_string(),
            instance.live_leases.to_string(),
            instance
                .latest_deadline
                .map_or("-".to_owned(), |at| at.to_string()),
            if instance.alive { "yes" } else { "no" }.to_owned(),
            if instance.draining { "yes" } else { "no" }.to_owned(),
        ]);
    }
    print_table(&lines);
}
