//! The peer message summary: what a teammate said to other teammates during a turn, told to
//! the lead with the turn's idle notification.
//!
//! Teammates message each other directly (`swarm send --to NAME`), and the lead sees none of
//! it. Claude Code's teammate puts its last such message in its idle notification's `summary`
//! as `[to NAME] summary` (2.1.328's `getLastPeerDmSummary`, the design's "peer DM summary"),
//! so its lead sees coordination it is not part of. swarm's runtime does the same from the
//! inboxes: after a turn it reads the inboxes of the other teammates that changed since the
//! turn began (a `stat` each; only those are read) for messages from itself written since, and
//! sums them up the same way, a few at most. A message a Claude Code teammate already took in
//! (it deletes what it reads) is missed; the summary is a hint, never a record.

use std::time::SystemTime;

use crate::error::Result;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{parse_timestamp, Payload, PEER_MARK};
use crate::store::roster::TeamConfig;

/// Most messages named in one summary; more are counted.
const MOST: usize = 3;
/// Most characters of a message's text shown when it has no summary (Claude Code's 80).
const TEXT_CHARS: usize = 80;

/// The messages `from` sent to other teammates since `since`, each with its recipient, oldest
/// first.
pub(crate) fn sent_since(
    store: &Store,
    team: &TeamName,
    roster: &TeamConfig,
    from: &AgentName,
    since: SystemTime,
) -> Result<Vec<(AgentName, InboxMessage)>> {
    let since_ms = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mailbox = Mailbox::new(store, team);
    let mut sent = Vec::new();
    for peer in roster.teammates().filter(|m| m.name != *from) {
        let path = store.inbox_path(team, &peer.name);
        let changed = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if !changed {
            continue;
        }
        for m in mailbox.read(&peer.name, false)? {
            let at = parse_timestamp(&m.timestamp).unwrap_or(0);
            if m.from == *from && at >= since_ms && matches!(m.payload(), Payload::Text(_)) {
                sent.push((peer.name.clone(), m));
            }
        }
    }
    sent.sort_by(|a, b| a.1.timestamp.cmp(&b.1.timestamp));
    Ok(sent)
}

/// `[to b] lexer done; [to c, d] ready for review` (a broadcast is one entry with every
/// recipient), at most [`MOST`] entries, then how many more; `None` when nothing was sent.
pub(crate) fn summary(sent: &[(AgentName, InboxMessage)]) -> Option<String> {
    let mut entries: Vec<(Vec<&str>, String, String)> = Vec::new();
    for (to, m) in sent {
        let what = match &m.summary {
            Some(s) if !s.trim().is_empty() => s.trim().to_string(),
            _ => shorten(m.text.trim()),
        };
        match entries
            .iter_mut()
            .find(|(_, text, stamp)| *text == what && *stamp == m.timestamp)
        {
            Some((names, _, _)) => names.push(to.as_str()),
            None => entries.push((vec![to.as_str()], what, m.timestamp.clone())),
        }
    }
    if entries.is_empty() {
        return None;
    }
    let more = entries.len().saturating_sub(MOST);
    let mut parts: Vec<String> = entries
        .iter()
        .rev()
        .take(MOST)
        .rev()
        .map(|(names, what, _)| format!("{PEER_MARK}{}] {what}", names.join(", ")))
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
    use crate::store::fixture::agent;

    fn sent(to: &str, text: &str, summary: Option<&str>, at: &str) -> (AgentName, InboxMessage) {
        let mut m = InboxMessage::new(&agent("a"), text).with_summary(summary.map(String::from));
        m.timestamp = at.into();
        (agent(to), m)
    }

    #[test]
    fn peer_messages_are_summed_up_as_claude_code_does() {
        assert_eq!(summary(&[]), None);
        let one = [sent("b", "the lexer is done", Some("lexer done"), "t1")];
        assert_eq!(summary(&one).unwrap(), "[to b] lexer done");
        let long = "x".repeat(100);
        let several = [
            sent("b", "first\nsecond line", None, "t1"),
            sent("c", "ready", None, "t2"),
            sent("d", "ready", None, "t2"),
            sent("b", &long, None, "t3"),
            sent("c", "last", None, "t4"),
        ];
        assert_eq!(
            summary(&several).unwrap(),
            format!(
                "(1 earlier); [to c, d] ready; [to b] {}…; [to c] last",
                "x".repeat(80)
            )
        );
    }
}
