//! Inboxes: `teams/<team>/inboxes/<agent>.json` (PROTOCOL.md section 6).
//!
//! An inbox is a pretty-printed JSON array anyone can `cat`. Appends take the inbox lock, read,
//! push and write atomically. Delivery is marked per message by `msg_id` (`read: true`), never
//! "mark all", so a message that arrives between a read and its mark is not lost. Delivered
//! messages beyond the newest 100 move to `<agent>.archive.jsonl`: the live file stays small and
//! the history stays on disk.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Payload, Protocol};
use crate::store::roster::Roster;

/// Largest `text` one message may carry.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Delivered messages kept in the live inbox file.
pub const KEEP_DELIVERED: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxMessage {
    pub from: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(rename = "msgV", default, skip_serializing_if = "Option::is_none")]
    pub msg_v: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub read: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InboxMessage {
    /// A fresh message with a new `msg_id`.
    pub fn new(from: &str, text: impl Into<String>) -> InboxMessage {
        InboxMessage {
            from: from.to_string(),
            text: text.into(),
            summary: None,
            timestamp: timestamp_now(),
            color: None,
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::new_v4().to_string()),
            kind: Some("message".into()),
            read: false,
            extra: Map::new(),
        }
    }

    pub fn protocol(from: &str, message: &Protocol) -> InboxMessage {
        InboxMessage::new(from, message.to_text())
    }

    pub fn with_summary(mut self, summary: Option<String>) -> InboxMessage {
        self.summary = summary;
        self
    }

    pub fn with_color(mut self, color: Option<String>) -> InboxMessage {
        self.color = color;
        self
    }

    /// The identity used to mark delivery: `msg_id`, or Claude Code's `from|timestamp|text` for
    /// messages written without one.
    pub fn key(&self) -> String {
        match &self.msg_id {
            Some(id) => id.clone(),
            None => format!("{}|{}|{}", self.from, self.timestamp, self.text),
        }
    }

    pub fn payload(&self) -> Payload {
        Payload::parse(&self.text)
    }
}

pub struct Mailbox<'a> {
    store: &'a Store,
    team: &'a TeamName,
}

impl<'a> Mailbox<'a> {
    pub fn new(store: &'a Store, team: &'a TeamName) -> Mailbox<'a> {
        Mailbox { store, team }
    }

    /// Appends `message` to the inbox of `to`, who must be on the roster.
    pub fn send(&self, to: &AgentName, message: InboxMessage) -> Result<()> {
        check_size(&message)?;
        Roster::new(self.store, self.team).require_member(to.as_str())?;
        self.append(to, message)
    }

    /// Sends a copy to every member but `from`; returns who got it.
    pub fn broadcast(&self, from: &str, message: InboxMessage) -> Result<Vec<AgentName>> {
        check_size(&message)?;
        let config = Roster::new(self.store, self.team).load()?;
        let mut sent = Vec::new();
        for member in config.members.iter().filter(|m| m.name != from) {
            let to: AgentName = member.name.parse()?;
            let mut copy = message.clone();
            copy.msg_id = Some(uuid::Uuid::new_v4().to_string());
            self.append(&to, copy)?;
            sent.push(to);
        }
        Ok(sent)
    }

    /// Appends without the roster check: for the launcher, which writes the first prompt while
    /// it holds its own view of the roster. Every entry from the lead is signed here, when the
    /// caller holds the lead key, so no lead-side path can forget (see `lead_key`).
    pub fn append(&self, to: &AgentName, mut message: InboxMessage) -> Result<()> {
        if message.from == crate::store::names::LEAD {
            if let Some(key) = crate::store::lead_key::LeadKey::for_caller(self.store, self.team)? {
                key.sign(&mut message);
            }
        }
        let path = self.store.inbox_path(self.team, to);
        fsio::ensure_dir(&self.store.inboxes_dir(self.team))?;
        fsio::create_if_missing(&path, b"[]\n")?;
        let _lock = FileLock::acquire(&path)?;
        if let Some(bytes) = fsio::read_file(&path)? {
            if let Some(spliced) = splice_append(&bytes, &message) {
                return fsio::write_atomic(&path, &spliced);
            }
        }
        let mut messages = load_locked(&path)?;
        messages.push(message);
        self.compact_and_write(to, &path, messages)
    }

    /// All messages, oldest first (`unread_only`: those not yet delivered).
    pub fn read(&self, agent: &AgentName, unread_only: bool) -> Result<Vec<InboxMessage>> {
        let path = self.store.inbox_path(self.team, agent);
        let messages = match fsio::read_file(&path)? {
            None => vec![],
            Some(bytes) => match parse_inbox(&bytes) {
                Ok(messages) => messages,
                // Quarantine under the lock, so we never move a file a writer is replacing.
                Err(_) => {
                    let _lock = FileLock::acquire(&path)?;
                    let messages = load_locked(&path)?;
                    fsio::write_json(&path, &messages)?;
                    messages
                }
            },
        };
        Ok(messages
            .into_iter()
            .filter(|m| !unread_only || !m.read)
            .collect())
    }

    /// Marks exactly the messages whose keys are given as delivered; returns how many changed.
    pub fn mark_delivered(&self, agent: &AgentName, keys: &[String]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let path = self.store.inbox_path(self.team, agent);
        if !fsio::check_regular(&path)? {
            return Ok(0);
        }
        let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let _lock = FileLock::acquire(&path)?;
        let mut messages = load_locked(&path)?;
        let mut changed = 0;
        for m in messages.iter_mut().filter(|m| !m.read) {
            if wanted.contains(m.key().as_str()) {
                m.read = true;
                changed += 1;
            }
        }
        if changed > 0 {
            self.compact_and_write(agent, &path, messages)?;
        }
        Ok(changed)
    }

    fn compact_and_write(
        &self,
        agent: &AgentName,
        path: &Path,
        mut messages: Vec<InboxMessage>,
    ) -> Result<()> {
        let delivered = messages.iter().filter(|m| m.read).count();
        if delivered > KEEP_DELIVERED {
            let mut to_archive = delivered - KEEP_DELIVERED;
            let mut archived = Vec::with_capacity(to_archive);
            messages.retain(|m| {
                if m.read && to_archive > 0 {
                    to_archive -= 1;
                    archived.push(m.clone());
                    false
                } else {
                    true
                }
            });
            // Archive first: a crash between the two writes duplicates history, never loses it.
            append_jsonl(&self.store.archive_path(self.team, agent), &archived)?;
        }
        fsio::write_json(path, &messages)
    }
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

