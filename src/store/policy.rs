//! Retention ([`TtlPolicy`]) and flood limits ([`Limits`]).

use crate::error::Error;

/// How long tasks are kept, in milliseconds from creation.
///
/// The effective TTL of a task is what every `Task` object shows:
/// - a requested TTL above [`max`](TtlPolicy::with_max) is clamped to the maximum, and one
///   below [`min`](TtlPolicy::with_min) (one second by default) is raised to it, so a task
///   never expires before its creator could read it;
/// - no requested TTL means the [`default`](TtlPolicy::new);
/// - unlimited retention (`"ttl": null`) happens only when the default is unlimited, there
///   is no maximum, and [`allow_unlimited`](TtlPolicy::with_unlimited_allowed) is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlPolicy {
    default: Option<u64>,
    min: u64,
    max: Option<u64>,
    allow_unlimited: bool,
}

/// The default [`TtlPolicy::with_min`]: one second.
const MIN_TTL: u64 = 1_000;

impl Default for TtlPolicy {
    /// One hour by default, at least one second, at most one day, never unlimited.
    fn default() -> Self {
        Self {
            default: Some(3_600_000),
            min: MIN_TTL,
            max: Some(86_400_000),
            allow_unlimited: false,
        }
    }
}

impl TtlPolicy {
    /// A policy whose default TTL is `default` (`None`: unlimited, which also needs
    /// [`with_unlimited_allowed`](Self::with_unlimited_allowed)), with no maximum.
    #[must_use]
    pub const fn new(default: Option<u64>) -> Self {
        Self {
            default,
            min: MIN_TTL,
            max: None,
            allow_unlimited: false,
        }
    }

    /// The same policy with a minimum TTL (requests below it are raised to it; the maximum
    /// still wins over it).
    #[must_use]
    pub const fn with_min(mut self, min: u64) -> Self {
        self.min = min;
        self
    }

    /// The same policy with a maximum TTL.
    #[must_use]
    pub const fn with_max(mut self, max: u64) -> Self {
        self.max = Some(max);
        self
    }

    /// The same policy, allowing (or not) unlimited retention.
    #[must_use]
    pub const fn with_unlimited_allowed(mut self, allow: bool) -> Self {
        self.allow_unlimited = allow;
        self
    }

    /// The default TTL.
    #[must_use]
    pub const fn default_ttl(&self) -> Option<u64> {
        self.default
    }

    /// The maximum TTL.
    #[must_use]
    pub const fn max_ttl(&self) -> Option<u64> {
        self.max
    }

    /// The TTL a task gets when `requested` was asked for.
    #[must_use]
    pub fn effective(&self, requested: Option<u64>) -> Option<u64> {
        match requested.or(self.default) {
            Some(ttl) => {
                let ttl = ttl.max(self.min);
                Some(self.max.map_or(ttl, |max| ttl.min(max)))
            }
            // Unlimited (`None`) when there is no maximum: `validate` refuses that unless
            // unlimited retention is allowed.
            None => self.max,
        }
    }

    /// The TTL a task gets when it is set to `ttl` after creation: a value is clamped to
    /// the minimum and maximum; unlimited only where [`effective`](Self::effective) could
    /// give it, and the maximum otherwise.
    #[must_use]
    pub fn bound(&self, ttl: Option<u64>) -> Option<u64> {
        match ttl {
            Some(ttl) => self.effective(Some(ttl)),
            None if self.allow_unlimited && self.max.is_none() => None,
            None => self.max.or(self.default),
        }
    }

    /// Checks that the policy can work.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if the default exceeds the maximum, or if no finite TTL is
    /// set while unlimited retention is not allowed. (A minimum above the maximum is fine:
    /// the maximum wins.)
    pub fn validate(&self) -> Result<(), Error> {
        if let (Some(default), Some(max)) = (self.default, self.max)
            && default > max
        {
            return Err(Error::InvalidConfig(format!(
                "the default TTL ({default} ms) exceeds the maximum TTL ({max} ms)"
            )));
        }
        if self.default.is_none() && self.max.is_none() && !self.allow_unlimited {
            return Err(Error::InvalidConfig(
                "the TTL policy has no default and no maximum but does not allow unlimited \
                 retention: set a default TTL, or allow unlimited retention"
                    .to_owned(),
            ));
        }
        Ok(())
    }
}

