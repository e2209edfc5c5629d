//! The worker processes a benchmark starts, and the line protocol they speak.
//!
//! Every worker is a separate `swarm` process (`swarm debug append`, `debug cc-append`, `debug
//! claim-loop`, `swarm send`, ...), because the claims are about processes. A [`Worker`] is
//! killed and reaped when dropped, so a benchmark that fails halfway leaves nothing running.
//! The message texts the appending workers write ([`message_text`]) and the parse the driver
//! reads them back with ([`writer_seq`]) live here together, so the two ends cannot drift.

use std::process::{Child, Command};

use crate::error::{Error, Result};

/// A worker process. Dropped before [`Worker::finish`] (a benchmark that fails halfway), it is
/// killed and reaped, so nothing is left running.
pub(crate) struct Worker(Option<Child>);

impl Worker {
    pub(crate) fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a running worker")
    }

    /// Waits for the worker and returns its stdout lines; a failed worker fails the benchmark.
    pub(crate) fn finish(mut self, what: &str) -> Result<Vec<String>> {
        let child = self.0.take().expect("a running worker");
        let out = child
            .wait_with_output()
            .map_err(Error::io("wait for", what))?;
        if !out.status.success() {
            return Err(Error::Command {
                program: what.to_string(),
                detail: format!(
                    "exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `cmd` as a worker.
pub(crate) fn spawn(cmd: &mut Command) -> Result<Worker> {
    cmd.spawn()
        .map(|c| Worker(Some(c)))
        .map_err(|e| Error::Command {
            program: format!("{cmd:?}"),
            detail: e.to_string(),
        })
}

/// Which append a writer process runs: swarm's group commit, swarm's append from before it
/// (the baseline kept for exactly this), or the Claude Code re-implementation.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Impl {
    Swarm,
    SwarmBaseline,
    ClaudeCode,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Swarm => "swarm",
            Impl::SwarmBaseline => "swarm before group commit",
            Impl::ClaudeCode => "Claude Code (re-implemented)",
        }
    }

    /// A short name for file and directory names.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Impl::Swarm => "swarm",
            Impl::SwarmBaseline => "baseline",
            Impl::ClaudeCode => "cc",
        }
    }

    /// The `swarm debug` arguments that append this way.
    pub(crate) fn args(self) -> &'static [&'static str] {
        match self {
            Impl::Swarm => &["debug", "append"],
            Impl::SwarmBaseline => &["debug", "append", "--baseline"],
            Impl::ClaudeCode => &["debug", "cc-append"],
        }
    }
}

/// The text of message `seq` from `writer`, as `swarm debug append` writes it.
pub(crate) fn message_text(writer: &str, seq: u64) -> String {
    format!("{writer}:{seq}")
}

/// Parses a [`message_text`] back into its writer and sequence number.
pub(crate) fn writer_seq(text: &str) -> Option<(String, u64)> {
    let (w, s) = text.rsplit_once(':')?;
    Some((w.to_string(), s.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_texts_parse_back() {
        assert_eq!(writer_seq(&message_text("w3", 42)), Some(("w3".into(), 42)));
        assert_eq!(writer_seq("no sequence"), None);
    }
}
