//! `swarm attach NAME` on a remote member, through a real terminal: a pane of a private tmux
//! server runs `swarm attach builder`, which attaches to builder's local pane (`swarm relay
//! attach`, ssh to its pane on its host); what builder printed there shows in that terminal,
//! and the user's detach key ends the attach cleanly while builder keeps running on its host.

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

/// Words quoted for a POSIX shell.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[test]
fn swarm_attach_shows_a_remote_members_own_pane_in_a_terminal_and_detaches_cleanly() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    std::fs::create_dir_all(host.home.join("work")).unwrap();
    // Printed by its shell agent, computed there: the command text alone does not say 42.
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
            "teammates": [{"name": "builder", "host": "box1", "cwd": "work",
                           "prompt": "$ echo attach-marker-$((6*7))"}]}),
    );
    team.launch(&file);
    team.eventually("builder's output in its pane on its host", || {
        let logs = team.swarm(["logs", "builder"]).run();
        logs.stdout.contains("attach-marker-42").then_some(())
    });

    // The user's terminal: a pane of another server, running `swarm attach builder` with the
    // team's surroundings, then saying how it ended.
    let terminal = Tmux::new();
    let root = team.env.root();
    let state = root.join("state");
    let vars = [
        ("SWARM_ROOT", root.to_path_buf()),
        ("SWARM_TEAM", "t".into()),
        ("HOME", state.join("home")),
        ("XDG_STATE_HOME", state.clone()),
        ("XDG_CONFIG_HOME", state.join("config")),
        ("XDG_DATA_HOME", state.join("data")),
        ("XDG_CACHE_HOME", state.join("cache")),
        ("SWARM_TMUX_SOCKET", team.tmux.socket.clone().into()),
        ("SWARM_SSH_CONFIG", team.hosts.ssh_config()),
        ("XDG_RUNTIME_DIR", team.hosts.runtime_dir()),
    ];
    let mut script = String::new();
    for (k, v) in vars {
        script.push_str(&format!(
            "export {k}={}\n",
            quoted(&v.display().to_string())
        ));
    }
    script.push_str(&format!(
        "{} attach builder; echo \"attach exited $?\"; exec sleep 600\n",
        quoted(BIN)
    ));
    let script_path = team.env.path("terminal.sh");
    std::fs::write(&script_path, script).unwrap();
    let started = terminal.cmd([
        "new-session",
        "-d",
        "-s",
        "user",
        "-x",
        "160",
        "-y",
        "40",
        &format!("sh {}", quoted(&script_path.display().to_string())),
    ]);
    assert_eq!(started.code, 0, "{started:?}");
    let screen = || terminal.cmd(["capture-pane", "-p", "-t", "user"]).stdout;
    team.eventually("builder's own output on the user's terminal", || {
        screen().contains("attach-marker-42").then_some(())
    });
    // The user's detach key (the outer client's prefix, then d): the attach ends, cleanly.
    terminal.cmd(["send-keys", "-t", "user", "C-b", "d"]);
    let shown = team.eventually("the attach to end", || {
        let s = screen();
        s.contains("attach exited").then_some(s)
    });
    assert!(shown.contains("attach exited 0"), "{shown}");
    assert!(shown.contains("[detached"), "{shown}");
    // Builder runs on, on its host, its local pane too.
    let status = team.status();
    assert!(super::runs(&status, "builder"), "{status}");
    let pane = member(&status, "builder")["paneId"]
        .as_str()
        .unwrap()
        .to_string();
    let dead = team
        .tmux
        .cmd(["display-message", "-p", "-t", &pane, "#{pane_dead}"]);
    assert_eq!(dead.stdout.trim(), "0", "{dead:?}");
    team.swarm(["down", "--timeout", "60"]).ok();
}
