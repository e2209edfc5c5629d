//! Nothing swarm hands tmux is read as a command separator, a format or a shell command (issue
//! 9): argv words, environment values, the working directory, the root (a pane option) and the
//! inherited `--model`, `--settings` and `--agent-type` values all reach the agent verbatim, and
//! no `touch pwned` smuggled into any of them ever runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::{pane_field, without_forwarded_env, write_script};
use crate::support::*;

/// Words tmux or a shell would read as something else: a trailing `;` ends a tmux command
/// (`\;` is tmux's escape for it), `#{...}` and `#(...)` are tmux formats, `$(...)` and
/// backquotes are shell, plus newlines, quotes, spaces and braces. `PWNED` becomes a marker path.
const NASTY: &[&str] = &[
    "a;",
    ";",
    "\\;",
    "b\\;",
    "c\\\\;",
    "#{pane_id}",
    "##{pane_id}",
    "#(touch PWNED-hash)",
    "$(touch PWNED-dollar)",
    "`touch PWNED-tick`",
    "new\nline",
    "dq\"",
    "sq'",
    "sp ace",
    "{",
    "}",
    "x; run-shell 'touch PWNED-rs' ;",
];

fn nasty(marker: &Path) -> Vec<String> {
    NASTY
        .iter()
        .map(|w| w.replace("PWNED", &marker.display().to_string()))
        .collect()
}

/// What the dump agent saw: its argv (without the program), environment and working directory.
struct Dump {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
}

impl Dump {
    fn var(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// An agent that writes its argv and environment NUL-separated (so newlines survive) and its
/// working directory under `out/`, then touches `out/done` and sleeps.
fn dump_agent(env: &Env) -> PathBuf {
    let out = env.path("out");
    std::fs::create_dir_all(&out).unwrap();
    write_script(
        &env.path("dump-argv"),
        &format!(
            r#"#!/bin/sh
out='{out}'
for a in "$@"; do printf '%s\0' "$a"; done > "$out/argv"
env -0 > "$out/env"
pwd > "$out/cwd"
touch "$out/done"
sleep 300
"#,
            out = out.display()
        ),
    )
}

fn read_dump(env: &Env) -> Dump {
    let done = env.path("out/done");
    eventually(Duration::from_secs(20), "the agent's dump", || {
        done.is_file().then_some(())
    });
    let split = |name: &str| -> Vec<String> {
        let bytes = std::fs::read(env.path(&format!("out/{name}"))).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
        assert_eq!(words.pop().as_deref(), Some(""), "{name} ends in NUL");
        words
    };
    let cwd = std::fs::read_to_string(env.path("out/cwd")).unwrap();
    Dump {
        argv: split("argv"),
        env: split("env")
            .into_iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect(),
        cwd: PathBuf::from(cwd.strip_suffix('\n').unwrap()),
    }
}

/// Every file under `dir` whose name starts with `pwned`.
fn markers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with("pwned") {
                found.push(path.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    found
}

#[test]
fn an_argv_word_ending_in_a_semicolon_is_not_a_tmux_command() {
    // The reproduction of issue 9, with the marker as an absolute path.
    let env = Env::new();
    let tmux = Tmux::new();
    dump_agent(&env);
    let pwned = env.path("pwned");
    let touch = format!("touch {}", pwned.display());
    without_forwarded_env(env.swarm([
        "launch",
        "--team",
        "t",
        "--agent",
        "./dump-argv",
        "--backend",
        "tmux",
        "--no-lead-pane",
        "--teammate",
        "c=hi",
        "--",
        "a;",
        "run-shell",
        &touch,
    ]))
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .current_dir(env.root())
    .ok();
    // The runtime runs the agent with the words it was given and the prompt last.
    let dump = read_dump(&env);
    assert_eq!(dump.argv[..3], ["a;", "run-shell", touch.as_str()]);
    assert_eq!(dump.argv.len(), 4, "{:?}", dump.argv);
    assert!(dump.argv[3].contains(">hi<"), "{:?}", dump.argv);
    assert_eq!(markers(env.root()), Vec::<PathBuf>::new());
}

#[test]
fn agent_words_in_a_swarm_file_reach_the_agent_verbatim() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = dump_agent(&env);
    let words = nasty(&env.path("pwned"));
    let mut agent_field = vec![agent.display().to_string()];
    agent_field.extend(words.iter().cloned());
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "agent": agent_field, "teammates": [{"name": "c", "prompt": "hi"}]})
            .to_string(),
    )
    .unwrap();
    without_forwarded_env(env.swarm([
        "launch",
        file.to_str().unwrap(),
        "--backend",
        "tmux",
        "--no-lead-pane",
    ]))
    .env("SWARM_TMUX_SOCKET", &tmux.socket)
    .env("HOME", env.root())
    .current_dir(env.root())
    .ok();
    let dump = read_dump(&env);
    assert_eq!(dump.argv[..words.len()], words);
    assert_eq!(dump.argv.len(), words.len() + 1, "the prompt comes last");
    assert_eq!(markers(env.root()), Vec::<PathBuf>::new());
}

