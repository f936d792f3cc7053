//! BigCodeBench shards joined (generations, evaluations, runs): rows and records renumbered in the single run's sample order
//! (tasks in dataset order, each task's samples in its shard's order), the requests and the
//! unanswered tasks in task order, the reference figures joined, and the official files and the
//! summary written by the code an evaluation ends with.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::evaluation::{conclude, Concluded};
use assay_eval::bigcodebench::ground_truth::PEAKS_LISTED;
use assay_eval::bigcodebench::samples;
use assay_eval::records::{each_line, RecordFile, Span};
use assay_eval::resume::{locate, Located};
use assay_records::{
    EvalSummary, GenerationDone, GenerationOutcome, GenerationRecord, GroundTruthSummary, Kind,
    ProcessPeaks, SampleRecord, Split, Status, TimePolicy, Unanswered,
};
use assay_report::read_lines;
use assay_rundir::{RESULTS, SAMPLES};
use assay_tasks::bigcodebench::Dataset;
use serde_json::Value;

use super::{complete, invalid, merged_manifest, open_out, Figures, Head, TaskOrder};
use crate::error::PipelineError;
use crate::selection::TaskSelection;

/// One shard: where its samples and records lie (read from its files as they are joined),
/// and its generation's requests.
struct Part {
    /// `samples.jsonl`.
    rows: RecordFile,
    /// Each row's task and where it lies.
    row_spans: Vec<(String, Span)>,
    generation: Vec<GenerationRecord>,
    /// What judging came to (none for a generation).
    judged: Option<Judged>,
}

/// A judged shard's records, one per row in row order (where each lies, and its verdict),
/// and figures.
struct Judged {
    /// `results.jsonl`.
    file: RecordFile,
    records: Vec<(Span, Status)>,
    summary: EvalSummary,
    model: String,
}

impl super::Part for Part {
    fn verdicts(&self) -> Result<Vec<(String, String)>, PipelineError> {
        self.row_spans
            .iter()
            .enumerate()
            .map(|(i, (task, span))| {
                let code = blake3::hash(&self.rows.bytes(*span)?).to_hex();
                let key = format!("{task} sample {i} (code {})", &code[..12]);
                let verdict = match &self.judged {
                    Some(judged) => serde_json::to_string(&judged.records[i].1).unwrap_or_default(),
                    None => "answered".into(),
                };
                Ok((key, verdict))
            })
            .collect()
    }
}

