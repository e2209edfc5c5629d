//! `swarm init [FILE]`: a commented starter swarm file, the tmuxinator habit.
//!
//! A new user's first swarm file is easier to edit than to write: this one is YAML (so it can
//! carry comments; `launch::swarmfile` reads YAML by the file's extension) with every field a
//! first team needs, explained where it stands, and shell teammates so `swarm launch` runs it
//! as it is with no model. An existing file is never overwritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::output;

/// The starter file. A test launches it as written (`--dry-run`).
const STARTER: &str = r#"# A swarm file: one team, its teammates and the tasks they start with.
# `swarm launch FILE --dry-run` shows each teammate's exact command line; `swarm launch FILE`
# starts the team; `swarm down` stops it and `swarm up` brings it back.

# The team's name: lowercase letters, digits and '-'.
team: my-team
description: What this team is for

# What runs each teammate: claude (Claude Code), shell (runs `$ command` prompts and task
# descriptions; needs no model), or another CLI agent as words, e.g. "codex exec".
agent: shell

# Where the teammates start, relative to this file.
cwd: .

teammates:
  # name: what the lead and the others call it; prompt: its first instruction.
  - name: builder
    prompt: "$ echo \"$SWARM_AGENT_NAME is ready in $PWD\""
    # model: sonnet      # a claude teammate's model
    # worktree: true     # its own git worktree, on branch swarm/<team>/<name>
  - name: checker
    prompt: "$ echo \"$SWARM_AGENT_NAME is ready in $PWD\""

# The shared task list. blockedBy names earlier tasks here by their place, from 0.
tasks:
  - subject: List the files
    description: ls
  - subject: Check the list
    description: echo checked
    blockedBy: [0]
"#;

/// Writes the starter file to `file` (default `swarm.yaml`), refusing one that exists.
pub(crate) fn run(file: Option<PathBuf>) -> Result<()> {
    let file = file.unwrap_or_else(|| PathBuf::from("swarm.yaml"));
    if !is_yaml(&file) {
        return Err(Error::usage(format!(
            "swarm init writes YAML (JSON has no comments): name the file .yaml or .yml, not {}",
            file.display()
        )));
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::usage(format!(
                "{} already exists; swarm init does not overwrite it (name another file)",
                file.display()
            )),
            _ => Error::io("create", &file)(e),
        })?;
    out.write_all(STARTER.as_bytes())
        .map_err(Error::io("write", &file))?;
    let shown = crate::backend::shell_quote(&file.to_string_lossy());
    output::line(format!(
        "wrote {}; edit it, then `swarm launch {shown} --dry-run` shows what would run and \
         `swarm launch {shown}` starts the team",
        file.display()
    ))
}

fn is_yaml(file: &Path) -> bool {
    file.extension().is_some_and(|e| e == "yaml" || e == "yml")
}
