//! The owner record a swarm lock holder writes into the gate, and the identity of the lock
//! directory it names.
//!
//! The record is what lets a contender holding the gate tell a dead swarm holder's directory
//! (named here: break it at once) from Claude Code's (named nowhere: honour it until 10 s
//! stale) and from another machine's holder (named here with a host that is not this one: wait,
//! never break). It is padded to a fixed length so one `pwrite` replaces whatever was there.

use std::fs::{self, File};
use std::os::unix::fs::{FileExt as _, MetadataExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::store::fsio::now_ms;
use crate::store::machine::{self, Machine, Whose};

/// The owner record is written at offset 0 padded to this length, so one `pwrite` replaces it
/// whatever was there (host names are cut to 64 bytes, so a record fits).
pub(super) const RECORD_LEN: usize = 320;
/// `STATX_BTIME`, which rustix accepts as an externally defined bit.
const STATX_BTIME: u32 = 0x800;

/// Which directory a swarm holder placed: enough to tell it from a later one with the same name
/// (an inode number alone can be reused by the next `mkdir`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct DirId {
    pub(super) ino: u64,
    pub(super) dev: u64,
    /// Birth time in ns, 0 where the file system does not keep one.
    pub(super) born: u128,
}

/// What the gate says while a swarm process holds the lock.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct OwnerRecord {
    pub(super) pid: u32,
    #[serde(rename = "acquiredAt")]
    pub(super) acquired_at: u64,
    pub(super) dir: DirId,
    /// Where the holder runs; missing in records of swarms before remote hosts.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub(super) machine: Option<Machine>,
    /// A fenced inbox lock (`fence.rs`), which a waiter may take over once it stalls.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) fenced: bool,
}

impl OwnerRecord {
    /// `swarm process PID`, with its host when that is not this machine.
    pub(super) fn holder(&self) -> String {
        match self
            .machine
            .as_ref()
            .filter(|m| m.whose() == Whose::Elsewhere)
        {
            Some(m) => format!("swarm process {} on host {}", self.pid, m.label()),
            None => format!("swarm process {} (stopped or stuck?)", self.pid),
        }
    }
}

/// Whether `record` is another machine's and names the lock directory now in place.
pub(super) fn names_elsewhere(record: &OwnerRecord, lock_dir: &Path) -> bool {
    machine::whose(record.machine.as_ref()) == Whose::Elsewhere
        && dir_id(lock_dir).is_ok_and(|id| record.dir.same(&id))
}

pub(super) fn write_record(gate: &File, dir: DirId) -> std::io::Result<()> {
    let record = OwnerRecord {
        pid: std::process::id(),
        acquired_at: now_ms(),
        dir,
        machine: Some(Machine::this().clone()),
        fenced: false,
    };
    let mut bytes = serde_json::to_vec(&record).map_err(std::io::Error::other)?;
    bytes.resize(RECORD_LEN - 1, b' ');
    bytes.push(b'\n');
    gate.write_all_at(&bytes, 0)
}

pub(super) fn read_record(gate: &File) -> Option<OwnerRecord> {
    let mut buf = [0u8; RECORD_LEN];
    let n = gate.read_at(&mut buf, 0).ok()?;
    serde_json::from_slice(buf[..n].trim_ascii()).ok()
}

impl DirId {
    pub(super) fn same(&self, other: &DirId) -> bool {
        self.ino == other.ino && self.dev == other.dev && self.born == other.born
    }
}

/// The identity of the directory at `path` (not following a symlink).
pub(super) fn dir_id(path: &Path) -> std::io::Result<DirId> {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    let mask = StatxFlags::INO | StatxFlags::from_bits_retain(STATX_BTIME);
    match statx(CWD, path, AtFlags::SYMLINK_NOFOLLOW, mask) {
        Ok(st) => Ok(DirId {
            ino: st.stx_ino,
            dev: (u64::from(st.stx_dev_major) << 32) | u64::from(st.stx_dev_minor),
            born: if st.stx_mask & STATX_BTIME != 0 {
                st.stx_btime.tv_sec as u128 * 1_000_000_000 + u128::from(st.stx_btime.tv_nsec)
            } else {
                0
            },
        }),
        Err(rustix::io::Errno::NOSYS) => {
            let meta = fs::symlink_metadata(path)?;
            Ok(DirId {
                ino: meta.ino(),
                dev: meta.dev(),
                born: 0,
            })
        }
        Err(e) => Err(e.into()),
    }
}
