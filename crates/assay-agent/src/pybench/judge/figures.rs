//! The figures of one judging: the paper's (Pass Rate (LLM) over the verdicts read, per
//! category, win/tie/lose, average turns with a judge-failed task counted 10) and two no peer
//! gives: how far the judge agrees with the unit checks (Cohen's kappa), and how far its
//! verdict follows the order the pair came in.

use std::collections::BTreeMap;

use assay_records::{
    Agreement, AnswerKeys, CategoryFigures, EpisodeRecord, JudgeFigures, JudgeOrder, JudgeSettings,
    JudgeVerdict, JudgementRecord, PositionBias, Prices, PublishedJudge, Status, TokenUsage,
    WinTieLose,
};

use crate::pybench::checks::Mode;
use crate::pybench::summary::{mean, ratio};

/// A failed task's turns, as upstream's `calculate_avg_step.py` counts them.
const FAILED_TURNS: f64 = 10.0;
/// The verdict upstream counts as passing; `calculate_avg_step.py` counts 10 turns only for
/// "Failed".
const PASS: &str = "Pass";
const FAILED: &str = "Failed";

/// One task of the run and the judge's answers about it.
pub struct Judged<'a> {
    /// The run's episode.
    pub episode: &'a EpisodeRecord,
    /// The answer with the reference as Agent1 (none: not asked; a failed request has its
    /// `error`).
    pub paper: Option<&'a JudgementRecord>,
    /// The answer with the run as Agent1 (none: not asked).
    pub swapped: Option<&'a JudgementRecord>,
}

/// What a judging is, besides its answers.
pub struct Judging {
    /// How it was made.
    pub settings: JudgeSettings,
    /// Whether both orders were asked.
    pub both_orders: bool,
    /// The run's headline checks.
    pub checks: Mode,
    /// The run's average turns as assay counts them (its headline checks).
    pub average_turns_checks: f64,
    /// What the judge's tokens cost.
    pub prices: Option<Prices>,
    /// The paper's figures for the run's model.
    pub published: Option<PublishedJudge>,
    /// Tasks of the run not judged, and why (they have no trajectory).
    pub set_apart: BTreeMap<String, String>,
    /// Tasks of the run, those set apart included.
    pub tasks: usize,
    /// The run's episodes' digest ([`episodes_digest`]).
    pub episodes_digest: String,
}

/// The run's side of a verdict: (the run's, the reference's) values of a field. The order is
/// the request's as this judging asked it (two orders of identical trajectories are one
/// request, answered once).
fn sides<T: Clone>(order: JudgeOrder, agent1: &T, agent2: &T) -> (T, T) {
    match order {
        JudgeOrder::Paper => (agent2.clone(), agent1.clone()),
        JudgeOrder::Swapped => (agent1.clone(), agent2.clone()),
    }
}

/// Which side the verdict prefers: `Some(true)` the run, `Some(false)` the reference, `None`
/// a tie.
fn prefers_run(order: JudgeOrder, verdict: &JudgeVerdict) -> Option<bool> {
    let (run, reference) = score(order, verdict);
    (run != reference).then_some(run > reference)
}

/// The run's and the reference's score: the decision (winlose) or ReasoningQuality +
/// CodeQuality (scores, upstream's Score).
fn score(order: JudgeOrder, verdict: &JudgeVerdict) -> (i64, i64) {
    let (a1, a2) = match (
        &verdict.decision,
        &verdict.reasoning_quality,
        &verdict.code_quality,
    ) {
        (Some(d), _, _) => (d.agent1, d.agent2),
        (None, Some(r), Some(c)) => (
            r.agent1.saturating_add(c.agent1),
            r.agent2.saturating_add(c.agent2),
        ),
        _ => (0, 0),
    };
    sides(order, &a1, &a2)
}

/// The run's and the reference's Pass as written.
fn passes(order: JudgeOrder, verdict: &JudgeVerdict) -> (String, String) {
    sides(order, &verdict.pass.agent1, &verdict.pass.agent2)
}

