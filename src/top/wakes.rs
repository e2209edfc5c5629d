//! When the dashboard looks again: on a file event in one of the team's directories, and at no
//! other time, so a team where nothing happens costs it no CPU.
//!
//! Watched: the team directory (`config.json`), `inboxes/`, the task list, pending and
//! resolved permissions, in-process logs, and `alive/`, where a runtime's exit shows as the
//! close of its lock file (the lead console's trick; one more look shortly after, because the
//! kernel reports the close a moment before the lock is free). A burst of events is one wake.
//! Only with file events turned off (`SWARM_NO_FS_EVENTS=1`) does a re-scan timer run, as for
//! every other waiter in swarm.

use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::error::Result;
use crate::store::fsio::ensure_dir;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::watcher::{events_enabled, rescan_interval, Subscription};

/// After a runtime's exit is seen, one more look this soon (see the module doc).
const SECOND_LOOK: Duration = Duration::from_millis(150);
/// Events closer together than this are one wake: one write is several events.
const SETTLE: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    Changed,
    Exited,
}

pub(crate) struct Wakes {
    _subscriptions: Vec<Subscription>,
    /// Kept so the channel stays open with events off (then only the timer wakes).
    _tx: UnboundedSender<Wake>,
    rx: UnboundedReceiver<Wake>,
    look_again: bool,
}

impl Wakes {
    pub(crate) fn watch(store: &Store, team: &TeamName) -> Result<Wakes> {
        let (tx, rx) = unbounded_channel();
        let mut subscriptions = Vec::new();
        for dir in [
            store.team_dir(team),
            store.inboxes_dir(team),
            store.tasks_dir(team),
            store.pending_dir(team),
            store.resolved_dir(team),
            store.logs_dir(team),
        ] {
            ensure_dir(&dir)?;
            let tx = tx.clone();
            subscriptions.push(Subscription::changes(&dir, move || {
                let _ = tx.send(Wake::Changed);
            })?);
        }
        let alive = store.alive_dir(team);
        ensure_dir(&alive)?;
        let exits = tx.clone();
        subscriptions.push(Subscription::exits(&alive, move || {
            let _ = exits.send(Wake::Exited);
        })?);
        Ok(Wakes {
            _subscriptions: subscriptions,
            _tx: tx,
            rx,
            look_again: false,
        })
    }

    /// Waits until something may have changed.
    pub(crate) async fn next(&mut self) {
        let timer = if self.look_again {
            Some(SECOND_LOOK)
        } else if !events_enabled() {
            Some(rescan_interval())
        } else {
            None
        };
        self.look_again = false;
        let sleep = async {
            match timer {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            Some(first) = self.rx.recv() => {
                self.look_again = first == Wake::Exited;
                tokio::time::sleep(SETTLE).await;
                while let Ok(more) = self.rx.try_recv() {
                    self.look_again |= more == Wake::Exited;
                }
            }
            () = sleep => {}
        }
    }
}
