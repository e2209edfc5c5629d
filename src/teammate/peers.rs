//! The peer message summary: what a teammate said to other teammates during a turn, told to
//! the lead with the turn's idle notification.
//!
//! Teammates message each other directly (`swarm send --to NAME`), and the lead sees none of
//! it. Claude Code's teammate puts its last such message in its idle notification's `summary`
//! as `[to NAME] summary` (2.1.328's `getLastPeerDmSummary`, the design's "peer DM summary"),
//! so its lead sees coordination it is not part of. The runtime cannot see what its agent's
//! `swarm send` wrote, and reading every teammate's inbox after each turn to find out cost a
//! parse of each inbox that changed meanwhile (in a busy team, all of them, at every turn of
//! every teammate). So `swarm send` from a teammate to other teammates notes the message in the
//! sender's own `teams/<team>/members/<name>/peer-sent.jsonl` ([`note_sent`]), and after a turn
//! the runtime takes what was noted since the turn began ([`take_sent`]) and sums it up the
//! same way, a few at most. The note is a hint for the lead, never a record: a note that a
//! concurrent send writes while the runtime takes the file may be missed.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::fsio;
use crate::store::mailbox::InboxMessage;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{parse_timestamp, PEER_MARK};

/// Most messages named in one summary; more are counted.
const MOST: usize = 3;
/// Most characters of a message's text shown when it has no summary (Claude Code's 80).
const TEXT_CHARS: usize = 80;
/// The most of the file read: far more than one turn sends.
const READ_LIMIT: u64 = 1024 * 1024;

/// One message a teammate sent other teammates, as `swarm send` notes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sent {
    pub(crate) to: Vec<AgentName>,
    /// Its summary, else the start of its text.
    pub(crate) what: String,
    pub(crate) timestamp: String,
}

fn path(store: &Store, team: &TeamName, from: &AgentName) -> std::path::PathBuf {
    store.member_dir(team, from).join("peer-sent.jsonl")
}

/// Notes that `from` sent `message` to the teammates `to`.
pub(crate) fn note_sent(
    store: &Store,
    team: &TeamName,
    from: &AgentName,
    to: &[AgentName],
    message: &InboxMessage,
) -> Result<()> {
    let what = match &message.summary {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => shorten(message.text.trim()),
    };
    let sent = Sent {
        to: to.to_vec(),
        what,
        timestamp: message.timestamp.clone(),
    };
    let mut line = serde_json::to_vec(&sent).expect("a note serializes");
    line.push(b'\n');
    let file = path(store, team, from);
    fsio::ensure_dir(file.parent().expect("a member dir"))?;
    fsio::append_unsynced(&file, &line)
}

/// What `from` noted sending since `since`, oldest first; the notes are taken (the file
/// removed), so each is told once. Lines that do not parse are skipped: it is only a hint.
pub(crate) fn take_sent(
    store: &Store,
    team: &TeamName,
    from: &AgentName,
    since: SystemTime,
) -> Vec<Sent> {
    let file = path(store, team, from);
    let Ok(Some(bytes)) = fsio::read_foreign(&file, READ_LIMIT) else {
        return vec![];
    };
    let _ = std::fs::remove_file(&file);
    let since_ms = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut sent: Vec<Sent> = bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Sent>(line).ok())
        .filter(|s| parse_timestamp(&s.timestamp).unwrap_or(0) >= since_ms)
        .collect();
    sent.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    sent
}

/// `[to b] lexer done; [to c, d] ready for review` (a broadcast is one entry with every
/// recipient), at most [`MOST`] entries, then how many more; `None` when nothing was sent.
pub(crate) fn summary(sent: &[Sent]) -> Option<String> {
    if sent.is_empty() {
        return None;
    }
    let more = sent.len().saturating_sub(MOST);
    let mut parts: Vec<String> = sent[more..]
        .iter()
        .map(|s| {
            let names: Vec<&str> = s.to.iter().map(AgentName::as_str).collect();
            format!("{PEER_MARK}{}] {}", names.join(", "), s.what)
        })
        .collect();
    if more > 0 {
        parts.insert(0, format!("({more} earlier)"));
    }
    Some(parts.join("; "))
}

fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(TEXT_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None if line.len() < text.len() => format!("{line}…"),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::{agent, team_with};

    fn message(text: &str, summary: Option<&str>, at: &str) -> InboxMessage {
        let mut m = InboxMessage::new(&agent("a"), text).with_summary(summary.map(String::from));
        m.timestamp = at.into();
        m
    }

    #[test]
    fn peer_messages_are_summed_up_as_claude_code_does() {
        let (_dir, store, team) = team_with(&["a", "b", "c", "d"]);
        let a = agent("a");
        let since = SystemTime::UNIX_EPOCH;
        assert_eq!(summary(&take_sent(&store, &team, &a, since)), None);
        let note = |to: &[&str], m: InboxMessage| {
            let to: Vec<AgentName> = to.iter().map(|n| agent(n)).collect();
            note_sent(&store, &team, &a, &to, &m).unwrap();
        };
        note(
            &["b"],
            message(
                "the lexer is done",
                Some("lexer done"),
                "2026-01-01T00:00:01.000Z",
            ),
        );
        let one = take_sent(&store, &team, &a, since);
        assert_eq!(summary(&one).unwrap(), "[to b] lexer done");
        assert!(
            take_sent(&store, &team, &a, since).is_empty(),
            "each note is told once"
        );
        let long = "x".repeat(100);
        note(
            &["b"],
            message("first\nsecond line", None, "2026-01-01T00:00:01.000Z"),
        );
        note(
            &["c", "d"],
            message("ready", None, "2026-01-01T00:00:02.000Z"),
        );
        note(&["b"], message(&long, None, "2026-01-01T00:00:03.000Z"));
        note(&["c"], message("last", None, "2026-01-01T00:00:04.000Z"));
        assert_eq!(
            summary(&take_sent(&store, &team, &a, since)).unwrap(),
            format!(
                "(1 earlier); [to c, d] ready; [to b] {}…; [to c] last",
                "x".repeat(80)
            )
        );
        // A note from before the turn began is not this turn's.
        note(&["b"], message("old", None, "2001-01-01T00:00:00.000Z"));
        let turn = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert!(take_sent(&store, &team, &a, turn).is_empty());
    }
}
