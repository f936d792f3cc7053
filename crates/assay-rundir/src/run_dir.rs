//! An open run directory: creating or resuming it (its manifest compared, its lock taken), and
//! everything written into it: records appended to `results.jsonl`, other logs opened,
//! derived files written whole. The crate's entry point.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use assay_records::Manifest;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{io, RunDirError};
use crate::files::{remove_if_present, to_pretty, write_atomically, AtomicFile};
use crate::journal::Journal;
use crate::lock::{lock_briefly, lock_file, unlock};
use crate::manifest::{
    compare_fingerprint, compare_identity, extends, parse_manifest, read_manifest,
};
use crate::{MANIFEST, RESULTS};

/// An open run directory.
pub struct RunDir {
    path: PathBuf,
    /// Behind a lock: records are appended through a shared `RunDir` while another part of
    /// the same run (a generation judged as it goes) writes its own files through it too.
    results: Mutex<Journal>,
    lock: File,
    shared: bool,
    /// Created by this process: logs found in it are left from a start that never wrote its
    /// manifest, not records of this run.
    fresh: bool,
}

/// A run directory as found: the records already there (none for a new run).
pub struct Opened<R> {
    /// The directory, locked.
    pub dir: RunDir,
    /// The records of `results.jsonl`, in file order.
    pub records: Vec<R>,
    /// Whether an earlier run's records were found.
    pub resumed: bool,
}

