//! Ending the runtime: an approved shutdown, a signal, leaving a team that is gone, or a failure.
//!
//! However it ends, a turn still running is stopped the way nextest stops a test (SIGTERM to
//! its process group, a grace period, then SIGKILL) and this teammate's unfinished tasks go back to
//! pending, so the lead can hand them to someone else at once (except when it leaves a team or
//! roster entry that is gone: those tasks are no longer its). Only an approved shutdown answers
//! the lead with `shutdown_approved` (once `shutdown` let the running turn finish, or its grace
//! ended); a signal exits with 128 + its number.

use std::time::Duration;

use rustix::process::Signal;
use serde_json::Map;

use super::{Event, Runtime};
use crate::error::Result;
use crate::process::signals::Caught;
use crate::store::liveness;
use crate::store::protocol::{timestamp_now, Protocol, ShutdownApproved};

/// How long a stopped turn gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

impl Runtime {
    /// Stops the running turn, if any: SIGTERM to its group, [`STOP_GRACE`], then SIGKILL.
    pub(super) async fn stop_turn(&mut self) {
        let Some(current) = self.current.take() else {
            return;
        };
        self.pane.say("stopping the current turn");
        current.handle.stop(Signal::TERM);
        if self.turn_done_within(STOP_GRACE).await {
            return;
        }
        self.pane.say("the turn ignored SIGTERM; sending SIGKILL");
        current.handle.stop(Signal::KILL);
        self.turn_done_within(Duration::from_secs(10)).await;
    }

    /// Waits up to `limit` for the stopped turn's worker to report; other events are dropped,
    /// since the runtime is ending.
    async fn turn_done_within(&mut self, limit: Duration) -> bool {
        let rx = &mut self.rx;
        let done = async {
            while let Some(event) = rx.recv().await {
                if let Event::TurnDone(_) = event {
                    return true;
                }
            }
            false
        };
        tokio::time::timeout(limit, done).await.unwrap_or(false)
    }

    /// Returns this teammate's unfinished tasks to pending; says which.
    fn release_tasks(&self) -> Result<()> {
        let released = self.tasks().release_agent(self.cfg.name.as_str())?;
        if !released.is_empty() {
            let ids: Vec<String> = released.iter().map(|id| format!("#{id}")).collect();
            self.pane
                .say(format!("returned task {} to pending", ids.join(", ")));
        }
        Ok(())
    }

    /// Approves the held shutdown request(s) (`shutdown`): stops the turn if one still runs,
    /// returns the tasks, answers the lead and ends the runtime with 0.
    pub(super) async fn approve(&mut self) -> Result<i32> {
        self.stop_turn().await;
        self.release_tasks()?;
        let requests = self.held.take().map(|h| h.requests).unwrap_or_default();
        self.shutdown_ask().clear_asked();
        for req in requests {
            let approved = Protocol::ShutdownApproved(ShutdownApproved {
                request_id: req.request_id,
                from: self.cfg.name.to_string(),
                timestamp: timestamp_now(),
                pane_id: Some(self.cfg.pane_id.clone()),
                backend_type: Some(self.cfg.backend.clone()),
                extra: Map::from_iter([(liveness::RUN_FIELD.into(), liveness::this_run().into())]),
            });
            self.to_lead(&approved, None)?;
        }
        self.pane.say("shutdown approved; bye");
        Ok(0)
    }

    /// The team or this member's roster entry is gone (`why` says which): stop the turn and
    /// exit 0. Tasks are left alone: `team remove` and `team delete` already dealt with them,
    /// and under a re-added name they are the new member's.
    pub(super) async fn leave(&mut self, why: &str) -> Result<i32> {
        self.pane.say(format!("{why}; stopping"));
        self.stop_turn().await;
        Ok(0)
    }

    pub(super) async fn interrupted(&mut self, caught: Caught) -> Result<i32> {
        let sig = caught.number();
        self.pane.say(format!("got signal {sig}; stopping"));
        self.stop_turn().await;
        self.release_tasks()?;
        Ok(128 + sig)
    }

    /// Best-effort cleanup when the loop failed: stop the agent, hand the tasks back.
    pub(super) async fn abandon(&mut self) {
        self.stop_turn().await;
        if let Err(e) = self.release_tasks() {
            eprintln!("swarm: warning: could not return this teammate's tasks: {e}");
        }
    }
}
