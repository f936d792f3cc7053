//! `merge`: the shards of a run (`--shard I/N`, run anywhere) joined into one run directory, as
//! one machine running every task would have written it. Nothing is averaged: the records are
//! gathered in the single run's order and every official file and the summary are written
//! again from them by the code a run ends with.
//!
//! Shards must agree on everything but the shard: kind, identity (settings, dataset, samples
//! digest, environment) and the environment fingerprint (Python, packages, NLTK data, network,
//! isolation). Every shard of the count must be there and finished; what is not is listed with
//! the exact command that runs it. A shard given twice is taken once if both copies reached the
//! same verdicts, and refused if they did not.

mod bigcodebench;
mod pybench;
mod rerun;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use assay_records::{
    EvalSummary, GenerationRecord, Invocation, Kind, Manifest, PybenchSummary, Shard, Split,
};
use assay_report::read_manifest;
use assay_rundir::{identity_difference, RunDir};

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
    /// How many shards were joined.
    pub shards: u32,
    /// The merged directory.
    pub dir: PathBuf,
    /// Directories given for a shard already taken, with the same verdicts: left out.
    pub same_as_taken: Vec<PathBuf>,
    /// The merged run's figures.
    pub figures: Figures,
}

/// A merged run's figures, by benchmark.
pub enum Figures {
    /// A BigCodeBench eval or run.
    Bigcodebench {
        /// The summary.
        summary: Box<EvalSummary>,
        /// `bigcodebench` or `bigcodebench-hard`.
        benchmark: String,
        /// The dataset's version or file.
        version: String,
        /// The prompt style.
        split: Split,
    },
    /// A BigCodeBench generation: answers, not judged yet.
    Generation {
        /// Answers in all.
        samples: usize,
    },
    /// A PyBench eval or run.
    Pybench(Box<PybenchSummary>),
}

/// A shard's directory, its manifest read.
struct Head {
    dir: PathBuf,
    manifest: Manifest,
    shard: Shard,
}

impl Head {
    fn name(&self) -> String {
        format!("shard {} ({})", self.shard, self.dir.display())
    }
}

/// A shard read whole by its benchmark's merge.
trait Part {
    /// Each sample's key (`task, sample n`) and what was judged of it: two copies of a shard
    /// are the same run's if these are equal.
    fn verdicts(&self) -> Result<Vec<(String, String)>, PipelineError>;
}

fn invalid(message: impl Into<String>) -> PipelineError {
    PipelineError::Invalid(message.into())
}

