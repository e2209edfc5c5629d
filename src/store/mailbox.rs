//! Inboxes: `teams/<team>/inboxes/<agent>.json` (PROTOCOL.md section 6).
//!
//! An inbox is a pretty-printed JSON array anyone can `cat`, written atomically under the inbox
//! lock Claude Code takes too. Appends are group-committed (`commit.rs`): senders that meet a busy
//! lock spool their entry and the holder takes them all in with one rewrite, so sixteen writers pay
//! for one fsync between them instead of one each. Delivery is marked per message by `msg_id`
//! (`read: true`), never "mark all", so a message that arrives between a read and its mark is not
//! lost. A send that may be a retry (a broadcast run again, `swarm send --id`) is decided by
//! `msg_id` under the lock (`once.rs`), so sending again never stores a message twice. Delivered
//! messages beyond the newest 100 move to `<agent>.archive.jsonl`: the live file stays small and
//! the history stays on disk.

pub(crate) mod bell;
mod commit;
mod file;
mod first;
mod flush;
mod once;
mod relayed;
mod restamp;
mod sidecar;
mod spool;

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use file::Parsed;
use file::{append_jsonl, read_archive};

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lead_key::{LeadEntry, LeadKey, LeadVerifier, SIG_FIELD, SWARM_SIG_FIELD};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::protocol::{timestamp_now, Payload, Protocol};
use crate::store::roster::{Member, Roster};

/// Largest `text` one message may carry.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Delivered messages kept in the live inbox file.
pub const KEEP_DELIVERED: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxMessage {
    /// Parsed when the inbox is read: an entry whose sender breaks the name rule is damaged and
    /// quarantined alone, like any entry that fails the schema.
    pub from: AgentName,
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
    /// Set by a reader that checked the lead's signature and found none: the entry says it is
    /// from the lead, and is shown as unverified (`verified="false"`), never as the lead's.
    /// Never written: a file cannot claim to be verified.
    #[serde(skip)]
    pub unverified: bool,
}

