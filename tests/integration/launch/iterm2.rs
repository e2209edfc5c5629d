//! iTerm2 panes through a fake `it2`: the exact split, run and close calls, and `swarm
//! pane-exec` (what iTerm2 runs in the new pane) turning into the teammate.

use super::{fake_agent, lines, write_script};
use crate::support::*;

#[test]
fn a_fake_it2_sees_split_run_and_close_and_pane_exec_becomes_the_teammate() {
    let env = Env::new();
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path("it2.log");
    write_script(
        &bin.join("it2"),
        &format!(
            r#"#!/bin/sh
for a in "$@"; do printf '[%s]' "$a"; done >> '{log}'
echo >> '{log}'
case "$1 $2" in
  "session split") n=$(grep -c 'split' '{log}'); echo "Created new pane: SESSION-$n" ;;
esac
exit 0
"#,
            log = log.display()
        ),
    );
    let agent = fake_agent(&env, "exit 0");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let iterm = |args: &[&str]| {
        env.swarm(args)
            .env("PATH", &path)
            .env("TERM_PROGRAM", "iTerm.app")
            .env("ITERM_SESSION_ID", "w0t1p0:LEAD-UUID")
            .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    };
    // The fake it2 runs nothing in its panes: nothing could come up to wait for.
    let out = iterm(&[
        "launch",
        "--no-wait",
        "--teammate",
        "coder=go",
        "--teammate",
        "tester=go",
    ])
    .ok();
    out.stderr_has("running inside iTerm2 with a working it2");
    let spec = env.path("teams/t/spawn/coder.json");
    let calls = lines(&log);
    assert_eq!(
        calls,
        [
            "[--version]".to_string(),
            "[session][split][-v][-s][LEAD-UUID]".into(),
            format!(
                "[session][run][-s][SESSION-1]['{BIN}' pane-exec '{}']",
                spec.display()
            ),
            "[session][split][-h][-s][SESSION-1]".into(),
            format!(
                "[session][run][-s][SESSION-2]['{BIN}' pane-exec '{}']",
                env.path("teams/t/spawn/tester.json").display()
            ),
        ]
    );
    let config = read_json(&env.path("teams/t/config.json"));
    assert_eq!(member(&config, "coder")["tmuxPaneId"], "SESSION-1");
    assert_eq!(member(&config, "coder")["backendType"], "iterm2");

    // What iTerm2 would run: pane-exec reads the spec, deletes it, records the pid, execs.
    let mut pane = clean_command(BIN);
    home_in(&mut pane, &env.path("state"));
    let done = pane
        .args(["pane-exec", spec.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(done.success());
    assert!(
        !spec.exists(),
        "the spec (it holds env) is deleted once read"
    );
    assert_eq!(lines(&env.path("out/coder.argv"))[1], "coder@t");
    assert!(lines(&env.path("out/coder.env")).contains(&"CLAUDECODE=1".to_string()));
    let config = read_json(&env.path("teams/t/config.json"));
    assert!(member(&config, "coder")["swarmPid"].as_u64().is_some());

    iterm(&["kill", "coder"]).ok();
    assert_eq!(
        lines(&log).last().unwrap(),
        "[session][close][-f][-s][SESSION-1]"
    );

    // --backend iterm2 without it2 is refused before anything is written.
    env.swarm([
        "--team",
        "x",
        "launch",
        "--backend",
        "iterm2",
        "--teammate",
        "a=go",
    ])
    .env("PATH", "/usr/bin:/bin")
    .env("ITERM_SESSION_ID", "w0t1p0:LEAD-UUID")
    .env("CLAUDE_CODE_TEAMMATE_COMMAND", &agent)
    .refused("it2 command is missing");
}
