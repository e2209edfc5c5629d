//! Is a teammate process still alive? Answered with a lock, not a pid.
//!
//! A teammate runtime holds an `fs4` (flock) lock on `teams/<team>/alive/<name>.lock` for its
//! whole life. The kernel drops the lock when the process dies however it dies, so anyone who
//! can take the lock knows the holder is gone: no pid reuse, no heartbeat files, no clocks.
//! The file says who holds it (pid, start time, host and boot id): a lock file another
//! machine's runtime wrote is not judged here, since this machine's kernel knows nothing of its
//! flock.
//!
//! A lock file can be deleted under its runtime (issue 21 item 4). Its flock then sits on an
//! unlinked inode: the next `swarm status` finds no file and the next runtime for the member
//! makes a new one and takes it, beside the live one. So the holder is also recorded in
//! `members/<name>/runtime.json`, and a starting runtime refuses while the process recorded
//! there is alive (same pid, same start time, this machine); and a runtime checks on a timer
//! that its path still names the file it holds ([`AliveLock::keep`]) and takes it again if not.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use fs4::fs_std::FileExt;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::machine::{self, Machine, Whose};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::process_id::{start_time, PidRecord};

/// Held by a live teammate; dropping it (or dying) releases it.
#[derive(Debug)]
pub(crate) struct AliveLock {
    file: File,
    path: PathBuf,
    /// Where the holder is recorded as well (`members/<name>/runtime.json`).
    record: PathBuf,
    /// The held file's device and inode, to tell it from a file made at its path later.
    id: (u64, u64),
    /// What [`AliveLock::record_events`] last wrote, written again when the lock is retaken.
    events: Option<String>,
}

/// What [`AliveLock::keep`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// The path still names the file we hold.
    Held,
    /// It was deleted or replaced, and we hold the file now there.
    Retaken,
    /// It was replaced by a file another process holds (tried again on the next check).
    Busy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// The lock is held: the runtime is running.
    Alive,
    /// The lock file exists and nobody holds it: the runtime started once and is gone.
    Dead,
    /// No lock file, or an empty one: this member never ran swarm's runtime (a native `claude`
    /// teammate, or one not started yet, or one starting right now); ask the pane instead.
    Unknown,
}

impl AliveLock {
    /// Takes the lock for `agent`; fails if another live process already holds it.
    pub(crate) fn hold(store: &Store, team: &TeamName, agent: &AgentName) -> Result<AliveLock> {
        fsio::ensure_dir(&store.alive_dir(team))?;
        let path = store.alive_path(team, agent);
        let file = fsio::open_or_create(&path)?;
        if !take_exclusive(&file, &path)? {
            return Err(Error::usage(format!(
                "{agent} is already running in team {team} (another process holds {})",
                path.display()
            )));
        }
        // In the member's own directory: the one of `members/` its sandbox leaves writable.
        let record = store.member_dir(team, agent).join("runtime.json");
        if let Some(other) = live_recorded_holder(&record) {
            return Err(Error::usage(format!(
                "{agent} is already running in team {team} (swarm process {}, recorded in {}, \
                 whose lock file {} was deleted; it takes it again within seconds)",
                other.pid,
                record.display(),
                path.display()
            )));
        }
        let lock = AliveLock {
            id: file_id(&file, &path)?,
            file,
            path,
            record,
            events: None,
        };
        // Not synced: after a reboot the record names an earlier boot, which proves nothing.
        fsio::ensure_dir(lock.record.parent().expect("a member dir"))?;
        let line = format!("{}\n", Holder::this().to_line());
        fsio::replace_volatile(&lock.record, line.as_bytes())?;
        lock.write_holder()?;
        Ok(lock)
    }

