//! Teammates on other hosts in a launch: where they go, their command lines there, and
//! starting them (the machinery is `crate::remote`).
//!
//! Preparing a teammate with a `host` asks the host first (`remote::hello`: reachable, the same
//! swarm version, the directory there, a worktree planned there), and builds two command lines:
//! the one that runs on the host (section 10's, with the host's swarm, mirror root and
//! `claude`; the launcher's forwarded environment travels with it, over ssh, never on a command
//! line) and the one its local pane runs, `swarm relay attach`. Executing starts each host's
//! link, waits until the host's mirror holds the roster and the teammate's first message (a
//! signed lead entry must reach a Claude Code teammate well within the 120 s it accepts), then
//! starts the teammate there (`swarm relay spawn`, the spec on stdin, `launch::host`), which
//! contains it as a local one is contained unless the member opted out, and records where it
//! runs and how its host contained it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::command_line::{self, AgentFlags};
use super::host::Spawned;
use super::prepare::{PreparedTeammate, RemoteLaunch, Shared};
use super::sandbox;
use super::{AgentKind, Prepared, TeammatePlan};
use crate::backend::pane_exec::ExecSpec;
use crate::backend::{BackendKind, Launch};
use crate::error::{Error, Result};
use crate::lifecycle::worktree::Worktree;
use crate::remote::hello::{HelloRequest, HostInfo};
use crate::remote::local::{LocalPane, SpawnSpec};
use crate::remote::ssh::{Ssh, FORWARDED_ENV};
use crate::remote::{daemon, mirror_id, state, Host, RemoteMember, REMOTE_FIELD};
use crate::store::fsio;
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};
use crate::teammate::args::{BuiltinAgent, TeammateArgs};

/// How long a launch waits for a host's mirror to catch up before it gives up.
const SYNC_LIMIT: Duration = Duration::from_secs(60);

/// Where a teammate goes on its host.
pub(super) struct Place {
    host: Host,
    info: HostInfo,
    planned: Option<Worktree>,
    kept: Option<Worktree>,
}

impl Place {
    /// As `teammate_cwd` answers for a local teammate: the directory before any worktree,
    /// where it starts, the worktree to create and the one it keeps.
    pub(super) fn dirs(&self) -> (PathBuf, PathBuf, Option<Worktree>, Option<Worktree>) {
        let cwd = self
            .planned
            .as_ref()
            .or(self.kept.as_ref())
            .map_or(self.info.cwd.clone(), |wt| wt.cwd.clone());
        (
            self.info.cwd.clone(),
            cwd,
            self.planned.clone(),
            self.kept.clone(),
        )
    }
}

