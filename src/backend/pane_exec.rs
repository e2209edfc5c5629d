//! The trampoline every pane starts through: `swarm pane-exec SPEC`.
//!
//! A pane backend never hands the teammate's argv, environment or working directory to the
//! terminal program: tmux reads a word ending in `;` as the end of a command and expands `#(...)`
//! in a start directory, and iTerm2's `it2 session run` types a line into a shell. So the backend
//! writes them to a 0600 JSON spec file in the team's `spawn/` directory and starts only
//! `<swarm exe> pane-exec <spec>`, words swarm controls. The hidden `pane-exec` command reads and
//! deletes the spec and becomes the teammate (`process::successor`), so the pane's process (and
//! its pid, `$TMUX_PANE` and the rest of the environment the terminal gave it) becomes the
//! teammate's.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::pane::Launch;
use crate::error::{Error, Result};
use crate::process::spawn_record::{self, SpawnToken};
use crate::process::successor::Successor;
use crate::store::colour::Colour;
use crate::store::fsio;

/// Everything `swarm pane-exec` needs to become the teammate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ExecSpec {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// iTerm2 only: it cannot title a pane or report its process, so the trampoline does both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterm2: Option<Iterm2Pane>,
}

/// The title and colour to set with escape sequences, and where to record the pid.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Iterm2Pane {
    pub title: String,
    pub color: String,
    /// Store root, team and member, so the pid can be recorded in the roster.
    pub root: PathBuf,
    pub team: String,
    pub name: String,
}

impl ExecSpec {
    pub(crate) fn of(launch: &Launch) -> ExecSpec {
        ExecSpec {
            argv: launch.argv.clone(),
            env: launch.env.clone(),
            cwd: launch.cwd.clone(),
            iterm2: None,
        }
    }
}

/// Where spec files go and the swarm executable that reads them.
#[derive(Debug, Clone)]
pub(crate) struct Trampoline {
    pub swarm_exe: PathBuf,
    /// The team's `spawn/` directory, absolute (panes start elsewhere).
    pub spec_dir: PathBuf,
}

impl Trampoline {
    /// Writes `spec` for member `name` (0600); returns its path. Not synced: a spec is read
    /// once, moments later, by a pane that a crash would take down with it, so a launch of many
    /// panes pays no fsync for them.
    pub(crate) fn write(&self, name: &str, spec: &ExecSpec) -> Result<PathBuf> {
        fsio::ensure_dir(&self.spec_dir)?;
        let path = self.spec_dir.join(format!("{name}.json"));
        let bytes = serde_json::to_vec(spec).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        fsio::replace_volatile(&path, &bytes)?;
        Ok(path)
    }

    /// `<swarm exe> pane-exec <spec>`: the only command a pane is started with.
    pub(crate) fn argv(&self, spec: &Path) -> Vec<String> {
        vec![
            self.swarm_exe.to_string_lossy().into_owned(),
            "pane-exec".into(),
            spec.to_string_lossy().into_owned(),
        ]
    }
}

/// `swarm pane-exec SPEC`: reads and deletes the spec, does the iTerm2 chores, and says what
/// the pane's process becomes: the teammate, as the spec gives it.
pub(crate) fn successor(spec_path: &Path) -> Result<Successor> {
    crate::process::last_words::in_pane();
    let spec: ExecSpec = fsio::read_json(spec_path)?.ok_or_else(|| {
        Error::usage(format!(
            "{} does not exist (it is read once and deleted)",
            spec_path.display()
        ))
    })?;
    let _ = std::fs::remove_file(spec_path);
    if let Some(pane) = &spec.iterm2 {
        iterm2_chores(pane, SpawnToken::from_env(&spec.env).as_ref());
    }
    if spec.argv.is_empty() {
        return Err(Error::usage("the spec has an empty argv"));
    }
    Ok(Successor {
        argv: spec.argv,
        env: spec.env,
        cwd: Some(spec.cwd),
    })
}

/// Titles and colours the iTerm2 pane, and records this process (soon the teammate) in swarm's
/// own spawn records and, for display, the roster, since iTerm2 cannot say which process runs in
/// a pane.
fn iterm2_chores(pane: &Iterm2Pane, token: Option<&SpawnToken>) {
    use std::io::{IsTerminal, Write};

    let mut out = std::io::stdout();
    if out.is_terminal() {
        let _ = write!(out, "\x1b]1;{}\x07", pane.title);
        if let Some((r, g, b)) = Colour::named(&pane.color).map(|c| c.rgb) {
            let _ = write!(
                out,
                "\x1b]6;1;bg;red;brightness;{r}\x07\x1b]6;1;bg;green;brightness;{g}\x07\x1b]6;1;bg;blue;brightness;{b}\x07"
            );
        }
        let _ = out.flush();
    }
    if let (Ok(team), Ok(name)) = (
        pane.team.parse::<crate::store::names::TeamName>(),
        pane.name.parse::<crate::store::names::AgentName>(),
    ) {
        let store = crate::store::paths::Store::new(&pane.root);
        let pid = std::process::id();
        if let Some(token) = token {
            if let Err(e) = spawn_record::save(&store, &team, name.as_str(), pid, token) {
                eprintln!("swarm: warning: swarm will not be able to signal {name}: {e}");
            }
        }
        let _ = crate::store::roster::Roster::new(&store, &team).update_member(&name, |m| {
            crate::process::pid::record_pid(m, pid);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_is_private_and_the_argv_holds_only_swarms_words() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let t = Trampoline {
            swarm_exe: "/opt/swarm".into(),
            spec_dir: dir.path().join("spawn"),
        };
        let spec = ExecSpec::of(&Launch {
            argv: vec!["/bin/agent".into(), "a;".into(), "#(id)".into()],
            env: vec![("K".into(), "v;".into())],
            cwd: "/#(id)".into(),
            log: None,
        });
        let path = t.write("coder", &spec).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            t.argv(&path),
            ["/opt/swarm", "pane-exec", path.to_str().unwrap()]
        );
        let back: ExecSpec = fsio::read_json(&path).unwrap().unwrap();
        assert_eq!(back.argv, spec.argv);
        assert_eq!(back.env, spec.env);
        assert!(back.iterm2.is_none());
    }
}
