//! The flock a swarm holder keeps on its lock directory itself: proof, which no file deletion
//! takes away, that the directory's owner lives.
//!
//! The owner record lives in the gate, and a gate can be deleted while its lock is held (issue
//! 21 item 5). The next contender then makes a new, empty gate, finds a lock directory no
//! record names and, until this existed, took it for Claude Code's and broke it once 10 s old,
//! beside a live holder. So a holder also flocks the directory (`O_RDONLY|O_DIRECTORY`; Linux
//! flocks directories like files) before renaming it into place, and a contender about to break
//! a directory first tries that flock: held means a live swarm owner, never broken whatever its
//! age; free on a directory seen held before means its owner died, broken at once; free on one
//! never seen held is Claude Code's (it never flocks), under its 10 s rule. The kernel drops the
//! flock however the holder dies, so no pid or clock is trusted. The holder takes it shared and
//! the probe asks for it exclusive, so the probe never blocks the holder and works where flock
//! becomes a POSIX record lock (NFS), which a read-only descriptor can only take shared. Three
//! system calls per lock (open, flock, close) on the fast path.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};

/// What the directory's flock says about its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// A live swarm process holds it.
    Alive,
    /// Nobody holds it now.
    None,
    /// The file system would not say (flock refused).
    Unknown,
}

fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    open(path, flags, Mode::empty()).map_err(io::Error::from)
}

/// The holder's flock on the directory it is about to place; `None` where the file system does
/// not lock directories (then only the gate's record speaks for the holder, as before).
pub(super) fn hold(staged: &Path) -> Option<OwnedFd> {
    let fd = open_dir(staged).ok()?;
    flock(&fd, FlockOperation::NonBlockingLockShared).ok()?;
    Some(fd)
}

/// Whether a swarm holder flocks the directory at `lock_dir` now (the probe's own flock is let
/// go at once). `Err` with `NotFound` when the directory is gone.
pub(super) fn owner(lock_dir: &Path) -> io::Result<Owner> {
    let fd = open_dir(lock_dir)?;
    Ok(match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Owner::None,
        Err(rustix::io::Errno::WOULDBLOCK) => Owner::Alive,
        Err(_) => Owner::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_shows_its_owner_alive_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let lock_dir = dir.path().join("inbox.json.lock");
        std::fs::create_dir(&lock_dir).unwrap();
        assert_eq!(
            owner(&lock_dir).unwrap(),
            Owner::None,
            "Claude Code's: no flock"
        );
        let held = hold(&lock_dir).expect("Linux flocks directories");
        assert_eq!(owner(&lock_dir).unwrap(), Owner::Alive);
        drop(held);
        assert_eq!(owner(&lock_dir).unwrap(), Owner::None);
        std::fs::remove_dir(&lock_dir).unwrap();
        assert_eq!(
            owner(&lock_dir).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