#[test]
fn every_value_that_reaches_tmux_arrives_verbatim_and_nothing_else_runs() {
    let env = Env::new();
    let tmux = Tmux::new();
    let agent = dump_agent(&env);
    let marker = env.path("pwned");
    let words = nasty(&marker);
    // A root and a working directory whose names tmux would expand or split: a name cannot hold
    // `/`, so their `#(...)` touches a marker relative to the job's directory (the root, which is
    // also HOME and the launcher's directory here).
    let odd = "odd #{pane_id} #(touch pwned-dir) $(touch pwned-dir2) 'q\"\\;\nnl;";
    let root = env.path(&format!("root {odd}"));
    let cwd = env.path(&format!("cwd {odd}"));
    std::fs::create_dir_all(&cwd).unwrap();
    let values: serde_json::Map<String, serde_json::Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (format!("NASTY_{i}"), json!(w)))
        .collect();
    let file = env.path("team.json");
    std::fs::write(
        &file,
        json!({"team": "t", "cwd": cwd, "teammates": [
            {"name": "coder", "prompt": "go", "env": values}]})
        .to_string(),
    )
    .unwrap();
    // `--model` and `--agent-type` refuse control characters; everything else is fair game.
    let model = format!(
        "m #{{pane_id}} #(touch {0}-m) $(touch {0}-m);",
        marker.display()
    );
    let agent_type = format!("t #(touch {}-t) \\;", marker.display());
    let settings = format!("s #(touch {0}-s)\n$(touch {0}-s) ;", marker.display());
    let mut args = vec![
        "launch".to_string(),
        file.display().to_string(),
        "--backend".into(),
        "tmux".into(),
        "--no-lead-pane".into(),
        "--model".into(),
        model.clone(),
        "--agent-type".into(),
        agent_type.clone(),
        "--settings".into(),
        settings.clone(),
        "--".into(),
    ];
    args.extend(words.iter().cloned());
    without_forwarded_env(env.swarm(&args))
        .env("SWARM_ROOT", &root)
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
        .env("HOME", env.root())
        .current_dir(env.root())
        .ok();
    let dump = read_dump(&env);

    let pair = |flag: &str, value: &str| {
        assert!(
            dump.argv.windows(2).any(|w| w[0] == flag && w[1] == value),
            "{flag} {value:?} not in {:?}",
            dump.argv
        );
    };
    pair("--model", &model);
    pair("--agent-type", &agent_type);
    pair("--settings", &settings);
    assert!(
        dump.argv.ends_with(&words),
        "the words after -- arrive last and verbatim: {:?}",
        dump.argv
    );
    for (i, w) in words.iter().enumerate() {
        assert_eq!(dump.var(&format!("NASTY_{i}")), Some(w.as_str()));
    }
    assert_eq!(dump.cwd, cwd);

    // The pane is the one tmux reports, and the teammate's sandbox names it in SWARM_TMUX_PANE
    // (TMUX and TMUX_PANE are unset inside: `launch::sandbox`).
    let config = read_json(&root.join("teams/t/config.json"));
    let pane = member(&config, "coder")["tmuxPaneId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(dump.var("SWARM_TMUX_PANE"), Some(pane.as_str()));
    assert_eq!(dump.var("TMUX_PANE"), None);
    assert_eq!(dump.var("TMUX"), None);
    assert_eq!(pane_field(&tmux, &pane, "#{pane_title}"), "coder");
    let root_option = tmux.cmd(["show-options", "-p", "-v", "-t", &pane, "@swarm-root"]);
    assert_eq!(
        root_option.stdout.strip_suffix('\n'),
        Some(root.canonicalize().unwrap().to_str().unwrap()),
        "{}",
        root_option.stderr
    );
    // The spec the trampoline read is gone.
    assert_eq!(
        std::fs::read_dir(root.join("teams/t/spawn"))
            .unwrap()
            .count(),
        0
    );
    assert_eq!(markers(env.root()), Vec::<PathBuf>::new());
}
