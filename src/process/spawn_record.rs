//! Which process swarm itself started for a member: a private record, never the roster.
//!
//! Any member can write the roster, and a pid with its true start time is no secret
//! (`/proc/PID/stat`), so the roster's `swarmPid` proves nothing: believed, a forged entry has
//! swarm signal an unrelated process group (issue 22, item 4). So when swarm starts a member's
//! process it gives it a fresh random token in its environment (`SWARM_SPAWN_TOKEN`) and
//! records pid, start time, token and machine in a file of its own, one per team and member,
//! mode 0600, under its private state next to the lead keys
//! (`$XDG_STATE_HOME/swarm/spawns/<hash of root and team>/<member>.json`, default
//! `~/.local/state/swarm/...`), which a contained teammate can neither read nor write. Before
//! any signal to a member's process, [`signal_target`] takes the pid from that record alone and
//! checks that the process with that pid started when recorded, leads its group, and carries
//! the token in `/proc/PID/environ`. The roster's `swarmPid` stays for display. Where there is
//! no `/proc` (macOS) the record's pid and start time are trusted without the token: they still
//! come from swarm's own file, not the roster.

use std::fmt;
use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::group::{check_group, Refusal};
use super::pid::{start_time, PidRecord};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::machine::{Machine, Whose};
use crate::store::names::TeamName;
use crate::store::paths::Store;

/// The environment variable that carries a spawn's token into the member's process.
pub(crate) const TOKEN_VAR: &str = "SWARM_SPAWN_TOKEN";

/// A fresh random token for one spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpawnToken(String);

impl SpawnToken {
    pub(crate) fn new() -> Result<SpawnToken> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::Backend(format!("cannot make a spawn token: {e}")))?;
        Ok(SpawnToken(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The token `env` gives a process, if any (the pane trampoline reads its own spec's).
    pub(crate) fn from_env(env: &[(String, String)]) -> Option<SpawnToken> {
        env.iter()
            .find(|(k, _)| k == TOKEN_VAR)
            .map(|(_, v)| SpawnToken(v.clone()))
    }

    /// `env` with the token added (replacing any token already there).
    pub(crate) fn add_to(&self, env: &mut Vec<(String, String)>) {
        env.retain(|(k, _)| k != TOKEN_VAR);
        env.push((TOKEN_VAR.to_string(), self.0.clone()));
    }
}

/// What swarm recorded when it started a member's process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SpawnRecord {
    pub pid: u32,
    pub start: Option<u64>,
    token: String,
    machine: Machine,
}

/// Why swarm will not signal a member's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untrusted {
    /// swarm's own records name no process it started for the member on this machine.
    NotStarted,
    /// The pid swarm recorded now runs a process without the spawn's token: not that process.
    NoToken,
    /// The recorded process cannot be signalled safely (gone, recycled, not a group leader).
    Group(Refusal),
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Untrusted::NotStarted => f.write_str(
                "swarm found no process it started for this member in its own records (the \
                 roster's swarmPid proves nothing: any member can write the roster)",
            ),
            Untrusted::NoToken => f.write_str(
                "that process does not carry the token swarm gave the process it started \
                 (SWARM_SPAWN_TOKEN), so it is another one",
            ),
            Untrusted::Group(why) => why.fmt(f),
        }
    }
}

/// Records that swarm started `pid` for member `name` of `team`, with `token` in its
/// environment.
pub(crate) fn save(
    store: &Store,
    team: &TeamName,
    name: &str,
    pid: u32,
    token: &SpawnToken,
) -> Result<()> {
    let path = record_path(store, team, name)?;
    let dir = path.parent().expect("a record has a directory");
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(Error::io("create", dir))?;
    check_private_dir(dir)?;
    let record = SpawnRecord {
        pid,
        start: start_time(pid),
        token: token.0.clone(),
        machine: Machine::this().clone(),
    };
    // Not synced: the process it records ends with the machine, and the record names the boot
    // (`machine`), so after a crash it proves nothing anyway (and one the crash left unreadable
    // has nothing signalled). A launch of 200 made 400 fsyncs for these alone.
    fsio::write_json_volatile(&path, &record)
}

