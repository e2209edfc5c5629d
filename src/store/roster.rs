//! The team roster, `teams/<team>/config.json` (PROTOCOL.md section 5).
//!
//! Every change is a read-modify-write under the roster lock with an atomic write, laid over
//! the file as read ([`rewrite`]) so a roster Claude Code wrote comes back with its keys, their
//! order and nothing added. Claude Code rewrites `config.json` in place under
//! `config.json.lock/` (open, write, truncate), so a reader that does not lock can see the new
//! text followed by the old tail ("trailing characters at line 35"). A read that does not parse
//! is therefore taken again under the lock, which waits for such a writer to finish, and again a
//! few times after that (a writer that does not lock at all). Reads that parse take no lock:
//! a lock is files in the team directory, and readers that made them all the time would race
//! every `rm -r` of a team (Claude Code's own cleanup included) and slow its writers down.

mod member;
pub(crate) mod removal;
mod rewrite;

pub use member::Member;
pub(crate) use member::{LeadProcess, TeamConfig, AGENT_FIELD, CLAUDE_LEAD_PANE, RETIRED_FIELD};

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::fsio::{self, now_ms, Stamp};
use crate::store::lock::FileLock;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// How long a reader waits for a writer's lock before it reads without it (and retries).
const READ_LOCK_WAIT: Duration = Duration::from_secs(2);
/// How long a roster that does not parse is read again before it is called invalid. A writer
/// that rewrites in place without the lock is done within a few milliseconds, but on a loaded
/// machine it can be held between its write and its truncate for longer, and one that rewrites
/// often (a teammate flipping `isActive` each turn) can be caught torn several reads running:
/// in one full run of the suite, six reads over 310 ms all met it torn.
const READ_PATIENCE: Duration = Duration::from_secs(1);

/// The longest pause between two reads of a roster that does not parse.
const READ_PAUSE_MAX: Duration = Duration::from_millis(40);

/// A roster as read: the JSON as it is in the file, its typed view, and whether the file ended
/// with a newline (Claude Code's does not).
struct Read {
    raw: Value,
    config: TeamConfig,
    newline: bool,
}

/// Reads and parses `path` once: `Ok(None)` if missing, `Err` with why it does not parse.
fn read_once(path: &Path) -> Result<Option<std::result::Result<Read, String>>> {
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok(None);
    };
    let parsed = fsio::parse_json::<Value>(&bytes).and_then(|raw| {
        serde_json::from_value(raw.clone())
            .map(|config| Read {
                raw,
                config,
                newline: bytes.ends_with(b"\n"),
            })
            .map_err(|e| e.to_string())
    });
    Ok(Some(parsed))
}

