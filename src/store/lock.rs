//! File locks that exclude both swarm and Claude Code writers (PROTOCOL.md section 3).
//!
//! Claude Code locks a file `F` by creating the directory `F.lock` and calls it stale after 10 s.
//! swarm takes the same directory lock, so a real `claude` teammate and a swarm process never
//! write one inbox at once. Before the directory, swarm processes flock a gate: the hidden
//! sibling file `.F.gate`. Among swarm processes the kernel queues the waiters, so nobody sleeps
//! in a backoff loop while the lock sits free, and the directory is almost never contended.
//!
//! The gate also carries the owner record (`record`). Holding the gate, a swarm process builds the lock
//! directory under a temp name, writes the pid and that directory's identity (inode, device,
//! birth time) into the gate, and renames the directory into place without replacing anything
//! (`RENAME_NOREPLACE`); releasing, it removes the directory and empties the gate. So a swarm
//! holder killed at any instant leaves either no `F.lock` or one the gate's record names, and a
//! contender that holds the gate knows that record's writer is gone (it would hold the gate
//! otherwise) and breaks the lock at once. A lock directory the record does not name is Claude
//! Code's and is honoured until it is 10 s stale. That is three namespace operations per lock
//! (mkdir, rename, rmdir) where an owner file inside the directory took seven, and there is no
//! instant at which a dead swarm holder's directory looks like Claude Code's.
//!
//! A gate can be deleted while its lock is held; the next contender then makes a new, empty one
//! and finds a directory no record names. So the holder also flocks the lock directory itself
//! (`dir_flock`), and a directory is broken only when that flock is free: a directory whose
//! flock is held has a live swarm owner and is never broken, whatever its age; one seen held
//! and then free lost its owner and is broken at once; only one never held falls under Claude
//! Code's 10 s rule.
//!
//! The gate is opened without `O_CREAT` (it exists after the first lock), which keeps the
//! directory's inode lock out of the common path. A waiter for the gate has a deadline and, when
//! it gives up (a stopped holder), names the pid from the record.
//!
//! The record also names the holder's machine (host and boot id, `store::machine`). On a store
//! that several hosts share, a free gate here proves nothing about a holder on another host
//! (its flock may never reach this one) and its clock is not ours, so a directory another
//! host's record names is waited for, never broken, not even after 10 s.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use fs4::fs_std::FileExt;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::guard;
use crate::store::machine::{self, Whose};

mod dir_flock;
mod fence;
mod record;

pub(crate) use fence::STALL;

use dir_flock::Owner;
use record::{dir_id, names_elsewhere, read_record, write_record, DirId, OwnerRecord};

/// Claude Code's staleness rule for a lock directory no swarm record names.
const STALE_AFTER: Duration = Duration::from_secs(10);
/// How long to wait for a live holder before giving up. Claude Code gives up after about half a
/// second and loses the write; swarm waits longer because a dead holder is noticed at once.
pub(crate) const GIVE_UP_AFTER: Duration = Duration::from_secs(30);
/// When a waiter says on stderr that it is waiting.
pub(crate) const SAY_WAITING_AFTER: Duration = Duration::from_secs(1);
static BREAK_COUNTER: AtomicU64 = AtomicU64::new(0);

/// An exclusive lock on a store file; released on drop.
#[derive(Debug)]
pub struct FileLock {
    lock_dir: PathBuf,
    gate: File,
    /// Our flock on the lock directory (`dir_flock`), let go after the directory is removed.
    _dir_flock: Option<OwnedFd>,
    /// Set on an inbox lock (`fence`): how its writes are fenced and its liveness shown.
    fence: Option<fence::Fence>,
}

impl FileLock {
    /// Locks `target` (a file that may not exist yet), waiting as long as a live holder needs.
    pub fn acquire(target: &Path) -> Result<FileLock> {
        Self::acquire_with(target, GIVE_UP_AFTER)
    }

