//! Fenced inbox locks: a stopped holder stalls the inbox for about [`STALL`], not 30 s, and
//! can never write over the holder that took its place (issue 21 item 7, PROTOCOL.md 3a).
//!
//! Safety comes from fencing, liveness from a heartbeat. A fenced holder writes the inbox `F`
//! only by creating a temp file inside its own lock directory (through the directory's fd) and
//! renaming the path `F.lock/<temp>` over `F`. A taker first renames the stalled holder's
//! directory aside, so once taken over that path names nothing (or a directory without that
//! temp name) and the old holder's rename fails with ENOENT: [`Error::LockTakenOver`], on which
//! its commit starts again. Whether a rename lands is decided by the kernel in one system call,
//! so no clock and no pid is trusted for safety; the clock only decides when to try.
//!
//! While a process holds a fenced lock, one thread of that process touches each held gate's
//! mtime every [`BEAT_EVERY`]. A stopped process's threads all stop, so its gate goes stale; a
//! slow but live holder keeps beating and is never taken over. This works across pid
//! namespaces (teammates run in bubblewrap), where `/proc/<pid>` says nothing.
//!
//! A waiter takes over only a holder whose record says it is fenced and runs on this machine
//! and boot, whose gate is older than [`STALL`] and whose record names the lock directory now
//! in place. Takers are serialised by a try-flock on `.F.takeover`, held only for the takeover
//! itself. Unfenced locks (tasks, roster, an older swarm's inbox lock, Claude Code's directory)
//! are never taken over.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use fs4::fs_std::FileExt;
use rustix::fs::{Mode, OFlags};

use super::record::{dir_id, read_record, OwnerRecord, RECORD_LEN};
use super::{gate_path, gave_up, lock_dir_of, open_gate, sibling, take_dir, FileLock};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::machine::{self, Whose};

/// How often a holder's heartbeat touches its gate.
const BEAT_EVERY: Duration = Duration::from_millis(200);
/// A fenced holder whose gate is older than this is taken to be stopped. Ten missed beats: a
/// holder on a loaded machine whose heartbeat thread waits this long for a core is taken over
/// needlessly, which costs it a retry, never a write (its rename is fenced).
pub(crate) const STALL: Duration = Duration::from_secs(2);
/// How often a blocked waiter looks whether the gate was replaced or went stale.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// What a fenced lock holds beyond the plain lock: an fd of its own lock directory (temp files
/// are created through it, so they land in that directory wherever it was moved) and its beat.
#[derive(Debug)]
pub(super) struct Fence {
    dir: OwnedFd,
    beat: u64,
}

impl Drop for Fence {
    fn drop(&mut self) {
        let mut beats = beats();
        beats.gates.retain(|(id, _)| *id != self.beat);
    }
}

struct Beats {
    gates: Vec<(u64, File)>,
    running: bool,
}

static BEATS: Mutex<Beats> = Mutex::new(Beats {
    gates: Vec::new(),
    running: false,
});
static BEAT_IDS: AtomicU64 = AtomicU64::new(0);

fn beats() -> std::sync::MutexGuard<'static, Beats> {
    BEATS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `gate` with this process's heartbeat thread, starting it if it is not running.
fn beat(gate: &File) -> std::io::Result<u64> {
    let id = BEAT_IDS.fetch_add(1, Ordering::Relaxed);
    let dup = gate.try_clone()?;
    let mut held = beats();
    held.gates.push((id, dup));
    if !held.running {
        held.running = true;
        // Sleeps first: writing the record in the gate was the holder's first sign of life,
        // and a lock held for milliseconds (most are) then costs no touch at all, which every
        // process watching the inbox directory would be woken by.
        std::thread::spawn(|| loop {
            std::thread::sleep(BEAT_EVERY);
            let mut beats = beats();
            if beats.gates.is_empty() {
                beats.running = false;
                return;
            }
            let now = SystemTime::now();
            for (_, gate) in &beats.gates {
                let _ = gate.set_modified(now);
            }
        });
    }
    Ok(id)
}

