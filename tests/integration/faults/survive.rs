//! Damaged files never kill a long-running process (issue 22 item 7): a runtime whose inbox is
//! swapped for a symlink or a hard link, whose task file is a symlink, or whose lead's inbox
//! lock a teammate keeps fresh, moves the file aside (every byte kept) or waits, notes it in
//! its log and in `swarm status`, and goes on working.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use super::files_named;
use crate::support::*;

const LONG: Duration = Duration::from_secs(60);

/// A shell-agent `swarm teammate` for `coder`, its pane output in `coder.pane`.
fn shell_teammate(env: &Env) -> KillOnDrop {
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let mut s = env.swarm([
        "teammate",
        "--agent-id",
        "coder@t",
        "--agent-name",
        "coder",
        "--team-name",
        "t",
        "--cwd",
        proj.to_str().unwrap(),
        "--agent",
        "shell",
    ]);
    let file = File::create(env.path("coder.pane")).unwrap();
    s.cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    let mate = KillOnDrop(s.cmd.spawn().expect("spawn swarm teammate"));
    eventually(LONG, "the teammate to start", || {
        pane(env).contains("is up").then_some(())
    });
    mate
}

fn pane(env: &Env) -> String {
    std::fs::read_to_string(env.path("coder.pane")).unwrap_or_default()
}

fn alive(mate: &mut KillOnDrop, env: &Env, after: &str) {
    assert!(
        mate.0.try_wait().unwrap().is_none(),
        "the runtime exited after {after}:\n{}",
        pane(env)
    );
}

/// The task `subject`, run by the shell agent, leaves `proj/<marker>`: proof the runtime works.
fn works(env: &Env, mate: &mut KillOnDrop, marker: &str) {
    env.swarm([
        "task",
        "create",
        marker,
        "--description",
        &format!("touch {marker}"),
    ])
    .ok();
    eventually(LONG, &format!("the teammate to run {marker}"), || {
        if mate.0.try_wait().unwrap().is_some() {
            panic!("the runtime exited:\n{}", pane(env));
        }
        env.path("proj").join(marker).exists().then_some(())
    });
}

