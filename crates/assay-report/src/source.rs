//! Reading what a report compares: assay run directories (BigCodeBench evaluations and runs,
//! PyBench runs and evaluations) and the official harness's `*_eval_results.json` files, into
//! one shape: per task, how many samples were judged and how many passed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assay_records::{
    EpisodeEnd, EpisodeRecord, Gamed, GenerationRecord, JudgeFigures, Kind, Manifest, SampleRecord,
    StabilitySummary, Status, Thinking, TokenUsage, TrajectoryRecord, SCHEMA,
};
use assay_tasks::bigcodebench::{domain, Dataset, Subset, VERSIONS};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a run cannot be read. Every message names the file, and the line where there is one.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A directory that holds no run: the path given is not one `assay` wrote.
    #[error("{path} is not a run directory (it has no manifest.json)")]
    NotARun {
        /// The directory.
        path: PathBuf,
    },
    /// The content is not what it should be.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line, from 1 (0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One task's outcome in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Samples judged (`infra` set apart).
    pub samples: u64,
    /// Of them, passed.
    pub passed: u64,
    /// Samples set apart as `infra`.
    pub infra: u64,
}

impl TaskResult {
    /// Whether the task counts as passed: at least half its judged samples pass (with one
    /// sample: when it passes). Counted in whole samples, so an exact half (3 of 6) passes,
    /// which pass@1 in floating point (0.4999999999999999) would not say.
    pub fn passes(&self) -> bool {
        self.samples > 0 && 2 * self.passed >= self.samples
    }
}

/// A sample that did not pass, as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Its task.
    pub task_id: String,
    /// Its status (`fail`, `error`, `timeout`...).
    pub status: String,
    /// The code that ran (empty when the run did not keep it).
    pub code: String,
    /// The first test that failed, when one did.
    pub test: Option<String>,
    /// That test's traceback, or the reason.
    pub detail: String,
}

/// A run, as a report compares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// What the report calls it: the directory's or the file's name.
    pub label: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// `bigcodebench`, `bigcodebench-hard`, `pybench`, or `bigcodebench (official file)`.
    pub benchmark: String,
    /// `complete` or `instruct` (BigCodeBench).
    pub split: Option<String>,
    /// The model, when the run says.
    pub model: Option<String>,
    /// Every task the run has a sample of, by id.
    pub tasks: BTreeMap<String, TaskResult>,
    /// The groups each task counts in: BigCodeBench's domains of its libraries, PyBench's
    /// paper category.
    pub groups: BTreeMap<String, Vec<String>>,
    /// The libraries each BigCodeBench task uses.
    pub libraries: BTreeMap<String, Vec<String>>,
    /// Samples by status (`pass`, `fail`, `error`, `timeout`, `oom`, `infra`).
    pub statuses: BTreeMap<String, u64>,
    /// Wall time of the judging, when the run kept it.
    pub wall_seconds: Option<f64>,
    /// Tokens billed for the answers, when the run asked a model.
    pub tokens: Option<TokenUsage>,
    /// What `--stability` found, when the run had it.
    pub stability: Option<StabilitySummary>,
    /// BigCodeBench: answers that came with thinking (from `generation.jsonl`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thinking: usize,
    /// Answers (BigCodeBench) or episodes (PyBench) that ended inside their thinking, before
    /// any answer: failures the token limit made, not the model's code.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_while_thinking: usize,
    /// PyBench: what LLM judges said of the run (`summary.json`'s `judges`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeFigures>,
    /// BigCodeBench: the samples that gamed their tests instead of passing them (their
    /// records' `integrity`), whatever their verdict.
    #[serde(default, skip_serializing_if = "none_gamed")]
    pub gamed: Gamed,
    /// The first [`FAILURES_KEPT`] samples that did not pass (and were not set apart), in the
    /// run's order: what a report shows of them.
    #[serde(skip)]
    pub failures: Vec<Failure>,
    /// Samples that did not pass (and were not set apart), all of them.
    #[serde(skip)]
    pub failing: usize,
}

/// Failing samples a report keeps to show, per run: enough to read, and a run's memory does
/// not grow with its samples.
pub const FAILURES_KEPT: usize = 200;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(crate) fn none_gamed(gamed: &Gamed) -> bool {
    gamed.samples == 0
}

