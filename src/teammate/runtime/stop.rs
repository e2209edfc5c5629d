//! Ending the runtime: an approved shutdown, a signal, or a failure.
//!
//! However it ends, the running turn is stopped the way nextest stops a test (SIGTERM to its
//! process group, a grace period, then SIGKILL) and this teammate's unfinished tasks go back to
//! pending, so the lead can hand them to someone else at once. Only an approved shutdown answers
//! the lead with `shutdown_approved`; a signal exits with 128 + its number.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::Map;

use super::{Event, Runtime};
use crate::error::Result;
use crate::store::protocol::{timestamp_now, Protocol, ShutdownApproved, ShutdownRequest};
use crate::teammate::pane::suffix;

/// How long a stopped turn gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

impl Runtime {
    /// Stops the running turn, if any: SIGTERM to its group, [`STOP_GRACE`], then SIGKILL.
    fn stop_turn(&mut self) {
        let Some(current) = self.current.take() else {
            return;
        };
        self.pane.say("stopping the current turn");
        current.handle.stop(libc::SIGTERM);
        if self.wait_turn_done(STOP_GRACE) {
            return;
        }
        self.pane.say("the turn ignored SIGTERM; sending SIGKILL");
        current.handle.stop(libc::SIGKILL);
        self.wait_turn_done(Duration::from_secs(10));
    }

    fn wait_turn_done(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Event::TurnDone(_)) => return true,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
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

    pub(super) fn shutdown(&mut self, req: ShutdownRequest) -> Result<i32> {
        self.pane.say(format!(
            "shutdown requested by {}{}",
            req.from,
            suffix(req.reason.as_deref())
        ));
        self.stop_turn();
        self.release_tasks()?;
        let approved = Protocol::ShutdownApproved(ShutdownApproved {
            request_id: req.request_id,
            from: self.cfg.name.to_string(),
            timestamp: timestamp_now(),
            pane_id: Some(self.cfg.pane_id.clone()),
            backend_type: Some(self.cfg.backend.clone()),
            extra: Map::new(),
        });
        self.to_lead(&approved, None)?;
        self.pane.say("shutdown approved; bye");
        Ok(0)
    }

    pub(super) fn interrupted(&mut self, sig: libc::c_int) -> Result<i32> {
        self.pane.say(format!("got signal {sig}; stopping"));
        self.stop_turn();
        self.release_tasks()?;
        Ok(128 + sig)
    }

    /// Best-effort cleanup when the loop failed: stop the agent, hand the tasks back.
    pub(super) fn abandon(&mut self) {
        self.stop_turn();
        if let Err(e) = self.release_tasks() {
            eprintln!("swarm: warning: could not return this teammate's tasks: {e}");
        }
    }
}
