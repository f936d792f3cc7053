//! The lock that keeps a run directory to one process (or, shared, to one writer at a time):
//! an advisory `flock` on the directory's `.lock` file. Apart, as both ways of opening a
//! directory and a shared directory's appends take it.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{io, RunDirError};

const LOCK: &str = ".lock";
/// How long a shared directory's user waits for another's brief hold of the lock.
const SHARED_LOCK_WAIT: Duration = Duration::from_secs(30);

pub(crate) fn lock_file(path: &Path) -> Result<File, RunDirError> {
    check_place(path)?;
    std::fs::create_dir_all(path).map_err(io(path))?;
    let lock_path = path.join(LOCK);
    File::create(&lock_path).map_err(io(&lock_path))
}

/// Refuses a run directory's path that names a file (or anything but a directory): what the
/// file system would say of it ("File exists") names no mistake. Public so that a command can
/// say it before the minutes its setup takes.
pub fn check_place(path: &Path) -> Result<(), RunDirError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() => Err(RunDirError::NotADirectory {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Takes a shared directory's lock, waiting a bounded time for another process's brief hold.
pub(crate) fn lock_briefly(path: &Path, lock: &File) -> Result<(), RunDirError> {
    let deadline = Instant::now() + SHARED_LOCK_WAIT;
    loop {
        match rustix::fs::flock(lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => {
                return Err(RunDirError::Busy {
                    path: path.to_path_buf(),
                })
            }
        }
    }
}

pub(crate) fn unlock(lock: &File) {
    let _ = rustix::fs::flock(lock, rustix::fs::FlockOperation::Unlock);
}
