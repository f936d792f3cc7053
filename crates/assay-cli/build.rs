//! Names the commit the binary is built from, for `assay --version`: a wheel on PyPI, a
//! `cargo install` and a clone all say which source they are, so that a result can be traced to
//! it. The commit comes from git when the source is a checkout, else from a `COMMIT` file beside
//! this script (the release workflow writes it, so that an sdist, which carries no `.git`, still
//! knows); without either the version says so rather than guess.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `COMMIT`'s content and git's answer alike: the full hash, a space, the commit date.
const FORMAT: &str = "--format=%H %cs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Where git looks for the repository.
    for var in ["GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let commit = from_git().or_else(|| from_file(Path::new("COMMIT")));
    let described = match commit.as_deref().and_then(|c| c.split_once(' ')) {
        Some((hash, date)) => format!("{} {date}", hash.chars().take(9).collect::<String>()),
        None => "commit unknown".to_string(),
    };
    println!("cargo:rustc-env=ASSAY_COMMIT={described}");
}

/// `hash date` of HEAD, and a rerun whenever HEAD moves (a commit, a checkout, a fetch that
/// packs refs). `None` outside a checkout or without git.
fn from_git() -> Option<String> {
    // The checkout must be assay's own, not one the source was copied into.
    if git(&["rev-parse", "--show-prefix"])? != "crates/assay-cli/" {
        return None;
    }
    let line = git(&["log", "-1", FORMAT])?;
    let git_path = |name: &str| git(&["rev-parse", "--git-path", name]).map(PathBuf::from);
    // HEAD's reflog takes a line at every move, commits included, even when the branch's ref
    // lives only in packed-refs (a commit then writes a loose ref this script never saw).
    watch(&git_path("logs/HEAD")?);
    watch(&git_path("HEAD")?);
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&git_path(&branch)?);
    }
    watch(&git_path("packed-refs")?);
    Some(line)
}

fn from_file(path: &Path) -> Option<String> {
    watch(path);
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// Reruns this script when `path` changes. Only a file that exists is named: cargo reruns a
/// script on every build while a file it names is missing.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// git's trimmed output, or `None` when git is missing or fails (not a checkout; an
/// ownership check in a build container).
fn git(args: &[&str]) -> Option<String> {
    // A build script's own tool, not a child of assay: child_env's allow-list is for those.
    #[allow(clippy::disallowed_methods)]
    let output = Command::new("git")
        // A signature shown by `log` would land in the version.
        .args(["-c", "log.showSignature=false"])
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_string())
}
