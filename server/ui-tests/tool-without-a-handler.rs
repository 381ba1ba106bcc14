// A tool is served once it has its handler: a builder is not a tool.
use mcp_tasks_server::{Server, Tool};

fn main() {
    let _ = Server::builder().tool(Tool::new("unfinished").description("no handler yet"));
}
