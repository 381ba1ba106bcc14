use mcp_tasks_server::{Context, Elicited, Exit, Server, Settings, TaskSupport, Tool, http::Http};
use serde::Deserialize;
use std::time::Duration;

#[derive(Deserialize, schemars::JsonSchema)]
struct Deploy {
    service: String,
}
#[derive(Deserialize, schemars::JsonSchema)]
struct Approval {
    approve: bool,
}

/// Asks for approval, then deploys in five steps; another instance resumes at the last one.
async fn deploy(ctx: Context, Deploy { service }: Deploy) -> Result<String, Exit> {
    let from = match ctx.checkpoint::<u32>()? {
        Some(step) => step,
        None => match ctx.elicit("approval", format!("Deploy {service}?")).await? {
            Elicited::Accept(Approval { approve: true }) => 0,
            _ => return Ok(format!("{service} was not deployed")),
        },
    };
    for step in from..5 {
        ctx.save_checkpoint(&step)?;
        ctx.sleep(Duration::from_millis(400)).await?; // a cancel ends the task here
    }
    Ok(format!("{service} deployed"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = Tool::new("deploy").task_support(TaskSupport::Required);
    let server = Server::builder().tool(tool.redelivery(3).run(deploy));
    let server = server.settings(Settings::from_env()?).build()?; // MCP_TASKS_STORE=redis://…
    let Some(addr) = std::env::args().nth(1) else {
        return Ok(server.serve_stdio()?); // `first_server 127.0.0.1:8808` serves HTTP
    };
    let http = Http::from_env(&addr)?; // MCP_TASKS_TOKENS='alice=token-a': who may call
    let runtime = tokio::runtime::Runtime::new()?;
    Ok(runtime.block_on(async { server.into_http(http).serve(&addr).await })?)
}
