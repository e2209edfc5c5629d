//! The one seam through which swarm runs external programs (tmux, it2): a program and its argv.
//!
//! Backends take an `Arc<dyn Exec>`, so unit tests swap in a [`testing::Recorder`] and assert the
//! exact argv swarm would hand to tmux; every exit status is checked here, and a failure names
//! the command and its stderr.

use std::fmt;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// The one seam through which tmux, it2 and git-free helpers run: a program and its argv.
pub(crate) trait Exec: fmt::Debug + Send + Sync {
    /// Runs `program args...`; stdout on exit 0, else an error naming the command and its stderr.
    fn run(&self, program: &str, args: &[String]) -> Result<String>;
}

/// Runs programs for real, found on `PATH`.
#[derive(Debug, Default)]
pub(crate) struct SystemExec;

impl Exec for SystemExec {
    fn run(&self, program: &str, args: &[String]) -> Result<String> {
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null());
        // A swarm killed during a call takes the call with it: a tmux client left behind would
        // make a launch's panes after `swarm down` looked for them (issue 21 item 2).
        super::child::die_with_parent(&mut cmd, rustix::process::Signal::KILL);
        let out = cmd.output().map_err(|e| Error::Command {
            program: program.to_string(),
            detail: if e.kind() == std::io::ErrorKind::NotFound {
                format!("{program} is not installed or not on PATH")
            } else {
                e.to_string()
            },
        })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let sub = args
            .iter()
            .find(|a| !a.starts_with('-') && !a.contains('/'))
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        Err(Error::Command {
            program: format!("{program}{sub}"),
            detail: format!(
                "{} ({})",
                if stderr.is_empty() {
                    "no error output"
                } else {
                    &stderr
                },
                out.status
            ),
        })
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A recording [`Exec`] for unit tests: it answers from a script and keeps every argv.

    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::Exec;
    use crate::error::{Error, Result};

    #[derive(Debug, Default)]
    pub(crate) struct Recorder {
        pub calls: Mutex<Vec<Vec<String>>>,
        /// Answers in order; a missing answer is an empty success.
        pub answers: Mutex<VecDeque<Result<String, String>>>,
    }

    impl Recorder {
        pub(crate) fn answer(&self, out: &str) {
            self.answers.lock().unwrap().push_back(Ok(out.to_string()));
        }
        pub(crate) fn fail(&self, stderr: &str) {
            self.answers
                .lock()
                .unwrap()
                .push_back(Err(stderr.to_string()));
        }
        pub(crate) fn calls(&self) -> Vec<Vec<String>> {
            self.calls.lock().unwrap().clone()
        }
    }

    impl Exec for Recorder {
        fn run(&self, program: &str, args: &[String]) -> Result<String> {
            let mut call = vec![program.to_string()];
            call.extend(args.iter().cloned());
            self.calls.lock().unwrap().push(call);
            match self.answers.lock().unwrap().pop_front() {
                None => Ok(String::new()),
                Some(Ok(out)) => Ok(out),
                Some(Err(detail)) => Err(Error::Command {
                    program: program.into(),
                    detail,
                }),
            }
        }
    }
}
