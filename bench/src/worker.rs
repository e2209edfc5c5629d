//! The worker processes a benchmark starts, and the line protocol they speak.
//!
//! Every worker is a separate process (`swarm-bench worker append`, `worker claim-loop`, `swarm
//! send`, ...), because the claims are about processes. A [`Worker`] is killed and reaped when
//! dropped, so a benchmark that fails halfway leaves nothing running. Both ends live here
//! together so they cannot drift: the driver's side ([`spawn`], the texts the appending workers
//! write and [`writer_seq`] that reads them back) and, in `worker/`, what the worker processes
//! run.

mod append;
mod claim_loop;

use std::process::{Child, Command};

use swarm::{Error, Result};

use crate::cli::WorkerCommand;
use crate::Target;

/// Runs one worker process's loop.
pub(crate) fn run(target: &Target, cmd: WorkerCommand) -> Result<i32> {
    match cmd {
        WorkerCommand::Append(args) => append::run(target, &args),
        WorkerCommand::ClaimLoop(args) => claim_loop::run(target, &args),
    }
    .map(|()| 0)
}

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

/// The text of message `seq` from `writer`, as `worker append` writes it.
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

    #[test]
    fn each_implementation_is_named_on_the_worker_command_line() {
        use crate::cli::{Cli, Command, Impl};
        use clap::Parser;
        for imp in [Impl::Swarm, Impl::SwarmBaseline, Impl::ClaudeCode] {
            let argv = ["swarm-bench"]
                .iter()
                .chain(imp.args())
                .chain(&["--to", "coder"]);
            let cli = Cli::try_parse_from(argv).unwrap();
            assert!(
                matches!(&cli.command, Command::Worker(WorkerCommand::Append(a)) if a.imp == imp),
                "{imp:?}: {cli:?}"
            );
        }
    }
}
