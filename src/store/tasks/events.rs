//! The task index's view of file events in `tasks/<team>/`: which task files changed since the
//! last look.
//!
//! The index drains the process's inotify instance itself, without blocking (see
//! `store::watcher::Names`): the kernel queues an event inside the system call that changed the
//! file, so once a drain has read the queue empty, every rename, write or unlink that had
//! returned before it is in the answer. That is what makes a drained index as fresh as a scan.
//! A full queue, a watch that ended, or no events at all (another OS, no instance to be had,
//! `SWARM_NO_FS_EVENTS=1`) answer [`Drained::Rescan`], and the index then stats every file.
//!
//! `SWARM_TASK_INDEX_FAULT` is a hook for the fault suite: `overflow` makes every drain report a
//! full queue, `lose` throws every event away (an index that misses events), so the tests can
//! prove that the rescan and the re-check under the task lock cover for them.

use std::collections::BTreeSet;
use std::path::Path;

use crate::store::watcher::{Changed, Names};

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

/// The events of one task directory, or none (then every drain says [`Drained::Rescan`]).
pub(super) struct Events {
    names: Names,
    fault: Fault,
    /// The watch ended or never was: stat everything from now on.
    blind: bool,
}

impl Events {
    /// Watches `dir`, which must exist. Call this before the first scan, so nothing written
    /// between the scan and the watch is missed.
    pub(super) fn watch(dir: &Path) -> Events {
        let names = Names::watch(dir);
        let blind = names.drain() == Changed::Blind;
        Events {
            names,
            fault: fault(),
            blind,
        }
    }

    /// Everything queued since the last drain.
    pub(super) fn drain(&mut self) -> Drained {
        if self.blind {
            return Drained::Rescan;
        }
        let drained = match self.names.drain() {
            Changed::Names(names) => Drained::Ids(
                names
                    .iter()
                    .filter_map(|n| task_number(n.to_str()?))
                    .collect(),
            ),
            Changed::Lost => Drained::Rescan,
            Changed::Blind => {
                self.blind = true;
                Drained::Rescan
            }
        };
        match (self.fault, drained) {
            (Fault::Overflow, _) => Drained::Rescan,
            (Fault::Lose, _) => Drained::Ids(BTreeSet::new()),
            (Fault::None, d) => d,
        }
    }

    /// Whether events arrive at all (otherwise the index stats every file on every look).
    pub(super) fn live(&self) -> bool {
        !self.blind
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
        let mut events = Events::watch(dir.path());
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