impl RunDir {
    /// Creates the run directory for `manifest`, or resumes the one at `path` if its manifest
    /// has the same `identity` object (the settings that decide results). A manifest with a
    /// different identity is an error naming the first difference. The directory stays
    /// locked for this process until the `RunDir` is dropped.
    pub fn open<R: DeserializeOwned>(
        path: &Path,
        manifest: &Manifest,
    ) -> Result<Opened<R>, RunDirError> {
        let lock = lock_file(path)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| RunDirError::Busy {
                path: path.to_path_buf(),
            },
        )?;
        Self::open_locked(path, manifest, lock, false)
    }

    /// Opens the run directory at `path` that a pipeline made, to add to it (a judge's
    /// verdicts): locked as [`RunDir::open`] locks, with its manifest as it is.
    pub fn open_existing<R: DeserializeOwned>(
        path: &Path,
    ) -> Result<(Opened<R>, Manifest), RunDirError> {
        let manifest_path = path.join(MANIFEST);
        let text = match std::fs::read_to_string(&manifest_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RunDirError::NotARun {
                    path: path.to_path_buf(),
                })
            }
            read => read.map_err(io(&manifest_path))?,
        };
        let manifest = parse_manifest(&manifest_path, &text)?;
        let opened = Self::open(path, &manifest)?;
        Ok((opened, manifest))
    }

    /// [`RunDir::open`] for a directory many processes feed at once (a cache of results
    /// any evaluation may add to): the lock is held only while reading and while appending
    /// a record. Two processes may append the same item; readers keep the last.
    pub fn open_shared<R: DeserializeOwned>(
        path: &Path,
        manifest: &Manifest,
    ) -> Result<Opened<R>, RunDirError> {
        let lock = lock_file(path)?;
        lock_briefly(path, &lock)?;
        let opened = Self::open_locked(path, manifest, lock, true);
        if let Ok(opened) = &opened {
            unlock(&opened.dir.lock);
        }
        opened
    }

    fn open_locked<R: DeserializeOwned>(
        path: &Path,
        manifest: &Manifest,
        lock: File,
        shared: bool,
    ) -> Result<Opened<R>, RunDirError> {
        let manifest_path = path.join(MANIFEST);
        let manifest = serde_json::to_value(manifest).expect("manifests serialize");
        let existing = match std::fs::read_to_string(&manifest_path) {
            Ok(text) => {
                let (existing, mut written) = read_manifest(&manifest_path, &text)?;
                // Compared as this assay reads it; rewritten with whatever else it holds.
                let read = serde_json::to_value(existing).expect("manifests serialize");
                if let (Some(written), Some(read)) = (written.as_object_mut(), read.as_object()) {
                    written.extend(read.clone());
                }
                Some(written)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&manifest_path)(e)),
        };
        let manifest = &manifest;
        if let Some(existing) = &existing {
            if extends(existing, manifest) {
                // The earlier run's own facts (what it measured) stay; this one's settle the rest.
                let mut adopted = existing.clone();
                if let (Some(into), Some(from)) = (adopted.as_object_mut(), manifest.as_object()) {
                    into.extend(from.clone());
                }
                write_atomically(&manifest_path, &to_pretty(&adopted))?;
            } else {
                compare_identity(path, &existing["identity"], &manifest["identity"])?;
                compare_fingerprint(path, &existing["fingerprint"], &manifest["fingerprint"])?;
            }
        }
        let results_path = path.join(RESULTS);
        let fresh = existing.is_none();
        if fresh {
            // A new run: whatever an unfinished earlier start left is not ours.
            remove_if_present(&results_path)?;
            write_atomically(&manifest_path, &to_pretty(manifest))?;
        }
        let (results, records) = Journal::open(&results_path)?;
        Ok(Opened {
            resumed: !records.is_empty(),
            dir: RunDir {
                path: path.to_path_buf(),
                results: Mutex::new(results),
                lock,
                shared,
                fresh,
            },
            records,
        })
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The results log, held for one write.
    fn results(&self) -> std::sync::MutexGuard<'_, Journal> {
        // A panic while holding it left at worst a torn line, which reading drops.
        self.results.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends one record to `results.jsonl`.
    pub fn append(&self, record: &impl Serialize) -> Result<(), RunDirError> {
        let mut results = self.results();
        if self.shared {
            lock_briefly(&self.path, &self.lock)?;
            // A process killed mid-record left a torn line: cut it before adding ours.
            let written = results.write(record, true);
            unlock(&self.lock);
            written
        } else {
            results.append(record)
        }
    }

    /// Forces every appended record to disk.
    pub fn sync(&self) -> Result<(), RunDirError> {
        self.results().sync()
    }

    /// Opens another append-only log of this run (`name` inside the directory), with the
    /// records already in it. Open each log once.
    pub fn journal<R: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<(Journal, Vec<R>), RunDirError> {
        let path = self.path.join(name);
        if self.fresh {
            remove_if_present(&path)?;
        }
        Journal::open(&path)
    }

    /// Replaces `results.jsonl` with `records` (whole or not at all), for a run that has
    /// renumbered or dropped records.
    pub fn rewrite_results(&mut self, records: &[impl Serialize]) -> Result<(), RunDirError> {
        let mut file = self.create(RESULTS)?;
        for record in records {
            file.write_line(record)?;
        }
        self.replace_results(file)
    }

    /// Puts `file` (made by [`RunDir::create`] of `results.jsonl`, written record by record)
    /// in place of `results.jsonl`, whole: for a run whose records are too many to hold.
    pub fn replace_results(&mut self, file: AtomicFile) -> Result<(), RunDirError> {
        file.commit()?;
        *self.results.get_mut().unwrap_or_else(|p| p.into_inner()) =
            Journal::append_to(&self.path.join(RESULTS))?;
        Ok(())
    }

    /// Removes `name` from the directory, if it is there.
    pub fn remove(&self, name: &str) -> Result<(), RunDirError> {
        remove_if_present(&self.path.join(name))
    }

    /// The manifest as it is on disk.
    pub fn manifest(&self) -> Result<Manifest, RunDirError> {
        let path = self.path.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        parse_manifest(&path, &text)
    }

    /// Writes `name` (pretty JSON) whole or not at all.
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<(), RunDirError> {
        write_atomically(&self.path.join(name), &to_pretty(value))
    }

    /// Writes `name` as JSON lines, whole or not at all.
    pub fn write_lines<T: Serialize>(
        &self,
        name: &str,
        values: impl IntoIterator<Item = T>,
    ) -> Result<(), RunDirError> {
        let mut file = self.create(name)?;
        for value in values {
            file.write_line(&value)?;
        }
        file.commit()
    }

    /// Starts writing `name` whole or not at all, as it is produced.
    pub fn create(&self, name: &str) -> Result<AtomicFile, RunDirError> {
        AtomicFile::create(&self.path.join(name))
    }

    /// Writes `name` with `bytes`, whole or not at all.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        write_atomically(&self.path.join(name), bytes)
    }

    /// Replaces the manifest (its identity must not change).
    pub fn update_manifest(&self, manifest: &Manifest) -> Result<(), RunDirError> {
        write_atomically(&self.path.join(MANIFEST), &to_pretty(manifest))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::manifest::identity_difference;
    use assay_records::SCHEMA;
    use assay_records::{Identity, Kind};
    use serde_json::{json, Value};

    fn manifest(samples: &str) -> Manifest {
        let identity = Identity {
            benchmark: Some("bigcodebench".into()),
            samples_digest: Some(samples.into()),
            ..Identity::default()
        };
        Manifest::new(Kind::BigcodebenchEval, identity)
    }

    fn open(path: &Path, manifest: &Manifest) -> Result<Opened<Value>, RunDirError> {
        RunDir::open(path, manifest)
    }

    #[test]
    fn records_survive_a_reopen_and_a_torn_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        let opened = open(&path, &manifest("a")).unwrap();
        assert!(!opened.resumed);
        let run = opened.dir;
        run.append(&json!({"index": 0})).unwrap();
        run.append(&json!({"index": 1})).unwrap();
        drop(run);
        // A kill in the middle of the next record.
        let mut results = std::fs::OpenOptions::new()
            .append(true)
            .open(path.join(RESULTS))
            .unwrap();
        results.write_all(b"{\"index\": 2, \"sta").unwrap();
        drop(results);
        let opened = open(&path, &manifest("a")).unwrap();
        assert!(opened.resumed);
        assert_eq!(opened.records, [json!({"index": 0}), json!({"index": 1})]);
        let run = opened.dir;
        run.append(&json!({"index": 2})).unwrap();
        drop(run);
        let text = std::fs::read_to_string(path.join(RESULTS)).unwrap();
        assert_eq!(text, "{\"index\":0}\n{\"index\":1}\n{\"index\":2}\n");
    }

    #[test]
    fn a_different_evaluation_is_refused_and_a_busy_one_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        let first = open(&path, &manifest("a")).unwrap();
        assert!(matches!(
            open(&path, &manifest("a")),
            Err(RunDirError::Busy { .. })
        ));
        drop(first);
        let err = open(&path, &manifest("b")).err().unwrap().to_string();
        assert!(
            err.contains("samples_digest: \"a\" there, \"b\" now"),
            "{err}"
        );
    }

    #[test]
    fn a_run_resumes_only_where_the_machine_is_set_up_alike() {
        use assay_records::{Enforcement, Fingerprint, IsolationLevel};
        let machine = |python: &str| {
            let mut m = manifest("a");
            m.fingerprint = Some(Fingerprint {
                python: python.into(),
                profile: "bigcodebench".into(),
                packages: "0123".into(),
                package_count: 2,
                nltk_data: vec!["punkt".into()],
                network: false,
                isolation: IsolationLevel::Full,
                memory_limit: Enforcement::Cgroup,
            });
            m
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        drop(open(&path, &machine("3.11.7")).unwrap());
        drop(open(&path, &machine("3.11.7")).unwrap());
        let err = open(&path, &machine("3.11.2")).err().unwrap();
        assert!(matches!(err, RunDirError::OtherMachine { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("environment's python was \"3.11.7\"; here it is \"3.11.2\""),
            "{err}"
        );
        // A manifest that does not say (a generation) resumes as before.
        assert!(open(&path, &manifest("a")).is_ok());
        // Merges name what differs the same way: the first field (alphabetically), as JSON.
        let json = |m: &Manifest| serde_json::to_value(&m.fingerprint).unwrap();
        let (here, mut other) = (machine("3.11.7"), machine("3.11.7"));
        assert_eq!(identity_difference(&json(&here), &json(&here)), None);
        other.fingerprint.as_mut().unwrap().nltk_data.clear();
        assert_eq!(
            identity_difference(&json(&here), &json(&other)),
            Some(("nltk_data".into(), r#"["punkt"]"#.into(), "[]".into()))
        );
        other.fingerprint.as_mut().unwrap().isolation = IsolationLevel::Partial;
        assert_eq!(
            identity_difference(&json(&here), &json(&other)),
            Some((
                "isolation".into(),
                r#""full""#.into(),
                r#""partial""#.into()
            ))
        );
    }

    #[test]
    fn a_shared_directory_takes_records_from_many_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        let one = RunDir::open_shared::<Value>(&path, &manifest("a"))
            .unwrap()
            .dir;
        let two = RunDir::open_shared::<Value>(&path, &manifest("a"))
            .unwrap()
            .dir;
        one.append(&json!({"index": 0})).unwrap();
        two.append(&json!({"index": 1})).unwrap();
        // A writer killed mid-record: the next append cuts the torn line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(path.join(RESULTS))
            .unwrap()
            .write_all(b"{\"index\": 9, \"sta")
            .unwrap();
        one.append(&json!({"index": 2})).unwrap();
        assert!(matches!(
            RunDir::open_shared::<Value>(&path, &manifest("b")),
            Err(RunDirError::Different { .. })
        ));
        let reopened = RunDir::open_shared::<Value>(&path, &manifest("a")).unwrap();
        assert_eq!(
            reopened.records,
            [
                json!({"index": 0}),
                json!({"index": 1}),
                json!({"index": 2})
            ]
        );
    }

    #[test]
    fn corruption_before_the_end_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        drop(open(&path, &manifest("a")).unwrap());
        std::fs::write(
            path.join(RESULTS),
            "{\"index\": 0}\ngarbage\n{\"index\": 2}\n",
        )
        .unwrap();
        let err = open(&path, &manifest("a")).err().unwrap().to_string();
        assert!(err.contains("results.jsonl:2: not a JSON record"), "{err}");
    }

    #[test]
    fn a_run_of_another_kind_continues_one_it_extends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        let model = |name: &str| Identity {
            model: Some(name.into()),
            ..Identity::default()
        };
        let mut generation = Manifest::new(Kind::BigcodebenchGenerate, model("m"));
        generation.python = Some("3.11.2".into());
        let run = open(&path, &generation).unwrap().dir;
        let (mut log, _) = run.journal::<Value>("generation.jsonl").unwrap();
        log.append(&json!({"answer": 1})).unwrap();
        drop((log, run));
        // A field a newer assay of the same schema wrote.
        let mut written: Value =
            serde_json::from_slice(&std::fs::read(path.join(MANIFEST)).unwrap()).unwrap();
        written["viewer"] = json!({"theme": "dark"});
        std::fs::write(path.join(MANIFEST), to_pretty(&written)).unwrap();
        // Without `extends`, or changing a setting of the generation, it is another run.
        let judged = |name: &str| Identity {
            memory_mib: Some(9),
            ..model(name)
        };
        let other = Manifest::new(Kind::BigcodebenchRun, judged("m"));
        assert!(open(&path, &other).is_err());
        let mut changed = Manifest::new(Kind::BigcodebenchRun, judged("x"));
        changed.extends = vec![Kind::BigcodebenchGenerate];
        assert!(open(&path, &changed).is_err());
        let mut continuing = Manifest::new(Kind::BigcodebenchRun, judged("m"));
        continuing.extends = vec![Kind::BigcodebenchGenerate];
        let run = open(&path, &continuing).unwrap().dir;
        let (_, answers) = run.journal::<Value>("generation.jsonl").unwrap();
        assert_eq!(answers, [json!({"answer": 1})]);
        let manifest = run.manifest().unwrap();
        assert_eq!(manifest.identity, continuing.identity);
        assert_eq!(manifest.kind, Kind::BigcodebenchRun);
        assert_eq!(
            manifest.python.as_deref(),
            Some("3.11.2"),
            "the generation's own facts stay"
        );
        let written: Value =
            serde_json::from_slice(&std::fs::read(path.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(
            written["viewer"]["theme"], "dark",
            "and what it does not know too"
        );
        drop(run);
        assert!(open(&path, &continuing).is_ok(), "and it resumes as itself");
    }

    #[test]
    fn records_of_the_wrong_shape_and_newer_schemas_are_named() {
        #[derive(Debug, serde::Deserialize)]
        struct Record {
            #[allow(dead_code)]
            index: usize,
        }
        let dir = tempfile::tempdir().unwrap();
        drop(open(dir.path(), &manifest("a")).unwrap());
        std::fs::write(
            dir.path().join(RESULTS),
            "{\"index\": 0}\n{\"index\": \"x\"}\n",
        )
        .unwrap();
        let err = RunDir::open::<Record>(dir.path(), &manifest("a"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("results.jsonl:2: not a valid record: invalid type"),
            "{err}"
        );
        let mut newer = manifest("a");
        newer.schema = SCHEMA + 1;
        std::fs::write(dir.path().join(MANIFEST), to_pretty(&newer)).unwrap();
        let err = open(dir.path(), &manifest("a")).err().unwrap().to_string();
        assert!(err.contains("written by a newer assay"), "{err}");
        // A manifest from before schemas were written reads as schema 1.
        let mut old = serde_json::to_value(manifest("a")).unwrap();
        old.as_object_mut().unwrap().remove("schema");
        std::fs::write(dir.path().join(MANIFEST), to_pretty(&old)).unwrap();
        std::fs::write(dir.path().join(RESULTS), "").unwrap();
        assert!(open(dir.path(), &manifest("a")).is_ok());
    }

    #[test]
    fn a_new_run_ignores_logs_left_without_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("generation.jsonl"), "{\"stale\": 1}\n").unwrap();
        std::fs::write(dir.path().join(RESULTS), "{\"stale\": 2}\n").unwrap();
        let opened = open(dir.path(), &manifest("a")).unwrap();
        assert!(opened.records.is_empty());
        let mut run = opened.dir;
        assert!(run
            .journal::<Value>("generation.jsonl")
            .unwrap()
            .1
            .is_empty());
        run.rewrite_results(&[json!({"index": 0})]).unwrap();
        run.append(&json!({"index": 1})).unwrap();
        drop(run);
        let reopened = open(dir.path(), &manifest("a")).unwrap();
        assert_eq!(reopened.records, [json!({"index": 0}), json!({"index": 1})]);
    }

    #[test]
    fn records_read_back_are_rewritten_byte_for_byte() {
        // 17 significant digits: the default float parser of serde_json reads this one ulp off.
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Timed {
            cpu_seconds: Option<f64>,
            wall_seconds: f64,
        }
        let dir = tempfile::tempdir().unwrap();
        let line = "{\"cpu_seconds\":2.9417116549999998,\"wall_seconds\":3.005571236}\n";
        drop(open(dir.path(), &manifest("a")).unwrap());
        std::fs::write(dir.path().join(RESULTS), line).unwrap();
        let opened = RunDir::open::<Timed>(dir.path(), &manifest("a")).unwrap();
        let mut run = opened.dir;
        run.rewrite_results(&opened.records).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(RESULTS)).unwrap(),
            line
        );
    }

    #[test]
    fn derived_files_are_whole() {
        let dir = tempfile::tempdir().unwrap();
        let run = open(dir.path(), &manifest("a")).unwrap().dir;
        run.write_json("out.json", &json!({"k": [1, 2]})).unwrap();
        run.write_lines("out.jsonl", &[json!(1), json!({"a": "b"})])
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(
                &std::fs::read_to_string(dir.path().join("out.json")).unwrap()
            )
            .unwrap(),
            json!({"k": [1, 2]})
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap(),
            "1\n{\"a\":\"b\"}\n"
        );
        assert!(!dir.path().join("out.tmp-write").exists());
    }
}
