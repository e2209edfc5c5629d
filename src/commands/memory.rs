//! `swarm memory list|show|write|delete`: the team memory from the command line.
//!
//! The memory is the project's, not the team's (Claude Code keys it by the project directory),
//! so each command first works out the project: `--project DIR`, else the roster `cwd` of the
//! member acting (a teammate in a worktree reaches its main repository's memory through the key
//! rule), else the lead's, which is the launch's directory.

use std::io::Read;
use std::path::Path;

use serde_json::json;

use super::Context;
use crate::commands::cli::{MemoryAt, MemoryCommand, MemoryWriteArgs};
use crate::error::{Error, Result};
use crate::output;
use crate::output::terminal::{visible, visible_lines};
use crate::store::mailbox::MAX_MESSAGE_BYTES;
use crate::store::memory::{TeamMemory, Topic};
use crate::store::roster::Roster;

pub(crate) fn run(ctx: &Context, cmd: MemoryCommand) -> Result<()> {
    match cmd {
        MemoryCommand::List(at) => {
            let memory = open(ctx, &at)?;
            let topics = memory.list()?;
            if ctx.json {
                return output::json(&json!({
                    "dir": memory.dir(), "project": memory.project(), "topics": topics}));
            }
            if topics.is_empty() {
                eprintln!("(no topics in {})", memory.dir().display());
            }
            for t in &topics {
                output::line(row(t))?;
            }
            Ok(())
        }
        MemoryCommand::Show { name, at } => {
            let topic = open(ctx, &at)?.show(&name)?;
            if ctx.json {
                return output::json(&topic);
            }
            // Any member can write a topic: make control characters visible.
            output::line(visible_lines(topic.text.trim_end()))
        }
        MemoryCommand::Write(args) => write(ctx, args),
        MemoryCommand::Delete { name, at } => {
            super::identity::check_acting_as(at.from.as_str(), "--from")?;
            let topic = open(ctx, &at)?.delete(&name)?;
            if ctx.json {
                return output::json(&topic);
            }
            output::line(format!("deleted {}", visible(&topic.name)))
        }
    }
}

fn write(ctx: &Context, args: MemoryWriteArgs) -> Result<()> {
    super::identity::check_acting_as(args.at.from.as_str(), "--from")?;
    let text = match (&args.text, &args.file) {
        (Some(t), _) if t == "-" => read_limited(&mut std::io::stdin(), "standard input")?,
        (Some(t), _) => t.clone(),
        (None, Some(file)) => {
            let mut f = std::fs::File::open(file).map_err(Error::io("open", file))?;
            read_limited(&mut f, &file.display().to_string())?
        }
        (None, None) => unreachable!("clap requires TEXT or --file"),
    };
    let memory = open(ctx, &args.at)?;
    let topic = memory.write(&args.name, &text, &args.description, args.at.from.as_str())?;
    if ctx.json {
        return output::json(&topic);
    }
    output::line(format!(
        "wrote {} and its line in {}",
        topic.file.display(),
        memory.index_path().display()
    ))
}

/// The team memory the command acts on (see the module doc).
fn open(ctx: &Context, at: &MemoryAt) -> Result<TeamMemory> {
    if let Some(dir) = &at.project {
        if !dir.is_dir() {
            return Err(Error::usage(format!(
                "--project {} is not a directory; pass the project's directory",
                dir.display()
            )));
        }
        return Ok(TeamMemory::for_project(&ctx.store, dir));
    }
    let team = ctx.team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    let member = config
        .member(at.from.as_str())
        .ok_or_else(|| Error::NoSuchMember {
            team: team.to_string(),
            name: at.from.to_string(),
        })?;
    let lead = config.members.iter().find(|m| m.is_lead());
    let cwd = [Some(member), lead]
        .into_iter()
        .flatten()
        .map(|m| m.cwd.as_str())
        .find(|c| !c.is_empty() && Path::new(c).is_absolute())
        .ok_or_else(|| {
            Error::usage(format!(
                "the roster of team {team} records no directory for {} or the lead; pass \
                 --project DIR",
                at.from
            ))
        })?;
    Ok(TeamMemory::for_project(&ctx.store, Path::new(cwd)))
}

fn read_limited(source: &mut dyn Read, what: &str) -> Result<String> {
    let mut buf = Vec::new();
    source
        .take(MAX_MESSAGE_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(Error::io("read", what))?;
    if buf.len() > MAX_MESSAGE_BYTES {
        return Err(Error::MessageTooLarge {
            size: buf.len(),
            limit: MAX_MESSAGE_BYTES,
        });
    }
    String::from_utf8(buf).map_err(|_| Error::usage(format!("{what} is not UTF-8 text")))
}

fn row(t: &Topic) -> String {
    let by = t.written_by.as_deref().unwrap_or("?");
    let at = t.written_at.as_deref().unwrap_or("?");
    let unindexed = if t.indexed { "" } else { " (not in MEMORY.md)" };
    format!(
        "{:<24} {} ({by}, {at}){unindexed}",
        visible(&t.name),
        visible(&t.description)
    )
}
