//! The inbox group commit under faults (issue 12): a sender that meets a busy lock spools its
//! entry in `teams/<t>/spool/<agent>/` and is acknowledged only once that entry is in the
//! inbox; an entry whose sender was SIGKILLed is taken in by the next holder, exactly once; and
//! Claude Code's own append (re-implemented as `swarm debug cc-append`), interleaved with
//! spooled swarm writes, loses nothing. The interleaving harness runs a second time with swarm's
//! lock switched off and must then see loss.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use super::{files_named, read_json_array};
use crate::support::*;

fn texts(env: &Env) -> Vec<String> {
    read_json_array(&env.path("teams/t/inboxes/coder.json"))
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

/// Entries placed in the spool (not a sender's temp file, which is hidden until renamed).
fn spooled(env: &Env) -> Vec<std::path::PathBuf> {
    files_named(&env.path("teams/t/spool/coder"), ".entry")
        .into_iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect()
}

/// A sender that found the lock held is not acknowledged while its entry waits in the spool,
/// and is as soon as the holder goes and the entry is in the inbox.
#[test]
fn a_spooled_sender_is_acknowledged_only_once_its_entry_is_in_the_inbox() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let holder = KillOnDrop(env.hold_lock(&inbox));
    let mut sender = KillOnDrop(env.swarm(["send", "--to", "coder", "queued"]).spawn());
    eventually(
        Duration::from_secs(60),
        "the sender spooled its entry",
        || spooled(&env).first().cloned(),
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        sender.0.try_wait().unwrap().is_none(),
        "the sender returned while its entry was only spooled"
    );
    assert_eq!(texts(&env), Vec::<String>::new());
    drop(holder); // SIGKILL: the gate frees, its lock directory stays behind
    let status = eventually(Duration::from_secs(60), "the sender finished", || {
        sender.0.try_wait().unwrap()
    });
    assert!(status.success(), "{status}");
    assert_eq!(texts(&env), ["queued"]);
    assert_eq!(spooled(&env), Vec::<std::path::PathBuf>::new());
}

/// A sender SIGKILLed after dropping its entry into the spool but before anyone took it in:
/// the entry outlives it, and the next holder takes it in once (never lost, never twice).
#[test]
fn an_entry_whose_sender_was_killed_is_taken_in_once_by_the_next_holder() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let holder = KillOnDrop(env.hold_lock(&inbox));
    let mut sender = env.swarm(["send", "--to", "coder", "orphan"]).spawn();
    eventually(
        Duration::from_secs(60),
        "the sender spooled its entry",
        || spooled(&env).first().cloned(),
    );
    assert!(sender.try_wait().unwrap().is_none(), "the sender was alive");
    sender.kill().unwrap();
    sender.wait().unwrap();
    assert_eq!(spooled(&env).len(), 1, "the entry outlived its sender");
    drop(holder);
    let out = env.swarm(["send", "--to", "coder", "next"]).ok();
    assert!(
        !out.stderr.contains("waiting for lock"),
        "the dead holder's lock was waited on: {}",
        out.stderr
    );
    assert_eq!(texts(&env), ["orphan", "next"]);
    assert_eq!(spooled(&env), Vec::<std::path::PathBuf>::new());
    // Taken in once: another commit does not add it again.
    env.swarm(["send", "--to", "coder", "last"]).ok();
    assert_eq!(texts(&env), ["orphan", "next", "last"]);
}

