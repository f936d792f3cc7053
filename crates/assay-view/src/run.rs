//! One run as the viewer shows it: its samples as table rows, each sample's whole story on
//! request, and its figures. The files are read when asked for and read on as they grow
//! ([`crate::journal`]), so a run in progress shows what it has judged so far.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use assay_records::{
    EpisodeEnd, EpisodeRecord, GenerationRecord, JudgementRecord, Kind, Manifest, SampleRecord,
    Split, Status, TrajectoryRecord,
};
use assay_report::{figures, Run, RunFigures};
use assay_tasks::bigcodebench::{Dataset, Subset, VERSIONS};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::journal::{stamp, Document, Journal, Stamp};
use crate::{io_error, ViewError};

/// How much of a failure's text the error search looks through, per sample.
const SEARCHABLE_BYTES: usize = 8 << 10;

/// How long a journal may go unwritten and its run still count as running.
const RUNNING_WITHIN: Duration = Duration::from_secs(60);

/// How often the figures of a changing run are computed again (each is a bootstrap).
const FIGURES_EVERY: Duration = Duration::from_secs(5);

/// A sample as a row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Its key: the sample's index (BigCodeBench), the task's number (PyBench), its position
    /// (an official file).
    pub index: usize,
    /// Its task.
    pub task_id: String,
    /// `pass`, `fail`, `error`, `timeout`, `oom`, `infra`.
    pub status: String,
    /// The first test that did not pass.
    pub test: Option<String>,
    /// Why, in a sentence.
    pub reason: String,
    /// Wall time.
    pub seconds: Option<f64>,
    /// Peak memory.
    pub memory_bytes: Option<u64>,
    /// The model's replies (PyBench).
    pub turns: Option<u32>,
    /// The task's libraries (BigCodeBench) or category (PyBench).
    pub groups: Vec<String>,
    /// Lower-cased reason, failing tests and tracebacks, and standard error: what the error
    /// search looks through.
    #[serde(skip)]
    haystack: String,
}

/// What the table shows: the filters, the order and the page.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Filter {
    /// Only this status (`failing`: every judged one that did not pass).
    pub status: Option<String>,
    /// Tasks whose id contains this (a bare number: that task).
    pub task: Option<String>,
    /// Only samples of tasks with this library (or PyBench category).
    pub group: Option<String>,
    /// Only samples whose reason, failing tests, tracebacks or standard error contain this
    /// (case ignored).
    pub q: Option<String>,
    /// `index` (default), `slowest`, `task`.
    pub sort: Option<String>,
    /// Rows to skip.
    pub offset: Option<usize>,
    /// Rows to return (at most 500; default 100).
    pub limit: Option<usize>,
}

/// A page of the table.
#[derive(Debug, Serialize)]
pub struct Page {
    /// Samples in the run.
    pub total: usize,
    /// Of them, matching the filters.
    pub matched: usize,
    /// Where the page starts.
    pub offset: usize,
    /// The page.
    pub rows: Vec<Row>,
    /// Samples per status over the whole run (for the filter's choices).
    pub statuses: BTreeMap<String, usize>,
    /// Every library or category in the run (for the filter's choices).
    pub groups: Vec<String>,
}

/// A run in the runs list.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Its number in the viewer.
    pub id: usize,
    /// Its name.
    pub label: String,
    /// Where it is.
    pub path: PathBuf,
    /// `bigcodebench`, `pybench`... (empty until its manifest reads).
    pub benchmark: String,
    /// The manifest's kind, or `official` for an official results file.
    pub kind: String,
    /// The prompt style.
    pub split: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// `finished`, `running` (a journal written in the last minute), `unfinished`.
    pub state: String,
    /// Samples judged so far.
    pub judged: usize,
    /// Samples to judge, when known.
    pub expected: Option<usize>,
    /// Samples per status.
    pub statuses: BTreeMap<String, usize>,
    /// The report's figures (pass@k with intervals...), when the run has judged anything.
    pub figures: Option<RunFigures>,
    /// Why the run could not be read, when it could not.
    pub error: Option<String>,
}

/// A run as a diff compares it.
pub struct Compared {
    /// The report's view of the run.
    pub run: Arc<Run>,
    /// Its figures.
    pub figures: RunFigures,
    /// The first sample of each task (its row key), for links from a diff.
    pub first_samples: HashMap<String, usize>,
}

/// The figures of a run and what they were computed from.
struct Figures {
    stamps: Vec<Option<Stamp>>,
    at: Instant,
    run: Arc<Run>,
    figures: RunFigures,
}

/// A run directory's files.
struct DirFiles {
    manifest: Document<Manifest>,
    results: Journal<SampleRecord>,
    samples: Journal<Value>,
    /// `samples.jsonl`, whose lines the runs list counts without parsing them, and the count
    /// with the stamp of the file it was made from.
    samples_path: PathBuf,
    samples_count: Option<(Stamp, usize)>,
    episodes: Journal<EpisodeRecord>,
    trajectories: Journal<TrajectoryRecord>,
    /// BigCodeBench: the requests of a generation, for what each answer thought.
    generation: Journal<GenerationRecord>,
    /// PyBench: what LLM judges were asked and answered.
    judgements: Journal<JudgementRecord>,
}

