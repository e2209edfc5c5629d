//! What swarm last wrote to an inbox: `teams/<team>/spool/<agent>.last-write`.
//!
//! A group commit appends to an array that can hold thousands of entries, and checking that
//! array by parsing it would cost more than the append. So after each write the lock holder
//! notes the file's identity (inode, device, size, mtime, ctime, a hash of its tail) and its
//! count of delivered entries. When the inbox still matches, nobody else has written it since:
//! the next commit splices without parsing. A write by anyone else (Claude Code, a hand edit, an
//! older swarm) changes the identity and forces one full parse with dedup by `msg_id`.
//!
//! It also lists the spool entries that write took in (`committed`). A holder killed after its
//! write but before removing those spool files leaves them behind; the next holder finds them
//! here and removes them without adding them twice, even if the inbox was rewritten since.
//!
//! The sidecar is only a hint: it is written in place without fsync, and a sidecar that is
//! missing, torn or stale reads as "no match", which costs one full parse and loses nothing.

use std::fs::{self, Metadata};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::fsio;

/// How much of the file's end the hash covers: every append and every rewrite of the array
/// changes its last bytes.
const TAIL: usize = 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Sidecar {
    ino: u64,
    dev: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    tail: u64,
    /// Delivered (`read: true`) entries in the file as written.
    pub(super) delivered: usize,
    /// Keys of the spool entries that write took in.
    pub(super) committed: Vec<String>,
    /// When the write was noted (Unix ms) and how long its commit took (us): whether a burst
    /// is on, for the next holder's linger.
    #[serde(default)]
    at_ms: u64,
    #[serde(default)]
    took_us: u64,
}

/// The sidecar of the inbox whose spool directory is `spool_dir`.
pub(super) fn path_for(spool_dir: &Path) -> PathBuf {
    let name = spool_dir.file_name().unwrap_or_default().to_string_lossy();
    spool_dir.with_file_name(format!("{name}.last-write"))
}

impl Sidecar {
    /// The sidecar for `bytes`, just written to a file whose metadata is `meta`.
    pub(super) fn of(
        meta: &Metadata,
        bytes: &[u8],
        delivered: usize,
        committed: Vec<String>,
    ) -> Sidecar {
        Sidecar {
            ino: meta.ino(),
            dev: meta.dev(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            tail: tail_hash(bytes),
            delivered,
            committed,
            at_ms: fsio::now_ms(),
            took_us: 0,
        }
    }

    pub(super) fn took(mut self, took: std::time::Duration) -> Sidecar {
        self.took_us = took.as_micros() as u64;
        self
    }

    /// During a burst (the last commit took in more than one entry and ended moments ago): how
    /// many senders are coming back with their next entry, and how long, at most, to wait for
    /// them (half the last commit's time, so waiting never costs more than it can save).
    pub(super) fn senders_coming_back(
        &self,
        at_most: std::time::Duration,
    ) -> Option<(usize, std::time::Duration)> {
        let took = std::time::Duration::from_micros(self.took_us);
        let since = fsio::now_ms().saturating_sub(self.at_ms);
        let recent = since <= (2 * took.as_millis() as u64).max(5);
        (self.committed.len() > 1 && recent)
            .then(|| (self.committed.len(), (took / 2).min(at_most)))
    }

    /// Whether the file with `meta` holding `bytes` is still exactly what this sidecar noted.
    pub(super) fn describes(&self, meta: &Metadata, bytes: &[u8]) -> bool {
        let now = Sidecar::of(meta, bytes, self.delivered, vec![]);
        (
            now.ino,
            now.dev,
            now.size,
            now.mtime_ns,
            now.ctime_ns,
            now.tail,
        ) == (
            self.ino,
            self.dev,
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.tail,
        ) && bytes.len() as u64 == self.size
    }

    /// The sidecar at `path`; `None` if missing or unreadable (which means "parse the inbox").
    pub(super) fn load(path: &Path) -> Option<Sidecar> {
        let mut file = fsio::open_read(path).ok()??;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes the sidecar to `path`. A failure only costs the next commit a full parse, so it
    /// is not an error, but a half-written sidecar must not survive as a match: it fails to
    /// parse, and on any error the file is removed.
    pub(super) fn save(&self, path: &Path) {
        let write = || -> Result<()> {
            let bytes = serde_json::to_vec(self).map_err(|source| Error::Json {
                path: path.to_path_buf(),
                source,
            })?;
            // Checked before it is cut short: a file that is not ours is never truncated.
            let mut file = fsio::open_or_create(path)?;
            file.set_len(0).map_err(Error::io("truncate", path))?;
            file.write_all(&bytes).map_err(Error::io("write", path))
        };
        let missing = |written: &Result<()>| matches!(written, Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound);
        let mut written = write();
        if missing(&written) {
            // The first write of this team's sidecars: make their directory.
            if let Some(parent) = path.parent() {
                if fsio::ensure_dir(parent).is_ok() {
                    written = write();
                }
            }
        }
        if written.is_err() && !missing(&written) {
            let _ = fs::remove_file(path);
        }
    }
}

/// FNV-1a of the last [`TAIL`] bytes and the length: stable across processes and builds.
fn tail_hash(bytes: &[u8]) -> u64 {
    let tail = &bytes[bytes.len().saturating_sub(TAIL)..];
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for b in tail.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidecar_matches_only_the_file_it_describes() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("coder.json");
        let side = path_for(&dir.path().join("spool/coder"));
        assert_eq!(side, dir.path().join("spool/coder.last-write"));
        fsio::write_atomic(&inbox, b"[]\n").unwrap();
        let meta = fs::metadata(&inbox).unwrap();
        let noted = Sidecar::of(&meta, b"[]\n", 0, vec!["id".into()]);
        fs::create_dir_all(side.parent().unwrap()).unwrap();
        noted.save(&side);
        let loaded = Sidecar::load(&side).unwrap();
        assert_eq!(loaded, noted);
        assert!(loaded.describes(&meta, b"[]\n"));
        // Someone else rewrites the file in place, to the same length.
        fs::write(&inbox, b"[ ]").unwrap();
        let meta = fs::metadata(&inbox).unwrap();
        assert!(!loaded.describes(&meta, b"[ ]"));
        // A torn sidecar reads as none.
        fs::write(&side, b"{\"ino\": 1").unwrap();
        assert_eq!(Sidecar::load(&side), None);
    }
}
