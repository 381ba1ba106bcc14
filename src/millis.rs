//! Durations in whole milliseconds, as the wire carries them (`ttl`, `pollInterval`).
//!
//! The schema says `integer`, which JSON Schema also grants to `60000.0`; peers that do
//! float arithmetic send such numbers. They are read as the same integer; a fraction, a
//! negative number or a number above `u64::MAX - 1` (half a billion years; `u64::MAX`
//! marks "none" in storage) is refused.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};
use serde_json::Value;

/// An optional millisecond count in 8 bytes: `u64::MAX` stands for `None`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct OptMillis(u64);

impl OptMillis {
    pub(crate) const NONE: OptMillis = OptMillis(u64::MAX);

    /// `Some(u64::MAX)` is kept as `u64::MAX - 1` (half a billion years; the wire refuses
    /// `u64::MAX`, so only the builder API can ask for it).
    pub(crate) const fn new(millis: Option<u64>) -> Self {
        match millis {
            Some(millis) if millis == u64::MAX => OptMillis(u64::MAX - 1),
            Some(millis) => OptMillis(millis),
            None => OptMillis::NONE,
        }
    }

    pub(crate) const fn get(self) -> Option<u64> {
        if self.0 == u64::MAX {
            None
        } else {
            Some(self.0)
        }
    }
}

impl fmt::Debug for OptMillis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

/// A whole, non-negative number of milliseconds from a JSON value.
pub(crate) fn from_value(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_f64().and_then(from_f64))
        .filter(|&millis| millis != u64::MAX)
}

fn from_f64(value: f64) -> Option<u64> {
    // 2^64 as f64 is exact, and every whole f64 below it fits in u64; the largest such
    // f64 is far below u64::MAX, the "none" marker.
    (value.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&value))
        .then_some(value as u64)
}

struct MillisVisitor;

impl<'de> Visitor<'de> for MillisVisitor {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole, non-negative number of milliseconds, or null")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        if value == u64::MAX {
            return Err(E::invalid_value(de::Unexpected::Unsigned(value), &self));
        }
        Ok(Some(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        u64::try_from(value)
            .map(Some)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(value), &self))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        from_f64(value)
            .map(Some)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Float(value), &self))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(MillisVisitor)
    }
}

/// `Option<u64>` milliseconds; use with `#[serde(deserialize_with)]`. Combined with
/// `#[serde(default)]` the key may be absent; without it the key is required (and may be
/// `null`).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    deserializer.deserialize_option(MillisVisitor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_numbers_in_any_json_form() {
        assert_eq!(from_value(&json!(60000)), Some(60000));
        assert_eq!(from_value(&json!(60000.0)), Some(60000));
        assert_eq!(from_value(&json!(6e4)), Some(60000));
        for bad in [
            json!(-1),
            json!(1.5),
            json!(-0.5),
            json!(1e20),
            json!("5"),
            json!(null),
        ] {
            assert_eq!(from_value(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_sentinel_never_swallows_a_value() {
        assert_eq!(OptMillis::new(None).get(), None);
        assert_eq!(OptMillis::new(Some(0)).get(), Some(0));
        assert_eq!(OptMillis::new(Some(u64::MAX)).get(), Some(u64::MAX - 1));
    }
}
