// A handler answers a tool result, not any value.
use mcp_tasks_server::{Context, Exit, NoArguments, Tool};

async fn handler(_ctx: Context, _: NoArguments) -> Result<u32, Exit> {
    Ok(7)
}

fn main() {
    let _ = Tool::new("seven").run(handler);
}
