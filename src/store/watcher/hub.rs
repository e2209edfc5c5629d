//! The process's one inotify instance and everyone who waits on it.
//!
//! Linux gives each user 128 inotify instances (`fs.inotify.max_user_instances`) and a budget
//! of watches. A process that opened one instance per wait (the runtime had four, `swarm top`
//! seven) would let about thirty teammates use them all up, so every wait in a swarm process is
//! a subscription here instead: one instance for the process's life, one watch per directory
//! whoever subscribes to it, and each event handed to the subscribers it concerns. Only a
//! sender waiting for its spool entry watches a file, that one entry, for as long as it waits
//! (see [`Interest::Gone`]): so the watches a user needs grow with the directories swarm
//! follows, not with its files.
//!
//! Events are read under the hub's lock by whoever needs them first, and handed out before the
//! lock is let go. A process with a loop to wake has one thread that sleeps on the descriptor
//! for good. Until it has one, a thread waiting for its own spool entry to go reads the
//! descriptor itself, so a one-shot `swarm send` is woken by the kernel directly (a hop through
//! another thread cost more than the commit on a loaded machine). The task index drains without
//! blocking: what it reads under the lock, together with what others read and handed to it
//! before, is every event queued before the drain began.
//!
//! Where no instance or no watch can be had, the subscription is polled instead (`polling`),
//! and the process says so once.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::inotify::{Event, Instance, Mask, WatchError};
pub(super) use super::interest::Interest;
use super::polling::{self, Jitter};
use crate::error::{Error, Result};

/// Called when a subscription's directory may have changed the way it cares about. Called
/// outside the hub's lock, on whichever thread read the event.
pub(super) type Callback = Arc<dyn Fn() + Send + Sync>;

/// What a drain of [`Interest::Names`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Drained {
    Names(BTreeSet<OsString>),
    /// The queue overflowed since the last drain: any entry may have changed.
    Lost,
    /// The watch ended (the directory went) or there never was one (the subscription is
    /// polled): from now on only a full look tells.
    Blind,
}

struct Sub {
    dir: PathBuf,
    interest: Interest,
    on_event: Option<Callback>,
    /// The inotify watch; `None` when polled, or once the kernel ended the watch.
    wd: Option<i32>,
    polled: bool,
    /// Something it wants happened since it last looked.
    fired: bool,
    names: BTreeSet<OsString>,
    lost: bool,
    ended: bool,
    /// The polled directory as last seen (see `polling::fingerprint`).
    seen: u64,
}

#[derive(Default)]
pub(super) struct State {
    subs: BTreeMap<u64, Sub>,
    next_id: u64,
    /// A thread other than the reader thread is reading the descriptor (a waiter).
    reading: bool,
    reader_thread: bool,
    poll_thread: bool,
}

/// The process's hub (see the module doc).
pub(super) struct Hub {
    instance: Option<Instance>,
    state: Mutex<State>,
    /// Notified whenever events were handed out, for waiters that do not read themselves.
    handed_out: Condvar,
    /// Some wait here is polled instead of watched.
    degraded: AtomicBool,
}

/// The hub, made on first use and kept for the process's life: closing an instance that held
/// watches costs the kernel a grace period (about a millisecond).
pub(super) fn hub() -> &'static Hub {
    static HUB: OnceLock<Hub> = OnceLock::new();
    HUB.get_or_init(|| {
        let instance = match Instance::open() {
            Ok(instance) => Some(instance),
            Err(e) => {
                if cfg!(target_os = "linux") {
                    say_polling(&format!(
                        "no inotify instance to be had ({e}; the user's \
                         fs.inotify.max_user_instances may all be in use)"
                    ));
                }
                None
            }
        };
        Hub {
            degraded: AtomicBool::new(instance.is_none()),
            instance,
            state: Mutex::new(State::default()),
            handed_out: Condvar::new(),
        }
    })
}

