//! The log's figures, computed as Inspect computes them from the samples' scores: each task's
//! samples reduced to one value per reducer (`mean`, or `pass_at_k`), then `accuracy` (their
//! mean over tasks) and `stderr` (their sample standard deviation over √tasks). With `mean`
//! this accuracy is assay's pass@1 (per task, then over tasks); samples without a score (not
//! judged) are left out, as assay sets `infra` apart.

use std::collections::{BTreeMap, HashMap};

use assay_score::{pass_at_k, DEFAULT_KS};

use super::log::{
    EvalMetric, EvalResults, EvalSample, EvalScore, HeadlineMetric, ReducedScore, Reductions,
    CORRECT, SCORER,
};
use super::metadata::Counts;

/// One task's samples.
#[derive(Debug, Clone, Default, PartialEq)]
struct Tally {
    /// Samples in the log.
    samples: u64,
    /// Of them, judged.
    judged: u64,
    /// Of them, passed.
    passed: u64,
}

/// What the samples come to: the results, each task's reduced values, and the reducers.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// `results`.
    pub results: EvalResults,
    /// `reductions`, one per entry of `results.scores`.
    pub reductions: Vec<Reductions>,
    /// `config.epochs_reducer`: the reducers, when tasks have several samples.
    pub reducers: Option<Vec<String>>,
}

/// The figures over `samples`, whose tasks have up to `epochs` samples each.
pub fn figures(samples: &[EvalSample], epochs: u32) -> Figures {
    let mut order: Vec<&str> = Vec::new();
    let mut tallies: HashMap<&str, Tally> = HashMap::new();
    for sample in samples {
        let tally = tallies.entry(sample.id.as_str()).or_insert_with(|| {
            order.push(sample.id.as_str());
            Tally::default()
        });
        tally.samples += 1;
        if let Some(score) = sample.scores.as_ref().and_then(|s| s.get(SCORER)) {
            tally.judged += 1;
            tally.passed += u64::from(score.value == CORRECT);
        }
    }
    let judged: Vec<(&str, &Tally)> = order
        .iter()
        .filter_map(|id| tallies.get(id).map(|t| (*id, t)))
        .filter(|(_, t)| t.judged > 0)
        .collect();
    let reducers = reducers(epochs, &judged);
    let mut scores = Vec::new();
    let mut reductions = Vec::new();
    for reducer in &reducers {
        let values: Vec<ReducedScore> = judged
            .iter()
            .map(|(id, t)| ReducedScore {
                value: reducer.reduce(t),
                sample_id: id.to_string(),
            })
            .collect();
        let numbers: Vec<f64> = values.iter().map(|v| v.value).collect();
        let (Some(accuracy), stderr) = (mean(&numbers), standard_error(&numbers)) else {
            continue;
        };
        let metric = |name: &str, value: f64| {
            (
                name.to_string(),
                EvalMetric {
                    name: name.to_string(),
                    value,
                },
            )
        };
        scores.push(EvalScore {
            name: SCORER.into(),
            scorer: SCORER.into(),
            reducer: reducer.name(),
            scored_samples: judged.len(),
            unscored_samples: 0,
            metrics: BTreeMap::from([metric("accuracy", accuracy), metric("stderr", stderr)]),
        });
        reductions.push(Reductions {
            scorer: SCORER.into(),
            reducer: reducer.name(),
            samples: values,
        });
    }
    let headline = scores.first().map(|first| HeadlineMetric {
        scorer: SCORER.into(),
        score: SCORER.into(),
        metric: "accuracy".into(),
        reducer: first.reducer.clone(),
    });
    let counts = Counts {
        tasks: order.len(),
        tasks_judged: judged.len(),
        tasks_set_apart: order
            .iter()
            .filter(|id| tallies.get(*id).is_some_and(|t| t.judged == 0))
            .map(|id| id.to_string())
            .collect(),
        samples_set_apart: tallies
            .values()
            .map(|t| (t.samples - t.judged) as usize)
            .sum(),
    };
    Figures {
        results: EvalResults {
            total_samples: samples.len(),
            completed_samples: samples.iter().filter(|s| s.scores.is_some()).count(),
            scores,
            headline,
            metadata: counts,
        },
        reductions,
        reducers: (epochs > 1).then(|| reducers.iter().filter_map(Reducer::name).collect()),
    }
}

/// How a task's samples become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reducer {
    /// One sample per task: its value as it is (Inspect names no reducer then).
    Single,
    /// The fraction passed.
    Mean,
    /// The unbiased pass@k estimate.
    PassAt(u64),
}

