//! Task ids.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// The value of each lowercase hex digit; 0xff for every other byte.
const LOWER_HEX: [u8; 256] = {
    let mut table = [0xff_u8; 256];
    let mut digit = 0;
    while digit < 10 {
        table[b'0' as usize + digit] = digit as u8;
        digit += 1;
    }
    let mut letter = 0;
    while letter < 6 {
        table[b'a' as usize + letter] = 10 + letter as u8;
        letter += 1;
    }
    table
};

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
        // Every registry call parses its id: one pass over a table, no generic parser.
        let bytes: &[u8; 36] = s.as_bytes().try_into().ok()?;
        if bytes[8] != b'-' || bytes[13] != b'-' || bytes[18] != b'-' || bytes[23] != b'-' {
            return None;
        }
        // The 32 digits without the hyphens, then each pair of digits into a byte.
        let mut digits = [0u8; 32];
        digits[..8].copy_from_slice(&bytes[..8]);
        digits[8..12].copy_from_slice(&bytes[9..13]);
        digits[12..16].copy_from_slice(&bytes[14..18]);
        digits[16..20].copy_from_slice(&bytes[19..23]);
        digits[20..].copy_from_slice(&bytes[24..]);
        let mut out = [0u8; 16];
        let mut invalid = 0u8;
        for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let high = LOWER_HEX[usize::from(pair[0])];
            let low = LOWER_HEX[usize::from(pair[1])];
            invalid |= high | low;
            *byte = (high << 4) | (low & 0x0f);
        }
        // Each table entry is a nibble, or 0xff for a byte that is not a lowercase hex digit.
        (invalid & 0xf0 == 0).then(|| Uuid::from_bytes(out))
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

    /// The reference the table parser must agree with: 36 bytes, no uppercase, and what
    /// the `uuid` crate parses.
    fn reference(s: &[u8]) -> Option<Uuid> {
        let s = std::str::from_utf8(s).ok()?;
        if s.len() != 36 || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        Uuid::try_parse(s).ok()
    }

    #[test]
    fn the_table_parser_agrees_with_the_uuid_crate_on_every_one_byte_change() {
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
        for other in ["", "0", &"0".repeat(35), &"0".repeat(37), &"-".repeat(36)] {
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
