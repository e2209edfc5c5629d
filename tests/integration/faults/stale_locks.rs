//! Locks and temp files a killed or stopped process leaves behind (issue 10): a stopped lock
//! holder makes `swarm send` give up at the documented deadline naming the holder, temp files of
//! dead writers are swept, and lock holders SIGKILLed at random instants never leave a lock
//! directory that looks like Claude Code's (which the next writer would honour for 10 s): every
//! one left behind is named by the owner record in its gate.

use std::time::{Duration, SystemTime};

use super::{files_named, read_json_array, Rng};
use crate::support::*;

/// A holder that is alive but stopped: the gate wait has a deadline, and the error says who.
#[test]
fn a_stopped_lock_holder_makes_send_give_up_naming_it() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let holder = KillOnDrop(env.hold_lock(&inbox));
    let pid = holder.0.id() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let out = env
        .swarm(["send", "--to", "coder", "hi"])
        .run_within(Duration::from_secs(120));
    assert_eq!(out.code, 1, "{out:?}");
    out.stderr_has("swarm: waiting for lock on");
    out.stderr_has(&format!(
        "gave up waiting for the lock on {}.lock",
        inbox.display()
    ));
    out.stderr_has(&format!(
        "it is held by swarm process {pid} (stopped or stuck?)"
    ));
    // The holder was alive all along (stopped, not dead) and still holds the lock.
    assert!(std::fs::read_dir(format!("{}.lock", inbox.display())).is_ok());
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
}

/// Temp files of writers killed before their rename (old `.NAME.tmp-PID-N` names too) are
/// swept by the next write; the write itself succeeds.
#[test]
fn temp_files_of_dead_writers_are_swept() {
    let env = Env::with_team(&["coder"]);
    let dir = env.path("teams/t/inboxes");
    let old = SystemTime::now() - Duration::from_secs(60);
    for n in 0..50 {
        let f =
            std::fs::File::create(dir.join(format!(".coder.json.tmp-{}-{n}", 4000 + n))).unwrap();
        f.set_modified(old).unwrap();
    }
    env.swarm(["send", "--to", "coder", "hi"]).ok();
    assert_eq!(files_named(&dir, ".tmp-"), Vec::<std::path::PathBuf>::new());
    assert_eq!(read_json_array(&dir.join("coder.json")).len(), 1);
}

const KILLS: usize = 300;

/// `swarm send` SIGKILLed at random instants: after each kill the lock directory is either gone
/// or named (inode and device) by the owner record in the gate, and the next send never waits
/// for it. Entries of killed senders are taken in at most once.
#[test]
fn killed_lock_holders_never_leave_an_unnamed_lock_directory() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::with_team(&["coder"]);
    let lock_dir = env.path("teams/t/inboxes/coder.json.lock");
    let gate = env.path("teams/t/inboxes/.coder.json.gate");
    let mut rng = Rng::new("killed_lock_holders_never_leave_an_unnamed_lock_directory");
    let mut left_behind = 0;
    let mut alive_at_kill = 0;
    for i in 0..KILLS {
        let mut child = env
            .swarm(["send", "--to", "coder", &format!("m{i}")])
            .spawn();
        std::thread::sleep(Duration::from_micros(rng.below(4000)));
        if child.try_wait().unwrap().is_none() {
            alive_at_kill += 1;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        if let Ok(meta) = std::fs::symlink_metadata(&lock_dir) {
            left_behind += 1;
            let record = std::fs::read(&gate).unwrap();
            let record: serde_json::Value = serde_json::from_slice(record.trim_ascii())
                .unwrap_or_else(|e| panic!("kill {i}: the gate names no owner ({e}): {record:?}"));
            assert_eq!(record["dir"]["ino"], meta.ino(), "kill {i}: {record}");
        }
    }
    assert!(alive_at_kill > KILLS / 2, "most kills hit a live send");
    eprintln!("{left_behind} of {KILLS} kills left a lock directory behind");
    let out = env.swarm(["send", "--to", "coder", "last"]).ok();
    assert!(!out.stderr.contains("waiting for lock"), "{}", out.stderr);
    let texts: Vec<String> = read_json_array(&env.path("teams/t/inboxes/coder.json"))
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    let distinct: std::collections::HashSet<&String> = texts.iter().collect();
    assert_eq!(distinct.len(), texts.len(), "a message stored twice");
    assert_eq!(texts.last().map(String::as_str), Some("last"));
}

/// A gate deleted while a live swarm process holds the lock (issue 21 item 5): the next writer
/// finds a lock directory no record names, which used to be taken for Claude Code's and broken
/// once 10 s old, so a second writer got in beside the live holder. It must wait while the holder
/// lives and get in as soon as the holder dies.
#[test]
fn a_deleted_gate_never_lets_a_second_writer_in_beside_a_live_holder() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let mut holder = KillOnDrop(env.hold_lock(&inbox));
    let locked_at = std::time::Instant::now();
    std::fs::remove_file(env.path("teams/t/inboxes/.coder.json.gate")).unwrap();
    let mut send = KillOnDrop(env.swarm(["send", "--to", "coder", "after"]).spawn());
    // Past Claude Code's 10 s staleness (with margin), the holder alive throughout.
    while locked_at.elapsed() < Duration::from_secs(13) {
        assert!(
            send.0.try_wait().unwrap().is_none(),
            "the send got in beside a live holder after {:?}",
            locked_at.elapsed()
        );
        assert!(holder.0.try_wait().unwrap().is_none(), "the holder died");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        read_json_array(&inbox).is_empty(),
        "nothing was written yet"
    );
    holder.0.kill().unwrap();
    holder.0.wait().unwrap();
    let killed_at = std::time::Instant::now();
    let status = eventually(Duration::from_secs(5), "the send to finish", || {
        send.0.try_wait().unwrap()
    });
    assert!(status.success(), "{status:?}");
    assert!(
        killed_at.elapsed() < Duration::from_secs(3),
        "{:?}",
        killed_at.elapsed()
    );
    assert_eq!(read_json_array(&inbox).len(), 1);
}
