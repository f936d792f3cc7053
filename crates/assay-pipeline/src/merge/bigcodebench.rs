//! BigCodeBench shards joined (generations, evaluations, runs): rows and records renumbered in the single run's sample order
//! (tasks in dataset order, each task's samples in its shard's order), the requests and the
//! unanswered tasks in task order, the reference figures joined, and the official files and the
//! summary written by the code an evaluation ends with.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::evaluation::{conclude, Concluded};
use assay_eval::bigcodebench::ground_truth::PEAKS_LISTED;
use assay_eval::bigcodebench::samples;
use assay_records::{
    EvalSummary, GenerationDone, GenerationOutcome, GenerationRecord, GroundTruthSummary, Kind,
    ProcessPeaks, SampleRecord, Split, TimePolicy, Unanswered,
};
use assay_report::read_lines;
use assay_rundir::SAMPLES;
use assay_tasks::bigcodebench::Dataset;
use serde_json::Value;

use super::{complete, invalid, merged_manifest, open_out, Figures, Head, TaskOrder};
use crate::error::PipelineError;
use crate::selection::TaskSelection;

/// One shard, read whole.
struct Part {
    /// `samples.jsonl`'s lines.
    rows: Vec<String>,
    /// Each row's task.
    row_tasks: Vec<String>,
    generation: Vec<GenerationRecord>,
    /// What judging came to (none for a generation).
    judged: Option<Judged>,
}

/// A judged shard's records, one per row in row order, and figures.
struct Judged {
    records: Vec<SampleRecord>,
    summary: EvalSummary,
    model: String,
}

impl super::Part for Part {
    fn verdicts(&self) -> Vec<(String, String)> {
        (0..self.rows.len())
            .map(|i| {
                let code = blake3::hash(self.rows[i].as_bytes()).to_hex();
                let key = format!("{} sample {i} (code {})", self.row_tasks[i], &code[..12]);
                let verdict = match &self.judged {
                    Some(judged) => {
                        serde_json::to_string(&judged.records[i].status).unwrap_or_default()
                    }
                    None => "answered".into(),
                };
                (key, verdict)
            })
            .collect()
    }
}

/// The shard in `head`'s directory, or why it is not finished.
fn read_part(head: &Head) -> Result<Result<Part, String>, PipelineError> {
    let dir = &head.dir;
    let report = |e: assay_report::SourceError| invalid(e.to_string());
    let text = |name: &str| std::fs::read_to_string(dir.join(name));
    let generation = read_lines(&dir.join(assay_generate::GENERATION)).map_err(report)?;
    if head.manifest.kind == Kind::BigcodebenchGenerate {
        let (Ok(rows), Some(_)) = (text(SAMPLES), &head.manifest.generation) else {
            return Ok(Err("has not ended its generation".into()));
        };
        let rows: Vec<String> = rows.lines().map(str::to_string).collect();
        let row_tasks = row_tasks(dir, &rows)?;
        return Ok(Ok(Part {
            rows,
            row_tasks,
            generation,
            judged: None,
        }));
    }
    let (Ok(rows), Ok(summary), Ok(pass_at_k)) =
        (text(SAMPLES), text("summary.json"), text("pass_at_k.json"))
    else {
        return Ok(Err(
            "has not ended (no samples.jsonl, summary.json or pass_at_k.json)".into(),
        ));
    };
    let rows: Vec<String> = rows.lines().map(str::to_string).collect();
    let summary: EvalSummary = serde_json::from_str(&summary)
        .map_err(|e| invalid(format!("{}: summary.json: {e}", dir.display())))?;
    let pass_at_k: Value = serde_json::from_str(&pass_at_k)
        .map_err(|e| invalid(format!("{}: pass_at_k.json: {e}", dir.display())))?;
    // The last record of a sample is its own (a resumed run appends).
    let mut records: BTreeMap<usize, SampleRecord> = BTreeMap::new();
    for record in read_lines::<SampleRecord>(&dir.join("results.jsonl")).map_err(report)? {
        records.insert(record.index, record);
    }
    if records.len() != rows.len() || records.keys().any(|&i| i >= rows.len()) {
        return Ok(Err(format!(
            "has judged {} of its {} samples",
            records.len(),
            rows.len()
        )));
    }
    // A run judges answers before samples.jsonl is written, under the places they will
    // have: the records of a session that never ended may not be its rows' yet.
    let row_tasks = row_tasks(dir, &rows)?;
    if let Some(record) = records.values().find(|r| r.task_id != row_tasks[r.index]) {
        return Ok(Err(format!(
            "has not ended: its record of sample {} is for {}, the sample for {}",
            record.index, record.task_id, row_tasks[record.index]
        )));
    }
    let records: Vec<SampleRecord> = records.into_values().collect();
    Ok(Ok(Part {
        rows,
        row_tasks,
        generation,
        judged: Some(Judged {
            records,
            summary,
            model: pass_at_k["model"].as_str().unwrap_or_default().to_string(),
        }),
    }))
}

