//! File locks that exclude both swarm and Claude Code writers (PROTOCOL.md section 3).
//!
//! Claude Code locks a file `F` by creating the directory `F.lock` and calls it stale after 10 s.
//! swarm takes the same directory lock, so a real `claude` teammate and a swarm process never
//! write one inbox at once. Two things are added:
//!
//! * an `owner` file inside the lock directory, held with an `fs4` (flock) lock for as long as
//!   the lock is held. A contender that can take that flock knows the holder died and breaks the
//!   lock at once instead of waiting 10 s. A lock directory without an owner file (a Claude Code
//!   holder) is honoured until it is 10 s stale.
//! * a gate: a hidden sibling file `.F.gate` that swarm processes flock before they go for the
//!   directory. Among swarm processes the kernel queues the waiters, so nobody sleeps in a
//!   backoff loop while the lock sits free; the directory is then almost never contended. The
//!   wait has a deadline, and a waiter that gives up (a stopped holder) names the pid in the
//!   owner file.
//!
//! The lock directory appears and disappears whole: it is built under a temp name with its
//! flocked owner file inside and renamed into place without replacing anything
//! (`RENAME_NOREPLACE`), and released by renaming it away before it is emptied. So a swarm
//! holder killed at any instant leaves either no `F.lock` or one whose owner file is unlocked,
//! never the empty directory that would be honoured as Claude Code's for 10 s.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use fs4::fs_std::FileExt;

use crate::error::{Error, Result};
use crate::store::fsio::{self, now_ms};
use crate::store::guard;

/// Claude Code's staleness rule for a lock directory with no owner file.
const STALE_AFTER: Duration = Duration::from_secs(10);
/// How long to wait for a live holder before giving up. Claude Code gives up after about half a
/// second and loses the write; swarm waits longer because a dead holder is noticed at once.
const GIVE_UP_AFTER: Duration = Duration::from_secs(30);
const SAY_WAITING_AFTER: Duration = Duration::from_secs(1);

static BREAK_COUNTER: AtomicU64 = AtomicU64::new(0);

/// An exclusive lock on a store file; released on drop.
#[derive(Debug)]
pub struct FileLock {
    lock_dir: PathBuf,
    owner: File,
    _gate: File,
}

impl FileLock {
    /// Locks `target` (a file that may not exist yet), waiting as long as a live holder needs.
    pub fn acquire(target: &Path) -> Result<FileLock> {
        Self::acquire_with(target, GIVE_UP_AFTER)
    }

