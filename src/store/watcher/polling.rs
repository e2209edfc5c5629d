//! The fallback when no inotify instance or watch can be had (another program holds the
//! user's instances, the watch budget is spent, the system has no inotify): the directories
//! are looked at every 100-250 ms instead, and a subscriber is woken when what it cares about
//! looks different.
//!
//! The interval is bounded and jittered, so a hundred polling teammates do not look in step.
//! A look is cheap: for new content the names and `stat` of the entries that can hold any
//! (the directory's own `stat` alone once it holds more than [`STAT_AT_MOST`] of them, then an
//! owner's slow re-scan catches an in-place edit); for exits, which of the lock files in
//! `alive/` are held, since a lock's release changes nothing a `stat` shows. Polled task
//! indexes and spool waits are not looked at here: the index rescans on every look (it hears
//! of no events), and a sender's wait looks at its own entry.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use super::interest::Interest;
use crate::store::liveness;

/// The shortest and longest sleep between two looks.
pub(super) const EVERY_MIN: Duration = Duration::from_millis(100);
pub(super) const EVERY_MAX: Duration = Duration::from_millis(250);

/// Entries of one directory whose `stat` a look includes; past that, the directory's own.
const STAT_AT_MOST: usize = 512;

/// What `dir` looks like to a subscriber with `interest`, as one number: it changes when the
/// subscriber would have been woken.
pub(super) fn fingerprint(dir: &Path, interest: &Interest) -> u64 {
    let mut h = DefaultHasher::new();
    let mut names: Vec<OsString> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| Some(e.ok()?.file_name())).collect(),
        Err(e) => {
            // Gone or unreadable is a state of its own: its owner looks and finds out.
            e.kind().hash(&mut h);
            return h.finish();
        }
    };
    names.sort();
    match interest {
        Interest::Exits => {
            for name in names
                .iter()
                .filter(|n| !n.to_string_lossy().starts_with('.'))
            {
                name.hash(&mut h);
                liveness::held_at(&dir.join(name)).hash(&mut h);
            }
        }
        _ => {
            names.retain(|n| interest.shows(n));
            names.hash(&mut h);
            if names.len() > STAT_AT_MOST {
                stamp(&dir.join("."), &mut h);
            } else {
                for name in &names {
                    stamp(&dir.join(name), &mut h);
                }
            }
        }
    }
    h.finish()
}

/// Adds what a writer's change shows in `stat` (a rename brings a new inode, an in-place write
/// a new size or new times).
fn stamp(path: &Path, h: &mut DefaultHasher) {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        (
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
            .hash(h);
    }
}

/// A small generator for the jitter (xorshift; nothing here needs more).
pub(super) struct Jitter(u64);

impl Jitter {
    pub(super) fn seeded() -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(0);
        Jitter((nanos << 20) ^ u64::from(std::process::id()) | 1)
    }

    pub(super) fn next_interval(&mut self) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let span = (EVERY_MAX - EVERY_MIN).as_millis() as u64;
        EVERY_MIN + Duration::from_millis(self.0 % (span + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_stay_between_100_and_250_ms_and_vary() {
        let mut j = Jitter::seeded();
        let all: Vec<Duration> = (0..200).map(|_| j.next_interval()).collect();
        assert!(all.iter().all(|d| (EVERY_MIN..=EVERY_MAX).contains(d)));
        assert!(all.iter().any(|d| *d != all[0]), "jittered");
    }

    #[test]
    fn a_look_changes_with_content_and_not_with_lock_traffic() {
        let dir = tempfile::tempdir().unwrap();
        let look = || fingerprint(dir.path(), &Interest::Changes);
        std::fs::write(dir.path().join("coder.json"), "[]").unwrap();
        let before = look();
        std::fs::create_dir(dir.path().join("coder.json.lock")).unwrap();
        std::fs::write(dir.path().join(".coder.json.gate"), "").unwrap();
        assert_eq!(look(), before, "lock traffic");
        std::fs::write(dir.path().join("coder.json"), "[{}]").unwrap();
        assert_ne!(look(), before, "an in-place write");
    }
}
