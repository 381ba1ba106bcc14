//! Owners as stored: a tag made of the owner's key (`a` for anonymous, else `o` and the
//! key in hex), so that any key, whatever its characters, is a plain column value.

pub(crate) use mcp_tasks::backend::{owner_of_tag, owner_tag};
