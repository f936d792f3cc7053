//! The embedded Python worker package (`python/assay_worker`), written to disk on first use.
//!
//! The interpreter must import it from a real directory, and that directory must be visible
//! inside the sandbox, so it lives in the user cache under a name derived from its contents:
//! every build writes its own copy once and never modifies it afterwards.

use std::io;
use std::path::{Path, PathBuf};

macro_rules! package {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../python/assay_worker/", $name)))),*]
    };
}

const FILES: &[(&str, &str)] = package!(
    "__init__.py",
    "child.py",
    "command_job.py",
    "conditions.py",
    "confine.py",
    "integrity.py",
    "linux.py",
    "official_guards.py",
    "script_job.py",
    "session.py",
    "unittest_job.py",
    "view.py",
    "warm.py",
    "wire.py",
    "zygote.py",
);

/// A short digest of the package's sources.
fn digest() -> String {
    let mut hasher = blake3::Hasher::new();
    for (name, text) in FILES {
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        hasher.update(text.as_bytes());
        hasher.update(&[0]);
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// Makes sure `<root>/<digest>/assay_worker/` holds this build's package and returns
/// `<root>/<digest>`, the directory to put on `sys.path`.
pub(crate) fn materialize(root: &Path) -> io::Result<PathBuf> {
    let dir = root.join(digest());
    if dir.join("assay_worker").join("zygote.py").is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(root)?;
    // Build in a private directory, then rename into place: a concurrent process either sees
    // nothing or the whole package.
    let staging = tempfile_dir(root)?;
    let package = staging.join("assay_worker");
    std::fs::create_dir(&package)?;
    for (name, text) in FILES {
        std::fs::write(package.join(name), text)?;
    }
    set_world_readable(&staging)?;
    match std::fs::rename(&staging, &dir) {
        Ok(()) => Ok(dir),
        Err(_) if dir.join("assay_worker").join("zygote.py").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(dir)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

fn tempfile_dir(root: &Path) -> io::Result<PathBuf> {
    for attempt in 0..100u32 {
        let candidate = root.join(format!(".staging-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free staging directory name"))
}

/// The sandbox's unprivileged uid must be able to read the package.
fn set_world_readable(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            set_world_readable(&entry.path())?;
        } else {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_once_and_reuses() {
        let root = tempfile::tempdir().unwrap();
        let first = materialize(root.path()).unwrap();
        let zygote = first.join("assay_worker/zygote.py");
        let source = FILES.iter().find(|(n, _)| *n == "zygote.py").unwrap().1;
        assert_eq!(std::fs::read_to_string(&zygote).unwrap(), source);
        let second = materialize(root.path()).unwrap();
        assert_eq!(first, second);
        let entries: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no staging directory left behind");
    }

    #[test]
    fn every_module_in_the_source_tree_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/assay_worker");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".py"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, embedded);
    }
}
