// A task waiting for input is not finished: it cannot be answered as settled.
use mcp_tasks_server::mcp_tasks::{InputRequests, InputRequired, Task};
use mcp_tasks_server::{Context, Exit, NoArguments, Settled};

async fn handler(ctx: Context, _: NoArguments) -> Result<Settled, Exit> {
    let waiting = ctx.take_handle()?.require_input(InputRequests::new())?;
    let task: Task<InputRequired> = waiting.snapshot()?.try_into().map_err(|_| Exit::internal("moved"))?;
    Ok(Settled::new(task))
}

fn main() {
    let _ = handler;
}