/// The task of each of `dir`'s samples (`rows` of its samples.jsonl).
fn row_tasks(dir: &Path, rows: &[String]) -> Result<Vec<String>, PipelineError> {
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            serde_json::from_str::<Value>(row)
                .ok()
                .and_then(|v| v["task_id"].as_str().map(str::to_string))
                .ok_or_else(|| {
                    invalid(format!(
                        "{}:{}: a sample without its task_id",
                        dir.join(SAMPLES).display(),
                        i + 1
                    ))
                })
        })
        .collect()
}

/// The tasks the shards split, as their identity names them, checked to be the data they ran.
fn dataset(head: &Head) -> Result<Dataset, PipelineError> {
    let identity = &head.manifest.identity;
    let mut selection = TaskSelection::of(identity, &head.manifest.started_in());
    selection.shard = None;
    let dataset = selection.load()?;
    if identity.dataset_digest.as_deref() != Some(dataset.digest.as_str()) {
        return Err(invalid(format!(
            "the dataset {} is not the one the shards ran (digest {} here, {:?} there)",
            selection.source(),
            dataset.digest,
            identity.dataset_digest
        )));
    }
    Ok(dataset)
}

/// The reference solutions' figures over every task, from each shard's over its own.
fn ground_truth(parts: &[(Head, Part)], tasks: usize) -> GroundTruthSummary {
    let mut failed = BTreeMap::new();
    let mut peaks = Vec::new();
    let mut measured = 0;
    for judged in parts.iter().filter_map(|(_, p)| p.judged.as_ref()) {
        let truth = &judged.summary.ground_truth;
        failed.extend(truth.failed_tasks.clone());
        measured += truth.processes.measured;
        peaks.extend(truth.processes.highest.iter().cloned());
    }
    // Highest first, as each shard listed its own: the whole run's highest are among them.
    peaks.sort_by(|a: &(String, u64), b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    peaks.truncate(PEAKS_LISTED);
    GroundTruthSummary {
        pass_rate: if tasks == 0 {
            0.0
        } else {
            (tasks - failed.len()) as f64 / tasks as f64
        },
        failed_tasks: failed,
        cache: parts[0]
            .1
            .judged
            .as_ref()
            .map(|j| j.summary.ground_truth.cache.clone())
            .unwrap_or_default(),
        processes: ProcessPeaks {
            measured,
            highest: peaks,
        },
    }
}

/// Joins the shards `heads` (checked to be one run's, `count` of them) into `out`.
pub(super) fn merge(
    heads: Vec<Head>,
    count: u32,
    out: &Path,
) -> Result<(PathBuf, Vec<PathBuf>, Figures), PipelineError> {
    let (parts, same_as_taken) = complete(heads, count, read_part)?;
    let first = &parts[0];
    let dataset = dataset(&first.0)?;

    // Each task's rows, from the shard that holds it (a task in two shards means the shards
    // are not one run's).
    let mut held: HashMap<&str, (&Head, &Part, Vec<usize>)> = HashMap::new();
    for (head, part) in &parts {
        for (i, task) in part.row_tasks.iter().enumerate() {
            let (holder, _, rows) = held
                .entry(task.as_str())
                .or_insert((head, part, Vec::new()));
            if holder.shard != head.shard {
                return Err(invalid(format!(
                    "{task} is in {} and {}",
                    holder.name(),
                    head.name()
                )));
            }
            rows.push(i);
        }
    }
    let mut rows = String::new();
    let mut records = Vec::new();
    for task in &dataset.tasks {
        let Some((_, part, held)) = held.get(task.task_id.as_str()) else {
            continue;
        };
        for &i in held {
            rows.push_str(&part.rows[i]);
            rows.push('\n');
            if let Some(judged) = &part.judged {
                let mut record = judged.records[i].clone();
                record.index = records.len();
                records.push(record);
            }
        }
    }
    // The requests, and the answers the model never gave, in task order.
    let order = TaskOrder::new(dataset.tasks.iter().map(|t| t.task_id.as_str()));
    let generation = order.requests(parts.iter().flat_map(|(_, p)| &p.generation));
    let mut unanswered_tasks: Vec<Unanswered> = parts
        .iter()
        .filter_map(|(h, _)| h.manifest.generation.as_ref())
        .flat_map(|g| g.outcome.unanswered.iter().cloned())
        .collect();
    unanswered_tasks.sort_by_key(|u| order.position(&u.task_id));
    let unanswered: Vec<(String, String)> = unanswered_tasks
        .iter()
        .flat_map(|u| (0..u.samples).map(|_| (u.task_id.clone(), u.reason.clone())))
        .collect();

    let mut manifest = merged_manifest(&parts);
    if manifest.kind != Kind::BigcodebenchEval {
        manifest.generation = Some(GenerationDone {
            outcome: GenerationOutcome {
                samples: rows.lines().count(),
                unanswered: unanswered_tasks,
                // At the prices of the first shard (shards of one command share them).
                totals: assay_generate::totals(
                    &generation,
                    first
                        .0
                        .manifest
                        .model_access
                        .as_ref()
                        .and_then(|a| a.prices.as_ref()),
                ),
            },
            finished_at: parts
                .iter()
                .filter_map(|(h, _)| h.manifest.generation.as_ref().map(|g| g.finished_at))
                .max()
                .unwrap_or(0),
        });
    }
    let mut run = open_out(out, &manifest)?;
    run.write_file(SAMPLES, rows.as_bytes())?;
    if !generation.is_empty() {
        run.write_lines(assay_generate::GENERATION, &generation)?;
    }
    let Some(judged) = &first.1.judged else {
        let figures = Figures::Generation {
            samples: rows.lines().count(),
        };
        return Ok((run.path().to_path_buf(), same_as_taken, figures));
    };
    run.rewrite_results(&records)?;
    let samples = samples::load(&run.path().join(SAMPLES), &dataset)?;
    let isolation = manifest
        .isolation
        .as_ref()
        .map(|i| i.level)
        .ok_or_else(|| {
            invalid(format!(
                "{}: the manifest does not say how jobs were isolated",
                first.0.dir.display()
            ))
        })?;
    let identity = &manifest.identity;
    let split = Split::named(identity.split.as_deref());
    let summary = conclude(
        &run,
        Concluded {
            dataset: &dataset,
            samples: &samples,
            split,
            calibrated: identity.calibrated.unwrap_or(true),
            time_policy: identity.time_policy.clone().unwrap_or(TimePolicy::DEFAULT),
            model: &judged.model,
            results: records.into_iter().map(|r| (r.index, r)).collect(),
            unanswered: &unanswered,
            isolation,
            ground_truth: ground_truth(&parts, dataset.tasks.len()),
            // Billed as the shards were (the reference solutions bill no tokens).
            generation: manifest
                .generation
                .as_ref()
                .filter(|_| judged.summary.tokens.is_some())
                .map(|g| &g.outcome.totals),
            wall: std::time::Duration::from_secs_f64(
                parts
                    .iter()
                    .filter_map(|(_, p)| p.judged.as_ref())
                    .map(|j| j.summary.wall_seconds)
                    .fold(0.0, f64::max),
            ),
        },
    )?;
    let figures = Figures::Bigcodebench {
        summary: Box::new(summary),
        benchmark: identity.benchmark.clone().unwrap_or_default(),
        version: identity.dataset.clone().unwrap_or_default(),
        split,
    };
    Ok((run.path().to_path_buf(), same_as_taken, figures))
}
