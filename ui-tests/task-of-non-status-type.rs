use mcp_tasks::Task;

fn main() {
    let _tasks: Vec<Task<String>> = Vec::new();
}