impl Reducer {
    fn name(&self) -> Option<String> {
        match self {
            Reducer::Single => None,
            Reducer::Mean => Some("mean".into()),
            Reducer::PassAt(k) => Some(format!("pass_at_{k}")),
        }
    }

    fn reduce(&self, tally: &Tally) -> f64 {
        match self {
            Reducer::Single | Reducer::Mean => tally.passed as f64 / tally.judged as f64,
            Reducer::PassAt(k) => pass_at_k(tally.judged, tally.passed, *k),
        }
    }
}

/// `mean` when tasks have several samples, then pass@k for each k of assay's reports above 1
/// that every judged task's samples allow (pass@1 is the mean).
fn reducers(epochs: u32, judged: &[(&str, &Tally)]) -> Vec<Reducer> {
    if epochs <= 1 {
        return vec![Reducer::Single];
    }
    let fewest = judged.iter().map(|(_, t)| t.judged).min().unwrap_or(0);
    let mut reducers = vec![Reducer::Mean];
    reducers.extend(
        DEFAULT_KS
            .iter()
            .filter(|&&k| k > 1 && k <= fewest)
            .map(|&k| Reducer::PassAt(k)),
    );
    reducers
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Inspect's `stderr()`: the sample standard deviation (n − 1) over √n; 0 below two values.
fn standard_error(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let Some(mean) = mean(values).filter(|_| values.len() >= 2) else {
        return 0.0;
    };
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (variance / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::log::{EvalError, ModelOutput, Score, INCORRECT};

    fn sample(id: &str, epoch: u32, value: Option<&'static str>) -> EvalSample {
        EvalSample {
            id: id.into(),
            epoch,
            input: String::new(),
            target: String::new(),
            messages: Vec::new(),
            output: ModelOutput::default(),
            scores: value.map(|value| {
                BTreeMap::from([(
                    SCORER.to_string(),
                    Score {
                        value,
                        answer: String::new(),
                        explanation: String::new(),
                        metadata: None,
                    },
                )])
            }),
            metadata: None,
            model_usage: BTreeMap::new(),
            total_time: None,
            error: value
                .is_none()
                .then(|| EvalError::new("infra".into(), String::new())),
            turn_count: None,
        }
    }

    #[test]
    fn accuracy_is_pass_at_1_over_judged_tasks_and_unjudged_samples_are_set_apart() {
        let samples = [
            sample("a", 1, Some(CORRECT)),
            sample("a", 2, Some(INCORRECT)),
            sample("b", 1, Some(CORRECT)),
            sample("b", 2, None),
            sample("c", 1, None),
            sample("c", 2, None),
        ];
        let figures = figures(&samples, 2);
        let results = &figures.results;
        assert_eq!((results.total_samples, results.completed_samples), (6, 3));
        let mean = &results.scores[0];
        assert_eq!(mean.reducer.as_deref(), Some("mean"));
        assert_eq!(mean.scored_samples, 2);
        // Tasks a (1/2) and b (1/1): mean 0.75, sample sd √0.125 over √2 = 0.25.
        assert_eq!(mean.metrics["accuracy"].value, 0.75);
        assert!((mean.metrics["stderr"].value - 0.25).abs() < 1e-12);
        // b has one judged sample: no pass@k above 1.
        assert_eq!(results.scores.len(), 1);
        assert_eq!(figures.reducers, Some(vec!["mean".to_string()]));
        assert_eq!(results.metadata.tasks_set_apart, ["c"]);
        assert_eq!(results.metadata.samples_set_apart, 3);
        assert_eq!(figures.reductions[0].samples.len(), 2);
    }

    #[test]
    fn one_sample_per_task_names_no_reducer_and_nothing_judged_gives_no_figures() {
        let one = figures(&[sample("a", 1, Some(CORRECT))], 1);
        assert_eq!(one.results.scores[0].reducer, None);
        assert_eq!(one.results.scores[0].metrics["stderr"].value, 0.0);
        assert_eq!(one.reducers, None);
        let none = figures(&[sample("a", 1, None)], 1);
        assert!(none.results.scores.is_empty() && none.results.headline.is_none());
    }

    #[test]
    fn pass_at_k_where_every_task_allows_it() {
        let mut samples = Vec::new();
        for epoch in 1..=5 {
            samples.push(sample(
                "a",
                epoch,
                Some(if epoch == 1 { CORRECT } else { INCORRECT }),
            ));
        }
        let figures = figures(&samples, 5);
        let names: Vec<Option<String>> = figures
            .results
            .scores
            .iter()
            .map(|s| s.reducer.clone())
            .collect();
        assert_eq!(names, [Some("mean".into()), Some("pass_at_5".into())]);
        assert_eq!(figures.results.scores[1].metrics["accuracy"].value, 1.0);
    }
}
