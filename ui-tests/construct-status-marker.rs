use mcp_tasks::Completed;

fn main() {
    let _marker = Completed;
}
