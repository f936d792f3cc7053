//! Samples in the official format: one JSON object per line with `task_id` and either
//! `solution` (a whole program) or `completion` (text to append to the Complete prompt). Any
//! other field (`raw_solution`...) is kept as it was.
//!
//! A samples file is checked whole when it is loaded, but only where each sample lies is kept:
//! its code is read again when it is judged, so that assay's memory does not grow with the
//! samples (pass@k studies, RL rollouts). Each line's digest is kept too, so a file changed
//! since is an error, never another answer judged.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use assay_records::Answer;
use assay_rundir::{RunDir, RunDirError};
use assay_tasks::bigcodebench::{task_number, Dataset, Task};
use serde_json::Value;

/// A sample file that can't be evaluated as it is. Every message names the file and, where
/// there is one, the line and the field.
#[derive(Debug, thiserror::Error)]
pub enum SamplesError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file as a whole is unusable (empty, not for this dataset).
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The run directory's copy could not be written.
    #[error(transparent)]
    Copy(#[from] RunDirError),
    /// One line is unusable.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
}

/// What the model produced for one task.
#[derive(Debug, Clone, PartialEq)]
pub enum Code {
    /// A whole program.
    Solution(String),
    /// Text that continues the Complete prompt.
    Completion(String),
}

impl Code {
    /// The whole program the sample submits: the solution, or the Complete prompt and the
    /// completion.
    pub fn solution(&self, task: &Task) -> String {
        match self {
            Code::Solution(text) => text.clone(),
            Code::Completion(text) => format!("{}{text}", task.complete_prompt),
        }
    }
}

/// One sample: an answer to one task, and where its line is.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Position among the file's samples (0-based), the key results are stored under.
    pub index: usize,
    /// 1-based line in the file.
    pub line: usize,
    /// The task it answers.
    pub task_id: String,
    /// Where the line starts in the file.
    offset: u64,
    /// Its length in bytes, without the line's end.
    len: usize,
    /// A digest of the line: what it held when the file was loaded.
    check: [u8; 8],
}

/// The program the official harness executes for `solution`: behind the task's imports and a
/// stub when calibrated. Calibration rescues answers that leave out the prompt's imports or
/// constants; every leaderboard number is calibrated.
pub fn program(solution: &str, task: &Task, calibrated: bool) -> String {
    if calibrated {
        format!("{}\n    pass\n{solution}", task.code_prompt)
    } else {
        solution.to_string()
    }
}

/// The samples of one file that belong to the dataset being evaluated.
#[derive(Debug, Clone)]
pub struct Samples {
    /// The file.
    pub path: PathBuf,
    /// Its samples for the dataset, in file order.
    pub samples: Vec<Sample>,
    /// Samples of tasks outside the dataset's subset (a full-set file evaluated on Hard):
    /// skipped, as the official harness does.
    pub skipped: usize,
    /// A digest of the file: a run directory is tied to the samples it evaluated.
    pub digest: String,
}

impl Samples {
    /// Samples per task, for the tasks that have any.
    pub fn count_by_task(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for sample in &self.samples {
            *counts.entry(sample.task_id.as_str()).or_insert(0) += 1;
        }
        counts
    }

    /// Reads the samples' lines again, one at a time.
    pub fn reader(&self) -> Result<Reader<'_>, SamplesError> {
        let file = File::open(&self.path).map_err(|source| SamplesError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(Reader {
            samples: self,
            file,
        })
    }

    /// Writes the samples' lines, and no other, as `name` in `run` (what the run directory
    /// keeps of what it evaluated, byte for byte): the samples as read from there.
    pub fn write_into(&self, run: &RunDir, name: &str) -> Result<Samples, SamplesError> {
        let reader = self.reader()?;
        let mut file = run.create(name)?;
        let mut copied = Vec::with_capacity(self.samples.len());
        let mut offset = 0;
        for (i, sample) in self.samples.iter().enumerate() {
            let text = reader.text(sample)?;
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            // The copy has the samples' lines alone, one after the other.
            copied.push(Sample {
                line: i + 1,
                offset,
                ..sample.clone()
            });
            offset += sample.len as u64 + 1;
        }
        file.commit()?;
        Ok(Samples {
            path: run.path().join(name),
            samples: copied,
            skipped: self.skipped,
            digest: self.digest.clone(),
        })
    }
}

/// The samples of a file, read again one by one (each checked to be the line loaded).
pub struct Reader<'a> {
    samples: &'a Samples,
    file: File,
}