    pub fn acquire_with(target: &Path, give_up_after: Duration) -> Result<FileLock> {
        let start = Instant::now();
        let lock_dir = lock_dir_of(target);
        let gate = take_gate(target, start, give_up_after)?;
        take_dir(gate, lock_dir, start, give_up_after)
    }

    /// The lock if no other swarm process holds the gate now (`None` if one does); a Claude
    /// Code holder of the directory is still waited for, as [`FileLock::acquire`] does.
    pub fn try_acquire(target: &Path) -> Result<Option<FileLock>> {
        let start = Instant::now();
        let gate = open_gate(target)?;
        if !FileExt::try_lock_exclusive(&gate).map_err(Error::io("lock", gate_path(target)))? {
            return Ok(None);
        }
        take_dir(gate, lock_dir_of(target), start, GIVE_UP_AFTER).map(Some)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // A fenced lock taken over leaves the directory in place alone: it is the taker's.
        if !self.still_ours() {
            return;
        }
        // The directory goes first: a kill between the two leaves a record naming a directory
        // that no longer exists, which breaks nothing.
        if let Err(e) = fs::remove_dir(&self.lock_dir) {
            if e.kind() != ErrorKind::NotFound {
                let _ = remove_lock_dir(&self.lock_dir);
            }
        }
        let _ = self.gate.set_len(0);
        // Closing the gate releases its flock.
    }
}

