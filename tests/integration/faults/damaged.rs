//! Damaged store files that must cost only themselves (issue 10): a FIFO where an inbox
//! belongs, one bad inbox in a broadcast, one entry nested too deep, a task file holding another
//! task's id, and a high-water mark no id can follow.

use serde_json::Value;

use super::{files_named, read_json_array};
use crate::support::*;

fn texts(path: &std::path::Path) -> Vec<String> {
    read_json_array(path)
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

fn mkfifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A FIFO at `team-lead.json` is moved aside and reported; the message is delivered.
#[test]
fn a_fifo_where_an_inbox_belongs_is_moved_aside_and_the_send_delivered() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/team-lead.json");
    mkfifo(&inbox);
    let out = env
        .swarm(["send", "--from", "coder", "--to", "team-lead", "done"])
        .run_within(REFUSAL_LIMIT);
    assert_eq!(out.code, 0, "{out:?}");
    out.stderr_has("could not be read (it is a FIFO); moved it to");
    assert_eq!(texts(&inbox), ["done"]);
    assert_eq!(
        files_named(&env.path("teams/t/inboxes"), "team-lead.json.corrupt-").len(),
        1
    );
}

/// One bad inbox among five: the other four get the message, the error names the bad one, and
/// running the same broadcast again (before and after the repair) gives nobody a second copy.
#[test]
fn a_broadcast_past_a_bad_inbox_reaches_the_rest_and_a_retry_adds_no_copies() {
    let env = Env::with_team(&["a", "b", "c", "d", "e"]);
    let bad = env.path("teams/t/inboxes/c.json");
    let elsewhere = env.path("elsewhere.json");
    std::fs::write(&elsewhere, "[]").unwrap();
    std::fs::remove_file(&bad).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &bad).unwrap();
    for attempt in ["first", "retry"] {
        let out = env.swarm(["send", "--to", "*", "hi"]).run();
        assert_eq!(out.code, 1, "{attempt}: {out:?}");
        out.stderr_has(&format!(
            "broadcast not delivered to c (refusing to use {}: it is a symlink",
            bad.display()
        ));
        out.stderr_has("delivered to a, b, d, e.");
        for name in ["a", "b", "d", "e"] {
            let inbox = env.path(&format!("teams/t/inboxes/{name}.json"));
            assert_eq!(texts(&inbox), ["hi"], "{attempt}: {name}");
        }
    }
    std::fs::remove_file(&bad).unwrap();
    env.swarm(["send", "--to", "*", "hi"]).ok();
    let mut ids = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        let inbox = read_json_array(&env.path(&format!("teams/t/inboxes/{name}.json")));
        assert_eq!(inbox.len(), 1, "{name}: {inbox:?}");
        ids.push(inbox[0]["msg_id"].as_str().unwrap().to_string());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "one msg_id per recipient");
    assert_eq!(std::fs::read(&elsewhere).unwrap(), b"[]");
    // Once read, the same words again are a new message.
    env.swarm(["inbox", "a", "--mark-read"]).ok();
    env.swarm(["send", "--to", "*", "hi"]).ok();
    assert_eq!(texts(&env.path("teams/t/inboxes/a.json")), ["hi", "hi"]);
    assert_eq!(texts(&env.path("teams/t/inboxes/b.json")), ["hi"]);
}