impl Reader<'_> {
    /// The line of `sample` as given.
    pub fn text(&self, sample: &Sample) -> Result<String, SamplesError> {
        let path = &self.samples.path;
        let changed = || SamplesError::Line {
            path: path.clone(),
            line: sample.line,
            message: "the file has changed since it was read: evaluate it again".into(),
        };
        let mut bytes = vec![0; sample.len];
        self.file
            .read_exact_at(&mut bytes, sample.offset)
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::UnexpectedEof => changed(),
                _ => SamplesError::Io {
                    path: path.clone(),
                    source,
                },
            })?;
        if line_check(&bytes) != sample.check {
            return Err(changed());
        }
        String::from_utf8(bytes).map_err(|_| changed())
    }

    /// What `sample` answers with.
    pub fn code(&self, sample: &Sample) -> Result<Code, SamplesError> {
        let text = self.text(sample)?;
        parse(&text)
            .map(|(_, code)| code)
            .map_err(|message| SamplesError::Line {
                path: self.samples.path.clone(),
                line: sample.line,
                message,
            })
    }

    /// The sample as an answer to judge.
    pub fn answer(&self, sample: &Sample, task: &Task) -> Result<Answer, SamplesError> {
        Ok(Answer {
            index: sample.index,
            task_id: sample.task_id.clone(),
            solution: self.code(sample)?.solution(task),
            empty_note: None,
        })
    }
}

/// A line's digest, as a sample keeps it.
fn line_check(line: &[u8]) -> [u8; 8] {
    let hash = blake3::hash(line);
    let mut check = [0; 8];
    check.copy_from_slice(&hash.as_bytes()[..8]);
    check
}

/// A line's task and code, or what is wrong with it (naming the field).
fn parse(line: &str) -> Result<(String, Code), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("not a JSON object".into());
    };
    let task_id = match fields.get("task_id") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err("field `task_id` is not a string".into()),
        None => return Err("field `task_id` is missing".into()),
    };
    let code = match (fields.get("solution"), fields.get("completion")) {
        (Some(Value::String(s)), _) => Code::Solution(s.clone()),
        (Some(_), _) => return Err("field `solution` is not a string".into()),
        (None, Some(Value::String(c))) => Code::Completion(c.clone()),
        (None, Some(_)) => return Err("field `completion` is not a string".into()),
        (None, None) => {
            return Err(
                "needs a `solution` (a program) or a `completion` (of the prompt) field".into(),
            )
        }
    };
    Ok((task_id, code))
}