/// One answer of a generation as `generation.jsonl` recorded it: the request that gave it and
/// its place among that request's answers (whose raw texts, solutions, finish reasons and
/// thinking are kept side by side).
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The request.
    pub request: &'a GenerationRecord,
    /// Which of its answers.
    pub index: usize,
}

impl<'a> Answer<'a> {
    /// The model's text, as the official `raw_solution`.
    pub fn raw(&self) -> &'a str {
        &self.request.raw[self.index]
    }

    /// The text sanitized: the code judged.
    pub fn solution(&self) -> &'a str {
        self.request
            .solutions
            .get(self.index)
            .map_or("", String::as_str)
    }

    /// How the provider said it ended (`stop`, `length`...).
    pub fn finish_reason(&self) -> Option<&'a str> {
        self.request
            .finish_reasons
            .get(self.index)
            .and_then(|r| r.as_deref())
    }

    /// What the model thought before it, if it thought.
    pub fn thinking(&self) -> Option<&'a Thinking> {
        self.request.thinking_of(self.index)
    }
}

/// Every answer of `generation`, in the order the file has them (failed requests have none).
/// A generation writes each task's samples in that order, so a task's n-th line of
/// `samples.jsonl` is its n-th answer here: how a sample finds its raw answer's thinking and
/// its request.
pub fn answers(generation: &[GenerationRecord]) -> impl Iterator<Item = Answer<'_>> {
    generation
        .iter()
        .filter(|r| r.error.is_none())
        .flat_map(|request| (0..request.raw.len()).map(move |index| Answer { request, index }))
}

impl Run {
    /// Reads a run directory (it has a `manifest.json`) or an official results file.
    pub fn load(path: &Path) -> Result<Run, SourceError> {
        if path.is_dir() {
            return load_dir(path);
        }
        load_official(path)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SourceError + '_ {
    move |source| SourceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn invalid(path: &Path, line: usize, message: impl Into<String>) -> SourceError {
    SourceError::Invalid {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// The records of a run's JSON-lines journal; a missing file has none. A line that is not a
/// record is an error naming the file and the line.
///
/// A last line without its newline is not read: every record a run writes ends with one, so
/// such a line is a record still being written, or one torn by a kill mid-write (which the
/// run directory cuts when the run resumes). The viewer's journals and the run directory
/// read it the same way, so a run killed mid-record reads as the records it completed.
pub fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, SourceError> {
    let mut records = Vec::new();
    each_line(path, |_, record| {
        records.push(record);
        Ok(())
    })?;
    Ok(records)
}

/// [`read_lines`] with each record's line number (from 1), for readers that check records
/// against each other and must say where one is wrong.
pub fn read_numbered_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Vec<(usize, T)>, SourceError> {
    let mut records = Vec::new();
    each_line(path, |number, record| {
        records.push((number, record));
        Ok(())
    })?;
    Ok(records)
}

/// Hands the records [`read_lines`] reads to `each` one at a time, with their line numbers, as
/// they are read: what a reader that must not hold a whole run uses.
pub fn each_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(usize, T) -> Result<(), SourceError>,
) -> Result<(), SourceError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(path)(e)),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    for number in 1.. {
        line.clear();
        let read = std::io::BufRead::read_line(&mut reader, &mut line).map_err(io(path))?;
        if read == 0 || !line.ends_with('\n') {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line)
            .map_err(|e| invalid(path, number, format!("not a valid record: {e}")))?;
        each(number, record)?;
    }
    Ok(())
}

/// The records of `text`, every line of it (blank ones skipped), with their line numbers.
fn parse_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<Vec<(usize, T)>, SourceError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line)
                .map(|record| (n + 1, record))
                .map_err(|e| invalid(path, n + 1, format!("not a valid record: {e}")))
        })
        .collect()
}

fn label_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// A run directory's `manifest.json`; one written by a newer assay (a higher schema) is
/// refused, never misread.
pub fn read_manifest(dir: &Path) -> Result<Manifest, SourceError> {
    let path = dir.join("manifest.json");
    let text = match std::fs::read_to_string(&path) {
        // Said of what was given: the directory, there or not.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(match std::fs::metadata(dir) {
                Ok(_) => SourceError::NotARun {
                    path: dir.to_path_buf(),
                },
                Err(e) => io(dir)(e),
            })
        }
        read => read.map_err(io(&path))?,
    };
    let manifest: Manifest = serde_json::from_str(&text)
        .map_err(|e| invalid(&path, e.line(), format!("not a manifest: {e}")))?;
    if manifest.schema > SCHEMA {
        return Err(invalid(
            &path,
            0,
            format!(
                "schema {} was written by a newer assay (this one reads {SCHEMA})",
                manifest.schema
            ),
        ));
    }
    Ok(manifest)
}

