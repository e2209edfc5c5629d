//! Fake `codex` and `gemini` binaries that accept exactly the real CLIs' flags (issue 25 item 5),
//! and the check that keeps them so.
//!
//! The session tests (`teammate/sessions.rs`) run a teammate whose agent CLI is one of these
//! fakes: a POSIX `sh` script that parses its argv with the real CLI's option table (which flags
//! exist, which take a value, which subcommand they belong to) and refuses anything else the way
//! the real one does, then plays the CLI's conversations: codex mints the session id and prints
//! it (`session id: <uuid>` on stderr, a `thread.started` event with `--json`) and `exec resume
//! ID` fails for an unknown id; gemini's `--session-id` fails for an id that exists and
//! `--resume` for one that does not. The tables are checked here against the `--help` of the
//! versions `versions.txt` pins, so they cannot drift from the installed CLIs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::versions;
use crate::support::*;

/// One option as `--help` lists it: long name, short name, whether it takes a value.
type Opt = (&'static str, Option<&'static str>, bool);

/// `codex --help` of codex-cli 0.171.0: the options before the subcommand.
const CODEX_TOP: &[Opt] = &[
    ("--config", Some("-c"), true),
    ("--enable", None, true),
    ("--disable", None, true),
    ("--remote", None, true),
    ("--remote-auth-token-env", None, true),
    ("--strict-config", None, false),
    ("--image", Some("-i"), true),
    ("--model", Some("-m"), true),
    ("--oss", None, false),
    ("--local-provider", None, true),
    ("--profile", Some("-p"), true),
    ("--sandbox", Some("-s"), true),
    ("--approve-for-me", None, false),
    ("--dangerously-bypass-approvals-and-sandbox", None, false),
    ("--dangerously-bypass-hook-trust", None, false),
    ("--cd", Some("-C"), true),
    ("--worktree", None, false),
    ("--add-dir", None, true),
    ("--ask-for-approval", Some("-a"), true),
    ("--search", None, false),
    ("--no-alt-screen", None, false),
    ("--no-daemon", None, false),
    ("--help", Some("-h"), false),
    ("--version", Some("-V"), false),
];

/// `codex exec --help`.
const CODEX_EXEC: &[Opt] = &[
    ("--config", Some("-c"), true),
    ("--enable", None, true),
    ("--disable", None, true),
    ("--remote", None, true),
    ("--remote-auth-token-env", None, true),
    ("--strict-config", None, false),
    ("--image", Some("-i"), true),
    ("--model", Some("-m"), true),
    ("--oss", None, false),
    ("--local-provider", None, true),
    ("--profile", Some("-p"), true),
    ("--sandbox", Some("-s"), true),
    ("--approve-for-me", None, false),
    ("--dangerously-bypass-approvals-and-sandbox", None, false),
    ("--dangerously-bypass-hook-trust", None, false),
    ("--cd", Some("-C"), true),
    ("--worktree", None, false),
    ("--add-dir", None, true),
    ("--thread-source", None, true),
    ("--cyber-access-program", None, true),
    ("--skip-git-repo-check", None, false),
    ("--trust", None, false),
    ("--ephemeral", None, false),
    ("--ignore-user-config", None, false),
    ("--ignore-rules", None, false),
    ("--output-schema", None, true),
    ("--color", None, true),
    ("--json", None, false),
    ("--output-last-message", Some("-o"), true),
    ("--help", Some("-h"), false),
    ("--version", Some("-V"), false),
];

/// `codex exec resume --help`.
const CODEX_RESUME: &[Opt] = &[
    ("--config", Some("-c"), true),
    ("--last", None, false),
    ("--all", None, false),
    ("--enable", None, true),
    ("--disable", None, true),
    ("--image", Some("-i"), true),
    ("--remote", None, true),
    ("--remote-auth-token-env", None, true),
    ("--strict-config", None, false),
    ("--model", Some("-m"), true),
    ("--dangerously-bypass-approvals-and-sandbox", None, false),
    ("--dangerously-bypass-hook-trust", None, false),
    ("--worktree", None, false),
    ("--thread-source", None, true),
    ("--cyber-access-program", None, true),
    ("--skip-git-repo-check", None, false),
    ("--trust", None, false),
    ("--ephemeral", None, false),
    ("--ignore-user-config", None, false),
    ("--ignore-rules", None, false),
    ("--output-schema", None, true),
    ("--json", None, false),
    ("--output-last-message", Some("-o"), true),
    ("--help", Some("-h"), false),
];

