//! The metrics' names as W&B sorts and filters by them: W&B's run table reads a `.` in a
//! summary key as a path into nested values and cannot sort by a key holding `:` or a space,
//! so for W&B alone each of these becomes `_` (`samples.pass` → `samples_pass`). MLflow keeps
//! the names as they are.

use std::collections::BTreeMap;

/// `metrics` with W&B's names, and a warning for each metric left out because another took
/// its W&B name first (`a.b` and `a_b`).
pub fn of(metrics: &BTreeMap<String, f64>) -> (BTreeMap<String, f64>, Vec<String>) {
    let mut named: BTreeMap<String, (&str, f64)> = BTreeMap::new();
    let mut warnings = Vec::new();
    for (name, value) in metrics {
        let wandb: String = name
            .chars()
            .map(|c| if ".: ".contains(c) { '_' } else { c })
            .collect();
        match named.get(&wandb) {
            Some((first, _)) => warnings.push(format!(
                "the metrics `{first}` and `{name}` are both `{wandb}` in W&B: the first is logged"
            )),
            None => {
                named.insert(wandb, (name, *value));
            }
        }
    }
    let metrics = named.into_iter().map(|(k, (_, v))| (k, v)).collect();
    (metrics, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_colons_and_spaces_become_underscores_and_a_clash_is_said() {
        let metrics = BTreeMap::from([
            ("samples.pass".to_string(), 1.0),
            (
                "judge.openai:gpt-4o.winlose.94dbc972.kappa".to_string(),
                0.5,
            ),
            ("library.a b.tasks".to_string(), 2.0),
            ("library.a_b.tasks".to_string(), 3.0),
            ("pass_at_1".to_string(), 0.25),
        ]);
        let (named, warnings) = of(&metrics);
        assert_eq!(
            named,
            BTreeMap::from([
                ("samples_pass".to_string(), 1.0),
                (
                    "judge_openai_gpt-4o_winlose_94dbc972_kappa".to_string(),
                    0.5
                ),
                ("library_a_b_tasks".to_string(), 2.0),
                ("pass_at_1".to_string(), 0.25),
            ])
        );
        assert_eq!(
            warnings,
            [
                "the metrics `library.a b.tasks` and `library.a_b.tasks` are both \
              `library_a_b_tasks` in W&B: the first is logged"
            ]
        );
    }
}