/// Limits on stored tasks (of any status, until they expire or are removed), checked
/// atomically with each insert. Exceeding one is [`Error::LimitExceeded`] (`-32603`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most tasks one owner may have stored; `None` for no limit.
    pub per_owner: Option<usize>,
    /// Most tasks stored over all owners; `None` for no limit.
    pub total: Option<usize>,
}

impl Default for Limits {
    /// 1,000 per owner and 100,000 in total.
    fn default() -> Self {
        Self {
            per_owner: Some(1_000),
            total: Some(100_000),
        }
    }
}

impl Limits {
    /// No limits at all (for benchmarks and trusted single-user servers).
    #[must_use]
    pub const fn none() -> Self {
        Self {
            per_owner: None,
            total: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_ttls_are_clamped_and_defaulted() {
        let policy = TtlPolicy::new(Some(1_000)).with_max(10_000);
        assert_eq!(policy.effective(None), Some(1_000));
        assert_eq!(policy.effective(Some(5_000)), Some(5_000));
        assert_eq!(policy.effective(Some(50_000)), Some(10_000));
        assert_eq!(
            policy.effective(Some(0)),
            Some(1_000),
            "raised to the minimum"
        );
        assert_eq!(policy.with_min(0).effective(Some(0)), Some(0));
        policy.validate().unwrap();
    }

    #[test]
    fn unlimited_only_when_allowed() {
        let open = TtlPolicy::new(None).with_unlimited_allowed(true);
        assert_eq!(open.effective(None), None);
        assert_eq!(open.effective(Some(7_000)), Some(7_000));
        assert_eq!(
            open.effective(Some(7)),
            Some(1_000),
            "raised to the minimum"
        );
        open.validate().unwrap();
        let capped = TtlPolicy::new(None).with_max(5_000);
        assert_eq!(capped.effective(None), Some(5_000));
        let capped = capped.with_unlimited_allowed(true);
        assert_eq!(
            capped.effective(None),
            Some(5_000),
            "unlimited is above any maximum"
        );
        assert!(TtlPolicy::new(None).validate().is_err());
        assert!(TtlPolicy::new(Some(10)).with_max(5).validate().is_err());
    }

    #[test]
    fn a_ttl_set_to_unlimited_is_bounded_like_a_new_task() {
        // Allowed and uncapped: unlimited stays unlimited, even with a finite default.
        let open = TtlPolicy::new(Some(5_000)).with_unlimited_allowed(true);
        assert_eq!(open.bound(None), None);
        // Not allowed: the default stands in for unlimited when there is no maximum ...
        let closed = TtlPolicy::new(Some(5_000));
        assert_eq!(closed.bound(None), Some(5_000));
        // ... and the maximum when there is one, allowed or not (unlimited is above it).
        let capped = TtlPolicy::new(Some(5_000)).with_max(20_000);
        assert_eq!(capped.bound(None), Some(20_000));
        assert_eq!(
            capped.with_unlimited_allowed(true).bound(None),
            Some(20_000)
        );
        // A finite value is clamped like a requested one.
        assert_eq!(capped.bound(Some(50_000)), Some(20_000));
        assert_eq!(capped.bound(Some(1)), Some(1_000));
    }

    #[test]
    fn a_default_equal_to_the_maximum_is_valid() {
        let policy = TtlPolicy::new(Some(60_000)).with_max(60_000);
        policy.validate().unwrap();
        assert_eq!(policy.effective(None), Some(60_000));
        assert!(
            TtlPolicy::new(Some(60_001))
                .with_max(60_000)
                .validate()
                .is_err()
        );
        TtlPolicy::default().validate().unwrap();
    }

    #[test]
    fn getters_report_what_was_set() {
        let policy = TtlPolicy::new(Some(2_000)).with_max(9_000);
        assert_eq!(policy.default_ttl(), Some(2_000));
        assert_eq!(policy.max_ttl(), Some(9_000));
        let open = TtlPolicy::new(None).with_unlimited_allowed(true);
        assert_eq!(open.default_ttl(), None);
        assert_eq!(open.max_ttl(), None);
        let defaults = TtlPolicy::default();
        assert_eq!(defaults.default_ttl(), Some(3_600_000));
        assert_eq!(defaults.max_ttl(), Some(86_400_000));
    }
}