/// `gemini --help` of @google/gemini-cli 0.61.0 (yargs: `[string]` and `[array]` take a value).
const GEMINI: &[Opt] = &[
    ("--debug", Some("-d"), false),
    ("--model", Some("-m"), true),
    ("--prompt", Some("-p"), true),
    ("--prompt-interactive", Some("-i"), true),
    ("--skip-trust", None, false),
    ("--worktree", Some("-w"), true),
    ("--sandbox", Some("-s"), false),
    ("--yolo", Some("-y"), false),
    ("--approval-mode", None, true),
    ("--policy", None, true),
    ("--admin-policy", None, true),
    ("--acp", None, false),
    ("--experimental-acp", None, false),
    ("--allowed-mcp-server-names", None, true),
    ("--allowed-tools", None, true),
    ("--extensions", Some("-e"), true),
    ("--list-extensions", Some("-l"), false),
    ("--resume", Some("-r"), true),
    ("--session-file", None, true),
    ("--session-id", None, true),
    ("--list-sessions", None, false),
    ("--delete-session", None, true),
    ("--include-directories", None, true),
    ("--screen-reader", None, false),
    ("--output-format", Some("-o"), true),
    ("--raw-output", None, false),
    ("--accept-raw-output-risk", None, false),
    ("--version", Some("-v"), false),
    ("--help", Some("-h"), false),
];

/// `sh` case patterns for a table: every spelling of an option, and those that take a value.
fn patterns(table: &[Opt]) -> (String, String) {
    let mut all = Vec::new();
    let mut valued = Vec::new();
    for (long, short, value) in table {
        let names: Vec<&str> = std::iter::once(*long).chain(*short).collect();
        all.extend(names.iter().map(|n| n.to_string()));
        if *value {
            valued.extend(names.iter().map(|n| n.to_string()));
        }
    }
    (all.join("|"), valued.join("|"))
}

/// The option parser both fakes share: `opt MODE WORD` sets `$taken` to 1 when WORD is an
/// option of MODE (taking its value from `$next` if it needs one, else failing), 0 when WORD is
/// no option, and exits 2 for an option MODE does not have, as the real CLIs do.
fn parser(modes: &[(&str, &[Opt])]) -> String {
    let mut cases = String::new();
    for (mode, table) in modes {
        let (all, valued) = patterns(table);
        cases.push_str(&format!(
            "    {mode}) case \"$flag\" in {valued}) needs=1;; {all}) needs=0;; \
             *) echo \"error: unexpected argument '$2' found\" >&2; exit 2;; esac;;\n"
        ));
    }
    format!(
        r#"opt() {{
  taken=0; value=""
  case "$2" in -|[!-]*) return;; esac
  flag="${{2%%=*}}"
  case "$1" in
{cases}  esac
  taken=1
  if [ "$needs" = 1 ]; then
    case "$2" in *=*) value="${{2#*=}}"; return;; esac
    [ "$#" -ge 3 ] || {{ echo "error: a value is required for '$flag'" >&2; exit 2; }}
    value="$3"; taken=2
  fi
}}
"#
    )
}

fn write_fake(env: &Env, name: &str, body: &str) -> PathBuf {
    let dir = env.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(env.path(&format!("{name}-state"))).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A fake `codex` (codex-cli 0.171.0's options) in `env`'s `bin/`, keeping its conversations in
/// `codex-state/`: one file per session id, a line per turn; `argv.log` gets each run's mode and
/// session.
pub(crate) fn fake_codex(env: &Env) -> PathBuf {
    let state = env.path("codex-state");
    let body = format!(
        r#"#!/bin/sh
# A stand-in for codex-cli 0.171.0 that takes exactly its options (tests/integration/interop).
state='{state}'
{parser}mode=top; session=""; prompt=""; json=0; positional=0
while [ "$#" -gt 0 ]; do
  opt "$mode" "$@"
  if [ "$taken" -gt 0 ]; then
    [ "$flag" = --json ] && json=1
    shift "$taken"; continue
  fi
  case "$mode" in
    top) case "$1" in exec|e) mode=exec;; *) echo "fake codex: only exec is played, not $1" >&2; exit 2;; esac;;
    exec) if [ "$1" = resume ] && [ "$positional" = 0 ]; then mode=resume
          else prompt="$1"; positional=$((positional + 1)); fi;;
    resume) if [ -z "$session" ]; then session="$1"; else prompt="$1"; positional=$((positional + 1)); fi;;
  esac
  shift
