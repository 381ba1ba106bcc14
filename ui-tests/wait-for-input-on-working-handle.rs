use mcp_tasks::{Owner, TaskRegistry, TaskRequest, TaskStore};

fn main() {
    let registry = TaskRegistry::new();
    let (handle, _) = registry
        .create(&Owner::new("alice"), TaskRequest::new(1, "tools/call"))
        .unwrap();
    let _ = handle.wait_for_input(None);
}
