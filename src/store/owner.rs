//! [`Owner`]: whose task it is.

use std::fmt;
use std::sync::Arc;

/// The requestor a task is bound to: an authorization context or session key that the
/// caller supplies, or none ([`Owner::anonymous`]).
///
/// A task is visible only to the exact same owner. Another owner, and an anonymous caller,
/// get the error of an unknown id, so nobody can tell that someone else's task exists.
/// Anonymous tasks are visible to anonymous callers only: their protection is the id's
/// entropy, as the spec allows when requestors cannot be identified.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(Option<Arc<str>>);

impl Owner {
    /// The owner with this opaque key (for example a hash of the bearer token's subject, or
    /// a session id).
    #[must_use]
    pub fn new(key: impl AsRef<str>) -> Self {
        Owner(Some(Arc::from(key.as_ref())))
    }

    /// The owner with this opaque key, shared: no copy of the key is made (a transport that
    /// keeps its principals' names gives each request's owner without allocating).
    #[must_use]
    pub fn shared(key: Arc<str>) -> Self {
        Owner(Some(key))
    }

    /// No identifiable requestor.
    #[must_use]
    pub const fn anonymous() -> Self {
        Owner(None)
    }

    /// Whether this is the anonymous owner.
    #[must_use]
    pub fn is_anonymous(&self) -> bool {
        self.0.is_none()
    }

    /// The key, if any.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// A stable hash of the key (FNV-1a), to pick the registry shards (the owner's lanes).
    /// An owner who picks a key to share them with another only shares locks: isolation is
    /// unaffected.
    pub(crate) fn shard_hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &byte in self.key().unwrap_or("").as_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        // Anonymous and the empty key differ as owners; their shard may be the same.
        hash
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(key) => write!(f, "Owner({key:?})"),
            None => f.write_str("Owner(anonymous)"),
        }
    }
}

impl From<&str> for Owner {
    fn from(key: &str) -> Self {
        Owner::new(key)
    }
}

impl From<String> for Owner {
    fn from(key: String) -> Self {
        Owner(Some(Arc::from(key)))
    }
}