fn signal(child: &std::process::Child, sig: i32) {
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// A sender whose entry waits in the spool, stopped so that only another committer can take
/// it in; the lock holder it met is gone. Returns the sender and its entry.
fn stopped_spooled_sender(env: &Env) -> (std::process::Child, std::path::PathBuf) {
    let inbox = env.path("teams/t/inboxes/coder.json");
    let holder = KillOnDrop(env.hold_lock(&inbox));
    let sender = env.swarm(["send", "--to", "coder", "queued"]).spawn();
    let entry = eventually(
        Duration::from_secs(60),
        "the sender spooled its entry",
        || spooled(env).first().cloned(),
    );
    signal(&sender, libc::SIGSTOP);
    drop(holder);
    (sender, entry)
}

/// Issue 21 item 1: a committer that cannot open another sender's entry (EIO injected on that
/// one open) leaves it in the spool, where it stays unacknowledged until a commit can read it;
/// it is never moved aside as "not a message", which its sender would take for delivery.
#[test]
fn an_entry_the_committer_cannot_read_stays_until_a_commit_takes_it_in() {
    let env = Env::with_team(&["coder"]);
    let (sender, entry) = stopped_spooled_sender(&env);
    let mut sender = KillOnDrop(sender);
    let out = env
        .swarm(["send", "--to", "coder", "other"])
        .env("SWARM_SPOOL_FAULT", "open-eio")
        .ok();
    out.stderr_has("Input/output error"); // the fault was injected
    assert_eq!(
        spooled(&env),
        [entry],
        "the unread entry stays in the spool"
    );
    assert_eq!(texts(&env), ["other"]);
    signal(&sender.0, libc::SIGCONT);
    let status = eventually(Duration::from_secs(60), "the sender finished", || {
        sender.0.try_wait().unwrap()
    });
    assert!(status.success(), "{status}");
    assert_eq!(
        texts(&env),
        ["other", "queued"],
        "the acknowledged message is in"
    );
    assert_eq!(spooled(&env), Vec::<std::path::PathBuf>::new());
}

/// Issue 21 item 1: an entry that truly does not parse leaves the spool renamed, and its
/// sender, seeing that name, reports the message rejected and exits 1 instead of "sent".
#[test]
fn an_entry_that_does_not_parse_is_rejected_and_its_sender_fails() {
    let env = Env::with_team(&["coder"]);
    let (sender, entry) = stopped_spooled_sender(&env);
    std::fs::write(&entry, "{\"from\": ").unwrap(); // damaged on disk
    let committer = env.swarm(["send", "--to", "coder", "other"]).run();
    let left = spooled(&env);
    signal(&sender, libc::SIGCONT);
    let out = wait_bounded(sender, Duration::from_secs(60), "the rejected sender");
    assert_eq!(committer.code, 0, "{committer:?}");
    committer.stderr_has("is not a message");
    assert_eq!(left, Vec::<std::path::PathBuf>::new());
    assert_eq!(out.code, 1, "{out:?}");
    out.stderr_has("was rejected");
    assert_eq!(texts(&env), ["other"]);
}

/// (writer, seq) acknowledged by each writer, and failed sends.
fn run_writer(env: &Env, args: &[String]) -> std::process::Child {
    env.swarm(args)
        .cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn writer")
}

#[derive(Debug, Default)]
struct Mixed {
    acked: usize,
    claude_failed: usize,
    lost: Vec<String>,
    duplicated: Vec<String>,
}

/// `swarm_writers` swarm senders (spooling when the lock is busy) and `claude_writers` Claude
/// Code appends, all on one inbox at once.
fn mixed_writers(swarm_writers: usize, claude_writers: usize, per: u64, no_lock: bool) -> Mixed {
    let env = Env::with_team(&["coder"]);
    let mut children = Vec::new();
    for w in 0..swarm_writers {
        let mut args: Vec<String> = ["debug", "append", "--to", "coder", "--writer"]
            .map(String::from)
            .into();
        args.push(format!("s{w}"));
        args.extend(["--count".to_string(), per.to_string()]);
        if no_lock {
            args.push("--no-lock".into());
        }
        children.push((format!("s{w}"), run_writer(&env, &args)));
    }
    for w in 0..claude_writers {
        let args: Vec<String> = vec![
            "debug".into(),
            "cc-append".into(),
            "--to".into(),
            "coder".into(),
            "--writer".into(),
            format!("c{w}"),
            "--count".into(),
            per.to_string(),
        ];
        children.push((format!("c{w}"), run_writer(&env, &args)));
    }
    let mut report = Mixed::default();
    let mut acked = Vec::new();
    for (writer, child) in children {
        let out = child.wait_with_output().unwrap();
        // Unlocked writers may also read a file Claude Code is rewriting in place, and stop.
        assert!(
            no_lock || out.status.success(),
            "writer {writer}: {}",
            out.status
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.starts_with("fail ") {
                report.claude_failed += 1;
            } else {
                acked.push(format!("{writer}:{}", line.trim()));
            }
        }
    }
    let mut copies: HashMap<String, usize> = HashMap::new();
    for t in texts(&env) {
        *copies.entry(t).or_default() += 1;
    }
    report.acked = acked.len();
    report.lost = acked
        .iter()
        .filter(|k| !copies.contains_key(*k))
        .cloned()
        .collect();
    report.duplicated = copies
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(k, _)| k)
        .collect();
    if !no_lock {
        assert_eq!(spooled(&env), Vec::<std::path::PathBuf>::new());
    }
    eprintln!("mixed writers (no_lock={no_lock}): {report:?}");
    report
}