    pub fn acquire_with(target: &Path, give_up_after: Duration) -> Result<FileLock> {
        let start = Instant::now();
        let lock_dir = lock_dir_of(target);
        let gate = take_gate(target, start, give_up_after, &lock_dir)?;
        let mut backoff = Duration::from_millis(5);
        let mut said_waiting = false;
        loop {
            match try_take_dir(&lock_dir)? {
                Some(owner) => {
                    return Ok(FileLock {
                        lock_dir,
                        owner,
                        _gate: gate,
                    })
                }
                None => {
                    if break_if_dead_or_stale(&lock_dir)? {
                        continue;
                    }
                }
            }
            let waited = start.elapsed();
            if waited > give_up_after {
                return Err(Error::LockTimeout {
                    path: lock_dir,
                    waited_ms: waited.as_millis(),
                    holder: "a process without an owner file (Claude Code)".into(),
                });
            }
            if !said_waiting && waited > SAY_WAITING_AFTER {
                eprintln!("swarm: waiting for lock on {}", lock_dir.display());
                said_waiting = true;
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(100));
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Released the moment the directory leaves its name; emptied under the tomb name, so it
        // is never an ownerless `F.lock`. Our flock is kept until both are gone.
        let tomb = sibling(&self.lock_dir, "released");
        match fs::rename(&self.lock_dir, &tomb) {
            Ok(()) => {
                let _ = fs::remove_file(tomb.join("owner"));
                let _ = fs::remove_dir(&tomb);
            }
            Err(_) => {
                let _ = fs::remove_file(self.lock_dir.join("owner"));
                let _ = fs::remove_dir(&self.lock_dir);
            }
        }
        let _ = FileExt::unlock(&self.owner);
    }
}

pub fn lock_dir_of(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// `.F.lock.<what>-<random>` beside `F.lock`: a name no other lock uses and the temp sweep
/// knows (see `fsio::sweep_temp_files`).
fn sibling(lock_dir: &Path, what: &str) -> PathBuf {
    let name = lock_dir.file_name().unwrap_or_default().to_string_lossy();
    lock_dir.with_file_name(format!(
        ".{name}.{what}{}{}-{}",
        fsio::TEMP_MARK,
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

fn gate_path(target: &Path) -> PathBuf {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    target.with_file_name(format!(".{name}.gate"))
}

/// Takes the gate, waiting in the kernel's queue until `give_up_after` has passed since
/// `start`; then gives up and says which pid holds it.
fn take_gate(
    target: &Path,
    start: Instant,
    give_up_after: Duration,
    lock_dir: &Path,
) -> Result<File> {
    guard::check_dirs(target.parent().unwrap_or(Path::new("")))?;
    let path = gate_path(target);
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(fsio::NOFOLLOW)
            .open(&path)
            .map_err(Error::io("open lock gate", &path))
    };
    let gate = open()?;
    let gate = if FileExt::try_lock_exclusive(&gate).map_err(Error::io("lock", &path))? {
        gate
    } else {
        // Someone else is in. A helper thread waits in the queue; if we give up first, it
        // drops the gate the moment it gets it, so nobody is left holding it for us.
        let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<File>>();
        std::thread::spawn(move || {
            let _ = tx.send(FileExt::lock_exclusive(&gate).map(|()| gate));
        });
        let shown = lock_dir.with_extension("").display().to_string();
        let say_at = SAY_WAITING_AFTER.saturating_sub(start.elapsed());
        let mut answer = rx.recv_timeout(say_at);
        if answer.is_err() {
            eprintln!("swarm: waiting for lock on {shown}");
            answer = rx.recv_timeout(give_up_after.saturating_sub(start.elapsed()));
        }
        match answer {
            Ok(taken) => taken.map_err(Error::io("lock", &path))?,
            Err(_) => {
                // The gate holder is almost always the lock's owner, whose file names it.
                let holder = fs::read(lock_dir.join("owner"))
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .and_then(|v| v["pid"].as_u64())
                    .map_or("another swarm process".to_string(), |pid| {
                        format!("swarm process {pid} (stopped or stuck?)")
                    });
                return Err(Error::LockTimeout {
                    path: lock_dir.to_path_buf(),
                    waited_ms: start.elapsed().as_millis(),
                    holder,
                });
            }
        }
    };
    Ok(gate)
}

/// Builds a lock directory with a flocked owner file under a temp name and renames it to
/// `lock_dir` if nothing is there. `None` if a lock directory exists. Where the file system
/// cannot rename without replacing, falls back to `mkdir` and installing the owner after it.
fn try_take_dir(lock_dir: &Path) -> Result<Option<File>> {
    let staged = sibling(lock_dir, "new");
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&staged)
        .map_err(Error::io("create lock directory", &staged))?;
    let owner = match install_owner(&staged) {
        Ok(f) => f,
        Err(e) => {
            let _ = fs::remove_dir_all(&staged);
            return Err(Error::io("write lock owner in", lock_dir)(e));
        }
    };
    let placed = rustix::fs::renameat_with(
        rustix::fs::CWD,
        &staged,
        rustix::fs::CWD,
        lock_dir,
        rustix::fs::RenameFlags::NOREPLACE,
    );
    match placed {
        Ok(()) => Ok(Some(owner)),
        Err(e) => {
            let _ = fs::remove_file(staged.join("owner"));
            let _ = fs::remove_dir(&staged);
            match e {
                rustix::io::Errno::EXIST | rustix::io::Errno::NOTEMPTY => Ok(None),
                rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS => try_mkdir_dir(lock_dir),
                e => Err(Error::io("create lock directory", lock_dir)(e.into())),
            }
        }
    }
}

/// A fresh owner file in `dir`, flocked before it appears under its name, so nobody can open
/// `owner` and find it unlocked while we live.
fn install_owner(dir: &Path) -> std::io::Result<File> {
    let tmp = dir.join(format!("owner.tmp-{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    if !FileExt::try_lock_exclusive(&f)? {
        let _ = fs::remove_file(&tmp);
        return Err(std::io::Error::other(
            "fresh owner file is locked by someone else",
        ));
    }
    writeln!(
        f,
        "{{\"pid\": {}, \"acquiredAt\": {}}}",
        std::process::id(),
        now_ms()
    )?;
    fs::rename(&tmp, dir.join("owner")).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })?;
    Ok(f)
}

/// The `mkdir` way, for file systems without `RENAME_NOREPLACE`: a kill between the `mkdir` and
/// the owner's rename leaves `owner.tmp-<pid>`, which [`break_if_dead_or_stale`] recognises.
fn try_mkdir_dir(lock_dir: &Path) -> Result<Option<File>> {
    match fs::DirBuilder::new().mode(0o700).create(lock_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(Error::io("create lock directory", lock_dir)(e)),
    }
    install_owner(lock_dir).map(Some).map_err(|e| {
        let _ = fs::remove_dir_all(lock_dir);
        Error::io("write lock owner in", lock_dir)(e)
    })
}

/// Breaks the lock when its holder is provably dead (owner file present and unlocked, or a
/// half-installed owner left by a swarm process) or, with no owner file, when the directory is
/// older than Claude Code's 10 s. Returns whether it broke. Called only while holding the gate.
fn break_if_dead_or_stale(lock_dir: &Path) -> Result<bool> {
    let owner_path = lock_dir.join("owner");
    match File::open(&owner_path) {
        Ok(owner) => {
            if !FileExt::try_lock_exclusive(&owner).map_err(Error::io("lock", &owner_path))? {
                return Ok(false); // the holder is alive
            }
            // We hold the dead owner's flock, so no other breaker can act on this inode now.
            // Break only if the directory still belongs to that dead owner.
            let held = owner
                .metadata()
                .map_err(Error::io("inspect", &owner_path))?;
            match fs::metadata(&owner_path) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    remove_lock_dir(lock_dir)?;
                    Ok(true)
                }
                _ => Ok(true), // it changed hands meanwhile; just try again
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // `owner.tmp-<pid>` without `owner`: a swarm process was killed while installing its
            // owner file. It cannot be alive: a live swarm holder (or installer) holds the gate,
            // and so do we. Claude Code never writes such a file.
            if half_installed(lock_dir)? {
                remove_lock_dir(lock_dir)?;
                return Ok(true);
            }
            let modified = match fs::metadata(lock_dir).and_then(|m| m.modified()) {
                Ok(t) => t,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
                Err(e) => return Err(Error::io("inspect", lock_dir)(e)),
            };
            let age = SystemTime::now()
                .duration_since(modified)
                .unwrap_or_default();
            if age > STALE_AFTER {
                remove_lock_dir(lock_dir)?;
                return Ok(true);
            }
            Ok(false)
        }
        Err(e) => Err(Error::io("open", &owner_path)(e)),
    }
}

/// Whether `lock_dir` holds a swarm owner file that was never renamed into place.
fn half_installed(lock_dir: &Path) -> Result<bool> {
    let entries = match fs::read_dir(lock_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("list", lock_dir)(e)),
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("owner.tmp-")))
}