impl FileLock {
    /// [`FileLock::acquire`] for an inbox: the lock is fenced and beats, and a holder stalled
    /// past [`STALL`] is taken over instead of waited for.
    pub fn acquire_fenced(target: &Path) -> Result<FileLock> {
        let start = Instant::now();
        let mut said_waiting = false;
        loop {
            let gate = open_gate(target)?;
            let path = gate_path(target);
            if FileExt::try_lock_exclusive(&gate).map_err(Error::io("lock", &path))? {
                return fenced(take_dir(
                    gate,
                    lock_dir_of(target),
                    start,
                    super::GIVE_UP_AFTER,
                )?);
            }
            let ino = gate.metadata().map(|m| m.ino()).ok();
            let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<File>>();
            std::thread::spawn(move || {
                let _ = tx.send(FileExt::lock_exclusive(&gate).map(|()| gate));
            });
            loop {
                match rx.recv_timeout(POLL_EVERY) {
                    Ok(taken) => {
                        let gate = taken.map_err(Error::io("lock", &path))?;
                        return fenced(take_dir(
                            gate,
                            lock_dir_of(target),
                            start,
                            super::GIVE_UP_AFTER,
                        )?);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                }
                if let Some(lock) = FileLock::take_over(target)? {
                    return Ok(lock);
                }
                let waited = start.elapsed();
                if waited > super::GIVE_UP_AFTER {
                    return Err(gave_up(target, waited));
                }
                if !said_waiting && waited > super::SAY_WAITING_AFTER {
                    eprintln!("swarm: waiting for lock on {}", target.display());
                    said_waiting = true;
                }
                // A taker replaced the gate: the one we queue on is the stopped holder's.
                let now = fs::symlink_metadata(&path).map(|m| m.ino()).ok();
                if now != ino {
                    break;
                }
            }
        }
    }

    /// [`FileLock::try_acquire`], fenced.
    pub fn try_acquire_fenced(target: &Path) -> Result<Option<FileLock>> {
        FileLock::try_acquire(target)?.map(fenced).transpose()
    }

    /// Takes the lock from a fenced holder on this machine whose gate is older than [`STALL`]
    /// (see the module doc); `None` when there is nothing to take over or another waiter is
    /// taking over now.
    pub fn take_over(target: &Path) -> Result<Option<FileLock>> {
        let lock_dir = lock_dir_of(target);
        // Judged once cheaply, then again serialised: two waiters never both take over.
        if judge(target, &lock_dir)?.is_none() {
            return Ok(None);
        }
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let serial = target.with_file_name(format!(".{name}.takeover"));
        let serial = fsio::open_or_create(&serial)?;
        if !FileExt::try_lock_exclusive(&serial).unwrap_or(false) {
            return Ok(None);
        }
        let Some((record, stalled)) = judge(target, &lock_dir)? else {
            return Ok(None);
        };
        let aside = sibling(&lock_dir, "aside");
        match fs::rename(&lock_dir, &aside) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("take over the lock", &lock_dir)(e)),
        }
        // What we moved is not what we judged (it was replaced in between): put it back.
        if !dir_id(&aside).is_ok_and(|id| record.dir.same(&id)) {
            let _ = rustix::fs::renameat_with(
                rustix::fs::CWD,
                &aside,
                rustix::fs::CWD,
                &lock_dir,
                rustix::fs::RenameFlags::NOREPLACE,
            );
            return Ok(None);
        }
        // A new gate, flocked by us before it is in place, so waiters that reopen queue on it.
        let staged = sibling(&lock_dir, "gate");
        let new_gate = fsio::create_new(&staged)?;
        FileExt::lock_exclusive(&new_gate).map_err(Error::io("lock", &staged))?;
        if let Err(e) = fs::rename(&staged, gate_path(target)) {
            let _ = fs::remove_file(&staged);
            return Err(Error::io("take over the lock", &lock_dir)(e));
        }
        let lock = fenced(take_dir(
            new_gate,
            lock_dir,
            Instant::now(),
            super::GIVE_UP_AFTER,
        )?)?;
        let _ = fs::remove_dir_all(&aside);
        eprintln!(
            "swarm: took over the lock on {} from swarm process {} (no heartbeat for {} ms)",
            target.display(),
            record.pid,
            stalled.as_millis()
        );
        Ok(Some(lock))
    }

    /// Replaces `target` (the file this lock guards) with `bytes`: fenced when the lock is
    /// (see the module doc), otherwise as [`fsio::write_atomic`] does.
    pub(crate) fn write(&self, target: &Path, bytes: &[u8]) -> Result<()> {
        let Some(fence) = &self.fence else {
            return fsio::write_atomic(target, bytes);
        };
        fsio::check_regular(target)?;
        fsio::sweep_once(target.parent().unwrap_or(Path::new(".")));
        let name = format!(
            ".{}{}{}-{}",
            target.file_name().unwrap_or_default().to_string_lossy(),
            fsio::TEMP_MARK,
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        );
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let taken_over = || Error::LockTakenOver {
            path: self.lock_dir.clone(),
        };
        let fd = match rustix::fs::openat(
            &fence.dir,
            &name,
            flags | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Err(taken_over()),
            Err(e) => return Err(Error::io("create", self.lock_dir.join(&name))(e.into())),
        };
        let tmp = self.lock_dir.join(&name);
        let result = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes).map_err(Error::io("write", &tmp))?;
            file.sync_all().map_err(Error::io("sync", &tmp))?;
            stop_here_seam();
            match rustix::fs::rename(&tmp, target) {
                Ok(()) => Ok(()),
                Err(rustix::io::Errno::NOENT) => Err(taken_over()),
                Err(e) => Err(Error::io("replace", target)(e.into())),
            }
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&fence.dir, &name, rustix::fs::AtFlags::empty());
            return result;
        }
        fsio::sync_dir(target.parent().unwrap_or(Path::new(".")));
        Ok(())
    }

    /// Moves `target` (the file this lock guards, unreadable: `why`) aside to a fresh
    /// `.corrupt-<ms>` name. Fenced, it copies the file there and then replaces it with an empty
    /// array through [`FileLock::write`]: a rename of `target` itself would move a taker's good
    /// file aside if this holder was taken over meanwhile.
    pub(crate) fn quarantine(&self, target: &Path, why: &str) -> Result<()> {
        if self.fence.is_none() {
            return fsio::quarantine(target, why).map(drop);
        }
        let aside = fsio::quarantine_target(target);
        let copied = (|| {
            let Some(mut from) = fsio::open_read(target)? else {
                return Ok(false);
            };
            let mut to = fsio::create_new(&aside)?;
            std::io::copy(&mut from, &mut to).map_err(Error::io("quarantine", target))?;
            to.sync_all().map_err(Error::io("sync", &aside))?;
            Ok(true)
        })();
        match copied {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => {
                let _ = fs::remove_file(&aside);
                return Err(e);
            }
        }
        if let Err(e) = self.write(target, b"[]\n") {
            let _ = fs::remove_file(&aside);
            return Err(e);
        }
        fsio::said_quarantined(target, why, &aside);
        Ok(())
    }

    /// Whether the lock directory in place is still the one this lock placed (a fenced lock
    /// taken over is not); an unfenced lock always says yes.
    pub(super) fn still_ours(&self) -> bool {
        let Some(fence) = &self.fence else {
            return true;
        };
        let (Ok(held), Ok(there)) = (
            rustix::fs::fstat(&fence.dir),
            rustix::fs::lstat(&self.lock_dir),
        ) else {
            return false;
        };
        (held.st_ino, held.st_dev) == (there.st_ino, there.st_dev)
    }
}

