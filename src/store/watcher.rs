//! Waking up when a directory changes, with at most one inotify instance per process.
//!
//! Claude Code polls inboxes every second. swarm waits on file events, so a message is seen
//! within milliseconds, and also re-scans on a slow timer because events can be lost (a full
//! inotify queue) or absent (NFS). Every wait of a process (a loop woken by changes, the lead
//! console woken by exits, the task index draining names, a sender waiting for its spool entry
//! to be taken in, a one-shot command following a file) subscribes to one directory through
//! the process's one hub (`hub`), which holds one inotify instance and one watch per
//! directory (and, while a sender waits, one on its spool entry), so hundreds of teammates fit
//! in a user's 128 instances and its watch budget.
//! When no instance or no watch can be had, the process says so once and polls those
//! directories every 100-250 ms instead (`polling`); [`mode`] tells which, and a runtime
//! records it where `swarm status` reads it. `SWARM_NO_FS_EVENTS=1` turns events and polling
//! off, which the fault suite uses to prove the timers alone still deliver.

mod hub;
mod inotify;
mod interest;
mod polling;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hub::{hub, Callback, Interest};

use crate::error::Result;

/// Default interval of the fallback re-scan.
pub(crate) const DEFAULT_RESCAN: Duration = Duration::from_millis(2000);

