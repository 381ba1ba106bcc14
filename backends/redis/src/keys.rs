//! The key layout: every key of an owner carries the owner's hash tag, so they share one
//! cluster slot and no owner can name another's keys; only ids this store could have
//! issued name a key.

use mcp_tasks::backend;
use mcp_tasks::{Error, Owner};

use crate::Inner;

pub(crate) fn not_found(task_id: &str) -> Error {
    Error::TaskNotFound {
        task_id: task_id.to_owned(),
    }
}

/// The hash tag of an owner: the core's [`owner_tag`](backend::owner_tag), made of
/// `[0-9a-fo]` only (no brace), so every key of an owner lands in one cluster slot.
pub(crate) use mcp_tasks::backend::{owner_of_tag, owner_tag};

/// The keys of one owner.
pub(crate) struct Keys {
    /// `{prefix}:{tag}:t:` (a task key is this and the id).
    pub(crate) tasks: String,
    pub(crate) index: String,
    pub(crate) counter: String,
    pub(crate) tag: String,
}

impl Keys {
    /// The keys of the owner with hash tag `tag`: all of them carry it, so they share
    /// one cluster slot.
    pub(crate) fn new(prefix: &str, tag: String) -> Self {
        let base = format!("{prefix}:{{{tag}}}");
        Keys {
            tasks: format!("{base}:t:"),
            index: format!("{base}:i"),
            counter: format!("{base}:n"),
            tag,
        }
    }

    /// The key of the task `id`.
    pub(crate) fn task(&self, id: &str) -> String {
        format!("{}{id}", self.tasks)
    }

    /// The key of the tombstone a removal of the task `id` leaves for a replay.
    pub(crate) fn tombstone(&self, id: &str) -> String {
        format!("{}{id}:removed", self.tasks)
    }
}

/// Only ids this store could have issued name keys: anything else is unknown.
pub(crate) fn canonical(task_id: &str) -> Result<&str, Error> {
    if backend::is_task_id(task_id) {
        Ok(task_id)
    } else {
        Err(not_found(task_id))
    }
}

impl Inner {
    pub(crate) fn keys(&self, owner: &Owner) -> Keys {
        Keys::new(&self.prefix, owner_tag(owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_tags_round_trip_and_keep_owners_apart() {
        for owner in [
            Owner::anonymous(),
            Owner::new(""),
            Owner::new("alice"),
            Owner::new("}{:*\n"),
            Owner::new("ünï"),
        ] {
            let tag = owner_tag(&owner);
            assert!(!tag.contains(['{', '}']), "{tag}");
            assert_eq!(owner_of_tag(&tag), Some(owner));
        }
        assert_ne!(owner_tag(&Owner::anonymous()), owner_tag(&Owner::new("")));
        assert_ne!(owner_tag(&Owner::new("a")), owner_tag(&Owner::new("b")));
        assert_eq!(owner_of_tag("ozz"), None);
    }
}
