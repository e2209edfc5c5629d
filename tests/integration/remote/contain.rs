//! A remote teammate is contained on its host as a local one is on this machine (issue 23 item
//! 5, issue 22 item 1): a shell teammate on a host runs a hostile task there and cannot read the
//! host's private state, reach its own private tmux server there, write the mirror's control
//! records or signal a process outside its tree, while it still works, talks to the lead and
//! its next task completes at home; `"sandbox": false` and a host without bwrap run it
//! uncontained and say so; and after a remote run nothing under the host's HOME holds the lead
//! key.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

/// A file in the host's private state (`~/.local/state/swarm`), for a teammate to try to read.
fn plant_secret(home: &Path) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = home.join(".local/state/swarm");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .unwrap();
    let secret = dir.join("planted-secret");
    std::fs::write(&secret, "host-private-bytes\n").unwrap();
    secret
}

/// The tmux sockets on the host: every remote member's private server there.
fn host_sockets(home: &Path) -> Vec<PathBuf> {
    let uid = unsafe { libc::getuid() };
    let dir = home.join(format!("tmux/tmux-{uid}"));
    std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// A swarm file: shell teammate `builder` on box1, in `work` there.
fn team_file(team: &RemoteTeam, sandbox: Option<bool>) -> PathBuf {
    let mut builder = json!({"name": "builder", "host": "box1", "cwd": "work",
                             "prompt": "$ echo ready"});
    if let Some(s) = sandbox {
        builder["sandbox"] = json!(s);
    }
    team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN, "teammates": [builder]}),
    )
}

#[test]
fn a_remote_teammate_is_contained_on_its_host_and_its_attacks_fail_while_it_works() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let work = host.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let secret = plant_secret(&host.home);
    let mut victim = KillOnDrop(
        Command::new("sleep")
            .arg("300")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    team.launch(&team_file(&team, None));
    let sockets = host_sockets(&host.home);
    assert_eq!(sockets.len(), 1, "builder's private server: {sockets:?}");
    let socket = &sockets[0];
    let mirror = host.mirror().join("teams/t");
    let attack = format!(
        r#"out='{work}/attack'; {{
echo "TMUX=${{TMUX-unset}}"
cat '{secret}' >/dev/null && echo 'state: read' || echo 'state: refused'
tmux -S '{socket}' list-sessions >/dev/null && echo 'tmux: reached' || echo 'tmux: refused'
echo forged > '{mirror}/permissions/resolved/forged.json' && echo 'resolved: written' || echo 'resolved: refused'
echo forged > '{mirror}/spawn/forged.json' && echo 'spawn: written' || echo 'spawn: refused'
kill -TERM {victim} && echo 'kill: sent' || echo 'kill: refused'
'{bin}' send --to team-lead 'attack over' && echo 'send: sent'
}} > "$out.tmp" 2>&1; mv "$out.tmp" "$out""#,
        work = work.display(),
        secret = secret.display(),
        socket = socket.display(),
        mirror = mirror.display(),
        victim = victim.0.id(),
        bin = BIN,
    );
    team.swarm(["task", "create", "attack", "--description", &attack])
        .ok();
    team.swarm([
        "task",
        "create",
        "after",
        "--description",
        "echo after > after.txt",
        "--blocked-by",
        "1",
    ])
    .ok();
    let said = team.eventually("the attack's report on the host", || {
        std::fs::read_to_string(work.join("attack")).ok()
    });
    for line in [
        "TMUX=unset",
        "state: refused",
        "tmux: refused",
        "resolved: refused",
        "spawn: refused",
        "kill: refused",
        "send: sent",
    ] {
        assert!(said.contains(line), "{line:?} in the report:\n{said}");
    }
    // From outside: nothing was written, the victim and the server live, and the team worked.
    assert!(!mirror.join("permissions/resolved/forged.json").exists());
    assert!(!mirror.join("spawn/forged.json").exists());
    assert!(victim.0.try_wait().unwrap().is_none(), "the victim lives");
    let listed = clean_command("tmux")
        .arg("-S")
        .arg(socket)
        .arg("list-sessions")
        .output()
        .unwrap();
    assert!(listed.status.success(), "the host's server answers outside");
    team.eventually("the lead hears 'attack over' at home", || {
        team.texts_from("team-lead", "builder")
            .iter()
            .any(|t| t == "attack over")
            .then_some(())
    });
    team.eventually("the task after the attack completed at home", || {
        (team.task("2")["status"] == "completed").then_some(())
    });
    assert_eq!(
        std::fs::read_to_string(work.join("after.txt")).unwrap(),
        "after\n"
    );
    let status = team.status();
    let builder = member(&status, "builder");
    assert_eq!(builder["contained"], true, "{status}");
    assert_eq!(builder["containment"], "bwrap", "{status}");
    let text = team.swarm(["status"]).ok().stdout;
    assert!(!text.contains("uncontained"), "{text}");
    team.swarm(["down", "--timeout", "60"]).ok();
    assert_no_lead_key_on(&team, &host.home);
}