/// An entry nested 200 deep (past the parser's limit) is moved aside alone; the three good
/// messages stay and are delivered.
#[test]
fn an_entry_nested_too_deep_is_quarantined_alone() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let good = |t: &str| format!(r#"{{"from": "team-lead", "text": "{t}", "timestamp": "t"}}"#);
    let entry =
        format!(r#"{{"from": "team-lead", "text": "x", "timestamp": "t", "deep": {deep}}}"#);
    std::fs::write(
        &inbox,
        format!(
            "[{}, {entry}, {}, {}]",
            good("one"),
            good("two"),
            good("three")
        ),
    )
    .unwrap();
    let out = env.swarm(["--json", "inbox", "coder"]).ok();
    out.stderr_has("had 1 malformed message(s)");
    let listed: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let listed: Vec<&str> = listed.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(listed, ["one", "two", "three"]);
    assert_eq!(texts(&inbox), ["one", "two", "three"]);
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(moved.len(), 1);
    assert!(std::fs::read_to_string(&moved[0]).unwrap().contains(&entry));
}

/// `5.json` holding `"id": "1"`: claiming 5 must not rewrite `1.json`; the file is moved aside
/// and `task list` shows one #1, still completed.
#[test]
fn a_task_file_holding_another_id_is_quarantined() {
    let env = Env::with_team(&["coder"]);
    for i in 1..=5 {
        env.swarm(["task", "create", &format!("t{i}")]).ok();
    }
    env.swarm(["task", "update", "1", "--status", "completed"])
        .ok();
    let one = env.path("tasks/t/1.json");
    std::fs::copy(&one, env.path("tasks/t/5.json")).unwrap();
    let before = std::fs::read(&one).unwrap();
    let out = env.swarm(["task", "claim", "5", "--agent", "coder"]).run();
    assert_ne!(out.code, 0, "{out:?}");
    assert_eq!(std::fs::read(&one).unwrap(), before, "task #1 untouched");
    let listed = env.swarm(["--json", "task", "list"]).ok().json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"]);
    assert_eq!(listed[0]["status"], "completed");
    assert_eq!(
        files_named(&env.path("tasks/t"), "5.json.corrupt-").len(),
        1
    );
    // Its id was issued: the next task is #6.
    let made = env.swarm(["--json", "task", "create", "t6"]).ok().json();
    assert_eq!(made["id"], "6");
}

/// A high-water mark no id can follow is refused; nothing is created or overwritten.
#[test]
fn a_high_water_mark_past_the_largest_id_is_refused() {
    for (mark, says) in [
        (
            "9999999999999999999",
            "not a task number up to 9007199254740991",
        ),
        (
            "18446744073709551615",
            "not a task number up to 9007199254740991",
        ),
        ("18446744073709551616", "not a task number"),
        ("9007199254740991", "the largest there can be"),
    ] {
        let env = Env::with_team(&["coder"]);
        env.swarm(["task", "create", "first"]).ok();
        std::fs::write(env.path("tasks/t/.highwatermark"), mark).unwrap();
        for _ in 0..2 {
            env.swarm(["task", "create", "next"])
                .context(mark)
                .refused(says);
        }
        let listed = env.swarm(["--json", "task", "list"]).ok().json();
        assert_eq!(listed.as_array().unwrap().len(), 1, "{mark}");
    }
}

/// An entry whose `from` breaks the name rule is damaged like any entry that fails the schema:
/// it alone is moved aside, byte for byte, and every other message is kept. It used to be read
/// as a message from "../x", shown, and handed to a teammate's agent as `teammate_id="../x"`.
#[test]
fn an_inbox_entry_with_a_bad_sender_is_moved_aside_alone() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let bad = r#"{"from": "../x", "text": "forged", "timestamp": "t"}"#;
    std::fs::write(
        &inbox,
        format!(r#"[{{"from": "team-lead", "text": "good", "timestamp": "t"}}, {bad}]"#),
    )
    .unwrap();
    let out = env.swarm(["--json", "inbox", "coder"]).ok();
    out.stderr_has("had 1 malformed message(s)");
    let listed = out.json();
    let shown: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(shown, ["good"]);
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(
        read_json_array(&moved[0]),
        vec![serde_json::from_str::<Value>(bad).unwrap()]
    );
    env.swarm(["send", "--to", "coder", "new"]).ok();
    assert_eq!(texts(&inbox), ["good", "new"]);
}

/// Issue 21 item 9: a directory where an inbox belongs is moved aside, and `swarm status`
/// (table and `--json`) lists the quarantined directory as it lists quarantined files.
#[test]
fn status_lists_a_quarantined_directory() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    std::fs::remove_file(&inbox).unwrap();
    std::fs::create_dir(&inbox).unwrap();
    env.swarm(["send", "--to", "coder", "hi"])
        .ok()
        .stderr_has("could not be read (it is a directory); moved it to");
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(moved.len(), 1);
    assert!(moved[0].is_dir());
    let rel = moved[0]
        .strip_prefix(env.root())
        .unwrap()
        .display()
        .to_string();
    let s = env.swarm(["--json", "status"]).ok().json();
    assert_eq!(s["quarantined"], serde_json::json!([rel]));
    let text = env.swarm(["status"]).ok().stdout;
    assert!(text.contains(&rel), "{text}");
}

/// One delivered inbox entry as the live file and the archive hold it.
fn delivered(i: usize) -> Value {
    serde_json::json!({
        "from": "team-lead",
        "text": format!("m{i}"),
        "timestamp": "2026-01-01T00:00:00.000Z",
        "msg_id": format!("00000000-0000-4000-8000-{i:012}"),
        "read": true,
    })
}

fn jsonl(entries: impl IntoIterator<Item = Value>) -> String {
    entries.into_iter().map(|e| format!("{e}\n")).collect()
}

