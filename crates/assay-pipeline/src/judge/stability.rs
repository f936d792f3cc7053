//! `--stability N`: after an evaluation, every judged sample runs again once per round, each
//! round changing one condition its verdict ought not to depend on (another directory listing
//! order, other seeds, other timing and CPU load; docs/parity.md#stability). What comes out:
//! the samples whose verdict changed, with what changed it, and pass@1 over the rounds.
//!
//! A sample whose verdict a round changed runs once more under the run's own conditions: if
//! its verdict changes then too, what the round changed is not (alone) why. Every rerun is
//! journaled in `stability.jsonl` as it ends, so a session that stops resumes where it was.

use std::collections::BTreeMap;

use assay_eval::bigcodebench::evaluation::Judging;
use assay_eval::bigcodebench::ground_truth::References;
use assay_eval::bigcodebench::samples::Samples;
use assay_eval::bigcodebench::summary::scores;
use assay_eval::resume::{reuse, Wanted};
use assay_records::{
    Change, ChangedIn, ChangedVerdict, Conditions, Listener, PassAt1Range, RoundFigures, RunEvent,
    SampleRecord, StabilityRecord, StabilitySummary, Status,
};
use assay_rundir::{Journal, RunDir};

use crate::error::PipelineError;
use crate::judge::Judge;

/// The journal of stability reruns in a run directory.
pub const STABILITY: &str = "stability.jsonl";

/// A rerun's place: its round, what the round changed (none: the confirmation under the run's
/// own conditions), the sample's index.
type Key = (u32, Option<Change>, usize);

/// Runs `judge`'s stability rounds over the `samples` judged (`results`) on `judging`.
pub(crate) async fn rounds(
    judge: &Judge,
    judging: &Judging<'_>,
    samples: &Samples,
    run: &mut RunDir,
    results: &BTreeMap<usize, SampleRecord>,
    references: &References,
    listener: &mut dyn Listener,
) -> Result<StabilitySummary, PipelineError> {
    let own = judge.engine().conditions();
    let judged: Vec<&SampleRecord> = results
        .values()
        .filter(|r| r.status != Status::Infra)
        .collect();
    let (journal, earlier) = run.journal::<StabilityRecord>(STABILITY)?;
    let mut reruns = Reruns {
        journal,
        kept: kept(own, earlier, &judged),
    };
    let judged: Vec<usize> = judged.iter().map(|r| r.index).collect();
    let mut walls = Vec::new();
    for round in 1..=judge.stability_rounds() {
        let started = std::time::Instant::now();
        let change = Change::of_round(round).0;
        let conditions = conditions_of(own, round, Some(change));
        let todo: Vec<usize> = judged
            .iter()
            .copied()
            .filter(|&i| !reruns.kept.contains_key(&(round, Some(change), i)))
            .collect();
        listener.on_event(&RunEvent::StabilityRoundStarted {
            round,
            change,
            samples: judged.len(),
            done: judged.len() - todo.len(),
        });
        if !todo.is_empty() {
            // Twice the jobs on the same CPUs: each computes at about half speed, next to
            // other neighbours.
            let jobs = (change == Change::Load).then(|| 2 * judge.engine().concurrency());
            let engine = judge.other_engine(conditions, jobs).await?;
            let other = Judging {
                engine: &engine,
                ..*judging
            };
            let place = (round, Some(change), conditions);
            reruns
                .run((&other, samples), &todo, references, place, listener)
                .await?;
        }
        let confirm: Vec<usize> = judged
            .iter()
            .copied()
            .filter(|i| {
                let rerun = reruns.kept.get(&(round, Some(change), *i));
                rerun.is_some_and(|r| changed(&results[i], &r.record))
                    && !reruns.kept.contains_key(&(round, None, *i))
            })
            .collect();
        if !confirm.is_empty() {
            reruns
                .run(
                    (judging, samples),
                    &confirm,
                    references,
                    (round, None, own),
                    listener,
                )
                .await?;
        }
        walls.push(started.elapsed().as_secs_f64());
    }
    reruns.journal.sync()?;
    Ok(summarize(own, &walls, results, &reruns.kept))
}

