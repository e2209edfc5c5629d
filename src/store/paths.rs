//! Where everything lives on disk (PROTOCOL.md section 1).
//!
//! `Store` is the root directory plus the layout under it. Every path swarm touches is built
//! here from validated names, so no other module joins user text onto a path.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::names::{AgentName, TaskId, TeamName};

#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Store {
        let root = root.into();
        crate::store::guard::register_root(&root);
        Store { root }
    }

    /// `--root`, else `$SWARM_ROOT`, else `$CLAUDE_CONFIG_DIR`, else `~/.claude`: the place a
    /// `claude` teammate looks, so both see the same team. The root is [`resolve`]d here, once,
    /// so every process of a team (the launcher, each teammate, the lead) names it the same.
    pub fn discover(flag: Option<&Path>) -> Result<Store> {
        Ok(Store::new(resolve(&Store::discover_path(flag)?)))
    }

    /// The root [`Store::discover`] would use, as given (not resolved).
    fn discover_path(flag: Option<&Path>) -> Result<PathBuf> {
        if let Some(root) = flag {
            return Ok(root.to_path_buf());
        }
        for var in ["SWARM_ROOT", "CLAUDE_CONFIG_DIR"] {
            if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                return Ok(PathBuf::from(v));
            }
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(PathBuf::from(home).join(".claude")),
            None => Err(Error::usage(
                "cannot find the swarm root: HOME is not set; pass --root DIR or set SWARM_ROOT",
            )),
        }
    }

    /// Whether `root` is the one a command run here without `--root` would use, so a hint
    /// printed for it can leave `--root` out.
    pub fn is_default_root(root: &Path) -> bool {
        Store::discover_path(None).is_ok_and(|p| resolve(&p) == resolve(root))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn teams_dir(&self) -> PathBuf {
        self.root.join("teams")
    }
    pub fn team_dir(&self, team: &TeamName) -> PathBuf {
        self.teams_dir().join(team.as_str())
    }
    pub fn config_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("config.json")
    }
    pub fn inboxes_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("inboxes")
    }
    pub fn inbox_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.inboxes_dir(team).join(format!("{agent}.json"))
    }
    pub fn archive_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.inboxes_dir(team)
            .join(format!("{agent}.archive.jsonl"))
    }
    /// swarm-only: entries waiting for the inbox group commit (`mailbox::spool`), outside
    /// `inboxes/` so Claude Code never sees them; `<agent>.last-write` beside each is the
    /// sidecar that says what swarm last wrote to the inbox.
    pub fn spool_dir(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team).join("spool").join(agent.as_str())
    }
    pub fn pending_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("permissions").join("pending")
    }
    pub fn resolved_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("permissions").join("resolved")
    }
    pub fn logs_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("logs")
    }
    pub fn log_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.logs_dir(team).join(format!("{agent}.log"))
    }
    /// Spec files the pane backends hand to `swarm pane-exec` (read once and deleted).
    pub fn spawn_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("spawn")
    }
    pub fn alive_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("alive")
    }
    pub fn alive_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.alive_dir(team).join(format!("{agent}.lock"))
    }
    /// The lock that keeps the lead's reaping and a restarted runtime's return apart.
    pub fn alive_gate_path(&self, team: &TeamName) -> PathBuf {
        self.alive_dir(team).join(".reap.gate")
    }
    /// swarm-only: plans written by teammates in plan mode.
    pub fn plans_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("plans")
    }
    pub fn plan_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.plans_dir(team).join(format!("{agent}.md"))
    }
    /// swarm-only, on the lead's machine: one link per remote host (`remote/`): its state
    /// (`<host>.json`), its lock and what it applied.
    pub fn remote_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("remote")
    }
    /// swarm-only, on a remote host's mirror of the team: the relay's own records and the
    /// marker [`Store::mirror_marker_path`].
    pub fn relay_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("relay")
    }
    /// Present in a mirror only: this copy of the team is kept by a relay, and its source of
    /// truth (and the lead key) is on the lead's machine.
    pub fn mirror_marker_path(&self, team: &TeamName) -> PathBuf {
        self.relay_dir(team).join("mirror.json")
    }
    pub fn tasks_dir(&self, team: &TeamName) -> PathBuf {
        self.root.join("tasks").join(team.as_str())
    }
    pub fn task_path(&self, team: &TeamName, id: &TaskId) -> PathBuf {
        self.tasks_dir(team).join(format!("{id}.json"))
    }
    pub fn highwatermark_path(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".highwatermark")
    }
    /// swarm-only: every task transition, one JSON line each (`tasks::history`).
    pub fn task_history_path(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".swarm-history.jsonl")
    }
    /// swarm-only: the public half of the team's lead key, published by the lead side
    /// (`store::authority`), so a process that holds some other key is not taken for the lead.
    pub fn lead_verify_key_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("lead").join("verify-key.json")
    }
    /// swarm-only: the lead's signed record that it removed the member `agent` who joined at
    /// `joined_at` (`store::roster::removal`): one per membership, under `lead/`, which a
    /// contained teammate can only read.
    pub fn removal_path(&self, team: &TeamName, agent: &AgentName, joined_at: u64) -> PathBuf {
        self.team_dir(team)
            .join("lead")
            .join("removed")
            .join(format!("{agent}.{joined_at}.json"))
    }
    /// swarm-only: what the lead agent decided, one JSON line each (`lead::agent::decide`).
    pub fn decisions_path(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("lead").join("decisions.jsonl")
    }
    /// swarm-only: the token usage of a member's `claude -p` turns (`usage::turns`).
    pub fn turn_usage_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team)
            .join("usage")
            .join(format!("{agent}.jsonl"))
    }
    /// swarm-only: what a long-running process (a runtime, the lead console) met and went on
    /// past, for `swarm status` (`store::notes`).
    pub fn notes_path(&self, team: &TeamName, who: &AgentName) -> PathBuf {
        self.team_dir(team)
            .join("notes")
            .join(format!("{who}.json"))
    }
    /// swarm-only: what one member's runtime keeps of its own (the lead messages it acted on, a
    /// shutdown request waiting on its turn, its liveness record). Its sandbox leaves only this
    /// member's directory of `members/` writable, so no teammate can rewrite another's records.
    pub fn member_dir(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.members_dir(team).join(agent.as_str())
    }
    /// swarm-only: the members' own directories ([`Store::member_dir`]).
    pub fn members_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("members")
    }
    /// swarm-only: the directory of `agent`'s bell (`mailbox::bell`), which every sender rings,
    /// so it is not in the member's own directory: `bells/<name>/`, each watched by its runtime
    /// alone.
    pub fn bell_dir(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.team_dir(team).join("bells").join(agent.as_str())
    }
    /// swarm-only: the conversation a member's agent CLI keeps across turns (`teammate::session`),
    /// `sessions/<name>/session.json`: in a directory of the member's own, which is all of
    /// `sessions/` its sandbox leaves writable (one mount, whatever the team's size).
    pub fn session_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.sessions_dir(team)
            .join(agent.as_str())
            .join("session.json")
    }

    /// Where swarm kept a member's conversation before: `sessions/<name>.json`, still read
    /// when the member has none at [`Store::session_path`] yet.
    pub fn earlier_session_path(&self, team: &TeamName, agent: &AgentName) -> PathBuf {
        self.sessions_dir(team).join(format!("{agent}.json"))
    }

    /// swarm-only: every member's conversation (`session_path`).
    pub fn sessions_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("sessions")
    }
    /// Claude Code's session transcripts, `projects/<project key>/<session id>.jsonl`: the root
    /// is the config dir a `claude` teammate is given (`CLAUDE_CONFIG_DIR`).
    pub fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }
    /// The task-list lock is taken on this file, so its directory lock is `.lock.lock/`.
    pub fn task_list_lock_path(&self, team: &TeamName) -> PathBuf {
        self.tasks_dir(team).join(".lock")
    }
}

/// `path` as one absolute path that stays the same before and after the directory exists: the
/// longest part that exists with its symlinks resolved, then the rest as written, with `.` and
/// `..` taken out of it (a part that does not exist yet cannot be a symlink, so dropping
/// `x/..` there names what `mkdir -p` will make). A relative root read by the launcher before
/// it makes the directory, and by a teammate after, is then one root, with one lead key.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let mut out = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_os_string());
                existing = parent;
            }
            _ => break existing.to_path_buf(),
        }
    };
    for part in rest.iter().rev() {
        match part.to_str() {
            Some(".") => {}
            Some("..") => {
                out.pop();
            }
            _ => out.push(part),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_resolves_the_same_before_and_after_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        let spelled = real.join("link").join("new/./x/../root");
        let before = resolve(&spelled);
        assert_eq!(before, real.join("new/root"));
        std::fs::create_dir_all(&spelled).unwrap();
        assert_eq!(resolve(&spelled), before);
        assert_eq!(std::fs::canonicalize(&spelled).unwrap(), before);
    }
}