/// Says once per process, on stderr (a runtime's pane), that its waits are polled.
fn say_polling(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        eprintln!(
            "swarm: warning: {why}; this process polls its directories every {}-{} ms instead",
            polling::EVERY_MIN.as_millis(),
            polling::EVERY_MAX.as_millis()
        );
    });
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it; if something did, the tables are still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether some wait of this process is polled rather than watched.
    pub(super) fn degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Subscribes to `dir` (for [`Interest::Gone`], the entry itself), which must exist; events
    /// are watched from the moment this returns.
    pub(super) fn subscribe(
        &'static self,
        dir: &Path,
        interest: Interest,
        on_event: Option<Callback>,
    ) -> Result<u64> {
        let failed =
            |e: std::io::Error| Error::Backend(format!("failed to watch {}: {e}", dir.display()));
        let mut state = self.lock();
        // Added under the lock, so no event of the new watch is read before it has a subscriber.
        let wd = match &self.instance {
            None => None,
            Some(instance) => match instance.add(dir, interest.mask(), interest.on_directory()) {
                Ok(wd) => Some(wd),
                Err(WatchError::NoRoom(e)) => {
                    self.degraded.store(true, Ordering::Relaxed);
                    say_polling(&format!(
                        "no inotify watch to be had for {} ({e}; the user's \
                         fs.inotify.max_user_watches may all be in use)",
                        dir.display()
                    ));
                    None
                }
                Err(WatchError::Other(e)) => return Err(failed(e)),
            },
        };
        let polled = wd.is_none();
        let seen = if polled {
            std::fs::metadata(dir).map_err(failed)?;
            polling::fingerprint(dir, &interest)
        } else {
            0
        };
        let id = state.next_id;
        state.next_id += 1;
        let wants_thread = on_event.is_some();
        state.subs.insert(
            id,
            Sub {
                dir: dir.to_path_buf(),
                interest,
                on_event,
                wd,
                polled,
                fired: false,
                names: BTreeSet::new(),
                lost: false,
                ended: false,
                seen,
            },
        );
        if wants_thread && !polled && !state.reader_thread {
            state.reader_thread = true;
            std::thread::spawn(move || self.read_forever());
        }
        if wants_thread && polled && !state.poll_thread {
            state.poll_thread = true;
            std::thread::spawn(move || poll_forever(self));
        }
        Ok(id)
    }

    /// Ends a subscription; the directory's watch ends with its last subscriber.
    pub(super) fn unsubscribe(&self, id: u64) {
        let mut state = self.lock();
        let Some(sub) = state.subs.remove(&id) else {
            return;
        };
        if let (Some(wd), Some(instance)) = (sub.wd, &self.instance) {
            if !state.subs.values().any(|s| s.wd == Some(wd)) {
                instance.remove(wd);
            }
        }
    }

    /// Whether subscription `id` is polled rather than watched.
    pub(super) fn polled(&self, id: u64) -> bool {
        self.lock().subs.get(&id).is_none_or(|s| s.polled)
    }

    /// Everything that concerned [`Interest::Names`] subscription `id` since its last drain.
    pub(super) fn drain(&self, id: u64) -> Drained {
        let mut state = self.lock();
        let calls = self.read_locked(&mut state);
        let drained = match state.subs.get_mut(&id) {
            Some(sub) if !sub.polled && !sub.ended => {
                let names = std::mem::take(&mut sub.names);
                match std::mem::take(&mut sub.lost) {
                    true => Drained::Lost,
                    false => Drained::Names(names),
                }
            }
            _ => Drained::Blind,
        };
        drop(state);
        call(calls);
        drained
    }

    /// Blocks until subscription `id` fired since it last looked, or `until`; whether it did.
    /// An event it cannot tell from its own (a full queue) counts: callers check again.
    pub(super) fn wait(&self, id: u64, until: Instant) -> bool {
        let Some(instance) = &self.instance else {
            return false;
        };
        let mut state = self.lock();
        loop {
            match state.subs.get_mut(&id) {
                Some(sub) if sub.fired => {
                    sub.fired = false;
                    return true;
                }
                Some(_) => {}
                None => return false,
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if state.reader_thread || state.reading {
                state = self
                    .handed_out
                    .wait_timeout(state, left)
                    .map(|(s, _)| s)
                    .unwrap_or_else(|e| e.into_inner().0);
                continue;
            }
            // Nobody reads the descriptor: this thread does, and hands out what it reads. (A
            // drain in another thread may take the event it woke for; then it sleeps until
            // `until`, and its caller looks again.)
            state.reading = true;
            drop(state);
            instance.wait_readable(Some(left));
            state = self.lock();
            let calls = self.read_locked(&mut state);
            state.reading = false;
            self.handed_out.notify_all();
            if !calls.is_empty() {
                drop(state);
                call(calls);
                state = self.lock();
            }
        }
    }

    /// The reader thread of a process with loops to wake: sleeps on the descriptor for good.
    fn read_forever(&self) {
        let Some(instance) = &self.instance else {
            return;
        };
        loop {
            instance.wait_readable(None);
            let mut state = self.lock();
            let calls = self.read_locked(&mut state);
            self.handed_out.notify_all();
            drop(state);
            call(calls);
        }
    }

    /// Reads every queued event and hands each to the subscribers it concerns; returns the
    /// callbacks to call once the lock is let go.
    fn read_locked(&self, state: &mut State) -> Vec<Callback> {
        let mut calls = Vec::new();
        if let Some(instance) = &self.instance {
            instance.read(|event| hand_out(state, &event, &mut calls));
        }
        calls
    }

    /// Polled subscriptions with a callback: `(id, dir, interest, as last seen)`.
    pub(super) fn polled_subs(&self) -> Vec<(u64, PathBuf, Interest, u64)> {
        self.lock()
            .subs
            .iter()
            .filter(|(_, s)| s.polled && s.on_event.is_some())
            .map(|(id, s)| (*id, s.dir.clone(), s.interest.clone(), s.seen))
            .collect()
    }

    /// Records what the poller saw of subscription `id`, and calls it back when that changed.
    pub(super) fn polled_now(&self, seen: &[(u64, u64)]) {
        let mut calls = Vec::new();
        let mut state = self.lock();
        for (id, now) in seen {
            if let Some(sub) = state.subs.get_mut(id) {
                if sub.seen != *now {
                    sub.seen = *now;
                    sub.fired = true;
                    calls.extend(sub.on_event.clone());
                }
            }
        }
        if !calls.is_empty() {
            self.handed_out.notify_all();
        }
        drop(state);
        call(calls);
    }
}

