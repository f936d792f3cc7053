//! A bounded wait for an exclusive `flock`: several assay processes set up one environment, or
//! fetch into one place, one at a time, and none waits for ever on another that hangs.

use std::fs::File;
use std::time::{Duration, Instant};

use rustix::fs::{flock, FlockOperation};

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process held it for all of the wait.
    TimedOut(Duration),
    /// `flock` itself failed.
    Io(std::io::Error),
}

/// Takes an exclusive `flock` on `file`, held until it is closed, waiting at most `wait`;
/// `waiting` is called once when it must wait (to say so).
pub fn exclusive(file: &File, wait: Duration, waiting: impl FnOnce()) -> Result<(), LockError> {
    let deadline = Instant::now() + wait;
    let mut waiting = Some(waiting);
    loop {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                if let Some(say) = waiting.take() {
                    say();
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(LockError::TimedOut(wait)),
            Err(e) => return Err(LockError::Io(e.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock held elsewhere is waited for within the bound, said once, then refused; freed,
    /// it is taken at once.
    #[test]
    fn a_held_lock_is_waited_for_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let holder = File::create(&path).unwrap();
        exclusive(&holder, Duration::ZERO, || {
            panic!("no wait for a free lock")
        })
        .unwrap();
        let other = File::open(&path).unwrap();
        let mut said = 0;
        let started = Instant::now();
        let refused = exclusive(&other, Duration::from_millis(600), || said += 1);
        assert!(
            matches!(refused, Err(LockError::TimedOut(_))),
            "{refused:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(600));
        assert_eq!(said, 1);
        drop(holder);
        exclusive(&other, Duration::ZERO, || panic!("freed")).unwrap();
    }
}
