//! [`StoreSettings`]: what every shared store is built with, whatever its engine, and the
//! checks `build` makes before it connects.

use std::time::Duration;

use crate::error::Error;
use crate::store::{ClaimBackoff, LeasePolicy, Limits, TtlPolicy};

/// The default outage timeout ([`StoreSettings::outage_timeout`]).
pub const DEFAULT_OUTAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default I/O timeout ([`StoreSettings::io_timeout`]).
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The default fallback poll ([`StoreSettings::fallback_poll`]).
pub const DEFAULT_FALLBACK_POLL: Duration = Duration::from_secs(1);

/// The longest outage timeout (a longer one is cut to this).
pub const MAX_OUTAGE_TIMEOUT: Duration = Duration::from_secs(86_400);

/// The settings of a [`SharedStore`](super::SharedStore), the same for every engine: what
/// a backend's builder takes besides how to reach its engine. A backend's builder offers
/// them as its own methods with [`store_settings_methods!`](crate::store_settings_methods).
#[derive(Clone, PartialEq, Eq)]
#[must_use]
pub struct StoreSettings {
    ttl: TtlPolicy,
    limits: Limits,
    poll_interval: Option<u64>,
    cursor_secret: Option<String>,
    outage_timeout: Duration,
    io_timeout: Duration,
    fallback_poll: Duration,
    leases: LeasePolicy,
    claim_backoff: ClaimBackoff,
    instance: String,
}

impl Default for StoreSettings {
    /// The default [`TtlPolicy`], [`Limits`], [`LeasePolicy`] and [`ClaimBackoff`]; no
    /// suggested poll interval; a cursor secret shared through the storage; the default
    /// outage timeout, I/O timeout and fallback poll; an instance name made of the process
    /// id and a random number.
    fn default() -> Self {
        StoreSettings {
            ttl: TtlPolicy::default(),
            limits: Limits::default(),
            poll_interval: None,
            cursor_secret: None,
            outage_timeout: DEFAULT_OUTAGE_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            fallback_poll: DEFAULT_FALLBACK_POLL,
            leases: LeasePolicy::default(),
            claim_backoff: ClaimBackoff::default(),
            instance: format!(
                "pid{}-{:08x}",
                std::process::id(),
                uuid::Uuid::new_v4().as_u128() as u32
            ),
        }
    }
}

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSettings")
            .field("ttl", &self.ttl)
            .field("limits", &self.limits)
            .field("poll_interval", &self.poll_interval)
            .field(
                "cursor_secret",
                &self.cursor_secret.as_ref().map(|_| "<configured>"),
            )
            .field("outage_timeout", &self.outage_timeout)
            .field("io_timeout", &self.io_timeout)
            .field("fallback_poll", &self.fallback_poll)
            .field("leases", &self.leases)
            .field("claim_backoff", &self.claim_backoff)
            .field("instance", &self.instance)
            .finish()
    }
}

impl StoreSettings {
    /// The same settings with this retention policy.
    pub fn ttl_policy(mut self, ttl: TtlPolicy) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same settings with these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same settings with this suggested poll interval (milliseconds) for tasks whose
    /// request names none.
    pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// The same settings, signing cursors with this secret.
    pub fn cursor_secret(mut self, secret: impl Into<String>) -> Self {
        self.cursor_secret = Some(secret.into());
        self
    }

    /// The same settings with this outage timeout.
    pub fn outage_timeout(mut self, outage_timeout: Duration) -> Self {
        self.outage_timeout = outage_timeout;
        self
    }

    /// The same settings with this I/O timeout.
    pub fn io_timeout(mut self, io_timeout: Duration) -> Self {
        self.io_timeout = io_timeout;
        self
    }

    /// The same settings with this fallback poll.
    pub fn fallback_poll(mut self, every: Duration) -> Self {
        self.fallback_poll = every;
        self
    }

    /// The same settings with this lease policy.
    pub fn lease_policy(mut self, leases: LeasePolicy) -> Self {
        self.leases = leases;
        self
    }

    /// The same settings with this claim back-off.
    pub fn claim_backoff(mut self, backoff: ClaimBackoff) -> Self {
        self.claim_backoff = backoff;
        self
    }

    /// The same settings, naming this instance `name` (kept with the leases it holds, for
    /// an operator to see which instance runs a task).
    pub fn instance_name(mut self, name: impl Into<String>) -> Self {
        self.instance = name.into();
        self
    }

