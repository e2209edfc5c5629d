//! The lead pane of a tmux launch: the lead console (`swarm lead`), or, with `--lead AGENT`,
//! the lead agent's runtime (`swarm lead ... -- AGENT`) with its goal. In-process, the lead
//! agent's runtime is a child of the launcher instead, its console on the launcher's terminal.

use std::path::{Path, PathBuf};

use super::command_line;
use super::program::{resolve_claude, resolve_program};
use super::{AgentKind, LaunchOptions, LeadPlan};
use crate::backend::{BackendKind, Launch};
use crate::error::{Error, Result};
use crate::store::names::TeamName;

/// The lead pane's (or in-process lead child's) command when the launch gives it one (`pane`:
/// the backend it runs on), and the lead agent's goal when the plan has a lead agent.
pub(super) fn lead_pane(
    pane: Option<BackendKind>,
    plan: Option<&LeadPlan>,
    opts: &LaunchOptions,
    root: &Path,
    team: &TeamName,
    cwd: PathBuf,
) -> Result<(Option<Launch>, Option<String>)> {
    let mut lead = pane.map(|kind| command_line::lead(&opts.swarm_exe, root, team, cwd, kind));
    if let Some(lead) = lead.as_mut() {
        // The console signs as the lead with the key the launcher made (src/store/lead_key.rs),
        // so it must look where the launcher looks, not where the tmux server's environment
        // (inherited from whoever started the server) points.
        for key in ["XDG_STATE_HOME", "HOME"] {
            if let Some(value) = opts.env_var(key) {
                lead.env.push((key.into(), value.into()));
            }
        }
    }
    let goal = match plan {
        Some(l) => Some(lead_agent(l, lead.as_mut(), opts)?),
        None => None,
    };
    Ok((lead, goal))
}

/// Makes the lead pane run the lead agent's runtime (`swarm lead ... -- AGENT`); returns the
/// goal. The agent runs in the lead pane, or in-process as a child of the launcher, so it needs
/// one: a new team, in tmux with a lead pane, or in-process.
fn lead_agent(l: &LeadPlan, lead: Option<&mut Launch>, opts: &LaunchOptions) -> Result<String> {
    let Some(lead) = lead else {
        return Err(Error::usage(
            "an agent lead runs in the lead pane of a new team in tmux, or in-process beside \
             its teammates: use the tmux backend without --split or --no-lead-pane, or \
             --backend in-process, and a team name not in use",
        ));
    };
    if l.goal.trim().is_empty() {
        return Err(Error::usage(
            "the lead agent needs a goal: pass --goal TEXT or put \"goal\" in the swarm file's \"lead\"",
        ));
    }
    let argv: Vec<String> = match &l.agent {
        None => {
            return Err(Error::usage(
                "the lead has a goal but no agent: pass --lead AGENT (e.g. --lead \"claude -p\") or put \"agent\" in the swarm file's \"lead\"",
            ))
        }
        Some(AgentKind::Shell) => {
            return Err(Error::usage(
                "the shell agent cannot lead (it only runs commands); use an agent CLI such as \"claude -p\"",
            ))
        }
        Some(AgentKind::Claude) => vec![resolve_claude(opts)?.display().to_string(), "-p".into()],
        Some(AgentKind::Command(words)) => {
            let program = resolve_program(&words[0], "the lead agent command", opts)?;
            std::iter::once(program.display().to_string())
                .chain(words[1..].iter().cloned())
                .collect()
        }
    };
    lead.argv
        .extend(["--approvals".to_string(), l.approvals.as_str().to_string()]);
    if l.exit_when_done {
        lead.argv.push("--exit-when-done".into());
    }
    lead.argv.push("--".into());
    lead.argv.extend(argv);
    Ok(l.goal.clone())
}
