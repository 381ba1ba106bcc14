//! Opaque, owner-bound, keyset `tasks/list` cursors.
//!
//! A cursor names the creation sequence number of the last task of a page, so the next
//! page starts right after it whatever was deleted or expired in between: no task is
//! skipped or repeated. It carries a 64-bit tag, a keyed SipHash of the owner and the
//! sequence number under a secret drawn when the registry is built (or shared by the
//! instances of a shared store), so a cursor made up by a client, changed by one, or
//! issued to another owner is refused.

use std::hash::{Hash, Hasher};

use crate::error::Error;
use crate::store::Owner;

/// Length of an encoded cursor: 16 hex digits of sequence number, 16 of tag.
const LEN: usize = 32;

/// Issues and checks cursors for one registry.
#[derive(Debug)]
pub(crate) struct CursorKey {
    secret: u128,
}

impl CursorKey {
    /// A key with a fresh random secret.
    pub(crate) fn new() -> Self {
        Self::from_secret(uuid::Uuid::new_v4().as_u128())
    }

    /// The key of a secret shared by several instances (a shared store's).
    pub(crate) const fn from_secret(secret: u128) -> Self {
        Self { secret }
    }

    /// SipHash-2-4 keyed by the secret: the same answer in every process of one build.
    fn tag(&self, owner: &Owner, seq: u64) -> u64 {
        // `SipHasher` is deprecated only in favour of `DefaultHasher`, whose algorithm and
        // keys are unspecified; a tag checked by other processes needs a fixed keyed hash.
        #[allow(deprecated)]
        let mut hasher =
            std::hash::SipHasher::new_with_keys((self.secret >> 64) as u64, self.secret as u64);
        owner.key().hash(&mut hasher);
        seq.hash(&mut hasher);
        hasher.finish()
    }

    /// The cursor that continues after the task with sequence number `seq`.
    pub(crate) fn encode(&self, owner: &Owner, seq: u64) -> String {
        format!("{seq:016x}{:016x}", self.tag(owner, seq))
    }

    /// The sequence number a cursor continues after.
    pub(crate) fn decode(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
        if cursor.is_empty() {
            return Err(Error::InvalidCursor {
                reason: "the cursor is empty",
            });
        }
        let malformed = Error::InvalidCursor {
            reason: "it is not a cursor this server issued",
        };
        if cursor.len() != LEN || !cursor.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed);
        }
        let (seq, tag) = cursor.split_at(LEN / 2);
        let (Ok(seq), Ok(tag)) = (u64::from_str_radix(seq, 16), u64::from_str_radix(tag, 16))
        else {
            return Err(malformed);
        };
        // Only the lowercase form this registry writes is accepted, tag included.
        if cursor.bytes().any(|b| b.is_ascii_uppercase()) || self.tag(owner, seq) != tag {
            // Same message as a malformed cursor: a cursor of another owner is no oracle.
            return Err(Error::InvalidCursor {
                reason: "it is not a cursor this server issued",
            });
        }
        Ok(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_for_their_owner_only() {
        let key = CursorKey::new();
        let alice = Owner::new("alice");
        let cursor = key.encode(&alice, 42);
        assert_eq!(key.decode(&alice, &cursor).unwrap(), 42);
        assert!(key.decode(&Owner::new("bob"), &cursor).is_err());
        assert!(key.decode(&Owner::anonymous(), &cursor).is_err());
        assert!(
            CursorKey::new().decode(&alice, &cursor).is_err(),
            "another registry"
        );
    }

    #[test]
    fn every_bit_of_the_secret_keys_the_tag() {
        // Two registries whose secrets differ in one bit, high half or low half, must
        // not accept each other's cursors: the tag is keyed by all 128 bits.
        let alice = Owner::new("alice");
        let secret = uuid::Uuid::new_v4().as_u128();
        let key = CursorKey::from_secret(secret);
        for bit in [0, 1, 63, 64, 65, 127] {
            let other = CursorKey::from_secret(secret ^ (1 << bit));
            for seq in [0, 1, 42, u64::MAX] {
                let cursor = key.encode(&alice, seq);
                assert_ne!(cursor, other.encode(&alice, seq), "bit {bit}, seq {seq}");
                assert!(
                    other.decode(&alice, &cursor).is_err(),
                    "bit {bit}, seq {seq}"
                );
            }
        }
        let shared = CursorKey::from_secret(secret);
        assert_eq!(shared.decode(&alice, &key.encode(&alice, 9)).unwrap(), 9);
    }

    #[test]
    fn forged_and_malformed_cursors_are_refused() {
        let key = CursorKey::new();
        let alice = Owner::new("alice");
        let cursor = key.encode(&alice, 7);
        let mut forged = cursor.clone().into_bytes();
        forged[15] = if forged[15] == b'0' { b'1' } else { b'0' };
        let forged = String::from_utf8(forged).unwrap();
        for bad in [
            "",
            "abc",
            "zz",
            &forged,
            &cursor.to_uppercase(),
            &"0".repeat(4096),
        ] {
            if bad == cursor {
                continue;
            }
            let err = key.decode(&alice, bad).unwrap_err();
            assert_eq!(err.code(), -32602, "{bad}");
        }
    }
}
