//! The command line of a teammate that runs on this machine, by its agent kind: `claude` as
//! section 10 of PROTOCOL.md starts it, or swarm's own runtime driving a shell or a command.
//! (`remote` builds the one of a teammate on another host.)

use std::path::PathBuf;

use super::claude_config::ClaudeConfig;
use super::command_line::{self, AgentFlags};
use super::prepare::Shared;
use super::program::{resolve_claude, resolve_program};
use super::{AgentKind, LaunchOptions, TeammatePlan};
use crate::backend::{absolute, BackendKind, Launch};
use crate::error::{Error, Result};
use crate::teammate::args::{BuiltinAgent, TeammateArgs};

impl Shared<'_> {
    /// The section-10 command line for the teammate's agent kind, and the config directory of
    /// a claude teammate.
    pub(super) fn launch(
        &mut self,
        t: &TeammatePlan,
        agent: &AgentKind,
        identity: &TeammateArgs,
        flags: &AgentFlags,
        cwd: PathBuf,
    ) -> Result<(Launch, Option<ClaudeConfig>)> {
        let opts = self.opts;
        let (argv, env, config) = match agent {
            AgentKind::Claude => {
                let bin = match &self.claude_bin {
                    Some(bin) => bin.clone(),
                    None => {
                        let found = resolve_claude(opts).or_else(|e| {
                            let name = opts
                                .env_var("CLAUDE_CODE_TEAMMATE_COMMAND")
                                .unwrap_or("claude");
                            not_installed(opts, e, name)
                        })?;
                        self.claude_bin.insert(found).clone()
                    }
                };
                let resume = t.resume.as_deref();
                let (argv, env) = command_line::claude(
                    &bin,
                    identity,
                    resume,
                    flags,
                    &opts.swarm_exe,
                    &self.root,
                );
                let config = ClaudeConfig::of(&self.root, |k| opts.env_var(k).map(str::to_string));
                (argv, env, Some(config))
            }
            AgentKind::Shell | AgentKind::Command(_) => {
                let mut args = identity.clone();
                match agent {
                    AgentKind::Command(words) => {
                        let what = format!("teammate {}: agent command", t.name);
                        let program = resolve_program(&words[0], &what, opts)
                            .or_else(|e| not_installed(opts, e, &words[0]))?;
                        args.command = command_line::agent_command(&program, &words[1..], flags);
                    }
                    _ => {
                        args.agent = Some(BuiltinAgent::Shell);
                        super::checks::warn_model_flags_dropped(t, &opts.inherited);
                    }
                }
                let (argv, env) =
                    command_line::runtime(&opts.swarm_exe, &args, &self.root, self.backend);
                (argv, env, None)
            }
        };
        let env = command_line::layer_env(
            env,
            |key| opts.env_var(key).map(str::to_string),
            config.as_ref().map_or(&[][..], |c| &c.env),
            &t.env,
        );
        let log = (self.backend == BackendKind::InProcess)
            .then(|| absolute(&self.store.log_path(self.team, &t.name)));
        let launch = Launch {
            argv,
            env,
            cwd,
            log,
        };
        Ok((launch, config))
    }
}

/// A program that is not installed: an error, except in a dry run, which shows the argv with
/// the name the launch would look up and says so on stderr.
fn not_installed(opts: &LaunchOptions, e: Error, name: &str) -> Result<PathBuf> {
    if !opts.dry_run {
        return Err(e);
    }
    eprintln!("swarm: warning: {e} (the dry run shows {name:?} where its path would be)");
    Ok(PathBuf::from(name))
}
