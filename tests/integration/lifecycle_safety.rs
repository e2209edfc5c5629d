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

/// A `sleep 300` leading its own process group (the shape of a teammate swarm started).
struct Bystander(Child);

impl Bystander {
    fn start() -> Bystander {
        let child = Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .unwrap();
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
        out.stderr_has("did not signal x's recorded pid");
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
        out.stderr_has("did not signal x's recorded pid");
    }
    assert!(bystander.alive(), "{case}: swarm shutdown signalled it");

    record(env, pid, start);
    free_lock(env);
    let mut lead = env.swarm(["lead", "--exit-when-done"]).live();
    lead.expect("x stopped without saying goodbye");
    if reported {
        lead.expect("did not signal x's recorded pid");
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

    // The control: recorded as swarm records it (and no dead runtime's lock), the same process
    // is stopped.
    std::fs::remove_file(env.path("teams/t/alive/x.lock")).unwrap();
    record(&env, pid, json!(bystander.start_time()));
    let out = env.swarm(["kill", "x"]).ok();
    assert!(out.stdout.contains("killed x"), "{}", out.stdout);
    assert!(!bystander.alive(), "a true record is signalled");
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
        assert!(out.stdout.contains("kill=1"), "{case}: {}", out.stdout);
        assert!(out.stdout.contains("shutdown=1"), "{case}: {}", out.stdout);
        assert!(out.stdout.contains("lead=0"), "{case}: {}", out.stdout);
        out.stderr_has("did not signal x's recorded pid 1");
    }
}
