//! BigCodeBench (arXiv 2406.15877): 1,140 function-level tasks, each with a `unittest` class.
//!
//! The official harness evaluates against one dataset version at a time; the versions differ
//! in a handful of tasks (fixed prompts, tests that no longer need the internet). All three that
//! matter are embedded: `v0.1.4` (the harness's default since February 2025), `v0.1.2` (its
//! default in December 2024, when the reference runs in our parity fixtures were made) and
//! `v0.1.0_hf` (what the original leaderboard calls 0.1.0).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;

const V0_1_4: &[u8] = include_bytes!("../data/BigCodeBench-v0.1.4.jsonl.gz");
const V0_1_2: &[u8] = include_bytes!("../data/BigCodeBench-v0.1.2.jsonl.gz");
const V0_1_0_HF: &[u8] = include_bytes!("../data/BigCodeBench-v0.1.0_hf.jsonl.gz");
const HARD_IDS: &str = include_str!("../data/hard_task_ids.json");

/// Dataset versions this build embeds, the default first.
pub const VERSIONS: &[&str] = &["v0.1.4", "v0.1.2", "v0.1.0_hf"];

/// The whole benchmark, or its Hard subset (148 tasks selected by the authors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subset {
    /// Every task in the dataset.
    Full,
    /// Only the tasks whose ids are in the Hard list.
    Hard,
}

impl Subset {
    /// The official name, as in results files (`full`, `hard`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Subset::Full => "full",
            Subset::Hard => "hard",
        }
    }
}

pub use assay_records::Split;

/// One task, in the Hugging Face schema's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// `BigCodeBench/<n>`.
    pub task_id: String,
    /// The signature and docstring (Complete prompt).
    pub complete_prompt: String,
    /// The natural-language instruction (Instruct prompt).
    pub instruct_prompt: String,
    /// The reference solution's body, to append to `complete_prompt`.
    pub canonical_solution: String,
    /// The imports, constants and signature, without the docstring.
    pub code_prompt: String,
    /// Test source defining `class TestCases(unittest.TestCase)`.
    pub test: String,
    /// The function under test (always `task_func`).
    pub entry_point: String,
    /// The libraries the task uses (top-level module names).
    pub libs: Vec<String>,
}

impl Task {
    /// The number in `BigCodeBench/<n>`, for ordering.
    pub fn number(&self) -> u32 {
        task_number(&self.task_id).unwrap_or(u32::MAX)
    }

    /// The reference solution as a complete program: prompt plus canonical body.
    pub fn reference_solution(&self) -> String {
        format!("{}\n{}", self.complete_prompt, self.canonical_solution)
    }
}

/// The number in `BigCodeBench/<n>`.
pub fn task_number(task_id: &str) -> Option<u32> {
    task_id.strip_prefix("BigCodeBench/")?.parse().ok()
}

/// A set of tasks from one dataset file, in task order.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// `v0.1.4`... for embedded data, the file path otherwise.
    pub source: String,
    /// Which subset of the file's tasks was kept.
    pub subset: Subset,
    /// The tasks, ordered by task number.
    pub tasks: Vec<Task>,
    /// A digest of the file's (decompressed) content: what caches of results and timings are
    /// keyed by.
    pub digest: String,
}

/// The paper's domain of a library the tasks use (`numpy` → `Computation`): one of
/// Computation, Cryptography, General, Network, System, Time, Visualization
/// (`data/lib2domain.json`, from the official repository's analysis).
pub fn domain(library: &str) -> Option<&'static str> {
    static DOMAINS: std::sync::OnceLock<std::collections::BTreeMap<String, String>> =
        std::sync::OnceLock::new();
    DOMAINS
        .get_or_init(|| {
            serde_json::from_str(include_str!("../data/lib2domain.json"))
                .expect("the embedded domain map is a JSON object of strings")
        })
        .get(library)
        .map(String::as_str)
}

/// The ids of the Hard subset.
pub fn hard_task_ids() -> HashSet<String> {
    serde_json::from_str(HARD_IDS).expect("the embedded Hard id list is a JSON array of strings")
}

impl Dataset {
    /// An embedded version (`v0.1.4`, `v0.1.2`, `v0.1.0_hf`).
    pub fn embedded(version: &str, subset: Subset) -> Result<Dataset, Error> {
        let bytes = match version {
            "v0.1.4" => V0_1_4,
            "v0.1.2" => V0_1_2,
            "v0.1.0_hf" => V0_1_0_HF,
            other => {
                return Err(Error::UnknownVersion(
                    other.to_string(),
                    VERSIONS.join(", "),
                ))
            }
        };
        Self::parse(version, bytes, subset)
    }