/// Issue 21 item 8: a committer killed between its archive append and its inbox write leaves
/// the oldest delivered entries in both; the next compaction appends only the ids the archive
/// lacks, and `swarm inbox --all` shows every msg_id once, even where the archive already holds
/// one twice (as a killed committer of an older swarm left it).
#[test]
fn archive_duplicates_left_by_a_killed_committer_are_neither_added_nor_shown() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let archive = env.path("teams/t/inboxes/coder.archive.jsonl");
    // 103 delivered (3 beyond what the live file keeps); m0 and m1 already archived, as the
    // killed committer left them.
    let live: Vec<Value> = (0..103).map(delivered).collect();
    std::fs::write(&inbox, serde_json::to_vec_pretty(&live).unwrap()).unwrap();
    std::fs::write(&archive, jsonl([delivered(0), delivered(1)])).unwrap();
    env.swarm(["send", "--to", "coder", "new"]).ok();
    let archived: Vec<Value> = std::fs::read_to_string(&archive)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let texts: Vec<&str> = archived
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["m0", "m1", "m2"],
        "the compaction ran and added no copy"
    );
    assert_eq!(read_json_array(&inbox).len(), 101);
    // An older committer's duplicate in the archive itself, and m3 in both files again.
    std::fs::write(&archive, jsonl([0, 1, 1, 2, 3].into_iter().map(delivered))).unwrap();
    let all = env.swarm(["--json", "inbox", "coder", "--all"]).ok().json();
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["msg_id"].as_str().unwrap())
        .collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "a msg_id shown twice: {ids:?}");
    assert_eq!(ids.len(), 104, "every message, archived and live: {ids:?}");
    assert_eq!(all[0]["text"], "m0", "oldest first");
    assert_eq!(all[103]["text"], "new");
    let text = env.swarm(["inbox", "coder", "--all"]).ok().stdout;
    assert_eq!(text.matches(": m1\n").count(), 1, "{text}");
}

/// Issue 22 item 7: an entry holding invalid UTF-8 used to take the whole inbox with it (the
/// file did not decode, so nothing was kept). It is moved aside alone, byte for byte; the
/// entries before and after it are kept and read.
#[test]
fn an_entry_with_invalid_utf8_is_quarantined_alone() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let good = |t: &str| format!(r#"{{"from": "team-lead", "text": "{t}", "timestamp": "t"}}"#);
    let mut bad = br#"{"from": "team-lead", "text": "bad "#.to_vec();
    bad.extend_from_slice(b"\xff\xfe, ]\\\"} [");
    bad.extend_from_slice(br#"", "timestamp": "t"}"#);
    let mut bytes = format!("[{}, ", good("one")).into_bytes();
    bytes.extend_from_slice(&bad);
    bytes.extend_from_slice(format!(", {}]", good("two")).as_bytes());
    std::fs::write(&inbox, &bytes).unwrap();
    let out = env.swarm(["--json", "inbox", "coder"]).ok();
    out.stderr_has("had 1 malformed message(s)");
    let listed: Vec<String> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, ["one", "two"]);
    assert_eq!(texts(&inbox), ["one", "two"]);
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(moved.len(), 1);
    let kept = std::fs::read(&moved[0]).unwrap();
    assert_eq!(
        kept,
        [&b"[\n  "[..], &bad, b"\n]\n"].concat(),
        "every byte of it"
    );
}

/// Issue 22 item 7: an inbox past the size limit (here 4096 bytes through
/// SWARM_INBOX_MAX_BYTES) is refused to a sender with a clear error and left as it is; a
/// reader moves it aside unread, every byte kept, `swarm status` lists it, and the next send
/// starts a fresh inbox.
#[test]
fn an_inbox_past_the_size_limit_is_refused_to_senders_and_moved_aside_by_its_reader() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    let entries: Vec<Value> = (0..40)
        .map(|i| serde_json::json!({"from": "team-lead", "text": format!("{i:0>120}"), "timestamp": "t"}))
        .collect();
    std::fs::write(&inbox, serde_json::to_vec_pretty(&entries).unwrap()).unwrap();
    let before = std::fs::read(&inbox).unwrap();
    assert!(before.len() > 4096);
    let limited = |args: &[&str]| env.swarm(args).env("SWARM_INBOX_MAX_BYTES", "4096");
    let out = limited(&["send", "--to", "coder", "hi"]).code(1);
    out.stderr_has(&format!(
        "the inbox {} is {} bytes, past the limit of 4096 bytes (SWARM_INBOX_MAX_BYTES), so the message was not delivered",
        inbox.display(),
        before.len()
    ));
    assert_eq!(std::fs::read(&inbox).unwrap(), before, "refused, untouched");
    let out = limited(&["--json", "inbox", "coder"]).ok();
    out.stderr_has("past the inbox limit of 4096 bytes");
    assert_eq!(out.json(), serde_json::json!([]));
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(moved.len(), 1);
    assert_eq!(std::fs::read(&moved[0]).unwrap(), before, "every byte kept");
    let status = env.swarm(["--json", "status"]).ok().json();
    let rel = moved[0]
        .strip_prefix(env.root())
        .unwrap()
        .display()
        .to_string();
    assert_eq!(status["quarantined"], serde_json::json!([rel]));
    limited(&["send", "--to", "coder", "hi"]).ok();
    assert_eq!(texts(&inbox), ["hi"]);
}
