//! swarm signals only what it started (issue 9, "a recorded pid is trusted blindly"): a roster
//! entry whose `swarmPid` is 1, a recycled pid (a live process recorded with another start
//! time) or a pid recorded without a start time is never signalled by `swarm kill`, `swarm
//! shutdown` or a plain `swarm lead` reaping a member whose liveness lock is free. Each case
//! uses a harmless `sleep` in its own process group and asserts it is alive before and after;
//! the pid-1 case runs inside a PID namespace of its own, so even a regression could not signal
//! anything outside it.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

const LONG: Duration = Duration::from_secs(30);

/// A `sleep 300` leading its own process group (the shape of a teammate swarm started).
struct Bystander(Child);

/// The spawn token a stand-in for a process swarm started carries (`SWARM_SPAWN_TOKEN`).
const TOKEN: &str = "stand-in-token";

impl Bystander {
    fn start() -> Bystander {
        Bystander::spawn(&mut Command::new("sleep"))
    }

    /// A stand-in for `x`'s process as a launch leaves it: the spawn token in its environment
    /// and swarm's own record of it (`swarm debug record-spawn`), besides the roster's.
    fn started_by_swarm(env: &Env) -> Bystander {
        let b = Bystander::spawn(Command::new("sleep").env("SWARM_SPAWN_TOKEN", TOKEN));
        let pid = b.pid().to_string();
        env.swarm([
            "debug",
            "record-spawn",
            "--name",
            "x",
            "--pid",
            &pid,
            "--token",
            TOKEN,
        ])
        .ok();
        record(env, json!(b.pid()), json!(b.start_time()));
        b
    }