    /// A `.jsonl` or `.jsonl.gz` file in the Hugging Face schema. For the Hard subset, the
    /// file's tasks are filtered by the Hard ids (a file holding only them is fine too).
    pub fn from_file(path: &Path, subset: Subset) -> Result<Dataset, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &bytes, subset)
    }

    fn parse(source: &str, bytes: &[u8], subset: Subset) -> Result<Dataset, Error> {
        let text = decompress(source, bytes)?;
        let digest = blake3::hash(text.as_bytes()).to_hex()[..16].to_string();
        let hard = (subset == Subset::Hard).then(hard_task_ids);
        let mut tasks = Vec::new();
        let mut seen = HashSet::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let task = parse_task(source, index + 1, line)?;
            if !seen.insert(task.task_id.clone()) {
                return Err(Error::Parse {
                    file: source.to_string(),
                    line: index + 1,
                    message: format!("task `{}` appears twice", task.task_id),
                });
            }
            if hard.as_ref().is_none_or(|ids| ids.contains(&task.task_id)) {
                tasks.push(task);
            }
        }
        if tasks.is_empty() {
            return Err(Error::Invalid {
                file: source.to_string(),
                message: format!("no {} tasks in it", subset.as_str()),
            });
        }
        tasks.sort_by_key(Task::number);
        Ok(Dataset {
            source: source.to_string(),
            subset,
            tasks,
            digest,
        })
    }

    /// The task with id `task_id`, if the dataset has it.
    pub fn get(&self, task_id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.task_id == task_id)
    }

    /// Every task by its id: for lookups in a loop ([`Dataset::get`] searches).
    pub fn by_id(&self) -> HashMap<&str, &Task> {
        self.tasks.iter().map(|t| (t.task_id.as_str(), t)).collect()
    }

    /// Keeps only `ids`; an id the dataset doesn't have is an error naming it.
    pub fn select(&mut self, ids: &[String]) -> Result<(), Error> {
        let known: HashSet<&str> = self.tasks.iter().map(|t| t.task_id.as_str()).collect();
        if let Some(unknown) = ids.iter().find(|id| !known.contains(id.as_str())) {
            let hint = match (task_number(unknown), self.subset) {
                (None, _) => "; task ids look like BigCodeBench/13",
                (Some(_), Subset::Hard) => {
                    " (the full set may have it: `bigcodebench` rather than `bigcodebench-hard`)"
                }
                (Some(_), Subset::Full) => "",
            };
            return Err(Error::Invalid {
                file: self.source.clone(),
                message: format!(
                    "no task `{unknown}` among its {}{} tasks{hint}",
                    self.tasks.len(),
                    match self.subset {
                        Subset::Full => "",
                        Subset::Hard => " Hard",
                    }
                ),
            });
        }
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.tasks.retain(|t| wanted.contains(t.task_id.as_str()));
        Ok(())
    }
}

fn decompress(source: &str, bytes: &[u8]) -> Result<String, Error> {
    let invalid = |message: String| Error::Invalid {
        file: source.to_string(),
        message,
    };
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map_err(|e| invalid(format!("not a readable gzip file: {e}")))?;
        out
    } else {
        bytes.to_vec()
    };
    String::from_utf8(raw).map_err(|e| invalid(format!("not UTF-8 text: {e}")))
}

/// The raw row: every field a string, `libs` a Python list literal (as the HF files store it).
#[derive(Deserialize)]
struct Row {
    task_id: Option<String>,
    complete_prompt: Option<String>,
    instruct_prompt: Option<String>,
    canonical_solution: Option<String>,
    code_prompt: Option<String>,
    test: Option<String>,
    entry_point: Option<String>,
    libs: Option<serde_json::Value>,
}

fn parse_task(file: &str, line: usize, text: &str) -> Result<Task, Error> {
    let error = |message: String| Error::Parse {
        file: file.to_string(),
        line,
        message,
    };
    let row: Row = serde_json::from_str(text)
        .map_err(|e| error(format!("not a JSON object in the HF schema: {e}")))?;
    let field = |value: Option<String>, name: &str| {
        value.ok_or_else(|| error(format!("field `{name}` is missing or not a string")))
    };
    let task_id = field(row.task_id, "task_id")?;
    if task_number(&task_id).is_none() {
        return Err(error(format!(
            "field `task_id`: `{task_id}` is not of the form BigCodeBench/<n>"
        )));
    }
    let libs = match row.libs {
        Some(serde_json::Value::String(literal)) => parse_list_literal(&literal)
            .ok_or_else(|| error(format!("field `libs`: `{literal}` is not a list of names")))?,
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| error("field `libs`: not a list of strings".into()))?,
        _ => return Err(error("field `libs` is missing".into())),
    };
    Ok(Task {
        complete_prompt: field(row.complete_prompt, "complete_prompt")?,
        instruct_prompt: field(row.instruct_prompt, "instruct_prompt")?,
        canonical_solution: field(row.canonical_solution, "canonical_solution")?,
        code_prompt: field(row.code_prompt, "code_prompt")?,
        test: field(row.test, "test")?,
        entry_point: field(row.entry_point, "entry_point")?,
        task_id,
        libs,
    })
}

