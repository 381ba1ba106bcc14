//! [`Copies`]: the latest version of the unfinished tasks a shared store's instance knows
//! (as it wrote them, or as another instance's change event told it), so that a change is
//! decided on the copy and written in one round trip while the version still holds.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

use crate::any::AnyTask;
use crate::error::Error;
use crate::store::record::decode;

/// The most copies an instance keeps by default.
pub const DEFAULT_COPIES: usize = 16_384;

/// A task's stored parts as a change event carries them ([`decode`] turns them into the
/// task when a change needs it).
#[derive(Debug, Clone)]
pub struct StoredParts {
    /// The status, as stored.
    pub status: String,
    /// `createdAt`, in milliseconds since the Unix epoch.
    pub created: i64,
    /// `lastUpdatedAt`, in milliseconds since the Unix epoch.
    pub updated: i64,
    /// The record ([`encode`](crate::backend::encode)).
    pub body: String,
}

impl StoredParts {
    /// The task `id` these parts store.
    ///
    /// # Errors
    /// [`Error::Store`] if they do not read as a task.
    pub fn decode(&self, id: &str) -> Result<AnyTask, Error> {
        decode(id, &self.status, self.created, self.updated, &self.body)
    }
}

enum Kept {
    Task(AnyTask),
    Parts(StoredParts),
}

/// Copies of unfinished tasks at their latest known version, by task key, bounded (past
/// the bound one is forgotten: it is read again when changed). A finished task is never
/// kept: nothing changes it any more but its removal.
pub struct Copies<K> {
    kept: Mutex<HashMap<K, (u64, Kept)>>,
    bound: usize,
}

impl<K: Eq + Hash + Clone> Default for Copies<K> {
    fn default() -> Self {
        Self::with_bound(DEFAULT_COPIES)
    }
}

impl<K: Eq + Hash + Clone> std::fmt::Debug for Copies<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Copies")
            .field("kept", &self.lock().len())
            .field("bound", &self.bound)
            .finish()
    }
}

impl<K: Eq + Hash + Clone> Copies<K> {
    /// Copies of at most `bound` tasks.
    #[must_use]
    pub fn with_bound(bound: usize) -> Self {
        Copies {
            kept: Mutex::new(HashMap::new()),
            bound: bound.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, (u64, Kept)>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers `task` as this instance wrote it (at `version`), if it is unfinished.
    pub fn remember(&self, key: K, version: u64, task: &AnyTask) {
        if task.is_terminal() {
            self.forget(&key);
            return;
        }
        self.keep(key, version, Kept::Task(task.clone()), false);
    }

    /// Remembers the task under `key` as a change event carried it (at `version`), if it
    /// is unfinished; decoded only when a change needs it.
    pub fn learn(&self, key: K, version: u64, parts: StoredParts) {
        if matches!(parts.status.as_str(), "completed" | "failed" | "cancelled") {
            self.forget(&key);
            return;
        }
        self.keep(key, version, Kept::Parts(parts), true);
    }

    /// Forgets the copy under `key` unless it is at `version` or later (an event without
    /// the task's parts said that it moved on).
    pub fn outdate(&self, key: &K, version: u64) {
        let mut kept = self.lock();
        if kept.get(key).is_some_and(|(at, _)| *at < version) {
            kept.remove(key);
        }
    }

    /// Keeps `copy` unless a later version is kept already (the event of another
    /// instance's later write may come before this instance remembers its own), or, for
    /// an event (`heard`), the same version (an instance hears the event of its own write
    /// after it remembered the write: the decoded copy stays).
    fn keep(&self, key: K, version: u64, copy: Kept, heard: bool) {
        let mut kept = self.lock();
        if let Some((at, _)) = kept.get(&key) {
            if *at > version || (heard && *at == version) {
                return;
            }
        } else if kept.len() >= self.bound
            && let Some(victim) = kept.keys().next().cloned()
        {
            kept.remove(&victim);
        }
        kept.insert(key, (version, copy));
    }

    /// Forgets the copy under `key` (the task finished or was removed).
    pub fn forget(&self, key: &K) {
        self.lock().remove(key);
    }

    /// Takes the copy under `key` of the task `id`, if one is kept (and reads as a task).
    pub fn recall(&self, key: &K, id: &str) -> Option<(u64, AnyTask)> {
        let (version, copy) = self.lock().remove(key)?;
        match copy {
            Kept::Task(task) => Some((version, task)),
            Kept::Parts(parts) => parts.decode(id).ok().map(|task| (version, task)),
        }
    }
}