done
[ "$mode" = top ] && {{ echo "fake codex: only exec is played" >&2; exit 2; }}
[ "$positional" -le 1 ] || {{ echo "error: unexpected argument '$prompt' found" >&2; exit 2; }}
if [ -z "$prompt" ] || [ "$prompt" = - ]; then prompt="$(cat)"; fi
if [ "$mode" = resume ]; then
  [ -f "$state/$session" ] || {{ echo "Error: thread/resume failed: no rollout found for thread id $session" >&2; exit 1; }}
else
  session="$(cat /proc/sys/kernel/random/uuid)"
fi
echo turn >> "$state/$session"
echo "$mode $session" >> "$state/argv.log"
printf 'OpenAI Codex v0.171.0\n--------\nworkdir: %s\nsession id: %s\n--------\n' "$PWD" "$session" >&2
[ "$json" = 1 ] && printf '{{"type":"thread.started","thread_id":"%s"}}\n' "$session"
echo "turn $(wc -l < "$state/$session") of conversation $session"
"#,
        state = state.display(),
        parser = parser(&[
            ("top", CODEX_TOP),
            ("exec", CODEX_EXEC),
            ("resume", CODEX_RESUME)
        ]),
    );
    write_fake(env, "codex", &body)
}

/// A fake `gemini` (@google/gemini-cli 0.61.0's options) in `env`'s `bin/`, headless only,
/// keeping its conversations in `gemini-state/` like [`fake_codex`].
pub(crate) fn fake_gemini(env: &Env) -> PathBuf {
    let state = env.path("gemini-state");
    let body = format!(
        r#"#!/bin/sh
# A stand-in for @google/gemini-cli 0.61.0 that takes exactly its options.
state='{state}'
{parser}prompt=""; new=""; resume=""; headless=0
while [ "$#" -gt 0 ]; do
  opt gemini "$@"
  case "$taken:$flag" in
    [12]:--prompt|[12]:-p) prompt="$value"; headless=1;;
    [12]:--session-id) new="$value";;
    [12]:--resume|[12]:-r) resume="$value";;
  esac
  if [ "$taken" -gt 0 ]; then shift "$taken"; else shift; fi
done
[ "$headless" = 1 ] || {{ echo "fake gemini: only -p (headless) is played" >&2; exit 2; }}
if [ -n "$new" ] && [ -n "$resume" ]; then
  echo "The flags --resume, --session-id, and --session-file are mutually exclusive. Please provide only one." >&2; exit 1
fi
if [ -n "$new" ]; then
  [ -f "$state/$new" ] && {{ echo "Error starting session: Session ID \"$new\" already exists. Use --resume to resume it, or provide a different ID." >&2; exit 42; }}
  session="$new"
elif [ -n "$resume" ]; then
  [ -f "$state/$resume" ] || {{ echo "Error resuming session: Invalid session identifier \"$resume\"" >&2; exit 42; }}
  session="$resume"
else
  session="$(cat /proc/sys/kernel/random/uuid)"
fi
echo turn >> "$state/$session"
echo "${{new:+new }}${{resume:+resume }}$session" >> "$state/argv.log"
echo "turn $(wc -l < "$state/$session") of conversation $session"
"#,
        state = state.display(),
        parser = parser(&[("gemini", GEMINI)]),
    );
    write_fake(env, "gemini", &body)
}

/// The options a clap `--help` lists: `-c, --config <key=value>`, `--json`.
fn clap_options(help: &str) -> Vec<(String, Option<String>, bool)> {
    help.lines()
        .filter_map(|line| {
            let head = line.strip_prefix("  ")?.trim_start();
            if !head.starts_with('-') {
                return None;
            }
            let head = head.split("  ").next()?;
            let (flags, value) = match head.split_once(' ') {
                Some((f, rest)) if f.ends_with(',') => {
                    let (long, value) = rest.split_once(' ').unwrap_or((rest, ""));
                    (format!("{f} {long}"), value.starts_with('<'))
                }
                Some((f, value)) => (f.to_string(), value.starts_with('<')),
                None => (head.to_string(), false),
            };
            let mut short = None;
            let mut long = None;
            for f in flags.split(", ") {
                if f.starts_with("--") {
                    long = Some(f.to_string());
                } else {
                    short = Some(f.to_string());
                }
            }
            Some((long?, short, value))
        })
        .collect()
}