/// `['random', "itertools"]` → `["random", "itertools"]`: the list literals of the HF files
/// (plain names, no escapes).
fn parse_list_literal(literal: &str) -> Option<Vec<String>> {
    let inner = literal.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|item| {
            let item = item.trim();
            let unquoted = item
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| item.strip_prefix('"').and_then(|s| s.strip_suffix('"')))?;
            let valid = !unquoted.is_empty()
                && unquoted
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
            valid.then(|| unquoted.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_of_every_task_has_a_domain() {
        let dataset = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        for task in &dataset.tasks {
            for lib in &task.libs {
                assert!(domain(lib).is_some(), "{}: {lib}", task.task_id);
            }
        }
        assert_eq!(domain("numpy"), Some("Computation"));
        assert_eq!(domain("hashlib"), Some("Cryptography"));
        assert_eq!(domain("no-such-library"), None);
    }
    use std::io::Write;

    #[test]
    fn every_embedded_version_has_all_tasks_and_the_hard_subset() {
        for version in VERSIONS {
            let full = Dataset::embedded(version, Subset::Full).unwrap();
            assert_eq!(full.tasks.len(), 1140, "{version}");
            assert_eq!(full.tasks[0].task_id, "BigCodeBench/0");
            assert_eq!(full.tasks[1139].task_id, "BigCodeBench/1139");
            let hard = Dataset::embedded(version, Subset::Hard).unwrap();
            assert_eq!(hard.tasks.len(), 148, "{version}");
            assert!(hard
                .tasks
                .iter()
                .all(|t| t.test.contains("class TestCases")));
        }
        let task = Dataset::embedded("v0.1.4", Subset::Full)
            .unwrap()
            .tasks
            .remove(0);
        assert_eq!(task.libs, ["random", "itertools"]);
        assert_eq!(task.entry_point, "task_func");
        assert!(task.reference_solution().starts_with(&task.complete_prompt));
    }

    #[test]
    fn versions_differ_where_the_fix_scripts_say() {
        let v12 = Dataset::embedded("v0.1.2", Subset::Full).unwrap();
        let v14 = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        let changed: Vec<u32> = v12
            .tasks
            .iter()
            .zip(&v14.tasks)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.number())
            .collect();
        assert_eq!(changed, [211, 215, 1005]);
        assert_ne!(v12.digest, v14.digest);
        let err = Dataset::embedded("v9", Subset::Full)
            .unwrap_err()
            .to_string();
        assert!(err.contains("v0.1.4"), "{err}");
    }

    #[test]
    fn files_load_plain_or_gzipped_and_errors_name_the_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let v14 = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        let line = |task: &Task| {
            let mut value = serde_json::to_value(task).unwrap();
            value["libs"] = format!("{:?}", task.libs).replace('"', "'").into();
            value.to_string()
        };
        let plain = dir.path().join("tasks.jsonl");
        let rows: Vec<String> = v14.tasks[..3].iter().map(line).collect();
        std::fs::write(&plain, rows.join("\n")).unwrap();
        let loaded = Dataset::from_file(&plain, Subset::Full).unwrap();
        assert_eq!(loaded.tasks, v14.tasks[..3]);
        let gz = dir.path().join("tasks.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(rows.join("\n").as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(
            Dataset::from_file(&gz, Subset::Full).unwrap().tasks,
            loaded.tasks
        );

        let mut broken = rows.clone();
        broken[1] = broken[1].replace("\"test\":", "\"tests\":");
        std::fs::write(&plain, broken.join("\n")).unwrap();
        let err = Dataset::from_file(&plain, Subset::Full)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tasks.jsonl:2:") && err.contains("`test`"),
            "{err}"
        );

        std::fs::write(&plain, format!("{}\n{{not json", rows[0])).unwrap();
        let err = Dataset::from_file(&plain, Subset::Full)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":2:") && err.contains("not a JSON object"),
            "{err}"
        );

        std::fs::write(&plain, format!("{}\n{}", rows[0], rows[0])).unwrap();
        let err = Dataset::from_file(&plain, Subset::Full)
            .unwrap_err()
            .to_string();
        assert!(err.contains("appears twice"), "{err}");

        std::fs::write(&plain, rows.join("\n")).unwrap();
        let err = Dataset::from_file(&plain, Subset::Hard)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no hard tasks"), "{err}");
    }

    #[test]
    fn selecting_tasks() {
        let mut hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        hard.select(&["BigCodeBench/13".into(), "BigCodeBench/15".into()])
            .unwrap();
        assert_eq!(hard.tasks.len(), 2);
        let err = hard
            .select(&["BigCodeBench/0".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no task `BigCodeBench/0`"), "{err}");
    }

    #[test]
    fn list_literals() {
        assert_eq!(
            parse_list_literal("['a', \"b.c\", 'd_e']").unwrap(),
            ["a", "b.c", "d_e"]
        );
        assert_eq!(parse_list_literal("[]").unwrap(), Vec::<String>::new());
        assert!(parse_list_literal("['a'; 'b']").is_none());
        assert!(parse_list_literal("a, b").is_none());
    }
}
