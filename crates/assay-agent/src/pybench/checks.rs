//! PyBench's per-task checks: upstream's unit tests as a table (`data/pybench-checks.json`),
//! each task with a `faithful` check (upstream's verdict, bugs included) and, where upstream
//! is wrong, a `fixed` one. Answer checks (substrings of the final message) are judged here;
//! checks that read files (decoding images, audio, tables, unpickling) run in the sandbox as a
//! unittest job over copies of the files, never in assay's own process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use assay_records::{CheckVerdict, Message, Status, TestResult, Verdicts};
use assay_sandbox::{Engine, InputFile, Limits, UnittestJob};
use serde::Deserialize;
use serde_json::Value;

/// The table, as assay ships it.
const TABLE: &str = include_str!("../../data/pybench-checks.json");
/// The file checks' implementation, the code of every check job.
const CHECKER: &str = include_str!("../../python/pybench_checks.py");
/// How long a check job may take (decoding a video or an audio file included).
const CHECK_WALL: Duration = Duration::from_secs(120);
/// What one check job may be given to read.
const CHECK_INPUT_BYTES: u64 = 512 << 20;

/// One task's checks.
#[derive(Debug, Clone, Deserialize)]
pub struct TaskChecks {
    /// Upstream's test, restated.
    pub faithful: Value,
    /// The corrected test, when upstream's is wrong.
    #[serde(default)]
    pub fixed: Option<Value>,
    /// How `fixed` differs, in a sentence.
    #[serde(default)]
    pub difference: Option<String>,
}

impl TaskChecks {
    /// The fixed check (the faithful one where upstream is right).
    pub fn fixed(&self) -> &Value {
        self.fixed.as_ref().unwrap_or(&self.faithful)
    }
}

#[derive(Deserialize)]
struct Table {
    tasks: BTreeMap<String, TaskChecks>,
}

/// The checks of every task upstream has, by index.
pub fn table() -> &'static BTreeMap<String, TaskChecks> {
    static PARSED: OnceLock<BTreeMap<String, TaskChecks>> = OnceLock::new();
    PARSED.get_or_init(|| {
        serde_json::from_str::<Table>(TABLE)
            .expect("the shipped check table parses (a unit test holds it)")
            .tasks
    })
}

/// Which verdict heads the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Upstream's.
    Faithful,
    /// Corrected.
    Fixed,
}

impl Mode {
    /// The headline verdict of the two.
    pub fn pick(self, verdicts: &Verdicts) -> &CheckVerdict {
        match self {
            Mode::Faithful => &verdicts.faithful,
            Mode::Fixed => &verdicts.fixed,
        }
    }

    /// The name options and files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Faithful => "faithful",
            Mode::Fixed => "fixed",
        }
    }
}

/// Where the files an episode left in `./output/` are.
#[derive(Debug, Clone)]
pub enum Outputs {
    /// Nowhere: checks that read them are `infra`.
    Unknown,
    /// One folder per task (`<dir>/<index>/output/`), as a run keeps them.
    PerTask(PathBuf),
    /// One folder for every task, as upstream's runs leave `./output/`.
    Shared(PathBuf),
}

impl Outputs {
    fn dir_of(&self, index: &str) -> Option<PathBuf> {
        match self {
            Outputs::Unknown => None,
            Outputs::PerTask(dir) => Some(dir.join(index).join("output")),
            Outputs::Shared(dir) => Some(dir.clone()),
        }
    }
}

/// What judging a task needs besides its messages.
pub struct Judge<'a> {
    /// Runs the file checks (an engine on the `pybench` profile).
    pub engine: &'a Engine,
    /// The task data folder, where the checks' reference inputs are.
    pub data: &'a Path,
    /// Where the outputs are.
    pub outputs: &'a Outputs,
}

/// The task whose outputs a check reads: its own, or the one upstream's test reads instead.
pub fn reads_outputs_of<'a>(index: &'a str, check: &'a Value) -> &'a str {
    check["outputs_of"].as_str().unwrap_or(index)
}

