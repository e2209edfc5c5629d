//! Contained teammates: every local teammate's process tree runs inside bubblewrap (`bwrap`).
//!
//! Every teammate runs as the user's uid, so what protects the lead is only what a teammate's
//! processes cannot touch. On Linux swarm starts each one as `<swarm> sandbox-exec ... -- ARGV`:
//! that hidden step runs outside the sandbox in the teammate's pane or as the launcher's child,
//! makes the bind targets exist, and becomes `bwrap` with the layout [`bwrap_argv`] builds, the
//! one place it is written down. Inside, the whole filesystem is as before (the project, the
//! agent's own config such as `~/.claude`, inboxes, tasks and the roster stay writable; the
//! runtime writes its own roster fields, so `config.json` stays writable), except that swarm's
//! private state (the lead key, ssh control sockets) and the tmux socket directories are empty
//! tmpfs, the team's control records (`permissions/resolved`, `lead/`, `spawn/`, the other
//! members' session files) are read-only, the user's Claude Code files that swarm believes
//! outside are not the real ones writable (each global config `.claude.json` is the teammate's
//! own copy, each user-level `settings.json` read-only: `claude_files`), `TMUX` and
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
//! puts them back to their defaults before it becomes the teammate: the recorded pid stays the
//! one `bwrap` lives under until the teammate has exited, and that pid is what the runtime's
//! liveness record names (`SWARM_SANDBOX_PID`: its own is 2 or so). SIGHUP keeps its default:
//! a closed tmux pane hangs up only its session leader, the outer `bwrap`, whose exit then
//! hangs up the pane's foreground group, the teammate.
//!
//! A launch that cannot contain (no `bwrap` on PATH, or a kernel without user namespaces:
//! probed once per launch) says so on one line and records it; `--no-sandbox` (or
//! `"sandbox": false` in a swarm file) opts out. The choice is the member's roster field
//! [`FIELD`], which `swarm status` shows. Remote teammates and macOS are not contained.