pub(crate) fn lock_dir_of(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// The error of a waiter for `target`'s lock that gave up after `waited`, naming the swarm
/// process the gate's record names, if any.
pub(crate) fn gave_up(target: &Path, waited: Duration) -> Error {
    let holder = fsio::open_read(&gate_path(target))
        .ok()
        .flatten()
        .and_then(|gate| read_record(&gate))
        .map_or("another swarm process".to_string(), |r| r.holder());
    Error::LockTimeout {
        path: lock_dir_of(target),
        waited_ms: waited.as_millis(),
        holder,
    }
}

/// `.F.lock.<what>.tmp-<pid>-<random>` beside `F.lock`: a name no other lock uses and the temp
/// sweep knows (see `fsio::sweep_temp_files`).
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

/// Opens the gate, creating it only when it is missing. A gate that is not a regular file (a
/// FIFO planted there) is moved aside like a corrupt file and replaced; one that is not ours or
/// has other links is refused, since the owner record is written into it.
fn open_gate(target: &Path) -> Result<File> {
    guard::check_dirs(target.parent().unwrap_or(Path::new("")))?;
    let path = gate_path(target);
    match fsio::open_or_create(&path) {
        Err(Error::NotARegularFile { found, .. }) => {
            fsio::quarantine(&path, &format!("it is a {found}"))?;
            fsio::open_or_create(&path)
        }
        other => other,
    }
}

/// Takes the gate, waiting in the kernel's queue until `give_up_after` has passed since
/// `start`; then gives up and says which pid holds it.
fn take_gate(target: &Path, start: Instant, give_up_after: Duration) -> Result<File> {
    let gate = open_gate(target)?;
    let path = gate_path(target);
    flock_within(gate, &path, target, start, give_up_after)?
        .ok_or_else(|| gave_up(target, start.elapsed()))
}

/// Flocks `file` (opened from `path`) exclusively, waiting in the kernel's queue until
/// `give_up_after` has passed since `start`, and saying after [`SAY_WAITING_AFTER`] that it
/// waits for the lock on `what`; `None` once it gave up. Never a wait without end: any process
/// that can open a store file can flock it, a contained teammate too.
pub(crate) fn flock_within(
    file: File,
    path: &Path,
    what: &Path,
    start: Instant,
    give_up_after: Duration,
) -> Result<Option<File>> {
    if FileExt::try_lock_exclusive(&file).map_err(Error::io("lock", path))? {
        return Ok(Some(file));
    }
    // Someone else is in. A helper thread waits in the queue; if we give up first, it drops the
    // file the moment it gets the lock, so nobody is left holding it for us.
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<File>>();
    std::thread::spawn(move || {
        let _ = tx.send(FileExt::lock_exclusive(&file).map(|()| file));
    });
    let say_at = SAY_WAITING_AFTER.saturating_sub(start.elapsed());
    let mut answer = rx.recv_timeout(say_at);
    if answer.is_err() {
        eprintln!("swarm: waiting for lock on {}", what.display());
        answer = rx.recv_timeout(give_up_after.saturating_sub(start.elapsed()));
    }
    match answer {
        Ok(taken) => taken.map(Some).map_err(Error::io("lock", path)),
        Err(_) => Ok(None),
    }
}

/// Holding the gate, places the lock directory, breaking a dead holder's and waiting out Claude
/// Code's (backoff 5 ms doubling to 100 ms, as Claude Code does).
fn take_dir(
    gate: File,
    lock_dir: PathBuf,
    start: Instant,
    give_up_after: Duration,
) -> Result<FileLock> {
    // The gate was free, so a record left in it is a dead holder's. Its directory is broken
    // before our own record replaces that one: killed in between, we would otherwise leave a
    // dead holder's directory that no record names.
    let dead = read_record(&gate);
    // The directory last seen flocked by a live swarm holder (`dir_flock`).
    let mut seen_held = None;
    if let Some(foreign) = dead.as_ref().filter(|r| names_elsewhere(r, &lock_dir)) {
        wait_for_foreign(foreign, &lock_dir, start, give_up_after)?;
    } else if dead.is_some() {
        break_if_dead_or_stale(dead.as_ref(), &lock_dir, &mut seen_held)?;
    }
    let mut backoff = Duration::from_millis(5);
    let mut said_waiting = false;
    loop {
        if let Some(dir_flock) = try_place_dir(&gate, &lock_dir)? {
            return Ok(FileLock {
                lock_dir,
                gate,
                _dir_flock: dir_flock,
                fence: None,
            });
        }
        if break_if_dead_or_stale(dead.as_ref(), &lock_dir, &mut seen_held)? {
            continue;
        }
        let waited = start.elapsed();
        if waited > give_up_after {
            return Err(Error::LockTimeout {
                path: lock_dir,
                waited_ms: waited.as_millis(),
                holder: "a process without a swarm owner record (Claude Code)".into(),
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

/// Builds the lock directory under a temp name, flocks it, records it in the gate and renames
/// it into place if nothing is there: `Ok(Some(flock))` when placed, `Ok(None)` if a lock
/// directory exists. Flocked before it is in place, so no contender ever sees our directory
/// unflocked while we live. Where the file system cannot rename without replacing, falls back
/// to `mkdir` and recording after it.
fn try_place_dir(gate: &File, lock_dir: &Path) -> Result<Option<Option<OwnedFd>>> {
    let staged = sibling(lock_dir, "new");
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&staged)
        .map_err(Error::io("create lock directory", &staged))?;
    let flock = dir_flock::hold(&staged);
    let recorded = dir_id(&staged).and_then(|id| write_record(gate, id));
    if let Err(e) = recorded {
        let _ = fs::remove_dir(&staged);
        return Err(Error::io("record the lock owner in the gate of", lock_dir)(
            e,
        ));
    }
    let placed = rustix::fs::renameat_with(
        rustix::fs::CWD,
        &staged,
        rustix::fs::CWD,
        lock_dir,
        rustix::fs::RenameFlags::NOREPLACE,
    );
    match placed {
        Ok(()) => Ok(Some(flock)),
        Err(e) => {
            let _ = fs::remove_dir(&staged);
            match e {
                rustix::io::Errno::EXIST | rustix::io::Errno::NOTEMPTY => Ok(None),
                rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS => {
                    try_mkdir_dir(gate, lock_dir)
                }
                e => Err(Error::io("create lock directory", lock_dir)(e.into())),
            }
        }
    }
}

/// The `mkdir` way, for file systems without `RENAME_NOREPLACE`: a kill between the `mkdir` and
/// the record leaves a directory that is honoured as Claude Code's for 10 s.
fn try_mkdir_dir(gate: &File, lock_dir: &Path) -> Result<Option<Option<OwnedFd>>> {
    match fs::DirBuilder::new().mode(0o700).create(lock_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(Error::io("create lock directory", lock_dir)(e)),
    }
    let flock = dir_flock::hold(lock_dir);
    dir_id(lock_dir)
        .and_then(|id| write_record(gate, id))
        .map(|()| Some(flock))
        .map_err(|e| {
            let _ = fs::remove_dir(lock_dir);
            Error::io("record the lock owner in the gate of", lock_dir)(e)
        })
}

/// Waits, holding the gate, until the directory another host's holder placed is gone (or
/// replaced), without writing our own record over theirs: that record is what keeps every later
/// contender on this host from breaking their lock on age.
fn wait_for_foreign(
    record: &OwnerRecord,
    lock_dir: &Path,
    start: Instant,
    give_up_after: Duration,
) -> Result<()> {
    let mut backoff = Duration::from_millis(5);
    while dir_id(lock_dir).is_ok_and(|id| record.dir.same(&id)) {
        let waited = start.elapsed();
        if waited > give_up_after {
            return Err(Error::LockTimeout {
                path: lock_dir.to_path_buf(),
                waited_ms: waited.as_millis(),
                holder: record.holder(),
            });
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(Duration::from_millis(100));
    }
    Ok(())
}

/// Breaks the lock when its holder is provably dead (`dead`, the record found in the gate when
/// we took it, names this directory; or we saw this directory flocked and it no longer is; or a
/// swarm owner file of the older layout is left unlocked or half installed) or, otherwise, when
/// the directory is older than Claude Code's 10 s. Never while a swarm holder flocks it (a
/// deleted gate does not make its live holder's directory Claude Code's). Returns whether it
/// broke (or the directory went away). Called only while holding the gate.
fn break_if_dead_or_stale(
    dead: Option<&OwnerRecord>,
    lock_dir: &Path,
    seen_held: &mut Option<DirId>,
) -> Result<bool> {
    let id = match dir_id(lock_dir) {
        Ok(id) => id,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(Error::io("inspect", lock_dir)(e)),
    };
    // We hold the gate, so whoever wrote this record does not: it died holding the lock (or
    // its machine rebooted since). Another machine's record is never broken here: see
    // `wait_for_foreign`, which the caller runs first.
    let named = dead.filter(|r| r.dir.same(&id));
    if named.is_some_and(|r| machine::whose(r.machine.as_ref()) == Whose::Elsewhere) {
        return Ok(false);
    }
    // A probe that cannot look (a file planted at the name) leaves the rules below to judge.
    let owner = match dir_flock::owner(lock_dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
        other => other.unwrap_or(Owner::Unknown),
    };
    if owner == Owner::Alive {
        *seen_held = Some(id);
        return Ok(false);
    }
    let owner_died = owner == Owner::None && seen_held.is_some_and(|s| s.same(&id));
    if named.is_some() || owner_died || older_layout_is_dead(lock_dir)? {
        remove_lock_dir(lock_dir)?;
        return Ok(true);
    }
    let modified = match fs::symlink_metadata(lock_dir).and_then(|m| m.modified()) {
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

/// A lock directory left by a swarm of the previous layout, which kept a flocked `owner` file
/// inside: dead if that file is unlocked or was never renamed into place (`owner.tmp-<pid>`).
fn older_layout_is_dead(lock_dir: &Path) -> Result<bool> {
    let entries = match fs::read_dir(lock_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("list", lock_dir)(e)),
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("owner.tmp-") {
            return Ok(true);
        }
        if name == "owner" {
            let path = entry.path();
            // Gone meanwhile: its holder is letting go, not dead.
            let Some(owner) = fsio::open_read(&path)? else {
                return Ok(false);
            };
            return FileExt::try_lock_exclusive(&owner).map_err(Error::io("lock", &path));
        }
    }
    Ok(false)
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
mod tests;
