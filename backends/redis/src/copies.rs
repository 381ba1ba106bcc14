//! The latest version of the unfinished tasks this instance knows (as it wrote them, or as
//! another instance's event told it), so that a change is decided and written in one
//! round trip.

use std::sync::PoisonError;

use mcp_tasks::AnyTask;

use crate::Inner;
use crate::writes::decode;

/// The most unfinished tasks an instance remembers at their latest version (as it wrote
/// them, or as another instance's event told it).
pub(crate) const RECENT: usize = 16_384;

/// A kept copy of an unfinished task.
pub(crate) enum Kept {
    /// As this instance wrote it.
    Task(AnyTask),
    /// As an event published it, not yet decoded.
    Raw(Raw),
}

/// The stored parts of a task, as an event carries them.
pub(crate) struct Raw {
    pub(crate) status: String,
    pub(crate) created: String,
    pub(crate) updated: String,
    pub(crate) body: String,
}

impl Inner {
    /// Remembers `task` as this instance wrote it (at `version`), if it is unfinished.
    pub(crate) fn remember(&self, key: String, version: u64, task: &AnyTask) {
        if task.is_terminal() {
            self.forget(&key);
            return;
        }
        self.keep_copy(key, version, Kept::Task(task.clone()), false);
    }

    /// Remembers the task under `key` as an event published it (at `version`), if it is
    /// unfinished; decoded only when a change needs it.
    pub(crate) fn learn(&self, key: String, version: u64, status: &str, raw: Raw) {
        if matches!(status, "completed" | "failed" | "cancelled") {
            self.forget(&key);
            return;
        }
        self.keep_copy(key, version, Kept::Raw(raw), true);
    }

    /// Keeps `copy` of the task under `key` unless a later version is kept already (the
    /// event of another instance's later write may come before this instance remembers
    /// its own), or, for an event (`heard`), the same version (an instance sees the event
    /// of its own write after it remembered the write: the decoded copy stays).
    pub(crate) fn keep_copy(&self, key: String, version: u64, copy: Kept, heard: bool) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((kept, _)) = recent.get(&key) {
            if *kept > version || (heard && *kept == version) {
                return;
            }
        } else if recent.len() >= RECENT {
            // Bounded: forget one (it is read again when changed, if it still runs).
            if let Some(victim) = recent.keys().next().cloned() {
                recent.remove(&victim);
            }
        }
        recent.insert(key, (version, copy));
    }

    /// Forgets the copy of the task under `key` (it finished or was removed).
    pub(crate) fn forget(&self, key: &str) {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// Takes the copy of the task `id` under `key`, if one is kept (and reads as a task).
    pub(crate) fn recall(&self, key: &str, id: &str) -> Option<(u64, AnyTask)> {
        let (version, copy) = self
            .recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)?;
        match copy {
            Kept::Task(task) => Some((version, task)),
            Kept::Raw(raw) => {
                let task = decode(id, &raw.status, &raw.created, &raw.updated, &raw.body).ok()?;
                Some((version, task))
            }
        }
    }
}
