//! `MCP_TASKS_TRACE_DIR`: every message read and written, appended to
//! `<dir>/<session>.jsonl` (2026-07-28 requests, which have no session:
//! `ext-<principal>.jsonl`), one JSON line each, `{"dir": "in" | "out", "msg": ...}`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The message trace, off unless a directory is configured.
pub struct Trace {
    dir: Option<PathBuf>,
    files: Mutex<HashMap<String, Arc<Mutex<File>>>>,
}

impl Trace {
    /// Whether messages are traced.
    pub fn is_on(&self) -> bool {
        self.dir.is_some()
    }

    /// No trace.
    pub fn off() -> Self {
        Self {
            dir: None,
            files: Mutex::new(HashMap::new()),
        }
    }

    /// A trace into `dir` (created if missing).
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn into(dir: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        Ok(Self {
            dir: Some(dir),
            files: Mutex::new(HashMap::new()),
        })
    }

    /// The trace name of a 2026-07-28 request of `principal` (safe as a file name).
    pub fn stateless_name(principal: &str) -> String {
        let name: String = principal
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("ext-{name}")
    }

    /// Appends one message, given as the JSON text it is (kept as written), read (`in`) or
    /// written (`out`) on `name`'s trace.
    pub fn write(&self, name: &str, dir: &str, message: &str) {
        let Some(root) = &self.dir else { return };
        let file = {
            let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(file) = files.get(name) {
                Arc::clone(file)
            } else {
                let path = root.join(format!("{name}.jsonl"));
                match OpenOptions::new().create(true).append(true).open(&path) {
                    Ok(file) => {
                        let file = Arc::new(Mutex::new(file));
                        files.insert(name.to_owned(), Arc::clone(&file));
                        file
                    }
                    Err(err) => {
                        log::warn!("cannot open the trace {path:?}: {err}");
                        return;
                    }
                }
            }
        };
        let line = if message.contains(['\n', '\r']) {
            // Not one line: traced as parsed JSON (or null).
            let parsed: serde_json::Value = serde_json::from_str(message).unwrap_or_default();
            format!("{{\"dir\":\"{dir}\",\"msg\":{parsed}}}")
        } else {
            format!("{{\"dir\":\"{dir}\",\"msg\":{}}}", message.trim())
        };
        let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = writeln!(file, "{line}") {
            log::warn!("cannot write the trace: {err}");
        }
    }
}