/// Renames the lock directory out of the way (atomic), then deletes it.
fn remove_lock_dir(lock_dir: &Path) -> Result<()> {
    let mut tomb = lock_dir.as_os_str().to_owned();
    tomb.push(format!(
        ".broken-{}-{}",
        std::process::id(),
        BREAK_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    match fs::rename(lock_dir, &tomb) {
        Ok(()) => {
            let _ = fs::remove_dir_all(&tomb);
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("break stale lock", lock_dir)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_creates_and_removes_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        {
            let _l = FileLock::acquire(&target).unwrap();
            assert!(dir.path().join("inbox.json.lock/owner").exists());
        }
        assert!(!dir.path().join("inbox.json.lock").exists());
    }

    #[test]
    fn a_fresh_ownerless_lock_directory_is_honoured() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        fs::create_dir(lock_dir_of(&target)).unwrap();
        let err = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
    }

    #[test]
    fn an_ownerless_lock_older_than_ten_seconds_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let lock_dir = lock_dir_of(&target);
        fs::create_dir(&lock_dir).unwrap();
        let old = SystemTime::now() - Duration::from_secs(11);
        File::open(&lock_dir).unwrap().set_modified(old).unwrap();
        let _l = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap();
    }

    #[test]
    fn an_owner_file_that_was_never_installed_means_a_dead_holder() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let lock_dir = lock_dir_of(&target);
        fs::create_dir(&lock_dir).unwrap();
        fs::write(lock_dir.join("owner.tmp-4242"), "").unwrap();
        // Fresh, so Claude Code's 10 s rule alone would make this time out.
        let _l = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap();
    }

    #[test]
    fn an_unlocked_owner_file_means_a_dead_holder() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let lock_dir = lock_dir_of(&target);
        fs::create_dir(&lock_dir).unwrap();
        fs::write(lock_dir.join("owner"), "{\"pid\": 1}").unwrap();
        let _l = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap();
    }
}