/// An official `*_eval_results.json`.
#[derive(Deserialize)]
struct OfficialFile {
    eval: BTreeMap<String, Vec<Value>>,
}

enum Files {
    Dir(Box<DirFiles>),
    Official(Document<OfficialFile>),
}

struct State {
    files: Files,
    /// The rows, and the version of the records they were built from (rebuilt when the
    /// records' file changes).
    rows: Vec<Row>,
    /// Of the rows: how many have each status, and every library or category, sorted.
    statuses: BTreeMap<String, usize>,
    groups: Vec<String>,
    built_from: Option<u64>,
    figures: Option<Figures>,
}

/// One run the viewer was given.
pub struct RunSource {
    /// Its number.
    pub id: usize,
    /// Its name.
    pub label: String,
    /// Where it is, as given.
    pub path: PathBuf,
    /// The directory files may be served from (canonical), for directories.
    pub root: Option<PathBuf>,
    state: Mutex<State>,
}

impl RunSource {
    /// A run directory (it has a `manifest.json`) or an official results file. Nothing is read
    /// yet but whether it exists.
    pub fn open(id: usize, path: &Path) -> Result<RunSource, ViewError> {
        let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
        let label = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let (files, root) = if meta.is_dir() {
            let manifest = path.join("manifest.json");
            if !manifest.is_file() {
                return Err(ViewError::Invalid {
                    path: manifest,
                    line: 0,
                    message: "missing: not a run directory".into(),
                });
            }
            let root = std::fs::canonicalize(path).map_err(|e| io_error(path, e))?;
            let dir = DirFiles {
                manifest: Document::new(root.join("manifest.json")),
                results: Journal::new(root.join("results.jsonl")),
                samples: Journal::new(root.join("samples.jsonl")),
                samples_path: root.join("samples.jsonl"),
                samples_count: None,
                episodes: Journal::new(root.join("results.jsonl")),
                trajectories: Journal::new(root.join("trajectory.jsonl")),
                generation: Journal::new(root.join("generation.jsonl")),
                judgements: Journal::new(root.join("judgements.jsonl")),
            };
            (Files::Dir(Box::new(dir)), Some(root))
        } else {
            (Files::Official(Document::new(path.to_path_buf())), None)
        };
        Ok(RunSource {
            id,
            label,
            path: path.to_path_buf(),
            root,
            state: Mutex::new(State {
                files,
                rows: Vec::new(),
                statuses: BTreeMap::new(),
                groups: Vec::new(),
                built_from: None,
                figures: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only caches behind: they are rebuilt.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run as the runs list shows it. A run that cannot be read says why.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary {
            id: self.id,
            label: self.label.clone(),
            path: self.path.clone(),
            benchmark: String::new(),
            kind: String::new(),
            split: None,
            model: None,
            state: "finished".into(),
            judged: 0,
            expected: None,
            statuses: BTreeMap::new(),
            figures: None,
            error: None,
        };
        if let Err(e) = self.fill(&mut summary) {
            summary.error = Some(e.to_string());
        }
        summary
    }

    fn fill(&self, summary: &mut Summary) -> Result<(), ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        summary.judged = state.rows.len();
        summary.statuses = state.statuses.clone();
        match &mut state.files {
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?.cloned();
                if let Some(m) = &manifest {
                    summary.kind = m.kind.as_str().to_string();
                    summary.benchmark = m.identity.benchmark.clone().unwrap_or_default();
                    summary.split = m.identity.split.clone();
                    summary.model = m.identity.model.clone();
                }
                summary.expected = if is_pybench(manifest.as_ref()) {
                    None
                } else {
                    let now = stamp(&dir.samples_path);
                    let n = match (now, dir.samples_count) {
                        (None, _) => 0,
                        (Some(now), Some((then, n))) if now == then => n,
                        (Some(now), _) => {
                            let n = count_lines(&dir.samples_path)?;
                            dir.samples_count = Some((now, n));
                            n
                        }
                    };
                    (n > 0).then_some(n)
                };
                summary.state = activity(self.root.as_deref().unwrap_or(&self.path));
            }
            // The report reads what an official file's name says (benchmark, split, model).
            Files::Official(_) => summary.kind = "official".into(),
        }
        if summary.judged > 0 {
            let figures = self.figures(&mut state)?.1;
            if summary.kind == "official" {
                summary.benchmark = figures.benchmark.clone();
                summary.split = figures.split.clone();
                summary.model = figures.model.clone();
            }
            summary.figures = Some(figures);
        }
        Ok(())
    }

    /// The report's view of the run (loaded again when its files changed, at most every
    /// few seconds while they keep changing), and its figures.
    fn figures(&self, state: &mut State) -> Result<(Arc<Run>, RunFigures), ViewError> {
        let stamps = self.stamps();
        if let Some(f) = &state.figures {
            if f.stamps == stamps || f.at.elapsed() < FIGURES_EVERY {
                return Ok((f.run.clone(), f.figures.clone()));
            }
        }
        let run = Run::load(&self.path)?;
        let figures = figures(&run);
        let run = Arc::new(run);
        state.figures = Some(Figures {
            stamps,
            at: Instant::now(),
            run: run.clone(),
            figures: figures.clone(),
        });
        Ok((run, figures))
    }

    /// What a diff needs of the run, read under one lock: the report's view of it, its
    /// figures (cached with it), and the first sample of each task.
    pub fn compared(&self) -> Result<Compared, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let (run, figures) = self.figures(&mut state)?;
        let mut first_samples = HashMap::new();
        for row in &state.rows {
            first_samples
                .entry(row.task_id.clone())
                .or_insert(row.index);
        }
        Ok(Compared {
            run,
            figures,
            first_samples,
        })
    }

    fn stamps(&self) -> Vec<Option<Stamp>> {
        match &self.root {
            // The summary too: a judging writes its figures there.
            Some(root) => [
                "manifest.json",
                "results.jsonl",
                "samples.jsonl",
                "generation.jsonl",
                "summary.json",
            ]
            .iter()
            .map(|f| stamp(&root.join(f)))
            .collect(),
            None => vec![stamp(&self.path)],
        }
    }

    /// A page of the table.
    pub fn page(&self, filter: &Filter) -> Result<Page, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let rows = &state.rows;
        let q = filter
            .q
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_lowercase);
        let task = filter
            .task
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let mut matched: Vec<&Row> = rows
            .iter()
            .filter(|r| match filter.status.as_deref() {
                None | Some("") => true,
                Some("failing") => r.status != "pass" && r.status != "infra",
                Some(s) => r.status == s,
            })
            .filter(|r| task.is_none_or(|t| task_matches(&r.task_id, t)))
            .filter(|r| {
                filter
                    .group
                    .as_deref()
                    .filter(|g| !g.is_empty())
                    .is_none_or(|g| r.groups.iter().any(|x| x == g))
            })
            .filter(|r| q.as_deref().is_none_or(|q| r.haystack.contains(q)))
            .collect();
        match filter.sort.as_deref() {
            Some("slowest") => matched.sort_by(|a, b| {
                b.seconds
                    .unwrap_or(0.0)
                    .total_cmp(&a.seconds.unwrap_or(0.0))
                    .then(a.index.cmp(&b.index))
            }),
            Some("task") => matched.sort_by_key(|r| (task_number(&r.task_id), r.index)),
            _ => {}
        }
        let offset = filter.offset.unwrap_or(0);
        let limit = filter.limit.unwrap_or(100).min(500);
        Ok(Page {
            total: rows.len(),
            matched: matched.len(),
            offset,
            rows: matched
                .into_iter()
                .skip(offset)
                .take(limit)
                .cloned()
                .collect(),
            statuses: state.statuses.clone(),
            groups: state.groups.clone(),
        })
    }

    /// Everything about one sample (`index`: its row key); none when there is no such sample.
    pub fn detail(&self, index: usize) -> Result<Option<Value>, ViewError> {
        let mut state = self.lock();
        state.refresh()?;
        let Some(row) = state.rows.iter().find(|r| r.index == index).cloned() else {
            return Ok(None);
        };
        // An episode shows what the judgings the report reads in the run said of it.
        let pybench = match &mut state.files {
            Files::Dir(dir) => is_pybench(dir.manifest.get()?),
            Files::Official(_) => false,
        };
        let pybench_run = if pybench {
            Some(self.figures(&mut state)?.0)
        } else {
            None
        };
        match &mut state.files {
            Files::Official(doc) => {
                let file = doc.get()?.ok_or_else(|| vanished(&self.path))?;
                let sample = official_samples(file)
                    .nth(index)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
                let details = sample["details"].as_object().cloned().unwrap_or_default();
                let tests: Vec<Value> = details
                    .iter()
                    .map(|(name, detail)| {
                        json!({"name": name, "result": "fail", "detail": detail.as_str().unwrap_or_default()})
                    })
                    .collect();
                let task = task_of(None, &row.task_id);
                Ok(Some(json!({
                    "benchmark": "bigcodebench",
                    "row": row,
                    "prompt": task.map(|t| prompt(t, None)),
                    "test_code": task.map(|t| t.test.clone()),
                    "code": sample["solution"].as_str().unwrap_or_default(),
                    "tests": tests,
                })))
            }
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?.cloned();
                if let Some(run) = pybench_run {
                    let mut detail = episode(dir, manifest.as_ref(), &row)?;
                    if !run.judges.is_empty() {
                        dir.judgements.refresh()?;
                        detail["judgements"] = crate::judge::verdicts(
                            &run.judges,
                            dir.judgements.records(),
                            &row.task_id,
                        );
                    }
                    return Ok(Some(detail));
                }
                Ok(Some(bigcodebench_sample(dir, manifest.as_ref(), &row)?))
            }
        }
    }
}

