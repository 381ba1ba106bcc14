// The handle a handler takes keeps the typestate: a working task cannot be resumed.
use mcp_tasks_server::{Context, Exit, NoArguments, Settled};

async fn handler(ctx: Context, _: NoArguments) -> Result<Settled, Exit> {
    let handle = ctx.take_handle()?;
    let resumed = handle.resume()?;
    Ok(Settled::new(resumed.cancel()?))
}

fn main() {
    let _ = handler;
}
