//! Opaque, owner-bound, keyset `tasks/list` cursors.
//!
//! A cursor names the position (the creation sequence number) of the last task of a page,
//! so the next page starts right after it whatever was deleted or expired in between: no
//! task is skipped or repeated.
//!
//! The position is never shown in clear. In the in-process registry it comes from a
//! counter shared by every owner, so a clear position would let an owner see
//! its cursors jump whenever someone else creates a task. The 64-bit position is instead
//! encrypted with a pseudo-random permutation keyed by the store's secret and the owner: a
//! balanced Feistel network of [`ROUNDS`] rounds over two 32-bit halves, whose round
//! function is a keyed SipHash-2-4 of (owner, round, half). The same position therefore
//! reads as an unrelated number for every owner and from cursor to cursor, and decryption
//! (the rounds run backwards) recovers it exactly.
//!
//! The ciphertext then carries a 64-bit tag, a keyed SipHash of the owner and the
//! ciphertext under the same secret (drawn when the registry is built, or shared by the
//! instances of a shared store), so a cursor made up by a client, changed by one, or
//! issued to another owner is refused, with one message whatever the reason.

use std::hash::{Hash, Hasher};

use crate::error::Error;
use crate::store::Owner;

/// Length of an encoded cursor: 16 hex digits of encrypted position, 16 of tag.
const LEN: usize = 32;

/// Feistel rounds of the position cipher (four already make a strong pseudo-random
/// permutation when the round function is a pseudo-random function; eight leave margin).
const ROUNDS: u8 = 8;

/// First input of the tag hash, so that no tag input is ever a round-function input.
const TAG_DOMAIN: u8 = 0;

/// First input of the round-function hash.
const ROUND_DOMAIN: u8 = 1;

/// Issues and checks the opaque, owner-bound `tasks/list` cursors of one store.
///
/// What a cursor reveals: nothing. The position is encrypted per owner (a keyed
/// pseudo-random permutation of the 64-bit numbers: eight Feistel rounds whose round
/// function is a keyed SipHash-2-4), so the same position reads as an unrelated number for
/// every owner; a keyed 64-bit tag of the owner and the ciphertext binds the cursor to its
/// owner and store, so a cursor made up, changed, or issued to someone else is refused.
///
/// A cursor names a *position*: a number the store gives each task of an owner in
/// creation order (a sequence), so that a page continues right after the last task shown,
/// whatever was deleted or expired meanwhile. Instances sharing a store must share the
/// secret ([`CursorKey::from_secret`]).
#[derive(Debug)]
pub struct CursorKey {
    secret: u128,
}