    /// Checks that the lock file's path still names the file we hold; if it was deleted or
    /// replaced, takes the file now there (made if missing). Cheap (two `stat`s), for a timer.
    pub(crate) fn keep(&mut self) -> Result<Kept> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == self.id => return Ok(Kept::Held),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("inspect", &self.path)(e)),
        }
        fsio::ensure_dir(self.path.parent().expect("an alive dir"))?;
        let file = fsio::open_or_create(&self.path)?;
        if !FileExt::try_lock_exclusive(&file).map_err(Error::io("lock", &self.path))? {
            return Ok(Kept::Busy);
        }
        self.id = file_id(&file, &self.path)?;
        self.file = file;
        self.write_holder()?;
        Ok(Kept::Retaken)
    }

    /// Writes the holder line (and the events line, once recorded) over the file's contents.
    fn write_holder(&self) -> Result<()> {
        use std::os::unix::fs::FileExt as _;
        let mut text = format!("{}\n", Holder::this().to_line());
        if let Some(events) = &self.events {
            text.push_str(&format!("events {events}\n"));
        }
        // Never shorter than the holder line alone, so a probe never sees the file empty.
        self.file
            .write_all_at(text.as_bytes(), 0)
            .and_then(|()| self.file.set_len(text.len() as u64))
            .map_err(Error::io("write", &self.path))
    }

    /// Records, after the holder, how the runtime learns of changes (`inotify`, `polling`, `off`:
    /// see `store::watcher::Mode`), which `swarm status` shows as the member's `events`.
    pub(crate) fn record_events(&mut self, events: &str) -> Result<()> {
        self.events = Some(events.to_string());
        self.write_holder()
    }
}

fn file_id(file: &File, path: &std::path::Path) -> Result<(u64, u64)> {
    let meta = file.metadata().map_err(Error::io("inspect", path))?;
    Ok((meta.dev(), meta.ino()))
}

/// The holder `record` names if it is a live process on this machine other than us: known by
/// pid and start time both (a record without a start time proves nothing once its pid is
/// recycled, so it never refuses a start).
fn live_recorded_holder(record: &std::path::Path) -> Option<Holder> {
    let bytes = fsio::read_file(record).ok()??;
    let holder = Holder::parse(std::str::from_utf8(&bytes).ok()?)?;
    let me = Holder::this();
    let start = holder.start?;
    let live = machine::whose(holder.machine.as_ref()) == Whose::Here
        && (holder.pid, holder.start) != (me.pid, me.start)
        && PidRecord {
            pid: holder.pid,
            start: Some(start),
        }
        .alive();
    live.then_some(holder)
}

/// What a live runtime recorded with [`AliveLock::record_events`]; `None` when nothing was.
pub(crate) fn recorded_events(store: &Store, team: &TeamName, agent: &AgentName) -> Option<String> {
    let bytes = fsio::read_file(&store.alive_path(team, agent)).ok()??;
    let text = String::from_utf8(bytes).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("events "))
        .map(str::to_string)
}

/// What a liveness lock file says about its runtime.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Holder {
    pid: u32,
    /// The process's start time (`store::process_id`); missing in records of older swarms and
    /// where it cannot be read (a contained runtime cannot see its outside pid's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<u64>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    machine: Option<Machine>,
}

/// Set by a contained teammate's sandbox (`launch::sandbox`) to its pid on the machine: inside,
/// the runtime has a pid namespace of its own and its own pid says nothing outside.
pub(crate) const SANDBOX_PID_ENV: &str = "SWARM_SANDBOX_PID";

impl Holder {
    fn this() -> Holder {
        let outside = std::env::var(SANDBOX_PID_ENV)
            .ok()
            .and_then(|p| p.parse().ok());
        let pid = outside.unwrap_or_else(std::process::id);
        Holder {
            pid,
            start: start_time(pid),
            machine: Some(Machine::this().clone()),
        }
    }

    fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a holder always serializes")
    }

    /// The holder a lock file names; a bare pid (swarms before host records) is this machine's.
    fn parse(text: &str) -> Option<Holder> {
        // The first line; an `events` line may follow (`record_events`).
        let text = text.lines().next().unwrap_or_default().trim();
        serde_json::from_str(text).ok().or_else(|| {
            text.parse().ok().map(|pid| Holder {
                pid,
                start: None,
                machine: None,
            })
        })
    }
}

