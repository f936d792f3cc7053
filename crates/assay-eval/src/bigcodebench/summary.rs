//! What an evaluation came to, from its records: pass@k two ways and the summary, counted one
//! record at a time (per task, never every record held), so that a run's memory does not grow
//! with its samples.

use std::collections::BTreeMap;
use std::time::Duration;

use assay_records::{
    BudgetsSaved, EvalSummary, Gamed, GroundTruthSummary, SampleRecord, Scores, Slow, Status,
    TimePolicy, OFFICIAL_TIMEOUT_SECONDS,
};
use assay_score::{pass_at_ks, TaskTally, DEFAULT_KS};
use assay_tasks::bigcodebench::Dataset;

/// Slowest samples a summary lists.
const SLOWEST_LISTED: usize = 10;

/// A run's records counted as they are read: everything its figures are made of.
#[derive(Debug, Default)]
pub struct Tally {
    /// Per task, its samples with a verdict (`infra` set apart).
    judged: BTreeMap<String, TaskTally>,
    /// Per task, all its samples (`infra` as failures).
    all: BTreeMap<String, TaskTally>,
    samples: usize,
    set_apart: usize,
    statuses: BTreeMap<String, usize>,
    officials: BTreeMap<String, usize>,
    /// The last `infra` reason of each task with one.
    infra: BTreeMap<String, String>,
    gamed: Gamed,
    /// Slowest first; among equals, in record order.
    slowest: Vec<Slow>,
    budgets_saved: BudgetsSaved,
    /// Per task, its slowest sample run to a verdict.
    walls: BTreeMap<String, f64>,
}

impl Tally {
    /// Counts one more sample's record.
    pub fn add(&mut self, record: &SampleRecord) {
        let passed = u64::from(record.passed());
        let count = |tallies: &mut BTreeMap<String, TaskTally>| {
            let tally = tallies.entry(record.task_id.clone()).or_insert(TaskTally {
                samples: 0,
                passed: 0,
            });
            tally.samples += 1;
            tally.passed += passed;
        };
        count(&mut self.all);
        self.samples += 1;
        *self.statuses.entry(record.status.to_string()).or_insert(0) += 1;
        match &record.official {
            Some(verdict) => {
                count(&mut self.judged);
                *self
                    .officials
                    .entry(verdict.status.as_str().to_string())
                    .or_insert(0) += 1;
            }
            None => {
                self.set_apart += 1;
                self.infra
                    .insert(record.task_id.clone(), record.reason.clone());
            }
        }
        self.gamed.add(record);
        let wall = record.wall_seconds;
        let at = self
            .slowest
            .partition_point(|s| s.1.total_cmp(&wall).is_ge());
        if at < SLOWEST_LISTED {
            let slow = Slow(record.task_id.clone(), wall, record.status.to_string());
            self.slowest.insert(at, slow);
            self.slowest.truncate(SLOWEST_LISTED);
        }
        let official = OFFICIAL_TIMEOUT_SECONDS as f64;
        if record.status == Status::Timeout && wall < official {
            self.budgets_saved.samples += 1;
            self.budgets_saved.seconds += official - wall;
        }
        if record.status != Status::Infra {
            let seen = self.walls.entry(record.task_id.clone()).or_insert(0.0);
            *seen = seen.max(wall);
        }
    }

    /// Per task, its slowest sample run to a verdict (what orders a later run).
    pub fn walls(&self) -> &BTreeMap<String, f64> {
        &self.walls
    }

    /// pass@k with `infra` samples left out (tasks with none judged left out too), and with
    /// them counted as failures.
    pub fn scores(&self) -> Scores {
        let named = |tallies: Vec<TaskTally>| {
            pass_at_ks(&tallies, DEFAULT_KS)
                .into_iter()
                .map(|(k, v)| (format!("pass@{k}"), v))
                .collect()
        };
        Scores {
            pass_at_k: named(self.judged.values().copied().collect()),
            tasks_judged: self.judged.len(),
            tasks_set_apart: self
                .all
                .keys()
                .filter(|task| !self.judged.contains_key(*task))
                .cloned()
                .collect(),
            samples_set_apart: self.set_apart,
            pass_at_k_infra_as_fail: named(self.all.values().copied().collect()),
        }
    }

    /// The summary over `dataset`.
    pub fn summary(
        self,
        dataset: &Dataset,
        ground_truth: GroundTruthSummary,
        time_policy: TimePolicy,
        wall: Duration,
    ) -> EvalSummary {
        EvalSummary {
            scores: self.scores(),
            tasks_in_dataset: dataset.tasks.len(),
            tasks_missing: dataset
                .tasks
                .iter()
                .filter(|t| !self.all.contains_key(&t.task_id))
                .map(|t| t.task_id.clone())
                .collect(),
            samples: self.samples,
            statuses: self.statuses,
            official: self.officials,
            infra: self.infra,
            gamed: self.gamed,
            slowest: self.slowest,
            ground_truth,
            time_policy,
            budgets_saved: self.budgets_saved,
            tokens: None,
            cost_usd: None,
            context: None,
            stability: None,
            wall_seconds: wall.as_secs_f64(),
        }
    }
}

/// pass@k of `results`, two ways ([`Tally::scores`]).
pub fn scores(results: &BTreeMap<usize, SampleRecord>) -> Scores {
    let mut tally = Tally::default();
    for record in results.values() {
        tally.add(record);
    }
    tally.scores()
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
        let mut tally = Tally::default();
        for record in results.values() {
            tally.add(record);
        }
        let summary = tally.summary(
            &dataset,
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
