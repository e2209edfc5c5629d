//! The team roster, `teams/<team>/config.json` (PROTOCOL.md section 5).
//!
//! Every change is a read-modify-write under the roster lock with an atomic write, and unknown
//! fields ride along untouched so a roster Claude Code wrote comes back as it was.

use std::fs;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::colour::{Colour, LEAD_COLOR};
use crate::store::fsio::{self, now_ms};
use crate::store::lock::FileLock;
use crate::store::names::{AgentName, TeamName, LEAD};
use crate::store::paths::Store;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub created_at: u64,
    pub lead_agent_id: String,
    #[serde(default)]
    pub lead_session_id: String,
    #[serde(default)]
    pub members: Vec<Member>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub agent_id: String,
    pub name: String,
    #[serde(default)]
    pub agent_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode_required: Option<bool>,
    #[serde(default)]
    pub joined_at: u64,
    #[serde(default)]
    pub tmux_pane_id: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub subscriptions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Member {
    /// A teammate with swarm's defaults; the launcher fills in the rest.
    pub fn teammate(team: &TeamName, name: &AgentName, color: &str, cwd: &str) -> Member {
        Member {
            agent_id: name.agent_id(team),
            name: name.to_string(),
            agent_type: "general-purpose".into(),
            model: None,
            prompt: None,
            color: Some(color.into()),
            plan_mode_required: Some(false),
            joined_at: now_ms(),
            tmux_pane_id: String::new(),
            cwd: cwd.into(),
            subscriptions: vec![],
            backend_type: None,
            is_active: Some(false),
            mode: Some("default".into()),
            extra: Map::new(),
        }
    }

    pub fn is_lead(&self) -> bool {
        self.name == LEAD
    }

    /// Teammates with no `isActive` field are taken as active, as Claude Code does.
    pub fn active(&self) -> bool {
        !self.is_lead() && self.is_active.unwrap_or(true)
    }

    pub fn color_or_default(&self) -> &str {
        self.color
            .as_deref()
            .unwrap_or(if self.is_lead() { LEAD_COLOR } else { "blue" })
    }
}

impl TeamConfig {
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    pub fn member_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name == name)
    }

    /// The colour the next teammate gets.
    pub fn next_color(&self) -> &'static str {
        let teammates = self.members.iter().filter(|m| !m.is_lead()).count();
        Colour::nth(teammates).name
    }

    pub fn teammates(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| !m.is_lead())
    }
}

