//! What a hidden step becomes when its work is done: the program it hands its process on to.
//!
//! A pane's trampoline (`swarm pane-exec`) becomes the teammate, and a contained teammate's
//! sandbox steps (`swarm sandbox-exec`, outside and inside `bwrap`) become `bwrap` and then the
//! teammate; each keeps its pid, so the process swarm recorded is the one that runs. Where the
//! next program is this very swarm binary (the trampoline's next is the sandbox's outer step,
//! the inner step's is `swarm teammate`), the step runs that command in its own process instead
//! of executing the binary again: each exec of swarm costs a teammate's start its loading,
//! relocation and page faults, and a contained teammate used to pay four. The command runs as
//! the exec would have run it: the same argv, the environment and working directory applied
//! first; `commands` parses and runs it, and decides where it may (the environment set here is
//! not the one `/proc` shows for the process, where swarm looks for a teammate's spawn token).

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// The program a step becomes, with what it is to be given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Successor {
    pub(crate) argv: Vec<String>,
    /// Set over the step's own environment.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
}

impl Successor {
    pub(crate) fn of(argv: Vec<String>) -> Successor {
        Successor {
            argv,
            env: Vec::new(),
            cwd: None,
        }
    }

    /// Whether the program is this very executable (the same file, not a rebuilt one at the
    /// same path), so its command can run here.
    pub(crate) fn is_this_swarm(&self) -> bool {
        let Some(program) = self.argv.first() else {
            return false;
        };
        match (
            std::fs::metadata(program),
            std::fs::metadata("/proc/self/exe"),
        ) {
            (Ok(next), Ok(this)) => next.dev() == this.dev() && next.ino() == this.ino(),
            _ => false,
        }
    }

    /// Gives this process the environment and working directory the exec would have given the
    /// program. Called while the step is still one thread (nothing has started another), so
    /// setting the environment races no reader.
    pub(crate) fn enter_here(&self) -> Result<()> {
        for (key, value) in &self.env {
            std::env::set_var(key, value);
        }
        if let Some(dir) = &self.cwd {
            std::env::set_current_dir(dir).map_err(Error::io("enter", dir))?;
        }
        Ok(())
    }

    /// Becomes the program; returns only the error that stopped it.
    pub(crate) fn exec(self) -> Error {
        let mut cmd = match self.command() {
            Ok(cmd) => cmd,
            Err(e) => return e,
        };
        self.failed(cmd.exec())
    }

    /// The program with its argv, environment and working directory, as the exec (or a step
    /// that runs it as its child, `last_words::parent_of`) gives them.
    pub(crate) fn command(&self) -> Result<std::process::Command> {
        let Some((program, args)) = self.argv.split_first() else {
            return Err(Error::usage("the command to become is empty"));
        };
        let mut cmd = std::process::Command::new(program);
        cmd.args(args).envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        Ok(cmd)
    }

    /// The error of a program that could not be started.
    pub(crate) fn failed(&self, err: std::io::Error) -> Error {
        Error::Command {
            program: self.argv.first().cloned().unwrap_or_default(),
            detail: err.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_very_file_is_this_swarm() {
        let this = std::env::current_exe().unwrap().display().to_string();
        assert!(Successor::of(vec![this.clone(), "x".into()]).is_this_swarm());
        // Another path to the same file is still it; another program is not.
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&this, &link).unwrap();
        assert!(Successor::of(vec![link.display().to_string()]).is_this_swarm());
        assert!(!Successor::of(vec!["/bin/sh".into()]).is_this_swarm());
        assert!(!Successor::of(vec!["no-such-program".into()]).is_this_swarm());
        assert!(!Successor::of(Vec::new()).is_this_swarm());
    }
}
