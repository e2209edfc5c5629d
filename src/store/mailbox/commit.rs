//! The inbox group commit: how a sender gets its message into the array and how the lock
//! holder takes in everyone else's.
//!
//! A sender that finds the gate free takes the lock and writes its own entry together with
//! whatever waits in the spool. One that finds it busy drops its entry into the spool
//! (`spool.rs`) and waits for that file to disappear, watching only that file; every so often,
//! and at once if the holder went away, it tries the gate itself. Every holder, after releasing,
//! looks at the spool again and serves what arrived meanwhile: a sender that dropped its file
//! while the gate was held is therefore always served by that holder or a later one.
//!
//! Under the lock, one rewrite takes in every entry: spliced without parsing when the sidecar
//! (`sidecar.rs`) says the inbox is exactly what swarm last wrote, otherwise after one full
//! parse that drops entries already present (by `msg_id`). Spool entries the sidecar lists as
//! committed (a holder killed between its write and removing them) are removed without being
//! added again. So a kill anywhere loses no acknowledged message and stores none twice.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use super::bell;
use super::file::{load_locked, print_entry, splice_printed, Parsed, Repaired};
use super::sidecar::{self, Sidecar};
use super::spool::{self, Spool, Spooled};
use super::{InboxMessage, Mailbox, KEEP_DELIVERED};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lock::{self, FileLock};
use crate::store::names::AgentName;
use crate::store::watcher;

/// How often a waiting sender tries the gate itself: the safety net for a holder that died or
/// failed; a live holder's commit wakes the waiter as soon as its file is gone.
const RETRY_GATE_EVERY: Duration = Duration::from_millis(25);
/// How long a holder keeps serving the spool after its own message is in.
const SERVE_FOR: Duration = Duration::from_millis(50);
/// Longest a holder waits for the senders the last commit acknowledged to spool their next
/// entries before it lists the spool (see [`linger`]).
const LINGER_AT_MOST: Duration = Duration::from_millis(10);
/// How often a commit whose lock was taken over starts again before it reports that.
const TAKEN_OVER_RETRIES: u32 = 3;

/// An edit of the whole array made under the lock (mark delivered, append once, repair).
/// Returns whether it changed anything.
pub(super) type Edit<'e> = dyn FnMut(&mut Vec<InboxMessage>) -> Result<bool> + 'e;

