//! What one contained teammate's sandbox looks like, worked out as it starts ([`Layout`]), and
//! the `bwrap` command line that makes it ([`bwrap_argv`]), the one place it is written down:
//! the whole file system as it is, then the directories that must not move pinned (`pins`),
//! swarm's private directories hidden, the control records and the user's settings read-only,
//! the teammate's own copies of Claude Code's config over the user's (`claude_files`); later
//! mounts win, so that order is what holds.

use std::path::{Path, PathBuf};

use super::claude_files::{ClaudeFiles, OwnCopy};
use super::{pins, STEP};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::liveness::SANDBOX_PID_ENV;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;

/// What the sandbox hides and makes read-only for one teammate, worked out as it starts.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Layout {
    /// Directories above the paths below, bound over themselves so that none can be moved
    /// away (`pins`).
    pinned: Vec<PathBuf>,
    /// Directories that become an empty tmpfs.
    hidden: Vec<PathBuf>,
    /// Sockets in a directory that cannot be hidden whole (it holds the store or the working
    /// directory): each gets /dev/null over it.
    sockets: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    /// Directories inside a read-only one that stay writable: the member's own session.
    writable: Vec<PathBuf>,
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
    pub(super) fn at_start(
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
        // Every member's conversation and own records (the lead messages it acted on, its
        // liveness record) read-only but this member's own directory: two mounts each whatever
        // the team's size (one per other member made a launch of 200 quadratic).
        let mut writable = Vec::new();
        for (all, own) in [
            (
                store.sessions_dir(team),
                store.sessions_dir(team).join(name.as_str()),
            ),
            (store.members_dir(team), store.member_dir(team, name)),
        ] {
            fsio::ensure_dir(&own)?;
            read_only.push(all);
            writable.push(own);
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
        let overs = own_copies.iter().map(|own| &own.over);
        let kept: Vec<&PathBuf> = hidden
            .iter()
            .chain(&sockets)
            .chain(&read_only)
            .chain(&writable)
            .chain(overs)
            .collect();
        refuse_replaceable_links(name, kept.iter().copied())?;
        Ok(Layout {
            pinned: pins::pins(kept),
            hidden,
            sockets,
            read_only,
            writable,
            own_copies,
            pane: std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty()),
            pid: std::process::id(),
            cwd: cwd.to_path_buf(),
        })
    }
}

/// Refuses to contain `name` when a path it must not replace is reached through a symlink it
/// could replace (`pins::replaceable_link`): never a sandbox that only looks whole.
pub(super) fn refuse_replaceable_links<'a>(
    name: &AgentName,
    paths: impl IntoIterator<Item = &'a PathBuf>,
) -> Result<()> {
    match pins::replaceable_link(paths) {
        Some((link, target)) => Err(Error::Uncontainable {
            name: name.to_string(),
            link,
            target,
        }),
        None => Ok(()),
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
pub(super) fn bwrap_argv(
    bwrap: &Path,
    layout: &Layout,
    swarm_exe: &Path,
    command: &[String],
) -> Vec<String> {
    let text = |p: &Path| p.display().to_string();
    let mut argv = vec![text(bwrap)];
    let mut add = |words: &[&str]| argv.extend(words.iter().map(|w| w.to_string()));
    // Everything as it is (devices too: the pane's terminal), in a pid namespace with a /proc
    // of its own: /proc/<pid>/root of an outside process would lead around every mount below.
    // And gone with whatever started it (the pane's tmux server, the supervising launcher): a
    // pane closed while bwrap was still setting up left it waiting on its child for good, a
    // process nobody would stop.
    add(&[
        "--die-with-parent",
        "--dev-bind",
        "/",
        "/",
        "--unshare-pid",
        "--proc",
        "/proc",
    ]);
    for dir in &layout.pinned {
        add(&["--bind", &text(dir), &text(dir)]);
    }
    for dir in &layout.hidden {
        add(&["--tmpfs", &text(dir)]);
    }
    for socket in &layout.sockets {
        add(&["--ro-bind", "/dev/null", &text(socket)]);
    }
    for path in &layout.read_only {
        add(&["--ro-bind", &text(path), &text(path)]);
    }
    for dir in &layout.writable {
        add(&["--bind", &text(dir), &text(dir)]);
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
        let own = store.session_path(&team, &me);
        assert!(own.parent().unwrap().is_dir(), "the bind target is made");
        assert_eq!(
            layout.read_only,
            [
                store.resolved_dir(&team),
                store.team_dir(&team).join("lead"),
                store.spawn_dir(&team),
                store.sessions_dir(&team),
                store.members_dir(&team),
                home.join(".claude/settings.json"),
            ]
        );
        assert_eq!(
            layout.writable,
            [
                own.parent().unwrap().to_path_buf(),
                store.member_dir(&team, &me)
            ]
        );
        assert!(
            store.member_dir(&team, &me).is_dir(),
            "the bind target is made"
        );
        assert!(
            layout.pinned.contains(&home.join(".claude")),
            "{:?}",
            layout.pinned
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
    fn a_sandbox_makes_as_many_mounts_in_a_team_of_two_hundred_as_in_a_team_of_two() {
        let mounts = |names: &[String]| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let (dir, store, team) = team_with(&names);
            let me: AgentName = "w0".parse().unwrap();
            let layout =
                Layout::at_start(&store, &team, &me, &[], &ClaudeFiles::default(), dir.path())
                    .unwrap();
            bwrap_argv(Path::new("/usr/bin/bwrap"), &layout, Path::new("/s"), &[]).len()
        };
        let team = |n: usize| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>();
        assert_eq!(mounts(&team(200)), mounts(&team(2)));
    }

    #[test]
    fn a_teammate_whose_user_settings_are_a_symlink_is_not_contained_as_it_starts() {
        let (dir, store, team) = team_with(&["a"]);
        let me: AgentName = "a".parse().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(dir.path().join("dotfiles.json"), "{}").unwrap();
        let link = home.join(".claude/settings.json");
        std::os::unix::fs::symlink(dir.path().join("dotfiles.json"), &link).unwrap();
        let claude = ClaudeFiles::of(std::slice::from_ref(&home), &[]);
        let refused = Layout::at_start(&store, &team, &me, &[], &claude, dir.path());
        match refused {
            Err(Error::Uncontainable { link: found, .. }) => assert_eq!(found, link),
            other => panic!("contained through a replaceable link: {other:?}"),
        }
    }

    #[test]
    fn the_bwrap_argv_unshares_pids_and_ends_in_the_inner_step() {
        let layout = Layout {
            pinned: vec!["/s".into()],
            hidden: vec!["/s/swarm".into()],
            sockets: vec!["/t/sock".into()],
            read_only: vec!["/r/lead".into(), "/r/sessions".into()],
            writable: vec!["/r/sessions/a".into()],
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
                "--die-with-parent",
                "--dev-bind",
                "/",
                "/",
                "--unshare-pid",
                "--proc",
                "/proc",
                "--bind",
                "/s",
                "/s",
                "--tmpfs",
                "/s/swarm",
                "--ro-bind",
                "/dev/null",
                "/t/sock",
                "--ro-bind",
                "/r/lead",
                "/r/lead",
                "--ro-bind",
                "/r/sessions",
                "/r/sessions",
                "--bind",
                "/r/sessions/a",
                "/r/sessions/a",
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
}
