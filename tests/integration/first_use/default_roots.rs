//! Item 4: the demo keeps its team under `$XDG_DATA_HOME/swarm`, every other command looks under
//! `~/.claude`. Right after the demo, a command that finds no team where it looks but finds the
//! demo's says so, with the `--root` to pass, and the demo's closing lines carry it.

use super::*;

#[test]
fn after_the_demo_a_command_that_finds_no_team_names_the_demos_root() {
    let env = Env::new();
    let tmux = Tmux::new();
    std::fs::create_dir_all(env.path("home")).unwrap();
    let out = fresh(&env, &tmux, ["demo", "--backend", "in-process"]).ok();
    let data = std::fs::canonicalize(env.path("home/.local/share/swarm")).unwrap();
    let pass = format!("--root {}", data.display());
    assert!(
        out.stdout
            .contains(&format!("swarm status {pass} --team demo")),
        "the demo's closing lines name its root: {}",
        out.stdout
    );
    // No team at all under ~/.claude: the current team cannot be found.
    let status = fresh(&env, &tmux, ["status"]).refused("there are no teams under");
    assert!(status.stderr.contains(&pass), "{}", status.stderr);
    // The demo's team named, but looked for under ~/.claude.
    let named = fresh(&env, &tmux, ["--team", "demo", "status"]).not_found("does not exist");
    assert!(named.stderr.contains(&pass), "{}", named.stderr);
    let list = fresh(&env, &tmux, ["team", "list"]).ok();
    assert!(list.stdout.contains(&pass), "{}", list.stdout);
}
