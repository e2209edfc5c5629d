//! A remote member's pane: on the lead's machine `swarm relay attach`, on its host `swarm relay
//! view`.
//!
//! The pane a remote teammate gets on the lead's machine is an ordinary local pane (so
//! `swarm attach`, the layout, titles and colours are as for any teammate), running `swarm relay
//! attach`: it runs `ssh -tt HOST swarm relay view ...` over the host's master, which attaches a
//! tmux client to the member's pane there. When the connection breaks (ssh exits 255) it says
//! so, waits and connects again, and the pane stays up: a partition is not the member's death.
//! When the member ends on its host, `view` prints what its pane last showed and exits with the
//! member's own status, and `attach` exits with that status, so the local pane dies the way a
//! local teammate's would and the lead retires it as usual. A user who detaches the inner tmux
//! client is attached again.

use std::io::IsTerminal;
use std::process::Command;
use std::time::Duration;

use super::local;
use super::ssh::{Ssh, SSH_FAILED};
use super::{RemoteMember, HOST_FIELD};
use crate::backend::PaneState;
use crate::error::{Error, Result};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Roster;

/// `view`'s status when its client was detached but the member still runs.
pub(crate) const DETACHED: i32 = 253;

/// The local end: shows `name`'s remote pane until it ends; its exit status.
pub(crate) fn attach(store: &Store, team: &TeamName, name: &AgentName) -> Result<i32> {
    let mut backoff = Duration::from_secs(1);
    let mut said_waiting = false;
    loop {
        let member = Roster::new(store, team).require_member(name.as_str())?;
        if member.retired() {
            println!("swarm: {name} is no longer active on its host");
            return Ok(0);
        }
        let Some(remote) = RemoteMember::of(&member) else {
            if !member.extra.contains_key(HOST_FIELD) {
                return Err(Error::usage(format!("{name} does not run on another host")));
            }
            if !said_waiting {
                println!("swarm: waiting for {name} to start on its host ...");
                said_waiting = true;
            }
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let ssh = Ssh::to(&remote.host)?;
        let mut view = vec![
            remote.exe.clone(),
            "relay".into(),
            "view".into(),
            "--mirror".into(),
            remote.mirror.clone(),
            "--team".into(),
            team.to_string(),
            "--name".into(),
            name.to_string(),
        ];
        let tty = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        if !tty {
            view.push("--follow".into());
        }
        let argv = ssh.argv(&view, tty);
        let status = Command::new(&argv[0])
            .args(&argv[1..])
            .status()
            .map_err(|e| ssh.unreachable(format!("could not start ssh: {e}")))?;
        match status.code() {
            Some(SSH_FAILED) | None => {
                println!(
                    "\r\nswarm: the connection to {} is lost; {name} keeps running there. Connecting again in {} s ...",
                    remote.host,
                    backoff.as_secs()
                );
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
            Some(DETACHED) => {
                backoff = Duration::from_secs(1);
                std::thread::sleep(Duration::from_millis(200));
            }
            Some(code) => {
                println!("swarm: {name} ended on {} (exit {code})", remote.host);
                return Ok(code);
            }
        }
    }
}

/// The remote end: attaches to `name`'s pane here (with `follow`, prints its output instead)
/// until it ends; the member's exit status, or [`DETACHED`].
pub(crate) fn view(store: &Store, team: &TeamName, name: &AgentName, follow: bool) -> Result<i32> {
    if let Some(code) = ended(store, team, name)? {
        return Ok(code);
    }
    if follow {
        return follow_output(store, team, name);
    }
    let argv = local::attach_argv(store, team, name)?;
    let mut client = Command::new(&argv[0])
        .args(&argv[1..])
        .env_remove("TMUX")
        .spawn()
        .map_err(|e| Error::Command {
            program: "tmux".into(),
            detail: e.to_string(),
        })?;
    loop {
        if let Some(status) = client
            .try_wait()
            .map_err(|e| Error::Backend(e.to_string()))?
        {
            // Detached by the user, or its server went away with the member.
            return Ok(ended(store, team, name)?.unwrap_or(if status.success() {
                DETACHED
            } else {
                1
            }));
        }
        if matches!(
            local::state(store, team, name),
            PaneState::Dead { .. } | PaneState::Gone
        ) {
            // Our own tmux client, by its handle: the member is done, so is the view.
            let _ = client.kill();
            let _ = client.wait();
            return Ok(ended(store, team, name)?.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `Some(status)` when `name` no longer runs here, after printing what its pane last showed.
fn ended(store: &Store, team: &TeamName, name: &AgentName) -> Result<Option<i32>> {
    match local::state(store, team, name) {
        PaneState::Dead { code, signal } => {
            if let Ok(text) = local::capture(store, team, name) {
                print!(
                    "{}",
                    crate::output::terminal::visible_lines(text.trim_end())
                );
                println!();
            }
            Ok(Some(match (code, signal) {
                (Some(c), _) if (0..=252).contains(&c) => c,
                _ => 1,
            }))
        }
        PaneState::Gone => Ok(Some(0)),
        PaneState::Alive { .. } | PaneState::Unknown | PaneState::InsideLead => Ok(None),
    }
}

/// Prints the pane's output as it grows, until the member ends.
fn follow_output(store: &Store, team: &TeamName, name: &AgentName) -> Result<i32> {
    let mut printed = 0usize;
    loop {
        let text = local::capture(store, team, name).unwrap_or_default();
        let lines: Vec<&str> = text.trim_end().lines().collect();
        for line in lines.iter().skip(printed) {
            println!("{}", crate::output::terminal::visible(line));
        }
        printed = printed.max(lines.len());
        if !matches!(local::state(store, team, name), PaneState::Alive { .. }) {
            return Ok(match local::state(store, team, name) {
                PaneState::Dead {
                    code: Some(c @ 0..=252),
                    ..
                } => c,
                PaneState::Dead { .. } => 1,
                _ => 0,
            });
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
