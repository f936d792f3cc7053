//! Shards: one of N parts of a run's tasks, so that N machines (a Slurm array, a Kubernetes
//! Indexed Job) can each run one part into a directory of its own. Tasks are dealt whole (every
//! sample of a task in one shard) and deterministically: the task ids are sorted (by their
//! number where they end in one, so `BigCodeBench/2` comes before `BigCodeBench/10`) and the
//! k-th goes to shard k mod N. Dealing in turn spreads the benchmark's slow neighbourhoods
//! over every shard, and the same ids give the same shards on any machine.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u32,
    /// How many shards the tasks are dealt into.
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`, if `index < count`.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("a run has at least one shard".into());
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count} does not exist: shards are numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// How default run-directory names say which shard they hold: `shard-1-of-4`.
    pub fn slug(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }

    /// The ids of `ids` that fall to this shard, sorted (owned: datasets select by them).
    pub fn deal<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut sorted: Vec<&str> = ids.into_iter().collect();
        sorted.sort_by(|a, b| natural(a).cmp(&natural(b)));
        sorted.dedup();
        let count = self.count as usize;
        let index = self.index as usize;
        sorted
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % count == index)
            .map(|(_, id)| id.to_string())
            .collect()
    }
}

/// A task id's sort key: its text before a trailing number, then the number.
fn natural(id: &str) -> (&str, u64, &str) {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, number) = id.split_at(id.len() - digits);
    (head, number.parse().unwrap_or(0), id)
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not a shard: write I/N, as 0/4"))?;
        let number = |part: &str, what: &str| {
            part.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{text}`: {what} `{part}` is not a number"))
        };
        Shard::new(number(index, "the shard")?, number(count, "the count")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_falls_to_exactly_one_shard_dealt_in_turn_by_number() {
        let ids: Vec<String> = (0..23).map(|n| format!("BigCodeBench/{n}")).collect();
        let mut seen = Vec::new();
        for index in 0..4 {
            let shard = Shard::new(index, 4).unwrap();
            let mine = shard.deal(ids.iter().rev().map(String::as_str));
            assert!(mine.len() == 5 || mine.len() == 6, "{mine:?}");
            seen.extend(mine);
        }
        seen.sort();
        let mut all = ids.clone();
        all.sort();
        assert_eq!(seen, all);
        let first = Shard::new(0, 4).unwrap();
        assert_eq!(
            first.deal(ids.iter().map(String::as_str))[..3],
            ["BigCodeBench/0", "BigCodeBench/4", "BigCodeBench/8"]
        );
        assert_eq!(
            Shard::new(2, 4)
                .unwrap()
                .deal(["PyBench/10", "PyBench/2", "PyBench/9"]),
            ["PyBench/10"],
            "2 < 9 < 10, not as strings"
        );
    }

    #[test]
    fn shards_read_and_print_as_i_of_n() {
        assert_eq!(
            "1/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        assert_eq!(Shard { index: 1, count: 4 }.to_string(), "1/4");
        for (bad, says) in [
            ("4/4", "numbered 0 to 3"),
            ("0/0", "at least one"),
            ("2", "write I/N"),
            ("a/3", "`a` is not a number"),
        ] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
