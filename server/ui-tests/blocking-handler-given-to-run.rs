// `run` takes an async handler; a blocking one goes to `run_blocking`.
use mcp_tasks_server::{Context, Exit, NoArguments, Tool};

fn handler(_ctx: Context, _: NoArguments) -> Result<String, Exit> {
    Ok("done".into())
}

fn main() {
    let _ = Tool::new("blocking").run(handler);
}
