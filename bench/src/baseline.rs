//! swarm's inbox append as it was before the group commit, kept runnable so that the contention
//! benchmark measures the group commit against it in the same run (`worker append --impl
//! before-group-commit`): every sender takes the inbox lock in turn, checks the whole array
//! against the message schema, splices its one entry in before the closing `]` and pays for its
//! own fsync.
//!
//! It was `Mailbox::send_baseline` inside the product until the benchmarks moved out. Here it is
//! a copy on purpose, built from the store's public lock and file operations: the product's
//! append may change, a baseline must not. An inbox it cannot splice (one that does not parse,
//! or holds more delivered entries than are kept) goes to today's `Mailbox::send`, which repairs
//! or archives as the old path did; the benchmarks never get there, nor to what else the old
//! path handled and this leaves out (a message over the size limit, a FIFO where the inbox
//! should be, entries spooled by group-committing senders).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use swarm::{
    fsio, AgentName, FileLock, InboxMessage, LeadKey, Mailbox, Result, Roster, Store, TeamName,
    KEEP_DELIVERED, SIG_FIELD,
};

/// `Mailbox::send` the way it worked before the group commit.
pub(crate) fn send(
    store: &Store,
    team: &TeamName,
    to: &AgentName,
    mut message: InboxMessage,
) -> Result<()> {
    Roster::new(store, team).require_member(to.as_str())?;
    // The benchmarks' messages come from the lead, and `Mailbox::send` signs those: so does this.
    if message.from == AgentName::lead().as_str() {
        if let Some(key) = LeadKey::for_caller(store, team)? {
            let sig = key.signature(&message.lead_entry());
            message.extra.insert(SIG_FIELD.into(), Value::from(sig));
        }
    }
    let path = store.inbox_path(team, to);
    fsio::ensure_dir(&store.inboxes_dir(team))?;
    fsio::create_if_missing(&path, b"[]\n")?;
    {
        let _lock = FileLock::acquire(&path)?;
        if let Some(bytes) = fsio::read_file(&path)?.and_then(|b| splice_append(&b, &message)) {
            return fsio::write_atomic(&path, &bytes);
        }
    }
    Mailbox::new(store, team).send(to, message)
}

/// An entry checked against the message schema (every known field, its type, no repeats) without
/// building it: strings are borrowed from the file and unknown fields skipped.
#[derive(Deserialize)]
#[expect(dead_code, reason = "the fields are read only to check their types")]
struct Peek<'a> {
    #[serde(borrow)]
    from: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(default, borrow)]
    summary: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    color: Option<Cow<'a, str>>,
    #[serde(rename = "msgV", default)]
    msg_v: Option<u32>,
    #[serde(default, borrow)]
    msg_id: Option<Cow<'a, str>>,
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    read: bool,
}

/// Checks that `bytes` is a JSON array of objects of the message schema, then writes `message`
/// in before the closing `]`, printed as a full rewrite would print it. `None` for a file that
/// does not parse, entries of the wrong shape, or more delivered entries than are kept.
fn splice_append(bytes: &[u8], message: &InboxMessage) -> Option<Vec<u8>> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return None;
    }
    let entries: Vec<Peek> = serde_json::from_slice(bytes).ok()?;
    if entries.iter().filter(|e| e.read).count() > KEEP_DELIVERED {
        return None;
    }
    let close = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    let before = &bytes[..close];
    let end = before.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    // The entry pretty-printed, every line indented two spaces: what `to_vec_pretty` of the
    // whole array would hold.
    let entry = serde_json::to_string_pretty(message).ok()?;
    let mut out = Vec::with_capacity(end + entry.len() + entry.len() / 8 + 8);
    out.extend_from_slice(&before[..end]);
    if before[end - 1] != b'[' {
        out.push(b',');
    }
    for line in entry.lines() {
        out.extend_from_slice(b"\n  ");
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(b"\n]\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> AgentName {
        s.parse().unwrap()
    }

    #[test]
    fn a_spliced_append_is_byte_for_byte_a_full_rewrite() {
        let m1 = InboxMessage::new(&AgentName::lead(), "first\nline \"two\"")
            .with_summary(Some("s".into()));
        let m2 = InboxMessage::new(&name("coder"), "second");
        let mut full = serde_json::to_vec_pretty(&vec![m1.clone()]).unwrap();
        full.push(b'\n');
        let spliced = splice_append(b"[]\n", &m1).unwrap();
        assert_eq!(
            String::from_utf8(spliced.clone()).unwrap(),
            String::from_utf8(full).unwrap()
        );
        let mut full = serde_json::to_vec_pretty(&vec![m1, m2.clone()]).unwrap();
        full.push(b'\n');
        assert_eq!(splice_append(&spliced, &m2).unwrap(), full);
        // Compact files from other writers stay valid JSON.
        let compact = br#"[{"from":"a","text":"x","timestamp":"t"}]"#;
        let out: Vec<InboxMessage> =
            serde_json::from_slice(&splice_append(compact, &m2).unwrap()).unwrap();
        assert_eq!(out.len(), 2);
        for bad in [&b"[1]"[..], b"{}", b"[{\"from\": ", b"\xEF\xBB\xBF[]", b""] {
            assert!(
                splice_append(bad, &m2).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn an_inbox_with_more_delivered_entries_than_are_kept_is_not_spliced() {
        let mut delivered = InboxMessage::new(&name("coder"), "old");
        delivered.read = true;
        let full = serde_json::to_vec_pretty(&vec![delivered; KEEP_DELIVERED + 1]).unwrap();
        assert!(splice_append(&full, &InboxMessage::new(&name("coder"), "new")).is_none());
    }
}
