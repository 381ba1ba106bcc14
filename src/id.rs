//! Task ids.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// The four bytes that eight lowercase hex digits (read little-endian into `digits`, the
/// first digit in the lowest byte) spell, first byte lowest; `None` if any byte is not a
/// lowercase hex digit.
fn hex_word(digits: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // For bytes below 0x80, the high bit of `byte + (0x80 - n)` says `byte >= n`, with no
    // carry into the next byte.
    let at_least = |n: u8| digits.wrapping_add(ONES * u64::from(0x80 - n)) & HIGH;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let letter = at_least(b'a') & !at_least(b'f' + 1);
    if digits & HIGH != 0 || (digit | letter) != HIGH {
        return None;
    }
    // '0'..='9' keep their low nibble; 'a'..='f' (bit 6 set) add 9 to theirs.
    let nibbles = (digits & (ONES * 0x0f)) + ((digits >> 6) & ONES) * 9;
    // Each pair of nibbles into a byte, then the four bytes side by side.
    let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
    let quads = (pairs | pairs >> 8) & 0x0000_ffff_0000_ffff;
    Some((quads | quads >> 16) as u32)
}

/// A task id: a string on the wire.
///
/// Ids this crate generates are random UUID v4 in their canonical lowercase hyphenated
/// form, held in 16 bytes. Their 122 random bits come from `rand`'s thread-local ChaCha12
/// generator (the `uuid` crate's `fast-rng` feature), seeded from the operating system and
/// reseeded from it after every 64 KiB of output (`rand` does not reseed it when the
/// process forks). Any other string (an id from a peer that is not such a UUID) is kept
/// verbatim, so every id round-trips exactly.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(Repr);

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Repr {
    Uuid(Uuid),
    Text(Box<str>),
}

impl TaskId {
    /// A new random id (UUID v4).
    #[must_use]
    pub fn random() -> Self {
        TaskId(Repr::Uuid(Uuid::new_v4()))
    }

    /// The id of a UUID, shown in canonical form.
    #[must_use]
    pub const fn from_uuid(uuid: Uuid) -> Self {
        TaskId(Repr::Uuid(uuid))
    }

    /// The UUID, if this id is one in canonical form.
    #[must_use]
    pub fn as_uuid(&self) -> Option<Uuid> {
        match &self.0 {
            Repr::Uuid(uuid) => Some(*uuid),
            Repr::Text(_) => None,
        }
    }

    /// Parses the canonical lowercase hyphenated form of a UUID and nothing else, so that
    /// `parse_uuid(s).map(|u| u.to_string()) == Some(s)` for every accepted `s`.
    pub(crate) fn parse_canonical_uuid(s: &str) -> Option<Uuid> {
        // Every registry call parses its id: eight digits at a time in a 64-bit word.
        let bytes: &[u8; 36] = s.as_bytes().try_into().ok()?;
        if bytes[8] != b'-' || bytes[13] != b'-' || bytes[18] != b'-' || bytes[23] != b'-' {
            return None;
        }
        let word = |at: usize| {
            u64::from(u32::from_le_bytes([
                bytes[at],
                bytes[at + 1],
                bytes[at + 2],
                bytes[at + 3],
            ]))
        };
        let words = [
            word(0) | word(4) << 32,
            word(9) | word(14) << 32,
            word(19) | word(24) << 32,
            word(28) | word(32) << 32,
        ];
        let mut out = [0u8; 16];
        for (chunk, &digits) in out.chunks_exact_mut(4).zip(words.iter()) {
            chunk.copy_from_slice(&hex_word(digits)?.to_le_bytes());
        }
        Some(Uuid::from_bytes(out))
    }
}

impl From<&str> for TaskId {
    fn from(s: &str) -> Self {
        match TaskId::parse_canonical_uuid(s) {
            Some(uuid) => TaskId(Repr::Uuid(uuid)),
            None => TaskId(Repr::Text(s.into())),
        }
    }
}

impl From<String> for TaskId {
    fn from(s: String) -> Self {
        match TaskId::parse_canonical_uuid(&s) {
            Some(uuid) => TaskId(Repr::Uuid(uuid)),
            None => TaskId(Repr::Text(s.into_boxed_str())),
        }
    }
}

impl From<Uuid> for TaskId {
    fn from(uuid: Uuid) -> Self {
        TaskId::from_uuid(uuid)
    }
}

impl FromStr for TaskId {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(TaskId::from(s))
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Uuid(uuid) => fmt::Display::fmt(&uuid.hyphenated(), f),
            Repr::Text(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({self})")
    }
}

impl Serialize for TaskId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Uuid(uuid) => {
                let mut buf = Uuid::encode_buffer();
                serializer.serialize_str(uuid.hyphenated().encode_lower(&mut buf))
            }
            Repr::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(TaskId::from(text.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_uuids_are_compact_and_everything_round_trips() {
        let id = TaskId::random();
        let text = id.to_string();
        assert_eq!(TaskId::from(text.as_str()), id);
        assert!(TaskId::from(text.as_str()).as_uuid().is_some());
        for other in [
            "786512E2-9E0D-44BD-8F29-789F320FE840",
            "{786512e2-9e0d-44bd-8f29-789f320fe840}",
            "786512e29e0d44bd8f29789f320fe840",
            "task-1",
            "",
        ] {
            let id = TaskId::from(other);
            assert_eq!(id.to_string(), other);
            assert_eq!(id.as_uuid(), None, "{other}");
        }
    }

    /// The reference the word parser must agree with: 36 bytes, no uppercase, and what
    /// the `uuid` crate parses.
    fn reference(s: &[u8]) -> Option<Uuid> {
        let s = std::str::from_utf8(s).ok()?;
        if s.len() != 36 || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        Uuid::try_parse(s).ok()
    }

    #[test]
    fn the_word_parser_agrees_with_the_uuid_crate_on_every_one_byte_change() {
        for text in [
            TaskId::random().to_string(),
            "00000000-0000-0000-0000-000000000000".to_owned(),
            "ffffffff-ffff-ffff-ffff-ffffffffffff".to_owned(),
        ] {
            let parsed = TaskId::parse_canonical_uuid(&text);
            assert_eq!(parsed.map(|u| u.to_string()), Some(text.clone()));
            for at in 0..text.len() {
                for byte in 0..=u8::MAX {
                    let mut bytes = text.clone().into_bytes();
                    bytes[at] = byte;
                    let Ok(changed) = std::str::from_utf8(&bytes) else {
                        continue;
                    };
                    assert_eq!(
                        TaskId::parse_canonical_uuid(changed),
                        reference(&bytes),
                        "{changed:?}"
                    );
                }
            }
        }
        let accented = "00000000-0000-0000-0000-0000000000é";
        assert_eq!(accented.len(), 36);
        for other in [
            "",
            "0",
            &"0".repeat(35),
            &"0".repeat(37),
            &"-".repeat(36),
            accented,
        ] {
            assert_eq!(TaskId::parse_canonical_uuid(other), None, "{other:?}");
        }
    }

    #[test]
    fn random_ids_are_v4_and_distinct() {
        let a = TaskId::random().as_uuid().unwrap();
        let b = TaskId::random().as_uuid().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.get_version_num(), 4);
    }
}