impl Shared<'_> {
    /// The swarm to run on hosts: `--remote-swarm`, the plan's `remoteSwarm`, the one the
    /// member ran before, else `swarm` on the remote PATH.
    fn remote_swarm(&self, previous: Option<&Member>) -> String {
        self.opts
            .remote_swarm
            .clone()
            .or_else(|| self.plan_remote_swarm.clone())
            .or_else(|| previous.and_then(RemoteMember::of).map(|r| r.exe))
            .unwrap_or_else(|| "swarm".into())
    }

    /// Asks `host` about teammate `t`: refused when it cannot run there. A dry run shows what
    /// it can without the host.
    pub(super) fn remote_place(
        &mut self,
        t: &TeammatePlan,
        host: &Host,
        previous: Option<&Member>,
    ) -> Result<Place> {
        let worktree = t.worktree.unwrap_or(self.default_worktree);
        let kept = previous.and_then(Worktree::of_member);
        let req = HelloRequest {
            mirror: mirror_id(self.store),
            team: self.team.clone(),
            name: t.name.clone(),
            cwd: t.cwd.clone(),
            worktree,
            kept: kept.as_ref().map(Worktree::to_json),
        };
        let exe = self.remote_swarm(previous);
        let info = match self.hosts.probe(host, &exe, &req) {
            Ok(info) => info,
            Err(e) if self.opts.dry_run => {
                eprintln!(
                    "swarm: warning: {e} (the dry run shows <...> where the host's paths would be)"
                );
                placeholder(&exe, t)
            }
            Err(e) => return Err(e),
        };
        if let Some(why) = &info.cwd_error {
            return Err(Error::usage(format!(
                "teammate {} on {host}: {why}",
                t.name
            )));
        }
        if !info.tmux && !self.opts.dry_run {
            return Err(Error::usage(format!(
                "teammate {} on {host}: tmux is not installed there, and a remote teammate runs in a tmux server of its own so it outlives a dropped connection; install tmux on {host}",
                t.name
            )));
        }
        let from_json = |v: &Option<Value>| {
            v.as_ref()
                .and_then(|v| serde_json::from_value::<Worktree>(v.clone()).ok())
        };
        let (planned, kept) = if info.worktree_kept {
            (None, from_json(&info.worktree))
        } else {
            (from_json(&info.worktree), None)
        };
        Ok(Place {
            host: host.clone(),
            info,
            planned,
            kept,
        })
    }

    /// The teammate's command line on its host, and its local pane's: `swarm relay attach`.
    pub(super) fn remote_launch(
        &self,
        t: &TeammatePlan,
        agent: &AgentKind,
        identity: &TeammateArgs,
        flags: &AgentFlags,
        place: Place,
        cwd: PathBuf,
    ) -> Result<(Launch, RemoteLaunch)> {
        let info = &place.info;
        let exe = Path::new(&info.exe);
        let root = PathBuf::from(&info.root);
        let (argv, env) = match agent {
            AgentKind::Claude => {
                let bin = match (&info.claude, self.opts.dry_run) {
                    (Some(bin), _) => bin.clone(),
                    (None, true) => "claude".into(),
                    (None, false) => {
                        return Err(Error::usage(format!(
                            "teammate {} on {}: claude was not found there (CLAUDE_CODE_TEAMMATE_COMMAND, PATH, ~/.claude/local, ~/.local/bin); install Claude Code on {}",
                            t.name, place.host, place.host
                        )))
                    }
                };
                command_line::claude(Path::new(&bin), identity, None, flags, exe, &root)
            }
            AgentKind::Shell | AgentKind::Command(_) => {
                let mut args = identity.clone();
                match agent {
                    // Found on the host's PATH when it runs: this machine's PATH means nothing
                    // there.
                    AgentKind::Command(words) => {
                        args.command =
                            command_line::agent_command(Path::new(&words[0]), &words[1..], flags);
                    }
                    _ => args.agent = Some(BuiltinAgent::Shell),
                }
                command_line::runtime(exe, &args, &root, BackendKind::Tmux)
            }
        };
        // A claude teammate there finds the team under the mirror; the launcher's own
        // CLAUDE_CONFIG_DIR (and where its login is) names a directory on this machine, never
        // forwarded.
        let config: Vec<(String, String)> = matches!(agent, AgentKind::Claude)
            .then(|| ("CLAUDE_CONFIG_DIR".to_string(), root.display().to_string()))
            .into_iter()
            .collect();
        let env = command_line::layer_env(
            env,
            |key| {
                (key != "CLAUDE_CONFIG_DIR" && key != super::claude_config::LOGIN_DIR_ENV)
                    .then(|| self.opts.env_var(key).map(str::to_string))
                    .flatten()
            },
            &config,
            &t.env,
        );
        let remote = RemoteLaunch {
            host: place.host.clone(),
            info: place.info.clone(),
            launch: Launch {
                argv,
                env,
                cwd,
                log: None,
            },
            worktree: place.planned.clone(),
            // The member's wish, which `prepare` puts here.
            sandbox: true,
        };
        Ok((self.attach_launch(t), remote))
    }

    /// What the teammate's local pane runs: `swarm relay attach`, with what ssh needs from the
    /// launcher's environment (a pane gets its terminal's, not the launcher's).
    fn attach_launch(&self, t: &TeammatePlan) -> Launch {
        let mut env: command_line::Env = vec![
            ("SWARM_ROOT".into(), self.root.display().to_string()),
            ("SWARM_TEAM".into(), self.team.to_string()),
            ("SWARM_AGENT_NAME".into(), t.name.to_string()),
            ("SWARM_AGENT_ID".into(), t.name.agent_id(self.team)),
        ];
        for key in FORWARDED_ENV {
            if let Some(v) = self.opts.env_var(key) {
                env.push((key.to_string(), v.to_string()));
            }
        }
        Launch {
            argv: vec![
                self.opts.swarm_exe.display().to_string(),
                "--root".into(),
                self.root.display().to_string(),
                "relay".into(),
                "attach".into(),
                "--team".into(),
                self.team.to_string(),
                "--name".into(),
                t.name.to_string(),
            ],
            env,
            cwd: self.base_cwd.clone(),
            log: (self.backend == BackendKind::InProcess)
                .then(|| crate::backend::absolute(&self.store.log_path(self.team, &t.name))),
        }
    }
}

/// What a dry run shows for a host it could not ask.
fn placeholder(exe: &str, t: &TeammatePlan) -> HostInfo {
    HostInfo {
        version: crate::remote::frame::VERSION.into(),
        exe: exe.into(),
        root: "<mirror root on the host>".into(),
        home: "<home on the host>".into(),
        machine: crate::store::machine::Machine {
            host: "<host>".into(),
            boot: String::new(),
        },
        now_ms: 0,
        claude: None,
        tmux: true,
        cwd: t.cwd.clone().unwrap_or_else(|| "<home on the host>".into()),
        cwd_error: None,
        worktree: None,
        worktree_kept: false,
    }
}