fn load_dir(dir: &Path) -> Result<Run, SourceError> {
    let manifest = read_manifest(dir)?;
    let summary = read_summary(&dir.join("summary.json"));
    let identity = &manifest.identity;
    let mut run = Run {
        label: label_of(dir),
        path: dir.to_path_buf(),
        benchmark: identity.benchmark.clone().unwrap_or_default(),
        split: identity.split.clone(),
        model: identity.model.clone(),
        tasks: BTreeMap::new(),
        groups: BTreeMap::new(),
        libraries: BTreeMap::new(),
        statuses: BTreeMap::new(),
        wall_seconds: summary.as_ref().and_then(|s| s["wall_seconds"].as_f64()),
        tokens: None,
        stability: summary
            .as_ref()
            .and_then(|s| serde_json::from_value(s["stability"].clone()).ok()),
        thinking: 0,
        cut_while_thinking: 0,
        judges: Vec::new(),
        gamed: Gamed::default(),
        failures: Vec::new(),
        failing: 0,
    };
    let results = dir.join("results.jsonl");
    match manifest.kind {
        Kind::PybenchRun | Kind::PybenchEval => {
            let mut tokens = TokenUsage::default();
            each_line(&results, |_, record: EpisodeRecord| {
                run.add(&record.task_id, record.status);
                tokens += &record.tokens;
                if record.end == EpisodeEnd::CutWhileThinking {
                    run.cut_while_thinking += 1;
                }
                if let Some(category) = &record.category {
                    run.groups
                        .insert(record.task_id.clone(), vec![category.clone()]);
                }
                if !matches!(record.status, Status::Pass | Status::Infra) {
                    run.fail(Failure {
                        task_id: record.task_id,
                        status: record.status.as_str().into(),
                        code: String::new(),
                        test: Some("check".into()),
                        detail: record.reason,
                    });
                }
                Ok(())
            })?;
            run.tokens = (tokens != TokenUsage::default()).then_some(tokens);
            run.judges = summary
                .as_ref()
                .and_then(|s| s.get("judges"))
                .and_then(|j| serde_json::from_value(j.clone()).ok())
                .unwrap_or_default();
        }
        _ => {
            // The samples of the failures kept, by index: their code is read after.
            let mut shown: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            each_line(&results, |_, record: SampleRecord| {
                run.gamed.add(&record);
                run.add(&record.task_id, record.status);
                if matches!(record.status, Status::Pass | Status::Infra) {
                    return Ok(());
                }
                let failed = record.first_failure();
                let failure = Failure {
                    task_id: record.task_id.clone(),
                    status: record.status.as_str().into(),
                    code: String::new(),
                    test: failed.map(|t| t.name.clone()),
                    detail: failed
                        .map(|t| t.detail.clone())
                        .filter(|d| !d.is_empty())
                        .unwrap_or_else(|| record.reason.clone()),
                };
                if run.fail(failure) {
                    let at = run.failures.len() - 1;
                    shown.entry(record.index).or_default().push(at);
                }
                Ok(())
            })?;
            let mut index = 0;
            each_line(&dir.join("samples.jsonl"), |_, sample: Value| {
                let code = sample["solution"]
                    .as_str()
                    .or(sample["completion"].as_str());
                for &at in shown.get(&index).into_iter().flatten() {
                    run.failures[at].code = code.unwrap_or_default().to_string();
                }
                index += 1;
                Ok(())
            })?;
            (run.groups, run.libraries) = labels(identity.dataset.as_deref(), run.tasks.keys());
            let mut tokens = TokenUsage::default();
            each_line(
                &dir.join("generation.jsonl"),
                |_, record: GenerationRecord| {
                    tokens += &record.usage;
                    for thought in
                        answers(std::slice::from_ref(&record)).filter_map(|a| a.thinking())
                    {
                        run.thinking += 1;
                        run.cut_while_thinking += usize::from(thought.cut);
                    }
                    Ok(())
                },
            )?;
            run.tokens = (tokens != TokenUsage::default()).then_some(tokens);
        }
    }
    Ok(run)
}

