//! The user's own Claude Code files that swarm reads outside every sandbox, as a contained
//! teammate sees them: its own copy of each global config, each user-level settings file
//! read-only.
//!
//! swarm outside (the lead running `swarm task create`, the lead console) believes two of the
//! user's files: the trust record in Claude Code's global config (`~/.claude.json`, or
//! `$CLAUDE_CONFIG_DIR/.claude.json`), which lets a project's hooks run (`teammate::trust`), and
//! the user-level `settings.json` (under `~/.claude`, or `$CLAUDE_CONFIG_DIR`), whose hooks run
//! with no trust step (`teammate::hooks`); so does the user's own Claude Code. A teammate's home
//! stays writable (its agent's auth and transcripts live there), so without more a contained
//! teammate could trust any directory or plant a hook that runs in the lead's shell. Inside, the
//! global config is a private copy bound over the real one: Claude Code inside reads the user's
//! answers and keeps writing its state, and nothing it writes reaches the real file. The copy is
//! made afresh from the real file at each start (the user's later changes reach it), unsynced
//! (a crash loses nothing the next start would not make again: four fsyncs a teammate saved in
//! every launch), and kept in
//! swarm's private state, which every sandbox hides, under the team's and member's name, bound
//! by that teammate's sandbox alone. The settings files are bound read-only over themselves.
//!
//! A bind needs its target to exist, and `bwrap` would make a missing one on the real file
//! system, empty (an empty file is neither valid JSON to Claude Code nor to swarm). So a missing
//! file (and its directory) is made first, holding `{}`, the empty document both read as "no
//! settings"; that file is then the user's, and the teammate cannot write it.
//!
//! The files are those of every home and config directory in play: the launcher's `HOME` and
//! `CLAUDE_CONFIG_DIR`, the teammate's own (a swarm file may set them), and the store root,
//! which is the config directory every `claude` teammate is given unless it is `~/.claude`.

use std::path::{Path, PathBuf};

use crate::backend::absolute;
use crate::error::{Error, Result};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::{fsio, private_state};

/// The largest global config copied (Claude Code's grows with its project history).
const CONFIG_LIMIT: u64 = 64 * 1024 * 1024;

/// What a missing file is made to hold: the empty settings document.
const EMPTY: &[u8] = b"{}\n";

/// A global config and the teammate's private copy bound over it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OwnCopy {
    pub(super) copy: PathBuf,
    pub(super) over: PathBuf,
}

/// The user's Claude Code files for a set of homes and config directories.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ClaudeFiles {
    /// Global configs (`.claude.json`): each gets a private copy.
    pub(super) configs: Vec<PathBuf>,
    /// User-level `settings.json`: each is bound read-only.
    pub(super) settings: Vec<PathBuf>,
}

impl ClaudeFiles {
    /// The files of `homes` (`H/.claude.json`, `H/.claude/settings.json`) and of config
    /// directories `dirs` (`D/.claude.json`, `D/settings.json`); relative paths are left out
    /// (nothing outside resolves them the same way), each file once.
    pub(super) fn of(homes: &[PathBuf], dirs: &[PathBuf]) -> ClaudeFiles {
        let mut files = ClaudeFiles::default();
        let absolute = |p: &&PathBuf| p.is_absolute();
        for home in homes.iter().filter(absolute) {
            push_new(&mut files.configs, home.join(".claude.json"));
            push_new(&mut files.settings, home.join(".claude/settings.json"));
        }
        for dir in dirs.iter().filter(absolute) {
            push_new(&mut files.configs, dir.join(".claude.json"));
            push_new(&mut files.settings, dir.join("settings.json"));
        }
        files
    }

    /// Makes each file exist, and each config's private copy for `name` of `team` from the
    /// real file as it is now.
    pub(super) fn at_start(
        &self,
        store: &Store,
        team: &TeamName,
        name: &AgentName,
    ) -> Result<Vec<OwnCopy>> {
        for file in self.configs.iter().chain(&self.settings) {
            make_exist(file)?;
        }
        let copies = private_state::dir()?
            .join("sandbox-configs")
            .join(private_state::team_key(store, team, &[name.as_str()]));
        fsio::ensure_dir(&copies)?;
        let mut bound = Vec::new();
        for (i, config) in self.configs.iter().enumerate() {
            let bytes = fsio::read_foreign(config, CONFIG_LIMIT)
                .map_err(|why| {
                    Error::Backend(format!(
                        "cannot give the teammate its copy of Claude Code's config: {why}; \
                         make it a regular file Claude Code can read, or pass --no-sandbox"
                    ))
                })?
                .unwrap_or_else(|| EMPTY.to_vec());
            let copy = copies.join(format!("{i}.claude.json"));
            fsio::replace_volatile(&copy, &bytes)?;
            bound.push(OwnCopy {
                copy,
                over: config.clone(),
            });
        }
        Ok(bound)
    }
}