/// Takes the lock for good. A [`probe`] holds a shared lock on the file for an instant, so a
/// lock held only that long is a probe's, not a running teammate's: try again for a moment
/// before calling the member already running (a `swarm status` at the instant a teammate
/// starts must not stop it).
fn take_exclusive(file: &File, path: &std::path::Path) -> Result<bool> {
    let until = std::time::Instant::now() + PROBE_WAIT;
    loop {
        if FileExt::try_lock_exclusive(file).map_err(Error::io("lock", path))? {
            return Ok(true);
        }
        if std::time::Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long a starting runtime waits out a lock that may be a probe's.
const PROBE_WAIT: Duration = Duration::from_millis(300);

/// Held while deciding that a member is dead and retiring it, and while a starting runtime marks
/// its member active again. Without it a runtime restarted between the lead's probe and the
/// retirement would be marked inactive and have the task it just claimed released under it (so
/// two teammates would work on one task, and nobody would reap it when it died again).
#[derive(Debug)]
pub(crate) struct ReapGate {
    _file: File,
}

impl ReapGate {
    /// Waits for the team's gate. Holders only do a few small writes, so the wait is short; a
    /// holder that dies releases it with its descriptor. The wait has an end all the same: a
    /// runtime must reach the gate to rejoin, so a contained teammate can flock it too, and one
    /// that kept it would otherwise stop the lead console's every pass and every rejoin for good.
    pub(crate) fn take(store: &Store, team: &TeamName) -> Result<ReapGate> {
        Self::take_within(store, team, crate::store::lock::GIVE_UP_AFTER)
    }

    fn take_within(store: &Store, team: &TeamName, give_up_after: Duration) -> Result<ReapGate> {
        let start = std::time::Instant::now();
        fsio::ensure_dir(&store.alive_dir(team))?;
        let path = store.alive_gate_path(team);
        let file = fsio::open_or_create(&path)?;
        match crate::store::lock::flock_within(file, &path, &path, start, give_up_after)? {
            Some(file) => Ok(ReapGate { _file: file }),
            None => Err(Error::GateHeld {
                path,
                waited_ms: start.elapsed().as_millis(),
            }),
        }
    }
}

/// Whether `agent`'s runtime is alive, judged by its lock.
pub fn probe(store: &Store, team: &TeamName, agent: &AgentName) -> Result<Liveness> {
    let path = store.alive_path(team, agent);
    let Some(file) = fsio::open_read(&path)? else {
        return Ok(Liveness::Unknown);
    };
    if held(&file).map_err(Error::io("lock", &path))? {
        return Ok(Liveness::Alive);
    }
    // A runtime writes its record once it holds the lock, so an empty, unlocked file is one
    // that is starting this instant (created, not yet locked), not a dead one.
    let mut text = String::new();
    let _ = std::io::Read::read_to_string(&mut (&file), &mut text);
    if text.trim().is_empty() {
        return Ok(Liveness::Unknown);
    }
    // A lock another machine's runtime holds is not visible to this kernel: free here says
    // nothing about it.
    let elsewhere = Holder::parse(&text)
        .is_some_and(|h| machine::whose(h.machine.as_ref()) == Whose::Elsewhere);
    Ok(if elsewhere {
        Liveness::Unknown
    } else {
        Liveness::Dead
    })
}

/// The pid the lock file's record names (its last holder, alive or not), if it names one.
pub(crate) fn recorded_holder(store: &Store, team: &TeamName, agent: &AgentName) -> Option<u32> {
    recorded(store, team, agent).map(|h| h.pid)
}

fn recorded(store: &Store, team: &TeamName, agent: &AgentName) -> Option<Holder> {
    let file = fsio::open_read(&store.alive_path(team, agent)).ok()??;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut (&file), &mut text).ok()?;
    Holder::parse(&text)
}

/// Whether the member's runtime took its lock at `since` or later (alive now or not): its lock
/// file, written as it is taken, is that recent. A launch's wait asks it of a teammate whose
/// pane it finds ended, which may have come up and been stopped between two looks.
pub(crate) fn taken_since(
    store: &Store,
    team: &TeamName,
    agent: &AgentName,
    since: std::time::SystemTime,
) -> bool {
    let path = store.alive_path(team, agent);
    let written = std::fs::symlink_metadata(&path).and_then(|m| m.modified());
    written.is_ok_and(|at| at >= since) && recorded(store, team, agent).is_some()
}

/// Which run of a member's runtime this is: its pid on the machine and start time, as its lock
/// file records them. A runtime puts it on its shutdown approval ([`RUN_FIELD`]), so the lead
/// console can tell an approval from the run that holds (or last held) the lock from one an
/// earlier run sent before `restart` or `up` started another: pane ids cannot tell them apart,
/// since tmux numbers panes from `%0` again after its server exits.
pub(crate) fn this_run() -> String {
    run_id(&Holder::this())
}

/// The run the member's lock file names (its last holder, alive or not).
pub(crate) fn recorded_run(store: &Store, team: &TeamName, agent: &AgentName) -> Option<String> {
    recorded(store, team, agent).map(|h| run_id(&h))
}

/// The pid on the machine that a run id ([`this_run`]) names.
pub(crate) fn run_pid(run: &str) -> Option<u32> {
    run.split(':').next()?.parse().ok()
}

/// The field of a shutdown approval that names the run that sent it (swarm only).
pub(crate) const RUN_FIELD: &str = "swarmRun";

fn run_id(holder: &Holder) -> String {
    match holder.start {
        Some(start) => format!("{}:{start}", holder.pid),
        None => holder.pid.to_string(),
    }
}

/// Whether a lock is held on `file`, by a shared lock taken and let go at once (which a
/// starting runtime waits out, see [`take_exclusive`]).
fn held(file: &File) -> std::io::Result<bool> {
    if FileExt::try_lock_shared(file)? {
        let _ = FileExt::unlock(file);
        return Ok(false);
    }
    Ok(true)
}

/// Whether the lock on the file at `path` is held, for a poller that watches `alive/` without
/// file events; `None` when it cannot be looked at (gone, or not a file swarm could open).
pub(crate) fn held_at(path: &std::path::Path) -> Option<bool> {
    let file = fsio::open_read(path).ok()??;
    held(&file).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_tells_alive_from_dead() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Unknown);
        // Created by a runtime that has not locked it yet: starting, not dead.
        fsio::ensure_dir(&store.alive_dir(&team)).unwrap();
        std::fs::write(store.alive_path(&team, &coder), "").unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Unknown);
        let mut held = AliveLock::hold(&store, &team, &coder).unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Alive);
        assert_eq!(recorded_events(&store, &team, &coder), None);
        held.record_events("polling").unwrap();
        assert_eq!(
            recorded_events(&store, &team, &coder).as_deref(),
            Some("polling")
        );
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Alive);
        assert!(AliveLock::hold(&store, &team, &coder).is_err());
        drop(held);
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Dead);
    }

    /// A deleted lock file: the holder takes it again on `keep`; a runtime starting before it
    /// has is refused while the process `runtime.json` names lives (pid and start time).
    #[test]
    fn a_deleted_lock_file_is_retaken_and_its_recorded_holder_refuses_a_second_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        let path = store.alive_path(&team, &coder);
        let mut held = AliveLock::hold(&store, &team, &coder).unwrap();
        held.record_events("polling").unwrap();
        assert_eq!(held.keep().unwrap(), Kept::Held);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Unknown);
        assert_eq!(held.keep().unwrap(), Kept::Retaken);
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Alive);
        assert_eq!(
            recorded_events(&store, &team, &coder).as_deref(),
            Some("polling")
        );
        assert_eq!(held.keep().unwrap(), Kept::Held);
        drop(held);
        // Another live process recorded as the holder, its lock file gone.
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let record = dir.path().join("teams/t/members/coder/runtime.json");
        let line = Holder {
            pid: other.id(),
            start: start_time(other.id()),
            machine: Some(Machine::this().clone()),
        }
        .to_line();
        std::fs::write(&record, line).unwrap();
        std::fs::remove_file(&path).unwrap();
        let err = AliveLock::hold(&store, &team, &coder).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("swarm process {}", other.id())),
            "{err}"
        );
        other.kill().unwrap();
        other.wait().unwrap();
        AliveLock::hold(&store, &team, &coder).unwrap();
    }

    #[test]
    fn a_lock_file_another_machine_wrote_is_not_judged_here() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        drop(AliveLock::hold(&store, &team, &coder).unwrap());
        let path = store.alive_path(&team, &coder);
        let mine = Holder::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(mine.pid, std::process::id());
        assert_eq!(mine.machine.as_ref(), Some(Machine::this()));
        let elsewhere = Holder {
            pid: mine.pid,
            start: None,
            machine: Some(Machine {
                host: format!("{}-elsewhere", Machine::this().host),
                boot: String::new(),
            }),
        };
        std::fs::write(&path, elsewhere.to_line()).unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Unknown);
        // A bare pid, as swarms before host records wrote it, is this machine's.
        std::fs::write(&path, "4242\n").unwrap();
        assert_eq!(probe(&store, &team, &coder).unwrap(), Liveness::Dead);
    }

    #[test]
    fn a_runtime_starting_while_a_probe_looks_still_takes_its_lock() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        fsio::ensure_dir(&store.alive_dir(&team)).unwrap();
        let path = store.alive_path(&team, &coder);
        std::fs::write(&path, "").unwrap();
        // What a probe does, held for longer than any probe does.
        let probe = File::open(&path).unwrap();
        assert!(FileExt::try_lock_shared(&probe).unwrap());
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            FileExt::unlock(&probe).unwrap();
        });
        let held = AliveLock::hold(&store, &team, &coder);
        releaser.join().unwrap();
        assert!(held.is_ok(), "{:?}", held.err());
    }

    #[test]
    fn an_alive_lock_hard_linked_elsewhere_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("root"));
        let team: TeamName = "t".parse().unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        fsio::ensure_dir(&store.alive_dir(&team)).unwrap();
        let precious = dir.path().join("precious");
        std::fs::write(&precious, "keep me").unwrap();
        std::fs::hard_link(&precious, store.alive_path(&team, &coder)).unwrap();
        let err = AliveLock::hold(&store, &team, &coder).unwrap_err();
        assert!(matches!(err, Error::HardLinked { links: 2, .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    }

    /// A process that keeps the gate (any that can open it can flock it, a contained teammate
    /// too) makes a taker give up with an error that says so, not wait for good.
    #[test]
    fn a_reap_gate_kept_by_another_process_is_given_up_on_and_taken_once_free() {
        use std::os::unix::process::CommandExt;

        let (_dir, store, team) = crate::store::fixture::team_with(&[]);
        fsio::ensure_dir(&store.alive_dir(&team)).unwrap();
        let gate = store.alive_gate_path(&team);
        std::fs::write(&gate, "").unwrap();
        // `-o`: flock itself holds the lock (not the command it runs), so killing it frees it.
        let mut keeper = std::process::Command::new("flock")
            .arg("-o")
            .arg(&gate)
            .args(["sleep", "60"])
            .process_group(0)
            .spawn()
            .unwrap();
        let held = || {
            std::fs::read_to_string("/proc/locks")
                .unwrap()
                .lines()
                .any(|l| l.contains(&format!(" {} ", keeper.id())))
        };
        let start = std::time::Instant::now();
        while !held() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "flock took the gate"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let err = ReapGate::take_within(&store, &team, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::GateHeld { .. }), "{err}");
        let group = rustix::process::Pid::from_raw(keeper.id() as i32).unwrap();
        rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
        keeper.wait().unwrap();
        ReapGate::take_within(&store, &team, Duration::from_secs(20)).unwrap();
    }

    /// The reap gate is a store file like any other: opened through `fsio`, so one that is a
    /// hard link to a file elsewhere is refused (it used to be opened without the check).
    #[test]
    fn a_reap_gate_hard_linked_elsewhere_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("root"));
        let team: TeamName = "t".parse().unwrap();
        fsio::ensure_dir(&store.alive_dir(&team)).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        std::fs::hard_link(&elsewhere, store.alive_gate_path(&team)).unwrap();
        let err = ReapGate::take(&store, &team).unwrap_err();
        assert!(matches!(err, Error::HardLinked { links: 2, .. }), "{err}");
    }
}