/// Joins `request.shards` into `request.out`.
pub fn merge(request: MergeRequest) -> Result<MergeReport, PipelineError> {
    if request.shards.is_empty() {
        return Err(invalid("no shard to merge"));
    }
    let heads = request
        .shards
        .iter()
        .map(|dir| read_head(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let count = check(&heads)?;
    let kind = heads[0].manifest.kind;
    let (dir, same_as_taken, figures) = match kind {
        Kind::PybenchEval | Kind::PybenchRun => pybench::merge(heads, count, &request.out)?,
        _ => bigcodebench::merge(heads, count, &request.out)?,
    };
    Ok(MergeReport {
        shards: count,
        dir,
        same_as_taken,
        figures,
    })
}

fn read_head(dir: &Path) -> Result<Head, PipelineError> {
    let manifest = read_manifest(dir).map_err(|e| invalid(e.to_string()))?;
    if !matches!(
        manifest.kind,
        Kind::BigcodebenchGenerate
            | Kind::BigcodebenchEval
            | Kind::BigcodebenchRun
            | Kind::PybenchEval
            | Kind::PybenchRun
    ) {
        return Err(invalid(format!(
            "{}: a {} directory; assay merge joins the shards of generate, eval and run \
             directories",
            dir.display(),
            manifest.kind.as_str()
        )));
    }
    let shard = manifest.identity.shard.ok_or_else(|| {
        invalid(format!(
            "{}: not a shard (its manifest has no `identity.shard`)",
            dir.display()
        ))
    })?;
    Ok(Head {
        dir: dir.to_path_buf(),
        manifest,
        shard,
    })
}

/// Checks that the shards are parts of one run: the same kind, settings and machine setup, and
/// one count. Returns the count.
fn check(heads: &[Head]) -> Result<u32, PipelineError> {
    let first = &heads[0];
    for head in &heads[1..] {
        let (a, b) = (&first.manifest, &head.manifest);
        if a.kind != b.kind {
            return Err(invalid(format!(
                "{} and {} are different kinds of run",
                first.name(),
                head.name()
            )));
        }
        let unsharded = |m: &Manifest| {
            let mut identity = m.identity.clone();
            identity.shard = None;
            serde_json::to_value(identity).unwrap_or_default()
        };
        if let Some((key, there, here)) = identity_difference(&unsharded(a), &unsharded(b)) {
            return Err(invalid(format!(
                "{} and {} were run with different settings ({key}: {there} there, {here} here)",
                first.name(),
                head.name()
            )));
        }
        let fingerprint = |m: &Manifest| serde_json::to_value(&m.fingerprint).unwrap_or_default();
        if let Some((key, there, here)) = identity_difference(&fingerprint(a), &fingerprint(b)) {
            return Err(invalid(format!(
                "{} and {} ran on machines set up otherwise ({key}: {there} there, {here} here); \
                 verdicts from the two would not be one run's",
                first.name(),
                head.name()
            )));
        }
        if head.shard.count != first.shard.count {
            return Err(invalid(format!(
                "{} and {} split the tasks differently",
                first.name(),
                head.name()
            )));
        }
    }
    Ok(first.shard.count)
}

/// The shards taken, in shard order, and the directories left out as copies of one taken.
type Complete<P> = (Vec<(Head, P)>, Vec<PathBuf>);

/// Every shard of `count` read whole by `read` (which says why a shard is not finished, or
/// fails on what a rerun would not mend), one per shard in shard order. Missing and unfinished
/// shards are listed together with the commands that run them; of two finished copies of a
/// shard the first is taken when their verdicts agree (the others are returned), and the merge
/// is refused when they do not.
fn complete<P: Part>(
    heads: Vec<Head>,
    count: u32,
    read: impl Fn(&Head) -> Result<Result<P, String>, PipelineError>,
) -> Result<Complete<P>, PipelineError> {
    let template = heads
        .iter()
        .find_map(|h| h.manifest.command.clone().map(|c| (c, h.shard)));
    let mut by_shard: BTreeMap<u32, Vec<Head>> = BTreeMap::new();
    for head in heads {
        by_shard.entry(head.shard.index).or_default().push(head);
    }
    let mut taken = Vec::new();
    let mut same_as_taken = Vec::new();
    let mut lacking = Vec::new();
    for index in 0..count {
        let shard = Shard { index, count };
        let Some(copies) = by_shard.remove(&index) else {
            let command = match &template {
                Some((invocation, from)) => rerun::shard_command(invocation, *from, shard),
                None => format!("the command the other shards ran, with --shard {shard}"),
            };
            lacking.push(format!("shard {shard} is missing; run it:\n    {command}"));
            continue;
        };
        let mut finished: Vec<(Head, P)> = Vec::new();
        let mut unfinished = Vec::new();
        for head in copies {
            match read(&head)? {
                Ok(part) => finished.push((head, part)),
                Err(why) => unfinished.push((head, why)),
            }
        }
        if finished.is_empty() {
            for (head, why) in unfinished {
                let command = match &head.manifest.command {
                    Some(invocation) => rerun::shard_command(invocation, shard, shard),
                    None => "its command again".into(),
                };
                lacking.push(format!(
                    "{} {why}; run it again (it resumes):\n    {command}",
                    head.name()
                ));
            }
            continue;
        }
        let mut copies = finished.into_iter();
        let (head, part) = copies.next().expect("one finished copy at least");
        let others: Vec<(Head, P)> = copies.collect();
        let verdicts = if others.is_empty() {
            Vec::new()
        } else {
            part.verdicts()?
        };
        for (other, other_part) in others {
            if let Some(why) = disagreement(&verdicts, &other_part.verdicts()?) {
                return Err(invalid(format!(
                    "{} and {} are the same shard with different verdicts ({why}): merge one \
                     of them",
                    head.name(),
                    other.dir.display()
                )));
            }
            same_as_taken.push(other.dir);
        }
        taken.push((head, part));
    }
    if !lacking.is_empty() {
        return Err(invalid(format!(
            "not every shard is finished:\n  {}\nthen merge all {count}",
            lacking.join("\n  ")
        )));
    }
    Ok((taken, same_as_taken))
}

/// The run's tasks in order, to put the shards' lines back in it.
struct TaskOrder<'a>(HashMap<&'a str, usize>);

impl<'a> TaskOrder<'a> {
    fn new(ids: impl Iterator<Item = &'a str>) -> Self {
        TaskOrder(ids.enumerate().map(|(i, id)| (id, i)).collect())
    }

    /// Where task `id` comes (a task not in the run last).
    fn position(&self, id: &str) -> usize {
        self.0.get(id).copied().unwrap_or(usize::MAX)
    }

    /// Requests in task order; a task's own stay in the order they returned.
    fn requests<'r>(
        &self,
        requests: impl Iterator<Item = &'r GenerationRecord>,
    ) -> Vec<GenerationRecord> {
        let mut requests: Vec<GenerationRecord> = requests.cloned().collect();
        requests.sort_by_key(|g| self.position(&g.task_id));
        requests
    }
}

/// The merged run's manifest: the first shard's without its shard, started when the first
/// shard started, and made by this command.
fn merged_manifest<P>(parts: &[(Head, P)]) -> Manifest {
    let mut manifest = parts[0].0.manifest.clone();
    manifest.identity.shard = None;
    manifest.started_at = parts
        .iter()
        .map(|(h, _)| h.manifest.started_at)
        .min()
        .unwrap_or(0);
    manifest.command = Some(Invocation::current());
    manifest
}

/// Opens `out`, which must not hold a run yet, for the merged run.
fn open_out(out: &Path, manifest: &Manifest) -> Result<RunDir, PipelineError> {
    let opened = RunDir::open::<serde_json::Value>(out, manifest)?;
    if opened.resumed {
        return Err(invalid(format!(
            "{} already holds a run: merge into a new directory",
            out.display()
        )));
    }
    let run = opened.dir;
    run.update_manifest(manifest)?;
    Ok(run)
}

/// The first sample two copies of a shard judged differently, or hold and the other not.
fn disagreement(a: &[(String, String)], b: &[(String, String)]) -> Option<String> {
    let b_map: BTreeMap<&str, &str> = b.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for (key, verdict) in a {
        match b_map.get(key.as_str()) {
            None => return Some(format!("{key} is in one only")),
            Some(other) if other != verdict => {
                return Some(format!("{key}: {verdict} in one, {other} in the other"))
            }
            Some(_) => {}
        }
    }
    (a.len() != b.len()).then(|| "one holds samples the other does not".into())
}
