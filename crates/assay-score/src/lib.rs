//! Scores from verdicts.
//!
//! pass@k is HumanEval's unbiased estimator, `1 - C(n-c, k) / C(n, k)` for a task with `n`
//! samples of which `c` passed, computed as the official harnesses do (a running product, not
//! binomials, which overflow), then averaged over tasks. A pass@k is reported only when every
//! task has at least `k` samples, as BigCodeBench's evaluator does.

use std::collections::BTreeMap;

pub mod compare;
pub mod elo;

/// The ks BigCodeBench reports, when the sample counts allow.
pub const DEFAULT_KS: &[u64] = &[1, 5, 10];

/// The probability that at least one of `k` samples drawn from `n` (of which `correct`
/// passed) passes. Needs `k <= n`.
pub fn pass_at_k(n: u64, correct: u64, k: u64) -> f64 {
    assert!(
        k >= 1 && k <= n && correct <= n,
        "pass@{k} of {correct}/{n}"
    );
    if n - correct < k {
        return 1.0;
    }
    let product: f64 = (n - correct + 1..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    1.0 - product
}

/// Samples and passes of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTally {
    /// Samples evaluated (`n`).
    pub samples: u64,
    /// Samples that passed every test (`c`).
    pub passed: u64,
}

/// pass@k averaged over `tasks`, for each k of `ks` that every task's sample count allows.
/// Empty when there are no tasks.
pub fn pass_at_ks(tasks: &[TaskTally], ks: &[u64]) -> BTreeMap<u64, f64> {
    let Some(fewest) = tasks.iter().map(|t| t.samples).min() else {
        return BTreeMap::new();
    };
    ks.iter()
        .filter(|&&k| k >= 1 && k <= fewest)
        .map(|&k| {
            let sum: f64 = tasks
                .iter()
                .map(|t| pass_at_k(t.samples, t.passed, k))
                .sum();
            (k, sum / tasks.len() as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_official_numpy_computation() {
        // Values printed by the official formula:
        // 1 - np.prod(1 - k / np.arange(n - c + 1, n + 1)).
        for (n, c, k, expected) in [
            (10, 3, 1, 0.30000000000000004),
            (10, 3, 5, 0.9166666666666666),
            (10, 0, 5, 0.0),
            (10, 10, 10, 1.0),
            (5, 2, 5, 1.0),
            (20, 7, 10, 0.9984520123839009),
            (200, 13, 10, 0.4975511147306061),
        ] {
            assert_eq!(pass_at_k(n, c, k), expected, "pass@{k} of {c}/{n}");
        }
    }

    #[test]
    fn only_the_ks_every_task_allows() {
        let tasks = [
            TaskTally {
                samples: 5,
                passed: 1,
            },
            TaskTally {
                samples: 10,
                passed: 0,
            },
        ];
        let scores = pass_at_ks(&tasks, DEFAULT_KS);
        assert_eq!(scores.keys().copied().collect::<Vec<_>>(), [1, 5]);
        assert!((scores[&1] - 0.1).abs() < 1e-12);
        assert_eq!(scores[&5], 0.5);
        let greedy = [
            TaskTally {
                samples: 1,
                passed: 1,
            },
            TaskTally {
                samples: 1,
                passed: 0,
            },
        ];
        assert_eq!(pass_at_ks(&greedy, DEFAULT_KS), BTreeMap::from([(1, 0.5)]));
        assert!(pass_at_ks(&[], DEFAULT_KS).is_empty());
    }
}
