//! Which tasks a run covers: the benchmark, its data, and optionally some task ids.

use std::path::{Path, PathBuf};

use assay_records::{Identity, Shard, Split};
use assay_tasks::bigcodebench::{Dataset, Subset, VERSIONS};

use crate::error::PipelineError;

/// Which tasks: the benchmark, its data version or file, and optionally some task ids.
#[derive(Debug, Clone)]
pub struct TaskSelection {
    /// All tasks or the Hard subset.
    pub subset: Subset,
    /// An embedded dataset version.
    pub version: String,
    /// A dataset file in the Hugging Face schema instead of an embedded version.
    pub dataset: Option<PathBuf>,
    /// Only these task ids (empty: all).
    pub tasks: Vec<String>,
    /// Only this shard of those tasks (`Shard::deal`).
    pub shard: Option<Shard>,
}

impl TaskSelection {
    /// The selection a run's identity records: [`TaskSelection::identity`] read back. A
    /// dataset file named relatively is found from `dir`, where the run started.
    pub fn of(identity: &Identity, dir: &Path) -> TaskSelection {
        let source = identity.dataset.clone().unwrap_or_default();
        let embedded = VERSIONS.contains(&source.as_str());
        TaskSelection {
            subset: match identity.benchmark.as_deref() {
                Some("bigcodebench-hard") => Subset::Hard,
                _ => Subset::Full,
            },
            dataset: (!embedded).then(|| dir.join(&source)),
            version: source,
            tasks: identity.tasks.clone().unwrap_or_default(),
            shard: identity.shard,
        }
    }

    /// `bigcodebench` or `bigcodebench-hard`.
    pub fn benchmark(&self) -> &'static str {
        match self.subset {
            Subset::Full => "bigcodebench",
            Subset::Hard => "bigcodebench-hard",
        }
    }

    /// The tasks.
    pub fn load(&self) -> Result<Dataset, PipelineError> {
        let mut dataset = match &self.dataset {
            Some(path) => Dataset::from_file(path, self.subset)?,
            None => Dataset::embedded(&self.version, self.subset)?,
        };
        if !self.tasks.is_empty() {
            let ids: Vec<String> = self.tasks.iter().map(|t| t.trim().to_string()).collect();
            dataset.select(&ids)?;
        }
        if let Some(shard) = self.shard {
            dataset.select(&shard.deal(dataset.tasks.iter().map(|t| t.task_id.as_str())))?;
        }
        Ok(dataset)
    }

    /// The selection as part of a run's identity: what decides which tasks a run has.
    pub fn identity(&self, dataset: &Dataset) -> Identity {
        Identity {
            benchmark: Some(self.benchmark().to_string()),
            dataset: Some(self.source()),
            dataset_digest: Some(dataset.digest.clone()),
            tasks: Some(self.tasks.clone()),
            shard: self.shard,
            ..Identity::default()
        }
    }

    /// The version, or the dataset file, as run directories and summaries name it.
    pub fn source(&self) -> String {
        match &self.dataset {
            Some(path) => path.display().to_string(),
            None => self.version.clone(),
        }
    }

    /// The default run directory of this selection in `split` by `model`:
    /// `runs/<benchmark>-<version>-<split>-<model>`, and `-shard-<I>-of-<N>` for a shard.
    pub fn default_dir(&self, split: Split, model: &str) -> PathBuf {
        let version = match self.dataset {
            Some(_) => "custom",
            None => self.version.as_str(),
        };
        let shard = self
            .shard
            .map(|s| format!("-{}", s.slug()))
            .unwrap_or_default();
        PathBuf::from("runs").join(format!(
            "{}-{version}-{}-{model}{shard}",
            self.benchmark(),
            split.as_str(),
        ))
    }
}