/// The shard in `head`'s directory, or why it is not finished.
fn read_part(head: &Head) -> Result<Result<Part, String>, PipelineError> {
    let dir = &head.dir;
    let report = |e: assay_report::SourceError| invalid(e.to_string());
    let generation = read_lines(&dir.join(assay_generate::GENERATION)).map_err(report)?;
    let rows_path = dir.join(SAMPLES);
    let finished = match head.manifest.kind {
        Kind::BigcodebenchGenerate => head.manifest.generation.is_some(),
        _ => ["summary.json", "pass_at_k.json"]
            .iter()
            .all(|name| dir.join(name).is_file()),
    };
    if !finished || !rows_path.is_file() {
        return Ok(Err(match head.manifest.kind {
            Kind::BigcodebenchGenerate => "has not ended its generation".into(),
            _ => "has not ended (no samples.jsonl, summary.json or pass_at_k.json)".into(),
        }));
    }
    let mut row_spans = Vec::new();
    let rows_end = each_line(&rows_path, |row: Value, span| {
        let Some(task_id) = row["task_id"].as_str() else {
            return Err(invalid(format!(
                "{}:{}: a sample without its task_id",
                rows_path.display(),
                row_spans.len() + 1
            )));
        };
        row_spans.push((task_id.to_string(), span));
        Ok(())
    })?;
    // assay ends every line it writes: a last line without its newline was not written by it.
    if std::fs::metadata(&rows_path).map_or(0, |m| m.len()) != rows_end {
        return Err(invalid(format!(
            "{}:{}: a line without its newline (assay ends every line): the file was not left \
             as the shard wrote it",
            rows_path.display(),
            row_spans.len() + 1
        )));
    }
    let rows = RecordFile::open(&rows_path)?;
    if head.manifest.kind == Kind::BigcodebenchGenerate {
        return Ok(Ok(Part {
            rows,
            row_spans,
            generation,
            judged: None,
        }));
    }
    let text = |name: &str| std::fs::read_to_string(dir.join(name));
    let (Ok(summary), Ok(pass_at_k)) = (text("summary.json"), text("pass_at_k.json")) else {
        return Ok(Err(
            "has not ended (no samples.jsonl, summary.json or pass_at_k.json)".into(),
        ));
    };
    let summary: EvalSummary = serde_json::from_str(&summary)
        .map_err(|e| invalid(format!("{}: summary.json: {e}", dir.display())))?;
    let pass_at_k: Value = serde_json::from_str(&pass_at_k)
        .map_err(|e| invalid(format!("{}: pass_at_k.json: {e}", dir.display())))?;
    // The last record of a sample is its own (a resumed run appends).
    let results = dir.join(RESULTS);
    let records: BTreeMap<usize, Located> = locate(&results)?
        .into_iter()
        .map(|l| (l.key.index, l))
        .collect();
    let rows_len = row_spans.len();
    if records.len() != rows_len || records.keys().any(|&i| i >= rows_len) {
        return Ok(Err(format!(
            "has judged {} of its {} samples",
            records.len(),
            rows_len
        )));
    }
    // A run judges answers before samples.jsonl is written, under the places they will
    // have: the records of a session that never ended may not be its rows' yet.
    if let Some(Located { key, .. }) = records
        .values()
        .find(|l| l.key.task_id != row_spans[l.key.index].0)
    {
        return Ok(Err(format!(
            "has not ended: its record of sample {} is for {}, the sample for {}",
            key.index, key.task_id, row_spans[key.index].0
        )));
    }
    Ok(Ok(Part {
        rows,
        row_spans,
        generation,
        judged: Some(Judged {
            file: RecordFile::open(&results)?,
            records: records
                .into_values()
                .map(|l| (l.span, l.key.status))
                .collect(),
            summary,
            model: pass_at_k["model"].as_str().unwrap_or_default().to_string(),
        }),
    }))
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
        for (i, (task, _)) in part.row_spans.iter().enumerate() {
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
                samples: parts.iter().map(|(_, p)| p.row_spans.len()).sum(),
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
    // Each row and its record copied in the single run's order, one at a time.
    let mut rows = run.create(SAMPLES)?;
    let mut records = match first.1.judged {
        Some(_) => Some(run.create(RESULTS)?),
        None => None,
    };
    let mut samples_written = 0;
    for task in &dataset.tasks {
        let Some((_, part, held)) = held.get(task.task_id.as_str()) else {
            continue;
        };
        for &i in held {
            rows.write_all(&part.rows.bytes(part.row_spans[i].1)?)?;
            rows.write_all(b"\n")?;
            if let (Some(judged), Some(records)) = (&part.judged, &mut records) {
                let mut record: SampleRecord = judged.file.read(judged.records[i].0)?;
                record.index = samples_written;
                records.write_line(&record)?;
            }
            samples_written += 1;
        }
    }
    rows.commit()?;
    if !generation.is_empty() {
        run.write_lines(assay_generate::GENERATION, &generation)?;
    }
    let (Some(judged), Some(records)) = (&first.1.judged, records) else {
        let figures = Figures::Generation {
            samples: samples_written,
        };
        return Ok((run.path().to_path_buf(), same_as_taken, figures));
    };
    run.replace_results(records)?;
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
    let (summary, _) = conclude(
        &run,
        Concluded {
            dataset: &dataset,
            samples: &samples,
            split,
            calibrated: identity.calibrated.unwrap_or(true),
            time_policy: identity.time_policy.clone().unwrap_or(TimePolicy::DEFAULT),
            model: &judged.model,
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