impl Mailbox<'_> {
    pub(super) fn spool(&self, to: &AgentName) -> Spool {
        Spool::new(self.store.spool_dir(self.team, to))
    }

    /// Appends `message` (signed, final) to the inbox at `path` by group commit. A holder
    /// taken over while stopped (`lock/fence.rs`) wrote nothing and starts again.
    pub(super) fn commit_message(
        &self,
        to: &AgentName,
        path: &Path,
        message: InboxMessage,
    ) -> Result<()> {
        let mut tries = 0;
        loop {
            match self.commit_message_once(to, path, message.clone()) {
                Err(Error::LockTakenOver { .. }) if tries < TAKEN_OVER_RETRIES => tries += 1,
                other => return other,
            }
        }
    }

    fn commit_message_once(
        &self,
        to: &AgentName,
        path: &Path,
        message: InboxMessage,
    ) -> Result<()> {
        if let Some(lock) = FileLock::try_acquire_fenced(path)? {
            let done = self.commit_locked(&lock, to, path, vec![message], None, &mut None);
            drop(lock);
            self.serve_spool(to, path);
            return done.map(drop);
        }
        let printed = print_entry(&message)?;
        let mine = self.spool(to).drop_entry(&printed, to.as_str())?;
        let start = Instant::now();
        let mut said_waiting = false;
        loop {
            let taken = match FileLock::try_acquire_fenced(path) {
                Ok(None) if start.elapsed() >= lock::STALL => FileLock::take_over(path),
                other => other,
            };
            match taken {
                Ok(Some(lock)) => {
                    let done = self.commit_locked(&lock, to, path, vec![], None, &mut None);
                    drop(lock);
                    self.serve_spool(to, path);
                    match done {
                        // Our entry is still spooled, for whoever took over.
                        Err(Error::LockTakenOver { .. }) | Ok(_) => {}
                        Err(e) => return retract(&mine, e),
                    }
                }
                Ok(None) => {}
                Err(e) => return retract(&mine, e),
            }
            let waited = start.elapsed();
            if waited >= lock::GIVE_UP_AFTER {
                return retract(&mine, lock::gave_up(path, waited));
            }
            if !said_waiting && waited >= lock::SAY_WAITING_AFTER {
                eprintln!("swarm: waiting for lock on {}", path.display());
                said_waiting = true;
            }
            if watcher::wait_until_gone(&mine, Instant::now() + RETRY_GATE_EVERY) {
                return acknowledged(&mine);
            }
        }
    }

    /// Takes the lock on `path` (waiting for it, or taking it over from a stopped holder),
    /// commits the spool and applies `edit`; again from the start if taken over meanwhile.
    pub(super) fn commit_with_lock(
        &self,
        to: &AgentName,
        path: &Path,
        edit: &mut Edit<'_>,
    ) -> Result<()> {
        self.commit_with_lock_known(to, path, edit, &mut None)
    }

    /// [`Mailbox::commit_with_lock`] for a caller that holds the inbox as it last read or
    /// wrote it (`known`): not parsed again if nobody wrote since, and left holding what this
    /// commit wrote.
    pub(super) fn commit_with_lock_known(
        &self,
        to: &AgentName,
        path: &Path,
        edit: &mut Edit<'_>,
        known: &mut Option<Parsed>,
    ) -> Result<()> {
        let mut tries = 0;
        loop {
            let lock = FileLock::acquire_fenced(path)?;
            let done = self.commit_locked(&lock, to, path, vec![], Some(&mut *edit), known);
            drop(lock);
            self.serve_spool(to, path);
            match done {
                Err(Error::LockTakenOver { .. }) if tries < TAKEN_OVER_RETRIES => tries += 1,
                other => return other.map(drop),
            }
        }
    }

    /// After releasing the lock: whatever was spooled while we held it is ours to take in,
    /// unless another holder is in already (it looks again after it releases). Errors are left
    /// to the waiting senders, who try the gate themselves and report them.
    pub(super) fn serve_spool(&self, to: &AgentName, path: &Path) {
        let spool = self.spool(to);
        let until = Instant::now() + SERVE_FOR;
        while Instant::now() < until && spool.has_entries() {
            let Ok(Some(lock)) = FileLock::try_acquire_fenced(path) else {
                return;
            };
            // Nothing taken in: what waits is unreadable for now, and its senders retry.
            let taken = self.commit_locked(&lock, to, path, vec![], None, &mut None);
            if !matches!(taken, Ok(n) if n > 0) {
                return;
            }
        }
    }

    /// Under the lock: one write of the inbox with every spooled entry, `own` and `edit`.
    /// Returns how many entries it took in.
    fn commit_locked(
        &self,
        lock: &FileLock,
        to: &AgentName,
        path: &Path,
        own: Vec<InboxMessage>,
        edit: Option<&mut Edit<'_>>,
        known: &mut Option<Parsed>,
    ) -> Result<usize> {
        let given = known.take();
        let started = Instant::now();
        let spool = self.spool(to);
        let side = sidecar::path_for(&self.store.spool_dir(self.team, to));
        let noted = Sidecar::load(&side);
        if let Some((expected, at_most)) = noted
            .as_ref()
            .and_then(|n| n.senders_coming_back(LINGER_AT_MOST))
        {
            linger(&spool, expected, at_most);
        }
        let spooled = spool.list()?;
        let already: HashSet<&str> = noted
            .iter()
            .flat_map(|n| n.committed.iter().map(String::as_str))
            .collect();
        let fresh: Vec<&Spooled> = spooled
            .iter()
            .filter(|s| !already.contains(s.message.key().as_str()))
            .collect();
        let committed: Vec<String> = spooled
            .iter()
            .map(|s| s.message.key())
            .chain(own.iter().map(InboxMessage::key))
            .collect();
        if edit.is_none() {
            if fresh.is_empty() && own.is_empty() {
                spool.remove(&spooled);
                return Ok(0);
            }
            if let Some(noted) = &noted {
                let own_printed = own.iter().map(print_entry).collect::<Result<Vec<_>>>()?;
                let new: Vec<&[u8]> = fresh
                    .iter()
                    .map(|s| s.printed.as_slice())
                    .chain(own_printed.iter().map(Vec::as_slice))
                    .collect();
                let new_delivered = fresh.iter().filter(|s| s.message.read).count()
                    + own.iter().filter(|m| m.read).count();
                let delivered = noted.delivered + new_delivered;
                if delivered <= KEEP_DELIVERED {
                    if let Some(out) = self.splice_if_unchanged(path, noted, &new)? {
                        lock.write(path, &out)?;
                        bell::ring(self.store, self.team, to);
                        note(path, &side, &out, delivered, committed, started);
                        spool.remove(&spooled);
                        return Ok(new.len());
                    }
                }
            }
        }
        let (mut messages, repaired) = load_locked(lock, path, given)?;
        let mut present: HashSet<String> = messages.iter().map(InboxMessage::key).collect();
        let before = messages.len();
        for s in fresh {
            if present.insert(s.message.key()) {
                messages.push(s.message.clone());
            }
        }
        messages.extend(own);
        let taken = messages.len() - before;
        let mut changed = taken > 0;
        if let Some(edit) = edit {
            changed |= edit(&mut messages)?;
        }
        // New messages (taken in, or added by an edit: a relayed batch, an append-once) ring the
        // recipient; its own marks and repairs do not wake it again.
        let grew = messages.len() > before;
        if changed {
            let (written, delivered) = self.compact_and_write(lock, to, path, messages)?;
            if grew {
                bell::ring(self.store, self.team, to);
            }
            // A repair touches nothing but the inbox and what was moved aside; the sidecar,
            // describing an inode that is gone, just makes the next commit parse once more.
            if repaired == Repaired::No {
                note(path, &side, written.bytes(), delivered, committed, started);
            }
            *known = Some(written);
        }
        spool.remove(&spooled);
        Ok(taken)
    }

    /// The inbox with `new` spliced in, if it is exactly what `noted` describes.
    fn splice_if_unchanged(
        &self,
        path: &Path,
        noted: &Sidecar,
        new: &[&[u8]],
    ) -> Result<Option<Vec<u8>>> {
        if super::file::oversize(path)?.is_some() {
            return Ok(None);
        }
        let Some(bytes) = fsio::read_file(path)? else {
            return Ok(None);
        };
        let meta = std::fs::symlink_metadata(path).map_err(Error::io("inspect", path))?;
        if !noted.describes(&meta, &bytes) {
            return Ok(None);
        }
        Ok(splice_printed(&bytes, new))
    }
}

