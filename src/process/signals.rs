//! The one signal catcher of swarm's long-lived processes.
//!
//! SIGINT, SIGTERM and SIGHUP become values a `tokio::select!` loop receives, so the loop can
//! finish its protocol work (stop a turn and return its task, ask teammates to shut down)
//! before it exits. Nothing runs in a signal handler but tokio's own; children start with the
//! default dispositions because exec resets handled signals.
//!
//! [`Early`] catches them before the loop that acts on them exists, on a runtime of its own
//! that the loop later runs on: an in-process launch catches from before its first child, so a
//! Ctrl-C while teammates are still starting waits for the supervisor, instead of killing the
//! launcher by the default disposition and leaving its children with nobody to stop them.

use std::future::Future;

use tokio::runtime::Runtime;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::error::{Error, Result};

/// A signal swarm acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caught {
    Interrupt,
    Terminate,
    Hangup,
}

impl Caught {
    /// The signal number, for exit codes (`128 + n`).
    pub(crate) fn number(self) -> i32 {
        match self {
            Caught::Interrupt => 2,
            Caught::Hangup => 1,
            Caught::Terminate => 15,
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP, caught from creation on.
pub(crate) struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Starts catching. Must be called inside a tokio runtime (see [`crate::process::block_on`]).
    pub(crate) fn catch() -> Result<Signals> {
        let install = |kind: SignalKind| {
            signal(kind).map_err(|e| Error::Backend(format!("failed to catch signals: {e}")))
        };
        Ok(Signals {
            interrupt: install(SignalKind::interrupt())?,
            terminate: install(SignalKind::terminate())?,
            hangup: install(SignalKind::hangup())?,
        })
    }

    /// The next caught signal.
    pub(crate) async fn recv(&mut self) -> Caught {
        tokio::select! {
            _ = self.interrupt.recv() => Caught::Interrupt,
            _ = self.terminate.recv() => Caught::Terminate,
            _ = self.hangup.recv() => Caught::Hangup,
        }
    }
}

/// Signals caught from now on, held with the runtime whose driver sees them (a signal that
/// arrives before [`Early::block_on`] is kept, not lost).
pub(crate) struct Early {
    runtime: Runtime,
    signals: Signals,
}

impl Early {
    /// Starts catching now.
    pub(crate) fn catch() -> Result<Early> {
        let runtime = crate::process::runtime();
        let signals = runtime.block_on(async { Signals::catch() })?;
        Ok(Early { runtime, signals })
    }

    /// Runs `task` with the signals caught so far and from now on.
    pub(crate) fn block_on<F: Future>(self, task: impl FnOnce(Signals) -> F) -> F::Output {
        let Early { runtime, signals } = self;
        runtime.block_on(task(signals))
    }
}

impl std::fmt::Debug for Early {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Early(SIGINT, SIGTERM, SIGHUP)")
    }
}
