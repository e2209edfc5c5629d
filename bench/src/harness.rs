//! What every benchmark needs: the `swarm` binary to run and this one to re-run as workers, a
//! scratch directory that is gone afterwards, the sizes (`--quick` or full), jitter, and a fresh
//! store per case.
//!
//! Each case gets its own store under the scratch directory so no benchmark sees another's files,
//! and every process is started through [`Bench::swarm`] or [`Bench::worker`], which strip the
//! caller's session variables: a bench run inside a team must not send into that team.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use swarm::{fsio, AgentName, Error, Member, Result, Roster, Store, TeamName};

use crate::cli::StoreArgs;
use crate::rng::Jitter;

/// The binaries to run, a scratch directory, the sizes.
pub(crate) struct Bench {
    /// The `swarm` binary measured.
    swarm: PathBuf,
    /// This executable, re-run for `swarm-bench worker ...`.
    me: PathBuf,
    scratch: Scratch,
    quick: bool,
    rng: Jitter,
}

/// The throwaway directory; removed on drop, even when a benchmark fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Bench {
    pub(crate) fn new(args: &StoreArgs, swarm: PathBuf) -> Result<Bench> {
        let me =
            std::env::current_exe().map_err(Error::io("find", "the swarm-bench executable"))?;
        let base = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("swarm-bench-{}", std::process::id()));
        fsio::ensure_dir(&dir)?;
        // Lead keys for the throwaway teams go with the scratch directory, not into the user's
        // state dir (every worker inherits this).
        std::env::set_var("XDG_STATE_HOME", dir.join("state"));
        Ok(Bench {
            swarm,
            me,
            scratch: Scratch(dir),
            quick: args.quick,
            rng: Jitter::seeded(),
        })
    }

    /// The `swarm` executable measured.
    pub(crate) fn exe(&self) -> &Path {
        &self.swarm
    }

    /// `full` normally, `quick` with `--quick`.
    pub(crate) fn size(&self, full: u64, quick: u64) -> u64 {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// A uniform pseudo-random number in `lo..hi` (only jitter and phases).
    pub(crate) fn random(&self, lo: u64, hi: u64) -> u64 {
        self.rng.between(lo, hi)
    }

    /// A fresh store under the scratch directory with team `bench` and the given teammates.
    pub(crate) fn team(&self, name: &str, members: &[&str]) -> Result<(Store, TeamName)> {
        let root = self.scratch.0.join(name);
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(Error::io("clear", &root))?;
        }
        let store = Store::new(root);
        let team: TeamName = "bench".parse()?;
        let roster = Roster::new(&store, &team);
        roster.create("benchmark", "/", "")?;
        for m in members {
            let agent: AgentName = m.parse()?;
            roster.add_member(Member::teammate(&team, &agent, "blue", "/"))?;
        }
        Ok((store, team))
    }

    /// `swarm --root R --team bench`, for what a user or an agent would run.
    pub(crate) fn swarm(&self, store: &Store) -> Command {
        self.command(&self.swarm, store)
    }

    /// `swarm-bench --root R --team bench`, for `worker ...`.
    pub(crate) fn worker(&self, store: &Store) -> Command {
        self.command(&self.me, store)
    }

    /// `exe --root R --team bench` with the caller's session variables removed. Its stderr is
    /// captured (a contended writer says "waiting for lock" now and then) and shown only if the
    /// worker fails.
    fn command(&self, exe: &Path, store: &Store) -> Command {
        let mut cmd = Command::new(exe);
        for var in [
            "SWARM_ROOT",
            "SWARM_TEAM",
            "SWARM_AGENT_NAME",
            "CLAUDE_CONFIG_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd.arg("--root")
            .arg(store.root())
            .args(["--team", "bench"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }
}

/// The 1-minute load average now, as text: long runs print it at their start and end, because
/// other work on a shared machine moves the numbers and this shows when it did.
pub(crate) fn load_1m() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