/// Makes `lock` fenced: records so in the gate, opens its directory and starts its beat.
fn fenced(mut lock: FileLock) -> Result<FileLock> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::open(&lock.lock_dir, flags, Mode::empty())
        .map_err(|e| Error::io("open lock directory", &lock.lock_dir)(e.into()))?;
    if let Some(mut record) = read_record(&lock.gate) {
        record.fenced = true;
        let mut bytes = serde_json::to_vec(&record)
            .map_err(std::io::Error::other)
            .map_err(Error::io(
                "record the lock owner in the gate of",
                &lock.lock_dir,
            ))?;
        bytes.resize(RECORD_LEN - 1, b' ');
        bytes.push(b'\n');
        std::os::unix::fs::FileExt::write_all_at(&lock.gate, &bytes, 0).map_err(Error::io(
            "record the lock owner in the gate of",
            &lock.lock_dir,
        ))?;
    }
    let beat = beat(&lock.gate).map_err(Error::io("lock", &lock.lock_dir))?;
    lock.fence = Some(Fence { dir, beat });
    Ok(lock)
}

/// The record of a stalled fenced holder on this machine whose directory is in place, and how
/// long its gate has not been touched; `None` if there is nothing to take over.
fn judge(target: &Path, lock_dir: &Path) -> Result<Option<(OwnerRecord, Duration)>> {
    let gate = open_gate(target)?;
    // Free: the ordinary way takes it, and breaks a dead holder's directory.
    if FileExt::try_lock_exclusive(&gate).unwrap_or(true) {
        return Ok(None);
    }
    let Some(stalled) = stalled_for(&gate) else {
        return Ok(None);
    };
    let Some(record) = read_record(&gate) else {
        return Ok(None);
    };
    let ours = record.fenced && machine::whose(record.machine.as_ref()) == Whose::Here;
    if !ours || !dir_id(lock_dir).is_ok_and(|id| record.dir.same(&id)) {
        return Ok(None);
    }
    Ok(Some((record, stalled)))
}

