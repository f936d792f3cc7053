//! `merge`: the shards of a BigCodeBench run (`--shard I/N`, run anywhere) joined into one run
//! directory, as one machine running every task would have written it. Nothing is averaged:
//! the records are gathered, renumbered in the single run's sample order (tasks in dataset
//! order, each task's samples in its shard's order), and every official file and the summary
//! are written again from them by the code an evaluation ends with.
//!
//! Shards must agree on everything but the shard: kind, identity (settings, dataset, samples
//! digest, environment), Python and isolation level. Every shard of the count must be there,
//! once, and finished.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use assay_eval::bigcodebench::evaluation::{conclude, Concluded};
use assay_eval::bigcodebench::ground_truth::PEAKS_LISTED;
use assay_eval::bigcodebench::samples;
use assay_records::{
    EvalSummary, GenerationDone, GenerationOutcome, GenerationRecord, GroundTruthSummary, Kind,
    Manifest, ProcessPeaks, SampleRecord, Shard, Split, TimePolicy, Unanswered,
};
use assay_report::{read_lines, read_manifest};
use assay_rundir::{identity_difference, RunDir, SAMPLES};
use assay_tasks::bigcodebench::{Dataset, Subset};
use serde_json::Value;

use crate::error::PipelineError;

/// Which shards to join, and where.
pub struct MergeRequest {
    /// The shards' run directories.
    pub shards: Vec<PathBuf>,
    /// The merged run directory (new, or empty).
    pub out: PathBuf,
}

/// What a merge came to.
pub struct MergeReport {
    /// The figures of the merged run.
    pub summary: EvalSummary,
    /// `bigcodebench` or `bigcodebench-hard`.
    pub benchmark: String,
    /// The dataset's version or file.
    pub version: String,
    /// The prompt style.
    pub split: Split,
    /// How many shards were joined.
    pub shards: u32,
    /// The merged directory.
    pub dir: PathBuf,
}

/// One shard, read.
struct Part {
    dir: PathBuf,
    manifest: Manifest,
    shard: Shard,
    rows: Vec<String>,
    records: Vec<SampleRecord>,
    generation: Vec<GenerationRecord>,
    summary: EvalSummary,
    model: String,
}

fn invalid(message: impl Into<String>) -> PipelineError {
    PipelineError::Invalid(message.into())
}

fn read_part(dir: &Path) -> Result<Part, PipelineError> {
    let report = |e: assay_report::SourceError| invalid(e.to_string());
    let manifest = read_manifest(dir).map_err(report)?;
    if !matches!(
        manifest.kind,
        Kind::BigcodebenchEval | Kind::BigcodebenchRun
    ) {
        return Err(invalid(format!(
            "{}: a {} directory; assay merge joins BigCodeBench eval and run shards",
            dir.display(),
            serde_json::to_value(manifest.kind).unwrap_or_default()
        )));
    }
    let shard = manifest.identity.shard.ok_or_else(|| {
        invalid(format!(
            "{}: not a shard (its manifest has no `identity.shard`)",
            dir.display()
        ))
    })?;
    let text = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| {
            invalid(format!(
                "shard {shard} ({}): {name}: {e}; rerun its command to finish it",
                dir.display()
            ))
        })
    };
    let rows: Vec<String> = text(SAMPLES)?.lines().map(str::to_string).collect();
    let summary: EvalSummary = serde_json::from_str(&text("summary.json")?)
        .map_err(|e| invalid(format!("{}: summary.json: {e}", dir.display())))?;
    let pass_at_k: Value = serde_json::from_str(&text("pass_at_k.json")?)
        .map_err(|e| invalid(format!("{}: pass_at_k.json: {e}", dir.display())))?;
    // The last record of a sample is its own (a resumed run appends).
    let mut records: BTreeMap<usize, SampleRecord> = BTreeMap::new();
    for record in read_lines::<SampleRecord>(&dir.join("results.jsonl")).map_err(report)? {
        records.insert(record.index, record);
    }
    if records.len() != rows.len() || records.keys().any(|&i| i >= rows.len()) {
        return Err(invalid(format!(
            "shard {shard} ({}) has judged {} of its {} samples: rerun its command to finish it",
            dir.display(),
            records.len(),
            rows.len()
        )));
    }
    Ok(Part {
        dir: dir.to_path_buf(),
        shard,
        rows,
        records: records.into_values().collect(),
        generation: read_lines(&dir.join("generation.jsonl")).map_err(report)?,
        summary,
        model: pass_at_k["model"].as_str().unwrap_or_default().to_string(),
        manifest,
    })
}

