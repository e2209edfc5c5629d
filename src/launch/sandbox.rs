//! Contained teammates: every teammate's process tree runs inside bubblewrap (`bwrap`).
//!
//! Every teammate runs as the user's uid, so what protects the lead is only what a teammate's
//! processes cannot touch. On Linux swarm starts each one as `<swarm> sandbox-exec ... -- ARGV`:
//! that hidden step runs outside the sandbox in the teammate's pane or as the launcher's child,
//! makes the bind targets exist, and becomes `bwrap` with the layout [`bwrap_argv`] builds, the
//! one place it is written down. Inside, the whole filesystem is as before (the project, the
//! agent's own config such as `~/.claude`, inboxes, tasks and the roster stay writable; the
//! runtime writes its own roster fields, so `config.json` stays writable), except that swarm's
//! private state (the lead key, ssh control sockets) and the tmux socket directories are empty
//! tmpfs, the team's control records (`permissions/resolved`, `lead/`, `spawn/`, `sessions/`
//! but the member's own directory there) are read-only, the user's Claude Code files that
//! swarm believes outside are not the real ones writable (each global config `.claude.json` is
//! the teammate's own copy, each user-level `settings.json` read-only: `claude_files`), the
//! directories above all of these cannot be moved away to make new ones in their place
//! (`pins`; and a teammate that reaches one of them through a symlink it could replace is
//! refused, not contained in name only), `TMUX` and
//! `TMUX_PANE` are unset, and the teammate has a pid namespace and `/proc` of its own, so it
//! can neither see nor signal anything outside its tree. The network is shared.
//!
//! bubblewrap rather than Landlock: it is what Claude Code uses for its own Linux sandbox,
//! needs only user namespaces, and gives what Landlock does not: Landlock scopes signals only
//! from Linux 6.12 and never refuses connecting to a named unix socket such as tmux's.
//!
//! Signals: swarm stops a teammate by signalling its process group, which the outer `bwrap`
//! leads; `bwrap` itself would die at SIGTERM at once and leave the teammate inside to be
//! SIGKILLed mid-shutdown. So the outer step ignores SIGTERM and SIGINT before it becomes
//! `bwrap` (an ignored disposition survives `exec`), and an inner step (`sandbox-exec --inner`)
//! puts them back to their defaults before it becomes swarm's runtime: the recorded pid stays
//! the one `bwrap` lives under until the teammate has exited, and that pid is what the
//! runtime's liveness record names (`SWARM_SANDBOX_PID`: its own is 2 or so). SIGHUP keeps its
//! default: a closed tmux pane hangs up only its session leader, the outer `bwrap`, whose exit
//! then hangs up the pane's foreground group, the teammate. Another agent (`claude`, a CLI) the
//! inner step starts as its child with all three at their defaults, ignores them itself and
//! waits for it, so that a failing agent's last output reaches its pane
//! (`process::last_words`).
//!
//! A launch that cannot contain (no `bwrap` on PATH, or a kernel without user namespaces:
//! probed once per launch) says so on one line and records it; `--no-sandbox` (or
//! `"sandbox": false` in a swarm file) opts out. The choice is the member's roster field
//! [`FIELD`], which `swarm status` shows. A teammate on another host is contained by that host,
//! as it starts there ([`Sandbox::of_process`], used by `launch::host`), which reports how; macOS
//! is not contained.

mod claude_files;
mod layout;
mod pins;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LaunchOptions;
use crate::backend::tmux::TmuxEnv;
use crate::backend::Launch;
use crate::error::{Error, Result};
use crate::process::successor::Successor;
use crate::remote::Host;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Member;
use claude_files::ClaudeFiles;
use layout::{bwrap_argv, Layout};

/// Swarm-only roster field: whether the member runs contained, and how or why not.
pub(crate) const FIELD: &str = "swarmSandbox";

/// The hidden command a contained teammate starts through.
const STEP: &str = "sandbox-exec";

/// What a member's [`FIELD`] records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Containment {
    pub(crate) contained: bool,
    /// `bwrap` when contained, else why not.
    pub(crate) how: String,
}

impl Containment {
    fn uncontained(why: &str) -> Containment {
        Containment {
            contained: false,
            how: why.to_string(),
        }
    }