/// The sandbox step's arguments naming the launcher's `home` and `config_dir`, and the store
/// `root`, which is the config dir a `claude` teammate is given unless it is the default one,
/// `~/.claude` (`launch::local`).
pub(super) fn step_args(
    home: Option<&Path>,
    config_dir: Option<&Path>,
    root: &Path,
) -> Vec<String> {
    let text = |p: &Path| p.display().to_string();
    let mut args = Vec::new();
    if let Some(home) = home {
        args.extend(["--claude-home".into(), text(home)]);
    }
    let default_root = home.map(|h| absolute(&h.join(".claude")));
    let root_config = (default_root != Some(absolute(root))).then_some(root);
    for dir in config_dir.into_iter().chain(root_config) {
        args.extend(["--claude-config-dir".into(), text(dir)]);
    }
    args
}

fn push_new(list: &mut Vec<PathBuf>, path: PathBuf) {
    if !list.contains(&path) {
        list.push(path);
    }
}

/// Makes `file` exist, holding [`EMPTY`], with its directory (0700) if that is missing too;
/// anything already there (a symlink included: its owner meant it) is left as it is.
fn make_exist(file: &Path) -> Result<()> {
    if std::fs::symlink_metadata(file).is_ok() {
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        fsio::ensure_dir(dir)?;
    }
    fsio::create_if_missing(file, EMPTY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn the_files_are_those_of_each_home_and_config_dir_once() {
        let files = ClaudeFiles::of(
            &["/h".into(), "/h".into(), "relative".into()],
            &["/c".into(), "/h/.claude".into()],
        );
        let paths = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            files.configs,
            paths(&[
                "/h/.claude.json",
                "/c/.claude.json",
                "/h/.claude/.claude.json"
            ])
        );
        assert_eq!(
            files.settings,
            paths(&["/h/.claude/settings.json", "/c/settings.json"])
        );
    }

    #[test]
    fn the_step_names_the_store_root_as_a_config_dir_unless_it_is_the_default() {
        let words = |v: &[&str]| v.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let home = Path::new("/h");
        assert_eq!(
            step_args(Some(home), None, Path::new("/h/.claude")),
            words(&["--claude-home", "/h"])
        );
        assert_eq!(
            step_args(Some(home), Some(Path::new("/c")), Path::new("/r")),
            words(&[
                "--claude-home",
                "/h",
                "--claude-config-dir",
                "/c",
                "--claude-config-dir",
                "/r"
            ])
        );
        assert_eq!(
            step_args(None, None, Path::new("/r")),
            words(&["--claude-config-dir", "/r"])
        );
    }

    #[test]
    fn a_config_is_copied_as_it_is_and_missing_files_are_made_empty() {
        let (dir, store, team) = team_with(&["a"]);
        let me: AgentName = "a".parse().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".claude.json"), r#"{"numStartups": 2}"#).unwrap();
        let config_dir = dir.path().join("config");
        let files = ClaudeFiles::of(
            std::slice::from_ref(&home),
            std::slice::from_ref(&config_dir),
        );
        let copies = files.at_start(&store, &team, &me).unwrap();
        for made in [
            home.join(".claude/settings.json"),
            config_dir.join("settings.json"),
            config_dir.join(".claude.json"),
        ] {
            assert_eq!(std::fs::read(&made).unwrap(), EMPTY, "{}", made.display());
        }
        assert_eq!(copies.len(), 2);
        assert_eq!(copies[0].over, home.join(".claude.json"));
        assert_eq!(
            std::fs::read_to_string(&copies[0].copy).unwrap(),
            r#"{"numStartups": 2}"#
        );
        // The next start copies the real file again, as it is then.
        std::fs::write(home.join(".claude.json"), r#"{"numStartups": 3}"#).unwrap();
        let again = files.at_start(&store, &team, &me).unwrap();
        assert_eq!(again[0].copy, copies[0].copy);
        assert_eq!(
            std::fs::read_to_string(&again[0].copy).unwrap(),
            r#"{"numStartups": 3}"#
        );
    }
}
