//! What a subscriber of the hub waits for in its directory ([`Interest`]): which inotify bits
//! it needs, and which events and entries concern it. The hub asks it of every event it reads;
//! the poller asks it of every entry it looks at, so a polled wait wakes for what a watched
//! one would.

use std::ffi::{OsStr, OsString};

use super::inotify::Mask;

/// What a subscriber waits for in its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Interest {
    /// New content: an entry written, renamed, removed or changed in its metadata. Lock
    /// directories, lock gates and temp files (hidden or `*.lock`) are noise, and so are opens
    /// and reads, or every waiter's own re-read would wake it again.
    Changes,
    /// [`Interest::Changes`] to one entry of the directory alone (and the directory going): a
    /// runtime's own inbox among the team's, the roster among the team directory's files.
    /// Woken by every inbox write of the team, each of 200 runtimes re-read the roster and its
    /// inbox 200 times during a launch of 200.
    Entry(OsString),
    /// What `swarm timeline --follow` shows: [`Interest::Changes`], and appends to the `.jsonl`
    /// records (the task history is a dot file, so `Changes` alone would hide it).
    Records,
    /// A runtime holding a lock here may have ended: a lock's release is no event, but the
    /// kernel closes the dead runtime's read-write descriptor, which inotify reports as a close
    /// after writing (probes open for reading only, so they wake nobody).
    Exits,
    /// The names of the entries that changed in any way, collected until the next drain.
    Names,
    /// The subscribed path is itself one entry, watched until it is gone (unlinked, renamed
    /// away): a sender waiting for its spool entry to be taken in. The one watch on a file, so
    /// a commit wakes only the senders it served (a watch on the spool directory woke every
    /// waiting sender at every removal: five times the context switches, a tenth more CPU, in
    /// 16 writers x 250 messages); it lives only while its sender waits.
    Gone,
}

impl Interest {
    pub(super) fn mask(&self) -> Mask {
        let ended = Mask::DELETE_SELF.or(Mask::MOVE_SELF);
        ended.or(match self {
            Interest::Changes | Interest::Records | Interest::Entry(_) => Mask::MODIFY
                .or(Mask::ATTRIB)
                .or(Mask::CREATE)
                .or(Mask::DELETE)
                .or(Mask::MOVED_FROM)
                .or(Mask::MOVED_TO),
            Interest::Exits => Mask::CLOSE_WRITE.or(Mask::CREATE).or(Mask::DELETE),
            Interest::Names => Mask::MODIFY
                .or(Mask::ATTRIB)
                .or(Mask::CLOSE_WRITE)
                .or(Mask::CREATE)
                .or(Mask::DELETE)
                .or(Mask::MOVED_FROM)
                .or(Mask::MOVED_TO),
            // An unlink shows as ATTRIB (the link count) even while someone still has the
            // file open, which holds back DELETE_SELF until they close it.
            Interest::Gone => Mask::ATTRIB,
        })
    }

    /// Whether the subscribed path must be a directory.
    pub(super) fn on_directory(&self) -> bool {
        *self != Interest::Gone
    }

    /// Whether an event about an entry (one of the watch's own events) concerns this
    /// subscriber; the watch also carries the bits other subscribers asked for.
    pub(super) fn wants(&self, mask: Mask, name: Option<&OsStr>) -> bool {
        if !mask.any(self.mask()) {
            return false;
        }
        match self {
            Interest::Changes | Interest::Records | Interest::Entry(_) => {
                name.is_none_or(|n| self.shows(n))
            }
            Interest::Exits => true,
            Interest::Names => !mask.any(Mask::ISDIR),
            Interest::Gone => true,
        }
    }
}

impl Interest {
    /// Whether a change to the entry `name` concerns this subscriber, by its name alone.
    pub(super) fn shows(&self, name: &OsStr) -> bool {
        match self {
            Interest::Records => relevant(name) || record(name),
            Interest::Entry(entry) => name == entry,
            _ => relevant(name),
        }
    }
}

/// Whether an entry is an append-only record (`*.jsonl`), not a temp file on its way to one.
fn record(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.ends_with(".jsonl") && !name.contains(crate::store::fsio::TEMP_MARK)
}

/// Whether an entry's name can hold content a waiter reads (see [`Interest::Changes`]).
pub(super) fn relevant(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    !(name.starts_with('.') || name.ends_with(".lock") || name.contains(".lock.broken-"))
}
