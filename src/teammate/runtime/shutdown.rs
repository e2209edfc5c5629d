//! A shutdown request that meets a running turn (PROTOCOL.md section 7d): the turn finishes,
//! or the agent refuses.
//!
//! The design's teammate, asked to shut down, may finish its current operation and then
//! approve, or refuse and say why. So the runtime approves at once only when no turn runs.
//! Otherwise it holds the request: the turn goes on, no other turn or task starts, and the
//! request is written where the agent can read it (`store::shutdown_ask`, `swarm
//! shutdown-request show`). The first of these answers it: the agent's refusal (`swarm
//! shutdown-request reject REASON`, carrying this turn's token): `shutdown_rejected` with its
//! reason, and the teammate goes on as before; the turn's end: approved, as `stop` approves;
//! the end of the request's grace (`swarmGrace`): the turn is stopped as an ending runtime
//! stops it, its task back to pending, and approved. A grace of 0 (`swarm shutdown --force`)
//! stops the turn at once.

use serde_json::Map;
use tokio::time::Instant;

use super::Runtime;
use crate::error::Result;
use crate::store::fsio::now_ms;
use crate::store::protocol::{timestamp_now, Protocol, ShutdownRejected, ShutdownRequest};
use crate::store::shutdown_ask::{Asked, ShutdownAsk};
use crate::teammate::pane::suffix;

/// The shutdown requests held until the running turn ends, and when its grace is over.
pub(super) struct Held {
    pub(super) requests: Vec<ShutdownRequest>,
    pub(super) deadline: Instant,
    /// The shortest grace asked, for the pane.
    grace: std::time::Duration,
}

impl Runtime {
    pub(super) fn shutdown_ask(&self) -> ShutdownAsk {
        ShutdownAsk::new(&self.cfg.store, &self.cfg.team, &self.cfg.name)
    }

    /// The lead's shutdown request, read in the inbox: held until [`Runtime::settle_shutdown`]
    /// can answer it (a second request shares the first one's answer and the sooner deadline).
    pub(super) fn asked_to_shut_down(&mut self, req: ShutdownRequest) -> Result<()> {
        self.pane.say(format!(
            "shutdown requested by {}{}",
            req.from,
            suffix(req.reason.as_deref())
        ));
        let grace = req.grace();
        let deadline = Instant::now() + grace;
        let mut asked = Asked {
            request_id: req.request_id.clone(),
            from: req.from.clone(),
            reason: req.reason.clone(),
            grace_ends_at: 0,
        };
        match &mut self.held {
            Some(held) => {
                held.deadline = held.deadline.min(deadline);
                held.grace = held.grace.min(grace);
                held.requests.push(req);
            }
            None => {
                self.held = Some(Held {
                    requests: vec![req],
                    deadline,
                    grace,
                })
            }
        }
        let left = self
            .shutdown_deadline()
            .map_or(grace, |d| d.saturating_duration_since(Instant::now()));
        asked.grace_ends_at = now_ms().saturating_add(left.as_millis() as u64);
        if self.current.is_some() && !grace.is_zero() {
            self.pane.say(format!(
                "letting the running turn finish first (it is stopped after {} s); its agent may \
                 refuse with `swarm shutdown-request reject REASON`",
                (left.as_millis() as u64).div_ceil(1000)
            ));
            self.shutdown_ask().set_asked(&asked)?;
        }
        Ok(())
    }

    /// Answers the held request once it can be: `Some(0)` when it approved (the runtime is
    /// done), `None` while the turn goes on or after a refusal.
    pub(super) async fn settle_shutdown(&mut self) -> Result<Option<i32>> {
        let Some(held) = &self.held else {
            return Ok(None);
        };
        if let Some(current) = &self.current {
            if let Some(reason) = self.shutdown_ask().refusal(&current.token)? {
                self.reject(&reason)?;
                return Ok(None);
            }
            if Instant::now() < held.deadline {
                return Ok(None);
            }
            if !held.grace.is_zero() {
                self.pane.say(format!(
                    "the running turn did not finish within the shutdown's grace of {} s",
                    held.grace.as_secs_f32()
                ));
            }
        }
        self.approve().await.map(Some)
    }

    /// When the held request's grace ends, if one is held.
    pub(super) fn shutdown_deadline(&self) -> Option<Instant> {
        self.held.as_ref().map(|h| h.deadline)
    }

    /// The turn's agent refused: each held request gets `shutdown_rejected` with its reason,
    /// and the teammate goes on.
    pub(super) fn reject(&mut self, reason: &str) -> Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        self.shutdown_ask().clear_asked();
        for req in held.requests {
            let rejected = Protocol::ShutdownRejected(ShutdownRejected {
                request_id: req.request_id,
                from: self.cfg.name.to_string(),
                reason: reason.to_string(),
                timestamp: timestamp_now(),
                extra: Map::new(),
            });
            self.to_lead(&rejected, None)?;
        }
        self.pane
            .say(format!("refused the shutdown: {reason}; going on"));
        Ok(())
    }

    /// The turn with `token` just ended: its refusal, if its agent wrote one, answers a held
    /// request; either way the refusal is over with its turn.
    pub(super) fn turn_refusal_over(&mut self, token: &str) -> Result<()> {
        let ask = self.shutdown_ask();
        let refusal = match self.held {
            Some(_) => ask.refusal(token)?,
            None => None,
        };
        ask.clear_refusal();
        match refusal {
            Some(reason) => self.reject(&reason),
            None => Ok(()),
        }
    }
}
