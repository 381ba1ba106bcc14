// A handler that drives its task itself answers `Settled` only once the task is finished.
use mcp_tasks_server::{Context, Exit, NoArguments, Settled};

async fn handler(ctx: Context, _: NoArguments) -> Result<Settled, Exit> {
    let handle = ctx.take_handle()?;
    let task = handle.snapshot().map_err(Exit::from)?;
    let working = mcp_tasks_server::mcp_tasks::Task::<mcp_tasks_server::mcp_tasks::Working>::try_from(task)
        .map_err(|_| Exit::internal("not working"))?;
    Ok(Settled::new(working))
}

fn main() {
    let _ = handler;
}