/// The figures of `judged` (every task of the run but those set apart), `records` being every
/// answer the judging used (their tokens are counted).
pub fn figures(judging: Judging, judged: &[Judged], records: &[&JudgementRecord]) -> JudgeFigures {
    let read: Vec<(&Judged, &JudgeVerdict)> = judged
        .iter()
        .filter_map(|j| Some((j, j.paper?.verdict.as_ref()?)))
        .collect();
    let unreadable = judged
        .iter()
        .filter_map(|j| {
            let record = j.paper?;
            Some((j.episode.task_id.clone(), record.unreadable.clone()?))
        })
        .collect();
    let lenient = read
        .iter()
        .filter_map(|(j, _)| {
            let record = j.paper?;
            (!record.lenient.is_empty())
                .then(|| (j.episode.task_id.clone(), record.lenient.clone()))
        })
        .collect();
    let reasked = judged
        .iter()
        .filter_map(|j| {
            let record = j.paper?;
            (record.ask > 0).then(|| (j.episode.task_id.clone(), record.ask))
        })
        .collect();
    // A request of either order that failed for good (a rerun asks it again).
    let failed = judged
        .iter()
        .filter_map(|j| {
            let why = match (j.paper, j.swapped) {
                (None, _) => "not asked".to_string(),
                (Some(paper), swapped) => {
                    match (&paper.error, swapped.and_then(|r| r.error.as_ref())) {
                        (Some(error), _) => error.clone(),
                        (None, Some(error)) => format!("the swapped order: {error}"),
                        (None, None) => return None,
                    }
                }
            };
            Some((j.episode.task_id.clone(), why))
        })
        .collect();
    let run_passes = |v: &JudgeVerdict| passes(JudgeOrder::Paper, v).0 == PASS;
    let passed = read.iter().filter(|(_, v)| run_passes(v)).count();
    let reference_passed = read
        .iter()
        .filter(|(_, v)| passes(JudgeOrder::Paper, v).1 == PASS)
        .count();

    let mut categories: BTreeMap<String, CategoryFigures> = BTreeMap::new();
    for (judged, verdict) in &read {
        let name = judged
            .episode
            .category
            .clone()
            .unwrap_or_else(|| "unknown".into());
        let figures = categories.entry(name).or_default();
        figures.tasks += 1;
        if run_passes(verdict) {
            figures.passed += 1;
        }
    }
    for figures in categories.values_mut() {
        figures.pass_rate = ratio(figures.passed, figures.tasks);
    }

    let mut win_tie_lose = WinTieLose {
        by: match judging.settings.prompt {
            assay_records::JudgePrompt::Winlose => "decision",
            assay_records::JudgePrompt::Scores => "score",
        }
        .into(),
        ..WinTieLose::default()
    };
    for (_, verdict) in &read {
        match prefers_run(JudgeOrder::Paper, verdict) {
            Some(true) => win_tie_lose.win += 1,
            None => win_tie_lose.tie += 1,
            Some(false) => win_tie_lose.lose += 1,
        }
    }

    let turns = read.iter().map(|(j, v)| {
        if passes(JudgeOrder::Paper, v).0 == FAILED {
            FAILED_TURNS
        } else {
            f64::from(j.episode.turns)
        }
    });
    let average_turns = mean(turns);

    let mut tokens = TokenUsage::default();
    for record in records {
        tokens += &record.usage;
    }
    JudgeFigures {
        key: settings_key(&judging.settings),
        episodes_digest: judging.episodes_digest,
        both_orders: judging.both_orders,
        tasks: judging.tasks,
        set_apart: judging.set_apart,
        read: read.len(),
        unreadable,
        lenient,
        reasked,
        failed,
        passed,
        pass_rate: ratio(passed, read.len()),
        pass_rate_all: ratio(passed, judging.tasks),
        categories,
        reference_pass_rate: ratio(reference_passed, read.len()),
        win_tie_lose,
        average_turns,
        average_turns_checks: judging.average_turns_checks,
        agreement: agreement(&read, judging.checks),
        position: judging.both_orders.then(|| position(judged)),
        answers: judged
            .iter()
            .filter_map(|j| {
                let keys = AnswerKeys {
                    paper: j.paper?.key.clone(),
                    swapped: j.swapped.map(|r| r.key.clone()),
                };
                Some((j.episode.task_id.clone(), keys))
            })
            .collect(),
        requests: records.len(),
        cost_usd: judging.prices.as_ref().map(|p| p.cost(&tokens)),
        tokens,
        published: judging.published,
        settings: judging.settings,
    }
}

/// The judge's verdicts on the run against the checks', over the tasks both judged.
fn agreement(read: &[(&Judged, &JudgeVerdict)], checks: Mode) -> Agreement {
    let mut agreement = Agreement {
        checks: checks.as_str().into(),
        ..Agreement::default()
    };
    for (judged, verdict) in read {
        let episode = judged.episode;
        if episode.status == Status::Infra {
            continue;
        }
        let by_checks = checks.pick(&episode.verdicts).status;
        if by_checks == Status::Infra {
            continue;
        }
        let by_judge = passes(JudgeOrder::Paper, verdict).0 == PASS;
        match (by_judge, by_checks == Status::Pass) {
            (true, true) => agreement.both_pass += 1,
            (true, false) => {
                agreement.judge_only += 1;
                agreement.judge_only_tasks.push(episode.task_id.clone());
            }
            (false, true) => {
                agreement.checks_only += 1;
                agreement.checks_only_tasks.push(episode.task_id.clone());
            }
            (false, false) => agreement.both_fail += 1,
        }
    }
    let n =
        agreement.both_pass + agreement.judge_only + agreement.checks_only + agreement.both_fail;
    agreement.tasks = n;
    if n > 0 {
        let n = n as f64;
        let observed = (agreement.both_pass + agreement.both_fail) as f64 / n;
        let judge_pass = (agreement.both_pass + agreement.judge_only) as f64 / n;
        let checks_pass = (agreement.both_pass + agreement.checks_only) as f64 / n;
        let chance = judge_pass * checks_pass + (1.0 - judge_pass) * (1.0 - checks_pass);
        agreement.observed = observed;
        agreement.kappa = (chance < 1.0).then(|| (observed - chance) / (1.0 - chance));
    }
    agreement
}

