//! `swarm completions` and `swarm man`: the scripts a shell sources and the pages `man` reads,
//! tried in the real bash and the real man. Team and member names complete from the store the
//! command line names (or `$SWARM_ROOT`), through the binary the script calls back.

use std::process::Command;

use crate::support::*;

/// Runs `script` in bash with this env's root, after sourcing swarm's completions.
fn bash_with_completions(env: &Env, script: &str) -> Out {
    let full = format!(
        "source <({} completions bash) || exit 9\n{script}",
        quote(BIN)
    );
    let mut bash = clean_command("bash");
    home_in(&mut bash, &env.root().join("state"));
    let out = bash
        .args(["-c", &full])
        .env("SWARM_ROOT", env.root())
        .output()
        .expect("bash is installed");
    Out::from(out)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What pressing TAB after `words` (the last one being completed) offers, as bash sees it.
fn tab(env: &Env, words: &[&str]) -> Vec<String> {
    let array: Vec<String> = words.iter().map(|w| quote(w)).collect();
    let script = format!(
        "COMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_TYPE=9\n_clap_complete_swarm swarm {} {}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        array.join(" "),
        words.len() - 1,
        quote(words[words.len() - 1]),
        quote(words[words.len().saturating_sub(2)]),
    );
    let out = bash_with_completions(env, &script);
    assert_eq!(out.code, 0, "bash: {}", out.stderr);
    out.stdout.lines().map(|l| l.trim().to_string()).collect()
}

#[test]
fn the_bash_script_registers_swarm() {
    let env = Env::new();
    let out = bash_with_completions(&env, "complete -p swarm");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("-F _clap_complete_swarm swarm"),
        "{}",
        out.stdout
    );
}

#[test]
fn team_and_member_names_complete_from_the_store() {
    let env = Env::new();
    for team in ["alpha", "beta"] {
        env.swarm(["team", "create", team]).ok();
    }
    env.swarm(["--team", "alpha", "team", "add", "coder"]).ok();
    env.swarm(["--team", "beta", "team", "add", "critic"]).ok();

    assert_eq!(tab(&env, &["swarm", "--team", "al"]), ["alpha"]);
    let teams = tab(&env, &["swarm", "status", "--team", ""]);
    assert!(
        teams.contains(&"alpha".into()) && teams.contains(&"beta".into()),
        "{teams:?}"
    );
    // Members of the team named on the line, not of the others.
    assert_eq!(
        tab(&env, &["swarm", "--team", "alpha", "attach", "c"]),
        ["coder"]
    );
    assert_eq!(
        tab(&env, &["swarm", "--team", "beta", "send", "--to", "c"]),
        ["critic"]
    );
    // Another root on the line is the one asked.
    let other = Env::new();
    other.swarm(["team", "create", "gamma"]).ok();
    let root = other.root().to_str().unwrap();
    assert_eq!(
        tab(&env, &["swarm", "--root", root, "--team", ""]),
        ["gamma"]
    );
}

#[test]
fn every_shell_gets_a_script_and_an_unknown_one_is_refused() {
    let env = Env::new();
    for (shell, marker) in [
        ("bash", "complete -o nospace"),
        ("zsh", "compdef"),
        ("fish", "complete --keep-order --exclusive --command swarm"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "set edit:completion:arg-completer[swarm]"),
    ] {
        let out = env.swarm(["completions", shell]).ok();
        assert!(out.stdout.contains(marker), "{shell}: {}", out.stdout);
        assert!(out.stdout.contains(BIN), "{shell} calls this binary back");
    }
    env.swarm(["completions", "tcsh"])
        .refused("invalid value 'tcsh'");
}

#[test]
fn man_pages_render_with_man() {
    let env = Env::new();
    let page = env.swarm(["man"]).ok().stdout;
    assert!(
        page.starts_with(".ie") || page.contains(".TH swarm 1"),
        "{page}"
    );

    let dir = env.path("man1");
    let out = env
        .swarm(["--json", "man", "--dir", dir.to_str().unwrap()])
        .ok();
    let written: Vec<String> = serde_json::from_str(&out.stdout).unwrap();
    for name in [
        "swarm.1",
        "swarm-top.1",
        "swarm-team-create.1",
        "swarm-completions.1",
    ] {
        assert!(
            written.iter().any(|w| w.ends_with(&format!("/{name}"))),
            "{name} not in {written:?}"
        );
    }
    assert!(
        !written.iter().any(|w| w.contains("swarm-debug")),
        "hidden commands get no page: {written:?}"
    );
    let render = |page: &str| {
        let out = Command::new("man")
            .args(["-l", dir.join(page).to_str().unwrap()])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .expect("man is installed (scripts/test installs man-db)");
        assert!(
            out.status.success(),
            "man -l {page}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let swarm = render("swarm.1");
    assert!(
        swarm.contains("SYNOPSIS") && swarm.contains("top"),
        "{swarm}"
    );
    let create = render("swarm-team-create.1");
    assert!(create.contains("swarm-team-create"), "{create}");
    assert!(create.contains("Team name"), "{create}");

    std::fs::write(env.path("a-file"), "").unwrap();
    env.swarm(["man", "--dir", env.path("a-file").to_str().unwrap()])
        .refused("is not a directory");
}
