//! No resources, said as the suite's 2026-07-28 scenarios read it: `resources/list` and
//! `resources/templates/list` answer empty lists (which a 2026-07-28 client may cache:
//! `caching`), and `resources/read` answers `-32002`, resource not found
//! (`sep-2164-resource-not-found`).

use mcp_tasks_server::mcp_tasks::JsonRpcError;
use mcp_tasks_server::{Exit, ServerBuilder};
use serde_json::json;

/// The JSON-RPC code of a `resources/read` for a resource the server does not have.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// Serves the empty resource lists and `resources/read`, and declares `resources`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .capability("resources", json!({}))
        .method("resources/list", |_ctx, _params| async {
            Ok(json!({"resources": []}))
        })
        .method("resources/templates/list", |_ctx, _params| async {
            Ok(json!({"resourceTemplates": []}))
        })
        .method("resources/read", |_ctx, _params| async {
            Err::<serde_json::Value, _>(Exit::error(JsonRpcError::new(
                RESOURCE_NOT_FOUND,
                "resource not found: this server has no resources",
            )))
        })
}