impl InboxMessage {
    /// The fields a lead signature covers (PROTOCOL.md section 7).
    pub fn lead_entry(&self) -> LeadEntry<'_> {
        LeadEntry {
            msg_id: self.msg_id.as_deref(),
            from: self.from.as_str(),
            timestamp: &self.timestamp,
            text: &self.text,
            summary: self.summary.as_deref(),
            color: self.color.as_deref(),
            from_plugin: self.extra.get("from_plugin").and_then(Value::as_str),
        }
    }

    /// Whether this entry is from the lead and carries a valid `lead_sig` for `verifier`.
    pub fn signed_by(&self, verifier: &LeadVerifier) -> bool {
        let sig = self.extra.get(SIG_FIELD).and_then(Value::as_str);
        verifier.verifies(&self.lead_entry(), sig)
    }

    /// Whether this entry is the lead's and was written for `recipient` of `team`: a valid
    /// `swarm_lead_sig` (`lead_key::bound`), which a copy into another inbox does not carry.
    pub fn signed_for(
        &self,
        verifier: &LeadVerifier,
        team: &TeamName,
        recipient: &AgentName,
    ) -> bool {
        let sig = self.extra.get(SWARM_SIG_FIELD).and_then(Value::as_str);
        verifier.verifies_bound(team.as_str(), recipient.as_str(), &self.lead_entry(), sig)
    }

    /// Sets both lead signatures of this entry for `recipient` of `team`: Claude Code's
    /// `lead_sig` and swarm's bound `swarm_lead_sig`.
    pub(crate) fn sign_as_lead(&mut self, key: &LeadKey, team: &TeamName, recipient: &AgentName) {
        let sig = key.signature(&self.lead_entry());
        let bound = key.bound_signature(team.as_str(), recipient.as_str(), &self.lead_entry());
        self.extra.insert(SIG_FIELD.into(), Value::from(sig));
        self.extra
            .insert(SWARM_SIG_FIELD.into(), Value::from(bound));
    }

    /// A fresh message with a new `msg_id`.
    pub fn new(from: &AgentName, text: impl Into<String>) -> InboxMessage {
        InboxMessage {
            from: from.clone(),
            text: text.into(),
            summary: None,
            timestamp: timestamp_now(),
            color: None,
            msg_v: Some(1),
            msg_id: Some(uuid::Uuid::new_v4().to_string()),
            kind: Some("message".into()),
            read: false,
            extra: Map::new(),
            unverified: false,
        }
    }

    pub fn protocol(from: &AgentName, message: &Protocol) -> InboxMessage {
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

    /// Appends `message` to the inbox of `to`, who must be on the roster (a message to a
    /// stranger would make an orphan inbox and report success, as Claude Code does). The lead
    /// is on every roster, so for it the team's existing is enough and no roster is parsed: a
    /// teammate's report to its lead does not depend on a roster it cannot parse at that
    /// instant.
    pub fn send(&self, to: &AgentName, message: InboxMessage) -> Result<()> {
        let roster = Roster::new(self.store, self.team);
        if !to.is_lead() {
            return self.send_to(&roster.require_member(to.as_str())?, message);
        }
        if !roster.exists() {
            return Err(Error::NoSuchTeam {
                team: self.team.to_string(),
                root: self.store.root().to_path_buf(),
                hint: String::new(),
            });
        }
        self.append(to, message)
    }

    /// [`Mailbox::send`] for a caller that has just read the roster and holds the recipient's
    /// entry, which is the proof that it is a member.
    pub fn send_to(&self, to: &Member, message: InboxMessage) -> Result<()> {
        self.append(&to.name, message)
    }

    /// The one way a single message gets into an inbox: checked for size, signed if it is the
    /// lead's, committed with whatever else is waiting.
    fn append(&self, to: &AgentName, mut message: InboxMessage) -> Result<()> {
        check_size(&message)?;
        self.sign_if_lead(to, &mut message)?;
        let path = self.prepare(to)?;
        check_room(&path, &message)?;
        self.commit_message(to, &path, message)
    }

    /// Every entry from the lead is signed here, once its `msg_id` is final, when the caller
    /// holds the lead key: both ways into an inbox pass through, so no lead-side path can forget
    /// (see `lead_key`).
    fn sign_if_lead(&self, to: &AgentName, message: &mut InboxMessage) -> Result<()> {
        if message.from.is_lead() {
            if let Some(key) = LeadKey::for_caller(self.store, self.team)? {
                if message.msg_id.is_none() {
                    message.msg_id = Some(uuid::Uuid::new_v4().to_string());
                }
                message.sign_as_lead(&key, self.team, to);
            }
        }
        Ok(())
    }

    /// The inbox path of `to`, created `[]` if missing (O_EXCL). Something that is not a file
    /// there (a FIFO, a socket, a directory) is moved aside like a corrupt file: one damaged
    /// inbox must not stop a team. A symlink or a file another user owns is still refused.
    fn prepare(&self, to: &AgentName) -> Result<std::path::PathBuf> {
        let path = self.store.inbox_path(self.team, to);
        fsio::ensure_dir(&self.store.inboxes_dir(self.team))?;
        move_aside_if_special(&path)?;
        fsio::create_if_missing(&path, b"[]\n")?;
        Ok(path)
    }

    /// All messages, oldest first (`unread_only`: those not yet delivered).
    pub fn read(&self, agent: &AgentName, unread_only: bool) -> Result<Vec<InboxMessage>> {
        let messages = self.read_parsed(agent)?.messages;
        Ok(messages
            .into_iter()
            .filter(|m| !unread_only || !m.read)
            .collect())
    }

    /// The inbox with the bytes it was parsed from, for [`Mailbox::mark_delivered_in`].
    pub(crate) fn read_parsed(&self, agent: &AgentName) -> Result<Parsed> {
        let path = self.store.inbox_path(self.team, agent);
        move_aside_if_special(&path)?;
        // Past the size limit it is moved aside unread, under the lock (see `load_locked`).
        let bytes = match file::oversize(&path)? {
            Some(_) => Some(Vec::new()),
            None => fsio::read_file(&path)?,
        };
        Ok(match bytes {
            None => Parsed::default(),
            Some(bytes) => match fsio::parse_json::<Vec<InboxMessage>>(&bytes) {
                Ok(messages) => Parsed::new(bytes, messages),
                // Quarantine under the lock, so we never move a file a writer is replacing.
                Err(_) => {
                    let mut repaired = vec![];
                    self.commit_with_lock(agent, &path, &mut |messages| {
                        repaired.clone_from(messages);
                        Ok(true)
                    })?;
                    Parsed::unmatched(repaired)
                }
            },
        })
    }

    /// Every message of `agent` still on disk, oldest first: the archive, then the live file.
    /// Each key once: a compaction killed between its two writes leaves entries in both files
    /// (and an older swarm's archive may hold one twice).
    pub fn history(&self, agent: &AgentName) -> Result<Vec<InboxMessage>> {
        let live = self.read(agent, false)?;
        let archived = read_archive(&self.store.archive_path(self.team, agent))?;
        let mut seen = HashSet::new();
        Ok(archived
            .into_iter()
            .chain(live)
            .filter(|m| seen.insert(m.key()))
            .collect())
    }

    /// Marks exactly the messages whose keys are given as delivered; returns how many changed.
    pub fn mark_delivered(&self, agent: &AgentName, keys: &[String]) -> Result<usize> {
        self.mark_delivered_in(agent, keys, &mut None)
    }

    /// [`Mailbox::mark_delivered`] by the reader of the inbox as `known` holds it (from
    /// [`Mailbox::read_parsed`] or the last mark): parsed again only if someone wrote since,
    /// and left holding what the mark wrote.
    pub(crate) fn mark_delivered_in(
        &self,
        agent: &AgentName,
        keys: &[String],
        known: &mut Option<Parsed>,
    ) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let path = self.store.inbox_path(self.team, agent);
        move_aside_if_special(&path)?;
        if !fsio::check_regular(&path)? {
            return Ok(0);
        }
        let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let mut changed = 0;
        let mut mark = |messages: &mut Vec<InboxMessage>| {
            changed = 0;
            for m in messages.iter_mut().filter(|m| !m.read) {
                if wanted.contains(m.key().as_str()) {
                    m.read = true;
                    changed += 1;
                }
            }
            Ok(changed > 0)
        };
        self.commit_with_lock_known(agent, &path, &mut mark, known)?;
        Ok(changed)
    }

    /// Moves delivered entries beyond [`KEEP_DELIVERED`] to the archive and writes the rest;
    /// returns what was written and how many delivered entries it holds.
    fn compact_and_write(
        &self,
        lock: &crate::store::lock::FileLock,
        agent: &AgentName,
        path: &Path,
        mut messages: Vec<InboxMessage>,
    ) -> Result<(Parsed, usize)> {
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
            // and the append skips what such a crash archived already.
            append_jsonl(
                &self.store.archive_path(self.team, agent),
                &archived,
                delivered,
            )?;
        }
        let mut bytes = serde_json::to_vec_pretty(&messages).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        bytes.push(b'\n');
        lock.write(path, &bytes)?;
        Ok((Parsed::new(bytes, messages), delivered.min(KEEP_DELIVERED)))
    }
}

