// A tool's arguments describe themselves: they derive `JsonSchema` as well as `Deserialize`.
use mcp_tasks_server::{Context, Exit, Tool};

#[derive(serde::Deserialize)]
struct Args {
    ms: u64,
}

async fn handler(_ctx: Context, args: Args) -> Result<String, Exit> {
    Ok(format!("{}", args.ms))
}

fn main() {
    let _ = Tool::new("sleep").run(handler);
}