/// Reads `path` (JSON lines) against `dataset`: every line checked, where each sample lies
/// kept.
pub fn load(path: &Path, dataset: &Dataset) -> Result<Samples, SamplesError> {
    let io = |source| SamplesError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file_error = |message: String| SamplesError::File {
        path: path.to_path_buf(),
        message,
    };
    let mut reader = BufReader::new(File::open(path).map_err(io)?);
    let known: HashMap<&str, &Task> = dataset.by_id();
    let mut hasher = blake3::Hasher::new();
    let mut samples = Vec::new();
    let mut skipped = 0;
    let (mut bytes, mut offset, mut number) = (Vec::new(), 0u64, 0);
    loop {
        bytes.clear();
        let read = reader.read_until(b'\n', &mut bytes).map_err(io)?;
        if read == 0 {
            break;
        }
        hasher.update(&bytes);
        let start = offset;
        offset += read as u64;
        number += 1;
        let error = |message: String| SamplesError::Line {
            path: path.to_path_buf(),
            line: number,
            message,
        };
        // The line as `str::lines` gives it: without its `\n` or `\r\n`.
        let mut content = &bytes[..];
        if let Some(rest) = content.strip_suffix(b"\n") {
            content = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        let line =
            std::str::from_utf8(content).map_err(|e| error(format!("not UTF-8 text: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let (task_id, _) = parse(line).map_err(error)?;
        if !known.contains_key(task_id.as_str()) {
            let in_benchmark = task_number(&task_id).is_some_and(|n| n < 1140);
            if in_benchmark && dataset.tasks.len() < 1140 {
                skipped += 1;
                continue;
            }
            return Err(error(format!(
                "field `task_id`: `{task_id}` is not a task of {}",
                dataset.source
            )));
        }
        samples.push(Sample {
            index: samples.len(),
            line: number,
            task_id,
            offset: start,
            len: content.len(),
            check: line_check(content),
        });
    }
    if samples.is_empty() {
        let why = if skipped > 0 {
            format!("none of its {skipped} samples is for a task of this subset")
        } else {
            "it holds no samples".to_string()
        };
        return Err(file_error(why));
    }
    let loaded = Samples {
        path: path.to_path_buf(),
        samples,
        skipped,
        digest: hasher.finalize().to_hex()[..16].to_string(),
    };
    check_duplicates(&loaded)?;
    Ok(loaded)
}

/// Most tasks have one sample (greedy) but some have several: the file was most likely
/// concatenated or appended to twice, which would silently weigh those tasks differently.
fn check_duplicates(samples: &Samples) -> Result<(), SamplesError> {
    let counts = samples.count_by_task();
    let singles = counts.values().filter(|&&n| n == 1).count();
    if singles * 2 <= counts.len() {
        return Ok(());
    }
    let Some((task, _)) = counts.iter().find(|(_, &n)| n > 1) else {
        return Ok(());
    };
    let lines: Vec<String> = samples
        .samples
        .iter()
        .filter(|s| s.task_id == *task)
        .map(|s| s.line.to_string())
        .collect();
    Err(SamplesError::Line {
        path: samples.path.clone(),
        line: samples
            .samples
            .iter()
            .filter(|s| s.task_id == *task)
            .nth(1)
            .map_or(0, |s| s.line),
        message: format!(
            "field `task_id`: `{task}` has {} samples (lines {}) while most tasks have one: a \
             duplicated file? Generate the same number of samples for every task",
            lines.len(),
            lines.join(", ")
        ),
    })
}

/// The official harness's model name: the samples file's name up to `--bigcodebench-`.
pub fn model_name(samples: &std::path::Path) -> String {
    let name = samples
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    stem.split("--bigcodebench-")
        .next()
        .unwrap_or(stem)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use assay_tasks::bigcodebench::Subset;
    use serde_json::json;

    fn write(dir: &Path, lines: &[String]) -> PathBuf {
        let path = dir.join("samples.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        path
    }

    fn line(task: u32, field: &str, text: &str) -> String {
        json!({"task_id": format!("BigCodeBench/{task}"), field: text, "raw_solution": "x"})
            .to_string()
    }

    #[test]
    fn model_names_are_the_official_ones() {
        assert_eq!(
            model_name(Path::new(
                "/x/checkpoint-200--main--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl"
            )),
            "checkpoint-200--main"
        );
        assert_eq!(model_name(Path::new("samples.jsonl")), "samples");
    }

    #[test]
    fn reads_solutions_and_completions_and_builds_the_official_program() {
        let dir = tempfile::tempdir().unwrap();
        let full = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        let path = write(
            dir.path(),
            &[
                line(0, "solution", "def task_func(): pass"),
                line(1, "completion", "    return 1\n"),
            ],
        );
        let samples = load(&path, &full).unwrap();
        assert_eq!(samples.samples.len(), 2);
        assert_eq!(samples.samples[1].line, 2);
        let reader = samples.reader().unwrap();
        assert_eq!(
            reader.text(&samples.samples[0]).unwrap(),
            line(0, "solution", "def task_func(): pass")
        );
        let task0 = full.get("BigCodeBench/0").unwrap();
        let code0 = reader.code(&samples.samples[0]).unwrap();
        let calibrated = program(&code0.solution(task0), task0, true);
        assert_eq!(
            calibrated,
            format!("{}\n    pass\ndef task_func(): pass", task0.code_prompt)
        );
        assert_eq!(code0.solution(task0), "def task_func(): pass");
        let task1 = full.get("BigCodeBench/1").unwrap();
        assert_eq!(
            reader.code(&samples.samples[1]).unwrap().solution(task1),
            format!("{}    return 1\n", task1.complete_prompt)
        );
    }

    #[test]
    fn a_full_file_on_the_hard_subset_skips_the_other_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        let path = write(
            dir.path(),
            &[line(0, "solution", "a"), line(13, "solution", "b")],
        );
        let samples = load(&path, &hard).unwrap();
        assert_eq!((samples.samples.len(), samples.skipped), (1, 1));
        assert_eq!(samples.samples[0].task_id, "BigCodeBench/13");
        let only_other = write(dir.path(), &[line(0, "solution", "a")]);
        let err = load(&only_other, &hard).unwrap_err().to_string();
        assert!(err.contains("none of its 1 samples"), "{err}");
    }

    #[test]
    fn samples_are_read_again_as_loaded_and_a_changed_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let hard = Dataset::embedded("v0.1.4", Subset::Hard).unwrap();
        // CRLF line ends, a blank line and a sample of another subset: the copy keeps the
        // samples' lines alone.
        let lines = [
            line(13, "solution", "a"),
            String::new(),
            line(0, "solution", "skipped"),
            line(15, "completion", "b"),
        ];
        let path = dir.path().join("samples.jsonl");
        std::fs::write(&path, lines.join("\r\n")).unwrap();
        let samples = load(&path, &hard).unwrap();
        assert_eq!((samples.samples.len(), samples.skipped), (2, 1));
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let manifest = assay_records::Manifest::new(
            assay_records::Kind::BigcodebenchEval,
            assay_records::Identity::default(),
        );
        let opened = RunDir::open::<Value>(&run, &manifest).unwrap();
        let copy = samples.write_into(&opened.dir, "copy.jsonl").unwrap();
        assert_eq!(
            std::fs::read_to_string(run.join("copy.jsonl")).unwrap(),
            format!("{}\n{}\n", lines[0], lines[3])
        );
        let reader = copy.reader().unwrap();
        assert_eq!(reader.text(&copy.samples[1]).unwrap(), lines[3]);
        assert_eq!(copy.samples[1].line, 2);
        assert_eq!(copy.digest, samples.digest);
        // The same length, another answer: refused, naming the line.
        std::fs::write(&path, lines.join("\r\n").replace("\"b\"", "\"c\"")).unwrap();
        let err = samples
            .reader()
            .unwrap()
            .code(&samples.samples[1])
            .unwrap_err();
        assert!(
            err.to_string().ends_with(
                "samples.jsonl:4: the file has changed since it was read: \
             evaluate it again"
            ),
            "{err}"
        );
    }

    #[test]
    fn bad_input_names_the_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let full = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        let ok = line(0, "solution", "a");
        for (bad, expect) in [
            ("{not json".to_string(), ":2: not valid JSON"),
            ("[1, 2]".to_string(), ":2: not a JSON object"),
            (
                json!({"solution": "a"}).to_string(),
                ":2: field `task_id` is missing",
            ),
            (
                json!({"task_id": 3, "solution": "a"}).to_string(),
                ":2: field `task_id` is not a string",
            ),
            (
                json!({"task_id": "BigCodeBench/1"}).to_string(),
                ":2: needs a `solution`",
            ),
            (
                json!({"task_id": "BigCodeBench/1", "solution": 5}).to_string(),
                ":2: field `solution` is not a string",
            ),
            (
                line(5000, "solution", "a"),
                ":2: field `task_id`: `BigCodeBench/5000` is not a task",
            ),
            (
                json!({"task_id": "HumanEval/1", "solution": "a"}).to_string(),
                "is not a task of v0.1.4",
            ),
        ] {
            let path = write(dir.path(), &[ok.clone(), bad]);
            let err = load(&path, &full).unwrap_err().to_string();
            assert!(
                err.contains("samples.jsonl") && err.contains(expect),
                "{expect}: {err}"
            );
        }
        let empty = write(dir.path(), &["".into(), "  ".into()]);
        let err = load(&empty, &full).unwrap_err().to_string();
        assert!(err.contains("holds no samples"), "{err}");
        let err = load(&dir.path().join("missing.jsonl"), &full)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.jsonl"), "{err}");
    }

    #[test]
    fn a_duplicated_greedy_file_is_refused_but_even_sampling_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let full = Dataset::embedded("v0.1.4", Subset::Full).unwrap();
        let mut lines: Vec<String> = (0..5).map(|t| line(t, "solution", "a")).collect();
        lines.push(line(2, "solution", "a"));
        let err = load(&write(dir.path(), &lines), &full)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":6:") && err.contains("`BigCodeBench/2` has 2 samples (lines 3, 6)"),
            "{err}"
        );
        let sampled: Vec<String> = (0..4)
            .flat_map(|t| [line(t, "solution", "a"), line(t, "solution", "b")])
            .collect();
        let samples = load(&write(dir.path(), &sampled), &full).unwrap();
        assert_eq!(
            samples
                .count_by_task()
                .values()
                .copied()
                .collect::<Vec<_>>(),
            [2, 2, 2, 2]
        );
    }
}
