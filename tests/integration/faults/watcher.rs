//! The watcher under an event storm: a follower whose kernel event queue overflowed must keep
//! its watch, and with file events switched off the slow re-scan alone must still deliver.

use std::time::{Duration, Instant};

use crate::support::*;

/// `swarm inbox coder --follow --unread --json`.
fn unread_of_coder(env: &Env) -> Swarm {
    env.swarm(["--json", "inbox", "coder", "--follow", "--unread"])
}

/// Waits until `pid` has used no CPU for a second: it has drained whatever it was processing.
fn wait_until_idle(pid: u32) {
    let until = Instant::now() + Duration::from_secs(60);
    let mut last = cpu_ticks(pid);
    let mut still = 0;
    while still < 5 {
        assert!(Instant::now() < until, "process {pid} never went idle");
        std::thread::sleep(Duration::from_millis(200));
        let now = cpu_ticks(pid);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

/// The kernel's inotify queue holds `max_queued_events` (16,384 by default). The follower is
/// stopped (SIGSTOP) while 20,000 files are created in its directory, two events each (create,
/// modify: its watch asks for no opens or closes), so the queue overflows for certain and ends
/// with IN_Q_OVERFLOW, which wakes every wait of the process; a message is sent in the middle
/// of the burst. Every wake re-reads the inbox, so that message
/// arrives; the question is whether the watch survives the overflow. So once the follower has
/// drained its queue (idle again), one more message is sent with the rescan timer at ten
/// minutes: only a working watch delivers it within the bound.
#[test]
fn a_20000_file_burst_overflowing_the_event_queue_loses_no_message() {
    let env = Env::with_team(&["coder"]);
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    let files = 20_000usize.max(queue / 2 + 1000);
    // Other tests running beside this one may hold the user's inotify instances for a while
    // (a team of sixteen holds eighteen): a follower that found none polls for good, so start
    // one again until it has one, for a bounded time, then say what was missing.
    let started = std::time::Instant::now();
    let (follower, rx) = loop {
        let (follower, rx) = follower(unread_of_coder(&env).env("SWARM_RESCAN_MS", "600000"));
        let before = format!("before {}", started.elapsed().as_millis());
        env.swarm(["send", "--to", "coder", &before]).ok();
        expect_text(&rx, &before, Duration::from_secs(30));
        if holds_inotify(follower.0.id()) || started.elapsed() > Duration::from_secs(60) {
            break (follower, rx);
        }
        drop(follower);
        std::thread::sleep(Duration::from_secs(1));
    };
    needs_inotify(follower.0.id(), "the follower");

    let pid = follower.0.id() as libc::pid_t;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let dir = env.path("teams/t/inboxes");
    for i in 0..files {
        std::fs::write(dir.join(format!("burst-{i}")), b"x").unwrap();
        if i == files / 2 {
            env.swarm(["send", "--to", "coder", "during"]).ok();
        }
    }
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    expect_text(&rx, "during", Duration::from_secs(60));
    wait_until_idle(follower.0.id());
    env.swarm(["send", "--to", "coder", "after"]).ok();
    expect_text(&rx, "after", Duration::from_secs(60));
}

/// With file events switched off the slow re-scan alone delivers (the follower would otherwise
/// wait forever); the bound is generous next to the 300 ms interval.
#[test]
fn with_file_events_off_the_rescan_timer_still_delivers() {
    let env = Env::with_team(&["coder"]);
    let (_follower, rx) = follower(
        unread_of_coder(&env)
            .env("SWARM_NO_FS_EVENTS", "1")
            .env("SWARM_RESCAN_MS", "300"),
    );
    for text in ["one", "two", "three"] {
        env.swarm(["send", "--to", "coder", text]).ok();
        expect_text(&rx, text, Duration::from_secs(15));
    }
}