fn notes(env: &Env) -> Vec<String> {
    let status = env.swarm(["--json", "status"]).ok().json();
    status["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                .map(|n| n["text"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn wait_note(env: &Env, mate: &mut KillOnDrop, needle: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        if mate.0.try_wait().unwrap().is_some() {
            panic!("the runtime exited:\n{}", pane(env));
        }
        if let Some(note) = notes(env).into_iter().find(|n| n.contains(needle)) {
            return note;
        }
        assert!(
            start.elapsed() < LONG,
            "no status note with {needle:?}; notes {:?}; the runtime's pane:\n{}",
            notes(env),
            pane(env)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn moved_aside(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    files_named(dir, &format!("{name}.corrupt-"))
}

/// A symlink, then a hard link, at the runtime's own inbox; then a symlinked task file. Each
/// is moved aside by name (the place it points at keeps every byte), noted in `swarm status`,
/// and the runtime goes on to run the next task.
#[test]
fn a_runtime_moves_aside_a_linked_inbox_or_task_file_and_goes_on() {
    let env = Env::with_team(&["coder"]);
    let mut mate = shell_teammate(&env);
    works(&env, &mut mate, "first");
    let inboxes = env.path("teams/t/inboxes");
    let inbox = inboxes.join("coder.json");

    // A symlink at the inbox.
    let elsewhere = env.path("elsewhere.json");
    std::fs::write(
        &elsewhere,
        r#"[{"from": "team-lead", "text": "planted", "timestamp": "t"}]"#,
    )
    .unwrap();
    let elsewhere_bytes = std::fs::read(&elsewhere).unwrap();
    std::fs::remove_file(&inbox).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &inbox).unwrap();
    let note = wait_note(&env, &mut mate, "it is a symlink");
    assert!(note.contains("moved it to"), "{note}");
    alive(&mut mate, &env, "a symlinked inbox");
    let moved = moved_aside(&inboxes, "coder.json");
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert!(std::fs::symlink_metadata(&moved[0]).unwrap().is_symlink());
    assert_eq!(std::fs::read(&elsewhere).unwrap(), elsewhere_bytes);
    works(&env, &mut mate, "second");

    // A hard link at the inbox.
    let linked = env.path("linked.json");
    std::fs::write(&linked, "[]").unwrap();
    let _ = std::fs::remove_file(&inbox);
    std::fs::hard_link(&linked, &inbox).unwrap();
    env.swarm(["task", "create", "wake"]).ok(); // any change wakes it
    wait_note(&env, &mut mate, "hard links");
    assert_eq!(moved_aside(&inboxes, "coder.json").len(), 2);
    assert_eq!(std::fs::read(&linked).unwrap(), b"[]");
    works(&env, &mut mate, "third");

    // A symlinked task file, pending, that the runtime would claim. Planted whole (a task made
    // with `task create` and then swapped for a link is claimed first, the runtime being quick).
    let id = "100";
    let mut bait = read_json(&env.path("tasks/t/1.json"));
    bait["id"] = json!(id);
    bait["subject"] = json!("bait");
    bait["status"] = json!("pending");
    bait["owner"] = Value::Null;
    let task = env.path(&format!("tasks/t/{id}.json"));
    let copy = env.path("task-copy.json");
    std::fs::write(&copy, bait.to_string()).unwrap();
    let copy_bytes = std::fs::read(&copy).unwrap();
    std::os::unix::fs::symlink(&copy, &task).unwrap();
    works(&env, &mut mate, "fourth");
    wait_note(&env, &mut mate, &format!("{id}.json"));
    assert_eq!(std::fs::read(&copy).unwrap(), copy_bytes);
    assert_eq!(
        moved_aside(&env.path("tasks/t"), &format!("{id}.json")).len(),
        1
    );
    let text = env.swarm(["status"]).ok().stdout;
    assert!(text.contains("notes (damage met and gone past):"), "{text}");
    alive(&mut mate, &env, "a symlinked task file");
}

/// A Claude-style `team-lead.json.lock` directory a teammate keeps fresh: every report to the
/// lead waits for it and gives up after 30 s, which used to end the runtime (and with it every
/// runtime that reports). The runtime notes it and goes on; once the lock goes, it works again.
#[test]
fn a_runtime_waits_out_a_lead_inbox_lock_kept_fresh() {
    let env = Env::with_team(&["coder"]);
    let mut mate = shell_teammate(&env);
    works(&env, &mut mate, "first");
    let lock = env.path("teams/t/inboxes/team-lead.json.lock");
    // Planted once the first task's report is in (the runtime holds the lock meanwhile).
    eventually(LONG, "the first report to reach the lead", || {
        let inbox = read_json(&env.path("teams/t/inboxes/team-lead.json"));
        let idle = inbox.as_array()?.iter().any(|m| {
            m["text"]
                .as_str()
                .is_some_and(|t| t.contains("idle_notification"))
        });
        (idle && std::fs::create_dir(&lock).is_ok()).then_some(())
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fresh = {
        let (lock, stop) = (lock.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(dir) = File::open(&lock) {
                    let _ = dir.set_modified(std::time::SystemTime::now());
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    // The task runs; its report to the lead meets the lock.
    works(&env, &mut mate, "blocked");
    let note = wait_note(&env, &mut mate, "gave up waiting for the lock on");
    assert!(note.contains("team-lead.json.lock"), "{note}");
    alive(&mut mate, &env, "a lead inbox lock kept fresh");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    fresh.join().unwrap();
    std::fs::remove_dir(&lock).unwrap();
    works(&env, &mut mate, "after");
}

/// A record lock held over `tasks/<team>/.claiming` (the claimers' one-byte hints) used to
/// stop every claim silently: each claimer took every task for another claimer's. A lock that
/// is no claimer's hint is said once, noted in `swarm status`, and claims go on without hints.
#[test]
fn a_record_lock_on_the_claim_hints_does_not_stop_claims() {
    use std::os::fd::AsRawFd;
    let env = Env::with_team(&["coder"]);
    let hints = env.path("tasks/t/.claiming");
    let jam = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&hints)
        .unwrap();
    // SAFETY: an all-zero flock is valid; a write lock over the whole file.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    assert_eq!(
        unsafe { libc::fcntl(jam.as_raw_fd(), libc::F_OFD_SETLK, &lock) },
        0
    );
    let mut mate = shell_teammate(&env);
    works(&env, &mut mate, "claimed");
    let note = wait_note(&env, &mut mate, "holds a record lock no claimer takes");
    assert!(note.contains(".claiming"), "{note}");
    assert!(
        pane(&env).contains("claiming without the hints"),
        "{}",
        pane(&env)
    );
    drop(jam);
    works(&env, &mut mate, "again");
}

/// The lead console whose inbox is swapped for a symlink (or hard-linked) moves it aside, says
/// so once, notes it in `swarm status`, and goes on showing what teammates send; it used to
/// exit with the error.
#[test]
fn the_lead_console_moves_aside_a_linked_inbox_and_goes_on() {
    let env = Env::with_team(&["coder"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let inbox = env.path("teams/t/inboxes/team-lead.json");
    let elsewhere = env.path("elsewhere.json");
    std::fs::write(&elsewhere, "[]").unwrap();
    std::fs::remove_file(&inbox).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &inbox).unwrap();
    lead.expect("it is a symlink");
    lead.expect("and went on");
    let moved = moved_aside(&env.path("teams/t/inboxes"), "team-lead.json");
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"[]");
    env.swarm([
        "send",
        "--from",
        "coder",
        "--to",
        "team-lead",
        "still here?",
    ])
    .ok();
    lead.expect("still here?");
    let status = env.swarm(["--json", "status"]).ok().json();
    assert!(
        status["notes"].to_string().contains("it is a symlink"),
        "{status}"
    );
}