/// How long the gate has not been touched, if longer than [`STALL`].
fn stalled_for(gate: &File) -> Option<Duration> {
    let modified = gate.metadata().and_then(|m| m.modified()).ok()?;
    let age = SystemTime::now().duration_since(modified).ok()?;
    (age > STALL).then_some(age)
}

/// `SWARM_STOP_WHILE_LOCKED=1` (with the `seams` feature only): the first fenced write of this
/// process stops the process (SIGSTOP to itself) holding the lock, just before its rename, as
/// a writer stopped by its terminal or a debugger would be.
fn stop_here_seam() {
    use std::sync::atomic::AtomicBool;
    static DONE: AtomicBool = AtomicBool::new(false);
    if cfg!(feature = "seams")
        && std::env::var("SWARM_STOP_WHILE_LOCKED").as_deref() == Ok("1")
        && !DONE.swap(true, Ordering::Relaxed)
    {
        let me = rustix::process::getpid();
        let _ = rustix::process::kill_process(me, rustix::process::Signal::STOP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As if `lock`'s process stopped: its beat ends and its gate looks `ago` old.
    fn stop(lock: &FileLock, target: &Path, ago: Duration) {
        let id = lock.fence.as_ref().unwrap().beat;
        beats().gates.retain(|(i, _)| *i != id);
        let gate = File::options().write(true).open(gate_path(target)).unwrap();
        gate.set_modified(SystemTime::now() - ago).unwrap();
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(fsio::TEMP_MARK) || n.ends_with(".lock"))
            .collect()
    }

    #[test]
    fn a_fenced_holders_write_after_takeover_fails_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        fs::write(&target, b"[]\n").unwrap();
        let stopped = FileLock::acquire_fenced(&target).unwrap();
        stopped.write(&target, b"[1]\n").unwrap();
        stop(&stopped, &target, STALL * 2);
        let taker = FileLock::take_over(&target)
            .unwrap()
            .expect("a stalled holder");
        taker.write(&target, b"[2]\n").unwrap();
        let err = stopped.write(&target, b"[3]\n").unwrap_err();
        assert!(matches!(err, Error::LockTakenOver { .. }), "{err}");
        assert_eq!(fs::read(&target).unwrap(), b"[2]\n");
        drop(stopped);
        assert!(lock_dir_of(&target).exists(), "the taker's directory stays");
        assert!(
            FileLock::try_acquire(&target).unwrap().is_none(),
            "still held"
        );
        drop(taker);
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        let _again = FileLock::try_acquire_fenced(&target).unwrap().unwrap();
    }

    /// The control: a holder that keeps beating is never taken over, however long it holds.
    #[test]
    fn a_slow_but_live_holder_is_not_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let slow = FileLock::acquire_fenced(&target).unwrap();
        std::thread::sleep(STALL + Duration::from_millis(500));
        assert!(FileLock::take_over(&target).unwrap().is_none());
        slow.write(&target, b"[1]\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"[1]\n");
    }

    /// Tasks and the roster are locked unfenced: however stale, their holder keeps the lock.
    #[test]
    fn an_unfenced_holder_is_never_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("task.json");
        let plain = FileLock::acquire(&target).unwrap();
        let gate = File::options()
            .write(true)
            .open(gate_path(&target))
            .unwrap();
        gate.set_modified(SystemTime::now() - STALL * 5).unwrap();
        assert!(FileLock::take_over(&target).unwrap().is_none());
        assert!(plain.still_ours());
    }

    /// A blocking waiter (mark delivered) takes over too, instead of waiting 30 s.
    #[test]
    fn a_blocking_waiter_takes_over_a_stalled_holder() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let stopped = FileLock::acquire_fenced(&target).unwrap();
        stop(&stopped, &target, Duration::ZERO);
        let start = Instant::now();
        let taker = FileLock::acquire_fenced(&target).unwrap();
        assert!(start.elapsed() < STALL * 3, "{:?}", start.elapsed());
        taker.write(&target, b"[2]\n").unwrap();
        assert!(stopped.write(&target, b"[3]\n").is_err());
        assert_eq!(fs::read(&target).unwrap(), b"[2]\n");
    }
}