    /// The retention policy.
    #[must_use]
    pub fn ttl(&self) -> TtlPolicy {
        self.ttl
    }

    /// The limits on stored tasks (what a driver's insert checks).
    #[must_use]
    pub fn stored_limits(&self) -> Limits {
        self.limits
    }

    /// The suggested poll interval, if any.
    #[must_use]
    pub fn suggested_poll_interval(&self) -> Option<u64> {
        self.poll_interval
    }

    /// The configured cursor secret, if any.
    #[must_use]
    pub fn configured_cursor_secret(&self) -> Option<&str> {
        self.cursor_secret.as_deref()
    }

    /// How long a wait waits for an unreachable engine, and a finishing write is retried
    /// through its outage (at most [`MAX_OUTAGE_TIMEOUT`]).
    #[must_use]
    pub fn outage(&self) -> Duration {
        self.outage_timeout.min(MAX_OUTAGE_TIMEOUT)
    }

    /// How long one request of a driver may take (connecting included).
    #[must_use]
    pub fn io(&self) -> Duration {
        self.io_timeout
    }

    /// How often a wait reads its task while the change feed is down (or absent).
    #[must_use]
    pub fn poll(&self) -> Duration {
        self.fallback_poll
    }

    /// The lease policy.
    #[must_use]
    pub fn leases(&self) -> LeasePolicy {
        self.leases
    }

    /// The claim back-off.
    #[must_use]
    pub fn backoff(&self) -> ClaimBackoff {
        self.claim_backoff
    }

    /// The name of this instance, kept with the leases it holds.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Checks what can be checked before connecting.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a TTL or lease policy that cannot work, a zero I/O
    /// timeout, outage timeout or fallback poll, a cursor secret shorter than 16
    /// characters, or an instance name that is empty, longer than 128 bytes or holds a
    /// control character.
    pub fn validate(&self) -> Result<(), Error> {
        self.ttl.validate()?;
        self.leases.validate()?;
        for (what, value, why) in [
            (
                "I/O timeout",
                self.io_timeout,
                "no request could be answered",
            ),
            (
                "outage timeout",
                self.outage_timeout,
                "every wait would fail at once",
            ),
            (
                "fallback poll",
                self.fallback_poll,
                "waits would read their task without pause",
            ),
        ] {
            if value.is_zero() {
                return Err(Error::InvalidConfig(format!(
                    "the store's {what} is zero: {why}"
                )));
            }
        }
        if self
            .cursor_secret
            .as_ref()
            .is_some_and(|secret| secret.chars().count() < 16)
        {
            return Err(Error::InvalidConfig(
                "the cursor secret is shorter than 16 characters: use a long random one".to_owned(),
            ));
        }
        if self.instance.is_empty()
            || self.instance.len() > 128
            || self.instance.chars().any(char::is_control)
        {
            return Err(Error::InvalidConfig(format!(
                "the instance name {:?} must be 1 to 128 bytes without control characters",
                self.instance
            )));
        }
        Ok(())
    }
}