fn vanished(path: &Path) -> ViewError {
    ViewError::Invalid {
        path: path.to_path_buf(),
        line: 0,
        message: "no longer there".into(),
    }
}

/// The lines of a file (none when it does not exist).
fn count_lines(path: &Path) -> Result<usize, ViewError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes.iter().filter(|&&b| b == b'\n').count()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_error(path, e)),
    }
}

/// `finished` (its summary is newer than its journals), `running` (a journal written within
/// the last minute) or `unfinished`.
fn activity(dir: &Path) -> String {
    if assay_report::finished_at(dir).is_some() {
        return "finished".into();
    }
    let recent = assay_report::last_write(dir)
        .and_then(|written| SystemTime::now().duration_since(written).ok())
        .is_some_and(|age| age < RUNNING_WITHIN);
    if recent { "running" } else { "unfinished" }.into()
}

/// A task's number (the last part of its id), for task order; ids without one sort last.
pub(crate) fn task_number(task_id: &str) -> u64 {
    task_id
        .rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

/// A bare number names one task; anything else is looked for in the id, case ignored.
fn task_matches(task_id: &str, wanted: &str) -> bool {
    if wanted.chars().all(|c| c.is_ascii_digit()) {
        return task_id.rsplit('/').next() == Some(wanted);
    }
    task_id.to_lowercase().contains(&wanted.to_lowercase())
}

/// The official file's samples in task order (by number), each with its task.
fn official_samples(file: &OfficialFile) -> impl Iterator<Item = (&String, &Value)> {
    let mut tasks: Vec<(&String, &Vec<Value>)> = file.eval.iter().collect();
    tasks.sort_by_key(|(id, _)| task_number(id));
    tasks
        .into_iter()
        .flat_map(|(id, samples)| samples.iter().map(move |s| (id, s)))
}

/// The embedded dataset of `version` (the newest when it is not one), loaded once.
fn dataset(version: Option<&str>) -> Option<&'static Dataset> {
    static DATASETS: OnceLock<Mutex<HashMap<&'static str, Option<&'static Dataset>>>> =
        OnceLock::new();
    let version = VERSIONS
        .iter()
        .copied()
        .find(|v| Some(*v) == version)
        .unwrap_or(VERSIONS[0]);
    let mut cache = DATASETS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    *cache.entry(version).or_insert_with(|| {
        Dataset::embedded(version, Subset::Full)
            .ok()
            .map(|d| &*Box::leak(Box::new(d)))
    })
}

