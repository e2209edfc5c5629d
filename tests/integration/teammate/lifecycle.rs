//! A teammate's life around the lead console and the roster (issue 9's lifecycle bugs): the
//! console survives members removed under it, a name re-added after shutdown and removal stays
//! alive, a clean shutdown is reported once as approved, a runtime leaves a team or roster entry
//! that is gone, `team delete --force` stops the team first, and `swarm kill` on a stopped
//! member says it was not running.

use std::time::Duration;

use super::{inbox, lead_inbox, start, Mate, LONG};
use crate::support::*;

/// Makes the console finish a whole pass (inbox, then the dead-runtime check) and waits for it:
/// the pass that prints the first marker has reaped whoever it was going to reap by the time the
/// second marker is printed.
fn settle(env: &Env, lead: &mut Live, from: &str, tag: &str) {
    for n in 1..=2 {
        let text = format!("marker {tag} {n}");
        env.swarm(["send", "--to", "team-lead", "--from", from, &text])
            .ok();
        lead.expect(&text);
    }
}

#[track_caller]
fn assert_still_running(lead: &mut Live, what: &str) {
    assert!(
        lead.child.try_wait().unwrap().is_none(),
        "the lead console exited {what}; it printed:\n{}",
        lead.seen.join("\n")
    );
}

fn shut_down(env: &Env, mate: &mut Mate) {
    let out = env.swarm(["shutdown", &mate.name, "--timeout", "20"]).ok();
    assert!(
        out.stdout.contains("approved the shutdown"),
        "{}",
        out.stdout
    );
    assert_eq!(mate.exit(LONG).code(), Some(0));
}

#[test]
fn the_lead_console_survives_a_member_shut_down_and_removed() {
    let env = Env::with_team(&["x", "y"]);
    let mut x = start(&env, "x", &["--agent", "shell"]);
    shut_down(&env, &mut x);
    env.swarm(["team", "remove", "x"]).ok();
    // The console starts after the removal: x's approval is still unread in its inbox.
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    settle(&env, &mut lead, "y", "after removal");
    assert_still_running(&mut lead, "after x was removed");
}

#[test]
fn a_name_added_again_after_shutdown_and_removal_stays_alive() {
    let env = Env::with_team(&["x", "y"]);
    let mut x = start(&env, "x", &["--agent", "shell"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    shut_down(&env, &mut x);
    lead.expect("x approved shutdown");
    env.swarm(["team", "remove", "x"]).ok();
    env.swarm(["team", "add", "x"]).ok();
    // Before its runtime starts, the new x is not dead: the old runtime's lock went with it.
    settle(&env, &mut lead, "y", "re-added");
    let mut again = start(&env, "x", &["--agent", "shell"]);
    settle(&env, &mut lead, "y", "running");
    assert!(
        !lead
            .seen
            .iter()
            .any(|l| l.contains("stopped without saying goodbye")),
        "the new x was reported dead:\n{}",
        lead.seen.join("\n")
    );
    assert_still_running(&mut lead, "after x was added again");
    assert!(
        again.child.try_wait().unwrap().is_none(),
        "{}",
        again.output()
    );
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "x")["isActive"], true);
    // It is really serving the new x: a message to it is taken and handed to a turn.
    env.swarm(["send", "--to", "x", "echo hello from the new x"])
        .ok();
    eventually(LONG, "the new x to take its message", || {
        inbox(&env, "x")
            .iter()
            .all(|m| m["read"] == true)
            .then_some(())
    });
    shut_down(&env, &mut again);
}

#[test]
fn a_clean_shutdown_of_everyone_is_reported_once_as_approved() {
    let names = ["a", "b", "c", "d"];
    let env = Env::with_team(&names);
    let mut mates: Vec<Mate> = names
        .iter()
        .map(|n| start(&env, n, &["--agent", "shell"]))
        .collect();
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let out = env.swarm(["shutdown", "--all", "--timeout", "20"]).ok();
    for mate in &mut mates {
        assert_eq!(mate.exit(LONG).code(), Some(0));
    }
    for n in names {
        assert!(
            out.stdout.contains(&format!("{n}: approved")),
            "{}",
            out.stdout
        );
        lead.expect(&format!("{n} approved shutdown"));
    }
    // A marker from the lead itself would be ignored; one from a retired member is still text.
    settle(&env, &mut lead, "a", "after shutdown");
    let said_dead: Vec<&String> = lead
        .seen
        .iter()
        .filter(|l| l.contains("stopped without saying goodbye"))
        .collect();
    assert!(said_dead.is_empty(), "{said_dead:?}");
    let died: Vec<String> = lead_inbox(&env)
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .filter(|t| t.contains("its process died"))
        .collect();
    assert!(died.is_empty(), "{died:?}");
}

#[test]
fn a_runtime_leaves_when_its_roster_entry_or_its_team_goes() {
    let env = Env::with_team(&["x", "y"]);
    let mut x = start(&env, "x", &["--agent", "shell"]);
    let mut y = start(&env, "y", &["--agent", "shell"]);
    env.swarm(["team", "remove", "x"]).ok();
    assert_eq!(x.exit(LONG).code(), Some(0));
    assert!(
        x.output().contains("x was removed from team t; stopping"),
        "{}",
        x.output()
    );
    assert!(y.child.try_wait().unwrap().is_none(), "y is untouched");

    // The team is deleted behind swarm's back and made again with the same names: the old y
    // must not serve the new team.
    std::fs::remove_dir_all(env.path("teams/t")).unwrap();
    std::fs::remove_dir_all(env.path("tasks/t")).unwrap();
    env.swarm(["team", "create", "t"]).ok();
    env.add_member("t", "y");
    assert_eq!(y.exit(LONG).code(), Some(0));
    assert!(y.output().contains("team t was deleted"), "{}", y.output());
    env.swarm(["send", "--to", "y", "echo for the new team"])
        .ok();
    assert!(inbox(&env, "y").iter().all(|m| m["read"] == false));
}

#[test]
fn a_forced_team_delete_stops_the_teammates_first() {
    let env = Env::with_team(&["x", "y"]);
    let mut mates = [
        start(&env, "x", &["--agent", "shell"]),
        start(&env, "y", &["--agent", "shell"]),
    ];
    // Without --force it is refused (the panes' own output files aside, nothing changes).
    let out = env.swarm(["team", "delete"]).run();
    assert_eq!(out.code, 2);
    out.stderr_has("still has active teammates");
    let out = env.swarm(["team", "delete", "--force"]).ok();
    assert!(
        out.stdout.contains("stopped x (approved)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("stopped y (approved)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("deleted team t"), "{}", out.stdout);
    for mate in &mut mates {
        assert_eq!(mate.exit(Duration::from_secs(5)).code(), Some(0));
        assert!(
            mate.output().contains("shutdown requested by team-lead"),
            "{}",
            mate.output()
        );
    }
    assert!(!env.path("teams/t").exists());
}

#[test]
fn kill_says_when_a_member_was_not_running() {
    let env = Env::with_team(&["x", "y"]);
    let mut x = start(&env, "x", &["--agent", "shell"]);
    shut_down(&env, &mut x);
    let out = env.swarm(["kill", "x"]).ok();
    assert_eq!(out.stdout, "x was not running; marked inactive\n");
    // y never ran at all.
    let out = env.swarm(["--json", "kill", "y"]).ok().json();
    assert_eq!(out["wasRunning"], false);
}
