//! A runtime's liveness lock file deleted under it (issue 21 item 4): the runtime takes it again
//! on its timer, and a second runtime for the same member, started before it has, refuses by the
//! first one's recorded identity (pid and start time), since the deleted file's flock is on an
//! unlinked inode that no newcomer can see. A `$ ` command sent once then runs once.

use std::time::Duration;

use super::{liveness, q, read, start, teammate_cmd};
use crate::support::*;

#[test]
fn a_deleted_liveness_lock_is_taken_again_and_no_second_runtime_starts() {
    let env = Env::with_team(&["a"]);
    let key = env.lead_verify_key();
    let args = ["--agent", "shell", "--lead-verify-key", key.as_str()];
    let mate = start(&env, "a", &args);
    // Up, so past its start (where it records itself), before it is stopped.
    eventually(Duration::from_secs(30), "the runtime to be up", || {
        mate.output().contains("a of team t is up").then_some(())
    });
    // Stopped, so it cannot take the lock again before the second runtime looks.
    assert_eq!(unsafe { libc::kill(mate.pid(), libc::SIGSTOP) }, 0);
    std::fs::remove_file(env.path("teams/t/alive/a.lock")).unwrap();
    let second = teammate_cmd(&env, "a", &args).run_within(Duration::from_secs(20));
    assert_eq!(unsafe { libc::kill(mate.pid(), libc::SIGCONT) }, 0);
    assert_eq!(second.code, 2, "a second runtime started: {second:?}");
    second.stderr_has("a is already running in team t");
    eventually(
        Duration::from_secs(5),
        "the runtime to take its lock again",
        || (liveness(&env, "a") == "alive").then_some(()),
    );
    eventually(Duration::from_secs(5), "the pane to say so", || {
        mate.output().contains("took it again").then_some(())
    });
    assert_eq!(mate.output().matches("took it again").count(), 1);
    // Held again: a second runtime is refused by the lock itself as well.
    let again = teammate_cmd(&env, "a", &args).run_within(Duration::from_secs(20));
    assert_eq!(again.code, 2, "a second runtime started: {again:?}");
    again.stderr_has("a is already running in team t");
    let log = env.path("ran");
    env.swarm(["send", "--to", "a", &format!("$ echo once >> {}", q(&log))])
        .ok();
    eventually(Duration::from_secs(30), "the command to run", || {
        (read(&log) == "once\n").then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(read(&log), "once\n", "{}", mate.output());
}
