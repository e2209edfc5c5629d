//! Team memory through the CLI (`swarm memory`): Claude Code's layout and project key, the
//! two-step write raced by OS processes and cut between its steps, and every unsafe name
//! refused with nothing written.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::*;

/// Claude Code's project key for a short path of Basic Multilingual Plane characters (the
/// whole rule, hash suffix included, is unit-tested in `src/store/memory/key.rs` and checked
/// against the real binary in `interop/memory.rs`).
fn key(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A team `t` created in `<root>/<dir>` (its lead's `cwd`, as `swarm launch` records it).
fn team_in(dir: &str) -> (Env, PathBuf) {
    let env = Env::new();
    let project = env.path(dir);
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    env.swarm(["team", "create", "t"])
        .current_dir(&project)
        .ok();
    (env, project)
}

fn team_dir(env: &Env, project: &Path) -> PathBuf {
    env.path(&format!("projects/{}/memory/team", key(project)))
}

#[test]
fn memory_lives_where_claude_code_keeps_a_projects_team_memory() {
    let (env, project) = team_in("my proj.é_1");
    env.swarm([
        "memory",
        "write",
        "build",
        "cargo build --release",
        "--description",
        "how to build: release",
    ])
    .ok();
    env.swarm([
        "memory",
        "write",
        "ci/flaky",
        "-",
        "--description",
        "flaky tests",
    ])
    .stdin("retry t1 twice\n")
    .ok();
    let dir = team_dir(&env, &project);
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(
        index,
        "- [build](build.md) — how to build: release\n- [ci/flaky](ci/flaky.md) — flaky tests\n"
    );
    let topic = std::fs::read_to_string(dir.join("build.md")).unwrap();
    assert!(
        topic.starts_with("---\nname: \"build\"\ndescription: \"how to build: release\"\n"),
        "{topic}"
    );
    assert!(topic.ends_with("---\n\ncargo build --release\n"), "{topic}");

    let list = env.swarm(["--json", "memory", "list"]).ok().json();
    assert_eq!(list["dir"], dir.display().to_string());
    assert_eq!(list["project"], project.display().to_string());
    let names: Vec<&str> = list["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["build", "ci/flaky"]);
    assert_eq!(list["topics"][0]["writtenBy"], "team-lead");
    assert_eq!(list["topics"][1]["indexed"], true);
    let shown = env.swarm(["memory", "show", "ci/flaky"]).ok();
    assert_eq!(shown.stdout, "retry t1 twice\n");

    env.swarm(["memory", "delete", "build"]).ok();
    assert!(!dir.join("build.md").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        "- [ci/flaky](ci/flaky.md) — flaky tests\n"
    );
    env.swarm(["memory", "show", "build"])
        .not_found("team memory has no topic \"build\"");
}

#[test]
fn a_teammate_in_a_git_worktree_shares_its_main_repositorys_memory() {
    let (env, project) = team_in("repo");
    let git = |args: &[&str]| {
        let out = clean_command("git")
            .args(args)
            .current_dir(&project)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "init"]);
    git(&["worktree", "add", "-q", "../wt", "-b", "wt"]);
    let worktree = project.parent().unwrap().join("wt");
    // The roster records the teammate in its worktree, as `worktree: true` launches do.
    env.add_member("t", "coder");
    let roster = env.path("teams/t/config.json");
    let mut config = read_json(&roster);
    config["members"][1]["cwd"] = worktree.join("src").display().to_string().into();
    std::fs::create_dir_all(worktree.join("src")).unwrap();
    std::fs::write(&roster, config.to_string()).unwrap();

    let wrote = env
        .swarm([
            "--json",
            "memory",
            "write",
            "layout",
            "x",
            "--description",
            "d",
        ])
        .env("SWARM_AGENT_NAME", "coder")
        .ok()
        .json();
    let dir = team_dir(&env, &project);
    assert_eq!(wrote["file"], dir.join("layout.md").display().to_string());
    assert_eq!(wrote["writtenBy"], "coder");
    // The lead, in the main repository, sees it.
    let list = env.swarm(["--json", "memory", "list"]).ok().json();
    assert_eq!(list["topics"][0]["name"], "layout");
    let worktree = worktree.display().to_string();
    let by_dir = env
        .swarm(["--json", "memory", "list", "--project", &worktree])
        .ok()
        .json();
    assert_eq!(by_dir["dir"], dir.display().to_string());
}

/// `swarm memory write NAME` must be refused with `why`, and nothing written anywhere under the
/// root (the outside directory a link points to included).
#[track_caller]
fn refused_name(env: &Env, name: &str, why: &str) {
    env.swarm(["memory", "write", name, "text", "--description", "d"])
        .refused(why);
    env.swarm(["memory", "show", name]).refused(why);
}

/// A team whose memory directory exists, with `outside/` beside the store's files.
fn memory_with_one_topic() -> (Env, PathBuf) {
    let (env, project) = team_in("p");
    env.swarm(["memory", "write", "first", "x", "--description", "d"])
        .ok();
    std::fs::create_dir_all(env.path("outside")).unwrap();
    let dir = team_dir(&env, &project);
    (env, dir)
}

#[test]
fn a_url_encoded_traversal_is_refused() {
    let (env, _) = memory_with_one_topic();
    refused_name(
        &env,
        "%2e%2e%2f%2e%2e%2foutside/x",
        "URL-encoded path traversal",
    );
}

#[test]
fn a_full_width_look_alike_traversal_is_refused() {
    let (env, _) = memory_with_one_topic();
    refused_name(
        &env,
        "．．／．．／outside/x",
        "Unicode look-alike of path traversal",
    );
}

#[test]
fn a_backslash_is_refused() {
    let (env, _) = memory_with_one_topic();
    refused_name(&env, "..\\..\\outside\\x", "holds a backslash");
}

#[test]
fn a_dot_dot_escape_and_an_absolute_path_are_refused() {
    let (env, _) = memory_with_one_topic();
    refused_name(
        &env,
        "../../../../outside/x",
        "escapes the team memory directory",
    );
    let absolute = env.path("outside/x").display().to_string();
    refused_name(&env, &absolute, "is an absolute path");
}

#[test]
fn a_symlink_loop_is_refused() {
    let (env, dir) = memory_with_one_topic();
    std::os::unix::fs::symlink(dir.join("loop"), dir.join("loop")).unwrap();
    refused_name(&env, "loop/x", "is a symlink loop");
}

#[test]
fn a_dangling_symlink_is_refused() {
    let (env, dir) = memory_with_one_topic();
    std::os::unix::fs::symlink(env.path("outside/gone"), dir.join("gone")).unwrap();
    refused_name(&env, "gone/x", "is a dangling symlink");
    std::os::unix::fs::symlink(env.path("outside/gone.md"), dir.join("gone.md")).unwrap();
    refused_name(&env, "gone", "is a dangling symlink");
}

#[test]
fn a_name_that_leaves_through_a_symlinked_ancestor_is_refused() {
    let (env, dir) = memory_with_one_topic();
    std::os::unix::fs::symlink(env.path("outside"), dir.join("out")).unwrap();
    refused_name(
        &env,
        "out/notes/x",
        "escapes the team memory directory through a symlink",
    );
    assert_eq!(std::fs::read_dir(env.path("outside")).unwrap().count(), 0);
}

/// `writers` shell loops, each running `swarm memory write` for `per_writer` topics of its own
/// at the same time; returns the index lines afterwards and the topics written.
fn race(fault: Option<&str>, writers: usize, per_writer: usize) -> (Vec<String>, usize) {
    let (env, project) = team_in("race");
    let script = format!(
        "i=0; while [ $i -lt {per_writer} ]; do \"$SWARM\" memory write \"w$W-$i\" \"from $W\" \
         --description \"writer $W topic $i\" --project \"$PROJECT\" || exit 1; i=$((i+1)); done"
    );
    let children: Vec<_> = (0..writers)
        .map(|w| {
            let mut cmd = clean_command("sh");
            cmd.args(["-c", &script])
                .env("SWARM", BIN)
                .env("W", w.to_string())
                .env("PROJECT", &project)
                .env("SWARM_ROOT", env.root())
                .env("XDG_STATE_HOME", env.root().join("state"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Some(fault) = fault {
                cmd.env("SWARM_MEMORY_FAULT", fault);
            }
            cmd.spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = wait_bounded(child, std::time::Duration::from_secs(300), "a writer loop");
        assert_eq!(out.code, 0, "a writer failed: {}", out.stderr);
    }
    let dir = team_dir(&env, &project);
    let files = walk_md(&dir);
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    (index.lines().map(str::to_string).collect(), files)
}

fn walk_md(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".md"))
        .filter(|e| e.file_name() != "MEMORY.md")
        .count()
}

#[test]
fn sixteen_writers_at_once_lose_no_index_line() {
    // The negative control first: the same race without the lock (a plain read, add, write of
    // the index) must lose lines, or this harness could not see a loss at all.
    let mut lost_without_lock = None;
    for _ in 0..5 {
        let (lines, files) = race(Some("no-lock"), 16, 10);
        assert_eq!(files, 160);
        if lines.len() < files {
            eprintln!(
                "memory race: without the lock {} of {files} index lines were lost",
                files - lines.len()
            );
            lost_without_lock = Some(files - lines.len());
            break;
        }
    }
    assert!(
        lost_without_lock.is_some(),
        "five unlocked races of 16 writers lost no index line: the harness cannot see loss"
    );
    let (lines, files) = race(None, 16, 10);
    assert_eq!(files, 160);
    let mut expected: Vec<String> = (0..16)
        .flat_map(|w| {
            (0..10).map(move |i| format!("- [w{w}-{i}](w{w}-{i}.md) — writer {w} topic {i}"))
        })
        .collect();
    let mut got = lines.clone();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "index lines after the locked race");
}

#[test]
fn a_writer_that_dies_between_the_steps_leaves_a_topic_the_next_write_indexes() {
    let (env, project) = team_in("p");
    let dir = team_dir(&env, &project);
    env.swarm([
        "memory",
        "write",
        "first",
        "x",
        "--description",
        "first topic",
    ])
    .ok();
    env.swarm([
        "memory",
        "write",
        "orphan",
        "y",
        "--description",
        "left behind",
    ])
    .env("SWARM_MEMORY_FAULT", "exit-between-steps")
    .code(70);
    assert!(dir.join("orphan.md").is_file(), "step one ran");
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        "- [first](first.md) — first topic\n",
        "step two did not"
    );
    let list = env.swarm(["--json", "memory", "list"]).ok().json();
    assert_eq!(list["topics"][1]["name"], "orphan");
    assert_eq!(list["topics"][1]["indexed"], false);

    // The dead writer's lock directory is broken at once; the next write indexes the orphan.
    env.swarm([
        "memory",
        "write",
        "next",
        "z",
        "--description",
        "after the crash",
    ])
    .ok();
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        "- [first](first.md) — first topic\n- [next](next.md) — after the crash\n\
         - [orphan](orphan.md) — left behind\n"
    );
}

