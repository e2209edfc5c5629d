//! The README's "Everyday use" block, run as written from the repository's root, top to
//! bottom, each line in a terminal (`script`), on a private tmux server and a temp root.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

/// The first `sh` block under the README's "## Everyday use", read from the README itself so
/// the test and the text cannot drift apart.
fn everyday_use() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let section = readme
        .split("\n## Everyday use\n")
        .nth(1)
        .expect("README.md has an \"## Everyday use\" section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the Everyday use section starts with a ```sh block");
    assert!(
        block.lines().count() >= 5 && block.lines().all(|l| l.starts_with("swarm ")),
        "unexpected Everyday use block:\n{block}"
    );
    block.to_string()
}

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
    let block = everyday_use();
    for line in block.lines() {
        let command = line.split(" #").next().unwrap().trim();
        let mut script = clean_command("script");
        home_in(&mut script, &env.path("state"));
        let mut child = script
            .args(["-qec", command, "/dev/null"])
            .current_dir(repo)
            .env("PATH", &path)
            .env("SWARM_ROOT", env.root())
            .env("SWARM_TMUX_SOCKET", &tmux.socket)
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
