use mcp_tasks::{Completed, NonTerminal};

impl NonTerminal for Completed {}

fn main() {}
