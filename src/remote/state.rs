//! What a link tells the rest of swarm about its host: `teams/<team>/remote/<host>.json`.
//!
//! The link (one process per team and host on the lead's machine) writes this file whenever
//! something about the connection changes: connected or disconnected and since when, the last
//! ssh error, the remote machine and its swarm, how far its clock is off ours, the last point
//! the mirror is known to hold everything home had sent ([`LinkState::synced_ms`]), and how each
//! of the host's members is doing there. `swarm status`, the health of remote members and a
//! launch waiting for the mirror read it; only the link writes it. A file whose link is not
//! running describes a disconnected host, whatever it says.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::frame::Life;
use super::Host;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::machine::Machine;
use crate::store::names::TeamName;
use crate::store::paths::Store;

/// Clock differences beyond this get a warning: Claude Code rejects lead signatures more than
/// 120 s older than a teammate's start, and logs disagree long before that.
pub(crate) const SKEW_WARNING_MS: i64 = 2000;

/// The remote end as its relay described itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemoteEnd {
    pub(crate) machine: Machine,
    pub(crate) version: String,
    pub(crate) root: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LinkState {
    pub(crate) host: Host,
    pub(crate) connected: bool,
    /// Connected since, or disconnected since.
    pub(crate) since_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_error: Option<String>,
    /// Why the link gave up for good (the host runs another swarm version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fatal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) remote: Option<RemoteEnd>,
    /// Remote clock minus ours, measured over a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) skew_ms: Option<i64>,
    /// Everything home sent before this time is in the mirror.
    #[serde(default)]
    pub(crate) synced_ms: u64,
    #[serde(default)]
    pub(crate) members: BTreeMap<String, Life>,
    /// When `members` last changed, by this machine's clock: a member started on its host
    /// after that is not judged by it (`member::judge`).
    #[serde(default)]
    pub(crate) members_ms: u64,
}

pub(crate) fn path(store: &Store, team: &TeamName, host: &Host) -> PathBuf {
    store.remote_dir(team).join(format!("{}.json", host.slug()))
}

impl LinkState {
    pub(crate) fn new(host: &Host) -> LinkState {
        LinkState {
            host: host.clone(),
            connected: false,
            since_ms: fsio::now_ms(),
            last_error: None,
            fatal: None,
            remote: None,
            skew_ms: None,
            synced_ms: 0,
            members: BTreeMap::new(),
            members_ms: 0,
        }
    }

    /// The host's state as its link last wrote it, if it ever ran.
    pub(crate) fn load(store: &Store, team: &TeamName, host: &Host) -> Option<LinkState> {
        fsio::read_json(&path(store, team, host)).ok().flatten()
    }

    pub(crate) fn save(&self, store: &Store, team: &TeamName) -> Result<()> {
        fsio::ensure_dir(&store.remote_dir(team))?;
        fsio::write_json(&path(store, team, &self.host), self)
    }

    /// Whether the clock warning applies.
    pub(crate) fn skewed(&self) -> Option<i64> {
        self.skew_ms.filter(|s| s.abs() > SKEW_WARNING_MS)
    }
}

/// Waits until the mirror on `host` holds everything home had at `after_ms` (the link's sync
/// mark passed it), or fails with the link's own words for why not.
pub(crate) fn wait_synced(
    store: &Store,
    team: &TeamName,
    host: &Host,
    after_ms: u64,
    limit: Duration,
) -> Result<()> {
    let start = Instant::now();
    loop {
        let state = LinkState::load(store, team, host);
        if let Some(s) = &state {
            if let Some(fatal) = &s.fatal {
                return Err(Error::usage(fatal.clone()));
            }
            if s.connected && s.synced_ms >= after_ms {
                return Ok(());
            }
        }
        if start.elapsed() > limit {
            let why = state
                .and_then(|s| s.last_error)
                .unwrap_or_else(|| "no answer from its relay".into());
            return Err(Error::Unreachable {
                host: host.to_string(),
                detail: format!(
                    "its mirror did not catch up within {} s ({why})",
                    limit.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One host of a team as `swarm status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HostStatus {
    pub(crate) host: Host,
    pub(crate) connected: bool,
    /// Connected since, or disconnected since (ms since the epoch).
    pub(crate) since_ms: Option<u64>,
    pub(crate) error: Option<String>,
    pub(crate) skew_ms: Option<i64>,
    pub(crate) remote: Option<RemoteEnd>,
    /// The line `swarm status` prints, and its warning about the clock if any.
    #[serde(skip)]
    pub(crate) line: String,
    #[serde(skip)]
    pub(crate) warning: Option<String>,
}

/// The hosts `members` run on, each with what its link last said (a link that does not run
/// means a disconnected host, since its last word).
pub(crate) fn hosts(
    store: &Store,
    team: &TeamName,
    members: &[crate::store::roster::Member],
) -> Vec<HostStatus> {
    let mut hosts: Vec<Host> = members.iter().filter_map(super::host_of).collect();
    hosts.sort();
    hosts.dedup();
    let now = fsio::now_ms();
    let ago = |ms: u64| {
        let secs = now.saturating_sub(ms) / 1000;
        let when = crate::store::protocol::format_timestamp(ms);
        match secs {
            0..=119 => format!("{when}, {secs} s ago"),
            120..=7199 => format!("{when}, {} min ago", secs / 60),
            _ => format!("{when}, {} h ago", secs / 3600),
        }
    };
    hosts
        .into_iter()
        .map(|host| {
            let state = LinkState::load(store, team, &host);
            let running = super::daemon::running(store, team, &host);
            let connected = running && state.as_ref().is_some_and(|s| s.connected);
            let since = state.as_ref().map(|s| s.since_ms);
            let error = state.as_ref().and_then(|s| s.fatal.clone().or(s.last_error.clone()));
            let remote = state.as_ref().and_then(|s| s.remote.clone());
            let skew = state.as_ref().and_then(|s| s.skew_ms);
            let line = match (connected, since) {
                (true, Some(t)) => format!(
                    "host {host}: connected since {}{}",
                    ago(t),
                    remote
                        .as_ref()
                        .map(|r| format!(" (swarm {} on {})", r.version, r.machine.label()))
                        .unwrap_or_default()
                ),
                (false, Some(t)) => format!(
                    "host {host}: disconnected since {}{}",
                    ago(t),
                    match (&error, running) {
                        (Some(e), true) => format!(" ({e}; reconnecting)"),
                        (Some(e), false) => format!(" ({e}; its link is not running)"),
                        (None, _) => String::new(),
                    }
                ),
                (_, None) => format!("host {host}: never connected"),
            };
            let warning = state.as_ref().and_then(LinkState::skewed).map(|s| {
                format!(
                    "warning: {host}'s clock is {:.1} s {} this machine's: Claude Code refuses lead signatures more than 120 s older than a teammate's start, so a remote claude teammate may ignore the lead; set the clocks right (NTP)",
                    s.abs() as f64 / 1000.0,
                    if s > 0 { "ahead of" } else { "behind" }
                )
            });
            HostStatus {
                host,
                connected,
                since_ms: since,
                error,
                skew_ms: skew,
                remote,
                line,
                warning,
            }
        })
        .collect()
}
