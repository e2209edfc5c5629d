//! The README's "Everyday use" block, run as written from the repository's root, top to
//! bottom, each line in a terminal (`script`), on a private tmux server and a temp root.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

/// The block as the README shows it (keep the two the same).
pub const EVERYDAY_USE: &str = "\
swarm launch examples/shell.json   # a lead console pane plus one pane per teammate (no model needed)
swarm status                       # who is running, what they work on, unread, permissions
swarm attach                       # watch the panes (Ctrl-b d comes back)
swarm task list                    # the shared task list
swarm shutdown --all               # the shutdown handshake, then the teammates' panes close
swarm up examples/shell.json       # bring the team back: starts who is not running, seeds no task twice
swarm down                         # stop everyone, close the lead console and the session; files stay
";

#[test]
fn the_everyday_use_block_of_the_readme_works_as_written() {
    let env = Env::new();
    let tmux = Tmux::new();
    let repo = env!("CARGO_MANIFEST_DIR");
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut outputs = Vec::new();
    for line in EVERYDAY_USE.lines() {
        let command = line.split(" #").next().unwrap().trim();
        let mut child = clean_command("script")
            .args(["-qec", command, "/dev/null"])
            .current_dir(repo)
            .env("PATH", &path)
            .env("SWARM_ROOT", env.root())
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
            .env("XDG_STATE_HOME", env.path("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script (util-linux) is installed");
        let stdout = drain(child.stdout.take());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if command == "swarm attach" {
                // A person would press Ctrl-b d; the test detaches the client from tmux's side.
                let clients = tmux.cmd(["list-clients", "-F", "#{client_name}"]).stdout;
                if let Some(client) = clients.lines().next() {
                    tmux.cmd(["detach-client", "-t", client]);
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "`{command}` did not finish"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let out = stdout.join().unwrap();
        assert!(status.success(), "`{command}` failed ({status}):\n{out}");
        outputs.push((command, out));
    }
    let said = |cmd: &str| &outputs.iter().find(|(c, _)| *c == cmd).unwrap().1;
    assert!(
        said("swarm status").contains("counter"),
        "{}",
        said("swarm status")
    );
    assert!(
        said("swarm task list").contains("Report"),
        "{}",
        said("swarm task list")
    );
    assert!(
        said("swarm up examples/shell.json")
            .contains("3 tasks of the plan are already in the list"),
        "{}",
        said("swarm up examples/shell.json")
    );
    assert!(
        said("swarm down").contains("team hello is down"),
        "{}",
        said("swarm down")
    );
    let tasks = env
        .swarm(["--json", "--team", "hello", "task", "list"])
        .ok()
        .json();
    assert_eq!(tasks.as_array().unwrap().len(), 3, "{tasks}");
    assert!(
        !tmux.cmd(["list-sessions"]).stderr.is_empty(),
        "the session is closed"
    );
}