/// The lead key never reaches a host: no `lead-keys` directory and no file holding the key's
/// secret under the host's HOME (its mirror, its private state, its tmux and worktrees), after
/// a run that did put files there.
fn assert_no_lead_key_on(team: &RemoteTeam, home: &Path) {
    let keys = team.env.path("state/swarm/lead-keys");
    let key_files: Vec<PathBuf> = std::fs::read_dir(&keys)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(!key_files.is_empty(), "the launch made a lead key at home");
    let mut secrets: Vec<Vec<u8>> = Vec::new();
    for file in &key_files {
        let text = std::fs::read_to_string(file).unwrap();
        let seed = text.split_whitespace().nth(2).expect("the key's seed");
        secrets.push(seed.as_bytes().to_vec());
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(seed)
            .unwrap();
        secrets.push(raw);
    }
    let mut files = 0;
    let mut stack = vec![home.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let kind = e.file_type().unwrap();
            assert_ne!(
                e.file_name(),
                "lead-keys",
                "a lead-keys entry on the host: {}",
                path.display()
            );
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                files += 1;
                let bytes = std::fs::read(&path).unwrap_or_default();
                for secret in &secrets {
                    assert!(
                        !bytes.windows(secret.len()).any(|w| w == secret.as_slice()),
                        "the lead key's secret is in {} on the host",
                        path.display()
                    );
                }
            }
        }
    }
    assert!(files > 10, "the run left its files on the host ({files})");
}

#[test]
fn a_remote_teammate_with_sandbox_false_runs_uncontained_on_its_host_and_status_says_so() {
    let team = RemoteTeam::new(&["box1"]);
    let host = team.hosts.get("box1");
    let work = host.home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let secret = plant_secret(&host.home);
    team.launch(&team_file(&team, Some(false)));
    let steal = format!("cat '{}' > stolen.txt", secret.display());
    team.swarm(["task", "create", "steal", "--description", &steal])
        .ok();
    let stolen = team.eventually("the host's private file copied", || {
        std::fs::read_to_string(work.join("stolen.txt"))
            .ok()
            .filter(|s| !s.is_empty())
    });
    assert_eq!(stolen, "host-private-bytes\n");
    let status = team.status();
    assert_eq!(member(&status, "builder")["contained"], false, "{status}");
    assert_eq!(member(&status, "builder")["containment"], "--no-sandbox");
    let text = team.swarm(["status"]).ok().stdout;
    assert!(
        text.contains("uncontained: builder (--no-sandbox)"),
        "{text}"
    );
    team.swarm(["down", "--timeout", "60"]).ok();
}

#[test]
fn a_host_without_bwrap_runs_its_teammate_uncontained_and_the_launch_and_status_say_so() {
    // The host's PATH has tmux and a shell, no bwrap.
    let tools = tempfile::tempdir().unwrap();
    for tool in ["tmux", "sh", "cat", "mv"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap()
            .stdout;
        let found = String::from_utf8(found).unwrap();
        std::os::unix::fs::symlink(found.trim(), tools.path().join(tool)).unwrap();
    }
    let path = tools.path().display().to_string();
    let team = RemoteTeam::with_host_env(&["box1"], &[("PATH", &path)]);
    std::fs::create_dir_all(team.hosts.get("box1").home.join("work")).unwrap();
    let out = team.launch(&team_file(&team, None));
    out.stderr_has(
        "teammate builder runs uncontained: bwrap not found on box1; install bubblewrap on box1, or pass --no-sandbox (\"sandbox\": false) to silence this",
    );
    let status = team.eventually("builder running", || {
        let s = team.status();
        super::runs(&s, "builder").then_some(s)
    });
    assert_eq!(member(&status, "builder")["contained"], false, "{status}");
    assert_eq!(
        member(&status, "builder")["containment"],
        "bwrap not found on box1"
    );
    team.swarm(["down", "--timeout", "60"]).ok();
}