/// The conditions of the reruns at `(round, change)`: the round's, or the run's own for the
/// confirmations (`change` none).
fn conditions_of(own: Conditions, round: u32, change: Option<Change>) -> Conditions {
    change.map_or(own, |c| own.changed(c, Change::of_round(round).1))
}

/// What an earlier session's reruns still give: a rerun counts for a `judged` sample of the
/// same task that runs the same program (wherever that sample now is in the file, as
/// [`reuse`] matches verdicts), in the same round, under the conditions that round has now.
fn kept(
    own: Conditions,
    earlier: Vec<StabilityRecord>,
    judged: &[&SampleRecord],
) -> BTreeMap<Key, StabilityRecord> {
    let mut by_place: BTreeMap<(u32, Option<Change>), Vec<SampleRecord>> = BTreeMap::new();
    for rerun in earlier {
        let (round, change) = (rerun.round, rerun.change);
        let its_rounds = change.is_none_or(|c| c == Change::of_round(round).0);
        if its_rounds && rerun.conditions == conditions_of(own, round, change) {
            by_place
                .entry((round, change))
                .or_default()
                .push(rerun.record);
        }
    }
    let mut kept = BTreeMap::new();
    for ((round, change), records) in by_place {
        let wanted = judged.iter().map(|r| Wanted {
            index: r.index,
            task_id: &r.task_id,
            digest: &r.program_digest,
        });
        for (index, record) in reuse(records, wanted) {
            let rerun = StabilityRecord {
                round,
                change,
                conditions: conditions_of(own, round, change),
                record,
            };
            kept.insert((round, change, index), rerun);
        }
    }
    kept
}

/// The reruns so far, and their journal.
struct Reruns {
    journal: Journal,
    kept: BTreeMap<Key, StabilityRecord>,
}

