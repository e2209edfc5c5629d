//! Try-locks that spread claimers over the available tasks instead of queueing them on the
//! lowest one.
//!
//! Claimers that all see the same lowest available task and wait for its lock form a convoy:
//! each one in turn takes the lock, finds the task claimed, and moves on to the next, where the
//! others are already queued. So an indexed claimer first tries a one-byte lock at offset `id`
//! in the hidden file `tasks/<team>/.claiming` (open file description locks, never waiting); if
//! another claimer holds it, it goes on to the next candidate at once. The hint decides only who
//! tries which task first: the claim itself is still made under the task's own lock (PROTOCOL.md
//! section 3), which also excludes Claude Code and every writer that does not know about hints.
//! The kernel drops a dead claimer's hints with its descriptor, and a lock makes no file event,
//! so hints cost one system call and wake nobody. The file is made by the first claim a
//! process tries, not when its index opens, so a process that never claims writes nothing.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::Result;
use crate::store::fsio;

/// The `.claiming` file of one task list, opened on first use.
pub(super) struct Hints {
    path: PathBuf,
    file: OnceLock<File>,
}

/// A held hint on one task id; released on drop.
pub(super) struct Hint<'h> {
    hints: &'h Hints,
    id: u64,
}

impl Hints {
    pub(super) fn new(path: &Path) -> Hints {
        Hints {
            path: path.to_path_buf(),
            file: OnceLock::new(),
        }
    }

    fn file(&self) -> Result<&File> {
        if let Some(file) = self.file.get() {
            return Ok(file);
        }
        let file = Self::open(&self.path)?;
        Ok(self.file.get_or_init(|| file))
    }

    fn open(path: &Path) -> Result<File> {
        fsio::check_regular(path)?;
        fsio::open_or_create(path)
    }

    /// The hint on `id`, unless another claimer holds it.
    pub(super) fn try_take(&self, id: u64) -> Result<Option<Hint<'_>>> {
        let file = self.file()?;
        Ok(set(file, id, libc::F_WRLCK as libc::c_short).then_some(Hint { hints: self, id }))
    }
}

impl Drop for Hint<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.hints.file.get() {
            set(file, self.id, libc::F_UNLCK as libc::c_short);
        }
    }
}

fn set(file: &File, id: u64, kind: libc::c_short) -> bool {
    // SAFETY: an all-zero `flock` is a valid value; the fields that matter are set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = id.min(i64::MAX as u64) as libc::off_t;
    lock.l_len = 1;
    // SAFETY: the descriptor is open for as long as `file`, and `lock` outlives the call.
    unsafe { libc::fcntl(file.as_raw_fd(), SET_LOCK, &lock) == 0 }
}

/// Open file description locks where there are any: they belong to the descriptor, so two
/// indexes in one process exclude each other, and closing some other descriptor of the file
/// does not drop them (the trap of classic POSIX record locks).
#[cfg(target_os = "linux")]
const SET_LOCK: libc::c_int = libc::F_OFD_SETLK;
#[cfg(not(target_os = "linux"))]
const SET_LOCK: libc::c_int = libc::F_SETLK;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_hint_is_refused_to_another_claimer_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claiming");
        let (a, b) = (Hints::new(&path), Hints::new(&path));
        assert!(!path.exists(), "made by the first claim, not before");
        let held = a.try_take(3).unwrap().expect("free");
        assert!(b.try_take(3).unwrap().is_none(), "held by a");
        assert!(b.try_take(4).unwrap().is_some(), "another id is free");
        drop(held);
        assert!(b.try_take(3).unwrap().is_some(), "released");
    }
}
