//! What the lead's machine does about a remote member: judge it, stop it, act on its host.
//!
//! A remote member's local pane runs `swarm relay attach`, which stays up while its host is
//! unreachable, so the pane alone would call a member alive that nobody can see. [`judge`]
//! combines the pane with what the host's link last heard: while the link is connected the
//! relay's report of the member (its runtime's liveness lock, else its pane there) is its
//! liveness; while it is not, nothing says either way and the member is unknown, never dead, so
//! nothing retires it on a guess; nor is it dead by a report the host made before it started
//! the member again (a contained runtime takes a moment to take its lock). [`stop`] closes its
//! pane on its host (by the recorded pane, whose marks are checked there), and [`run_on_host`]
//! runs one `swarm relay` command there.

use super::frame::Life;
use super::ssh::Ssh;
use super::state::LinkState;
use super::{daemon, host_of, RemoteMember};
use crate::backend::PaneState;
use crate::error::Result;
use crate::store::liveness::Liveness;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::Member;

/// For a remote member: its liveness and pane state as home can tell them, from its local
/// pane's `pane` and its host's link. `None` for a member on this machine.
pub(crate) fn judge(
    store: &Store,
    team: &TeamName,
    member: &Member,
    pane: PaneState,
) -> Option<(Liveness, PaneState)> {
    let host = host_of(member)?;
    // In a host's own mirror its members are local.
    if store.mirror_marker_path(team).exists() {
        return None;
    }
    let state = LinkState::load(store, team, &host);
    let connected =
        state.as_ref().is_some_and(|s| s.connected) && daemon::running(store, team, &host);
    if !connected {
        // The local pane's own death still counts (its attach ended: the member did).
        let pane = if pane.is_dead() {
            pane
        } else {
            PaneState::Unknown
        };
        return Some((Liveness::Unknown, pane));
    }
    // What the host said before it started the member again (`up`, `restart`) is of the run
    // before: until the host says anything newer, the member is starting, not dead.
    let started_ms = RemoteMember::of(member).map_or(0, |r| r.started_ms);
    let heard_before = state.as_ref().is_some_and(|s| s.members_ms < started_ms);
    let life = state.and_then(|s| s.members.get(member.name.as_str()).copied());
    let liveness = match life {
        Some(Life::Alive) => Liveness::Alive,
        Some(Life::Dead { .. }) if heard_before => Liveness::Unknown,
        Some(Life::Dead { .. }) => Liveness::Dead,
        Some(Life::Unknown) | None => Liveness::Unknown,
    };
    Some((liveness, pane))
}

/// Runs `swarm [--team T] relay ARGS` on the member's host; its standard output.
pub(crate) fn run_on_host(
    team: &TeamName,
    remote: &RemoteMember,
    args: &[&str],
    stdin: &[u8],
) -> Result<String> {
    let mut argv = vec![
        remote.exe.clone(),
        "--team".into(),
        team.to_string(),
        "relay".into(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    Ssh::to(&remote.host)?.run(&argv, stdin)
}

/// `swarm logs NAME [-f]` run by the swarm on the member's host against its mirror (where the
/// member's roster entry names its pane there), its output passed through; its exit status.
pub(crate) fn logs(
    team: &TeamName,
    remote: &RemoteMember,
    name: &crate::store::names::AgentName,
    follow: bool,
    json: bool,
) -> Result<i32> {
    let mut argv = vec![
        remote.exe.clone(),
        "--root".into(),
        remote.root.clone(),
        "--team".into(),
        team.to_string(),
    ];
    if json {
        argv.push("--json".into());
    }
    argv.extend(["logs".into(), name.to_string()]);
    if follow {
        argv.push("--follow".into());
    }
    let ssh = Ssh::to(&remote.host)?;
    let ssh_argv = ssh.argv(&argv, false);
    let status = std::process::Command::new(&ssh_argv[0])
        .args(&ssh_argv[1..])
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| ssh.unreachable(format!("could not start ssh: {e}")))?;
    match status.code() {
        Some(super::ssh::SSH_FAILED) | None => {
            Err(ssh.unreachable("the connection failed while printing the logs"))
        }
        Some(code) => Ok(code),
    }
}

/// Closes a remote member's pane on its host; `Ok` when it is gone or never started there.
pub(crate) fn stop(team: &TeamName, member: &Member) -> Result<()> {
    let Some(remote) = RemoteMember::of(member) else {
        return Ok(());
    };
    run_on_host(
        team,
        &remote,
        &[
            "kill",
            "--mirror",
            &remote.mirror,
            "--name",
            member.name.as_str(),
        ],
        b"",
    )
    .map(drop)
}

/// Stops every link of `team`: the team is down. The hosts' ssh masters are left to end by
/// themselves (`ControlPersist`), since other teams may share them.
pub(crate) fn stop_links(store: &Store, team: &TeamName, members: &[Member]) {
    let mut hosts: Vec<_> = members.iter().filter_map(host_of).collect();
    hosts.sort();
    hosts.dedup();
    for host in hosts {
        daemon::stop(store, team, &host);
    }
}
