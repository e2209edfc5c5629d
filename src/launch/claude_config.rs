//! Which Claude Code config directory a `claude` teammate uses, and what of the user's own it
//! keeps (issue 28 item 9).
//!
//! Claude Code reads a team and its tasks only under its config directory
//! (`CLAUDE_CONFIG_DIR`, else `~/.claude`: `join(configDir, "teams")` in 2.1.328 and 2.1.332;
//! no other variable moves them), so a teammate of a store that is not the user's config
//! directory must be given the store as `CLAUDE_CONFIG_DIR`. Everything else user-level is read
//! from there too: `settings.json`, `CLAUDE.md`, `agents/`, `skills/`, `commands/`, `plugins/`,
//! `output-styles/` and the global `.claude.json` (user MCP servers, trusted folders). One
//! thing has a variable of its own: the login. `CLAUDE_SECURESTORAGE_CONFIG_DIR` names where
//! `.credentials.json` is read and refreshed (and, empty, means `~/.claude` with the
//! keychain entry a Claude Code without `CLAUDE_CONFIG_DIR` uses), so a teammate keeps the
//! user's login wherever the store is. The rest is not linked or copied into the store (a link
//! a teammate could replace is refused by containment, and a copy goes stale): the dry run and
//! the launch say what of the user's directory the teammate does not see, and the default root
//! (the user's config directory) keeps it all.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::store::paths::resolve;

/// The variable that names where Claude Code keeps its login, apart from its config dir.
pub(super) const LOGIN_DIR_ENV: &str = "CLAUDE_SECURESTORAGE_CONFIG_DIR";

/// What of a config directory a teammate reads, as the dry run names it.
const USER_LEVEL: &[&str] = &[
    "settings.json",
    "CLAUDE.md",
    "agents",
    "skills",
    "commands",
    "plugins",
    "output-styles",
];

/// The config directory of one `claude` teammate, as the dry run shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaudeConfig {
    /// Its `CLAUDE_CONFIG_DIR`: where it finds the team, its settings, agents and skills.
    pub(crate) dir: PathBuf,
    /// The user's own: the launcher's `CLAUDE_CONFIG_DIR`, else `~/.claude` (none without a
    /// home).
    pub(crate) user_dir: Option<PathBuf>,
    /// Whether `dir` is the user's own, so it keeps everything.
    pub(crate) own: bool,
    /// Where its login is read (`.credentials.json`, or the keychain entry of that directory).
    pub(crate) login: Option<PathBuf>,
    /// What the user's directory has that the teammate does not see (the store has none of
    /// its own): `settings.json`, `agents/`, ...
    pub(crate) loses: Vec<String>,
    /// The variables that make it so, after the forwarded ones.
    #[serde(skip)]
    pub(crate) env: Vec<(String, String)>,
}

impl ClaudeConfig {
    /// A local teammate of the store at `root`; `launcher` reads the launcher's environment.
    pub(super) fn of(root: &Path, launcher: impl Fn(&str) -> Option<String>) -> ClaudeConfig {
        let given = launcher("CLAUDE_CONFIG_DIR").filter(|d| !d.trim().is_empty());
        let home = launcher("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let user_dir = match &given {
            Some(dir) => Some(crate::backend::absolute(Path::new(dir.trim()))),
            None => home
                .as_ref()
                .map(|h| crate::backend::absolute(&h.join(".claude"))),
        };
        let own = user_dir
            .as_deref()
            .is_some_and(|u| resolve(u) == resolve(root));
        if own {
            return ClaudeConfig {
                dir: root.to_path_buf(),
                login: user_dir.clone(),
                user_dir,
                own,
                loses: vec![],
                env: vec![],
            };
        }
        let mut env = vec![("CLAUDE_CONFIG_DIR".to_string(), root.display().to_string())];
        // The launcher's own choice of login directory wins; else the user's config dir, named
        // as Claude Code names it there (empty: `~/.claude` and its keychain entry).
        let login_env = launcher(LOGIN_DIR_ENV)
            .or_else(|| user_dir.as_ref().map(|_| given.clone().unwrap_or_default()));
        let login = match login_env.as_deref() {
            Some("") => home.as_ref().map(|h| h.join(".claude")),
            Some(dir) => Some(PathBuf::from(dir)),
            None => Some(root.to_path_buf()),
        };
        if let Some(value) = login_env {
            env.push((LOGIN_DIR_ENV.into(), value));
        }
        let mut loses = Vec::new();
        if let Some(user) = &user_dir {
            for name in USER_LEVEL {
                if user.join(name).exists() && !root.join(name).exists() {
                    let dir = user.join(name).is_dir();
                    loses.push(format!("{name}{}", if dir { "/" } else { "" }));
                }
            }
            // The global config: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
            let global = match (&given, &home) {
                (Some(_), _) => Some(user.join(".claude.json")),
                (None, Some(h)) => Some(h.join(".claude.json")),
                (None, None) => None,
            };
            if global.is_some_and(|g| g.is_file()) && !root.join(".claude.json").exists() {
                loses.push(".claude.json (MCP servers, trusted folders)".into());
            }
        }
        ClaudeConfig {
            dir: root.to_path_buf(),
            user_dir,
            own,
            login,
            loses,
            env,
        }
    }