fn task_of(
    version: Option<&str>,
    task_id: &str,
) -> Option<&'static assay_tasks::bigcodebench::Task> {
    dataset(version)?.get(task_id)
}

/// The task's prompt in the split its run's identity names.
fn prompt(task: &assay_tasks::bigcodebench::Task, split: Option<&str>) -> String {
    match Split::named(split) {
        Split::Complete => task.complete_prompt.clone(),
        Split::Instruct => task.instruct_prompt.clone(),
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A traceback's last line: the exception and its message.
fn last_line(traceback: &str) -> Option<String> {
    traceback
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

impl State {
    /// Reads what changed and rebuilds the rows when the records did.
    fn refresh(&mut self) -> Result<(), ViewError> {
        let version = match &mut self.files {
            Files::Official(doc) => {
                doc.get()?;
                doc.reads()
            }
            Files::Dir(dir) => {
                if is_pybench(dir.manifest.get()?) {
                    dir.episodes.refresh()?;
                    dir.episodes.changes()
                } else {
                    dir.results.refresh()?;
                    dir.results.changes()
                }
            }
        };
        if self.built_from == Some(version) {
            return Ok(());
        }
        self.rows = match &mut self.files {
            Files::Official(doc) => doc.get()?.map(official_rows).unwrap_or_default(),
            Files::Dir(dir) => {
                let manifest = dir.manifest.get()?;
                if is_pybench(manifest) {
                    episode_rows(dir.episodes.records())
                } else {
                    let version = manifest.and_then(|m| m.identity.dataset.clone());
                    sample_rows(dir.results.records(), version.as_deref())
                }
            }
        };
        self.statuses.clear();
        let mut groups: Vec<String> = Vec::new();
        for row in &self.rows {
            *self.statuses.entry(row.status.clone()).or_default() += 1;
            groups.extend(row.groups.iter().cloned());
        }
        groups.sort();
        groups.dedup();
        self.groups = groups;
        self.built_from = Some(version);
        Ok(())
    }
}

/// Whether a manifest is a PyBench run's (episodes), not a BigCodeBench one's (samples).
fn is_pybench(manifest: Option<&Manifest>) -> bool {
    manifest.is_some_and(|m| matches!(m.kind, Kind::PybenchRun | Kind::PybenchEval))
}

fn official_rows(file: &OfficialFile) -> Vec<Row> {
    official_samples(file)
        .enumerate()
        .map(|(index, (task_id, sample))| {
            let status = sample["status"].as_str().unwrap_or("fail").to_string();
            let details = sample["details"].as_object();
            let first = details.and_then(|d| d.iter().next());
            let mut haystack = String::new();
            for (name, detail) in details.into_iter().flatten() {
                haystack.push_str(name);
                haystack.push('\n');
                haystack.push_str(head(detail.as_str().unwrap_or_default(), SEARCHABLE_BYTES));
            }
            Row {
                index,
                task_id: task_id.clone(),
                reason: first
                    .and_then(|(_, d)| last_line(d.as_str().unwrap_or_default()))
                    .or_else(|| first.map(|(name, _)| format!("{name} did not pass")))
                    .unwrap_or_else(|| status.clone()),
                status,
                test: first.map(|(name, _)| name.clone()),
                seconds: None,
                memory_bytes: None,
                turns: None,
                groups: task_of(None, task_id)
                    .map(|t| t.libs.clone())
                    .unwrap_or_default(),
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

fn sample_rows(records: &[SampleRecord], version: Option<&str>) -> Vec<Row> {
    // The last record of a sample wins (a resumed run may have judged it again).
    let mut by_index: BTreeMap<usize, &SampleRecord> = BTreeMap::new();
    for record in records {
        by_index.insert(record.index, record);
    }
    by_index
        .into_values()
        .map(|r| {
            let mut haystack = r.reason.clone();
            for test in r.tests.iter().filter(|t| !t.result.counts_as_passing()) {
                haystack.push('\n');
                haystack.push_str(&test.name);
                haystack.push('\n');
                haystack.push_str(head(&test.detail, SEARCHABLE_BYTES));
            }
            haystack.push('\n');
            haystack.push_str(head(&r.stderr.text, SEARCHABLE_BYTES));
            Row {
                index: r.index,
                task_id: r.task_id.clone(),
                status: r.status.as_str().into(),
                test: r.first_failure().map(|t| t.name.clone()),
                reason: r.reason.clone(),
                seconds: Some(r.wall_seconds),
                memory_bytes: r.memory_peak_bytes,
                turns: None,
                groups: task_of(version, &r.task_id)
                    .map(|t| t.libs.clone())
                    .unwrap_or_default(),
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

fn episode_rows(records: &[EpisodeRecord]) -> Vec<Row> {
    let mut by_task: BTreeMap<u64, &EpisodeRecord> = BTreeMap::new();
    for record in records {
        by_task.insert(task_number(&record.task_id), record);
    }
    by_task
        .into_iter()
        .map(|(number, r)| {
            let mut haystack = r.reason.clone();
            for cell in r.cells.iter().filter(|c| c.status != Status::Pass) {
                haystack.push('\n');
                haystack.push_str(&cell.reason);
            }
            Row {
                index: usize::try_from(number).unwrap_or(usize::MAX),
                task_id: r.task_id.clone(),
                status: r.status.as_str().into(),
                test: None,
                reason: r.reason.clone(),
                seconds: Some(r.seconds),
                memory_bytes: None,
                turns: Some(r.turns),
                groups: r.category.iter().cloned().collect(),
                haystack: haystack.to_lowercase(),
            }
        })
        .collect()
}

/// A BigCodeBench sample: the prompt, what the model said (and thought) and what ran, each
/// test.
fn bigcodebench_sample(
    dir: &mut DirFiles,
    manifest: Option<&Manifest>,
    row: &Row,
) -> Result<Value, ViewError> {
    dir.samples.refresh()?;
    dir.generation.refresh()?;
    let record = dir
        .results
        .records()
        .iter()
        .rev()
        .find(|r| r.index == row.index)
        .cloned();
    let samples = dir.samples.records();
    let sample = samples.get(row.index);
    let code = sample
        .and_then(|s| s["solution"].as_str().or(s["completion"].as_str()))
        .unwrap_or_default();
    // The model's answer before sanitizing: every samples.jsonl assay writes has it on the
    // sample's own line (generation writes it, evaluation and merge keep lines as they are).
    let raw = sample.and_then(|s| s["raw_solution"].as_str());
    // Its thinking is in generation.jsonl: the sample is its task's n-th line of samples.jsonl,
    // so its task's n-th answer there, when that answer is the code judged (a samples file
    // evaluated apart from its generation has none).
    let nth = samples
        .iter()
        .take(row.index)
        .filter(|s| s["task_id"] == row.task_id.as_str())
        .count();
    let thinking = assay_report::answers(dir.generation.records())
        .filter(|a| a.request.task_id == row.task_id)
        .nth(nth)
        .filter(|a| a.solution() == code)
        .and_then(|a| a.thinking());
    let version = manifest.and_then(|m| m.identity.dataset.as_deref());
    let split = manifest.and_then(|m| m.identity.split.as_deref());
    let task = task_of(version, &row.task_id);
    Ok(json!({
        "benchmark": "bigcodebench",
        "row": row,
        "prompt": task.map(|t| prompt(t, split)),
        "test_code": task.map(|t| t.test.clone()),
        "raw": raw,
        "thinking": thinking,
        "code": code,
        "record": record,
    }))
}

/// A PyBench episode, turn by turn: each reply, the cell it ran, what came back, the figures
/// it drew; then the files the episode wrote.
fn episode(dir: &mut DirFiles, manifest: Option<&Manifest>, row: &Row) -> Result<Value, ViewError> {
    dir.trajectories.refresh()?;
    let record = dir
        .episodes
        .records()
        .iter()
        .rev()
        .find(|r| task_number(&r.task_id) == row.index as u64)
        .cloned();
    let number = row.index.to_string();
    // An evaluation of recordings keeps no conversation of its own: the recordings it judged
    // have it, while they are unchanged.
    let judged = match manifest.filter(|m| m.kind == Kind::PybenchEval) {
        Some(m) => assay_report::judged_trajectories(m).unwrap_or_default(),
        None => Vec::new(),
    };
    let trajectory = dir
        .trajectories
        .records()
        .iter()
        .chain(&judged)
        .rev()
        .find(|t| t.index == number);
    let mut preamble = Vec::new();
    let mut steps: Vec<Value> = Vec::new();
    let mut turn = 0u32;
    for message in trajectory
        .map(|t| t.messages.as_slice())
        .unwrap_or_default()
    {
        if message.role == "assistant" {
            turn += 1;
            let cell = record
                .as_ref()
                .and_then(|r| r.cells.iter().find(|c| c.turn == turn));
            steps.push(json!({
                "turn": turn,
                "message": message.content,
                // What it thought first (never run): shown apart, as a BigCodeBench sample's.
                "thinking": message.thinking.as_ref().map(|text| json!({"text": text, "cut": false})),
                "cell": cell.map(|c| json!({
                    "status": c.status.as_str(),
                    "reason": c.reason,
                    "seconds": c.seconds,
                    "restarted": c.restarted,
                    // Paths in the run directory (`figures/<index>-<turn>-<n>.png`).
                    "figures": c.figures,
                })),
                "observation": Value::Null,
            }));
        } else if let Some(step) = steps.last_mut().filter(|s| s["observation"].is_null()) {
            step["observation"] = json!(message.content);
        } else {
            preamble.push(json!({"role": message.role, "content": message.content}));
        }
    }
    // An episode cut off inside its thinking ended at its last reply.
    if record
        .as_ref()
        .is_some_and(|r| r.end == EpisodeEnd::CutWhileThinking)
    {
        if let Some(thinking) = steps.last_mut().map(|s| &mut s["thinking"]) {
            if thinking.is_object() {
                thinking["cut"] = json!(true);
            }
        }
    }
    let outputs: Vec<String> = record
        .as_ref()
        .map(|r| {
            r.outputs
                .iter()
                .map(|o| format!("tasks/{}/output/{o}", row.index))
                .collect()
        })
        .unwrap_or_default();
    Ok(json!({
        "benchmark": "pybench",
        "row": row,
        "record": record,
        "preamble": preamble,
        "steps": steps,
        "outputs": outputs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_records::Identity;

    fn run_dir(kind: Kind, files: &[(&str, String)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let identity = Identity {
            benchmark: Some("pybench".into()),
            ..Identity::default()
        };
        std::fs::write(
            dir.path().join("manifest.json"),
            serde_json::to_string(&Manifest::new(kind, identity)).unwrap(),
        )
        .unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn a_damaged_journal_is_named_in_the_runs_list_and_the_table() {
        let dir = run_dir(
            Kind::PybenchRun,
            &[("results.jsonl", "{\"task_id\": \"PyBench/1\"}\n".into())],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let error = run.summary().error.unwrap();
        assert!(
            error.contains("results.jsonl:1: not a valid record"),
            "{error}"
        );
        let err = run.page(&Filter::default()).unwrap_err().to_string();
        assert!(err.contains("results.jsonl:1"), "{err}");
        assert!(RunSource::open(1, &dir.path().join("nothing")).is_err());
    }

    #[test]
    fn official_rows_say_the_exception_and_filter_by_task_number_and_failing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir
            .path()
            .join("m--bigcodebench-complete--x_eval_results.json");
        let sample = |status: &str, detail: &str| json!({"status": status, "details": if detail.is_empty() { json!({}) } else { json!({"test_a": detail}) }});
        std::fs::write(
            &file,
            json!({"date": "d", "eval": {
                "BigCodeBench/10": [sample("fail", "Traceback...\n  line 3\nValueError: bad\n\n")],
                "BigCodeBench/1": [sample("pass", ""), sample("timeout", "")],
                "BigCodeBench/2": [sample("fail", "AssertionError: 1 != 2")],
            }})
            .to_string(),
        )
        .unwrap();
        let run = RunSource::open(0, &file).unwrap();
        let page = run.page(&Filter::default()).unwrap();
        let ids: Vec<&str> = page.rows.iter().map(|r| r.task_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "BigCodeBench/1",
                "BigCodeBench/1",
                "BigCodeBench/2",
                "BigCodeBench/10"
            ],
            "task order, by number"
        );
        let statuses: Vec<(&str, usize)> = page
            .statuses
            .iter()
            .map(|(s, n)| (s.as_str(), *n))
            .collect();
        assert_eq!(statuses, [("fail", 2), ("pass", 1), ("timeout", 1)]);
        let mut groups: Vec<String> = ["BigCodeBench/1", "BigCodeBench/2", "BigCodeBench/10"]
            .iter()
            .flat_map(|id| task_of(None, id).unwrap().libs.clone())
            .collect();
        groups.sort();
        groups.dedup();
        assert_eq!(page.groups, groups);
        assert_eq!(page.rows[3].reason, "ValueError: bad");
        assert_eq!(page.rows[3].test.as_deref(), Some("test_a"));
        let only = |filter: Filter| -> Vec<usize> {
            run.page(&filter)
                .unwrap()
                .rows
                .iter()
                .map(|r| r.index)
                .collect()
        };
        let filter = |f: fn(&mut Filter)| {
            let mut filter = Filter::default();
            f(&mut filter);
            filter
        };
        assert_eq!(only(filter(|f| f.task = Some("1".into()))), [0, 1]);
        assert_eq!(
            only(filter(|f| f.task = Some("bigcodebench/1".into()))),
            [0, 1, 3]
        );
        assert_eq!(
            only(filter(|f| f.status = Some("failing".into()))),
            [1, 2, 3]
        );
        assert_eq!(only(filter(|f| f.q = Some("VALUEERROR".into()))), [3]);
        assert_eq!(
            only(filter(|f| {
                f.offset = Some(1);
                f.limit = Some(2)
            })),
            [1, 2]
        );
        assert_eq!(run.summary().statuses["fail"], 2);
    }

    #[test]
    fn an_episode_pairs_each_reply_with_its_cell_and_what_came_back() {
        let episode = json!({
            "task_id": "PyBench/7", "status": "fail", "reason": "r",
            "verdicts": {"faithful": {"status": "fail", "reason": "r"}, "fixed": {"status": "fail", "reason": "r"}},
            "turns": 2, "end": "answered", "seconds": 1.0, "outputs": ["a.png"],
            "cells": [{"turn": 1, "status": "error", "reason": "ValueError: x", "seconds": 0.1,
                       "output_bytes": 3, "observation_chars": 9, "figures": ["figures/7-1-1.png"]}],
        });
        let trajectory = json!({"index": "7", "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "[INFO] files"},
            {"role": "user", "content": "the query"},
            {"role": "assistant", "content": "```python\n1/0\n```"},
            {"role": "user", "content": "Error: ValueError"},
            {"role": "assistant", "content": "Finished: done"},
        ]});
        let dir = run_dir(
            Kind::PybenchRun,
            &[
                ("results.jsonl", format!("{episode}\n")),
                ("trajectory.jsonl", format!("{trajectory}\n")),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let detail = run.detail(7).unwrap().unwrap();
        assert_eq!(detail["preamble"].as_array().unwrap().len(), 3);
        let steps = detail["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["cell"]["status"], "error");
        assert_eq!(steps[0]["cell"]["figures"], json!(["figures/7-1-1.png"]));
        assert_eq!(steps[0]["observation"], "Error: ValueError");
        assert_eq!(steps[1]["cell"], Value::Null);
        assert_eq!(steps[1]["observation"], Value::Null);
        assert_eq!(detail["outputs"], json!(["tasks/7/output/a.png"]));
        assert!(run.detail(8).unwrap().is_none());
    }

    /// A `results.jsonl` line of a BigCodeBench sample whose tests ended as `tests` say.
    fn sample_record(index: usize, task_id: &str, status: &str, tests: &[(&str, &str)]) -> String {
        let tests: Vec<Value> = tests
            .iter()
            .map(|(name, result)| {
                json!({"name": name, "result": result, "detail": format!("{name}: {result}"), "seconds": 0.1})
            })
            .collect();
        json!({
            "index": index, "task_id": task_id, "program_digest": "d", "status": status,
            "reason": "r", "official": null, "infra": null, "tests": tests, "wall_seconds": 1.0,
            "cpu_seconds": null, "memory_peak_bytes": null, "isolation": "full",
        })
        .to_string()
            + "\n"
    }

    #[test]
    fn a_sample_shows_the_raw_answer_of_its_own_line() {
        let sample = |raw: Option<&str>| {
            let mut line =
                json!({"task_id": "BigCodeBench/1", "solution": "def task_func(): pass"});
            if let Some(raw) = raw {
                line["raw_solution"] = json!(raw);
            }
            line.to_string() + "\n"
        };
        let dir = run_dir(
            Kind::BigcodebenchEval,
            &[
                (
                    "samples.jsonl",
                    sample(Some("first answer")) + &sample(Some("second answer")) + &sample(None),
                ),
                (
                    "results.jsonl",
                    (0..3)
                        .map(|i| sample_record(i, "BigCodeBench/1", "pass", &[("test_a", "pass")]))
                        .collect(),
                ),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let raw = |index: usize| run.detail(index).unwrap().unwrap()["raw"].clone();
        assert_eq!(raw(0), "first answer");
        assert_eq!(raw(1), "second answer");
        assert_eq!(raw(2), Value::Null, "a samples file without raw answers");
        assert_eq!(
            run.detail(1).unwrap().unwrap()["code"],
            "def task_func(): pass"
        );
    }

    #[test]
    fn a_sample_shows_what_its_own_answer_thought() {
        let line = |task: &str, solution: &str| {
            json!({"task_id": task, "solution": solution}).to_string() + "\n"
        };
        let request = |task: &str, solution: &str, thinking: Value| {
            json!({
                "task_id": task, "raw": ["r"], "solutions": [solution], "finish_reasons": ["stop"],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "latency_seconds": 1.0,
                "attempts": 1, "wanted": 1, "thinking": thinking,
            })
            .to_string()
                + "\n"
        };
        let failed = json!({
            "task_id": "BigCodeBench/1", "raw": [], "solutions": [], "finish_reasons": [],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "latency_seconds": 1.0,
            "attempts": 3, "error": "HTTP 500", "wanted": 1,
        });
        let dir = run_dir(
            Kind::BigcodebenchRun,
            &[
                (
                    "samples.jsonl",
                    line("BigCodeBench/1", "a")
                        + &line("BigCodeBench/2", "")
                        + &line("BigCodeBench/1", "b")
                        + &line("BigCodeBench/3", "edited after"),
                ),
                (
                    "results.jsonl",
                    [(0, 1), (1, 2), (2, 1), (3, 3)]
                        .iter()
                        .map(|(i, t)| sample_record(*i, &format!("BigCodeBench/{t}"), "pass", &[]))
                        .collect(),
                ),
                (
                    "generation.jsonl",
                    // Generation's order: a request that failed gave no answer.
                    format!("{failed}\n")
                        + &request("BigCodeBench/1", "a", json!([]))
                        + &request(
                            "BigCodeBench/1",
                            "b",
                            json!([{"source": "field", "text": "second", "redacted": 1}]),
                        )
                        + &request(
                            "BigCodeBench/2",
                            "",
                            json!([{"source": "text", "text": "cut", "cut": true}]),
                        )
                        + &request(
                            "BigCodeBench/3",
                            "as generated",
                            json!([{"source": "text", "text": "not the code judged"}]),
                        ),
                ),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let thinking = |index: usize| run.detail(index).unwrap().unwrap()["thinking"].clone();
        assert_eq!(
            thinking(0),
            Value::Null,
            "its task's first answer did not think"
        );
        assert_eq!(
            thinking(2),
            json!({"source": "field", "text": "second", "redacted": 1}),
            "its task's second answer"
        );
        assert_eq!(
            thinking(1),
            json!({"source": "text", "text": "cut", "cut": true})
        );
        assert_eq!(
            thinking(3),
            Value::Null,
            "a sample whose code is not its generation's answer"
        );
    }

    #[test]
    fn an_episode_shows_each_replys_thinking_and_where_it_was_cut() {
        let episode = json!({
            "task_id": "PyBench/4", "status": "fail", "reason": "r",
            "verdicts": {"faithful": {"status": "fail", "reason": "r"}, "fixed": {"status": "fail", "reason": "r"}},
            "turns": 3, "end": "cut_while_thinking", "seconds": 1.0,
            "cells": [{"turn": 2, "status": "pass", "reason": "ran", "seconds": 0.1,
                       "output_bytes": 1, "observation_chars": 1}],
        });
        let trajectory = json!({"index": "4", "messages": [
            {"role": "user", "content": "the query"},
            {"role": "assistant", "content": "Let me look."},
            {"role": "user", "content": "nothing ran"},
            {"role": "assistant", "content": "```python\n1\n```", "thinking": "run it"},
            {"role": "user", "content": "1"},
            {"role": "assistant", "content": "", "thinking": "and then"},
        ]});
        let dir = run_dir(
            Kind::PybenchRun,
            &[
                ("results.jsonl", format!("{episode}\n")),
                ("trajectory.jsonl", format!("{trajectory}\n")),
            ],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let detail = run.detail(4).unwrap().unwrap();
        let thinking: Vec<&Value> = detail["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["thinking"])
            .collect();
        assert_eq!(
            thinking,
            [
                &Value::Null,
                &json!({"text": "run it", "cut": false}),
                &json!({"text": "and then", "cut": true}),
            ]
        );
    }

    #[test]
    fn a_row_names_the_first_test_that_did_not_pass_and_searches_every_one() {
        let tests = [
            ("test_skipped", "skip"),
            ("test_expected", "xfail"),
            ("test_wrong", "fail"),
            ("test_raised", "error"),
        ];
        let dir = run_dir(
            Kind::BigcodebenchEval,
            &[(
                "results.jsonl",
                sample_record(0, "BigCodeBench/1", "fail", &tests)
                    + &sample_record(1, "BigCodeBench/2", "pass", &[("test_a", "pass")]),
            )],
        );
        let run = RunSource::open(0, dir.path()).unwrap();
        let page = run.page(&Filter::default()).unwrap();
        assert_eq!(page.rows[0].test.as_deref(), Some("test_wrong"));
        assert_eq!(page.rows[1].test, None);
        let matching = |q: &str| {
            let filter = Filter {
                q: Some(q.into()),
                ..Filter::default()
            };
            run.page(&filter).unwrap().matched
        };
        assert_eq!(matching("test_raised"), 1);
        assert_eq!(matching("test_skipped"), 0, "a skip is not a failure");
    }
}
