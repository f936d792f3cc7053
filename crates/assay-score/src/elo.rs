//! Elo ratings from task-level battles, as the BigCodeBench leaderboard ranks models: on each
//! task, every two models judged on it meet; the one that passes wins, and two that both pass
//! or both fail tie. Ratings are the Bradley–Terry maximum-likelihood fit on the Elo scale (400
//! points per factor of ten in the odds of winning; a tie counts half a win each way), centred
//! on 1000, and their 95% intervals a percentile bootstrap over tasks.

use crate::compare::Interval;

/// Points per factor of ten in the odds.
const SCALE: f64 = 400.0;
/// The mean rating.
const CENTRE: f64 = 1000.0;
/// Iterations of the fit at most; it stops earlier once ratings move less than `TOLERANCE`.
const ITERATIONS: usize = 10_000;
const TOLERANCE: f64 = 1e-10;

/// What one task says: which models passed it (`None`: not judged on it).
pub type TaskOutcomes = Vec<Option<bool>>;

/// Wins (a tie is half a win for each) of every model over every other, from `tasks`.
fn wins(models: usize, tasks: &[&TaskOutcomes]) -> Vec<Vec<f64>> {
    let mut wins = vec![vec![0.0; models]; models];
    for task in tasks {
        for a in 0..models {
            for b in a + 1..models {
                let (Some(pa), Some(pb)) = (task[a], task[b]) else {
                    continue;
                };
                let (wa, wb) = match (pa, pb) {
                    (true, false) => (1.0, 0.0),
                    (false, true) => (0.0, 1.0),
                    _ => (0.5, 0.5),
                };
                wins[a][b] += wa;
                wins[b][a] += wb;
            }
        }
    }
    wins
}

/// The maximum-likelihood ratings for `wins` (Hunter's MM algorithm for Bradley–Terry), mean
/// 1000. A model with no battles gets 1000.
fn fit(wins: &[Vec<f64>]) -> Vec<f64> {
    let n = wins.len();
    let total: Vec<f64> = (0..n).map(|i| wins[i].iter().sum()).collect();
    let mut strength = vec![1.0; n];
    for _ in 0..ITERATIONS {
        let mut next = vec![0.0; n];
        for i in 0..n {
            let denominator: f64 = (0..n)
                .filter(|&j| j != i)
                .map(|j| (wins[i][j] + wins[j][i]) / (strength[i] + strength[j]))
                .sum();
            next[i] = if denominator > 0.0 {
                total[i] / denominator
            } else {
                strength[i]
            };
        }
        // Scale-free: keep the geometric mean at 1.
        let log_mean = next
            .iter()
            .map(|s| s.max(f64::MIN_POSITIVE).ln())
            .sum::<f64>()
            / n as f64;
        let mut moved: f64 = 0.0;
        for i in 0..n {
            let s = (next[i].max(f64::MIN_POSITIVE).ln() - log_mean).exp();
            moved = moved.max((s.ln() - strength[i].ln()).abs());
            strength[i] = s;
        }
        if moved < TOLERANCE {
            break;
        }
    }
    strength
        .iter()
        .map(|s| CENTRE + SCALE * s.log10())
        .collect()
}

/// Each model's rating over `tasks` (one entry per task: per model, whether it passed), and
/// its 95% interval from `resamples` bootstrap resamples of the tasks (seeded).
pub fn ratings(
    models: usize,
    tasks: &[TaskOutcomes],
    resamples: usize,
    seed: u64,
) -> Vec<(f64, Interval)> {
    let all: Vec<&TaskOutcomes> = tasks.iter().collect();
    let point = fit(&wins(models, &all));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); models];
    for _ in 0..resamples {
        let sample: Vec<&TaskOutcomes> = (0..tasks.len())
            .map(|_| &tasks[rng.usize(..tasks.len())])
            .collect();
        for (model, rating) in fit(&wins(models, &sample)).into_iter().enumerate() {
            draws[model].push(rating);
        }
    }
    point
        .into_iter()
        .zip(draws)
        .map(|(rating, mut draws)| {
            draws.sort_by(f64::total_cmp);
            let interval = if draws.is_empty() {
                Interval {
                    low: rating,
                    high: rating,
                }
            } else {
                Interval {
                    low: crate::compare::percentile(&draws, 2.5),
                    high: crate::compare::percentile(&draws, 97.5),
                }
            };
            (rating, interval)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks where model 0 beats 1 on `a`, 1 beats 0 on `b`, and they tie on `t`.
    fn tasks(a: usize, b: usize, t: usize) -> Vec<TaskOutcomes> {
        let mut tasks = Vec::new();
        tasks.extend((0..a).map(|_| vec![Some(true), Some(false)]));
        tasks.extend((0..b).map(|_| vec![Some(false), Some(true)]));
        tasks.extend((0..t).map(|_| vec![Some(true), Some(true)]));
        tasks
    }

    #[test]
    fn two_models_rate_as_the_closed_form_says() {
        // Wins 30 + 10/2 against 10 + 10/2: odds 35/15, so 400·log10(35/15) = 147.2 apart,
        // centred on 1000.
        let rated = ratings(2, &tasks(30, 10, 10), 200, 7);
        let gap = 400.0 * (35.0f64 / 15.0).log10();
        assert!(
            (rated[0].0 - (1000.0 + gap / 2.0)).abs() < 1e-6,
            "{rated:?}"
        );
        assert!((rated[1].0 - (1000.0 - gap / 2.0)).abs() < 1e-6);
        assert!(rated[0].1.low < rated[0].0 && rated[0].0 < rated[0].1.high);
    }

    #[test]
    fn three_models_match_an_independent_fit() {
        // The same battles fitted by scipy.optimize.minimize (BFGS) on the Bradley–Terry
        // log-likelihood, ratings shifted to mean 1000: 1099.1887, 987.5600, 913.2513.
        let mut tasks = Vec::new();
        let rows: [([bool; 3], usize); 5] = [
            ([true, true, false], 20),
            ([true, false, false], 15),
            ([false, true, true], 5),
            ([true, false, true], 8),
            ([false, false, false], 12),
        ];
        for (outcome, count) in rows {
            tasks.extend((0..count).map(|_| outcome.iter().map(|&p| Some(p)).collect()));
        }
        let rated = ratings(3, &tasks, 0, 1);
        for (got, want) in rated.iter().map(|r| r.0).zip([1099.1887, 987.56, 913.2513]) {
            assert!((got - want).abs() < 0.001, "{got} vs {want}");
        }
    }
}
