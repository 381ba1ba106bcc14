//! Per-principal request slots: at most `MCP_TASKS_PRINCIPAL_REQUESTS` requests (open SSE
//! streams included) of one principal at once, so one principal cannot hold the server.
//!
//! Every request takes a slot and gives it back, so the counts are spread over
//! [`SHARDS`] maps by principal, each behind its own lock on its own cache line: requests
//! of different principals on different threads seldom meet on one.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many maps the counts are spread over.
const SHARDS: usize = 16;

/// One map of counts, alone on its cache line.
#[repr(align(64))]
#[derive(Default)]
struct Shard(Mutex<HashMap<Arc<str>, usize>>);

impl Shard {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The counts, shared by the slots given out.
struct Counts {
    shards: [Shard; SHARDS],
    hasher: RandomState,
}

impl Counts {
    fn shard(&self, principal: &str) -> &Shard {
        // The shard count is a power of two: the low bits of the hash pick it.
        let hash = self.hasher.hash_one(principal);
        &self.shards[(hash as usize) & (SHARDS - 1)]
    }
}

/// The slots in use per principal.
pub struct Slots {
    limit: usize,
    counts: Arc<Counts>,
}

/// One principal's slot, given back when dropped.
pub struct Slot {
    principal: Arc<str>,
    counts: Arc<Counts>,
}

impl Slots {
    /// `limit` slots per principal.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            counts: Arc::new(Counts {
                shards: Default::default(),
                hasher: RandomState::new(),
            }),
        }
    }

    /// A slot for `principal`, or `None` when all of its slots are taken.
    pub fn take(&self, principal: &Arc<str>) -> Option<Slot> {
        let mut in_use = self.counts.shard(principal).lock();
        let count = in_use.entry(Arc::clone(principal)).or_default();
        if *count < self.limit {
            *count += 1;
            return Some(Slot {
                principal: Arc::clone(principal),
                counts: Arc::clone(&self.counts),
            });
        }
        // A limit of zero refuses every request: keep no count for it.
        if *count == 0 {
            in_use.remove(&**principal);
        }
        None
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_use = self.counts.shard(&self.principal).lock();
        if let Some(count) = in_use.get_mut(&*self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                in_use.remove(&*self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(slots: &Slots) -> usize {
        slots
            .counts
            .shards
            .iter()
            .map(|shard| shard.lock().values().sum::<usize>())
            .sum()
    }

    #[test]
    fn each_principal_has_its_own_slots_and_gets_them_back() {
        let slots = Slots::new(2);
        let principals: Vec<Arc<str>> = (0..40).map(|n| Arc::from(format!("p{n}"))).collect();
        let mut taken = Vec::new();
        for principal in &principals {
            taken.push(slots.take(principal).expect("a first slot"));
            taken.push(slots.take(principal).expect("a second slot"));
            assert!(slots.take(principal).is_none(), "{principal}: a third");
        }
        assert_eq!(held(&slots), 80);
        // The same name from another allocation is the same principal.
        assert!(slots.take(&Arc::from("p7")).is_none());
        taken.truncate(79);
        assert!(
            slots.take(&principals[39]).is_some(),
            "a slot given back is free"
        );
        drop(taken);
        assert_eq!(held(&slots), 0);
        assert!(
            slots
                .counts
                .shards
                .iter()
                .all(|shard| shard.lock().is_empty()),
            "a principal with no request open is forgotten"
        );
        let none = Slots::new(0);
        assert!(none.take(&principals[0]).is_none());
        assert!(
            none.counts
                .shards
                .iter()
                .all(|shard| shard.lock().is_empty())
        );
    }
}
