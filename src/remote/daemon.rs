//! Starting and stopping a host's link: one `swarm relay link` process per team and host on the
//! lead's machine.
//!
//! The link is started by the launch that first puts a teammate on the host and lives on after
//! it, in a process group of its own with its output in `logs/relay-<host>.log`. It holds a
//! flock on `remote/<host>.lock` for its whole life, which is how anyone tells whether it runs
//! (the kernel drops the lock however it dies), and writes into that file its pid, start time
//! and machine: the private record by which `swarm down` stops it, after checking that the pid
//! is still that process and still leads its group. A running link is poked (a write to
//! `remote/poke/<host>`) to look at the store at once and send a sync mark.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};

use super::Host;
use crate::error::{Error, Result};
use crate::process::group::terminate_group;
use crate::process::pid::PidRecord;
use crate::process::spawn::LoggedChild;
use crate::store::fsio;
use crate::store::machine::{Machine, Whose};
use crate::store::names::TeamName;
use crate::store::paths::Store;

/// The record a running link keeps in its lock file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LinkRecord {
    pid: u32,
    start: Option<u64>,
    machine: Machine,
}

fn lock_path(store: &Store, team: &TeamName, host: &Host) -> PathBuf {
    store.remote_dir(team).join(format!("{}.lock", host.slug()))
}

/// Where pokes go: a directory of their own, so the link's own writes never wake it.
pub(crate) fn poke_dir(store: &Store, team: &TeamName) -> PathBuf {
    store.remote_dir(team).join("poke")
}

/// Held by the running link for its whole life.
#[derive(Debug)]
pub(crate) struct LinkLock {
    _file: File,
}

impl LinkLock {
    /// Takes the host's link lock and records this process in it; `None` when another link
    /// holds it.
    pub(crate) fn hold(store: &Store, team: &TeamName, host: &Host) -> Result<Option<LinkLock>> {
        fsio::ensure_dir(&store.remote_dir(team))?;
        let path = lock_path(store, team, host);
        let mut file = fsio::open_or_create(&path)?;
        if !FileExt::try_lock_exclusive(&file).map_err(Error::io("lock", &path))? {
            return Ok(None);
        }
        let me = PidRecord::of(std::process::id());
        let record = LinkRecord {
            pid: me.pid,
            start: me.start,
            machine: Machine::this().clone(),
        };
        file.set_len(0).map_err(Error::io("truncate", &path))?;
        let line = serde_json::to_string(&record).map_err(|e| Error::Backend(e.to_string()))?;
        file.write_all(line.as_bytes())
            .map_err(Error::io("write", &path))?;
        Ok(Some(LinkLock { _file: file }))
    }
}

/// Whether a link runs for `host` (someone holds its lock).
pub(crate) fn running(store: &Store, team: &TeamName, host: &Host) -> bool {
    let path = lock_path(store, team, host);
    let Ok(Some(file)) = fsio::open_read(&path) else {
        return false;
    };
    match FileExt::try_lock_shared(&file) {
        Ok(true) => {
            let _ = FileExt::unlock(&file);
            false
        }
        Ok(false) => true,
        Err(_) => false,
    }
}

/// Starts `host`'s link unless one runs (then pokes it): `<swarm exe> relay link ...` in a
/// group of its own, detached from this process, logging to `logs/relay-<host>.log`.
pub(crate) fn ensure(
    store: &Store,
    team: &TeamName,
    host: &Host,
    swarm_exe: &Path,
    remote_swarm: &str,
) -> Result<()> {
    if running(store, team, host) {
        return poke(store, team, host);
    }
    let root = crate::backend::absolute(store.root());
    let argv = vec![
        swarm_exe.display().to_string(),
        "--root".into(),
        root.display().to_string(),
        "relay".into(),
        "link".into(),
        "--team".into(),
        team.to_string(),
        "--host".into(),
        host.to_string(),
        "--remote-swarm".into(),
        remote_swarm.to_string(),
    ];
    let log =
        crate::backend::absolute(&store.logs_dir(team)).join(format!("relay-{}.log", host.slug()));
    // Dropped without waiting: the link outlives this process, and its lock says whether it
    // runs.
    let _child = LoggedChild::spawn_logged(&argv, &[], &root, &log)?;
    Ok(())
}

/// Wakes a running link so it looks at the store now.
pub(crate) fn poke(store: &Store, team: &TeamName, host: &Host) -> Result<()> {
    fsio::ensure_dir(&poke_dir(store, team))?;
    fsio::write_atomic(
        &poke_dir(store, team).join(host.slug()),
        fsio::now_ms().to_string().as_bytes(),
    )
}

/// Stops `host`'s link by its record: SIGTERM to its group (then SIGKILL after a grace), only
/// if the recorded pid is still the link this machine started. `true` if one was stopped.
pub(crate) fn stop(store: &Store, team: &TeamName, host: &Host) -> bool {
    if !running(store, team, host) {
        return false;
    }
    let path = lock_path(store, team, host);
    let mut text = String::new();
    if let Ok(Some(mut f)) = fsio::open_read(&path) {
        let _ = f.read_to_string(&mut text);
    }
    let Ok(record) = serde_json::from_str::<LinkRecord>(&text) else {
        return false;
    };
    if record.machine.whose() != Whose::Here {
        return false;
    }
    let pid = PidRecord {
        pid: record.pid,
        start: record.start,
    };
    match terminate_group(&pid, std::time::Duration::from_secs(3)) {
        Ok(()) => true,
        Err(why) => {
            eprintln!(
                "swarm: warning: not stopping the link to {host} (pid {}): {why}",
                record.pid
            );
            false
        }
    }
}
