//! Messages as timeline events: every entry of every live inbox (`inboxes/<agent>.json`) and of
//! the archives delivered entries move to (`inboxes/<agent>.archive.jsonl`, PROTOCOL.md section
//! 6), read from where the last look stopped.
//!
//! An entry is in the live file or in the archive, and for an instant in both (the archive is
//! written first, so a crash duplicates history rather than losing it), so the keys read from a
//! live file are remembered until the archive has them: nothing is shown twice. A Claude Code
//! lead deletes what it delivered, so its inbox shows only what it had not read yet. The
//! archives are what grows (100,000 messages is a few archives of tens of megabytes): they are
//! streamed line by line with borrowed strings, and only the few fields an event keeps are
//! copied out, with a 64-bit hash of each archived key so a line archived twice is shown once.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use super::event::{Event, Kind, Source};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{AgentName, TaskId};
use crate::store::protocol::{parse_timestamp, truncate, Payload, Protocol};

/// Most bytes of a message's text an event keeps: the timeline shows one line per event.
const TEXT_LIMIT: usize = 200;

/// An inbox entry, borrowed from the file: only what an event needs.
#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    from: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
    #[serde(default, borrow)]
    summary: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(default, borrow)]
    msg_id: Option<Cow<'a, str>>,
}

impl Entry<'_> {
    /// [`Entry::key`], hashed the same way in every process.
    fn key_hash(&self) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        match &self.msg_id {
            Some(id) => id.hash(&mut h),
            None => (&self.from, &self.timestamp, &self.text).hash(&mut h),
        }
        h.finish()
    }

    /// The identity delivery is marked by (as `InboxMessage::key`).
    fn key(&self) -> String {
        match &self.msg_id {
            Some(id) => id.to_string(),
            None => format!("{}|{}|{}", self.from, self.timestamp, self.text),
        }
    }
}

/// How far the inboxes have been read.
#[derive(Default)]
pub(super) struct Inboxes {
    /// Per recipient: the keys its live file held at the last look.
    live: HashMap<String, HashSet<String>>,
    /// Per recipient: keys that left its live file and are not in its archive yet.
    moved: HashMap<String, HashSet<String>>,
    /// Per recipient: bytes of its archive read so far.
    archived: HashMap<String, u64>,
    /// Per recipient: a hash of the key of every archive line read, so a line archived twice
    /// (a compaction killed between its archive append and its inbox write, twice) is shown
    /// once. Eight bytes a message, not the key.
    in_archive: HashMap<String, HashSet<u64>>,
    /// Entries left out because their timestamp could not be read.
    pub(super) undated: usize,
}

impl Inboxes {
    /// Reads what is new in every inbox and archive of `dir`, live files first.
    pub(super) fn read(&mut self, dir: &Path, emit: &mut dyn FnMut(Event)) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("list", dir)(e)),
        };
        let (mut live, mut archives) = (Vec::new(), Vec::new());
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(agent) = name.strip_suffix(".archive.jsonl") {
                archives.extend(agent.parse::<AgentName>().ok());
            } else if let Some(agent) = name.strip_suffix(".json") {
                live.extend(agent.parse::<AgentName>().ok());
            }
        }
        live.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        archives.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        for agent in live {
            self.read_live(&dir.join(format!("{agent}.json")), agent.as_str(), emit)?;
        }
        for agent in archives {
            let path = dir.join(format!("{agent}.archive.jsonl"));
            self.read_archive(&path, agent.as_str(), emit)?;
        }
        Ok(())
    }

    fn read_live(&mut self, path: &Path, to: &str, emit: &mut dyn FnMut(Event)) -> Result<()> {
        let Some(bytes) = fsio::read_file(path)? else {
            return Ok(());
        };
        // A file caught mid-write by a writer that does not replace atomically is read again
        // at the next look; what it held before stays known.
        let Ok(entries) = serde_json::from_slice::<Vec<Entry>>(&bytes) else {
            return Ok(());
        };
        let before = self.live.remove(to).unwrap_or_default();
        let mut now = HashSet::with_capacity(entries.len());
        for entry in &entries {
            let key = entry.key();
            if !before.contains(&key) && !now.contains(&key) {
                self.emit(to, entry, Source::Inbox, emit);
            }
            now.insert(key);
        }
        let moved = self.moved.entry(to.to_string()).or_default();
        moved.extend(before.into_iter().filter(|k| !now.contains(k)));
        self.live.insert(to.to_string(), now);
        Ok(())
    }

    fn read_archive(&mut self, path: &Path, to: &str, emit: &mut dyn FnMut(Event)) -> Result<()> {
        let offset = self.archived.get(to).copied().unwrap_or(0);
        let Some(mut file) = fsio::open_read(path)? else {
            return Ok(());
        };
        file.seek(SeekFrom::Start(offset))
            .map_err(Error::io("read", path))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut at = offset;
        let no_keys = HashSet::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(Error::io("read", path))?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            at += n as u64;
            let Ok(entry) = serde_json::from_slice::<Entry>(&line) else {
                continue;
            };
            let first_copy = self
                .in_archive
                .entry(to.to_string())
                .or_default()
                .insert(entry.key_hash());
            if !first_copy {
                continue;
            }
            let live = self.live.get(to).unwrap_or(&no_keys);
            let moved = self.moved.get_mut(to);
            let known = (!live.is_empty() || moved.as_ref().is_some_and(|m| !m.is_empty()))
                .then(|| entry.key())
                .is_some_and(|key| live.contains(&key) || moved.is_some_and(|m| m.remove(&key)));
            if !known {
                self.emit(to, &entry, Source::Archive, emit);
            }
        }
        self.archived.insert(to.to_string(), at);
        Ok(())
    }

    fn emit(&mut self, to: &str, entry: &Entry, source: Source, emit: &mut dyn FnMut(Event)) {
        match event_of(to, entry, source) {
            Some(event) => emit(event),
            None => self.undated += 1,
        }
    }
}

