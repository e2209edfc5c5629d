//! Waking up when a directory changes.
//!
//! Claude Code polls inboxes every second. swarm waits on file-system events from `notify`, so
//! a message is seen within milliseconds, and also re-scans on a slow timer because events can
//! be lost (a full inotify queue) or absent (NFS). `SWARM_NO_FS_EVENTS=1` turns events off, which
//! the fault suite uses to prove the timer alone still delivers.
//!
//! [`wait_until_gone`] is the other kind of wait: one sender in the inbox group commit waiting
//! for its own spool file to be taken in. It watches that one file (never the directory, so a
//! commit wakes only the senders it served) through one inotify descriptor per process, kept
//! for the process's life because closing a descriptor that held watches costs the kernel a
//! grace period (about a millisecond).

use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher as _};

use crate::error::{Error, Result};

/// Default interval of the fallback re-scan.
pub const DEFAULT_RESCAN: Duration = Duration::from_millis(2000);

pub fn rescan_interval() -> Duration {
    std::env::var("SWARM_RESCAN_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_RESCAN)
}

/// Whether file events are on (`SWARM_NO_FS_EVENTS=1` turns them off); without them only an
/// owner's re-scan timer notices changes.
pub fn events_enabled() -> bool {
    std::env::var_os("SWARM_NO_FS_EVENTS").is_none_or(|v| v != "1")
}

/// Whether an event can mean new content. Opening and reading a file is an event too (inotify
/// reports IN_OPEN), so without this filter every waiter's own re-read would wake it again, a
/// busy loop. Lock directories, lock gates and temp files (all hidden or `*.lock`) are noise:
/// the rename that publishes a write is what matters.
fn relevant(event: &notify::Event) -> bool {
    if matches!(event.kind, notify::EventKind::Access(_)) {
        return false;
    }
    event.paths.is_empty()
        || event.paths.iter().any(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            !(name.starts_with('.') || name.ends_with(".lock") || name.contains(".lock.broken-"))
        })
}

/// Whether an event can mean something `swarm timeline --follow` shows: what [`relevant`] lets
/// through, and appends to the `.jsonl` records (the task history is a dot file, so `relevant`
/// alone would hide it).
fn recorded(event: &notify::Event) -> bool {
    relevant(event)
        || (!matches!(event.kind, notify::EventKind::Access(_))
            && event.paths.iter().any(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                name.ends_with(".jsonl") && !name.contains(crate::store::fsio::TEMP_MARK)
            }))
}

/// Whether an event in the alive directory can mean a runtime ended (or a new one appeared).
fn closed_after_write(event: &notify::Event) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(
        event.kind,
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write))
            | notify::EventKind::Create(_)
            | notify::EventKind::Remove(_)
            | notify::EventKind::Other
    )
}

/// A watch on one directory that calls back on every relevant event, for event loops that fold
/// file events into their own channel (a tokio loop sends itself a wake-up). Dropping it stops
/// the watch. With `SWARM_NO_FS_EVENTS=1` it watches nothing and the owner's re-scan timer
/// (see [`rescan_interval`]) does all the work.
pub struct Subscription {
    watcher: Option<notify::RecommendedWatcher>,
}

impl Subscription {
    /// Calls `on_change` when the content of `dir` (not recursive) may have changed.
    pub fn changes(dir: &Path, on_change: impl Fn() + Send + 'static) -> Result<Subscription> {
        Subscription::with_filter(dir, relevant, on_change)
    }

    /// Calls `on_exit` when a runtime holding a lock in `dir` (`teams/<team>/alive/`) may have
    /// ended. A lock's release is not an event, but the kernel closes the dead runtime's
    /// read-write descriptor, which inotify reports as a close after writing; probes only open
    /// for reading, so they do not wake the watcher themselves.
    pub fn exits(dir: &Path, on_exit: impl Fn() + Send + 'static) -> Result<Subscription> {
        Subscription::with_filter(dir, closed_after_write, on_exit)
    }

    fn with_filter(
        dir: &Path,
        filter: fn(&notify::Event) -> bool,
        on_change: impl Fn() + Send + 'static,
    ) -> Result<Subscription> {
        if !events_enabled() {
            return Ok(Subscription { watcher: None });
        }
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Errors (such as a queue overflow) also wake the owner: it re-reads anyway.
            if res.as_ref().map_or(true, filter) {
                on_change();
            }
        })
        .map_err(|e| Error::Backend(format!("failed to watch {}: {e}", dir.display())))?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| Error::Backend(format!("failed to watch {}: {e}", dir.display())))?;
        Ok(Subscription {
            watcher: Some(watcher),
        })
    }

    /// Watches `dir` too, through the same watcher (one inotify instance for them all).
    pub fn add(&mut self, dir: &Path) -> Result<()> {
        match &mut self.watcher {
            Some(watcher) => watcher
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(|e| Error::Backend(format!("failed to watch {}: {e}", dir.display()))),
            None => Ok(()),
        }
    }
}

