//! `swarm demo` end to end: real teammate processes, real panes, real files.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// Checks a finished demo: every task done once, in dependency order, teammates retired, the
/// report written, and the lead inbox holding an idle notification per task.
fn assert_demo_finished(env: &Env, out: &Out) {
    let report = out.json();
    assert_eq!(report["completed"], true, "{}", out.stderr);
    assert_eq!(report["done_by"].as_object().unwrap().len(), 6);
    let done_line = |id: &str| {
        out.stderr
            .lines()
            .position(|l| l.trim_start().starts_with(&format!("#{id} ")) && l.contains(" done ("))
            .unwrap_or_else(|| panic!("no done line for #{id}: {}", out.stderr))
    };
    let started_line = |id: &str| {
        out.stderr
            .lines()
            .position(|l| {
                l.trim_start().starts_with(&format!("#{id} ")) && l.contains("started by")
            })
            .unwrap_or_else(|| panic!("no start line for #{id}: {}", out.stderr))
    };
    for (task, after) in [("4", ["1", "2"]), ("5", ["2", "3"]), ("6", ["4", "5"])] {
        for dep in after {
            assert!(
                done_line(dep) < started_line(task),
                "#{task} started before #{dep} was done"
            );
        }
    }
    let config = read_json(&env.path("teams/demo/config.json"));
    for m in config["members"].as_array().unwrap().iter().skip(1) {
        assert_eq!(m["isActive"], false, "{m}");
    }
    let report_txt = std::fs::read_to_string(env.path("teams/demo/workspace/report.txt")).unwrap();
    assert_eq!(
        report_txt,
        "lines built: 4\nlint: sources.txt:1 docs.txt:1 \n"
    );
    let lead = read_json(&env.path("teams/demo/inboxes/team-lead.json"));
    let mut completed: HashMap<String, usize> = HashMap::new();
    for m in lead.as_array().unwrap() {
        let Ok(p) = serde_json::from_str::<Value>(m["text"].as_str().unwrap()) else {
            continue;
        };
        if p["type"] == "idle_notification" {
            if let Some(id) = p["completedTaskId"].as_str() {
                assert_eq!(p["completedStatus"], "resolved", "{p}");
                *completed.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    assert_eq!(completed.len(), 6, "{completed:?}");
    assert!(
        completed.values().all(|&n| n == 1),
        "a task was reported twice: {completed:?}"
    );
}

#[test]
fn the_demo_runs_in_process() {
    let env = Env::new();
    let out = env
        .swarm(["--json", "demo", "--backend", "in-process"])
        .env_remove("SWARM_TEAM")
        .ok();
    assert_eq!(out.json()["backend"], "in-process");
    assert_demo_finished(&env, &out);
}

#[test]
fn the_demo_runs_in_tmux_and_leaves_no_panes() {
    let env = Env::new();
    let tmux = Tmux::new();
    let out = env
        .swarm(["--json", "demo"])
        .env_remove("SWARM_TEAM")
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    assert_eq!(out.json()["backend"], "tmux");
    assert_demo_finished(&env, &out);
    // Every teammate pane was closed by the shutdown, so the session went with them.
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_title}"]);
    assert!(
        panes.stdout.trim().is_empty(),
        "panes left: {}",
        panes.stdout
    );
}

/// On a machine without tmux the demo falls back to supervised children.
#[test]
fn without_tmux_the_demo_falls_back_to_in_process() {
    let env = Env::new();
    let bin = env.path("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["sh", "sleep", "cat", "wc", "grep", "tr", "printf", "echo"] {
        let found = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(tool))
            .find(|p| p.exists());
        std::os::unix::fs::symlink(
            found.unwrap_or_else(|| panic!("{tool} is installed")),
            bin.join(tool),
        )
        .unwrap();
    }
    let out = env
        .swarm(["--json", "demo"])
        .env_remove("SWARM_TEAM")
        .env("PATH", &bin)
        .ok();
    assert_eq!(out.json()["backend"], "in-process");
    assert!(out.stderr.contains("in-process"), "{}", out.stderr);
    assert_demo_finished(&env, &out);
}

#[test]
fn a_second_demo_replaces_the_first() {
    let env = Env::new();
    env.swarm(["demo", "--backend", "in-process"])
        .env_remove("SWARM_TEAM")
        .ok();
    let out = env
        .swarm(["demo", "--backend", "in-process"])
        .env_remove("SWARM_TEAM")
        .ok();
    assert!(out.stdout.contains("6 tasks done"), "{}", out.stdout);
    assert!(out.stdout.contains("lines built: 4"), "{}", out.stdout);
    let tasks: Vec<_> = std::fs::read_dir(env.path("tasks/demo"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .collect();
    assert_eq!(tasks.len(), 6);
}

#[test]
fn demo_keep_leaves_the_team_up_and_the_printed_attach_command_works() {
    let env = Env::new();
    let tmux = Tmux::new();
    let out = env
        .swarm(["demo", "--keep"])
        .env_remove("SWARM_TEAM")
        .env("SWARM_TMUX_SOCKET", &tmux.socket)
        .ok();
    assert!(out.stdout.contains("6 tasks done"), "{}", out.stdout);
    // The teammates are still there: their panes are alive.
    let panes = tmux.cmd(["list-panes", "-a", "-F", "#{pane_dead}"]).stdout;
    assert_eq!(panes.lines().filter(|l| *l == "0").count(), 3, "{panes}");
    let attach = out
        .stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("swarm attach "))
        .unwrap_or_else(|| panic!("no attach hint: {}", out.stdout))
        .to_string();
    assert_eq!(
        attach,
        format!("swarm attach --root {} --team demo", env.root().display())
    );
    // Run the hint as printed, from a terminal and a shell that knows nothing of the team.
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let mut script = clean_command("script");
    home_in(&mut script, &env.path("state"));
    let mut attached = script
        .args(["-qc", &attach, "/dev/null"])
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("script (util-linux) is installed");
    let client = eventually(Duration::from_secs(20), "a client on the demo", || {
        let out = tmux.cmd(["list-clients", "-F", "#{session_name}"]).stdout;
        (!out.trim().is_empty()).then(|| out.trim().to_string())
    });
    assert!(client.starts_with("swarm-demo-"), "{client}");
    // And `swarm down`, as printed, takes it all away (the attached client with it).
    let down = out
        .stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("swarm down "))
        .unwrap()
        .to_string();
    let words: Vec<&str> = down.split(' ').skip(1).collect();
    env.swarm(&words).env_remove("SWARM_TEAM").ok();
    eventually(Duration::from_secs(20), "attach returned", || {
        attached.try_wait().unwrap()
    });
    assert!(tmux.cmd(["list-panes", "-a"]).stdout.trim().is_empty());
}

#[test]
fn the_demo_keeps_its_files_out_of_claude_codes_directory() {
    let env = Env::new();
    let home = env.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = env
        .swarm(["demo", "--backend", "in-process"])
        .env_remove("SWARM_TEAM")
        .env_remove("SWARM_ROOT")
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .ok();
    let data = home.join(".local/share/swarm");
    assert!(
        data.join("teams/demo/config.json").is_file(),
        "{}",
        out.stdout
    );
    // Nothing of the demo's is in ~/.claude: only the read-only stand-in for the user's
    // settings a contained teammate's sandbox makes where there were none (README
    // "Containment"), so that no teammate can create it.
    let in_claude_dir: Vec<_> = std::fs::read_dir(home.join(".claude"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        in_claude_dir.iter().all(|name| name == "settings.json"),
        "{in_claude_dir:?}"
    );
    let stand_in = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap_or_default();
    assert!(["", "{}\n"].contains(&stand_in.as_str()), "{stand_in:?}");
    assert!(
        out.stderr
            .contains(&format!("the team's files: {}", data.display()))
            || out
                .stdout
                .contains(&format!("the team's files: {}", data.display())),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    // $XDG_DATA_HOME moves it; --root still wins.
    let xdg = env.path("xdg");
    env.swarm(["demo", "--backend", "in-process"])
        .env_remove("SWARM_TEAM")
        .env_remove("SWARM_ROOT")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", &xdg)
        .ok();
    assert!(xdg.join("swarm/teams/demo/config.json").is_file());
}