/// The trajectories an evaluation judged (the manifest's `samples`), when they are the ones it
/// judged (the digest its identity recorded).
pub fn judged_trajectories(manifest: &Manifest) -> Result<Vec<TrajectoryRecord>, String> {
    let path = manifest
        .samples
        .as_deref()
        .ok_or("the manifest does not name the trajectories judged (an older assay wrote it)")?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let digest = &blake3::hash(&bytes).to_hex()[..16];
    match manifest.identity.samples_digest.as_deref() {
        Some(recorded) if recorded != digest => Err(format!(
            "{} has changed since it was judged (digest {digest} here, {recorded} then)",
            path.display()
        )),
        // Recordings given to an evaluation, not a journal of its own: every line counts,
        // the last one too when it has no newline.
        _ => {
            let text = String::from_utf8(bytes)
                .map_err(|e| format!("{}: not UTF-8 text: {e}", path.display()))?;
            Ok(parse_lines(path, &text)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(_, record)| record)
                .collect())
        }
    }
}

/// The journals a run appends to while it works.
const JOURNALS: [&str; 3] = ["results.jsonl", "generation.jsonl", "samples.jsonl"];

/// When the run in `dir` finished: its `summary.json` is written last, at the end of every
/// session, so a journal written after it means a session that has not finished.
pub fn finished_at(dir: &Path) -> Option<std::time::SystemTime> {
    let summary = modified(&dir.join("summary.json"))?;
    let later = last_write(dir).is_some_and(|written| written > summary);
    (!later).then_some(summary)
}

/// When the run in `dir` last wrote one of its journals.
pub fn last_write(dir: &Path) -> Option<std::time::SystemTime> {
    JOURNALS
        .iter()
        .filter_map(|name| modified(&dir.join(name)))
        .max()
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Each BigCodeBench task's domains (of its libraries) and libraries, from the embedded
/// dataset of `version` (the default one when it is not an embedded version).
fn labels<'a>(
    version: Option<&str>,
    tasks: impl Iterator<Item = &'a String>,
) -> (BTreeMap<String, Vec<String>>, BTreeMap<String, Vec<String>>) {
    let version = version
        .filter(|v| VERSIONS.contains(v))
        .unwrap_or(VERSIONS[0]);
    let Ok(dataset) = Dataset::embedded(version, Subset::Full) else {
        return Default::default();
    };
    let mut domains = BTreeMap::new();
    let mut libraries = BTreeMap::new();
    for id in tasks {
        let Some(task) = dataset.get(id) else {
            continue;
        };
        let mut found: Vec<String> = task
            .libs
            .iter()
            .filter_map(|lib| domain(lib))
            .map(str::to_string)
            .collect();
        found.sort();
        found.dedup();
        domains.insert(id.clone(), found);
        libraries.insert(id.clone(), task.libs.clone());
    }
    (domains, libraries)
}

