//! How long a shutdown waits, and the grace it gives a busy teammate (PROTOCOL.md section 7d).
//!
//! The lead waits `timeout` for answers; a teammate whose turn is running gets `grace` to
//! finish it before its runtime stops the turn and approves. The two must fit: a grace that
//! ends after the lead stopped waiting means the teammate is killed mid-turn anyway, the very
//! thing the grace is for. So the grace is, unless given, the wait less the [`STOP_MARGIN`] a
//! stopped turn and its answer take; a given grace alone makes the wait that much longer; and
//! a wait too short for a given grace is refused. `--force` never waits: no grace.

use std::time::Duration;

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub(crate) struct ShutdownOptions {
    /// How long to wait for answers before killing anyway.
    pub timeout: Duration,
    /// Kill even a teammate that rejected the request, and give none a grace.
    pub force: bool,
    pub reason: Option<String>,
    /// How long a busy teammate's running turn may take to finish; `None`: what the wait
    /// leaves ([`grace_within`]).
    pub grace: Option<Duration>,
}

impl Default for ShutdownOptions {
    fn default() -> Self {
        ShutdownOptions {
            timeout: DEFAULT_WAIT,
            force: false,
            reason: None,
            grace: None,
        }
    }
}

/// `swarm shutdown`'s and `swarm down`'s wait when neither `--timeout` nor `--grace` says.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// What a wait keeps back from a busy teammate's grace: the time to stop its turn (SIGTERM, 2 s,
/// SIGKILL) and for its approval to arrive, so the answer comes before the lead stops waiting.
pub(crate) const STOP_MARGIN: Duration = Duration::from_secs(5);

/// The grace a wait of `wait` leaves a busy teammate: the wait less [`STOP_MARGIN`].
pub(crate) fn grace_within(wait: Duration) -> Duration {
    wait.saturating_sub(STOP_MARGIN)
}

impl ShutdownOptions {
    /// The options of `swarm shutdown` and `swarm down`: a `--timeout` alone leaves the grace
    /// its wait allows, a `--grace` alone waits that plus [`STOP_MARGIN`], and a `--timeout`
    /// shorter than that is refused; `--force` gives no grace.
    pub(crate) fn from_flags(
        timeout: Option<u64>,
        grace: Option<u64>,
        force: bool,
        reason: Option<String>,
    ) -> Result<ShutdownOptions> {
        let grace = grace.map(Duration::from_secs);
        let timeout = match (timeout.map(Duration::from_secs), grace) {
            (Some(t), Some(g)) if t < g + STOP_MARGIN => {
                return Err(Error::usage(format!(
                    "--timeout {} is shorter than --grace {} plus the {} s a stopped turn and its                      answer take; give --timeout {} or more, or leave it out",
                    t.as_secs(),
                    g.as_secs(),
                    STOP_MARGIN.as_secs(),
                    (g + STOP_MARGIN).as_secs()
                )))
            }
            (Some(t), _) => t,
            (None, Some(g)) => g + STOP_MARGIN,
            (None, None) => DEFAULT_WAIT,
        };
        Ok(ShutdownOptions {
            timeout,
            force,
            reason,
            grace,
        })
    }

    /// The grace the request gives a busy teammate: none with `force` (its turn is stopped at
    /// once, as `--force` never waits), else `grace`, else what the wait leaves.
    pub(crate) fn grace(&self) -> Duration {
        match (self.force, self.grace) {
            (true, _) => Duration::ZERO,
            (false, Some(grace)) => grace,
            (false, None) => grace_within(self.timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::send_shutdown_request;
    use crate::store::fixture::team_with;
    use crate::store::mailbox::Mailbox;
    use crate::store::names::AgentName;
    use crate::store::protocol::{Payload, Protocol};

    #[test]
    fn the_grace_fits_in_the_wait_and_force_gives_none() {
        let opts = |t, g, force| ShutdownOptions::from_flags(t, g, force, None);
        let secs = |o: &ShutdownOptions| (o.timeout.as_secs(), o.grace().as_secs());
        assert_eq!(secs(&opts(None, None, false).unwrap()), (30, 25));
        assert_eq!(secs(&opts(Some(10), None, false).unwrap()), (10, 5));
        assert_eq!(secs(&opts(Some(2), None, false).unwrap()), (2, 0));
        assert_eq!(secs(&opts(None, Some(60), false).unwrap()), (65, 60));
        assert_eq!(secs(&opts(Some(70), Some(60), false).unwrap()), (70, 60));
        assert_eq!(secs(&opts(None, None, true).unwrap()), (30, 0));
        let e = opts(Some(10), Some(60), false).unwrap_err().to_string();
        assert!(e.contains("--timeout 10 is shorter than --grace 60"), "{e}");
        // The request carries it; the runtime reads it back.
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        send_shutdown_request(&store, &team, &coder, None, Some(Duration::from_secs(7))).unwrap();
        send_shutdown_request(&store, &team, &coder, None, None).unwrap();
        let graces: Vec<Duration> = Mailbox::new(&store, &team)
            .read(&coder, false)
            .unwrap()
            .iter()
            .filter_map(|m| match m.payload() {
                Payload::Protocol(p) => match *p {
                    Protocol::ShutdownRequest(r) => Some(r.grace()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(
            graces,
            [
                Duration::from_secs(7),
                crate::store::protocol::DEFAULT_GRACE
            ]
        );
    }
}
