//! PyBench's tasks, read from a folder in upstream's layout (the data's license is unknown, so
//! nothing of it is embedded):
//!
//! ```text
//! DIR/data/meta/task.json   a JSON array of {index, category1..3, user, file_paths, attachments}
//! DIR/data/...              the input files, named in file_paths as "./data/<name>"
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// Where the task list lives inside a data folder.
pub const TASK_FILE: &str = "data/meta/task.json";
/// The environment variable that names the data folder when `--data` does not.
pub const DATA_ENV: &str = "ASSAY_PYBENCH_DATA";
/// Upstream's repository, where `assay data pybench` fetches the data from by default.
pub const UPSTREAM_REPO: &str = "https://github.com/Mercury7353/PyBench";
/// The commit of upstream's repository assay's checks, prompts and parity notes were written
/// against (the public snapshot's head, 2024-08-06): the data fetched by default.
pub const UPSTREAM_COMMIT: &str = "fa90fae282a23cb38279c2d5074ccaf2062629bf";
/// The environment variable that names a mirror of upstream's repository (any git remote), for
/// machines without GitHub.
pub const REPO_ENV: &str = "ASSAY_PYBENCH_REPO";
/// The prefix of a task id: `PyBench/<index>`.
pub const ID_PREFIX: &str = "PyBench/";

/// The paper's five categories (Table 3). `task.json` stores only upstream's Chinese labels;
/// [`PaperCategory::of`] maps them, reproducing the paper's counts 62/23/48/6/4 exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaperCategory {
    /// Data cleaning, statistics, machine learning and plots over tables.
    ChartAnalysis,
    /// Text mining, documents, OCR, scraping, word clouds.
    TextAnalysis,
    /// Image, audio and drawing tasks.
    ImageAudioEditing,
    /// Symbolic and numeric maths.
    ComplexMath,
    /// Small programs and web pages.
    SoftwareWebsiteDev,
}

impl PaperCategory {
    /// Every category, in the paper's column order.
    pub const ALL: [PaperCategory; 5] = [
        PaperCategory::ChartAnalysis,
        PaperCategory::TextAnalysis,
        PaperCategory::ImageAudioEditing,
        PaperCategory::ComplexMath,
        PaperCategory::SoftwareWebsiteDev,
    ];

    /// The paper's category of a task from upstream's `category1` (its first line) and
    /// `category2`: plots under text mining are chart analysis, word clouds under drawing are
    /// text analysis. `None` for a label upstream does not use.
    pub fn of(category1: &str, category2: &str) -> Option<PaperCategory> {
        let group = category1.lines().next().unwrap_or("").trim();
        let label = |prefix: &str| group.starts_with(prefix);
        Some(
            if label("简单数据分析处理") || label("总结分析") || label("简单机器学习")
            {
                PaperCategory::ChartAnalysis
            } else if label("文本挖掘") {
                if category2.trim() == "画图" {
                    PaperCategory::ChartAnalysis
                } else {
                    PaperCategory::TextAnalysis
                }
            } else if label("OCR") || label("文档处理") || label("网页搜索和爬虫") {
                PaperCategory::TextAnalysis
            } else if label("作图") {
                if category2.trim() == "词云" {
                    PaperCategory::TextAnalysis
                } else {
                    PaperCategory::ImageAudioEditing
                }
            } else if label("图片处理") || label("音频处理") {
                PaperCategory::ImageAudioEditing
            } else if label("数学求解") {
                PaperCategory::ComplexMath
            } else if label("简单程序开发") {
                PaperCategory::SoftwareWebsiteDev
            } else {
                return None;
            },
        )
    }

    /// The name the paper's table uses.
    pub fn title(self) -> &'static str {
        match self {
            PaperCategory::ChartAnalysis => "Chart",
            PaperCategory::TextAnalysis => "Text",
            PaperCategory::ImageAudioEditing => "Image",
            PaperCategory::ComplexMath => "Math",
            PaperCategory::SoftwareWebsiteDev => "Software",
        }
    }
}

/// One task as upstream's `task.json` has it, with its paper category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Upstream's id, a number as a string (`"2"` to `"152"`, with gaps).
    pub index: String,
    /// Upstream's category labels (Chinese), as given.
    pub category1: String,
    /// See `category1`.
    pub category2: String,
    /// See `category1`.
    pub category3: String,
    /// The query, sent verbatim.
    pub user: String,
    /// The inputs, as the query's `[INFO]` line names them (`./data/<name>`).
    pub file_paths: Vec<String>,
    /// Display names; upstream's agent does not use them.
    pub attachments: Vec<String>,
    /// The paper's category.
    #[serde(skip)]
    pub category: Option<PaperCategory>,
}