/// A blocking wait for changes in one directory, for one-shot commands that follow a file
/// (`swarm inbox --follow`, `swarm permission wait`, `swarm shutdown`).
pub struct DirWatcher {
    subscription: Subscription,
    events: Receiver<()>,
    rescan: Duration,
}

impl DirWatcher {
    /// Watches `dir` (not recursively). The directory must exist.
    pub fn new(dir: &Path) -> Result<DirWatcher> {
        DirWatcher::with_filter(dir, relevant)
    }

    /// Watches `dir` for what `swarm timeline --follow` shows, including appends to `.jsonl`
    /// records; [`DirWatcher::add`] adds more directories to the same watcher.
    pub fn records(dir: &Path) -> Result<DirWatcher> {
        DirWatcher::with_filter(dir, recorded)
    }

    /// Watches `dir` too (it must exist).
    pub fn add(&mut self, dir: &Path) -> Result<()> {
        self.subscription.add(dir)
    }

    fn with_filter(dir: &Path, filter: fn(&notify::Event) -> bool) -> Result<DirWatcher> {
        let (tx, events) = channel();
        let subscription = Subscription::with_filter(dir, filter, move || {
            let _ = tx.send(());
        })?;
        Ok(DirWatcher {
            subscription,
            events,
            rescan: rescan_interval(),
        })
    }

    /// Blocks until something changed in the directory, the re-scan interval passed, or
    /// `deadline` (if any) is reached; the caller re-reads in every case. Events that piled up
    /// are drained so one wake covers them all.
    pub fn wait(&self, deadline: Option<Instant>) {
        let mut timeout = self.rescan;
        if let Some(d) = deadline {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()));
        }
        match self.events.recv_timeout(timeout) {
            Ok(()) => while self.events.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(timeout),
        }
    }
}

/// The process's inotify descriptor, made on first use and never closed; `None` where inotify
/// is unavailable (then the waits poll the file).
fn inotify() -> Option<&'static OwnedFd> {
    static FD: OnceLock<Option<OwnedFd>> = OnceLock::new();
    FD.get_or_init(|| {
        use rustix::fs::inotify::{init, CreateFlags};
        init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()
    })
    .as_ref()
}

/// Sleeps until `fd` is readable or `timeout` passed, in the waiting thread itself (a helper
/// thread would add a scheduling hop to every wake-up).
fn poll_readable(fd: &OwnedFd, timeout: Duration) {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let timeout = Timespec::try_from(timeout.max(Duration::from_millis(1))).ok();
    // An interrupted or failed poll just means "look again", which the caller does.
    let _ = poll(&mut fds, timeout.as_ref());
}

/// Blocks until nothing is at `path` or `until` passes; returns whether it is gone. The watch is
/// set before the re-check, so a removal between the two still wakes the wait. Events are not
/// matched to watches (any event means "look again"), so several threads may wait at once; one
/// whose event another thread read sleeps until `until`, and its caller looks again.
pub fn wait_until_gone(path: &Path, until: Instant) -> bool {
    use rustix::fs::inotify::{add_watch, WatchFlags};
    let gone = || {
        matches!(std::fs::symlink_metadata(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    };
    let poll_file = || {
        while !gone() {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    };
    let fd = if events_enabled() { inotify() } else { None };
    let Some(fd) = fd else {
        return poll_file();
    };
    let flags = WatchFlags::ATTRIB
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::DONT_FOLLOW;
    match add_watch(fd, path, flags) {
        Ok(_) => {}
        Err(rustix::io::Errno::NOENT) => return true,
        Err(_) => return poll_file(), // no watch to be had (the per-user limit)
    }
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    loop {
        if gone() {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        poll_readable(fd, left);
        let mut events = rustix::fs::inotify::Reader::new(fd, &mut buf);
        while events.next().is_ok() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, EventKind, ModifyKind, RenameMode};
    use std::path::PathBuf;

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn reads_and_lock_traffic_do_not_wake_waiters() {
        assert!(!relevant(&event(
            EventKind::Access(AccessKind::Any),
            "/t/inboxes/coder.json"
        )));
        assert!(!relevant(&event(
            EventKind::Create(CreateKind::Folder),
            "/t/inboxes/coder.json.lock"
        )));
        assert!(!relevant(&event(
            EventKind::Create(CreateKind::File),
            "/t/inboxes/.coder.json.gate"
        )));
        assert!(!relevant(&event(
            EventKind::Modify(ModifyKind::Any),
            "/t/inboxes/.coder.json.tmp-1-2"
        )));
        assert!(relevant(&event(
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            "/t/inboxes/coder.json"
        )));
        assert!(relevant(&notify::Event::new(EventKind::Other)));
    }

    #[test]
    fn a_wait_for_a_file_ends_when_it_is_removed_and_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::fs::write(&path, "x").unwrap();
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(!wait_until_gone(&path, soon), "the file is still there");
        let remover = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                std::fs::remove_file(path).unwrap();
            })
        };
        assert!(wait_until_gone(
            &path,
            Instant::now() + Duration::from_secs(60)
        ));
        remover.join().unwrap();
        assert!(wait_until_gone(&path, Instant::now()), "already gone");
    }
}