/// A run's `summary.json`, when it has one that reads (a run in progress may not).
fn read_summary(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The official harness's `*_eval_results.json`: `{"date", "eval": {task_id: [{"status"}]}}`.
fn load_official(path: &Path) -> Result<Run, SourceError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| invalid(path, e.line(), format!("not JSON: {e}")))?;
    let Some(eval) = doc["eval"].as_object() else {
        return Err(invalid(
            path,
            0,
            "no `eval` object: not an assay run directory or an official *_eval_results.json",
        ));
    };
    let name = label_of(path);
    let split = ["complete", "instruct"]
        .into_iter()
        .find(|s| name.contains(&format!("-{s}")))
        .map(str::to_string);
    let mut run = Run {
        // `MODEL--bigcodebench-[hard-]SPLIT--...`: the model; the benchmark column says the rest.
        label: name
            .split("--bigcodebench")
            .next()
            .unwrap_or(&name)
            .trim_end_matches("_eval_results.json")
            .to_string(),
        path: path.to_path_buf(),
        benchmark: if name.contains("-hard-") {
            "bigcodebench-hard".into()
        } else {
            "bigcodebench".into()
        },
        split,
        model: name.split("--").next().map(str::to_string),
        tasks: BTreeMap::new(),
        groups: BTreeMap::new(),
        libraries: BTreeMap::new(),
        statuses: BTreeMap::new(),
        wall_seconds: None,
        tokens: None,
        stability: None,
        thinking: 0,
        cut_while_thinking: 0,
        judges: Vec::new(),
        gamed: Gamed::default(),
        failures: Vec::new(),
        failing: 0,
    };
    (run.groups, run.libraries) = labels(None, eval.keys());
    for (task_id, samples) in eval {
        let Some(samples) = samples.as_array() else {
            return Err(invalid(path, 0, format!("`eval.{task_id}` is not a list")));
        };
        for sample in samples {
            let status = match sample["status"].as_str() {
                Some("pass") => Status::Pass,
                Some("timeout") => Status::Timeout,
                Some("fail") => Status::Fail,
                other => {
                    return Err(invalid(
                        path,
                        0,
                        format!("`eval.{task_id}`: unknown status {other:?}"),
                    ))
                }
            };
            run.add(task_id, status);
            if status != Status::Pass {
                let details = sample["details"].as_object();
                let first = details.and_then(|d| d.iter().next());
                run.fail(Failure {
                    task_id: task_id.clone(),
                    status: status.as_str().into(),
                    code: sample["solution"].as_str().unwrap_or_default().to_string(),
                    test: first.map(|(name, _)| name.clone()),
                    detail: first
                        .and_then(|(_, d)| d.as_str())
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
    }
    Ok(run)
}

impl Run {
    /// Counts a failing sample, keeping it to show if fewer than [`FAILURES_KEPT`] are:
    /// whether it was kept.
    fn fail(&mut self, failure: Failure) -> bool {
        self.failing += 1;
        let kept = self.failures.len() < FAILURES_KEPT;
        if kept {
            self.failures.push(failure);
        }
        kept
    }

    fn add(&mut self, task_id: &str, status: Status) {
        *self
            .statuses
            .entry(status.as_str().to_string())
            .or_default() += 1;
        let task = self.tasks.entry(task_id.to_string()).or_default();
        match status {
            Status::Infra => task.infra += 1,
            Status::Pass => {
                task.samples += 1;
                task.passed += 1;
            }
            _ => task.samples += 1,
        }
    }

    /// The tasks with at least one judged sample.
    pub fn judged(&self) -> impl Iterator<Item = (&String, &TaskResult)> {
        self.tasks.iter().filter(|(_, t)| t.samples > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::{CheckVerdict, EpisodeEnd, Identity, Manifest, Verdicts};

    fn write_dir(kind: Kind, lines: &[String]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let identity = Identity {
            benchmark: Some("pybench".into()),
            model: Some("openai:m".into()),
            ..Identity::default()
        };
        std::fs::write(
            dir.path().join("manifest.json"),
            serde_json::to_string(&Manifest::new(kind, identity)).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.path().join("results.jsonl"), lines.join("\n") + "\n").unwrap();
        std::fs::write(dir.path().join("summary.json"), r#"{"wall_seconds": 12.5}"#).unwrap();
        dir
    }

    fn episode(id: &str, status: Status) -> String {
        let verdict = CheckVerdict {
            status,
            reason: String::new(),
        };
        serde_json::to_string(&EpisodeRecord {
            task_id: id.into(),
            category: Some("chart_analysis".into()),
            status,
            reason: String::new(),
            verdicts: Verdicts {
                faithful: verdict.clone(),
                fixed: verdict,
            },
            turns: 2,
            end: EpisodeEnd::Answered,
            end_reason: String::new(),
            cells: vec![],
            tokens: TokenUsage {
                prompt_tokens: 100,
                completion_tokens: 10,
                reasoning_tokens: 0,
            },
            seconds: 1.0,
            outputs: vec![],
        })
        .unwrap()
    }

    #[test]
    fn pybench_directories_read_as_one_sample_per_task() {
        let dir = write_dir(
            Kind::PybenchRun,
            &[
                episode("PyBench/2", Status::Pass),
                episode("PyBench/3", Status::Fail),
                episode("PyBench/13", Status::Infra),
            ],
        );
        let run = Run::load(dir.path()).unwrap();
        assert_eq!(run.benchmark, "pybench");
        assert_eq!(run.judged().count(), 2);
        assert_eq!(run.tasks["PyBench/13"].infra, 1);
        assert_eq!(run.wall_seconds, Some(12.5));
        assert_eq!(run.tokens.unwrap().prompt_tokens, 300);
        assert_eq!(run.groups["PyBench/3"], ["chart_analysis"]);
    }

    #[test]
    fn a_judged_pybench_run_brings_its_judges_into_the_figures_and_the_json() {
        let dir = write_dir(Kind::PybenchRun, &[episode("PyBench/2", Status::Pass)]);
        let judging = crate::judge::tests::judging();
        std::fs::write(
            dir.path().join("summary.json"),
            serde_json::json!({"wall_seconds": 1.0, "judges": [judging]}).to_string(),
        )
        .unwrap();
        let run = Run::load(dir.path()).unwrap();
        assert_eq!(run.judges, std::slice::from_ref(&judging));
        let report = crate::report(&[run], 0);
        assert_eq!(report.runs[0].judges, [judging]);
        let json: Value = serde_json::to_value(&report).unwrap();
        assert_eq!(json["runs"][0]["judges"][0]["agreement"]["kappa"], -0.3333);
        // Unjudged runs' JSON is as before.
        std::fs::write(dir.path().join("summary.json"), r#"{"wall_seconds": 1.0}"#).unwrap();
        let report = crate::report(&[Run::load(dir.path()).unwrap()], 0);
        assert!(serde_json::to_value(&report).unwrap()["runs"][0]
            .get("judges")
            .is_none());
    }

    #[test]
    fn a_damaged_record_is_named_by_file_and_line() {
        let dir = write_dir(Kind::BigcodebenchEval, &["{}".to_string()]);
        let err = Run::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("results.jsonl:1: not a valid record"), "{err}");
    }

    #[test]
    fn a_last_line_torn_by_a_kill_is_not_read_yet() {
        let whole = [
            episode("PyBench/2", Status::Pass),
            episode("PyBench/3", Status::Fail),
        ];
        let torn = episode("PyBench/4", Status::Pass);
        let dir = write_dir(Kind::PybenchRun, &whole);
        let results = dir.path().join("results.jsonl");
        // Killed mid-record: the last line has neither its end nor its newline.
        let text = whole.join("\n") + "\n" + &torn[..torn.len() / 2];
        std::fs::write(&results, &text).unwrap();
        let records: Vec<(usize, EpisodeRecord)> = read_numbered_lines(&results).unwrap();
        let ids: Vec<(usize, &str)> = records
            .iter()
            .map(|(n, r)| (*n, r.task_id.as_str()))
            .collect();
        assert_eq!(ids, [(1, "PyBench/2"), (2, "PyBench/3")]);
        let run = Run::load(dir.path()).unwrap();
        assert_eq!(
            run.tasks.keys().collect::<Vec<_>>(),
            ["PyBench/2", "PyBench/3"]
        );
        assert_eq!(run.statuses["pass"], 1);
        // A whole record written without its newline is not written yet either...
        std::fs::write(&results, whole.join("\n") + "\n" + &torn).unwrap();
        assert_eq!(read_lines::<EpisodeRecord>(&results).unwrap().len(), 2);
        // ...until the newline comes.
        std::fs::write(&results, whole.join("\n") + "\n" + &torn + "\n").unwrap();
        assert_eq!(read_lines::<EpisodeRecord>(&results).unwrap().len(), 3);
        // A file of one line still being written has no records.
        std::fs::write(&results, &torn[..10]).unwrap();
        assert!(read_lines::<EpisodeRecord>(&results).unwrap().is_empty());
        // A damaged line before the last is still an error, named by its line.
        std::fs::write(&results, format!("{}\n{{}}\n{}\n", whole[0], whole[1])).unwrap();
        let err = read_lines::<EpisodeRecord>(&results)
            .unwrap_err()
            .to_string();
        assert!(err.contains("results.jsonl:2: not a valid record"), "{err}");
    }

    #[test]
    fn judged_recordings_are_read_whole_even_without_a_last_newline() {
        let dir = tempfile::tempdir().unwrap();
        let recordings = dir.path().join("episodes.jsonl");
        let line = |index: &str| {
            serde_json::json!({"index": index, "messages": [{"role": "assistant", "content": "Finished: x"}]})
                .to_string()
        };
        std::fs::write(&recordings, line("1") + "\n" + &line("2")).unwrap();
        let mut manifest = Manifest::new(Kind::PybenchEval, Identity::default());
        manifest.samples = Some(recordings);
        let judged = judged_trajectories(&manifest).unwrap();
        let indices: Vec<&str> = judged.iter().map(|t| t.index.as_str()).collect();
        assert_eq!(indices, ["1", "2"]);
    }
}
