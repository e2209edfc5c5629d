//! Reading token usage from Claude Code's session transcripts.
//!
//! Claude Code (2.1.328, read from its binary) writes each session to
//! `<config dir>/projects/<project key>/<session id>.jsonl`, and a sub-agent's to
//! `<session id>/subagents/agent-<id>.jsonl` beside it, under the project key of the directory
//! it runs in (`store::memory::project_key`, the same rule; `CLAUDE_CODE_PROJECT_DIR_NAME` can
//! override the key for a Claude Code started with `CLAUDE_CONFIG_DIR`, and swarm, which does
//! not see a teammate's environment, does not follow that override). Every entry of a teammate's
//! session carries `teamName` and `agentName`, which is how a member's sessions are found;
//! assistant entries carry the API's `message.usage`. One API message can be written as several
//! entries (one per content block) with the same `message.id`, so usage is counted once per
//! message id, keeping the largest figure of each field.
//!
//! Transcripts are Claude Code's files, not the protocol's, and can grow to many megabytes: a
//! long-lived reader (`swarm top`) keeps what it read of each file and reads only what was
//! appended since. They are opened without following symlinks, like store files.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use serde::Deserialize;

use super::Tokens;
use crate::error::{Error, Result};
use crate::store::fsio;

/// How much of a transcript's start is read to find whose session it is.
const HEAD_BYTES: u64 = 64 * 1024;

fn open(path: &Path) -> Result<Option<File>> {
    fsio::open_read(path)
}

/// The fields of an entry usage is read from.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    team_name: Option<String>,
    #[serde(default)]
    agent_name: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Tokens>,
}

/// What has been read of one transcript.
#[derive(Default, Clone)]
struct Progress {
    ino: u64,
    offset: u64,
    session: Option<String>,
    /// Usage per message id: (model, the largest figures seen).
    messages: HashMap<String, (String, Tokens)>,
    /// Usage of assistant entries without a message id, per model.
    anonymous: BTreeMap<String, Tokens>,
}

static READS: Mutex<BTreeMap<PathBuf, Progress>> = Mutex::new(BTreeMap::new());

/// What one transcript says: its session and the usage in it, per model.
pub(crate) struct Tally {
    pub(crate) session: Option<String>,
    pub(crate) by_model: BTreeMap<String, Tokens>,
}

/// The usage in one transcript; `None` when it is gone.
pub(crate) fn tally(path: &Path) -> Result<Option<Tally>> {
    let Some(file) = open(path)? else {
        return Ok(None);
    };
    let meta = file.metadata().map_err(Error::io("inspect", path))?;
    let mut reads = READS.lock().unwrap_or_else(|e| e.into_inner());
    let mut read = reads
        .get(path)
        .filter(|r| r.ino == meta.ino() && r.offset <= meta.len())
        .cloned()
        .unwrap_or_else(|| Progress {
            ino: meta.ino(),
            ..Progress::default()
        });
    read_on(file, path, &mut read)?;
    let mut by_model: BTreeMap<String, Tokens> = read.anonymous.clone();
    for (model, tokens) in read.messages.values() {
        by_model.entry(model.clone()).or_default().add(tokens);
    }
    let session = read.session.clone();
    reads.insert(path.to_path_buf(), read);
    Ok(Some(Tally { session, by_model }))
}

/// Reads the complete lines after `read.offset`.
fn read_on(mut file: File, path: &Path, read: &mut Progress) -> Result<()> {
    file.seek(SeekFrom::Start(read.offset))
        .map_err(Error::io("read", path))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(Error::io("read", path))?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(());
        }
        read.offset += n as u64;
        // Most lines are not an assistant's: skip them without parsing.
        if read.session.is_some() && !contains(&line, b"\"usage\"") {
            continue;
        }
        let Ok(entry) = serde_json::from_slice::<Line>(&line) else {
            continue;
        };
        if read.session.is_none() {
            read.session = entry.session_id.clone();
        }
        if entry.kind.as_deref() != Some("assistant") {
            continue;
        }
        let Some(Message {
            id,
            model,
            usage: Some(usage),
        }) = entry.message
        else {
            continue;
        };
        // Claude Code's own notes (API errors, interruptions) are not API calls.
        let model = model.unwrap_or_default();
        if model == "<synthetic>" {
            continue;
        }
        match id {
            Some(id) => {
                let slot = read
                    .messages
                    .entry(id)
                    .or_insert_with(|| (model, Tokens::default()));
                slot.1.widen(&usage);
            }
            None => read.anonymous.entry(model).or_default().add(&usage),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whose session a transcript is: its first `teamName` and `agentName`, from its first
/// [`HEAD_BYTES`].
fn owner(path: &Path) -> Result<Option<(String, String)>> {
    let Some(file) = open(path)? else {
        return Ok(None);
    };
    let reader = BufReader::new(file.take(HEAD_BYTES));
    for line in reader.split(b'\n') {
        let line = line.map_err(Error::io("read", path))?;
        if !contains(&line, b"\"teamName\"") {
            continue;
        }
        if let Ok(Line {
            team_name: Some(team),
            agent_name: Some(agent),
            ..
        }) = serde_json::from_slice::<Line>(&line)
        {
            return Ok(Some((team, agent)));
        }
    }
    Ok(None)
}

/// The transcripts in `dir` of `agent`'s sessions in `team` modified since `since_ms` (older
/// ones belong to an earlier team of the same name), with their sub-agents' transcripts.
pub(crate) fn sessions_of(
    dir: &Path,
    team: &str,
    agent: &str,
    since_ms: u64,
) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io("list", dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let recent = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .is_some_and(|d| d.as_millis() as u64 >= since_ms);
        if !recent {
            continue;
        }
        if owner(&path)?.is_some_and(|(t, a)| t == team && a.eq_ignore_ascii_case(agent)) {
            found.push(path);
        }
    }
    found.sort();
    Ok(with_subagents(found))
}

/// `sessions` and, for each, the sub-agent transcripts under `<session id>/subagents/`.
pub(crate) fn with_subagents(sessions: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for session in sessions {
        let mut dirs = vec![session.with_extension("").join("subagents")];
        out.push(session);
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: BTreeSet<PathBuf> = BTreeSet::new();
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    files.insert(path);
                }
            }
            out.extend(files);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_written_as_several_entries_counts_once_and_appends_are_read_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let entry = |id: &str, out: u64| {
            serde_json::json!({"type": "assistant", "sessionId": "s", "teamName": "t",
                "agentName": "coder", "message": {"id": id, "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": 10, "output_tokens": out,
                          "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30}}})
            .to_string()
        };
        let user = r#"{"type":"user","sessionId":"s","teamName":"t","agentName":"coder","message":{"role":"user","content":"hi"}}"#;
        std::fs::write(
            &path,
            format!("{user}\n{}\n{}\n", entry("m1", 1), entry("m1", 5)),
        )
        .unwrap();
        let read = tally(&path).unwrap().unwrap();
        assert_eq!(read.session.as_deref(), Some("s"));
        let t = &read.by_model["claude-sonnet-4-5"];
        assert_eq!(
            (t.input, t.output, t.cache_creation, t.cache_read),
            (10, 5, 20, 30)
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, format!("{}\n", entry("m2", 2)).as_bytes()).unwrap();
        let read = tally(&path).unwrap().unwrap();
        assert_eq!(read.by_model["claude-sonnet-4-5"].output, 7);
        assert_eq!(
            owner(&path).unwrap(),
            Some(("t".to_string(), "coder".to_string()))
        );
    }
}