/// How the verdicts of the pairs read both ways round differ.
fn position(judged: &[Judged]) -> PositionBias {
    let mut bias = PositionBias::default();
    for judged in judged {
        let (Some(paper), Some(swapped)) = (judged.paper, judged.swapped) else {
            continue;
        };
        let (Some(p), Some(s)) = (&paper.verdict, &swapped.verdict) else {
            continue;
        };
        bias.pairs += 1;
        let task = &judged.episode.task_id;
        // In the paper's order the run is Agent2; swapped, Agent1.
        match (
            prefers_run(JudgeOrder::Paper, p),
            prefers_run(JudgeOrder::Swapped, s),
        ) {
            (a, b) if a == b => bias.consistent += 1,
            (Some(false), Some(true)) => {
                bias.follows_first += 1;
                bias.changed_tasks.push(task.clone());
            }
            (Some(true), Some(false)) => {
                bias.follows_second += 1;
                bias.changed_tasks.push(task.clone());
            }
            _ => {
                bias.other += 1;
                bias.changed_tasks.push(task.clone());
            }
        }
        match (
            passes(JudgeOrder::Paper, p).0 == PASS,
            passes(JudgeOrder::Swapped, s).0 == PASS,
        ) {
            (true, true) | (false, false) => bias.pass_same += 1,
            (true, false) => {
                bias.pass_only_second += 1;
                bias.pass_changed_tasks.push(task.clone());
            }
            (false, true) => {
                bias.pass_only_first += 1;
                bias.pass_changed_tasks.push(task.clone());
            }
        }
    }
    bias.rate = ratio(bias.follows_first + bias.follows_second, bias.pairs);
    bias
}

/// 16 hex digits of BLAKE3 of the settings: what makes two judgings the same. The bound on
/// asking again is left out: a judging with a wider bound reads the same answers and more,
/// and replaces the narrower one; and judgings made before the bound existed keep their keys.
pub fn settings_key(settings: &JudgeSettings) -> String {
    let unbounded = JudgeSettings {
        reasks: 0,
        ..settings.clone()
    };
    digest(&serde_json::to_vec(&unbounded).expect("settings serialize"))
}

/// 16 hex digits of BLAKE3 of `episodes` (in task order): a judging's figures hold while a
/// run's episodes digest the same.
pub fn episodes_digest<'a>(episodes: impl Iterator<Item = &'a EpisodeRecord>) -> String {
    let mut sorted: Vec<&EpisodeRecord> = episodes.collect();
    sorted.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let mut hasher = blake3::Hasher::new();
    for episode in sorted {
        hasher.update(&serde_json::to_vec(episode).expect("records serialize"));
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// 16 hex digits of BLAKE3.
pub fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::JudgePrompt;

    /// A judging made before `reasks` existed keeps its key (a rerun replaces it rather than
    /// adding a second), and a wider bound is the same judging.
    #[test]
    fn the_bound_on_asking_again_leaves_the_settings_key_as_it_was() {
        let settings = JudgeSettings {
            judge: "openai:gpt-4o".into(),
            prompt: JudgePrompt::Winlose,
            reference: "data:trajectory.jsonl".into(),
            reference_digest: "0f2aa0df4e8f2134".into(),
            temperature: 0.2,
            top_p: Some(0.5),
            max_tokens: 1000,
            frequency_penalty: Some(1.02),
            presence_penalty: Some(1.0),
            reasoning: None,
            reasks: 2,
            extra_body: None,
        };
        // The settings as an assay without the bound wrote them.
        let before = r#"{"judge":"openai:gpt-4o","prompt":"winlose","reference":"data:trajectory.jsonl","reference_digest":"0f2aa0df4e8f2134","temperature":0.2,"top_p":0.5,"max_tokens":1000,"frequency_penalty":1.02,"presence_penalty":1.0}"#;
        assert_eq!(settings_key(&settings), digest(before.as_bytes()));
        let wider = JudgeSettings {
            reasks: 5,
            ..settings.clone()
        };
        assert_eq!(settings_key(&wider), settings_key(&settings));
        let other_body = JudgeSettings {
            extra_body: Some(serde_json::Map::from_iter([("seed".into(), 1.into())])),
            ..settings.clone()
        };
        assert_ne!(settings_key(&other_body), settings_key(&settings));
    }
}
