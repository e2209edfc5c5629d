//! The task index's view of file events in `tasks/<team>/`: which task files changed since the
//! last look.
//!
//! The index reads the inotify descriptor itself, without blocking, instead of taking events
//! from a watcher thread: the kernel queues an event inside the system call that changed the
//! file, so once a drain has read the queue empty, every rename, write or unlink that had
//! returned before it is in the answer. That is what makes a drained index as fresh as a scan.
//! A full queue (`IN_Q_OVERFLOW`), a watch that ended, or no events at all (another OS,
//! `SWARM_NO_FS_EVENTS=1`) answer [`Drained::Rescan`], and the index then stats every file.
//!
//! `SWARM_TASK_INDEX_FAULT` is a hook for the fault suite: `overflow` makes every drain report a
//! full queue, `lose` throws every event away (an index that misses events), so the tests can
//! prove that the rescan and the re-check under the task lock cover for them.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::Result;

/// What changed since the last drain.
#[derive(Debug)]
pub(super) enum Drained {
    /// These task ids (file names `<id>.json`) were written, renamed or removed.
    Ids(BTreeSet<u64>),
    /// Events may have been lost: every file must be looked at.
    Rescan,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    Overflow,
    Lose,
}

fn fault() -> Fault {
    match std::env::var("SWARM_TASK_INDEX_FAULT").as_deref() {
        Ok("overflow") => Fault::Overflow,
        Ok("lose") => Fault::Lose,
        _ => Fault::None,
    }
}

/// The id of a task file name, `<id>.json`; anything else (temp files, locks, `.highwatermark`)
/// is `None`.
pub(super) fn task_number(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".json")?;
    if digits.is_empty() || digits.len() > 19 || digits.starts_with('0') {
        return None;
    }
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

/// A non-blocking inotify watch on one task directory, or nothing (then every drain says
/// [`Drained::Rescan`]).
pub(super) struct Events {
    #[cfg(target_os = "linux")]
    fd: Option<rustix::fd::OwnedFd>,
    fault: Fault,
    /// The watch ended or could not be read: stat everything from now on.
    broken: bool,
}

impl Events {
    /// Watches `dir`, which must exist. Call this before the first scan, so nothing written
    /// between the scan and the watch is missed.
    pub(super) fn watch(dir: &Path) -> Result<Events> {
        let off = std::env::var_os("SWARM_NO_FS_EVENTS").is_some_and(|v| v == "1");
        Ok(Events {
            #[cfg(target_os = "linux")]
            fd: if off { None } else { linux::watch(dir) },
            fault: fault(),
            broken: off,
        })
    }

    /// Everything queued since the last drain.
    pub(super) fn drain(&mut self) -> Drained {
        if self.broken {
            return Drained::Rescan;
        }
        #[cfg(target_os = "linux")]
        let drained = match &self.fd {
            Some(fd) => {
                let (drained, watching) = linux::drain(fd);
                self.broken = !watching;
                drained
            }
            None => Drained::Rescan,
        };
        #[cfg(not(target_os = "linux"))]
        let drained = Drained::Rescan;
        match (self.fault, drained) {
            (Fault::Overflow, _) => Drained::Rescan,
            (Fault::Lose, _) => Drained::Ids(BTreeSet::new()),
            (Fault::None, d) => d,
        }
    }

    /// Whether events arrive at all (otherwise the index stats every file on every look).
    pub(super) fn live(&self) -> bool {
        #[cfg(target_os = "linux")]
        return !self.broken && self.fd.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeSet;
    use std::mem::MaybeUninit;
    use std::path::Path;

    use rustix::fd::OwnedFd;
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use super::{task_number, Drained};

    pub(super) fn watch(dir: &Path) -> Option<OwnedFd> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        // Every way a task file can change: swarm renames over it, Claude Code writes it in place,
        // anyone may delete it or move it aside.
        let mask = WatchFlags::CLOSE_WRITE
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR;
        inotify::add_watch(&fd, dir, mask).ok()?;
        Some(fd)
    }

    /// What changed, and whether the watch still stands (it ends with the directory).
    pub(super) fn drain(fd: &OwnedFd) -> (Drained, bool) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = inotify::Reader::new(fd, &mut buf);
        let mut ids = BTreeSet::new();
        // The rest of the queue is read anyway, so the next drain starts from an empty queue.
        let mut overflowed = false;
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    if flags.intersects(
                        ReadFlags::IGNORED
                            | ReadFlags::DELETE_SELF
                            | ReadFlags::MOVE_SELF
                            | ReadFlags::UNMOUNT,
                    ) {
                        return (Drained::Rescan, false);
                    }
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                        overflowed = true;
                        continue;
                    }
                    if flags.contains(ReadFlags::ISDIR) {
                        continue;
                    }
                    let id = event
                        .file_name()
                        .and_then(|n| n.to_str().ok())
                        .and_then(task_number);
                    ids.extend(id);
                }
                Err(rustix::io::Errno::AGAIN) if overflowed => return (Drained::Rescan, true),
                Err(rustix::io::Errno::AGAIN) => return (Drained::Ids(ids), true),
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return (Drained::Rescan, false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_task_files_have_numbers() {
        assert_eq!(task_number("12.json"), Some(12));
        for name in [
            ".12.json.tmp-1-2",
            "12.json.lock",
            "012.json",
            ".highwatermark",
            "x.json",
            ".json",
            "12.json.corrupt-5",
        ] {
            assert_eq!(task_number(name), None, "{name}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_rename_into_the_directory_is_drained_and_the_queue_is_then_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mut events = Events::watch(dir.path()).unwrap();
        if events.fault != Fault::None || !events.live() {
            panic!("this test needs inotify and no SWARM_TASK_INDEX_FAULT or SWARM_NO_FS_EVENTS");
        }
        std::fs::write(dir.path().join(".7.json.tmp-1"), "{}").unwrap();
        std::fs::rename(dir.path().join(".7.json.tmp-1"), dir.path().join("7.json")).unwrap();
        std::fs::write(dir.path().join("8.json"), "{}").unwrap();
        match events.drain() {
            Drained::Ids(ids) => assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![7, 8]),
            other => panic!("{other:?}"),
        }
        match events.drain() {
            Drained::Ids(ids) => assert!(ids.is_empty()),
            other => panic!("{other:?}"),
        }
    }
}