/// Claude Code appends (a bare mkdir lock, the file rewritten in place) interleaved with swarm's
/// spooled writes: every acknowledged message of either is in the inbox once.
#[test]
fn claude_code_appends_interleaved_with_spooled_writes_lose_nothing() {
    let report = mixed_writers(6, 3, 60, false);
    assert!(report.acked >= 6 * 60, "the swarm writers all acknowledged");
    assert_eq!(
        report.lost,
        Vec::<String>::new(),
        "acknowledged messages lost"
    );
    assert_eq!(report.duplicated, Vec::<String>::new());
}

/// Proof that the interleaving harness can see loss: swarm's writers without the lock.
#[test]
fn without_the_lock_the_interleaving_harness_reports_loss() {
    let report = mixed_writers(8, 3, 60, true);
    assert!(
        !report.lost.is_empty(),
        "unlocked writers lost nothing, so the harness cannot see loss: {report:?}"
    );
}

/// Issue 22 item 7: a spool flooded with 1,000 waiting entries (a teammate can write them
/// there) refuses the next sender at once with a clear error, instead of letting it wait and a
/// committer read without bound; the flood is kept byte for byte, and once a holder takes the
/// entries in, sending works again.
#[test]
fn a_sender_past_the_spool_limit_is_refused_at_once() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let dir = env.path("teams/t/spool/coder");
    std::fs::create_dir_all(&dir).unwrap();
    let holder = KillOnDrop(env.hold_lock(&inbox));
    for i in 0..1000 {
        let entry = serde_json::json!({"from": "team-lead", "text": format!("flood {i}"),
            "timestamp": "t", "msg_id": format!("00000000-0000-4000-8000-{i:012}")});
        std::fs::write(
            dir.join(format!("{i:020}-1-abcdef012345.entry")),
            serde_json::to_vec_pretty(&entry).unwrap(),
        )
        .unwrap();
    }
    let before = Snapshot::of(&dir);
    let out = env
        .swarm(["send", "--to", "coder", "one more"])
        .run_within(Duration::from_secs(10));
    assert_eq!(out.code, 1, "{out:?}");
    out.stderr_has("the spool of coder holds 1000 waiting messages (");
    out.stderr_has("past the limit of 1000 or 16777216 bytes, so the message was not delivered");
    Snapshot::of(&dir).assert_unchanged_since(&before, "the spool");
    drop(holder);
    env.swarm(["send", "--to", "coder", "after"]).ok();
    let got = texts(&env);
    assert_eq!(got.len(), 1001, "the flood and the new message");
    assert_eq!(got.last().map(String::as_str), Some("after"));
}