impl Judge<'_> {
    /// Both verdicts of task `index` given its conversation.
    pub async fn judge(&self, index: &str, messages: &[Message]) -> Verdicts {
        let Some(checks) = table().get(index) else {
            let none = verdict(
                Status::Infra,
                format!("assay has no check for task {index}"),
            );
            return Verdicts {
                faithful: none.clone(),
                fixed: none,
            };
        };
        let faithful_answer = messages.last().map_or("", |m| m.content.as_str());
        let fixed_answer = messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")
            .map_or("", |m| m.content.as_str());
        let named = [("faithful", &checks.faithful), ("fixed", checks.fixed())];
        let mut verdicts = [
            answer_verdict(&checks.faithful, faithful_answer),
            answer_verdict(checks.fixed(), fixed_answer),
        ];
        let mut copies = Copies::default();
        let mut pending = Vec::new();
        for (slot, (name, check)) in verdicts.iter_mut().zip(named) {
            if slot.is_some() {
                continue;
            }
            match self.gather(index, check, &mut copies) {
                Ok(()) => pending.push((name, check)),
                Err(decided) => *slot = Some(decided),
            }
        }
        if !pending.is_empty() {
            let mut results = self.run_file_checks(&pending, copies).await;
            for (slot, (name, _)) in verdicts.iter_mut().zip(named) {
                if slot.is_none() {
                    *slot = results.remove(name);
                }
            }
        }
        let [faithful, fixed] = verdicts.map(|v| {
            v.unwrap_or_else(|| verdict(Status::Infra, "the check job reported nothing".into()))
        });
        Verdicts { faithful, fixed }
    }

    /// The files a file check reads, copied for its job: outputs (one task's, or the task
    /// upstream's test reads instead) and reference inputs. The verdict, when gathering
    /// decides it: `infra` for what is missing here (the outputs, a reference input), `fail`
    /// for outputs beyond what a check reads (the episode wrote them); a missing output is
    /// the check's own business (it fails).
    fn gather(&self, index: &str, check: &Value, copies: &mut Copies) -> Result<(), CheckVerdict> {
        let owner = reads_outputs_of(index, check);
        for path in paths_in(check) {
            // `output/151/` names a folder: its files, and the folder even when empty.
            let path = path.trim_end_matches('/');
            if let Some(rest) = path.strip_prefix("output/") {
                let Some(dir) = self.outputs.dir_of(owner) else {
                    return Err(verdict(
                        Status::Infra,
                        "the episode's output files are not available (pass --outputs)".into(),
                    ));
                };
                copies.add(&dir, rest, path).map_err(|e| {
                    e.verdict("the episode's outputs the check reads", Status::Fail)
                })?;
            } else if path.starts_with("data/") {
                if !self.data.join(path).is_file() {
                    return Err(verdict(
                        Status::Infra,
                        format!(
                            "the check's input {path} is missing from {}",
                            self.data.display()
                        ),
                    ));
                }
                copies
                    .add(self.data, path, path)
                    .map_err(|e| e.verdict("the check's files", Status::Infra))?;
            }
        }
        Ok(())
    }

    async fn run_file_checks(
        &self,
        pending: &[(&str, &Value)],
        copies: Copies,
    ) -> BTreeMap<String, CheckVerdict> {
        let Copies {
            mut files,
            mut dirs,
            ..
        } = copies;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files.dedup_by(|a, b| a.path == b.path);
        dirs.sort();
        dirs.dedup();
        let mut test =
            String::from("import json\nimport unittest\n\n\nclass TestCases(unittest.TestCase):\n");
        for (name, check) in pending {
            let literal = serde_json::to_string(&check.to_string()).expect("a string serializes");
            test.push_str(&format!(
                "    def test_{name}(self):\n        check(json.loads({literal}))\n\n"
            ));
        }
        let mut job = UnittestJob::new(CHECKER, test);
        job.files = files;
        job.dirs = dirs;
        job.guards = false;
        job.limits = Some(Limits {
            wall: CHECK_WALL,
            ..Limits::default()
        });
        let outcome = self.engine.run_unittest(job).await;
        // Code of the episode's can run in the job (an unpickled output): a job it tampered
        // with decides no check.
        if let Some(how) = assay_records::integrity::reason(&outcome.integrity) {
            let gamed = verdict(Status::Fail, format!("the outputs gamed the check: {how}"));
            return pending
                .iter()
                .map(|(name, _)| (name.to_string(), gamed.clone()))
                .collect();
        }
        pending
            .iter()
            .map(|(name, _)| {
                let test = outcome
                    .tests
                    .iter()
                    .find(|t| t.name == format!("test_{name}"));
                let v = match (outcome.status, test) {
                    (Status::Infra, _) => verdict(
                        Status::Infra,
                        format!("the check could not run: {}", outcome.reason),
                    ),
                    (_, Some(t)) if t.result == TestResult::Pass => {
                        verdict(Status::Pass, "the check holds".into())
                    }
                    (_, Some(t)) if !t.detail.is_empty() => {
                        verdict(Status::Fail, last_line(&t.detail))
                    }
                    _ => verdict(Status::Fail, outcome.reason.clone()),
                };
                (name.to_string(), v)
            })
            .collect()
    }
}

fn verdict(status: Status, reason: String) -> CheckVerdict {
    CheckVerdict { status, reason }
}

