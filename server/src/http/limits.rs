//! Per-principal request slots: at most `MCP_TASKS_PRINCIPAL_REQUESTS` requests (open SSE
//! streams included) of one principal at once, so one principal cannot hold the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The slots in use per principal.
pub struct Slots {
    limit: usize,
    in_use: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

/// One principal's slot, given back when dropped.
pub struct Slot {
    principal: Arc<str>,
    in_use: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

impl Slots {
    /// `limit` slots per principal.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            in_use: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// A slot for `principal`, or `None` when all of its slots are taken.
    pub fn take(&self, principal: &Arc<str>) -> Option<Slot> {
        let mut in_use = self.in_use.lock().unwrap_or_else(PoisonError::into_inner);
        let count = in_use.entry(Arc::clone(principal)).or_default();
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(Slot {
            principal: Arc::clone(principal),
            in_use: Arc::clone(&self.in_use),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_use = self.in_use.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = in_use.get_mut(&self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                in_use.remove(&self.principal);
            }
        }
    }
}
