use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;

use crate::bounded::run_bounded;
use crate::child_env::{self, Inherit};
use crate::{Error, Result};

/// A base CPython interpreter, identified by the binary itself rather than a launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// `sys.executable` as the interpreter reports it: shims (pyenv, asdf) exec the real binary,
    /// so this is the path worth running.
    pub executable: PathBuf,
    /// `(major, minor, micro)`.
    pub version: (u32, u32, u32),
    /// `sys.base_prefix`: the installation the interpreter's standard library lives in.
    pub base_prefix: PathBuf,
}

#[derive(Deserialize)]
struct Probe {
    executable: PathBuf,
    version: (u32, u32, u32),
    implementation: String,
    base_prefix: PathBuf,
}

const PROBE: &str = "import json, sys; print(json.dumps({'executable': sys.executable, \
    'version': list(sys.version_info[:3]), 'implementation': sys.implementation.name, \
    'base_prefix': sys.base_prefix}))";

impl Interpreter {
    /// Finds the interpreter to use: `explicit` (a `--python` flag), else `ASSAY_PYTHON`, else
    /// `python3.11` then `python3` on `PATH`.
    pub fn discover(explicit: Option<&Path>) -> Result<Self> {
        if let Some(path) = explicit {
            return Self::probe(path);
        }
        if let Some(path) = std::env::var_os("ASSAY_PYTHON").filter(|v| !v.is_empty()) {
            return Self::probe(Path::new(&path));
        }
        let mut tried = Vec::new();
        for name in ["python3.11", "python3"] {
            match find_on_path(name) {
                Some(path) => return Self::probe(&path),
                None => tried.push(name),
            }
        }
        Err(Error::NoInterpreter(format!(
            "none of {} is on PATH; install CPython 3.11 or pass --python PATH (or set ASSAY_PYTHON)",
            tried.join(", ")
        )))
    }

    /// Runs `path` once to learn what it really is.
    pub fn probe(path: &Path) -> Result<Self> {
        let bad = |reason: String| Error::BadInterpreter {
            path: path.to_path_buf(),
            reason,
        };
        // A pyenv shim needs PATH, HOME and PYENV_* to find the real interpreter.
        let mut cmd = child_env::command(path, Inherit::Tools);
        cmd.args(["-I", "-c", PROBE])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = run_bounded(cmd, Duration::from_secs(60), &mut |_| {})
            .map_err(|e| bad(e.to_string()))?;
        if !out.success {
            return Err(bad(format!(
                "exited with {}: {}",
                out.status,
                out.stderr.trim()
            )));
        }
        let probe: Probe = serde_json::from_str(out.stdout.trim()).map_err(|e| {
            bad(format!(
                "unexpected probe output ({e}): {}",
                out.stdout.trim()
            ))
        })?;
        if probe.implementation != "cpython" {
            return Err(bad(format!(
                "{} is not supported; assay needs CPython",
                probe.implementation
            )));
        }
        Ok(Interpreter {
            executable: probe.executable,
            version: probe.version,
            base_prefix: probe.base_prefix,
        })
    }

    /// `"3.11.7"`.
    pub fn version_string(&self) -> String {
        let (a, b, c) = self.version;
        format!("{a}.{b}.{c}")
    }
}

/// The first executable called `name` on `PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    use rustix::fs::{access, Access};
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file() && access(candidate, Access::EXEC_OK).is_ok())
}
