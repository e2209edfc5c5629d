//! Waking up when a directory changes.
//!
//! Claude Code polls inboxes every second. swarm waits on file-system events from `notify`, so
//! a message is seen within milliseconds, and also re-scans on a slow timer because events can
//! be lost (a full inotify queue) or absent (NFS). `SWARM_NO_FS_EVENTS=1` turns events off, which
//! the fault suite uses to prove the timer alone still delivers.

use std::path::Path;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
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

pub struct DirWatcher {
    _watcher: Option<notify::RecommendedWatcher>,
    events: Receiver<()>,
    rescan: Duration,
}

impl DirWatcher {
    /// Watches `dir` (not recursively). The directory must exist.
    pub fn new(dir: &Path) -> Result<DirWatcher> {
        let (tx, events) = channel();
        let rescan = rescan_interval();
        if std::env::var_os("SWARM_NO_FS_EVENTS").is_some_and(|v| v == "1") {
            return Ok(DirWatcher {
                _watcher: None,
                events,
                rescan,
            });
        }
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            // Errors (such as a queue overflow) also wake the waiter: it re-reads anyway.
            let _ = res;
            let _ = tx.send(());
        })
        .map_err(|e| Error::Backend(format!("failed to watch {}: {e}", dir.display())))?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| Error::Backend(format!("failed to watch {}: {e}", dir.display())))?;
        Ok(DirWatcher {
            _watcher: Some(watcher),
            events,
            rescan,
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