    /// A teammate on another host before its host has started it (and said how it is
    /// contained there): not contained yet.
    pub(crate) fn not_started_on(host: &Host) -> Containment {
        Containment::uncontained(&format!("not started on {host} yet"))
    }

    pub(crate) fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("serializable")
    }

    /// What the member's roster entry says; a teammate without the field was not started by
    /// this swarm's launch, so nothing contains it. `None` for the lead.
    pub(crate) fn of(member: &Member) -> Option<Containment> {
        if member.name.is_lead() {
            return None;
        }
        Some(
            member
                .extra
                .get(FIELD)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_else(|| Containment::uncontained("not started by swarm launch")),
        )
    }
}

/// One launch's sandbox: whether `bwrap` works here (probed once, at the first teammate that
/// wants it) and the private directories every teammate gets hidden.
pub(crate) struct Sandbox {
    path_env: String,
    swarm_exe: PathBuf,
    hidden: Vec<PathBuf>,
    /// The launcher's `HOME` and `CLAUDE_CONFIG_DIR`, whose Claude Code files swarm reads
    /// outside (see `claude_files`).
    home: Option<PathBuf>,
    config_dir: Option<PathBuf>,
    usable: OnceCell<std::result::Result<PathBuf, String>>,
}

impl Sandbox {
    /// The sandbox of a launch on this machine, from the launcher's surroundings.
    pub(super) fn new(opts: &LaunchOptions) -> Sandbox {
        let var = |k: &str| opts.env_var(k).map(str::to_string);
        Sandbox::of(&var, opts.swarm_exe.clone(), &opts.tmux_env)
    }

    /// The sandbox of this process's own surroundings: what `swarm relay spawn` contains a
    /// remote teammate with on its host (its private state, its tmux socket directories, its
    /// `bwrap`), exactly as a launch contains a local one.
    pub(crate) fn of_process() -> Result<Sandbox> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let exe = crate::process::swarm_exe()?;
        Ok(Sandbox::of(&var, exe, &TmuxEnv::from_process()))
    }

    /// `var` answers for the environment (an empty value counts as unset), `tmux` for the tmux
    /// surroundings.
    fn of(var: &dyn Fn(&str) -> Option<String>, swarm_exe: PathBuf, tmux: &TmuxEnv) -> Sandbox {
        Sandbox {
            path_env: var("PATH").unwrap_or_default(),
            swarm_exe,
            hidden: private_dirs(var, tmux),
            home: var("HOME").map(PathBuf::from),
            config_dir: var("CLAUDE_CONFIG_DIR").map(PathBuf::from),
            usable: OnceCell::new(),
        }
    }

    /// Puts `launch` in the sandbox when `wanted` and this machine can; says which. Refuses a
    /// teammate whose protected files are reached through a symlink it could replace (the
    /// sandbox step checks again as it starts, against everything it protects).
    pub(crate) fn contain(
        &self,
        launch: &mut Launch,
        root: &Path,
        team: &TeamName,
        name: &AgentName,
        wanted: bool,
    ) -> Result<Containment> {
        if !wanted {
            return Ok(Containment::uncontained("--no-sandbox"));
        }
        let bwrap = match self.usable() {
            Ok(bwrap) => bwrap,
            Err(why) => return Ok(Containment::uncontained(why)),
        };
        let homes: Vec<PathBuf> = self.home.iter().cloned().collect();
        let dirs: Vec<PathBuf> = self
            .config_dir
            .iter()
            .cloned()
            .chain([root.into()])
            .collect();
        let claude = ClaudeFiles::of(&homes, &dirs);
        let protected = claude.configs.iter().chain(&claude.settings);
        let store = [root.to_path_buf()];
        layout::refuse_replaceable_links(name, protected.chain(&self.hidden).chain(&store))?;
        let text = |p: &Path| p.display().to_string();
        let mut argv = vec![text(&self.swarm_exe), STEP.into()];
        argv.extend(["--bwrap".into(), text(bwrap), "--root".into(), text(root)]);
        argv.extend(["--team".into(), team.to_string()]);
        argv.extend(["--name".into(), name.to_string()]);
        for dir in &self.hidden {
            argv.extend(["--hide".into(), text(dir)]);
        }
        argv.extend(claude_files::step_args(
            self.home.as_deref(),
            self.config_dir.as_deref(),
            root,
        ));
        argv.push("--".into());
        argv.append(&mut launch.argv);
        launch.argv = argv;
        Ok(Containment {
            contained: true,
            how: "bwrap".into(),
        })
    }

    /// The `bwrap` to use, or why there is none; the first answer of a launch that is "none"
    /// is said once, on stderr.
    fn usable(&self) -> &std::result::Result<PathBuf, String> {
        self.usable.get_or_init(|| {
            let found = probe(&self.path_env, &self.swarm_exe);
            if let Err(why) = &found {
                let fix = match cfg!(target_os = "linux") {
                    true => "install bubblewrap or pass --no-sandbox to silence this",
                    false => "pass --no-sandbox to silence this",
                };
                eprintln!("swarm: warning: teammates run uncontained: {why}; {fix}");
            }
            found
        })
    }
}