/// Roster operations for one store.
pub struct Roster<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> Roster<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName) -> Roster<'a> {
        Roster { store, team }
    }

    pub fn exists(&self) -> bool {
        self.store.config_path(self.team).is_file()
    }

    /// Creates the team directory, its roster with the lead, and the lead's empty inbox.
    pub fn create(
        &self,
        description: &str,
        cwd: &str,
        lead_session_id: &str,
    ) -> Result<TeamConfig> {
        let dir = self.store.team_dir(self.team);
        fsio::ensure_dir(&self.store.inboxes_dir(self.team))?;
        fsio::ensure_dir(&self.store.tasks_dir(self.team))?;
        let path = self.store.config_path(self.team);
        let _lock = FileLock::acquire(&path)?;
        if fsio::check_regular(&path)? {
            return Err(Error::TeamExists(self.team.to_string()));
        }
        let now = now_ms();
        let lead = AgentName::lead();
        let config = TeamConfig {
            name: self.team.to_string(),
            description: description.into(),
            created_at: now,
            lead_agent_id: lead.agent_id(self.team),
            lead_session_id: lead_session_id.into(),
            members: vec![Member {
                agent_id: lead.agent_id(self.team),
                name: LEAD.into(),
                agent_type: LEAD.into(),
                model: None,
                prompt: None,
                color: None,
                plan_mode_required: None,
                joined_at: now,
                tmux_pane_id: std::env::var("TMUX_PANE").unwrap_or_default(),
                cwd: cwd.into(),
                subscriptions: vec![],
                backend_type: None,
                is_active: None,
                mode: None,
                extra: Map::new(),
            }],
            extra: Map::new(),
        };
        fsio::write_json(&path, &config)?;
        fsio::create_if_missing(&self.store.inbox_path(self.team, &lead), b"[]\n")?;
        debug_assert!(dir.is_dir());
        Ok(config)
    }

    pub fn load(&self) -> Result<TeamConfig> {
        let path = self.store.config_path(self.team);
        fsio::read_json(&path)?.ok_or_else(|| Error::NoSuchTeam {
            team: self.team.to_string(),
            root: self.store.root().to_path_buf(),
        })
    }

    /// Read-modify-write under the roster lock. A roster that does not parse is an error here,
    /// not a quarantine: losing the roster would orphan every pane.
    pub fn update<T>(&self, f: impl FnOnce(&mut TeamConfig) -> Result<T>) -> Result<T> {
        let path = self.store.config_path(self.team);
        if !self.exists() {
            return Err(Error::NoSuchTeam {
                team: self.team.to_string(),
                root: self.store.root().to_path_buf(),
            });
        }
        let _lock = FileLock::acquire(&path)?;
        let mut config = self.load()?;
        let before = config.clone();
        let out = f(&mut config)?;
        if config != before {
            fsio::write_json(&path, &config)?;
        }
        Ok(out)
    }

    /// Adds a member; names are unique ignoring case. Creates the member's empty inbox.
    pub fn add_member(&self, member: Member) -> Result<()> {
        let name: AgentName = member.name.parse()?;
        self.update(|config| {
            if config.members.iter().any(|m| name.same_as(&m.name)) {
                return Err(Error::MemberExists {
                    team: self.team.to_string(),
                    name: name.to_string(),
                });
            }
            config.members.push(member);
            Ok(())
        })?;
        fsio::create_if_missing(&self.store.inbox_path(self.team, &name), b"[]\n")
    }

    pub fn update_member<T>(
        &self,
        name: &AgentName,
        f: impl FnOnce(&mut Member) -> T,
    ) -> Result<T> {
        self.update(|config| {
            let member = config
                .member_mut(name.as_str())
                .ok_or_else(|| Error::NoSuchMember {
                    team: self.team.to_string(),
                    name: name.to_string(),
                })?;
            Ok(f(member))
        })
    }

    pub fn remove_member(&self, name: &AgentName) -> Result<Member> {
        if name.is_lead() {
            return Err(Error::usage(
                "the lead cannot be removed from its team; delete the team instead",
            ));
        }
        self.update(|config| {
            let idx = config
                .members
                .iter()
                .position(|m| m.name == name.as_str())
                .ok_or_else(|| Error::NoSuchMember {
                    team: self.team.to_string(),
                    name: name.to_string(),
                })?;
            Ok(config.members.remove(idx))
        })
    }

    /// The member called `name`, or a clear error. Used to refuse messages to strangers.
    pub fn require_member(&self, name: &str) -> Result<Member> {
        let config = self.load()?;
        config
            .member(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchMember {
                team: self.team.to_string(),
                name: name.to_string(),
            })
    }

    /// Deletes the team and its task list. Refused while teammates are active unless `force`.
    pub fn delete(&self, force: bool) -> Result<()> {
        let config = self.load()?;
        let active: Vec<&str> = config
            .teammates()
            .filter(|m| m.active())
            .map(|m| m.name.as_str())
            .collect();
        if !active.is_empty() && !force {
            return Err(Error::TeamActive {
                team: self.team.to_string(),
                names: active.join(", "),
            });
        }
        for dir in [
            self.store.team_dir(self.team),
            self.store.tasks_dir(self.team),
        ] {
            match fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("delete", &dir)(e)),
            }
        }
        Ok(())
    }
}

/// Names of every team under the store, sorted.
pub fn list_teams(store: &Store) -> Result<Vec<TeamName>> {
    let dir = store.teams_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io("list", &dir)(e)),
    };
    let mut teams: Vec<TeamName> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("config.json").is_file())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    teams.sort();
    Ok(teams)
}

impl Roster<'_> {
    /// [`Roster::add_member`] for several members in one roster write (a launch reserves all
    /// its teammates at once): none is added if any name is taken or given twice.
    pub fn add_members(&self, members: Vec<Member>) -> Result<()> {
        let names = members
            .iter()
            .map(|m| m.name.parse::<AgentName>())
            .collect::<Result<Vec<_>>>()?;
        self.update(|config| {
            for (i, name) in names.iter().enumerate() {
                let taken = config.members.iter().any(|m| name.same_as(&m.name))
                    || names[..i].iter().any(|n| name.same_as(n.as_str()));
                if taken {
                    return Err(Error::MemberExists {
                        team: self.team.to_string(),
                        name: name.to_string(),
                    });
                }
            }
            config.members.extend(members);
            Ok(())
        })?;
        for name in &names {
            fsio::create_if_missing(&self.store.inbox_path(self.team, name), b"[]\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_survive_a_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let roster = Roster::new(&store, &team);
        roster.create("d", "/", "s").unwrap();
        let path = store.config_path(&team);
        let mut raw: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        raw["futureTeamField"] = Value::from(7);
        raw["members"][0]["futureMemberField"] = Value::from("x");
        fs::write(&path, serde_json::to_vec(&raw).unwrap()).unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        roster
            .add_member(Member::teammate(&team, &coder, "blue", "/"))
            .unwrap();
        let raw: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(raw["futureTeamField"], 7);
        assert_eq!(raw["members"][0]["futureMemberField"], "x");
        assert_eq!(raw["members"][1]["name"], "coder");
    }

    #[test]
    fn member_names_are_unique_ignoring_case() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let roster = Roster::new(&store, &team);
        roster.create("", "/", "").unwrap();
        let a: AgentName = "Coder".parse().unwrap();
        let b: AgentName = "coder".parse().unwrap();
        roster
            .add_member(Member::teammate(&team, &a, "blue", "/"))
            .unwrap();
        assert!(matches!(
            roster.add_member(Member::teammate(&team, &b, "green", "/")),
            Err(Error::MemberExists { .. })
        ));
    }
}
