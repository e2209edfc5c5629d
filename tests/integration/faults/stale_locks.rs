//! Locks and temp files a killed or stopped process leaves behind (issue 10): a stopped lock
//! holder makes `swarm send` give up at the documented deadline naming the holder, temp files of
//! dead writers are swept, and lock holders SIGKILLed at random instants never leave an
//! ownerless lock directory (which the next writer would honour for 10 s as Claude Code's).

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
/// or has an owner file (never empty), and the next send never waits for it.
#[test]
fn killed_lock_holders_never_leave_an_ownerless_lock_directory() {
    let env = Env::with_team(&["coder"]);
    let lock_dir = env.path("teams/t/inboxes/coder.json.lock");
    let mut rng = Rng::new("killed_lock_holders_never_leave_an_ownerless_lock_directory");
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
        if let Ok(entries) = std::fs::read_dir(&lock_dir) {
            let names: Vec<String> = entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .collect();
            assert!(names.iter().any(|n| n == "owner"), "kill {i}: {names:?}");
        }
    }
    assert!(alive_at_kill > KILLS / 2, "most kills hit a live send");
    let out = env.swarm(["send", "--to", "coder", "last"]).ok();
    assert!(!out.stderr.contains("waiting for lock"), "{}", out.stderr);
}