/// A message's words for one line: its summary, else the first line of its text.
fn headline(summary: Option<&str>, text: &str) -> String {
    let line = summary.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default()
    });
    truncate(line, TEXT_LIMIT)
}

/// The event an inbox entry to `to` stands for; `None` when its timestamp cannot be read.
fn event_of(to: &str, entry: &Entry, source: Source) -> Option<Event> {
    let at = parse_timestamp(&entry.timestamp)?;
    let from = entry.from.as_ref();
    let message = |kind| Event::new(at, kind, source).by(from).to(to);
    let text = entry.text.as_ref();
    let summary = entry.summary.as_deref();
    let Payload::Protocol(protocol) = Payload::parse(text) else {
        // swarm's own notice that a member was retired: a member leaving, not chatter.
        if from == crate::store::names::SYSTEM {
            if let Some(who) = summary.and_then(|s| s.strip_suffix(" left the team")) {
                return Some(
                    Event::new(at, Kind::MemberLeft, source)
                        .by(who)
                        .text(truncate(text, TEXT_LIMIT)),
                );
            }
        }
        return Some(message(Kind::Message).text(headline(summary, text)));
    };
    Some(match *protocol {
        Protocol::IdleNotification(n) => {
            let mut e = message(Kind::MemberIdle).text(truncate(&n.describe(), TEXT_LIMIT));
            e.task = n.completed_task_id.and_then(|id| id.parse::<TaskId>().ok());
            e
        }
        Protocol::TaskCompleted(ref c) => {
            let mut e = message(Kind::Message).text(truncate(
                &protocol.describe().unwrap_or_default(),
                TEXT_LIMIT,
            ));
            e.task = c.task_id.parse().ok();
            e
        }
        Protocol::TeammateTerminated(t) => Event::new(at, Kind::MemberLeft, source)
            .by(from)
            .text(truncate(&t.message, TEXT_LIMIT)),
        Protocol::ShutdownRequest(r) => message(Kind::ShutdownRequested)
            .request(r.request_id)
            .detail(r.reason),
        Protocol::ShutdownApproved(r) => message(Kind::ShutdownApproved).request(r.request_id),
        Protocol::ShutdownRejected(r) => message(Kind::ShutdownRejected)
            .request(r.request_id)
            .detail(Some(r.reason)),
        Protocol::PlanApprovalRequest(r) => message(Kind::PlanRequested)
            .request(r.request_id)
            .text(headline(None, &r.plan_content)),
        Protocol::PlanApprovalResponse(r) => message(if r.approved {
            Kind::PlanApproved
        } else {
            Kind::PlanRejected
        })
        .request(r.request_id)
        .detail(r.feedback),
        Protocol::PermissionRequest(r) => message(Kind::PermissionRequested)
            .request(r.request_id)
            .text(r.tool_name)
            .detail(Some(truncate(&r.description, TEXT_LIMIT))),
        Protocol::PermissionResponse(r) => {
            let approved = r.subtype == "success";
            message(if approved {
                Kind::PermissionApproved
            } else {
                Kind::PermissionRejected
            })
            .request(r.request_id)
            .detail(r.error)
        }
        Protocol::InterruptRequest(r) => {
            let mut e = message(Kind::Message)
                .request(r.request_id)
                .text("interrupt the running turn".to_string())
                .detail(r.reason);
            e.task = r.task_id.and_then(|id| id.parse().ok());
            e
        }
        Protocol::TaskAssignment(a) => {
            let mut e = message(Kind::Message).text(format!(
                "task #{}: {}",
                a.task_id,
                truncate(&a.subject, TEXT_LIMIT)
            ));
            e.task = a.task_id.parse().ok();
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(from: &str, text: &str, id: &str) -> String {
        serde_json::json!({"from": from, "text": text, "timestamp": "2026-01-01T00:00:01.000Z",
                           "msg_id": id, "read": true})
        .to_string()
    }

    #[test]
    fn an_entry_in_the_live_file_and_the_archive_is_shown_once_and_new_ones_are_shown() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("coder.json");
        let archive = dir.path().join("coder.archive.jsonl");
        std::fs::write(&inbox, format!("[{}]", line("team-lead", "one", "1"))).unwrap();
        std::fs::write(&archive, format!("{}\n", line("team-lead", "one", "1"))).unwrap();
        let mut inboxes = Inboxes::default();
        let mut seen = Vec::new();
        inboxes
            .read(dir.path(), &mut |e| seen.push(e.text))
            .unwrap();
        assert_eq!(seen, ["one"]);
        // "one" moves to the archive as "two" and "three" arrive.
        std::fs::write(
            &inbox,
            format!("[{},{}]", line("a", "two", "2"), line("a", "three", "3")),
        )
        .unwrap();
        std::fs::write(
            &archive,
            format!(
                "{}\n{}\n",
                line("team-lead", "one", "1"),
                line("team-lead", "one", "1")
            ),
        )
        .unwrap();
        seen.clear();
        inboxes
            .read(dir.path(), &mut |e| seen.push(e.text))
            .unwrap();
        assert_eq!(seen, ["two", "three"]);
    }

    /// Issue 21 item 8: a committer killed between its archive append and its inbox write, run
    /// twice, archives the same entries twice; the timeline shows each once, whether the copies
    /// are read in one look or in two.
    #[test]
    fn an_entry_archived_twice_is_shown_once() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("coder.archive.jsonl");
        let (old, older) = (line("a", "old", "9"), line("a", "older", "8"));
        std::fs::write(&archive, format!("{older}\n{old}\n{old}\n")).unwrap();
        let mut inboxes = Inboxes::default();
        let mut seen = Vec::new();
        inboxes
            .read(dir.path(), &mut |e| seen.push(e.text))
            .unwrap();
        assert_eq!(seen, ["older", "old"]);
        std::fs::write(&archive, format!("{older}\n{old}\n{old}\n{older}\n")).unwrap();
        inboxes
            .read(dir.path(), &mut |e| seen.push(e.text))
            .unwrap();
        assert_eq!(seen, ["older", "old"]);
    }

    #[test]
    fn protocol_messages_become_what_they_mean() {
        let entry = |text: String| Entry {
            from: "coder".into(),
            text: text.into(),
            summary: None,
            timestamp: "2026-01-01T00:00:00.000Z".into(),
            msg_id: None,
        };
        let idle = serde_json::json!({"type": "idle_notification", "from": "coder",
            "timestamp": "2026-01-01T00:00:00.000Z", "completedTaskId": "3",
            "completedStatus": "failed", "failureReason": "exit 1"});
        let e = event_of("team-lead", &entry(idle.to_string()), Source::Inbox).unwrap();
        assert_eq!(e.kind, Kind::MemberIdle);
        assert_eq!(e.task.map(|t| t.number()), Some(3));
        assert_eq!(e.text, "failed task #3: exit 1");
        let plain = event_of("b", &entry("\n  hello\nworld".into()), Source::Archive).unwrap();
        assert_eq!((plain.kind, plain.text.as_str()), (Kind::Message, "hello"));
        assert_eq!(
            (plain.actor.as_deref(), plain.to.as_deref()),
            (Some("coder"), Some("b"))
        );
        let mut undated = entry("x".into());
        undated.timestamp = "yesterday".into();
        assert!(event_of("b", &undated, Source::Inbox).is_none());
    }
}
