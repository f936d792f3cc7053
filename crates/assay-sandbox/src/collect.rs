//! Reading back the files a job left in its workspace, without trusting the workspace.
//!
//! The job controlled every name and link in there. Every open is `openat2` relative to the
//! directory already opened, with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
//! | RESOLVE_NO_XDEV`: a symlink to `/etc/shadow` or to `/proc/1/root` is skipped, not followed.
//! Only regular files are read, within a file count and byte budget.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{openat2, Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::outcome::OutputFile;

/// How much a collection may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub files: usize,
    pub bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            files: 1000,
            bytes: 64 << 20,
        }
    }
}

const MAX_DEPTH: usize = 32;

fn resolve() -> ResolveFlags {
    ResolveFlags::BENEATH
        | ResolveFlags::NO_SYMLINKS
        | ResolveFlags::NO_MAGICLINKS
        | ResolveFlags::NO_XDEV
}

/// Every regular file under `root/sub` (`sub` relative, one or more plain components), sorted
/// by path.
pub(crate) fn collect(root: &Path, sub: &str, budget: Budget) -> std::io::Result<Vec<OutputFile>> {
    collect_tree(root, sub, budget).map(|(files, _)| files)
}

/// [`collect`], and every folder under `root/sub` (relative to it, sorted), empty ones too.
///
/// `sub` is the job's to change: removed, replaced by a file or a link, or made unreadable, it
/// holds nothing of the job's (and nothing is read through it). Only a `sub` that leaves
/// `root` (`..`) is an error: the caller's.
pub(crate) fn collect_tree(
    root: &Path,
    sub: &str,
    budget: Budget,
) -> std::io::Result<(Vec<OutputFile>, Vec<String>)> {
    let root = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let opened = openat2(
        &root,
        sub,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        resolve(),
    );
    let dir = match opened {
        Ok(dir) => dir,
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::ACCESS) => {
            return Ok((Vec::new(), Vec::new()))
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    let mut dirs = Vec::new();
    let mut left = budget;
    walk(dir, "", 0, &mut left, &mut out, &mut dirs)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    dirs.sort();
    Ok((out, dirs))
}

fn walk(
    dir: OwnedFd,
    prefix: &str,
    depth: usize,
    left: &mut Budget,
    out: &mut Vec<OutputFile>,
    dirs: &mut Vec<String>,
) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let mut entries = Vec::new();
    for entry in Dir::read_from(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            entries.push((entry.file_name().to_owned(), name, entry.file_type()));
        }
    }
    for (raw, name, kind) in entries {
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        match kind {
            FileType::Directory => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                if let Ok(sub) = openat2(&dir, raw.as_c_str(), flags, Mode::empty(), resolve()) {
                    dirs.push(path.clone());
                    walk(sub, &path, depth + 1, left, out, dirs)?;
                }
            }
            FileType::RegularFile => {
                if left.files == 0 {
                    return Ok(());
                }
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                let Ok(fd) = openat2(&dir, raw.as_c_str(), flags, Mode::empty(), resolve()) else {
                    continue;
                };
                let stat = rustix::fs::fstat(&fd)?;
                if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                    continue;
                }
                let size = stat.st_size.max(0) as u64;
                let mut data = Vec::new();
                std::fs::File::from(fd)
                    .take(left.bytes)
                    .read_to_end(&mut data)?;
                left.bytes -= data.len() as u64;
                left.files -= 1;
                out.push(OutputFile {
                    truncated: (data.len() as u64) < size,
                    path,
                    size,
                    data,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// `true` when `name` is one plain relative path component (no `/`, not `.` or `..`).
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// Checks that a job-supplied relative path stays beneath its root: plain components only.
pub(crate) fn is_plain_relative(path: &str) -> bool {
    path.split('/').all(is_plain_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_files_and_skips_links_out() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join("out/deep")).unwrap();
        std::fs::write(work.join("a.txt"), "hello").unwrap();
        std::fs::write(work.join("out/deep/b.bin"), [1u8, 2, 3]).unwrap();
        std::fs::write(root.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret"), work.join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", work.join("etc")).unwrap();
        let files = collect(root.path(), "work", Budget::default()).unwrap();
        let paths: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "out/deep/b.bin"]);
        assert_eq!(files[0].data, b"hello");
        assert!(files.iter().all(|f| !f.truncated));
    }

    #[test]
    fn respects_the_budget_and_refuses_escaping_subdirs() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir(&work).unwrap();
        std::fs::write(work.join("big"), vec![7u8; 100]).unwrap();
        let files = collect(
            root.path(),
            "work",
            Budget {
                files: 5,
                bytes: 10,
            },
        )
        .unwrap();
        assert_eq!(files[0].data.len(), 10);
        assert!(files[0].truncated);
        assert_eq!(files[0].size, 100);
        // A folder the job replaced by a link, or by a file, holds nothing; leaving the root
        // is the caller's error.
        std::os::unix::fs::symlink("/", root.path().join("escape")).unwrap();
        assert!(collect(root.path(), "escape", Budget::default())
            .unwrap()
            .is_empty());
        std::fs::write(root.path().join("plain"), "x").unwrap();
        assert!(collect(root.path(), "plain", Budget::default())
            .unwrap()
            .is_empty());
        assert!(collect(root.path(), "../", Budget::default()).is_err());
        assert!(
            is_plain_relative("a/b.txt") && !is_plain_relative("../x") && !is_plain_relative("/x")
        );
    }
}