    /// What it keeps and loses, in one line for the dry run and the launch's warning.
    pub(crate) fn describe(&self) -> String {
        let dir = self.dir.display();
        if self.own {
            return format!("{dir} (your own Claude Code config: keeps everything)");
        }
        let login = match &self.login {
            Some(l) if Some(l) != Some(&self.dir) => format!("your login ({})", l.display()),
            _ => "no login of yours".into(),
        };
        let user = self
            .user_dir
            .as_ref()
            .map_or("yours".into(), |u| u.display().to_string());
        let loses = if self.loses.is_empty() {
            "nothing else it has".into()
        } else {
            format!("not your {}", self.loses.join(", "))
        };
        format!("{dir} (the store, not {user}): keeps {login}, {loses}")
    }
}

impl super::Prepared {
    /// The launch's one warning about claude teammates that do not see all of the user's
    /// config (said before any starts; the dry run says it per teammate).
    pub(crate) fn claude_config_warning(&self) -> Option<String> {
        let losing: Vec<(&str, &ClaudeConfig)> = self
            .teammates
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.claude_config.as_ref()?)))
            .filter(|(_, c)| !c.own && !c.loses.is_empty())
            .collect();
        let (_, config) = losing.first()?;
        let names: Vec<&str> = losing.iter().map(|(n, _)| *n).collect();
        let user = config.user_dir.as_ref()?.display().to_string();
        Some(format!(
            "claude teammate{} {} use{} {}; to keep all of {user}, use it as the root (leave out \
             --root and SWARM_ROOT), or copy what {} needs into {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "s" } else { "" },
            config.describe(),
            if names.len() == 1 { "it" } else { "they" },
            config.dir.display(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |key| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_users_own_config_dir_as_the_store_changes_nothing() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join(".claude");
        let home_s = home.path().display().to_string();
        let c = ClaudeConfig::of(&root, env_of(&[("HOME", &home_s)]));
        assert!(c.own);
        assert!(c.env.is_empty());
        assert!(c.loses.is_empty());
    }

    #[test]
    fn another_store_keeps_the_login_of_the_default_dir_and_names_what_is_lost() {
        let home = tempfile::tempdir().unwrap();
        let user = home.path().join(".claude");
        std::fs::create_dir_all(user.join("agents")).unwrap();
        std::fs::write(user.join("CLAUDE.md"), "be kind").unwrap();
        std::fs::write(home.path().join(".claude.json"), "{}").unwrap();
        let root = home.path().join("store");
        std::fs::create_dir_all(&root).unwrap();
        let home_s = home.path().display().to_string();
        let c = ClaudeConfig::of(&root, env_of(&[("HOME", &home_s)]));
        assert!(!c.own);
        assert_eq!(
            c.env,
            vec![
                ("CLAUDE_CONFIG_DIR".into(), root.display().to_string()),
                (LOGIN_DIR_ENV.into(), String::new()),
            ]
        );
        assert_eq!(c.login, Some(user.clone()));
        assert_eq!(
            c.loses,
            [
                "CLAUDE.md",
                "agents/",
                ".claude.json (MCP servers, trusted folders)"
            ]
        );
        let said = c.describe();
        assert!(said.contains("keeps your login"), "{said}");
        assert!(said.contains("not your CLAUDE.md, agents/"), "{said}");
    }

    #[test]
    fn a_launcher_config_dir_is_the_users_and_its_login_is_named_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("mine");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("settings.json"), "{}").unwrap();
        let root = dir.path().join("store");
        std::fs::create_dir_all(&root).unwrap();
        // What the store has of its own is not lost.
        std::fs::write(root.join("settings.json"), "{}").unwrap();
        let user_s = user.display().to_string();
        let c = ClaudeConfig::of(
            &root,
            env_of(&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", &user_s)]),
        );
        assert_eq!(c.env[1], (LOGIN_DIR_ENV.into(), user_s.clone()));
        assert_eq!(c.login, Some(user.clone()));
        assert!(c.loses.is_empty(), "{:?}", c.loses);
        // The same directory given as the store is the user's own.
        let c = ClaudeConfig::of(
            &user,
            env_of(&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", &user_s)]),
        );
        assert!(c.own && c.env.is_empty());
    }

    #[test]
    fn the_launchers_own_login_dir_wins() {
        let c = ClaudeConfig::of(
            Path::new("/store"),
            env_of(&[("HOME", "/h"), (LOGIN_DIR_ENV, "/vault")]),
        );
        assert_eq!(c.env[1], (LOGIN_DIR_ENV.into(), "/vault".into()));
        assert_eq!(c.login, Some(PathBuf::from("/vault")));
    }
}
