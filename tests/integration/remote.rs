//! Teammates on other hosts, for real: each "host" is an OpenSSH server the test starts on
//! 127.0.0.1 (`sshd`), logging into a second HOME with a store of its own, reached through the
//! ssh config the test writes (`SWARM_SSH_CONFIG`). The lead's side is an ordinary temp root
//! and a private tmux server. Every assertion reads the home store (the source of truth) or a
//! host's mirror through the files PROTOCOL.md documents.

mod attach;
mod bench;
mod claims;
mod claude;
mod contain;
mod partition;
mod refusals;
mod shell;
mod sshd;
mod trust;
mod worktree;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::*;
use sshd::Hosts;

/// The longest one step may take (a relay round trip is milliseconds; a loaded 2-core machine
/// starting tmux, sshd and swarm is not).
const WAIT: Duration = Duration::from_secs(60);

/// A team whose lead is this test, with hosts to place teammates on.
pub struct RemoteTeam {
    pub env: Env,
    pub tmux: Tmux,
    pub hosts: Hosts,
    /// Every relay frame goes to the links' and relays' logs (off only for benchmarks).
    trace: bool,
}

impl RemoteTeam {
    pub fn new(aliases: &[&str]) -> RemoteTeam {
        RemoteTeam::with_host_env(aliases, &[])
    }

    pub fn with_host_env(aliases: &[&str], host_env: &[(&str, &str)]) -> RemoteTeam {
        RemoteTeam {
            env: Env::new(),
            tmux: Tmux::new(),
            hosts: Hosts::start(aliases, host_env),
            trace: true,
        }
    }

    /// A team whose links and relays do not trace their frames, as a user's would not.
    pub fn untraced(aliases: &[&str]) -> RemoteTeam {
        RemoteTeam {
            env: Env::new(),
            tmux: Tmux::new(),
            hosts: Hosts::start(aliases, &[("SWARM_RELAY_TRACE", "0")]),
            trace: false,
        }
    }

    /// `swarm ARGS` as the lead: team `t`, the private tmux server, the test's ssh config.
    pub fn swarm<I, S>(&self, args: I) -> Swarm
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.env
            .swarm(args)
            .env("SWARM_TMUX_SOCKET", &self.tmux.socket)
            .env("SWARM_SSH_CONFIG", self.hosts.ssh_config())
            .env("XDG_RUNTIME_DIR", self.hosts.runtime_dir())
            // Every relay frame in the link's log, which a failure prints.
            .env("SWARM_RELAY_TRACE", if self.trace { "1" } else { "0" })
    }

    /// Writes swarm file `name` with `doc`.
    pub fn file(&self, name: &str, doc: &Value) -> PathBuf {
        let path = self.env.path(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    }

    /// `swarm launch FILE --backend tmux --no-lead-pane`, which must succeed.
    pub fn launch(&self, file: &Path) -> Out {
        let out = self
            .swarm([
                OsStr::new("launch"),
                file.as_os_str(),
                "--backend".as_ref(),
                "tmux".as_ref(),
                "--no-lead-pane".as_ref(),
            ])
            .run_within(WAIT * 2);
        assert_eq!(out.code, 0, "launch failed: {out:?}\n{}", self.diagnose());
        out
    }

    /// Every entry of `name`'s inbox at home.
    pub fn inbox(&self, name: &str) -> Vec<Value> {
        std::fs::read(self.env.path(&format!("teams/t/inboxes/{name}.json")))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// The texts of the entries from `from` in `name`'s inbox at home.
    pub fn texts_from(&self, name: &str, from: &str) -> Vec<String> {
        self.inbox(name)
            .into_iter()
            .filter(|m| m["from"] == from)
            .filter_map(|m| m["text"].as_str().map(str::to_string))
            .collect()
    }

    pub fn task(&self, id: &str) -> Value {
        read_json(&self.env.path(&format!("tasks/t/{id}.json")))
    }

    pub fn status(&self) -> Value {
        self.swarm(["--json", "status"]).ok().json()
    }

    /// [`eventually`] with [`WAIT`], saying what the team looked like if it times out.
    #[track_caller]
    pub fn eventually<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let start = std::time::Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {what}\n{}", self.diagnose());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The team's state, the links' logs and the hosts' sshd logs, for a failure message.
    pub fn diagnose(&self) -> String {
        let mut out = String::new();
        let status = self.swarm(["status"]).run();
        out.push_str(&format!(
            "--- status ---\n{}{}\n",
            status.stdout, status.stderr
        ));
        if let Ok(entries) = std::fs::read_dir(self.env.path("teams/t/logs")) {
            for e in entries.flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                out.push_str(&format!("--- {} ---\n{text}\n", e.path().display()));
            }
        }
        for h in &self.hosts.hosts {
            out.push_str(&format!("--- sshd {} ---\n{}\n", h.alias, h.log()));
            out.push_str(&h.describe());
        }
        out
    }
}

/// Whether `swarm status --json` says member `name` runs (idle or busy).
pub fn runs(status: &Value, name: &str) -> bool {
    matches!(
        member(status, name)["state"].as_str(),
        Some("idle" | "busy")
    )
}

impl Drop for RemoteTeam {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.diagnose());
        }
        // The links this test's launches started (their command lines name its root).
        let root = self.env.root().display().to_string();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if cmdline.contains("relay") && cmdline.contains(&root) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}