impl Task {
    /// `PyBench/<index>`.
    pub fn task_id(&self) -> String {
        format!("{ID_PREFIX}{}", self.index)
    }

    /// The inputs as paths relative to the working directory (`data/<name>`).
    pub fn input_paths(&self) -> impl Iterator<Item = &str> {
        self.file_paths.iter().map(|p| p.trim_start_matches("./"))
    }

    /// Whether the query needs the internet: upstream's tasks 128 and 129 scrape web pages.
    pub fn needs_internet(&self) -> bool {
        self.category1.starts_with("网页搜索和爬虫")
    }
}

/// The tasks of one data folder.
#[derive(Debug, Clone)]
pub struct PyBench {
    /// The folder (upstream's repository root layout).
    pub root: PathBuf,
    /// In `task.json`'s order.
    pub tasks: Vec<Task>,
    /// blake3 of `task.json`'s bytes: which task set a run used.
    pub digest: String,
}

/// An input file a task names, and whether the folder has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Where the task's code finds it, relative to the working directory (`data/<name>`).
    pub path: String,
    /// Where it is on this machine, if it is there.
    pub source: Option<PathBuf>,
}

impl PyBench {
    /// The data folder the user named: `--data`, else `ASSAY_PYBENCH_DATA`; `None` when neither
    /// does (the caller then falls back to the data `assay data pybench` fetched).
    pub fn folder(flag: Option<&Path>) -> Option<PathBuf> {
        flag.map(Path::to_path_buf).or_else(|| {
            std::env::var_os(DATA_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// Reads `DIR/data/meta/task.json`. Every error names the file, the line and the field.
    pub fn load(root: &Path) -> Result<PyBench, Error> {
        let path = root.join(TASK_FILE);
        let file = path.display().to_string();
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let text = std::str::from_utf8(&bytes).map_err(|e| Error::Invalid {
            file: file.clone(),
            message: format!("not UTF-8: {e}"),
        })?;
        let entries: Vec<Value> = serde_json::from_str(text).map_err(|e| Error::Parse {
            file: file.clone(),
            line: e.line(),
            message: format!("not a JSON array of tasks: {e}"),
        })?;
        let lines = element_lines(text);
        let mut tasks: Vec<Task> = Vec::with_capacity(entries.len());
        for (n, entry) in entries.into_iter().enumerate() {
            let line = lines.get(n).copied().unwrap_or(1);
            let err = |message: String| Error::Parse {
                file: file.clone(),
                line,
                message: format!("task {}: {message}", n + 1),
            };
            let mut task: Task = serde_json::from_value(entry).map_err(|e| err(e.to_string()))?;
            if task.index.trim().is_empty() {
                return Err(err("field `index` is empty".into()));
            }
            if tasks.iter().any(|t| t.index == task.index) {
                return Err(err(format!(
                    "field `index`: \"{}\" appears twice",
                    task.index
                )));
            }
            if let Some(bad) = task.file_paths.iter().find(|p| !is_plain_input(p)) {
                return Err(err(format!(
                    "field `file_paths`: {bad:?} is not a plain path under ./data/"
                )));
            }
            task.category = PaperCategory::of(&task.category1, &task.category2);
            tasks.push(task);
        }
        if tasks.is_empty() {
            return Err(Error::Invalid {
                file,
                message: "no tasks".into(),
            });
        }
        Ok(PyBench {
            root: root.to_path_buf(),
            tasks,
            digest: blake3::hash(&bytes).to_hex()[..16].to_string(),
        })
    }

    /// The task with this index (`"3"`) or id (`"PyBench/3"`).
    pub fn get(&self, id: &str) -> Option<&Task> {
        let index = id.strip_prefix(ID_PREFIX).unwrap_or(id);
        self.tasks.iter().find(|t| t.index == index)
    }

    /// Keeps only the named tasks (indices or ids), in `task.json`'s order; an unknown one is
    /// an error naming it.
    pub fn select(&mut self, ids: &[String]) -> Result<(), Error> {
        if let Some(unknown) = ids.iter().find(|id| self.get(id).is_none()) {
            return Err(Error::Invalid {
                file: self.root.join(TASK_FILE).display().to_string(),
                message: format!("no task {unknown:?}"),
            });
        }
        self.tasks.retain(|t| {
            ids.iter()
                .any(|id| id.strip_prefix(ID_PREFIX).unwrap_or(id) == t.index)
        });
        Ok(())
    }

    /// The task's input files, each with where it is here (`None`: missing from the folder).
    pub fn inputs(&self, task: &Task) -> Vec<Input> {
        task.input_paths()
            .map(|path| {
                let source = self.root.join(path);
                Input {
                    path: path.to_string(),
                    source: source.is_file().then_some(source),
                }
            })
            .collect()
    }
}

/// `./data/<name>` (or `data/<name>`) with no `..`, no empty and no absolute parts.
fn is_plain_input(path: &str) -> bool {
    let rest = path.trim_start_matches("./");
    let mut parts = rest.split('/');
    parts.next() == Some("data") && {
        let tail: Vec<&str> = parts.collect();
        !tail.is_empty()
            && tail
                .iter()
                .all(|p| !p.is_empty() && *p != "." && *p != "..")
    }
}

/// The line each element of a top-level JSON array starts on (the text is valid JSON).
fn element_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut line) = (0usize, false, false, 1usize);
    let mut expecting = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if depth == 1 && expecting && !c.is_whitespace() && c != ']' {
            lines.push(line);
            expecting = false;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(task_json: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/meta")).unwrap();
        std::fs::write(dir.path().join(TASK_FILE), task_json).unwrap();
        dir
    }

    const TWO: &str = r#"[
  {"index": "3", "category1": "简单数据分析处理\n（pandas）", "category2": "数据清洗",
   "category3": "去除重复项", "user": "dedup ./data/a.csv", "file_paths": ["./data/a.csv"],
   "attachments": ["a"]},
  {"index": "134", "category1": "数学求解\n（sympy、numpy、scipy）", "category2": "求导",
   "category3": "x", "user": "2**1000?", "file_paths": [], "attachments": []}
]"#;

    #[test]
    fn loads_tasks_with_their_categories_and_inputs() {
        let dir = folder(TWO);
        std::fs::write(dir.path().join("data/a.csv"), "x\n1\n").unwrap();
        let data = PyBench::load(dir.path()).unwrap();
        assert_eq!(data.tasks.len(), 2);
        let t = data.get("PyBench/3").unwrap();
        assert_eq!(t.category, Some(PaperCategory::ChartAnalysis));
        assert_eq!(
            data.get("134").unwrap().category,
            Some(PaperCategory::ComplexMath)
        );
        let inputs = data.inputs(t);
        assert_eq!(inputs[0].path, "data/a.csv");
        assert!(inputs[0].source.is_some());
        std::fs::remove_file(dir.path().join("data/a.csv")).unwrap();
        assert_eq!(data.inputs(t)[0].source, None);
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_field() {
        let missing_user = TWO.replace(r#""user": "2**1000?", "#, "");
        let err = PyBench::load(folder(&missing_user).path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("task.json:5: task 2: missing field `user`"),
            "{err}"
        );
        let twice = TWO.replace(r#""index": "134""#, r#""index": "3""#);
        let err = PyBench::load(folder(&twice).path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":5: task 2: field `index`: \"3\" appears twice"),
            "{err}"
        );
        let escape = TWO.replace("./data/a.csv\"]", "./data/../../etc/passwd\"]");
        let err = PyBench::load(folder(&escape).path())
            .unwrap_err()
            .to_string();
        assert!(err.contains(":2: task 1: field `file_paths`"), "{err}");
        let err = PyBench::load(folder("[{\"index\": ").path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("task.json:1: not a JSON array"), "{err}");
        let err = PyBench::load(Path::new("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/data/meta/task.json"), "{err}");
    }

    #[test]
    fn selection_keeps_the_file_order_and_names_unknown_tasks() {
        let mut data = PyBench::load(folder(TWO).path()).unwrap();
        let err = data.select(&["PyBench/9".into()]).unwrap_err().to_string();
        assert!(err.contains("no task \"PyBench/9\""), "{err}");
        data.select(&["134".into(), "PyBench/3".into()]).unwrap();
        let order: Vec<_> = data.tasks.iter().map(|t| t.index.as_str()).collect();
        assert_eq!(order, ["3", "134"]);
    }

    #[test]
    fn the_shared_data_has_the_papers_category_counts() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pybench");
        let data = PyBench::load(&root).expect("the shared PyBench data (../shared/data/pybench)");
        assert_eq!(data.tasks.len(), 143);
        let count = |c| data.tasks.iter().filter(|t| t.category == Some(c)).count();
        let counts: Vec<usize> = PaperCategory::ALL.iter().map(|&c| count(c)).collect();
        assert_eq!(counts, [62, 23, 48, 6, 4]);
        let online: Vec<&str> = data
            .tasks
            .iter()
            .filter(|t| t.needs_internet())
            .map(|t| t.index.as_str())
            .collect();
        assert_eq!(online, ["128", "129"]);
    }
}