/// The options a yargs `--help` lists: `-m, --model  Model  [string]`.
fn yargs_options(help: &str) -> Vec<(String, Option<String>, bool)> {
    help.lines()
        .filter_map(|line| {
            let head = line.trim_start();
            if !head.starts_with('-') {
                return None;
            }
            let flags = head.split("  ").next()?;
            let kind = line.split('[').nth(1)?.split(']').next()?;
            let mut short = None;
            let mut long = None;
            for f in flags.split(", ") {
                if f.starts_with("--") {
                    long = Some(f.to_string());
                } else {
                    short = Some(f.to_string());
                }
            }
            Some((long?, short, kind != "boolean"))
        })
        .collect()
}

fn owned(table: &[Opt]) -> Vec<(String, Option<String>, bool)> {
    table
        .iter()
        .map(|(l, s, v)| (l.to_string(), s.map(str::to_string), *v))
        .collect()
}

/// `bin ARGS --help`, run with a home of its own (and gemini not starting itself a second time
/// with a larger heap, which doubles its start-up).
fn help(bin: &Path, args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let out = clean_command(bin)
        .args(args)
        .arg("--help")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("GEMINI_CLI_NO_RELAUNCH", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && !text.is_empty(),
        "{bin:?} {args:?} --help: {out:?}"
    );
    text
}

#[test]
fn the_fakes_take_exactly_the_options_the_installed_codex_and_gemini_list() {
    let codex = versions::only("@openai/codex").bin;
    for (args, table) in [
        (&[][..], CODEX_TOP),
        (&["exec"][..], CODEX_EXEC),
        (&["exec", "resume"][..], CODEX_RESUME),
    ] {
        let text = help(&codex, args);
        assert_eq!(
            clap_options(&text),
            owned(table),
            "codex {args:?} --help lists other options than the fake takes"
        );
        // The resume swarm uses is the installed CLI's own.
        if args == ["exec"] {
            assert!(
                text.contains("resume  Resume a previous session by id"),
                "{text}"
            );
        }
    }
    let gemini = versions::only("@google/gemini-cli").bin;
    assert_eq!(
        yargs_options(&help(&gemini, &[])),
        owned(GEMINI),
        "gemini --help lists other options than the fake takes"
    );
}

#[test]
fn the_fakes_refuse_what_the_real_clis_refuse() {
    let env = Env::new();
    let run = |bin: &Path, args: &[&str]| {
        let out = clean_command(bin)
            .args(args)
            .current_dir(env.root())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        Out::from(out)
    };
    let codex = fake_codex(&env);
    let first = run(&codex, &["exec", "-s", "read-only", "--json", "hi"]);
    assert_eq!(first.code, 0, "{first:?}");
    let id = first
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("session id: "))
        .unwrap()
        .to_string();
    assert!(first.stdout.contains(&format!("\"thread_id\":\"{id}\"")));
    assert!(
        run(&codex, &["exec", "-s", "read-only", "resume", &id, "again"])
            .stdout
            .contains("turn 2 of conversation")
    );
    for (args, says) in [
        (
            &["exec", "--full-auto", "hi"][..],
            "unexpected argument '--full-auto'",
        ),
        (
            &["exec", "resume", &id, "-s", "read-only", "x"],
            "unexpected argument '-s'",
        ),
        (
            &["exec", "resume", "0000-not-there", "x"],
            "no rollout found",
        ),
        (&["exec", "--model"], "a value is required for '--model'"),
    ] {
        let out = run(&codex, args);
        assert_ne!(out.code, 0, "{args:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
    }
    let gemini = fake_gemini(&env);
    let uuid = "5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
    assert_eq!(run(&gemini, &["--session-id", uuid, "-p", "hi"]).code, 0);
    for (args, says) in [
        (&["--session-id", uuid, "-p", "hi"][..], "already exists"),
        (
            &[
                "--resume",
                "5e6f7a8b-0000-4e3f-8a9b-0c1d2e3f4a5b",
                "-p",
                "x",
            ],
            "Invalid session",
        ),
        (
            &["--full-auto", "-p", "x"],
            "unexpected argument '--full-auto'",
        ),
        (&["hi"], "only -p"),
    ] {
        let out = run(&gemini, args);
        assert_ne!(out.code, 0, "{args:?}");
        assert!(out.stderr.contains(says), "{args:?}: {out:?}");
    }
    assert!(run(&gemini, &["-m", "flash", "--resume", uuid, "-p", "x"])
        .stdout
        .contains("turn 2 of conversation"));
}
