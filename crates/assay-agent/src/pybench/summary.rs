//! The figures of a PyBench run: pass rates (over every task, as the paper divides, and over
//! the judged ones), per paper category, and average turns.

use std::collections::BTreeMap;

use assay_records::{
    CategoryFigures, EpisodeEnd, EpisodeRecord, Prices, PublishedFigures, PybenchFigures,
    PybenchSummary, Status, TokenUsage, Verdicts,
};

use super::checks::Mode;

/// A failed task's turns, as the paper's average counts them.
const FAILED_TURNS: f64 = 10.0;

/// The figures of `records` (one per task of the run) with `mode` at their head, the paper's
/// for the same model, and what the tokens cost at `prices`.
pub fn summarize(
    records: &[EpisodeRecord],
    mode: Mode,
    published: Option<PublishedFigures>,
    prices: Option<&Prices>,
    wall_seconds: f64,
) -> PybenchSummary {
    let judged: Vec<&EpisodeRecord> = records
        .iter()
        .filter(|r| r.status != Status::Infra)
        .collect();
    let mut tokens = TokenUsage::default();
    for record in records {
        tokens += &record.tokens;
    }
    let infra = records
        .iter()
        .filter(|r| r.status == Status::Infra)
        .map(|r| (r.task_id.clone(), r.reason.clone()))
        .collect();
    let context_full = records
        .iter()
        .filter(|r| r.end == EpisodeEnd::ContextFull)
        .map(|r| (r.task_id.clone(), r.end_reason.clone()))
        .collect();
    let cut_while_thinking = records
        .iter()
        .filter(|r| r.end == EpisodeEnd::CutWhileThinking)
        .map(|r| r.task_id.clone())
        .collect();
    PybenchSummary {
        checks: mode.as_str().into(),
        tasks: records.len(),
        judged: judged.len(),
        faithful: figures(records, |v| v.faithful.status),
        fixed: figures(records, |v| v.fixed.status),
        average_turns_raw: mean(judged.iter().map(|r| f64::from(r.turns))),
        cost_usd: prices.map(|p| p.cost(&tokens)),
        reasoning_cost_usd: prices.and_then(|p| p.reasoning_cost(&tokens)),
        tokens,
        infra,
        context_full,
        cut_while_thinking,
        published,
        judges: Vec::new(),
        wall_seconds,
    }
}

fn figures(records: &[EpisodeRecord], status: impl Fn(&Verdicts) -> Status) -> PybenchFigures {
    // A record that could not run is `infra` whatever its checks say.
    let verdict = |r: &EpisodeRecord| {
        if r.status == Status::Infra {
            Status::Infra
        } else {
            status(&r.verdicts)
        }
    };
    let passed = records
        .iter()
        .filter(|r| verdict(r) == Status::Pass)
        .count();
    let judged = records
        .iter()
        .filter(|r| verdict(r) != Status::Infra)
        .count();
    let mut categories: BTreeMap<String, CategoryFigures> = BTreeMap::new();
    for record in records {
        let name = record.category.clone().unwrap_or_else(|| "unknown".into());
        let entry = categories.entry(name).or_default();
        entry.tasks += 1;
        if verdict(record) == Status::Pass {
            entry.passed += 1;
        }
    }
    for entry in categories.values_mut() {
        entry.pass_rate = ratio(entry.passed, entry.tasks);
    }
    let turns = records
        .iter()
        .filter(|r| verdict(r) != Status::Infra)
        .map(|r| {
            if verdict(r) == Status::Pass {
                f64::from(r.turns)
            } else {
                FAILED_TURNS
            }
        });
    PybenchFigures {
        passed,
        pass_rate: ratio(passed, records.len()),
        pass_rate_judged: ratio(passed, judged),
        categories,
        average_turns: mean(turns),
    }
}

/// `part / whole`, 0 when there is no whole.
pub(crate) fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The mean of `values`, 0 when there are none.
pub(crate) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::CheckVerdict;

    fn record(
        id: &str,
        category: &str,
        faithful: Status,
        fixed: Status,
        turns: u32,
    ) -> EpisodeRecord {
        let v = |status| CheckVerdict {
            status,
            reason: String::new(),
        };
        EpisodeRecord {
            task_id: id.into(),
            category: Some(category.into()),
            status: faithful,
            reason: String::new(),
            verdicts: Verdicts {
                faithful: v(faithful),
                fixed: v(fixed),
            },
            turns,
            end: EpisodeEnd::Answered,
            end_reason: String::new(),
            cells: vec![],
            tokens: TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 1,
                reasoning_tokens: 0,
            },
            seconds: 1.0,
            outputs: vec![],
        }
    }

    #[test]
    fn rates_count_infra_as_failed_over_all_and_apart_over_judged() {
        let records = [
            record("PyBench/2", "chart_analysis", Status::Pass, Status::Pass, 2),
            record("PyBench/3", "chart_analysis", Status::Fail, Status::Pass, 4),
            record(
                "PyBench/4",
                "text_analysis",
                Status::Infra,
                Status::Infra,
                0,
            ),
            record("PyBench/5", "text_analysis", Status::Pass, Status::Fail, 3),
        ];
        let s = summarize(&records, Mode::Faithful, None, None, 1.0);
        assert_eq!((s.tasks, s.judged), (4, 3));
        assert_eq!(s.faithful.passed, 2);
        assert_eq!(s.faithful.pass_rate, 0.5);
        assert!((s.faithful.pass_rate_judged - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.faithful.categories["text_analysis"].pass_rate, 0.5);
        // Paper turns: 2, 10 (failed), 3.
        assert_eq!(s.faithful.average_turns, 5.0);
        assert_eq!(s.fixed.average_turns, (2.0 + 4.0 + 10.0) / 3.0);
        assert_eq!(s.average_turns_raw, 3.0);
        assert_eq!(s.tokens.prompt_tokens, 40);
        assert_eq!(s.infra.len(), 1);
        assert_eq!(s.cost_usd, None);
    }

    #[test]
    fn tokens_cost_what_the_prices_say() {
        let records = [record(
            "PyBench/2",
            "chart_analysis",
            Status::Pass,
            Status::Pass,
            2,
        )];
        let prices = Prices {
            prompt_usd_per_million: 1_000_000.0,
            completion_usd_per_million: 2_000_000.0,
        };
        let s = summarize(&records, Mode::Faithful, None, Some(&prices), 1.0);
        // 10 prompt tokens at $1 each, 1 completion token at $2.
        assert_eq!(s.cost_usd, Some(12.0));
    }
}
