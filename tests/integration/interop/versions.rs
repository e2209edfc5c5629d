//! The real agent CLIs the suite runs, from the one list `versions.txt`.
//!
//! `versions.txt` pins every npm package the interop tests run (each Claude Code release swarm
//! is proven against, and the codex and gemini CLIs whose flags the fakes copy); `scripts/test`
//! installs each into `$SWARM_TEST_AGENTS/<name>-<version>` (its `target/`). Every scenario runs
//! against each listed Claude Code ([`each_claude`]), so adding a version is adding its line. In
//! CI a missing install fails the scenario; locally the suite looks in this checkout's
//! `target/`. Nothing is skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::support::clean_command;

const LIST: &str = include_str!("versions.txt");

/// One installed agent CLI.
#[derive(Debug, Clone)]
pub struct Installed {
    pub version: &'static str,
    pub bin: PathBuf,
}

/// The Claude Code package on npm.
const CLAUDE_CODE: &str = "@anthropic-ai/claude-code";

/// Every `(package, version, binary name)` in the list, in its order.
fn listed() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    LIST.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(
                w.len(),
                3,
                "versions.txt: {l:?} is not `package version binary`"
            );
            (w[0], w[1], w[2])
        })
}

/// Where `scripts/test` installs the packages.
fn install_root() -> PathBuf {
    match std::env::var_os("SWARM_TEST_AGENTS") {
        Some(dir) => PathBuf::from(dir),
        None if std::env::var_os("CI").is_some() => panic!(
            "SWARM_TEST_AGENTS is not set: run scripts/test, which installs the agent CLIs of \
             tests/integration/interop/versions.txt with npm and sets it"
        ),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
    }
}

/// The installed binary of one listed package, checked to print its version (once per run).
fn install(package: &'static str, version: &'static str, bin: &str) -> Installed {
    let name = package.rsplit('/').next().unwrap_or(package);
    let path = install_root()
        .join(format!("{name}-{version}"))
        .join("node_modules/.bin")
        .join(bin);
    assert!(
        path.exists(),
        "{} is missing: run scripts/test (it installs {package}@{version} with npm)",
        path.display()
    );
    let home = tempfile::tempdir().unwrap();
    let out = clean_command(&path)
        .arg("--version")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("GEMINI_CLI_NO_RELAUNCH", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(version),
        "{} is not {package} {version}: --version printed {said:?}; remove its directory and \
         rerun scripts/test",
        path.display()
    );
    Installed { version, bin: path }
}

/// Every listed version of `package`, installed and checked (each package once per run).
fn installed(package: &str) -> Vec<Installed> {
    let only = std::env::var("SWARM_TEST_CLAUDE_ONLY").ok();
    static CHECKED: Mutex<BTreeMap<String, Vec<Installed>>> = Mutex::new(BTreeMap::new());
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    checked
        .entry(package.to_string())
        .or_insert_with(|| {
            listed()
                .filter(|(p, _, _)| *p == package)
                .filter(|(p, v, _)| *p != CLAUDE_CODE || only.as_deref().is_none_or(|o| o == *v))
                .map(|(package, version, bin)| install(package, version, bin))
                .collect()
        })
        .clone()
}

/// Every listed Claude Code, in the list's order; `SWARM_TEST_CLAUDE_ONLY=VERSION` keeps one
/// listed version (to time or debug one), and fails on a version the list does not have.
pub fn claudes() -> Vec<Installed> {
    let claudes = installed(CLAUDE_CODE);
    assert!(
        !claudes.is_empty(),
        "no Claude Code in versions.txt matches SWARM_TEST_CLAUDE_ONLY={:?}",
        std::env::var("SWARM_TEST_CLAUDE_ONLY").unwrap_or_default()
    );
    claudes
}

/// The one listed version of `package` (codex, gemini).
pub fn only(package: &str) -> Installed {
    let mut found = installed(package);
    assert_eq!(found.len(), 1, "versions.txt lists {package} once");
    found.remove(0)
}

/// Runs `scenario` against every listed Claude Code, each to its end, then fails naming every
/// version it failed against and why, in its last lines: a log cut to its tail (as CI shows
/// one) still says what failed, below the diagnostics each failure printed as it happened.
pub fn each_claude(scenario: impl Fn(&Installed)) {
    let mut failed = Vec::new();
    for claude in claudes() {
        eprintln!("--- against Claude Code {} ---", claude.version);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenario(&claude)));
        if let Err(payload) = run {
            let why = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {why}", claude.version));
        }
    }
    assert!(
        failed.is_empty(),
        "failed against Claude Code {}",
        failed.join("\n")
    );
}

#[test]
fn the_list_names_two_claude_code_releases_and_the_readme_every_one() {
    let versions: Vec<&str> = listed()
        .filter(|(p, _, _)| *p == CLAUDE_CODE)
        .map(|(_, v, _)| v)
        .collect();
    assert!(versions.len() >= 2, "{versions:?}");
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("## Claude Code compatibility")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a compatibility section");
    for v in versions {
        assert!(
            section.contains(&format!("**Claude Code {v}**")),
            "the README's compatibility section does not name {v}"
        );
    }
}
