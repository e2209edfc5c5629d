//! The team memory in a runtime teammate's prompts: the index and a two-line guide in its first
//! turn, the index again on a later turn once it changed, and nothing when it did not.

use super::{prompts, recorder, send, start, LONG};
use crate::support::*;

#[test]
fn the_first_turn_carries_the_memory_index_and_a_later_turn_its_change() {
    let env = Env::with_team(&["a"]);
    let project = env.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let project_arg = project.display().to_string();
    let memory = |name: &str, text: &str, line: &str| {
        env.swarm([
            "memory",
            "write",
            name,
            text,
            "--description",
            line,
            "--project",
            &project_arg,
        ])
        .ok();
    };
    memory("build", "cargo build", "how to build");
    let log = env.path("prompts.log");
    let mut args = vec!["--cwd".to_string(), project_arg.clone()];
    args.extend(recorder(&log, "echo ok"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let _mate = start(&env, "a", &args);

    send(&env, "a", "first");
    eventually(LONG, "the first prompt", || {
        (prompts(&log).len() == 1).then_some(())
    });
    let first = &prompts(&log)[0];
    assert!(
        first.contains(
            "Team memory, shared by every teammate working on this project; its index \
             (MEMORY.md) follows.\nRead a topic with `swarm memory show NAME`; add or replace \
             one with `swarm memory write NAME \"text\" --description \"one line\"`.\n\
             - [build](build.md) — how to build"
        ),
        "{first}"
    );

    memory("ci", "retry flaky t1", "flaky tests");
    send(&env, "a", "second");
    eventually(LONG, "the second prompt", || {
        (prompts(&log).len() == 2).then_some(())
    });
    let second = &prompts(&log)[1];
    assert!(
        second.contains(
            "The team memory changed since your last turn; its index (MEMORY.md) now reads:\n\
             - [build](build.md) — how to build\n- [ci](ci.md) — flaky tests"
        ),
        "{second}"
    );
    assert!(
        !second.contains("Read a topic with"),
        "the guide is for the first turn: {second}"
    );

    send(&env, "a", "third");
    eventually(LONG, "the third prompt", || {
        (prompts(&log).len() == 3).then_some(())
    });
    let third = &prompts(&log)[2];
    assert!(third.contains("third"), "{third}");
    assert!(
        !third.contains("team memory"),
        "unchanged memory is not repeated: {third}"
    );
}
