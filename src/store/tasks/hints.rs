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

/// What trying a hint found.
pub(super) enum Taken<'h> {
    /// The hint is ours until dropped.
    Mine(Hint<'h>),
    /// Another claimer is on this task.
    Busy,
    /// Something that is not a claimer holds a lock over the hint: why, for the log.
    Jammed(String),
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

    /// The hint on `id`, unless another claimer holds it. A lock there that is not a
    /// claimer's one-byte hint (a record lock over the file, which stops every claim while it
    /// is held) is `Jammed`: the hint is only advice, so the claim goes on without it.
    pub(super) fn try_take(&self, id: u64) -> Result<Taken<'_>> {
        let file = self.file()?;
        if set(file, id, libc::F_WRLCK as libc::c_short) {
            return Ok(Taken::Mine(Hint { hints: self, id }));
        }
        Ok(match holder(file, id) {
            Some((start, len)) if start != id as i64 || len != 1 => Taken::Jammed(format!(
                "{} holds a record lock no claimer takes (from byte {start}, {}), which would \
                 stop every claim; claiming without the hints while it is there",
                self.path.display(),
                if len == 0 {
                    "to the end".to_string()
                } else {
                    format!("{len} bytes")
                }
            )),
            _ => Taken::Busy,
        })
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

/// The start and length of a lock that conflicts with the hint on `id`, if one does.
fn holder(file: &File, id: u64) -> Option<(i64, i64)> {
    // SAFETY: as in `set`.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = id.min(i64::MAX as u64) as libc::off_t;
    lock.l_len = 1;
    // SAFETY: as in `set`; GETLK writes the conflicting lock into `lock`.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), GET_LOCK, &mut lock) == 0 };
    (asked && lock.l_type != libc::F_UNLCK as libc::c_short)
        .then_some((lock.l_start as i64, lock.l_len as i64))
}

#[cfg(target_os = "linux")]
const GET_LOCK: libc::c_int = libc::F_OFD_GETLK;
#[cfg(not(target_os = "linux"))]
const GET_LOCK: libc::c_int = libc::F_GETLK;

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
        let Taken::Mine(held) = a.try_take(3).unwrap() else {
            panic!("free")
        };
        assert!(matches!(b.try_take(3).unwrap(), Taken::Busy), "held by a");
        assert!(
            matches!(b.try_take(4).unwrap(), Taken::Mine(_)),
            "another id is free"
        );
        drop(held);
        assert!(matches!(b.try_take(3).unwrap(), Taken::Mine(_)), "released");
    }

    #[test]
    fn a_lock_over_the_whole_file_is_no_claimers_hint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claiming");
        let hints = Hints::new(&path);
        drop(hints.try_take(1).unwrap());
        let jam = File::options().read(true).write(true).open(&path).unwrap();
        // SAFETY: as in `set`.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        assert_eq!(unsafe { libc::fcntl(jam.as_raw_fd(), SET_LOCK, &lock) }, 0);
        let taken = hints.try_take(7).unwrap();
        match &taken {
            Taken::Jammed(why) => assert!(why.contains("from byte 0, to the end"), "{why}"),
            _ => panic!("not jammed"),
        }
    }
}