/// An answer check's verdict on `answer`; `None` for a check that reads files.
fn answer_verdict(check: &Value, answer: &str) -> Option<CheckVerdict> {
    let all = match check["kind"].as_str() {
        Some("answer_all") => true,
        Some("answer_any") => false,
        _ => return None,
    };
    let needles: Vec<&str> = check["needles"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let found: Vec<&str> = needles
        .iter()
        .copied()
        .filter(|n| answer.contains(n))
        .collect();
    let holds = if all {
        found.len() == needles.len()
    } else {
        !found.is_empty()
    };
    Some(if holds {
        verdict(
            Status::Pass,
            "the answer has what the check looks for".into(),
        )
    } else if all {
        let missing: Vec<&str> = needles
            .iter()
            .copied()
            .filter(|n| !found.contains(n))
            .collect();
        verdict(
            Status::Fail,
            format!("the answer lacks {}", quote_list(&missing)),
        )
    } else {
        verdict(
            Status::Fail,
            format!("the answer has none of {}", quote_list(&needles)),
        )
    })
}

fn quote_list(items: &[&str]) -> String {
    let shown: Vec<String> = items.iter().take(5).map(|s| format!("{s:?}")).collect();
    let more = items.len().saturating_sub(5);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Every path a check names (`path`, `paths`, `tiles`, `reference`, `dir`, `excel`, `csv`).
fn paths_in(check: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    for key in ["path", "reference", "dir", "excel", "csv"] {
        if let Some(p) = check[key].as_str() {
            paths.push(p.to_string());
        }
    }
    for key in ["paths", "tiles"] {
        if let Some(list) = check[key].as_array() {
            paths.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
        }
    }
    paths
}

/// What a check job is given to read: files, and the folders they are in (empty ones too).
#[derive(Default)]
struct Copies {
    files: Vec<InputFile>,
    dirs: Vec<String>,
    bytes: u64,
}

/// Why files could not be given to a check job.
enum CopyError {
    /// They exceed what a job is given.
    TooLarge,
    /// The harness could not read them: why.
    Unreadable(String),
}

impl CopyError {
    /// The verdict it decides: `too_large` when the files (`what`) exceed a job's share (the
    /// episode's doing for its outputs, the harness's for reference inputs), `infra` when the
    /// harness could not read them.
    fn verdict(self, what: &str, too_large: Status) -> CheckVerdict {
        match self {
            CopyError::TooLarge => verdict(
                too_large,
                format!("{what} exceed {} MiB", CHECK_INPUT_BYTES >> 20),
            ),
            CopyError::Unreadable(why) => verdict(Status::Infra, why),
        }
    }
}

impl Copies {
    /// Copies `root/rel` as `as_path`: a file, or a folder with what a check reads of one
    /// (`os.listdir` and existence: its files, and its folders as empty ones); nothing when it
    /// does not exist (the check then says so). Links are not followed.
    fn add(&mut self, root: &Path, rel: &str, as_path: &str) -> Result<(), CopyError> {
        self.add_entry(root, rel, as_path, true)
    }

    fn add_entry(
        &mut self,
        root: &Path,
        rel: &str,
        as_path: &str,
        open_folders: bool,
    ) -> Result<(), CopyError> {
        let source = root.join(rel);
        let unreadable =
            |e: std::io::Error| CopyError::Unreadable(format!("reading {}: {e}", source.display()));
        let Ok(meta) = std::fs::symlink_metadata(&source) else {
            return Ok(());
        };
        if meta.is_dir() {
            self.dirs.push(as_path.to_string());
            if open_folders {
                for entry in std::fs::read_dir(&source).map_err(unreadable)?.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let (rel, as_path) = (format!("{rel}/{name}"), format!("{as_path}/{name}"));
                    self.add_entry(root, &rel, &as_path, false)?;
                }
            }
            return Ok(());
        }
        if !meta.is_file() {
            return Ok(());
        }
        self.bytes += meta.len();
        if self.bytes > CHECK_INPUT_BYTES {
            return Err(CopyError::TooLarge);
        }
        let data = std::fs::read(&source).map_err(unreadable)?;
        self.files.push(InputFile {
            path: as_path.to_string(),
            data,
        });
        Ok(())
    }
}

/// The last line of a failure's detail: the assertion's message, without the traceback.
fn last_line(detail: &str) -> String {
    detail
        .trim_end()
        .lines()
        .last()
        .unwrap_or(detail)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_covers_upstreams_143_tasks_with_known_kinds() {
        let table = table();
        assert_eq!(table.len(), 143);
        for (index, checks) in table {
            for check in [&checks.faithful, checks.fixed()] {
                assert!(check["kind"].is_string(), "task {index}");
                for path in paths_in(check) {
                    assert!(
                        path.starts_with("output/") || path.starts_with("data/"),
                        "task {index}: {path}"
                    );
                }
            }
            assert_eq!(
                checks.fixed.is_some(),
                checks.difference.is_some(),
                "task {index}: a fixed check says how it differs"
            );
        }
        assert_eq!(reads_outputs_of("68", &table["68"].faithful), "67");
        assert_eq!(reads_outputs_of("68", table["68"].fixed()), "68");
    }

    #[test]
    fn answer_checks_are_case_sensitive_substrings() {
        let all = serde_json::json!({"kind": "answer_all", "needles": ["2526", "1506614"]});
        assert_eq!(
            answer_verdict(&all, "totals: 2526 and 1506614")
                .unwrap()
                .status,
            Status::Pass
        );
        let lacking = answer_verdict(&all, "2526 only").unwrap();
        assert_eq!(
            (lacking.status, lacking.reason.as_str()),
            (Status::Fail, "the answer lacks \"1506614\"")
        );
        let any = serde_json::json!({"kind": "answer_any", "needles": ["Male", "male"]});
        assert_eq!(answer_verdict(&any, "MALE").unwrap().status, Status::Fail);
        let exists = serde_json::json!({"kind": "exists", "path": "output/1.png"});
        assert!(answer_verdict(&exists, "x").is_none());
    }
}
