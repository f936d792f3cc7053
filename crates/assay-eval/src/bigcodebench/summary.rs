//! What an evaluation came to, from its records: pass@k two ways and the summary.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use assay_records::{
    BudgetsSaved, EvalSummary, Gamed, GroundTruthSummary, SampleRecord, Scores, Slow, Status,
    TimePolicy, OFFICIAL_TIMEOUT_SECONDS,
};
use assay_score::{pass_at_ks, TaskTally, DEFAULT_KS};
use assay_tasks::bigcodebench::Dataset;

/// Slowest samples a summary lists.
const SLOWEST_LISTED: usize = 10;

/// pass@k with `infra` samples left out (tasks with none judged left out too), and with
/// them counted as failures.
pub fn scores(results: &BTreeMap<usize, SampleRecord>) -> Scores {
    let empty = TaskTally {
        samples: 0,
        passed: 0,
    };
    let mut judged: BTreeMap<&str, TaskTally> = BTreeMap::new();
    let mut all: BTreeMap<&str, TaskTally> = BTreeMap::new();
    for result in results.values() {
        let passed = result.passed();
        let tally = all.entry(result.task_id.as_str()).or_insert(empty);
        tally.samples += 1;
        tally.passed += u64::from(passed);
        if result.official.is_some() {
            let tally = judged.entry(result.task_id.as_str()).or_insert(empty);
            tally.samples += 1;
            tally.passed += u64::from(passed);
        }
    }
    let named = |tallies: Vec<TaskTally>| {
        pass_at_ks(&tallies, DEFAULT_KS)
            .into_iter()
            .map(|(k, v)| (format!("pass@{k}"), v))
            .collect()
    };
    Scores {
        pass_at_k: named(judged.values().copied().collect()),
        tasks_judged: judged.len(),
        tasks_set_apart: all
            .keys()
            .filter(|task| !judged.contains_key(*task))
            .map(|task| task.to_string())
            .collect(),
        samples_set_apart: results.values().filter(|r| r.official.is_none()).count(),
        pass_at_k_infra_as_fail: named(all.into_values().collect()),
    }
}

/// The summary of `results` over `dataset`.
pub fn summarize(
    dataset: &Dataset,
    results: &BTreeMap<usize, SampleRecord>,
    scores: Scores,
    ground_truth: GroundTruthSummary,
    time_policy: TimePolicy,
    wall: Duration,
) -> EvalSummary {
    let mut statuses = BTreeMap::new();
    let mut officials = BTreeMap::new();
    let mut infra = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for result in results.values() {
        seen.insert(result.task_id.as_str());
        *statuses.entry(result.status.to_string()).or_insert(0) += 1;
        match &result.official {
            Some(verdict) => {
                *officials
                    .entry(verdict.status.as_str().to_string())
                    .or_insert(0) += 1;
            }
            None => {
                infra.insert(result.task_id.clone(), result.reason.clone());
            }
        }
    }
    let mut slowest: Vec<Slow> = results
        .values()
        .map(|r| Slow(r.task_id.clone(), r.wall_seconds, r.status.to_string()))
        .collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(SLOWEST_LISTED);
    let mut budgets_saved = BudgetsSaved::default();
    let official = OFFICIAL_TIMEOUT_SECONDS as f64;
    for result in results.values() {
        if result.status == Status::Timeout && result.wall_seconds < official {
            budgets_saved.samples += 1;
            budgets_saved.seconds += official - result.wall_seconds;
        }
    }
    EvalSummary {
        scores,
        tasks_in_dataset: dataset.tasks.len(),
        tasks_missing: dataset
            .tasks
            .iter()
            .filter(|t| !seen.contains(t.task_id.as_str()))
            .map(|t| t.task_id.clone())
            .collect(),
        samples: results.len(),
        statuses,
        official: officials,
        infra,
        gamed: Gamed::of(results.values()),
        slowest,
        ground_truth,
        time_policy,
        budgets_saved,
        tokens: None,
        cost_usd: None,
        context: None,
        stability: None,
        wall_seconds: wall.as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::{IsolationLevel, Official, OfficialStatus, Status};

    fn result(index: usize, task: &str, status: Option<OfficialStatus>) -> SampleRecord {
        SampleRecord {
            index,
            task_id: task.into(),
            program_digest: String::new(),
            status: if status.is_some() {
                Status::Fail
            } else {
                Status::Infra
            },
            reason: String::new(),
            official: status.map(|s| Official::new(s, Vec::new())),
            infra: None,
            tests: Vec::new(),
            integrity: Vec::new(),
            wall_seconds: 0.0,
            cpu_seconds: None,
            memory_peak_bytes: None,
            processes_peak: None,
            isolation: IsolationLevel::Full,
            stdout: Default::default(),
            stderr: Default::default(),
        }
    }

    #[test]
    fn scores_say_what_they_leave_out_and_the_official_figure_here() {
        // Task a: judged, passes. Task b: one pass, one infra. Task c: infra only.
        let pass = Some(OfficialStatus::Pass);
        let results: BTreeMap<usize, SampleRecord> = [
            result(0, "a", pass),
            result(1, "b", pass),
            result(2, "b", None),
            result(3, "c", None),
        ]
        .into_iter()
        .map(|r| (r.index, r))
        .collect();
        let scores = scores(&results);
        // Left out: c entirely, b's infra sample. b has one judged sample: pass@1 = 1.
        assert_eq!(scores.pass_at_k, [("pass@1".to_string(), 1.0)].into());
        assert_eq!(scores.tasks_judged, 2);
        assert_eq!(scores.tasks_set_apart, ["c"]);
        assert_eq!(scores.samples_set_apart, 2);
        // Counted as failures: a 1, b 1/2, c 0 over three tasks.
        assert_eq!(
            scores.pass_at_k_infra_as_fail,
            [("pass@1".to_string(), 0.5)].into()
        );
    }

    #[test]
    fn the_summary_counts_what_budgets_saved_against_the_official_limit() {
        let timeout = Some(OfficialStatus::Timeout);
        let mut hung_early = result(0, "a", timeout);
        (hung_early.status, hung_early.wall_seconds) = (Status::Timeout, 50.0);
        let mut hung_at_cap = result(1, "b", timeout);
        (hung_at_cap.status, hung_at_cap.wall_seconds) = (Status::Timeout, 240.0);
        let mut passed = result(2, "c", Some(OfficialStatus::Pass));
        (passed.status, passed.wall_seconds) = (Status::Pass, 1.0);
        let results: BTreeMap<usize, SampleRecord> = [hung_early, hung_at_cap, passed]
            .into_iter()
            .map(|r| (r.index, r))
            .collect();
        let dataset = Dataset::embedded("v0.1.4", assay_tasks::bigcodebench::Subset::Hard).unwrap();
        let ground_truth = GroundTruthSummary {
            pass_rate: 1.0,
            failed_tasks: BTreeMap::new(),
            cache: Default::default(),
            processes: assay_records::ProcessPeaks {
                measured: 0,
                highest: Vec::new(),
            },
        };
        let summary = summarize(
            &dataset,
            &results,
            scores(&results),
            ground_truth,
            TimePolicy::DEFAULT,
            Duration::from_secs(1),
        );
        assert_eq!(summary.budgets_saved.samples, 1);
        assert_eq!(summary.budgets_saved.seconds, 190.0);
        assert_eq!(
            summary.slowest[0],
            Slow("b".into(), 240.0, "timeout".into())
        );
    }
}