/// The record of the process swarm started for `name`, if there is one.
pub(crate) fn load(store: &Store, team: &TeamName, name: &str) -> Option<SpawnRecord> {
    let path = record_path(store, team, name).ok()?;
    let bytes = fsio::read_file(&path).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The process group swarm may signal for `name`: the one it recorded starting, on this
/// machine, still that process (start time, group leader) and still carrying the spawn's
/// token. `Err(Untrusted::Group(Refusal::Gone))` when that process is simply gone.
pub(crate) fn signal_target(
    store: &Store,
    team: &TeamName,
    name: &str,
) -> std::result::Result<PidRecord, Untrusted> {
    signal_target_of(load(store, team, name))
}

/// [`signal_target`] for a record already read: a caller that judged the record (it names the
/// run it means to stop) signals what it judged, not what a later read finds.
pub(crate) fn signal_target_of(
    record: Option<SpawnRecord>,
) -> std::result::Result<PidRecord, Untrusted> {
    let record = record.ok_or(Untrusted::NotStarted)?;
    if record.machine.whose() != Whose::Here {
        return Err(Untrusted::NotStarted);
    }
    let pid = PidRecord {
        pid: record.pid,
        start: record.start,
    };
    check_group(&pid).map_err(Untrusted::Group)?;
    if !pid.alive() {
        // Exited, not reaped yet: nothing left to signal.
        return Err(Untrusted::Group(Refusal::Gone));
    }
    match token_in(record.pid, &record.token) {
        Token::Carried => Ok(pid),
        Token::Empty | Token::Missing => look_again(&pid, &record.token),
    }
}

/// How long a process whose environment lacks the token is watched before it is called
/// ending (still empty) or another one (still without the token).
const EXITING_WAIT: std::time::Duration = std::time::Duration::from_millis(300);

/// A process whose environment reads empty, or without the token, may be swarm's own at a
/// moment it cannot show it, so it is looked at again for a moment:
/// - Ending: the kernel shows an exiting process's environment empty (or a part of it, where a
///   read ends at memory it let go of) before the process is a zombie. Called another process,
///   it had `swarm shutdown` report a stop it could not make, of a teammate that had just
///   approved.
/// - In an `exec`: between the old program's memory and the new one's, the environment reads
///   empty too, and every contained teammate starts through two of swarm's own steps that each
///   exec the next. Called ending, it had `swarm kill` just after a launch say a running
///   teammate was gone (a CI run).
///
/// The one swarm started goes, or shows the token again; a process that keeps running without
/// it is another one, and one that keeps an empty environment is taken as ending: either way
/// nothing is signalled.
fn look_again(pid: &PidRecord, token: &str) -> std::result::Result<PidRecord, Untrusted> {
    let until = std::time::Instant::now() + EXITING_WAIT;
    loop {
        if check_group(pid) == Err(Refusal::Gone) || !pid.alive() {
            return Err(Untrusted::Group(Refusal::Gone));
        }
        let seen = token_in(pid.pid, token);
        if seen == Token::Carried {
            return Ok(*pid);
        }
        if std::time::Instant::now() >= until {
            return Err(match seen {
                Token::Missing => Untrusted::NoToken,
                _ => Untrusted::Group(Refusal::Gone),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// What a process's environment says of a spawn's token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Carried,
    /// An empty environment: the process is exiting, or in an `exec`.
    Empty,
    Missing,
}

/// Forgets every record of `team`, once the team itself is gone; none is fine.
pub(crate) fn forget_team(store: &Store, team: &TeamName) -> Result<()> {
    let dir = team_dir(store, team)?;
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", &dir)(e)),
        _ => Ok(()),
    }
}

/// Whether `/proc/<pid>/environ` holds `SWARM_SPAWN_TOKEN=<token>`.
#[cfg(target_os = "linux")]
fn token_in(pid: u32, token: &str) -> Token {
    // Read in one go where it fits: a read in small pieces sees more of an exiting
    // process's environment vanish between two of them.
    let mut environ = Vec::with_capacity(256 * 1024);
    let read = std::fs::File::open(format!("/proc/{pid}/environ"))
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut environ));
    if read.is_err() {
        return Token::Missing;
    }
    if environ.is_empty() {
        return Token::Empty;
    }
    let want = format!("{TOKEN_VAR}={token}");
    if environ
        .split(|b| *b == 0)
        .any(|entry| entry == want.as_bytes())
    {
        Token::Carried
    } else {
        Token::Missing
    }
}

/// No `/proc` to read another process's environment: the record's pid and start time, from
/// swarm's own file, are what there is.
#[cfg(not(target_os = "linux"))]
fn token_in(_pid: u32, _token: &str) -> Token {
    Token::Carried
}

/// Refuses a record directory that is a symlink, not ours, or open to group or others.
fn check_private_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(dir).map_err(Error::io("inspect", dir))?;
    let private = meta.is_dir()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o077 == 0;
    if private {
        return Ok(());
    }
    Err(Error::usage(format!(
        "refusing swarm's spawn records at {}: it must be a directory of yours that only you \
         can open (chmod 700 it)",
        dir.display()
    )))
}

/// `spawns/<team key>` under swarm's private state.
fn team_dir(store: &Store, team: &TeamName) -> Result<PathBuf> {
    let name = crate::store::private_state::team_key(store, team, &[]);
    Ok(crate::store::private_state::join("spawns")?.join(name))
}

fn record_path(store: &Store, team: &TeamName, name: &str) -> Result<PathBuf> {
    // A member name is a validated name (no '/'), but this file must never leave its directory.
    if name.is_empty() || name.contains(['/', '\0']) || name.starts_with('.') {
        return Err(Error::usage(format!("no spawn record for member {name:?}")));
    }
    Ok(team_dir(store, team)?.join(format!("{name}.json")))
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn only_the_process_with_the_token_is_a_signal_target() {
        let (_dir, store, team) = crate::store::fixture::team_with(&["coder"]);
        let token = SpawnToken::new().unwrap();
        let mut with = Command::new("sleep")
            .arg("30")
            .env(TOKEN_VAR, &token.0)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut without = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        assert_eq!(
            signal_target(&store, &team, "coder"),
            Err(Untrusted::NotStarted)
        );
        save(&store, &team, "coder", with.id(), &token).unwrap();
        assert_eq!(
            signal_target(&store, &team, "coder"),
            Ok(PidRecord::of(with.id()))
        );
        // The same record pointed at another process (as a forger would) is refused.
        save(&store, &team, "coder", without.id(), &token).unwrap();
        assert_eq!(
            signal_target(&store, &team, "coder"),
            Err(Untrusted::NoToken)
        );
        // One whose environment reads empty is ending (the kernel empties it before the process
        // is a zombie): nothing to signal, and nothing to report as another process.
        let mut ending = Command::new("/bin/sleep")
            .arg("30")
            .env_clear()
            .process_group(0)
            .spawn()
            .unwrap();
        save(&store, &team, "coder", ending.id(), &token).unwrap();
        assert_eq!(
            signal_target(&store, &team, "coder"),
            Err(Untrusted::Group(Refusal::Gone))
        );
        forget_team(&store, &team).unwrap();
        assert_eq!(load(&store, &team, "coder"), None);
        for child in [&mut with, &mut without, &mut ending] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// A process in the middle of an `exec` (swarm's own steps become the next one: the pane
    /// trampoline, the sandbox's outer step becoming `bwrap`) shows an empty environment for a
    /// moment too, though it is not ending. It is still the process swarm started, and one that
    /// execs without pause stays a target at every look (a full CI run: `swarm kill` just after
    /// a launch saw the outer step become `bwrap` and said the teammate was gone).
    #[test]
    fn a_process_that_execs_again_and_again_stays_a_signal_target() {
        let (dir, store, team) = crate::store::fixture::team_with(&["coder"]);
        let token = SpawnToken::new().unwrap();
        let script = dir.path().join("again.sh");
        std::fs::write(&script, "exec /bin/sh \"$0\"\n").unwrap();
        let mut again = Command::new("/bin/sh")
            .arg(&script)
            .env(TOKEN_VAR, &token.0)
            .process_group(0)
            .spawn()
            .unwrap();
        save(&store, &team, "coder", again.id(), &token).unwrap();
        let looks: Vec<_> = (0..400)
            .map(|_| signal_target(&store, &team, "coder"))
            .collect();
        again.kill().unwrap();
        again.wait().unwrap();
        let missed = looks.iter().filter(|l| l.is_err()).count();
        assert_eq!(
            missed,
            0,
            "{missed} of 400 looks: {:?}",
            looks.iter().find(|l| l.is_err())
        );
    }
}
