//! A store someone else prepared (issue 10): directories another user created or can write to,
//! store directories swapped for symlinks after creation, and store files hard-linked to files
//! elsewhere. Each is refused, naming the path and what to do, and nothing outside the root is
//! written. The other user is `nobody`, reached with util-linux `setpriv`; CI runs the tests as
//! root; a run without root says the test was skipped, except in CI, where it fails.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::*;

const NOBODY: &str = "65534";

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Whether this run can act as another user. Outside CI a developer without root is told the
/// test was skipped; in CI (`CI` set, as `.ci/run` is run) a missing root fails the test, so
/// these tests can never pass there without running.
fn can_switch_users(what: &str) -> bool {
    if rustix_euid() == 0 {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} needs root, and CI must run these tests"
    );
    eprintln!("skipped: {what} needs root (CI runs as root)");
    false
}

/// Runs `args` as user `nobody`; `false` when this test cannot switch users.
fn as_nobody(args: &[&str]) -> bool {
    if !can_switch_users("switching to user nobody") {
        return false;
    }
    let status = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--"])
        .args(args)
        .status()
        .expect("setpriv (util-linux) is needed to act as another user");
    assert!(status.success(), "setpriv {args:?}: {status}");
    true
}

fn rustix_euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The reproduction: `nobody` makes `teams/t/inboxes` (0755) while the root is open to all;
/// the victim's `team create` and `team add` must refuse, naming the directory, so nobody can
/// never plant the inbox a teammate would run.
#[test]
fn a_team_directory_another_user_created_is_refused_naming_it() {
    let env = Env::new();
    chmod(env.root(), 0o1777);
    let inboxes = env.path("teams/t/inboxes");
    if !as_nobody(&["mkdir", "-m", "755", "-p", inboxes.to_str().unwrap()]) {
        return;
    }
    // While the root is open to everyone, it is refused itself (it is shared: never closed).
    env.swarm(["team", "create", "t"])
        .refused(&format!(
            "refusing to use {}: other users can write to it (mode 1777)",
            env.root().display()
        ))
        .stderr_has(&format!("run `chmod 700 {}`", env.root().display()));
    // Closed again, the directories nobody made inside it are still nobody's.
    chmod(env.root(), 0o700);
    let teams = env.path("teams");
    let not_ours = format!(
        "refusing to use {}: it belongs to uid {NOBODY}, not to you (uid 0)",
        teams.display()
    );
    env.swarm(["team", "create", "t"]).refused(&not_ours);
    env.swarm(["team", "add", "coder"]).refused(&not_ours);
    assert!(!env.path("teams/t/inboxes/coder.json").exists());
    assert!(!env.path("teams/t/config.json").exists());
}

/// A team made by the victim in which another user owns one file (planted before the team was
/// closed, or chowned): the file is refused, not read.
#[test]
fn a_store_file_another_user_owns_is_refused() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    std::fs::write(
        &inbox,
        r#"[{"from":"team-lead","text":"$ id > pwned","timestamp":"t"}]"#,
    )
    .unwrap();
    if !can_switch_users("giving a file to another user") {
        return;
    }
    let c = std::ffi::CString::new(inbox.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    env.swarm(["inbox", "coder"]).refused(&format!(
        "refusing to use {}: it belongs to uid {NOBODY}",
        inbox.display()
    ));
    env.swarm(["send", "--to", "coder", "hi"])
        .refused("belongs to uid 65534");
}

/// `teams/`, `tasks/` or `teams/<t>` replaced by a symlink after creation: every write through
/// it is refused and the place it points at is untouched.
#[test]
fn store_directories_swapped_for_symlinks_do_not_redirect_writes() {
    for dir in ["teams", "tasks", "teams/t", "tasks/t"] {
        let env = Env::with_team(&["coder"]);
        env.swarm(["task", "create", "one"]).ok();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("moved");
        std::fs::rename(env.path(dir), &target).unwrap();
        std::os::unix::fs::symlink(&target, env.path(dir)).unwrap();
        let before = Snapshot::of(elsewhere.path());
        let commands: &[&[&str]] = &[
            &["send", "--to", "coder", "hi"],
            &["task", "create", "two"],
            &["task", "update", "1", "--status", "completed"],
        ];
        for args in commands {
            let touches = if dir.starts_with("teams") {
                args[0] == "send"
            } else {
                args[0] == "task"
            };
            if !touches {
                continue;
            }
            env.swarm(*args)
                .context(format!("{dir} is a symlink"))
                .refused(&format!(
                    "refusing to use {}: it is a symlink",
                    env.path(dir).display()
                ));
        }
        Snapshot::of(elsewhere.path())
            .assert_unchanged_since(&before, &format!("the place {dir} points at"));
    }
}

/// A store file that is a hard link to a file elsewhere: writing it would change that file
/// (appends to the archive do, in place), so it is refused.
#[test]
fn hard_linked_store_files_are_refused() {
    let rows: [(&str, &[&str]); 3] = [
        // The inbox holds 101 delivered messages, so this send appends to the archive.
        (
            "teams/t/inboxes/coder.archive.jsonl",
            &["send", "--to", "coder", "hi"],
        ),
        (
            "teams/t/inboxes/coder.json",
            &["send", "--to", "coder", "hi"],
        ),
        (
            "tasks/t/1.json",
            &["task", "update", "1", "--status", "completed"],
        ),
    ];
    for (file, args) in rows {
        let env = Env::with_team(&["coder"]);
        env.swarm(["task", "create", "one"]).ok();
        let delivered: Vec<Value> = (0..101)
            .map(|i| serde_json::json!({"from": "a", "text": format!("m{i}"), "timestamp": "t", "read": true}))
            .collect();
        std::fs::write(
            env.path("teams/t/inboxes/coder.json"),
            serde_json::to_vec(&delivered).unwrap(),
        )
        .unwrap();
        let path = env.path(file);
        if !path.exists() {
            std::fs::write(&path, "").unwrap();
        }
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("precious");
        std::fs::hard_link(&path, &victim).unwrap();
        let bytes = std::fs::read(&victim).unwrap();
        env.swarm(args).context(file).refused(&format!(
            "refusing to use {}: it has 2 hard links",
            path.display()
        ));
        assert_eq!(std::fs::read(&victim).unwrap(), bytes, "{file}");
    }
}

/// The sidecar beside an inbox (`spool/<agent>.last-write`) is only a hint, so a failure to
/// write it is not an error; but a sidecar hard-linked to a file elsewhere used to be truncated
/// before it was checked, emptying that file. It is checked first and left alone.
#[test]
fn a_hard_linked_sidecar_is_not_truncated() {
    let env = Env::with_team(&["coder"]);
    env.swarm(["send", "--to", "coder", "first"]).ok();
    let sidecar = env.path("teams/t/spool/coder.last-write");
    assert!(sidecar.is_file(), "the first send noted its write");
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("precious");
    std::fs::write(&victim, "keep me").unwrap();
    std::fs::remove_file(&sidecar).unwrap();
    std::fs::hard_link(&victim, &sidecar).unwrap();
    env.swarm(["send", "--to", "coder", "second"]).ok();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let texts: Vec<Value> = read_json(&env.path("teams/t/inboxes/coder.json"))
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].clone())
        .collect();
    assert_eq!(texts, ["first", "second"]);
}
