//! A teammate's life around the lead console and the roster (issue 9's lifecycle bugs): the
//! console survives members removed under it, a name re-added after shutdown and removal stays
//! alive, a clean shutdown is reported once as approved, a runtime leaves a team or roster entry
//! that is gone, `team delete --force` stops the team first, and `swarm kill` on a stopped
//! member says it was not running. And (issue 15 item 1) an idle claude teammate, which Claude
//! Code marks `isActive: false`, is alive to `swarm status`, `swarm shutdown --all` and the lead
//! console, which reaps it when it dies.

use std::os::unix::process::CommandExt;
use std::process::Command;
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

/// With the lead's key (as every launched teammate has), a runtime leaves its entry's loss
/// only for the lead's signed removal (issue 22): an edit of the roster that drops it is put
/// back, and `team remove` then `team add` (a new membership under the same name) still ends
/// the old runtime.
#[test]
fn a_runtime_with_the_lead_key_leaves_only_the_leads_removal() {
    let env = Env::with_team(&["x", "y"]);
    let key = env.lead_verify_key();
    let mut x = start(&env, "x", &["--agent", "shell", "--lead-verify-key", &key]);
    let path = env.path("teams/t/config.json");
    let on_roster = || {
        read_json(&path)["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "x")
    };
    let mut config = read_json(&path);
    config["members"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["name"] != "x");
    let edited = env.path("config.json.edited");
    std::fs::write(&edited, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    std::fs::rename(&edited, &path).unwrap();
    // The entry is back first, then the pane says so.
    eventually(LONG, "x to put its entry back and say so", || {
        (on_roster()
            && x.output()
                .contains("without the lead's signed removal record"))
        .then_some(())
    });
    assert!(x.child.try_wait().unwrap().is_none(), "{}", x.output());
    env.swarm(["team", "remove", "x"]).ok();
    env.swarm(["team", "add", "x"]).ok();
    assert_eq!(x.exit(LONG).code(), Some(0), "{}", x.output());
    assert!(
        x.output().contains("x was removed from team t"),
        "{}",
        x.output()
    );
    assert!(on_roster(), "the new x stays on the roster");
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

/// A stand-in for a native claude teammate between turns: a process swarm recorded (pid and
/// start time, leading its own group, its spawn token and swarm's own record of it, as a launch
/// records it), no liveness lock (claude holds
/// none), and `isActive: false`, which Claude Code writes whenever a teammate goes idle.
fn idle_claude_teammate(env: &Env, name: &str) -> KillOnDrop {
    let child = Command::new("sleep")
        .arg("300")
        .env("SWARM_SPAWN_TOKEN", "stand-in-token")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    env.swarm([
        "debug",
        "record-spawn",
        "--name",
        name,
        "--pid",
        &pid.to_string(),
        "--token",
        "stand-in-token",
    ])
    .ok();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let path = env.path("teams/t/config.json");
    let mut config = read_json(&path);
    let m = config["members"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["name"] == name)
        .unwrap();
    m["isActive"] = false.into();
    m["swarmPid"] = pid.into();
    m["swarmPidStart"] = start.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    KillOnDrop(child)
}

#[test]
fn an_idle_claude_teammate_is_alive_to_status_and_to_shutdown_all() {
    let env = Env::with_team(&["idle"]);
    let mut mate = idle_claude_teammate(&env, "idle");
    let out = env.swarm(["status"]).ok().stdout;
    let line = out
        .lines()
        .find(|l| l.contains("idle "))
        .unwrap_or_default();
    // Running (its recorded process), and idle: it owns no task, whatever `isActive` says.
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(columns.get(4), Some(&"idle"), "{out}");
    let status = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(member(&status, "idle")["state"], "idle", "{status}");

    // It does not answer (it is no runtime), so it is stopped after the wait, not skipped.
    let out = env
        .swarm(["shutdown", "--all", "--timeout", "1"])
        .ok()
        .stdout;
    assert_eq!(
        out, "idle: no answer within 1 s; stopped, marked inactive\n",
        "{out}"
    );
    let status = eventually(LONG, "the stand-in to be stopped", || {
        mate.0.try_wait().unwrap()
    });
    assert!(!status.success(), "it was signalled: {status:?}");
    let config = read_json(&env.path("teams/t/config.json"));
    assert!(
        member(&config, "idle")["swarmRetiredAt"].is_u64(),
        "{config}"
    );
    // Now it is retired, and --all finds nobody.
    let out = env.swarm(["shutdown", "--all"]).ok().stdout;
    assert_eq!(out, "team t has no active teammates\n");
}

#[test]
fn the_lead_console_waits_for_an_idle_claude_teammate_and_reaps_it_when_it_dies() {
    let env = Env::with_team(&["idle"]);
    let mut mate = idle_claude_teammate(&env, "idle");
    let mut lead = env.swarm(["lead", "--exit-when-done"]).live();
    lead.expect("lead console for team t");
    // Two whole passes with the idle teammate on the roster, and the console is still there.
    settle(&env, &mut lead, "idle", "while idle");
    assert_still_running(&mut lead, "with an idle teammate");
    assert!(
        !lead
            .seen
            .iter()
            .any(|l| l.contains("every teammate has stopped")),
        "{:?}",
        lead.seen
    );
    // Its process dies: the dead check sees it although the roster calls it idle.
    mate.0.kill().unwrap();
    mate.0.wait().unwrap();
    lead.expect("idle stopped without saying goodbye");
    lead.expect("every teammate has stopped");
    assert_eq!(lead.wait(LONG), Some(0), "{:?}", lead.seen);
}

/// Issue 15 item 2: the lead console and a teammate runtime keep going while the roster is
/// rewritten in place by a writer that does not even take the lock (so swarm's locked re-read
/// cannot help and only its retries and its tolerance of a roster that does not parse remain).
#[test]
fn the_lead_console_and_a_runtime_survive_a_roster_torn_under_them() {
    let env = Env::with_team(&["x"]);
    let mut x = start(&env, "x", &["--agent", "shell"]);
    let mut lead = env.swarm(["lead"]).live();
    lead.expect("lead console for team t");
    let writer = crate::claude_teams::torn_roster::InPlaceWriter::start(&env, "t", false);
    // Each pass of the console reads the roster (its dead check); every rewrite wakes x's
    // runtime, which reads the roster to see whether it still belongs to the team.
    for round in 0..15 {
        settle(&env, &mut lead, "x", &format!("torn {round}"));
    }
    drop(writer);
    settle(&env, &mut lead, "x", "after");
    assert_still_running(&mut lead, "while the roster was rewritten in place");
    assert!(x.child.try_wait().unwrap().is_none(), "{}", x.output());
    // x still serves its team.
    env.swarm(["send", "--to", "x", "echo still here"]).ok();
    eventually(LONG, "x to take its message", || {
        inbox(&env, "x")
            .iter()
            .all(|m| m["read"] == true)
            .then_some(())
    });
    shut_down(&env, &mut x);
}
