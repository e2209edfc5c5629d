//! `swarm-bench store --quick`: the benchmark code itself runs end to end and its tables say
//! what the store guarantees (no loss, exactly-once claims), so the benchmarks cannot rot
//! unnoticed between runs of `scripts/bench`. The numbers of a quick debug run mean nothing and
//! are not looked at.
//!
//! `swarm-bench` measures the `swarm` binary beside it (`target/debug/swarm`), which `cargo
//! test` at the workspace root builds for the product's own integration tests; a test run of
//! this crate alone could find an old one, so [`swarm_is_fresh`] refuses that.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_swarm-bench");

/// `swarm-bench ARGS` with HOME and the XDG directories in `dir` and the caller's session
/// (`SWARM_*`, `TMUX*`, Claude Code's directory) removed, as the product's tests run `swarm`.
fn swarm_bench<I, S>(dir: &Path, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(BIN);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if name.starts_with("SWARM_") || name.starts_with("TMUX") {
            cmd.env_remove(&key);
        }
    }
    for var in ["CLAUDE_CONFIG_DIR", "TERM_PROGRAM", "ITERM_SESSION_ID"] {
        cmd.env_remove(var);
    }
    for (var, sub) in [
        ("HOME", "home"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CONFIG_HOME", "config"),
    ] {
        cmd.env(var, dir.join(sub));
    }
    cmd.args(args).output().expect("run swarm-bench")
}

/// The newest modification time of any file under `dir`.
fn newest(dir: &Path) -> SystemTime {
    let mut latest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let time = match path.is_dir() {
            true => newest(&path),
            false => std::fs::metadata(&path).unwrap().modified().unwrap(),
        };
        latest = latest.max(time);
    }
    latest
}

/// The `swarm` binary beside `swarm-bench` exists and was built after the last change to the
/// product's sources.
fn swarm_is_fresh() {
    let swarm = PathBuf::from(BIN).with_file_name("swarm");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src");
    let built = std::fs::metadata(&swarm)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `cargo test` at the workspace root",
                swarm.display()
            )
        });
    assert!(
        built >= newest(&src),
        "{} is older than the product's sources; run `cargo test` at the workspace root, which \
         rebuilds it",
        swarm.display()
    );
}

fn column(section: &Value, header: &str) -> Vec<String> {
    let headers = section["table"]["headers"].as_array().unwrap();
    let i = headers
        .iter()
        .position(|h| h == header)
        .unwrap_or_else(|| panic!("no column {header:?} in {headers:?}"));
    section["table"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[i].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn store_quick_runs_every_benchmark_and_reports_no_loss() {
    swarm_is_fresh();
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = swarm_bench(
        dir.path(),
        [
            OsStr::new("--json"),
            "store".as_ref(),
            "--quick".as_ref(),
            "--scratch".as_ref(),
            scratch.as_os_str(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let sections: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = sections
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["latency", "contention", "inbox-size", "claims", "cold-send"]
    );
    let by = |name: &str| sections.iter().find(|s| s["name"] == name).unwrap();
    assert_eq!(
        column(by("latency"), "missed")[0],
        "0",
        "swarm missed messages"
    );
    let contention = by("contention");
    let implementations = column(contention, "implementation");
    assert_eq!(
        implementations,
        [
            "Claude Code (re-implemented)",
            "swarm before group commit",
            "swarm",
            "swarm before group commit",
            "swarm"
        ]
    );
    for (i, implementation) in implementations.iter().enumerate() {
        if implementation == "Claude Code (re-implemented)" {
            continue; // it gives up on a busy lock by design
        }
        assert_eq!(
            column(contention, "lost after ack")[i],
            "0",
            "{implementation}"
        );
        assert_eq!(
            column(contention, "failed sends")[i],
            "0",
            "{implementation}"
        );
        assert_eq!(
            column(contention, "torn reads / sampled")[i]
                .split(' ')
                .next(),
            Some("0"),
            "{implementation}"
        );
    }
    assert!(column(by("claims"), "exactly once")
        .iter()
        .all(|c| c == "yes"));
    assert_eq!(column(by("inbox-size"), "implementation").len(), 5);
    // The scratch stores are removed afterwards.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn an_unknown_benchmark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = swarm_bench(dir.path(), ["store", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown benchmark \"nonsense\"; choose from latency, contention"),
        "{stderr}"
    );
}

/// The workers and the runtime seams act on one team given by --root and --team, never on the
/// default store (`~/.claude`).
#[test]
fn a_worker_without_root_and_team_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = swarm_bench(
        dir.path(),
        ["worker", "append", "--impl", "swarm", "--to", "coder"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pass --root DIR and --team TEAM"),
        "{stderr}"
    );
    assert!(!dir.path().join("home/.claude").exists());
}
