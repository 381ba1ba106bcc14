//! Latency samples and their quantiles.

/// The `q` quantile (0 ≤ q ≤ 1) of `sorted` by the nearest-rank method: the smallest
/// sample with at least `q` of the samples at or below it; `None` for no samples.
#[must_use]
pub fn quantile(sorted: &[u32], q: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let q = q.clamp(0.0, 1.0);
    // Nearest rank: ceil(q * n), at least 1.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Latencies in microseconds, sorted once when read.
#[derive(Debug, Default, Clone)]
pub struct Samples(Vec<u32>);

impl Samples {
    /// No samples.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one latency, in microseconds (saturating at `u32::MAX`, about 71 minutes).
    pub fn push_micros(&mut self, micros: u128) {
        self.0.push(u32::try_from(micros).unwrap_or(u32::MAX));
    }

    /// Takes every sample of `other`.
    pub fn merge(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    /// How many samples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The p50 and p99 in milliseconds (`None` without samples).
    #[must_use]
    pub fn p50_p99_ms(&mut self) -> (Option<f64>, Option<f64>) {
        self.0.sort_unstable();
        let ms = |q| quantile(&self.0, q).map(|us| f64::from(us) / 1000.0);
        (ms(0.5), ms(0.99))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let sorted: Vec<u32> = (1..=100).collect();
        assert_eq!(quantile(&sorted, 0.5), Some(50));
        assert_eq!(quantile(&sorted, 0.99), Some(99));
        assert_eq!(quantile(&sorted, 1.0), Some(100));
        assert_eq!(quantile(&sorted, 0.0), Some(1));
        assert_eq!(quantile(&[7], 0.99), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
        // Ten samples: the p99 is the largest.
        let ten: Vec<u32> = (1..=10).collect();
        assert_eq!(quantile(&ten, 0.99), Some(10));
        assert_eq!(quantile(&ten, 0.5), Some(5));
    }

    #[test]
    fn samples_sort_before_reading_and_merge() {
        let mut a = Samples::new();
        for us in [3000, 1000, 2000] {
            a.push_micros(us);
        }
        let mut b = Samples::new();
        b.push_micros(u128::from(u32::MAX) + 5);
        a.merge(b);
        assert_eq!(a.len(), 4);
        let (p50, p99) = a.p50_p99_ms();
        assert_eq!(p50, Some(2.0));
        assert_eq!(p99, Some(f64::from(u32::MAX) / 1000.0));
        assert_eq!(Samples::new().p50_p99_ms(), (None, None));
    }
}
