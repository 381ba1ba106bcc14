//! The key layout: every key of an owner carries the owner's hash tag (the core's
//! [`owner_tag`](mcp_tasks::backend::owner_tag), made of `[0-9a-fo]` only: no brace), so
//! they share one cluster slot and no owner can name another's keys.

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

#[cfg(test)]
mod tests {
    use mcp_tasks::Owner;
    use mcp_tasks::backend::{owner_of_tag, owner_tag};

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
