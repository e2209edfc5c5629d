//! Turning a plan (a swarm file or flags) into a running team.
//!
//! Two steps. [`prepare`] validates everything and builds each teammate's exact argv and
//! environment without writing anything: bad names, duplicates, a missing agent binary, a
//! missing tmux or it2 all fail here with exit 2 and nothing half-registered; `--dry-run` prints
//! its [`Prepared::dry_run`]. [`Prepared::execute`] then creates the team, seeds the tasks and
//! spawns each teammate in the order of PROTOCOL.md section 10, rolling back a spawn that
//! fails; `Launched::supervise` keeps in-process teammates. A teammate already on the roster
//! that is not running is started again from its recorded launch (`swarmLaunch`), which is how
//! `swarm up` and `swarm restart` bring a team back; each task of a plan is seeded once.
//!
//! The wing: `plan` (what to launch), `swarmfile` (the file that fills a plan in), `program`
//! and `command_line` (section 10's argv and environment), `claude_config` (which config
//! directory a claude teammate uses), `prepare` with its `checks`,
//! `dry_run`, `spawn` (with rollback), `running` (the backend and the running team) and
//! `supervisor` (in-process teammates), `sandbox` (each teammate in bubblewrap), `remote` (a
//! launch's teammates on other hosts) and `host` (what starts one on its host, contained). A
//! teammate's git worktree is made through [`crate::lifecycle::worktree`], which also finishes
//! it when the teammate retires.

mod again;
mod checks;
mod claude_config;
mod command_line;
mod dry_run;
#[cfg(feature = "seams")]
mod fault;
pub(crate) mod host;
mod lead_pane;
mod local;
mod plan;
mod prepare;
mod program;
pub(crate) mod recorded;
mod remote;
mod running;
pub(crate) mod sandbox;
mod spawn;
pub(crate) mod supervisor;
pub(crate) mod swarmfile;
pub(crate) mod verify;
mod workdir;

pub(crate) use dry_run::{CommandLine, DryRun};
pub(crate) use plan::LAUNCH_FIELD;
pub(crate) use plan::{
    AgentKind, IfRunning, Inherited, LaunchOptions, LaunchPlan, LeadPlan, TaskPlan, TaskRef,
    TeammatePlan,
};
pub(crate) use prepare::{prepare, Prepared, PreparedTeammate};
pub(crate) use program::resolve_claude;
pub(crate) use running::DEFAULT_GRACE;