pub(crate) fn rescan_interval() -> Duration {
    std::env::var("SWARM_RESCAN_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_RESCAN)
}

/// Whether file events are on (`SWARM_NO_FS_EVENTS=1` turns them off); without them only an
/// owner's re-scan timer notices changes.
pub(crate) fn events_enabled() -> bool {
    std::env::var_os("SWARM_NO_FS_EVENTS").is_none_or(|v| v != "1")
}

/// How this process learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// File events from its inotify instance.
    Inotify,
    /// Some or all of its directories are looked at every 100-250 ms (no instance or no watch
    /// could be had, or the system has no inotify).
    Polling,
    /// Events are turned off (`SWARM_NO_FS_EVENTS=1`): only re-scan timers.
    Off,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Inotify => "inotify",
            Mode::Polling => "polling",
            Mode::Off => "off",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Mode> {
        [Mode::Inotify, Mode::Polling, Mode::Off]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

/// This process's mode, as of now: polling once any of its waits had to be polled.
pub(crate) fn mode() -> Mode {
    if !events_enabled() {
        Mode::Off
    } else if hub().degraded() {
        Mode::Polling
    } else {
        Mode::Inotify
    }
}

/// A wait on one directory that calls back on every relevant change, for event loops that fold
/// file events into their own channel (a tokio loop sends itself a wake-up). Dropping it ends
/// the wait. With `SWARM_NO_FS_EVENTS=1` it waits on nothing and the owner's re-scan timer
/// (see [`rescan_interval`]) does all the work.
pub(crate) struct Subscription {
    id: Option<u64>,
}

impl Subscription {
    /// Calls `on_change` when the content of `dir` (not recursive) may have changed.
    pub(crate) fn changes(
        dir: &Path,
        on_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<Subscription> {
        Subscription::new(dir, Interest::Changes, Arc::new(on_change))
    }

    /// Calls `on_change` when the entry `entry` of `dir` may have changed, or `dir` went.
    pub(crate) fn changes_to(
        dir: &Path,
        entry: &str,
        on_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<Subscription> {
        Subscription::new(dir, Interest::Entry(entry.into()), Arc::new(on_change))
    }

    /// Calls `on_exit` when a runtime holding a lock in `dir` (`teams/<team>/alive/`) may have
    /// ended (see `hub::Interest::Exits`).
    pub(crate) fn exits(
        dir: &Path,
        on_exit: impl Fn() + Send + Sync + 'static,
    ) -> Result<Subscription> {
        Subscription::new(dir, Interest::Exits, Arc::new(on_exit))
    }

    fn new(dir: &Path, interest: Interest, call: Callback) -> Result<Subscription> {
        if !events_enabled() {
            return Ok(Subscription { id: None });
        }
        let id = hub().subscribe(dir, interest, Some(call))?;
        Ok(Subscription { id: Some(id) })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            hub().unsubscribe(id);
        }
    }
}

/// A blocking wait for changes in one directory, for one-shot commands that follow a file
/// (`swarm inbox --follow`, `swarm permission wait`, `swarm shutdown`).
pub struct DirWatcher {
    subscriptions: Vec<Subscription>,
    interest: Interest,
    tx: Sender<()>,
    events: Receiver<()>,
    rescan: Duration,
}

impl DirWatcher {
    /// Watches `dir` (not recursively). The directory must exist.
    pub fn new(dir: &Path) -> Result<DirWatcher> {
        DirWatcher::with_interest(dir, Interest::Changes)
    }

    /// Watches `dir` for what `swarm timeline --follow` shows, including appends to `.jsonl`
    /// records; [`DirWatcher::add`] adds more directories to the same wait.
    pub fn records(dir: &Path) -> Result<DirWatcher> {
        DirWatcher::with_interest(dir, Interest::Records)
    }

    /// Watches `dir` for any write to any entry, lock files included: a runtime writes its
    /// liveness lock the moment it holds it, which is what a launch waits for (`launch::verify`).
    pub fn entries(dir: &Path) -> Result<DirWatcher> {
        DirWatcher::with_interest(dir, Interest::Names)
    }

    /// Watches `dir` too (it must exist), through the same hub.
    pub fn add(&mut self, dir: &Path) -> Result<()> {
        let tx = self.tx.clone();
        let call: Callback = Arc::new(move || {
            let _ = tx.send(());
        });
        let subscription = Subscription::new(dir, self.interest.clone(), call)?;
        self.subscriptions.push(subscription);
        Ok(())
    }

    fn with_interest(dir: &Path, interest: Interest) -> Result<DirWatcher> {
        let (tx, events) = channel();
        let mut watcher = DirWatcher {
            subscriptions: Vec::new(),
            interest,
            tx,
            events,
            rescan: rescan_interval(),
        };
        watcher.add(dir)?;
        Ok(watcher)
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

/// What changed in a directory since the last [`Names::drain`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// These entries were written, renamed or removed (and nothing else was).
    Names(BTreeSet<OsString>),
    /// Events were lost: any entry may have changed.
    Lost,
    /// Nothing can tell from now on (the directory went, it is polled, events are off): look
    /// at every entry on every look.
    Blind,
}

/// The names of the entries that change in one directory, collected until drained (the task
/// index's view of `tasks/<team>/`).
pub(crate) struct Names {
    id: Option<u64>,
}

impl Names {
    /// Starts collecting for `dir`, which must exist. Watching it is best effort: a directory
    /// that cannot be watched is [`Changed::Blind`].
    pub(crate) fn watch(dir: &Path) -> Names {
        let id = events_enabled()
            .then(|| hub().subscribe(dir, Interest::Names, None).ok())
            .flatten();
        Names { id }
    }

    /// Everything collected since the last drain, including what was queued in the kernel
    /// when this was called.
    pub(crate) fn drain(&self) -> Changed {
        match self.id {
            None => Changed::Blind,
            Some(id) => match hub().drain(id) {
                hub::Drained::Names(names) => Changed::Names(names),
                hub::Drained::Lost => Changed::Lost,
                hub::Drained::Blind => Changed::Blind,
            },
        }
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            hub().unsubscribe(id);
        }
    }
}

/// Blocks until nothing is at `path` or `until` passes; returns whether it is gone. The watch
/// is set on the entry itself before the re-check, so a removal between the two still wakes the
/// wait, and only this entry's removal does (see `hub::Interest::Gone`).
pub(crate) fn wait_until_gone(path: &Path, until: Instant) -> bool {
    let gone = || {
        matches!(std::fs::symlink_metadata(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    };
    let poll_entry = || {
        while !gone() {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(hub::POLL_ENTRY_EVERY);
        }
        true
    };
    if !events_enabled() {
        return poll_entry();
    }
    let hub = hub();
    let Ok(id) = hub.subscribe(path, Interest::Gone, None) else {
        // Nothing to watch: gone already, or something odd the caller's retries deal with.
        return gone() || poll_entry();
    };
    let done = if hub.polled(id) {
        poll_entry()
    } else {
        loop {
            if gone() {
                break true;
            }
            if !hub.wait(id, until) {
                break gone();
            }
        }
    };
    hub.unsubscribe(id);
    done
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn removing_one_spool_entry_wakes_only_the_wait_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("1-a.entry"), dir.path().join("2-b.entry"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let hub = hub();
        let wait_a = hub.subscribe(&a, Interest::Gone, None).unwrap();
        let wait_b = hub.subscribe(&b, Interest::Gone, None).unwrap();
        if hub.polled(wait_a) {
            panic!("this test needs inotify (no SWARM_NO_FS_EVENTS, an instance to be had)");
        }
        std::fs::remove_file(&a).unwrap();
        let long = || Instant::now() + Duration::from_secs(60);
        assert!(hub.wait(wait_a, long()), "a's wait woke");
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(
            !hub.wait(wait_b, soon),
            "b's wait slept through a's removal"
        );
        std::fs::remove_file(&b).unwrap();
        assert!(hub.wait(wait_b, long()), "and woke at its own");
        hub.unsubscribe(wait_a);
        hub.unsubscribe(wait_b);
    }

    #[test]
    fn the_names_of_changed_entries_are_drained_once_and_the_queue_is_then_empty() {
        let dir = tempfile::tempdir().unwrap();
        let names = Names::watch(dir.path());
        if mode() != Mode::Inotify {
            panic!("this test needs inotify (no SWARM_NO_FS_EVENTS, an instance to be had)");
        }
        std::fs::write(dir.path().join(".7.json.tmp-1"), "{}").unwrap();
        std::fs::rename(dir.path().join(".7.json.tmp-1"), dir.path().join("7.json")).unwrap();
        std::fs::write(dir.path().join("8.json"), "{}").unwrap();
        let expected: BTreeSet<OsString> = [".7.json.tmp-1", "7.json", "8.json"]
            .map(OsString::from)
            .into();
        assert_eq!(names.drain(), Changed::Names(expected));
        assert_eq!(names.drain(), Changed::Names(BTreeSet::new()));
    }

    /// Tests that open instances of their own, and the one that counts them.
    static INSTANCES: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// What a sender's process hears while it waits for its spool entry: its own removal, and
    /// nothing of the other entries a commit removes.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_watch_on_one_entry_hears_nothing_of_its_neighbours() {
        let _counting = INSTANCES.lock();
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("1-a.entry"), dir.path().join("2-b.entry"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let sender = inotify::Instance::open().unwrap();
        sender.add(&b, Interest::Gone.mask(), false).unwrap();
        let heard = || {
            let mut n = 0;
            sender.read(|_| n += 1);
            n
        };
        std::fs::remove_file(&a).unwrap();
        assert_eq!(heard(), 0, "a neighbour's removal");
        std::fs::remove_file(&b).unwrap();
        assert!(heard() > 0, "its own");
    }

    #[test]
    fn waits_on_several_directories_share_one_instance() {
        let _counting = INSTANCES.lock();
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let before = inotify_instances();
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Arc::new(move || {
            let _ = tx.send(());
        });
        let subs: Vec<Subscription> = dirs
            .iter()
            .map(|d| {
                let tx = tx.clone();
                Subscription::changes(d.path(), move || tx()).unwrap()
            })
            .collect();
        let names = Names::watch(dirs[0].path());
        assert!(
            inotify_instances() <= before.max(1),
            "one instance for the process"
        );
        std::fs::write(dirs[2].path().join("x.json"), "[]").unwrap();
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the third directory's wait woke");
        drop((subs, names));
    }

    /// inotify descriptors this process holds (each is one instance).
    fn inotify_instances() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .map(|fds| {
                fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .filter(|t| t.to_string_lossy().contains("inotify"))
                    .count()
            })
            .unwrap_or(0)
    }
}
