//! Item 3: the README says how to get `swarm` on PATH, before "Everyday use" (whose block calls
//! `swarm` by name), and the two commands at the top stay as they are. The install command's
//! `--locked` holds: the committed `Cargo.lock` is up to date with the manifest.

use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

#[test]
fn the_readme_says_how_to_install_swarm_before_everyday_use() {
    let readme = readme();
    let everyday = readme
        .find("\n## Everyday use\n")
        .expect("an Everyday use section");
    let install = readme.find("\n## Install\n").expect("an Install section");
    assert!(install < everyday, "Install comes before Everyday use");
    let section = &readme[install..everyday];
    assert!(
        section
            .lines()
            .any(|l| l.starts_with("cargo install --locked --path . ")),
        "{section}"
    );
    // The two commands at the top, as they were.
    let top = readme.split("```sh\n").nth(1).unwrap();
    let top: Vec<&str> = top.lines().take_while(|l| !l.starts_with("```")).collect();
    assert!(
        top.len() == 2
            && top[0].starts_with("cargo run -- demo ")
            && top[1].starts_with("scripts/test "),
        "{top:?}"
    );
    // `--locked` refuses a stale lock file; this one is not. (Not `--offline`: metadata resolves
    // every platform's dependencies, and a fresh machine has only this one's in its cache.)
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--locked", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
