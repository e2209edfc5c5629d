//! A member's doorbell: the empty file `bells/<name>/bell` that its runtime makes and watches
//! through its directory, which no other process watches. A commit that adds messages to an
//! inbox touches the recipient's bell, so only the recipient wakes. Every sender rings it, a
//! contained teammate too, so it is not in the member's own directory (`members/<name>/`),
//! which only that member's sandbox may write.
//!
//! Watching `inboxes/` for its own entry instead woke every runtime of the team at every write
//! of any inbox: the kernel hands each event to every watch of the directory, whatever name a
//! watcher filters on. In a launch of 200, where every teammate's first prompt and every idle
//! report is an inbox write, that was half of each runtime's CPU (read from `/proc` once the
//! launch returned: 40-51 ms each, 24-25 ms with no inbox watch). A writer that knows nothing
//! of bells (Claude Code writing in place) is read at the runtime's next re-scan, within
//! `watcher::DEFAULT_RESCAN`, as often as Claude Code itself polls its inboxes. A bell is a
//! hint, never the truth: a ring that wakes a runtime for nothing costs it one look at its
//! inbox, and a bell that was removed only makes it wait for that re-scan.

use std::path::PathBuf;

use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// The bell's name in its directory.
pub(crate) const BELL: &str = "bell";

fn bell_path(store: &Store, team: &TeamName, name: &AgentName) -> PathBuf {
    store.bell_dir(team, name).join(BELL)
}

/// Makes `name`'s bell if it has none; the directory it is in is what the runtime watches.
/// Nothing is synced: an empty file has no half to be seen, and one a crash loses is made again
/// by the next start, which is the only time it is needed.
pub(crate) fn install(store: &Store, team: &TeamName, name: &AgentName) -> Result<PathBuf> {
    let dir = store.bell_dir(team, name);
    fsio::ensure_dir(&dir)?;
    fsio::open_or_create(&bell_path(store, team, name))?;
    Ok(dir)
}

/// Wakes `to`'s runtime, if it has a bell (a member with no runtime has none). Touches the
/// bell's times without following a symlink; whatever fails is nobody's loss (see the module
/// doc), so nothing is reported.
pub(crate) fn ring(store: &Store, team: &TeamName, to: &AgentName) {
    use rustix::fs::{utimensat, AtFlags, Timestamps, CWD, UTIME_NOW};
    let now = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: UTIME_NOW,
    };
    let times = Timestamps {
        last_access: now,
        last_modification: now,
    };
    let _ = utimensat(
        CWD,
        bell_path(store, team, to),
        &times,
        AtFlags::SYMLINK_NOFOLLOW,
    );
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::store::fixture::{agent, team_with};
    use crate::store::mailbox::{InboxMessage, Mailbox};
    use crate::store::watcher::Subscription;

    fn rings(store: &Store, team: &TeamName, name: &AgentName) -> (Subscription, Arc<AtomicUsize>) {
        let dir = install(store, team, name).unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        let sub = Subscription::changes_to(&dir, BELL, move || {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        (sub, count)
    }

    fn until(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(20), "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_message_rings_its_recipients_bell_and_nobody_elses() {
        let (_dir, store, team) = team_with(&["coder", "tester"]);
        let (coder, tester) = (agent("coder"), agent("tester"));
        let (_c, coder_rang) = rings(&store, &team, &coder);
        let (_t, tester_rang) = rings(&store, &team, &tester);
        let mailbox = Mailbox::new(&store, &team);
        mailbox
            .send(&coder, InboxMessage::new(&agent("team-lead"), "hi"))
            .unwrap();
        until("the coder's bell rang", || {
            coder_rang.load(Ordering::SeqCst) > 0
        });
        // Marking read is the owner's own edit: nobody is rung for it.
        let before = coder_rang.load(Ordering::SeqCst);
        let keys: Vec<String> = mailbox
            .read(&coder, false)
            .unwrap()
            .iter()
            .map(InboxMessage::key)
            .collect();
        mailbox.mark_delivered(&coder, &keys).unwrap();
        // The tester's bell is watched all along: its own message rings it.
        mailbox
            .send(&tester, InboxMessage::new(&agent("team-lead"), "and you"))
            .unwrap();
        until("the tester's bell rang", || {
            tester_rang.load(Ordering::SeqCst) > 0
        });
        assert_eq!(
            tester_rang.load(Ordering::SeqCst),
            1,
            "rung once, by its own message"
        );
        assert_eq!(coder_rang.load(Ordering::SeqCst), before, "not by the mark");
    }

    #[test]
    fn ringing_a_member_with_no_bell_or_a_symlinked_one_changes_nothing() {
        let (dir, store, team) = team_with(&["coder"]);
        ring(&store, &team, &agent("coder"));
        assert!(!store.bell_dir(&team, &agent("coder")).exists());
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let before = std::fs::metadata(&target).unwrap().modified().unwrap();
        std::fs::create_dir_all(store.bell_dir(&team, &agent("coder"))).unwrap();
        std::os::unix::fs::symlink(&target, bell_path(&store, &team, &agent("coder"))).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        ring(&store, &team, &agent("coder"));
        assert_eq!(
            std::fs::metadata(&target).unwrap().modified().unwrap(),
            before
        );
        assert!(
            install(&store, &team, &agent("coder")).is_err(),
            "a symlinked bell is refused"
        );
    }
}