#[test]
fn status_and_top_show_the_topic_count_and_the_last_write() {
    let (env, project) = team_in("p");
    env.add_member("t", "coder");
    let status = env.swarm(["status"]).ok().stdout;
    assert!(status.contains("team memory: no topics\n"), "{status}");
    env.swarm(["memory", "write", "build", "x", "--description", "d"])
        .ok();
    // coder's roster cwd is `/`, another project: name this one.
    let dir = project.display().to_string();
    env.swarm([
        "memory",
        "write",
        "ci",
        "y",
        "--description",
        "d",
        "--from",
        "coder",
        "--project",
        &dir,
    ])
    .ok();
    let ci = env.swarm(["--json", "memory", "show", "ci"]).ok().json();
    let at = ci["writtenAt"].as_str().unwrap().to_string();
    let status = env.swarm(["status"]).ok().stdout;
    assert!(
        status.contains(&format!(
            "team memory: 2 topics, last written by coder at {at}\n"
        )),
        "{status}"
    );
    let json = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(json["memory"]["topics"], 2);
    assert_eq!(json["memory"]["lastWriteBy"], "coder");
    assert_eq!(json["memory"]["lastWriteAt"], at.as_str());
    assert_eq!(
        json["memory"]["dir"],
        team_dir(&env, &project).display().to_string()
    );
    // `swarm top` without a terminal prints the same figures as a line.
    let mut top = env.swarm(["top"]).live();
    top.expect(&format!(
        "team memory: 2 topics, last written by coder at {at}"
    ));
}
