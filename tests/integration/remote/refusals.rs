//! What a launch refuses before placing anything on a host, and the one place words cross to a
//! remote shell: a host ssh cannot reach (the error names the host and what ssh said), a host
//! running another swarm version (both named), and shell metacharacters in the remote swarm's
//! path, a teammate's directory there and its prompt, which arrive as the same words; and
//! `--host`, which places the teammates it names (or all that name none) and refuses a name
//! that is not in the launch.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::json;

use super::{RemoteTeam, WAIT};
use crate::support::*;

#[test]
fn an_unreachable_host_at_launch_is_an_error_naming_the_host_and_the_ssh_error() {
    let team = RemoteTeam::new(&[]);
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "far", "host": "nowhere"}]}),
    );
    let before = team.env.snapshot();
    let out = team
        .swarm([
            OsStr::new("launch"),
            file.as_os_str(),
            "--backend".as_ref(),
            "tmux".as_ref(),
        ])
        .run_within(WAIT);
    assert_eq!(out.code, 1, "{out:?}");
    out.stderr_has("cannot reach host nowhere over ssh")
        .stderr_has("Connection refused");
    team.env
        .snapshot()
        .assert_unchanged_since(&before, "the refused launch");
    // The same for a destination that is not one.
    let out = team
        .swarm([
            "launch",
            "--team",
            "t",
            "--agent",
            "shell",
            "--teammate",
            "a=x",
            "--host",
            "a=-oProxyCommand=id",
        ])
        .refused("invalid host");
    out.stderr_has("ssh would read as an option");
}

#[test]
fn a_host_running_another_swarm_version_is_refused_naming_both() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let fake = host.home.join("old-swarm");
    std::fs::write(&fake, "#!/bin/sh\necho 'swarm 0.0.1'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": fake,
                "teammates": [{"name": "far", "host": "box1"}]}),
    );
    let out = team
        .swarm([
            OsStr::new("launch"),
            file.as_os_str(),
            "--backend".as_ref(),
            "tmux".as_ref(),
        ])
        .refused("host box1 runs swarm 0.0.1");
    out.stderr_has(&format!("this machine swarm {}", env!("CARGO_PKG_VERSION")));
    // And one with no swarm at all: said so, with what to do.
    let missing = team.file(
        "missing.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": "/nonexistent/swarm",
                "teammates": [{"name": "far", "host": "box1"}]}),
    );
    team.swarm([
        OsStr::new("launch"),
        missing.as_os_str(),
        "--backend".as_ref(),
        "tmux".as_ref(),
    ])
    .refused("swarm was not found on host box1");
}

/// The remote swarm's path, the directory and the prompt all hold shell syntax; the one command
/// string built for the remote shell quotes each word exactly once, so the teammate runs where
/// it was told and nothing else runs.
#[test]
fn shell_words_in_the_remote_path_the_directory_and_the_prompt_stay_words() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let odd = "it's $(touch pwned); `touch pwned2` & echo";
    let bin_dir = host.home.join(odd);
    std::fs::create_dir_all(&bin_dir).unwrap();
    let swarm = bin_dir.join("swarm");
    std::fs::copy(BIN, &swarm).unwrap();
    let work = host.home.join(format!("work {odd}"));
    std::fs::create_dir_all(&work).unwrap();
    let prompt = "review this; $(touch pwned3) `touch pwned4` | tee pwned5";
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": swarm,
                "teammates": [{"name": "odd", "host": "box1", "cwd": format!("work {odd}"),
                               "prompt": prompt}],
                "tasks": [{"subject": "where", "description": "pwd > where.txt"}]}),
    );
    team.launch(&file);
    team.eventually("the task completed at home", || {
        (team.task("1")["status"] == "completed").then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(work.join("where.txt"))
            .unwrap()
            .trim_end(),
        work.display().to_string()
    );
    // The prompt reached the teammate's inbox on its host as one message, word for word.
    let inbox: serde_json::Value = read_json(&host.mirror().join("teams/t/inboxes/odd.json"));
    assert_eq!(inbox[0]["text"], prompt);
    for n in ["pwned", "pwned2", "pwned3", "pwned4", "pwned5"] {
        assert!(
            !exists_under(&host.home, n),
            "{n} was created: a word ran as a command"
        );
        assert!(!exists_under(team.env.root(), n), "{n} was created at home");
    }
    team.swarm(["down", "--timeout", "30"]).ok();
}

fn exists_under(dir: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name() == name
            || (e.file_type().is_ok_and(|t| t.is_dir()) && exists_under(&e.path(), name))
    })
}

#[test]
fn the_host_flag_places_named_teammates_and_refuses_a_name_not_in_the_launch() {
    let team = RemoteTeam::new(&["box1", "box2"]);
    let launch = |hosts: &[&str]| {
        let mut args = vec![
            "--json",
            "launch",
            "--team",
            "t",
            "--agent",
            "shell",
            "--teammate",
            "far=x",
            "--teammate",
            "farther=y",
            "--teammate",
            "near=z",
            "--remote-swarm",
            BIN,
            "--backend",
            "tmux",
            "--dry-run",
        ];
        for h in hosts {
            args.extend(["--host", h]);
        }
        team.swarm(args)
    };
    // NAME=HOST places one teammate; a bare HOST every teammate that names none.
    let dry = launch(&["far=box1", "box2"]).ok().json();
    let host_of = |name: &str| {
        dry["teammates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["host"].clone())
            .unwrap()
    };
    assert_eq!(host_of("far"), "box1", "{dry}");
    assert_eq!(host_of("farther"), "box2", "{dry}");
    assert_eq!(host_of("near"), "box2", "{dry}");
    assert_eq!(
        dry["teammates"][0]["remote"]["argv"][0], BIN,
        "its command line on the host runs the remote swarm: {dry}"
    );
    // Without --host nobody leaves this machine.
    let local = launch(&[]).ok().json();
    assert!(local["teammates"][0].get("host").is_none(), "{local}");
    // A name that is not in the launch is a usage error naming it, and nothing is made.
    let before = team.env.snapshot();
    let out = launch(&["nobody=box1"]).refused("no teammate \"nobody\" in this launch");
    out.stderr_has("--host HOST for all of them");
    team.env
        .snapshot()
        .assert_unchanged_since(&before, "the refused launch");
}