/// Waits, holding the lock, until `expected` entries are spooled or `at_most` passed. Under a
/// burst, the senders the last commit acknowledged come straight back with their next entry,
/// and the first of them back takes the gate; listing the spool at once would take in only
/// what is there and leave the rest for the commit after, two half-full commits paying two
/// fsyncs for one full one.
fn linger(spool: &Spool, expected: usize, at_most: Duration) {
    let until = Instant::now() + at_most;
    while spool.count() < expected && Instant::now() < until {
        std::thread::sleep(Duration::from_micros(250));
    }
}

/// Notes what was just written to `path` by the commit that began at `started`.
fn note(
    path: &Path,
    side: &Path,
    bytes: &[u8],
    delivered: usize,
    committed: Vec<String>,
    started: Instant,
) {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        Sidecar::of(&meta, bytes, delivered, committed)
            .took(started.elapsed())
            .save(side);
    }
}

/// A sender giving up takes its entry back. If it is already gone, a holder took it in (or
/// rejected it): the message is delivered after all. (A holder that read it and then stopped
/// before writing may still deliver it after this reports failure.)
fn retract(mine: &Path, error: Error) -> Result<()> {
    match std::fs::remove_file(mine) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => acknowledged(mine),
        _ => Err(error),
    }
}

/// The sender's entry is gone from the spool: in the inbox, unless a holder found it is not a
/// message and renamed it so this sender says so.
fn acknowledged(mine: &Path) -> Result<()> {
    match spool::rejected(mine) {
        None => Ok(()),
        Some(aside) => Err(Error::SpoolEntryRejected {
            entry: mine.to_path_buf(),
            aside,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::agent;
    use crate::store::names::TeamName;
    use crate::store::paths::Store;
    use crate::store::roster::{Member, Roster};

    struct Team {
        dir: tempfile::TempDir,
        store: Store,
        team: TeamName,
        coder: AgentName,
    }

    impl Team {
        fn new() -> Team {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::new(dir.path());
            let team: TeamName = "t".parse().unwrap();
            let coder: AgentName = "coder".parse().unwrap();
            Roster::new(&store, &team).create("", "/", "").unwrap();
            Roster::new(&store, &team)
                .add_member(Member::teammate(&team, &coder, "blue", "/"))
                .unwrap();
            Team {
                dir,
                store,
                team,
                coder,
            }
        }
        fn mailbox(&self) -> Mailbox<'_> {
            Mailbox::new(&self.store, &self.team)
        }
        fn inbox(&self) -> std::path::PathBuf {
            self.store.inbox_path(&self.team, &self.coder)
        }
        fn texts(&self) -> Vec<String> {
            let bytes = std::fs::read(self.inbox()).unwrap();
            let all: Vec<serde_json::Value> = serde_json::from_slice(&bytes).unwrap();
            all.iter()
                .map(|m| m["text"].as_str().unwrap().to_string())
                .collect()
        }
        /// Spools `m` as a sender that meets a busy lock does.
        fn spool(&self, m: &InboxMessage) {
            self.mailbox()
                .spool(&self.coder)
                .drop_entry(&print_entry(m).unwrap(), "coder")
                .unwrap();
        }
        fn spooled(&self) -> bool {
            self.mailbox().spool(&self.coder).has_entries()
        }
        fn quarantined(&self) -> usize {
            std::fs::read_dir(self.dir.path().join("teams/t/inboxes"))
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    name.to_string_lossy().contains(".corrupt-")
                })
                .count()
        }
        fn sidecar(&self) -> std::path::PathBuf {
            sidecar::path_for(&self.store.spool_dir(&self.team, &self.coder))
        }
    }

    fn msg(text: &str) -> InboxMessage {
        InboxMessage::new(&agent("coder"), text)
    }

    /// A holder killed after its write but before its sidecar, then another writer: the
    /// sidecar no longer describes the inbox, so the next commit parses it whole (the malformed
    /// entry the other writer left is quarantined, which only a parse does) and drops the
    /// spooled entry already present by `msg_id`.
    #[test]
    fn a_write_by_someone_else_forces_a_full_parse_with_dedup() {
        let t = Team::new();
        let mb = t.mailbox();
        let (m1, m3) = (msg("m1"), msg("m3"));
        mb.send(&t.coder, m1.clone()).unwrap();
        assert!(
            Sidecar::load(&t.sidecar()).is_some(),
            "swarm noted its write"
        );
        t.spool(&m3);
        let mut other = serde_json::to_value(vec![&m1, &m3]).unwrap();
        other
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"from": 5}));
        std::fs::write(t.inbox(), serde_json::to_vec(&other).unwrap()).unwrap();
        mb.send(&t.coder, msg("m4")).unwrap();
        assert_eq!(t.texts(), ["m1", "m3", "m4"]);
        assert_eq!(
            t.quarantined(),
            1,
            "the malformed entry shows the file was parsed"
        );
        assert!(!t.spooled());
    }

    /// When the inbox is exactly what swarm last wrote, the commit splices without parsing: a
    /// malformed entry the sidecar vouches for is left alone (a parse would quarantine it).
    #[test]
    fn when_swarm_wrote_last_the_commit_splices_without_parsing() {
        let t = Team::new();
        let mb = t.mailbox();
        mb.send(&t.coder, msg("m1")).unwrap();
        let bytes = b"[\n  {\"from\": 5}\n]\n";
        fsio::write_atomic(&t.inbox(), bytes).unwrap();
        let meta = std::fs::metadata(t.inbox()).unwrap();
        Sidecar::of(&meta, bytes, 0, vec![]).save(&t.sidecar());
        t.spool(&msg("m2"));
        mb.send(&t.coder, msg("m3")).unwrap();
        let all: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(t.inbox()).unwrap()).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0]["from"], 5);
        assert_eq!(
            (all[1]["text"].as_str(), all[2]["text"].as_str()),
            (Some("m2"), Some("m3"))
        );
        assert_eq!(t.quarantined(), 0);
        assert!(!t.spooled());
    }

    /// A holder killed after noting its write but before removing the spool files, and then a
    /// reader that deletes delivered entries (as Claude Code's lead does): the leftover entry
    /// is removed, not delivered a second time.
    #[test]
    fn entries_a_dead_holder_committed_are_not_added_again() {
        let t = Team::new();
        let mb = t.mailbox();
        let m1 = msg("m1");
        t.spool(&m1);
        mb.send(&t.coder, msg("m2")).unwrap(); // takes m1 in with its own
        assert_eq!(t.texts(), ["m1", "m2"]);
        t.spool(&m1); // as if the holder died before removing it
        let m2_only: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(t.inbox()).unwrap()).unwrap();
        std::fs::write(t.inbox(), serde_json::to_vec_pretty(&m2_only[1..]).unwrap()).unwrap();
        mb.send(&t.coder, msg("m3")).unwrap();
        assert_eq!(t.texts(), ["m2", "m3"]);
        assert!(!t.spooled());
    }

    /// A lead entry that travels through the spool is signed exactly as a direct one.
    #[test]
    fn a_spooled_lead_entry_keeps_its_signature() {
        let t = Team::new();
        let mb = t.mailbox();
        let mut m = InboxMessage::new(&AgentName::lead(), "signed");
        m.extra.insert("lead_sig".into(), "sig".into());
        t.spool(&m);
        mb.send(&t.coder, msg("after")).unwrap();
        let all: Vec<InboxMessage> =
            serde_json::from_slice(&std::fs::read(t.inbox()).unwrap()).unwrap();
        assert_eq!(all[0], m, "the spooled entry is taken in byte for byte");
    }
}
