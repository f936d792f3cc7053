//! How sure a score is, and whether two runs differ: a percentile bootstrap over tasks, and
//! McNemar's exact test on tasks paired across two runs.
//!
//! Tasks, not samples, are the unit: a benchmark is a sample of tasks, and the samples of one
//! task are not independent. The bootstrap resamples tasks with replacement (`RESAMPLES`
//! times, from a fixed seed, so that a report is the same every time it is made) and takes the
//! 2.5th and 97.5th percentiles of the resampled means, interpolated between order statistics
//! as numpy's default `percentile` does.

/// Resamples a bootstrap draws.
pub const RESAMPLES: usize = 10_000;
/// The seed every report's bootstrap starts from.
pub const SEED: u64 = 0x0061_7373_6179; // "assay"

/// A 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// The mean of `values` (one per task) and its 95% percentile-bootstrap interval; `None` for
/// no tasks.
pub fn bootstrap_mean(values: &[f64], resamples: usize, seed: u64) -> Option<(f64, Interval)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut means: Vec<f64> = (0..resamples.max(1))
        .map(|_| (0..n).map(|_| values[rng.usize(..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let interval = Interval {
        low: percentile(&means, 2.5),
        high: percentile(&means, 97.5),
    };
    Some((mean, interval))
}

/// The `q`th percentile of sorted `values`, interpolated linearly between the order statistics
/// around it (numpy's default).
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q / 100.0 * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// McNemar's exact test: of the tasks two runs judged, `only_a` passed in the first alone and
/// `only_b` in the second alone. The two-sided p-value of a difference this large if either
/// run were as likely to win each discordant task: twice the binomial tail of the smaller
/// count at 1/2, at most 1 (what `scipy.stats.binomtest(min, only_a + only_b).pvalue` gives).
pub fn mcnemar_exact(only_a: u64, only_b: u64) -> f64 {
    let n = only_a + only_b;
    if n == 0 {
        return 1.0;
    }
    let smaller = only_a.min(only_b);
    // ln C(n, i) - n ln 2, summed in linear space term by term (n is at most a few thousand).
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0;
    let mut tail = (-ln_half_n).exp();
    for i in 1..=smaller {
        ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        tail += (ln_choose - ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_matches_scipy_binomtest() {
        // scipy.stats.binomtest(k, n, 0.5).pvalue, scipy 1.14.0.
        for (a, b, expected) in [
            (3, 9, 0.14599609375),
            (0, 5, 0.0625),
            (10, 20, 0.09873714670538905),
            (7, 0, 0.015625),
            (1, 1, 1.0),
            (30, 20, 0.20263875106454066),
            (2, 38, 1.4933903003111482e-09),
            (0, 0, 1.0),
        ] {
            let p = mcnemar_exact(a, b);
            assert!(
                (p - expected).abs() <= 1e-12 * expected.max(1e-300) + 1e-15,
                "{a}/{b}: {p} vs {expected}"
            );
            assert_eq!(mcnemar_exact(b, a), p, "symmetric");
        }
    }

    #[test]
    fn bootstrap_intervals_are_seeded_and_sized_as_the_normal_approximation_says() {
        // 1,000 tasks, 30% passing: the normal approximation's 95% half-width is
        // 1.96 * sqrt(0.3 * 0.7 / 1000) = 0.0284.
        let values: Vec<f64> = (0..1000).map(|i| f64::from(i % 10 < 3)).collect();
        let (mean, ci) = bootstrap_mean(&values, RESAMPLES, SEED).unwrap();
        assert!((mean - 0.3).abs() < 1e-12);
        let half = (ci.high - ci.low) / 2.0;
        assert!((half - 0.0284).abs() < 0.002, "{ci:?}");
        assert!(ci.low < mean && mean < ci.high);
        assert_eq!(bootstrap_mean(&values, RESAMPLES, SEED).unwrap().1, ci);
        let (_, other) = bootstrap_mean(&values, RESAMPLES, SEED + 1).unwrap();
        assert_ne!(other, ci, "the seed decides the draws");
        let (_, flat) = bootstrap_mean(&[0.5; 20], 100, SEED).unwrap();
        assert_eq!((flat.low, flat.high), (0.5, 0.5));
        assert!(bootstrap_mean(&[], 100, SEED).is_none());
    }

    #[test]
    fn percentiles_interpolate_as_numpy() {
        // numpy.percentile([1, 2, 3, 4], [2.5, 97.5]) == [1.075, 3.925]
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile(&sorted, 2.5) - 1.075).abs() < 1e-12);
        assert!((percentile(&sorted, 97.5) - 3.925).abs() < 1e-12);
    }
}