/// The first field where two shards' identities (shard aside) differ.
fn difference(a: &Manifest, b: &Manifest) -> Option<String> {
    let unsharded = |m: &Manifest| {
        let mut identity = m.identity.clone();
        identity.shard = None;
        serde_json::to_value(identity).unwrap_or_default()
    };
    identity_difference(&unsharded(a), &unsharded(b))
        .map(|(key, there, here)| format!("{key}: {there} there, {here} here"))
}

/// Checks that the parts are the whole run: same settings, every shard once.
fn check(parts: &[Part]) -> Result<u32, PipelineError> {
    let first = &parts[0];
    let count = first.shard.count;
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for part in parts {
        let name = |p: &Part| format!("{} ({})", p.shard, p.dir.display());
        if part.manifest.kind != first.manifest.kind {
            return Err(invalid(format!(
                "{} and {} are different kinds of run",
                name(first),
                name(part)
            )));
        }
        if let Some(field) = difference(&first.manifest, &part.manifest) {
            return Err(invalid(format!(
                "{} and {} were run with different settings ({field})",
                name(first),
                name(part)
            )));
        }
        let level = |m: &Manifest| m.isolation.as_ref().map(|i| i.level);
        if part.manifest.python != first.manifest.python
            || level(&part.manifest) != level(&first.manifest)
        {
            return Err(invalid(format!(
                "{} and {} ran on different machines' setups (Python {:?} / {:?}, isolation \
                 {:?} / {:?})",
                name(first),
                name(part),
                first.manifest.python,
                part.manifest.python,
                level(&first.manifest),
                level(&part.manifest)
            )));
        }
        if part.shard.count != count {
            return Err(invalid(format!(
                "{} and {} split the tasks differently",
                name(first),
                name(part)
            )));
        }
        if let Some(other) = seen.insert(part.shard.index, &part.dir) {
            return Err(invalid(format!(
                "shard {} is given twice: {} and {}",
                part.shard,
                other.display(),
                part.dir.display()
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "shards {} are missing: run them with the command the others ran and --shard I/N, \
             then merge all {count}",
            missing.join(", ")
        )));
    }
    Ok(count)
}

/// The tasks the shards split, as their identity names them.
fn dataset(manifest: &Manifest) -> Result<Dataset, PipelineError> {
    let identity = &manifest.identity;
    let subset = match identity.benchmark.as_deref() {
        Some("bigcodebench-hard") => Subset::Hard,
        _ => Subset::Full,
    };
    let source = identity.dataset.clone().unwrap_or_default();
    let mut dataset = if assay_tasks::bigcodebench::VERSIONS.contains(&source.as_str()) {
        Dataset::embedded(&source, subset)?
    } else {
        Dataset::from_file(Path::new(&source), subset)?
    };
    if identity.dataset_digest.as_deref() != Some(dataset.digest.as_str()) {
        return Err(invalid(format!(
            "the dataset {source} is not the one the shards ran (digest {} here, {:?} there)",
            dataset.digest, identity.dataset_digest
        )));
    }
    if let Some(tasks) = identity.tasks.as_ref().filter(|t| !t.is_empty()) {
        dataset.select(tasks)?;
    }
    Ok(dataset)
}

/// The reference solutions' figures over every task, from each shard's over its own.
fn ground_truth(parts: &[Part], tasks: usize) -> GroundTruthSummary {
    let mut failed = BTreeMap::new();
    let mut peaks = Vec::new();
    let mut measured = 0;
    for part in parts {
        let truth = &part.summary.ground_truth;
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
        cache: parts[0].summary.ground_truth.cache.clone(),
        processes: ProcessPeaks {
            measured,
            highest: peaks,
        },
    }
}

/// Joins `request.shards` into `request.out`.
pub fn merge(request: MergeRequest) -> Result<MergeReport, PipelineError> {
    if request.shards.is_empty() {
        return Err(invalid("no shard to merge"));
    }
    let parts = request
        .shards
        .iter()
        .map(|dir| read_part(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let count = check(&parts)?;
    let first = &parts[0];
    let dataset = dataset(&first.manifest)?;

    // Each task's samples and records, from the shard that holds it (one pass over the
    // records; a task in two shards means the shards are not one run's).
    let mut held: HashMap<&str, (&Part, Vec<&SampleRecord>)> = HashMap::new();
    for part in &parts {
        for record in &part.records {
            let (holder, records) = held
                .entry(record.task_id.as_str())
                .or_insert((part, Vec::new()));
            if holder.shard != part.shard {
                return Err(invalid(format!(
                    "{} is in shard {} ({}) and shard {} ({})",
                    record.task_id,
                    holder.shard,
                    holder.dir.display(),
                    part.shard,
                    part.dir.display()
                )));
            }
            records.push(record);
        }
    }
    let mut rows = String::new();
    let mut records = Vec::new();
    for task in &dataset.tasks {
        let Some((part, held)) = held.get(task.task_id.as_str()) else {
            continue;
        };
        for record in held {
            let mut record = (*record).clone();
            rows.push_str(&part.rows[record.index]);
            rows.push('\n');
            record.index = records.len();
            records.push(record);
        }
    }
    // The requests, and the answers the model never gave, in task order.
    let order: HashMap<&str, usize> = dataset
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.task_id.as_str(), i))
        .collect();
    let position = |id: &str| order.get(id).copied().unwrap_or(usize::MAX);
    let mut generation: Vec<GenerationRecord> = parts
        .iter()
        .flat_map(|p| p.generation.iter().cloned())
        .collect();
    generation.sort_by_key(|g| position(&g.task_id));
    let mut unanswered_tasks: Vec<Unanswered> = parts
        .iter()
        .filter_map(|p| p.manifest.generation.as_ref())
        .flat_map(|g| g.outcome.unanswered.iter().cloned())
        .collect();
    unanswered_tasks.sort_by_key(|u| position(&u.task_id));
    let unanswered: Vec<(String, String)> = unanswered_tasks
        .iter()
        .flat_map(|u| (0..u.samples).map(|_| (u.task_id.clone(), u.reason.clone())))
        .collect();

    let mut manifest = first.manifest.clone();
    manifest.identity.shard = None;
    manifest.started_at = parts
        .iter()
        .map(|p| p.manifest.started_at)
        .min()
        .unwrap_or(0);
    if manifest.kind == Kind::BigcodebenchRun {
        manifest.generation = Some(GenerationDone {
            outcome: GenerationOutcome {
                samples: records.len(),
                unanswered: unanswered_tasks,
                // At the prices of the first shard (shards of one command share them).
                totals: assay_generate::totals(
                    &generation,
                    first
                        .manifest
                        .model_access
                        .as_ref()
                        .and_then(|a| a.prices.as_ref()),
                ),
            },
            finished_at: parts
                .iter()
                .filter_map(|p| p.manifest.generation.as_ref().map(|g| g.finished_at))
                .max()
                .unwrap_or(0),
        });
    }
    let opened = RunDir::open::<SampleRecord>(&request.out, &manifest)?;
    if opened.resumed {
        return Err(invalid(format!(
            "{} already holds a run: merge into a new directory",
            request.out.display()
        )));
    }
    let mut run = opened.dir;
    run.update_manifest(&manifest)?;
    run.write_file(SAMPLES, rows.as_bytes())?;
    if !generation.is_empty() {
        run.write_lines(assay_generate::GENERATION, &generation)?;
    }
    run.rewrite_results(&records)?;
    let samples = samples::load(&run.path().join(SAMPLES), &dataset)?;
    let isolation = manifest
        .isolation
        .as_ref()
        .map(|i| i.level)
        .ok_or_else(|| {
            invalid(format!(
                "{}: the manifest does not say how jobs were isolated",
                first.dir.display()
            ))
        })?;
    let identity = &manifest.identity;
    let split = match identity.split.as_deref() {
        Some("instruct") => Split::Instruct,
        _ => Split::Complete,
    };
    let summary = conclude(
        &run,
        Concluded {
            dataset: &dataset,
            samples: &samples,
            split,
            calibrated: identity.calibrated.unwrap_or(true),
            time_policy: identity.time_policy.clone().unwrap_or(TimePolicy::DEFAULT),
            model: &first.model,
            results: records.into_iter().map(|r| (r.index, r)).collect(),
            unanswered: &unanswered,
            isolation,
            ground_truth: ground_truth(&parts, dataset.tasks.len()),
            // The reference solutions bill no tokens.
            generation: manifest
                .generation
                .as_ref()
                .filter(|_| identity.model.as_deref() != Some("reference"))
                .map(|g| &g.outcome.totals),
            wall: std::time::Duration::from_secs_f64(
                parts
                    .iter()
                    .map(|p| p.summary.wall_seconds)
                    .fold(0.0, f64::max),
            ),
        },
    )?;
    Ok(MergeReport {
        summary,
        benchmark: identity.benchmark.clone().unwrap_or_default(),
        version: identity.dataset.clone().unwrap_or_default(),
        split,
        shards: count,
        dir: run.path().to_path_buf(),
    })
}
