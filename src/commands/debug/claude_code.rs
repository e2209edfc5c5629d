//! Claude Code's inbox append, re-implemented: the other writer the fault suite races swarm's
//! against (`swarm debug cc-append`), and the benchmarks' baseline (`bench/`).
//!
//! Claude Code (2.1.x) locks an inbox with `proper-lockfile`: `mkdir F.lock`; an existing lock
//! older than 10 s is stale, removed, and the mkdir tried once more; otherwise the attempt fails
//! and `retry` waits 5, 10, 20, 40, 80, 100, 100, 100, 100, 100 ms between 11 attempts, then
//! gives up and the send fails. Holding the lock it reads the whole array (a file that does not
//! parse reads as empty), pushes the message and rewrites the file in place with
//! `writeFileSync` (truncate, write, no fsync), then removes the lock directory. This module
//! does exactly that, so a test can interleave the two implementations on one inbox and a
//! benchmark can put them side by side on the same machine in the same run. It is built only
//! with the `seams` feature, like the rest of `swarm debug`.

use std::fs::{self, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::store::mailbox::InboxMessage;

/// `proper-lockfile`'s default staleness.
const STALE_AFTER: Duration = Duration::from_secs(10);
/// Claude Code's inbox lock options: `retries: 10, minTimeout: 5, maxTimeout: 100` (factor 2).
const RETRIES: u32 = 10;
const MIN_TIMEOUT_MS: u64 = 5;
const MAX_TIMEOUT_MS: u64 = 100;

/// The wait before attempt `n + 1` (n from 0), as the `retry` package computes it unrandomized.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(
        MIN_TIMEOUT_MS
            .saturating_mul(1 << n.min(20))
            .min(MAX_TIMEOUT_MS),
    )
}

/// A held `F.lock` directory; removed on drop.
struct DirLock {
    dir: PathBuf,
}

impl DirLock {
    /// Takes the lock on `target` or gives up after the last retry (`Ok(None)`).
    fn acquire(target: &Path) -> io::Result<Option<DirLock>> {
        let mut dir = target.as_os_str().to_owned();
        dir.push(".lock");
        let dir = PathBuf::from(dir);
        for attempt in 0..=RETRIES {
            if try_mkdir(&dir, true)? {
                return Ok(Some(DirLock { dir }));
            }
            if attempt < RETRIES {
                std::thread::sleep(backoff(attempt));
            }
        }
        Ok(None)
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}

/// One `acquireLock` of proper-lockfile: mkdir; on EEXIST, a stale lock is removed and the mkdir
/// tried once more with staleness off.
fn try_mkdir(dir: &Path, check_stale: bool) -> io::Result<bool> {
    match fs::create_dir(dir) {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !check_stale {
        return Ok(false);
    }
    let modified = match fs::metadata(dir).and_then(|m| m.modified()) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return try_mkdir(dir, false),
        Err(e) => return Err(e),
    };
    let age = SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    if age <= STALE_AFTER {
        return Ok(false);
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    try_mkdir(dir, false)
}

/// Appends `message` the Claude Code way. `Ok(false)`: the lock was not had in 11 tries and
/// the message was dropped (Claude Code reports the send as failed).
pub fn append(inbox: &Path, message: &InboxMessage) -> io::Result<bool> {
    match OpenOptions::new().write(true).create_new(true).open(inbox) {
        Ok(mut f) => f.write_all(b"[]")?,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let Some(_lock) = DirLock::acquire(inbox)? else {
        return Ok(false);
    };
    let mut messages = read(inbox);
    messages.push(serde_json::to_value(message).map_err(io::Error::other)?);
    let bytes = serde_json::to_vec_pretty(&messages).map_err(io::Error::other)?;
    fs::write(inbox, bytes)?;
    Ok(true)
}

/// Claude Code's `readMailbox`: the parsed array, or empty when the file is missing or does not
/// parse (which is how a torn read turns into a lost inbox on the next write).
pub fn read(inbox: &Path) -> Vec<Value> {
    fs::read(inbox)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::AgentName;

    #[test]
    fn backoff_doubles_from_5_to_100_ms_over_ten_retries() {
        let waits: Vec<u64> = (0..RETRIES)
            .map(|n| backoff(n).as_millis() as u64)
            .collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 100, 100, 100, 100, 100]);
    }

    #[test]
    fn a_held_lock_makes_the_send_fail_and_a_stale_one_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("coder.json");
        let lock = dir.path().join("coder.json.lock");
        fs::create_dir(&lock).unwrap();
        let message = InboxMessage::new(&AgentName::lead(), "hi");
        assert!(
            !append(&inbox, &message).unwrap(),
            "a fresh lock is honoured"
        );
        assert_eq!(read(&inbox), Vec::<Value>::new());
        let old = SystemTime::now() - Duration::from_secs(11);
        fs::File::open(&lock).unwrap().set_modified(old).unwrap();
        assert!(append(&inbox, &message).unwrap(), "a stale lock is broken");
        assert_eq!(read(&inbox).len(), 1);
        assert!(!lock.exists());
    }

    #[test]
    fn an_unparseable_inbox_is_read_as_empty_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("coder.json");
        fs::write(&inbox, "[{\"from\": ").unwrap();
        assert!(append(&inbox, &InboxMessage::new(&AgentName::lead(), "hi")).unwrap());
        assert_eq!(read(&inbox).len(), 1, "the torn content is gone");
    }
}