impl Prepared {
    /// Starts every remote teammate on its host, once the host's mirror holds what the launch
    /// wrote; records where each runs. On an error the ones started are stopped again.
    pub(super) fn start_remote(&self, store: &Store, progress: &mut dyn FnMut(&str)) -> Result<()> {
        let remote: Vec<&PreparedTeammate> = self
            .teammates
            .iter()
            .filter(|t| t.remote.is_some())
            .collect();
        let mut hosts: Vec<&RemoteLaunch> = Vec::new();
        for t in &remote {
            let r = t.remote.as_ref().expect("filtered");
            if !hosts.iter().any(|h| h.host == r.host) {
                hosts.push(r);
            }
        }
        let mut started: Vec<&PreparedTeammate> = Vec::new();
        let result = (|| {
            for h in &hosts {
                let since = fsio::now_ms();
                daemon::ensure(
                    store,
                    &self.team,
                    &h.host,
                    &self.opts.swarm_exe,
                    &h.info.exe,
                )?;
                state::wait_synced(store, &self.team, &h.host, since, SYNC_LIMIT)?;
                let ssh = Ssh::to(&h.host)?;
                for t in remote
                    .iter()
                    .filter(|t| t.remote.as_ref().is_some_and(|r| r.host == h.host))
                {
                    let pane = spawn_one(store, &self.team, &ssh, t)?;
                    started.push(t);
                    progress(&format!(
                        "{} ({}): {} on {} in its pane {} there",
                        t.name,
                        t.color,
                        t.agent.label(),
                        h.host,
                        pane.pane
                    ));
                }
            }
            Ok(())
        })();
        if result.is_err() {
            for t in started {
                stop_remote(store, &self.team, t);
            }
        }
        result
    }
}

/// `swarm relay spawn` for one teammate; records its place and how its host contained it in
/// the roster (a host that could not contain it, though wanted, is said on stderr).
fn spawn_one(
    store: &Store,
    team: &crate::store::names::TeamName,
    ssh: &Ssh,
    t: &PreparedTeammate,
) -> Result<LocalPane> {
    let r = t.remote.as_ref().expect("a remote teammate");
    let mirror = mirror_id(store);
    let spec = SpawnSpec {
        team: team.clone(),
        name: t.name.clone(),
        color: t.color.clone(),
        exec: ExecSpec::of(&r.launch),
        worktree: r.worktree.as_ref().map(Worktree::to_json),
        sandbox: r.sandbox,
    };
    let input = serde_json::to_vec(&spec).map_err(|e| Error::Backend(e.to_string()))?;
    let out = ssh.run(
        &[
            r.info.exe.clone(),
            "relay".into(),
            "spawn".into(),
            "--mirror".into(),
            mirror.clone(),
        ],
        &input,
    )?;
    let Spawned {
        pane,
        mut containment,
    } = serde_json::from_str(&out).map_err(|e| {
        Error::Backend(format!(
            "swarm relay spawn on {} answered something else ({e}): {}",
            r.host,
            out.trim()
        ))
    })?;
    if r.sandbox && !containment.contained {
        containment.how = format!("{} on {}", containment.how, r.host);
        eprintln!(
            "swarm: warning: teammate {} runs uncontained: {}; install bubblewrap on {}, or pass --no-sandbox (\"sandbox\": false) to silence this",
            t.name, containment.how, r.host
        );
    }
    let record = RemoteMember {
        host: r.host.clone(),
        exe: r.info.exe.clone(),
        mirror,
        root: r.info.root.clone(),
        pane: pane.pane.clone(),
        socket: pane.socket.clone(),
        started_ms: fsio::now_ms(),
    };
    let record = serde_json::to_value(&record).map_err(|e| Error::Backend(e.to_string()))?;
    Roster::new(store, team).update_member(&t.name, |m| {
        m.extra.insert(REMOTE_FIELD.into(), record);
        m.extra.insert(sandbox::FIELD.into(), containment.to_json());
    })?;
    Ok(pane)
}

/// Stops a remote teammate's pane on its host (rollback); an unreachable host is reported.
pub(super) fn stop_remote(
    store: &Store,
    team: &crate::store::names::TeamName,
    t: &PreparedTeammate,
) {
    let Some(r) = &t.remote else {
        return;
    };
    let stopped = Ssh::to(&r.host).and_then(|ssh| {
        ssh.run(
            &[
                r.info.exe.clone(),
                "--team".into(),
                team.to_string(),
                "relay".into(),
                "kill".into(),
                "--mirror".into(),
                mirror_id(store),
                "--name".into(),
                t.name.to_string(),
            ],
            b"",
        )
    });
    if let Err(e) = stopped {
        eprintln!(
            "swarm: warning: could not stop {} on {}: {e}",
            t.name, r.host
        );
    }
}