mod claude_files;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LaunchOptions;
use crate::backend::Launch;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::liveness::SANDBOX_PID_ENV;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};
use claude_files::{ClaudeFiles, OwnCopy};

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

    /// A teammate on another host: its host starts it, uncontained.
    pub(crate) fn remote() -> Containment {
        Containment::uncontained("remote host")
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
pub(super) struct Sandbox {
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
    pub(super) fn new(opts: &LaunchOptions) -> Sandbox {
        Sandbox {
            path_env: opts.env_var("PATH").unwrap_or_default().to_string(),
            swarm_exe: opts.swarm_exe.clone(),
            hidden: private_dirs(opts),
            home: opts.env_var("HOME").map(PathBuf::from),
            config_dir: opts.env_var("CLAUDE_CONFIG_DIR").map(PathBuf::from),
            usable: OnceCell::new(),
        }
    }

    /// Puts `launch` in the sandbox when `wanted` and this machine can; says which.
    pub(super) fn contain(
        &self,
        launch: &mut Launch,
        root: &Path,
        team: &TeamName,
        name: &AgentName,
        wanted: bool,
    ) -> Containment {
        if !wanted {
            return Containment::uncontained("--no-sandbox");
        }
        let bwrap = match self.usable() {
            Ok(bwrap) => bwrap,
            Err(why) => return Containment::uncontained(why),
        };
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
        Containment {
            contained: true,
            how: "bwrap".into(),
        }
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

/// Where swarm keeps what a teammate must not reach, as the launcher's environment names it:
/// its state (the lead keys), its ssh control sockets, and tmux's socket directories.
fn private_dirs(opts: &LaunchOptions) -> Vec<PathBuf> {
    let uid = rustix::process::getuid().as_raw();
    let var = |k: &str| {
        opts.env_var(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let mut dirs = Vec::new();
    dirs.extend(var("XDG_STATE_HOME").map(|d| d.join("swarm")));
    dirs.extend(var("HOME").map(|h| h.join(".local/state/swarm")));
    dirs.extend(var("XDG_RUNTIME_DIR").map(|d| d.join("swarm-ssh")));
    dirs.push(PathBuf::from(format!("/tmp/swarm-ssh-{uid}")));
    let tmux = &opts.tmux_env;
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
pub struct SandboxExecArgs {
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

/// Becomes `bwrap` around the teammate (or, `--inner`, the teammate). Returns only on failure.
pub(crate) fn exec(args: SandboxExecArgs) -> Result<i32> {
    if args.inner {
        set_stop_signals(libc::SIG_DFL);
        return become_program(&args.command);
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
    become_program(&argv)
}

/// SIGTERM and SIGINT set to `disposition` (ignored, or the default).
fn set_stop_signals(disposition: libc::sighandler_t) {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: setting a disposition to SIG_IGN or SIG_DFL installs no handler code; this
        // process runs no signal handler of its own at this point.
        unsafe { libc::signal(signal, disposition) };
    }
}

fn become_program(argv: &[String]) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::usage("sandbox-exec: the command is empty"))?;
    let err = std::process::Command::new(program).args(args).exec();
    Err(Error::Command {
        program: program.clone(),
        detail: err.to_string(),
    })
}

/// What the sandbox hides and makes read-only for one teammate, worked out as it starts.
#[derive(Debug, Default, PartialEq)]
struct Layout {
    /// Directories that become an empty tmpfs.
    hidden: Vec<PathBuf>,
    /// Sockets in a directory that cannot be hidden whole (it holds the store or the working
    /// directory): each gets /dev/null over it.
    sockets: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    /// The user's Claude Code global configs, each with the private copy bound over it.
    own_copies: Vec<OwnCopy>,
    /// `$TMUX_PANE`, passed on as `SWARM_TMUX_PANE` for the runtime's `shutdown_approved`.
    pane: Option<String>,
    /// This process's pid, soon the outer `bwrap`'s: the runtime's pid on the machine, which
    /// its liveness record names (`SANDBOX_PID_ENV`).
    pid: u32,
    cwd: PathBuf,
}

impl Layout {
    /// Makes each read-only path exist (a bind needs a target: an empty session file is one
    /// its member's runtime replaces), makes the private copies of `claude`'s configs, and
    /// hides what exists of `hide`.
    fn at_start(
        store: &Store,
        team: &TeamName,
        name: &AgentName,
        hide: &[PathBuf],
        claude: &ClaudeFiles,
        cwd: &Path,
    ) -> Result<Layout> {
        let mut read_only = Vec::new();
        let lead_dir = store.team_dir(team).join("lead");
        for dir in [store.resolved_dir(team), lead_dir, store.spawn_dir(team)] {
            fsio::ensure_dir(&dir)?;
            read_only.push(dir);
        }
        let roster = Roster::new(store, team).load()?;
        for other in roster
            .teammates()
            .filter(|m| !m.name.same_as(name.as_str()))
        {
            let session = store.session_path(team, &other.name);
            if let Some(dir) = session.parent() {
                fsio::ensure_dir(dir)?;
            }
            if let Err(e) = fsio::create_new(&session) {
                if std::fs::symlink_metadata(&session).is_err() {
                    return Err(e);
                }
            }
            read_only.push(session);
        }
        let own_copies = claude.at_start(store, team, name)?;
        read_only.extend(claude.settings.iter().cloned());
        let needed: Vec<PathBuf> = [store.root(), cwd]
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        let (mut hidden, mut sockets) = (Vec::new(), Vec::new());
        for dir in hide.iter().filter_map(|d| std::fs::canonicalize(d).ok()) {
            if !dir.is_dir() || hidden.contains(&dir) {
                continue;
            }
            if needed.iter().any(|n| n.starts_with(&dir)) {
                sockets.extend(sockets_in(&dir));
            } else {
                hidden.push(dir);
            }
        }
        Ok(Layout {
            hidden,
            sockets,
            read_only,
            own_copies,
            pane: std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty()),
            pid: std::process::id(),
            cwd: cwd.to_path_buf(),
        })
    }
}

fn sockets_in(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .map(|e| e.path())
        .collect()
}

/// The one place the sandbox is written down: `bwrap` around `command`, through the inner step.
fn bwrap_argv(bwrap: &Path, layout: &Layout, swarm_exe: &Path, command: &[String]) -> Vec<String> {
    let text = |p: &Path| p.display().to_string();
    let mut argv = vec![text(bwrap)];
    let mut add = |words: &[&str]| argv.extend(words.iter().map(|w| w.to_string()));
    // Everything as it is (devices too: the pane's terminal), in a pid namespace with a /proc
    // of its own: /proc/<pid>/root of an outside process would lead around every mount below.
    add(&["--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc"]);
    for dir in &layout.hidden {
        add(&["--tmpfs", &text(dir)]);
    }
    for socket in &layout.sockets {
        add(&["--ro-bind", "/dev/null", &text(socket)]);
    }
    for path in &layout.read_only {
        add(&["--ro-bind", &text(path), &text(path)]);
    }
    // After the tmpfs over swarm's private state: a bind's source is found outside the
    // sandbox, so the copy kept there is still what is bound.
    for own in &layout.own_copies {
        add(&["--bind", &text(&own.copy), &text(&own.over)]);
    }
    add(&["--unsetenv", "TMUX", "--unsetenv", "TMUX_PANE"]);
    if let Some(pane) = &layout.pane {
        add(&["--setenv", "SWARM_TMUX_PANE", pane]);
    }
    add(&["--setenv", SANDBOX_PID_ENV, &layout.pid.to_string()]);
    add(&["--chdir", &text(&layout.cwd), "--"]);
    add(&[&text(swarm_exe), STEP, "--inner", "--"]);
    argv.extend(command.iter().cloned());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_layout_hides_private_dirs_and_binds_control_records_read_only() {
        let (dir, store, team) = team_with(&["a", "b"]);
        let me: AgentName = "a".parse().unwrap();
        let keys = dir.path().join("state/swarm");
        std::fs::create_dir_all(&keys).unwrap();
        let hide = [keys.clone(), dir.path().join("no-such-dir")];
        let home = dir.path().join("home");
        let claude = ClaudeFiles::of(std::slice::from_ref(&home), &[]);
        let layout = Layout::at_start(&store, &team, &me, &hide, &claude, dir.path()).unwrap();
        assert_eq!(layout.hidden, [std::fs::canonicalize(&keys).unwrap()]);
        let b_session = store.session_path(&team, &"b".parse().unwrap());
        assert!(b_session.is_file(), "the bind target is made");
        assert_eq!(
            layout.read_only,
            [
                store.resolved_dir(&team),
                store.team_dir(&team).join("lead"),
                store.spawn_dir(&team),
                b_session,
                home.join(".claude/settings.json"),
            ]
        );
        let own = &layout.own_copies[0];
        assert_eq!(own.over, home.join(".claude.json"));
        assert!(
            own.copy.is_file() && own.over.is_file(),
            "the copy and its target are made"
        );
        // A directory holding the store is not hidden whole: only its sockets are.
        let holding = Layout::at_start(
            &store,
            &team,
            &me,
            &[dir.path().into()],
            &ClaudeFiles::default(),
            dir.path(),
        );
        assert!(holding.unwrap().hidden.is_empty());
    }

    #[test]
    fn the_bwrap_argv_unshares_pids_and_ends_in_the_inner_step() {
        let layout = Layout {
            hidden: vec!["/s/swarm".into()],
            sockets: vec!["/t/sock".into()],
            read_only: vec!["/r/lead".into()],
            own_copies: vec![OwnCopy {
                copy: "/s/swarm/c/0.claude.json".into(),
                over: "/h/.claude.json".into(),
            }],
            pane: Some("%3".into()),
            pid: 42,
            cwd: "/work".into(),
        };
        let argv = bwrap_argv(
            Path::new("/usr/bin/bwrap"),
            &layout,
            Path::new("/opt/swarm"),
            &words(&["/bin/agent", "--x"]),
        );
        assert_eq!(
            argv,
            words(&[
                "/usr/bin/bwrap",
                "--dev-bind",
                "/",
                "/",
                "--unshare-pid",
                "--proc",
                "/proc",
                "--tmpfs",
                "/s/swarm",
                "--ro-bind",
                "/dev/null",
                "/t/sock",
                "--ro-bind",
                "/r/lead",
                "/r/lead",
                "--bind",
                "/s/swarm/c/0.claude.json",
                "/h/.claude.json",
                "--unsetenv",
                "TMUX",
                "--unsetenv",
                "TMUX_PANE",
                "--setenv",
                "SWARM_TMUX_PANE",
                "%3",
                "--setenv",
                "SWARM_SANDBOX_PID",
                "42",
                "--chdir",
                "/work",
                "--",
                "/opt/swarm",
                "sandbox-exec",
                "--inner",
                "--",
                "/bin/agent",
                "--x",
            ])
        );
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
