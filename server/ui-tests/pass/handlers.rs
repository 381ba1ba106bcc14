// Every kind of handler a tool takes, and a handler that settles its own task.
use mcp_tasks_server::mcp_tasks::JsonObject;
use mcp_tasks_server::{
    Context, Exit, NoArguments, Settled, Structured, TaskSupport, Tool, ToolResult,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    ms: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Out {
    ms: u64,
}

async fn text(_ctx: Context, Args { ms }: Args) -> Result<String, Exit> {
    Ok(format!("{ms}"))
}

async fn structured(_ctx: Context, Args { ms }: Args) -> Result<Structured<Out>, Exit> {
    Ok(Structured(Out { ms }))
}

fn blocking(_ctx: Context, _: NoArguments) -> Result<ToolResult, Exit> {
    Ok(ToolResult::error("blocked"))
}

async fn settled(ctx: Context, _: NoArguments) -> Result<Settled, Exit> {
    let handle = ctx.take_handle()?;
    let waiting = handle.require_input(Default::default())?;
    let done = waiting.resume()?.complete(JsonObject::new())?;
    Ok(Settled::new(done))
}

fn main() {
    let tools = [
        Tool::new("text").run(text),
        Tool::new("structured").run(structured),
        Tool::new("blocking").run_blocking(blocking),
        Tool::new("settled")
            .task_support(TaskSupport::Required)
            .run(settled),
        Tool::new("closure").run(|_ctx: Context, _: NoArguments| async { Ok::<_, Exit>("ok") }),
    ];
    assert!(tools[1].output_schema().is_some());
}
