//! Issue 21 item 3: a full disk never kills a teammate runtime or the in-process launcher, and
//! a message is acted on once, full disk or restart. The store is a small tmpfs (the suite runs
//! as root in CI, so it can mount one; without mount rights these tests fail, saying so), filled
//! to its last page by a file the test then truncates.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::disk::Tmpfs;

/// Generous: nothing is timed, only waited for.
const LONG: Duration = Duration::from_secs(60);
use crate::support::*;

/// A small store on its own tmpfs, and the file that fills it.
struct SmallDisk {
    root: PathBuf,
    filler: PathBuf,
    _mounted: Tmpfs,
}

impl SmallDisk {
    fn new(env: &Env) -> SmallDisk {
        let root = env.path("small");
        let mounted = Tmpfs::mount_sized(&root, "1m").unwrap_or_else(|why| {
            panic!("these tests need a tmpfs for the store (run as root): {why}")
        });
        let filler = root.join("filler");
        SmallDisk {
            root,
            filler,
            _mounted: mounted,
        }
    }

    /// Writes until the disk is full (ENOSPC).
    fn fill(&self) {
        let mut file = File::create(&self.filler).unwrap();
        loop {
            if let Err(e) = std::io::Write::write_all(&mut file, &[0u8; 4096]) {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                return;
            }
        }
    }

    fn free(&self) {
        std::fs::remove_file(&self.filler).unwrap();
    }

    fn swarm(&self, env: &Env, args: &[&str]) -> Swarm {
        env.swarm(args).env("SWARM_ROOT", &self.root)
    }
}

/// A teammate runtime `name` of team `t` whose agent appends every `note-N` of its prompt to
/// `out`, its output in `log`.
fn runtime(env: &Env, disk: &SmallDisk, name: &str, out: &Path) -> (Child, PathBuf) {
    let log = env.path(&format!("{name}.log"));
    let script = format!(
        "printf '%s\\n' \"$1\" | grep -o 'note-[0-9]*' >> '{}'",
        out.display()
    );
    let mut cmd = crate::teammate::teammate_cmd(env, name, &["--", "sh", "-c", &script, "sh"])
        .env("SWARM_ROOT", &disk.root);
    let file = File::create(&log).unwrap();
    cmd.cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    let child = cmd.cmd.spawn().unwrap();
    // Started in full: its events record is the last thing a runtime writes as it starts (its
    // lock comes before its other records, and a start that meets a full disk fails).
    eventually(LONG, &format!("{name} to finish starting"), || {
        let status = disk.swarm(env, &["--json", "status"]).ok().json();
        let m = member(&status, name);
        (m["liveness"] == "alive" && m["events"].is_string()).then_some(())
    });
    (child, log)
}

