//! Starting a teammate again: what `swarm up`, `swarm restart` and a relaunch do for a teammate
//! that is on the roster but not running.
//!
//! At its first launch every teammate gets a [`RecordedLaunch`] in its roster entry
//! (`swarmLaunch`: agent, directory before any worktree, flags, own environment). Started
//! again, it is the same member: the plan is rebuilt from that record and the roster's own
//! fields (model, plan mode, colour), so `prepare` builds the same section-10 command line with
//! the same identity flags; the entry keeps its id, colour, join time, first prompt and a
//! worktree it kept, and loses only what its last run left (pane, server, pid, exit status).
//! A local claude teammate carries on its last Claude Code session (`claude --resume`, found
//! by the `teamName` and `agentName` its transcript entries carry, `store::usage`), so it keeps
//! its conversation; one with no session to resume is given its first prompt again
//! (`PreparedTeammate::gets_prompt`). The lead console's pane is opened again when the one
//! swarm opened has died.

use super::plan::{RecordedLaunch, LAUNCH_FIELD};
use super::prepare::{PreparedTeammate, Shared};
use super::{AgentKind, Inherited, TeammatePlan};
use crate::error::{Error, Result};
use crate::store::colour::LEAD_COLOR;
use crate::store::mailbox::InboxMessage;
use crate::store::names::AgentName;
use crate::store::roster::{Member, Roster};
use crate::teammate::args::PromptVia;

impl Shared<'_> {
    /// A teammate on the roster that is not running, to be started again as it was: its
    /// identity, colour, agent, directory and worktree from the roster and its
    /// [`RecordedLaunch`].
    pub(super) fn again(&mut self, m: &Member) -> Result<PreparedTeammate> {
        let name = m.name.clone();
        let rec: RecordedLaunch = m
            .extra
            .get(LAUNCH_FIELD)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or_else(|| {
                Error::usage(format!(
                    "{name} is on team {}'s roster but was not started by `swarm launch` or \
                     `swarm up`, so swarm does not know how to start it again; remove it \
                     (`swarm team remove {name}`) to launch it anew",
                    self.team
                ))
            })?;
        let mut t = TeammatePlan::new(name, m.prompt.clone().unwrap_or_default());
        t.agent = Some(AgentKind::from_words(rec.agent.clone())?);
        t.agent_type = rec.agent_type.clone();
        t.model = m.model.clone();
        t.permission_mode = rec.permission_mode.clone();
        t.plan_mode_required = m.plan_mode_required;
        t.prompt_via = Some(if rec.prompt_via_stdin {
            PromptVia::Stdin
        } else {
            PromptVia::Arg
        });
        t.limits = rec.limits;
        t.worktree = Some(rec.worktree);
        t.env = rec.env.clone();
        t.cwd = Some(rec.cwd.clone());
        t.host = rec.host.clone();
        t.sandbox = Some(!rec.no_sandbox);
        if matches!(t.agent, Some(AgentKind::Claude)) && t.host.is_none() {
            let config = Roster::new(self.store, self.team).load()?;
            t.resume = crate::store::usage::last_claude_session(self.store, &config, m)?;
        }
        let inherited = Inherited {
            dangerously_skip_permissions: rec.dangerously_skip_permissions,
            extra: rec.extra.clone(),
            ..Inherited::default()
        };
        let color = m.color_or_default().to_string();
        self.teammate(color, &t, &inherited, rec.settings.clone(), Some(m))
    }
}

impl PreparedTeammate {
    /// Whether its prompt goes to its inbox: a new teammate's first message, and a claude
    /// teammate's again when it is started again without its conversation to resume (a runtime
    /// teammate keeps its own, `teammate::session`).
    pub(super) fn gets_prompt(&self) -> bool {
        self.previous.is_none()
            || (matches!(self.agent, AgentKind::Claude) && self.resume.is_none())
    }

    /// Its inbox's first message from the lead (none for an empty prompt), if it
    /// [gets one](PreparedTeammate::gets_prompt).
    pub(super) fn first_message(&self) -> Option<(AgentName, Option<InboxMessage>)> {
        let prompt = (!self.prompt.trim().is_empty()).then(|| {
            InboxMessage::new(&AgentName::lead(), self.prompt.clone())
                .with_color(Some(LEAD_COLOR.into()))
        });
        self.gets_prompt().then(|| (self.name.clone(), prompt))
    }
}
