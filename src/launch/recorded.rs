//! What a launch writes on a teammate's roster entry so it can be started again, and what of an
//! entry a new start keeps: used by `prepare` for every teammate and by `again` for one on the
//! roster that is not running; and the swarm file a team was launched from, which `swarm up`
//! without a file uses.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::plan::RecordedLaunch;
use super::{AgentKind, Inherited, TeammatePlan};
use crate::backend::tmux::SOCKET_FIELD;
use crate::backend::{for_member, PaneState};
use crate::error::Result;
use crate::lifecycle::orphans::OPENING_FIELD;
use crate::process::pid::{EXIT_FIELD, PID_FIELD, PID_HOST_FIELD, PID_START_FIELD};
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::Member;
use crate::store::roster::Roster;
use crate::teammate::args::{Limits, PromptVia};

/// The roster entry of a teammate started again: as it was, without what its last run left.
pub(super) fn fresh_entry(previous: &Member) -> Member {
    let mut m = previous.clone();
    m.tmux_pane_id.clear();
    for field in [
        PID_FIELD,
        PID_START_FIELD,
        PID_HOST_FIELD,
        EXIT_FIELD,
        SOCKET_FIELD,
        OPENING_FIELD,
    ] {
        m.extra.remove(field);
    }
    m
}

/// The [`RecordedLaunch`] of a teammate, as JSON for its roster entry. The permission flags are
/// recorded as they took effect (the teammate's own mode wins over
/// `--dangerously-skip-permissions`, which wins over an inherited mode).
#[expect(clippy::too_many_arguments, reason = "one value per recorded field")]
pub(super) fn record(
    t: &TeammatePlan,
    inh: &Inherited,
    agent: &AgentKind,
    cwd: PathBuf,
    worktree: bool,
    agent_type: Option<String>,
    settings: Option<String>,
    prompt_via: PromptVia,
) -> Value {
    let own_mode = t.permission_mode.clone().or_else(|| {
        (!inh.dangerously_skip_permissions)
            .then(|| inh.permission_mode.clone())
            .flatten()
    });
    let record = RecordedLaunch {
        agent: agent.words(),
        cwd,
        worktree,
        agent_type,
        dangerously_skip_permissions: own_mode.is_none() && inh.dangerously_skip_permissions,
        permission_mode: own_mode,
        settings,
        prompt_via_stdin: prompt_via == PromptVia::Stdin,
        limits: runtime_limits(t, inh, agent),
        extra: inh.extra.clone(),
        env: t.env.clone(),
        host: t.host.clone(),
        no_sandbox: !t.sandbox.unwrap_or(!inh.no_sandbox),
    };
    serde_json::to_value(&record).expect("serializable")
}

/// The limits a teammate's runtime gets: its own, else the launch's; none for a claude
/// teammate, which has no swarm runtime to keep them (its own are refused by `prepare`).
pub(super) fn runtime_limits(t: &TeammatePlan, inh: &Inherited, agent: &AgentKind) -> Limits {
    match agent {
        AgentKind::Claude => Limits::default(),
        _ => t.limits.or(inh.limits),
    }
}

/// The lead console ran in a pane swarm opened (on a recorded server) and that pane is no
/// longer alive: its server died, or it exited; or a launch recorded the server for its pane
/// and was killed before the pane was made (no pane id), so it is still to open.
pub(super) fn lead_pane_died(store: &Store, team: &TeamName, lead: &Member) -> bool {
    lead.extra.contains_key(SOCKET_FIELD)
        && (lead.tmux_pane_id.is_empty()
            || for_member(store, team, lead)
                .and_then(|b| b.state().ok())
                .is_some_and(|s| !matches!(s, PaneState::Alive { .. })))
}
/// The team's roster field naming the swarm file it was launched from (an absolute path), so
/// `swarm up` with no file brings the team back from that one.
pub(crate) const FILE_FIELD: &str = "swarmFile";

/// Records on `team`'s roster the swarm file it was launched from (`-`, standard input, is not
/// a file to read again).
pub(crate) fn record_file(store: &Store, team: &TeamName, file: Option<&Path>) -> Result<()> {
    let Some(file) = file.filter(|f| *f != Path::new("-")) else {
        return Ok(());
    };
    let path = crate::backend::absolute(file)
        .to_string_lossy()
        .into_owned();
    Roster::new(store, team).update(|config| {
        config.extra.insert(FILE_FIELD.into(), path.into());
        Ok(())
    })
}

/// The swarm file `team` was launched from, if the launch recorded one.
pub(crate) fn recorded_file(store: &Store, team: &TeamName) -> Option<PathBuf> {
    let config = Roster::new(store, team).load().ok()?;
    config.extra.get(FILE_FIELD)?.as_str().map(PathBuf::from)
}
