//! Issue 22, beyond its list: the roster stays writable inside a teammate's sandbox (each
//! runtime writes its own fields in `config.json`), so a contained teammate edits its peers'
//! entries. Dropping a peer must not make the peer's runtime leave (only the lead's signed
//! removal, `swarm team remove`, does), and repointing a peer's `tmuxPaneId`, or clearing its
//! backend fields, must not hide the peer from `swarm kill` (swarm stops the process it
//! recorded starting for it).

use super::*;

/// A team of three shell teammates with `evil` running `attack`; its report and the panes
/// (title, pid) as they were before it.
fn roster_attack(env: &Env, tmux: &Tmux, attack: &Attack) -> (String, Vec<(String, i32)>) {
    let proj = env.path("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let doc = json!({"team": TEAM, "agent": "shell", "cwd": proj,
        "teammates": [{"name": "evil"}, {"name": "ann"}, {"name": "bob"}]});
    launch(env, tmux, &doc);
    let before = panes(tmux);
    let fill = fill(env, &proj);
    owned_task(env, "evil", attack.name, &attack.script(&fill), &[]);
    (report(&proj, attack.name), before)
}

fn pane_pid(panes: &[(String, i32)], title: &str) -> i32 {
    panes
        .iter()
        .find(|(t, _)| t == title)
        .unwrap_or_else(|| panic!("no pane {title}: {panes:?}"))
        .1
}

/// The peer's runtime stays, puts its entry back, says so in `swarm status` and goes on
/// working; the lead's own `swarm team remove` still ends it.
#[test]
fn a_teammate_cannot_remove_a_peer_by_editing_the_roster() {
    let env = Env::new();
    let tmux = Tmux::new();
    let (said, before) = roster_attack(&env, &tmux, &DROP_PEER);
    says(&said, "roster: bob dropped");
    let bob = pane_pid(&before, "bob");
    eventually(LONG, "bob to note the edit in swarm status", || {
        let status = env.swarm(["--json", "status"]).ok().json();
        status["notes"]
            .to_string()
            .contains("without the lead's signed removal record")
            .then_some(())
    });
    let config = read_json(&env.path(&format!("teams/{TEAM}/config.json")));
    member(&config, "bob");
    assert!(!gone(bob), "bob's runtime exited once evil dropped it");
    // It still serves the team.
    let after = owned_task(
        &env,
        "bob",
        "after",
        "echo after >> \"$SWARM_ROOT/bob-after\"",
        &[],
    );
    eventually(LONG, "bob to finish a task after the edit", || {
        (task(&env, &after)["status"] == "completed").then_some(())
    });
    assert_eq!(read(&env.path("bob-after")), "after\n");
    // The lead's removal is what ends a member.
    env.swarm(["team", "remove", "bob"]).ok();
    eventually(
        LONG,
        "bob's runtime to leave once the lead removed it",
        || gone(bob).then_some(()),
    );
    assert!(!gone(pane_pid(&before, "ann")), "ann is untouched");
    env.swarm(["down"]).ok();
}

/// A forged `tmuxPaneId` makes `swarm kill` look at another pane (the lead's, which it rightly
/// leaves alone); the process swarm started for the peer is stopped all the same, and the kill
/// says so.
#[test]
fn a_forged_pane_id_does_not_hide_a_peer_from_swarm_kill() {
    let env = Env::new();
    let tmux = Tmux::new();
    let (said, before) = roster_attack(&env, &tmux, &REPOINT_PANE);
    says(&said, "roster: ann repointed");
    let ann = pane_pid(&before, "ann");
    let lead = pane_pid(&before, "team-lead");
    let config = read_json(&env.path(&format!("teams/{TEAM}/config.json")));
    assert_eq!(member(&config, "ann")["tmuxPaneId"], "%0", "{config}");
    // Nor does the lead console, looking at the pane the roster names, take ann for dead (it
    // retired her, and now would stop her): the runtime and its recorded process say she runs.
    std::thread::sleep(Duration::from_secs(3));
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_ne!(member(&status, "ann")["state"], "stopped", "{status}");
    assert!(
        !texts(&env, "team-lead")
            .iter()
            .any(|t| t.starts_with("ann is no longer active")),
        "{:?}",
        texts(&env, "team-lead")
    );
    assert!(!gone(ann), "ann stopped before the kill");
    let out = env.swarm(["kill", "ann"]).run();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !gone(ann) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped = gone(ann);
    assert!(!gone(lead), "swarm kill ann closed the lead's pane");
    let bob = pane_pid(&before, "bob");
    assert!(!gone(bob), "swarm kill ann stopped bob");
    env.swarm(["down"]).run();
    assert!(stopped, "swarm kill left ann running: {out:?}");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("killed ann; marked inactive"),
        "{out:?}"
    );
}

/// With `backendType` and `tmuxPaneId` cleared, the roster names nothing that runs the peer;
/// `swarm kill` still stops the process swarm started for it.
#[test]
fn a_peer_whose_backend_fields_were_cleared_is_still_stopped_by_swarm_kill() {
    let env = Env::new();
    let tmux = Tmux::new();
    let (said, before) = roster_attack(&env, &tmux, &CLEAR_BACKEND);
    says(&said, "roster: ann cleared");
    let ann = pane_pid(&before, "ann");
    let config = read_json(&env.path(&format!("teams/{TEAM}/config.json")));
    assert_eq!(member(&config, "ann")["tmuxPaneId"], "", "{config}");
    assert!(!gone(ann), "ann stopped before the kill");
    let out = env.swarm(["kill", "ann"]).run();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !gone(ann) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped = gone(ann);
    assert!(
        !gone(pane_pid(&before, "bob")),
        "swarm kill ann stopped bob"
    );
    env.swarm(["down"]).run();
    assert!(stopped, "swarm kill left ann running: {out:?}");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("killed ann; marked inactive"),
        "{out:?}"
    );
}
