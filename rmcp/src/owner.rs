//! Who a request comes from: the owner its tasks are bound to.

use mcp_tasks_server::mcp_tasks::Owner;
use rmcp::service::{RequestContext, RoleServer};

/// The authenticated principal of a request, as an authentication layer in front of
/// rmcp's Streamable HTTP service records it: insert it into the HTTP request's
/// extensions (`request.extensions_mut().insert(Principal::new("alice"))`), and rmcp
/// hands it on with the request's `http::request::Parts`. A custom transport may put it
/// straight into the `RequestContext`'s extensions instead.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// The principal named `name` (a user id, a token's subject).
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The principal's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// The owner of the tasks a request creates and may see, most specific first:
/// 1. its [`Principal`] (`principal:<name>`);
/// 2. else its Streamable HTTP session (`session:<Mcp-Session-Id>`);
/// 3. else `connection`, the owner of the connection this handler serves (a stdio
///    server's one client).
///
/// Over Streamable HTTP without an authentication layer, 2026-07-28 requests carry no
/// session, so they all fall to the connection owner of the handler the service factory
/// returns: with a factory that clones one handler, every such client shares one owner
/// (an anonymous, single-owner server). Put a [`Principal`] on each request to keep
/// clients apart.
pub(crate) fn resolve(context: &RequestContext<RoleServer>, connection: &Owner) -> Owner {
    let parts = context.extensions.get::<http::request::Parts>();
    let principal = context
        .extensions
        .get::<Principal>()
        .or_else(|| parts.and_then(|parts| parts.extensions.get::<Principal>()));
    if let Some(principal) = principal {
        return Owner::new(format!("principal:{}", principal.name()));
    }
    let session = parts
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok());
    if let Some(session) = session {
        return Owner::new(format!("session:{session}"));
    }
    connection.clone()
}
