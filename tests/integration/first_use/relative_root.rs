//! Item 1: a relative `--root` to a directory that does not exist yet is one root for the
//! launcher and its teammates (one lead key, so the lead's `$ ` commands are believed), and the
//! hints the launch prints carry `--root`.

use std::path::PathBuf;

use super::*;

#[test]
fn a_relative_root_that_does_not_exist_yet_keeps_the_leads_commands_believed() {
    let env = Env::new();
    let tmux = Tmux::new();
    let cwd = env.path("here");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(env.path("home")).unwrap();
    let out = fresh(
        &env,
        &tmux,
        [
            "launch",
            "--root",
            "rel-root",
            "--team",
            "rr",
            "--agent",
            "shell",
            "--no-lead-pane",
            "--teammate",
            "a=$ pwd",
        ],
    )
    .current_dir(&cwd)
    .ok();
    let root: PathBuf = std::fs::canonicalize(cwd.join("rel-root")).unwrap();
    fresh(
        &env,
        &tmux,
        [
            "--root",
            "rel-root",
            "--team",
            "rr",
            "send",
            "--to",
            "a",
            "$ echo second",
        ],
    )
    .current_dir(&cwd)
    .ok();
    // Both commands ran and answered the lead: the teammate believed them.
    let lead_inbox = root.join("teams/rr/inboxes/team-lead.json");
    eventually(LONG, "both commands' output in the lead's inbox", || {
        let text = std::fs::read_to_string(&lead_inbox).ok()?;
        (text.contains(&cwd.display().to_string()) && text.contains("second")).then_some(())
    });
    let screen = screens(&tmux);
    assert!(!screen.contains("forged"), "{screen}");
    let flags = format!("--root {} --team rr", root.display());
    assert!(
        out.stdout.contains(&format!("`swarm attach {flags}`"))
            && out.stdout.contains(&format!("`swarm status {flags}`"))
            && out.stdout.contains(&format!("`swarm down {flags}`")),
        "the hints name the root: {}",
        out.stdout
    );
}