fn call(calls: Vec<Callback>) {
    for c in calls {
        c();
    }
}

/// Hands one event to every subscriber it concerns.
fn hand_out(state: &mut State, event: &Event, calls: &mut Vec<Callback>) {
    let fire = |sub: &mut Sub, calls: &mut Vec<Callback>| {
        sub.fired = true;
        calls.extend(sub.on_event.clone());
    };
    if event.mask.any(Mask::OVERFLOW) {
        // Events were dropped: anything may have changed, for anyone.
        for sub in state.subs.values_mut().filter(|s| s.wd.is_some()) {
            sub.lost = true;
            fire(sub, calls);
        }
        return;
    }
    let ended = Mask::IGNORED.or(Mask::UNMOUNT);
    let gone = Mask::DELETE_SELF.or(Mask::MOVE_SELF);
    for sub in state.subs.values_mut() {
        if sub.wd != Some(event.wd) {
            continue;
        }
        if event.mask.any(ended) {
            // The kernel ended the watch (its directory went): nothing more will come.
            sub.wd = None;
            sub.ended = true;
            fire(sub, calls);
        } else if event.mask.any(gone) {
            sub.ended = true;
            fire(sub, calls);
        } else if sub.interest.wants(event.mask, event.name.as_deref()) {
            if let (Interest::Names, Some(name)) = (&sub.interest, &event.name) {
                sub.names.insert(name.clone());
            }
            fire(sub, calls);
        }
    }
}

/// How long a polled wait for one entry sleeps between looks: a sender's wait is short
/// (it tries the inbox lock itself every 25 ms), so it looks often.
pub(super) const POLL_ENTRY_EVERY: Duration = Duration::from_millis(2);

/// The poller thread: looks at every polled subscription, sleeps, looks again.
fn poll_forever(hub: &'static Hub) {
    let mut jitter = Jitter::seeded();
    loop {
        std::thread::sleep(jitter.next_interval());
        let seen: Vec<(u64, u64)> = hub
            .polled_subs()
            .into_iter()
            .map(|(id, dir, interest, _)| (id, polling::fingerprint(&dir, &interest)))
            .collect();
        hub.polled_now(&seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wants(interest: Interest, mask: Mask, name: &str) -> bool {
        interest.wants(mask, Some(std::ffi::OsStr::new(name)))
    }

    #[test]
    fn reads_and_lock_traffic_do_not_wake_waiters_for_changes() {
        use Interest::Changes;
        assert!(!wants(Changes, Mask::CLOSE_WRITE, "coder.json"), "a close");
        assert!(!wants(
            Changes,
            Mask::CREATE.or(Mask::ISDIR),
            "coder.json.lock"
        ));
        assert!(!wants(Changes, Mask::CREATE, ".coder.json.gate"));
        assert!(!wants(Changes, Mask::MODIFY, ".coder.json.tmp-1-2"));
        assert!(wants(Changes, Mask::MOVED_TO, "coder.json"));
        assert!(wants(Changes, Mask::MODIFY, "coder.json"));
        assert!(Changes.wants(Mask::MODIFY, None));
    }

    #[test]
    fn a_wait_for_one_entry_wakes_for_that_entry_and_the_directory_alone() {
        let own = || Interest::Entry("coder.json".into());
        assert!(wants(own(), Mask::MOVED_TO, "coder.json"));
        assert!(wants(own(), Mask::MODIFY, "coder.json"));
        assert!(
            !wants(own(), Mask::MOVED_TO, "tester.json"),
            "a peer's inbox"
        );
        assert!(!wants(own(), Mask::CLOSE_WRITE, "coder.json"), "a close");
        assert!(own().wants(Mask::DELETE_SELF, None), "the directory gone");
    }

    #[test]
    fn an_exit_is_a_close_after_writing_and_a_gone_wait_wants_the_unlink() {
        assert!(wants(Interest::Exits, Mask::CLOSE_WRITE, "coder.lock"));
        assert!(!wants(Interest::Exits, Mask::MODIFY, "coder.lock"));
        assert!(Interest::Gone.wants(Mask::ATTRIB, None), "an unlink");
        assert!(!Interest::Gone.wants(Mask::MODIFY, None));
        assert!(!wants(
            Interest::Names,
            Mask::CREATE.or(Mask::ISDIR),
            "7.json.lock"
        ));
    }
}