    fn spawn(sleep: &mut Command) -> Bystander {
        let child = sleep.arg("300").process_group(0).spawn().unwrap();
        let mut b = Bystander(child);
        assert!(b.alive(), "the bystander runs");
        b
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Its start time as `/proc/<pid>/stat` says (clock ticks since boot).
    fn start_time(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        rest.split_whitespace().nth(19).unwrap().parse().unwrap()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sets `x`'s recorded pid fields (`null` removes one) and marks it active again.
fn record(env: &Env, pid: Value, start: Value) {
    let path = env.path("teams/t/config.json");
    let mut config = read_json(&path);
    let x = config["members"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|m| m["name"] == "x")
        .unwrap();
    let fields = x.as_object_mut().unwrap();
    for (key, value) in [("swarmPid", pid), ("swarmPidStart", start)] {
        if value.is_null() {
            fields.remove(key);
        } else {
            fields.insert(key.into(), value);
        }
    }
    fields.insert("isActive".into(), json!(true));
    // Not retired any more: the next command finds it as a launch left it.
    fields.remove("swarmRetiredAt");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
}

/// A liveness lock that a runtime held once and let go (what a dead teammate leaves).
fn free_lock(env: &Env) {
    std::fs::create_dir_all(env.path("teams/t/alive")).unwrap();
    std::fs::write(env.path("teams/t/alive/x.lock"), "1\n").unwrap();
}

/// `swarm kill x`, `swarm shutdown x` and `swarm lead` with `x`'s record as it is: none may
/// signal the bystander. A record that may name a live teammate but cannot be checked is
/// `reported` (and the command fails); one whose process is gone (recycled pid) is just gone.
fn nothing_is_signalled(env: &Env, bystander: &mut Bystander, case: &str, reported: bool) {
    let code = if reported { 1 } else { 0 };
    let out = env.swarm(["kill", "x"]).context(case).code(code);
    if reported {
        out.stderr_has("did not signal x's process");
    } else {
        assert_eq!(out.stdout, "x was not running; marked inactive\n", "{case}");
    }
    assert!(bystander.alive(), "{case}: swarm kill signalled it");

    let (pid, start) = {
        let config = read_json(&env.path("teams/t/config.json"));
        let x = member(&config, "x");
        (x["swarmPid"].clone(), x["swarmPidStart"].clone())
    };
    record(env, pid.clone(), start.clone());
    let out = env
        .swarm(["shutdown", "x", "--timeout", "1"])
        .context(case)
        .code(code);
    if reported {
        out.stderr_has("did not signal x's process");
    }
    assert!(bystander.alive(), "{case}: swarm shutdown signalled it");

    record(env, pid, start);
    free_lock(env);
    let mut lead = env.swarm(["lead", "--exit-when-done"]).live();
    lead.expect("x stopped without saying goodbye");
    if reported {
        lead.expect("did not signal x's process");
    }
    assert_eq!(
        lead.wait(Duration::from_secs(20)),
        Some(0),
        "{:?}",
        lead.seen
    );
    assert!(bystander.alive(), "{case}: swarm lead signalled it");
}

#[test]
fn a_recycled_pid_or_one_without_a_start_time_is_never_signalled() {
    let env = Env::with_team(&["x"]);
    let mut bystander = Bystander::start();
    let pid = json!(bystander.pid());
    record(&env, pid.clone(), json!(bystander.start_time() + 1));
    nothing_is_signalled(&env, &mut bystander, "wrong start time", false);
    record(&env, pid.clone(), Value::Null);
    nothing_is_signalled(&env, &mut bystander, "no start time", true);

    // The control: a process swarm started (its token, its record in swarm's own state, and no
    // dead runtime's lock) is stopped.
    std::fs::remove_file(env.path("teams/t/alive/x.lock")).unwrap();
    let mut started = Bystander::started_by_swarm(&env);
    let out = env.swarm(["kill", "x"]).ok();
    assert!(out.stdout.contains("killed x"), "{}", out.stdout);
    assert!(!started.alive(), "a process swarm started is signalled");
    assert!(bystander.alive(), "the other one was never touched");
}

/// Issue 22 item 4: a roster entry naming a live process group leader with its true start time
/// (anyone can read it in `/proc/PID/stat`) is a forgery swarm cannot tell from the roster
/// alone, so it signals only what its own records say it started: none of `kill`, `shutdown
/// --force`, `down --force` or `team delete --force` touches the process, and each says it
/// found no process swarm started; nor does a `swarm lead` that reaps the member.
#[test]
fn a_forged_roster_pid_with_its_true_start_time_is_never_signalled() {
    let env = Env::with_team(&["x"]);
    let mut bystander = Bystander::start();
    let forge = |env: &Env, b: &Bystander| record(env, json!(b.pid()), json!(b.start_time()));
    let said = "found no process it started";
    // A `swarm lead` reaping x (its runtime's liveness lock free).
    forge(&env, &bystander);
    free_lock(&env);
    let mut lead = env.swarm(["lead", "--exit-when-done"]).live();
    lead.expect("x stopped without saying goodbye");
    assert_eq!(lead.wait(LONG), Some(0), "{:?}", lead.seen);
    assert!(bystander.alive(), "swarm lead signalled it");
    lead.expect(said);
    std::fs::remove_file(env.path("teams/t/alive/x.lock")).unwrap();

    forge(&env, &bystander);
    let out = env.swarm(["kill", "x"]).code(1);
    out.stderr_has(said);
    assert!(bystander.alive(), "swarm kill signalled it");

    forge(&env, &bystander);
    let out = env
        .swarm(["shutdown", "x", "--force", "--timeout", "1"])
        .code(1);
    assert!(
        out.stdout.contains(said) || out.stderr.contains(said),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(bystander.alive(), "swarm shutdown --force signalled it");

    forge(&env, &bystander);
    let out = env.swarm(["down", "--force", "--timeout", "1"]).run();
    assert!(
        out.stdout.contains(said) || out.stderr.contains(said),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(bystander.alive(), "swarm down --force signalled it");

    forge(&env, &bystander);
    let out = env.swarm(["team", "delete", "t", "--force"]).run();
    assert!(
        out.stdout.contains(said) || out.stderr.contains(said),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(bystander.alive(), "swarm team delete --force signalled it");
}

/// The other half: a teammate swarm really launched (in-process, its spawn token in its
/// environment and swarm's record of it) is still stopped by `swarm kill` from another shell.
#[test]
fn swarm_kill_still_stops_a_teammate_swarm_launched() {
    let env = Env::new();
    let mut launcher = env
        .swarm([
            "launch",
            "--backend",
            "in-process",
            "--agent",
            "shell",
            "--teammate",
            "a=hi",
        ])
        .live();
    let roster = env.path("teams/t/config.json");
    let pid = eventually(LONG, "a's process in the roster", || {
        let config: Value = serde_json::from_slice(&std::fs::read(&roster).ok()?).ok()?;
        let a = config["members"]
            .as_array()?
            .iter()
            .find(|m| m["name"] == "a")?;
        a["swarmPid"].as_u64()
    }) as i32;
    assert!(!gone(pid), "a runs");
    // Read until it shows: the process becomes the next step of the sandbox (`exec`), and the
    // kernel shows its environment empty for that moment (a CI run read it then).
    eventually(LONG, "swarm's spawn token in a's environment", || {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        String::from_utf8_lossy(&environ)
            .contains("SWARM_SPAWN_TOKEN=")
            .then_some(())
    });
    let out = env.swarm(["kill", "a"]).ok();
    assert!(out.stdout.contains("killed a"), "{}", out.stdout);
    eventually(LONG, "a's process to be gone", || gone(pid).then_some(()));
    launcher.wait(LONG);
}

/// Whether this machine lets us make a PID namespace (root, or user namespaces allowed).
fn pid_namespaces_work() -> bool {
    Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn pid_1_in_the_roster_is_never_signalled() {
    // Outside a namespace kill(-1) would reach every process of the user: never risk it, and
    // never skip silently either (CI runs as root, where namespaces work).
    assert!(
        pid_namespaces_work(),
        "`unshare --pid --fork --mount-proc` does not work here; run the suite as root \
         (or where user namespaces are allowed)"
    );
    let env = Env::with_team(&["x"]);
    for (case, start) in [("with a start time", json!(1)), ("without", Value::Null)] {
        record(&env, json!(1), start.clone());
        // Inside the namespace the bystander is the shell's child; kill(-1) there would end it.
        let script = format!(
            r#"sleep 300 & b=$!
kill -0 $b || exit 90
"$swarm" kill x; echo "kill=$?"
{record}
"$swarm" shutdown x --timeout 1; echo "shutdown=$?"
{record}
printf '1\n' > "$SWARM_ROOT/teams/t/alive/x.lock"
timeout 20 "$swarm" lead --exit-when-done < /dev/null; echo "lead=$?"
kill -0 $b && echo "bystander survived"
kill $b"#,
            record = "cp \"$SWARM_ROOT/x.json\" \"$SWARM_ROOT/teams/t/config.json\"",
        );
        std::fs::create_dir_all(env.path("teams/t/alive")).unwrap();
        std::fs::copy(env.path("teams/t/config.json"), env.path("x.json")).unwrap();
        let mut cmd = env.command("unshare");
        cmd.args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
            .env("swarm", BIN)
            .process_group(0);
        let out = Out::from(cmd.output().unwrap());
        assert!(
            out.stdout.contains("bystander survived"),
            "{case}:\n{}\n{}",
            out.stdout,
            out.stderr
        );
        // swarm's own records name no process for x. A roster pid 1 that may be running (no
        // start time to judge it by) is reported and the command fails; one whose start time
        // says it is not running now is just not running.
        let code = if start.is_null() { 1 } else { 0 };
        assert!(
            out.stdout.contains(&format!("kill={code}")),
            "{case}: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains(&format!("shutdown={code}")),
            "{case}: {}",
            out.stdout
        );
        assert!(out.stdout.contains("lead=0"), "{case}: {}", out.stdout);
        if start.is_null() {
            out.stderr_has("did not signal x's process (pid 1)");
        }
    }
}
