//! Item 10 (YAML) and item 11: a swarm file may be YAML (`.yaml`/`.yml`, the schema of the JSON
//! one), as tmuxinator and tmuxp users write, and `swarm init [FILE]` writes a commented starter
//! file that `swarm launch` takes as it is.

use super::*;

/// The team and teammate names a dry run of `file` shows.
fn dry_run(env: &Env, file: &str) -> (String, Vec<String>) {
    let doc = env
        .swarm(["--json", "launch", file, "--dry-run"])
        .current_dir(env.root())
        .ok()
        .json();
    let names = doc["teammates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (doc["team"].as_str().unwrap().to_string(), names)
}

#[test]
fn a_yaml_swarm_file_launches_like_the_json_one() {
    let env = Env::new();
    for name in ["team.yaml", "team.yml"] {
        std::fs::write(
            env.path(name),
            "# a comment\nteam: ymlteam\nagent: shell\nteammates:\n  - name: coder\n    prompt: \"$ echo hi\"\n  - name: tester\n    prompt: \"$ echo ok\"\ntasks:\n  - subject: Design\n  - subject: Build\n    blockedBy: [0]\n",
        )
        .unwrap();
        assert_eq!(
            dry_run(&env, name),
            (
                "ymlteam".to_string(),
                vec!["coder".to_string(), "tester".to_string()]
            )
        );
    }
    // A typo is refused as in JSON, naming the file and the field.
    std::fs::write(env.path("bad.yaml"), "team: t\nteamates: []\n").unwrap();
    env.swarm(["launch", "bad.yaml", "--dry-run"])
        .current_dir(env.root())
        .refused("teamates");
}

#[test]
fn swarm_init_writes_a_commented_starter_file_that_launch_takes_as_is() {
    let env = Env::new();
    let out = env.swarm(["init"]).current_dir(env.root()).ok();
    let file = env.path("swarm.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.lines()
            .filter(|l| l.trim_start().starts_with('#'))
            .count()
            >= 5,
        "{text}"
    );
    assert!(
        out.stdout.contains("swarm launch swarm.yaml"),
        "{}",
        out.stdout
    );
    let (_, names) = dry_run(&env, "swarm.yaml");
    assert!(!names.is_empty());
    // A file that exists is not overwritten.
    env.swarm(["init"])
        .current_dir(env.root())
        .refused("already exists");
    // A name of one's own.
    env.swarm(["init", "mine.yml"]).current_dir(env.root()).ok();
    dry_run(&env, "mine.yml");
    // And for real: its teammates work its tasks through.
    let tmux = Tmux::new();
    env.swarm(["launch", "swarm.yaml", "--no-lead-pane"])
        .current_dir(env.root())
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    eventually(LONG, "the starter file's tasks completed", || {
        let tasks = env
            .swarm(["--json", "--team", "my-team", "task", "list"])
            .ok()
            .json();
        let tasks = tasks.as_array()?;
        (!tasks.is_empty() && tasks.iter().all(|t| t["status"] == "completed")).then_some(())
    });
    env.swarm(["--team", "my-team", "down"]).ok();
}