impl CursorKey {
    /// A key with a fresh random secret (for a store in one process).
    #[must_use]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::from_secret(uuid::Uuid::new_v4().as_u128())
    }

    /// The key of a secret shared by several instances (a shared store's).
    #[must_use]
    pub const fn from_secret(secret: u128) -> Self {
        Self { secret }
    }

    /// The key of an operator's passphrase (a configured cursor secret):
    /// [`derive_secret`](Self::derive_secret) of it.
    #[must_use]
    pub fn from_passphrase(passphrase: &str) -> Self {
        Self::from_secret(Self::derive_secret(passphrase))
    }

    /// The 128-bit secret of a passphrase: SipHash-2-4 of the text under two fixed keys,
    /// the same in every process of every build (so instances configured alike accept
    /// each other's cursors).
    #[must_use]
    pub fn derive_secret(passphrase: &str) -> u128 {
        let half = |k0: u64, k1: u64| {
            #[allow(deprecated)]
            let mut hasher = std::hash::SipHasher::new_with_keys(k0, k1);
            passphrase.hash(&mut hasher);
            hasher.finish()
        };
        (u128::from(half(0x6d63_702d_7461_736b, 1)) << 64)
            | u128::from(half(0x6375_7273_6f72_7321, 2))
    }

    /// SipHash-2-4 keyed by the secret: the same answer in every process of one build.
    fn hasher(&self) -> impl Hasher {
        // `SipHasher` is deprecated only in favour of `DefaultHasher`, whose algorithm and
        // keys are unspecified; values checked by other processes need a fixed keyed hash.
        #[allow(deprecated)]
        std::hash::SipHasher::new_with_keys((self.secret >> 64) as u64, self.secret as u64)
    }

    /// The tag of an encrypted position issued to `owner`.
    fn tag(&self, owner: &Owner, sealed: u64) -> u64 {
        let mut hasher = self.hasher();
        TAG_DOMAIN.hash(&mut hasher);
        owner.key().hash(&mut hasher);
        sealed.hash(&mut hasher);
        hasher.finish()
    }

    /// The Feistel round function: 32 pseudo-random bits of (owner, round, half).
    fn round(&self, owner: &Owner, round: u8, half: u32) -> u32 {
        let mut hasher = self.hasher();
        ROUND_DOMAIN.hash(&mut hasher);
        owner.key().hash(&mut hasher);
        round.hash(&mut hasher);
        half.hash(&mut hasher);
        hasher.finish() as u32
    }

    /// Encrypts a position for `owner` (a permutation of the 64-bit numbers per owner).
    fn seal(&self, owner: &Owner, position: u64) -> u64 {
        let (mut left, mut right) = ((position >> 32) as u32, position as u32);
        for round in 0..ROUNDS {
            (left, right) = (right, left ^ self.round(owner, round, right));
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    /// Decrypts what [`seal`](Self::seal) encrypted for the same owner.
    fn open(&self, owner: &Owner, sealed: u64) -> u64 {
        let (mut left, mut right) = ((sealed >> 32) as u32, sealed as u32);
        for round in (0..ROUNDS).rev() {
            (left, right) = (right ^ self.round(owner, round, left), left);
        }
        (u64::from(left) << 32) | u64::from(right)
    }

    /// The cursor, for `owner`, that continues after the task at position `seq`.
    #[must_use]
    pub fn encode(&self, owner: &Owner, seq: u64) -> String {
        let sealed = self.seal(owner, seq);
        format!("{sealed:016x}{:016x}", self.tag(owner, sealed))
    }

    /// The position a cursor continues after.
    ///
    /// # Errors
    /// [`Error::InvalidCursor`] for an empty, malformed or forged cursor, or one issued to
    /// another owner or under another secret (one message whatever the reason).
    pub fn decode(&self, owner: &Owner, cursor: &str) -> Result<u64, Error> {
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
        let (sealed, tag) = cursor.split_at(LEN / 2);
        let (Ok(sealed), Ok(tag)) = (
            u64::from_str_radix(sealed, 16),
            u64::from_str_radix(tag, 16),
        ) else {
            return Err(malformed);
        };
        // Only the lowercase form this registry writes is accepted, tag included.
        if cursor.bytes().any(|b| b.is_ascii_uppercase()) || self.tag(owner, sealed) != tag {
            // Same message as a malformed cursor: a cursor of another owner is no oracle.
            return Err(Error::InvalidCursor {
                reason: "it is not a cursor this server issued",
            });
        }
        Ok(self.open(owner, sealed))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

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

    /// Positions spread over the whole 64-bit range: small ones (a fresh counter), the
    /// edges of the halves, and a deterministic xorshift walk.
    fn positions() -> Vec<u64> {
        let mut positions: Vec<u64> = (0..300).collect();
        for edge in [u64::from(u32::MAX), 1 << 32, u64::MAX - 1, u64::MAX] {
            positions.extend([edge - 1, edge, edge.wrapping_add(1)]);
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            positions.push(x);
        }
        positions
    }

    fn owners() -> Vec<Owner> {
        vec![
            Owner::anonymous(),
            Owner::new(""),
            Owner::new("alice"),
            Owner::new("bob"),
            Owner::new("tenant-b7"),
            Owner::new("ünïcødé owner"),
            Owner::new("x".repeat(1000)),
        ]
    }

    #[test]
    fn cursors_round_trip_for_many_positions_and_owners() {
        let key = CursorKey::new();
        for owner in owners() {
            for &position in &positions() {
                let cursor = key.encode(&owner, position);
                assert_eq!(cursor.len(), LEN);
                assert!(
                    cursor
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                    "{cursor}: lowercase hex"
                );
                assert_eq!(key.decode(&owner, &cursor).unwrap(), position, "{owner:?}");
            }
        }
    }

    #[test]
    fn the_position_cipher_is_a_permutation() {
        let key = CursorKey::new();
        let alice = Owner::new("alice");
        let mut all: Vec<u64> = (0..20_000).collect();
        all.extend(positions());
        let mut positions = all;
        positions.sort_unstable();
        positions.dedup();
        let mut sealed = HashSet::new();
        let mut cursors = HashSet::new();
        for &position in &positions {
            let value = key.seal(&alice, position);
            assert_eq!(key.open(&alice, value), position);
            assert!(sealed.insert(value), "two positions sealed to {value:016x}");
            assert!(cursors.insert(key.encode(&alice, position)));
        }
        // Opening is a permutation too: arbitrary values open to distinct positions that
        // seal back to them.
        let mut opened = HashSet::new();
        for &value in &positions {
            let position = key.open(&alice, value);
            assert_eq!(key.seal(&alice, position), value);
            assert!(opened.insert(position));
        }
    }

    /// Mean number of differing bits over pairs of 64-bit values.
    fn mean_distance(pairs: impl Iterator<Item = (u64, u64)>) -> f64 {
        let (mut bits, mut count) = (0u64, 0u64);
        for (a, b) in pairs {
            bits += u64::from((a ^ b).count_ones());
            count += 1;
        }
        bits as f64 / count as f64
    }

    #[test]
    fn a_cursor_shows_nothing_of_its_position_or_owner() {
        let key = CursorKey::new();
        let alice = Owner::new("alice");
        let bob = Owner::new("bob");
        for position in 0..1000u64 {
            let cursor = key.encode(&alice, position);
            assert!(
                !cursor.contains(&format!("{position:016x}")) && !cursor.contains("00000000"),
                "the position {position} shows in {cursor}"
            );
        }
        // Neighbouring positions, and one position for two owners, seal to values that
        // differ in about half their bits (32 expected; the mean of 1000 pairs lies within
        // 0.2 of it but for a chance far below one in a billion).
        let next = mean_distance((0..1000).map(|p| (key.seal(&alice, p), key.seal(&alice, p + 1))));
        assert!(
            (28.0..36.0).contains(&next),
            "neighbours differ in {next} bits"
        );
        let owners = mean_distance((0..1000).map(|p| (key.seal(&alice, p), key.seal(&bob, p))));
        assert!(
            (28.0..36.0).contains(&owners),
            "owners differ in {owners} bits"
        );
        // A gap in the positions (another owner's tasks in between) looks like no gap.
        let gaps = mean_distance((0..1000).map(|p| (key.seal(&alice, p), key.seal(&alice, p + 2))));
        assert!((28.0..36.0).contains(&gaps), "a gap differs in {gaps} bits");
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
