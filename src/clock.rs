//! Time: RFC 3339 [`Timestamp`]s and the injectable [`Clock`].
//!
//! Every change to a task takes its time from the caller (a bare [`Task`](crate::Task)) or
//! from the registry's clock, never from a hidden global, so tests pin timestamps with a
//! [`ManualClock`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A point in time with nanosecond precision, shown on the wire as an RFC 3339 UTC string
/// (`"2025-11-25T10:30:00Z"`, with a fraction only when there is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

const NANOS_PER_MILLI: i64 = 1_000_000;

impl Timestamp {
    /// The Unix epoch, 1970-01-01T00:00:00Z.
    pub const UNIX_EPOCH: Timestamp = Timestamp(0);

    /// The current system time, to the millisecond (the precision JavaScript and most
    /// clients keep).
    #[must_use]
    pub fn now() -> Self {
        // Straight from the system clock: no calendar arithmetic on the hot path.
        // Whole milliseconds in 64 bits (no 128-bit division), saturating at the ends.
        let whole_millis = |d: Duration| {
            let millis = d
                .as_secs()
                .saturating_mul(1_000)
                .saturating_add(u64::from(d.subsec_millis()));
            i64::try_from(millis).unwrap_or(i64::MAX)
        };
        let millis = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => whole_millis(after),
            Err(before) => whole_millis(before.duration()).saturating_neg(),
        };
        Timestamp::from_unix_millis(millis)
    }

    /// The time `millis` milliseconds after the Unix epoch.
    #[must_use]
    pub const fn from_unix_millis(millis: i64) -> Self {
        Timestamp(millis.saturating_mul(NANOS_PER_MILLI))
    }

    /// Milliseconds since the Unix epoch (rounded down).
    #[must_use]
    pub const fn unix_millis(self) -> i64 {
        self.0.div_euclid(NANOS_PER_MILLI)
    }

    /// Nanoseconds since the Unix epoch.
    #[must_use]
    pub const fn unix_nanos(self) -> i64 {
        self.0
    }

    /// This time plus `millis` milliseconds (saturating at the end of representable time).
    #[must_use]
    pub const fn plus_millis(self, millis: u64) -> Self {
        let nanos = (millis as i128) * (NANOS_PER_MILLI as i128) + self.0 as i128;
        if nanos > i64::MAX as i128 {
            Timestamp(i64::MAX)
        } else {
            Timestamp(nanos as i64)
        }
    }

    /// The time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    #[must_use]
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        let nanos = i128::from(self.0) - i128::from(earlier.0);
        u64::try_from(nanos).map_or(Duration::ZERO, Duration::from_nanos)
    }

    /// Parses an RFC 3339 timestamp (any offset; kept as the same instant in UTC).
    ///
    /// # Errors
    /// [`InvalidTimestamp`] if `s` is not RFC 3339 or lies outside the years 1677–2262.
    pub fn parse(s: &str) -> Result<Self, InvalidTimestamp> {
        let parsed =
            OffsetDateTime::parse(s, &Rfc3339).map_err(|_| InvalidTimestamp(s.to_owned()))?;
        i64::try_from(parsed.unix_timestamp_nanos())
            .map(Timestamp)
            .map_err(|_| InvalidTimestamp(s.to_owned()))
    }

    fn to_offset_date_time(self) -> OffsetDateTime {
        // Every i64 nanosecond count lies within `time`'s supported range (±9999 years).
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0))
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(time: OffsetDateTime) -> Self {
        let nanos = time.unix_timestamp_nanos();
        Timestamp(nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }
}

impl From<Timestamp> for OffsetDateTime {
    fn from(ts: Timestamp) -> Self {
        ts.to_offset_date_time()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_offset_date_time().format(&Rfc3339) {
            Ok(text) => f.write_str(&text),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The error of parsing a string that is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp `{0}`: expected RFC 3339, like 2025-11-25T10:30:00Z")]
pub struct InvalidTimestamp(pub String);

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock stopped at `start`.
    #[must_use]
    pub fn new(start: Timestamp) -> Self {
        Self(Arc::new(AtomicI64::new(start.0)))
    }

    /// Sets the time.
    pub fn set(&self, now: Timestamp) {
        self.0.store(now.0, Ordering::SeqCst);
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let nanos = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(nanos))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_utc_with_fraction_only_when_present() {
        let t = Timestamp::parse("2025-11-25T10:30:00Z").unwrap();
        assert_eq!(t.to_string(), "2025-11-25T10:30:00Z");
        assert_eq!(t.plus_millis(250).to_string(), "2025-11-25T10:30:00.25Z");
        let offset = Timestamp::parse("2025-11-25T12:30:00+02:00").unwrap();
        assert_eq!(offset, t);
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in [
            "",
            "yesterday",
            "2025-11-25",
            "2025-13-01T00:00:00Z",
            "9999-01-01T00:00:00Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
        let shared = clock.clone();
        shared.advance(Duration::from_millis(500));
        assert_eq!(clock.now().unix_millis(), 1_500);
        assert_eq!(
            clock
                .now()
                .saturating_since(Timestamp::from_unix_millis(1_000)),
            Duration::from_millis(500)
        );
    }
}