/// Reads and parses `path`, again for up to [`READ_PATIENCE`] while it does not parse; `None`
/// if missing.
fn read(path: &Path) -> Result<Option<Read>> {
    let start = std::time::Instant::now();
    let mut wait = Duration::from_millis(5);
    loop {
        match read_once(path)? {
            None => return Ok(None),
            Some(Ok(read)) => return Ok(Some(read)),
            Some(Err(detail)) if start.elapsed() >= READ_PATIENCE => {
                return Err(Error::InvalidRoster {
                    path: path.to_path_buf(),
                    detail,
                })
            }
            Some(Err(_)) => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(READ_PAUSE_MAX);
            }
        }
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
        self.create_with_lead(description, cwd, lead_session_id, |_| {})
    }

    /// [`Self::create`] with the lead's entry finished by `lead` before the one write (a launch
    /// records where the lead's console will run).
    pub fn create_with_lead(
        &self,
        description: &str,
        cwd: &str,
        lead_session_id: &str,
        lead: impl FnOnce(&mut Member),
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
        let mut lead_entry = Member::lead(self.team, cwd, now);
        lead(&mut lead_entry);
        let lead = AgentName::lead();
        let config = TeamConfig {
            name: self.team.to_string(),
            description: description.into(),
            created_at: now,
            lead_agent_id: lead.agent_id(self.team),
            lead_session_id: lead_session_id.into(),
            members: vec![lead_entry],
            extra: Default::default(),
        };
        fsio::write_json(&path, &config)?;
        fsio::create_if_missing(&self.store.inbox_path(self.team, &lead), b"[]\n")?;
        debug_assert!(dir.is_dir());
        Ok(config)
    }

    fn no_such_team(&self) -> Error {
        Error::NoSuchTeam {
            team: self.team.to_string(),
            root: self.store.root().to_path_buf(),
            hint: String::new(),
        }
    }

    /// The roster. One that does not parse is read again under its lock (see the module doc);
    /// a lock that cannot be had within [`READ_LOCK_WAIT`] (a Claude Code holder that stopped, a
    /// root swarm may not write) is read past, retrying until it parses.
    pub fn load(&self) -> Result<TeamConfig> {
        let path = self.store.config_path(self.team);
        // Straight into the typed view: the JSON as written is kept only by `update`, and
        // building it too would cost a 200-member roster's every reader twice the parse.
        let Some(bytes) = fsio::read_file(&path)? else {
            return Err(self.no_such_team());
        };
        if let Ok(config) = fsio::parse_json::<TeamConfig>(&bytes) {
            return Ok(config);
        }
        let _lock = FileLock::acquire_with(&path, READ_LOCK_WAIT).ok();
        Ok(read(&path)?.ok_or_else(|| self.no_such_team())?.config)
    }

    /// The roster with the stamp its file had just before the read (see [`Stamped`]).
    pub(crate) fn load_stamped(&self) -> Result<Stamped> {
        let stamp = Stamp::read(&self.store.config_path(self.team))?;
        Ok(Stamped {
            config: self.load()?,
            stamp,
        })
    }

    /// `known` brought up to date: read again only if the file's stamp is not the one it was
    /// read at (see [`Stamped`]).
    pub(crate) fn refresh(&self, known: &mut Stamped) -> Result<()> {
        let now = Stamp::read(&self.store.config_path(self.team))?;
        if now.is_none() || now != known.stamp {
            *known = self.load_stamped()?;
        }
        Ok(())
    }

    /// The roster unless its file is what it was when `seen` was taken (`None` then): a
    /// process that looks again at every wake parses a 200-member roster only when it changed.
    /// `seen` is the stamp of the file as returned, kept only once it had settled.
    pub(crate) fn load_if_changed(&self, seen: &mut Option<Stamp>) -> Result<Option<TeamConfig>> {
        let path = self.store.config_path(self.team);
        // Stamped before the read: a write in between makes the next look read it again.
        let now = Stamp::read(&path)?;
        if now.is_some() && now == *seen {
            return Ok(None);
        }
        let config = self.load()?;
        *seen = now.filter(|s| s.settled(SystemTime::now()));
        Ok(Some(config))
    }

    /// Read-modify-write under the roster lock, written back over the file as read (see
    /// [`rewrite`]). A roster that does not parse is an error here, not a quarantine: losing the
    /// roster would orphan every pane.
    pub fn update<T>(&self, f: impl FnOnce(&mut TeamConfig) -> Result<T>) -> Result<T> {
        let path = self.store.config_path(self.team);
        if !self.exists() {
            return Err(self.no_such_team());
        }
        let _lock = FileLock::acquire(&path)?;
        let Read {
            raw,
            mut config,
            newline,
        } = read(&path)?.ok_or_else(|| self.no_such_team())?;
        let before = config.clone();
        let out = f(&mut config)?;
        if config != before {
            let json = |c: &TeamConfig| {
                serde_json::to_value(c).map_err(|source| Error::Json {
                    path: path.clone(),
                    source,
                })
            };
            let merged = rewrite::overlay(&raw, &json(&before)?, &json(&config)?);
            let mut bytes = serde_json::to_vec_pretty(&merged).map_err(|source| Error::Json {
                path: path.clone(),
                source,
            })?;
            if newline {
                bytes.push(b'\n');
            }
            fsio::write_atomic(&path, &bytes)?;
        }
        Ok(out)
    }

    /// Adds a member; names are unique ignoring case. Creates the member's empty inbox.
    pub fn add_member(&self, member: Member) -> Result<()> {
        let name = member.name.clone();
        self.update(|config| {
            if config.members.iter().any(|m| name.same_as(m.name.as_str())) {
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
            .filter(|m| !m.retired())
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
pub(crate) fn list_teams(store: &Store) -> Result<Vec<TeamName>> {
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

/// A roster as read, with its file's stamp from just before the read: a runtime's start reads
/// the 160 KB roster of 200 members once, not once per step. An equal stamp later, however
/// fresh the file, proves that swarm did not rewrite it since, as every rewrite of swarm's
/// replaces the file (a new inode). Only a writer in place (Claude Code) could go unseen, within
/// one clock tick and at the same size ([`Stamp::settled`]), and what it writes is never a
/// member's retirement, which swarm alone writes; a look that must see every writer's change
/// uses [`Roster::load_if_changed`].
#[derive(Debug, Clone)]
pub(crate) struct Stamped {
    pub(crate) config: TeamConfig,
    pub(crate) stamp: Option<Stamp>,
}

impl Roster<'_> {
    /// [`Roster::add_member`] for several members in one roster write (a launch reserves all
    /// its teammates at once): none is added if any name is taken or given twice.
    pub fn add_members(&self, members: Vec<Member>) -> Result<()> {
        let names: Vec<AgentName> = members.iter().map(|m| m.name.clone()).collect();
        self.update(|config| {
            for (i, name) in names.iter().enumerate() {
                let taken = config.members.iter().any(|m| name.same_as(m.name.as_str()))
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
    fn a_roster_left_torn_for_a_moment_is_read_whole_once_its_writer_is_done() {
        // A writer held between its write and its truncate on a loaded machine: the old tail
        // stays after the new text for longer than six quick reads took (310 ms).
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        Roster::new(&store, &team).create("d", "/", "s").unwrap();
        let path = store.config_path(&team);
        let whole = std::fs::read(&path).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice(b"\n  }\n}");
        std::fs::write(&path, &torn).unwrap();
        assert!(matches!(read_once(&path), Ok(Some(Err(_)))), "it is torn");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(450));
                std::fs::write(&path, &whole).unwrap();
            })
        };
        let read = read(&path).unwrap().expect("the roster");
        assert_eq!(read.config.members.len(), 1);
        writer.join().unwrap();
    }

    #[test]
    fn a_settled_unchanged_roster_is_not_read_again_and_any_write_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let roster = Roster::new(&store, &team);
        roster.create("d", "/", "s").unwrap();
        let mut seen = None;
        // Just written: read, but its stamp is too fresh to stand for it.
        assert!(roster.load_if_changed(&mut seen).unwrap().is_some());
        assert_eq!(seen, None);
        std::thread::sleep(Duration::from_millis(150));
        assert!(roster.load_if_changed(&mut seen).unwrap().is_some());
        assert!(seen.is_some());
        assert!(roster.load_if_changed(&mut seen).unwrap().is_none());
        // A write by swarm (a rename) and one in place, as Claude Code writes, are both seen.
        let coder: AgentName = "coder".parse().unwrap();
        roster
            .add_member(Member::teammate(&team, &coder, "blue", "/"))
            .unwrap();
        let read = roster.load_if_changed(&mut seen).unwrap().unwrap();
        assert!(read.member("coder").is_some());
        std::thread::sleep(Duration::from_millis(150));
        assert!(roster.load_if_changed(&mut seen).unwrap().is_some());
        let path = store.config_path(&team);
        let text = fs::read_to_string(&path).unwrap().replace("\"d\"", "\"e\"");
        fs::write(&path, text).unwrap();
        let read = roster.load_if_changed(&mut seen).unwrap().unwrap();
        assert_eq!(read.description, "e");
        fs::remove_file(&path).unwrap();
        assert!(matches!(
            roster.load_if_changed(&mut seen),
            Err(Error::NoSuchTeam { .. })
        ));
    }

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
