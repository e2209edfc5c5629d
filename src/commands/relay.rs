//! `swarm relay ...`: the hidden commands behind teammates on other hosts (`crate::remote`).
//!
//! On the lead's machine, `link` runs a host's link and `attach` is a remote member's pane. On
//! a remote host, run by the lead's machine over ssh, `serve` is the relay, `hello` describes
//! the host for a launch, `spawn` starts a member's pane, contained (`launch::host`), `kill`
//! stops it, `view` shows it and `worktree` finishes a member's worktree. The remote commands name the mirror by its id and
//! read everything a user wrote (directories, command lines, environment) as JSON on standard
//! input, so nothing of it is ever on a command line a remote shell parses.

use std::io::Read;
use std::path::PathBuf;

use super::Context;
use crate::commands::cli::RelayCommand;
use crate::error::{Error, Result};
use crate::lifecycle::worktree::Worktree;
use crate::output;
use crate::remote::hello::{HelloRequest, HostInfo};
use crate::remote::local::{self, SpawnSpec};
use crate::remote::{self as remote, mirror_root};
use crate::store::machine::Machine;
use crate::store::names::TeamName;
use crate::store::paths::Store;

pub(crate) fn run(ctx: &Context, cmd: RelayCommand) -> Result<i32> {
    let team = || -> Result<TeamName> {
        ctx.team
            .clone()
            .ok_or_else(|| Error::usage("swarm relay needs --team"))
    };
    match cmd {
        RelayCommand::Link { host, remote_swarm } => {
            remote::link::run(&ctx.store, &team()?, &host, &remote_swarm)
        }
        RelayCommand::Attach { name } => remote::attach::attach(&ctx.store, &team()?, &name),
        RelayCommand::Serve { mirror, host } => remote::relay::serve(&mirror, &team()?, &host),
        RelayCommand::Hello => {
            let req: HelloRequest = read_stdin("the hello request")?;
            output::json(&hello(req)?).map(|()| 0)
        }
        RelayCommand::Spawn { mirror } => {
            let spec: SpawnSpec = read_stdin("the spawn spec")?;
            let store = Store::new(mirror_root(&mirror)?);
            output::json(&crate::launch::host::spawn(&store, spec)?).map(|()| 0)
        }
        RelayCommand::Kill { mirror, name } => {
            let store = Store::new(mirror_root(&mirror)?);
            local::kill(&store, &team()?, &name)?;
            Ok(0)
        }
        RelayCommand::View {
            mirror,
            name,
            follow,
        } => {
            let store = Store::new(mirror_root(&mirror)?);
            remote::attach::view(&store, &team()?, &name, follow)
        }
        RelayCommand::Worktree { mirror } => {
            remote::check_mirror_id(&mirror)?;
            let wt: Worktree = read_stdin("the worktree record")?;
            output::json(&wt.finish()?).map(|()| 0)
        }
    }
}

fn read_stdin<T: serde::de::DeserializeOwned>(what: &str) -> Result<T> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .map_err(Error::io("read", "standard input"))?;
    serde_json::from_slice(&buf).map_err(|e| Error::usage(format!("{what} is invalid: {e}")))
}

/// This host, and one teammate's place on it, for the launch on the lead's machine.
fn hello(req: HelloRequest) -> Result<HostInfo> {
    let exe = crate::process::swarm_exe()?;
    let root = mirror_root(&req.mirror)?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let opts = crate::launch::LaunchOptions::from_process()?;
    let claude = crate::launch::resolve_claude(&opts)
        .ok()
        .map(|p| p.display().to_string());
    let tmux = which::which("tmux").is_ok();
    let cwd = match &req.cwd {
        Some(dir) => crate::backend::absolute(&home.join(dir)),
        None => home.clone(),
    };
    let mut cwd_error = (!cwd.is_dir()).then(|| format!("{} does not exist", cwd.display()));
    let mut worktree = None;
    let mut worktree_kept = false;
    if req.worktree && cwd_error.is_none() {
        let kept = req
            .kept
            .as_ref()
            .and_then(|v| serde_json::from_value::<Worktree>(v.clone()).ok())
            .filter(|wt| wt.path.is_dir());
        match kept {
            Some(wt) => {
                worktree = Some(wt.to_json());
                worktree_kept = true;
            }
            None => match Worktree::plan(&cwd, &req.team, &req.name) {
                Ok(wt) => worktree = Some(wt.to_json()),
                Err(e) => cwd_error = Some(e.to_string()),
            },
        }
    }
    Ok(HostInfo {
        version: crate::remote::frame::VERSION.into(),
        exe: exe.display().to_string(),
        root: root.display().to_string(),
        home: home.display().to_string(),
        machine: Machine::this().clone(),
        now_ms: crate::store::fsio::now_ms(),
        claude,
        tmux,
        cwd,
        cwd_error,
        worktree,
        worktree_kept,
    })
}
