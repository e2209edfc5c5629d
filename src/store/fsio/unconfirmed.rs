//! Renames that happened but whose directory sync failed: done, not confirmed durable.
//!
//! An atomic write ends with an fsync of the directory, which makes the rename survive a crash
//! of the machine. When that sync fails (an I/O error of the disk) the rename has happened all
//! the same and every reader sees the new file. Reported as a failure, it made callers retry
//! into another outcome (issue 21): a claimer told its claim failed owned the task, and its
//! retry found "no task is available"; a send told it failed was delivered, and its retry
//! delivered it twice. So the write succeeds and the failed sync is noted here. A one-shot
//! command (`commands::run`) collects what was noted and `lib::run` reports it once, as the
//! command's outcome: [`Error::NotDurable`], a warning and exit 3. Any other process (a
//! runtime, the lead console) says it in its log at once, once per directory, and goes on: the
//! change is made, and the next sync of that directory may still confirm it.
//!
//! `SWARM_FSYNC_FAULT=dir` is a hook for the fault suite (with the `seams` feature only): every
//! directory sync of this process fails with EIO after its rename, as a failing disk's would.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::Error;

/// What this process noted.
struct Noted {
    /// A one-shot command reports the notes as its outcome; others say each at once.
    collecting: bool,
    /// Each directory once, with what its sync said.
    dirs: Vec<(PathBuf, String)>,
}

static NOTED: Mutex<Noted> = Mutex::new(Noted {
    collecting: false,
    dirs: Vec::new(),
});

fn noted() -> std::sync::MutexGuard<'static, Noted> {
    NOTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes every rename done so far in `dir` durable. It cannot fail: the renames are done. A
/// failed sync is noted as "done, not confirmed durable" (see the module doc).
pub(crate) fn sync_dir(dir: &Path) {
    let synced = match injected_error() {
        Some(e) => Err(e),
        None => File::open(dir).and_then(|d| d.sync_all()),
    };
    let Err(e) = synced else {
        return;
    };
    let mut noted = noted();
    if noted.dirs.iter().any(|(d, _)| d == dir) {
        return;
    }
    noted.dirs.push((dir.to_path_buf(), e.to_string()));
    if !noted.collecting {
        let one = Error::NotDurable {
            dirs: vec![dir.to_path_buf()],
            detail: e.to_string(),
        };
        eprintln!("swarm: warning: {one}");
    }
}

/// From now on this process collects what it notes, for [`take`] to report as its outcome.
pub(crate) fn collect() {
    noted().collecting = true;
}

/// What this process noted and did not say yet, as one outcome; `None` when every directory
/// sync succeeded.
pub(crate) fn take() -> Option<Error> {
    let mut noted = noted();
    if !noted.collecting || noted.dirs.is_empty() {
        return None;
    }
    let dirs = std::mem::take(&mut noted.dirs);
    let mut details: Vec<String> = dirs.iter().map(|(_, d)| d.clone()).collect();
    details.dedup();
    Some(Error::NotDurable {
        dirs: dirs.into_iter().map(|(d, _)| d).collect(),
        detail: details.join("; "),
    })
}

/// The error `SWARM_FSYNC_FAULT=dir` injects into every directory sync. Only with the `seams`
/// feature (the tests'): an installed swarm ignores the variable.
fn injected_error() -> Option<std::io::Error> {
    (cfg!(feature = "seams") && std::env::var("SWARM_FSYNC_FAULT").as_deref() == Ok("dir"))
        .then(|| std::io::Error::from_raw_os_error(libc::EIO))
}