fn move_aside_if_special(path: &Path) -> Result<()> {
    match fsio::check_regular(path) {
        Err(Error::NotARegularFile { found, .. }) if found != "symlink" => {
            fsio::quarantine(path, &format!("it is a {found}"))?;
            Ok(())
        }
        other => other.map(drop),
    }
}

/// Refuses a message to an inbox already past the size limit, or that it would take past it:
/// the sender gets a clear error, and the inbox is never read whole.
fn check_room(path: &Path, message: &InboxMessage) -> Result<()> {
    let size = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
    let adding = (message.text.len() + message.summary.as_deref().map_or(0, str::len)) as u64;
    let limit = file::inbox_limit();
    if size.saturating_add(adding) > limit {
        return Err(Error::InboxFull {
            path: path.to_path_buf(),
            size,
            limit,
        });
    }
    Ok(())
}

fn check_size(message: &InboxMessage) -> Result<()> {
    check_message_size(&message.text, message.summary.as_deref())
}

/// Refuses a message whose `text` and `summary` together exceed [`MAX_MESSAGE_BYTES`]: every
/// message into an inbox is checked here, and a caller that can refuse earlier (the launcher,
/// before it writes anything) asks the same question.
pub(crate) fn check_message_size(text: &str, summary: Option<&str>) -> Result<()> {
    let size = text.len() + summary.map_or(0, str::len);
    if size > MAX_MESSAGE_BYTES {
        return Err(Error::MessageTooLarge {
            size,
            limit: MAX_MESSAGE_BYTES,
        });
    }
    Ok(())
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
            mb.send(
                &coder,
                InboxMessage::new(&AgentName::lead(), format!("m{i}")),
            )
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
    fn a_mark_after_a_read_reuses_its_parse_only_while_nobody_wrote() {
        let (_dir, store, team) = team();
        let mb = Mailbox::new(&store, &team);
        let coder: AgentName = "coder".parse().unwrap();
        let lead = AgentName::lead();
        mb.send(&coder, InboxMessage::new(&lead, "first")).unwrap();
        // What the reader parsed is what the mark starts from: a change made to it in memory
        // (which no file holds) reaches the file, so the file was not parsed again.
        let mut read = mb.read_parsed(&coder).unwrap();
        let key = read.unread().next().unwrap().key();
        read.messages[0].summary = Some("from the parse".into());
        let mut known = Some(read);
        assert_eq!(mb.mark_delivered_in(&coder, &[key], &mut known).unwrap(), 1);
        let live = mb.read(&coder, false).unwrap();
        assert_eq!(live[0].summary.as_deref(), Some("from the parse"));
        assert!(live[0].read);
        // The mark left it holding what it wrote; a send in between makes the next mark parse
        // the file again, and keep the message that arrived.
        let mut stale = known.clone().unwrap();
        stale.messages[0].summary = Some("stale".into());
        mb.send(&coder, InboxMessage::new(&lead, "second")).unwrap();
        let second = mb.read(&coder, true).unwrap()[0].key();
        let mut known = Some(stale);
        assert_eq!(
            mb.mark_delivered_in(&coder, &[second], &mut known).unwrap(),
            1
        );
        let live = mb.read(&coder, false).unwrap();
        assert_eq!(live.len(), 2);
        assert_eq!(live[0].summary.as_deref(), Some("from the parse"));
        assert!(live.iter().all(|m| m.read));
        assert_eq!(known.unwrap().messages, live);
    }

    #[test]
    fn strangers_and_oversized_messages_are_refused() {
        let (_dir, store, team) = team();
        let mb = Mailbox::new(&store, &team);
        let ghost: AgentName = "ghost".parse().unwrap();
        assert!(matches!(
            mb.send(&ghost, InboxMessage::new(&AgentName::lead(), "hi")),
            Err(Error::NoSuchMember { .. })
        ));
        assert!(!store.inbox_path(&team, &ghost).exists());
        let coder: AgentName = "coder".parse().unwrap();
        let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(matches!(
            mb.send(&coder, InboxMessage::new(&AgentName::lead(), big)),
            Err(Error::MessageTooLarge { .. })
        ));
    }

    /// The lead needs no roster lookup, but its team must exist: a report to the lead of a
    /// deleted team would otherwise bring back part of its directory.
    #[test]
    fn a_message_to_the_lead_of_a_missing_team_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "gone".parse().unwrap();
        let sent = Mailbox::new(&store, &team).send(
            &AgentName::lead(),
            InboxMessage::new(&AgentName::system(), "x"),
        );
        assert!(matches!(sent, Err(Error::NoSuchTeam { .. })), "{sent:?}");
        assert!(!store.team_dir(&team).exists());
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
        mb.send(&coder, InboxMessage::new(&AgentName::lead(), "new"))
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