fn notes(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn stop(child: &Child, signal: i32) {
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// A runtime that meets a full disk as it takes a message in keeps running, says so, acts on
/// nothing it cannot first remember acting on, and acts on the message exactly once when space
/// comes back. Then a message it acted on, put back unread as a crash before the inbox was
/// marked leaves it, is not acted on again by the runtime started after it was killed.
#[test]
fn a_full_disk_neither_kills_a_runtime_nor_makes_it_act_twice() {
    let env = Env::new();
    let disk = SmallDisk::new(&env);
    disk.swarm(&env, &["team", "create", "t"]).ok();
    disk.swarm(&env, &["team", "add", "a"]).ok();
    disk.swarm(&env, &["team", "add", "b"]).ok();
    let out = env.path("acted-on");
    let (mut a, log) = runtime(&env, &disk, "a", &out);

    // Stopped, it takes the message in only once the disk is full.
    stop(&a, libc::SIGSTOP);
    disk.swarm(&env, &["send", "--to", "a", "please note-1"])
        .env("SWARM_AGENT_NAME", "b")
        .ok();
    disk.fill();
    stop(&a, libc::SIGCONT);
    eventually(LONG, "a to meet the full disk", || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("No space left on device")
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        a.try_wait().unwrap().is_none(),
        "a exited on the full disk:\n{}",
        read(&log)
    );
    disk.free();
    let acted = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        !notes(&out).is_empty()
    });
    assert!(
        acted,
        "a never acted on the message once space came back:\n{}",
        read(&log)
    );
    eventually(LONG, "the message marked delivered", || {
        let inbox: Vec<Value> =
            serde_json::from_slice(&std::fs::read(disk.root.join("teams/t/inboxes/a.json")).ok()?)
                .ok()?;
        inbox.iter().all(|m| m["read"] == true).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(notes(&out), ["note-1"], "acted on once:\n{}", read(&log));

    // A crash between acting and marking: the message is unread again, the runtime is gone.
    stop(&a, libc::SIGKILL);
    a.wait().unwrap();
    let inbox_path = disk.root.join("teams/t/inboxes/a.json");
    let mut inbox: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&inbox_path).unwrap()).unwrap();
    for m in &mut inbox {
        m["read"] = Value::Bool(false);
    }
    std::fs::write(&inbox_path, serde_json::to_vec(&inbox).unwrap()).unwrap();
    let (mut again, log) = runtime(&env, &disk, "a", &out);
    eventually(LONG, "the restarted runtime to pass the message by", || {
        read(&log).contains("it was acted on already").then_some(())
    });
    // It still works: a new message is acted on.
    disk.swarm(&env, &["send", "--to", "a", "and note-2"])
        .env("SWARM_AGENT_NAME", "b")
        .ok();
    eventually(LONG, "the new message acted on", || {
        (notes(&out).len() == 2).then_some(())
    });
    assert_eq!(notes(&out), ["note-1", "note-2"]);
    stop(&again, libc::SIGTERM);
    let _ = again.wait();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The in-process launcher supervises on through a full disk: a teammate that dies while no
/// roster write can be made is reaped, the launcher says it could not record it and goes on,
/// and records it (retired) once space comes back; then Ctrl-C still shuts the team down.
#[test]
fn a_full_disk_does_not_end_the_in_process_launcher() {
    let env = Env::new();
    let disk = SmallDisk::new(&env);
    let file = env.path("team.json");
    std::fs::write(
        &file,
        serde_json::json!({"team": "t", "agent": "shell",
            "teammates": [{"name": "a"}, {"name": "b"}]})
        .to_string(),
    )
    .unwrap();
    let mut launcher = disk
        .swarm(
            &env,
            &["launch", file.to_str().unwrap(), "--backend", "in-process"],
        )
        .live();
    let pid_of = |name: &str| {
        eventually(LONG, &format!("{name} running"), || {
            let out = disk.swarm(&env, &["--json", "status"]).run();
            let status: Value = serde_json::from_str(&out.stdout).ok()?;
            let alive = status["members"]
                .as_array()?
                .iter()
                .any(|m| m["name"] == name && m["liveness"] == "alive" && m["events"].is_string());
            let config = read_json(&disk.root.join("teams/t/config.json"));
            alive.then(|| member(&config, name)["swarmPid"].as_i64())?
        })
    };
    let b = pid_of("b");
    pid_of("a");
    disk.fill();
    // SAFETY: killing the teammate's process group the launcher started.
    unsafe { libc::kill(-(b as i32), libc::SIGKILL) };
    launcher.expect("b: killed by signal 9");
    launcher.expect("could not record what happened");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        launcher.child.try_wait().unwrap().is_none(),
        "the launcher ended on the full disk:\n{}",
        launcher.seen.join("\n")
    );
    disk.free();
    launcher.expect("b: marked inactive");
    let config = read_json(&disk.root.join("teams/t/config.json"));
    assert!(member(&config, "b")["swarmRetiredAt"].is_u64(), "{config}");
    // SAFETY: signalling the launcher this test started.
    unsafe { libc::kill(launcher.child.id() as i32, libc::SIGINT) };
    launcher.expect("a: approved the shutdown");
    // Exit 1: one of its teammates died (b, killed), which the launcher reports as a failure.
    let code = launcher.wait(Duration::from_secs(60));
    assert_eq!(code, Some(1), "{}", launcher.seen.join("\n"));
}