/// The [`StoreSettings`] setters as methods of a backend's builder, written once: expands,
/// inside an `impl` block of a builder whose field `$field` holds its
/// [`StoreSettings`], to `ttl_policy`, `limits`, `poll_interval`, `cursor_secret`,
/// `outage_timeout`, `io_timeout`, `fallback_poll`, `lease_policy`, `instance_name` and
/// `claim_backoff`,
/// each taking and returning the builder.
///
/// ```
/// use mcp_tasks::backend::StoreSettings;
///
/// /// A builder of some engine's store.
/// #[must_use]
/// pub struct MyBuilder {
///     url: String,
///     settings: StoreSettings,
/// }
///
/// impl MyBuilder {
///     mcp_tasks::store_settings_methods!(settings);
/// }
///
/// let builder = MyBuilder { url: "engine://".into(), settings: StoreSettings::default() }
///     .poll_interval(Some(500))
///     .outage_timeout(std::time::Duration::from_secs(5));
/// assert_eq!(builder.settings.suggested_poll_interval(), Some(500));
/// ```
#[macro_export]
macro_rules! store_settings_methods {
    ($field:ident) => {
        /// Uses this retention policy (default [`TtlPolicy::default`](mcp_tasks::TtlPolicy)).
        pub fn ttl_policy(mut self, ttl: $crate::TtlPolicy) -> Self {
            self.$field = self.$field.ttl_policy(ttl);
            self
        }

        /// Uses these limits (default [`Limits::default`](mcp_tasks::Limits)): the
        /// per-owner limit is checked atomically with each create; see the crate docs for
        /// whether the engine counts the total too.
        pub fn limits(mut self, limits: $crate::Limits) -> Self {
            self.$field = self.$field.limits(limits);
            self
        }

        /// Suggests this poll interval (milliseconds) for tasks whose request names none.
        pub fn poll_interval(mut self, poll_interval: Option<u64>) -> Self {
            self.$field = self.$field.poll_interval(poll_interval);
            self
        }

        /// Signs `tasks/list` cursors with this secret (at least 16 characters; every
        /// instance must use the same): cursors then hold across any restart of the
        /// engine. Without it, the instances share a random secret through the engine.
        pub fn cursor_secret(mut self, secret: impl Into<String>) -> Self {
            self.$field = self.$field.cursor_secret(secret);
            self
        }

        /// How long a wait (`tasks/result`, a handler's wait for input) waits for an
        /// engine it cannot reach before it answers the store-unavailable error (default
        /// 30 s; a wait with a shorter timeout answers it at its timeout instead), and how
        /// long a typed handle's finishing write (`complete`, `fail`, `cancel`) is retried
        /// through an outage. Zero is refused; more than a day is cut to a day.
        pub fn outage_timeout(mut self, outage_timeout: std::time::Duration) -> Self {
            self.$field = self.$field.outage_timeout(outage_timeout);
            self
        }

        /// How long one request to the engine may take, connecting included (default
        /// 10 s), before its connection counts as broken (and the request is retried once
        /// on a fresh one). Zero is refused.
        pub fn io_timeout(mut self, io_timeout: std::time::Duration) -> Self {
            self.$field = self.$field.io_timeout(io_timeout);
            self
        }

        /// How often a wait reads its task while the change feed is down (default 1 s):
        /// changes are unheard then, so waits poll until it is back, then read once
        /// more. Zero is refused.
        pub fn fallback_poll(mut self, every: std::time::Duration) -> Self {
            self.$field = self.$field.fallback_poll(every);
            self
        }

        /// What happens to a task whose instance stops renewing its lease (default
        /// [`LeasePolicy::default`](mcp_tasks::LeasePolicy): it fails 40 s after the last
        /// renewal at the latest, or is claimed again if redeliverable).
        pub fn lease_policy(mut self, leases: $crate::LeasePolicy) -> Self {
            self.$field = self.$field.lease_policy(leases);
            self
        }

        /// Names this instance (default: its process id and a random number): kept with
        /// the leases it holds, so that an operator sees which instance runs a task. 1 to
        /// 128 bytes, no control characters.
        pub fn instance_name(mut self, name: impl Into<String>) -> Self {
            self.$field = self.$field.instance_name(name);
            self
        }

        /// How long a redeliverable task whose instance stopped waits before another
        /// instance may claim it (default [`ClaimBackoff::default`](mcp_tasks::ClaimBackoff):
        /// 1 s after the first attempt, doubling, at most 60 s; a task handed over waits
        /// none).
        pub fn claim_backoff(mut self, backoff: $crate::ClaimBackoff) -> Self {
            self.$field = self.$field.claim_backoff(backoff);
            self
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_refused_before_connecting() {
        StoreSettings::default().validate().unwrap();
        let zero = Duration::ZERO;
        for (settings, what) in [
            (StoreSettings::default().io_timeout(zero), "I/O timeout"),
            (StoreSettings::default().outage_timeout(zero), "outage"),
            (
                StoreSettings::default().fallback_poll(zero),
                "fallback poll",
            ),
            (StoreSettings::default().cursor_secret("short"), "16"),
            (StoreSettings::default().instance_name(""), "instance"),
            (StoreSettings::default().instance_name("a\nb"), "instance"),
            (
                StoreSettings::default().ttl_policy(TtlPolicy::new(None)),
                "unlimited",
            ),
            (
                StoreSettings::default().lease_policy(LeasePolicy::fail_after(Duration::ZERO)),
                "lease",
            ),
        ] {
            match settings.validate() {
                Err(Error::InvalidConfig(message)) => assert!(message.contains(what), "{message}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        let long = StoreSettings::default().outage_timeout(Duration::from_secs(1 << 30));
        assert_eq!(long.outage(), MAX_OUTAGE_TIMEOUT);
        assert!(format!("{:?}", long.cursor_secret("0123456789abcdef!")).contains("configured"));
    }
}