/// The common append, without parsing every message into a struct and printing them all again:
/// check that the file is a JSON array of objects, then write the new entry in before the closing
/// `]`. That keeps an append to an inbox nobody reads from costing a full parse and re-print of
/// thousands of messages. `None` sends the caller down the full path: a file that does not
/// parse (quarantine), entries of the wrong shape, or more delivered entries than are kept (archive).
fn splice_append(bytes: &[u8], message: &InboxMessage) -> Option<Vec<u8>> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return None;
    }
    let entries: Vec<Peek> = serde_json::from_slice(bytes).ok()?;
    if entries.iter().filter(|e| e.read).count() > KEEP_DELIVERED {
        return None;
    }
    let close = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if bytes[close] != b']' {
        return None;
    }
    let entry = serde_json::to_string_pretty(message).ok()?;
    let mut out = Vec::with_capacity(bytes.len() + entry.len() + 16);
    if entries.is_empty() {
        out.push(b'[');
    } else {
        let before = &bytes[..close];
        let end = before.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
        out.extend_from_slice(&before[..end]);
        out.push(b',');
    }
    for line in entry.lines() {
        out.extend_from_slice(b"\n  ");
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(b"\n]\n");
    Some(out)
}

fn check_size(message: &InboxMessage) -> Result<()> {
    let size = message.text.len() + message.summary.as_ref().map_or(0, String::len);
    if size > MAX_MESSAGE_BYTES {
        return Err(Error::MessageTooLarge {
            size,
            limit: MAX_MESSAGE_BYTES,
        });
    }
    Ok(())
}

/// Parses an inbox. `Err` if the file is not a JSON array of messages.
fn parse_inbox(bytes: &[u8]) -> std::result::Result<Vec<InboxMessage>, String> {
    fsio::parse_json(bytes)
}