impl Reruns {
    /// Runs `indexes` of `samples` on `judging`'s engine as rerun `place` (round, change,
    /// conditions), journaling each.
    async fn run(
        &mut self,
        (judging, samples): (&Judging<'_>, &Samples),
        indexes: &[usize],
        references: &References,
        place: (u32, Option<Change>, Conditions),
        listener: &mut dyn Listener,
    ) -> Result<(), PipelineError> {
        let (round, change, conditions) = place;
        judging
            .rerun(samples, indexes, references, |record| {
                let rerun = StabilityRecord {
                    round,
                    change,
                    conditions,
                    record,
                };
                self.journal.append(&rerun)?;
                let key = (round, change, rerun.record.index);
                listener.on_event(&RunEvent::SampleRerun {
                    record: Box::new(rerun.clone()),
                });
                self.kept.insert(key, rerun);
                Ok(())
            })
            .await?;
        Ok(())
    }
}

/// Whether `rerun` changed `run`'s verdict: the official pass against anything else, as pass@k
/// counts it. A rerun that could not be judged (`infra`) changes nothing.
fn changed(run: &SampleRecord, rerun: &SampleRecord) -> bool {
    rerun.status != Status::Infra && run.passed() != rerun.passed()
}

fn pass_at_1(results: &BTreeMap<usize, SampleRecord>) -> f64 {
    scores(results)
        .pass_at_k
        .get("pass@1")
        .copied()
        .unwrap_or(0.0)
}

/// The figures of the rounds from the reruns kept; `walls`: the seconds this session spent on
/// each round, in order.
fn summarize(
    own: Conditions,
    walls: &[f64],
    results: &BTreeMap<usize, SampleRecord>,
    kept: &BTreeMap<Key, StabilityRecord>,
) -> StabilitySummary {
    let run = pass_at_1(results);
    let mut range = PassAt1Range {
        run,
        min: run,
        max: run,
    };
    let mut figures = Vec::new();
    let mut verdicts: BTreeMap<usize, ChangedVerdict> = BTreeMap::new();
    for (round, wall) in (1..).zip(walls) {
        let change = Change::of_round(round).0;
        let mut replaced = results.clone();
        let (mut samples, mut changes) = (0, 0);
        for ((_, _, index), rerun) in kept
            .iter()
            .filter(|((r, c, _), _)| *r == round && *c == Some(change))
        {
            let Some(result) = results.get(index).filter(|r| r.status != Status::Infra) else {
                continue;
            };
            samples += 1;
            if rerun.record.status != Status::Infra {
                replaced.insert(*index, rerun.record.clone());
            }
            if !changed(result, &rerun.record) {
                continue;
            }
            changes += 1;
            let verdict = verdicts.entry(*index).or_insert_with(|| ChangedVerdict {
                index: *index,
                task_id: result.task_id.clone(),
                status: result.status,
                rounds: Vec::new(),
                changes_anyway: false,
            });
            verdict.rounds.push(ChangedIn {
                round,
                change,
                status: rerun.record.status,
                reason: rerun.record.reason.clone(),
            });
            let again = kept.get(&(round, None, *index));
            verdict.changes_anyway |= again.is_some_and(|a| changed(result, &a.record));
        }
        let pass = pass_at_1(&replaced);
        range.min = range.min.min(pass);
        range.max = range.max.max(pass);
        figures.push(RoundFigures {
            round,
            change,
            conditions: conditions_of(own, round, Some(change)),
            samples,
            pass_at_1: pass,
            changed: changes,
            wall_seconds: *wall,
        });
    }
    StabilitySummary {
        conditions: own,
        rounds: figures,
        pass_at_1: range,
        changed: verdicts.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::{IsolationLevel, Official, OfficialStatus};

    fn record(index: usize, task: &str, status: Status) -> SampleRecord {
        let official = match status {
            Status::Infra => None,
            Status::Pass => Some(OfficialStatus::Pass),
            Status::Timeout => Some(OfficialStatus::Timeout),
            _ => Some(OfficialStatus::Fail),
        };
        SampleRecord {
            index,
            task_id: task.into(),
            program_digest: format!("p{index}"),
            status,
            reason: format!("{status:?}"),
            official: official.map(|status| Official {
                status,
                details: Default::default(),
            }),
            infra: None,
            tests: Vec::new(),
            integrity: Vec::new(),
            wall_seconds: 1.0,
            cpu_seconds: None,
            memory_peak_bytes: None,
            processes_peak: None,
            isolation: IsolationLevel::Full,
            stdout: Default::default(),
            stderr: Default::default(),
        }
    }

    fn rerun(round: u32, change: Option<Change>, record: SampleRecord) -> (Key, StabilityRecord) {
        let conditions = conditions_of(Conditions::default(), round, change);
        let key = (round, change, record.index);
        let rerun = StabilityRecord {
            round,
            change,
            conditions,
            record,
        };
        (key, rerun)
    }

    #[test]
    fn a_changed_verdict_names_its_rounds_and_whether_it_changes_anyway() {
        use Status::{Fail, Infra, Pass, Timeout};
        // Four tasks, one sample each: a (pass), b (fail), c (pass), d (infra, never rerun).
        let results: BTreeMap<usize, SampleRecord> = [
            record(0, "a", Pass),
            record(1, "b", Fail),
            record(2, "c", Pass),
            record(3, "d", Infra),
        ]
        .into_iter()
        .map(|r| (r.index, r))
        .collect();
        let listing = Some(Change::Listing);
        let seed = Some(Change::Seed);
        let kept: BTreeMap<Key, StabilityRecord> = [
            // Round 1 (listing): a fails, and passes again as the run ran it: the listing.
            rerun(1, listing, record(0, "a", Fail)),
            rerun(1, None, record(0, "a", Pass)),
            rerun(1, listing, record(1, "b", Fail)),
            rerun(1, listing, record(2, "c", Pass)),
            // Round 2 (seeds): b passes, and passes again as the run ran it: it changes anyway.
            // c times out instead of passing (a change), and passes as the run ran it.
            rerun(2, seed, record(0, "a", Pass)),
            rerun(2, seed, record(1, "b", Pass)),
            rerun(2, None, record(1, "b", Pass)),
            rerun(2, seed, record(2, "c", Timeout)),
            rerun(2, None, record(2, "c", Pass)),
        ]
        .into_iter()
        .collect();
        let summary = summarize(Conditions::default(), &[1.0, 2.0], &results, &kept);
        let third = 1.0 / 3.0;
        assert!(
            (summary.pass_at_1.run - 2.0 * third).abs() < 1e-9,
            "infra set apart"
        );
        assert_eq!(summary.rounds.len(), 2);
        assert_eq!(summary.rounds[0].change, Change::Listing);
        assert_eq!(summary.rounds[0].samples, 3);
        assert_eq!(summary.rounds[0].changed, 1);
        assert!((summary.rounds[0].pass_at_1 - third).abs() < 1e-9);
        assert_eq!(summary.rounds[1].change, Change::Seed);
        assert_eq!(summary.rounds[1].wall_seconds, 2.0);
        assert_eq!(summary.rounds[1].changed, 2);
        assert!((summary.rounds[1].pass_at_1 - 2.0 * third).abs() < 1e-9);
        assert!((summary.pass_at_1.min - third).abs() < 1e-9);
        assert!((summary.pass_at_1.max - 2.0 * third).abs() < 1e-9);
        let changed: Vec<_> = summary
            .changed
            .iter()
            .map(|c| {
                let rounds: Vec<_> = c.rounds.iter().map(|r| (r.round, r.status)).collect();
                (c.task_id.as_str(), rounds, c.changes_anyway)
            })
            .collect();
        assert_eq!(
            changed,
            [
                ("a", vec![(1, Fail)], false),
                ("b", vec![(2, Pass)], true),
                ("c", vec![(2, Timeout)], false),
            ]
        );
    }

    #[test]
    fn an_earlier_rerun_counts_where_its_sample_now_is_under_its_rounds_conditions() {
        use Status::{Fail, Pass};
        // The run now: task a's sample moved from index 0 to 2 (an answer was added before it).
        let mut moved = record(0, "a", Pass);
        moved.index = 2;
        let b = record(1, "b", Pass);
        let judged = [&b, &moved];
        let own = Conditions::default();
        let (_, a_round_1) = rerun(1, Some(Change::Listing), record(0, "a", Fail));
        let (_, b_round_1) = rerun(1, Some(Change::Listing), record(1, "b", Pass));
        // Round 2 is the seed's now: a listing rerun filed under it is another setting's.
        let (_, misfiled) = rerun(2, Some(Change::Listing), record(1, "b", Pass));
        // A rerun under conditions round 1 no longer has (another key) does not count.
        let (_, stale) = {
            let (key, mut r) = rerun(1, None, record(1, "b", Pass));
            r.conditions.listing_key = 9;
            (key, r)
        };
        // Another program for the same task does not count.
        let (_, edited) = {
            let mut r = record(1, "b", Fail);
            r.program_digest = "other".into();
            rerun(1, None, r)
        };
        let found = kept(
            own,
            vec![a_round_1, b_round_1, misfiled, stale, edited],
            &judged,
        );
        let keys: Vec<Key> = found.keys().copied().collect();
        let listing = Some(Change::Listing);
        assert_eq!(keys, [(1, listing, 1), (1, listing, 2)]);
        assert_eq!(found[&(1, listing, 2)].record.index, 2, "renumbered");
        assert_eq!(found[&(1, listing, 2)].record.status, Fail);
    }
}