/// `bwrap` on `path`, if it can make a sandbox with a pid namespace and its own `/proc` here
/// and run swarm in it.
fn probe(path: &str, swarm_exe: &Path) -> std::result::Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err("bubblewrap containment is Linux-only".into());
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let bwrap = which::which_in("bwrap", Some(path), cwd).map_err(|_| "bwrap not found")?;
    let out = std::process::Command::new(&bwrap)
        .args([
            "--dev-bind",
            "/",
            "/",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--",
        ])
        .arg(swarm_exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} cannot run: {e}", bwrap.display()))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said.lines().next().unwrap_or("no reason given").trim();
        return Err(format!(
            "{} cannot make a sandbox here (user namespaces disabled?): {said}",
            bwrap.display()
        ));
    }
    Ok(bwrap)
}

/// Where swarm keeps what a teammate must not reach, as the environment `var` names it: its
/// state (the lead keys), its ssh control sockets, and tmux's socket directories.
fn private_dirs(var: &dyn Fn(&str) -> Option<String>, tmux: &TmuxEnv) -> Vec<PathBuf> {
    let uid = rustix::process::getuid().as_raw();
    let var = |k: &str| var(k).map(PathBuf::from).filter(|p| p.is_absolute());
    let mut dirs = Vec::new();
    dirs.extend(var("XDG_STATE_HOME").map(|d| d.join("swarm")));
    dirs.extend(var("HOME").map(|h| h.join(".local/state/swarm")));
    dirs.extend(var("XDG_RUNTIME_DIR").map(|d| d.join("swarm-ssh")));
    dirs.push(PathBuf::from(format!("/tmp/swarm-ssh-{uid}")));
    let base = tmux.tmpdir.as_deref().unwrap_or("/tmp");
    dirs.push(Path::new(base).join(format!("tmux-{uid}")));
    if let Some((socket, _)) = tmux.tmux.as_deref().and_then(|t| t.split_once(',')) {
        dirs.extend(Path::new(socket).parent().map(Path::to_path_buf));
    }
    dirs.extend(
        Path::new(&tmux.expected_socket())
            .parent()
            .map(Path::to_path_buf),
    );
    let mut unique = Vec::new();
    for dir in dirs {
        if !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// The command line of a teammate as section 10 writes it, and the sandbox step before it
/// (`--dry-run` shows the two apart).
pub(crate) fn split(argv: &[String]) -> (Option<&[String]>, &[String]) {
    if argv.get(1).map(String::as_str) != Some(STEP) {
        return (None, argv);
    }
    match argv.iter().position(|w| w == "--") {
        Some(dash) => (Some(&argv[..dash]), &argv[dash + 1..]),
        None => (None, argv),
    }
}

/// `swarm sandbox-exec`: what becomes the contained teammate.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SandboxExecArgs {
    /// Inside the sandbox: put the stop signals back to their defaults and become the command.
    #[arg(long)]
    inner: bool,
    /// The bubblewrap to run.
    #[arg(long)]
    bwrap: Option<PathBuf>,
    /// The store root, team and member the sandbox is for.
    #[arg(long)]
    root: Option<PathBuf>,
    #[arg(long)]
    team: Option<TeamName>,
    #[arg(long)]
    name: Option<AgentName>,
    /// A private directory to hide (repeatable); one that does not exist is skipped.
    #[arg(long)]
    hide: Vec<PathBuf>,
    /// A home whose Claude Code files (`.claude.json`, `.claude/settings.json`) the teammate
    /// must not write (repeatable); the step's own `HOME` is one too.
    #[arg(long)]
    claude_home: Vec<PathBuf>,
    /// A Claude Code config dir whose `.claude.json` and `settings.json` the teammate must not
    /// write (repeatable); the step's own `CLAUDE_CONFIG_DIR` is one too.
    #[arg(long)]
    claude_config_dir: Vec<PathBuf>,
    /// The teammate's command.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

impl SandboxExecArgs {
    /// Whether this step executes another program with its environment (`bwrap`), rather than
    /// becoming the teammate (`--inner`).
    pub(crate) fn execs_onward(&self) -> bool {
        !self.inner
    }
}

/// What the step becomes: `bwrap` around the teammate (or, `--inner`, the teammate: swarm's
/// runtime in this process, another agent as this process's child).
pub(crate) fn successor(args: SandboxExecArgs) -> Result<Successor> {
    if args.command.is_empty() {
        return Err(Error::usage("sandbox-exec: the command is empty"));
    }
    crate::process::last_words::in_pane();
    if args.inner {
        // For swarm's runtime, which runs in this process. Another agent runs as this
        // process's child (`last_words::parent_of`), which ignores them again for itself.
        set_stop_signals(libc::SIG_DFL);
        return Ok(Successor::of(args.command));
    }
    let missing = || Error::usage("sandbox-exec needs --bwrap, --root, --team and --name");
    let bwrap = args.bwrap.as_ref().ok_or_else(missing)?;
    let (root, team, name) = match (&args.root, &args.team, &args.name) {
        (Some(r), Some(t), Some(n)) => (r, t, n),
        _ => return Err(missing()),
    };
    let cwd = std::env::current_dir().map_err(Error::io("read", "the current directory"))?;
    let own = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut homes = args.claude_home.clone();
    homes.extend(own("HOME"));
    let mut config_dirs = args.claude_config_dir.clone();
    config_dirs.extend(own("CLAUDE_CONFIG_DIR"));
    let claude = ClaudeFiles::of(&homes, &config_dirs);
    let store = Store::new(root);
    let layout = Layout::at_start(&store, team, name, &args.hide, &claude, &cwd)?;
    let swarm_exe = std::env::current_exe()
        .map_err(|e| Error::Backend(format!("cannot find the swarm executable: {e}")))?;
    let argv = bwrap_argv(bwrap, &layout, &swarm_exe, &args.command);
    set_stop_signals(libc::SIG_IGN);
    Ok(Successor::of(argv))
}

/// SIGTERM and SIGINT set to `disposition` (ignored, or the default).
fn set_stop_signals(disposition: libc::sighandler_t) {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: setting a disposition to SIG_IGN or SIG_DFL installs no handler code; this
        // process runs no signal handler of its own at this point.
        unsafe { libc::signal(signal, disposition) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_sandbox_from_an_environment_hides_that_environments_state_and_tmux_dirs() {
        // What a host's `swarm relay spawn` sees: its own HOME and TMUX_TMPDIR.
        let var = |k: &str| match k {
            "HOME" => Some("/h".to_string()),
            "PATH" => Some("/bin".to_string()),
            _ => None,
        };
        let tmux = TmuxEnv {
            tmpdir: Some("/h/tmux".into()),
            ..TmuxEnv::default()
        };
        let sandbox = Sandbox::of(&var, "/opt/swarm".into(), &tmux);
        let uid = rustix::process::getuid().as_raw();
        assert_eq!(
            sandbox.hidden,
            [
                PathBuf::from("/h/.local/state/swarm"),
                PathBuf::from(format!("/tmp/swarm-ssh-{uid}")),
                PathBuf::from(format!("/h/tmux/tmux-{uid}")),
            ]
        );
        assert_eq!(sandbox.home, Some(PathBuf::from("/h")));
        assert_eq!(sandbox.path_env, "/bin");
    }

    #[test]
    fn a_contained_argv_splits_back_into_the_step_and_section_10s_argv() {
        let plain = words(&["/opt/swarm", "teammate", "--agent-name", "a"]);
        assert_eq!(split(&plain), (None, &plain[..]));
        let mut wrapped = words(&["/opt/swarm", "sandbox-exec", "--bwrap", "/b", "--"]);
        wrapped.extend(plain.iter().cloned());
        assert_eq!(split(&wrapped), (Some(&wrapped[..4]), &plain[..]));
    }
}