/// Reads an inbox under its lock, repairing what does not parse: a file that is not a JSON array
/// is quarantined whole; entries of an array that fail the schema are moved to a quarantine file
/// and the good ones kept.
fn load_locked(path: &Path) -> Result<Vec<InboxMessage>> {
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok(vec![]);
    };
    if let Ok(messages) = parse_inbox(&bytes) {
        return Ok(messages);
    }
    let entries: Vec<Value> = match fsio::parse_json(&bytes) {
        Ok(entries) => entries,
        Err(e) => {
            fsio::quarantine(path, &e)?;
            return Ok(vec![]);
        }
    };
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for entry in entries {
        match serde_json::from_value::<InboxMessage>(entry.clone()) {
            Ok(m) => good.push(m),
            Err(_) => bad.push(entry),
        }
    }
    if bad.is_empty() {
        return Ok(good);
    }
    let target = format!("{}.corrupt-{}", path.display(), fsio::now_ms());
    fsio::write_json(Path::new(&target), &bad)?;
    eprintln!(
        "swarm: warning: {} had {} malformed message(s); moved them to {target}",
        path.display(),
        bad.len()
    );
    Ok(good)
}

fn append_jsonl(path: &Path, entries: &[InboxMessage]) -> Result<()> {
    fsio::check_regular(path)?;
    let mut buf = Vec::new();
    for e in entries {
        serde_json::to_writer(&mut buf, e).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        buf.push(b'\n');
    }
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(fsio::NOFOLLOW)
        .open(path)
        .map_err(Error::io("open", path))?;
    f.write_all(&buf).map_err(Error::io("append to", path))?;
    f.sync_all().map_err(Error::io("sync", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::roster::Member;

    fn team() -> (tempfile::TempDir, Store, TeamName) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        Roster::new(&store, &team).create("", "/", "").unwrap();
        let coder: AgentName = "coder".parse().unwrap();
        Roster::new(&store, &team)
            .add_member(Member::teammate(&team, &coder, "blue", "/"))
            .unwrap();
        (dir, store, team)
    }

    #[test]
    fn marking_is_exact_and_old_deliveries_are_archived() {
        let (_dir, store, team) = team();
        let mb = Mailbox::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        for i in 0..150 {
            mb.send(&coder, InboxMessage::new("team-lead", format!("m{i}")))
                .unwrap();
        }
        let all = mb.read(&coder, true).unwrap();
        let keys: Vec<String> = all[..120].iter().map(InboxMessage::key).collect();
        assert_eq!(mb.mark_delivered(&coder, &keys).unwrap(), 120);
        let live = mb.read(&coder, false).unwrap();
        assert_eq!(live.len(), 130);
        assert_eq!(live.iter().filter(|m| !m.read).count(), 30);
        let archive = std::fs::read_to_string(store.archive_path(&team, &coder)).unwrap();
        assert_eq!(archive.lines().count(), 20);
        assert!(archive.lines().next().unwrap().contains("\"m0\""));
    }

    #[test]
    fn a_spliced_append_is_byte_for_byte_a_full_rewrite() {
        let m1 =
            InboxMessage::new("team-lead", "first\nline \"two\"").with_summary(Some("s".into()));
        let m2 = InboxMessage::new("coder", "second");
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
    fn strangers_and_oversized_messages_are_refused() {
        let (_dir, store, team) = team();
        let mb = Mailbox::new(&store, &team);
        let ghost: AgentName = "ghost".parse().unwrap();
        assert!(matches!(
            mb.send(&ghost, InboxMessage::new("team-lead", "hi")),
            Err(Error::NoSuchMember { .. })
        ));
        assert!(!store.inbox_path(&team, &ghost).exists());
        let coder: AgentName = "coder".parse().unwrap();
        let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(matches!(
            mb.send(&coder, InboxMessage::new("team-lead", big)),
            Err(Error::MessageTooLarge { .. })
        ));
    }

    #[test]
    fn malformed_entries_are_quarantined_and_good_ones_kept() {
        let (dir, store, team) = team();
        let coder: AgentName = "coder".parse().unwrap();
        let path = store.inbox_path(&team, &coder);
        std::fs::write(
            &path,
            r#"[{"from":"a","text":"good","timestamp":"t"},{"from":5}]"#,
        )
        .unwrap();
        let mb = Mailbox::new(&store, &team);
        mb.send(&coder, InboxMessage::new("team-lead", "new"))
            .unwrap();
        let texts: Vec<String> = mb
            .read(&coder, false)
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["good", "new"]);
        let quarantined = std::fs::read_dir(dir.path().join("teams/t/inboxes"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".corrupt-")
            })
            .count();
        assert_eq!(quarantined, 1);
    }
}
