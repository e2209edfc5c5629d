//! Where the panes of a launch go: in roster order, left to right and top to bottom, the lead
//! console first, and a second launch into the team after the panes already there (issue 13:
//! the first teammate used to get a full-width bottom pane and later ones came in reverse).

use super::{fake_agent, swarm_on};
use crate::support::*;

/// The members of the panes on the server in reading order (top, then left).
fn reading_order(tmux: &Tmux) -> Vec<String> {
    let out = tmux.cmd([
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{@swarm-member} #{pane_top} #{pane_left}",
    ]);
    let mut panes: Vec<(u32, u32, String)> = out
        .stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 4, "{l:?}");
            (
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[1].to_string(),
            )
        })
        .collect();
    panes.sort();
    panes.into_iter().map(|(_, _, member)| member).collect()
}

#[test]
fn panes_are_laid_out_in_roster_order() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = fake_agent(&env, "sleep 300");
    let mut args = vec!["launch".to_string()];
    for name in ["a", "b", "c", "d"] {
        args.extend(["--teammate".to_string(), format!("{name}=go")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    swarm_on(&env, &tmux, &agent, &args).ok();
    assert_eq!(reading_order(&tmux), ["team-lead", "a", "b", "c", "d"]);
    let roster = read_json(&env.path("teams/t/config.json"));
    let names: Vec<&str> = roster["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-lead", "a", "b", "c", "d"]);
    // The lead console keeps the focus.
    let active = tmux.cmd(["list-panes", "-a", "-F", "#{pane_active} #{@swarm-member}"]);
    assert!(
        active.stdout.lines().any(|l| l == "1 team-lead"),
        "{}",
        active.stdout
    );

    // A second launch into the team goes on after the last pane.
    swarm_on(
        &env,
        &tmux,
        &agent,
        &["launch", "--teammate", "e=go", "--teammate", "f=go"],
    )
    .ok();
    assert_eq!(
        reading_order(&tmux),
        ["team-lead", "a", "b", "c", "d", "e", "f"]
    );
}
